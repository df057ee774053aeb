/* test_rocks_cache.c — the RocksDB backend's caches and batch views (suite
 * rocks_internals, rocks_fixture.h): the chunk cache's share of a big read,
 * the set cache (rocks/zset_cache.c) and the metadata cache holding friend lists
 * and small sets, the record cache's buckets and budget, range reads over a
 * size hint, view tables reused between batches, and many range reads
 * sharing one iterator (rocks/view.c). */
#include <stdio.h>
#include <string.h>

#include "rocks_fixture.h"

Test(rocks_internals, a_big_read_offers_the_chunk_cache_a_share) {
    /* 1,000 packed sets of one chunk each, read after a reopen (an empty
     * cache) by one batch of 1,000 tests: it offers a chunk cache of 16 MiB
     * (4,096 slots, one per 4 KiB) at most a thirty-second of it
     * (rocks/view.c, OFFER_SHARE), instead of ~900 chunks that would evict
     * each other and everyone's */
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < 1000; i++)
        hr_pset_add(b, str("p%ld", i), (uint64_t)i, 0);
    exec(b);
    hr_store_close(S);
    /* the chunks' share of the memory (rocks/memory.h) just under 16 MiB */
    hr_store_options o = {.memory = ((size_t)16 << 20) / 24 * 100};
    hr_err err = {0};
    cr_assert_eq(hr_store_open(uri, &o, &S, &err), HR_OK, "%s", err.msg);
    rocks_store *r = (rocks_store *)S;
    cr_assert_eq(rcache_count(r->chunk_cache), 0);
    hr_batch_reset(b);
    for (long i = 0; i < 1000; i++) {
        uint64_t m = (uint64_t)i;
        hr_pset_test(b, str("p%ld", i), &m, 1);
    }
    exec(b);
    for (long i = 0; i < 1000; i++)
        cr_assert_eq(hr_batch_result(b, (size_t)i)->num, 1);
    size_t cached = rcache_count(r->chunk_cache);
    cr_assert(cached > 0 && cached <= 4096 / 32, "%zu chunks cached", cached);
    hr_batch_free(b);
}

Test(rocks_internals, a_friend_list_of_5000_is_read_from_the_set_cache) {
    /* the largest friend list a friends-reads takes (core/reading.h): read
     * whole, it is kept (rocks/zset_cache.c), and read again from there */
    zadd_n("friends", 5000);
    hr_store_close(S);
    S = NULL;
    open_store();
    rocks_store *r = (rocks_store *)S;
    cr_assert_eq(rcache_count(r->zset_cache), 0);
    hr_zrange_spec whole = hr_zrange_all(false, 5000);
    for (int twice = 0; twice < 2; twice++) {
        hr_batch *b = hr_batch_new();
        hr_zrange(b, hr_slice_str("friends"), &whole);
        exec(b);
        const hr_result *res = hr_batch_result(b, 0);
        cr_assert_eq(res->n_entries, 5000);
        cr_assert(hr_slice_eq(res->entries[4999].member, hr_slice_str("m4999")));
        cr_assert_eq(rcache_count(r->zset_cache), 1, "read %d", twice);
        if (twice == 0) {
            hr_batch_free(b);
            continue;
        }
        /* read from the cache, the members point into the cached set (not
         * copied): a write makes the cache let go of it, and the results
         * stay whole until their batch is freed (under ASan, a missing
         * hold is a use after free) */
        hr_batch *w = hr_batch_new();
        hr_zadd(w, hr_slice_str("friends"), 1e9, hr_slice_str("newcomer"));
        exec(w);
        hr_batch_free(w);
        for (size_t i = 0; i < 5000; i += 999)
            cr_assert(hr_slice_eq(res->entries[i].member, str("m%ld", (long)i)), "entry %zu", i);
        hr_batch_free(b);
    }
}

/* The members of a range read's result, space-separated. */
static void members_of(const hr_result *res, char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < res->n_entries && len + 1 < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%.*s", i ? " " : "", (int)res->entries[i].member.len,
                                res->entries[i].member.ptr);
}

/* One range read of key: its members into out. */
static void zrange_members(const char *key, const hr_zrange_spec *spec, char *out, size_t cap) {
    hr_batch *b = hr_batch_new();
    hr_zrange(b, hr_slice_str(key), spec);
    exec(b);
    members_of(hr_batch_result(b, 0), out, cap);
    hr_batch_free(b);
}

Test(rocks_internals, a_small_set_read_in_part_is_read_whole_and_cached) {
    /* a URL's readers are read from the oldest still live (a score bound),
     * then after a cursor: a set of up to ZC_FILL_MEMBERS is read whole the
     * first time, kept, and every such read answered from it alike */
    zadd_n("readers", 300);
    zadd_n("many", ZC_FILL_MEMBERS + 1);
    hr_store_close(S);
    S = NULL;
    open_store();
    rocks_store *r = (rocks_store *)S;
    char got[4096];
    hr_zrange_spec from100 = hr_zrange_all(false, 3);
    from100.min = 100;
    for (int twice = 0; twice < 2; twice++) {
        zrange_members("readers", &from100, got, sizeof got);
        cr_assert_str_eq(got, "m100 m101 m102", "read %d", twice);
        cr_assert_eq(rcache_count(r->zset_cache), 1, "read %d", twice);
    }
    hr_zrange_spec after = from100;
    after.has_cursor = true;
    after.cursor_score = 297;
    after.cursor_member = hr_slice_str("m297");
    after.limit = 10;
    zrange_members("readers", &after, got, sizeof got);
    cr_assert_str_eq(got, "m298 m299");
    hr_zrange_spec below = hr_zrange_all(true, 2);
    below.max = 120;
    zrange_members("readers", &below, got, sizeof got);
    cr_assert_str_eq(got, "m120 m119");
    /* a write lets go of it; the next read sees the write */
    hr_batch *w = hr_batch_new();
    hr_zrem(w, hr_slice_str("readers"), hr_slice_str("m101"));
    hr_zadd(w, hr_slice_str("readers"), 100.5, hr_slice_str("new"));
    exec(w);
    hr_batch_free(w);
    zrange_members("readers", &from100, got, sizeof got);
    cr_assert_str_eq(got, "m100 new m102");
    /* a bigger set read in part stays on disk */
    size_t kept = rcache_count(r->zset_cache);
    zrange_members("many", &from100, got, sizeof got);
    cr_assert_str_eq(got, "m100 m101 m102");
    cr_assert_eq(rcache_count(r->zset_cache), kept, "a set of more than ZC_FILL_MEMBERS is not kept");
}

Test(rocks_internals, the_set_cache_keeps_a_thousand_friend_lists) {
    /* 1,000 sets too big to be inline, each read whole once: the cache keeps
     * nearly all of them. When its slots were direct-mapped, with 2,048 of
     * them (ZC_SLOTS before) ~200 were lost to collisions */
    for (long i = 0; i < 1000; i++)
        zadd_n(str("friends%ld", i).ptr, ZINLINE_MAX_ENTRIES + 1);
    hr_store_close(S);
    S = NULL;
    open_store();
    rocks_store *r = (rocks_store *)S;
    hr_zrange_spec whole = hr_zrange_all(false, ZINLINE_MAX_ENTRIES + 1);
    for (long i = 0; i < 1000; i++) {
        hr_batch *b = hr_batch_new();
        hr_zrange(b, str("friends%ld", i), &whole);
        exec(b);
        cr_assert_eq(hr_batch_result(b, 0)->n_entries, ZINLINE_MAX_ENTRIES + 1);
        hr_batch_free(b);
    }
    size_t kept = rcache_count(r->zset_cache);
    cr_assert(kept >= 985 && kept <= 1000, "%zu of 1000 friend lists kept", kept);
}

Test(rocks_internals, the_metadata_cache_keeps_twenty_thousand_small_sets) {
    /* 20,000 sets of two members (a rarely read URL's readers, kept inline
     * in the set's metadata record), each read once: the default cache
     * keeps nearly all of them. With 16,384 slots (its size before) at most
     * 16,384 could stay, fewer for collisions; a friends-reads of 200
     * feeds of 100 such URLs then read most of them from RocksDB */
    enum { SETS = 20000 };
    hr_batch *w = hr_batch_new();
    for (long i = 0; i < SETS; i++) {
        hr_zadd(w, str("url%ld", i), 1.0, hr_slice_str("reader-a"));
        hr_zadd(w, str("url%ld", i), 2.0, hr_slice_str("reader-b"));
    }
    exec(w);
    hr_batch_free(w);
    hr_store_close(S);
    S = NULL;
    open_store();
    rocks_store *r = (rocks_store *)S;
    hr_zrange_spec whole = hr_zrange_all(false, 8);
    for (long i = 0; i < SETS; i += 500) {
        hr_batch *b = hr_batch_new();
        for (long j = i; j < i + 500; j++)
            hr_zrange(b, str("url%ld", j), &whole);
        exec(b);
        for (size_t j = 0; j < 500; j++)
            cr_assert_eq(hr_batch_result(b, j)->n_entries, 2);
        hr_batch_free(b);
    }
    size_t kept = rcache_count(r->meta_cache);
    cr_assert(kept >= SETS * 98 / 100, "%zu of %d sets' metadata kept", kept, SETS);
}

Test(rocks_internals, a_range_read_skips_a_set_over_its_size_hint) {
    /* store.h's max_size: RocksDB answers no entries for a bigger set (it
     * would seek into every level), and reads a set as big as the hint */
    zadd_n("big", 200);
    hr_zrange_spec spec = hr_zrange_all(false, 32);
    spec.max_size = 199;
    hr_batch *b = hr_batch_new();
    hr_zrange(b, hr_slice_str("big"), &spec);
    spec.max_size = 200;
    hr_zrange(b, hr_slice_str("big"), &spec);
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->n_entries, 0);
    cr_assert(hr_batch_result(b, 0)->more);
    cr_assert_eq(hr_batch_result(b, 1)->n_entries, 32);
    hr_batch_free(b);
}

Test(rocks_internals, record_cache_keeps_two_keys_of_a_bucket_and_replaces_the_older) {
    /* Two slots are one bucket of two ways: every key lands in it. Two keys
     * stay side by side (a direct-mapped cache made them evict each
     * other); a third replaces the one used least recently. */
    rcache *c = rcache_new(2, 100, 1 << 20);
    rblob *held;
    hr_slice got;
    rcache_offer(c, hr_slice_str("a"), hr_slice_str("1"), 1);
    rcache_offer(c, hr_slice_str("b"), hr_slice_str("2"), 1);
    cr_assert_eq(rcache_count(c), 2);
    cr_assert(rcache_take(c, hr_slice_str("a"), 10, &held, &got)); /* a is now the recent one */
    cr_assert(hr_slice_eq(got, hr_slice_str("1")));
    rcache_release(held);
    cr_assert(rcache_take(c, hr_slice_str("b"), 10, &held, &got));
    cr_assert(hr_slice_eq(got, hr_slice_str("2")));
    rcache_release(held);
    cr_assert(rcache_take(c, hr_slice_str("a"), 10, &held, &got));
    rcache_release(held);
    rcache_offer(c, hr_slice_str("c"), hr_slice_str("3"), 1); /* replaces b, the older */
    cr_assert_eq(rcache_count(c), 2);
    cr_assert(!rcache_take(c, hr_slice_str("b"), 10, &held, &got));
    cr_assert(rcache_take(c, hr_slice_str("a"), 10, &held, &got));
    rcache_release(held);
    cr_assert(rcache_take(c, hr_slice_str("c"), 10, &held, &got));
    cr_assert(hr_slice_eq(got, hr_slice_str("3")));
    rcache_release(held);
    /* a write of either key in flux keeps both from being taken or offered */
    rcache_write_begin(c, hr_slice_str("a"));
    cr_assert(!rcache_take(c, hr_slice_str("c"), 10, &held, &got));
    rcache_write_end(c, hr_slice_str("a"), true, true, hr_slice_str("4"), 20);
    cr_assert(!rcache_take(c, hr_slice_str("a"), 10, &held, &got)); /* stamped 20, past the reader's 10 */
    cr_assert(rcache_take(c, hr_slice_str("a"), 20, &held, &got));
    cr_assert(hr_slice_eq(got, hr_slice_str("4")));
    rcache_release(held);
    rcache_free(c);
}

Test(rocks_internals, record_cache_keeps_to_its_budget) {
    /* values of 100 bytes against a budget of 250: two are kept */
    rcache *c = rcache_new(1024, 100, 250);
    char v[200];
    memset(v, 'v', sizeof v);
    for (long i = 0; i < 10; i++)
        rcache_offer(c, str("k%ld", i), hr_slice_of(v, 100), 1);
    cr_assert_eq(rcache_count(c), 2);
    long kept = -1;
    rblob *held;
    hr_slice got;
    for (long i = 0; i < 10 && kept < 0; i++)
        if (rcache_take(c, str("k%ld", i), 10, &held, &got)) {
            kept = i;
            rcache_release(held);
        }
    cr_assert(kept >= 0);
    /* a write of a kept key replaces its value within the budget */
    memset(v, 'w', 100);
    rcache_write_begin(c, str("k%ld", kept));
    rcache_write_end(c, str("k%ld", kept), true, true, hr_slice_of(v, 100), 5);
    cr_assert(rcache_take(c, str("k%ld", kept), 10, &held, &got));
    cr_assert(got.len == 100 && got.ptr[0] == 'w');
    rcache_release(held);
    /* one too big to keep is forgotten, which makes room for another */
    rcache_write_begin(c, str("k%ld", kept));
    rcache_write_end(c, str("k%ld", kept), true, true, hr_slice_of(v, 200), 6);
    cr_assert_not(rcache_take(c, str("k%ld", kept), 10, &held, &got));
    cr_assert_eq(rcache_count(c), 1);
    rcache_offer(c, str("k%ld", 100), hr_slice_of(v, 100), 7);
    cr_assert_eq(rcache_count(c), 2);
    rcache_free(c);
}

Test(rocks_internals, a_taken_record_outlives_its_slot) {
    /* a batch reads a cached record in place (rblob): the record must stay
     * whole while the slot is refilled and emptied under it (ASan sees a
     * use after free if it does not) */
    rcache *c = rcache_new(16, 100, 1000);
    char v[200];
    memset(v, 'a', sizeof v);
    rcache_offer(c, hr_slice_str("k"), hr_slice_of(v, 100), 1);
    rblob *held = NULL;
    hr_slice got;
    cr_assert(rcache_take(c, hr_slice_str("k"), 10, &held, &got));
    memset(v, 'b', sizeof v);
    rcache_write_begin(c, hr_slice_str("k"));
    rcache_write_end(c, hr_slice_str("k"), true, true, hr_slice_of(v, 100), 20);
    rcache_write_begin(c, hr_slice_str("k"));
    rcache_write_end(c, hr_slice_str("k"), true, true, hr_slice_of(v, 200), 21); /* too big: emptied */
    cr_assert_eq(rcache_count(c), 0);
    cr_assert_eq(got.len, 100);
    for (size_t i = 0; i < got.len; i++)
        cr_assert_eq(got.ptr[i], 'a');
    rcache_release(held);
    rcache_free(c);
}

/* hr_get of key%ld for i in [0, n): how many were found. */
static long found_of(long n) {
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < n; i++)
        hr_get(b, str("key%ld", i));
    exec(b);
    long found = 0;
    for (long i = 0; i < n; i++)
        found += hr_batch_result(b, (size_t)i)->rc == HR_OK;
    hr_batch_free(b);
    return found;
}

Test(rocks_internals, a_reused_view_table_remembers_nothing) {
    /* batches of 600 records get view tables big enough to be kept for the
     * next batch (rocks/view.c, vspares): one that remembered a record of
     * an earlier batch would still find the keys deleted in between */
    enum { N = 600 };
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < N; i++)
        hr_put(b, str("key%ld", i), hr_slice_str("value"), 0);
    exec(b);
    hr_batch_free(b);
    cr_assert_eq(found_of(N), N);
    cr_assert_eq(found_of(N), N);
    b = hr_batch_new();
    for (long i = 0; i < N; i++)
        hr_del(b, str("key%ld", i));
    exec(b);
    hr_batch_free(b);
    cr_assert_eq(found_of(N), 0);
}

/* Range reads of many sorted sets in one batch, each set spread over the
 * bottom level, an L0 file and the memtable, their names sharing prefixes
 * ("s1", "s10"...): what friends-reads does with 100 reader lists. The
 * zindex prefix filters skip files, and the batch's range reads share one
 * iterator (rocks/view.c); each answer must still be its own set's, exactly. */
#define NSETS 24
static void zadd_round(int round) {
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < NSETS; i++) {
        char key[32];
        snprintf(key, sizeof key, "s%ld", i);
        for (long j = 0; j < i % 4; j++) { /* s0, s4...: no members */
            char m[48];
            snprintf(m, sizeof m, "r%d.%ld", round, j);
            hr_zadd(b, hr_slice_str(key), round * 10 + j, hr_slice_str(m));
        }
    }
    exec(b);
    hr_batch_free(b);
}

/* The members of res joined by spaces. */
static void joined(const hr_result *res, char *out, size_t n) {
    out[0] = '\0';
    for (size_t i = 0; i < res->n_entries; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%.*s", i ? " " : "", (int)res->entries[i].member.len,
                 res->entries[i].member.ptr);
}

/* What s<i> holds after rounds 0..2, forward, as "r0.0 r0.1 r1.0 ...". */
static void expected(long i, bool reverse, size_t limit, char *out, size_t n) {
    char all[3 * 4][48];
    size_t k = 0;
    for (int round = 0; round < 3; round++)
        for (long j = 0; j < i % 4; j++)
            snprintf(all[k++], sizeof all[0], "r%d.%ld", round, j);
    out[0] = '\0';
    for (size_t x = 0; x < k && x < limit; x++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", x ? " " : "", all[reverse ? k - 1 - x : x]);
}

Test(rocks_internals, many_range_reads_in_one_batch) {
    rocks_store *r = (rocks_store *)S;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *errptr = NULL;
    zadd_round(0);
    compact_all(); /* the bottom level */
    zadd_round(1);
    rocksdb_flush_cf(r->db, fo, r->cf[CF_ZINDEX], &errptr); /* an L0 file */
    cr_assert_null(errptr, "%s", errptr);
    rocksdb_flushoptions_destroy(fo);
    zadd_round(2); /* the memtable */

    for (int indexed = 0; indexed < 2; indexed++) {
        hr_batch *b = hr_batch_new();
        /* indexed: a write before the reads makes the batch index its
         * writes, and its iterators see them (the member "new" of s_new) */
        if (indexed) hr_zadd(b, hr_slice_str("s_new"), 1, hr_slice_str("new"));
        size_t first = hr_batch_len(b);
        for (long i = 0; i < NSETS; i++) {
            char key[32];
            snprintf(key, sizeof key, "s%ld", i);
            hr_zrange_spec fwd = hr_zrange_all(false, 100), rev = hr_zrange_all(true, 2);
            hr_zrange(b, hr_slice_str(key), &fwd);
            hr_zrange(b, hr_slice_str(key), &rev);
        }
        hr_zrange_spec all = hr_zrange_all(false, 100);
        size_t fresh = hr_zrange(b, hr_slice_str("s_new"), &all);
        exec(b);
        char got[256], want[256];
        for (long i = 0; i < NSETS; i++) {
            joined(hr_batch_result(b, first + 2 * (size_t)i), got, sizeof got);
            expected(i, false, 100, want, sizeof want);
            cr_assert_str_eq(got, want, "s%ld forward (indexed %d)", i, indexed);
            joined(hr_batch_result(b, first + 2 * (size_t)i + 1), got, sizeof got);
            expected(i, true, 2, want, sizeof want);
            cr_assert_str_eq(got, want, "s%ld backward (indexed %d)", i, indexed);
        }
        joined(hr_batch_result(b, fresh), got, sizeof got);
        cr_assert_str_eq(got, indexed ? "new" : "", "indexed %d", indexed);
        hr_batch_free(b);
    }
}
