/* test_rocks.c — what the store conformance suite (test_store*.c) cannot see
 * of the RocksDB backend's engine: the compaction filters reclaiming
 * sub-keys of deleted, overwritten and converted collections and dead
 * sketch buckets, the HLL merge operator through flushes and compactions,
 * durability across a reopen, open errors, settling, and capped time lists
 * cut by compaction. White-box: it looks at the column families through
 * rocks/engine.h. The other files of suite rocks_internals:
 * test_rocks_zset.c (sorted sets' layouts), test_rocks_cache.c (caches and
 * batch views) and test_rocks_pset.c (packed sets' images and columns);
 * rocks_fixture.h has what they share. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "rocks_fixture.h"

static int64_t dadd_n(const char *key, const char *fmt, long n, hr_distinct_params p) {
    hr_batch *b = hr_batch_new();
    size_t last = 0;
    for (long i = 0; i < n; i++)
        last = hr_dadd(b, hr_slice_str(key), str(fmt, i), &p);
    exec(b);
    int64_t count = hr_batch_result(b, last)->num;
    hr_batch_free(b);
    return count;
}

static void build_dcount(hr_batch *b, void *p) {
    hr_dcount(b, hr_slice_str("d"), p);
}

Test(rocks_internals, compaction_reclaims_dead_subkeys) {
    int64_t now = hr_now_ms();
    /* every set bigger than an inline one (ZINLINE_MAX_ENTRIES), so that it has sub-keys */
    zadd_n("deleted", ZINLINE_MAX_ENTRIES + 100);
    zadd_n("overwritten", ZINLINE_MAX_ENTRIES + 50);
    zadd_n("alive", ZINLINE_MAX_ENTRIES + 35);
    hr_distinct_params p = {.now_ms = now, .ttl_ms = 3600 * 1000, .exact_limit = 20};
    dadd_n("d", "u%ld", 60, p); /* 20 exact members, then converted to sketches */
    hr_batch *b = hr_batch_new();
    hr_del(b, hr_slice_str("deleted"));
    hr_put(b, hr_slice_str("overwritten"), hr_slice_str("a value now"), 0);
    /* expired for longer than the filter's grace period */
    hr_put(b, hr_slice_str("expired"), hr_slice_str("old"), now - 10 * 60 * 1000);
    exec(b);
    hr_batch_free(b);

    /* before compaction the garbage is still there */
    cr_assert_geq(count_keys(CF_SUB, 0), 3 * ZINLINE_MAX_ENTRIES + 100 + 50 + 35);
    compact_all();
    cr_assert_eq(count_keys(CF_SUB, 0), ZINLINE_MAX_ENTRIES + 35, "only the live set's members remain");
    cr_assert_eq(count_keys(CF_ZINDEX, 0), ZINLINE_MAX_ENTRIES + 35);
    cr_assert_eq(count_keys(CF_META, 0), 4, "alive, overwritten, d and the format record");
    cr_assert_eq(count_keys(CF_SKETCH, SKETCH_BUCKET), 1);

    /* and what lives reads the same */
    cr_assert_eq(one_num(build_zcard, "alive"), ZINLINE_MAX_ENTRIES + 35);
    hr_zrange_spec sp = hr_zrange_all(false, 1000);
    b = hr_batch_new();
    hr_zrange(b, hr_slice_str("alive"), &sp);
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->n_entries, ZINLINE_MAX_ENTRIES + 35);
    hr_batch_free(b);
    int64_t c = one_num(build_dcount, &p);
    cr_assert(c >= 58 && c <= 62, "count %ld", (long)c);
}

Test(rocks_internals, compaction_drops_dead_buckets_only) {
    int64_t now = hr_now_ms();
    /* ttl 10 s, W = 1 s: an hour ago is long dead, now is alive */
    hr_distinct_params old = {.now_ms = now - 3600 * 1000, .ttl_ms = 10000, .exact_limit = 100};
    hr_distinct_params cur = {.now_ms = now, .ttl_ms = 10000, .exact_limit = 100};
    dadd_n("d", "old%ld", 1000, old);
    int64_t n = dadd_n("d", "new%ld", 1000, cur);
    cr_assert(n > 970 && n < 1030, "count %ld: the old members must not count", (long)n);
    /* the old members' bucket and the new one, until compaction */
    cr_assert_eq(count_keys(CF_SKETCH, SKETCH_BUCKET), 2);
    compact_all();
    cr_assert_eq(count_keys(CF_SKETCH, SKETCH_BUCKET), 1);
    cr_assert_eq(one_num(build_dcount, &cur), n);
}

Test(rocks_internals, merge_operator_through_compaction) {
    /* many raises of one bucket: operands in the memtable, then merged by
     * flush and compaction; the count must not move */
    hr_distinct_params p = {.now_ms = hr_now_ms(), .ttl_ms = 3600 * 1000, .exact_limit = 10};
    hr_batch *b = hr_batch_new();
    int64_t count = 0;
    for (long round = 0; round < 20; round++) {
        hr_batch_reset(b);
        for (long i = 0; i < 500; i++)
            hr_dadd(b, hr_slice_str("d"), str("m%ld", round * 500 + i), &p);
        exec(b);
        count = hr_batch_result(b, 499)->num;
        if (round == 10) compact_all(); /* merges a long chain once in the middle */
    }
    hr_batch_free(b);
    cr_assert(count > 9700 && count < 10300, "count %ld for 10000", (long)count);
    cr_assert_eq(one_num(build_dcount, &p), count);
    compact_all();
    cr_assert_eq(one_num(build_dcount, &p), count, "compaction changed the sketch");
}

static void build_get(hr_batch *b, void *key) {
    hr_get(b, hr_slice_str(key));
}

Test(rocks_internals, reopen_keeps_everything) {
    hr_distinct_params p = {.now_ms = hr_now_ms(), .ttl_ms = 3600 * 1000, .exact_limit = 50};
    hr_batch *b = hr_batch_new();
    hr_put(b, hr_slice_str("v"), hr_slice_str("kept"), 0);
    hr_incr(b, hr_slice_str("c"), 42);
    exec(b);
    hr_batch_free(b);
    zadd_n("z", 25);
    zadd_n("gone", 10);
    int64_t n = dadd_n("d", "m%ld", 2000, p);
    b = hr_batch_new();
    hr_del(b, hr_slice_str("gone"));
    exec(b);
    hr_batch_free(b);

    hr_store_close(S); /* no flush needed: the WAL has it all */
    S = NULL;
    open_store();

    b = hr_batch_new();
    build_get(b, "v");
    hr_counter_get(b, hr_slice_str("c"));
    hr_zcard(b, hr_slice_str("z"));
    hr_dcount(b, hr_slice_str("d"), &p);
    hr_zadd(b, hr_slice_str("gone"), 1, hr_slice_str("fresh"));
    hr_zcard(b, hr_slice_str("gone"));
    exec(b);
    const hr_result *r = hr_batch_result(b, 0);
    cr_assert(r->rc == HR_OK && hr_slice_eq(r->value, hr_slice_str("kept")));
    cr_assert_eq(hr_batch_result(b, 1)->num, 42);
    cr_assert_eq(hr_batch_result(b, 2)->num, 25);
    cr_assert_eq(hr_batch_result(b, 3)->num, n);
    cr_assert_eq(hr_batch_result(b, 4)->num, 1);
    cr_assert_eq(hr_batch_result(b, 5)->num, 1, "a set created after a reopen must not see old members");
    hr_batch_free(b);
}

/* The write-ahead log files in the store's directory. */
static int wal_files(void) {
    char dir[160];
    snprintf(dir, sizeof dir, "%s/db", tmpdir);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        n += len > 4 && strcmp(e->d_name + len - 4, ".log") == 0;
    }
    closedir(d);
    return n;
}

Test(rocks_internals, idle_restarts_leave_no_logs) {
    hr_batch *b = hr_batch_new();
    hr_put(b, hr_slice_str("v"), hr_slice_str("kept"), 0);
    exec(b);
    hr_batch_free(b);
    /* Ten runs that write nothing: each open starts a log, and each close
     * must leave RocksDB able to delete it. */
    for (int run = 0; run < 10; run++) {
        hr_store_close(S);
        S = NULL;
        open_store();
    }
    cr_assert_leq(wal_files(), 2, "idle restarts left %d log files", wal_files());
    b = hr_batch_new();
    build_get(b, "v");
    exec(b);
    const hr_result *r = hr_batch_result(b, 0);
    cr_assert(r->rc == HR_OK && hr_slice_eq(r->value, hr_slice_str("kept")), "the write before them is kept");
    hr_batch_free(b);
}

Test(rocks_internals, open_errors) {
    hr_store *s = NULL;
    hr_err err = {0};
    cr_assert_eq(hr_store_open("rocksdb:", NULL, &s, &err), HR_EINVAL);
    cr_assert_null(s);
    cr_assert_eq(hr_store_open("rocksdb:/dev/null/x", NULL, &s, &err), HR_EIO);
    cr_assert_null(s);
    cr_assert(strlen(err.msg) > 0);
    /* a second open of the same directory is refused by RocksDB's lock */
    cr_assert_eq(hr_store_open(uri, NULL, &s, &err), HR_EIO);
    cr_assert(strstr(err.msg, "rocksdb") != NULL, "%s", err.msg);
}

Test(rocks_internals, sync_and_small_cache) {
    hr_store_close(S);
    hr_store_options o = {.sync = true, .memory = 8 << 20};
    hr_err err = {0};
    cr_assert_eq(hr_store_open(uri, &o, &S, &err), HR_OK, "%s", err.msg);
    cr_assert_str_eq(hr_store_caps_of(S)->kind, "rocksdb");
    cr_assert_eq(hr_store_ping(S, &err), HR_OK);
    hr_batch *b = hr_batch_new();
    hr_incr(b, hr_slice_str("c"), 1);
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->num, 1);
    hr_batch_free(b);
}

/* A RocksDB property of cf (of the DB when cf < 0) read as a number: some,
 * such as rocksdb.num-files-at-levelN, exist only as strings. */
static uint64_t prop(int cf, const char *name) {
    rocks_store *r = (rocks_store *)S;
    char *v =
        cf < 0 ? rocksdb_property_value(r->db, name) : rocksdb_property_value_cf(r->db, r->cf[cf], name);
    cr_assert_not_null(v, "property %s", name);
    uint64_t n = strtoull(v, NULL, 10);
    rocksdb_free(v);
    return n;
}

/* herald load waits with hr_store_settle for the flushes and compactions its
 * writes queued. Here: five flushes of "subkeys" asked for without waiting
 * (level 0 compacts from four files), then settle must return only once
 * they and the compaction they trigger are done. */
Test(rocks_internals, settle_waits_for_flushes_and_compactions) {
    rocks_store *r = (rocks_store *)S;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 0);
    for (long f = 0; f < 5; f++) {
        char key[32];
        snprintf(key, sizeof key, "settle%ld", f);
        zadd_n(key, 2000);
        char *errptr = NULL;
        rocksdb_flush_cf(r->db, fo, r->cf[CF_SUB], &errptr);
        cr_assert_null(errptr, "flush: %s", errptr);
    }
    rocksdb_flushoptions_destroy(fo);
    bool settled = false;
    double waited = hr_store_settle(S, 60, &settled);
    cr_assert(settled, "settled within 60 s (waited %.1f s)", waited);
    cr_expect_eq(prop(-1, "rocksdb.num-running-flushes"), 0);
    cr_expect_eq(prop(-1, "rocksdb.num-running-compactions"), 0);
    cr_expect_eq(prop(CF_SUB, "rocksdb.num-immutable-mem-table"), 0, "every flush asked for is done");
    cr_expect_eq(prop(CF_SUB, "rocksdb.compaction-pending"), 0);
    cr_expect_lt(prop(CF_SUB, "rocksdb.num-files-at-level0"), 4, "level 0 was compacted");
    /* Nothing left to do: at once. */
    waited = hr_store_settle(S, 60, &settled);
    cr_expect(settled && waited < 1.0, "an idle store settles at once (%.1f s)", waited);
}

/* Capped time lists ---------------------------------------------------------- */

static void flush_tl(void) {
    rocks_store *r = (rocks_store *)S;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *errptr = NULL;
    rocksdb_flush_cf(r->db, fo, r->cf[CF_TL], &errptr);
    cr_assert_null(errptr, "flush: %s", errptr);
    rocksdb_flushoptions_destroy(fo);
}

/* The times of list's live entries, newest first, as "t t t". */
static void tl_times(const char *list, char *out, size_t n) {
    hr_batch *b = hr_batch_new();
    hr_tlrange_spec spec = hr_tlrange_all(100, hr_now_ms());
    size_t op = hr_tlrange(b, hr_slice_str(list), &spec);
    exec(b);
    const hr_result *res = hr_batch_result(b, op);
    out[0] = '\0';
    for (size_t i = 0; i < res->n_entries; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%.0f", i ? " " : "", res->entries[i].score);
    hr_batch_free(b);
}

#define CAP_LISTS 4
static const char *const cap_lists[CAP_LISTS] = {"c/a/tl", "c/a/fd", "d/a/tl", "c/tl"};
static const char *const all_but_18 = "20 19 17 16 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1";

/* Declare a cap on the lists named prefix...suffix. */
static bool cap(hr_slice prefix, const char *suffix, size_t keep) {
    hr_store_decl d = {
        .kind = HR_DECL_TL_CAP, .prefix = prefix, .suffix = hr_slice_str(suffix), .keep = keep};
    return hr_store_declare(S, &d);
}

Test(rocks_internals, compaction_cuts_capped_time_lists_to_their_newest_entries) {
    cr_assert(cap(hr_slice_str("c/"), "/tl", 5));
    /* Times 1..20 in three tables, out of order (a table holds every third
     * time), on a capped list and three lists the cap does not match. Time
     * 18 expired an hour ago; time 19 of the capped list is removed. */
    int64_t an_hour_ago = hr_now_ms() - 3600 * 1000;
    hr_batch *b = hr_batch_new();
    for (long table = 0; table < 3; table++) {
        hr_batch_reset(b);
        for (long t = 1; t <= 20; t++)
            for (size_t l = 0; l < CAP_LISTS && t % 3 == table; l++)
                hr_tladd(b, hr_slice_str(cap_lists[l]), t, str("m%ld", t), t == 18 ? an_hour_ago : 0);
        exec(b);
        flush_tl();
    }
    hr_batch_reset(b);
    hr_tlrem(b, hr_slice_str("c/a/tl"), 19, hr_slice_str("m19"));
    exec(b);
    char got[256];
    tl_times("c/a/tl", got, sizeof got);
    cr_assert_str_eq(got, "20 17 16 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1", "nothing cut before a compaction");

    compact_all();
    tl_times("c/a/tl", got, sizeof got);
    cr_assert_str_eq(got, "20 17 16 15 14", "the 5 newest live entries are left");
    for (size_t l = 1; l < CAP_LISTS; l++) {
        tl_times(cap_lists[l], got, sizeof got);
        cr_assert_str_eq(got, all_but_18, "%s is not capped", cap_lists[l]);
    }
    cr_assert_eq(count_keys(CF_TL, 0), 5 + 19 * (CAP_LISTS - 1), "cut entries are gone, not hidden");

    /* Declaring the cap again changes its keep for the compactions after. */
    cr_assert(cap(hr_slice_str("c/"), "/tl", 2));
    compact_all();
    tl_times("c/a/tl", got, sizeof got);
    cr_assert_str_eq(got, "20 17");
    tl_times("d/a/tl", got, sizeof got);
    cr_assert_str_eq(got, all_but_18);

    /* Up to HR_DECL_MAX declarations; affixes of up to HR_DECL_AFFIX_MAX
     * bytes; keep at least 1. Refused: false, nothing declared. */
    char affix[HR_DECL_AFFIX_MAX + 2];
    memset(affix, 'x', sizeof affix - 1);
    affix[sizeof affix - 1] = '\0';
    cr_assert_not(cap(hr_slice_str(affix), "", 1), "prefix too long");
    cr_assert_not(cap(hr_slice_str(""), affix, 1), "suffix too long");
    cr_assert_not(cap(hr_slice_str("d/"), "", 0), "keep 0");
    for (long i = 1; i < HR_DECL_MAX; i++)
        cr_assert(cap(str("e%ld/", i), "", 1), "cap %ld", i);
    cr_assert_not(cap(hr_slice_str("d/"), "", 1), "one declaration too many");
    compact_all();
    tl_times("d/a/tl", got, sizeof got);
    cr_assert_str_eq(got, all_but_18, "refused caps cut nothing");
    hr_batch_free(b);
}

/* Level 0 of the time lists holds a burst of ingested table files (up to 16
 * before a compaction, so that a fan-out does not stall on compactions), and
 * is compacted as usual (from 4) once a bulk write is too small for a file:
 * a timeline read seeks every level-0 table. */
Test(rocks_internals, a_burst_of_table_files_is_compacted_when_it_ends) {
    hr_store_close(S);
    char tuned[sizeof uri + 16];
    snprintf(tuned, sizeof tuned, "%s?file_min=100", uri);
    hr_err err = {0};
    cr_assert_eq(hr_store_open(tuned, NULL, &S, &err), HR_OK, "%s", err.msg);
    hr_tlbulk *w = hr_tlbulk_new(S);
    for (long file = 0; file < 6; file++) {
        for (long i = 0; i < 100; i++)
            cr_assert_eq(hr_tlbulk_add(w, str("list%ld", i), 1000 + file, hr_slice_str("m"), 0), HR_OK);
        cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "%s", err.msg);
    }
    bool settled = false;
    hr_store_settle(S, 60, &settled);
    cr_assert(settled);
    /* The first file goes to the empty bottom level, the others to level 0. */
    cr_assert_eq(prop(CF_TL, "rocksdb.num-files-at-level0"), 5, "the burst's files wait in level 0");

    /* An empty write (a fan-out worker's claim that found nothing). */
    cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "%s", err.msg);
    hr_store_settle(S, 60, &settled);
    cr_assert(settled);
    cr_assert_lt(prop(CF_TL, "rocksdb.num-files-at-level0"), 4, "compacted once the burst ended");
    cr_assert_eq(hr_tlbulk_add(w, hr_slice_str("list0"), 999, hr_slice_str("m"), 0), HR_OK);
    cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "%s", err.msg); /* one add: batches */
    hr_tlbulk_free(w);
    hr_batch *b = hr_batch_new();
    hr_tlrange_spec spec = hr_tlrange_all(100, hr_now_ms());
    size_t op = hr_tlrange(b, hr_slice_str("list0"), &spec);
    exec(b);
    cr_assert_eq(hr_batch_result(b, op)->n_entries, 7, "6 files and a batch");
    hr_batch_free(b);
}
