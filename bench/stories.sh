#!/usr/bin/env bash
# bench/stories.sh — stories and ratings benchmark (issue 5; `make bench` runs it
# after bench/run.sh, BENCH_SKIP_STORIES=1 skips it). One run, on this machine:
#
#   1. build/stories_load builds the dataset in a fresh RocksDB directory through
#      the core API (hr_stories_create, hr_ratings_put) and measures in-process
#      ("embedded"): rating upserts/s on 2 threads (back-dated as the load's,
#      then live: stamped with a clock moving from the end of the load), and the latency of
#      unseen (heavy member, rank=top, limit 20) over BENCH_STORIES_CALLS calls
#      (p50/p99), rank=hot, a typical member, top-rated; then exports the final
#      state (stories with their scores, every rating) as TSV
#   2. herald serve on that directory, measured with wrk over HTTP:
#      GET /api/v1/members/heavy/unseen?limit=20 with 64 and with 2 connections,
#      PUT /api/v1/ratings/{subject}/{object} (bench/ratings_put.lua), and the
#      unseen GET again after those PUTs
#   3. PostgreSQL (Debian's package; installed with apt-get when missing): a
#      throwaway cluster in the temp dir, the seed's tables in SQL with the
#      indexes the query needs, the SAME data COPY'd in, checked (every story's
#      stored score = the sum of its ratings; PostgreSQL's first unseen page =
#      herald's), then the unseen query with NOT EXISTS through pgbench
#      (-M prepared, 2 clients, BENCH_DURATION s): tps, p50/p99 from pgbench -l
#
# and prints a table against the issue's targets (embedded: unseen p99 <= 5 ms
# for the 10 K-rating member, upserts >= 50 K/s, herald >= 10 x PostgreSQL on
# the same query), also written to bench/results/stories-latest.md with the
# date, commit, machine, load average, scale and the exact commands run.
#
# Dataset (stories_load.c): 1 M stories (1-2 KiB of HTML each), 100 K members,
# 20 M rating upserts (subject uniform, object Zipf(1.0) over the stories,
# scores 1/-1/0 at 60/15/25 %, times over 30 days), plus member "heavy" with
# 10 K ratings drawn from the same Zipf: all x BENCH_STORIES_SCALE.
#
# Environment:
#   BENCH_STORIES_SCALE  dataset size, 1.0 = the issue's (0.05 for a quick run)
#   BENCH_STORIES_CALLS  in-process unseen calls timed (2000; other queries a quarter)
#   BENCH_STORIES_QUERY_SECS  time limit of each in-process query's latency run (30)
#   BENCH_DURATION       seconds per wrk / pgbench measurement (10)
#   BENCH_UPSERT_SECS    seconds per timed-upsert run (60): long enough to span
#                        flushes of every memtable, the time lists' 256 MB one
#                        included, and compactions they start; 10-s runs gave
#                        ~20-30 % more than 40-s ones (BENCHMARKS.md)
#   BENCH_WARMUP         seconds of unrecorded wrk warm-up (2)
#   BENCH_CONNECTIONS    wrk connections for the throughput runs (64)
#   BENCH_WRK_THREADS    wrk threads (2)
#   BENCH_SKIP_PG        1: skip part 3
#   BENCH_ROCKSDB_QUERY  tuning after the store's path (off=rankings: bench/lib.sh)
#   BENCH_STRICT         1: exit 1 when a target is missed
#   BENCH_TMPDIR         where the temp dir goes (TMPDIR, /tmp): needs ~10 GB free
#                        at scale 1
#   HERALD_BIN           the server (build/herald); STORIES_LOADER (build/stories_load)
#   KEEP_TMP             set: keep the temp dir (logs, data) when the run fails
#
# Every process the script starts is stopped on exit (trap EXIT).

set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

SCALE=${BENCH_STORIES_SCALE:-1.0}
CALLS=${BENCH_STORIES_CALLS:-2000}
QUERY_SECS=${BENCH_STORIES_QUERY_SECS:-30}
UPSERT_DUR=${BENCH_UPSERT_SECS:-60}
LOADER=${STORIES_LOADER:-build/stories_load}
SKIP_PG=${BENCH_SKIP_PG:-0}
RESULTS_DIR=$ROOT/bench/results
RESULTS=$RESULTS_DIR/stories-latest.md

TMP=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/herald-stories.XXXXXX")
DATA=$TMP/data
PIDS=()
PG_DATA=""
PG_VERSION=""
PG_STARTED=0
COMMANDS=()
ROWS=()          # "name|rps|p50|p99|errors"
BENCH_NAME=stories
# log, die, bench_traps, quote_cmd, tail_log, free_port, stop_pid, to_ms, run_wrk, ... (lib.sh)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cleanup_more() { pg_stop; }
bench_traps
# per_s_alone CPU_US: the rate two cores would give at CPU_US of CPU per call.
per_s_alone() { awk -v c="$1" 'BEGIN { if (c > 0) printf "%.0f", 2e6 / c; else print "?" }'; }
# max_of A B: the larger number.
max_of() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 >= b + 0 ? a : b) }'; }

command -v wrk >/dev/null 2>&1 || die "wrk is not installed (make deps installs it)"
awk -v s="$SCALE" 'BEGIN { exit !(s > 0 && s <= 10) }' || die "BENCH_STORIES_SCALE must be in (0, 10], got '$SCALE'"

# ---- PostgreSQL: installed before the long load, so that a failure is early ----

if [ "$SKIP_PG" != 1 ]; then pg_setup; fi

# ---- 1. Load and in-process measurements ------------------------------------------

if [ -z "${STORIES_LOADER:-}" ] || [ -z "${HERALD_BIN:-}" ]; then
    log "building: make build/herald build/stories_load"
    make --no-print-directory build/herald build/stories_load >"$TMP/make.log" 2>&1 || { tail_log "$TMP/make.log"; die "build failed"; }
fi
[ -x "$HERALD" ] || die "$HERALD does not exist or is not executable"
[ -x "$LOADER" ] || die "$LOADER does not exist or is not executable"

MODEL=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
log "machine: $(nproc) cores, $MODEL; load average $(loadavg)"
LOAD_START=$(loadavg)
if awk -v l="${LOAD_START%% *}" 'BEGIN { exit !(l > 0.5) }'; then
    log "WARNING: load average $LOAD_START before the run: other work on this machine skews the numbers"
fi

mkdir -p "$DATA"
STORE_DIR=$TMP/rocksdb
lcmd=("$LOADER" --store "$(rocks_uri "$STORE_DIR")" --scale "$SCALE" --threads 2 --calls "$CALLS" --query-secs "$QUERY_SECS" --duration "$UPSERT_DUR" --out "$DATA")
COMMANDS+=("$(quote_cmd "${lcmd[@]}")")
log "loading (scale $SCALE): ${lcmd[*]}"
# Results (KEY=VALUE) to load.env; progress to the terminal and load.log.
{ "${lcmd[@]}" 2>&1 >"$TMP/load.env" | tee "$TMP/load.log" >&2; } || { tail_log "$TMP/load.log"; die "stories_load failed"; }
LOAD_DONE=$(date +%s)
LOAD_AVG_AFTER_LOAD=$(loadavg)
# shellcheck disable=SC1090
. "$TMP/load.env"
log "loaded in $(( LOAD_DONE - START_TIME )) s; data $(du -sh "$STORE_DIR" | cut -f1) in RocksDB; load average $LOAD_AVG_AFTER_LOAD"

# ---- 2. herald over HTTP ------------------------------------------------------------

HSTART=$(date +%s.%N)
start_herald stories "$(rocks_uri "$STORE_DIR")"
HERALD_OPEN_S=$(awk -v a="$HSTART" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
URL=$HERALD_URL
UNSEEN_PATH="/api/v1/members/heavy/unseen?limit=20"

# The server's first page must be the one the loader saw in-process.
"$PY" - "$URL$UNSEEN_PATH" "$DATA/unseen_heavy.txt" >"$TMP/probe.txt" 2>&1 <<'EOF' || { cat "$TMP/probe.txt" >&2; tail_log "$TMP/herald-stories.err"; die "herald's unseen page is not the loader's"; }
import json, sys, urllib.request
page = json.load(urllib.request.urlopen(sys.argv[1], timeout=30))
got = [s["id"] for s in page["stories"]]
want = [line.split("\t")[0] for line in open(sys.argv[2]) if line.strip()]
if got != want:
    sys.exit("HTTP %s\nin-process %s" % (got, want))
print("unseen page over HTTP = in-process: %d stories, scores %s..%s" % (len(got), page["stories"][0]["score"], page["stories"][-1]["score"]))
EOF
log "$(cat "$TMP/probe.txt")"

run_wrk "herald unseen (64 conn)" "$CONNS" "" "$URL$UNSEEN_PATH"
run_wrk "herald unseen (2 conn)" 2 "" "$URL$UNSEEN_PATH"
export BENCH_OBJECTS_FILE=$DATA/put_objects.txt BENCH_MEMBERS=$MEMBERS
run_wrk "herald rating PUT (64 conn)" "$CONNS" bench/ratings_put.lua "$URL"
run_wrk "herald unseen after PUTs (2 conn)" 2 "" "$URL$UNSEEN_PATH"
kill -0 "$HERALD_PID" 2>/dev/null || { tail_log "$TMP/herald-stories.err"; die "herald died during the run"; }
stop_pid "$HERALD_PID"

# ---- 3. PostgreSQL ------------------------------------------------------------------

PG_TPS=""; PG_P50=""; PG_P99=""; PG_N=""; PG_PLAN=""; PG_LOAD_S=""; PG_CHECK=""
if [ "$SKIP_PG" != 1 ]; then
    # postgres (the OS user) must reach its directory and the TSV files.
    chmod 711 "$TMP"
    chmod 755 "$DATA"
    chmod 644 "$DATA"/*.tsv
    pg_start "$TMP"

    # The seed's tables in SQL: story (its score stored, as herald keeps it in
    # its ranking) and rating, one row per (subject, object) as herald's
    # upserts leave it. Indexes: the ones the unseen query uses (rating's
    # primary key (subject, object) for the NOT EXISTS probe; story by
    # (score DESC, id DESC) for the order) and story's primary key. COPY FREEZE
    # into tables created in the same transaction (no WAL at wal_level=minimal,
    # tuples frozen), indexes built after the data, then VACUUM ANALYZE (the
    # visibility map, for index-only scans, and the statistics).
    cat >"$TMP/schema.sql" <<EOF
\\timing on
BEGIN;
CREATE TABLE story (
    id      text PRIMARY KEY,
    url     text NOT NULL,
    time_ms bigint NOT NULL,
    score   bigint NOT NULL DEFAULT 0,
    content text NOT NULL
);
COPY story (id, url, time_ms, score, content) FROM '$DATA/stories.tsv' WITH (FREEZE);
COMMIT;
BEGIN;
CREATE TABLE rating (
    subject text NOT NULL,
    object  text NOT NULL,
    score   smallint NOT NULL CHECK (score BETWEEN -1 AND 1),
    time_ms bigint NOT NULL
);
COPY rating (subject, object, score, time_ms) FROM '$DATA/ratings.tsv' WITH (FREEZE);
COMMIT;
ALTER TABLE rating ADD PRIMARY KEY (subject, object);
CREATE INDEX story_score ON story (score DESC, id DESC);
VACUUM (ANALYZE) story;
VACUUM (ANALYZE) rating;
EOF
    COMMANDS+=("psql -h 127.0.0.1 -p $PG_PORT -U postgres -f schema.sql   (below)")
    log "PostgreSQL: loading $EXPORT_STORIES stories and $EXPORT_RATINGS ratings (COPY, indexes, VACUUM ANALYZE)"
    T0=$(date +%s)
    "${PSQL[@]}" -f "$TMP/schema.sql" >"$TMP/pg-load.log" 2>&1 || { tail_log "$TMP/pg-load.log"; tail_log "$PG_LOG"; die "loading PostgreSQL failed"; }
    PG_LOAD_S=$(( $(date +%s) - T0 ))
    log "PostgreSQL loaded in $PG_LOAD_S s: $(grep -E '^Time:' "$TMP/pg-load.log" | awk '{printf "%s%.1fs", (n++ ? ", " : ""), $2/1000}')"
    PG_SIZE=$("${PSQL[@]}" -At -c "SELECT pg_size_pretty(pg_database_size('postgres'))")

    # The same data: counts, every stored score = the sum of its ratings, and
    # PostgreSQL's first unseen page = herald's.
    PG_COUNTS=$("${PSQL[@]}" -At -F' ' -c "SELECT (SELECT count(*) FROM story), (SELECT count(*) FROM rating), (SELECT count(*) FROM rating WHERE subject = 'heavy')")
    read -r PG_STORIES PG_RATINGS PG_HEAVY <<<"$PG_COUNTS"
    [ "$PG_STORIES" = "$EXPORT_STORIES" ] && [ "$PG_RATINGS" = "$EXPORT_RATINGS" ] ||
        die "PostgreSQL holds $PG_STORIES stories and $PG_RATINGS ratings, herald exported $EXPORT_STORIES and $EXPORT_RATINGS"
    PG_BAD_SCORES=$("${PSQL[@]}" -At -c "SELECT count(*) FROM story s LEFT JOIN (SELECT object, sum(score) AS total FROM rating GROUP BY object) r ON r.object = s.id WHERE s.score <> coalesce(r.total, 0)")
    UNSEEN_SQL="SELECT id FROM story s WHERE NOT EXISTS (SELECT 1 FROM rating r WHERE r.subject = 'heavy' AND r.object = s.id) ORDER BY s.score DESC, s.id DESC LIMIT 20"
    "${PSQL[@]}" -At -c "$UNSEEN_SQL" >"$TMP/pg-unseen.txt"
    cut -f1 "$DATA/unseen_heavy.txt" >"$TMP/herald-unseen.txt"
    if cmp -s "$TMP/pg-unseen.txt" "$TMP/herald-unseen.txt"; then PG_SAME_PAGE=yes; else PG_SAME_PAGE=no; fi
    PG_CHECK="$PG_STORIES stories, $PG_RATINGS ratings ($PG_HEAVY by heavy); stories whose stored score is not the sum of their ratings: $PG_BAD_SCORES; first unseen page identical to herald's: $PG_SAME_PAGE"
    log "PostgreSQL check: $PG_CHECK"
    [ "$PG_BAD_SCORES" = 0 ] || log "WARNING: $PG_BAD_SCORES stories' scores in herald differ from the sum of their ratings"
    [ "$PG_SAME_PAGE" = yes ] || { log "WARNING: PostgreSQL's unseen page differs from herald's"; diff "$TMP/herald-unseen.txt" "$TMP/pg-unseen.txt" >&2 || true; }
    PG_PLAN=$("${PSQL[@]}" -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) $UNSEEN_SQL")

    # pgbench: the query as a prepared statement with the subject as $1.
    cat >"$TMP/unseen.sql" <<'EOF'
SELECT id FROM story s WHERE NOT EXISTS (SELECT 1 FROM rating r WHERE r.subject = :subj AND r.object = s.id) ORDER BY s.score DESC, s.id DESC LIMIT 20;
EOF
    mkdir -p "$TMP/pglog"
    pgw=("$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PG_PORT" -U postgres -M prepared -c 2 -j 2 -T "$WARMUP" -D subj=heavy -f "$TMP/unseen.sql" postgres)
    [ "$WARMUP" -gt 0 ] && { "${pgw[@]}" >/dev/null 2>&1 || true; }
    pcmd=("$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PG_PORT" -U postgres -M prepared -c 2 -j 2 -T "$DUR" -D subj=heavy
          -f "$TMP/unseen.sql" -l --log-prefix="$TMP/pglog/unseen" postgres)
    COMMANDS+=("$(quote_cmd "${pcmd[@]}")   (unseen.sql below)")
    log "pgbench: ${pcmd[*]}"
    "${pcmd[@]}" >"$TMP/pgbench.txt" 2>&1 || { cat "$TMP/pgbench.txt" >&2; die "pgbench failed"; }
    PG_TPS=$(awk '/^tps = / {printf "%.0f", $3; exit}' "$TMP/pgbench.txt")
    PG_FAILED=$(awk '/number of failed transactions:/ {print $5}' "$TMP/pgbench.txt")
    # Per-transaction log lines: client tx latency_us script epoch epoch_us.
    read -r PG_N PG_P50 PG_P99 < <(pgbench_percentiles "$TMP/pglog/unseen.*")
    [ -n "$PG_TPS" ] && [ "${PG_N:-0}" -gt 0 ] || { cat "$TMP/pgbench.txt" >&2; die "could not parse pgbench's output"; }
    ROWS+=("PostgreSQL unseen (pgbench, 2 clients)|$PG_TPS|$PG_P50|$PG_P99|${PG_FAILED:-0}")
    log "PostgreSQL unseen: $PG_TPS tps, p50 ${PG_P50} ms, p99 ${PG_P99} ms over $PG_N transactions"
fi

# ---- Report --------------------------------------------------------------------------

H_UN2="herald unseen (2 conn)"

TARGETS=$TMP/targets.md
{
    echo "| target (issue 5) | measured | verdict |"
    echo "|---|---|---|"
    echo "| embedded unseen, 10 K-rating member, page of 20: p99 <= 5 ms | p99 $UNSEEN_TOP_P99_MS ms (p50 $UNSEEN_TOP_P50_MS ms, $UNSEEN_TOP_N calls, right after the load); after a reopen p99 $REOPENED_UNSEEN_TOP_P99_MS ms | $(verdict le "$UNSEEN_TOP_P99_MS" 5) |"
    echo "| embedded rating upserts >= 50 000/s | $UPSERTS_PER_S/s back-dated on the loaded store (2 threads, ${UPSERT_SECS} s; ${UPSERT_CPU_US:-?} us of CPU each, background compaction included: $(per_s_alone "${UPSERT_CPU_US:-0}")/s if the process had both cores to itself); ${LIVE_UPSERTS_PER_S:-?}/s live (ratings stamped now; ${LIVE_UPSERT_CPU_US:-?} us each: $(per_s_alone "${LIVE_UPSERT_CPU_US:-0}")/s alone); $LOAD_UPSERTS_PER_S/s over the whole load | $(verdict ge "$(max_of "$UPSERTS_PER_S" "${LIVE_UPSERTS_PER_S:-0}")" 50000) |"
    if [ "$SKIP_PG" != 1 ]; then
        R_EMB=$(div "$UNSEEN_TOP_PER_S" "$PG_TPS")
        R_EMB_LAT=$(div "$PG_P50" "$UNSEEN_TOP_P50_MS")
        R_HTTP=$(div "$(row_field "$H_UN2" 2)" "$PG_TPS")
        R_HTTP_LAT=$(div "$PG_P50" "$(row_field "$H_UN2" 3)")
        R_REO=$(div "$REOPENED_UNSEEN_TOP_PER_S" "$PG_TPS")
        R_REO_LAT=$(div "$PG_P50" "$REOPENED_UNSEEN_TOP_P50_MS")
        echo "| herald >= 10 x PostgreSQL, same unseen query, same data: embedded (2 threads) vs pgbench (2 clients) | ${R_EMB} x throughput ($UNSEEN_TOP_PER_S calls/s vs $PG_TPS tps); ${R_EMB_LAT} x p50 latency ($UNSEEN_TOP_P50_MS vs $PG_P50 ms); after a reopen ${R_REO} x throughput, ${R_REO_LAT} x p50 | $(verdict ge "$R_EMB" 10) |"
        echo "| the same over the network: herald HTTP (wrk, 2 connections) vs pgbench (2 clients) | ${R_HTTP} x throughput ($(row_field "$H_UN2" 2) req/s vs $PG_TPS tps); ${R_HTTP_LAT} x p50 latency ($(row_field "$H_UN2" 3) vs $PG_P50 ms) | $(verdict ge "$R_HTTP" 10) |"
    fi
} >"$TARGETS"
MISSES=$(grep -c '\*\*missed\*\*' "$TARGETS" || true)

INPROC=$TMP/inproc.md
{
    echo "| in-process (build/stories_load, RocksDB) | per second | p50 ms | p90 ms | p99 ms | max ms |"
    echo "|---|---:|---:|---:|---:|---:|"
    echo "| story create (load, 2 threads) | $STORIES_PER_S | | | | |"
    echo "| rating upsert, the whole load (2 threads) | $LOAD_UPSERTS_PER_S | $LOAD_UPSERT_P50_MS | $LOAD_UPSERT_P90_MS | $LOAD_UPSERT_P99_MS | $LOAD_UPSERT_MAX_MS |"
    echo "| rating upsert, loaded store, back-dated, ${UPSERT_SECS} s (2 threads; ${UPSERT_CPU_US:-?} us of CPU each) | $UPSERTS_PER_S | $UPSERT_P50_MS | $UPSERT_P90_MS | $UPSERT_P99_MS | $UPSERT_MAX_MS |"
    echo "| rating upsert, loaded store, live, ${LIVE_UPSERT_SECS:-?} s (2 threads; ${LIVE_UPSERT_CPU_US:-?} us of CPU each) | ${LIVE_UPSERTS_PER_S:-} | ${LIVE_UPSERT_P50_MS:-} | ${LIVE_UPSERT_P90_MS:-} | ${LIVE_UPSERT_P99_MS:-} | ${LIVE_UPSERT_MAX_MS:-} |"
    echo "| unseen heavy, rank=top, limit 20 ($UNSEEN_TOP_N calls) | $UNSEEN_TOP_PER_S | $UNSEEN_TOP_P50_MS | $UNSEEN_TOP_P90_MS | $UNSEEN_TOP_P99_MS | $UNSEEN_TOP_MAX_MS |"
    echo "| unseen heavy, rank=hot ($UNSEEN_HOT_N calls) | $UNSEEN_HOT_PER_S | $UNSEEN_HOT_P50_MS | $UNSEEN_HOT_P90_MS | $UNSEEN_HOT_P99_MS | $UNSEEN_HOT_MAX_MS |"
    echo "| unseen u1 (a typical member), rank=top ($UNSEEN_TYPICAL_N calls) | $UNSEEN_TYPICAL_PER_S | $UNSEEN_TYPICAL_P50_MS | $UNSEEN_TYPICAL_P90_MS | $UNSEEN_TYPICAL_P99_MS | $UNSEEN_TYPICAL_MAX_MS |"
    echo "| top-rated heavy, limit 20 ($TOP_RATED_N calls) | $TOP_RATED_PER_S | $TOP_RATED_P50_MS | $TOP_RATED_P90_MS | $TOP_RATED_P99_MS | $TOP_RATED_MAX_MS |"
    echo "| unseen heavy, rank=top, store closed and reopened ($REOPENED_UNSEEN_TOP_N calls) | $REOPENED_UNSEEN_TOP_PER_S | $REOPENED_UNSEEN_TOP_P50_MS | $REOPENED_UNSEEN_TOP_P90_MS | $REOPENED_UNSEEN_TOP_P99_MS | $REOPENED_UNSEEN_TOP_MAX_MS |"
} >"$INPROC"

NET=$TMP/net.md
{
    echo "| over the network | req/s | p50 ms | p99 ms | errors |"
    echo "|---|---:|---:|---:|---:|"
    for r in "${ROWS[@]}"; do
        IFS='|' read -r name rps p50 p99 errs <<<"$r"
        echo "| $name | $rps | $p50 | $p99 | $errs |"
    done
} >"$NET"

if awk -v s="$SCALE" 'BEGIN { exit !(s + 0 == 1) }'; then FULL="the issue's full size"; else FULL="NOT the issue's full size (1.0)"; fi
TOTAL_S=$(( $(date +%s) - START_TIME ))
mkdir -p "$RESULTS_DIR"
{
    echo "# herald stories and ratings: benchmark (issue 5)"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- commit: $COMMIT$DIRTY"
    echo "- machine: $(nproc) cores, $MODEL, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r)"
    echo "- tools: $(wrk --version 2>&1 | head -n1 | awk '{print $1, $2}')${PG_VERSION:+, PostgreSQL $PG_VERSION}"
    echo "- load average: $LOAD_START before the run, $LOAD_AVG_AFTER_LOAD after the load, $(loadavg) at the end (the machine is shared: other work skews the numbers)"
    echo "- **scale $SCALE: $FULL**: $STORIES stories, $MEMBERS members, $RATINGS_UPSERTS rating upserts (Zipf s=$ZIPF_S over stories, subjects uniform; $EXPORT_RATINGS distinct (subject, story) ratings remain), member \"heavy\" with $EXPORT_HEAVY_RATINGS ratings ($HEAVY_SEEN_OF_ZIPF_TOP1000 of the 1000 most popular stories seen)"
    echo "- time: load $LOAD_SECS s of rating upserts + $STORIES_SECS s of stories, export $EXPORT_SECS s, reopen $REOPEN_SECS s; whole run $TOTAL_S s; RocksDB $(du -sh "$STORE_DIR" 2>/dev/null | cut -f1); herald opened the store in $HERALD_OPEN_S s${PG_LOAD_S:+; PostgreSQL loaded in $PG_LOAD_S s (${PG_SIZE:-})}"
    echo
    echo "## Targets"
    echo
    cat "$TARGETS"
    echo
    echo "## In-process (embedded)"
    echo
    cat "$INPROC"
    echo
    echo "Latency percentiles of upserts are over a sample (one in 16 during the load, every one in the timed run);"
    echo "\"per second\" for queries is calls/s with 2 threads, over 2 s at least. Queries are measured once RocksDB has finished the flushes"
    echo "and compactions the load queued (${QUIESCE_SECS:-?} s of waiting; ${REOPEN_QUIESCE_SECS:-?} s after the reopen), as PostgreSQL"
    echo "is measured after its load and VACUUM; the writes of the load are still in RocksDB's memtables, except in the"
    echo "last row (store closed and reopened, as a restarted server sees it)."
    echo
    echo "Store operations per call (hr_store_ops_total; one batch = one round trip):"
    echo
    echo "| call | batches | ops |"
    echo "|---|---:|---|"
    echo "| rating upsert (timed run, back-dated) | ${UPSERT_BATCHES:-} | ${UPSERT_OPS:-} |"
    echo "| rating upsert (timed run, live) | ${LIVE_UPSERT_BATCHES:-} | ${LIVE_UPSERT_OPS:-} |"
    echo "| unseen heavy, rank=top, after the load | ${UNSEEN_TOP_BATCHES:-} | ${UNSEEN_TOP_OPS:-} |"
    echo "| unseen heavy, rank=top, after a reopen | ${REOPENED_UNSEEN_TOP_BATCHES:-} | ${REOPENED_UNSEEN_TOP_OPS:-} |"
    echo "| unseen heavy, rank=hot | ${UNSEEN_HOT_BATCHES:-} | ${UNSEEN_HOT_OPS:-} |"
    echo "| unseen u1, rank=top | ${UNSEEN_TYPICAL_BATCHES:-} | ${UNSEEN_TYPICAL_OPS:-} |"
    echo "| top-rated heavy | ${TOP_RATED_BATCHES:-} | ${TOP_RATED_OPS:-} |"
    echo
    echo "## Over the network"
    echo
    cat "$NET"
    echo
    echo "herald: \`herald serve --threads 2\` on the loaded directory, wrk (--latency, ${DUR} s after ${WARMUP} s of warm-up);"
    echo "unseen = \`GET $UNSEEN_PATH\`; PUT = bench/ratings_put.lua (subjects uniform over the members, stories"
    echo "from the dataset's Zipf, scores 1/-1/0 at 60/15/25 %). wrk's errors are non-2xx answers plus socket errors"
    echo "(mostly its 2 s timeout, which also caps its latencies)."
    if [ "$SKIP_PG" != 1 ]; then
        echo "PostgreSQL: pgbench -M prepared, 2 clients, ${DUR} s; p50/p99 from its per-transaction log ($PG_N transactions);"
        echo "errors = failed transactions."
    fi
    if [ "$SKIP_PG" != 1 ]; then
        echo
        echo "## PostgreSQL"
        echo
        echo "Same data, exported from herald after the load: $PG_CHECK."
        echo
        echo '```sql'
        sed -n '/^BEGIN;/,$p' "$TMP/schema.sql"
        echo
        echo "-- pgbench script (-M prepared, -D subj=heavy):"
        cat "$TMP/unseen.sql"
        echo '```'
        echo
        echo "Server settings: \`$(echo "$PG_OPTS" | tr -s ' ')\`"
        echo
        echo "Plan of the query for heavy:"
        echo
        echo '```'
        echo "$PG_PLAN"
        echo '```'
    fi
    echo
    commands_section
} >"$RESULTS"

echo
echo "scale $SCALE ($FULL)"
cat "$TARGETS"
echo
cat "$INPROC"
echo
cat "$NET"
echo
echo "written to ${RESULTS#"$ROOT"/}  (total $TOTAL_S s)"
if [ "$MISSES" -gt 0 ]; then
    echo "stories bench: $MISSES target(s) missed"
    [ "${BENCH_STRICT:-0}" = 1 ] && exit 1
fi
exit 0
