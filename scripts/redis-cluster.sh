#!/bin/sh
# redis-cluster.sh — start or stop a throwaway 3-master Redis Cluster on
# loopback, for the unit and end-to-end tests of the Redis backend.
#
#   scripts/redis-cluster.sh start BASE_PORT [DIR]
#   scripts/redis-cluster.sh stop  BASE_PORT [DIR]
#   scripts/redis-cluster.sh status BASE_PORT
#
# The nodes listen on 127.0.0.1, ports BASE_PORT..BASE_PORT+2, with no
# replicas and no persistence (save "", appendonly no): test data only.
# DIR (default /tmp/herald-redis-BASE_PORT) holds one subdirectory per node
# with its redis.conf, nodes.conf, pid file and log.
#
# `start` is idempotent: nodes already running are kept, the cluster is
# created only if its slots are not assigned yet, and when everything is up
# and cluster_state is ok it says so and exits 0. It waits (up to 30 s) until
# every node reports cluster_state:ok, so the caller can use the cluster at
# once. `stop` shuts the nodes down and removes DIR.
#
# Needs redis-server and redis-cli (Debian: redis-server, redis-tools); it
# installs nothing.
set -eu

usage() {
    echo "usage: $0 start|stop|status BASE_PORT [DIR]" >&2
    exit 2
}

[ $# -ge 2 ] || usage
cmd=$1
base=$2
case "$base" in
'' | *[!0-9]*) usage ;;
esac
# Each node also listens on its port + 10000 (the cluster bus).
if [ "$base" -lt 1 ] || [ "$base" -gt 55533 ]; then usage; fi
dir=${3:-/tmp/herald-redis-$base}
ports="$base $((base + 1)) $((base + 2))"
NODES=3

for tool in redis-server redis-cli; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "$0: $tool not found (Debian: apt-get install redis-server redis-tools)" >&2
        exit 1
    }
done

cli() { # cli PORT ARGS...: redis-cli on a loopback node, quiet on failure
    cli_port=$1
    shift
    redis-cli -h 127.0.0.1 -p "$cli_port" "$@" 2>/dev/null
}

alive() { [ "$(cli "$1" ping)" = "PONG" ]; }

info_field() { # info_field PORT FIELD: one field of CLUSTER INFO
    cli "$1" cluster info | tr -d '\r' | sed -n "s/^$2://p"
}

cluster_ok() { # every node up and reporting cluster_state:ok
    for p in $ports; do
        [ "$(info_field "$p" cluster_state)" = "ok" ] || return 1
    done
}

write_conf() { # write_conf PORT: the node's config file in its own directory
    d="$dir/$1"
    mkdir -p "$d"
    cat >"$d/redis.conf" <<EOF
# Written by scripts/redis-cluster.sh: a test node, no persistence.
port $1
bind 127.0.0.1
protected-mode yes
daemonize yes
dir $d
pidfile $d/redis.pid
logfile $d/redis.log
cluster-enabled yes
cluster-config-file $d/nodes.conf
cluster-node-timeout 5000
appendonly no
save ""
EOF
}

wait_until() { # wait_until SECONDS COMMAND...: poll every 0.1 s
    limit=$(($1 * 10))
    shift
    i=0
    while ! "$@"; do
        i=$((i + 1))
        [ "$i" -lt "$limit" ] || return 1
        sleep 0.1
    done
}

start() {
    if cluster_ok; then
        echo "redis cluster on 127.0.0.1:$base-$((base + 2)) already running, cluster_state:ok"
        return 0
    fi
    for p in $ports; do
        alive "$p" && continue
        write_conf "$p"
        redis-server "$dir/$p/redis.conf"
        if ! wait_until 10 alive "$p"; then
            echo "$0: node $p did not start; its log, $dir/$p/redis.log, ends with:" >&2
            tail -n 20 "$dir/$p/redis.log" >&2 || true
            return 1
        fi
    done
    # A node started on a fresh nodes.conf knows only itself and owns no slot.
    # Create the cluster unless it already was (nodes restarted from their
    # nodes.conf find each other again by themselves).
    assigned=$(info_field "$base" cluster_slots_assigned)
    if [ "${assigned:-0}" -eq 0 ]; then
        addrs=""
        for p in $ports; do addrs="$addrs 127.0.0.1:$p"; done
        # shellcheck disable=SC2086 # one word per node address
        if ! redis-cli --cluster create $addrs --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1; then
            echo "$0: redis-cli --cluster create failed:" >&2
            cat "$dir/create.log" >&2
            return 1
        fi
    elif [ "$assigned" -ne 16384 ]; then
        echo "$0: the nodes on $base-$((base + 2)) hold a partial cluster ($assigned slots);" \
            "run '$0 stop $base' first" >&2
        return 1
    fi
    if ! wait_until 30 cluster_ok; then
        echo "$0: cluster did not reach cluster_state:ok in 30 s:" >&2
        for p in $ports; do echo "  $p: $(info_field "$p" cluster_state)" >&2; done
        return 1
    fi
    echo "redis cluster on 127.0.0.1:$base-$((base + 2)) ready ($NODES masters, data in $dir)"
}

stop() {
    for p in $ports; do
        pid=""
        [ -f "$dir/$p/redis.pid" ] && pid=$(cat "$dir/$p/redis.pid")
        if alive "$p"; then
            cli "$p" shutdown nosave >/dev/null || true
        fi
        # Wait for the process to be gone, so the port is free when we return.
        if [ -n "$pid" ]; then
            wait_until 10 sh -c "! kill -0 $pid 2>/dev/null" || {
                echo "$0: node $p (pid $pid) did not stop" >&2
                return 1
            }
        fi
    done
    rm -rf "$dir"
    echo "redis cluster on 127.0.0.1:$base-$((base + 2)) stopped"
}

status() {
    for p in $ports; do
        if alive "$p"; then
            echo "127.0.0.1:$p up, cluster_state:$(info_field "$p" cluster_state)"
        else
            echo "127.0.0.1:$p down"
        fi
    done
    cluster_ok
}

case "$cmd" in
start) start ;;
stop) stop ;;
status) status ;;
*) usage ;;
esac
