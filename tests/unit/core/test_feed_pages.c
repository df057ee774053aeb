/* Feed pages against a model: random feeds (0 to 50 activities, some
 * deleted with their entries cleaned up, some deleted and not yet, some
 * older than the timelines' TTL, big accounts merged in at read time) read
 * with every combination of offset, limit, cursor, before and after in a
 * range, each page compared with a plain in-memory list of the same feed.
 * Covers the own feed, the group feed, the home timeline and secondary
 * queries, on both backends (and RocksDB writing fan-out as table files). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feeds_env.h"

#define TTL_MS (60LL * 86400000) /* run()'s timeline_ttl */
#define N_MAX 50

/* An activity as the model knows it. */
typedef struct mact {
    hr_activity a; /* id, time, actor, verb, object, target */
    bool deleted;
} mact;

typedef struct world {
    env *e;
    uint64_t rng;
    mact acts[N_MAX + 8];
    size_t n;
    unsigned seed;
} world;

static uint64_t rnd(world *w, uint64_t n) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return n ? w->rng % n : 0;
}

/* Who is who: r reads; s0..s2 are followed by r alone (fanned out); b0, b1
 * have four followers, over run_big's threshold of 2 (merged at read); q is
 * followed by nobody but posts to r's group g. */
static const char *const ACTORS[] = {"s0", "s1", "s2", "b0", "b1", "q"};
#define N_ACTORS (sizeof ACTORS / sizeof ACTORS[0])

/* One feed to read: an own or group feed, the timeline, or a query. */
typedef struct feed_ref {
    const char *name;
    bool query;
    hr_feed_kind kind;
    const char *who;
    hr_activity filter; /* queries: the non-empty fields must match */
} feed_ref;

static bool in_feed(const feed_ref *f, const mact *m, int64_t now) {
    const hr_activity *x = &m->a;
    if (m->deleted) return false;
    if (f->query) {
        const hr_activity *q = &f->filter;
        return (!q->actor.len || hr_slice_eq(q->actor, x->actor)) &&
               (!q->verb.len || hr_slice_eq(q->verb, x->verb)) &&
               (!q->object.len || hr_slice_eq(q->object, x->object));
    }
    bool to_g = hr_slice_eq(x->target, hr_slice_str("group:g"));
    switch (f->kind) {
    case HR_FEED_USER: return hr_slice_eq(x->actor, hr_slice_str(f->who));
    case HR_FEED_GROUP: return to_g;
    default: /* r's timeline: whom r follows, r's group, within the TTL */
        if (x->time_ms <= now - TTL_MS) return false;
        return to_g || !hr_slice_eq(x->actor, hr_slice_str("q"));
    }
}

/* Newest first: time descending, then id descending (entry_cmp in feeds.c). */
static int newest_first(const void *pa, const void *pb) {
    const mact *x = *(const mact *const *)pa, *y = *(const mact *const *)pb;
    if (x->a.time_ms != y->a.time_ms) return x->a.time_ms > y->a.time_ms ? -1 : 1;
    return -strcmp(x->a.id, y->a.id);
}

/* The model's answer: f's activities within (after, before), newest first. */
static size_t model_list(world *w, const feed_ref *f, int64_t before, int64_t after, const mact **out) {
    size_t n = 0;
    for (size_t i = 0; i < w->n; i++) {
        const mact *m = &w->acts[i];
        if (in_feed(f, m, w->e->now) && m->a.time_ms < before && m->a.time_ms > after) out[n++] = m;
    }
    qsort(out, n, sizeof *out, newest_first);
    return n;
}

static hr_feed_page read_feed(world *w, const feed_ref *f, const hr_feed_req *req, hr_arena *a) {
    hr_feed_page page;
    hr_err err = {0};
    int rc = f->query
                 ? hr_feeds_query(w->e->feeds, &f->filter, req, w->e->now, a, &page, &err)
                 : hr_feeds_read(w->e->feeds, f->kind, hr_slice_str(f->who), req, w->e->now, a, &page, &err);
    cr_assert_eq(rc, HR_OK, "seed %u, %s: %s", w->seed, f->name, err.msg);
    return page;
}

/* The page must be list[from, from + limit). */
static void expect_page(world *w, const feed_ref *f, const char *how, const hr_feed_page *p,
                        const mact **list, size_t n, size_t from, size_t limit) {
    size_t want = from >= n ? 0 : (n - from < limit ? n - from : limit);
    cr_assert_eq(p->n, want, "seed %u, %s, %s: %zu items, the model has %zu (of %zu from %zu)", w->seed,
                 f->name, how, p->n, want, n, from);
    for (size_t i = 0; i < want; i++)
        cr_assert_str_eq(p->items[i].id, list[from + i]->a.id, "seed %u, %s, %s: item %zu", w->seed, f->name,
                         how, i);
    /* More in the model: the page must say so. (A page may offer a cursor
     * to entries deleted and not yet cleaned up: the next page is empty.) */
    if (from + want < n)
        cr_assert_not_null(p->next_cursor, "seed %u, %s, %s: no next_cursor", w->seed, f->name, how);
}

/* Every combination of the ranges on feed f. Offsets and limits around the
 * feed's size; bounds none, before, after and both, at entries' times (the
 * bounds are exclusive, and ties make them cut through equal times). A
 * walk follows next_cursor to the end of the feed (walks of bounded
 * feeds stop after 4 pages), asking with offset 1 on every third page. */
static void check_feed(world *w, const feed_ref *f) {
    const mact *all[N_MAX + 8], *list[N_MAX + 8];
    size_t n_all = model_list(w, f, INT64_MAX, INT64_MIN, all);
    int64_t mid = n_all ? all[n_all / 2]->a.time_ms : w->e->now;
    int64_t late = n_all ? all[n_all / 4]->a.time_ms : w->e->now;
    int64_t early = n_all ? all[(3 * n_all) / 4]->a.time_ms : 0;
    const int64_t befores[] = {INT64_MAX, mid, late, INT64_MAX, mid + 1};
    const int64_t afters[] = {INT64_MIN, INT64_MIN, early, mid, early - 1};
    size_t offsets[] = {0, 1, 2, 3, n_all / 2, n_all ? n_all - 1 : 0, n_all, n_all + 1};
    size_t limits[] = {1, 2, 3, 5, n_all + 1};
    for (size_t bi = 0; bi < sizeof befores / sizeof befores[0]; bi++) {
        size_t n = model_list(w, f, befores[bi], afters[bi], list);
        for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++) {
            for (size_t li = 0; li < sizeof limits / sizeof limits[0]; li++) {
                hr_feed_req req = {.limit = limits[li],
                                   .offset = offsets[oi],
                                   .before_ms = befores[bi],
                                   .after_ms = afters[bi]};
                char how[160];
                snprintf(how, sizeof how, "offset %zu limit %zu before %" PRId64 " after %" PRId64,
                         req.offset, req.limit, req.before_ms, req.after_ms);
                hr_arena a = HR_ARENA_INIT;
                hr_feed_page p = read_feed(w, f, &req, &a);
                expect_page(w, f, how, &p, list, n, req.offset, req.limit);
                size_t at = req.offset + p.n;
                int max_pages = bi == 0 ? N_MAX + 2 : 4;
                for (int page = 1; p.next_cursor && page < max_pages; page++) {
                    req.cursor = hr_arena_strndup(&a, p.next_cursor, strlen(p.next_cursor));
                    req.offset = page % 3 == 0 ? 1 : 0;
                    char step[200];
                    snprintf(step, sizeof step, "%s, page %d (offset %zu)", how, page + 1, req.offset);
                    p = read_feed(w, f, &req, &a);
                    expect_page(w, f, step, &p, list, n, at + req.offset, req.limit);
                    at += req.offset + p.n;
                }
                if (p.next_cursor == NULL)
                    cr_assert_geq(at, n, "seed %u, %s, %s: the walk ended at %zu of %zu", w->seed, f->name,
                                  how, at, n);
                hr_arena_free(&a);
            }
        }
    }
}

static const feed_ref FEEDS[] = {
    {.name = "s0's feed", .kind = HR_FEED_USER, .who = "s0"},
    {.name = "b0's feed", .kind = HR_FEED_USER, .who = "b0"},
    {.name = "group g", .kind = HR_FEED_GROUP, .who = "g"},
    {.name = "r's timeline", .kind = HR_FEED_TIMELINE, .who = "r"},
    {.name = "actor=s1&verb=like", .query = true, .filter = {.actor = {"s1", 2}, .verb = {"like", 4}}},
    {.name = "object=o1", .query = true, .filter = {.object = {"o1", 2}}},
    {.name = "verb=post&object=o2", .query = true, .filter = {.verb = {"post", 4}, .object = {"o2", 2}}},
};

static void check_all(world *w) {
    for (size_t i = 0; i < sizeof FEEDS / sizeof FEEDS[0]; i++)
        check_feed(w, &FEEDS[i]);
}

static void post_random(world *w) {
    env *e = w->e;
    mact *m = &w->acts[w->n++];
    const char *actor = ACTORS[rnd(w, N_ACTORS)];
    bool to_g = strcmp(actor, "q") == 0 || rnd(w, 4) == 0;
    /* Times over the last 70 days, so a seventh are past the timelines'
     * TTL; a third repeat an earlier time, so ties are common. */
    int64_t t = e->now - (int64_t)rnd(w, 70 * 86400) * 1000 - (int64_t)rnd(w, 1000);
    if (w->n > 1 && rnd(w, 3) == 0) t = w->acts[rnd(w, w->n - 1)].a.time_ms;
    hr_activity in = {.actor = hr_slice_str(actor),
                      .verb = hr_slice_str(rnd(w, 2) ? "post" : "like"),
                      .object = hr_slice_str(rnd(w, 2) ? "o1" : "o2"),
                      .target = hr_slice_str(to_g ? "group:g" : ""),
                      .time_ms = t};
    bool dup;
    hr_err err = {0};
    cr_assert_eq(hr_feeds_create(e->feeds, &in, e->now, &e->a, &m->a, &dup, &err), HR_OK, "%s", err.msg);
    m->deleted = false;
}

static void delete_random(world *w) {
    if (w->n == 0) return;
    mact *m = &w->acts[rnd(w, w->n)];
    if (m->deleted) return;
    hr_err err = {0};
    cr_assert_eq(hr_feeds_delete(w->e->feeds, hr_slice_str(m->a.id), w->e->now, &err), HR_OK, "%s", err.msg);
    m->deleted = true;
}

static void one_world(env *e, unsigned seed) {
    world w = {.e = e, .rng = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)seed * 0x2545f4914f6cdd1dULL), .seed = seed};
    follow(e, "r", "s0");
    follow(e, "r", "s1");
    follow(e, "r", "s2");
    const char *fans[] = {"r", "x1", "x2", "x3"};
    for (size_t i = 0; i < 4; i++) {
        follow(e, fans[i], "b0");
        follow(e, fans[i], "b1");
    }
    hr_err err = {0};
    hr_batch *b = hr_batch_new();
    cr_assert_eq(hr_graph_join(e->graph, b, hr_slice_str("g"), hr_slice_str("r"), e->now, NULL, &err), HR_OK);
    hr_batch_free(b);
    drain(e);
    /* Sizes 0 to 50, spread over the seeds. */
    size_t n = seed % 3 == 0 ? rnd(&w, 6) : rnd(&w, N_MAX + 1);
    for (size_t i = 0; i < n; i++)
        post_random(&w);
    drain(e);
    for (size_t i = 0; i < n / 8; i++)
        delete_random(&w); /* cleaned up by their jobs */
    drain(e);
    for (size_t i = 0; i < n / 8; i++)
        delete_random(&w); /* hidden, entries still there */
    check_all(&w);
    /* Again after more changes, so that kept first pages must follow them. */
    delete_random(&w);
    if (w.n < N_MAX + 8) post_random(&w);
    drain(e);
    check_all(&w);
}

/* Seeds split over tests, so that the suite's two workers share them. */
#define SEEDS_PER_TEST 4
#define PAGES_CHECK(part)                                                                                    \
    static void check_feed_pages_##part(env *e) {                                                            \
        for (unsigned s = (part)*SEEDS_PER_TEST; s < ((part) + 1) * SEEDS_PER_TEST; s++) {                   \
            if (s > (part)*SEEDS_PER_TEST) env_renew(e);                                                     \
            one_world(e, s);                                                                                 \
        }                                                                                                    \
    }                                                                                                        \
    FEEDS_TEST(run_big, check_feed_pages_##part)

PAGES_CHECK(0)
PAGES_CHECK(1)
PAGES_CHECK(2)

/* A query whose matches lie on both sides of the scan bound: a page that
 * stops at the bound before its offset is used up hands what is left of the
 * offset to its next_cursor, so following it lands where the offset would
 * have, and paging from the start meets every match once, in order. */
#define SPARSE_N (HR_FEED_SCAN_MAX + 10)
static bool sparse_like(size_t i) {
    return i == 2 || i == 5 || i == 9 || (i >= HR_FEED_SCAN_MAX + 3 && i < HR_FEED_SCAN_MAX + 8);
}

/* Follow cursors from req until `limit` items come or none is left; the
 * items' indexes (newest first: i = 0 is the newest) into got. */
static size_t sparse_walk(env *e, const char **ids, hr_feed_req req, size_t *got, size_t limit) {
    hr_activity filter = {.actor = hr_slice_str("z"), .verb = hr_slice_str("like")};
    size_t n = 0;
    for (int pages = 0; pages < 10 && n < limit; pages++) {
        hr_feed_page page;
        hr_err err = {0};
        cr_assert_eq(hr_feeds_query(e->feeds, &filter, &req, e->now, &e->a, &page, &err), HR_OK, "%s",
                     err.msg);
        for (size_t k = 0; k < page.n && n < limit; k++)
            for (size_t i = 0; i < SPARSE_N; i++)
                if (strcmp(ids[i], page.items[k].id) == 0) got[n++] = i;
        if (page.next_cursor == NULL) break;
        req.cursor = page.next_cursor;
        req.offset = 0;
    }
    return n;
}

static void check_offset_outlives_the_scan_bound(env *e) {
    const char **ids = hr_arena_alloc(&e->a, SPARSE_N * sizeof *ids);
    for (size_t i = 0; i < SPARSE_N; i++) {
        hr_activity in = {.actor = hr_slice_str("z"),
                          .verb = hr_slice_str(sparse_like(i) ? "like" : "post"),
                          .object = hr_slice_str("o"),
                          .time_ms = e->now - 1000 - (int64_t)i * 10};
        hr_activity out;
        bool dup;
        hr_err err = {0};
        cr_assert_eq(hr_feeds_create(e->feeds, &in, e->now, &e->a, &out, &dup, &err), HR_OK, "%s", err.msg);
        ids[i] = hr_arena_strndup(&e->a, out.id, strlen(out.id));
    }
    drain(e);
    size_t likes[16], n_likes = 0;
    for (size_t i = 0; i < SPARSE_N; i++)
        if (sparse_like(i)) likes[n_likes++] = i;
    for (size_t offset = 0; offset <= n_likes; offset++) {
        hr_feed_req req = {.limit = 2, .offset = offset, .before_ms = INT64_MAX, .after_ms = INT64_MIN};
        size_t got[16];
        size_t n = sparse_walk(e, ids, req, got, n_likes);
        cr_assert_eq(n, n_likes - offset, "offset %zu: %zu items, want %zu", offset, n, n_likes - offset);
        for (size_t k = 0; k < n; k++)
            cr_assert_eq(got[k], likes[offset + k], "offset %zu, item %zu: #%zu, want #%zu", offset, k,
                         got[k], likes[offset + k]);
    }
    /* A cursor's items to skip count against the offset's limit. */
    hr_feed_req req = {.limit = 1, .offset = 5, .before_ms = INT64_MAX, .after_ms = INT64_MIN};
    hr_activity filter = {.actor = hr_slice_str("z"), .verb = hr_slice_str("like")};
    hr_feed_page page;
    hr_err err = {0};
    cr_assert_eq(hr_feeds_query(e->feeds, &filter, &req, e->now, &e->a, &page, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(page.n, 0);
    cr_assert_not_null(page.next_cursor);
    req.cursor = page.next_cursor;
    req.offset = HR_FEED_OFFSET_MAX;
    cr_assert_eq(hr_feeds_query(e->feeds, &filter, &req, e->now, &e->a, &page, &err), HR_EINVAL);
}
FEEDS_TEST(run_default, check_offset_outlives_the_scan_bound)
