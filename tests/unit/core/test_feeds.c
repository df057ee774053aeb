/* Unit tests of core/graph, core/activity, core/feeds and core/fanout over a
 * real store, on both backends, with no HTTP: the fan-out queue is worked
 * synchronously with hr_fanout_run, so every step is deterministic. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/clock.h"
#include "core/activity.h"
#include "core/fanout.h"
#include "core/feeds.h"
#include "core/feeds_internal.h"
#include "core/graph.h"
#include "fault_store.h"
#include "feeds_env.h"

/* ---- pure: encodings ---- */

Test(activity, encode_decode_round_trip) {
    hr_activity a = {.time_ms = ID_TIME,
                     .actor = hr_slice_str("u1"),
                     .verb = hr_slice_str("rsvp"),
                     .object = hr_slice_str("event:1"),
                     .target = hr_slice_str("group:g1"),
                     .foreign_id = hr_slice_str("f9"),
                     .data = hr_slice_str("{\"x\":1}"),
                     .fanned_members = true};
    hr_activity_new_id(a.time_ms, a.id);
    cr_assert(hr_activity_id_valid(hr_slice_str(a.id)));
    cr_assert_eq(strncmp(a.id, "018bcfe56800", 12), 0, "the id starts with the time in hex: %s", a.id);
    hr_buf v = HR_BUF_INIT;
    hr_activity_encode(&a, true, &v);
    hr_arena ar = HR_ARENA_INIT;
    hr_activity b;
    bool tomb;
    hr_err err = {0};
    cr_assert_eq(hr_activity_decode(hr_slice_str(a.id), hr_buf_slice(&v), &ar, &b, &tomb, &err), HR_OK);
    cr_assert(tomb);
    cr_assert_str_eq(b.id, a.id);
    cr_assert_eq(b.time_ms, ID_TIME);
    cr_assert(hr_slice_eq(b.target, a.target) && hr_slice_eq(b.data, a.data) &&
              hr_slice_eq(b.foreign_id, a.foreign_id));
    cr_assert(b.fanned_members && !b.fanned_followers);
    cr_assert(hr_slice_eq(hr_activity_group(&b), hr_slice_str("g1")));
    /* every truncation is refused, never read past */
    for (size_t n = 0; n < 10 + 3; n++)
        cr_assert_eq(hr_activity_decode(hr_slice_str(a.id), hr_slice_of(v.data, n), &ar, &b, &tomb, &err),
                     HR_EINTERNAL, "length %zu", n);
    hr_buf_free(&v);
    hr_arena_free(&ar);
}

Test(activity, id_holds_its_time) {
    const int64_t times[] = {0, 1, ID_TIME, 0xfffffffffffLL};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        char id[HR_ACTIVITY_ID_LEN + 1];
        hr_activity_new_id(times[i], id);
        cr_assert(hr_activity_id_valid(hr_slice_str(id)));
        cr_assert_eq(hr_activity_id_time(hr_slice_str(id)), times[i], "%s", id);
    }
}

Test(activity, check_names_the_field) {
    hr_activity a = {.actor = hr_slice_str("u1"), .verb = hr_slice_str("bad verb"), .time_ms = 1};
    hr_err err = {0};
    cr_assert_eq(hr_activity_check(&a, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "verb"), "%s", err.msg);
    a.verb = hr_slice_str("ok");
    a.time_ms = -1;
    cr_assert_eq(hr_activity_check(&a, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "time"), "%s", err.msg);
    hr_activity g = {.target = hr_slice_str("group:")};
    cr_assert_eq(hr_activity_group(&g).len, 0);
}

/* ---- graph ---- */

static void check_friends_follow_mutual(env *e) {
    follow(e, "a", "b");
    follow(e, "a", "c");
    follow(e, "b", "a");
    hr_slice *ids;
    size_t n;
    hr_err err = {0};
    cr_assert_eq(hr_graph_all(e->graph, HR_GRAPH_FRIENDS, hr_slice_str("a"), 100, &e->a, &ids, &n, &err),
                 HR_OK);
    cr_assert_eq(n, 1);
    cr_assert(hr_slice_eq(ids[0], hr_slice_str("b")));
    int64_t count;
    cr_assert_eq(hr_graph_count(e->graph, HR_GRAPH_FOLLOWS, hr_slice_str("a"), &count, &err), HR_OK);
    cr_assert_eq(count, 2);
    unfollow(e, "a", "b");
    cr_assert_eq(hr_graph_all(e->graph, HR_GRAPH_FRIENDS, hr_slice_str("b"), 100, &e->a, &ids, &n, &err),
                 HR_OK);
    cr_assert_eq(n, 0);
    hr_batch *bt = hr_batch_new();
    cr_assert_eq(hr_graph_follow(e->graph, bt, hr_slice_str("a"), hr_slice_str("a"), e->now, NULL, &err),
                 HR_EINVAL);
    hr_batch_free(bt);
}
FEEDS_TEST(run_default, check_friends_follow_mutual)

/* ---- fan-out ---- */

static void check_fanout_reaches_followers_and_members(env *e) {
    follow(e, "f1", "star");
    follow(e, "f2", "star");
    hr_err err = {0};
    hr_batch *bt = hr_batch_new();
    cr_assert_eq(hr_graph_join(e->graph, bt, hr_slice_str("g"), hr_slice_str("m1"), e->now, NULL, &err),
                 HR_OK);
    hr_batch_free(bt);
    drain(e);
    cr_assert_eq(depth(e), 0);
    uint64_t before = hr_fanout_entries_total();
    hr_activity x = post(e, "star", "group:g", T0);
    cr_assert_eq(depth(e), 1, "the create pushed one job");
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f1", 10), "", "nothing before the job runs");
    cr_assert_str_eq(read_ids(e, HR_FEED_USER, "star", 10), x.id, "the own feed is written at once");
    cr_assert_str_eq(read_ids(e, HR_FEED_GROUP, "g", 10), x.id);
    cr_assert_eq(drain(e), 1);
    cr_assert_eq(hr_fanout_entries_total() - before, 3);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f1", 10), x.id);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f2", 10), x.id);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "m1", 10), x.id);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "star", 10), "");
}
FEEDS_TEST(run_default, check_fanout_reaches_followers_and_members)

static void check_fanout_resumes_from_its_checkpoint(env *e) {
    char name[32];
    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof name, "fan%02d", i);
        follow(e, name, "star");
    }
    drain(e);
    hr_activity x = post(e, "star", NULL, T0);
    /* A worker "dies" after one batch of 10: no ack, the lease must run out. */
    e->fo.max_batches = 1;
    e->fo.lease_ms = 100;
    uint64_t before = hr_fanout_entries_total();
    size_t done;
    hr_err err = {0};
    cr_assert_eq(hr_fanout_run(e->feeds, &e->fo, "dying", 1, &done, &err), HR_EINTERNAL);
    cr_assert_eq(done, 0);
    /* Page by page, the first page is written and checkpointed; gathering
     * 15, it was only gathered: lost with the worker, no checkpoint. */
    int first = e->fo.bulk ? 0 : 10;
    cr_assert_eq(hr_fanout_entries_total() - before, first);
    int reached = 0;
    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof name, "fan%02d", i);
        reached += strcmp(read_ids(e, HR_FEED_TIMELINE, name, 10), x.id) == 0;
    }
    cr_assert_eq(reached, first);
    /* leased: nobody else gets it until the lease runs out */
    e->fo.max_batches = 0;
    cr_assert_eq(hr_fanout_run(e->feeds, &e->fo, "other", 1, &done, &err), HR_OK);
    cr_assert_eq(done, 0);
    usleep(250 * 1000);
    cr_assert_eq(drain(e), 1);
    cr_assert_eq(hr_fanout_entries_total() - before, 25, "resumed: what was written was not written again");
    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof name, "fan%02d", i);
        cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, name, 10), x.id, "%s", name);
    }
    cr_assert_eq(depth(e), 0);
}
FEEDS_TEST(run_default, check_fanout_resumes_from_its_checkpoint)

/* A worker dies (max_batches) in its second job, after finishing the
 * first. Page by page, the first job was written and acked; gathering, its
 * ack waited for its adds, so both jobs run again and nothing is lost. */
static void check_no_job_is_acked_before_its_adds(env *e) {
    char name[32];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "few%d", i);
        follow(e, name, "small");
    }
    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof name, "many%02d", i);
        follow(e, name, "big");
    }
    drain(e);
    hr_activity a = post(e, "small", NULL, T0);
    hr_activity b = post(e, "big", NULL, T0 + 1);
    e->fo.max_batches = 1; /* a job's first page that is not its last: the big one's */
    e->fo.lease_ms = 100;
    size_t done;
    hr_err err = {0};
    cr_assert_eq(hr_fanout_run(e->feeds, &e->fo, "dying", 2, &done, &err), HR_EINTERNAL);
    cr_assert_eq(done, e->fo.bulk ? 0 : 1, "acked: the small job page by page, none gathering");
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "few0", 10), e->fo.bulk ? "" : a.id);
    usleep(250 * 1000);
    e->fo.max_batches = 0;
    cr_assert_eq(drain(e), e->fo.bulk ? 2 : 1);
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "few%d", i);
        cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, name, 10), a.id, "%s", name);
    }
    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof name, "many%02d", i);
        cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, name, 10), b.id, "%s", name);
    }
    cr_assert_eq(depth(e), 0);
}
FEEDS_TEST(run_default, check_no_job_is_acked_before_its_adds)

static void check_delete_hides_then_cleans_up(env *e) {
    follow(e, "f1", "star");
    drain(e);
    hr_activity keep = post(e, "star", NULL, T0);
    hr_activity gone = post(e, "star", NULL, T0 + 1);
    drain(e);
    hr_err err = {0};
    cr_assert_eq(hr_feeds_delete(e->feeds, hr_slice_str(gone.id), e->now, &err), HR_OK, "%s", err.msg);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f1", 10), keep.id, "hidden at once");
    hr_activity got;
    cr_assert_eq(hr_feeds_get(e->feeds, hr_slice_str(gone.id), &e->a, &got, &err), HR_ENOTFOUND);
    cr_assert_eq(drain(e), 1);
    /* the entry itself is gone: a raw range read of the timeline holds one */
    hr_buf k = HR_BUF_INIT;
    char key[96];
    snprintf(key, sizeof key, "{%su/f1}/tl", e->ns);
    hr_batch *b = hr_batch_new();
    hr_tlrange_spec spec = hr_tlrange_all(10, e->now);
    size_t op = hr_tlrange(b, hr_slice_str(key), &spec);
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, &err), HR_OK);
    cr_assert_eq(hr_batch_result(b, op)->n_entries, 1);
    hr_batch_free(b);
    hr_buf_free(&k);
}
FEEDS_TEST(run_default, check_delete_hides_then_cleans_up)

static void check_backfill_and_unlink(env *e) {
    hr_activity x1 = post(e, "star", NULL, T0);
    hr_activity x2 = post(e, "star", NULL, T0 + 1);
    drain(e);
    follow(e, "me", "star");
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "me", 10), "");
    drain(e);
    char want[64];
    snprintf(want, sizeof want, "%s,%s", x2.id, x1.id);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "me", 10), want);
    unfollow(e, "me", "star");
    drain(e);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "me", 10), "");
}
FEEDS_TEST(run_default, check_backfill_and_unlink)

static void unfollow_star(void *arg) {
    unfollow(arg, "me", "star");
}

/* An unfollow that another server takes while a drain holds the adds of
 * the account's post gathered (the drain read "me" among the followers
 * first): the drain claims the unfollow's job next, and must write the
 * adds before it runs it, or the post would land in the timeline after the
 * unfollow removed what was there. */
static void check_unfollow_during_a_gathered_post(env *e) {
    follow(e, "me", "star");
    drain(e);
    post(e, "star", NULL, T0);
    /* The drain's batches: 0 the claim, 1 the checkpoint, 2 the body, 3 the
     * followers; then 4 is the next claim (gathering) or the page's write. */
    hr_store *split = fault_store_split(e->t.store, 4, "no key has this", unfollow_star, e);
    hr_graph *graph = hr_graph_new(split, e->ns);
    hr_feeds_options o = {
        .ns = e->ns, .fanout_threshold = 10000, .timeline_ttl_ms = 60LL * 86400000, .timeline_max = 1000};
    hr_feeds *feeds = hr_feeds_new(split, graph, &o);
    size_t done;
    hr_err err = {0};
    cr_assert_eq(hr_fanout_run(feeds, &e->fo, "unit", 1, &done, &err), HR_OK, "%s", err.msg);
    cr_assert(fault_store_hit(split), "the unfollow came in the middle of the drain");
    hr_feeds_free(feeds);
    hr_graph_free(graph);
    hr_store_close(split);
    drain(e);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "me", 10), "");
}
FEEDS_TEST(run_default, check_unfollow_during_a_gathered_post)

static void check_big_accounts_merge_at_read(env *e) {
    follow(e, "f1", "star");
    follow(e, "f2", "star");
    follow(e, "f3", "star");
    drain(e);
    uint64_t before = hr_fanout_entries_total();
    hr_activity x1 = post(e, "star", NULL, T0); /* 3 followers > 2: star becomes big */
    cr_assert(!x1.fanned_followers);
    drain(e);
    hr_activity x2 = post(e, "star", NULL, T0 + 5);
    cr_assert_eq(hr_fanout_entries_total() - before, 0, "no timeline entry for a big account");
    char want[64];
    snprintf(want, sizeof want, "%s,%s", x2.id, x1.id);
    uint64_t batches = test_batches_total();
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f1", 10), want, "merged at read time, at once");
    cr_assert_eq(test_batches_total() - batches, 3,
                 "a reader of a big account: timeline + big-account set, the big feeds, the bodies");
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f3", 1), x2.id);
    /* A reader who follows no big account: the timeline with the (empty)
     * big-account set in one batch, then the bodies. */
    follow(e, "f4", "f1");
    drain(e);
    hr_activity x3 = post(e, "f1", NULL, T0 + 9);
    drain(e);
    batches = test_batches_total();
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f4", 10), x3.id);
    cr_assert_eq(test_batches_total() - batches, 2, "two round trips for a page");
}
FEEDS_TEST(run_big, check_big_accounts_merge_at_read)

/* ---- home first pages kept in memory (feeds_memo.c) ---- */

/* The store batches one read of who's first page of `limit` costs; the
 * page must be want (ids as read_ids gives them). */
static uint64_t page_batches(env *e, const char *who, size_t limit, const char *want) {
    uint64_t before = test_batches_total();
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, who, limit), want);
    return test_batches_total() - before;
}

/* who's home timeline page for req (its first page of limit, offset
 * `offset`), read at e->now. */
static hr_feed_page timeline_page(env *e, const char *who, size_t limit, size_t offset) {
    hr_feed_req req = {.limit = limit,
                       .offset = offset,
                       .before_ms = INT64_MAX,
                       .after_ms = INT64_MIN,
                       .reader = hr_slice_str(who)};
    hr_feed_page page;
    hr_err err = {0};
    cr_assert_eq(
        hr_feeds_read(e->feeds, HR_FEED_TIMELINE, hr_slice_str(who), &req, e->now, &e->a, &page, &err), HR_OK,
        "%s", err.msg);
    return page;
}

static const char *ids2(const hr_activity *x, const hr_activity *y) {
    static char buf[64];
    snprintf(buf, sizeof buf, "%s,%s", x->id, y->id);
    return buf;
}

/* Kept on RocksDB, read again only after a write of a key the page was read
 * from: a fan-out, an update, a delete, an unfollow; and past the expiry of
 * the oldest entry it read. On Redis Cluster (other servers write) every
 * read reads the store. */
static void check_first_pages_are_kept_until_what_they_show_changes(env *e) {
    bool kept = !hr_store_caps_of(e->t.store)->shared;
    cr_assert_eq(e->feeds->pages != NULL, kept);
    follow(e, "me", "star");
    follow(e, "other", "star");
    drain(e);
    hr_activity x = post(e, "star", NULL, T0);
    drain(e);
    cr_assert_gt(page_batches(e, "me", 10, x.id), 0);
    cr_assert_eq(page_batches(e, "me", 10, x.id) == 0, kept, "the same page again: kept");
    cr_assert_gt(page_batches(e, "me", 5, x.id), 0, "another limit is another page");
    cr_assert_gt(page_batches(e, "other", 10, x.id), 0, "another reader's is another page");
    for (int i = 0; i < 2; i++) {
        uint64_t before = test_batches_total();
        timeline_page(e, "me", 10, 1);
        cr_assert_gt(test_batches_total() - before, 0, "only first pages are kept");
    }

    /* A post fanned out. */
    hr_activity y = post(e, "star", NULL, T0 + 10);
    cr_assert_eq(page_batches(e, "me", 10, x.id) == 0, kept, "not fanned out yet: unchanged");
    drain(e);
    cr_assert_gt(page_batches(e, "me", 10, ids2(&y, &x)), 0, "the fan-out wrote the timeline");
    cr_assert_eq(page_batches(e, "me", 10, ids2(&y, &x)) == 0, kept);

    /* An update: the page shows the new version at once. */
    hr_err err = {0};
    cr_assert_eq(
        hr_feeds_update(e->feeds, hr_slice_str(x.id), NULL, hr_slice_str("{\"v\":2}"), &e->a, &x, &err),
        HR_OK, "%s", err.msg);
    hr_feed_page page = timeline_page(e, "me", 10, 0);
    cr_assert_eq(page.n, 2);
    cr_assert(hr_slice_eq(page.items[1].data, hr_slice_str("{\"v\":2}")), "the update shows");
    cr_assert_null(page.next_cursor);

    /* A delete: gone at once, before its job removes the entries. */
    cr_assert_eq(hr_feeds_delete(e->feeds, hr_slice_str(y.id), e->now, &err), HR_OK, "%s", err.msg);
    cr_assert_gt(page_batches(e, "me", 10, x.id), 0);
    drain(e);
    cr_assert_gt(page_batches(e, "me", 10, x.id), 0, "the job removed the entry");
    cr_assert_eq(page_batches(e, "me", 10, x.id) == 0, kept);

    /* An unfollow, once its job has removed the entries. */
    unfollow(e, "me", "star");
    drain(e);
    cr_assert_gt(page_batches(e, "me", 10, ""), 0);
    cr_assert_gt(page_batches(e, "other", 10, x.id), 0);
    cr_assert_eq(page_batches(e, "other", 10, x.id) == 0, kept, "another reader's page is unchanged");

    /* The oldest entry read expires (timeline_ttl, 60 days after its time). */
    e->now = T0 + 60LL * 86400000 - 1;
    cr_assert_eq(page_batches(e, "other", 10, x.id) == 0, kept, "not expired yet");
    e->now = T0 + 60LL * 86400000;
    cr_assert_gt(page_batches(e, "other", 10, ""), 0, "expired");
}
FEEDS_TEST(run_default, check_first_pages_are_kept_until_what_they_show_changes)

/* A page that shows the entry after its last as a next cursor: kept, and
 * the cursor goes when that entry expires (it is read, one past the page). */
static void check_a_kept_page_knows_its_next_page(env *e) {
    follow(e, "me", "star");
    drain(e);
    hr_activity x = post(e, "star", NULL, T0);
    hr_activity y = post(e, "star", NULL, T0 + 10);
    drain(e);
    hr_feed_page page;
    for (int i = 0; i < 2; i++) {
        page = timeline_page(e, "me", 1, 0);
        cr_assert_eq(page.n, 1);
        cr_assert_str_eq(page.items[0].id, y.id);
        cr_assert_not_null(page.next_cursor, "x is next");
    }
    e->now = T0 + 60LL * 86400000 + 5; /* x expired, y not */
    page = timeline_page(e, "me", 1, 0);
    cr_assert_eq(page.n, 1);
    cr_assert_str_eq(page.items[0].id, y.id);
    cr_assert_null(page.next_cursor, "x expired: no next page");
    (void)x;
}
FEEDS_TEST(run_default, check_a_kept_page_knows_its_next_page)

/* A big account's post is merged at read time, with no fan-out: the kept
 * page of its follower changes at once. */
static void check_a_big_accounts_post_reaches_kept_pages(env *e) {
    follow(e, "f1", "star");
    follow(e, "f2", "star");
    follow(e, "f3", "star");
    drain(e);
    hr_activity x1 = post(e, "star", NULL, T0); /* 3 followers > 2: star becomes big */
    drain(e);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f1", 10), x1.id);
    cr_assert_eq(page_batches(e, "f1", 10, x1.id) == 0, !hr_store_caps_of(e->t.store)->shared);
    hr_activity x2 = post(e, "star", NULL, T0 + 5);
    cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, "f1", 10), ids2(&x2, &x1), "at once, no drain");
}
FEEDS_TEST(run_big, check_a_big_accounts_post_reaches_kept_pages)

static size_t count_feed(env *e, hr_feed_kind kind, const char *who);

/* The times of the entries stored in who's timeline, newest first, as
 * "t t t" counted from T0, whatever timeline_max says (not a page). */
static const char *stored_timeline(env *e, const char *who) {
    hr_buf k = HR_BUF_INIT;
    hr_buf_append_str(&k, "{");
    hr_buf_append_str(&k, e->ns);
    hr_buf_append_str(&k, "u/");
    hr_buf_append_str(&k, who);
    hr_buf_append_str(&k, "}/tl");
    hr_batch *b = hr_batch_new();
    hr_tlrange_spec spec = hr_tlrange_all(100, e->now);
    size_t op = hr_tlrange(b, hr_buf_slice(&k), &spec);
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, &err), HR_OK, "%s", err.msg);
    const hr_result *res = hr_batch_result(b, op);
    static char out[1024];
    out[0] = '\0';
    for (size_t i = 0; i < res->n_entries; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%lld", i ? " " : "",
                 (long long)(res->entries[i].score - (double)T0));
    hr_batch_free(b);
    hr_buf_free(&k);
    return out;
}

/* RocksDB cuts timelines itself (HR_DECL_TL_CAP): neither a post's fan-out
 * nor a follow's backfill writes a trim, and a compaction leaves a timeline
 * its timeline_max (5) newest entries. */
static void check_compaction_cuts_timelines(env *e) {
    for (int i = 0; i < 3; i++)
        post(e, "a", NULL, T0 + i);
    uint64_t trims = test_ops_total(HR_OP_TLTRIM);
    follow(e, "me", "a"); /* backfills 3 */
    drain(e);
    for (int i = 3; i < 12; i++)
        post(e, "a", NULL, T0 + i);
    drain(e);
    cr_assert_eq(test_ops_total(HR_OP_TLTRIM), trims, "no trims written");
    cr_assert_str_eq(stored_timeline(e, "me"), "11 10 9 8 7 6 5 4 3 2 1 0", "uncut until a compaction");
    cr_assert_eq(count_feed(e, HR_FEED_TIMELINE, "me"), 5, "a page never shows more than timeline_max");
    test_store_compact(&e->t);
    cr_assert_str_eq(stored_timeline(e, "me"), "11 10 9 8 7");
    cr_assert_eq(count_feed(e, HR_FEED_TIMELINE, "me"), 5);
    cr_assert_eq(count_feed(e, HR_FEED_USER, "a"), 12, "a user's own feed is not a timeline: not cut");
}
Test(feeds_rocksdb, check_compaction_cuts_timelines) {
    run_max5("rocksdb", check_compaction_cuts_timelines);
}
Test(feeds_rocksdb_files, check_compaction_cuts_timelines) {
    run_max5("rocksdb-files", check_compaction_cuts_timelines);
}

/* ---- Crashes ---- */

/* How many items a page of feed `kind` of `who` has. */
static size_t count_feed(env *e, hr_feed_kind kind, const char *who) {
    const char *ids = read_ids(e, kind, who, 100);
    size_t n = *ids ? 1 : 0;
    for (const char *p = ids; *p; p++)
        n += *p == ',';
    return n;
}

/* Raw entries of a time list of feeds f (deleted activities included:
 * reads skip those, so only the raw list shows what cleanup left). */
static size_t raw_entries(env *e, const char *who, const char *suffix) {
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    hr_tlrange_spec sp = {.before_ms = INT64_MAX, .after_ms = INT64_MIN, .limit = 100, .now_ms = e->now};
    size_t op = hr_tlrange(b, hr_feeds_user_key(e->feeds, hr_slice_str(who), suffix, &k), &sp);
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, NULL), HR_OK);
    size_t n = hr_batch_result(b, op)->n_entries;
    hr_batch_free(b);
    hr_buf_free(&k);
    return n;
}

/* Activities of the index for object `object`. */
static size_t by_object(env *e, const char *object) {
    hr_activity filter = {.object = hr_slice_str(object)};
    hr_feed_req req = {.limit = 10, .before_ms = INT64_MAX, .after_ms = INT64_MIN};
    hr_feed_page page;
    hr_err err = {0};
    cr_assert_eq(hr_feeds_query(e->feeds, &filter, &req, e->now, &e->a, &page, &err), HR_OK, "%s", err.msg);
    return page.n;
}

typedef enum { CRASH_CREATE, CRASH_UPDATE, CRASH_DELETE, CRASH_FOLLOW } crash_op;

/* One case: an actor with a follower; for an update or a delete, its
 * fanned-out activity (object "old" + n); the request (a create with
 * foreign_id and object "new" + n, an update of the object to it, or a
 * delete). A follow's case: the actor follows the user and has posted, and
 * the request is the user's follow of the actor. */
typedef struct crash_case {
    crash_op what;
    char actor[16], fan[16], o1[16], o2[16];
    hr_activity in;  /* a create's */
    hr_activity act; /* the activity an update or delete changes */
} crash_case;

static int crash_request(env *e, hr_feeds *feeds, crash_case *c, hr_activity *out, hr_err *err) {
    hr_slice id = hr_slice_of(c->act.id, HR_ACTIVITY_ID_LEN), obj = hr_slice_str(c->o2);
    bool dup;
    switch (c->what) {
    case CRASH_CREATE: return hr_feeds_create(feeds, &c->in, e->now, &e->a, out, &dup, err);
    case CRASH_UPDATE: return hr_feeds_update(feeds, id, &obj, hr_slice_str("{}"), &e->a, out, err);
    case CRASH_DELETE: return hr_feeds_delete(feeds, id, e->now, err);
    default: /* as the API does it (hr_feeds_relate: the job first, then the graph) */
        return hr_feeds_relate(feeds, hr_slice_str(c->fan), false, hr_slice_str(c->actor), true, e->now, NULL,
                               err);
    }
}

/* Whether id is in set `set` of who. */
static bool in_set(env *e, hr_graph_set set, const char *who, const char *id) {
    hr_list_req req = {.limit = 100};
    hr_id_page page;
    hr_err err = {0};
    cr_assert_eq(hr_graph_list(e->graph, set, hr_slice_str(who), &req, &e->a, &page, &err), HR_OK, "%s",
                 err.msg);
    for (size_t i = 0; i < page.n; i++)
        if (hr_slice_eq(page.ids[i], hr_slice_str(id))) return true;
    return false;
}

/* Case n of request `what`, killed by a crash in batch `at` with the ops in
 * keep run (fault_store.h), then the client's retry on a restarted server
 * whose workers run the jobs: afterwards the lists are as if the killed
 * request had run whole or not at all. A create leaves one activity (the
 * retry by foreign_id finishes the one the killed create began), in the
 * actor's feed, the follower's timeline and the index; an update leaves the
 * activity under its new object only; a delete leaves no raw entry. Returns
 * how many ops the batch the crash hit had (0: the request ran whole before
 * batch `at`). */
static size_t crash_then_retry(env *e, crash_op what, int n, size_t at, uint64_t keep) {
    crash_case c = {.what = what};
    snprintf(c.actor, sizeof c.actor, "a%d", n);
    snprintf(c.fan, sizeof c.fan, "f%d", n);
    snprintf(c.o1, sizeof c.o1, "old%d", n);
    snprintf(c.o2, sizeof c.o2, "new%d", n);
    follow(e, what == CRASH_FOLLOW ? c.actor : c.fan, what == CRASH_FOLLOW ? c.fan : c.actor);
    drain(e);
    hr_err err = {0};
    c.in = (hr_activity){.actor = hr_slice_str(c.actor), .verb = hr_slice_str("post"), .time_ms = T0 + n};
    if (what == CRASH_CREATE) {
        c.in.object = c.in.foreign_id = hr_slice_str(c.o2);
    } else {
        bool dup;
        c.in.object = hr_slice_str(c.o1);
        cr_assert_eq(hr_feeds_create(e->feeds, &c.in, e->now, &e->a, &c.act, &dup, &err), HR_OK, "%s",
                     err.msg);
        drain(e);
    }

    hr_store *dying = fault_store_crash(e->t.store, at, keep);
    hr_graph *graph = hr_graph_new(dying, e->ns);
    hr_feeds_options o = {
        .ns = e->ns, .fanout_threshold = 10000, .timeline_ttl_ms = 60LL * 86400000, .timeline_max = 1000};
    hr_feeds *feeds = hr_feeds_new(dying, graph, &o);
    hr_activity out;
    int rc = crash_request(e, feeds, &c, &out, &err);
    bool crashed = fault_store_hit(dying);
    cr_assert(crashed ? rc != HR_OK : rc == HR_OK, "crash at %zu/%#llx: rc %d (%s)", at,
              (unsigned long long)keep, rc, err.msg);
    size_t ops = fault_store_batch_len(dying);
    hr_feeds_free(feeds);
    hr_graph_free(graph);
    hr_store_close(dying);

    /* the retry (a delete that finds the activity gone answers 404), the jobs */
    rc = crash_request(e, e->feeds, &c, &out, &err);
    cr_assert(rc == HR_OK || (what == CRASH_DELETE && rc == HR_ENOTFOUND),
              "crash at %zu/%#llx: the retry: %s", at, (unsigned long long)keep, err.msg);
    drain(e);
    if (what == CRASH_CREATE) {
        hr_activity got;
        cr_assert_eq(hr_feeds_get(e->feeds, hr_slice_of(out.id, HR_ACTIVITY_ID_LEN), &e->a, &got, &err),
                     HR_OK, "crash at %zu/%#llx: get: %s", at, (unsigned long long)keep, err.msg);
        cr_assert_eq(count_feed(e, HR_FEED_USER, c.actor), 1, "crash at %zu/%#llx: the actor's feed", at,
                     (unsigned long long)keep);
        cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, c.fan, 10), out.id, "crash at %zu/%#llx: the timeline",
                         at, (unsigned long long)keep);
        cr_assert_eq(by_object(e, c.o2), 1, "crash at %zu/%#llx: the index", at, (unsigned long long)keep);
    } else if (what == CRASH_UPDATE) {
        cr_assert_eq(by_object(e, c.o2), 1, "crash at %zu/%#llx: the new object's index", at,
                     (unsigned long long)keep);
        cr_assert_eq(by_object(e, c.o1), 0, "crash at %zu/%#llx: the old object's index", at,
                     (unsigned long long)keep);
    } else if (what == CRASH_FOLLOW) {
        cr_assert(in_set(e, HR_GRAPH_FOLLOWS, c.fan, c.actor) &&
                      in_set(e, HR_GRAPH_FOLLOWERS, c.actor, c.fan),
                  "crash at %zu/%#llx: the follow edge, both ways", at, (unsigned long long)keep);
        cr_assert(in_set(e, HR_GRAPH_FRIENDS, c.fan, c.actor) && in_set(e, HR_GRAPH_FRIENDS, c.actor, c.fan),
                  "crash at %zu/%#llx: friends, both ways", at, (unsigned long long)keep);
        cr_assert_str_eq(read_ids(e, HR_FEED_TIMELINE, c.fan, 10), c.act.id,
                         "crash at %zu/%#llx: the backfill", at, (unsigned long long)keep);
    } else {
        cr_assert_eq(hr_feeds_get(e->feeds, hr_slice_of(c.act.id, HR_ACTIVITY_ID_LEN), &e->a, &out, &err),
                     HR_ENOTFOUND);
        cr_assert_eq(raw_entries(e, c.actor, "/fd"), 0, "crash at %zu/%#llx: the actor's feed", at,
                     (unsigned long long)keep);
        cr_assert_eq(raw_entries(e, c.fan, "/tl"), 0, "crash at %zu/%#llx: the follower's timeline", at,
                     (unsigned long long)keep);
    }
    return crashed ? ops : 0;
}

typedef struct crash_walk {
    env *e;
    crash_op what;
    int n; /* cases made so far: each has its own actor and follower */
} crash_walk;

static size_t crash_one(void *ctx, size_t at, uint64_t keep) {
    crash_walk *w = ctx;
    return crash_then_retry(w->e, w->what, w->n++, at, keep);
}

/* A server killed anywhere in a create, an update, a delete or a follow:
 * the retry and the jobs finish it. */
static void request_after_a_crash(env *e) {
    size_t tried = 0;
    crash_walk w = {.e = e};
    for (w.what = CRASH_CREATE; w.what <= CRASH_FOLLOW; w.what++)
        tried += fault_store_every_crash(e->t.store, crash_one, &w);
    cr_assert(tried >= (hr_store_caps_of(e->t.store)->atomic_batches ? 14u : 32u), "%zu crashes tried",
              tried);
}
FEEDS_TEST(run_default, request_after_a_crash)
