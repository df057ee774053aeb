/* Unit tests of core/ratings' member queries (core/ratings_walk.c) over a
 * real store, on both backends: unseen (rated and seen stories left out,
 * pages across windows, with and without a seen set, the hot order) and
 * top-rated (since a date, against a model, by the walk and by ranking the
 * ratings). Every test has its own key namespace (ratings_env.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ratings_env.h"

typedef struct expect_item {
    double key;
    char id[17];
} expect_item;

static int by_rank(const void *x, const void *y) {
    const expect_item *a = x, *b = y;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    return -strcmp(a->id, b->id);
}

static void unseen_excludes_rated_and_seen(env *e) {
    enum { N = 30 };
    char ids[N][17];
    int score[N];
    for (int i = 0; i < N; i++) {
        story(e, i, T0 + i, ids[i]);
        score[i] = (i * 7) % 5 - 2; /* -2..2 */
        for (int v = 0; v < abs(score[i]); v++) {
            char voter[16];
            snprintf(voter, sizeof voter, "v%d", v);
            rate(e, voter, ids[i], score[i] > 0 ? 1 : -1, T0 + 100);
        }
    }
    /* alice rated some up, some down, and saw some (0) */
    bool rated[N] = {0};
    for (int i = 0; i < N; i += 3) {
        rate(e, "alice", ids[i], (i / 3) % 3 - 1, T0 + 200 + i);
        rated[i] = true;
    }
    /* expected: unrated stories by (their score after alice's votes, id) */
    expect_item want[N];
    size_t n = 0;
    for (int i = 0; i < N; i++) {
        if (rated[i]) continue;
        want[n].key = score[i];
        strcpy(want[n++].id, ids[i]);
    }
    qsort(want, n, sizeof want[0], by_rank);
    /* paging by 4 gives every unseen story once, in order */
    const char *cursor = NULL;
    size_t got = 0;
    for (int pages = 0; pages < 20; pages++) {
        hr_story_page p = unseen(e, "alice", HR_RANK_TOP, 4, cursor);
        for (size_t i = 0; i < p.n; i++, got++) {
            cr_assert(got < n, "more unseen stories than expected");
            cr_assert_str_eq(p.items[i].id, want[got].id, "position %zu", got);
            cr_assert_eq(p.items[i].score, (int64_t)want[got].key);
        }
        cursor = p.next_cursor;
        if (!cursor) break;
    }
    cr_assert_eq(got, n);
    /* a member who rated nothing sees everything; the voters do not see
     * what they voted on */
    cr_assert_eq(unseen(e, "nobody", HR_RANK_TOP, 100, NULL).n, N);
    hr_story_page p = unseen(e, "v0", HR_RANK_TOP, 100, NULL);
    for (size_t i = 0; i < p.n; i++)
        for (int j = 0; j < N; j++)
            if (strcmp(p.items[i].id, ids[j]) == 0) cr_assert_eq(score[j], 0, "v0 voted on %s", ids[j]);
}
BOTH_STORES(ratings, run, unseen_excludes_rated_and_seen)

enum { TOP_N = 260, TOP_SEEN = 200 };

/* TOP_N unrated stories (all score 0: ranked by id, descending) into all,
 * in ranking order, and a member "reader" who has seen the top TOP_SEEN:
 * the first windows of an unseen call hold nothing unseen. */
static void reader_saw_the_top(env *e, expect_item all[TOP_N]) {
    for (int i = 0; i < TOP_N; i++) {
        story(e, i, T0 + i, all[i].id);
        all[i].key = 0;
    }
    qsort(all, TOP_N, sizeof all[0], by_rank);
    for (int i = 0; i < TOP_SEEN; i++)
        rate(e, "reader", all[i].id, 0, T0 + 1000);
}

static void unseen_pages_across_windows(env *e) {
    enum { N = TOP_N, SEEN = TOP_SEEN };
    expect_item all[N];
    reader_saw_the_top(e, all);
    hr_story_page p = unseen(e, "reader", HR_RANK_TOP, 20, NULL);
    cr_assert_eq(p.n, 20);
    for (int i = 0; i < 20; i++)
        cr_assert_str_eq(p.items[i].id, all[SEEN + i].id, "item %d", i);
    cr_assert_not_null(p.next_cursor);
    /* and on to the end */
    size_t got = p.n;
    const char *cursor = p.next_cursor;
    while (cursor) {
        p = unseen(e, "reader", HR_RANK_TOP, 20, cursor);
        for (size_t i = 0; i < p.n; i++)
            cr_assert_str_eq(p.items[i].id, all[SEEN + got + i].id);
        got += p.n;
        cursor = p.next_cursor;
    }
    cr_assert_eq(got, N - SEEN);
    /* the home page reader of the seed: seen everything -> empty, no cursor */
    for (int i = SEEN; i < N; i++)
        rate(e, "reader", all[i].id, 0, T0 + 2000);
    p = unseen(e, "reader", HR_RANK_TOP, 20, NULL);
    cr_assert_eq(p.n, 0);
    cr_assert_null(p.next_cursor);
}
BOTH_STORES(ratings, run, unseen_pages_across_windows)

/* The same two with the packed seen set in use (HR_SEEN_SET_MIN lowered):
 * the subjects cross the threshold midway, so unseen first fills the set
 * with their older ratings, then upserts keep it. */
static void unseen_with_seen_set(env *e) {
    hr_ratings_set_seen_min(e->ratings, 5);
    unseen_excludes_rated_and_seen(e);
}
BOTH_STORES(ratings, run, unseen_with_seen_set)

static void unseen_windows_with_seen_set(env *e) {
    hr_ratings_set_seen_min(e->ratings, 50);
    unseen_pages_across_windows(e);
}
BOTH_STORES(ratings, run, unseen_windows_with_seen_set)

/* A subject seen with a seen set once reads its first window at the size a
 * set test wants: one batch fewer on the next call, the same page. */
static void unseen_remembers_a_seen_set(env *e) {
    hr_ratings_set_seen_min(e->ratings, 50);
    enum { SEEN = TOP_SEEN };
    expect_item all[TOP_N];
    reader_saw_the_top(e, all);
    unseen(e, "reader", HR_RANK_TOP, 20, NULL); /* fills the seen set with the first 50 ratings */
    /* A fresh instance (an empty memory of subjects), the set complete. */
    hr_ratings *filled = e->ratings;
    e->ratings = hr_ratings_new(e->t.store, e->stories);
    hr_ratings_set_seen_min(e->ratings, 50);
    uint64_t b0 = test_batches_total();
    hr_story_page first = unseen(e, "reader", HR_RANK_TOP, 20, NULL);
    uint64_t b1 = test_batches_total();
    hr_story_page again = unseen(e, "reader", HR_RANK_TOP, 20, NULL);
    uint64_t b2 = test_batches_total();
    hr_ratings_free(e->ratings);
    e->ratings = filled;
    cr_assert_eq(b2 - b1, b1 - b0 - 1, "first call %llu batches, second %llu", (unsigned long long)(b1 - b0),
                 (unsigned long long)(b2 - b1));
    cr_assert_eq(again.n, 20);
    cr_assert_eq(first.n, 20);
    for (int i = 0; i < 20; i++) {
        cr_assert_str_eq(first.items[i].id, all[SEEN + i].id);
        cr_assert_str_eq(again.items[i].id, all[SEEN + i].id);
    }
}
BOTH_STORES(ratings, run, unseen_remembers_a_seen_set)

static void unseen_hot_order(env *e) {
    /* votes against age: Reddit's order, not the sum's */
    struct {
        int64_t time;
        int votes;
    } spec[] = {
        {T0, 50},
        {T0 + 2 * HOUR, 10},
        {T0 + 12 * HOUR, 2},
        {T0 + 24 * HOUR, 0},
        {T0 + 6 * HOUR, -3},
        {T0 + 30 * HOUR, 1},
        {T0 - 48 * HOUR, 100},
    };
    enum { N = sizeof spec / sizeof spec[0] };
    expect_item hot[N], top[N];
    for (int i = 0; i < N; i++) {
        char id[17];
        story(e, i, spec[i].time, id);
        for (int v = 0; v < abs(spec[i].votes); v++) {
            char voter[16];
            snprintf(voter, sizeof voter, "v%d", v);
            rate(e, voter, id, spec[i].votes > 0 ? 1 : -1, spec[i].time + 1);
        }
        strcpy(hot[i].id, id);
        strcpy(top[i].id, id);
        hot[i].key = hr_rank_hot(spec[i].votes, spec[i].time);
        top[i].key = spec[i].votes;
        assert_ranked(e, id, spec[i].votes, spec[i].time);
    }
    qsort(hot, N, sizeof hot[0], by_rank);
    qsort(top, N, sizeof top[0], by_rank);
    hr_story_page p = unseen(e, "fresh", HR_RANK_HOT, 10, NULL);
    cr_assert_eq(p.n, N);
    for (int i = 0; i < N; i++) {
        cr_assert_str_eq(p.items[i].id, hot[i].id, "hot position %d", i);
        cr_assert(p.items[i].hot == hot[i].key);
    }
    cr_assert_str_neq(hot[0].id, top[0].id, "the orders differ: the 100-vote story is old");
    p = unseen(e, "fresh", HR_RANK_TOP, 10, NULL);
    for (int i = 0; i < N; i++)
        cr_assert_str_eq(p.items[i].id, top[i].id, "top position %d", i);
    /* votes change the hot order at once: the downvoted story (-3, 6 h)
     * goes from near the bottom to the top with 200 upvotes */
    char last[17];
    for (int i = 0; i < N; i++)
        if (hot[i].key == hr_rank_hot(-3, T0 + 6 * HOUR)) strcpy(last, hot[i].id);
    cr_assert_str_neq(p.items[0].id, last);
    for (int v = 0; v < 200; v += 1) {
        char voter[16];
        snprintf(voter, sizeof voter, "w%d", v);
        rate(e, voter, last, 1, T0 + 100 * HOUR);
    }
    p = unseen(e, "fresh", HR_RANK_HOT, 1, NULL);
    cr_assert_str_eq(p.items[0].id, last);
}
BOTH_STORES(ratings, run, unseen_hot_order)

static void top_rated_since(env *e) {
    char a[17], b[17], c[17], d[17], old[17];
    story(e, 1, T0, a);
    story(e, 2, T0, b);
    story(e, 3, T0, c);
    story(e, 4, T0, d);
    story(e, 5, T0, old);
    /* community scores: a 3, d 2, b 1, c -1, old 5 */
    for (int v = 0; v < 3; v++) {
        char voter[16];
        snprintf(voter, sizeof voter, "v%d", v);
        rate(e, voter, a, 1, T0);
        if (v < 2) rate(e, voter, d, 1, T0);
        if (v < 4) rate(e, voter, old, 1, T0);
    }
    rate(e, "v3", old, 1, T0);
    rate(e, "v4", old, 1, T0);
    rate(e, "v0", c, -1, T0);
    /* the member: old long ago, then the others */
    rate(e, "m", old, 1, T0 + 10);
    rate(e, "m", a, 0, T0 + 100);
    rate(e, "m", b, 1, T0 + 200);
    rate(e, "m", c, -1, T0 + 300);
    rate(e, "m", d, 0, T0 + 400);
    /* scores now: a 3, b 1, c -2, d 2, old 6 */
    hr_list_req req = {.limit = 10, .has_since = true, .since_ms = T0 + 10};
    hr_story_page p;
    hr_err err = {0};
    cr_assert_eq(hr_ratings_top_rated(e->ratings, hr_slice_str("m"), &req, &e->a, &p, &err), HR_OK, "%s",
                 err.msg);
    cr_assert_eq(p.n, 4, "since excludes the old rating");
    expect_item want[4] = {{3, ""}, {1, ""}, {2, ""}, {-2, ""}};
    strcpy(want[0].id, a);
    strcpy(want[1].id, b);
    strcpy(want[2].id, d);
    strcpy(want[3].id, c);
    qsort(want, 4, sizeof want[0], by_rank);
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(p.items[i].id, want[i].id, "position %d", i);
        cr_assert_eq(p.items[i].score, (int64_t)want[i].key);
        cr_assert(p.items[i].has_rating);
    }
    cr_assert_eq(p.items[3].rating, -1, "the member's own rating is shown");
    cr_assert_null(p.next_cursor);
    /* paging by 3 with the cursor, from the start of time */
    req = (hr_list_req){.limit = 3};
    cr_assert_eq(hr_ratings_top_rated(e->ratings, hr_slice_str("m"), &req, &e->a, &p, NULL), HR_OK);
    cr_assert_eq(p.n, 3);
    cr_assert_str_eq(p.items[0].id, old);
    cr_assert_str_eq(p.items[1].id, want[0].id);
    cr_assert_not_null(p.next_cursor);
    req.cursor = p.next_cursor;
    cr_assert_eq(hr_ratings_top_rated(e->ratings, hr_slice_str("m"), &req, &e->a, &p, NULL), HR_OK);
    cr_assert_eq(p.n, 2);
    cr_assert_str_eq(p.items[0].id, want[2].id);
    cr_assert_str_eq(p.items[1].id, want[3].id);
    cr_assert_null(p.next_cursor);
    /* a subject with no ratings */
    req = (hr_list_req){.limit = 3};
    cr_assert_eq(hr_ratings_top_rated(e->ratings, hr_slice_str("nobody"), &req, &e->a, &p, NULL), HR_OK);
    cr_assert_eq(p.n, 0);
}
BOTH_STORES(ratings, run, top_rated_since)

/* The same with the member's ratings found by walking the ranking (it has a
 * seen set). */
static void top_rated_since_walking(env *e) {
    hr_ratings_set_seen_min(e->ratings, 3);
    top_rated_since(e);
}
BOTH_STORES(ratings, run, top_rated_since_walking)

/* Every page of top-rated for "m" (limit, since) against a model: the
 * stories it rated after since, by (score, id) descending, each with its
 * rating. */
static void check_top_rated(env *e, const expect_item *want, size_t n_want, const int *rating,
                            const int64_t *time, char (*ids)[17], int n_ids, size_t limit, int64_t since) {
    hr_list_req req = {.limit = limit, .has_since = since >= 0, .since_ms = since};
    size_t got = 0;
    for (int pages = 0; pages < 100; pages++) {
        hr_story_page p;
        hr_err err = {0};
        cr_assert_eq(hr_ratings_top_rated(e->ratings, hr_slice_str("m"), &req, &e->a, &p, &err), HR_OK, "%s",
                     err.msg);
        cr_assert_leq(p.n, limit);
        for (size_t i = 0; i < p.n; i++, got++) {
            cr_assert_lt(got, n_want, "limit %zu since %lld: more than %zu stories", limit, (long long)since,
                         n_want);
            cr_assert_str_eq(p.items[i].id, want[got].id, "limit %zu since %lld: position %zu", limit,
                             (long long)since, got);
            cr_assert_eq(p.items[i].score, (int64_t)want[got].key);
            int j = 0;
            while (j < n_ids && strcmp(ids[j], p.items[i].id) != 0)
                j++;
            cr_assert(p.items[i].has_rating);
            cr_assert_eq(p.items[i].rating, rating[j], "the member's rating of %s", ids[j]);
            cr_assert_eq(p.items[i].rating_time_ms, time[j]);
        }
        if (!p.next_cursor) break;
        req.cursor = p.next_cursor;
    }
    cr_assert_eq(got, n_want, "limit %zu since %lld: %zu of %zu stories", limit, (long long)since, got,
                 n_want);
}

static void top_rated_model(env *e) {
    enum { N = 80 };
    char ids[N][17];
    int score[N], rating[N];
    int64_t time[N];
    unsigned seed = 7;
    for (int i = 0; i < N; i++) {
        story(e, i, T0 + i, ids[i]);
        score[i] = (int)(rand_r(&seed) % 7) - 3; /* the voters' sum: -3..3 */
        for (int v = 0; v < abs(score[i]); v++) {
            char voter[16];
            snprintf(voter, sizeof voter, "v%d", v);
            rate(e, voter, ids[i], score[i] > 0 ? 1 : -1, T0 + 100);
        }
        rating[i] = 2; /* not rated by m */
    }
    /* m rates about half, some twice (the later rating wins) */
    for (int i = 0; i < N; i++) {
        if (rand_r(&seed) % 2) continue;
        int first = (int)(rand_r(&seed) % 3) - 1;
        rate(e, "m", ids[i], first, T0 + 1000 + i);
        rating[i] = first;
        time[i] = T0 + 1000 + i;
        if (rand_r(&seed) % 4 == 0) {
            rating[i] = (int)(rand_r(&seed) % 3) - 1;
            time[i] = T0 + 5000 + (int64_t)(rand_r(&seed) % 100);
            rate(e, "m", ids[i], rating[i], time[i]);
        }
    }
    int64_t sinces[] = {-1, T0 + 1040, T0 + 5050, T0 + 9000};
    size_t limits[] = {1, 3, 7, 100};
    for (size_t si = 0; si < sizeof sinces / sizeof sinces[0]; si++) {
        expect_item want[N];
        size_t n = 0;
        for (int i = 0; i < N; i++) {
            if (rating[i] == 2 || (sinces[si] >= 0 && time[i] <= sinces[si])) continue;
            want[n].key = score[i] + rating[i];
            strcpy(want[n++].id, ids[i]);
        }
        qsort(want, n, sizeof want[0], by_rank);
        for (size_t li = 0; li < sizeof limits / sizeof limits[0]; li++)
            check_top_rated(e, want, n, rating, time, ids, N, limits[li], sinces[si]);
    }
}
BOTH_STORES(ratings, run, top_rated_model)

/* The model through the walk (m has a seen set, filled by the first call),
 * and through walks cut short after their first window (4 entries of each
 * of the 8 shards: 32 of the 80 stories), which then rank m's ratings
 * instead unless that window filled the page. */
static void top_rated_model_walking(env *e) {
    hr_ratings_set_seen_min(e->ratings, 10);
    top_rated_model(e);
}
BOTH_STORES(ratings, run, top_rated_model_walking)

static void top_rated_model_walk_cut(env *e) {
    hr_ratings_set_seen_min(e->ratings, 10);
    hr_ratings_set_walk_max(e->ratings, 1);
    top_rated_model(e);
}
BOTH_STORES(ratings, run, top_rated_model_walk_cut)
