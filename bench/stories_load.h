/* stories_load.h — what the three files of the stories benchmark's loader
 * share: the options, the dataset's constants and skeleton, the store and its
 * services (stories_load.c sets them up), the generator and writing threads
 * (stories_write.c), and the latency summaries and queries (stories_query.c).
 * They are one program split by job, so the names keep the single file's
 * short unprefixed form; a clash with a libherald.a symbol would fail the link. */
#ifndef HR_STORIES_LOAD_H
#define HR_STORIES_LOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#include "common/arena.h"
#include "common/err.h"
#include "core/ratings.h"
#include "core/stories.h"
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

typedef struct stories_opts {
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
} stories_opts;

extern stories_opts opt; /* stories_load.c: the defaults and main's parsing */

/* Set up by main (stories_load.c). */
extern size_t n_stories, n_members;
extern char (*ids)[HR_STORY_ID_LEN + 1]; /* story i's id */
extern int64_t *story_time;              /* story i's time */
extern uint32_t *perm;                   /* Zipf rank -> story index */
extern double *cdf;                      /* Zipf CDF over ranks */

extern hr_store *store;
extern hr_stories *stories;
extern hr_ratings *ratings;

extern atomic_int failed; /* set by fail(); every loop stops on it */

/* The clocks are inline, as in the single file: the timed loops of
 * stories_write.c and stories_query.c read now_s() or now_ns() every call. */
static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds this process used (every thread, user + system). */
static inline double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fail(const char *what, int rc, const hr_err *err);

/* A latency summary (stories_query.c's summarise()). */
typedef struct stats {
    size_t n;
    double p50, p90, p99, max, mean; /* ms */
} stats;

/* ---- stories_write.c: the dataset's model and the writing threads -------- */

typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
uint64_t rng_below(rng *r, uint64_t n);
size_t zipf_story(rng *r);
int draw_score(rng *r);
int64_t draw_time(rng *r, size_t story);
size_t make_content(size_t i, char *out, size_t cap);
size_t make_url(size_t i, char *out, size_t cap);

typedef struct phase {
    const char *name;
    size_t total;
    double t0, last_t;
    size_t last_n;
} phase;

void phase_start(phase *p, const char *name, size_t total);
double phase_end(phase *p, size_t n);

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

extern worker *workers;

void run_workers(void *(*fn)(void *), phase *p, size_t total, double every);
void *create_stories(void *arg);
int put_one(worker *w, hr_arena *a, const char *subject, size_t story, int score, int64_t time_ms,
            bool sample);
void *put_ratings(void *arg);
void timed_upserts(bool live);
stats workers_latency(void);

/* ---- stories_query.c: latency summaries and the queries ----------------- */

stats summarise(uint64_t *v, size_t n);
void print_stats(const char *key, const stats *s);

/* Store ops by type and batches, for "ops per call". */
typedef struct opcount {
    uint64_t ops[HR_OP_COUNT_];
    uint64_t batches;
} opcount;

opcount ops_now(void);
void print_ops(const char *key, const opcount *a, const opcount *b, size_t calls);
void print_caches(const char *key);

typedef enum { Q_UNSEEN_TOP, Q_UNSEEN_HOT, Q_TOP_RATED } query_kind;

typedef struct query {
    query_kind kind;
    const char *subject;
    size_t limit;
} query;

int run_query(const query *q, hr_arena *a, size_t *n_items, hr_story_page *page_out);
void run_queries(const char *prefix, bool unseen_only);

#endif
