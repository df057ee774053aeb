/* load.h — `herald load`: a synthetic social dataset built through the core,
 * for benchmarks and for a demo (`make run` loads a small one).
 *
 * Users are u0..u{N-1}. Each follows d others, d drawn from a Pareto
 * distribution (shape 2, mean 450, at most 5,000): most follow a few hundred,
 * a few follow thousands. Whom they follow: with probability `popular` a
 * user drawn by Zipf's law over the users (u0 the most popular), else one
 * drawn uniformly, so followers are power-law too and a few accounts pass
 * fanout_threshold (the hybrid's big accounts). Groups g0..g{N/100-1} have
 * members drawn by Zipf's law. Each user posts about `activities` activities
 * (greeting, post, photo_tag, rsvp, new_discussion), at times spread over
 * the last 60 days, a fifth of them into one of the user's groups.
 *
 * Everything goes through core/graph (bulk follows) and core/feeds (each
 * activity is created as a request would), then the fan-out queue is
 * drained by `threads` threads: the time it takes is the fan-out throughput
 * the benchmark reports. */
#ifndef HR_LOAD_H
#define HR_LOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "core/fanout.h"
#include "core/feeds.h"
#include "core/graph.h"

typedef struct hr_load_options {
    uint64_t users;       /* >= 2 */
    double follows_mean;  /* 450 */
    uint64_t follows_max; /* 5000 */
    double popular;       /* share of follows drawn by popularity (0.1) */
    double activities;    /* per user, on average (1) */
    unsigned threads;     /* >= 1 */
    uint64_t seed;
    bool progress; /* draw a progress bar on `out` (a terminal) */
    /* Benchmarks that fan one dataset out several ways: no_fanout builds
     * it and leaves its fan-out jobs queued (copy the store then);
     * fanout_only builds nothing and drains the jobs a store holds. */
    bool no_fanout, fanout_only;
    FILE *out; /* progress and the summary */
} hr_load_options;

typedef struct hr_load_stats {
    uint64_t users, follows, groups, memberships, activities;
    uint64_t big_accounts;   /* actors past fanout_threshold */
    uint64_t fanout_entries; /* timeline entries written by the drain */
    double graph_s, activities_s, fanout_s;
    double settle_s; /* waited for the graph's compactions before the fan-out */
} hr_load_stats;

/* Wait, up to an hour, for the store's flushes and compactions (RocksDB;
 * Redis has none: 0 at once), after saying "herald load: waiting for
 * <what>" on out (if any). Returns the seconds waited; *settled is false
 * if it gave up. */
double hr_load_settle(hr_store *store, FILE *out, const char *what, bool *settled);

/* Build the dataset; fanout options give the drain's batch size. */
int hr_load_run(hr_store *store, hr_graph *graph, hr_feeds *feeds, const hr_fanout_options *fo,
                const hr_load_options *o, hr_load_stats *stats, hr_err *err);

#endif
