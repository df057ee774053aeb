# bench/lib.sh — helpers shared by the scripts of bench/ (run.sh, stories.sh,
# feeds.sh, reading.sh).
# Sourced, not run. Sets the shared settings below (DUR, WARMUP, CONNS,
# WRK_THREADS, HERALD, PY, COMMIT, DIRTY). Expects the caller's globals: BENCH_NAME (the
# part's name, for the log), TMP (scratch dir), PIDS (processes to stop on
# exit), COMMANDS and ROWS (arrays the results are built from). A caller
# that has more to undo on exit (a Redis Cluster, PostgreSQL) defines
# cleanup_more before calling bench_traps.

# Settings every part shares; the environment overrides them.
DUR=${BENCH_DURATION:-10}               # seconds a wrk measurement runs
WARMUP=${BENCH_WARMUP:-2}               # seconds of wrk before it
CONNS=${BENCH_CONNECTIONS:-64}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
HERALD=${HERALD_BIN:-build/herald}
# BENCH_ROCKSDB_QUERY: tuning put after the RocksDB store's path in its URI
# (src/store/rocks/memory.h), e.g. off=chunks to measure a cache's worth.
rocks_uri() { echo "rocksdb:$1${BENCH_ROCKSDB_QUERY:+?$BENCH_ROCKSDB_QUERY}"; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

START_TIME=$(date +%s)
# The commit the results name (COMMIT, DIRTY), taken when this is sourced:
# before any part builds, so edits made while a bench runs are not counted
# as part of the binaries it measured.
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git status --porcelain 2>/dev/null | grep -q . && echo " (+ uncommitted changes)" || true)
log() { printf '[%s %4ds] %s\n' "$BENCH_NAME" "$(( $(date +%s) - START_TIME ))" "$*" >&2; }
die() {
    printf '\n%s bench: FAILED: %s\n' "$BENCH_NAME" "$*" >&2
    exit 1
}

# On exit: stop every process in PIDS, run cleanup_more if the caller has
# one, and remove TMP (kept after a failure when KEEP_TMP is set).
bench_cleanup() {
    local rc=$?
    set +e
    for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && stop_pid "$pid"; done
    declare -F cleanup_more >/dev/null && cleanup_more
    if [ "$rc" -ne 0 ] && [ -n "${KEEP_TMP:-}" ]; then
        echo "$BENCH_NAME bench: logs and data kept in $TMP" >&2
    else
        rm -rf "$TMP"
    fi
    exit "$rc"
}
bench_traps() {
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# The results file's last section: every command the run used, in order.
commands_section() {
    echo "## Commands"
    echo
    echo '```'
    for c in "${COMMANDS[@]}"; do echo "$c"; done
    echo '```'
}

# A command line as it can be pasted back into a shell.
quote_cmd() { local out; out=$(printf '%q ' "$@"); echo "${out% }"; }

tail_log() { [ -f "$1" ] && { echo "---- $1 (last lines) ----" >&2; tail -n 30 "$1" >&2; }; return 0; }

free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

stop_pid() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

to_ms() { # wrk latency like 512.00us, 1.23ms, 1.02s -> milliseconds
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n = n / 1000; else if (v ~ /ms$/) n = n; else if (v ~ /m$/) n = n * 60000; else if (v ~ /s$/) n = n * 1000
        printf "%.3f", n }'
}

# run_wrk NAME CONNECTIONS SCRIPT URL: warm up, then measure; appends a row.
run_wrk() {
    local name=$1 conns=$2 script=$3 url=$4 out
    out=$TMP/wrk-$(echo "$1" | tr -c 'a-zA-Z0-9\n' '-').txt
    local sarg=() threads=$WRK_THREADS
    [ "$conns" -lt "$threads" ] && threads=$conns
    [ -n "$script" ] && sarg=(-s "$script")
    if [ "$WARMUP" -gt 0 ]; then
        wrk -t"$threads" -c"$conns" -d"${WARMUP}s" "${sarg[@]}" "$url" >/dev/null 2>&1 || true
    fi
    local cmd=(wrk -t"$threads" -c"$conns" -d"${DUR}s" --latency "${sarg[@]}" "$url")
    COMMANDS+=("$(quote_cmd "${cmd[@]}")")
    log "$name: ${cmd[*]}"
    "${cmd[@]}" >"$out" 2>&1 || { cat "$out" >&2; die "wrk failed for $name"; }
    local rps p50 p99 non2xx sockerr
    rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$out")
    p50=$(awk '/^ +50%/ {print $2}' "$out")
    p99=$(awk '/^ +99%/ {print $2}' "$out")
    non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out")
    sockerr=$(awk '/Socket errors:/ {gsub(",", ""); print $4+$6+$8+$10}' "$out")
    [ -n "$rps" ] && [ -n "$p50" ] && [ -n "$p99" ] || { cat "$out" >&2; die "could not parse wrk's output for $name"; }
    local errs=$(( ${non2xx:-0} + ${sockerr:-0} ))
    ROWS+=("$name|$rps|$(to_ms "$p50")|$(to_ms "$p99")|$errs")
    log "$name: $rps req/s, p50 $p50, p99 $p99, errors $errs"
    [ "${non2xx:-0}" -gt 0 ] && log "WARNING: $name: $non2xx non-2xx answers"
    return 0
}

# wait_http URL PID LOG WHAT: until URL answers (fails the run if PID exits).
wait_http() {
    local url=$1 pid=$2 logf=$3 what=$4
    for _ in $(seq 1 200); do
        kill -0 "$pid" 2>/dev/null || { tail_log "$logf"; die "$what exited before answering on $url"; }
        if "$PY" - "$url" <<'PYEOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=1).read()
PYEOF
        then return 0; fi
        sleep 0.1
    done
    tail_log "$logf"
    die "$what does not answer on $url after 20 s"
}

# start_herald NAME STORE [EXTRA ARGS...]: a herald serving STORE with 2 I/O
# threads; sets HERALD_URL and HERALD_PID (added to PIDS, stopped on exit).
start_herald() {
    local name=$1 store=$2 port out err
    shift 2
    port=$(free_port)
    out=$TMP/herald-$name.out
    err=$TMP/herald-$name.err
    local cmd=("$HERALD" serve --listen "127.0.0.1:$port" --store "$store" --threads 2 "$@")
    COMMANDS+=("$(quote_cmd "${cmd[@]}")")
    log "starting herald ($name): ${cmd[*]}"
    "${cmd[@]}" >"$out" 2>"$err" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 600); do
        grep -q ready "$out" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || { tail_log "$err"; die "herald ($name) exited before it was ready"; }
        sleep 0.1
    done
    grep -q ready "$out" || { tail_log "$err"; die "herald ($name) printed no ready line in 60 s"; }
    HERALD_URL="http://127.0.0.1:$port"
    HERALD_PID=$pid
    wait_http "$HERALD_URL/healthz" "$pid" "$err" "herald ($name)"
    log "herald ($name) ready at $HERALD_URL"
}

# start_nginx: nginx answering a constant (bench/nginx.conf.tmpl); sets
# NGINX_PORT and NGINX_PID.
start_nginx() {
    NGINX_PORT=$(free_port)
    NGINX_DIR=$TMP/nginx
    mkdir -p "$NGINX_DIR"
    sed -e "s#@DIR@#$NGINX_DIR#g" -e "s#@PORT@#$NGINX_PORT#g" bench/nginx.conf.tmpl >"$NGINX_DIR/nginx.conf"
    nginx -t -q -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" 2>"$NGINX_DIR/t.log" || { cat "$NGINX_DIR/t.log" >&2; die "nginx rejects its config"; }
    COMMANDS+=("nginx -p $NGINX_DIR -c $NGINX_DIR/nginx.conf   (bench/nginx.conf.tmpl: worker_processes 2; return 200 \"42\")")
    nginx -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" 2>"$NGINX_DIR/stderr.log" &
    NGINX_PID=$!
    PIDS+=("$NGINX_PID")
    wait_http "http://127.0.0.1:$NGINX_PORT/" "$NGINX_PID" "$NGINX_DIR/nginx-error.log" nginx
}

cluster_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; }

# ensure_cluster PORT: use the Redis Cluster on PORT, or start one (the
# caller's cleanup stops it when CLUSTER_STARTED=1).
ensure_cluster() {
    local port=$1
    if cluster_ok "$port"; then
        log "using the Redis Cluster already running on $port"
        return 0
    fi
    [ -x scripts/redis-cluster.sh ] || die "scripts/redis-cluster.sh is missing: cannot start a Redis Cluster"
    COMMANDS+=("scripts/redis-cluster.sh start $port")
    log "starting a Redis Cluster: scripts/redis-cluster.sh start $port"
    CLUSTER_STARTED=1
    scripts/redis-cluster.sh start "$port" >"$TMP/cluster-$port.log" 2>&1 || { tail_log "$TMP/cluster-$port.log"; die "scripts/redis-cluster.sh start $port failed"; }
    for _ in $(seq 1 100); do cluster_ok "$port" && break; sleep 0.1; done
    cluster_ok "$port" || { tail_log "$TMP/cluster-$port.log"; die "the Redis Cluster on $port is not ok"; }
}

# ---- PostgreSQL, the SQL peer (stories.sh, reading.sh) ---------------------------
# pg_setup finds Debian's server binaries (installing postgresql with apt-get
# when they are missing) and sets PG_BIN, PG_USER, PG_VERSION; pg_start DIR
# starts a throwaway cluster in DIR on a free loopback port and sets PG_PORT,
# PG_LOG, PG_OPTS, PSQL (an array), PG_STARTED=1; pg_stop stops it (for the
# caller's cleanup). PostgreSQL refuses to run as root: as root it runs as the
# 'postgres' user (as_pg), which must reach DIR's parent and the data files.

# cache_mb: the memory a bench gives a server's own cache, in MB: a quarter
# of the machine's, at most 4 GB. PostgreSQL's shared_buffers; the herald it
# is compared with gets as much on top of its default memory.
cache_mb() {
    local mb
    mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 4 ))
    [ "$mb" -gt 4096 ] && mb=4096
    echo "$mb"
}

as_pg() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$PG_USER" -- "$@"; else "$@"; fi
}

find_pg() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/postgres" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/pgbench" ] && [ -x "$d/psql" ]; then
            PG_BIN=$d
            return 0
        fi
    done
    return 1
}

pg_setup() {
    PG_BIN=""
    if ! find_pg; then
        log "PostgreSQL is not installed: apt-get install postgresql postgresql-contrib"
        local sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql postgresql-contrib >"$TMP/apt.log" 2>&1 ||
            { tail_log "$TMP/apt.log"; die "could not install PostgreSQL (BENCH_SKIP_PG=1 skips it)"; }
        find_pg || die "PostgreSQL installed, but no server binaries under /usr/lib/postgresql/*/bin"
    fi
    PG_USER=$(id -un)
    if [ "$(id -u)" -eq 0 ]; then
        getent passwd postgres >/dev/null || die "running as root, and there is no 'postgres' user to run PostgreSQL as"
        PG_USER=postgres
    fi
    PG_VERSION=$("$PG_BIN/postgres" --version | awk '{print $3}')
}

pg_start() {
    PG_DATA=$1/pg
    local sock=$1/pgrun   # its socket and its log
    PG_LOG=$sock/postgresql.log
    mkdir -p "$PG_DATA" "$sock"
    chmod 700 "$PG_DATA"
    [ "$(id -u)" -eq 0 ] && chown "$PG_USER" "$PG_DATA" "$sock"
    local icmd=("$PG_BIN/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 --locale=C --no-sync)
    COMMANDS+=("$(quote_cmd "${icmd[@]}")   (as $PG_USER)")
    as_pg "${icmd[@]}" >"$TMP/initdb.log" 2>&1 || { tail_log "$TMP/initdb.log"; die "initdb failed"; }
    PG_PORT=$(free_port)
    # A fair configuration for a read benchmark on this machine: caches sized to
    # the RAM, SSD costs, no JIT (compiling a 0.1 ms query only slows it);
    # wal_level=minimal, fsync=off and no autovacuum only speed up the load.
    local mem_kb sb_mb ecs_mb
    mem_kb=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
    sb_mb=$(cache_mb)
    ecs_mb=$(( mem_kb / 1024 / 2 ))
    PG_OPTS="-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories=$sock \
-c shared_buffers=${sb_mb}MB -c effective_cache_size=${ecs_mb}MB -c work_mem=64MB -c maintenance_work_mem=1GB \
-c random_page_cost=1.1 -c effective_io_concurrency=200 -c jit=off \
-c wal_level=minimal -c max_wal_senders=0 -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
-c max_wal_size=16GB -c checkpoint_timeout=30min -c autovacuum=off -c max_parallel_maintenance_workers=2"
    local scmd=("$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 120 -o "$PG_OPTS" start)
    COMMANDS+=("$(quote_cmd "${scmd[@]}")   (as $PG_USER)")
    log "starting PostgreSQL $PG_VERSION on 127.0.0.1:$PG_PORT"
    PG_STARTED=1
    as_pg "${scmd[@]}" >"$TMP/pg_ctl.log" 2>&1 || { tail_log "$TMP/pg_ctl.log"; tail_log "$PG_LOG"; die "PostgreSQL did not start"; }
    PSQL=("$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres)
}

pg_stop() {
    [ "${PG_STARTED:-0}" = 1 ] || return 0
    log "stopping PostgreSQL"
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -w -t 60 stop -m fast >/dev/null 2>&1 || {
        local ppid
        ppid=$(head -n1 "$PG_DATA/postmaster.pid" 2>/dev/null)
        [ -n "$ppid" ] && kill -KILL "$ppid" 2>/dev/null
    }
    PG_STARTED=0
}

# pgbench_percentiles LOG_GLOB: "N P50_MS P99_MS" from pgbench -l transaction
# logs (client tx latency_us script epoch epoch_us).
pgbench_percentiles() {
    cat $1 | awk '{print $3}' | sort -n | awk '
        { v[NR] = $1 }
        END { if (NR == 0) { print 0, "", ""; exit }
              i50 = int(0.50 * NR + 0.999999); i99 = int(0.99 * NR + 0.999999)
              printf "%d %.3f %.3f\n", NR, v[i50] / 1000, v[i99] / 1000 }'
}

# ---- Reports (stories.sh, reading.sh) -------------------------------------------

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# Read every file under DIR once, so that the OS page cache holds it when a
# measurement starts. This VM's host takes back page cache that has not
# been touched for a while (seen 2026-11-26: 5.3 GB cached fell to 3.7 GB in
# ten idle minutes, with 20 GB free), so a store written or measured earlier
# may come from the disk again, while a database loaded minutes before its
# measurement (PostgreSQL's) does not. Each side is warmed this way right
# before it is measured.
page_cache_warm() {
    local dir=$1 t0 bytes
    t0=$(date +%s.%N)
    find "$dir" -type f -exec cat {} + >/dev/null 2>&1 || true
    bytes=$(du -sb "$dir" | cut -f1)
    log "page cache: read $dir ($bytes bytes) in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
}

# row_field NAME FIELD [ARRAY]: field FIELD (2=rps, 3=p50, 4=p99, 5=errors) of the
# row named NAME in ARRAY (default ROWS) of "name|rps|p50|p99|errors" rows.
row_field() {
    local -n rows_=${3:-ROWS}
    local r
    for r in "${rows_[@]}"; do
        [ "${r%%|*}" = "$1" ] && { echo "$r" | cut -d'|' -f"$2"; return; }
    done
    echo ""
}

# div A B: A / B with 2 decimals below 1, else 1; "n/a" without a B.
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 <= 0) print "n/a"; else printf (a / b < 1 ? "%.2f" : "%.1f"), a / b }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "n/a" && a != "" && a + 0 >= b + 0) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'; }
# verdict TEST...: "met" if the test command succeeds, else "**missed**".
verdict() { if "$@"; then echo "met"; else echo "**missed**"; fi; }
