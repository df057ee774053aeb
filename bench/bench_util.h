/* bench_util.h — small helpers for the in-process benchmark programs
 * (bench/reading_load.c, bench/stories_load.c): a seeded random generator,
 * Zipf draws, latency percentiles and a progress line. Header-only: a
 * loader links nothing of the benches' own but its files. */
#ifndef HR_BENCH_UTIL_H
#define HR_BENCH_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"

/* Seconds on the monotonic clock. */
static inline double bu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64: a 64-bit state, one add and three xor-multiply steps per draw.
 * Statistically sound for workload generation, and trivially seekable: a
 * generator per user seeded with (seed, user) replays the same draws. */
typedef struct bu_rng {
    uint64_t s;
} bu_rng;

static inline uint64_t bu_next(bu_rng *r) {
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline bu_rng bu_rng_for(uint64_t seed, uint64_t stream) {
    bu_rng r = {seed * UINT64_C(0x2545F4914F6CDD1D) ^ (stream + 1) * UINT64_C(0x9E3779B97F4A7C15)};
    bu_next(&r);
    return r;
}

/* Uniform in [0, 1). */
static inline double bu_unit(bu_rng *r) {
    return (double)(bu_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n >= 1. */
static inline uint64_t bu_below(bu_rng *r, uint64_t n) {
    return (uint64_t)(bu_unit(r) * (double)n) % n;
}

/* Pareto with scale xm and shape alpha: xm / U^(1/alpha). */
static inline double bu_pareto(bu_rng *r, double xm, double alpha) {
    return xm / pow(1.0 - bu_unit(r), 1.0 / alpha);
}

/* Zipf over ranks 0..n-1 with exponent s: P(k) ~ 1 / (k + 1)^s, drawn by
 * binary search in the cumulative table. */
typedef struct bu_zipf {
    double *cdf;
    size_t n;
} bu_zipf;

static inline void bu_zipf_init(bu_zipf *z, size_t n, double s) {
    z->n = n;
    z->cdf = malloc(n * sizeof *z->cdf);
    double sum = 0;
    for (size_t k = 0; k < n; k++)
        z->cdf[k] = (sum += pow((double)(k + 1), -s));
    for (size_t k = 0; k < n; k++)
        z->cdf[k] /= sum;
}

static inline size_t bu_zipf_draw(const bu_zipf *z, bu_rng *r) {
    double u = bu_unit(r);
    size_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline void bu_zipf_free(bu_zipf *z) {
    free(z->cdf);
}

/* Latency samples in seconds; percentiles by nearest rank. */
typedef struct bu_lat {
    double *v;
    size_t n, cap;
} bu_lat;

static inline void bu_lat_add(bu_lat *l, double secs) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = secs;
}

static inline int bu_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile (0..100) in milliseconds; sorts the samples. */
static inline double bu_lat_ms(bu_lat *l, double p) {
    if (l->n == 0) return 0;
    qsort(l->v, l->n, sizeof *l->v, bu_cmp_double);
    size_t i = (size_t)ceil(p / 100.0 * (double)l->n);
    return 1000.0 * l->v[i ? i - 1 : 0];
}

static inline void bu_lat_free(bu_lat *l) {
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* "name: done/total (pct), rate/s, ETA" on stderr, at most every 5 s. */
static inline void bu_progress(const char *tool, const char *name, size_t done, size_t total, double t0,
                               double *last) {
    double t = bu_now();
    if (t - *last < 5 && done < total) return;
    *last = t;
    double rate = (double)done / (t - t0 > 1e-9 ? t - t0 : 1e-9);
    fprintf(stderr, "%s: %s: %zu/%zu (%.1f%%), %.0f/s, ETA %.0f s\n", tool, name, done, total,
            total ? 100.0 * (double)done / (double)total : 100.0, rate,
            rate > 0 ? (double)(total - done) / rate : 0.0);
}

#endif
