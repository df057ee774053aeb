/* stories_query.c — the read side of the stories benchmark's loader: phase
 * 5's queries (unseen, by top and by hot, for the heavy and a typical member;
 * top-rated), each timed on one thread and then run on --threads threads for
 * calls/s, with the store ops per call; and the latency summaries (nearest-
 * rank percentiles, printed as KEY=VALUE lines) that the upsert phases use too.
 *
 * Apart from the write side because it only reads a store already loaded:
 * it needs the options and the store's services, not the dataset's model. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/rank.h"
#include "core/ratings.h"
#include "core/stories.h"
#include "store/store.h"
#include "stories_load.h"

/* ---- Latency statistics --------------------------------------------------- */

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static double pct(const uint64_t *v, size_t n, double p) {
    size_t k = (size_t)ceil(p * (double)n);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return (double)v[k - 1] / 1e6;
}

stats summarise(uint64_t *v, size_t n) {
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

void print_stats(const char *key, const stats *s) {
    printf("%s_N=%zu\n%s_P50_MS=%.3f\n%s_P90_MS=%.3f\n%s_P99_MS=%.3f\n%s_MAX_MS=%.3f\n%s_MEAN_MS=%.3f\n", key,
           s->n, key, s->p50, key, s->p90, key, s->p99, key, s->max, key, s->mean);
}

/* ---- Queries --------------------------------------------------------------- */

/* One call; *n_items the page's length. */
int run_query(const query *q, hr_arena *a, size_t *n_items, hr_story_page *page_out) {
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

opcount ops_now(void) {
    opcount c;
    hr_store_metrics m;
    hr_store_metrics_of(NULL, &m);
    memcpy(c.ops, m.ops, sizeof c.ops);
    c.batches = m.batches;
    return c;
}

/* KEY_BATCHES=x and KEY_OPS='get:x zadd:y ...' per call, between two counts. */
void print_ops(const char *key, const opcount *a, const opcount *b, size_t calls) {
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

/* KEY_CACHES='name:held/budget ...' in MB: how full each of the store's
 * caches is (none on Redis), so a figure can be read against its budget. */
void print_caches(const char *key) {
    hr_store_metrics m;
    hr_store_metrics_of(store, &m);
    printf("%s_CACHES='", key);
    for (size_t i = 0; i < m.n_caches; i++)
        printf("%s%s:%.0f/%.0f", i ? " " : "", m.caches[i].name, (double)m.caches[i].bytes / 1048576.0,
               (double)m.caches[i].budget / 1048576.0);
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
void run_queries(const char *prefix, bool unseen_only) {
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
