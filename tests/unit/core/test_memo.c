/* Unit tests of core/memo: answers kept while the store keys they were read
 * from are unwritten, within a memory budget, over a real RocksDB store (and
 * none on Redis Cluster, whose other servers write unseen). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/arena.h"
#include "core/memo.h"
#include "support.h"

static void put_value(hr_store *s, hr_slice key) {
    hr_batch *b = hr_batch_new();
    hr_put(b, key, hr_slice_str("v"), 0);
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(s, b, 0, &err), HR_OK, "%s", err.msg);
    hr_batch_free(b);
}

static bool got(hr_memo *m, const char *key, int64_t now, const char *want) {
    hr_arena a = HR_ARENA_INIT;
    hr_slice v;
    bool hit = hr_memo_get(m, hr_slice_str(key), now, &a, &v);
    if (hit) cr_assert(hr_slice_eq(v, hr_slice_str(want)), "%s: '%.*s'", key, (int)v.len, v.ptr);
    hr_arena_free(&a);
    return hit;
}

Test(memo, an_answer_holds_until_a_key_it_was_read_from_is_written) {
    test_store t;
    test_store_open(&t, "rocksdb");
    hr_memo *m = hr_memo_new(t.store, 1 << 20);
    cr_assert_not_null(m);
    hr_slice a = hr_slice_str("key-a"), b = hr_slice_str("key-b");
    cr_assert_neq(hr_store_stamp(t.store, a).slot, hr_store_stamp(t.store, b).slot);
    hr_stamp st[2] = {hr_store_stamp(t.store, a), hr_store_stamp(t.store, b)};
    hr_memo_put(m, hr_slice_str("q1"), hr_slice_str("answer 1"), st, 2, 1000);
    hr_memo_put(m, hr_slice_str("q2"), hr_slice_str("answer 2"), st, 1, INT64_MAX);
    cr_assert(got(m, "q1", 999, "answer 1"));
    cr_assert(got(m, "q1", 999, "answer 1"), "a hit keeps it");
    cr_assert_not(got(m, "q3", 0, ""));
    cr_assert_not(got(m, "q1", 1000, ""), "ended");
    cr_assert_not(got(m, "q1", 0, ""), "an answer that ended is dropped");
    hr_memo_put(m, hr_slice_str("q1"), hr_slice_str("answer 1b"), st, 2, INT64_MAX);
    cr_assert(got(m, "q1", 0, "answer 1b"), "replaced");
    put_value(t.store, b);
    cr_assert_not(got(m, "q1", 0, ""), "b was written");
    cr_assert(got(m, "q2", 0, "answer 2"), "q2 was not read from b");
    put_value(t.store, a);
    cr_assert_not(got(m, "q2", 0, ""));
    hr_memo_stats ms = hr_memo_stats_of(m);
    cr_assert_eq(ms.hits, 4);
    cr_assert_eq(ms.misses, 5);
    cr_assert_eq(ms.stale, 3);
    cr_assert_eq(ms.entries, 0);
    cr_assert_eq(ms.bytes, 0);
    hr_memo_free(m);
    test_store_close(&t);
}

Test(memo, the_least_recently_used_answers_go_past_the_budget) {
    test_store t;
    test_store_open(&t, "rocksdb");
    hr_memo *m = hr_memo_new(t.store, 64 * 4096); /* 4 KB a shard */
    char key[32], value[1000];
    memset(value, 'x', sizeof value);
    hr_memo_put(m, hr_slice_str("q0"), hr_slice_str("q0's"), NULL, 0, INT64_MAX);
    for (int i = 1; i < 2000; i++) {
        snprintf(key, sizeof key, "q%d", i);
        hr_memo_put(m, hr_slice_str(key), hr_slice_of(value, sizeof value), NULL, 0, INT64_MAX);
        cr_assert(got(m, "q0", 0, "q0's"), "q0 is used after every put (%d)", i);
    }
    hr_memo_stats ms = hr_memo_stats_of(m);
    cr_assert_leq(ms.bytes, 64 * 4096);
    cr_assert_gt(ms.entries, 64, "each shard holds several: %zu", ms.entries);
    cr_assert_lt(ms.entries, 2000);
    hr_arena a = HR_ARENA_INIT;
    hr_slice v;
    cr_assert(hr_memo_get(m, hr_slice_str("q0"), 0, &a, &v), "used all along: kept");
    cr_assert(hr_memo_get(m, hr_slice_str("q1999"), 0, &a, &v), "the newest: kept");
    cr_assert_not(hr_memo_get(m, hr_slice_str("q1"), 0, &a, &v), "the oldest unused: gone");
    /* An answer larger than a shard's share is not kept. */
    char big[8192];
    memset(big, 'y', sizeof big);
    hr_memo_put(m, hr_slice_str("big"), hr_slice_of(big, sizeof big), NULL, 0, INT64_MAX);
    cr_assert_not(hr_memo_get(m, hr_slice_str("big"), 0, &a, &v));
    hr_arena_free(&a);
    hr_memo_free(m);
    test_store_close(&t);
}

Test(memo, none_without_a_budget_or_on_a_shared_store) {
    test_store t;
    test_store_open(&t, "rocksdb");
    cr_assert_null(hr_memo_new(t.store, 0));
    hr_memo_free(NULL);
    test_store_close(&t);
    test_store_open(&t, "redis");
    cr_assert_null(hr_memo_new(t.store, 1 << 20), "other servers write the store unseen");
    cr_assert_not(hr_store_caps_of(t.store)->stamps, "a shared store has no stamps");
    cr_assert_eq(hr_store_caps_of(t.store)->memo_bytes, 0);
    test_store_close(&t);
}
