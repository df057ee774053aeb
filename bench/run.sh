#!/usr/bin/env bash
# bench/run.sh — unique-counter benchmarks (`make bench` runs it after building
# build/herald). One run, on this machine, measures with wrk (64 connections,
# 2 threads, --latency):
#
#   1. nginx answering a constant                      the HTTP ceiling, plain and
#                                                      with herald's PUT / GET shapes
#   2. herald on RocksDB (fresh dir, --threads 2)      counter PUT, then GET
#   3. redis-server standalone: redis-benchmark SADD + SCARD   the store reference
#   4. herald on a Redis Cluster (--threads 2)         counter PUT, then GET
#   5. bench/stories.sh: stories and ratings (issue 5), results in
#      bench/results/stories-latest.md (BENCH_SKIP_STORIES=1 skips it; its own
#      variables are described there, e.g. BENCH_STORIES_SCALE)
#   6. bench/feeds.sh: activity feeds and fan-out (issue 3), results in
#      bench/results/feeds-latest.md (BENCH_SKIP_FEEDS=1 skips it)
#   7. bench/reading.sh: social reading (issue 4), results in
#      bench/results/reading-latest.md (BENCH_SKIP_READING=1 skips it; its own
#      variables are described there, e.g. BENCH_READING_SCALE)
#
# and prints a table (req/s, p50, p99, herald/nginx ratios against the targets
# PUT >= 0.6 with p99 <= 2 ms, GET >= 0.7), also written to
# bench/results/counters-latest.md with the date, commit, machine and the exact
# commands run.
#
# Load model (the seed's): PUT a random 64-bit token to an object id drawn from a
# Gaussian over 100 K objects (mean 50 000, sd 10 000); GET the same distribution.
#
# Environment:
#   BENCH_DURATION      seconds per measurement (10)
#   BENCH_WARMUP        seconds of unrecorded warm-up before each herald/nginx run (2)
#   BENCH_CONNECTIONS   wrk connections (64);  BENCH_WRK_THREADS  wrk threads (2)
#   BENCH_REDIS_N       redis-benchmark requests per command (500000)
#   BENCH_CLUSTER_PORT  first port of the Redis Cluster (7200); one already
#                       running there is used as is, otherwise the script starts
#                       one with scripts/redis-cluster.sh and stops it at the end
#   BENCH_SKIP_CLUSTER  1: skip part 4
#   BENCH_SKIP_STORIES  1: skip part 5
#   BENCH_SKIP_FEEDS    1: skip part 6 (bench/feeds.sh: feeds and fan-out, issue 3)
#   BENCH_SKIP_READING  1: skip part 7 (bench/reading.sh: social reading, issue 4)
#   BENCH_STRICT        1: exit 1 when a target is missed
#   HERALD_BIN          the server (build/herald)
#
# Every process the script starts is stopped on exit (trap EXIT). A component
# that does not start fails the run with its log.

set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

REDIS_N=${BENCH_REDIS_N:-500000}
CLUSTER_PORT=${BENCH_CLUSTER_PORT:-7200}
RESULTS_DIR=$ROOT/bench/results
RESULTS=$RESULTS_DIR/counters-latest.md

TMP=$(mktemp -d "${TMPDIR:-/tmp}/herald-bench.XXXXXX")
PIDS=()
CLUSTER_STARTED=0
COMMANDS=()
ROWS=()          # "name|rps|p50|p99|errors"
BENCH_NAME=bench
# log, die, bench_traps, quote_cmd, tail_log, free_port, stop_pid, to_ms, run_wrk, ... (lib.sh)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cleanup_more() {
    if [ "$CLUSTER_STARTED" = 1 ]; then
        log "stopping the Redis Cluster on $CLUSTER_PORT"
        scripts/redis-cluster.sh stop "$CLUSTER_PORT" >/dev/null 2>&1
    fi
}
bench_traps

need() { command -v "$1" >/dev/null 2>&1 || die "$1 is not installed (make deps installs it)"; }
need wrk
need nginx
need redis-server
need redis-cli
need redis-benchmark
[ -x "$HERALD" ] || die "$HERALD does not exist or is not executable (make build/herald)"

# ---- 1. nginx ----------------------------------------------------------------

log "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
if awk -v l="${LOAD_START%% *}" 'BEGIN { exit !(l > 0.5) }'; then
    log "WARNING: load average $LOAD_START before the run: other work on this machine skews the numbers"
fi
start_nginx
# The ceiling in the same request shapes as herald's runs (same wrk Lua scripts,
# same paths, the PUT with its token body), so the ratios compare like with like;
# and plain `wrk URL` for reference.
run_wrk "nginx constant" "$CONNS" "" "http://127.0.0.1:$NGINX_PORT/"
run_wrk "nginx PUT-shaped" "$CONNS" bench/counter_put.lua "http://127.0.0.1:$NGINX_PORT"
run_wrk "nginx GET-shaped" "$CONNS" bench/counter_get.lua "http://127.0.0.1:$NGINX_PORT"
stop_pid "$NGINX_PID"

# ---- 2. herald on RocksDB ------------------------------------------------------

start_herald rocksdb "$(rocks_uri "$TMP/rocksdb")"
run_wrk "herald rocksdb PUT" "$CONNS" bench/counter_put.lua "$HERALD_URL"
run_wrk "herald rocksdb GET" "$CONNS" bench/counter_get.lua "$HERALD_URL"
kill -0 "$HERALD_PID" 2>/dev/null || { tail_log "$TMP/herald-rocksdb.err"; die "herald (rocksdb) died during the run"; }
stop_pid "$HERALD_PID"

# ---- 3. Redis reference --------------------------------------------------------

REDIS_PORT=$(free_port)
REDIS_DIR=$TMP/redis
mkdir -p "$REDIS_DIR"
rcmd=(redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$REDIS_DIR" --logfile "$REDIS_DIR/redis.log")
COMMANDS+=("$(quote_cmd "${rcmd[@]}")")
"${rcmd[@]}" &
REDIS_PID=$!
PIDS+=("$REDIS_PID")
for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && break
    kill -0 "$REDIS_PID" 2>/dev/null || { tail_log "$REDIS_DIR/redis.log"; die "redis-server exited"; }
    sleep 0.1
done
[ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] || { tail_log "$REDIS_DIR/redis.log"; die "redis-server does not answer"; }

redis_bench() { # NAME ARGS...
    local name=$1; shift
    local cmd=(redis-benchmark -p "$REDIS_PORT" -c "$CONNS" -n "$REDIS_N" -r 100000 --csv "$@")
    COMMANDS+=("$(quote_cmd "${cmd[@]}")")
    log "$name: ${cmd[*]}"
    local out=$TMP/redis-$(echo "$name" | tr ' ' '-').csv
    "${cmd[@]}" >"$out" 2>&1 || { cat "$out" >&2; die "redis-benchmark failed ($name)"; }
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    local line
    line=$(grep -v '^"test"' "$out" | tail -n 1 | tr -d '"')
    [ -n "$line" ] || { cat "$out" >&2; die "could not parse redis-benchmark's output ($name)"; }
    local rps p50 p99
    rps=$(echo "$line" | awk -F, '{printf "%.0f", $(NF-6)}')
    p50=$(echo "$line" | awk -F, '{printf "%.3f", $(NF-3)}')
    p99=$(echo "$line" | awk -F, '{printf "%.3f", $(NF-1)}')
    ROWS+=("$name|$rps|$p50|$p99|0")
    log "$name: $rps req/s, p50 ${p50}ms, p99 ${p99}ms"
}
redis_bench "redis SADD" SADD "obj:__rand_int__" "__rand_int__"
redis_bench "redis SCARD" SCARD "obj:__rand_int__"
stop_pid "$REDIS_PID"

# ---- 4. herald on a Redis Cluster ------------------------------------------------

if [ "${BENCH_SKIP_CLUSTER:-0}" != 1 ]; then
    ensure_cluster "$CLUSTER_PORT"
    start_herald cluster "redis://127.0.0.1:$CLUSTER_PORT"
    run_wrk "herald cluster PUT" "$CONNS" bench/counter_put.lua "$HERALD_URL"
    run_wrk "herald cluster GET" "$CONNS" bench/counter_get.lua "$HERALD_URL"
    kill -0 "$HERALD_PID" 2>/dev/null || { tail_log "$TMP/herald-cluster.err"; die "herald (cluster) died during the run"; }
    stop_pid "$HERALD_PID"
fi

# ---- report ----------------------------------------------------------------------

row_field() { # NAME FIELD(2=rps,3=p50,4=p99,5=errors)
    local r
    for r in "${ROWS[@]}"; do
        [ "${r%%|*}" = "$1" ] && { echo "$r" | cut -d'|' -f"$2"; return; }
    done
    echo ""
}

ratio() { # NAME DENOMINATOR_NAME
    awk -v a="$(row_field "$1" 2)" -v b="$(row_field "$2" 2)" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'
}
verdict() { # NAME DENOMINATOR MIN_RATIO MAX_P99_MS(or "") -> "ratio|target text"
    local r p99 ok=1 target
    r=$(ratio "$1" "$2"); p99=$(row_field "$1" 4)
    awk -v r="$r" -v m="$3" 'BEGIN { exit !(r >= m) }' || ok=0
    target=">= $3"
    if [ -n "$4" ]; then
        awk -v p="$p99" -v m="$4" 'BEGIN { exit !(p <= m) }' || ok=0
        target="$target, p99 <= $4 ms"
    fi
    if [ "$ok" = 1 ]; then echo "$r|$target: met"; else echo "$r|$target: **missed**"; fi
}

TABLE=$TMP/table.md
{
    echo "| measurement | req/s | p50 ms | p99 ms | errors | ratio | target |"
    echo "|---|---:|---:|---:|---:|---:|---|"
    for r in "${ROWS[@]}"; do
        IFS='|' read -r name rps p50 p99 errs <<<"$r"
        ratio=""; target=""
        case "$name" in
            "nginx constant") ratio=""; target="plain wrk, GET / (reference)" ;;
            "nginx PUT-shaped") ratio="1.00"; target="the HTTP ceiling for PUTs" ;;
            "nginx GET-shaped") ratio="1.00"; target="the HTTP ceiling for GETs" ;;
            "herald rocksdb PUT") v=$(verdict "$name" "nginx PUT-shaped" 0.6 2); ratio="${v%%|*} x nginx"; target=${v#*|} ;;
            "herald rocksdb GET") v=$(verdict "$name" "nginx GET-shaped" 0.7 ""); ratio="${v%%|*} x nginx"; target=${v#*|} ;;
            "herald cluster PUT")
                ratio="$(ratio "$name" "nginx PUT-shaped") x nginx, $(ratio "$name" "redis SADD") x SADD"
                target="(3 Redis masters share the 2 cores)" ;;
            "herald cluster GET")
                ratio="$(ratio "$name" "nginx GET-shaped") x nginx, $(ratio "$name" "redis SCARD") x SCARD"
                target="(3 Redis masters share the 2 cores)" ;;
            "redis SADD") ratio="$(ratio "$name" "nginx PUT-shaped") x nginx"; target="store reference (redis-benchmark)" ;;
            "redis SCARD") ratio="$(ratio "$name" "nginx GET-shaped") x nginx"; target="store reference (redis-benchmark)" ;;
        esac
        echo "| $name | $rps | $p50 | $p99 | $errs | $ratio | $target |"
    done
} >"$TABLE"
MISSES=$(grep -c '\*\*missed\*\*' "$TABLE" || true)

MODEL=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mkdir -p "$RESULTS_DIR"
{
    echo "# herald unique counters: benchmark"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- commit: $COMMIT$DIRTY"
    echo "- machine: $(nproc) cores, $MODEL, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r)"
    echo "- tools: $(wrk --version 2>&1 | head -n1 | awk '{print $1, $2}'), $(nginx -v 2>&1 | sed 's/.*: //'), redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
    echo "- load average: $LOAD_START before the run, $(cut -d' ' -f1-3 /proc/loadavg) after (other work on the machine skews the numbers)"
    echo "- load: wrk, $CONNS connections, $WRK_THREADS threads, ${DUR} s per measurement after ${WARMUP} s of warm-up; everything on loopback on the same machine (client, server and store share the cores)"
    echo "- model (seed 003): PUT a random 64-bit token to an object id drawn from a Gaussian over 100 000 objects (mean 50 000, sd 10 000); GET the same distribution"
    echo
    cat "$TABLE"
    echo
    echo "Targets (RocksDB backend): herald PUT >= 0.6 x nginx with p99 <= 2 ms, GET >= 0.7 x nginx, where"
    echo "nginx answers a constant to the same requests (same wrk Lua script: same paths, PUTs with their token body)."
    echo "Latencies are wrk's (herald, nginx) and redis-benchmark's (redis) percentiles, in milliseconds;"
    echo "errors are non-2xx answers plus socket errors."
    echo
    commands_section
} >"$RESULTS"

echo
cat "$TABLE"
echo
echo "written to ${RESULTS#"$ROOT"/}  (total $(( $(date +%s) - START_TIME )) s)"
STATUS=0
if [ "$MISSES" -gt 0 ]; then
    echo "bench: $MISSES target(s) missed"
    [ "${BENCH_STRICT:-0}" = 1 ] && STATUS=1
fi

# ---- 5. stories and ratings (bench/stories.sh, its own results file) ---------------

if [ "${BENCH_SKIP_STORIES:-0}" != 1 ]; then
    echo
    bench/stories.sh || STATUS=1
fi

# ---- 6. activity feeds (bench/feeds.sh, its own results file) -----------------------

if [ "${BENCH_SKIP_FEEDS:-0}" != 1 ]; then
    echo
    bench/feeds.sh || STATUS=1
fi

# ---- 7. social reading (bench/reading.sh, its own results file) --------------------

if [ "${BENCH_SKIP_READING:-0}" != 1 ]; then
    echo
    bench/reading.sh || STATUS=1
fi

# ---- 8. the plots of BENCHMARKS.md (bench/plot.sh, gnuplot) --------------------------

if ! command -v gnuplot >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1 ||
        echo "bench: gnuplot-nox could not be installed; no plots"
fi
command -v gnuplot >/dev/null 2>&1 && { bench/plot.sh || STATUS=1; }
exit "$STATUS"
