/* test_store_distinct.c — distinct counts (hr_dadd, hr_dcount): exact up to
 * the limit, then a sketch; members' time to live by the caller's clock and
 * by the store's; conversion of the live members only; adds from many
 * threads counted once. Conformance checks, run on RocksDB, on RocksDB with
 * every sorted set in memory, and on Redis Cluster (suites distinct_rocksdb,
 * distinct_rocksmem, distinct_redis; store_fixture.h). */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "common/clock.h"
#include "store_checks.h"

STORE_SUITES_MEM(distinct);

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

STORE_TEST_MEM(distinct, distinct_exact) {
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

STORE_TEST_MEM(distinct, distinct_member_ttl) {
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

STORE_TEST_MEM(distinct, distinct_expires_in_real_time) {
    hr_slice d = K("d");
    hr_distinct_params p = dp(hr_now_ms(), 1000, 100);
    ONE(s, hr_dadd(B, d, M("a"), &p));
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("b"), &p))->num, 2);
    usleep(1100 * 1000);
    p.now_ms = hr_now_ms();
    cr_assert_eq(ONE(s, hr_dcount(B, d, &p))->num, 0);
    cr_assert_eq(ONE(s, hr_dadd(B, d, M("c"), &p))->num, 1);
}

STORE_TEST_MEM(distinct, distinct_converts_to_sketch) {
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

STORE_TEST_MEM(distinct, distinct_converts_only_live_members) {
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

STORE_TEST_MEM(distinct, distinct_sketch_keeps_ttl) {
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

STORE_TEST_MEM(distinct, distinct_concurrent_adds_count_once) {
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
