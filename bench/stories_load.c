/* stories_load.c — the stories-and-ratings benchmark's loader and in-process
 * measurements (issue 5; bench/stories.sh runs it, see BENCHMARKS.md).
 *
 * Builds the dataset through the core API (hr_stories_create, hr_ratings_put)
 * on a store, the way the server would, then measures in the same process:
 *
 *   1. stories     N stories (1 M x scale): URL https://site{i%1000}.example/story/{i},
 *                  1-2 KiB of HTML, times uniform over 30 days
 *   2. heavy       member "heavy" rates 10 000 distinct stories drawn from the
 *                  Zipf below (so it has seen much of the top)
 *   3. ratings     R upserts (20 M x scale): subject uniform over M members
 *                  u0..u{M-1} (100 K x scale), object Zipf(s) over the stories
 *                  (a random permutation of ranks), score 1 (60 %), -1 (15 %),
 *                  0 (25 %), time uniform between the story's time and the end
 *                  of the 30 days; --threads threads; upserts/s with progress
 *   4. upserts     the same model for --duration seconds on the loaded store:
 *                  the steady-state upsert rate and its latency percentiles,
 *                  twice: back-dated (times drawn as the load's), then live
 *                  (each rating stamped with a clock that starts at the end of
 *                  the 30 days and moves with real time, as live traffic is: a
 *                  new entry goes at the head of each time list instead of at
 *                  a random place in it; a re-rating always wins)
 *   5. queries     once RocksDB has finished the flushes and compactions the
 *                  load queued (QUIESCE_SECS; PostgreSQL too is measured after
 *                  its load): unseen (heavy, rank=top, limit 20) --calls
 *                  times on one thread (p50/p90/p99/max; at most --query-secs),
 *                  then on --threads threads (calls/s, over 2 s at least); the
 *                  same for rank=hot, for a typical member, and top-rated;
 *                  with the store ops per call
 *   6. export      (--out DIR) the final state read back through the core API:
 *                  stories.tsv (id, url, time, score, content) and ratings.tsv
 *                  (subject, object, score, time) for PostgreSQL's COPY (text
 *                  format: no tab, newline or backslash occurs in the values),
 *                  put_objects.txt (100 000 Zipf draws of story ids, for the
 *                  wrk PUT script), unseen_heavy.txt (herald's first page)
 *   7. reopened    the store closed and reopened (a restarted server's view),
 *                  and the unseen query of phase 5 again
 *
 * Results go to stdout as KEY=VALUE lines (sourced by bench/stories.sh);
 * progress goes to stderr.
 *
 * usage: stories_load --store URI [--scale F] [--threads N] [--seed N]
 *                     [--zipf S] [--calls N] [--duration S] [--out DIR]
 *                     [--query-secs S]   (time limit of one query's latency run: 30)
 *                     [--queries-only]   (phase 5 on a store loaded before)
 *                     [--upserts-only]   (phase 4 on a store loaded before; give each
 *                                         such run its own --seed: the same seed
 *                                         replays the upserts of the load's phase 4,
 *                                         which change nothing and cost a fifth of
 *                                         new ones)
 *                     [--timed both|backdated|live]  (which runs phase 4 times: both)
 *                     [--only KEY]       (phase 5: only that query: UNSEEN_TOP,
 *                                         UNSEEN_HOT, UNSEEN_TYPICAL, TOP_RATED)
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/rank.h"
#include "core/ratings.h"
#include "core/stories.h"
#include "core/url.h"
#include "store/store.h"

#define FULL_STORIES 1000000
#define FULL_MEMBERS 100000
#define FULL_RATINGS 20000000
#define HEAVY_RATINGS 10000
#define HEAVY "heavy"
#define DAY_MS 86400000LL
#define END_MS 1717200000000LL /* 2024-06-01T00:00:00Z */
#define SPAN_MS (30 * DAY_MS)
#define PUT_OBJECTS 100000
#define SAMPLE_EVERY 16 /* upsert latencies sampled: one in this many */

/* ---- Options and shared state ------------------------------------------- */

enum { TIMED_BOTH, TIMED_BACKDATED, TIMED_LIVE };

static struct {
    const char *store;
    double scale;
    int threads;
    uint64_t seed;
    double zipf_s;
    int calls;
    double duration;
    const char *out;
    bool queries_only; /* an already loaded store: phase 5 only */
    bool upserts_only; /* an already loaded store: phase 4 only */
    int timed;         /* which upserts phase 4 times: TIMED_* */
    double query_secs; /* time limit of one query's latency run */
    const char *only;  /* phase 5: only the query with this key (UNSEEN_TOP, ...) */
} opt = {.scale = 1.0,
         .threads = 2,
         .seed = 42,
         .zipf_s = 1.0,
         .calls = 2000,
         .duration = 10.0,
         .query_secs = 30.0};

static size_t n_stories, n_members, n_ratings, n_heavy;
static char (*ids)[HR_STORY_ID_LEN + 1]; /* story i's id */
static int64_t *story_time;              /* story i's time */
static uint32_t *perm;                   /* Zipf rank -> story index */
static double *cdf;                      /* Zipf CDF over ranks */

static hr_store *store;
static hr_stories *stories;
static hr_ratings *ratings;

static atomic_size_t progress;
static atomic_int failed;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds this process used (every thread, user + system). */
static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stories_load: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void fail(const char *what, int rc, const hr_err *err) {
    if (atomic_fetch_add(&failed, 1) == 0)
        fprintf(stderr, "stories_load: %s failed: %s (%s)\n", what, hr_errname(rc),
                err && err->msg[0] ? err->msg : hr_strerror(rc));
}

/* ---- Random numbers (splitmix64 / xoshiro256**, per thread) ------------- */

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s;
    uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return res;
}

static double rng_unit(rng *r) {
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}
static uint64_t rng_below(rng *r, uint64_t n) {
    return (uint64_t)(rng_unit(r) * (double)n) % n;
}

/* A story index drawn from the Zipf distribution. */
static size_t zipf_story(rng *r) {
    double u = rng_unit(r);
    size_t lo = 0, hi = n_stories - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return perm[lo];
}

/* 1 (60 %), -1 (15 %), 0 (25 %). */
static int draw_score(rng *r) {
    uint64_t x = rng_below(r, 100);
    return x < 60 ? 1 : x < 75 ? -1 : 0;
}

/* A rating time between the story's time and the end of the span. */
static int64_t draw_time(rng *r, size_t story) {
    int64_t t0 = story_time[story];
    return t0 + (int64_t)rng_below(r, (uint64_t)(END_MS - t0) + 1);
}

/* ---- Content ------------------------------------------------------------- */

static const char *const words[] = {
    "the",      "of",       "and",      "a",       "to",     "in",       "is",        "you",      "that",
    "it",       "he",       "was",      "for",     "on",     "are",      "as",        "with",     "his",
    "they",     "at",       "be",       "this",    "have",   "from",     "or",        "one",      "had",
    "by",       "word",     "but",      "not",     "what",   "all",      "were",      "we",       "when",
    "your",     "can",      "said",     "there",   "use",    "an",       "each",      "which",    "she",
    "do",       "how",      "their",    "if",      "will",   "up",       "other",     "about",    "out",
    "many",     "then",     "them",     "these",   "so",     "some",     "her",       "would",    "make",
    "like",     "him",      "into",     "time",    "has",    "look",     "two",       "more",     "write",
    "go",       "see",      "number",   "no",      "way",    "could",    "people",    "my",       "than",
    "first",    "water",    "been",     "call",    "who",    "oil",      "its",       "now",      "find",
    "long",     "down",     "day",      "did",     "get",    "come",     "made",      "may",      "part",
    "server",   "database", "network",  "release", "kernel", "startup",  "market",    "election", "climate",
    "research", "science",  "football", "review",  "launch", "security", "privacy",   "browser",  "energy",
    "policy",   "report",   "council",  "company", "museum", "festival", "interview", "analysis", "opinion",
    "weather",  "storage",  "latency",  "cluster",
};
#define N_WORDS (sizeof words / sizeof words[0])

/* Story i's content, deterministic in (seed, i), 1024..2048 bytes of HTML
 * with no tab, newline or backslash (PostgreSQL COPY text format as is). */
static size_t make_content(size_t i, char *out, size_t cap) {
    uint64_t x = opt.seed * 1000003u + i;
    rng r;
    rng_seed(&r, splitmix(&x));
    size_t target = 1024 + rng_below(&r, 1025), n = 0;
    n += (size_t)snprintf(out + n, cap - n,
                          "<!doctype html><html><head><meta charset=\"utf-8\"><title>Story %zu</title>"
                          "</head><body><article><h1>",
                          i);
    for (int w = 0; w < 6; w++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", w ? " " : "", words[rng_below(&r, N_WORDS)]);
    n += (size_t)snprintf(out + n, cap - n, "</h1><p>");
    const char *tail = "</p></article></body></html>";
    size_t tail_len = strlen(tail);
    while (n + tail_len + 24 < target) {
        const char *w = words[rng_below(&r, N_WORDS)];
        if (rng_below(&r, 14) == 0)
            n += (size_t)snprintf(out + n, cap - n, ".</p><p>%s", w);
        else
            n += (size_t)snprintf(out + n, cap - n, " %s", w);
    }
    memcpy(out + n, tail, tail_len);
    n += tail_len;
    out[n] = '\0';
    return n;
}

static size_t make_url(size_t i, char *out, size_t cap) {
    return (size_t)snprintf(out, cap, "https://site%zu.example/story/%zu", i % 1000, i);
}

/* ---- Progress ------------------------------------------------------------ */

typedef struct phase {
    const char *name;
    size_t total;
    double t0, last_t;
    size_t last_n;
} phase;

static void phase_start(phase *p, const char *name, size_t total) {
    p->name = name;
    p->total = total;
    p->t0 = p->last_t = now_s();
    p->last_n = 0;
    atomic_store(&progress, 0);
    if (total) fprintf(stderr, "stories_load: %s: %zu to do\n", name, total);
}

/* Print progress every `every` seconds until done (or a failure). */
static void phase_watch(phase *p, double every, bool (*done)(void)) {
    while (!done()) {
        usleep(100000);
        double t = now_s();
        if (t - p->last_t < every) continue;
        size_t n = atomic_load(&progress);
        double rate = (double)(n - p->last_n) / (t - p->last_t);
        double avg = (double)n / (t - p->t0);
        double eta = avg > 0 && p->total ? (double)(p->total - n) / avg : 0;
        if (p->total)
            fprintf(stderr, "stories_load: %s: %zu/%zu (%.1f%%), %.0f/s now, %.0f/s average, ETA %.0f s\n",
                    p->name, n, p->total, 100.0 * (double)n / (double)p->total, rate, avg, eta);
        else
            fprintf(stderr, "stories_load: %s: %zu, %.0f/s now, %.0f/s average\n", p->name, n, rate, avg);
        p->last_t = t;
        p->last_n = n;
    }
}

static double phase_end(phase *p, size_t n) {
    double secs = now_s() - p->t0;
    fprintf(stderr, "stories_load: %s: %zu in %.1f s, %.0f/s\n", p->name, n, secs, (double)n / secs);
    return secs;
}

/* ---- Worker threads ------------------------------------------------------- */

typedef struct worker {
    int id;
    pthread_t th;
    void *(*fn)(void *);
    /* ratings */
    size_t from, to;
    double until; /* timed phase: stop at this now_s() */
    bool live;    /* timed phase: ratings stamped with its clock (timed_time) */
    size_t done;
    uint64_t *lat; /* sampled latencies, ns */
    size_t n_lat, cap_lat;
} worker;

static worker *workers;
static atomic_int running;

static bool workers_done(void) {
    return atomic_load(&running) == 0 || atomic_load(&failed) != 0;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    w->fn(w);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

static void run_workers(void *(*fn)(void *), phase *p, size_t total, double every) {
    atomic_store(&running, opt.threads);
    for (int t = 0; t < opt.threads; t++) {
        worker *w = &workers[t];
        w->id = t;
        w->fn = fn;
        w->from = total * (size_t)t / (size_t)opt.threads;
        w->to = total * (size_t)(t + 1) / (size_t)opt.threads;
        w->done = 0;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) die("pthread_create: %s", strerror(errno));
    }
    phase_watch(p, every, workers_done);
    for (int t = 0; t < opt.threads; t++)
        pthread_join(workers[t].th, NULL);
    if (atomic_load(&failed)) die("%s failed (see above)", p->name);
}

static void *create_stories(void *arg) {
    worker *w = arg;
    char url[128];
    char *content = malloc(4096);
    hr_arena a = HR_ARENA_INIT;
    for (size_t i = (size_t)w->id; i < n_stories && !atomic_load(&failed); i += (size_t)opt.threads) {
        hr_err err = {0};
        size_t ul = make_url(i, url, sizeof url);
        size_t cl = make_content(i, content, 4096);
        hr_story st;
        bool dup = false;
        int rc = hr_stories_create(stories, hr_slice_of(url, ul), hr_slice_of(content, cl), story_time[i], &a,
                                   &st, &dup, &err);
        if (rc == HR_OK && dup)
            rc = hr_err_set(&err, HR_ECONFLICT, "story %zu (%s) is a duplicate of %s", i, url, st.id);
        if (rc != HR_OK) {
            fail("hr_stories_create", rc, &err);
            break;
        }
        memcpy(ids[i], st.id, HR_STORY_ID_LEN + 1);
        hr_arena_reset(&a);
        atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
    }
    hr_arena_free(&a);
    free(content);
    return NULL;
}

static int put_one(worker *w, hr_arena *a, const char *subject, size_t story, int score, int64_t time_ms,
                   bool sample) {
    hr_err err = {0};
    hr_rating out;
    bool applied;
    int64_t sum;
    uint64_t t0 = sample ? now_ns() : 0;
    int rc = hr_ratings_put(ratings, hr_slice_str(subject), hr_slice_of(ids[story], HR_STORY_ID_LEN), score,
                            time_ms, a, &out, &applied, &sum, &err);
    if (sample && w->n_lat < w->cap_lat) w->lat[w->n_lat++] = now_ns() - t0;
    hr_arena_reset(a);
    if (rc != HR_OK) fail("hr_ratings_put", rc, &err);
    return rc;
}

/* Ratings [from, to) of the bulk model; the thread's generator depends on
 * (seed, thread) only. */
static void *put_ratings(void *arg) {
    worker *w = arg;
    rng r;
    rng_seed(&r, opt.seed * 7919 + 1 + (uint64_t)w->id);
    hr_arena a = HR_ARENA_INIT;
    char subject[32];
    for (size_t i = w->from; i < w->to && !atomic_load(&failed); i++) {
        snprintf(subject, sizeof subject, "u%" PRIu64, rng_below(&r, n_members));
        size_t s = zipf_story(&r);
        if (put_one(w, &a, subject, s, draw_score(&r), draw_time(&r, s), i % SAMPLE_EVERY == 0) != HR_OK)
            break;
        w->done++;
        atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
    }
    hr_arena_free(&a);
    return NULL;
}

/* The time of a rating of the steady-state phase: back-dated as in the load,
 * or (live) the phase's clock, END_MS at its start. */
static int64_t timed_time(rng *r, size_t story, const worker *w) {
    if (!w->live) return draw_time(r, story);
    return END_MS + (int64_t)((now_s() - (w->until - opt.duration)) * 1000.0);
}

/* The same model until w->until (the steady-state phase). The live run
 * draws its own subjects and stories, not a replay of the back-dated run's
 * (which would make every one of them a re-rating). */
static void *put_timed(void *arg) {
    worker *w = arg;
    rng r;
    rng_seed(&r, opt.seed * 104729 + 17 + (uint64_t)w->id + (w->live ? 7919 * 64 : 0));
    hr_arena a = HR_ARENA_INIT;
    char subject[32];
    for (size_t i = 0; !atomic_load(&failed); i++) {
        if ((i & 63) == 0 && now_s() >= w->until) break;
        snprintf(subject, sizeof subject, "u%" PRIu64, rng_below(&r, n_members));
        size_t s = zipf_story(&r);
        if (put_one(w, &a, subject, s, draw_score(&r), timed_time(&r, s, w), true) != HR_OK) break;
        w->done++;
        atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
    }
    hr_arena_free(&a);
    return NULL;
}

/* ---- Latency statistics --------------------------------------------------- */

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

typedef struct stats {
    size_t n;
    double p50, p90, p99, max, mean; /* ms */
} stats;

static double pct(const uint64_t *v, size_t n, double p) {
    size_t k = (size_t)ceil(p * (double)n);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return (double)v[k - 1] / 1e6;
}

static stats summarise(uint64_t *v, size_t n) {
    stats s = {0};
    if (n == 0) return s;
    qsort(v, n, sizeof *v, cmp_u64);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)v[i];
    s.n = n;
    s.p50 = pct(v, n, 0.50);
    s.p90 = pct(v, n, 0.90);
    s.p99 = pct(v, n, 0.99);
    s.max = (double)v[n - 1] / 1e6;
    s.mean = sum / (double)n / 1e6;
    return s;
}

static void print_stats(const char *key, const stats *s) {
    printf("%s_N=%zu\n%s_P50_MS=%.3f\n%s_P90_MS=%.3f\n%s_P99_MS=%.3f\n%s_MAX_MS=%.3f\n%s_MEAN_MS=%.3f\n", key,
           s->n, key, s->p50, key, s->p90, key, s->p99, key, s->max, key, s->mean);
}

/* ---- Queries --------------------------------------------------------------- */

typedef enum { Q_UNSEEN_TOP, Q_UNSEEN_HOT, Q_TOP_RATED } query_kind;

typedef struct query {
    query_kind kind;
    const char *subject;
    size_t limit;
} query;

/* One call; *n_items the page's length. */
static int run_query(const query *q, hr_arena *a, size_t *n_items, hr_story_page *page_out) {
    hr_err err = {0};
    hr_list_req req = {.limit = q->limit};
    hr_story_page page;
    int rc;
    if (q->kind == Q_TOP_RATED)
        rc = hr_ratings_top_rated(ratings, hr_slice_str(q->subject), &req, a, &page, &err);
    else
        rc = hr_ratings_unseen(ratings, hr_slice_str(q->subject),
                               q->kind == Q_UNSEEN_HOT ? HR_RANK_HOT : HR_RANK_TOP, &req, a, &page, &err);
    if (rc != HR_OK) {
        fail(q->kind == Q_TOP_RATED ? "hr_ratings_top_rated" : "hr_ratings_unseen", rc, &err);
        return rc;
    }
    *n_items = page.n;
    if (page_out) *page_out = page;
    return HR_OK;
}

/* Store ops by type and batches, for "ops per call". */
typedef struct opcount {
    uint64_t ops[HR_OP_COUNT_];
    uint64_t batches;
} opcount;

static opcount ops_now(void) {
    opcount c;
    hr_store_metrics m;
    hr_store_metrics_of(NULL, &m);
    memcpy(c.ops, m.ops, sizeof c.ops);
    c.batches = m.batches;
    return c;
}

/* KEY_BATCHES=x and KEY_OPS='get:x zadd:y ...' per call, between two counts. */
static void print_ops(const char *key, const opcount *a, const opcount *b, size_t calls) {
    if (calls == 0) return;
    printf("%s_BATCHES=%.2f\n%s_OPS='", key, (double)(b->batches - a->batches) / (double)calls, key);
    bool first = true;
    for (int t = 0; t < HR_OP_COUNT_; t++) {
        uint64_t d = b->ops[t] - a->ops[t];
        if (d == 0) continue;
        printf("%s%s:%.1f", first ? "" : " ", hr_op_label((hr_op_type)t), (double)d / (double)calls);
        first = false;
    }
    printf("'\n");
}

/* Up to `calls` calls on this thread (after `warmup`), stopping after
 * opt.query_secs; latency stats, and the store ops they made. */
static stats time_query(const char *key, const query *q, int calls, int warmup, size_t *n_items) {
    uint64_t *lat = malloc((size_t)calls * sizeof *lat);
    hr_arena a = HR_ARENA_INIT;
    for (int i = 0; i < warmup; i++) {
        if (run_query(q, &a, n_items, NULL) != HR_OK) die("query failed");
        hr_arena_reset(&a);
    }
    opcount c0 = ops_now();
    double deadline = now_s() + opt.query_secs;
    int n = 0;
    while (n < calls && (n < 50 || now_s() < deadline)) {
        uint64_t t0 = now_ns();
        if (run_query(q, &a, n_items, NULL) != HR_OK) die("query failed");
        lat[n++] = now_ns() - t0;
        hr_arena_reset(&a);
    }
    opcount c1 = ops_now();
    print_ops(key, &c0, &c1, (size_t)n);
    hr_arena_free(&a);
    stats s = summarise(lat, (size_t)n);
    free(lat);
    return s;
}

/* A throughput run lasts at least this long, however few its calls: the
 * heavy member's unseen makes 2 000 calls in ~0.06 s, where one stall of a
 * background flush halved the calls/s of a bench run. */
#define THROUGHPUT_MIN_SECS 2.0

typedef struct qthread {
    pthread_t th;
    const query *q;
    int calls, done;
    double until;    /* calls go on past `calls` until then */
    double deadline; /* and stop then, past 10 calls */
} qthread;

static void *query_thread(void *arg) {
    qthread *t = arg;
    hr_arena a = HR_ARENA_INIT;
    size_t n;
    while ((t->done < t->calls || now_s() < t->until) && !atomic_load(&failed) &&
           (t->done < 10 || now_s() < t->deadline)) {
        run_query(t->q, &a, &n, NULL);
        hr_arena_reset(&a);
        t->done++;
    }
    hr_arena_free(&a);
    return NULL;
}

/* calls/s with opt.threads threads, each making `calls` calls or more, for
 * at least THROUGHPUT_MIN_SECS and at most a third of opt.query_secs. */
static double query_throughput(const query *q, int calls) {
    qthread *t = calloc((size_t)opt.threads, sizeof *t);
    double t0 = now_s();
    for (int i = 0; i < opt.threads; i++) {
        t[i].q = q;
        t[i].calls = calls;
        t[i].until = t0 + THROUGHPUT_MIN_SECS;
        t[i].deadline = t0 + opt.query_secs / 3;
        pthread_create(&t[i].th, NULL, query_thread, &t[i]);
    }
    int done = 0;
    for (int i = 0; i < opt.threads; i++) {
        pthread_join(t[i].th, NULL);
        done += t[i].done;
    }
    double secs = now_s() - t0;
    free(t);
    if (atomic_load(&failed)) die("query failed");
    return (double)done / secs;
}

/* Phase 5: each query on one thread (latency), then on opt.threads threads
 * (calls/s). Keys are prefixed with `prefix`; unseen_only: the first query. */
static void run_queries(const char *prefix, bool unseen_only) {
    static const struct {
        const char *key;
        query q;
    } qs[] = {
        {"UNSEEN_TOP", {Q_UNSEEN_TOP, HEAVY, 20}},
        {"UNSEEN_HOT", {Q_UNSEEN_HOT, HEAVY, 20}},
        {"UNSEEN_TYPICAL", {Q_UNSEEN_TOP, "u1", 20}},
        {"TOP_RATED", {Q_TOP_RATED, HEAVY, 20}},
    };
    for (size_t i = 0; i < (unseen_only ? 1 : sizeof qs / sizeof qs[0]); i++) {
        if (opt.only && strcmp(opt.only, qs[i].key) != 0) continue;
        int calls = i == 0 ? opt.calls : opt.calls / 4 > 50 ? opt.calls / 4 : 50;
        size_t items = 0;
        char key[64];
        snprintf(key, sizeof key, "%s%s", prefix, qs[i].key);
        fprintf(stderr, "stories_load: %s: up to %d calls (%.0f s) on 1 thread\n", key, calls,
                opt.query_secs);
        stats s = time_query(key, &qs[i].q, calls, calls / 20 + 5, &items);
        double qps = query_throughput(&qs[i].q, calls / 2 > 20 ? calls / 2 : 20);
        fprintf(stderr, "stories_load: %s: %zu items, p50 %.3f ms, p99 %.3f ms; %d threads %.0f calls/s\n",
                key, items, s.p50, s.p99, opt.threads, qps);
        print_stats(key, &s);
        printf("%s_ITEMS=%zu\n%s_PER_S=%.0f\n", key, items, key, qps);
    }
}

/* ---- Export ----------------------------------------------------------------- */

static FILE *open_out(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", opt.out, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) die("cannot write %s: %s", path, strerror(errno));
    static char bufs[4][1 << 20];
    static int next;
    setvbuf(f, bufs[next++ % 4], _IOFBF, sizeof bufs[0]);
    return f;
}

static void close_out(FILE *f, const char *name) {
    if (fflush(f) != 0 || ferror(f) || fclose(f) != 0)
        die("writing %s/%s failed: %s", opt.out, name, strerror(errno));
}

/* Every story with its score as herald has it, in index order. */
static size_t export_stories(int64_t *score_sum) {
    FILE *f = open_out("stories.tsv");
    char *content = malloc(4096);
    hr_arena a = HR_ARENA_INIT;
    *score_sum = 0;
    for (size_t i = 0; i < n_stories; i++) {
        hr_err err = {0};
        hr_story st;
        int rc = hr_stories_get(stories, hr_slice_of(ids[i], HR_STORY_ID_LEN), false, &a, &st, &err);
        if (rc != HR_OK) {
            fail("hr_stories_get", rc, &err);
            die("export failed");
        }
        make_content(i, content, 4096);
        fprintf(f, "%s\t%.*s\t%" PRId64 "\t%" PRId64 "\t%s\n", ids[i], (int)st.url.len, st.url.ptr,
                st.time_ms, st.score, content);
        *score_sum += st.score;
        hr_arena_reset(&a);
        if ((i & 0x3ffff) == 0x3ffff)
            fprintf(stderr, "stories_load: export: %zu/%zu stories\n", i + 1, n_stories);
    }
    hr_arena_free(&a);
    free(content);
    close_out(f, "stories.tsv");
    return n_stories;
}

/* Every rating, through the all-ratings list (newest first, paged). */
static size_t export_ratings(int64_t *score_sum, size_t *heavy_n) {
    FILE *f = open_out("ratings.tsv");
    hr_arena a = HR_ARENA_INIT;
    char *cursor = NULL;
    size_t n = 0;
    *score_sum = 0;
    *heavy_n = 0;
    size_t next_note = 1000000;
    for (;;) {
        hr_err err = {0};
        hr_list_req req = {.limit = HR_LIST_MAX, .cursor = cursor};
        hr_rating_page page;
        int rc = hr_ratings_all(ratings, &req, &a, &page, &err);
        if (rc != HR_OK) {
            fail("hr_ratings_all", rc, &err);
            die("export failed");
        }
        for (size_t i = 0; i < page.n; i++) {
            const hr_rating *r = &page.items[i];
            fprintf(f, "%.*s\t%.*s\t%d\t%" PRId64 "\n", (int)r->subject.len, r->subject.ptr,
                    (int)r->object.len, r->object.ptr, r->score, r->time_ms);
            *score_sum += r->score;
            if (hr_slice_eq(r->subject, hr_slice_str(HEAVY))) (*heavy_n)++;
        }
        n += page.n;
        if (n >= next_note) {
            fprintf(stderr, "stories_load: export: %zu ratings\n", n);
            next_note += 1000000;
        }
        free(cursor);
        cursor = page.next_cursor ? strdup(page.next_cursor) : NULL;
        hr_arena_reset(&a);
        if (cursor == NULL) break;
    }
    hr_arena_free(&a);
    close_out(f, "ratings.tsv");
    return n;
}

/* The latencies the workers sampled, summarised; their samples are cleared. */
static stats workers_latency(void) {
    size_t n = 0;
    for (int t = 0; t < opt.threads; t++)
        n += workers[t].n_lat;
    uint64_t *all = malloc((n ? n : 1) * sizeof *all);
    if (!all) die("out of memory");
    n = 0;
    for (int t = 0; t < opt.threads; t++) {
        memcpy(all + n, workers[t].lat, workers[t].n_lat * sizeof *all);
        n += workers[t].n_lat;
        workers[t].n_lat = 0;
    }
    stats s = summarise(all, n);
    free(all);
    return s;
}

/* Phase 4: the upsert model on the loaded store for --duration seconds, its
 * ratings back-dated as the load's or (live) stamped with the phase's clock.
 * Prints UPSERTS_PER_S, UPSERT_* (live: LIVE_UPSERTS_PER_S, LIVE_UPSERT_*). */
static void timed_upserts(bool live) {
    const char *pre = live ? "LIVE_" : "";
    phase p;
    phase_start(&p, live ? "upserts (timed, live)" : "upserts (timed, back-dated)", 0);
    double until = now_s() + opt.duration;
    for (int t = 0; t < opt.threads; t++) {
        workers[t].until = until;
        workers[t].live = live;
        size_t cap = (size_t)(opt.duration * 200000) + 16;
        if (cap > workers[t].cap_lat) {
            free(workers[t].lat);
            workers[t].lat = malloc(cap * sizeof(uint64_t));
            workers[t].cap_lat = cap;
        }
    }
    opcount c0 = ops_now();
    double tcpu0 = cpu_s();
    run_workers(put_timed, &p, 0, 5);
    double secs = now_s() - p.t0;
    double cpu = cpu_s() - tcpu0;
    opcount c1 = ops_now();
    size_t done = 0;
    for (int t = 0; t < opt.threads; t++)
        done += workers[t].done;
    stats s = workers_latency();
    double cpu_us = done ? cpu * 1e6 / (double)done : 0;
    fprintf(stderr,
            "stories_load: %s: %zu in %.1f s, %.0f/s, %.1f us of CPU each, p50 %.3f ms, p99 %.3f ms\n",
            p.name, done, secs, (double)done / secs, cpu_us, s.p50, s.p99);
    printf("%sUPSERT_THREADS=%d\n%sUPSERT_SECS=%.1f\n%sUPSERT_DONE=%zu\n%sUPSERTS_PER_S=%.0f\n%sUPSERT_CPU_"
           "US=%.1f\n",
           pre, opt.threads, pre, secs, pre, done, pre, (double)done / secs, pre, cpu_us);
    char key[32];
    snprintf(key, sizeof key, "%sUPSERT", pre);
    print_ops(key, &c0, &c1, done);
    print_stats(key, &s);
}

/* ---- Main ---------------------------------------------------------------------- */

static void usage(void) {
    fprintf(stderr, "usage: stories_load --store URI [--scale F] [--threads N] [--seed N] [--zipf S]\n"
                    "                    [--calls N] [--duration S] [--out DIR] [--query-secs S]\n"
                    "                    [--queries-only] [--upserts-only] [--only KEY]\n"
                    "                    [--timed both|backdated|live]\n");
    exit(2);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--queries-only") == 0) {
            opt.queries_only = true;
            continue;
        }
        if (strcmp(a, "--upserts-only") == 0) {
            opt.upserts_only = true;
            continue;
        }
        if (v == NULL) usage();
        if (strcmp(a, "--store") == 0)
            opt.store = v;
        else if (strcmp(a, "--scale") == 0)
            opt.scale = atof(v);
        else if (strcmp(a, "--threads") == 0)
            opt.threads = atoi(v);
        else if (strcmp(a, "--seed") == 0)
            opt.seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--zipf") == 0)
            opt.zipf_s = atof(v);
        else if (strcmp(a, "--calls") == 0)
            opt.calls = atoi(v);
        else if (strcmp(a, "--duration") == 0)
            opt.duration = atof(v);
        else if (strcmp(a, "--out") == 0)
            opt.out = v;
        else if (strcmp(a, "--query-secs") == 0)
            opt.query_secs = atof(v);
        else if (strcmp(a, "--only") == 0)
            opt.only = v;
        else if (strcmp(a, "--timed") == 0) {
            if (strcmp(v, "both") == 0)
                opt.timed = TIMED_BOTH;
            else if (strcmp(v, "backdated") == 0)
                opt.timed = TIMED_BACKDATED;
            else if (strcmp(v, "live") == 0)
                opt.timed = TIMED_LIVE;
            else
                usage();
        } else
            usage();
        i++;
    }
    if (opt.store == NULL || !(opt.scale > 0 && opt.scale <= 10) || opt.threads < 1 || opt.threads > 64 ||
        opt.calls < 1 || opt.duration < 0 || !(opt.zipf_s > 0) || !(opt.query_secs > 0))
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0);

    n_stories = (size_t)llround(FULL_STORIES * opt.scale);
    n_members = (size_t)llround(FULL_MEMBERS * opt.scale);
    n_ratings = (size_t)llround(FULL_RATINGS * opt.scale);
    if (n_stories < 100 || n_members < 10) die("scale %.4g is too small", opt.scale);
    n_heavy = HEAVY_RATINGS < n_stories / 2 ? HEAVY_RATINGS : n_stories / 2;
    printf("SCALE=%g\nSTORIES=%zu\nMEMBERS=%zu\nRATINGS_UPSERTS=%zu\nHEAVY_RATINGS=%zu\nTHREADS=%d\nZIPF_S=%"
           "g\nSEED=%" PRIu64 "\n",
           opt.scale, n_stories, n_members, n_ratings, n_heavy, opt.threads, opt.zipf_s, opt.seed);

    /* The dataset's skeleton: story times, the Zipf CDF and rank permutation. */
    ids = calloc(n_stories, sizeof *ids);
    story_time = malloc(n_stories * sizeof *story_time);
    perm = malloc(n_stories * sizeof *perm);
    cdf = malloc(n_stories * sizeof *cdf);
    workers = calloc((size_t)opt.threads, sizeof *workers);
    if (!ids || !story_time || !perm || !cdf || !workers) die("out of memory");
    rng g;
    rng_seed(&g, opt.seed);
    for (size_t i = 0; i < n_stories; i++) {
        story_time[i] = END_MS - SPAN_MS + (int64_t)rng_below(&g, (uint64_t)SPAN_MS);
        perm[i] = (uint32_t)i;
    }
    for (size_t i = n_stories - 1; i > 0; i--) {
        size_t j = rng_below(&g, i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    double total = 0;
    for (size_t k = 0; k < n_stories; k++)
        cdf[k] = (total += pow((double)(k + 1), -opt.zipf_s));
    for (size_t k = 0; k < n_stories; k++)
        cdf[k] /= total;
    cdf[n_stories - 1] = 1.0;

    hr_err err = {0};
    if (hr_store_open(opt.store, NULL, &store, &err) != HR_OK) die("cannot open %s: %s", opt.store, err.msg);
    stories = hr_stories_new(store, NULL);
    ratings = hr_ratings_new(store, stories);

    phase p;
    if (opt.queries_only) goto queries;
    if (opt.upserts_only) { /* the ids the load gave the stories: the hashes of their URLs */
        hr_buf canon = HR_BUF_INIT;
        char url[128];
        for (size_t i = 0; i < n_stories; i++) {
            hr_buf_clear(&canon);
            if (hr_url_canonical(hr_slice_of(url, make_url(i, url, sizeof url)), &canon, &err) != HR_OK)
                die("url %zu: %s", i, err.msg);
            snprintf(ids[i], sizeof ids[i], "%016" PRIx64, hr_url_hash(hr_buf_slice(&canon)));
        }
        hr_buf_free(&canon);
        goto upserts;
    }

    /* 1. Stories. */
    phase_start(&p, "stories", n_stories);
    run_workers(create_stories, &p, n_stories, 5);
    double secs = phase_end(&p, n_stories);
    printf("STORIES_SECS=%.1f\nSTORIES_PER_S=%.0f\n", secs, (double)n_stories / secs);

    /* 2. The heavy member: n_heavy distinct stories from the Zipf. */
    {
        phase_start(&p, "heavy member", n_heavy);
        unsigned char *taken = calloc(n_stories, 1);
        rng h;
        rng_seed(&h, opt.seed * 31 + 5);
        hr_arena a = HR_ARENA_INIT;
        worker *w = &workers[0];
        size_t top_seen = 0;
        for (size_t n = 0; n < n_heavy;) {
            size_t s = zipf_story(&h);
            if (taken[s]) continue;
            taken[s] = 1;
            if (put_one(w, &a, HEAVY, s, draw_score(&h), draw_time(&h, s), false) != HR_OK)
                die("heavy member failed");
            n++;
        }
        /* How much of the Zipf head it has seen (ranks 0..999). */
        for (size_t k = 0; k < 1000 && k < n_stories; k++)
            top_seen += taken[perm[k]];
        hr_arena_free(&a);
        free(taken);
        phase_end(&p, n_heavy);
        printf("HEAVY_SEEN_OF_ZIPF_TOP1000=%zu\n", top_seen);
    }

    /* 3. Bulk ratings. */
    for (int t = 0; t < opt.threads; t++) {
        workers[t].cap_lat = n_ratings / SAMPLE_EVERY / (size_t)opt.threads + 16;
        workers[t].lat = malloc(workers[t].cap_lat * sizeof(uint64_t));
        workers[t].n_lat = 0;
    }
    phase_start(&p, "ratings", n_ratings);
    double cpu0 = cpu_s();
    run_workers(put_ratings, &p, n_ratings, 10);
    secs = phase_end(&p, n_ratings);
    printf("LOAD_UPSERT_CPU_US=%.1f\n", (cpu_s() - cpu0) * 1e6 / (double)n_ratings);
    {
        stats s = workers_latency();
        printf("LOAD_SECS=%.1f\nLOAD_UPSERTS_PER_S=%.0f\n", secs, (double)n_ratings / secs);
        print_stats("LOAD_UPSERT", &s);
    }

    /* 4. Steady-state upserts on the loaded store: back-dated as the load's,
     * then live. */
upserts:
    if (opt.duration > 0 && opt.timed != TIMED_LIVE) timed_upserts(false);
    if (opt.duration > 0 && opt.timed != TIMED_BACKDATED) timed_upserts(true);
    for (int t = 0; t < opt.threads; t++)
        free(workers[t].lat);

    if (opt.upserts_only) goto done;

    /* 5. Queries, on a quiet store (hr_store_settle). */
queries:;
    double quiet = hr_store_settle(store, 600, NULL);
    fprintf(stderr, "stories_load: waited %.1f s for RocksDB's flushes and compactions before the queries\n",
            quiet);
    printf("QUIESCE_SECS=%.1f\n", quiet);
    run_queries("", false);

    /* 6. Export. */
    if (opt.out && !opt.queries_only) {
        hr_arena a = HR_ARENA_INIT;
        size_t items;
        hr_story_page page;
        query q = {Q_UNSEEN_TOP, HEAVY, 20};
        if (run_query(&q, &a, &items, &page) != HR_OK) die("unseen failed");
        FILE *f = open_out("unseen_heavy.txt");
        for (size_t i = 0; i < page.n; i++)
            fprintf(f, "%s\t%" PRId64 "\n", page.items[i].id, page.items[i].score);
        close_out(f, "unseen_heavy.txt");
        hr_arena_free(&a);

        f = open_out("put_objects.txt");
        rng r;
        rng_seed(&r, opt.seed * 65537 + 3);
        for (size_t i = 0; i < PUT_OBJECTS; i++)
            fprintf(f, "%s\n", ids[zipf_story(&r)]);
        close_out(f, "put_objects.txt");

        phase_start(&p, "export", 0);
        int64_t story_sum = 0, rating_sum = 0;
        size_t heavy_n = 0;
        size_t ns = export_stories(&story_sum);
        size_t nr = export_ratings(&rating_sum, &heavy_n);
        secs = phase_end(&p, ns + nr);
        printf("EXPORT_SECS=%.1f\nEXPORT_STORIES=%zu\nEXPORT_RATINGS=%zu\nEXPORT_HEAVY_RATINGS=%zu\n"
               "EXPORT_STORY_SCORE_SUM=%" PRId64 "\nEXPORT_RATING_SCORE_SUM=%" PRId64 "\n",
               secs, ns, nr, heavy_n, story_sum, rating_sum);
        if (story_sum != rating_sum)
            fprintf(stderr,
                    "stories_load: WARNING: the stories' scores sum to %" PRId64
                    " but the ratings to %" PRId64 "\n",
                    story_sum, rating_sum);
    }

    /* 7. The unseen query again after closing and reopening the store (what
     * a restarted server sees: the memtables recovered and flushed). */
    if (!opt.queries_only) {
        double t0 = now_s();
        hr_ratings_free(ratings);
        hr_stories_free(stories);
        hr_store_close(store);
        double t1 = now_s();
        if (hr_store_open(opt.store, NULL, &store, &err) != HR_OK)
            die("cannot reopen %s: %s", opt.store, err.msg);
        stories = hr_stories_new(store, NULL);
        ratings = hr_ratings_new(store, stories);
        fprintf(stderr, "stories_load: store closed in %.1f s, reopened in %.1f s\n", t1 - t0, now_s() - t1);
        printf("CLOSE_SECS=%.1f\nREOPEN_SECS=%.1f\n", t1 - t0, now_s() - t1);
        printf("REOPEN_QUIESCE_SECS=%.1f\n", hr_store_settle(store, 600, NULL));
        run_queries("REOPENED_", true);
    }

done:;
    double t0 = now_s();
    hr_ratings_free(ratings);
    hr_stories_free(stories);
    hr_store_close(store);
    fprintf(stderr, "stories_load: store closed in %.1f s\n", now_s() - t0);
    return 0;
}
