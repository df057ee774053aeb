/* reading_load.c — the social-reading benchmark's loader and in-process
 * measurements (issue 4; bench/reading.sh runs it, see BENCHMARKS.md).
 *
 * Builds the dataset through the core (core/reading.h; friend sets with the
 * graph's keys) on a store, then measures in the same process:
 *
 *   1. setup     100 selected sites s0..s99.example; users u0..u{U-1}
 *                (U = 100 K x scale) of whom 90 % share their reads (every
 *                heavy reader shares)
 *   2. friends   friend counts drawn from a Pareto law (shape 2, mean 450,
 *                at most 5 000); friendships by the Chung-Lu model (a user's
 *                partners drawn in proportion to their own counts, so the
 *                counts come out as drawn and the graph is power-law);
 *                written into the graph's friend sets (core/graph.h keys:
 *                friends-reads reads only those; the follow sets behind them
 *                are not built). Plus user "worst", friend of the H heavy
 *                readers (the worst case: M = 5 000, all heavy)
 *   3. reads     30 days of reads: heavy readers (u0..u{H-1}, H = 5 000)
 *                100 a day, the others Pareto(shape 1.3, from 2) a day
 *                capped at 100 (~7 on average); URLs by Zipf (s = 1) over
 *                V = 2 M x scale ranks, https://s{k%100}.example/a/{k}
 *                (log-log: the top URLs read by most users, a long tail
 *                read once or twice); times uniform over the last 29.5
 *                days; recorded with hr_reading_record_many, one user at a
 *                time (2 000 reads a call), on --threads threads
 *   4. record    hr_reading_record, one read per call (the HTTP path's
 *                core), for --duration seconds on --threads threads:
 *                reads/s and latency; of pages of a site of their own
 *                (rec.example), so the query answers stay as exported
 *   5. queries   friends-reads with N = 100 URLs for users with 405..495
 *                friends ("M450"), and for "worst" (M = 5 000 heavy
 *                readers); two kinds of feed: "zipf" (100 URLs drawn like
 *                the reads: a third of them among the 100 most read) and
 *                "tail" (100 URLs uniform over the ranks: mostly read by
 *                few). --calls calls each on one thread: p50/p90/p99/max,
 *                the sides chosen, store round trips and ops per call; then
 *                calls/s on --threads threads. Also popular 1d, trending and
 *                friends-popular 1d.
 *   7. reopened  the store closed and reopened, and once RocksDB has finished
 *                the flushes and compactions the load queued (the state a
 *                server reaches when writes pause, and the one PostgreSQL is
 *                measured in, after its load and VACUUM), the friends-reads
 *                of 5 again, as REOPENED_*
 *   8. sides     (--sides 1) the friends-reads of 7 with every URL forced to
 *                one side in turn (lists, probes, URL sets, the friends' sets), to
 *                check the per-query choice against each alone
 *   6. export    (--out DIR) what PostgreSQL loads and what wrk sends:
 *                friends.tsv (uid, friend; both directions), reads.tsv (uid,
 *                url hash as a signed bigint, time: each user's newest
 *                recorded read of each URL), feeds.tsv (id, {hashes}) and
 *                feeds.txt (one friends-reads body per line),
 *                query_users.txt (the M450 users)
 *
 * Results go to stdout as KEY=VALUE lines (sourced by bench/reading.sh);
 * progress to stderr.
 *
 * usage: reading_load --store URI [--scale F] [--heavy N] [--threads N]
 *                     [--seed N] [--calls N] [--warmup F] [--duration S]
 *                     [--out DIR] [--sides 1] [--reuse 1] [--only NAME]
 *                     [--url-sets 0] [--set NAME=VALUE]...
 *
 * --warmup F: before a query's --calls timed calls, F x calls calls of the
 * same kind (default 0.5), after one about each user asked about when the
 * query is about a user, reported as *_COLD_* (0: none).
 *
 * --reuse 1 skips 1-4 and 5's measures: the store already holds the dataset
 * of these options (an earlier run's directory), and only 7 and 8 are measured;
 * for comparing builds on one dataset without reloading it. --only NAME
 * measures only the queries whose names contain NAME (to profile one).
 * --url-sets 0 plans friends-reads as if URL sets did not exist (the choice
 * before them), to compare the two on one store in one build. --set
 * NAME=VALUE: a server setting (core/config.h) for the store as herald
 * would open it, e.g. --set memory=6g; repeatable. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "core/config.h"
#include "core/graph.h"
#include "core/reading.h"
#include "core/url.h"
#include "store/store.h"

#define TOOL "reading_load"
#define FULL_USERS 100000
#define FULL_URLS 2000000
#define SITES 100
#define DAYS 30
#define SPAN_MS ((int64_t)(29.5 * 86400000))
#define HEAVY_PER_DAY 100
#define FRIENDS_MEAN 450.0
#define FRIENDS_MAX 5000
#define FEEDS 200
#define FEED_URLS 100
#define RECORD_CHUNK 2000
#define QUERY_USERS_MAX 1000
#define WORST "worst"
/* The timed recording (phase 4, and wrk's POSTs) reads pages of a site of
 * its own, so that the friends-reads answers PostgreSQL is checked against
 * stay as exported. */
#define RECORD_SITE "rec.example"

static struct {
    const char *store, *out;
    double scale, duration;
    size_t heavy, calls;
    double warmup; /* calls before the timed ones, as a share of them */
    int threads;
    uint64_t seed;
    bool sides;       /* also measure friends-reads with each side forced */
    bool no_url_sets; /* --url-sets 0 */
    bool reuse;       /* the store was loaded by an earlier run with the same options */
    const char *only; /* measure only the queries whose names contain this (for profiles) */
    double churn;     /* reads recorded per second into the dataset's URLs while the latency calls run */
} opt = {NULL, NULL, 1.0, 10.0, 5000, 2000, 0.5, 2, 42, false, false, false, NULL, 0};

static hr_store *store;
static hr_graph *graph;
static hr_reading *reading;
static int64_t t_end; /* the reads' times end here (the load's start) */
static size_t n_users, n_urls, n_heavy;
static uint32_t *deg; /* drawn friend counts */
static size_t *off;   /* CSR: friends of user i are nbr[off[i] .. off[i+1]) */
static uint32_t *nbr;
static bool *shares;
static bu_zipf zipf;
static atomic_size_t done_count, recorded_count;
static atomic_int failed;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, TOOL ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void check(int rc, const hr_err *err, const char *what) {
    if (rc != HR_OK) die("%s: %s (%s)", what, err->msg[0] ? err->msg : hr_strerror(rc), hr_errname(rc));
}

static hr_slice user_id(size_t i, char *buf) { /* buf: 24 bytes */
    int n = snprintf(buf, 24, "u%zu", i);
    return hr_slice_of(buf, (size_t)n);
}

static hr_slice url_of(size_t rank, char *buf) { /* buf: 64 bytes */
    int n = snprintf(buf, 64, "https://s%zu.example/a/%zu", rank % SITES, rank);
    return hr_slice_of(buf, (size_t)n);
}

static uint64_t url_hash(size_t rank) {
    char buf[64];
    return hr_url_hash(url_of(rank, buf)); /* url_of gives the canonical form */
}

/* ---- Threads ----------------------------------------------------------------- */

typedef struct job {
    int id;
    pthread_t th;
    void (*fn)(struct job *);
    size_t from, to; /* users */
    double until;    /* timed phases */
    bu_lat lat;
    size_t calls;
    FILE *out;
} job;

static atomic_int running;

static void *job_main(void *arg) {
    job *j = arg;
    j->fn(j);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

/* Run fn on opt.threads threads over users [0, n), printing progress of
 * done_count against total; returns the seconds taken. */
static double run_jobs(void (*fn)(job *), job *jobs, size_t n, size_t total, const char *name) {
    atomic_store(&done_count, 0);
    atomic_store(&running, opt.threads);
    double t0 = bu_now(), last = t0;
    for (int t = 0; t < opt.threads; t++) {
        jobs[t].id = t;
        jobs[t].fn = fn;
        jobs[t].from = n * (size_t)t / (size_t)opt.threads;
        jobs[t].to = n * (size_t)(t + 1) / (size_t)opt.threads;
        jobs[t].calls = 0;
        if (pthread_create(&jobs[t].th, NULL, job_main, &jobs[t]) != 0)
            die("pthread_create: %s", strerror(errno));
    }
    while (atomic_load(&running) > 0) {
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
        if (total) bu_progress(TOOL, name, atomic_load(&done_count), total, t0, &last);
    }
    for (int t = 0; t < opt.threads; t++)
        pthread_join(jobs[t].th, NULL);
    if (atomic_load(&failed)) die("%s failed", name);
    double secs = bu_now() - t0;
    fprintf(stderr, TOOL ": %s: done in %.1f s\n", name, secs);
    return secs;
}

/* ---- 1 and 2: sites, sharing, friends ------------------------------------------ */

static void setup(job *j) {
    hr_err err = {0};
    char id[24];
    for (size_t i = j->from; i < j->to; i++) {
        if (shares[i]) check(hr_reading_set_share(reading, user_id(i, id), true, t_end, &err), &err, "share");
        atomic_fetch_add(&done_count, 1);
    }
}

/* Who shares their reads: every heavy reader, and 90 % of the others. */
static void draw_shares(void) {
    shares = malloc(n_users * sizeof *shares);
    bu_rng r = bu_rng_for(opt.seed, 2);
    for (size_t i = 0; i < n_users; i++)
        shares[i] = i < n_heavy || bu_unit(&r) < 0.9;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Chung-Lu: each user draws deg/2 partners in proportion to their counts.
 * Edges are packed (min << 32 | max), sorted and deduplicated, then turned
 * into both ends' lists. */
static void build_friends(void) {
    bu_rng r = bu_rng_for(opt.seed, 1);
    deg = malloc(n_users * sizeof *deg);
    double *cum = malloc(n_users * sizeof *cum), sum = 0;
    for (size_t i = 0; i < n_users; i++) {
        double d = bu_pareto(&r, FRIENDS_MEAN / 2, 2.0);
        deg[i] = (uint32_t)(d < FRIENDS_MAX ? d : FRIENDS_MAX);
        if (deg[i] >= n_users) deg[i] = (uint32_t)(n_users - 1);
        cum[i] = (sum += deg[i]);
    }
    size_t cap = (size_t)(sum / 2) + n_users, n = 0;
    uint64_t *e = malloc(cap * sizeof *e);
    for (size_t i = 0; i < n_users; i++) {
        for (uint32_t k = 0; k < deg[i] / 2 + (bu_unit(&r) < (deg[i] % 2) * 0.5); k++) {
            double u = bu_unit(&r) * sum;
            size_t lo = 0, hi = n_users - 1;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (cum[mid] <= u)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == i) continue;
            uint64_t a = i < lo ? i : lo, b = i < lo ? lo : i;
            if (n == cap) e = realloc(e, (cap *= 2) * sizeof *e);
            e[n++] = a << 32 | b;
        }
    }
    free(cum);
    qsort(e, n, sizeof *e, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || e[m - 1] != e[i]) e[m++] = e[i];
    off = calloc(n_users + 1, sizeof *off);
    for (size_t i = 0; i < m; i++) {
        off[(e[i] >> 32) + 1]++;
        off[(e[i] & 0xffffffffu) + 1]++;
    }
    for (size_t i = 0; i < n_users; i++)
        off[i + 1] += off[i];
    nbr = malloc((2 * m + 1) * sizeof *nbr);
    size_t *fill = calloc(n_users, sizeof *fill);
    for (size_t i = 0; i < m; i++) {
        uint32_t a = (uint32_t)(e[i] >> 32), b = (uint32_t)(e[i] & 0xffffffffu);
        nbr[off[a] + fill[a]++] = b;
        nbr[off[b] + fill[b]++] = a;
    }
    free(fill);
    free(e);
    printf("FRIENDSHIPS=%zu\nFRIENDS_MEAN=%.1f\n", m, 2.0 * (double)m / (double)n_users);
    size_t big = 0, max = 0;
    for (size_t i = 0; i < n_users; i++) {
        size_t d = off[i + 1] - off[i];
        big += d >= 2000;
        if (d > max) max = d;
    }
    printf("FRIENDS_MAX=%zu\nUSERS_WITH_2000_FRIENDS=%zu\n", max, big);
}

/* The friend set of one user: one batch of zadds on the graph's key. */
static void write_friends(job *j) {
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    hr_err err = {0};
    char id[24];
    for (size_t i = j->from; i < j->to && !atomic_load(&failed); i++) {
        hr_batch_reset(b);
        hr_buf_clear(&k);
        hr_graph_key(graph, HR_GRAPH_FRIENDS, user_id(i, id), &k);
        for (size_t x = off[i]; x < off[i + 1]; x++)
            hr_zadd(b, hr_buf_slice(&k), (double)(t_end - 86400000LL), user_id(nbr[x], id));
        if (hr_batch_len(b)) check(hr_store_exec(store, b, 0, &err), &err, "friends");
        atomic_fetch_add(&done_count, 1);
    }
    hr_batch_free(b);
    hr_buf_free(&k);
}

static void write_worst(void) {
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    hr_err err = {0};
    char id[24];
    hr_graph_key(graph, HR_GRAPH_FRIENDS, hr_slice_str(WORST), &k);
    for (size_t i = 0; i < n_heavy; i++)
        hr_zadd(b, hr_buf_slice(&k), (double)t_end, user_id(i, id));
    check(hr_store_exec(store, b, 0, &err), &err, "worst's friends");
    hr_batch_free(b);
    hr_buf_free(&k);
}

/* ---- 3: reads -------------------------------------------------------------------- */

static size_t reads_of(size_t i, bu_rng *r) {
    if (i < n_heavy) return DAYS * HEAVY_PER_DAY;
    double per_day = bu_pareto(r, 2.0, 1.3);
    if (per_day > HEAVY_PER_DAY) per_day = HEAVY_PER_DAY;
    return (size_t)(per_day * DAYS + 0.5);
}

typedef struct rd {
    uint32_t rank;
    int64_t t;
} rd;

static int by_rank_then_time(const void *x, const void *y) {
    const rd *a = x, *b = y;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

static void load_reads(job *j) {
    hr_err err = {0};
    char id[24];
    rd *reads = malloc(DAYS * HEAVY_PER_DAY * sizeof *reads);
    hr_slice *urls = malloc(RECORD_CHUNK * sizeof *urls);
    int64_t *times = malloc(RECORD_CHUNK * sizeof *times);
    hr_read_outcome *out = malloc(RECORD_CHUNK * sizeof *out);
    char(*ubuf)[64] = malloc(RECORD_CHUNK * sizeof *ubuf);
    for (size_t i = j->from; i < j->to && !atomic_load(&failed); i++) {
        bu_rng r = bu_rng_for(opt.seed, 1000 + i);
        size_t n = reads_of(i, &r);
        if (!shares[i]) n = 0;
        for (size_t x = 0; x < n; x++)
            reads[x] =
                (rd){(uint32_t)bu_zipf_draw(&zipf, &r), t_end - 60000 - (int64_t)bu_below(&r, SPAN_MS)};
        size_t recorded = 0;
        for (size_t from = 0; from < n; from += RECORD_CHUNK) {
            size_t m = n - from < RECORD_CHUNK ? n - from : RECORD_CHUNK;
            for (size_t x = 0; x < m; x++) {
                urls[x] = url_of(reads[from + x].rank, ubuf[x]);
                times[x] = reads[from + x].t;
            }
            check(hr_reading_record_many(reading, user_id(i, id), urls, times, m, t_end, out, &err), &err,
                  "record");
            for (size_t x = 0; x < m; x++)
                recorded += out[x] == HR_READ_RECORDED;
        }
        atomic_fetch_add(&recorded_count, recorded);
        if (j->out && n) { /* the newest read of each URL, as herald keeps it */
            qsort(reads, n, sizeof *reads, by_rank_then_time);
            for (size_t x = 0; x < n; x++)
                if (x + 1 == n || reads[x + 1].rank != reads[x].rank)
                    fprintf(j->out, "u%zu\t%" PRId64 "\t%" PRId64 "\n", i, (int64_t)url_hash(reads[x].rank),
                            reads[x].t);
        }
        atomic_fetch_add(&done_count, n);
    }
    free(reads);
    free(urls);
    free(times);
    free(out);
    free(ubuf);
}

/* ---- 4: recording, one read per call ---------------------------------------------- */

static void record_timed(job *j) {
    hr_err err = {0};
    char id[24], ub[64];
    bu_rng r = bu_rng_for(opt.seed, 7000000 + (uint64_t)j->id);
    while (bu_now() < j->until) {
        size_t i = bu_below(&r, n_users);
        if (!shares[i]) continue;
        hr_read_outcome o;
        double t0 = bu_now();
        size_t k = bu_zipf_draw(&zipf, &r);
        hr_slice url = hr_slice_of(ub, (size_t)snprintf(ub, sizeof ub, "https://" RECORD_SITE "/a/%zu", k));
        check(hr_reading_record(reading, user_id(i, id), url, hr_now_ms(), hr_now_ms(), &o, &err), &err,
              "record");
        bu_lat_add(&j->lat, bu_now() - t0);
        j->calls++;
    }
}

/* ---- 5: queries -------------------------------------------------------------------- */

typedef struct feed {
    hr_slice urls[FEED_URLS];
    char buf[FEED_URLS][64];
} feed;

static feed *feeds[2]; /* zipf, tail */
static char (*qusers)[24];
static size_t n_qusers;

static void make_feeds(void) {
    for (int kind = 0; kind < 2; kind++) {
        feeds[kind] = calloc(FEEDS, sizeof *feeds[kind]);
        for (size_t f = 0; f < FEEDS; f++) {
            bu_rng r = bu_rng_for(opt.seed, 9000000 + (uint64_t)(kind * FEEDS + f));
            size_t ranks[FEED_URLS];
            for (size_t k = 0; k < FEED_URLS; k++) {
                bool dup;
                do { /* distinct URLs within a feed */
                    ranks[k] = kind == 0 ? bu_zipf_draw(&zipf, &r) : bu_below(&r, n_urls);
                    dup = false;
                    for (size_t x = 0; x < k && !dup; x++)
                        dup = ranks[x] == ranks[k];
                } while (dup);
                feeds[kind][f].urls[k] = url_of(ranks[k], feeds[kind][f].buf[k]);
            }
        }
    }
    qusers = malloc(QUERY_USERS_MAX * sizeof *qusers);
    for (size_t i = 0; i < n_users && n_qusers < QUERY_USERS_MAX; i++) {
        size_t d = off[i + 1] - off[i];
        if (d >= 405 && d <= 495) snprintf(qusers[n_qusers++], 24, "u%zu", i);
    }
    if (n_qusers == 0) die("no user has 405..495 friends: scale too small");
}

typedef struct query {
    const char *name;
    int kind;   /* feeds[kind] */
    bool worst; /* "worst", else an M450 user */
    int what;   /* 0 friends-reads, 1 popular 1d, 2 trending, 3 friends-popular 1d */
} query;

typedef struct qstats {
    size_t calls, urls_list, urls_probe, urls_set, urls_friends, round_trips, friends, split, split_late;
} qstats;

/* One call of q, for user uid (NULL: drawn from r, as are the feeds). */
static void one_query(const query *q, bu_rng *r, hr_arena *a, qstats *st, const char *uid) {
    hr_err err = {0};
    if (uid == NULL) uid = q->worst ? WORST : qusers[bu_below(r, n_qusers)];
    int rc = HR_OK;
    if (q->what == 0) {
        hr_url_reads out[FEED_URLS];
        hr_reads_stats s;
        const feed *f = &feeds[q->kind][bu_below(r, FEEDS)];
        rc = hr_reading_friends_reads(reading, hr_slice_str(uid), NULL, 0, f->urls, FEED_URLS, hr_now_ms(), a,
                                      out, &s, &err);
        st->urls_list += s.urls_list;
        st->urls_probe += s.urls_probe;
        st->urls_set += s.urls_set;
        st->urls_friends += s.urls_friends;
        st->round_trips += s.round_trips;
        st->friends += s.friends;
        st->split += s.urls_split > 0;
        st->split_late += s.split_late;
    } else if (q->what == 3) {
        hr_url_reads *items;
        size_t n;
        rc = hr_reading_friends_popular(reading, hr_slice_str(uid), HR_WINDOW_1D, 20, hr_now_ms(), a, &items,
                                        &n, &err);
    } else {
        hr_trend_item *items;
        size_t n;
        hr_trends *t = hr_reading_trends(reading);
        rc = q->what == 1 ? hr_trends_popular(t, HR_WINDOW_1D, 20, hr_now_ms(), a, &items, &n, &err)
                          : hr_trends_trending(t, 20, hr_now_ms(), a, &items, &n, &err);
    }
    check(rc, &err, q->name);
    st->calls++;
    hr_arena_reset(a);
}

static const query *cur_query;

static void query_timed(job *j) {
    bu_rng r = bu_rng_for(opt.seed, 8000000 + (uint64_t)j->id);
    hr_arena a = HR_ARENA_INIT;
    qstats st = {0};
    while (bu_now() < j->until)
        one_query(cur_query, &r, &a, &st, NULL);
    j->calls = st.calls;
    hr_arena_free(&a);
}

static uint64_t ops_total(void) {
    hr_store_metrics m;
    hr_store_metrics_of(NULL, &m);
    uint64_t n = 0;
    for (int t = 0; t < HR_OP_COUNT_; t++)
        n += m.ops[t];
    return n;
}

static uint64_t batches_total(void) {
    hr_store_metrics m;
    hr_store_metrics_of(NULL, &m);
    return m.batches;
}

/* --calls calls on this thread (latency), then --threads threads for a
 * quarter of --duration (throughput). */
static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The machine's CPU time stolen by the hypervisor, and its CPU time in all,
 * in clock ticks so far (/proc/stat's first line); both 0 if unreadable.
 * This VM shares its host: in runs whose latencies were 20-50 % above the
 * others on the same data and code, nothing else ran here, so the share
 * stolen during the timed calls is printed next to them. */
static void cpu_ticks(uint64_t *steal, uint64_t *total) {
    *steal = *total = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL) return;
    unsigned long long v[8] = {0};
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
               &v[6], &v[7]) == 8) {
        for (int i = 0; i < 8; i++)
            *total += v[i];
        *steal = v[7];
    }
    fclose(f);
}

/* --churn: while the latency calls run, another thread records reads of the
 * dataset's own URLs (drawn like the load's) by random sharing users at
 * opt.churn a second, as a live service would. Each write to a URL's set of
 * readers changes a chunk that its image must then leave out
 * (store/rocks/pset_image.c) and retires its records in the record caches,
 * which a quiet store never does. It changes the dataset, so it is for
 * direct runs, never for bench/reading.sh's runs that PostgreSQL is
 * compared with. */
static atomic_bool churn_stop;
static atomic_size_t churn_done;

static void *churn_main(void *arg) {
    (void)arg;
    hr_err err = {0};
    char id[24], ub[64];
    bu_rng r = bu_rng_for(opt.seed, 9000000);
    double t0 = bu_now();
    size_t n = 0;
    while (!atomic_load(&churn_stop)) {
        double due = t0 + (double)n / opt.churn;
        double wait = due - bu_now();
        if (wait > 0) {
            struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
            continue;
        }
        size_t i = bu_below(&r, n_users);
        if (!shares[i]) continue;
        hr_read_outcome o;
        check(hr_reading_record(reading, user_id(i, id), url_of(bu_zipf_draw(&zipf, &r), ub), hr_now_ms(),
                                hr_now_ms(), &o, &err),
              &err, "churn");
        n++;
    }
    atomic_store(&churn_done, n);
    return NULL;
}

static void measure(const query *q, size_t calls, job *jobs) {
    if (opt.only && strstr(q->name, opt.only) == NULL) return;
    bu_rng r = bu_rng_for(opt.seed, 6000000 + (uint64_t)q->what * 10 + (uint64_t)q->kind * 2 + q->worst);
    hr_arena a = HR_ARENA_INIT;
    bu_lat lat = {0};
    qstats st = {0};
    /* Warm-up: calls of the same kind, from another random stream (other
     * draws of the same users and feeds), before the timed ones. Right
     * after an open (the reopened queries) the first few hundred calls read
     * their blocks into RocksDB's cache and their records and friend lists
     * into the store's caches: up to 3x the steady latency (measured), which
     * would set a p99 of a few thousand calls. They are reported on their
     * own, as COLD_*. A query about a user asks about each of the users
     * first, once: random draws alone left a third of them to the timed
     * calls (1 000 draws over 1 000 users), whose first call read the
     * user's friend list from RocksDB (~0.5 ms more; BENCHMARKS.md, reading
     * round 16). */
    size_t warm = (size_t)((double)calls * opt.warmup);
    if (warm > 0) {
        bu_rng wr = bu_rng_for(opt.seed, 7000000 + (uint64_t)q->what * 10 + (uint64_t)q->kind * 2 + q->worst);
        bu_lat cold = {0};
        qstats wst = {0};
        size_t each = q->worst || (q->what != 0 && q->what != 3) ? 0 : n_qusers;
        for (size_t c = 0; c < each + warm; c++) {
            double t0 = bu_now();
            one_query(q, &wr, &a, &wst, c < each ? qusers[c] : NULL);
            bu_lat_add(&cold, bu_now() - t0);
        }
        warm += each;
        printf("%s_COLD_N=%zu\n%s_COLD_P50_MS=%.3f\n%s_COLD_P99_MS=%.3f\n", q->name, warm, q->name,
               bu_lat_ms(&cold, 50), q->name, bu_lat_ms(&cold, 99));
        bu_lat_free(&cold);
    }
    pthread_t churner;
    atomic_store(&churn_stop, false);
    if (opt.churn > 0 && pthread_create(&churner, NULL, churn_main, NULL) != 0)
        die("pthread_create: %s", strerror(errno));
    double churn_t0 = bu_now();
    uint64_t ops0 = ops_total(), batches0 = batches_total();
    /* CPU time: on a shared machine the wall-clock latencies carry other
     * processes' load; this thread's CPU time per call compares builds fairly. */
    double cpu0 = thread_cpu();
    uint64_t steal0, total0, steal1, total1;
    cpu_ticks(&steal0, &total0);
    for (size_t c = 0; c < calls; c++) {
        double t0 = bu_now();
        one_query(q, &r, &a, &st, NULL);
        bu_lat_add(&lat, bu_now() - t0);
    }
    double cpu_ms = (thread_cpu() - cpu0) * 1e3 / (double)calls;
    cpu_ticks(&steal1, &total1);
    if (total1 > total0)
        printf("%s_STOLEN_PCT=%.1f\n", q->name,
               100.0 * (double)(steal1 - steal0) / (double)(total1 - total0));
    if (opt.churn > 0) {
        atomic_store(&churn_stop, true);
        pthread_join(churner, NULL);
        printf("%s_CHURN_PER_S=%.0f\n", q->name, (double)atomic_load(&churn_done) / (bu_now() - churn_t0));
    }
    double ops = (double)(ops_total() - ops0) / (double)calls;
    double batches = (double)(batches_total() - batches0) / (double)calls;
    printf("%s_N=%zu\n%s_P50_MS=%.3f\n%s_P90_MS=%.3f\n%s_P99_MS=%.3f\n%s_MAX_MS=%.3f\n", q->name, calls,
           q->name, bu_lat_ms(&lat, 50), q->name, bu_lat_ms(&lat, 90), q->name, bu_lat_ms(&lat, 99), q->name,
           bu_lat_ms(&lat, 100));
    printf("%s_BATCHES=%.2f\n%s_OPS=%.0f\n%s_CPU_MS=%.3f\n", q->name, batches, q->name, ops, q->name, cpu_ms);
    if (q->what == 0) {
        printf("%s_FRIENDS=%.0f\n%s_SIDES=\"list %.1f, probe %.1f, URL sets %.1f, friends' sets %.1f\"\n",
               q->name, (double)st.friends / (double)calls, q->name, (double)st.urls_list / (double)calls,
               (double)st.urls_probe / (double)calls, (double)st.urls_set / (double)calls,
               (double)st.urls_friends / (double)calls);
        printf("%s_SPLIT=\"%zu, the helper late with %zu\"\n", q->name, st.split, st.split_late);
    }
    fprintf(stderr, TOOL ": %s: p50 %.3f ms, p99 %.3f ms, %.1f batches, %.0f ops per call\n", q->name,
            bu_lat_ms(&lat, 50), bu_lat_ms(&lat, 99), batches, ops);
    bu_lat_free(&lat);
    hr_arena_free(&a);

    cur_query = q;
    double until = bu_now() + opt.duration / 4;
    for (int t = 0; t < opt.threads; t++)
        jobs[t].until = until;
    double secs = run_jobs(query_timed, jobs, 0, 0, q->name);
    size_t total = 0;
    for (int t = 0; t < opt.threads; t++)
        total += jobs[t].calls;
    printf("%s_PER_S=%.0f\n", q->name, (double)total / secs);
}

/* ---- 6: export for PostgreSQL and wrk ----------------------------------------------- */

static FILE *out_file(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", opt.out, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) die("%s: %s", path, strerror(errno));
    return f;
}

static void export_queries(void) {
    FILE *fr = out_file("friends.tsv"), *ft = out_file("feeds.tsv"), *fb = out_file("feeds.txt"),
         *fq = out_file("query_users.txt");
    for (size_t i = 0; i < n_users; i++)
        for (size_t x = off[i]; x < off[i + 1]; x++)
            fprintf(fr, "u%zu\tu%" PRIu32 "\n", i, nbr[x]);
    for (size_t i = 0; i < n_heavy; i++)
        fprintf(fr, WORST "\tu%zu\n", i);
    for (int kind = 0; kind < 2; kind++)
        for (size_t f = 0; f < FEEDS; f++) {
            fprintf(ft, "%zu\t{", (size_t)kind * FEEDS + f);
            fprintf(fb, "{\"urls\":[");
            for (size_t k = 0; k < FEED_URLS; k++) {
                hr_slice u = feeds[kind][f].urls[k];
                fprintf(ft, "%s%" PRId64, k ? "," : "", (int64_t)hr_url_hash(u));
                fprintf(fb, "%s\"%.*s\"", k ? "," : "", (int)u.len, u.ptr);
            }
            fprintf(ft, "}\n");
            fprintf(fb, "]}\n");
        }
    for (size_t i = 0; i < n_qusers; i++)
        fprintf(fq, "%s\n", qusers[i]);
    fclose(fr);
    fclose(ft);
    fclose(fb);
    fclose(fq);
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(void) {
    fprintf(stderr,
            "usage: " TOOL " --store URI [--scale F] [--heavy N] [--threads N] [--seed N] [--calls N]\n"
            "                    [--warmup F] [--duration S] [--out DIR] [--sides 1] [--reuse 1]\n"
            "                    [--only NAME] [--url-sets 0] [--churn READS_PER_S] [--set NAME=VALUE]...\n");
    exit(2);
}

int main(int argc, char **argv) {
    hr_config cfg; /* the store's settings (--set) */
    hr_config_init(&cfg);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) usage();
        if (strcmp(a, "--store") == 0)
            opt.store = v;
        else if (strcmp(a, "--out") == 0)
            opt.out = v;
        else if (strcmp(a, "--scale") == 0)
            opt.scale = atof(v);
        else if (strcmp(a, "--duration") == 0)
            opt.duration = atof(v);
        else if (strcmp(a, "--heavy") == 0)
            opt.heavy = (size_t)atol(v);
        else if (strcmp(a, "--calls") == 0)
            opt.calls = (size_t)atol(v);
        else if (strcmp(a, "--warmup") == 0)
            opt.warmup = atof(v);
        else if (strcmp(a, "--threads") == 0)
            opt.threads = atoi(v);
        else if (strcmp(a, "--seed") == 0)
            opt.seed = (uint64_t)atoll(v);
        else if (strcmp(a, "--sides") == 0)
            opt.sides = atoi(v) != 0;
        else if (strcmp(a, "--only") == 0)
            opt.only = v;
        else if (strcmp(a, "--reuse") == 0)
            opt.reuse = atoi(v) != 0;
        else if (strcmp(a, "--url-sets") == 0)
            opt.no_url_sets = atoi(v) == 0;
        else if (strcmp(a, "--churn") == 0)
            opt.churn = atof(v);
        else if (strcmp(a, "--set") == 0) {
            hr_err err = {0};
            if (hr_config_set_pair(&cfg, v, &err) != HR_OK) die("--set %s: %s", v, err.msg);
        } else
            usage();
        i++;
    }
    if (opt.store == NULL || opt.scale <= 0 || opt.threads < 1 || opt.calls < 1 || opt.warmup < 0) usage();
    n_users = (size_t)(FULL_USERS * opt.scale);
    n_urls = (size_t)(FULL_URLS * opt.scale);
    n_heavy = opt.heavy < n_users ? opt.heavy : n_users;
    if (n_users < 1000) die("--scale %.3f gives %zu users; at least 1000 are needed", opt.scale, n_users);
    hr_err err = {0};
    hr_store_options sopts = hr_config_store_options(&cfg);
    check(hr_store_open(opt.store, &sopts, &store, &err), &err, "open");
    graph = hr_graph_new(store, "");
    hr_rplan_costs costs = hr_rplan_default_costs();
    if (opt.no_url_sets) costs.set_test = 1e9;
    hr_reading_options ro = {.ns = "", .ttl_ms = 30 * 86400000LL, .costs = &costs};
    reading = hr_reading_new(store, graph, &ro);
    t_end = hr_now_ms();
    job *jobs = calloc((size_t)opt.threads, sizeof *jobs);
    printf("SCALE=%g\nUSERS=%zu\nURLS=%zu\nHEAVY=%zu\n", opt.scale, n_users, n_urls, n_heavy);

    if (opt.reuse) { /* the store holds this dataset already: measure only (7, 8) */
        draw_shares();
        build_friends();
        bu_zipf_init(&zipf, n_urls, 1.0);
        make_feeds();
        goto reopen;
    }

    /* 1 */
    hr_arena a = HR_ARENA_INIT;
    for (size_t s = 0; s < SITES; s++) {
        char d[32];
        hr_slice site;
        bool was_new;
        snprintf(d, sizeof d, "s%zu.example", s);
        check(hr_reading_site_add(reading, hr_slice_str(d), t_end, &a, &site, &was_new, &err), &err, "site");
    }
    {
        hr_slice site;
        bool was_new;
        check(hr_reading_site_add(reading, hr_slice_str(RECORD_SITE), t_end, &a, &site, &was_new, &err), &err,
              "site");
    }
    hr_arena_free(&a);
    draw_shares();
    run_jobs(setup, jobs, n_users, n_users, "sharing");
    check(hr_reading_set_share(reading, hr_slice_str(WORST), true, t_end, &err), &err, "share");

    /* 2 */
    build_friends();
    double secs = run_jobs(write_friends, jobs, n_users, n_users, "friend sets");
    printf("FRIENDS_SECS=%.1f\n", secs);
    write_worst();

    /* 3 */
    bu_zipf_init(&zipf, n_urls, 1.0);
    size_t total = 0;
    for (size_t i = 0; i < n_users; i++) {
        bu_rng rr = bu_rng_for(opt.seed, 1000 + i);
        total += shares[i] ? reads_of(i, &rr) : 0;
    }
    for (int t = 0; opt.out && t < opt.threads; t++) {
        char name[32];
        snprintf(name, sizeof name, "reads.%d.tsv", t);
        jobs[t].out = out_file(name);
    }
    secs = run_jobs(load_reads, jobs, n_users, total, "reads");
    for (int t = 0; t < opt.threads; t++)
        if (jobs[t].out) fclose(jobs[t].out), jobs[t].out = NULL;
    printf("READS_SENT=%zu\nREADS_RECORDED=%zu\nLOAD_SECS=%.1f\nLOAD_READS_PER_S=%.0f\n", total,
           atomic_load(&recorded_count), secs, (double)total / secs);

    /* 4 */
    double until = bu_now() + opt.duration;
    for (int t = 0; t < opt.threads; t++)
        jobs[t].until = until;
    secs = run_jobs(record_timed, jobs, 0, 0, "record");
    bu_lat all = {0};
    size_t calls = 0;
    for (int t = 0; t < opt.threads; t++) {
        for (size_t x = 0; x < jobs[t].lat.n; x++)
            bu_lat_add(&all, jobs[t].lat.v[x]);
        calls += jobs[t].calls;
        bu_lat_free(&jobs[t].lat);
    }
    printf("RECORD_PER_S=%.0f\nRECORD_P50_MS=%.3f\nRECORD_P99_MS=%.3f\n", (double)calls / secs,
           bu_lat_ms(&all, 50), bu_lat_ms(&all, 99));
    bu_lat_free(&all);

    /* 5 */
    make_feeds();
    printf("QUERY_USERS=%zu\n", n_qusers);
    static const query queries[] = {
        {"M450_ZIPF", 0, false, 0},          {"M450_TAIL", 1, false, 0},  {"WORST_ZIPF", 0, true, 0},
        {"WORST_TAIL", 1, true, 0},          {"POPULAR_1D", 0, false, 1}, {"TRENDING", 0, false, 2},
        {"FRIENDS_POPULAR_1D", 0, false, 3},
    };
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++)
        measure(&queries[i], i < 2 ? opt.calls : opt.calls / 4 + 1, jobs);

    /* 7: the store closed and reopened, as a restarted server sees it (the
     * memtables flushed); friends-reads again */
reopen:
    hr_reading_free(reading);
    hr_graph_free(graph);
    hr_store_close(store);
    double t_reopen = bu_now();
    check(hr_store_open(opt.store, &sopts, &store, &err), &err, "reopen");
    graph = hr_graph_new(store, "");
    reading = hr_reading_new(store, graph, &ro);
    printf("REOPEN_SECS=%.1f\n", bu_now() - t_reopen);
    printf("REOPEN_QUIESCE_SECS=%.1f\n", hr_store_settle(store, 1200, NULL));
    static const query reopened[] = {
        {"REOPENED_M450_ZIPF", 0, false, 0},
        {"REOPENED_M450_TAIL", 1, false, 0},
        {"REOPENED_WORST_ZIPF", 0, true, 0},
        {"REOPENED_WORST_TAIL", 1, true, 0},
    };
    for (size_t i = 0; i < sizeof reopened / sizeof reopened[0]; i++)
        measure(&reopened[i], i < 2 ? opt.calls : opt.calls / 4 + 1, jobs);

    /* 8 (--sides 1): the M450 queries with every URL forced to one side, to
     * check the per-query choice against each side alone (reading_plan.h) */
    static const struct {
        const char *suffix;
        hr_rplan_costs costs;
    } forced[] = {
#define NO_SETS .set_test = 1e9, .set_chunk = 1e9, .set_member = 1e9
        {"LISTS", {.entry = 0, .probe = 1e9, .friend_test = 1e9, .friend_extra = 1e9, NO_SETS}},
        {"PROBES", {.entry = 1e9, .probe = 0, .friend_test = 1e9, .friend_extra = 1e9, NO_SETS}},
        {"URL_SETS", {.entry = 1e9, .probe = 1e9, .friend_test = 1e9, .friend_extra = 1e9}},
        {"FRIENDS_SETS", {.entry = 1e9, .probe = 1e9, .friend_test = 0, .friend_extra = 0, NO_SETS}},
#undef NO_SETS
    };
    for (size_t f = 0; opt.sides && f < sizeof forced / sizeof forced[0]; f++) {
        hr_reading_free(reading);
        hr_reading_options fo = ro;
        fo.costs = &forced[f].costs;
        reading = hr_reading_new(store, graph, &fo);
        for (int v = 0; v < 4; v++) { /* M450 zipf, tail; worst zipf, tail */
            static char names[16][48];
            int kind = v & 1;
            bool worst = v >= 2;
            char *name = names[f * 4 + (size_t)v];
            snprintf(name, sizeof names[0], "FORCED_%s_%s_%s", forced[f].suffix, worst ? "WORST" : "M450",
                     kind ? "TAIL" : "ZIPF");
            query q = {name, kind, worst, 0};
            measure(&q, worst ? opt.calls / 4 + 1 : opt.calls, jobs);
        }
    }

    /* 6 */
    if (opt.out) export_queries();
    hr_reading_free(reading);
    hr_graph_free(graph);
    hr_store_close(store);
    hr_config_free(&cfg);
    fprintf(stderr, TOOL ": done\n");
    return 0;
}
