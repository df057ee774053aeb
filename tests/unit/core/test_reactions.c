/* test_reactions.c — core/reactions.h on both stores: likes once per user,
 * other kinds repeating, exact counts under racing threads, deletes, the
 * lists, the counts in feed pages (and in a kept first page), and an
 * activity's delete taking its reactions along. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/reactions.h"
#include "feeds_env.h"

typedef struct renv {
    env *e;
    hr_reactions *r;
} renv;

static hr_reaction react(renv *x, const char *aid, const char *user, const char *kind, const char *data,
                         bool *existing) {
    hr_reaction out;
    hr_err err = {0};
    bool ex = false;
    x->e->now += 1;
    cr_assert_eq(hr_reactions_add(x->r, hr_slice_str(aid), hr_slice_str(user), hr_slice_str(kind),
                                  hr_slice_str(data ? data : ""), x->e->now, &x->e->a, &out, &ex, &err),
                 HR_OK, "%s", err.msg);
    if (existing) *existing = ex;
    return out;
}

/* The activity's counts as "kind=n,..." (kinds in the store's order). */
static const char *counts_of(renv *x, const char *aid) {
    hr_activity act;
    hr_err err = {0};
    cr_assert_eq(hr_feeds_get(x->e->feeds, hr_slice_str(aid), &x->e->a, &act, &err), HR_OK, "%s", err.msg);
    static char buf[512];
    buf[0] = 0;
    for (size_t i = 0; i < act.n_counts; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%.*s=%lld", i ? "," : "",
                 (int)act.counts[i].kind.len, act.counts[i].kind.ptr, (long long)act.counts[i].n);
    return buf;
}

static const char *ids_of(const hr_reaction_page *p) {
    static char buf[4096];
    buf[0] = 0;
    for (size_t i = 0; i < p->n; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%.*s:%.*s", i ? "," : "",
                 (int)p->items[i].user.len, p->items[i].user.ptr, (int)p->items[i].kind.len,
                 p->items[i].kind.ptr);
    return buf;
}

typedef void (*rcheck)(renv *x);
static rcheck current;

static void with_reactions(env *e) {
    renv x = {.e = e, .r = hr_reactions_new(e->t.store, e->ns)};
    current(&x);
    hr_reactions_free(x.r);
}

static void run(const char *kind, rcheck check) {
    current = check;
    run_default(kind, with_reactions);
}

#define REACTIONS_TEST(check) BOTH_STORES(reactions, run, check)

static void like_once_comment_often(renv *x) {
    hr_activity a = post(x->e, "ann", NULL, x->e->now);
    bool existing;
    hr_reaction l1 = react(x, a.id, "bob", "like", NULL, &existing);
    cr_assert(!existing);
    hr_reaction l2 = react(x, a.id, "bob", "like", "{\"again\":1}", &existing);
    cr_assert(existing, "a second like of one user is the first");
    cr_assert(hr_slice_eq(l1.id, l2.id) && l1.time_ms == l2.time_ms && l2.data.len == 0);
    react(x, a.id, "cat", "like", NULL, &existing);
    react(x, a.id, "bob", "comment", "{\"text\":\"hi\"}", &existing);
    react(x, a.id, "bob", "comment", "{\"text\":\"again\"}", &existing);
    cr_assert(!existing);
    cr_assert_str_eq(counts_of(x, a.id), "comment=2,like=2");
}
REACTIONS_TEST(like_once_comment_often)

static void delete_drops_counts_at_once(renv *x) {
    hr_activity a = post(x->e, "ann", NULL, x->e->now);
    hr_reaction l = react(x, a.id, "bob", "like", NULL, NULL);
    hr_reaction c = react(x, a.id, "bob", "comment", "{\"t\":1}", NULL);
    hr_err err = {0};
    cr_assert_eq(hr_reactions_delete(x->r, l.id, &err), HR_OK, "%s", err.msg);
    cr_assert_str_eq(counts_of(x, a.id), "comment=1");
    cr_assert_eq(hr_reactions_delete(x->r, l.id, &err), HR_ENOTFOUND, "a second delete finds nothing");
    hr_reaction got;
    cr_assert_eq(hr_reactions_get(x->r, l.id, &x->e->a, &got, &err), HR_ENOTFOUND);
    /* Liked again: a new like, counted once more. */
    bool existing;
    hr_reaction l2 = react(x, a.id, "bob", "like", NULL, &existing);
    cr_assert(!existing);
    cr_assert(l2.time_ms > l.time_ms);
    cr_assert_str_eq(counts_of(x, a.id), "comment=1,like=1");
    cr_assert_eq(hr_reactions_delete(x->r, c.id, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(hr_reactions_delete(x->r, l2.id, &err), HR_OK, "%s", err.msg);
    cr_assert_str_eq(counts_of(x, a.id), "");
}
REACTIONS_TEST(delete_drops_counts_at_once)

static void lists_newest_first_by_kind(renv *x) {
    hr_activity a = post(x->e, "ann", NULL, x->e->now);
    hr_activity b = post(x->e, "ann", NULL, x->e->now + 1);
    react(x, a.id, "bob", "like", NULL, NULL);
    react(x, a.id, "cat", "comment", "{\"t\":1}", NULL);
    react(x, a.id, "dan", "like", NULL, NULL);
    react(x, b.id, "bob", "comment", "{\"t\":2}", NULL);
    hr_reaction_page p;
    hr_err err = {0};
    hr_list_req all = {.limit = 2};
    cr_assert_eq(
        hr_reactions_of_activity(x->r, hr_slice_str(a.id), hr_slice_of(NULL, 0), &all, &x->e->a, &p, &err),
        HR_OK, "%s", err.msg);
    cr_assert_str_eq(ids_of(&p), "dan:like,cat:comment");
    cr_assert_not_null(p.next_cursor);
    hr_list_req next = {.limit = 2, .cursor = p.next_cursor};
    cr_assert_eq(
        hr_reactions_of_activity(x->r, hr_slice_str(a.id), hr_slice_of(NULL, 0), &next, &x->e->a, &p, &err),
        HR_OK, "%s", err.msg);
    cr_assert_str_eq(ids_of(&p), "bob:like");
    cr_assert_null(p.next_cursor);
    hr_list_req ten = {.limit = 10};
    cr_assert_eq(
        hr_reactions_of_activity(x->r, hr_slice_str(a.id), hr_slice_str("like"), &ten, &x->e->a, &p, &err),
        HR_OK, "%s", err.msg);
    cr_assert_str_eq(ids_of(&p), "dan:like,bob:like");
    cr_assert_eq(hr_reactions_of_user(x->r, hr_slice_str("bob"), hr_slice_of(NULL, 0), &ten, x->e->now,
                                      &x->e->a, &p, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_str_eq(ids_of(&p), "bob:comment,bob:like");
    cr_assert(hr_slice_eq(p.items[0].activity_id, hr_slice_str(b.id)));
    cr_assert_eq(hr_reactions_of_user(x->r, hr_slice_str("bob"), hr_slice_str("like"), &ten, x->e->now,
                                      &x->e->a, &p, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_str_eq(ids_of(&p), "bob:like");
}
REACTIONS_TEST(lists_newest_first_by_kind)

static void pages_carry_counts_and_own(renv *x) {
    follow(x->e, "reader", "ann");
    hr_activity a = post(x->e, "ann", NULL, x->e->now);
    drain(x->e);
    hr_feed_req req = {
        .limit = 10, .before_ms = INT64_MAX, .after_ms = INT64_MIN, .reader = hr_slice_str("reader")};
    hr_feed_page page;
    hr_err err = {0};
    /* Read once (a kept first page), then a reaction must show at once. */
    cr_assert_eq(hr_feeds_read(x->e->feeds, HR_FEED_TIMELINE, hr_slice_str("reader"), &req, x->e->now,
                               &x->e->a, &page, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(page.n, 1);
    cr_assert_eq(page.items[0].n_counts, 0);
    cr_assert(page.items[0].own_known && page.items[0].n_own == 0);
    react(x, a.id, "reader", "like", NULL, NULL);
    react(x, a.id, "zed", "comment", NULL, NULL);
    cr_assert_eq(hr_feeds_read(x->e->feeds, HR_FEED_TIMELINE, hr_slice_str("reader"), &req, x->e->now,
                               &x->e->a, &page, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(page.items[0].n_counts, 2);
    cr_assert_eq(page.items[0].n_own, 1);
    cr_assert(hr_slice_eq(page.items[0].own[0], hr_slice_str("like")));
    /* The same page from memory, when kept, says the same. */
    cr_assert_eq(hr_feeds_read(x->e->feeds, HR_FEED_TIMELINE, hr_slice_str("reader"), &req, x->e->now,
                               &x->e->a, &page, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(page.items[0].n_counts, 2);
    cr_assert_eq(page.items[0].n_own, 1);
    /* Without a reader, no own kinds. */
    req.reader = hr_slice_of(NULL, 0);
    cr_assert_eq(
        hr_feeds_read(x->e->feeds, HR_FEED_USER, hr_slice_str("ann"), &req, x->e->now, &x->e->a, &page, &err),
        HR_OK, "%s", err.msg);
    cr_assert(!page.items[0].own_known);
    cr_assert_eq(page.items[0].n_counts, 2);
}
REACTIONS_TEST(pages_carry_counts_and_own)

static void deleting_the_activity_takes_its_reactions(renv *x) {
    hr_activity a = post(x->e, "ann", NULL, x->e->now);
    hr_activity keep = post(x->e, "ann", NULL, x->e->now + 1);
    react(x, a.id, "bob", "like", NULL, NULL);
    hr_reaction c = react(x, a.id, "bob", "comment", "{\"t\":1}", NULL);
    react(x, keep.id, "bob", "like", NULL, NULL);
    hr_err err = {0};
    x->e->now += 1;
    cr_assert_eq(hr_feeds_delete(x->e->feeds, hr_slice_str(a.id), x->e->now, &err), HR_OK, "%s", err.msg);
    hr_reaction_page p;
    hr_list_req ten = {.limit = 10};
    /* At once: the user's list leaves them out, the activity is gone. */
    cr_assert_eq(hr_reactions_of_user(x->r, hr_slice_str("bob"), hr_slice_of(NULL, 0), &ten, x->e->now,
                                      &x->e->a, &p, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(p.n, 1);
    cr_assert(hr_slice_eq(p.items[0].activity_id, hr_slice_str(keep.id)));
    cr_assert_eq(
        hr_reactions_of_activity(x->r, hr_slice_str(a.id), hr_slice_of(NULL, 0), &ten, &x->e->a, &p, &err),
        HR_ENOTFOUND);
    /* Once the job ran, nothing of them is stored. */
    drain(x->e);
    hr_reaction got;
    cr_assert_eq(hr_reactions_get(x->r, c.id, &x->e->a, &got, &err), HR_ENOTFOUND);
    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT;
    hr_zrange_spec all = hr_zrange_all(false, 100);
    const char *sets[] = {"/rc", "/rx", "/rx/like", "/o/bob"};
    for (size_t i = 0; i < 4; i++)
        hr_zrange(b, hr_activity_key(x->e->ns, hr_slice_str(a.id), sets[i], hr_slice_of(NULL, 0), &k), &all);
    hr_tlrange_spec tl = hr_tlrange_all(100, x->e->now);
    hr_tlrange(b, hr_rs_user_key(x->e->ns, hr_slice_str("bob"), hr_slice_of(NULL, 0), &k), &tl);
    cr_assert_eq(hr_store_exec(x->e->t.store, b, 0, &err), HR_OK, "%s", err.msg);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(hr_batch_result(b, i)->n_entries, 0, "%s is left", sets[i]);
    cr_assert_eq(hr_batch_result(b, 4)->n_entries, 1, "bob's list keeps only the other like");
    hr_batch_free(b);
    hr_buf_free(&k);
}
REACTIONS_TEST(deleting_the_activity_takes_its_reactions)

static void bad_input_changes_nothing(renv *x) {
    hr_activity a = post(x->e, "ann", NULL, x->e->now);
    hr_reaction out;
    bool ex;
    hr_err err = {0};
    char big[HR_REACTION_DATA_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    cr_assert_eq(hr_reactions_add(x->r, hr_slice_str(a.id), hr_slice_str("bob"), hr_slice_str("li ke"),
                                  hr_slice_of(NULL, 0), x->e->now, &x->e->a, &out, &ex, &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "kind") != NULL, "%s", err.msg);
    cr_assert_eq(hr_reactions_add(x->r, hr_slice_str(a.id), hr_slice_str("bob"), hr_slice_str("comment"),
                                  hr_slice_str(big), x->e->now, &x->e->a, &out, &ex, &err),
                 HR_ETOOBIG);
    cr_assert_eq(hr_reactions_add(x->r, hr_slice_str("0000000000000000000a"), hr_slice_str("bob"),
                                  hr_slice_str("like"), hr_slice_of(NULL, 0), x->e->now, &x->e->a, &out, &ex,
                                  &err),
                 HR_ENOTFOUND);
    cr_assert_eq(hr_reactions_delete(x->r, hr_slice_str("not-a-reaction"), &err), HR_ENOTFOUND);
    cr_assert_str_eq(counts_of(x, a.id), "");
}
REACTIONS_TEST(bad_input_changes_nothing)

static void a_longest_user_likes_and_unlikes(renv *x) {
    hr_activity a = post(x->e, "ann", NULL, x->e->now);
    char user[129];
    memset(user, 'u', 128);
    user[128] = 0;
    hr_reaction l = react(x, a.id, user, "like", NULL, NULL);
    hr_reaction got;
    hr_err err = {0};
    cr_assert_eq(hr_reactions_get(x->r, l.id, &x->e->a, &got, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(hr_reactions_delete(x->r, l.id, &err), HR_OK, "%s", err.msg);
    cr_assert_str_eq(counts_of(x, a.id), "");
}
REACTIONS_TEST(a_longest_user_likes_and_unlikes)

/* Racing threads: 4 threads each like as the same 8 users, and each adds
 * 8 comments as one user: likes count the users, comments every one. */
typedef struct racer {
    renv *x;
    const char *aid;
    int t;
} racer;

static void *race(void *p) {
    racer *r = p;
    hr_arena a = HR_ARENA_INIT;
    for (int u = 0; u < 8; u++) {
        char user[16];
        snprintf(user, sizeof user, "u%d", u);
        hr_reaction out;
        bool ex;
        hr_err err = {0};
        int rc = hr_reactions_add(r->x->r, hr_slice_str(r->aid), hr_slice_str(user), hr_slice_str("like"),
                                  hr_slice_of(NULL, 0), r->x->e->now + r->t, &a, &out, &ex, &err);
        if (rc != HR_OK) return (void *)1;
        rc = hr_reactions_add(r->x->r, hr_slice_str(r->aid), hr_slice_str("same"), hr_slice_str("comment"),
                              hr_slice_of(NULL, 0), r->x->e->now + r->t, &a, &out, &ex, &err);
        if (rc != HR_OK) return (void *)2;
    }
    hr_arena_free(&a);
    return NULL;
}

static void counts_exact_under_racing_threads(renv *x) {
    hr_activity a = post(x->e, "ann", NULL, x->e->now);
    pthread_t th[4];
    racer rs[4];
    for (int t = 0; t < 4; t++) {
        rs[t] = (racer){x, a.id, t};
        pthread_create(&th[t], NULL, race, &rs[t]);
    }
    for (int t = 0; t < 4; t++) {
        void *ret;
        pthread_join(th[t], &ret);
        cr_assert_null(ret, "a racer failed (%p)", ret);
    }
    cr_assert_str_eq(counts_of(x, a.id), "like=8,comment=32");
    hr_reaction_page p;
    hr_err err = {0};
    hr_list_req all = {.limit = 100};
    cr_assert_eq(
        hr_reactions_of_activity(x->r, hr_slice_str(a.id), hr_slice_of(NULL, 0), &all, &x->e->a, &p, &err),
        HR_OK, "%s", err.msg);
    cr_assert_eq(p.n, 40);
}
REACTIONS_TEST(counts_exact_under_racing_threads)
