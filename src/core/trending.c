/* trending.c — see trending.h for the counting, the ranking and the score. */
#include "core/trending.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "core/exec.h"
#include "core/reading_keys.h"

#define MINUTE 60000LL
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)

/* Granularity g serves window g (the hr_window values are the indexes). */
static const struct {
    int64_t width, window;
    const char *name;
} G[HR_GRANULARITIES] = {
    {10 * MINUTE, HOUR, "1h"},
    {2 * HOUR, DAY, "1d"},
    {DAY, 7 * DAY, "7d"},
};

struct hr_trends {
    hr_store *store;
    char *ns;
};

hr_trends *hr_trends_new(hr_store *store, const char *ns) {
    hr_trends *t = hr_xcalloc(1, sizeof *t);
    t->store = store;
    t->ns = hr_xstrdup(ns ? ns : "");
    return t;
}

void hr_trends_free(hr_trends *t) {
    if (t == NULL) return;
    free(t->ns);
    free(t);
}

/* ---- Pure parts ------------------------------------------------------------ */

int hr_window_parse(const char *text, hr_window *out) {
    for (int g = 0; g < HR_GRANULARITIES; g++) {
        if (text && strcmp(text, G[g].name) == 0) {
            *out = (hr_window)g;
            return HR_OK;
        }
    }
    return HR_EINVAL;
}

const char *hr_window_name(hr_window w) {
    return G[w].name;
}
int64_t hr_window_ms(hr_window w) {
    return G[w].window;
}
int64_t hr_window_bucket_ms(hr_window w) {
    return G[w].width;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static bool is_pow2(int64_t c) {
    return c > 0 && (c & (c - 1)) == 0;
}

bool hr_trends_milestone(int64_t c) {
    return is_pow2(c) || (c > 0 && c % 3 == 0 && is_pow2(c / 3));
}

size_t hr_window_buckets(hr_window w, int64_t now_ms, int64_t *first, double *weights) {
    int64_t width = G[w].width, start = now_ms - G[w].window; /* the window is (start, now] */
    int64_t b0 = floor_div(start, width), last = floor_div(now_ms, width);
    size_t n = (size_t)(last - b0 + 1);
    *first = b0;
    for (size_t i = 0; i < n; i++)
        weights[i] = 1.0;
    weights[0] = (double)((b0 + 1) * width - start) / (double)width;
    return n;
}

double hr_trends_score(double hour, double day, double *baseline) {
    double b = day > hour ? (day - hour) / 23.0 : 0.0;
    if (baseline) *baseline = b;
    return (hour - b) / sqrt(b + 1.0);
}

/* The expiry of bucket `bucket` of granularity g: it may be read until the
 * window has passed its end; one more width of slack. */
static int64_t bucket_expiry(int g, int64_t bucket) {
    return (bucket + 1) * G[g].width + G[g].window + G[g].width;
}

/* ---- Recording --------------------------------------------------------------- */

void hr_trends_read_ops(hr_trends *t, hr_batch *b, hr_trend_read *rd, int64_t now_ms) {
    hr_buf k = HR_BUF_INIT;
    for (int g = 0; g < HR_GRANULARITIES; g++) {
        int64_t bucket = floor_div(rd->time_ms, G[g].width);
        rd->count_ops[g] = SIZE_MAX;
        if (bucket_expiry(g, bucket) - G[g].width <= now_ms) continue; /* no window reaches it */
        hr_buf_clear(&k);
        rd->count_ops[g] = hr_counter_get(b, hr_rk_count(&k, t->ns, rd->url_hash, g, bucket));
    }
    hr_buf_free(&k);
}

void hr_trends_write_ops(hr_trends *t, hr_batch *w, const hr_batch *b, const hr_trend_read *rd,
                         int64_t prev_ms) {
    hr_buf k = HR_BUF_INIT;
    char h8[8];
    for (int g = 0; g < HR_GRANULARITIES; g++) {
        if (rd->count_ops[g] == SIZE_MAX) continue;
        int64_t bucket = floor_div(rd->time_ms, G[g].width);
        if (prev_ms >= bucket * G[g].width) continue; /* this reader is counted in it already */
        const hr_result *res = hr_batch_result(b, rd->count_ops[g]);
        int64_t old = res->rc == HR_OK ? res->num : 0, expiry = bucket_expiry(g, bucket);
        hr_buf_clear(&k);
        hr_slice key = hr_rk_count(&k, t->ns, rd->url_hash, g, bucket);
        hr_incr(w, key, 1);
        if (old == 0) hr_expire(w, key, expiry); /* a new counter (a missing one reads 0) */
        if (hr_trends_milestone(old + 1)) {
            hr_buf_clear(&k);
            key = hr_rk_candidates(&k, t->ns, g, bucket);
            hr_zadd(w, key, -(double)(old + 1), hr_rk_h8(h8, rd->url_hash));
            hr_expire(w, key, expiry);
        }
    }
    hr_buf_free(&k);
}

/* ---- Lists ---------------------------------------------------------------------- */

/* A candidate while it is ranked: its hash and an estimate. */
typedef struct cand {
    uint64_t h;
    double est;
} cand;

static int by_hash(const void *x, const void *y) {
    const cand *a = x, *b = y;
    return (a->h > b->h) - (a->h < b->h);
}

static int by_est_desc(const void *x, const void *y) {
    const cand *a = x, *b = y;
    if (a->est != b->est) return a->est > b->est ? -1 : 1;
    return by_hash(x, y);
}

/* Round trip 1: the top candidates of n buckets of granularity g from
 * `first` (weights as hr_window_buckets gives them), estimated from their
 * milestones; the best `keep` of them by estimate into *out (in a). */
static int candidates(hr_trends *t, int g, int64_t first, const double *weights, size_t n, size_t per_bucket,
                      size_t keep, hr_arena *a, cand **out, size_t *n_out, hr_err *err) {
    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT;
    hr_zrange_spec spec = hr_zrange_all(false, per_bucket);
    for (size_t i = 0; i < n; i++) {
        hr_buf_clear(&k);
        hr_zrange(b, hr_rk_candidates(&k, t->ns, g, first + (int64_t)i), &spec); /* op i */
    }
    int rc = hr_core_exec(t->store, b, 0, "trending candidates", err);
    size_t total = 0;
    for (size_t i = 0; rc == HR_OK && i < n; i++)
        total += hr_batch_result(b, i)->n_entries;
    cand *c = hr_arena_alloc(a, (total ? total : 1) * sizeof *c);
    size_t m = 0;
    for (size_t i = 0; rc == HR_OK && i < n; i++) {
        const hr_result *r = hr_batch_result(b, i);
        for (size_t j = 0; j < r->n_entries; j++)
            if (hr_rk_h8_parse(r->entries[j].member, &c[m].h)) c[m++].est = -r->entries[j].score * weights[i];
    }
    /* Sum each URL's estimates over the buckets, then rank. */
    qsort(c, m, sizeof *c, by_hash);
    size_t u = 0;
    for (size_t i = 0; i < m; i++) {
        if (u > 0 && c[u - 1].h == c[i].h)
            c[u - 1].est += c[i].est;
        else
            c[u++] = c[i];
    }
    qsort(c, u, sizeof *c, by_est_desc);
    *out = c;
    *n_out = u < keep ? u : keep;
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

/* Add the counter reads of n buckets of granularity g for URL h; returns
 * the index of the first. */
static size_t count_ops(hr_trends *t, hr_batch *b, hr_buf *k, uint64_t h, int g, int64_t first, size_t n) {
    size_t op = hr_batch_len(b);
    for (size_t i = 0; i < n; i++) {
        hr_buf_clear(k);
        hr_counter_get(b, hr_rk_count(k, t->ns, h, g, first + (int64_t)i));
    }
    return op;
}

static double weighted_sum(const hr_batch *b, size_t op, const double *weights, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += weights[i] * (double)hr_batch_result(b, op + i)->num;
    return s;
}

static int by_readers_desc(const void *x, const void *y) {
    const hr_trend_item *a = x, *b = y;
    if (a->readers != b->readers) return a->readers > b->readers ? -1 : 1;
    return (a->url_hash > b->url_hash) - (a->url_hash < b->url_hash);
}

static int by_score_desc(const void *x, const void *y) {
    const hr_trend_item *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return by_readers_desc(x, y);
}

static int check_limit(size_t limit, hr_err *err) {
    if (limit < 1 || limit > HR_TRENDS_LIMIT_MAX)
        return hr_err_set(err, HR_EINVAL, "limit must be 1..%d", HR_TRENDS_LIMIT_MAX);
    return HR_OK;
}

/* Candidates per bucket and candidates whose counters are read. */
static size_t per_bucket(size_t limit) {
    return limit + 32 < HR_ZRANGE_LIMIT_MAX ? limit + 32 : HR_ZRANGE_LIMIT_MAX;
}
static size_t exact_cut(size_t limit) {
    return 2 * limit + 16;
}

/* Round trip 2 and the answer: for each candidate the counters of window
 * w (and, for trending, of the day), and its URL. */
static int list(hr_trends *t, hr_window w, bool trending, size_t limit, int64_t now_ms, hr_arena *a,
                hr_trend_item **items, size_t *n, hr_err *err) {
    *items = NULL;
    *n = 0;
    int rc = check_limit(limit, err);
    if (rc != HR_OK) return rc;
    int64_t first, day_first = 0;
    double weights[HR_WINDOW_BUCKETS_MAX], day_weights[HR_WINDOW_BUCKETS_MAX];
    size_t nb = hr_window_buckets(w, now_ms, &first, weights), nd = 0;
    if (trending) nd = hr_window_buckets(HR_WINDOW_1D, now_ms, &day_first, day_weights);
    cand *c = NULL;
    size_t nc = 0;
    rc = candidates(t, (int)w, first, weights, nb, per_bucket(limit), exact_cut(limit), a, &c, &nc, err);
    if (rc != HR_OK || nc == 0) return rc;

    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT;
    size_t *ops = hr_arena_alloc(a, nc * 3 * sizeof *ops);
    for (size_t i = 0; i < nc; i++) {
        ops[3 * i] = count_ops(t, b, &k, c[i].h, (int)w, first, nb);
        ops[3 * i + 1] = trending ? count_ops(t, b, &k, c[i].h, (int)HR_WINDOW_1D, day_first, nd) : 0;
        hr_buf_clear(&k);
        ops[3 * i + 2] = hr_get(b, hr_rk_url(&k, t->ns, c[i].h, "/u"));
    }
    rc = hr_core_exec(t->store, b, 0, trending ? "trending" : "popular", err);
    hr_trend_item *it = hr_arena_alloc(a, nc * sizeof *it);
    size_t m = 0;
    for (size_t i = 0; rc == HR_OK && i < nc; i++) {
        const hr_result *u = hr_batch_result(b, ops[3 * i + 2]);
        if (u->rc != HR_OK) continue; /* its URL expired */
        hr_trend_item x = {.url_hash = c[i].h, .url = hr_arena_copy(a, u->value)};
        x.readers = weighted_sum(b, ops[3 * i], weights, nb);
        if (trending) {
            x.score =
                hr_trends_score(x.readers, weighted_sum(b, ops[3 * i + 1], day_weights, nd), &x.baseline);
            if (x.score <= 0 || x.readers < HR_TRENDING_MIN_READERS) continue;
        } else if (llround(x.readers) == 0) {
            continue;
        }
        it[m++] = x;
    }
    qsort(it, m, sizeof *it, trending ? by_score_desc : by_readers_desc);
    *items = it;
    *n = m < limit ? m : limit;
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

int hr_trends_popular(hr_trends *t, hr_window w, size_t limit, int64_t now_ms, hr_arena *a,
                      hr_trend_item **items, size_t *n, hr_err *err) {
    return list(t, w, false, limit, now_ms, a, items, n, err);
}

int hr_trends_trending(hr_trends *t, size_t limit, int64_t now_ms, hr_arena *a, hr_trend_item **items,
                       size_t *n, hr_err *err) {
    return list(t, HR_WINDOW_1H, true, limit, now_ms, a, items, n, err);
}
