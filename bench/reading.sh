#!/usr/bin/env bash
# bench/reading.sh — social reading benchmark (issue 4; `make bench` runs it after
# the other parts, BENCH_SKIP_READING=1 skips it). One run, on this machine:
#
#   1. build/reading_load builds the dataset in a fresh RocksDB directory through
#      the core (see bench/reading_load.c: 100 K users x scale, Pareto friend
#      counts averaging 450, 5 000 heavy readers at 100 reads a day and a user
#      "worst" befriending all of them, 30 days of Zipf reads over 2 M x scale
#      URLs) and measures in-process: friends-reads (N = 100) for users with
#      ~450 friends and for "worst", on "zipf" feeds (URLs drawn like the reads:
#      many popular) and "tail" feeds (URLs uniform over the ranks: mostly read by
#      few), p50/p99 and calls/s on 2 threads; read recording; popular, trending,
#      friends-popular. Bytes on disk per recorded read: the RocksDB directory
#      (closed) over the reads recorded. herald's memory (the setting) is
#      what PostgreSQL gets for shared_buffers (cache_mb, lib.sh: a quarter of
#      RAM, at most 4 GB) on top of herald's default 2 GB, here and in part 2.
#   2. herald serve on that directory, measured with wrk (--latency):
#      friends-reads for both kinds of feed and for "worst" (bench/friends_reads.lua,
#      2 connections, so the latencies are the server's plus loopback), and read
#      recording (bench/reads_post.lua, 64 connections). Before that, a few answers
#      are saved to check PostgreSQL's.
#   3. PostgreSQL (Debian's package; installed with apt-get when missing), a
#      throwaway cluster on a loopback port: the seed's user -> URL-hash rows
#      (reads: PRIMARY KEY (uid, url_hash), and an index (url_hash, uid) for the
#      other direction), friends (PRIMARY KEY (uid, friend)), the readers of each
#      URL counted into url_readers, the SAME data (exported by the loader), the
#      answers checked against herald's, then the same query with pgbench
#      (-M prepared, 2 clients): the friends who read any of the 100 URLs, and
#      the 100 URLs' reader counts, in one transaction.
#
# and prints a table against the issue's targets (friends-reads N=100 M=450 p99
# <= 2 ms embedded; M=5 000 heavy readers p99 <= 30 ms; herald >= 10 x PostgreSQL
# on the same query), also written to bench/results/reading-latest.md with the
# date, commit, machine, load average, scale and the exact commands run.
#
# Environment:
#   BENCH_READING_SCALE   dataset size, 1.0 = the issue's (default); 0.1 for a quick run
#   BENCH_READING_HEAVY   heavy readers (5000: the worst case's M)
#   BENCH_READING_CALLS   in-process calls timed per query (2000; "worst" a quarter)
#   BENCH_DURATION        seconds per wrk / pgbench / timed phase (10)
#   BENCH_WARMUP          seconds of unrecorded wrk warm-up (2)
#   BENCH_CONNECTIONS     wrk connections for the recording run (64)
#   BENCH_WRK_THREADS     wrk threads (2)
#   BENCH_SKIP_PG         1: skip part 3
#   BENCH_STRICT          1: exit 1 when a target is missed
#   BENCH_ROCKSDB_QUERY   tuning after the store's path (off=chunks: bench/lib.sh)
#   BENCH_TMPDIR          where the temp dir goes (TMPDIR, /tmp): ~15 GB at scale 1
#   BENCH_READING_KEEP    a directory: the loaded store, the exports and the
#                         loader's figures go there and stay after the run
#   BENCH_READING_REUSE   a directory an earlier run kept: no load; the store is
#                         measured again (reopened, part 1's step 7 only) and parts
#                         2-3 run on it. The load's own figures (load rate,
#                         recording, right after the load) are that run's, and the
#                         results file says so. The full-scale load takes about an
#                         hour here; this re-runs the rest in ~15 minutes
#   HERALD_BIN            the server (build/herald); READING_LOADER (build/reading_load)
#   KEEP_TMP              set: keep the temp dir when the run fails
#
# Every process the script starts is stopped on exit (trap EXIT).

set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

SCALE=${BENCH_READING_SCALE:-1.0}
HEAVY=${BENCH_READING_HEAVY:-5000}
CALLS=${BENCH_READING_CALLS:-2000}
LOADER=${READING_LOADER:-build/reading_load}
SKIP_PG=${BENCH_SKIP_PG:-0}
RESULTS_DIR=$ROOT/bench/results
RESULTS=$RESULTS_DIR/reading-latest.md

TMP=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/herald-reading.XXXXXX")
REUSE=${BENCH_READING_REUSE:-}
KEEP=${BENCH_READING_KEEP:-}
[ -n "$REUSE" ] && KEEP=""
DATASET=${REUSE:-${KEEP:-$TMP}} # where the store and the exports live
DATA=$DATASET/data
STORE_DIR=$DATASET/rocksdb
PIDS=()
PG_DATA=""
PG_VERSION=""
PG_STARTED=0
COMMANDS=()
ROWS=()          # "name|rps|p50|p99|errors"
BENCH_NAME=reading
# log, die, bench_traps, quote_cmd, tail_log, free_port, stop_pid, to_ms, run_wrk, ... (lib.sh)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cleanup_more() { pg_stop; }
bench_traps

command -v wrk >/dev/null 2>&1 || die "wrk is not installed (make deps installs it)"
awk -v s="$SCALE" 'BEGIN { exit !(s > 0 && s <= 10) }' || die "BENCH_READING_SCALE must be in (0, 10], got '$SCALE'"
if [ "$SKIP_PG" != 1 ]; then pg_setup; fi # early: a failure should not wait for the load

# ---- 1. Load and in-process measurements ------------------------------------------

if [ -z "${READING_LOADER:-}" ] || [ -z "${HERALD_BIN:-}" ]; then
    log "building: make build/herald build/reading_load"
    make --no-print-directory build/herald build/reading_load >"$TMP/make.log" 2>&1 || { tail_log "$TMP/make.log"; die "build failed"; }
fi
[ -x "$HERALD" ] || die "$HERALD does not exist or is not executable"
[ -x "$LOADER" ] || die "$LOADER does not exist or is not executable"

MODEL=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
LOAD_START=$(loadavg)
log "machine: $(nproc) cores, $MODEL; load average $LOAD_START"
if awk -v l="${LOAD_START%% *}" 'BEGIN { exit !(l > 0.5) }'; then
    log "WARNING: load average $LOAD_START before the run: other work on this machine skews the numbers"
fi

STORE_CACHE="memory=$(( $(cache_mb) + 2048 ))m" # PostgreSQL's shared_buffers on top of the default
lcmd=(nice "$LOADER" --store "$(rocks_uri "$STORE_DIR")" --scale "$SCALE" --heavy "$HEAVY" --threads 2 --calls "$CALLS"
      --duration "$DUR" --set "$STORE_CACHE")
if [ -n "$REUSE" ]; then
    [ -f "$REUSE/load.env" ] && [ -d "$STORE_DIR" ] && [ -d "$DATA" ] ||
        die "BENCH_READING_REUSE=$REUSE: not a directory BENCH_READING_KEEP left (load.env, rocksdb/, data/)"
    grep -qx "SCALE=$(awk -v s="$SCALE" 'BEGIN { print s + 0 }')" "$REUSE/load.env" ||
        die "BENCH_READING_REUSE=$REUSE holds another scale than $SCALE (BENCH_READING_SCALE): $(grep '^SCALE=' "$REUSE/load.env")"
    lcmd+=(--reuse 1)
    log "reusing the dataset in $REUSE (scale $SCALE): ${lcmd[*]}"
else
    [ -e "$STORE_DIR" ] && die "BENCH_READING_KEEP=$KEEP holds a dataset already (reuse it with BENCH_READING_REUSE, or remove it)"
    mkdir -p "$DATA"
    lcmd+=(--out "$DATA")
    log "loading (scale $SCALE): ${lcmd[*]}"
fi
COMMANDS+=("$(quote_cmd "${lcmd[@]}")")
[ -n "$REUSE" ] && page_cache_warm "$STORE_DIR" # a fresh load's files are in it already
{ "${lcmd[@]}" 2>&1 >"$TMP/load.new.env" | tee "$TMP/load.log" >&2; } || { tail_log "$TMP/load.log"; die "reading_load failed"; }
# The load's figures, then this run's (with --reuse 1: the reopened ones only).
if [ -n "$REUSE" ]; then cat "$REUSE/load.env" "$TMP/load.new.env" >"$TMP/load.env"; else cp "$TMP/load.new.env" "$TMP/load.env"; fi
[ -n "$KEEP" ] && cp "$TMP/load.env" "$KEEP/load.env"
LOAD_AVG_AFTER_LOAD=$(loadavg)
# shellcheck disable=SC1090
. "$TMP/load.env"
STORE_BYTES=$(du -sb "$STORE_DIR" | cut -f1)
BYTES_PER_READ=$(awk -v b="$STORE_BYTES" -v n="$READS_RECORDED" 'BEGIN { printf "%.0f", n ? b / n : 0 }')
log "loaded: $READS_RECORDED reads recorded, RocksDB $(du -sh "$STORE_DIR" | cut -f1) ($BYTES_PER_READ bytes per read); load average $LOAD_AVG_AFTER_LOAD"

# ---- 2. herald over HTTP ------------------------------------------------------------

page_cache_warm "$STORE_DIR"
start_herald rocksdb "$(rocks_uri "$STORE_DIR")" --set "$STORE_CACHE"
URL=$HERALD_URL
export BENCH_FEEDS_FILE=$DATA/feeds.txt BENCH_USERS_FILE=$DATA/query_users.txt

# Answers to check PostgreSQL's against: (user, feed) pairs, as herald gives them.
"$PY" - "$URL" "$DATA" >"$TMP/probe.log" 2>&1 <<'EOF' || { cat "$TMP/probe.log" >&2; die "herald's friends-reads answers could not be fetched"; }
import json, sys, urllib.request
url, data = sys.argv[1], sys.argv[2]
users = [l.strip() for l in open(data + "/query_users.txt") if l.strip()]
bodies = [l.strip() for l in open(data + "/feeds.txt") if l.strip()]
checks = []
for i, (u, f) in enumerate([(users[k % len(users)], k * 37 % len(bodies)) for k in range(8)] + [("worst", 3), ("worst", 250)]):
    req = urllib.request.Request(f"{url}/api/v1/users/{u}/friends-reads", data=bodies[f].encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    ans = json.load(urllib.request.urlopen(req, timeout=60))["urls"]
    urls = json.loads(bodies[f])["urls"]
    checks.append({"user": u, "feed": f, "answer": [[sorted(ans[x]["friends"]), ans[x]["readers"]] for x in urls]})
json.dump(checks, open(data + "/herald_answers.json", "w"))
print("saved", len(checks), "answers")
EOF

export BENCH_FEEDS_FROM=1 BENCH_FEEDS_TO=200
run_wrk "herald friends-reads M450, zipf feeds (2 conn)" 2 bench/friends_reads.lua "$URL"
export BENCH_FEEDS_FROM=201 BENCH_FEEDS_TO=400
run_wrk "herald friends-reads M450, tail feeds (2 conn)" 2 bench/friends_reads.lua "$URL"
export BENCH_USER=worst BENCH_FEEDS_FROM=1 BENCH_FEEDS_TO=200
run_wrk "herald friends-reads worst (M=5000), zipf feeds (2 conn)" 2 bench/friends_reads.lua "$URL"
unset BENCH_USER
export BENCH_READERS=$HEAVY BENCH_URLS=$URLS
run_wrk "herald read recording POST (${CONNS} conn)" "$CONNS" bench/reads_post.lua "$URL"
kill -0 "$HERALD_PID" 2>/dev/null || { tail_log "$TMP/herald-rocksdb.err"; die "herald died during the run"; }
stop_pid "$HERALD_PID"

# ---- 3. PostgreSQL ------------------------------------------------------------------

PG_RESULTS=()    # "name|tps|p50|p99|failed"
PG_CHECK=""; PG_LOAD_S=""; PG_SIZE=""; PG_PLAN=""
if [ "$SKIP_PG" != 1 ]; then
    chmod 711 "$TMP" "$DATASET"
    chmod 755 "$DATA"
    if compgen -G "$DATA/reads.*.tsv" >/dev/null; then # one file per loader thread (a reused dataset has one already)
        cat "$DATA"/reads.*.tsv >"$DATA/reads.tsv"
        rm -f "$DATA"/reads.*.tsv
    fi
    chmod 644 "$DATA"/*.tsv "$DATA"/*.txt
    pg_start "$TMP"
    # The seed's schema: a row per (user, hash of URL) read, friends as rows.
    # Indexes for both ways a planner may take: from the user's friends to their
    # rows (PRIMARY KEY (uid, url_hash): one probe per friend and URL), or from
    # the URLs to their readers ((url_hash, uid), covering read_at). Reader
    # counts are kept in a table, as herald keeps a list's size in its metadata.
    cat >"$TMP/schema.sql" <<EOF
\\timing on
BEGIN;
CREATE TABLE friends (uid text NOT NULL, friend text NOT NULL);
COPY friends FROM '$DATA/friends.tsv' WITH (FREEZE);
COMMIT;
BEGIN;
CREATE TABLE reads (uid text NOT NULL, url_hash bigint NOT NULL, read_at bigint NOT NULL);
COPY reads FROM '$DATA/reads.tsv' WITH (FREEZE);
COMMIT;
ALTER TABLE friends ADD PRIMARY KEY (uid, friend);
ALTER TABLE reads ADD PRIMARY KEY (uid, url_hash) INCLUDE (read_at);
CREATE INDEX reads_by_url ON reads (url_hash, uid) INCLUDE (read_at);
CREATE TABLE url_readers AS SELECT url_hash, count(*) AS readers FROM reads GROUP BY url_hash;
ALTER TABLE url_readers ADD PRIMARY KEY (url_hash);
CREATE TABLE feeds (id int PRIMARY KEY, hashes bigint[] NOT NULL);
COPY feeds FROM '$DATA/feeds.tsv';
CREATE TABLE query_users (id serial PRIMARY KEY, uid text NOT NULL);
COPY query_users (uid) FROM '$DATA/query_users.txt';
VACUUM (ANALYZE) friends;
VACUUM (ANALYZE) reads;
VACUUM (ANALYZE) url_readers;
VACUUM (ANALYZE) feeds;
VACUUM (ANALYZE) query_users;
EOF
    COMMANDS+=("psql -h 127.0.0.1 -p $PG_PORT -U postgres -f schema.sql   (below)")
    log "PostgreSQL: loading the same data (COPY, indexes, VACUUM ANALYZE)"
    T0=$(date +%s)
    "${PSQL[@]}" -f "$TMP/schema.sql" >"$TMP/pg-load.log" 2>&1 || { tail_log "$TMP/pg-load.log"; tail_log "$PG_LOG"; die "loading PostgreSQL failed"; }
    PG_LOAD_S=$(( $(date +%s) - T0 ))
    PG_SIZE=$("${PSQL[@]}" -At -c "SELECT pg_size_pretty(pg_database_size('postgres'))")
    N_QUSERS=$("${PSQL[@]}" -At -c "SELECT count(*) FROM query_users")
    log "PostgreSQL loaded in $PG_LOAD_S s ($PG_SIZE)"

    # The query, as pgbench runs it: the friends (of the user) who read any of
    # the feed's URLs within the TTL, and the URLs' reader counts.
    SINCE=$(( $(date +%s) * 1000 - 30 * 86400000 ))
    FRIENDS_SQL="SELECT r.url_hash, r.uid FROM friends f JOIN reads r ON r.uid = f.friend AND r.url_hash = ANY ((SELECT hashes FROM feeds WHERE id = \$2)::bigint[]) AND r.read_at > $SINCE WHERE f.uid = \$1"
    COUNTS_SQL="SELECT c.url_hash, c.readers FROM url_readers c WHERE c.url_hash = ANY ((SELECT hashes FROM feeds WHERE id = \$1)::bigint[])"

    # The same answers as herald's, for the pairs saved above.
    "$PY" - "$DATA" "$PG_PORT" "$PG_BIN/psql" "$FRIENDS_SQL" "$COUNTS_SQL" >"$TMP/pg-check.log" 2>&1 <<'EOF' || { cat "$TMP/pg-check.log" >&2; die "comparing PostgreSQL's answers with herald's failed"; }
import json, subprocess, sys
data, port, psql, friends_sql, counts_sql = sys.argv[1:]
feeds = {}
for line in open(data + "/feeds.tsv"):
    i, arr = line.rstrip("\n").split("\t")
    feeds[int(i)] = [int(x) for x in arr.strip("{}").split(",")]
def q(sql, *args):
    for k, a in reversed(list(enumerate(args, 1))):
        sql = sql.replace(f"${k}", f"'{a}'" if isinstance(a, str) else str(a))
    out = subprocess.run([psql, "-X", "-At", "-F", "\t", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-c", sql],
                         capture_output=True, text=True, check=True).stdout
    return [l.split("\t") for l in out.splitlines() if l]
same = 0
checks = json.load(open(data + "/herald_answers.json"))
for c in checks:
    hashes = feeds[c["feed"]]
    friends = {h: [] for h in hashes}
    for h, uid in q(friends_sql, c["user"], c["feed"]):
        friends[int(h)].append(uid)
    counts = {int(h): int(n) for h, n in q(counts_sql, c["feed"])}
    got = [[sorted(friends[h]), counts.get(h, 0)] for h in hashes]
    if got == c["answer"]:
        same += 1
    else:
        bad = [(i, a, b) for i, (a, b) in enumerate(zip(got, c["answer"])) if a != b][:3]
        print("differs:", c["user"], c["feed"], "(index, PostgreSQL, herald):", bad)
print(f"{same} of {len(checks)} friends-reads answers identical")
EOF
    PG_CHECK=$(tail -n1 "$TMP/pg-check.log")
    log "PostgreSQL check: $PG_CHECK"
    grep -q differs "$TMP/pg-check.log" && { log "WARNING: answers differ:"; cat "$TMP/pg-check.log" >&2; }
    PG_PLAN=$("${PSQL[@]}" -c "PREPARE fr(text, int) AS $FRIENDS_SQL" \
        -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE fr('$(head -n1 "$DATA/query_users.txt")', 0)")

    # pgbench: a random query user and feed per transaction (feeds 0..199 zipf,
    # 200..399 tail), or "worst".
    mkdir -p "$TMP/pglog"
    pg_run() { # NAME FEED_FROM FEED_TO USER_EXPR
        local name=$1 script=$TMP/pgbench-$(echo "$1" | tr -c 'a-zA-Z0-9\n' '-').sql
        {
            echo "\\set q random(1, $N_QUSERS)"
            echo "\\set f random($2, $3)"
            echo "SELECT r.url_hash, r.uid FROM friends f JOIN reads r ON r.uid = f.friend AND r.url_hash = ANY ((SELECT hashes FROM feeds WHERE id = :f)::bigint[]) AND r.read_at > $SINCE WHERE f.uid = $4;"
            echo "SELECT c.url_hash, c.readers FROM url_readers c WHERE c.url_hash = ANY ((SELECT hashes FROM feeds WHERE id = :f)::bigint[]);"
        } >"$script"
        local prefix=$TMP/pglog/$(basename "$script" .sql)
        local cmd=("$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PG_PORT" -U postgres -M prepared -c 2 -j 2 -T "$DUR"
                   -f "$script" -l --log-prefix="$prefix" postgres)
        [ "$WARMUP" -gt 0 ] && { "$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PG_PORT" -U postgres -M prepared -c 2 -j 2 -T "$WARMUP" -f "$script" postgres >/dev/null 2>&1 || true; }
        COMMANDS+=("$(quote_cmd "${cmd[@]}")   ($(basename "$script") below)")
        log "pgbench ($name): ${cmd[*]}"
        "${cmd[@]}" >"$TMP/pgbench.txt" 2>&1 || { cat "$TMP/pgbench.txt" >&2; die "pgbench failed"; }
        local tps failed n p50 p99
        tps=$(awk '/^tps = / {printf "%.1f", $3; exit}' "$TMP/pgbench.txt")
        failed=$(awk '/number of failed transactions:/ {print $5}' "$TMP/pgbench.txt")
        read -r n p50 p99 < <(pgbench_percentiles "$prefix.*")
        [ -n "$tps" ] && [ "${n:-0}" -gt 0 ] || { cat "$TMP/pgbench.txt" >&2; die "could not parse pgbench's output"; }
        PG_RESULTS+=("$name|$tps|$p50|$p99|${failed:-0}")
        log "PostgreSQL $name: $tps tps, p50 $p50 ms, p99 $p99 ms over $n transactions"
    }
    page_cache_warm "$PG_DATA"
    pg_run "M450, zipf feeds" 0 199 "(SELECT uid FROM query_users WHERE id = :q)"
    pg_run "M450, tail feeds" 200 399 "(SELECT uid FROM query_users WHERE id = :q)"
    pg_run "worst (M=5000), zipf feeds" 0 199 "'worst'"
    pg_run "worst (M=5000), tail feeds" 200 399 "'worst'"
    PG_SCRIPTS=$(for f in "$TMP"/pgbench-*.sql; do echo "-- $(basename "$f")"; cat "$f"; done)
fi

# ---- Report --------------------------------------------------------------------------

TARGETS=$TMP/targets.md
{
    echo "| target (issue 4) | measured | verdict |"
    echo "|---|---|---|"
    echo "| friends-reads N=100, M=450, embedded p99 <= 2 ms (store reopened and quiet, after the warm-up calls) | zipf feeds p99 $REOPENED_M450_ZIPF_P99_MS ms (p50 $REOPENED_M450_ZIPF_P50_MS; the first $REOPENED_M450_ZIPF_COLD_N calls after the reopen: p99 $REOPENED_M450_ZIPF_COLD_P99_MS); tail feeds p99 $REOPENED_M450_TAIL_P99_MS ms (p50 $REOPENED_M450_TAIL_P50_MS; cold p99 $REOPENED_M450_TAIL_COLD_P99_MS) | zipf $(verdict le "$REOPENED_M450_ZIPF_P99_MS" 2), tail $(verdict le "$REOPENED_M450_TAIL_P99_MS" 2) |"
    echo "| M=5 000 friends, all heavy readers, p99 <= 30 ms (reopened, quiet, after the warm-up calls) | zipf feeds p99 $REOPENED_WORST_ZIPF_P99_MS ms (p50 $REOPENED_WORST_ZIPF_P50_MS; cold p99 $REOPENED_WORST_ZIPF_COLD_P99_MS); tail feeds p99 $REOPENED_WORST_TAIL_P99_MS ms (p50 $REOPENED_WORST_TAIL_P50_MS; cold p99 $REOPENED_WORST_TAIL_COLD_P99_MS) | zipf $(verdict le "$REOPENED_WORST_ZIPF_P99_MS" 30), tail $(verdict le "$REOPENED_WORST_TAIL_P99_MS" 30) |"
    if [ "$SKIP_PG" != 1 ]; then
        for kind in "M450, zipf feeds:REOPENED_M450_ZIPF" "M450, tail feeds:REOPENED_M450_TAIL" "worst (M=5000), zipf feeds:REOPENED_WORST_ZIPF" "worst (M=5000), tail feeds:REOPENED_WORST_TAIL"; do
            name=${kind%%:*}
            key=${kind##*:}
            per_s_var=${key}_PER_S
            p50_var=${key}_P50_MS
            tps=$(row_field "$name" 2 PG_RESULTS)
            pg50=$(row_field "$name" 3 PG_RESULTS)
            r=$(div "${!per_s_var}" "$tps")
            rl=$(div "$pg50" "${!p50_var}")
            echo "| herald >= 10 x PostgreSQL, $name: embedded (2 threads) vs pgbench (2 clients) | ${r} x throughput (${!per_s_var} vs $tps/s); ${rl} x p50 (${!p50_var} vs $pg50 ms) | $(verdict ge "$r" 10) |"
        done
    fi
    echo "| read recording (no target) | in-process ${RECORD_PER_S}/s (2 threads, p99 ${RECORD_P99_MS} ms); HTTP $(row_field "herald read recording POST (${CONNS} conn)" 2) req/s; load ${LOAD_READS_PER_S} reads/s in bulk | |"
    echo "| bytes on disk per recorded read (no target) | $BYTES_PER_READ (RocksDB directory $STORE_BYTES bytes, closed, not compacted, over $READS_RECORDED reads) | |"
} >"$TARGETS"
MISSES=$(grep -c '\*\*missed\*\*' "$TARGETS" || true)

INPROC=$TMP/inproc.md
{
    echo "| in-process (build/reading_load, RocksDB) | calls/s (2 threads) | p50 ms | p90 ms | p99 ms | max ms | CPU ms a call | CPU stolen % | batches | store ops | friends | URLs by side | warm-up calls before: p50 / p99 ms |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    for key in M450_ZIPF M450_TAIL WORST_ZIPF WORST_TAIL POPULAR_1D TRENDING FRIENDS_POPULAR_1D \
               REOPENED_M450_ZIPF REOPENED_M450_TAIL REOPENED_WORST_ZIPF REOPENED_WORST_TAIL; do
        v() { local n="${key}_$1"; echo "${!n:-}"; }
        echo "| $key ($(v N) calls) | $(v PER_S) | $(v P50_MS) | $(v P90_MS) | $(v P99_MS) | $(v MAX_MS) | $(v CPU_MS) | $(v STOLEN_PCT) | $(v BATCHES) | $(v OPS) | $(v FRIENDS) | $(v SIDES)$([ -n "$(v SPLIT)" ] && echo "; calls split over two threads: $(v SPLIT)") | $(v COLD_N): $(v COLD_P50_MS) / $(v COLD_P99_MS) |"
    done
    echo "| read recording, one read a call | $RECORD_PER_S | $RECORD_P50_MS | | $RECORD_P99_MS | | | | 3 | | | | |"
} >"$INPROC"

NET=$TMP/net.md
{
    echo "| over the network | req/s | p50 ms | p99 ms | errors |"
    echo "|---|---:|---:|---:|---:|"
    for r in "${ROWS[@]}"; do
        IFS='|' read -r name rps p50 p99 errs <<<"$r"
        echo "| $name | $rps | $p50 | $p99 | $errs |"
    done
    for r in "${PG_RESULTS[@]:-}"; do
        [ -n "$r" ] || continue
        IFS='|' read -r name rps p50 p99 errs <<<"$r"
        echo "| PostgreSQL $name (pgbench, 2 clients) | $rps | $p50 | $p99 | $errs |"
    done
} >"$NET"

if awk -v s="$SCALE" -v h="$HEAVY" 'BEGIN { exit !(s + 0 == 1 && h + 0 == 5000) }'; then FULL="the issue's full size"; else FULL="NOT the issue's full size (scale 1.0, 5 000 heavy readers)"; fi
TOTAL_S=$(( $(date +%s) - START_TIME ))
mkdir -p "$RESULTS_DIR"
{
    echo "# herald social reading: benchmark (issue 4)"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- commit: $COMMIT$DIRTY"
    echo "- machine: $(nproc) cores, $MODEL, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r)"
    echo "- tools: $(wrk --version 2>&1 | head -n1 | awk '{print $1, $2}')${PG_VERSION:+, PostgreSQL $PG_VERSION}"
    echo "- memory: herald's \`$STORE_CACHE\`, PostgreSQL's shared_buffers on top of herald's default 2 GB (other settings at their defaults)"
    echo "- load average: $LOAD_START before the run, $LOAD_AVG_AFTER_LOAD after the load, $(loadavg) at the end (the machine is shared: other work skews the numbers)"
    echo "- **scale $SCALE, $HEAVY heavy readers: $FULL**: $USERS users ($FRIENDSHIPS friendships, $FRIENDS_MEAN friends on average, at most $FRIENDS_MAX; $USERS_WITH_2000_FRIENDS users with 2 000 or more), $URLS URLs, $READS_SENT reads sent, $READS_RECORDED answered \"recorded\" (a repeated read of a page is kept as its newest), $QUERY_USERS users with 405..495 friends asked for"
    [ -n "$REUSE" ] && echo "- **dataset reused** from \`$REUSE\` (BENCH_READING_REUSE), loaded by an earlier run: the load's figures (load rate, friend sets, recording, the in-process rows without REOPENED_) are that run's; everything after the reopen, over HTTP and PostgreSQL is this run's"
    echo "- time: friend sets $FRIENDS_SECS s, reads $LOAD_SECS s ($LOAD_READS_PER_S/s); whole run $TOTAL_S s; RocksDB $(du -sh "$STORE_DIR" 2>/dev/null | cut -f1)${PG_LOAD_S:+; PostgreSQL loaded in $PG_LOAD_S s ($PG_SIZE)}"
    echo
    echo "## Targets"
    echo
    cat "$TARGETS"
    echo
    echo "## In-process (embedded)"
    echo
    cat "$INPROC"
    echo
    echo "\"zipf\" feeds: 100 URLs drawn like the reads (a third among the 100 most read); \"tail\" feeds: 100 URLs"
    echo "uniform over the ranks. Latencies over --calls calls on one thread, after warm-up calls of the same"
    echo "kind (reported apart: right after an open they read their blocks and friend lists into the caches):"
    echo "a query about a user asks about each user asked about once, then half as many calls as timed from"
    echo "another random stream; calls/s on 2 threads for a"
    echo "quarter of BENCH_DURATION; CPU ms a call = the timing thread's CPU time over its calls (less"
    echo "skewed by other processes than the latencies); CPU stolen = the share of the machine's CPU time the"
    echo "hypervisor gave to other guests during the timed calls (/proc/stat), a sign of a busy host (not of one"
    echo "busy in memory bandwidth);"
    echo "batches = store round trips; store ops from hr_store_ops_total. The"
    echo "first rows are measured right after the load (its writes still in memtables, compactions running);"
    echo "REOPENED_* after closing and reopening the store ($REOPEN_SECS s) and waiting for the flushes and"
    echo "compactions the load queued (${REOPEN_QUIESCE_SECS} s): the state a server reaches when writes pause, and the"
    echo "one PostgreSQL is measured in (after its load and VACUUM). Before each side is measured, its files are"
    echo "read once so that the OS page cache holds them (bench/lib.sh, page_cache_warm: this VM's host takes"
    echo "back page cache left idle, and a reused store was written long before PostgreSQL's tables)."
    echo
    echo "## Over the network"
    echo
    cat "$NET"
    echo
    echo "herald: \`herald serve --threads 2 --set $STORE_CACHE\` on the loaded directory, wrk (--latency, ${DUR} s after ${WARMUP} s of warm-up):"
    echo "friends-reads with bench/friends_reads.lua (2 connections), recording with bench/reads_post.lua."
    if [ "$SKIP_PG" != 1 ]; then
        echo
        echo "## PostgreSQL"
        echo
        echo "Same data, exported by the loader: $PG_CHECK."
        echo
        echo '```sql'
        sed -n '/^BEGIN;/,$p' "$TMP/schema.sql"
        echo
        echo "$PG_SCRIPTS"
        echo '```'
        echo
        echo "Server settings: \`$(echo "$PG_OPTS" | tr -s ' ')\`"
        echo
        echo "Plan of the friends query for an M450 user and a zipf feed:"
        echo
        echo '```'
        echo "$PG_PLAN"
        echo '```'
    fi
    echo
    commands_section
} >"$RESULTS"

echo
echo "scale $SCALE, $HEAVY heavy readers ($FULL)"
cat "$TARGETS"
echo
cat "$INPROC"
echo
cat "$NET"
echo
echo "written to ${RESULTS#"$ROOT"/}  (total $TOTAL_S s)"
if [ "$MISSES" -gt 0 ]; then
    echo "reading bench: $MISSES target(s) missed"
    [ "${BENCH_STRICT:-0}" = 1 ] && exit 1
fi
exit 0
