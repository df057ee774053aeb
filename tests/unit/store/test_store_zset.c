/* test_store_zset.c — sorted sets (hr_z*): adds, scores, increments,
 * guards (compare-and-set), ranges by score with limits, offsets and
 * cursors, trims, removals, deletion, and a batch reading its own writes.
 * Conformance checks, run on RocksDB, on RocksDB with every sorted set in
 * memory, and on Redis Cluster (suites zset_rocksdb, zset_rocksmem,
 * zset_redis; store_fixture.h). test_store_zmodel.c reads sets back
 * against models. */
#include <math.h>
#include <pthread.h>

#include "common/clock.h"
#include "store_checks.h"

STORE_SUITES_MEM(zset);

STORE_TEST_MEM(zset, zset_add_score_rem_card) {
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

STORE_TEST_MEM(zset, zset_incr) {
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

STORE_TEST_MEM(zset, zset_concurrent_incr) {
    enum { PER = 300 };
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++)
        w[i] = (worker){.s = s, .key = K("votes"), .id = i, .n = PER};
    run_threads(zincr_worker, w, sizeof w[0]);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(w[i].failures, 0);
    /* half the threads add 2, half add -1: no increment may be lost */
    cr_assert_eq(ONE(s, hr_zscore(B, K("votes"), M("m")))->score, (THREADS / 2) * PER * (2 - 1));
}

/* The guard's result (num: held) and the results of the ops after it. */
static void assert_guard(const hr_result *g, int rc, int64_t held, double score) {
    assert_rc(g, rc);
    cr_assert_eq(g->num, held, "guard held %ld, expected %ld", (long)g->num, (long)held);
    if (rc == HR_OK) cr_assert_eq(g->score, score, "guard found %g, expected %g", g->score, score);
}

STORE_TEST_MEM(zset, zset_guard_is_a_compare_and_set) {
    hr_slice top = KT("top"), hot = KT("hot");
    /* absent, as NAN says: the ops after it run */
    hr_batch_reset(B);
    size_t g = hr_zguard(B, top, M("m"), NAN);
    size_t a = hr_zadd(B, top, 1, M("m"));
    size_t h = hr_zadd(B, hot, 5, M("m"));
    exec(s, B);
    assert_guard(hr_batch_result(B, g), HR_ENOTFOUND, 1, 0);
    cr_assert_eq(hr_batch_result(B, a)->num, 1);
    assert_rc(hr_batch_result(B, h), HR_OK);
    /* not as expected: nothing after it runs, and it says what it found */
    hr_batch_reset(B);
    g = hr_zguard(B, top, M("m"), 0);
    a = hr_zadd(B, top, 9, M("m"));
    size_t i = hr_zincr(B, hot, 1, M("m"));
    exec(s, B);
    assert_guard(hr_batch_result(B, g), HR_OK, 0, 1);
    assert_rc(hr_batch_result(B, a), HR_ECONFLICT);
    assert_rc(hr_batch_result(B, i), HR_ECONFLICT);
    cr_assert_eq(ONE(s, hr_zscore(B, top, M("m")))->score, 1, "a guard that lost writes nothing");
    cr_assert_eq(ONE(s, hr_zscore(B, hot, M("m")))->score, 5);
    /* NAN on a member that is there does not hold either */
    assert_guard(ONE(s, hr_zguard(B, top, M("m"), NAN)), HR_OK, 0, 1);
    /* as found: set, and every kind of op may follow */
    hr_batch_reset(B);
    g = hr_zguard(B, top, M("m"), 1);
    a = hr_zadd(B, top, 2, M("m"));
    i = hr_zincr(B, hot, 1.5, M("m"));
    size_t r = hr_zrem(B, hot, M("gone"));
    size_t sc = hr_zscore(B, top, M("m"));
    exec(s, B);
    assert_guard(hr_batch_result(B, g), HR_OK, 1, 1);
    cr_assert_eq(hr_batch_result(B, a)->num, 0);
    cr_assert_eq(hr_batch_result(B, i)->score, 6.5);
    cr_assert_eq(hr_batch_result(B, r)->num, 0);
    cr_assert_eq(hr_batch_result(B, sc)->score, 2, "the step reads its own write");
    /* ops before a guard run whatever it finds; a second guard guards the
     * ops after it */
    hr_batch_reset(B);
    size_t before = hr_zadd(B, KT("other"), 1, M("x"));
    size_t g1 = hr_zguard(B, top, M("m"), 2);
    size_t mid = hr_zadd(B, top, 3, M("m"));
    size_t g2 = hr_zguard(B, hot, M("m"), 0);
    size_t after = hr_zadd(B, hot, 0, M("m"));
    exec(s, B);
    assert_rc(hr_batch_result(B, before), HR_OK);
    assert_guard(hr_batch_result(B, g1), HR_OK, 1, 2);
    assert_rc(hr_batch_result(B, mid), HR_OK);
    assert_guard(hr_batch_result(B, g2), HR_OK, 0, 6.5);
    assert_rc(hr_batch_result(B, after), HR_ECONFLICT);
    cr_assert_eq(ONE(s, hr_zscore(B, KT("other"), M("x")))->score, 1);
    cr_assert_eq(ONE(s, hr_zscore(B, top, M("m")))->score, 3);
    cr_assert_eq(ONE(s, hr_zscore(B, hot, M("m")))->score, 6.5);
}

STORE_TEST_MEM(zset, zset_guard_refusals) {
    hr_slice top = KT("top");
    ONE(s, hr_zadd(B, top, 1, M("m")));
    /* an invalid guard guards nothing: what follows is not run */
    hr_batch_reset(B);
    size_t g = hr_zguard(B, top, M("m"), INFINITY);
    size_t a = hr_zadd(B, top, 7, M("m"));
    exec(s, B);
    assert_rc(hr_batch_result(B, g), HR_EINVAL);
    assert_rc(hr_batch_result(B, a), HR_EINVAL);
    /* a guard of a key of another type holds no member */
    ONE(s, hr_put(B, KT("plain"), M("v"), 0));
    hr_batch_reset(B);
    g = hr_zguard(B, KT("plain"), M("m"), NAN);
    a = hr_zadd(B, top, 7, M("m"));
    exec(s, B);
    assert_rc(hr_batch_result(B, g), HR_EWRONGTYPE);
    assert_rc(hr_batch_result(B, a), HR_ECONFLICT);
    /* an op of the step on a key of another type fails alone, as outside one */
    hr_batch_reset(B);
    g = hr_zguard(B, top, M("m"), 1);
    size_t bad = hr_zadd(B, KT("plain"), 1, M("m"));
    a = hr_zadd(B, top, 2, M("m"));
    exec(s, B);
    assert_guard(hr_batch_result(B, g), HR_OK, 1, 1);
    assert_rc(hr_batch_result(B, bad), HR_EWRONGTYPE);
    assert_rc(hr_batch_result(B, a), HR_OK);
    cr_assert_eq(ONE(s, hr_zscore(B, top, M("m")))->score, 2);
    /* where batches are not atomic, a step is one script: one hash slot,
     * sorted-set ops only (store.h); elsewhere the whole batch is the step */
    bool atomic = hr_store_caps_of(s)->atomic_batches;
    hr_batch_reset(B);
    g = hr_zguard(B, top, M("m"), 2);
    a = hr_zadd(B, top, 3, M("m"));
    size_t far = hr_zadd(B, K("elsewhere"), 1, M("m"));
    exec(s, B);
    assert_rc(hr_batch_result(B, g), atomic ? HR_OK : HR_EINVAL);
    assert_rc(hr_batch_result(B, a), atomic ? HR_OK : HR_EINVAL);
    assert_rc(hr_batch_result(B, far), atomic ? HR_OK : HR_EINVAL);
    cr_assert_eq(ONE(s, hr_zscore(B, top, M("m")))->score, atomic ? 3 : 2, "a refused step writes nothing");
    /* a value's put without an expiry may be part of a step (a reaction's
     * record, core/reactions.c); one with an expiry may not */
    double now_score = atomic ? 3 : 2;
    hr_batch_reset(B);
    g = hr_zguard(B, top, M("m"), now_score);
    size_t put = hr_put(B, KT("value"), M("v"), 0);
    exec(s, B);
    assert_guard(hr_batch_result(B, g), HR_OK, 1, now_score);
    assert_rc(hr_batch_result(B, put), HR_OK);
    cr_assert(hr_slice_eq(ONE(s, hr_get(B, KT("value")))->value, M("v")));
    hr_batch_reset(B);
    g = hr_zguard(B, top, M("m"), now_score + 1);
    put = hr_put(B, KT("value"), M("lost"), 0);
    exec(s, B);
    assert_guard(hr_batch_result(B, g), HR_OK, 0, now_score);
    assert_rc(hr_batch_result(B, put), HR_ECONFLICT);
    cr_assert(hr_slice_eq(ONE(s, hr_get(B, KT("value")))->value, M("v")), "a lost guard writes no value");
    hr_batch_reset(B);
    g = hr_zguard(B, top, M("m"), now_score);
    put = hr_put(B, KT("value"), M("w"), 4102444800000);
    exec(s, B);
    assert_rc(hr_batch_result(B, put), atomic ? HR_OK : HR_EINVAL);
}

static void *cas_worker(void *arg) {
    worker *w = arg;
    hr_batch *b = hr_batch_new();
    double seen = NAN; /* what this worker believes the count is */
    for (int i = 0; i < w->n;) {
        hr_batch_reset(b);
        size_t g = hr_zguard(b, w->key, hr_slice_str("m"), seen);
        hr_zadd(b, w->key, isnan(seen) ? 1 : seen + 1, hr_slice_str("m"));
        if (hr_store_exec(w->s, b, 0, NULL) != HR_OK) {
            w->failures++;
            break;
        }
        const hr_result *r = hr_batch_result(b, g);
        if (r->rc != HR_OK && r->rc != HR_ENOTFOUND) {
            w->failures++;
            break;
        }
        if (r->num == 1) {
            seen = isnan(seen) ? 1 : seen + 1;
            i++;
        } else {
            seen = r->rc == HR_OK ? r->score : NAN; /* lost: try again from what it found */
        }
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST_MEM(zset, zset_concurrent_compare_and_set) {
    enum { PER = 200 };
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++)
        w[i] = (worker){.s = s, .key = KT("count"), .id = i, .n = PER};
    run_threads(cas_worker, w, sizeof w[0]);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(w[i].failures, 0);
    /* every set that won counted one: none may be lost or counted twice */
    cr_assert_eq(ONE(s, hr_zscore(B, KT("count"), M("m")))->score, THREADS * PER);
}

STORE_TEST_MEM(zset, zrange_bounds_and_order) {
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

STORE_TEST_MEM(zset, zrange_limit_offset_more) {
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
STORE_TEST_MEM(zset, zset_grows_and_shrinks_across_sizes) {
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

STORE_TEST_MEM(zset, zrange_cursor_exclusive) {
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

STORE_TEST_MEM(zset, zrange_pages_over_equal_scores) {
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

STORE_TEST_MEM(zset, zremrange_score) {
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

STORE_TEST_MEM(zset, zset_empty_disappears) {
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

STORE_TEST_MEM(zset, zset_del_whole) {
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
STORE_TEST_MEM(zset, zset_batch_sees_own_writes) {
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

STORE_TEST_MEM(zset, zset_range_size_hint) {
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

STORE_TEST_MEM(zset, zset_range_with_size) {
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
