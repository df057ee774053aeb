/* Unit tests of core/ratings over a real store, on both backends: upserts
 * and the indexes and rankings that follow them, concurrency (of threads,
 * and of servers sharing a store), and upserts after a crash. The top-rated
 * and unseen queries have their own file (test_ratings_walk.c). Every test
 * has its own key namespace (ratings_env.h). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fault_store.h"
#include "ratings_env.h"

static hr_rating_page list(env *e, int which, const char *fixed, size_t limit) {
    hr_list_req req = {.limit = limit};
    hr_rating_page p;
    hr_err err = {0};
    int rc = which == 0   ? hr_ratings_by_subject(e->ratings, hr_slice_str(fixed), &req, &e->a, &p, &err)
             : which == 1 ? hr_ratings_by_object(e->ratings, hr_slice_str(fixed), &req, &e->a, &p, &err)
                          : hr_ratings_all(e->ratings, &req, &e->a, &p, &err);
    cr_assert_eq(rc, HR_OK, "%s", err.msg);
    return p;
}

/* ---- Upserts and the indexes ---- */

static void upsert_maintains_indexes(env *e) {
    char x[17], y[17];
    story(e, 1, T0, x);
    story(e, 2, T0 + HOUR, y);
    assert_ranked(e, x, 0, T0);
    cr_assert_eq(rate(e, "alice", x, 1, T0 + 10), 1);
    assert_ranked(e, x, 1, T0);
    cr_assert_eq(rate(e, "bob", x, 1, T0 + 20), 2);
    assert_ranked(e, x, 2, T0);
    /* +1 -> -1 changes the sum by -2, and hot follows */
    cr_assert_eq(rate(e, "alice", x, -1, T0 + 30), 0);
    assert_ranked(e, x, 0, T0);
    cr_assert_eq(rate(e, "bob", x, -1, T0 + 40), -2);
    assert_ranked(e, x, -2, T0);
    /* the same score again: sum unchanged, time moves */
    cr_assert_eq(rate(e, "bob", x, -1, T0 + 50), -2);
    rate(e, "alice", y, 0, T0 + 60);
    assert_ranked(e, y, 0, T0 + HOUR);

    /* one entry per (subject, object), at the latest time */
    hr_rating_page p = list(e, 0, "alice", 10);
    cr_assert_eq(p.n, 2);
    cr_assert(hr_slice_eq(p.items[0].object, hr_slice_str(y)) && p.items[0].score == 0);
    cr_assert(hr_slice_eq(p.items[1].object, hr_slice_str(x)) && p.items[1].score == -1 &&
              p.items[1].time_ms == T0 + 30);
    p = list(e, 1, x, 10);
    cr_assert_eq(p.n, 2);
    cr_assert(hr_slice_eq(p.items[0].subject, hr_slice_str("bob")) && p.items[0].time_ms == T0 + 50);
    cr_assert(hr_slice_eq(p.items[1].subject, hr_slice_str("alice")) && p.items[1].time_ms == T0 + 30);
    p = list(e, 2, NULL, 10);
    cr_assert_eq(p.n, 3);
    cr_assert(hr_slice_eq(p.items[0].subject, hr_slice_str("alice")) &&
              hr_slice_eq(p.items[0].object, hr_slice_str(y)));
    cr_assert(hr_slice_eq(p.items[1].subject, hr_slice_str("bob")) && p.items[1].score == -1);
    cr_assert(hr_slice_eq(p.items[2].subject, hr_slice_str("alice")) && p.items[2].time_ms == T0 + 30);
    /* the single rating */
    hr_rating r;
    cr_assert_eq(hr_ratings_get(e->ratings, hr_slice_str("bob"), hr_slice_str(x), &e->a, &r, NULL), HR_OK);
    cr_assert(r.score == -1 && r.time_ms == T0 + 50);
    cr_assert_eq(hr_ratings_get(e->ratings, hr_slice_str("carol"), hr_slice_str(x), &e->a, &r, NULL),
                 HR_ENOTFOUND);
    /* the story reads its score */
    hr_story st;
    cr_assert_eq(hr_stories_get(e->stories, hr_slice_str(x), false, &e->a, &st, NULL), HR_OK);
    cr_assert_eq(st.score, -2);
}
BOTH_STORES(ratings, run, upsert_maintains_indexes)

/* A subject's record {NSrs/S} is declared a set of times (ratings.h), so
 * RocksDB makes it one, which refuses a score that is not an integer;
 * Redis keeps it as any sorted set. */
static void subject_records_are_sets_of_times(env *e) {
    char x[17], key[96];
    story(e, 1, T0, x);
    rate(e, "alice", x, 1, T0 + 1000);
    snprintf(key, sizeof key, "{%srs/alice}", e->ns);
    hr_batch *b = hr_batch_new();
    size_t op = hr_zadd(b, hr_slice_str(key), 0.5, hr_slice_str("probe"));
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, NULL), HR_OK);
    bool rocks = strcmp(hr_store_caps_of(e->t.store)->kind, "rocksdb") == 0;
    cr_assert_eq(hr_batch_result(b, op)->rc, rocks ? HR_EINVAL : HR_OK);
    hr_batch_free(b);
}
BOTH_STORES(ratings, run, subject_records_are_sets_of_times)

static void latest_by_time_wins(env *e) {
    char x[17];
    story(e, 1, T0, x);
    cr_assert_eq(rate(e, "alice", x, 1, T0 + 1000), 1);
    /* an older rating is not applied; the stored one is answered */
    int64_t sum;
    hr_rating r;
    bool applied = true;
    cr_assert_eq(hr_ratings_put(e->ratings, hr_slice_str("alice"), hr_slice_str(x), -1, T0 + 999, &e->a, &r,
                                &applied, &sum, NULL),
                 HR_OK);
    cr_assert(!applied);
    cr_assert(r.score == 1 && r.time_ms == T0 + 1000);
    cr_assert_eq(sum, 1);
    assert_ranked(e, x, 1, T0);
    /* one as old replaces it */
    cr_assert_eq(rate(e, "alice", x, 0, T0 + 1000), 0);
    assert_ranked(e, x, 0, T0);
    hr_rating_page p = list(e, 0, "alice", 10);
    cr_assert(p.n == 1 && p.items[0].score == 0);
}
BOTH_STORES(ratings, run, latest_by_time_wins)

static void bad_ratings_change_nothing(env *e) {
    char x[17];
    story(e, 1, T0, x);
    rate(e, "alice", x, 1, T0 + 5);
    hr_rating r;
    bool applied;
    int64_t sum;
    hr_err err = {0};
    cr_assert_eq(hr_ratings_put(e->ratings, hr_slice_str("alice"), hr_slice_str(x), 2, T0 + 9, &e->a, &r,
                                &applied, &sum, &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "score"), "%s", err.msg);
    cr_assert_eq(hr_ratings_put(e->ratings, hr_slice_str("alice"), hr_slice_str(x), -2, T0 + 9, &e->a, &r,
                                &applied, &sum, &err),
                 HR_EINVAL);
    cr_assert_eq(hr_ratings_put(e->ratings, hr_slice_str("alice"), hr_slice_str(x), -1, -1, &e->a, &r,
                                &applied, &sum, &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "time"), "%s", err.msg);
    cr_assert_eq(hr_ratings_put(e->ratings, hr_slice_str("alice"), hr_slice_str("0123456789abcdef"), 1, T0,
                                &e->a, &r, &applied, &sum, &err),
                 HR_ENOTFOUND);
    cr_assert(strstr(err.msg, "story"), "%s", err.msg);
    cr_assert_eq(hr_ratings_put(e->ratings, hr_slice_str("al/ice"), hr_slice_str(x), 1, T0, &e->a, &r,
                                &applied, &sum, &err),
                 HR_EINVAL);
    assert_ranked(e, x, 1, T0);
    cr_assert_eq(list(e, 2, NULL, 10).n, 1, "no index entry was added");
    cr_assert_eq(list(e, 0, "alice", 10).items[0].time_ms, T0 + 5);
    hr_rating_page p;
    hr_list_req req = {.limit = 5};
    cr_assert_eq(hr_ratings_by_object(e->ratings, hr_slice_str("0123456789abcdef"), &req, &e->a, &p, &err),
                 HR_ENOTFOUND);
}
BOTH_STORES(ratings, run, bad_ratings_change_nothing)

static void rating_lists_page(env *e) {
    char x[17], ids[30][17];
    story(e, 0, T0, x);
    for (int i = 0; i < 30; i++) {
        story(e, i + 1, T0, ids[i]);
        rate(e, "feed", ids[i], 1, T0 + (i / 2) * 10); /* pairs share a time */
        char subject[16];
        snprintf(subject, sizeof subject, "u%02d", i);
        rate(e, subject, x, i % 3 - 1, T0 + 1000 + i);
    }
    const char *fixed[] = {"feed", x, NULL};
    for (int which = 0; which < 3; which++) {
        size_t total = which == 2 ? 60 : 30, got = 0;
        hr_list_req req = {.limit = 7};
        char seen[64][300];
        int64_t prev = INT64_MAX;
        for (int pages = 0; pages < 20; pages++) {
            hr_rating_page p;
            cr_assert_eq(
                which == 0 ? hr_ratings_by_subject(e->ratings, hr_slice_str(fixed[0]), &req, &e->a, &p, NULL)
                : which == 1 ? hr_ratings_by_object(e->ratings, hr_slice_str(fixed[1]), &req, &e->a, &p, NULL)
                             : hr_ratings_all(e->ratings, &req, &e->a, &p, NULL),
                HR_OK);
            for (size_t i = 0; i < p.n; i++) {
                cr_assert(p.items[i].time_ms <= prev, "newest first");
                prev = p.items[i].time_ms;
                snprintf(seen[got], sizeof seen[got], "%.*s/%.*s", (int)p.items[i].subject.len,
                         p.items[i].subject.ptr, (int)p.items[i].object.len, p.items[i].object.ptr);
                for (size_t j = 0; j < got; j++)
                    cr_assert_str_neq(seen[j], seen[got], "repeated");
                got++;
            }
            req.cursor = p.next_cursor;
            if (!req.cursor) break;
        }
        cr_assert_eq(got, total, "list %d: %zu of %zu", which, got, total);
    }
    /* since is exclusive */
    hr_list_req req = {.limit = 100, .has_since = true, .since_ms = T0 + 130};
    hr_rating_page p;
    cr_assert_eq(hr_ratings_by_subject(e->ratings, hr_slice_str("feed"), &req, &e->a, &p, NULL), HR_OK);
    cr_assert_eq(p.n, 2, "the pair at +140");
    /* and on the story's list and the list of all (time lists) */
    req.since_ms = T0 + 1000 + 20;
    cr_assert_eq(hr_ratings_by_object(e->ratings, hr_slice_str(x), &req, &e->a, &p, NULL), HR_OK);
    cr_assert_eq(p.n, 9, "u21..u29");
    cr_assert_eq(hr_ratings_all(e->ratings, &req, &e->a, &p, NULL), HR_OK);
    cr_assert_eq(p.n, 9, "u21..u29");

    /* Cursors a client made up mean what they say: strictly after
     * (score, member) in the order of stamps. u10's stamp: */
    double s10 = (double)(T0 + 1000 + 10) * 4 + (10 % 3);
    struct {
        double score;
        const char *member;
        size_t want;
    } cur[] = {
        {s10, "u10", 10},     /* an entry's own cursor: u00..u09 */
        {s10, "u11", 11},     /* a member above u10 at its stamp: u10 too */
        {s10 + 0.5, "a", 11}, /* between stamps: u10 and below */
        {-1, "a", 0},         /* below every stamp */
        {1e300, "a", 30},     /* above every stamp */
    };
    for (size_t i = 0; i < sizeof cur / sizeof cur[0]; i++) {
        hr_list_req creq = {.limit = 100,
                            .cursor = hr_list_cursor(&e->a, cur[i].score, hr_slice_str(cur[i].member))};
        cr_assert_eq(hr_ratings_by_object(e->ratings, hr_slice_str(x), &creq, &e->a, &p, NULL), HR_OK);
        cr_assert_eq(p.n, cur[i].want, "cursor %zu: %zu of %zu", i, p.n, cur[i].want);
        /* the list of all also holds feed's 30, all older than u00 */
        cr_assert_eq(hr_ratings_all(e->ratings, &creq, &e->a, &p, NULL), HR_OK);
        size_t all = cur[i].score < 0 ? 0 : cur[i].want + 30;
        cr_assert_eq(p.n, all > 100 ? 100 : all, "all, cursor %zu: %zu", i, p.n);
    }
}
BOTH_STORES(ratings, run, rating_lists_page)

/* ---- Concurrency ---- */

typedef struct worker {
    env *e;
    const char *object;
    int thread;
    int n;
    int fixed_subject; /* all threads as one subject */
} worker;

static void *vote(void *arg) {
    worker *w = arg;
    hr_arena a = HR_ARENA_INIT;
    char subject[32];
    for (int i = 0; i < w->n; i++) {
        if (w->fixed_subject)
            snprintf(subject, sizeof subject, "same");
        else
            snprintf(subject, sizeof subject, "t%d-u%d", w->thread, i);
        hr_rating r;
        bool applied;
        int64_t sum;
        /* up, then (for odd i) down: two upserts of one (subject, object) */
        int rc = hr_ratings_put(w->e->ratings, hr_slice_str(subject), hr_slice_str(w->object), 1,
                                T0 + 1000 + i, &a, &r, &applied, &sum, NULL);
        if (rc == HR_OK && i % 2)
            rc = hr_ratings_put(w->e->ratings, hr_slice_str(subject), hr_slice_str(w->object), -1,
                                T0 + 1000 + i, &a, &r, &applied, &sum, NULL);
        if (rc != HR_OK) return (void *)1;
        hr_arena_reset(&a);
    }
    hr_arena_free(&a);
    return NULL;
}

static void concurrent_votes_exact(env *e) {
    char x[17], y[17];
    story(e, 1, T0, x);
    story(e, 2, T0, y);
    enum { THREADS = 8, EACH = 40 };
    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){e, x, i, EACH, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, vote, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        cr_assert_null(ret, "thread %d failed", i);
    }
    /* per thread: 20 subjects end at +1, 20 at -1 */
    assert_ranked(e, x, 0, T0);
    cr_assert_eq(list(e, 1, x, 1000).n, THREADS * EACH);

    /* one subject from 8 threads at once: the in-process lock keeps the sum
     * equal to the one rating that is stored */
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){e, y, i, EACH, 1};
        cr_assert_eq(pthread_create(&th[i], NULL, vote, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    hr_rating r;
    cr_assert_eq(hr_ratings_get(e->ratings, hr_slice_str("same"), hr_slice_str(y), &e->a, &r, NULL), HR_OK);
    assert_ranked(e, y, r.score, T0);
    cr_assert_eq(list(e, 1, y, 10).n, 1);
}
BOTH_STORES(ratings, run, concurrent_votes_exact)

/* Several herald servers on one shared store (Redis Cluster) upsert the
 * same ratings at once: each server is an hr_ratings of its own, with its
 * own in-process locks, so only the store's lease (core/lease.h) keeps two
 * of them from computing a vote from the same old rating. On RocksDB, which
 * one process owns, one hr_ratings serves every thread, as in the server.
 * Times are distinct, so "the latest wins" names one rating per pair; the
 * sum of each story and every index must end as that rating says. */
enum { SRV_THREADS = 6, SRV_EACH = 60, SRV_SUBJECTS = 3, SRV_STORIES = 2 };

typedef struct server_worker {
    hr_ratings *ratings;
    const char (*ids)[17];
    int thread;
    int score[SRV_EACH], pair[SRV_EACH];
    int64_t time[SRV_EACH];
    int failures;
} server_worker;

static void *server_votes(void *arg) {
    server_worker *w = arg;
    hr_arena a = HR_ARENA_INIT;
    unsigned seed = 7919u * (unsigned)(w->thread + 1);
    for (int i = 0; i < SRV_EACH; i++) {
        w->pair[i] = (int)(rand_r(&seed) % (SRV_SUBJECTS * SRV_STORIES));
        w->score[i] = (int)(rand_r(&seed) % 3) - 1;
        w->time[i] = T0 + 1000 + (int64_t)i * SRV_THREADS + w->thread;
        char subject[16];
        snprintf(subject, sizeof subject, "s%d", w->pair[i] / SRV_STORIES);
        hr_rating r;
        bool applied;
        int64_t sum;
        hr_err err = {0};
        if (hr_ratings_put(w->ratings, hr_slice_str(subject), hr_slice_str(w->ids[w->pair[i] % SRV_STORIES]),
                           w->score[i], w->time[i], &a, &r, &applied, &sum, &err) != HR_OK) {
            fprintf(stderr, "upsert: %s\n", err.msg);
            w->failures++;
        }
        hr_arena_reset(&a);
    }
    hr_arena_free(&a);
    return NULL;
}

static void servers_sharing_a_store_agree(env *e) {
    char ids[SRV_STORIES][17];
    for (int i = 0; i < SRV_STORIES; i++)
        story(e, i, T0, ids[i]);
    int n_servers = hr_store_caps_of(e->t.store)->shared ? 2 : 1;
    hr_ratings *servers[2] = {e->ratings,
                              n_servers > 1 ? hr_ratings_new(e->t.store, e->stories) : e->ratings};
    static server_worker w[SRV_THREADS];
    pthread_t th[SRV_THREADS];
    for (int i = 0; i < SRV_THREADS; i++) {
        w[i] = (server_worker){.ratings = servers[i % n_servers], .ids = (const char(*)[17])ids, .thread = i};
        cr_assert_eq(pthread_create(&th[i], NULL, server_votes, &w[i]), 0);
    }
    for (int i = 0; i < SRV_THREADS; i++)
        pthread_join(th[i], NULL);
    if (n_servers > 1) hr_ratings_free(servers[1]);

    /* the latest upsert of each pair, and the sums it implies */
    int64_t latest[SRV_SUBJECTS * SRV_STORIES] = {0};
    int want[SRV_SUBJECTS * SRV_STORIES] = {0};
    for (int t = 0; t < SRV_THREADS; t++) {
        cr_assert_eq(w[t].failures, 0, "thread %d: %d upserts failed", t, w[t].failures);
        for (int i = 0; i < SRV_EACH; i++)
            if (w[t].time[i] > latest[w[t].pair[i]]) {
                latest[w[t].pair[i]] = w[t].time[i];
                want[w[t].pair[i]] = w[t].score[i];
            }
    }
    for (int o = 0; o < SRV_STORIES; o++) {
        int64_t sum = 0;
        size_t rated = 0;
        for (int sj = 0; sj < SRV_SUBJECTS; sj++) {
            int p = sj * SRV_STORIES + o;
            if (!latest[p]) continue;
            rated++;
            sum += want[p];
            char subject[16];
            snprintf(subject, sizeof subject, "s%d", sj);
            hr_rating r;
            cr_assert_eq(
                hr_ratings_get(e->ratings, hr_slice_str(subject), hr_slice_str(ids[o]), &e->a, &r, NULL),
                HR_OK);
            cr_assert(r.time_ms == latest[p] && r.score == want[p],
                      "%s on story %d: %d at %lld, want %d at %lld", subject, o, r.score,
                      (long long)r.time_ms, want[p], (long long)latest[p]);
        }
        assert_ranked(e, ids[o], sum, T0);
        hr_rating_page by_object = list(e, 1, ids[o], 100);
        cr_assert_eq(by_object.n, rated, "story %d: %zu entries by object for %zu raters", o, by_object.n,
                     rated);
        for (size_t i = 0; i < by_object.n; i++) {
            int p = (by_object.items[i].subject.ptr[1] - '0') * SRV_STORIES + o;
            cr_assert(by_object.items[i].time_ms == latest[p] && by_object.items[i].score == want[p],
                      "by object: a stale entry");
        }
    }
    size_t pairs = 0;
    for (int p = 0; p < SRV_SUBJECTS * SRV_STORIES; p++)
        pairs += latest[p] != 0;
    cr_assert_eq(list(e, 2, NULL, 100).n, pairs, "one entry of all ratings per pair");
}
BOTH_STORES(ratings, run, servers_sharing_a_store_agree)

/* ---- Crashes ---- */

/* How many entries of page p are (subject, object). */
static size_t entries_of(const hr_rating_page *p, const char *subject, const char *object) {
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        n += hr_slice_eq(p->items[i].subject, hr_slice_str(subject)) &&
             hr_slice_eq(p->items[i].object, hr_slice_str(object));
    return n;
}

/* An upsert killed by a crash, and what the client does next on a
 * restarted server. Before it, the subject has rated another story, and
 * bob has rated the story +1; unless `fresh`, the subject too, +1 at
 * T0 + 10. */
typedef struct crash_case {
    const char *what;
    bool fresh;
    int killed_score, then_score;
    int64_t killed_time, then_time;
} crash_case;

static const crash_case crash_cases[] = {
    {"a retry", false, -1, -1, T0 + 30, T0 + 30},
    {"a first rating's retry", true, -1, -1, T0 + 30, T0 + 30},
    {"a later rating", false, -1, 0, T0 + 30, T0 + 40},
    {"a later rating after a first", true, -1, 0, T0 + 30, T0 + 40},
    /* the killed upsert changes no score; the next one is the stored
     * rating again (a client resending it) */
    {"the stored rating again", false, 1, 1, T0 + 30, T0 + 10},
};

/* The case c, killed in batch `at` (fault_store.h) with the ops in keep
 * run: afterwards the rating, the story's sum and hot score, every index
 * and the seen set are as if the killed upsert had run whole or not at
 * all. Returns how many ops the batch the crash hit had (0: the upsert ran
 * whole before batch `at`). */
static size_t crash_then(env *whole, int n, const crash_case *c, size_t at, uint64_t keep) {
    /* a namespace of its own: the list of all ratings holds this case's only */
    env scope = {.t = whole->t};
    snprintf(scope.ns, sizeof scope.ns, "%.20sc%d/", whole->ns, n);
    hr_stories_options so = {.ns = scope.ns};
    scope.stories = hr_stories_new(scope.t.store, &so);
    scope.ratings = hr_ratings_new(scope.t.store, scope.stories);
    env *e = &scope;
    char x[17], other[17];
    story(e, 2 * n, T0, x);
    story(e, 2 * n + 1, T0, other);
    char subject[16];
    snprintf(subject, sizeof subject, "s%d", n);
    hr_ratings_set_seen_min(e->ratings, 1); /* the subject has a seen set */
    rate(e, subject, other, 1, T0 + 5);
    if (!c->fresh) rate(e, subject, x, 1, T0 + 10);
    rate(e, "bob", x, 1, T0 + 20);

    hr_store *dying = fault_store_crash(e->t.store, at, keep);
    hr_stories *stories = hr_stories_new(dying, &so);
    hr_ratings *ratings = hr_ratings_new(dying, stories);
    hr_ratings_set_seen_min(ratings, 1);
    hr_rating r;
    bool applied;
    int64_t sum;
    hr_err err = {0};
    hr_log_set_level(HR_LOG_ERROR); /* the dying server's warnings (a lease not given back) are expected */
    int rc = hr_ratings_put(ratings, hr_slice_str(subject), hr_slice_str(x), c->killed_score, c->killed_time,
                            &e->a, &r, &applied, &sum, &err);
    bool crashed = fault_store_hit(dying);
    cr_assert(crashed ? rc != HR_OK : rc == HR_OK, "%s, crash at %zu/%#llx: rc %d (%s)", c->what, at,
              (unsigned long long)keep, rc, err.msg);
    size_t ops = fault_store_batch_len(dying);
    fault_store_expire_leases(dying);
    hr_ratings_free(ratings);
    hr_stories_free(stories);
    hr_store_close(dying);
    hr_log_set_level(HR_LOG_INFO);

    /* Did the killed upsert happen? Its record is written last. If it did,
     * the client's next rating wins only if it is as new. */
    bool happened =
        hr_ratings_get(e->ratings, hr_slice_str(subject), hr_slice_str(x), &e->a, &r, NULL) == HR_OK &&
        r.time_ms == c->killed_time && r.score == c->killed_score;
    int score = c->then_score;
    int64_t time = c->then_time;
    if (happened && c->killed_time > time) {
        score = c->killed_score;
        time = c->killed_time;
    }

    /* the client, on a restarted server */
    int64_t want_sum = 1 + score; /* bob's +1 and the subject's */
    rate_full(e, subject, x, c->then_score, c->then_time, &sum);
    cr_assert_eq(sum, want_sum, "%s, crash at %zu/%#llx: the sum", c->what, at, (unsigned long long)keep);
    assert_ranked(e, x, want_sum, T0);
    cr_assert_eq(hr_ratings_get(e->ratings, hr_slice_str(subject), hr_slice_str(x), &e->a, &r, NULL), HR_OK);
    cr_assert(r.score == score && r.time_ms == time);
    hr_rating_page by_object = list(e, 1, x, 10);
    cr_assert_eq(by_object.n, 2, "%s, crash at %zu/%#llx: %zu entries by object", c->what, at,
                 (unsigned long long)keep, by_object.n);
    for (size_t i = 0; i < by_object.n; i++)
        if (hr_slice_eq(by_object.items[i].subject, hr_slice_str(subject)))
            cr_assert(by_object.items[i].score == score && by_object.items[i].time_ms == time,
                      "%s, crash at %zu/%#llx: the story's entry of the subject", c->what, at,
                      (unsigned long long)keep);
    hr_rating_page all = list(e, 2, NULL, 100);
    cr_assert_eq(entries_of(&all, subject, x), 1, "%s, crash at %zu/%#llx: one entry of all ratings", c->what,
                 at, (unsigned long long)keep);
    for (size_t i = 0; i < all.n; i++)
        if (hr_slice_eq(all.items[i].subject, hr_slice_str(subject)) &&
            hr_slice_eq(all.items[i].object, hr_slice_str(x)))
            cr_assert(all.items[i].score == score && all.items[i].time_ms == time);
    hr_story_page p = unseen(e, subject, HR_RANK_TOP, 100, NULL);
    for (size_t i = 0; i < p.n; i++)
        cr_assert(strcmp(p.items[i].id, x) != 0, "%s, crash at %zu/%#llx: x is listed unseen", c->what, at,
                  (unsigned long long)keep);
    hr_ratings_free(scope.ratings);
    hr_stories_free(scope.stories);
    hr_arena_free(&scope.a);
    return crashed ? ops : 0;
}

typedef struct crash_walk {
    env *e;
    const crash_case *c;
    int n; /* cases made so far: each has its own stories and subject */
} crash_walk;

static size_t crash_one(void *ctx, size_t at, uint64_t keep) {
    crash_walk *w = ctx;
    return crash_then(w->e, w->n++, w->c, at, keep);
}

/* A server killed anywhere in an upsert: the client's retry completes it,
 * counting the vote once, and another rating instead of a retry replaces
 * it. */
static void upsert_after_a_crash(env *e) {
    crash_walk w = {.e = e};
    size_t tried = 0;
    for (size_t i = 0; i < sizeof crash_cases / sizeof crash_cases[0]; i++) {
        w.c = &crash_cases[i];
        tried += fault_store_every_crash(e->t.store, crash_one, &w);
    }
    cr_assert(tried >= (hr_store_caps_of(e->t.store)->atomic_batches ? 20u : 100u), "%zu crashes tried",
              tried);
}
BOTH_STORES(ratings, run, upsert_after_a_crash)

/* The race the vote's compare-and-set is for. An upsert's first round
 * trip takes the lease in the subject's hash slot and reads the vote note
 * in the story's: on Redis Cluster those reach their nodes in any order,
 * so the note can be read before another server's upsert of the same pair
 * and the lease taken after it. Here server B's whole upsert runs between
 * them (fault_store_split); A's note is then stale, and A must find that
 * out at its vote and read the note again, or the sum is off by B's vote.
 * Redis Cluster only: RocksDB keeps no notes and has one server. */
typedef struct other_server {
    env *e;
    const char *subject, *object;
} other_server;

static void other_server_rates(void *arg) {
    other_server *o = arg;
    hr_ratings *b = hr_ratings_new(o->e->t.store, o->e->stories);
    hr_rating r;
    bool applied;
    int64_t sum;
    hr_err err = {0};
    cr_assert_eq(hr_ratings_put(b, hr_slice_str(o->subject), hr_slice_str(o->object), -1, T0 + 20, &o->e->a,
                                &r, &applied, &sum, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(sum, 0, "B's vote: bob's +1 and the subject's -1");
    hr_ratings_free(b);
}

static void stale_note_is_read_again(env *e) {
    char x[17];
    story(e, 1, T0, x);
    rate(e, "alice", x, 1, T0 + 10);
    rate(e, "bob", x, 1, T0 + 10);
    other_server b = {e, "alice", x};
    hr_store *a_store = fault_store_split(e->t.store, 0, "/votes/", other_server_rates, &b);
    hr_stories_options o = {.ns = e->ns};
    hr_stories *a_stories = hr_stories_new(a_store, &o);
    hr_ratings *a = hr_ratings_new(a_store, a_stories);
    hr_rating r;
    bool applied;
    int64_t sum;
    hr_err err = {0};
    cr_assert_eq(hr_ratings_put(a, hr_slice_str("alice"), hr_slice_str(x), 1, T0 + 30, &e->a, &r, &applied,
                                &sum, &err),
                 HR_OK, "%s", err.msg);
    cr_assert(fault_store_hit(a_store), "B ran between A's note read and its lease");
    cr_assert_eq(sum, 2, "A's +1 after B's -1: +2");
    hr_ratings_free(a);
    hr_stories_free(a_stories);
    hr_store_close(a_store);
    assert_ranked(e, x, 2, T0);
}
Test(ratings_redis, stale_note_is_read_again) {
    run("redis", stale_note_is_read_again);
}
