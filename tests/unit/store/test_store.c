/* test_store.c — the store conformance suite: every implemented primitive of
 * store.h, run against both backends. This file checks values, counters,
 * expiry of every type, wrong types and batches; each other family of
 * primitives has a file of its own: test_store_zset.c (sorted sets),
 * test_store_zmodel.c (sorted sets read back against models),
 * test_store_distinct.c (distinct counts), test_store_pset.c (packed sets),
 * test_store_tl.c (time lists) and test_store_queue.c (queues).
 *
 * Each check is written once, as `NAME(hr_store *s)`, and STORE_TEST_MEM
 * registers it three times (store_fixture.h): in suite `store_rocksdb` on a
 * store opened on a fresh temporary directory (removed afterwards); in
 * suite `store_rocksmem`, the same with every sorted set kept in memory from
 * its creation (the URI's zset_memory=all: the path rankings take
 * once they move into memory, src/store/rocks/zset_memory.c); and in suite
 * `store_redis` on the cluster named by $HERALD_TEST_REDIS (scripts/test.sh
 * starts one and sets it). The other files' suites are named after their
 * family (zset_rocksdb, zset_rocksmem, zset_redis...). Without the variable
 * the redis tests fail, saying so: a suite that silently passes when its
 * backend is missing would hide a broken backend.
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
 * in test_rocks*.c.
 *
 * Criterion filters are suite/test globs: --filter 'rocks/STAR' runs this
 * file's checks on one backend, --filter 'STAR/zrange_STAR' one check on
 * every backend (STAR being '*').
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "store_checks.h"

STORE_SUITES_MEM(store);

/* Values -------------------------------------------------------------------- */

/* A store with nothing queued settles at once (RocksDB: after a few
 * writes, which a memtable holds; Redis: nothing to wait for). test_rocks.c
 * checks that RocksDB waits for flushes and compactions. */
STORE_TEST_MEM(store, settle_of_an_idle_store_is_immediate) {
    hr_batch *b = hr_batch_new();
    hr_put(b, M("settle"), M("v"), 0);
    exec(s, b);
    hr_batch_free(b);
    bool settled = false;
    double waited = hr_store_settle(s, 30, &settled);
    cr_assert(settled, "settled");
    cr_assert(waited >= 0 && waited < 5, "waited %.2f s", waited);
}

STORE_TEST_MEM(store, value_get_put_del) {
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

STORE_TEST_MEM(store, value_binary_safe) {
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

STORE_TEST_MEM(store, value_expiry) {
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

STORE_TEST_MEM(store, value_multi_get_100) {
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

STORE_TEST_MEM(store, expire_every_type) {
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

STORE_TEST_MEM(store, counter_incr) {
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

STORE_TEST_MEM(store, counter_concurrent_incr) {
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

STORE_TEST_MEM(store, value_put_if_missing_del_if_equal) {
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

STORE_TEST_MEM(store, value_lock_of_two_ops_excludes) {
    enum { PER = 40 };
    locker w[THREADS];
    for (int i = 0; i < THREADS; i++)
        w[i] = (locker){.s = s, .lock = K("mutex"), .number = K("number"), .id = i, .n = PER};
    run_threads(lock_worker, w, sizeof w[0]);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(w[i].failures, 0, "thread %d: %d failures", i, w[i].failures);
    const char *want = Mf("%ld", THREADS * PER).ptr;
    assert_value(ONE(s, hr_get(B, K("number"))), want, strlen(want));
    assert_rc(ONE(s, hr_get(B, K("mutex"))), HR_ENOTFOUND);
}

STORE_TEST_MEM(store, wrong_type) {
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

/* Batches ----------------------------------------------------------------------------- */

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
        if (hr_store_exec(sh->s, b, HR_EXEC_ATOMIC, NULL) != HR_OK)
            snap_fail(sh, "write %ld failed%ld", i, 0);
    }
    atomic_store(&sh->done, 1);
    hr_batch_free(b);
    return NULL;
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

STORE_TEST_MEM(store, atomic_batches_seen_whole_under_load) {
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

STORE_TEST_MEM(store, batch_results_in_order) {
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

STORE_TEST_MEM(store, batch_reads_its_own_writes) {
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
    hr_zremrange_score(b, z, -INFINITY, 4); /* an iterating write after writes */
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

STORE_TEST_MEM(store, batch_atomic) {
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

STORE_TEST_MEM(store, batch_atomic_seen_whole) {
    /* a reader never sees half of a concurrent atomic batch */
    int torn = torn_pair_reads(s, KT("pa"), KT("pb"), HR_EXEC_ATOMIC);
    cr_assert_eq(torn, 0, "%d of 300 reads saw half a batch", torn);
}

STORE_TEST_MEM(store, batches_atomic_unflagged) {
    /* RocksDB says every batch is atomic, Redis Cluster does not; where it
     * is said, unflagged batches over keys of different hash slots are
     * seen whole, read-modify-writes included: two threads incrementing
     * two sorted sets together never let a reader see them differ. */
    bool rocks = strcmp(hr_store_caps_of(s)->kind, "rocksdb") == 0;
    cr_assert_eq(hr_store_caps_of(s)->atomic_batches, rocks);
    if (!hr_store_caps_of(s)->atomic_batches) return;
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

STORE_TEST_MEM(store, queue_ops_run_with_the_rest_of_a_batch) {
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
STORE_TEST_MEM(store, write_stamps_follow_writes_of_their_key) {
    bool shared = hr_store_caps_of(s)->shared;
    cr_assert_eq(hr_store_caps_of(s)->stamps, !shared);
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
        char tune[32];
        snprintf(tune, sizeof tune, "file_min=%zu", min);
        fx_tune(tune);
        s = fx_reopen();
        cr_assert(hr_store_caps_of(s)->stamps);
        st = hr_store_stamp(s, key);
        of_other = hr_store_stamp(s, other);
        hr_tlbulk *w = hr_tlbulk_new(s);
        cr_assert_eq(hr_tlbulk_add(w, key, 2000, M("m"), 0), HR_OK);
        hr_err err = {0};
        cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "%s", err.msg);
        hr_tlbulk_free(w);
        cr_assert_not(hr_store_stamp_holds(s, st), "a bulk add (file_min %zu)", min);
        cr_assert(hr_store_stamp_holds(s, of_other));
    }
}
