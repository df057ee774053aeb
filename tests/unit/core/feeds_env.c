/* feeds_env.c — see feeds_env.h. */
#include "feeds_env.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"

int64_t T0;

/* e's namespace, graph and feeds, new (the old ones freed). */
void env_renew(env *e) {
    hr_feeds_free(e->feeds);
    hr_graph_free(e->graph);
    test_unique(e->ns, sizeof e->ns - 1, "t");
    strcat(e->ns, "/");
    e->graph = hr_graph_new(e->t.store, e->ns);
    /* First pages kept in memory (feeds_memo.c) where the store allows (the
     * memos' share of its memory): so every check that reads a timeline
     * again after a change checks that the change reached the kept page. */
    hr_feeds_options o = {.ns = e->ns,
                          .fanout_threshold = e->threshold,
                          .timeline_ttl_ms = 60LL * 86400000,
                          .timeline_max = e->timeline_max};
    e->feeds = hr_feeds_new(e->t.store, e->graph, &o);
}

static void run(const char *kind, env_check check, int64_t threshold, size_t timeline_max) {
    env e;
    memset(&e, 0, sizeof e);
    test_store_open(&e.t, kind);
    e.threshold = threshold;
    e.timeline_max = timeline_max;
    env_renew(&e);
    e.fo = (hr_fanout_options){.workers = 0, .lease_ms = 30000, .batch = 10};
    /* Gathered adds (fanout.c "Bulk"), written once 15 are gathered (the
     * second page of 10 of a job) or at the end of a drain: mid-job writes
     * and checkpoints, a page gathered and not yet written, and jobs whose
     * acks wait for the adds of later jobs. */
    if (strcmp(kind, "rocksdb-files") == 0) e.fo.bulk = 15;
    T0 = hr_now_ms() - 3600000;
    e.now = T0 + 3600000;
    check(&e);
    hr_feeds_free(e.feeds);
    hr_graph_free(e.graph);
    hr_arena_free(&e.a);
    test_store_close(&e.t);
}

void run_default(const char *kind, env_check check) {
    run(kind, check, 10000, 1000);
}
void run_big(const char *kind, env_check check) {
    run(kind, check, 2, 1000);
}
void run_max5(const char *kind, env_check check) {
    run(kind, check, 10000, 5);
}

void follow(env *e, const char *a, const char *b) {
    hr_err err = {0};
    cr_assert_eq(hr_feeds_relate(e->feeds, hr_slice_str(a), false, hr_slice_str(b), true, e->now, NULL, &err),
                 HR_OK, "%s", err.msg);
}

void unfollow(env *e, const char *a, const char *b) {
    hr_err err = {0};
    cr_assert_eq(
        hr_feeds_relate(e->feeds, hr_slice_str(a), false, hr_slice_str(b), false, e->now, NULL, &err), HR_OK,
        "%s", err.msg);
}

hr_activity post(env *e, const char *actor, const char *target, int64_t time) {
    hr_activity in = {.actor = hr_slice_str(actor), .verb = hr_slice_str("post"), .time_ms = time};
    if (target) in.target = hr_slice_str(target);
    hr_activity out;
    bool dup;
    hr_err err = {0};
    cr_assert_eq(hr_feeds_create(e->feeds, &in, e->now, &e->a, &out, &dup, &err), HR_OK, "%s", err.msg);
    cr_assert(!dup);
    return out;
}

size_t drain(env *e) {
    size_t total = 0, done;
    hr_err err = {0};
    for (int i = 0; i < 1000; i++) {
        cr_assert_eq(hr_fanout_run(e->feeds, &e->fo, "unit", 100, &done, &err), HR_OK, "%s", err.msg);
        if (done == 0) break;
        total += done;
    }
    return total;
}

const char *read_ids(env *e, hr_feed_kind kind, const char *who, size_t limit) {
    hr_feed_req req = {.limit = limit, .before_ms = INT64_MAX, .after_ms = INT64_MIN};
    if (kind == HR_FEED_TIMELINE) req.reader = hr_slice_str(who); /* as the API reads it */
    hr_feed_page page;
    hr_err err = {0};
    cr_assert_eq(hr_feeds_read(e->feeds, kind, hr_slice_str(who), &req, e->now, &e->a, &page, &err), HR_OK,
                 "%s", err.msg);
    static char buf[8192];
    buf[0] = 0;
    for (size_t i = 0; i < page.n; i++) {
        if (i) strcat(buf, ",");
        strcat(buf, page.items[i].id);
    }
    return buf;
}

int64_t depth(env *e) {
    int64_t d, oldest;
    hr_err err = {0};
    cr_assert_eq(hr_fanout_queue_info(e->feeds, &d, &oldest, &err), HR_OK, "%s", err.msg);
    return d;
}
