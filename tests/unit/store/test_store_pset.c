/* test_store_pset.c — packed sets of 64-bit members (hr_pset_*): adds,
 * removals, tests in the order asked, members' expiry, large sets, deletion
 * and key expiry, wrong types, a batch reading its own writes, adds from
 * many threads, and the limits. Conformance checks, run on RocksDB, on
 * RocksDB with every sorted set in memory, and on Redis Cluster (suites
 * pset_rocksdb, pset_rocksmem, pset_redis; store_fixture.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "store_checks.h"

STORE_SUITES_MEM(pset);

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

STORE_TEST_MEM(pset, pset_add_rem_card) {
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

STORE_TEST_MEM(pset, pset_test_repeats_and_order) {
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

STORE_TEST_MEM(pset, pset_missing_key) {
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

STORE_TEST_MEM(pset, pset_member_expiry) {
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

STORE_TEST_MEM(pset, pset_large) {
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

STORE_TEST_MEM(pset, pset_empty_disappears) {
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

STORE_TEST_MEM(pset, pset_del_and_expire) {
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

STORE_TEST_MEM(pset, pset_wrong_type) {
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

STORE_TEST_MEM(pset, pset_batch_reads_its_own_writes) {
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

STORE_TEST_MEM(pset, pset_concurrent_adds) {
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

STORE_TEST_MEM(pset, pset_limits) {
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
