#!/usr/bin/env bash
# bench/feeds.sh — activity feed benchmarks (issue 3; `make bench` runs it
# after bench/run.sh, BENCH_SKIP_FEEDS=1 skips it). In one run:
#
#   1. fan-out throughput, RocksDB and Redis Cluster, on the same dataset:
#      `herald load --users $FANOUT_USERS` into each store; the loader drains
#      the fan-out queue with 2 threads and prints timeline entries per second.
#      On Redis every entry is a pipelined ZADD: that is the Redis reference.
#   2. the headline dataset: `herald load --users $USERS` into RocksDB
#   3-6, on each store: RocksDB on the headline dataset, Redis Cluster on
#      the fan-out dataset (part 1's; the headline one when both sizes agree).
#      RocksDB's parts run first (1, 2, 3-6), then Redis's (1, 3-6), so that
#      the cluster's memory does not push RocksDB's files out of the page cache.
#   3. nginx answering a constant (the HTTP ceiling), just before the page
#   4. herald on that dataset: home timeline page of 20 for random users,
#      wrk at 64 connections (req/s, p50, p99, ratio to nginx): first as
#      readers first read their pages, then, on RocksDB, once every reader has
#      read theirs (bench/timeline_every.lua): the pages herald keeps in memory
#      (the memos' share of memory), with the share of pages answered from memory
#   5. the page's cost in store round trips and operations (from /metrics
#      over 2,000 pages read from the store: measured first, before 4)
#   6. create-to-visible delay for a 450-follower actor, p50 / p99, measured
#      while wrk keeps reading timelines (bench/feeds_probe.py)
#   4b. the same page with enrich=true, once every user has a profile
#   7. likes over HTTP: random users like 1,000 new activities
#      (bench/reactions_post.lua, wrk at 64 connections)
#
# Results: bench/results/feeds-latest.md (with the commands).
#
# Environment: BENCH_FEEDS_USERS (100000), BENCH_FEEDS_FANOUT_USERS (20000),
# BENCH_FEEDS_ACTIVITIES (1 per user), BENCH_DURATION (10), BENCH_WARMUP (2),
# BENCH_CONNECTIONS (64), BENCH_WRK_THREADS (2), BENCH_FEEDS_CLUSTER_PORT (7600),
# BENCH_FEEDS_PROBES (200), BENCH_FEEDS_DATA (unset): the RocksDB directory of a
# dataset loaded before by `herald load --users $BENCH_FEEDS_USERS`; parts 1-2
# are then skipped (no fan-out figures) and parts 3-6 run on it (the probes of
# part 6 add activities to it); Redis Cluster is then not measured.
# BENCH_ROCKSDB_QUERY: tuning after the RocksDB store's path (off=memos:
# bench/lib.sh).

set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

USERS=${BENCH_FEEDS_USERS:-100000}
REUSE_DATA=${BENCH_FEEDS_DATA:-}
FANOUT_USERS=${BENCH_FEEDS_FANOUT_USERS:-20000}
ACTIVITIES=${BENCH_FEEDS_ACTIVITIES:-1}
CLUSTER_PORT=${BENCH_FEEDS_CLUSTER_PORT:-7600}
PROBES=${BENCH_FEEDS_PROBES:-200}
RESULTS=$ROOT/bench/results/feeds-latest.md

TMP=$(mktemp -d "${TMPDIR:-/tmp}/herald-feeds.XXXXXX")
PIDS=()
CLUSTER_STARTED=0
COMMANDS=()
ROWS=()
BENCH_NAME=feeds
# log, die, bench_traps, quote_cmd, tail_log, free_port, stop_pid, to_ms, run_wrk, ... (lib.sh)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cleanup_more() {
    [ "$CLUSTER_STARTED" = 1 ] && scripts/redis-cluster.sh stop "$CLUSTER_PORT" >/dev/null 2>&1
}
bench_traps

for tool in wrk nginx redis-server redis-cli; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (make deps installs it)"
done
[ -x "$HERALD" ] || die "$HERALD does not exist (make build/herald)"

# load NAME STORE USERS: runs herald load, keeps its summary in $TMP/load-NAME.txt
load() {
    local name=$1 store=$2 users=$3
    local cmd=("$HERALD" load --users "$users" --activities "$ACTIVITIES" --store "$store" --threads 2)
    COMMANDS+=("$(quote_cmd "${cmd[@]}")")
    log "loading ($name): ${cmd[*]}"
    "${cmd[@]}" >"$TMP/load-$name.txt" 2>"$TMP/load-$name.err" || { tail_log "$TMP/load-$name.err"; die "herald load ($name) failed"; }
    cat "$TMP/load-$name.txt" >&2
}
flush_cluster() { redis-cli -p "$CLUSTER_PORT" --cluster call "127.0.0.1:$CLUSTER_PORT" FLUSHALL >/dev/null 2>&1 || true; }
entries_per_s() { grep -o '[0-9]* entries/s' "$TMP/load-$1.txt" | awk '{print $1}'; }

log "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- 1. fan-out throughput on RocksDB -----------------------------------------------
if [ -n "$REUSE_DATA" ]; then
    [ -d "$REUSE_DATA" ] || die "BENCH_FEEDS_DATA=$REUSE_DATA is not a directory"
    log "reusing the dataset in $REUSE_DATA: no fan-out measurement"
    FAN_ROCKS="not measured (BENCH_FEEDS_DATA)"
    FAN_REDIS="not measured"
    echo "(dataset loaded before, reused from $REUSE_DATA)" >"$TMP/load-fanout-rocksdb.txt"
    : >"$TMP/load-fanout-redis.txt"
else
    load fanout-rocksdb "$(rocks_uri "$TMP/fanout-rocks")" "$FANOUT_USERS"
    FAN_ROCKS=$(entries_per_s fanout-rocksdb)
fi

# ---- 2. the headline dataset ------------------------------------------------------
if [ -n "$REUSE_DATA" ]; then
    : >"$TMP/load-main.txt"
    DATA=$REUSE_DATA
elif [ "$USERS" = "$FANOUT_USERS" ]; then
    cp "$TMP/load-fanout-rocksdb.txt" "$TMP/load-main.txt"
    DATA=$TMP/fanout-rocks
else
    load main "$(rocks_uri "$TMP/main-rocks")" "$USERS"
    DATA=$TMP/main-rocks
fi

# ---- 3-6. nginx, then herald on a dataset -------------------------------------------
# measure NAME STORE USERS [SERVE_ARGS...]: parts 3-6 against one store; rows
# "nginx constant (NAME)" and "herald timeline page (NAME)", and COST[NAME] /
# DELAY[NAME].
declare -A COST DELAY KEPT
# cache_counts: "HITS MISSES" of the first pages herald keeps in memory
# (the memos' share of memory: RocksDB), from /metrics; nothing where it keeps none.
cache_counts() {
    "$PY" -c 'import re, sys, urllib.request
t = urllib.request.urlopen(sys.argv[1] + "/metrics").read().decode()
m = [re.search(r"^herald_timeline_cache_%s_total (\S+)$" % k, t, re.M) for k in ("hits", "misses")]
print(" ".join(x.group(1) for x in m) if all(m) else "")' "$HERALD_URL"
}
# hit_share BEFORE AFTER: the share of pages answered from memory between two cache_counts
hit_share() {
    [ -n "$2" ] || { echo "none kept"; return; }
    echo "$1 $2" | awk '{ h = $3 - $1; m = $4 - $2; printf "%.1f %% of %d pages from memory", (h + m) ? 100 * h / (h + m) : 0, h + m }'
}
measure() {
    local name=$1 store=$2 users=$3 c0 c1
    shift 3
    start_nginx
    run_wrk "nginx constant ($name)" "$CONNS" "" "http://127.0.0.1:$NGINX_PORT/"
    stop_pid "$NGINX_PID"
    start_herald "feeds-$name" "$store" "$@"
    export BENCH_USERS=$users
    # The page's cost first, while no reader has read a page: it is the cost of
    # a page read from the store (where herald keeps pages, a kept one costs none).
    COMMANDS+=("$PY bench/feeds_probe.py cost $HERALD_URL $users 2000")
    COST[$name]=$("$PY" bench/feeds_probe.py cost "$HERALD_URL" "$users" 2000)
    log "page cost ($name): ${COST[$name]}"
    # First, readers whose first pages were never read (herald reads the store).
    c0=$(cache_counts)
    run_wrk "herald timeline page ($name)" "$CONNS" bench/timeline.lua "$HERALD_URL"
    c1=$(cache_counts)
    KEPT[$name]="first reads: $(hit_share "$c0" "$c1")"
    if [ -n "$c1" ]; then
        # Then once every reader has read their page: the pages kept in memory.
        COMMANDS+=("wrk -t$WRK_THREADS -c$CONNS -d$(( users / 20000 + 3 ))s -s bench/timeline_every.lua $HERALD_URL   (every reader's page once)")
        wrk -t"$WRK_THREADS" -c"$CONNS" -d"$(( users / 20000 + 3 ))s" -s bench/timeline_every.lua "$HERALD_URL" >/dev/null 2>&1
        c0=$(cache_counts)
        run_wrk "herald timeline page, kept ($name)" "$CONNS" bench/timeline.lua "$HERALD_URL"
        c1=$(cache_counts)
        KEPT[$name]+="; after every reader read theirs once: $(hit_share "$c0" "$c1")"
    fi
    # The same page enriched (enrich=true), every user having a profile.
    COMMANDS+=("$PY bench/feeds_probe.py profiles $HERALD_URL $users 0")
    "$PY" bench/feeds_probe.py profiles "$HERALD_URL" "$users" 0
    BENCH_TIMELINE_QUERY="&enrich=true" run_wrk "herald timeline page, enriched ($name)" "$CONNS" bench/timeline.lua "$HERALD_URL"
    log "kept pages ($name): ${KEPT[$name]}"
    # The probe runs while wrk reads timelines at 64 connections.
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"$(( PROBES / 5 + 30 ))s" -s bench/timeline.lua "$HERALD_URL" >"$TMP/wrk-bg.txt" 2>&1 &
    local wrk_bg=$!
    PIDS+=("$wrk_bg")
    COMMANDS+=("$PY bench/feeds_probe.py delay $HERALD_URL $users $PROBES   (while wrk -c$CONNS reads timelines)")
    DELAY[$name]=$("$PY" bench/feeds_probe.py delay "$HERALD_URL" "$users" "$PROBES")
    log "create-to-visible ($name): ${DELAY[$name]}"
    stop_pid "$wrk_bg"
    # Likes: random users liking 1,000 fresh activities (nearly every one a new like).
    COMMANDS+=("$PY bench/feeds_probe.py activities $HERALD_URL $users 1000 > ids.txt")
    "$PY" bench/feeds_probe.py activities "$HERALD_URL" "$users" 1000 >"$TMP/activity-ids-$name.txt"
    export BENCH_ACTIVITY_IDS=$TMP/activity-ids-$name.txt
    run_wrk "herald like ($name)" "$CONNS" bench/reactions_post.lua "$HERALD_URL"
    kill -0 "$HERALD_PID" 2>/dev/null || { tail_log "$TMP/herald-feeds-$name.err"; die "herald died during the run"; }
    stop_pid "$HERALD_PID"
}

start_nginx
run_wrk "nginx timeline-shaped" "$CONNS" bench/timeline.lua "http://127.0.0.1:$NGINX_PORT"
stop_pid "$NGINX_PID"
# RocksDB is measured before the Redis dataset is loaded: at 100,000 users the
# cluster holds ~21 GB, which left too little memory on a 24 GB machine for the
# page cache to hold the 3.6 GB RocksDB store, so its pages read the disk.
page_cache_warm "$DATA"
measure rocksdb "$(rocks_uri "$DATA")" "$USERS"

# ---- 1 (Redis). the same fan-out into Redis Cluster, then parts 3-6 on it -------------
if [ -z "$REUSE_DATA" ]; then
    ensure_cluster "$CLUSTER_PORT"
    flush_cluster
    load fanout-redis "redis://127.0.0.1:$CLUSTER_PORT" "$FANOUT_USERS"
    FAN_REDIS=$(entries_per_s fanout-redis)
    # --threads 0: herald's own default for the store (four I/O threads per core
    # on Redis Cluster), in place of start_herald's 2
    measure redis "redis://127.0.0.1:$CLUSTER_PORT" "$FANOUT_USERS" --threads 0
    flush_cluster
fi

# ---- report -------------------------------------------------------------------------
# field ROW COLUMN: a column of a row of ROWS; nothing (and success) if there is no such row
field() { for r in "${ROWS[@]}"; do [ "${r%%|*}" = "$1" ] && { echo "$r" | cut -d'|' -f"$2"; return; }; done; return 0; }
# page_rows NAME LABEL USERS: the page, nginx, ratio, cost and delay rows of one store.
page_rows() {
    local name=$1 label=$2 users=$3 ng ht
    ht=$(field "herald timeline page ($name)" 2)
    if [ -z "$ht" ]; then
        echo "| $label: timeline page, page cost, create-to-visible | not measured (BENCH_FEEDS_DATA) | |"
        return
    fi
    ng=$(field "nginx constant ($name)" 2)
    echo "| $label: home timeline page of 20, $users users, first reads | $ht req/s, p50 $(field "herald timeline page ($name)" 3) ms, p99 $(field "herald timeline page ($name)" 4) ms | |"
    echo "| $label: nginx constant, just before | $ng req/s | |"
    echo "| $label: timeline / nginx, first reads | $(awk -v a="$ht" -v b="$ng" 'BEGIN { printf "%.2f", a / b }') | >= 0.5, p99 <= 5 ms |"
    local kt
    kt=$(field "herald timeline page, kept ($name)" 2)
    if [ -n "$kt" ]; then
        echo "| $label: the same page once every reader has read it (kept in memory) | $kt req/s, p50 $(field "herald timeline page, kept ($name)" 3) ms, p99 $(field "herald timeline page, kept ($name)" 4) ms | |"
        echo "| $label: timeline / nginx, pages kept | $(awk -v a="$kt" -v b="$ng" 'BEGIN { printf "%.2f", a / b }') | >= 0.5, p99 <= 5 ms |"
    fi
    local plain=$(field "herald timeline page, kept ($name)" 4)
    [ -n "$plain" ] || plain=$(field "herald timeline page ($name)" 4)
    local enr=$(field "herald timeline page, enriched ($name)" 4)
    echo "| $label: the same page with enrich=true (every actor has a profile) | $(field "herald timeline page, enriched ($name)" 2) req/s, p50 $(field "herald timeline page, enriched ($name)" 3) ms, p99 $enr ms: $(awk -v a="$enr" -v b="$plain" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else printf "?" }') x the plain page's p99 | <= 1.3x |"
    echo "| $label: pages answered from memory | ${KEPT[$name]} | |"
    echo "| $label: page cost | ${COST[$name]} | O(1) range reads + 1 multi-get + 1 per big account |"
    echo "| $label: create-to-visible, 450 followers, under load | ${DELAY[$name]} | |"
    local target=""
    [ "$name" = rocksdb ] && target=">= 20,000/s"
    echo "| $label: likes over HTTP (POST .../reactions) | $(field "herald like ($name)" 2) req/s, p50 $(field "herald like ($name)" 3) ms, p99 $(field "herald like ($name)" 4) ms | $target |"
}
FRATIO=$(awk -v a="$FAN_ROCKS" -v b="$FAN_REDIS" 'BEGIN { if (b + 0 > 0) printf "%.1f", a / b; else printf "?" }')
mkdir -p "$(dirname "$RESULTS")"
{
    echo "# Feed benchmarks ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo
    echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "| measurement | result | target |"
    echo "|---|---|---|"
    unit() { case $1 in *[!0-9]*) echo "$1" ;; *) echo "$1 entries/s" ;; esac; }
    echo "| fan-out, RocksDB (${REUSE_DATA:+not run: }$FANOUT_USERS users) | $(unit "$FAN_ROCKS") | >= 1,000,000 |"
    echo "| fan-out, Redis Cluster, pipelined ZADD (same dataset) | $(unit "$FAN_REDIS") | |"
    echo "| RocksDB / Redis | ${FRATIO}x | >= 2x |"
    page_rows rocksdb RocksDB "$USERS"
    page_rows redis "Redis Cluster" "$FANOUT_USERS"
    echo
    echo "Datasets:"
    echo; echo '```'; cat "$TMP/load-fanout-rocksdb.txt" "$TMP/load-fanout-redis.txt" "$TMP/load-main.txt"; echo '```'
    echo
    echo "All rows:"
    echo
    echo "| run | req/s | p50 ms | p99 ms | errors |"
    echo "|---|---|---|---|---|"
    for r in "${ROWS[@]}"; do echo "| ${r//|/ | } |"; done
    echo
    echo "Commands:"
    echo
    for c in "${COMMANDS[@]}"; do echo "    $c"; done
} >"$RESULTS"
cat "$RESULTS"
