/* reading_env.h — the world the unit tests of core/reading run in
 * (test_reading.c, test_reading_friends.c): a graph and social reading over
 * a fresh store of either kind, in a namespace of the test's own, costs that
 * force each side of friends-reads, and the steps a user takes (befriend,
 * share, read, ask). Everything here is static inline: each test file gets
 * its own copy of what it uses. */
#ifndef HR_TEST_READING_ENV_H
#define HR_TEST_READING_ENV_H

#include <criterion/criterion.h>
#include <string.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "core/graph.h"
#include "core/reading.h"
#include "core/reading_plan.h"
#include "support.h"

#define MINUTE 60000LL
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)

typedef struct env {
    test_store t;
    char ns[40];
    hr_graph *graph;
    hr_reading *reading;
    hr_arena a;
    int64_t ttl;
} env;

typedef void (*env_check)(env *e);

/* Costs that force one side for every URL not answered in round trip 1. */
static const hr_rplan_costs FORCE_LISTS = {.entry = 0,
                                           .probe = 1,
                                           .friend_test = 1,
                                           .friend_extra = 1,
                                           .set_test = 1,
                                           .set_chunk = 1,
                                           .set_member = 1};
static const hr_rplan_costs FORCE_PROBES = {.entry = 1e9,
                                            .probe = 0,
                                            .friend_test = 1,
                                            .friend_extra = 1,
                                            .set_test = 1,
                                            .set_chunk = 1,
                                            .set_member = 1};
static const hr_rplan_costs FORCE_SETS = {.entry = 1e9,
                                          .probe = 1e9,
                                          .friend_test = 1e9,
                                          .friend_extra = 1e9,
                                          .set_test = 0,
                                          .set_chunk = 0,
                                          .set_member = 0};
static const hr_rplan_costs FORCE_TESTS = {.entry = 1e9,
                                           .probe = 1e9,
                                           .friend_test = 0,
                                           .friend_extra = 0,
                                           .set_test = 1e9,
                                           .set_chunk = 1e9,
                                           .set_member = 1e9};

/* split: HR_READING_SPLIT_TESTS's stand-in (0: the default; 1: every
 * friends-reads with two URL-set tests or more splits them, whatever the
 * machine's cores) */
static inline void open_reading_split(env *e, int64_t ttl, const hr_rplan_costs *costs, size_t split,
                                      bool no_wait) {
    hr_reading_free(e->reading);
    hr_reading_options o = {.ns = e->ns,
                            .ttl_ms = ttl,
                            .costs = costs,
                            .split_tests = split,
                            .cpus = split == 1 ? 64 : 0,
                            .split_no_wait = no_wait};
    e->reading = hr_reading_new(e->t.store, e->graph, &o);
    e->ttl = ttl;
}

static inline void open_reading(env *e, int64_t ttl, const hr_rplan_costs *costs) {
    open_reading_split(e, ttl, costs, 0, false);
}

static inline void run(const char *kind, env_check check) {
    env e;
    memset(&e, 0, sizeof e);
    test_store_open(&e.t, kind);
    test_unique(e.ns, sizeof e.ns - 1, "t");
    strcat(e.ns, "/");
    e.graph = hr_graph_new(e.t.store, e.ns);
    open_reading(&e, 30 * DAY, NULL);
    check(&e);
    hr_reading_free(e.reading);
    hr_graph_free(e.graph);
    hr_arena_free(&e.a);
    test_store_close(&e.t);
}

static inline void befriend(env *e, const char *x, const char *y) {
    hr_err err = {0};
    for (int i = 0; i < 2; i++) {
        hr_batch *b = hr_batch_new();
        cr_assert_eq(hr_graph_follow(e->graph, b, hr_slice_str(i ? y : x), hr_slice_str(i ? x : y),
                                     hr_now_ms(), NULL, &err),
                     HR_OK, "%s", err.msg);
        hr_batch_free(b);
    }
}

static inline void site(env *e, const char *domain) {
    hr_slice s;
    bool was_new;
    hr_err err = {0};
    cr_assert_eq(
        hr_reading_site_add(e->reading, hr_slice_str(domain), hr_now_ms(), &e->a, &s, &was_new, &err), HR_OK,
        "%s", err.msg);
}

static inline void share(env *e, const char *uid, bool on) {
    hr_err err = {0};
    cr_assert_eq(hr_reading_set_share(e->reading, hr_slice_str(uid), on, hr_now_ms(), &err), HR_OK, "%s",
                 err.msg);
}

static inline hr_read_outcome record_at(env *e, const char *uid, const char *url, int64_t t) {
    hr_read_outcome o;
    hr_err err = {0};
    cr_assert_eq(
        hr_reading_record(e->reading, hr_slice_str(uid), hr_slice_str(url), t, hr_now_ms(), &o, &err), HR_OK,
        "record %s %s: %s", uid, url, err.msg);
    return o;
}

static inline void read_ok(env *e, const char *uid, const char *url) {
    cr_assert_eq(record_at(e, uid, url, hr_now_ms()), HR_READ_RECORDED, "%s read %s", uid, url);
}

/* Each of readers[0..n) shares and reads url. */
static inline void all_read(env *e, const char *const *readers, size_t n, const char *url) {
    for (size_t i = 0; i < n; i++) {
        share(e, readers[i], true);
        read_ok(e, readers[i], url);
    }
}

/* friends-reads for n URLs; the answers into out (in e->a). */
static inline hr_reads_stats ask(env *e, const char *uid, const hr_slice *friends, size_t nf,
                                 const char *const *urls, size_t n, hr_url_reads *out) {
    hr_slice *u = hr_arena_alloc(&e->a, n * sizeof *u);
    for (size_t i = 0; i < n; i++)
        u[i] = hr_slice_str(urls[i]);
    hr_reads_stats st;
    hr_err err = {0};
    cr_assert_eq(hr_reading_friends_reads(e->reading, hr_slice_str(uid), friends, nf, u, n, hr_now_ms(),
                                          &e->a, out, &st, &err),
                 HR_OK, "%s", err.msg);
    return st;
}

/* "a,b" the friends of an answer, joined, for messages and comparisons. */
static inline const char *joined(env *e, const hr_url_reads *r) {
    hr_buf b = HR_BUF_INIT;
    for (size_t i = 0; i < r->n_friends; i++) {
        if (i) hr_buf_append_byte(&b, ',');
        hr_buf_append_slice(&b, r->friends[i]);
    }
    hr_slice s = hr_arena_copy(&e->a, hr_buf_slice(&b));
    hr_buf_free(&b);
    return s.ptr;
}

#endif
