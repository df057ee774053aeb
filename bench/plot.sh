#!/usr/bin/env bash
# bench/plot.sh — draws the figures of BENCHMARKS.md from the latest results.
#
# Reads bench/results/{counters,stories,feeds,reading}-latest.md (written by
# `make bench` and by bench/stories.sh, bench/feeds.sh, bench/reading.sh) and
# writes one PNG per capability into bench/plots/:
#
#   counters.png  req/s of counter PUT and GET: nginx, herald on RocksDB,
#                 redis-benchmark, herald on Redis Cluster, and the targets
#   stories.png   unseen calls/s against PostgreSQL; rating upserts/s against
#                 the 50 000/s target
#   feeds.png     fan-out entries/s (RocksDB, Redis Cluster); home page / nginx
#   reading.png   friends-reads calls/s against PostgreSQL (log scale); p99
#                 against the targets (log scale)
#
# A results file that is missing is skipped with a note. The figures are read
# from the results' tables by the first cell of each row, as the bench scripts
# write them, so a run of `make bench` followed by this script redraws them.
#
# Needs gnuplot (Debian: apt-get install gnuplot-nox).
#
# Environment:
#   BENCH_RESULTS  where the results are (bench/results)
#   BENCH_PLOTS    where the PNGs go (bench/plots)
set -euo pipefail

cd "$(dirname "$0")/.."
RES=${BENCH_RESULTS:-bench/results}
OUT=${BENCH_PLOTS:-bench/plots}

command -v gnuplot >/dev/null || {
    echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2
    exit 1
}
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# cell FILE PREFIX N: cell N (1 = the first) of the first table row of FILE
# whose first cell starts with PREFIX, trimmed; empty when there is none.
cell() {
    awk -F'|' -v p="$2" -v n="$3" '
        /^\|/ {
            c = $2; sub(/^ +/, "", c)
            if (index(c, p) == 1) { v = $(n + 1); gsub(/^ +| +$/, "", v); print v; exit }
        }' "$1"
}

# num TEXT: the first number in TEXT (digits, one decimal point).
num() {
    printf '%s\n' "$1" | grep -oE '[0-9]+(\.[0-9]+)?' | head -n 1 || true
}

# need NAME VALUE...: fail with a note when a figure was not found.
need() {
    local name=$1
    shift
    local v
    for v in "$@"; do
        if [ -z "$v" ]; then
            echo "plot.sh: a figure of $name was not found in its results file" >&2
            return 1
        fi
    done
}

# stamp FILE: "date, commit" from a results file's header.
stamp() {
    local d c
    d=$(grep -m1 -oE '^- date: [0-9-]+' "$1" | awk '{print $3}' || true)
    c=$(grep -m1 -oE '^- commit: [0-9a-f]+' "$1" | awk '{print $3}' || true)
    if [ -z "$d" ]; then # feeds: "# Feed benchmarks (2026-11-27T17:02Z, commit 99a36a2)"
        d=$(head -n 1 "$1" | grep -oE '[0-9]{4}-[0-9]{2}-[0-9]{2}' || true)
        c=$(head -n 1 "$1" | grep -oE 'commit [0-9a-f]+' | awk '{print $2}' || true)
    fi
    echo "$d, $c"
}

# bars TSV COLOUR Y LABEL WHERE: gnuplot lines for one panel of bars (label
# TAB value rows of TSV), each with its value above it, and a dashed target
# line at Y named LABEL, placed at WHERE ("0.98 right" or "0.5 center"),
# OFFSET from the line (default 0,0.8: above it).
bars() {
    local tsv=$1 colour=$2 y=$3 label=$4 where=$5 offset=${6:-0,0.8}
    cat <<EOF
set arrow 1 from graph 0, first $y to graph 1, first $y nohead dt 2 lw 2 lc rgb "black"
set label 1 "$label" at graph ${where% *}, first $y offset $offset ${where#* }
plot "$tsv" using 2:xtic(1) notitle lc rgb "$colour", \
     "" using 0:2:2 with labels offset 0,0.7 notitle
unset arrow 1
unset label 1
EOF
}

# ratio A B: A / B with two decimals.
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a / b}'
}

# The look every figure shares.
COMMON='
set terminal pngcairo size 1100,560 font "Sans,10"
set datafile separator "\t"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top right
set format y "%.0f"
'

plot_counters() {
    local f=$RES/counters-latest.md
    [ -f "$f" ] || { echo "plot.sh: $f missing, counters skipped" >&2; return 0; }
    local np ng hp hg rs rc cp cg
    np=$(num "$(cell "$f" "nginx PUT-shaped" 2)")
    ng=$(num "$(cell "$f" "nginx GET-shaped" 2)")
    hp=$(num "$(cell "$f" "herald rocksdb PUT" 2)")
    hg=$(num "$(cell "$f" "herald rocksdb GET" 2)")
    rs=$(num "$(cell "$f" "redis SADD" 2)")
    rc=$(num "$(cell "$f" "redis SCARD" 2)")
    cp=$(num "$(cell "$f" "herald cluster PUT" 2)")
    cg=$(num "$(cell "$f" "herald cluster GET" 2)")
    need counters "$np" "$ng" "$hp" "$hg" "$rs" "$rc" "$cp" "$cg" || return 0
    {
        printf 'nginx constant\t%s\t%s\n' "$np" "$ng"
        printf 'herald RocksDB\t%s\t%s\n' "$hp" "$hg"
        printf 'target (RocksDB)\t%s\t%s\n' \
            "$(awk -v x="$np" 'BEGIN{printf "%.0f", x * 0.6}')" "$(awk -v x="$ng" 'BEGIN{printf "%.0f", x * 0.7}')"
        printf 'redis SADD / SCARD\t%s\t%s\n' "$rs" "$rc"
        printf 'herald Redis Cluster\t%s\t%s\n' "$cp" "$cg"
    } >"$TMP/counters.tsv"
    gnuplot <<EOF
$COMMON
set output "$OUT/counters.png"
set title "Unique counters: requests a second, wrk 64 connections, 2 cores ($(stamp "$f"))"
set ylabel "requests / s"
set yrange [0:*]
set xtics noenhanced
plot "$TMP/counters.tsv" using 2:xtic(1) title "PUT (count a token)", \
     "" using 3 title "GET (read the count)", \
     "" using (\$0-1.0/6):2:2 with labels offset 0,0.7 notitle, \
     "" using (\$0+1.0/6):3:3 with labels offset 0,0.7 notitle
EOF
    echo "$OUT/counters.png"
}

plot_stories() {
    local f=$RES/stories-latest.md
    [ -f "$f" ] || { echo "plot.sh: $f missing, stories skipped" >&2; return 0; }
    local ue ur uh pg bd lv wl hp
    ue=$(num "$(cell "$f" "unseen heavy, rank=top, limit 20" 2)")
    ur=$(num "$(cell "$f" "unseen heavy, rank=top, store closed and reopened" 2)")
    uh=$(num "$(cell "$f" "herald unseen (2 conn)" 2)")
    pg=$(num "$(cell "$f" "PostgreSQL unseen" 2)")
    bd=$(num "$(cell "$f" "rating upsert, loaded store, back-dated" 2)")
    lv=$(num "$(cell "$f" "rating upsert, loaded store, live" 2)")
    wl=$(num "$(cell "$f" "rating upsert, the whole load" 2)")
    hp=$(num "$(cell "$f" "herald rating PUT (64 conn)" 2)")
    need stories "$ue" "$ur" "$uh" "$pg" "$bd" "$lv" "$wl" "$hp" || return 0
    {
        printf 'embedded\t%s\n' "$ue"
        printf 'reopened\t%s\n' "$ur"
        printf 'HTTP\t%s\n' "$uh"
        printf 'PostgreSQL\t%s\n' "$pg"
    } >"$TMP/unseen.tsv"
    {
        printf 'back-dated\t%s\n' "$bd"
        printf 'live\t%s\n' "$lv"
        printf 'whole load\t%s\n' "$wl"
        printf 'HTTP\t%s\n' "$hp"
    } >"$TMP/upserts.tsv"
    gnuplot <<EOF
$COMMON
set output "$OUT/stories.png"
set multiplot layout 1,2 title "Stories and ratings, 1 M stories, 20 M ratings, 2 cores ($(stamp "$f"))"
set xtics noenhanced
set yrange [0:$(awk -v a="$ue" -v b="$ur" 'BEGIN{m = a > b ? a : b; print m * 1.15}')]
set title "Unseen page of 20, member with 10 000 ratings"
set ylabel "calls / s (2 threads, 2 connections, 2 clients)"
$(bars "$TMP/unseen.tsv" "#4477aa" "$pg*10" "10 x PostgreSQL" "0.98 right" "0,-0.9")
set title "Rating upserts, 2 threads (HTTP: wrk)"
set ylabel "upserts / s"
set yrange [0:60000]
$(bars "$TMP/upserts.tsv" "#cc6677" 50000 "target: 50 000 / s in process" "0.5 center")
unset multiplot
EOF
    echo "$OUT/stories.png"
}

plot_feeds() {
    local f=$RES/feeds-latest.md
    [ -f "$f" ] || { echo "plot.sh: $f missing, feeds skipped" >&2; return 0; }
    local fr fx nr pr pk nx px
    fr=$(num "$(cell "$f" "fan-out, RocksDB" 2)")
    fx=$(num "$(cell "$f" "fan-out, Redis Cluster" 2)")
    nr=$(num "$(cell "$f" "nginx constant (rocksdb)" 2)")
    pr=$(num "$(cell "$f" "herald timeline page (rocksdb)" 2)")
    pk=$(num "$(cell "$f" "herald timeline page, kept (rocksdb)" 2)")
    nx=$(num "$(cell "$f" "nginx constant (redis)" 2)")
    px=$(num "$(cell "$f" "herald timeline page (redis)" 2)")
    need feeds "$fr" "$fx" "$nr" "$pr" "$pk" "$nx" "$px" || return 0
    {
        printf 'RocksDB\t%s\n' "$fr"
        printf 'Redis Cluster\t%s\n' "$fx"
    } >"$TMP/fanout.tsv"
    {
        printf 'RocksDB, first\t%s\n' "$(ratio "$pr" "$nr")"
        printf 'RocksDB, kept\t%s\n' "$(ratio "$pk" "$nr")"
        printf 'Redis Cluster\t%s\n' "$(ratio "$px" "$nx")"
    } >"$TMP/page.tsv"
    gnuplot <<EOF
$COMMON
set output "$OUT/feeds.png"
set multiplot layout 1,2 title "Activity feeds, 100 000 users, 2 cores ($(stamp "$f"))"
set xtics noenhanced
set title "Fan-out of 65.6 M timeline entries, 2 drain threads"
set ylabel "entries / s"
set yrange [0:1600000]
$(bars "$TMP/fanout.tsv" "#4477aa" 1000000 "target: 1 000 000 / s" "0.98 right")
set title "Home page of 20, wrk 64 connections (first reads; kept pages)"
set ylabel "pages / s, as a share of nginx's constant"
set format y "%.1f"
set yrange [0:1]
$(bars "$TMP/page.tsv" "#228833" 0.5 "target: 0.5 x nginx" "0.98 right")
unset multiplot
EOF
    echo "$OUT/feeds.png"
}

plot_reading() {
    local f=$RES/reading-latest.md
    [ -f "$f" ] || { echo "plot.sh: $f missing, reading skipped" >&2; return 0; }
    local q name tsv_t tsv_l row h p99 pg
    tsv_t=$TMP/reading_rate.tsv
    tsv_l=$TMP/reading_p99.tsv
    : >"$tsv_t"
    : >"$tsv_l"
    for q in "M450_ZIPF:M450, zipf feeds:M450 zipf:2" "M450_TAIL:M450, tail feeds:M450 tail:2" \
        "WORST_ZIPF:worst (M=5000), zipf feeds:worst zipf:30" \
        "WORST_TAIL:worst (M=5000), tail feeds:worst tail:30"; do
        IFS=: read -r row pgrow name target <<<"$q"
        h=$(num "$(cell "$f" "REOPENED_$row" 2)")
        p99=$(num "$(cell "$f" "REOPENED_$row" 5)")
        pg=$(num "$(cell "$f" "PostgreSQL $pgrow" 2)")
        need reading "$h" "$p99" "$pg" || return 0
        printf '%s\t%s\t%s\n' "$name" "$h" "$pg" >>"$tsv_t"
        printf '%s\t%s\t%s\n' "$name" "$p99" "$target" >>"$tsv_l"
    done
    gnuplot <<EOF
$COMMON
set output "$OUT/reading.png"
set multiplot layout 1,2 title "Social reading: friends-reads of 100 URLs, 100 000 users, 2 cores ($(stamp "$f"))"
set xtics noenhanced
set logscale y
set format y "%.0f"
set title "Calls a second, 2 threads / 2 clients (M450: about 450 friends; worst: 5 000)"
set ylabel "calls / s (log)"
set yrange [1:1000000]
plot "$tsv_t" using 2:xtic(1) title "herald in process", \
     "" using 3 title "PostgreSQL (pgbench)", \
     "" using (\$0-1.0/6):2:2 with labels offset 0,0.7 notitle, \
     "" using (\$0+1.0/6):3:3 with labels offset 0,0.7 notitle
set title "p99 latency in process, against the target"
set ylabel "ms (log)"
set format y "%g"
set yrange [0.1:300]
plot "$tsv_l" using 2:xtic(1) title "herald p99" lc rgb "#4477aa", \
     "" using 3 title "target" lc rgb "#bbbbbb", \
     "" using (\$0-1.0/6):2:2 with labels offset 0,0.7 notitle, \
     "" using (\$0+1.0/6):3:3 with labels offset 0,0.7 notitle
unset multiplot
EOF
    echo "$OUT/reading.png"
}

plot_counters
plot_stories
plot_feeds
plot_reading
