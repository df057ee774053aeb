/* ratings_env.h — the world the unit tests of core/ratings run in
 * (test_ratings.c, test_ratings_walk.c): stories and ratings over a fresh
 * store of either kind, in a namespace of the test's own, and the steps a
 * test takes (a story, a rating, the rankings' scores, an unseen page).
 * Everything here is static inline: each test file gets its own copy of
 * what it uses. */
#ifndef HR_TEST_RATINGS_ENV_H
#define HR_TEST_RATINGS_ENV_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/arena.h"
#include "common/buf.h"
#include "core/ratings.h"
#include "core/stories.h"
#include "support.h"

#define T0 1700000000000LL
#define HOUR 3600000LL

typedef struct env {
    test_store t;
    char ns[40];
    hr_stories *stories;
    hr_ratings *ratings;
    hr_arena a;
} env;

typedef void (*env_check)(env *e);

static inline void run(const char *kind, env_check check) {
    env e;
    memset(&e, 0, sizeof e);
    test_store_open(&e.t, kind);
    test_unique(e.ns, sizeof e.ns - 1, "t");
    strcat(e.ns, "/");
    hr_stories_options o = {.ns = e.ns};
    e.stories = hr_stories_new(e.t.store, &o);
    e.ratings = hr_ratings_new(e.t.store, e.stories);
    check(&e);
    hr_ratings_free(e.ratings);
    hr_stories_free(e.stories);
    hr_arena_free(&e.a);
    test_store_close(&e.t);
}

/* A story at https://example.com/N; its id into id. */
static inline void story(env *e, int n, int64_t time, char id[17]) {
    char url[64];
    snprintf(url, sizeof url, "https://example.com/%d", n);
    hr_story st;
    bool dup;
    hr_err err = {0};
    cr_assert_eq(
        hr_stories_create(e->stories, hr_slice_str(url), hr_slice_str(""), time, &e->a, &st, &dup, &err),
        HR_OK, "%s", err.msg);
    strcpy(id, st.id);
}

static inline bool rate_full(env *e, const char *subject, const char *object, int score, int64_t time,
                             int64_t *sum) {
    hr_rating r;
    bool applied;
    int64_t s;
    hr_err err = {0};
    int rc = hr_ratings_put(e->ratings, hr_slice_str(subject), hr_slice_str(object), score, time, &e->a, &r,
                            &applied, &s, &err);
    cr_assert_eq(rc, HR_OK, "rate %s %s: %s", subject, object, err.msg);
    if (sum) *sum = s;
    return applied;
}

static inline int64_t rate(env *e, const char *subject, const char *object, int score, int64_t time) {
    int64_t sum;
    cr_assert(rate_full(e, subject, object, score, time, &sum), "rating applied");
    return sum;
}

/* The score and the stored hot score of a story, read from the rankings. */
static inline double zscore(env *e, hr_rank_kind kind, const char *id) {
    hr_buf k = HR_BUF_INIT;
    hr_stories_rank_key(e->stories, kind, hr_stories_rank_shard(hr_slice_str(id)), &k);
    hr_batch *b = hr_batch_new();
    size_t op = hr_zscore(b, hr_buf_slice(&k), hr_slice_str(id));
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, NULL), HR_OK);
    const hr_result *r = hr_batch_result(b, op);
    cr_assert_eq(r->rc, HR_OK, "%s is ranked", id);
    double s = r->score;
    hr_batch_free(b);
    hr_buf_free(&k);
    return s;
}

static inline void assert_ranked(env *e, const char *id, int64_t sum, int64_t time) {
    cr_assert_eq((int64_t)zscore(e, HR_RANK_TOP, id), sum, "top of %s", id);
    cr_assert(zscore(e, HR_RANK_HOT, id) == hr_rank_hot(sum, time), "hot of %s follows the sum %lld", id,
              (long long)sum);
}

static inline hr_story_page unseen(env *e, const char *subject, hr_rank_kind kind, size_t limit,
                                   const char *cursor) {
    hr_list_req req = {.limit = limit, .cursor = cursor};
    hr_story_page p;
    hr_err err = {0};
    cr_assert_eq(hr_ratings_unseen(e->ratings, hr_slice_str(subject), kind, &req, &e->a, &p, &err), HR_OK,
                 "%s", err.msg);
    return p;
}

#endif
