/* feeds_env.h — the world the feeds' unit tests run in: a graph and feeds
 * over a fresh store of either kind, a clock, and the steps a user takes
 * (follow, post, read), with the fan-out queue worked synchronously
 * (drain), so that every step is deterministic. Used by test_feeds.c and
 * test_feed_pages.c. */
#ifndef HR_TEST_FEEDS_ENV_H
#define HR_TEST_FEEDS_ENV_H

#include <criterion/criterion.h>
#include <stdint.h>

#include "common/arena.h"
#include "core/activity.h"
#include "core/fanout.h"
#include "core/feeds.h"
#include "core/graph.h"
#include "support.h"

/* Activity times near the real clock: timeline entries expire timeline_ttl
 * after the activity's time by the wall clock (and Redis expires keys by
 * it), so a test dated in the past would see its entries expire. T0 is an
 * hour before the test began; e->now starts at T0 + 1 h. */
extern int64_t T0;
#define ID_TIME 1700000000000LL

typedef struct env {
    test_store t;
    char ns[40];
    hr_graph *graph;
    hr_feeds *feeds;
    hr_fanout_options fo;
    hr_arena a;
    int64_t now;
    int64_t threshold;   /* the feeds' fanout_threshold */
    size_t timeline_max; /* and timeline_max */
} env;

typedef void (*env_check)(env *e);

/* Open a store of `kind` (support.h), build the env over it and run check:
 * with the default fan-out threshold and timeline_max, with a threshold of
 * 2 (anyone with 3 followers is a big account), or with timelines of 5. */
void run_default(const char *kind, env_check check);
void run_big(const char *kind, env_check check);
void run_max5(const char *kind, env_check check);
/* A world anew over the same store: a new namespace, graph and feeds. */
void env_renew(env *e);

/* A feeds check on both stores (BOTH_STORES, suites feeds_rocksdb and
 * feeds_redis), and on RocksDB with the fan-out's adds gathered into table
 * files (e.fo.bulk, suite feeds_rocksdb_files). */
#define FEEDS_TEST(runner, check)                                                                            \
    BOTH_STORES(feeds, runner, check)                                                                        \
    Test(feeds_rocksdb_files, check) {                                                                       \
        runner("rocksdb-files", check);                                                                      \
    }

/* a follows b (the relation job is queued: drain runs it). */
void follow(env *e, const char *a, const char *b);
void unfollow(env *e, const char *a, const char *b);
/* A post by actor (target: "group:G" or NULL) at time; fails the test if
 * it is refused or a duplicate. */
hr_activity post(env *e, const char *actor, const char *target, int64_t time);
/* Work the queue until it is empty; returns the jobs run. */
size_t drain(env *e);
/* The ids of who's first page of `limit` as one string "id,id,..." (a
 * static buffer: valid until the next call). */
const char *read_ids(env *e, hr_feed_kind kind, const char *who, size_t limit);
/* The fan-out queue's depth. */
int64_t depth(env *e);

#endif
