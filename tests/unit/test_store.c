/* test_store.c — the store conformance suite: every implemented primitive of
 * store.h, run against both backends.
 *
 * Each check is written once, as `check_NAME(hr_store *s)`, and STORE_TEST
 * registers it three times: in suite `rocks` on a store opened on a fresh
 * temporary directory (removed afterwards); in suite `rocksmem`, the same
 * with every sorted set kept in memory from its creation
 * (hr_store_options.zset_memory_all: the path rankings take once they move
 * into memory, src/store/rocks/zset_memory.c); and in suite `redis` on the cluster
 * named by $HERALD_TEST_REDIS (scripts/test.sh starts one and sets it).
 * Without the variable the redis tests fail, saying so: a suite that
 * silently passes when its backend is missing would hide a broken backend.
 *
 * The Redis cluster is shared by every test (and every run), so each test
 * names its keys under a random prefix: K("name") is "t:<random>:name", and
 * KT("name") "{t:<random>}:name" for batches that must stay in one hash slot
 * (HR_EXEC_ATOMIC on Redis Cluster).
 *
 * Tests that need time to pass use the distinct counters' now_ms where the
 * contract lets the caller choose the clock, and real sleeps (1.5 s in total
 * per backend) only where the backend's own clock decides. What only the
 * RocksDB backend has (compaction filters, merge operator, reopen) is tested
 * in test_rocks.c.
 *
 * Criterion filters are suite/test globs: --filter 'rocks/STAR' runs one
 * backend, --filter 'STAR/zrange_STAR' one check on both (STAR being '*').
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/clock.h"
#include "store/store.h"
#include "store_fixture.h"

/* Fixtures (store_fixture.h) ---------------------------------------------- */

TestSuite(rocks, .init = fx_rocks_init, .fini = fx_rocks_fini, .timeout = 60);
TestSuite(rocksmem, .init = fx_rocksmem_init, .fini = fx_rocks_fini, .timeout = 60);
TestSuite(redis, .init = fx_redis_init, .fini = fx_fini, .timeout = 60);

/* One check, registered for both backends (RocksDB twice). */
#define STORE_TEST(name)                                                                                     \
    static void check_##name(hr_store *s);                                                                   \
    Test(rocks, name) {                                                                                      \
        check_##name(require_store());                                                                       \
    }                                                                                                        \
    Test(rocksmem, name) {                                                                                   \
        check_##name(require_store());                                                                       \
    }                                                                                                        \
    Test(redis, name) {                                                                                      \
        check_##name(require_store());                                                                       \
    }                                                                                                        \
    static void check_##name(hr_store *s)

/* Helpers ------------------------------------------------------------------- */

static hr_distinct_params dp(int64_t now, int64_t ttl, int64_t limit) {
    hr_distinct_params p = {.now_ms = now, .ttl_ms = ttl, .exact_limit = limit};
    return p;
}

static void assert_value(const hr_result *r, const char *want, size_t n) {
    assert_rc(r, HR_OK);
    cr_assert_eq(r->value.len, n, "value length %zu, expected %zu", r->value.len, n);
    cr_assert_eq(memcmp(r->value.ptr, want, n), 0, "value differs");
}

/* Assert a zrange result: members in order, given as "a b c" (scores not checked). */
static void assert_members(const hr_result *r, const char *want, bool more) {
    assert_rc(r, HR_OK);
    char got[1024] = "";
    for (size_t i = 0; i < r->n_entries; i++) {
        if (i) strcat(got, " ");
        strncat(got, r->entries[i].member.ptr, r->entries[i].member.len);
    }
    cr_assert_str_eq(got, want, "members '%s', expected '%s'", got, want);
    cr_assert_eq(r->more, more, "more=%d, expected %d (members '%s')", r->more, more, got);
}

static hr_zrange_spec range(bool reverse, double min, double max, size_t limit) {
    hr_zrange_spec sp = hr_zrange_all(reverse, limit);
    sp.min = min;
    sp.max = max;
    return sp;
}

static hr_zrange_spec after(hr_zrange_spec sp, double score, const char *member) {
    sp.has_cursor = true;
    sp.cursor_score = score;
    sp.cursor_member = M(member);
    return sp;
}

static int64_t dadd_n(hr_store *s, hr_slice key, const char *fmt, long from, long to, hr_distinct_params p) {
    /* batches of 250, as the API layer would send them */
    int64_t last = 0;
    hr_batch *b = hr_batch_new();
    for (long i = from; i < to;) {
        hr_batch_reset(b);
        size_t idx = 0;
        for (int k = 0; k < 250 && i < to; k++, i++)
            idx = hr_dadd(b, key, Mf(fmt, i), &p);
        exec(s, b);
        assert_rc(hr_batch_result(b, idx), HR_OK);
        last = hr_batch_result(b, idx)->num;
    }
    hr_batch_free(b);
    return last;
}

static void assert_near(int64_t got, double want, double rel, const char *what) {
    cr_assert(fabs((double)got - want) <= rel * want, "%s: %ld, expected %.0f +- %.1f %%", what, (long)got,
              want, 100 * rel);
}

/* Values -------------------------------------------------------------------- */

/* A store with nothing queued settles at once (RocksDB: after a few
 * writes, which a memtable holds; Redis: nothing to wait for). test_rocks.c
 * checks that RocksDB waits for flushes and compactions. */
STORE_TEST(settle_of_an_idle_store_is_immediate) {
    hr_batch *b = hr_batch_new();
    hr_put(b, M("settle"), M("v"), 0);
    exec(s, b);
    hr_batch_free(b);
    bool settled = false;
    double waited = hr_store_settle(s, 30, &settled);
    cr_assert(settled, "settled");
    cr_assert(waited >= 0 && waited < 5, "waited %.2f s", waited);
}

STORE_TEST(value_get_put_del) {
    hr_slice k = K("v");
    assert_rc(ONE(s, hr_get(B, k)), HR_ENOTFOUND);
    assert_rc(ONE(s, hr_put(B, k, M("one"), 0)), HR_OK);
    assert_value(ONE(s, hr_get(B, k)), "one", 3);
    ONE(s, hr_put(B, k, M("second value"), 0));
    assert_value(ONE(s, hr_get(B, k)), "second value", 12);
    ONE(s, hr_put(B, k, M(""), 0));
    assert_value(ONE(s, hr_get(B, k)), "", 0);
    cr_assert_eq(ONE(s, hr_del(B, k))->num, 1);
    assert_rc(ONE(s, hr_get(B, k)), HR_ENOTFOUND);
    cr_assert_eq(ONE(s, hr_del(B, k))->num, 0, "deleting a missing key deletes nothing");
}

STORE_TEST(value_binary_safe) {
    hr_slice k1 = Kn("a\0b\xff", 4), k2 = Kn("a\0c\xff", 4);
    const char v1[] = {'x', 0, 'y', (char)0xff, 0};
    hr_batch *b = hr_batch_new();
    hr_put(b, k1, hr_slice_of(v1, sizeof v1), 0);
    hr_put(b, k2, M("other"), 0);
    exec(s, b);
    assert_value(ONE(s, hr_get(B, k1)), v1, sizeof v1);
    assert_value(ONE(s, hr_get(B, k2)), "other", 5);
    hr_batch_free(b);
}

STORE_TEST(value_expiry) {
    int64_t now = hr_now_ms();
    hr_slice k = K("e");
    ONE(s, hr_put(B, k, M("past"), now - 1000));
    assert_rc(ONE(s, hr_get(B, k)), HR_ENOTFOUND);
    ONE(s, hr_put(B, k, M("future"), now + 60000));
    assert_value(ONE(s, hr_get(B, k)), "future", 6);
    /* expire 0 removes the expiry; expire in the past deletes */
    cr_assert_eq(ONE(s, hr_expire(B, k, 0))->num, 1);
    assert_value(ONE(s, hr_get(B, k)), "future", 6);
    cr_assert_eq(ONE(s, hr_expire(B, k, now - 1))->num, 1);
    assert_rc(ONE(s, hr_get(B, k)), HR_ENOTFOUND);
    cr_assert_eq(ONE(s, hr_expire(B, K("missing"), now + 1000))->num, 0);
    /* and the store's own clock expires it */
    ONE(s, hr_put(B, k, M("short"), hr_now_ms() + 300));
    assert_value(ONE(s, hr_get(B, k)), "short", 5);
    usleep(450 * 1000);
    assert_rc(ONE(s, hr_get(B, k)), HR_ENOTFOUND);
}

STORE_TEST(value_multi_get_100) {
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < 100; i++)
        hr_put(b, K(Mf("mg%ld", i).ptr), Mf("value-%ld", i), 0);
    exec(s, b);
    hr_batch_reset(b);
    /* 100 present interleaved with 10 missing, in one batch */
    for (long i = 0; i < 110; i++)
        hr_get(b, K(Mf(i % 11 == 10 ? "nope%ld" : "mg%ld", i - i / 11).ptr));
    exec(s, b);
    for (long i = 0; i < 110; i++) {
        const hr_result *r = hr_batch_result(b, (size_t)i);
        if (i % 11 == 10) {
            assert_rc(r, HR_ENOTFOUND);
        } else {
            hr_slice want = Mf("value-%ld", i - i / 11);
            assert_value(r, want.ptr, want.len);
        }
    }
    hr_batch_free(b);
}

/* Expiry of every type -------------------------------------------------------- */

STORE_TEST(expire_every_type) {
    int64_t now = hr_now_ms();
    hr_distinct_params p = dp(now, 60000, 100);
    hr_batch *b = hr_batch_new();
    hr_put(b, K("s"), M("v"), 0);
    hr_incr(b, K("c"), 5);
    hr_zadd(b, K("z"), 1, M("m"));
    hr_dadd(b, K("d"), M("m"), &p);
    exec(s, b);

    /* a future expiry keeps every type readable */
    hr_batch_reset(b);
    const char *names[] = {"s", "c", "z", "d"};
    for (int i = 0; i < 4; i++)
        hr_expire(b, K(names[i]), now + 60000);
    exec(s, b);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(hr_batch_result(b, (size_t)i)->num, 1, "expire %s", names[i]);
    hr_batch_reset(b);
    hr_get(b, K("s"));
    hr_counter_get(b, K("c"));
    hr_zcard(b, K("z"));
    hr_dcount(b, K("d"), &p);
    exec(s, b);
    assert_value(hr_batch_result(b, 0), "v", 1);
    cr_assert_eq(hr_batch_result(b, 1)->num, 5);
    cr_assert_eq(hr_batch_result(b, 2)->num, 1);
    cr_assert_eq(hr_batch_result(b, 3)->num, 1);

    /* a past one removes every type */
    hr_batch_reset(b);
    for (int i = 0; i < 4; i++)
        hr_expire(b, K(names[i]), now - 1);
    exec(s, b);
    hr_batch_reset(b);
    hr_get(b, K("s"));
    hr_counter_get(b, K("c"));
    hr_zcard(b, K("z"));
    hr_dcount(b, K("d"), &p);
    hr_zscore(b, K("z"), M("m"));
    exec(s, b);
    assert_rc(hr_batch_result(b, 0), HR_ENOTFOUND);
    cr_assert_eq(hr_batch_result(b, 1)->num, 0);
    cr_assert_eq(hr_batch_result(b, 2)->num, 0);
    cr_assert_eq(hr_batch_result(b, 3)->num, 0);
    assert_rc(hr_batch_result(b, 4), HR_ENOTFOUND);
    /* and the keys are free for new values of any type */
    cr_assert_eq(ONE(s, hr_zadd(B, K("s"), 2, M("x")))->num, 1);
    cr_assert_eq(ONE(s, hr_incr(B, K("z"), 3))->num, 3);
    hr_batch_free(b);
}

/* Counters ------------------------------------------------------------------------ */

STORE_TEST(counter_incr) {
    hr_slice k = K("cnt");
    const hr_result *r = ONE(s, hr_counter_get(B, k));
    assert_rc(r, HR_OK);
    cr_assert_eq(r->num, 0, "a missing counter reads 0");
    cr_assert_eq(ONE(s, hr_incr(B, k, 5))->num, 5);
    cr_assert_eq(ONE(s, hr_incr(B, k, -7))->num, -2);
    cr_assert_eq(ONE(s, hr_incr(B, k, 0))->num, -2);
    cr_assert_eq(ONE(s, hr_counter_get(B, k))->num, -2);
    cr_assert_eq(ONE(s, hr_incr(B, k, INT64_C(1) << 40))->num, (INT64_C(1) << 40) - 2);
    cr_assert_eq(ONE(s, hr_del(B, k))->num, 1);
    cr_assert_eq(ONE(s, hr_counter_get(B, k))->num, 0);
}

enum { THREADS = 8 };

typedef struct worker {
    hr_store *s;
    hr_slice key;
    int id, n;
    int64_t *seen; /* results, n of them */
    int failures;
    int64_t max;
} worker;

static void *incr_worker(void *arg) {
    worker *w = arg;
    hr_batch *b = hr_batch_new();
    for (int i = 0; i < w->n; i++) {
        hr_batch_reset(b);
        hr_incr(b, w->key, 1);
        if (hr_store_exec(w->s, b, 0, NULL) != HR_OK || hr_batch_result(b, 0)->rc != HR_OK)
            w->failures++;
        else
            w->seen[i] = hr_batch_result(b, 0)->num;
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST(counter_concurrent_incr) {
    enum { PER = 400, TOTAL = THREADS * PER };
    worker w[THREADS];
    pthread_t t[THREADS];
    int64_t *seen = calloc(TOTAL, sizeof *seen);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.s = s, .key = K("hot"), .id = i, .n = PER, .seen = seen + i * PER};
        pthread_create(&t[i], NULL, incr_worker, &w[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(w[i].failures, 0);
    cr_assert_eq(ONE(s, hr_counter_get(B, K("hot")))->num, TOTAL);
    /* every increment answered a different new value: 1..TOTAL once each */
    char *hit = calloc(TOTAL + 1, 1);
    for (int i = 0; i < TOTAL; i++) {
        cr_assert(seen[i] >= 1 && seen[i] <= TOTAL, "answer %ld out of range", (long)seen[i]);
        cr_assert_not(hit[seen[i]], "two increments answered %ld", (long)seen[i]);
        hit[seen[i]] = 1;
    }
    free(hit);
    free(seen);
}

STORE_TEST(value_put_if_missing_del_if_equal) {
    int64_t now = hr_now_ms();
    hr_slice k = K("lock");
    cr_assert_eq(ONE(s, hr_put_if_missing(B, k, M("a"), now + 60000))->num, 1, "a missing key is written");
    cr_assert_eq(ONE(s, hr_put_if_missing(B, k, M("b"), now + 60000))->num, 0, "a live key is not");
    assert_value(ONE(s, hr_get(B, k)), "a", 1);
    cr_assert_eq(ONE(s, hr_del_if_equal(B, k, M("b")))->num, 0, "another value is not deleted");
    assert_value(ONE(s, hr_get(B, k)), "a", 1);
    cr_assert_eq(ONE(s, hr_del_if_equal(B, k, M("a")))->num, 1);
    assert_rc(ONE(s, hr_get(B, k)), HR_ENOTFOUND);
    cr_assert_eq(ONE(s, hr_del_if_equal(B, k, M("a")))->num, 0, "nothing left to delete");
    /* an expired key is a missing one */
    ONE(s, hr_put(B, k, M("old"), now + 60000));
    cr_assert_eq(ONE(s, hr_expire(B, k, now - 1))->num, 1);
    cr_assert_eq(ONE(s, hr_put_if_missing(B, k, M("new"), 0))->num, 1);
    assert_value(ONE(s, hr_get(B, k)), "new", 3);
    /* a key of another type exists */
    hr_slice z = K("zset");
    ONE(s, hr_zadd(B, z, 1, M("m")));
    cr_assert_eq(ONE(s, hr_put_if_missing(B, z, M("x"), 0))->num, 0);
    assert_rc(ONE(s, hr_del_if_equal(B, z, M("x"))), HR_EWRONGTYPE);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 1, "the set is untouched");
}

/* Threads take a lock made of the two ops, and while they hold it, add 1 to
 * a number by reading it and writing it back: no update is lost only if
 * one thread at a time holds the lock (without it, this test loses some). */
typedef struct locker {
    hr_store *s;
    hr_slice lock, number;
    int id, n, failures;
} locker;

static void *lock_worker(void *arg) {
    locker *w = arg;
    hr_batch *b = hr_batch_new();
    char me[16];
    snprintf(me, sizeof me, "holder-%d", w->id);
    for (int done = 0; done < w->n;) {
        hr_batch_reset(b);
        hr_put_if_missing(b, w->lock, hr_slice_str(me), hr_now_ms() + 30000);
        if (hr_store_exec(w->s, b, 0, NULL) != HR_OK) {
            w->failures++;
            break;
        }
        if (hr_batch_result(b, 0)->num != 1) {
            usleep(50);
            continue;
        }
        hr_batch_reset(b);
        hr_get(b, w->number);
        bool ok = hr_store_exec(w->s, b, 0, NULL) == HR_OK;
        const hr_result *r = hr_batch_result(b, 0);
        char next[24] = "0";
        if (ok && r->rc == HR_OK && r->value.len < sizeof next) {
            memcpy(next, r->value.ptr, r->value.len);
            next[r->value.len] = '\0';
        }
        long v = strtol(next, NULL, 10);
        snprintf(next, sizeof next, "%ld", v + 1);
        hr_batch_reset(b);
        hr_put(b, w->number, hr_slice_str(next), 0);
        ok = ok && hr_store_exec(w->s, b, 0, NULL) == HR_OK;
        hr_batch_reset(b);
        hr_del_if_equal(b, w->lock, hr_slice_str(me));
        ok = ok && hr_store_exec(w->s, b, 0, NULL) == HR_OK && hr_batch_result(b, 0)->num == 1;
        if (!ok) w->failures++;
        done++;
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST(value_lock_of_two_ops_excludes) {
    enum { PER = 40 };
    locker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (locker){.s = s, .lock = K("mutex"), .number = K("number"), .id = i, .n = PER};
        pthread_create(&t[i], NULL, lock_worker, &w[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(w[i].failures, 0, "thread %d: %d failures", i, w[i].failures);
    const char *want = Mf("%ld", THREADS * PER).ptr;
    assert_value(ONE(s, hr_get(B, K("number"))), want, strlen(want));
    assert_rc(ONE(s, hr_get(B, K("mutex"))), HR_ENOTFOUND);
}

/* Sorted sets ------------------------------------------------------------------------ */

STORE_TEST(zset_add_score_rem_card) {
    hr_slice z = K("z");
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 0);
    assert_rc(ONE(s, hr_zscore(B, z, M("a"))), HR_ENOTFOUND);
    cr_assert_eq(ONE(s, hr_zadd(B, z, 1.5, M("a")))->num, 1, "new member");
    cr_assert_eq(ONE(s, hr_zadd(B, z, 2, M("b")))->num, 1);
    cr_assert_eq(ONE(s, hr_zadd(B, z, -3.25, M("a")))->num, 0, "updated member");
    cr_assert_eq(ONE(s, hr_zadd(B, z, -3.25, M("a")))->num, 0, "same score again");
    const hr_result *r = ONE(s, hr_zscore(B, z, M("a")));
    assert_rc(r, HR_OK);
    cr_assert_eq(r->score, -3.25);
    assert_rc(ONE(s, hr_zscore(B, z, M("nope"))), HR_ENOTFOUND);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 2);
    cr_assert_eq(ONE(s, hr_zrem(B, z, M("nope")))->num, 0);
    cr_assert_eq(ONE(s, hr_zrem(B, z, M("a")))->num, 1);
    cr_assert_eq(ONE(s, hr_zrem(B, z, M("a")))->num, 0);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 1);
    /* millisecond times are exact */
    ONE(s, hr_zadd(B, z, 1733000000123.0, M("t")));
    cr_assert_eq(ONE(s, hr_zscore(B, z, M("t")))->score, 1733000000123.0);
    /* the old score is gone from the index: only the new one ranges */
    hr_zrange_spec sp = range(false, -10, 0, 10);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "", false);
}

STORE_TEST(zset_incr) {
    hr_slice z = K("z");
    const hr_result *r = ONE(s, hr_zincr(B, z, 1, M("story")));
    assert_rc(r, HR_OK);
    cr_assert_eq(r->score, 1, "a new member starts at 0");
    cr_assert_eq(ONE(s, hr_zincr(B, z, -3, M("story")))->score, -2);
    cr_assert_eq(ONE(s, hr_zincr(B, z, 0.5, M("story")))->score, -1.5);
    cr_assert_eq(ONE(s, hr_zscore(B, z, M("story")))->score, -1.5);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 1);
    /* the range index follows the new score */
    ONE(s, hr_zadd(B, z, 0, M("other")));
    hr_zrange_spec sp = hr_zrange_all(false, 10);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "story other", false);
    ONE(s, hr_zincr(B, z, 2, M("story")));
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "other story", false);
    /* in one batch, each increment sees the one before */
    hr_batch_reset(B);
    size_t a = hr_zincr(B, z, 1, M("story"));
    size_t c = hr_zincr(B, z, 1, M("story"));
    exec(s, B);
    cr_assert_eq(hr_batch_result(B, a)->score, 1.5);
    cr_assert_eq(hr_batch_result(B, c)->score, 2.5);
    hr_batch_reset(B);
    assert_rc(ONE(s, hr_zincr(B, z, NAN, M("story"))), HR_EINVAL);
    assert_rc(ONE(s, hr_zincr(B, z, INFINITY, M("story"))), HR_EINVAL);
    cr_assert_eq(ONE(s, hr_zscore(B, z, M("story")))->score, 2.5, "a rejected increment changes nothing");
    ONE(s, hr_put(B, K("v"), M("x"), 0));
    assert_rc(ONE(s, hr_zincr(B, K("v"), 1, M("m"))), HR_EWRONGTYPE);
}

static void *zincr_worker(void *arg) {
    worker *w = arg;
    hr_batch *b = hr_batch_new();
    for (int i = 0; i < w->n; i++) {
        hr_batch_reset(b);
        hr_zincr(b, w->key, (w->id % 2) ? 2 : -1, hr_slice_str("m"));
        if (hr_store_exec(w->s, b, 0, NULL) != HR_OK || hr_batch_result(b, 0)->rc != HR_OK) w->failures++;
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST(zset_incr_with_its_companion_write) {
    hr_slice top = KT("top"), hot = KT("hot");
    const hr_result *r = ONE(s, hr_zincr_with(B, top, 2, M("m"), hot, 7.5, 3, NULL));
    assert_rc(r, HR_OK);
    cr_assert(r->score == 2 && r->num == 0, "score %g, num %ld: 2 is not the awaited 3", r->score, (long)r->num);
    assert_rc(ONE(s, hr_zscore(B, hot, M("m"))), HR_ENOTFOUND);
    r = ONE(s, hr_zincr_with(B, top, 1, M("m"), hot, 7.5, 3, NULL));
    cr_assert(r->score == 3 && r->num == 1, "score %g, num %ld: 3 writes hot", r->score, (long)r->num);
    cr_assert(ONE(s, hr_zscore(B, hot, M("m")))->score == 7.5);
    r = ONE(s, hr_zincr_with(B, top, -1, M("m"), hot, 9, 3, NULL));
    cr_assert(r->score == 2 && r->num == 0);
    cr_assert(ONE(s, hr_zscore(B, hot, M("m")))->score == 7.5, "hot kept");
    cr_assert(ONE(s, hr_zscore(B, top, M("m")))->score == 2);
    /* a new member starts at 0, as with hr_zincr */
    r = ONE(s, hr_zincr_with(B, top, -1, M("n"), hot, -4, -1, NULL));
    cr_assert(r->score == -1 && r->num == 1);
    cr_assert(ONE(s, hr_zscore(B, hot, M("n")))->score == -4);
    assert_rc(ONE(s, hr_zincr_with(B, top, NAN, M("m"), hot, 1, 1, NULL)), HR_EINVAL);
    cr_assert(ONE(s, hr_zscore(B, top, M("m")))->score == 2, "a refused op changes nothing");
}

STORE_TEST(zset_incr_with_a_note) {
    hr_slice top = KT("top"), hot = KT("hot"), votes = KT("votes");
    hr_zincr_note note = {.key = votes, .member = M("s1"), .score = 41, .was = NAN};
    const hr_result *r = ONE(s, hr_zincr_with(B, top, 1, M("m"), hot, 5, 1, &note));
    cr_assert(r->rc == HR_OK && r->score == 1 && r->num == 1, "rc %d score %g num %ld", r->rc, r->score,
              (long)r->num);
    cr_assert(ONE(s, hr_zscore(B, votes, M("s1")))->score == 41, "the note is written with the increment");
    /* the note must be as the caller saw it: now it is there, at 41 */
    assert_rc(ONE(s, hr_zincr_with(B, top, 1, M("m"), hot, 5, 2, &note)), HR_ECONFLICT);
    note.was = 40;
    assert_rc(ONE(s, hr_zincr_with(B, top, 1, M("m"), hot, 5, 2, &note)), HR_ECONFLICT);
    cr_assert(ONE(s, hr_zscore(B, top, M("m")))->score == 1, "a conflict writes nothing");
    cr_assert(ONE(s, hr_zscore(B, votes, M("s1")))->score == 41);
    assert_rc(ONE(s, hr_zscore(B, hot, M("m"))), HR_OK);
    /* as seen: written whatever the new score, and the note replaced */
    note.was = 41;
    note.score = 42;
    r = ONE(s, hr_zincr_with(B, top, -2, M("m"), hot, 6, 5, &note));
    cr_assert(r->rc == HR_OK && r->score == -1 && r->num == 0, "score %g num %ld", r->score, (long)r->num);
    cr_assert(ONE(s, hr_zscore(B, votes, M("s1")))->score == 42);
    /* a note per member */
    hr_zincr_note other = {.key = votes, .member = M("s2"), .score = 42, .was = NAN};
    cr_assert(ONE(s, hr_zincr_with(B, top, 1, M("m"), hot, 6, 5, &other))->score == 0);
    cr_assert(ONE(s, hr_zcard(B, votes))->num == 2);
    /* bad notes are refused and change nothing */
    hr_zincr_note bad = {.key = votes, .member = M(""), .score = 43, .was = 42};
    assert_rc(ONE(s, hr_zincr_with(B, top, 1, M("m"), hot, 6, 0, &bad)), HR_EINVAL);
    bad = (hr_zincr_note){.key = votes, .member = M("s1"), .score = NAN, .was = 42};
    assert_rc(ONE(s, hr_zincr_with(B, top, 1, M("m"), hot, 6, 0, &bad)), HR_EINVAL);
    ONE(s, hr_put(B, KT("plain"), M("v"), 0));
    bad = (hr_zincr_note){.key = KT("plain"), .member = M("s1"), .score = 44, .was = NAN};
    assert_rc(ONE(s, hr_zincr_with(B, top, 1, M("m"), hot, 6, 0, &bad)), HR_EWRONGTYPE);
    cr_assert(ONE(s, hr_zscore(B, top, M("m")))->score == 0, "refused: the sum is unchanged");
    cr_assert(ONE(s, hr_zscore(B, votes, M("s1")))->score == 42);
}

STORE_TEST(zset_concurrent_incr) {
    enum { PER = 300 };
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.s = s, .key = K("votes"), .id = i, .n = PER};
        pthread_create(&t[i], NULL, zincr_worker, &w[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(w[i].failures, 0);
    /* half the threads add 2, half add -1: no increment may be lost */
    cr_assert_eq(ONE(s, hr_zscore(B, K("votes"), M("m")))->score, (THREADS / 2) * PER * (2 - 1));
}

/* z: (-1.5 z) (1 a) (2 b) (2 c) (3 d) (5 e) */
static void fill_zset(hr_store *s, hr_slice z) {
    hr_batch *b = hr_batch_new();
    hr_zadd(b, z, 2, M("c"));
    hr_zadd(b, z, 5, M("e"));
    hr_zadd(b, z, -1.5, M("z"));
    hr_zadd(b, z, 1, M("a"));
    hr_zadd(b, z, 3, M("d"));
    hr_zadd(b, z, 2, M("b"));
    exec(s, b);
    hr_batch_free(b);
}

STORE_TEST(zrange_bounds_and_order) {
    hr_slice z = K("z");
    fill_zset(s, z);
    hr_zrange_spec sp = hr_zrange_all(false, 100);
    const hr_result *r = ONE(s, hr_zrange(B, z, &sp));
    assert_members(r, "z a b c d e", false);
    cr_assert_eq(r->entries[0].score, -1.5);
    cr_assert_eq(r->entries[5].score, 5);
    sp = hr_zrange_all(true, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "e d c b a z", false);
    sp = range(false, 2, 3, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "b c d", false);
    sp = range(true, 2, 3, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "d c b", false);
    sp = range(false, 2, 2, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "b c", false);
    sp = range(false, 3.5, 4.5, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "", false);
    sp = range(false, 4, 1, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "", false);
    sp = hr_zrange_all(false, 10);
    assert_members(ONE(s, hr_zrange(B, K("missing"), &sp)), "", false);
}

STORE_TEST(zrange_limit_offset_more) {
    hr_slice z = K("z");
    fill_zset(s, z);
    hr_zrange_spec sp = hr_zrange_all(false, 2);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "z a", true);
    sp.offset = 2;
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "b c", true);
    sp.offset = 4;
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "d e", false);
    sp.offset = 6;
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "", false);
    sp = hr_zrange_all(true, 3);
    sp.offset = 1;
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "d c b", true);
    sp = range(false, 1, 3, 4);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "a b c d", false);
    sp = range(false, 1, 3, 3);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "a b c", true);
}

/* "m{n-1} ... m01 m00": the members of a set where m<i> scores 100 - i, in
 * ascending order. */
static void descending_names(long n, char *out, size_t cap) {
    out[0] = '\0';
    for (long i = n - 1; i >= 0; i--) {
        char m[32];
        snprintf(m, sizeof m, "%sm%02ld", out[0] ? " " : "", i);
        strncat(out, m, cap - strlen(out) - 1);
    }
}

/* A set grown one member a batch and shrunk again reads the same at every
 * size: on RocksDB small sets live in their metadata record and spill to
 * sub-keys past 128 members (rocks/zset_inline.c); 140 crosses that, in a batch
 * that also reads the set it spills. */
STORE_TEST(zset_grows_and_shrinks_across_sizes) {
    hr_slice z = K("grow");
    char want[2048];
    hr_batch *b = hr_batch_new();
    for (long n = 1; n <= 140; n++) {
        hr_batch_reset(b);
        hr_zadd(b, z, (double)(100 - (n - 1)), Mf("m%02ld", n - 1));
        hr_zrange_spec all = hr_zrange_all(false, 1000), back = hr_zrange_all(true, 1);
        size_t fwd = hr_zrange(b, z, &all), last = hr_zrange(b, z, &back), card = hr_zcard(b, z);
        size_t first = hr_zscore(b, z, M("m00"));
        exec(s, b);
        descending_names(n, want, sizeof want);
        assert_members(hr_batch_result(b, fwd), want, false);
        assert_members(hr_batch_result(b, last), "m00", n > 1);
        cr_assert_eq(hr_batch_result(b, card)->num, n);
        cr_assert_eq(hr_batch_result(b, first)->score, 100);
    }
    hr_batch_free(b);
    /* a cursor in the middle, both ways */
    hr_zrange_spec sp = after(range(false, 0, 100, 3), 70, "m30");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "m29 m28 m27", true);
    sp = after(range(true, 0, 100, 2), 70, "m30");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "m31 m32", true);
    /* shrink again: a member moved, the low scores cut, one removed */
    cr_assert_eq(ONE(s, hr_zadd(B, z, 99.5, M("m05")))->num, 0);
    cr_assert_eq(ONE(s, hr_zremrange_score(B, z, -INFINITY, 80))->num, 120);
    cr_assert_eq(ONE(s, hr_zrem(B, z, M("m07")))->num, 1);
    hr_zrange_spec all = hr_zrange_all(false, 100);
    assert_members(ONE(s, hr_zrange(B, z, &all)),
                   "m19 m18 m17 m16 m15 m14 m13 m12 m11 m10 m09 m08 m06 m04 m03 m02 m01 m05 m00", false);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 19);
}

/* Two range results hold the same entries (members and scores) and `more`. */
static void assert_same_range(const hr_result *got, const hr_result *want, const char *what) {
    assert_rc(got, want->rc);
    cr_assert_eq(got->n_entries, want->n_entries, "%s: %zu entries, expected %zu", what, got->n_entries,
                 want->n_entries);
    for (size_t i = 0; i < want->n_entries; i++) {
        cr_assert(hr_slice_eq(got->entries[i].member, want->entries[i].member), "%s: entry %zu is '%.*s', not '%.*s'",
                  what, i, (int)got->entries[i].member.len, got->entries[i].member.ptr,
                  (int)want->entries[i].member.len, want->entries[i].member.ptr);
        cr_assert_eq(got->entries[i].score, want->entries[i].score, "%s: entry %zu", what, i);
    }
    cr_assert_eq(got->more, want->more, "%s: more", what);
}

/* Every read of the set of times `t` answers as the same reads of the plain
 * set `z` holding the same members. */
static void assert_sets_agree(hr_store *s, hr_slice z, hr_slice t, int stage) {
    static const double bounds[][2] = {{-INFINITY, INFINITY}, {5000, 20000}, {7000.5, 31000}, {-3000, -1}};
    static const size_t limits[] = {1, 7, 1000};
    hr_batch *b = hr_batch_new();
    size_t cz = hr_zcard(b, z), ct = hr_zcard(b, t);
    size_t sz[8], st[8];
    for (long i = 0; i < 8; i++) {
        sz[i] = hr_zscore(b, z, Mf("m%03ld", i * 41));
        st[i] = hr_zscore(b, t, Mf("m%03ld", i * 41));
    }
    exec(s, b);
    cr_assert_eq(hr_batch_result(b, ct)->num, hr_batch_result(b, cz)->num, "stage %d: sizes", stage);
    for (int i = 0; i < 8; i++) {
        assert_rc(hr_batch_result(b, st[i]), hr_batch_result(b, sz[i])->rc);
        cr_assert_eq(hr_batch_result(b, st[i])->score, hr_batch_result(b, sz[i])->score, "stage %d", stage);
    }
    char what[96];
    for (int rev = 0; rev < 2; rev++)
        for (size_t bi = 0; bi < sizeof bounds / sizeof bounds[0]; bi++)
            for (size_t li = 0; li < 3; li++)
                for (int cur = 0; cur < 4; cur++) {
                    hr_zrange_spec sp = range(rev, bounds[bi][0], bounds[bi][1], limits[li]);
                    sp.offset = cur == 3 ? 3 : 0;
                    if (cur == 1) sp = after(sp, 12000, "m100"); /* a cursor on an integer score */
                    if (cur == 2) sp = after(sp, 15000.5, "m");  /* between scores */
                    hr_batch_reset(b);
                    size_t oz = hr_zrange(b, z, &sp), ot = hr_zrange(b, t, &sp);
                    exec(s, b);
                    snprintf(what, sizeof what, "stage %d, %s [%g, %g] limit %zu cursor %d", stage,
                             rev ? "desc" : "asc", bounds[bi][0], bounds[bi][1], limits[li], cur);
                    assert_same_range(hr_batch_result(b, ot), hr_batch_result(b, oz), what);
                    /* and page on from the last entry read */
                    const hr_result *r = hr_batch_result(b, oz);
                    if (r->n_entries == 0) continue;
                    hr_zentry last = r->entries[r->n_entries - 1];
                    char m[16];
                    snprintf(m, sizeof m, "%.*s", (int)last.member.len, last.member.ptr);
                    hr_zrange_spec next = after(range(rev, bounds[bi][0], bounds[bi][1], limits[li]), last.score, m);
                    hr_batch_reset(b);
                    oz = hr_zrange(b, z, &next), ot = hr_zrange(b, t, &next);
                    exec(s, b);
                    assert_same_range(hr_batch_result(b, ot), hr_batch_result(b, oz), what);
                }
    hr_batch_free(b);
}

STORE_TEST(a_set_of_times_answers_as_a_sorted_set) {
    hr_slice z = K("plain"), t = K("times");
    hr_batch *b = hr_batch_new();
    /* Scores with ties and a few negatives, in batches: inline at first,
     * then past the inline limit (rocks/zset_inline.c), then moved and removed. */
    for (long i = 0; i < 300; i++) {
        int64_t score = (i * 7919 % 40) * 1000 - (i % 13 == 0 ? 2500 : 0);
        if (i % 50 == 0) hr_batch_reset(b);
        hr_zadd(b, z, (double)score, Mf("m%03ld", i));
        hr_zadd_time(b, t, score, Mf("m%03ld", i));
        if (i % 50 == 49 || i == 9) {
            exec(s, b);
            for (size_t j = 0; j < hr_batch_len(b); j += 2)
                cr_assert_eq(hr_batch_result(b, j + 1)->num, hr_batch_result(b, j)->num, "new?");
            hr_batch_reset(b);
            if (i == 9) assert_sets_agree(s, z, t, 1);
        }
    }
    assert_sets_agree(s, z, t, 2);
    hr_batch_reset(b);
    for (long i = 0; i < 300; i += 7) {
        hr_zadd(b, z, (double)(i * 100), Mf("m%03ld", i)); /* moved */
        hr_zadd_time(b, t, i * 100, Mf("m%03ld", i));
    }
    for (long i = 3; i < 300; i += 11) {
        hr_zrem(b, z, Mf("m%03ld", i));
        hr_zrem(b, t, Mf("m%03ld", i));
    }
    exec(s, b);
    for (size_t j = 0; j < hr_batch_len(b); j += 2)
        cr_assert_eq(hr_batch_result(b, j + 1)->num, hr_batch_result(b, j)->num, "op %zu", j);
    assert_sets_agree(s, z, t, 3);
    /* removals by score and trims from either end */
    hr_batch_reset(b);
    hr_zremrange_score(b, z, 5000, 9000);
    hr_zremrange_score(b, t, 5000, 9000);
    hr_ztrim(b, z, 200, true);
    hr_ztrim(b, t, 200, true);
    hr_ztrim(b, z, 150, false);
    hr_ztrim(b, t, 150, false);
    exec(s, b);
    for (size_t j = 0; j < hr_batch_len(b); j += 2) {
        cr_assert_gt(hr_batch_result(b, j)->num, 0, "op %zu removed nothing: the test would prove little", j);
        cr_assert_eq(hr_batch_result(b, j + 1)->num, hr_batch_result(b, j)->num, "op %zu", j);
    }
    assert_sets_agree(s, z, t, 4);
    hr_batch_free(b);
}

STORE_TEST(zrange_cursor_exclusive) {
    hr_slice z = K("z");
    fill_zset(s, z);
    hr_zrange_spec sp = after(hr_zrange_all(false, 100), 2, "b");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "c d e", false);
    sp = after(hr_zrange_all(false, 100), 2, "c");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "d e", false);
    sp = after(hr_zrange_all(false, 100), 2, "bb"); /* not a member: between b and c */
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "c d e", false);
    sp = after(hr_zrange_all(true, 100), 2, "c");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "b a z", false);
    sp = after(hr_zrange_all(true, 100), 2, "b");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "a z", false);
    sp = after(hr_zrange_all(true, 2), 5, "e");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "d c", true);
    /* a cursor outside the bounds: the bounds win */
    sp = after(range(false, 2, 3, 100), -100, "x");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "b c d", false);
    sp = after(range(true, 2, 3, 100), 100, "x");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "d c b", false);
    sp = after(range(false, 1, 3, 100), 2, "b");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "c d", false);
    sp = after(hr_zrange_all(false, 100), 5, "e");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "", false);
}

STORE_TEST(zrange_pages_over_equal_scores) {
    /* 50 members with one score: pages of 7 by cursor see each once, in
     * member order, both ways */
    hr_slice z = K("eq");
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < 50; i++)
        hr_zadd(b, z, 7, Mf("m%02ld", i));
    exec(s, b);
    for (int reverse = 0; reverse < 2; reverse++) {
        hr_zrange_spec sp = hr_zrange_all(reverse, 7);
        long seen = 0;
        char last[16] = "";
        for (int page = 0; page < 20; page++) {
            const hr_result *r = ONE(s, hr_zrange(B, z, &sp));
            assert_rc(r, HR_OK);
            for (size_t i = 0; i < r->n_entries; i++, seen++) {
                long want = reverse ? 49 - seen : seen;
                hr_slice m = Mf("m%02ld", want);
                cr_assert(hr_slice_eq(r->entries[i].member, m), "page %d entry %zu: %.*s, expected %s", page,
                          i, (int)r->entries[i].member.len, r->entries[i].member.ptr, m.ptr);
            }
            if (!r->more) break;
            cr_assert_eq(r->n_entries, 7);
            snprintf(last, sizeof last, "%.*s", (int)r->entries[6].member.len, r->entries[6].member.ptr);
            sp = after(sp, 7, last); /* hr_zrange copies the cursor */
        }
        cr_assert_eq(seen, 50, "%s pages saw %ld members", reverse ? "reverse" : "forward", seen);
    }
    hr_batch_free(b);
}

STORE_TEST(zremrange_score) {
    hr_slice z = K("z");
    fill_zset(s, z);
    cr_assert_eq(ONE(s, hr_zremrange_score(B, z, 2, 3))->num, 3);
    hr_zrange_spec sp = hr_zrange_all(false, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "z a e", false);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 3);
    cr_assert_eq(ONE(s, hr_zremrange_score(B, z, 10, 20))->num, 0);
    cr_assert_eq(ONE(s, hr_zremrange_score(B, z, -INFINITY, INFINITY))->num, 3);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 0);
    cr_assert_eq(ONE(s, hr_zremrange_score(B, K("missing"), 0, 1))->num, 0);
}

/* Members fmt(0) .. fmt(n - 1), each scored by its number, in one batch. */
static void zadd_numbered(hr_store *s, hr_slice z, long n, const char *fmt) {
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < n; i++)
        hr_zadd(b, z, (double)i, Mf(fmt, i));
    exec(s, b);
    hr_batch_free(b);
}

STORE_TEST(ztrim_both_directions) {
    hr_slice z = K("z");
    zadd_numbered(s, z, 10, "m%ld");
    hr_batch *b = hr_batch_new();
    cr_assert_eq(ONE(s, hr_ztrim(B, z, 7, true))->num, 3, "keep the 7 highest");
    hr_zrange_spec sp = hr_zrange_all(false, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "m3 m4 m5 m6 m7 m8 m9", false);
    cr_assert_eq(ONE(s, hr_ztrim(B, z, 4, false))->num, 3, "keep the 4 lowest");
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "m3 m4 m5 m6", false);
    cr_assert_eq(ONE(s, hr_ztrim(B, z, 10, true))->num, 0, "nothing past keep");
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 4);
    /* ties are cut by member order */
    hr_batch_reset(b);
    hr_zadd(b, K("tie"), 1, M("a"));
    hr_zadd(b, K("tie"), 1, M("b"));
    hr_zadd(b, K("tie"), 1, M("c"));
    exec(s, b);
    cr_assert_eq(ONE(s, hr_ztrim(B, K("tie"), 2, true))->num, 1);
    assert_members(ONE(s, hr_zrange(B, K("tie"), &sp)), "b c", false);
    cr_assert_eq(ONE(s, hr_ztrim(B, z, 0, true))->num, 4, "keep none");
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 0);
    hr_batch_free(b);
}

STORE_TEST(zset_empty_disappears) {
    hr_slice z = K("z");
    ONE(s, hr_zadd(B, z, 1, M("only")));
    cr_assert_eq(ONE(s, hr_zrem(B, z, M("only")))->num, 1);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 0);
    cr_assert_eq(ONE(s, hr_expire(B, z, hr_now_ms() + 10000))->num, 0, "an emptied set is no key");
    cr_assert_eq(ONE(s, hr_del(B, z))->num, 0);
    /* the key is free for another type */
    assert_rc(ONE(s, hr_put(B, z, M("v"), 0)), HR_OK);
    assert_value(ONE(s, hr_get(B, z)), "v", 1);
}

STORE_TEST(zset_del_whole) {
    hr_slice z = K("big");
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < 300; i++)
        hr_zadd(b, z, (double)(i % 17), Mf("m%ld", i));
    exec(s, b);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 300);
    cr_assert_eq(ONE(s, hr_del(B, z))->num, 1);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 0);
    hr_zrange_spec sp = hr_zrange_all(false, 100);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "", false);
    assert_rc(ONE(s, hr_zscore(B, z, M("m5"))), HR_ENOTFOUND);
    /* a new set under the key starts empty: none of the old members return */
    cr_assert_eq(ONE(s, hr_zadd(B, z, 3, M("m5")))->num, 1);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 1);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "m5", false);
    /* overwriting with a value drops the set the same way */
    ONE(s, hr_put(B, z, M("v"), 0));
    cr_assert_eq(ONE(s, hr_zadd(B, K("other"), 1, M("x")))->num, 1);
    ONE(s, hr_del(B, z));
    cr_assert_eq(ONE(s, hr_zadd(B, z, 1, M("m7")))->num, 1);
    assert_members(ONE(s, hr_zrange(B, z, &sp)), "m7", false);
    hr_batch_free(b);
}

/* A writer and readers at once: every atomic write batch is seen whole or
 * not at all, and never undone (the RocksDB backend caches records between
 * batches: this is what its cache must not break). */
typedef struct snap_shared {
    hr_store *s;
    hr_slice a, b, set;
    atomic_int done;
    int failures;
    char why[160];
} snap_shared;

static void snap_fail(snap_shared *sh, const char *fmt, long x, long y) {
    if (sh->failures++ == 0) snprintf(sh->why, sizeof sh->why, fmt, x, y);
}

static void *snap_writer(void *arg) {
    snap_shared *sh = arg;
    hr_batch *b = hr_batch_new();
    char v[32];
    for (long i = 1; i <= 1500; i++) {
        hr_batch_reset(b);
        snprintf(v, sizeof v, "%ld", i);
        hr_put(b, sh->a, hr_slice_str(v), 0);
        hr_pset_add(b, sh->set, (uint64_t)i, 0);
        hr_put(b, sh->b, hr_slice_str(v), 0);
        if (hr_store_exec(sh->s, b, HR_EXEC_ATOMIC, NULL) != HR_OK) snap_fail(sh, "write %ld failed%ld", i, 0);
    }
    atomic_store(&sh->done, 1);
    hr_batch_free(b);
    return NULL;
}

static long value_of(const hr_result *r) {
    return r->rc == HR_OK ? strtol(r->value.ptr, NULL, 10) : 0; /* values end in the batch's NUL */
}

static void *snap_reader(void *arg) {
    snap_shared *sh = arg;
    hr_batch *b = hr_batch_new();
    uint64_t probe[8];
    long last = 0;
    while (!atomic_load(&sh->done) && sh->failures == 0) {
        hr_batch_reset(b);
        size_t ra = hr_get(b, sh->a);
        for (int k = 0; k < 8; k++)
            probe[k] = (uint64_t)(last + k); /* around the last value seen */
        size_t rt = hr_pset_test(b, sh->set, probe, 8);
        size_t rb = hr_get(b, sh->b);
        if (hr_store_exec(sh->s, b, HR_EXEC_ATOMIC, NULL) != HR_OK) {
            snap_fail(sh, "read failed%ld%ld", 0, 0);
            break;
        }
        long va = value_of(hr_batch_result(b, ra)), vb = value_of(hr_batch_result(b, rb));
        if (va != vb) snap_fail(sh, "a batch saw a = %ld and b = %ld", va, vb);
        if (va < last) snap_fail(sh, "a went back from %ld to %ld", last, va);
        const hr_result *t = hr_batch_result(b, rt);
        for (int k = 0; k < 8 && t->rc == HR_OK; k++) {
            long m = last + k;
            bool want = m >= 1 && m <= va;
            if ((t->value.ptr[k] != 0) != want) snap_fail(sh, "member %ld against a = %ld", m, va);
        }
        last = va;
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST(atomic_batches_seen_whole_under_load) {
    snap_shared sh = {.s = s, .a = KT("a"), .b = KT("b"), .set = KT("set")};
    pthread_t w, r[2];
    pthread_create(&w, NULL, snap_writer, &sh);
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, snap_reader, &sh);
    pthread_join(w, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    cr_assert_eq(sh.failures, 0, "%d failures, the first: %s", sh.failures, sh.why);
    cr_assert_eq(value_of(ONE(s, hr_get(B, sh.b))), 1500);
}

STORE_TEST(zset_batch_sees_own_writes) {
    /* In one batch, a range read sees the adds, moves and removals before
     * it (and a set kept in memory merges them with its committed order). */
    hr_slice z = K("z");
    fill_zset(s, z); /* (-1.5 z) (1 a) (2 b) (2 c) (3 d) (5 e) */
    hr_batch *b = hr_batch_new();
    hr_zadd(b, z, 4, M("new"));
    hr_zincr(b, z, 10, M("a")); /* 1 -> 11 */
    hr_zrem(b, z, M("c"));
    hr_zadd(b, z, -2, M("d")); /* 3 -> -2 */
    hr_zrange_spec fwd = hr_zrange_all(false, 100), rev = hr_zrange_all(true, 3);
    size_t r1 = hr_zrange(b, z, &fwd);
    size_t r2 = hr_zrange(b, z, &rev);
    hr_zrange_spec mid = range(false, 0, 4.5, 100);
    size_t r3 = hr_zrange(b, z, &mid);
    hr_zrange_spec cur = after(hr_zrange_all(true, 100), 4, "new");
    size_t r4 = hr_zrange(b, z, &cur);
    size_t sc = hr_zscore(b, z, M("d"));
    size_t card = hr_zcard(b, z);
    exec(s, b);
    assert_members(hr_batch_result(b, r1), "d z b new e a", false);
    assert_members(hr_batch_result(b, r2), "a e new", true);
    assert_members(hr_batch_result(b, r3), "b new", false);
    assert_members(hr_batch_result(b, r4), "b z d", false);
    cr_assert_eq(hr_batch_result(b, sc)->score, -2);
    cr_assert_eq(hr_batch_result(b, card)->num, 6);
    /* and the next batch reads the same */
    assert_members(ONE(s, hr_zrange(B, z, &fwd)), "d z b new e a", false);
    hr_batch_free(b);
}

typedef char member_name[24];

/* A set's order, (score, member bytes), over a model's indices. */
static const double *sort_scores;
static const member_name *sort_names;
static int by_score_then_member(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (sort_scores[x] != sort_scores[y]) return sort_scores[x] < sort_scores[y] ? -1 : 1;
    return hr_slice_cmp(hr_slice_str(sort_names[x]), hr_slice_str(sort_names[y]));
}

/* Read the whole set z by cursor pages of `page` in both directions and
 * compare with a model: its want members are names[order[0..want)], with
 * scores score[order[i]] (order is sorted here, into the set's order). */
static void assert_pages(hr_store *s, hr_slice z, const member_name *names, const double *score, int *order,
                         int want, size_t page) {
    sort_scores = score;
    sort_names = names;
    qsort(order, (size_t)want, sizeof *order, by_score_then_member);
    for (int reverse = 0; reverse < 2; reverse++) {
        hr_zrange_spec sp = hr_zrange_all(reverse, page);
        int seen = 0;
        member_name lm; /* the cursor's member: sp points to it */
        for (;;) {
            const hr_result *r = ONE(s, hr_zrange(B, z, &sp));
            assert_rc(r, HR_OK);
            for (size_t i = 0; i < r->n_entries; i++, seen++) {
                cr_assert(seen < want, "more members than the model's %d", want);
                int k = order[reverse ? want - 1 - seen : seen];
                cr_assert(hr_slice_eq(r->entries[i].member, hr_slice_str(names[k])) &&
                              r->entries[i].score == score[k],
                          "%s entry %d: %.*s %g, expected %s %g", reverse ? "reverse" : "forward", seen,
                          (int)r->entries[i].member.len, r->entries[i].member.ptr, r->entries[i].score,
                          names[k], score[k]);
            }
            if (!r->more) break;
            const hr_zentry *last = &r->entries[r->n_entries - 1];
            snprintf(lm, sizeof lm, "%.*s", (int)last->member.len, last->member.ptr);
            sp = after(sp, last->score, lm);
        }
        cr_assert_eq(seen, want, "%s: %d members, expected %d", reverse ? "reverse" : "forward", seen, want);
    }
}

/* The set of n members m0000.. with scores score[] (those live), read by
 * pages of 97 both ways against the model, and its zcard. */
static void assert_ranking(hr_store *s, hr_slice z, const double *score, const bool *live, int n) {
    int *order = malloc((size_t)n * sizeof *order), want = 0;
    member_name *names = malloc((size_t)n * sizeof *names);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "m%04d", i);
        if (live[i]) order[want++] = i;
    }
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, want);
    assert_pages(s, z, names, score, order, want, 97);
    free(names);
    free(order);
}

/* Members m0000.. m<first-1> with scores i % mod, added to z in one batch
 * (b, reset first) and to the model assert_ranking reads. */
static void model_fill(hr_store *s, hr_batch *b, hr_slice z, double *score, bool *live, int first, int mod) {
    hr_batch_reset(b);
    for (int i = 0; i < first; i++) {
        score[i] = (double)(i % mod);
        live[i] = true;
        hr_zadd(b, z, score[i], Mf("m%04ld", i));
    }
    exec(s, b);
}

STORE_TEST(zset_ranking_under_moves) {
    /* A ranking: 1200 members, then many score changes concentrated on a
     * few (as votes are), removals and new members; the order, read by
     * cursor pages both ways, always matches a model. On RocksDB this also
     * moves the set into memory midway (more changes than members). */
    enum { N = 1300, FIRST = 1200 };
    hr_slice z = K("rank");
    double score[N] = {0};
    bool live[N] = {0};
    hr_batch *b = hr_batch_new();
    model_fill(s, b, z, score, live, FIRST, 7);
    assert_ranking(s, z, score, live, N);
    unsigned r = 12345;
    for (int round = 0; round < 30; round++) {
        hr_batch_reset(b);
        for (int j = 0; j < 100; j++) {
            r = r * 1103515245u + 12345u;
            int k = (int)((r >> 8) % 1000) < 700 ? (int)((r >> 8) % 20) : (int)((r >> 8) % FIRST);
            if (!live[k]) continue;
            double d = (r & 1) ? 1 : -1;
            score[k] += d;
            hr_zincr(b, z, d, Mf("m%04ld", k));
        }
        if (round % 10 == 9) { /* a removal and a new member now and then */
            int gone = round, added = FIRST + round;
            live[gone] = false;
            hr_zrem(b, z, Mf("m%04ld", gone));
            live[added] = true;
            score[added] = 3.5;
            hr_zadd(b, z, 3.5, Mf("m%04ld", added));
        }
        exec(s, b);
        if (round % 10 == 9) assert_ranking(s, z, score, live, N);
    }
    /* a zadd that moves a member to where it already is changes nothing */
    cr_assert_eq(ONE(s, hr_zadd(B, z, score[100], M("m0100")))->num, 0);
    assert_ranking(s, z, score, live, N);
    hr_batch_free(b);
}

/* Members of ranking_ties: many share their first 8 bytes, some end
 * within them, and scores tie (rocks/zset_memory.c orders by the score and the
 * first 8 bytes before it reads a member's node). */
enum { TIE_MEMBERS = 603 };
static member_name tie_name[TIE_MEMBERS];
static double tie_score[TIE_MEMBERS];

STORE_TEST(zset_ranking_ties_on_shared_prefixes) {
    /* Members "prefix__000".."prefix__299" (the same first 8 bytes),
     * "prefix_0".."prefix_299" (8 and 9 bytes: "prefix_1" is the head of
     * "prefix_10"), and "prefix_", "prefix__" and "p", which end inside
     * the others' first 8 bytes; scores 0..2, then 3000 moves of +-1. The
     * order, read by cursor pages of 37 both ways, matches a model. */
    hr_slice z = K("ties");
    int n = 0;
    for (int i = 0; i < 300; i++)
        snprintf(tie_name[n++], sizeof tie_name[0], "prefix__%03d", i);
    for (int i = 0; i < 300; i++)
        snprintf(tie_name[n++], sizeof tie_name[0], "prefix_%d", i);
    snprintf(tie_name[n++], sizeof tie_name[0], "prefix_");
    snprintf(tie_name[n++], sizeof tie_name[0], "prefix__");
    snprintf(tie_name[n++], sizeof tie_name[0], "p");
    cr_assert_eq(n, TIE_MEMBERS);
    hr_batch *b = hr_batch_new();
    for (int i = 0; i < n; i++) {
        tie_score[i] = (double)(i % 3);
        hr_zadd(b, z, tie_score[i], M(tie_name[i]));
    }
    exec(s, b);
    unsigned r = 777;
    for (int round = 0; round < 30; round++) {
        hr_batch_reset(b);
        for (int j = 0; j < 100; j++) {
            r = r * 1103515245u + 12345u;
            int k = (int)((r >> 8) % (unsigned)n);
            double d = (r & 1) ? 1 : -1;
            tie_score[k] += d;
            hr_zincr(b, z, d, M(tie_name[k]));
        }
        exec(s, b);
    }
    hr_batch_free(b);

    int order[TIE_MEMBERS];
    for (int i = 0; i < n; i++)
        order[i] = i;
    assert_pages(s, z, tie_name, tie_score, order, n, 37);
}

STORE_TEST(zset_range_size_hint) {
    /* max_size is a hint: a set of at most that many reads as without it;
     * a bigger one either does too, or answers nothing with more */
    hr_slice z = K("hinted");
    zadd_numbered(s, z, 200, "m%03ld");
    hr_zrange_spec plain = hr_zrange_all(false, 32);
    plain.min = 10;
    const hr_result *want = ONE(s, hr_zrange(B, z, &plain));
    cr_assert_eq(want->n_entries, 32);
    cr_assert(want->more);
    cr_assert(hr_slice_eq(want->entries[0].member, hr_slice_str("m010")));
    size_t hints[] = {200, 1000, 199, 1};
    for (size_t h = 0; h < 4; h++) {
        hr_zrange_spec hinted = plain;
        hinted.max_size = hints[h];
        const hr_result *got = ONE(s, hr_zrange(B, z, &hinted));
        cr_assert(got->more, "hint %zu", hints[h]);
        if (hints[h] < 200 && got->n_entries == 0) continue; /* skipped */
        cr_assert_eq(got->n_entries, 32, "hint %zu", hints[h]);
        for (size_t i = 0; i < 32; i++)
            cr_assert(hr_slice_eq(got->entries[i].member, Mf("m%03ld", (long)(10 + i))),
                      "hint %zu, entry %zu", hints[h], i);
    }
}

STORE_TEST(zset_range_with_size) {
    /* with_size answers zcard's count along with the range, whatever the
     * range returns: a missing key, an inline set, one on sub-keys, a read
     * past its end, one the size hint skips, and one with a bound that
     * leaves entries out */
    zadd_numbered(s, K("small"), 5, "m%03ld");
    zadd_numbered(s, K("big"), 300, "m%03ld");
    const char *sets[] = {"missing", "small", "big"};
    for (int k = 0; k < 3; k++) {
        hr_zrange_spec specs[4];
        specs[0] = hr_zrange_all(false, 32);
        specs[1] = hr_zrange_all(true, 10);
        specs[1].offset = 1000;
        specs[2] = hr_zrange_all(false, 32);
        specs[2].max_size = 100;
        specs[3] = hr_zrange_all(false, 32);
        specs[3].min = 3;
        int64_t card = ONE(s, hr_zcard(B, K(sets[k])))->num;
        for (int i = 0; i < 4; i++) {
            const hr_result *plain = ONE(s, hr_zrange(B, K(sets[k]), &specs[i]));
            size_t n = plain->n_entries;
            bool more = plain->more;
            specs[i].with_size = true;
            const hr_result *got = ONE(s, hr_zrange(B, K(sets[k]), &specs[i]));
            cr_assert_eq(got->num, card, "%s, spec %d", sets[k], i);
            cr_assert_eq(got->n_entries, n, "%s, spec %d", sets[k], i);
            cr_assert_eq(got->more, more, "%s, spec %d", sets[k], i);
        }
    }
    cr_assert_eq(ONE(s, hr_zcard(B, K("big")))->num, 300);
}

STORE_TEST(zset_whole_reads_follow_changes) {
    /* A set read whole again and again between small changes (a friend
     * list): on RocksDB the whole reads are cached (rocks/zset_cache.c), and
     * every read after a change, whole or by pages either way, must show
     * it. 300 members: past the inline sets, and too few changes to move
     * the set into memory. */
    enum { N = 400, FIRST = 300 };
    hr_slice z = K("friends");
    double score[N] = {0};
    bool live[N] = {0};
    hr_batch *b = hr_batch_new();
    model_fill(s, b, z, score, live, FIRST, 5);
    hr_zrange_spec whole = hr_zrange_all(false, 1000), whole_rev = hr_zrange_all(true, 1000);
    for (int round = 0; round < 20; round++) {
        for (int twice = 0; twice < 2; twice++) { /* the second reads from the cache */
            size_t n_live = 0;
            for (int i = 0; i < N; i++)
                n_live += live[i];
            cr_assert_eq(ONE(s, hr_zrange(B, z, &whole))->n_entries, n_live, "round %d", round);
            cr_assert_eq(ONE(s, hr_zrange(B, z, &whole_rev))->n_entries, n_live, "round %d", round);
            assert_ranking(s, z, score, live, N);
        }
        hr_batch_reset(b);
        int added = FIRST + round, gone = round * 7, moved = round * 11 + 3;
        live[added] = true;
        score[added] = 2.5;
        hr_zadd(b, z, 2.5, Mf("m%04ld", added));
        live[gone] = false;
        hr_zrem(b, z, Mf("m%04ld", gone));
        if (live[moved]) {
            score[moved] += 10;
            hr_zincr(b, z, 10, Mf("m%04ld", moved));
        }
        exec(s, b);
    }
    /* deleted and made again: the new set only */
    ONE(s, hr_del(B, z));
    memset(live, 0, sizeof live);
    hr_batch_reset(b);
    for (int i = 0; i < 200; i++) {
        score[i] = -(double)i;
        live[i] = true;
        hr_zadd(b, z, score[i], Mf("m%04ld", i));
    }
    exec(s, b);
    cr_assert_eq(ONE(s, hr_zrange(B, z, &whole))->n_entries, 200);
    assert_ranking(s, z, score, live, N);
    hr_batch_free(b);
}

/* A writer adds a member to a set and sets a count in the same atomic
 * batch; readers read the count and the whole set in one batch: the set
 * must have exactly that many members (a cached set that missed a write
 * would have fewer). */
typedef struct whole_shared {
    hr_store *s;
    hr_slice n, set;
    atomic_int done;
    int failures;
    char why[160];
} whole_shared;

enum { WHOLE_FIRST = 200, WHOLE_ADDS = 600 };

static void *whole_writer(void *arg) {
    whole_shared *sh = arg;
    hr_batch *b = hr_batch_new();
    char v[32], m[32];
    for (long i = WHOLE_FIRST; i < WHOLE_FIRST + WHOLE_ADDS; i++) {
        hr_batch_reset(b);
        snprintf(m, sizeof m, "m%04ld", i);
        snprintf(v, sizeof v, "%ld", i + 1);
        hr_zadd(b, sh->set, (double)(i % 13), hr_slice_str(m));
        hr_put(b, sh->n, hr_slice_str(v), 0);
        if (hr_store_exec(sh->s, b, HR_EXEC_ATOMIC, NULL) != HR_OK && sh->failures++ == 0)
            snprintf(sh->why, sizeof sh->why, "write %ld failed", i);
    }
    atomic_store(&sh->done, 1);
    hr_batch_free(b);
    return NULL;
}

static void *whole_reader(void *arg) {
    whole_shared *sh = arg;
    hr_batch *b = hr_batch_new();
    hr_zrange_spec whole = hr_zrange_all(false, 5000);
    while (!atomic_load(&sh->done) && sh->failures == 0) {
        hr_batch_reset(b);
        size_t rn = hr_get(b, sh->n);
        size_t rz = hr_zrange(b, sh->set, &whole);
        if (hr_store_exec(sh->s, b, HR_EXEC_ATOMIC, NULL) != HR_OK) {
            if (sh->failures++ == 0) snprintf(sh->why, sizeof sh->why, "read failed");
            break;
        }
        long n = value_of(hr_batch_result(b, rn));
        size_t got = hr_batch_result(b, rz)->n_entries;
        if ((long)got != n && sh->failures++ == 0)
            snprintf(sh->why, sizeof sh->why, "a batch saw n = %ld and %zu members", n, got);
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST(zset_whole_reads_seen_whole_under_load) {
    /* Sets kept in memory are read at their latest state, not at the
     * batch's snapshot (store.h): this check is for the others. */
    if (zsets_in_memory) return;
    whole_shared sh = {.s = s, .n = KT("n"), .set = KT("set")};
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < WHOLE_FIRST; i++)
        hr_zadd(b, sh.set, (double)(i % 13), Mf("m%04ld", i));
    hr_put(b, sh.n, Mf("%ld", WHOLE_FIRST), 0);
    exec(s, b);
    hr_batch_free(b);
    pthread_t w, r[2];
    pthread_create(&w, NULL, whole_writer, &sh);
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, whole_reader, &sh);
    pthread_join(w, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    cr_assert_eq(sh.failures, 0, "%d failures, the first: %s", sh.failures, sh.why);
    cr_assert_eq(ONE(s, hr_zcard(B, sh.set))->num, WHOLE_FIRST + WHOLE_ADDS);
}

STORE_TEST(wrong_type) {
    ONE(s, hr_put(B, K("str"), M("v"), 0));
    ONE(s, hr_zadd(B, K("zs"), 1, M("m")));
    hr_distinct_params p = dp(hr_now_ms(), 60000, 10);
    hr_batch *b = hr_batch_new();
    hr_zadd(b, K("str"), 1, M("m"));
    hr_zrange_spec sp = hr_zrange_all(false, 10);
    hr_zrange(b, K("str"), &sp);
    hr_zcard(b, K("str"));
    hr_get(b, K("zs"));
    hr_incr(b, K("zs"), 1);
    hr_dadd(b, K("zs"), M("m"), &p);
    hr_get(b, K("str")); /* the batch goes on after a wrong-type op */
    exec(s, b);
    for (size_t i = 0; i < 6; i++)
        assert_rc(hr_batch_result(b, i), HR_EWRONGTYPE);
    assert_value(hr_batch_result(b, 6), "v", 1);
    /* nothing was changed by the refused ops */
    cr_assert_eq(ONE(s, hr_zcard(B, K("zs")))->num, 1);
    hr_batch_free(b);
}

/* Distinct counts --------------------------------------------------------------------- */

STORE_TEST(distinct_exact) {
    hr_slice d = K("d");
    hr_distinct_params p = dp(hr_now_ms(), 60000, 100);
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 0);
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("a"), &p))->num, 1);
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("b"), &p))->num, 2);
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("a"), &p))->num, 2, "re-add does not count twice");
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("c"), &p))->num, 3);
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 3);
    cr_assert_eq(dadd_n(s, d, "m%ld", 0, 97, p), 100, "exact up to exact_limit");
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 100);
}

STORE_TEST(distinct_member_ttl) {
    /* the caller's clock decides which members count */
    int64_t t0 = hr_now_ms();
    hr_slice d = K("d");
    hr_distinct_params p = dp(t0, 1000, 100);
    ONE(s, hr_dadd(B, d, M("a"), &p));
    p.now_ms = t0 + 500;
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("b"), &p))->num, 2);
    p.now_ms = t0 + 999;
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 2);
    p.now_ms = t0 + 1000;
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 1, "a counts while now < t + ttl");
    p.now_ms = t0 + 900;
    ONE(s, hr_dadd(B, d, M("a"), &p)); /* refresh a */
    p.now_ms = t0 + 1600;
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 1, "a refreshed at t0+900, b expired");
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("c"), &p))->num, 2, "an add after expiry counts the live ones");
    p.now_ms = t0 + 5000;
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 0);
}

STORE_TEST(distinct_expires_in_real_time) {
    hr_slice d = K("d");
    hr_distinct_params p = dp(hr_now_ms(), 1000, 100);
    ONE(s, hr_dadd(B, d, M("a"), &p));
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("b"), &p))->num, 2);
    usleep(1100 * 1000);
    p.now_ms = hr_now_ms();
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 0);
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("c"), &p))->num, 1);
}

STORE_TEST(distinct_converts_to_sketch) {
    hr_slice d = K("d");
    hr_distinct_params p = dp(hr_now_ms(), 3600 * 1000, 100);
    cr_assert_eq(dadd_n(s, d, "user-%ld", 0, 100, p), 100);
    const hr_result *r = ONE(s, hr_dadd(B, d, M("user-100"), &p));
    assert_near(r->num, 101, 0.03, "first count in sketch mode");
    int64_t n = dadd_n(s, d, "user-%ld", 101, 5000, p);
    assert_near(n, 5000, 0.03, "count returned by the last add");
    int64_t c = ONE(s, hr_dcount(B, d, &p))->num;
    cr_assert_eq(c, n, "dcount equals the count of the last add");
    /* re-adding members already counted changes nothing */
    cr_assert_eq(dadd_n(s, d, "user-%ld", 0, 5000, p), c);
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, c);
}

STORE_TEST(distinct_converts_only_live_members) {
    /* limit 3: a, b, c expire; d, e, f fit; g converts with 4 live members,
     * each add in its own batch */
    int64_t t0 = hr_now_ms();
    hr_slice d = K("d");
    hr_distinct_params p = dp(t0, 1000, 3);
    ONE(s, hr_dadd(B, d, M("a"), &p));
    ONE(s, hr_dadd(B, d, M("b"), &p));
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("c"), &p))->num, 3);
    p.now_ms = t0 + 2000;
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("d"), &p))->num, 1);
    ONE(s, hr_dadd(B, d, M("e"), &p));
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("f"), &p))->num, 3);
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("g"), &p))->num, 4, "converted with the live members only");
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("a"), &p))->num, 5);
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 5);
}

STORE_TEST(distinct_sketch_keeps_ttl) {
    /* ttl 10 s: buckets of W = 1 s. 3000 members at t0, 3000 others at t0+6s */
    int64_t t0 = hr_now_ms();
    hr_slice d = K("d");
    hr_distinct_params p = dp(t0, 10000, 100);
    dadd_n(s, d, "early-%ld", 0, 3000, p);
    p.now_ms = t0 + 6000;
    assert_near(dadd_n(s, d, "late-%ld", 0, 3000, p), 6000, 0.03, "both groups alive");
    p.now_ms = t0 + 9000;
    assert_near(ONE(s, hr_dcount(B, d, &p))->num, 6000, 0.03, "at t0+9s");
    p.now_ms = t0 + 12000; /* the early bucket died by t0 + 1 s + 10 s */
    assert_near(ONE(s, hr_dcount(B, d, &p))->num, 3000, 0.03, "at t0+12s");
    p.now_ms = t0 + 6000 + 10000 + 1000;
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 0, "everything dead");
}

typedef struct dworker {
    hr_store *s;
    hr_slice key;
    int id;
    int failures;
    int64_t max;
} dworker;

static void *dadd_worker(void *arg) {
    dworker *w = arg;
    hr_batch *b = hr_batch_new();
    hr_distinct_params p = dp(hr_now_ms(), 3600 * 1000, 10000);
    char m[16];
    for (int i = 0; i < 1000; i++) {
        /* every thread adds all 1000 members, each from a different start */
        snprintf(m, sizeof m, "m%d", (i + w->id * 125) % 1000);
        hr_batch_reset(b);
        hr_dadd(b, w->key, hr_slice_str(m), &p);
        if (hr_store_exec(w->s, b, 0, NULL) != HR_OK || hr_batch_result(b, 0)->rc != HR_OK) {
            w->failures++;
            continue;
        }
        int64_t n = hr_batch_result(b, 0)->num;
        if (n > w->max) w->max = n;
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST(distinct_concurrent_adds_count_once) {
    dworker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (dworker){.s = s, .key = K("conc"), .id = i};
        pthread_create(&t[i], NULL, dadd_worker, &w[i]);
    }
    int64_t max = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].failures, 0);
        if (w[i].max > max) max = w[i].max;
    }
    cr_assert_eq(max, 1000, "no add may answer more than 1000");
    hr_distinct_params p = dp(hr_now_ms(), 3600 * 1000, 10000);
    cr_assert_eq(ONE(s, hr_dcount(B, K("conc"), &p))->num, 1000);
}

/* Packed sets ------------------------------------------------------------------------- */

/* Assert a pset test of members[0..n): want is one '0' or '1' per member. */
static void assert_ptest(hr_store *s, hr_slice key, const uint64_t *members, size_t n, const char *want) {
    const hr_result *r = ONE(s, hr_pset_test(B, key, members, n));
    assert_rc(r, HR_OK);
    cr_assert_eq(r->value.len, n, "value length %zu, expected %zu", r->value.len, n);
    char *got = calloc(n + 1, 1);
    int64_t ones = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char v = (unsigned char)r->value.ptr[i];
        cr_assert(v == 0 || v == 1, "byte %zu is %u", i, v);
        got[i] = v ? '1' : '0';
        ones += v;
    }
    cr_assert_str_eq(got, want, "members in the set '%s', expected '%s'", got, want);
    cr_assert_eq(r->num, ones, "num %ld, but %ld members found", (long)r->num, (long)ones);
    free(got);
}
#define PTEST(s, key, want, ...)                                                                             \
    do {                                                                                                     \
        const uint64_t m_[] = {__VA_ARGS__};                                                                 \
        assert_ptest(s, key, m_, sizeof m_ / sizeof m_[0], want);                                            \
    } while (0)

static int64_t padd(hr_store *s, hr_slice key, uint64_t member, int64_t expire_at) {
    const hr_result *r = ONE(s, hr_pset_add(B, key, member, expire_at));
    assert_rc(r, HR_OK);
    return r->num;
}

static int64_t prem(hr_store *s, hr_slice key, uint64_t member) {
    const hr_result *r = ONE(s, hr_pset_rem(B, key, member));
    assert_rc(r, HR_OK);
    return r->num;
}

static int64_t pcard(hr_store *s, hr_slice key) {
    const hr_result *r = ONE(s, hr_pset_card(B, key));
    assert_rc(r, HR_OK);
    return r->num;
}

STORE_TEST(pset_add_rem_card) {
    hr_slice p = K("p");
    cr_assert_eq(pcard(s, p), 0, "a missing set has no members");
    cr_assert_eq(padd(s, p, 42, 0), 1, "new member");
    cr_assert_eq(padd(s, p, 42, 0), 0, "already there");
    cr_assert_eq(padd(s, p, 0, 0), 1, "0 is a member like any other");
    cr_assert_eq(padd(s, p, UINT64_MAX, 0), 1);
    cr_assert_eq(padd(s, p, 42, hr_now_ms() + 60000), 0, "a refresh keeps one entry");
    cr_assert_eq(pcard(s, p), 3);
    PTEST(s, p, "1110", 42, 0, UINT64_MAX, 43);
    cr_assert_eq(prem(s, p, 7), 0, "absent");
    cr_assert_eq(prem(s, p, 42), 1);
    cr_assert_eq(prem(s, p, 42), 0, "removed already");
    cr_assert_eq(pcard(s, p), 2);
    PTEST(s, p, "011", 42, 0, UINT64_MAX);
    /* each add of a batch sees the ones before it */
    hr_batch *b = hr_batch_new();
    size_t a1 = hr_pset_add(b, p, 5, 0), a2 = hr_pset_add(b, p, 6, 0), a3 = hr_pset_add(b, p, 5, 0);
    size_t a4 = hr_pset_add(b, p, 0, 0), r1 = hr_pset_rem(b, p, 6), r2 = hr_pset_rem(b, p, 6);
    exec(s, b);
    cr_assert_eq(hr_batch_result(b, a1)->num, 1);
    cr_assert_eq(hr_batch_result(b, a2)->num, 1);
    cr_assert_eq(hr_batch_result(b, a3)->num, 0);
    cr_assert_eq(hr_batch_result(b, a4)->num, 0);
    cr_assert_eq(hr_batch_result(b, r1)->num, 1);
    cr_assert_eq(hr_batch_result(b, r2)->num, 0);
    cr_assert_eq(pcard(s, p), 3);
    PTEST(s, p, "11001", 0, 5, 6, UINT64_MAX - 1, UINT64_MAX);
    hr_batch_free(b);
}

STORE_TEST(pset_test_repeats_and_order) {
    hr_slice p = K("p");
    const uint64_t big = UINT64_C(1) << 40, top = UINT64_C(1) << 63;
    hr_batch *b = hr_batch_new();
    hr_pset_add(b, p, 1, 0);
    hr_pset_add(b, p, 2, 0);
    hr_pset_add(b, p, 3, 0);
    hr_pset_add(b, p, big, 0);
    hr_pset_add(b, p, top, 0);
    exec(s, b);
    /* answers follow the order asked, repeats answered each time */
    PTEST(s, p, "101111011010", 3, 9, 1, 3, 3, big, 4, 1, top, top + 1, 2, 0);
    PTEST(s, p, "010110111101", 0, 2, top + 1, top, 1, 4, big, 3, 3, 1, 9, 3);
    PTEST(s, p, "11111", top, big, 3, 2, 1);
    /* a test of no members answers nothing */
    const hr_result *r = ONE(s, hr_pset_test(B, p, NULL, 0));
    assert_rc(r, HR_OK);
    cr_assert_eq(r->value.len, 0);
    cr_assert_eq(r->num, 0);
    hr_batch_free(b);
}

STORE_TEST(pset_missing_key) {
    hr_slice p = K("nope");
    PTEST(s, p, "000", 1, 2, 3);
    cr_assert_eq(pcard(s, p), 0);
    cr_assert_eq(prem(s, p, 1), 0);
    const hr_result *r = ONE(s, hr_pset_test(B, p, NULL, 0));
    assert_rc(r, HR_OK);
    cr_assert_eq(r->value.len, 0);
    assert_rc(ONE(s, hr_get(B, p)), HR_ENOTFOUND); /* reads create nothing */
    cr_assert_eq(ONE(s, hr_del(B, p))->num, 0);
}

STORE_TEST(pset_member_expiry) {
    int64_t now = hr_now_ms();
    hr_slice p = K("p"), q = K("q"), lowered = K("lowered"), unforever = K("unforever");
    cr_assert_eq(padd(s, p, 1, now - 1000), 1, "an expired member was not in the set");
    PTEST(s, p, "0", 1);
    cr_assert_eq(pcard(s, p), 0);
    cr_assert_eq(padd(s, p, 2, 0), 1, "0: never expires");
    cr_assert_eq(padd(s, p, 3, now + 60000), 1);
    cr_assert_eq(padd(s, p, 1, now + 60000), 1, "refreshed from the past: new");
    PTEST(s, p, "111", 1, 2, 3);
    cr_assert_eq(pcard(s, p), 3);
    cr_assert_eq(padd(s, p, 1, now - 1), 0, "it was in the set");
    PTEST(s, p, "011", 1, 2, 3);
    cr_assert_eq(pcard(s, p), 2, "a member refreshed into the past is gone");
    cr_assert_eq(prem(s, p, 1), 0, "an expired member is not in the set");
    cr_assert_eq(padd(s, p, 1, now + 60000), 1);
    cr_assert_eq(padd(s, p, 3, 0), 0, "now never expires");
    cr_assert_eq(pcard(s, p), 3);

    /* the store's clock expires members, and a set whose members have all
     * expired does not exist any more */
    now = hr_now_ms();
    cr_assert_eq(padd(s, p, 4, now + 400), 1);
    padd(s, q, 1, now + 300);
    padd(s, q, 2, now + 400);
    padd(s, lowered, 1, now + 400);
    padd(s, lowered, 2, now + 60000);
    padd(s, lowered, 3, now + 60000);
    cr_assert_eq(prem(s, lowered, 2), 1);
    cr_assert_eq(padd(s, lowered, 3, now + 300), 0, "refreshed to an earlier time");
    padd(s, unforever, 1, now + 400);
    padd(s, unforever, 2, 0);
    cr_assert_eq(prem(s, unforever, 2), 1, "its only member that never expires");
    PTEST(s, p, "1111", 1, 2, 3, 4);
    cr_assert_eq(pcard(s, p), 4);
    cr_assert_eq(pcard(s, q), 2);
    cr_assert_eq(pcard(s, lowered), 2);
    cr_assert_eq(pcard(s, unforever), 1);
    usleep(1100 * 1000);
    PTEST(s, p, "1110", 1, 2, 3, 4);
    cr_assert_eq(pcard(s, p), 3);
    cr_assert_eq(prem(s, p, 4), 0, "an expired member is not in the set");
    cr_assert_eq(padd(s, p, 4, 0), 1, "an expired member counts as new");
    cr_assert_eq(pcard(s, p), 4);
    hr_slice dead[] = {q, lowered, unforever};
    for (int i = 0; i < 3; i++) {
        PTEST(s, dead[i], "000", 1, 2, 3);
        cr_assert_eq(pcard(s, dead[i]), 0);
        assert_rc(ONE(s, hr_get(B, dead[i])), HR_ENOTFOUND);
        cr_assert_eq(ONE(s, hr_expire(B, dead[i], now + 60000))->num, 0, "set %d still exists", i);
        cr_assert_eq(ONE(s, hr_incr(B, dead[i], 5))->num, 5, "the key is free for another type");
    }
}

/* Member ids like a story table's: dense and increasing, far from uniform. */
static uint64_t story_id(long i) {
    return UINT64_C(1000003) + 3 * (uint64_t)i;
}

STORE_TEST(pset_large) {
    enum { N = 50000, PER = 1000, Q = 10000 };
    hr_slice p = K("big");
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < N;) {
        hr_batch_reset(b);
        for (int k = 0; k < PER; k++, i++)
            hr_pset_add(b, p, story_id(i), 0);
        exec(s, b);
        int64_t added = 0;
        for (size_t k = 0; k < PER; k++) {
            assert_rc(hr_batch_result(b, k), HR_OK);
            added += hr_batch_result(b, k)->num;
        }
        cr_assert_eq(added, PER, "batch ending at %ld: %ld new members", i, (long)added);
    }
    cr_assert_eq(pcard(s, p), N);

    /* half present, half absent: next to a member, or past the last one */
    uint64_t *q = malloc(Q * sizeof *q);
    char *want = calloc(Q + 1, 1);
    for (long j = 0; j < Q; j++) {
        switch (j % 6) {
        case 1: q[j] = story_id(j * 5) + 1; break;
        case 3: q[j] = story_id(j * 5) - 1; break;
        case 5: q[j] = story_id(N + j); break;
        default: q[j] = story_id(j * 5); break;
        }
        want[j] = j % 2 ? '0' : '1';
    }
    assert_ptest(s, p, q, Q, want);
    assert_ptest(s, p, q, Q, want); /* RocksDB: now from the set's image (rocks/pset_image.c) */

    /* adding members already there changes nothing */
    hr_batch_reset(b);
    for (long i = 0; i < PER; i++)
        hr_pset_add(b, p, story_id(i * 7), 0);
    exec(s, b);
    for (size_t k = 0; k < PER; k++)
        cr_assert_eq(hr_batch_result(b, k)->num, 0);
    cr_assert_eq(pcard(s, p), N);
    /* removing one does: every later test sees it gone */
    cr_assert_eq(prem(s, p, q[0]), 1);
    want[0] = '0';
    assert_ptest(s, p, q, Q, want);
    assert_ptest(s, p, q, Q, want);
    free(q);
    free(want);
    hr_batch_free(b);
}

STORE_TEST(pset_empty_disappears) {
    hr_slice p = K("p");
    padd(s, p, 1, 0);
    padd(s, p, 2, hr_now_ms() + 60000);
    padd(s, p, 3, 0);
    assert_rc(ONE(s, hr_get(B, p)), HR_EWRONGTYPE);
    cr_assert_eq(prem(s, p, 1), 1);
    cr_assert_eq(prem(s, p, 2), 1);
    assert_rc(ONE(s, hr_get(B, p)), HR_EWRONGTYPE);
    cr_assert_eq(prem(s, p, 3), 1);
    cr_assert_eq(pcard(s, p), 0);
    assert_rc(ONE(s, hr_get(B, p)), HR_ENOTFOUND);
    cr_assert_eq(ONE(s, hr_expire(B, p, hr_now_ms() + 10000))->num, 0, "an emptied set is no key");
    cr_assert_eq(ONE(s, hr_del(B, p))->num, 0);
    /* the key is free for another type */
    cr_assert_eq(ONE(s, hr_zadd(B, p, 1, M("m")))->num, 1);
    cr_assert_eq(ONE(s, hr_zcard(B, p))->num, 1);
}

STORE_TEST(pset_del_and_expire) {
    hr_slice p = K("p");
    int64_t now = hr_now_ms();
    hr_batch *b = hr_batch_new();
    for (uint64_t i = 1; i <= 300; i++)
        hr_pset_add(b, p, i, 0);
    exec(s, b);
    cr_assert_eq(ONE(s, hr_del(B, p))->num, 1);
    cr_assert_eq(pcard(s, p), 0);
    PTEST(s, p, "000", 1, 50, 300);
    /* a new set under the key starts empty: none of the old members return */
    cr_assert_eq(padd(s, p, 50, 0), 1);
    cr_assert_eq(pcard(s, p), 1);
    PTEST(s, p, "010", 1, 50, 300);

    /* a future key expiry keeps it; a past one removes it */
    cr_assert_eq(ONE(s, hr_expire(B, p, now + 60000))->num, 1);
    cr_assert_eq(padd(s, p, 51, 0), 1);
    cr_assert_eq(pcard(s, p), 2);
    PTEST(s, p, "110", 50, 51, 52);
    cr_assert_eq(ONE(s, hr_expire(B, p, now - 1))->num, 1);
    cr_assert_eq(pcard(s, p), 0);
    PTEST(s, p, "00", 50, 51);
    cr_assert_eq(ONE(s, hr_expire(B, p, now + 60000))->num, 0);
    assert_rc(ONE(s, hr_get(B, p)), HR_ENOTFOUND);
    cr_assert_eq(padd(s, p, 50, 0), 1, "a new set again");
    cr_assert_eq(pcard(s, p), 1);

    /* a value written over it drops the set the same way */
    ONE(s, hr_put(B, p, M("v"), 0));
    assert_value(ONE(s, hr_get(B, p)), "v", 1);
    assert_rc(ONE(s, hr_pset_add(B, p, 1, 0)), HR_EWRONGTYPE);
    ONE(s, hr_del(B, p));
    cr_assert_eq(padd(s, p, 7, 0), 1);
    PTEST(s, p, "01", 50, 7);
    cr_assert_eq(pcard(s, p), 1);
    hr_batch_free(b);
}

STORE_TEST(pset_wrong_type) {
    ONE(s, hr_put(B, K("str"), M("v"), 0));
    ONE(s, hr_zadd(B, K("zs"), 1, M("m")));
    padd(s, K("p"), 7, 0);
    hr_distinct_params dpar = dp(hr_now_ms(), 60000, 10);
    uint64_t m[2] = {7, 8};
    hr_batch *b = hr_batch_new();
    hr_pset_add(b, K("str"), 1, 0);
    hr_pset_rem(b, K("str"), 1);
    hr_pset_test(b, K("str"), m, 2);
    hr_pset_card(b, K("str"));
    hr_pset_add(b, K("zs"), 1, 0);
    hr_pset_test(b, K("zs"), m, 2);
    hr_get(b, K("p"));
    hr_zadd(b, K("p"), 1, M("m"));
    hr_zscore(b, K("p"), M("m"));
    hr_zcard(b, K("p"));
    hr_incr(b, K("p"), 1);
    hr_counter_get(b, K("p"));
    hr_dadd(b, K("p"), M("m"), &dpar);
    size_t last = hr_get(b, K("str")); /* the batch goes on after a wrong-type op */
    exec(s, b);
    for (size_t i = 0; i < last; i++)
        assert_rc(hr_batch_result(b, i), HR_EWRONGTYPE);
    assert_value(hr_batch_result(b, last), "v", 1);
    /* nothing was changed by the refused ops */
    cr_assert_eq(pcard(s, K("p")), 1);
    PTEST(s, K("p"), "10", 7, 8);
    cr_assert_eq(ONE(s, hr_zcard(B, K("zs")))->num, 1);
    hr_batch_free(b);
}

STORE_TEST(pset_batch_reads_its_own_writes) {
    enum { D = 700 }; /* enough members for the set to reorganise inside the batch */
    hr_slice a = K("a"), pb = K("b"), c = K("c"), d = K("d"), v = K("v");
    padd(s, a, 1, 0);
    padd(s, a, 2, 0);
    padd(s, pb, 10, 0);
    uint64_t m123[] = {1, 2, 3}, m10[] = {10, 11}, m100[] = {100, 101}, m1[] = {1};
    uint64_t *md = malloc(2 * D * sizeof *md);
    for (size_t i = 0; i < 2 * D; i++)
        md[i] = i % 2 ? 5000 + i : i; /* even: added below; odd: not */
    hr_batch *b = hr_batch_new();
    size_t t1 = hr_pset_test(b, a, m123, 3);
    size_t t2 = hr_pset_test(b, pb, m10, 2);
    size_t a3 = hr_pset_add(b, a, 3, 0);
    size_t t3 = hr_pset_test(b, a, m123, 3);
    hr_pset_add(b, c, 100, 0);
    size_t t4 = hr_pset_test(b, c, m100, 2);
    hr_pset_rem(b, pb, 10);
    size_t t5 = hr_pset_test(b, pb, m10, 2);
    size_t c5 = hr_pset_card(b, pb);
    size_t c6 = hr_pset_card(b, a);
    size_t a7 = hr_pset_add(b, a, 2, hr_now_ms() - 1); /* refreshed into the past: removed */
    size_t t8 = hr_pset_test(b, a, m123, 3);
    size_t t9 = hr_pset_test(b, K("missing"), m1, 1);
    for (size_t i = 0; i < 2 * D; i += 2)
        hr_pset_add(b, d, md[i], 0);
    size_t td = hr_pset_test(b, d, md, 2 * D);
    size_t cd = hr_pset_card(b, d);
    hr_put(b, v, M("x"), 0);
    size_t t10 = hr_pset_test(b, v, m1, 1);
    exec(s, b);

    const hr_batch *B0 = b;
#define PBYTES(i) hr_batch_result(B0, i)->value.ptr
    cr_assert_eq(memcmp(PBYTES(t1), "\1\1\0", 3), 0);
    cr_assert_eq(memcmp(PBYTES(t2), "\1\0", 2), 0);
    cr_assert_eq(hr_batch_result(b, a3)->num, 1);
    cr_assert_eq(memcmp(PBYTES(t3), "\1\1\1", 3), 0, "a test sees the add before it");
    cr_assert_eq(memcmp(PBYTES(t4), "\1\0", 2), 0, "a set created in the batch");
    cr_assert_eq(memcmp(PBYTES(t5), "\0\0", 2), 0, "a set emptied in the batch");
    cr_assert_eq(hr_batch_result(b, c5)->num, 0);
    cr_assert_eq(hr_batch_result(b, c6)->num, 3);
    cr_assert_eq(hr_batch_result(b, a7)->num, 0);
    cr_assert_eq(memcmp(PBYTES(t8), "\1\0\1", 3), 0);
    cr_assert_eq(hr_batch_result(b, t8)->num, 2);
    cr_assert_eq(memcmp(PBYTES(t9), "\0", 1), 0);
    const hr_result *r = hr_batch_result(b, td);
    assert_rc(r, HR_OK);
    cr_assert_eq(r->num, D);
    for (size_t i = 0; i < 2 * D; i++)
        cr_assert_eq(r->value.ptr[i], i % 2 ? 0 : 1, "member %zu of d", i);
    cr_assert_eq(hr_batch_result(b, cd)->num, D);
    assert_rc(hr_batch_result(b, t10), HR_EWRONGTYPE);
#undef PBYTES

    /* and all of it was committed */
    PTEST(s, a, "101", 1, 2, 3);
    cr_assert_eq(pcard(s, pb), 0);
    assert_rc(ONE(s, hr_get(B, pb)), HR_ENOTFOUND);
    PTEST(s, c, "10", 100, 101);
    cr_assert_eq(pcard(s, d), D);
    r = ONE(s, hr_pset_test(B, d, md, 2 * D));
    cr_assert_eq(r->num, D);
    for (size_t i = 0; i < 2 * D; i++)
        cr_assert_eq(r->value.ptr[i], i % 2 ? 0 : 1, "member %zu of d after the commit", i);
    free(md);
    hr_batch_free(b);
}

typedef struct pworker {
    hr_store *s;
    hr_slice key;
    int id;
    int failures;
    int64_t added; /* adds that answered "new" */
} pworker;

enum { PSET_SHARED = 2000 };

static void *pset_add_worker(void *arg) {
    pworker *w = arg;
    hr_batch *b = hr_batch_new();
    /* every thread adds all the members, each from a different start, in
     * batches of 100 */
    for (int i = 0; i < PSET_SHARED;) {
        hr_batch_reset(b);
        for (int k = 0; k < 100; k++, i++)
            hr_pset_add(b, w->key, (uint64_t)((i + w->id * 250) % PSET_SHARED) * 7919, 0);
        if (hr_store_exec(w->s, b, 0, NULL) != HR_OK) {
            w->failures++;
            continue;
        }
        for (size_t k = 0; k < 100; k++) {
            const hr_result *r = hr_batch_result(b, k);
            if (r->rc != HR_OK)
                w->failures++;
            else
                w->added += r->num;
        }
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST(pset_concurrent_adds) {
    pworker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (pworker){.s = s, .key = K("conc"), .id = i};
        pthread_create(&t[i], NULL, pset_add_worker, &w[i]);
    }
    int64_t added = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].failures, 0);
        added += w[i].added;
    }
    cr_assert_eq(added, PSET_SHARED, "%ld adds answered 'new' for %d members", (long)added, PSET_SHARED);
    cr_assert_eq(pcard(s, K("conc")), PSET_SHARED);
}

STORE_TEST(pset_limits) {
    hr_slice p = K("p");
    uint64_t *many = malloc((HR_PSET_TEST_MAX + 1) * sizeof *many);
    for (size_t i = 0; i <= HR_PSET_TEST_MAX; i++)
        many[i] = i + 1;
    uint64_t one[] = {1};
    hr_batch *b = hr_batch_new();
    hr_pset_add(b, p, 1, 0);
    size_t over = hr_pset_test(b, p, many, HR_PSET_TEST_MAX + 1);
    size_t bad_expiry = hr_pset_add(b, p, 2, -1);
    size_t max = hr_pset_test(b, p, many, HR_PSET_TEST_MAX);
    size_t after = hr_pset_test(b, p, one, 1);
    size_t card = hr_pset_card(b, p);
    exec(s, b); /* the invalid ops fail alone */
    assert_rc(hr_batch_result(b, over), HR_EINVAL);
    assert_rc(hr_batch_result(b, bad_expiry), HR_EINVAL);
    const hr_result *r = hr_batch_result(b, max);
    assert_rc(r, HR_OK);
    cr_assert_eq(r->value.len, HR_PSET_TEST_MAX);
    cr_assert_eq(r->num, 1);
    cr_assert_eq(r->value.ptr[0], 1);
    cr_assert_eq(hr_batch_result(b, after)->num, 1);
    cr_assert_eq(hr_batch_result(b, card)->num, 1);
    free(many);
    hr_batch_free(b);
}

/* Batches ----------------------------------------------------------------------------- */

STORE_TEST(batch_results_in_order) {
    hr_batch *b = hr_batch_new();
    hr_slice k = K("k"), c = K("c");
    size_t i0 = hr_put(b, k, M("1"), 0);
    size_t i1 = hr_get(b, k);
    size_t i2 = hr_put(b, k, M("2"), 0);
    size_t i3 = hr_get(b, k);
    size_t i4 = hr_incr(b, c, 10);
    size_t i5 = hr_del(b, k);
    size_t i6 = hr_get(b, k);
    size_t i7 = hr_incr(b, c, 5);
    size_t i8 = hr_counter_get(b, c);
    cr_assert_eq(hr_batch_len(b), 9);
    cr_assert(i0 == 0 && i8 == 8);
    exec(s, b);
    assert_value(hr_batch_result(b, i1), "1", 1);
    assert_rc(hr_batch_result(b, i2), HR_OK);
    assert_value(hr_batch_result(b, i3), "2", 1);
    cr_assert_eq(hr_batch_result(b, i4)->num, 10);
    cr_assert_eq(hr_batch_result(b, i5)->num, 1);
    assert_rc(hr_batch_result(b, i6), HR_ENOTFOUND);
    cr_assert_eq(hr_batch_result(b, i7)->num, 15);
    cr_assert_eq(hr_batch_result(b, i8)->num, 15);
    hr_batch_free(b);
}

STORE_TEST(batch_reads_its_own_writes) {
    hr_slice z = K("z"), d = K("d"), v = K("v");
    fill_zset(s, z);
    hr_distinct_params p = dp(hr_now_ms(), 60000, 3);
    hr_batch *b = hr_batch_new();
    hr_zadd(b, z, 2.5, M("new"));
    hr_zrem(b, z, M("a"));
    hr_zadd(b, z, 10, M("z")); /* move z from the front to the end */
    hr_zrange_spec sp = hr_zrange_all(false, 100);
    size_t r1 = hr_zrange(b, z, &sp);
    size_t r2 = hr_zcard(b, z);
    size_t r3 = hr_zscore(b, z, M("new"));
    hr_ztrim(b, z, 2, true);
    size_t r4 = hr_zrange(b, z, &sp);
    hr_dadd(b, d, M("x"), &p);
    hr_dadd(b, d, M("y"), &p);
    size_t r5 = hr_dcount(b, d, &p);
    hr_dadd(b, d, M("x"), &p);
    hr_dadd(b, d, M("w"), &p);
    size_t r6 = hr_dadd(b, d, M("u"), &p); /* converts inside the batch */
    size_t r7 = hr_dadd(b, d, M("t"), &p);
    size_t r8 = hr_dcount(b, d, &p);
    hr_put(b, v, M("x"), 0);
    hr_del(b, v);
    size_t r9 = hr_get(b, v);
    hr_put(b, z, M("now a value"), 0);
    size_t r10 = hr_zcard(b, z);
    exec(s, b);
    assert_members(hr_batch_result(b, r1), "b c new d e z", false);
    cr_assert_eq(hr_batch_result(b, r2)->num, 6);
    cr_assert_eq(hr_batch_result(b, r3)->score, 2.5);
    assert_members(hr_batch_result(b, r4), "e z", false);
    cr_assert_eq(hr_batch_result(b, r5)->num, 2);
    assert_near(hr_batch_result(b, r6)->num, 4, 0.01, "sketch count right after converting");
    assert_near(hr_batch_result(b, r7)->num, 5, 0.01, "sketch add in the same batch");
    cr_assert_eq(hr_batch_result(b, r8)->num, hr_batch_result(b, r7)->num);
    assert_rc(hr_batch_result(b, r9), HR_ENOTFOUND);
    assert_rc(hr_batch_result(b, r10), HR_EWRONGTYPE);
    /* and all of it was committed */
    assert_value(ONE(s, hr_get(B, z)), "now a value", 11);
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, hr_batch_result(b, r8)->num);
    hr_batch_free(b);
}

STORE_TEST(batch_atomic) {
    hr_slice a = KT("a"), c = KT("c"), z = KT("z");
    hr_batch *b = hr_batch_new();
    hr_put(b, a, M("1"), 0);
    hr_incr(b, c, 7);
    hr_zadd(b, z, 1, M("m"));
    exec_flags(s, b, HR_EXEC_ATOMIC);
    hr_batch_reset(b);
    hr_get(b, a);
    hr_counter_get(b, c);
    hr_zcard(b, z);
    exec_flags(s, b, HR_EXEC_ATOMIC);
    assert_value(hr_batch_result(b, 0), "1", 1);
    cr_assert_eq(hr_batch_result(b, 1)->num, 7);
    cr_assert_eq(hr_batch_result(b, 2)->num, 1);
    hr_batch_free(b);
}

typedef struct pair_writer {
    hr_store *s;
    hr_slice a, b;
    unsigned flags;
    int rounds, failures;
} pair_writer;

static void *write_pairs(void *arg) {
    pair_writer *w = arg;
    hr_batch *b = hr_batch_new();
    char v[16];
    for (int i = 1; i <= w->rounds; i++) {
        snprintf(v, sizeof v, "%d", i);
        hr_batch_reset(b);
        hr_put(b, w->a, hr_slice_str(v), 0);
        hr_put(b, w->b, hr_slice_str(v), 0);
        if (hr_store_exec(w->s, b, w->flags, NULL) != HR_OK) w->failures++;
    }
    hr_batch_free(b);
    return NULL;
}

/* 200 unflagged batches of {zincr(a, 1, m), zincr(b, 1, m)}. */
static void *incr_pairs(void *arg) {
    pair_writer *w = arg;
    hr_batch *b = hr_batch_new();
    for (int i = 0; i < w->rounds; i++) {
        hr_batch_reset(b);
        hr_zincr(b, w->a, 1, M("m"));
        hr_zincr(b, w->b, 1, M("m"));
        if (hr_store_exec(w->s, b, 0, NULL) != HR_OK) w->failures++;
    }
    hr_batch_free(b);
    return NULL;
}

/* Batches (with `flags`) writing the same value to a and b, 300 times,
 * under as many reads of both: the reads that saw two different values. */
static int torn_pair_reads(hr_store *s, hr_slice a, hr_slice bk, unsigned flags) {
    pair_writer w = {.s = s, .a = a, .b = bk, .flags = flags, .rounds = 300};
    ONE(s, hr_put(B, w.a, M("0"), 0));
    ONE(s, hr_put(B, w.b, M("0"), 0));
    pthread_t t;
    pthread_create(&t, NULL, write_pairs, &w);
    hr_batch *b = hr_batch_new();
    int torn = 0;
    for (int reads = 0; reads < 300; reads++) {
        hr_batch_reset(b);
        hr_get(b, w.a);
        hr_get(b, w.b);
        exec_flags(s, b, flags);
        if (!hr_slice_eq(hr_batch_result(b, 0)->value, hr_batch_result(b, 1)->value)) torn++;
    }
    pthread_join(t, NULL);
    cr_assert_eq(w.failures, 0);
    hr_batch_free(b);
    return torn;
}

STORE_TEST(batch_atomic_seen_whole) {
    /* a reader never sees half of a concurrent atomic batch */
    int torn = torn_pair_reads(s, KT("pa"), KT("pb"), HR_EXEC_ATOMIC);
    cr_assert_eq(torn, 0, "%d of 300 reads saw half a batch", torn);
}

STORE_TEST(batches_atomic_unflagged) {
    /* RocksDB says every batch is atomic, Redis Cluster does not; where it
     * is said, unflagged batches over keys of different hash slots are
     * seen whole, read-modify-writes included: two threads incrementing
     * two sorted sets together never let a reader see them differ. */
    bool rocks = strcmp(hr_store_kind(s), "rocksdb") == 0;
    cr_assert_eq(hr_store_batches_atomic(s), rocks);
    if (!hr_store_batches_atomic(s)) return;
    int torn = torn_pair_reads(s, K("ua"), K("ub"), 0);
    cr_assert_eq(torn, 0, "%d of 300 reads saw half an unflagged batch", torn);

    pair_writer w = {.s = s, .a = K("za"), .b = K("zb"), .rounds = 200};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, incr_pairs, &w);
    hr_batch *b = hr_batch_new();
    for (int reads = 0; reads < 300; reads++) {
        hr_batch_reset(b);
        hr_zscore(b, w.a, M("m"));
        hr_zscore(b, w.b, M("m"));
        exec_flags(s, b, 0);
        const hr_result *x = hr_batch_result(b, 0), *y = hr_batch_result(b, 1);
        if (x->rc != y->rc || (x->rc == HR_OK && x->score != y->score)) torn++;
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(w.failures, 0);
    /* Sorted sets kept in memory are read op by op at their latest state
     * (store.h says so): there only the writers' atomicity holds, which the
     * final scores check below. */
    if (!zsets_in_memory) cr_assert_eq(torn, 0, "%d of 300 reads saw the two sets differ", torn);
    cr_assert_eq(ONE(s, hr_zscore(B, w.a, M("m")))->score, 400);
    cr_assert_eq(ONE(s, hr_zscore(B, w.b, M("m")))->score, 400);
    hr_batch_free(b);
}

STORE_TEST(queue_ops_run_with_the_rest_of_a_batch) {
    /* The queue ops were refused (HR_ENOTSUP) until the fan-out work: now
     * they run in a batch with other ops, each with its own result
     * (test_store_queue.c checks them in depth). */
    hr_batch *b = hr_batch_new();
    hr_put(b, K("before"), M("v"), 0);
    size_t push = hr_qpush(b, K("q"), M("job"));
    size_t claim = hr_qclaim(b, K("q"), M("worker"), 10, 60000);
    size_t ack = hr_qack(b, K("q"), M("0000000000000001"));
    size_t info = hr_qinfo(b, K("q"));
    exec(s, b);
    for (size_t i = 0; i < hr_batch_len(b); i++)
        assert_rc(hr_batch_result(b, i), HR_OK);
    cr_assert_gt(hr_batch_result(b, push)->value.len, 0);
    cr_assert_eq(hr_batch_result(b, claim)->n_jobs, 1);
    cr_assert(hr_slice_eq(hr_batch_result(b, claim)->jobs[0].payload, M("job")));
    cr_assert_eq(hr_batch_result(b, ack)->num, 0, "no job has that id");
    cr_assert_eq(hr_batch_result(b, info)->num, 1);
    assert_value(ONE(s, hr_get(B, K("before"))), "v", 1);
    hr_batch_free(b);
}

/* Write stamps (store.h): a stamp stops holding when its key is written
 * (by any kind of write, in a batch or in bulk), not when it is read or
 * another key is written. Shared stores (Redis Cluster) have none. */
STORE_TEST(write_stamps_follow_writes_of_their_key) {
    bool shared = hr_store_shared(s);
    cr_assert_eq(hr_store_stamps_on(s), !shared);
    cr_assert_eq(hr_store_stamps(s), !shared);
    if (shared) return;
    hr_slice key = K("stamped"), other = K("other");
    for (int i = 0; hr_store_stamp(s, other).slot == hr_store_stamp(s, key).slot; i++) {
        char name[32]; /* a key that shares no counter with it */
        snprintf(name, sizeof name, "other-%d", i);
        other = K(name);
    }
    hr_stamp st = hr_store_stamp(s, key);
    cr_assert(hr_store_stamp_holds(s, st));
    ONE(s, hr_get(B, key));
    ONE(s, hr_tlrange(B, key, &(hr_tlrange_spec){.limit = 10}));
    ONE(s, hr_put(B, other, M("v"), 0));
    cr_assert(hr_store_stamp_holds(s, st), "a read, or another key's write, leaves it");
    hr_stamp of_other = hr_store_stamp(s, other);
    ONE(s, hr_put(B, key, M("v"), 0));
    cr_assert_not(hr_store_stamp_holds(s, st), "a put");
    cr_assert(hr_store_stamp_holds(s, of_other));

    /* Every kind of write. */
    const char *kinds[] = {"del", "tladd", "tlrem", "zadd", "incr", "pset_add", "expire"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        st = hr_store_stamp(s, key);
        hr_batch_reset(B);
        switch (i) {
        case 0: hr_del(B, key); break;
        case 1: hr_tladd(B, key, 1000, M("m"), 0); break;
        case 2: hr_tlrem(B, key, 1000, M("m")); break;
        case 3: hr_zadd(B, key, 1, M("m")); break;
        case 4: hr_incr(B, key, 1); break;
        case 5: hr_pset_add(B, key, 7, 0); break;
        default: hr_expire(B, key, 0); break;
        }
        exec(s, B);
        cr_assert_not(hr_store_stamp_holds(s, st), "%s", kinds[i]);
    }

    /* Bulk time-list adds, as a file and as batches. */
    for (size_t min = 1; min <= 1000000; min *= 1000000) {
        store_opts.tl_file_min = min;
        s = fx_reopen();
        cr_assert(hr_store_stamps_on(s));
        st = hr_store_stamp(s, key);
        of_other = hr_store_stamp(s, other);
        hr_tlbulk *w = hr_tlbulk_new(s);
        cr_assert_eq(hr_tlbulk_add(w, key, 2000, M("m"), 0), HR_OK);
        hr_err err = {0};
        cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "%s", err.msg);
        hr_tlbulk_free(w);
        cr_assert_not(hr_store_stamp_holds(s, st), "a bulk add (tl_file_min %zu)", min);
        cr_assert(hr_store_stamp_holds(s, of_other));
    }
}
