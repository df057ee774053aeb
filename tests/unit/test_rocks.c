/* test_rocks.c — what the store conformance suite (test_store.c) cannot see
 * of the RocksDB backend: the compaction filters reclaiming sub-keys of
 * deleted, overwritten and converted collections and dead sketch buckets,
 * the HLL merge operator through flushes and compactions, durability across
 * a reopen, and open errors. White-box: it looks at the column families
 * through rocks/engine.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "store/rocks/cache.h"
#include "store/rocks/pset.h"
#include "store/rocks/zset.h"

static char tmpdir[64], uri[128];
static hr_store *S;

static void open_store(void) {
    hr_err err = {0};
    int rc = hr_store_open(uri, NULL, &S, &err);
    cr_assert_eq(rc, HR_OK, "open %s: %s", uri, err.msg);
}

static void init(void) {
    strcpy(tmpdir, "/tmp/herald-rocks-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    snprintf(uri, sizeof uri, "rocksdb:%s/db", tmpdir);
    open_store();
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

static void fini(void) {
    hr_store_close(S);
    S = NULL;
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(rocks_internals, .init = init, .fini = fini, .timeout = 60);

/* Helpers -------------------------------------------------------------------- */

static void exec(hr_batch *b) {
    hr_err err = {0};
    int rc = hr_store_exec(S, b, 0, &err);
    cr_assert_eq(rc, HR_OK, "exec: %s", err.msg);
}

/* fmt with i, valid until the next call (the builders copy it at once). */
static hr_slice str(const char *fmt, long i) {
    static char tmp[64];
    snprintf(tmp, sizeof tmp, fmt, i);
    return hr_slice_str(tmp);
}

static void zadd_n(const char *key, long n) {
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < n; i++) {
        char m[32];
        snprintf(m, sizeof m, "m%ld", i);
        hr_zadd(b, hr_slice_str(key), (double)i, hr_slice_str(m));
    }
    exec(b);
    hr_batch_free(b);
}

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

static int64_t one_num(void (*build)(hr_batch *b, void *arg), void *arg) {
    hr_batch *b = hr_batch_new();
    build(b, arg);
    exec(b);
    int64_t n = hr_batch_result(b, 0)->num;
    hr_batch_free(b);
    return n;
}

static void build_zcard(hr_batch *b, void *key) {
    hr_zcard(b, hr_slice_str(key));
}
static void build_dcount(hr_batch *b, void *p) {
    hr_dcount(b, hr_slice_str("d"), p);
}

static void compact_all(void) {
    rocks_store *r = (rocks_store *)S;
    for (int i = 0; i < CF_COUNT_; i++)
        rocksdb_compact_range_cf(r->db, r->cf[i], NULL, 0, NULL, 0);
}

/* Keys of cf; with tag, only sketch keys whose byte after the prefix is tag. */
static size_t count_keys(int cf, char tag) {
    rocks_store *r = (rocks_store *)S;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_total_order_seek(ro, 1); /* across prefixes, hashed memtables too */
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(r->db, ro, r->cf[cf]);
    size_t n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t len;
        const char *k = rocksdb_iter_key(it, &len);
        hr_slice user, rest;
        uint64_t version;
        if (tag && (key_parse(hr_slice_of(k, len), &user, &version, &rest) != 0 || rest.len == 0 ||
                    rest.ptr[0] != tag))
            continue;
        n++;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

/* Tests ------------------------------------------------------------------------ */

Test(rocks_internals, compaction_reclaims_dead_subkeys) {
    int64_t now = hr_now_ms();
    /* every set bigger than an inline one (ZINLINE_MAX_ENTRIES), so that it has sub-keys */
    zadd_n("deleted", ZINLINE_MAX_ENTRIES + 100);
    zadd_n("overwritten", ZINLINE_MAX_ENTRIES + 50);
    zadd_n("trimmed", ZINLINE_MAX_ENTRIES + 40);
    zadd_n("alive", ZINLINE_MAX_ENTRIES + 35);
    hr_distinct_params p = {.now_ms = now, .ttl_ms = 3600 * 1000, .exact_limit = 20};
    dadd_n("d", "u%ld", 60, p); /* 20 exact members, then converted to sketches */
    hr_batch *b = hr_batch_new();
    hr_del(b, hr_slice_str("deleted"));
    hr_put(b, hr_slice_str("overwritten"), hr_slice_str("a value now"), 0);
    hr_ztrim(b, hr_slice_str("trimmed"), 0, true);
    /* expired for longer than the filter's grace period */
    hr_put(b, hr_slice_str("expired"), hr_slice_str("old"), now - 10 * 60 * 1000);
    exec(b);
    hr_batch_free(b);

    /* before compaction the garbage is still there */
    cr_assert_geq(count_keys(CF_SUB, 0), 4 * ZINLINE_MAX_ENTRIES + 100 + 50 + 40 + 35);
    compact_all();
    cr_assert_eq(count_keys(CF_SUB, 0), ZINLINE_MAX_ENTRIES + 35, "only the live set's members remain");
    cr_assert_eq(count_keys(CF_ZINDEX, 0), ZINLINE_MAX_ENTRIES + 35);
    cr_assert_eq(count_keys(CF_META, 0), 3, "alive, overwritten, d");
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
    hr_store_options o = {.sync = true, .cache_bytes = 1 << 20};
    hr_err err = {0};
    cr_assert_eq(hr_store_open(uri, &o, &S, &err), HR_OK, "%s", err.msg);
    cr_assert_str_eq(hr_store_kind(S), "rocksdb");
    cr_assert_eq(hr_store_ping(S, &err), HR_OK);
    hr_batch *b = hr_batch_new();
    hr_incr(b, hr_slice_str("c"), 1);
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->num, 1);
    hr_batch_free(b);
}

/* Sorted sets kept in memory (rocks/zset_memory.c) ------------------------------------ */

static rmeta meta_of(const char *key) {
    rocks_store *r = (rocks_store *)S;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *errptr = NULL;
    size_t len = 0;
    char *v = rocksdb_get_cf(r->db, ro, r->cf[CF_META], key, strlen(key), &len, &errptr);
    rocksdb_readoptions_destroy(ro);
    cr_assert_null(errptr);
    rmeta m;
    memset(&m, 0, sizeof m);
    if (v) cr_assert_eq(meta_decode(hr_slice_of(v, len), &m), 0);
    m.value = hr_slice_of(NULL, 0);
    rocksdb_free(v);
    return m;
}

/* n score changes of the members m0..m19 of key (+1 each). */
static void churn(const char *key, long n) {
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < n; i++)
        hr_zincr(b, hr_slice_str(key), 1, str("m%ld", i % 20));
    exec(b);
    hr_batch_free(b);
}

/* The members of key, highest first, as "m1 m2 ..." (at most 5). */
static void top5(const char *key, char *out, size_t cap) {
    hr_batch *b = hr_batch_new();
    hr_zrange_spec sp = hr_zrange_all(true, 5);
    hr_zrange(b, hr_slice_str(key), &sp);
    exec(b);
    const hr_result *r = hr_batch_result(b, 0);
    out[0] = '\0';
    for (size_t i = 0; i < r->n_entries; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", i ? " " : "", (int)r->entries[i].member.len,
                 r->entries[i].member.ptr);
    hr_batch_free(b);
}

Test(rocks_internals, ranking_moves_into_memory) {
    /* 1100 members (m_i at score i): below the size that qualifies, churn
     * leaves a set on disk; once its members moved more often than it has
     * members, its order moves into memory and its index keys go. */
    zadd_n("small", ZINLINE_MAX_ENTRIES + 100); /* past inline (rocks/zset_inline.c) */
    churn("small", 3000);
    cr_assert_eq(meta_of("small").zflags & ZF_MEM, 0, "a small set stays on disk");

    zadd_n("rank", 1100);
    churn("rank", 500);
    cr_assert_eq(meta_of("rank").zflags & ZF_MEM, 0, "500 changes of 1100 members: still on disk");
    const size_t small_records = count_keys(CF_SUB, 0) - 1100;
    churn("rank", 700);
    rmeta m = meta_of("rank");
    cr_assert(m.zflags & ZF_MEM, "1200 changes of 1100 members: in memory");
    cr_assert(m.zflags & ZF_MEMCF, "with its member records in memsetmembers");
    cr_assert_eq(m.size, 1100);
    cr_assert_eq(count_keys(CF_ZMEMM, 0), 1100, "one record a member, copied");
    char top[128];
    top5("rank", top, sizeof top);
    cr_assert_str_eq(top, "m1099 m1098 m1097 m1096 m1095");
    churn("rank", 20 * 1200); /* m0..m19 up by 1260 each: now the top, m19 first */
    top5("rank", top, sizeof top);
    cr_assert_str_eq(top, "m19 m18 m17 m16 m15");

    /* its index keys and its records in subkeys are garbage now: compaction
     * drops them (the small set's stay) */
    compact_all();
    cr_assert_eq(count_keys(CF_ZINDEX, 0), ZINLINE_MAX_ENTRIES + 100);
    cr_assert_eq(count_keys(CF_SUB, 0), small_records);
    cr_assert_eq(count_keys(CF_ZMEMM, 0), 1100);
    cr_assert_eq(one_num(build_zcard, "rank"), 1100);

    /* a reopen rebuilds it from its member records */
    hr_store_close(S);
    S = NULL;
    open_store();
    top5("rank", top, sizeof top);
    cr_assert_str_eq(top, "m19 m18 m17 m16 m15");
    churn("rank", 1); /* m0 up once more */
    hr_batch *b = hr_batch_new();
    hr_zscore(b, hr_slice_str("rank"), hr_slice_str("m0"));
    hr_zrem(b, hr_slice_str("rank"), hr_slice_str("m19"));
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->score, 0 + 60 + 1200 + 1);
    hr_batch_free(b);
    top5("rank", top, sizeof top);
    cr_assert_str_eq(top, "m18 m17 m16 m15 m14");
    cr_assert_eq(one_num(build_zcard, "rank"), 1099);
    cr_assert(meta_of("rank").zflags & ZF_MEM);

    /* deleting it drops it; a new set under the key starts on disk, empty */
    b = hr_batch_new();
    hr_del(b, hr_slice_str("rank"));
    hr_zadd(b, hr_slice_str("rank"), 5, hr_slice_str("fresh"));
    exec(b);
    hr_batch_free(b);
    cr_assert_eq(meta_of("rank").zflags & ZF_MEM, 0);
    top5("rank", top, sizeof top);
    cr_assert_str_eq(top, "fresh");
    compact_all();
    cr_assert_eq(count_keys(CF_ZMEMM, 0), 0, "the deleted set's records go");
}

Test(rocks_internals, a_set_in_memory_keeps_every_committed_score_through_a_crash) {
    /* A child process writes a ranking kept in memory and dies without
     * closing the store, as kill -9 would leave it: its member records'
     * latest writes are only in the log, which the next open replays into
     * the vector memtable of "memsetmembers". */
    hr_store_close(S);
    S = NULL;
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        open_store();
        zadd_n("rank", 1100);
        churn("rank", 1200); /* into memory */
        churn("rank", 20 * 1200);
        _exit(meta_of("rank").zflags == (ZF_MEM | ZF_MEMCF) ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child wrote a set in memory");
    open_store();
    cr_assert_eq(meta_of("rank").zflags, ZF_MEM | ZF_MEMCF);
    char top[128];
    top5("rank", top, sizeof top);
    cr_assert_str_eq(top, "m19 m18 m17 m16 m15");
    hr_batch *b = hr_batch_new();
    hr_zscore(b, hr_slice_str("rank"), hr_slice_str("m0"));
    hr_zscore(b, hr_slice_str("rank"), hr_slice_str("m1099"));
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->score, 0 + 60 + 1200);
    cr_assert_eq(hr_batch_result(b, 1)->score, 1099);
    hr_batch_free(b);
    cr_assert_eq(one_num(build_zcard, "rank"), 1100);
}

Test(rocks_internals, a_set_moved_into_memory_by_an_older_version_moves_its_records_at_its_first_write) {
    /* What an older version left: ZF_MEM without ZF_MEMCF, the member records
     * in subkeys. Made here by marking an on-disk set so, then reopening. */
    zadd_n("old", 1100);
    rmeta m = meta_of("old");
    cr_assert_eq(m.zflags & (ZF_MEM | ZF_INLINE), 0);
    m.zflags |= ZF_MEM;
    hr_buf raw = HR_BUF_INIT;
    meta_encode(&m, &raw);
    rocks_store *r = (rocks_store *)S;
    char *errptr = NULL;
    rocksdb_put_cf(r->db, r->wopts, r->cf[CF_META], "old", 3, raw.data, raw.len, &errptr);
    cr_assert_null(errptr);
    hr_buf_free(&raw);
    hr_store_close(S);
    S = NULL;
    open_store();

    /* read from subkeys */
    char top[128];
    top5("old", top, sizeof top);
    cr_assert_str_eq(top, "m1099 m1098 m1097 m1096 m1095");
    cr_assert_eq(count_keys(CF_ZMEMM, 0), 0, "a read moves nothing");

    /* the first write moves them, at their latest scores */
    hr_batch *b = hr_batch_new();
    hr_zincr(b, hr_slice_str("old"), 2000, hr_slice_str("m3"));
    hr_zrem(b, hr_slice_str("old"), hr_slice_str("m1099"));
    exec(b);
    hr_batch_free(b);
    cr_assert_eq(meta_of("old").zflags, ZF_MEM | ZF_MEMCF);
    cr_assert_eq(meta_of("old").size, 1099);
    cr_assert_eq(count_keys(CF_ZMEMM, 0), 1099);
    compact_all();
    cr_assert_eq(count_keys(CF_SUB, 0), 0, "the originals go");

    /* and a reopen builds it from them */
    churn("old", 20); /* m0..m19 up by 1 */
    hr_store_close(S);
    S = NULL;
    open_store();
    top5("old", top, sizeof top);
    cr_assert_str_eq(top, "m3 m1098 m1097 m1096 m1095");
    b = hr_batch_new();
    hr_zscore(b, hr_slice_str("old"), hr_slice_str("m3"));
    hr_zscore(b, hr_slice_str("old"), hr_slice_str("m19"));
    hr_zscore(b, hr_slice_str("old"), hr_slice_str("m1099"));
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->score, 3 + 2000 + 1);
    cr_assert_eq(hr_batch_result(b, 1)->score, 19 + 1);
    cr_assert_eq(hr_batch_result(b, 2)->rc, HR_ENOTFOUND);
    hr_batch_free(b);
    cr_assert_eq(one_num(build_zcard, "old"), 1099);
}

Test(rocks_internals, a_set_of_times_keeps_its_order_with_the_time_lists) {
    const long n = 40; /* past ZTL_INLINE_MAX_ENTRIES: out of line */
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < n; i++)
        hr_zadd_time(b, hr_slice_str("times"), 1000 + i, str("m%ld", i));
    exec(b);
    rmeta m = meta_of("times");
    cr_assert_eq(m.zflags, ZF_TL, "flags %d", m.zflags);
    cr_assert_eq(m.size, n);
    cr_assert_eq(count_keys(CF_ZINDEX, 0) + count_keys(CF_SUB, 0), 0, "nothing in zindex and subkeys");
    cr_assert_eq(count_keys(CF_TL, 0), n, "an index entry a member in timelists");
    cr_assert_eq(count_keys(CF_ZTLM, 0), n, "a member record a member in timesetmembers");

    /* a move deletes the old entry; a removal both keys */
    hr_batch_reset(b);
    hr_zadd_time(b, hr_slice_str("times"), 5, hr_slice_str("m7"));
    hr_zrem(b, hr_slice_str("times"), hr_slice_str("m8"));
    exec(b);
    cr_assert_eq(count_keys(CF_TL, 0), n - 1);
    cr_assert_eq(count_keys(CF_ZTLM, 0), n - 1);

    /* scores must stay integers: refused, nothing changed */
    hr_batch_reset(b);
    size_t half = hr_zadd(b, hr_slice_str("times"), 1.5, hr_slice_str("m1"));
    size_t incr = hr_zincr(b, hr_slice_str("times"), 0.25, hr_slice_str("m2"));
    size_t huge = hr_zadd(b, hr_slice_str("times"), 1e300, hr_slice_str("new"));
    size_t score = hr_zscore(b, hr_slice_str("times"), hr_slice_str("m1"));
    exec(b);
    cr_assert_eq(hr_batch_result(b, half)->rc, HR_EINVAL);
    cr_assert_eq(hr_batch_result(b, incr)->rc, HR_EINVAL);
    cr_assert_eq(hr_batch_result(b, huge)->rc, HR_EINVAL);
    cr_assert_eq(hr_batch_result(b, score)->score, 1001);
    cr_assert_eq(meta_of("times").size, n - 1);

    /* compaction keeps a live set's entries and drops a deleted one's */
    compact_all();
    cr_assert_eq(count_keys(CF_TL, 0), n - 1);
    cr_assert_eq(count_keys(CF_ZTLM, 0), n - 1);
    hr_batch_reset(b);
    hr_del(b, hr_slice_str("times"));
    hr_zadd_time(b, hr_slice_str("times2"), 1, hr_slice_str("kept"));
    for (long i = 0; i < ZTL_INLINE_MAX_ENTRIES; i++)
        hr_zadd_time(b, hr_slice_str("times2"), 2 + i, str("m%ld", i));
    exec(b);
    compact_all();
    cr_assert_eq(count_keys(CF_TL, 0), ZTL_INLINE_MAX_ENTRIES + 1, "only the live set's entries remain");
    cr_assert_eq(count_keys(CF_ZTLM, 0), ZTL_INLINE_MAX_ENTRIES + 1, "and its member records");

    /* a set made by hr_zadd stays as it is */
    zadd_n("plain", 20);
    hr_batch_reset(b);
    hr_zadd_time(b, hr_slice_str("plain"), 77, hr_slice_str("late"));
    exec(b);
    cr_assert_eq(meta_of("plain").zflags & ZF_TL, 0);
    hr_batch_free(b);
}

Test(rocks_internals, small_sets_live_in_their_metadata) {
    /* up to ZINLINE_MAX_ENTRIES members: in the metadata record, no sub-keys */
    const long most = ZINLINE_MAX_ENTRIES;
    zadd_n("few", most);
    rmeta m = meta_of("few");
    cr_assert(m.zflags & ZF_INLINE, "a set of %ld is inline", most);
    cr_assert_eq(m.size, most);
    cr_assert_eq(count_keys(CF_SUB, 0) + count_keys(CF_ZINDEX, 0), 0);

    /* one more member spills them all to sub-keys, in the batch that adds it */
    zadd_n("many", most + 1);
    cr_assert_eq(meta_of("many").zflags & ZF_INLINE, 0, "a set of %ld spilled", most + 1);
    cr_assert_eq(count_keys(CF_ZINDEX, 0), most + 1);
    cr_assert_eq(count_keys(CF_SUB, 0), most + 1);

    /* a spilled set stays on disk when it shrinks (the layout stores made
     * before inline sets have), and reads the same */
    hr_batch *b = hr_batch_new();
    for (long i = 2; i <= most; i++)
        hr_zrem(b, hr_slice_str("many"), str("m%ld", i));
    exec(b);
    hr_batch_free(b);
    cr_assert_eq(meta_of("many").zflags & ZF_INLINE, 0);
    char top[128];
    top5("many", top, sizeof top);
    cr_assert_str_eq(top, "m1 m0");

    /* both survive a reopen */
    hr_store_close(S);
    S = NULL;
    open_store();
    char want[128];
    snprintf(want, sizeof want, "m%ld m%ld m%ld m%ld m%ld", most - 1, most - 2, most - 3, most - 4, most - 5);
    top5("few", top, sizeof top);
    cr_assert_str_eq(top, want);
    cr_assert_eq(one_num(build_zcard, "few"), most);
    top5("many", top, sizeof top);
    cr_assert_str_eq(top, "m1 m0");
}

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
    hr_store_options o = {.chunk_cache_bytes = (size_t)16 << 20};
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

Test(rocks_internals, ranking_memory_budget) {
    /* a budget too small for the set keeps it on disk, still correct */
    hr_store_close(S);
    hr_store_options o = {.zset_memory_bytes = 1000};
    hr_err err = {0};
    cr_assert_eq(hr_store_open(uri, &o, &S, &err), HR_OK, "%s", err.msg);
    zadd_n("rank", 1100);
    churn("rank", 4000);
    cr_assert_eq(meta_of("rank").zflags & ZF_MEM, 0);
    char top[128];
    top5("rank", top, sizeof top);
    cr_assert_str_eq(top, "m1099 m1098 m1097 m1096 m1095");
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

/* A RocksDB property of cf (of the DB when cf < 0) read as a number: some,
 * such as rocksdb.num-files-at-levelN, exist only as strings. */
static uint64_t prop(int cf, const char *name) {
    rocks_store *r = (rocks_store *)S;
    char *v = cf < 0 ? rocksdb_property_value(r->db, name) : rocksdb_property_value_cf(r->db, r->cf[cf], name);
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

/* Images of large packed sets (rocks/pset_image.c) ------------------------------ */

/* One chunk of big-endian hashes (and expiries) in buf, as stored. */
static pimg_chunk be_chunk(unsigned char *buf, const uint64_t *hs, const int64_t *exps, size_t n) {
    for (size_t i = 0; i < n; i++) {
        hr_store_u64be(buf + 8 * i, hs[i]);
        if (exps) hr_store_u64be(buf + 8 * (n + i), (uint64_t)exps[i]);
    }
    return (pimg_chunk){buf, exps ? buf + 8 * n : NULL, n};
}

Test(rocks_internals, an_image_finds_every_member_and_nothing_else) {
    /* the extremes of the hash range, a run of hashes with one home (each
     * pushed past the next one's home), and ordinary ones, in two chunks:
     * every member is found with its expiry, each hash next to one is not */
    enum { N = 400 };
    uint64_t hs[N];
    int64_t exps[N];
    size_t n = 0;
    hs[n++] = 0;
    hs[n++] = 1;
    for (uint64_t i = 0; i < 100; i++) /* one home: the same top 32 bits */
        hs[n++] = (UINT64_C(0x4000) << 48) + 7 * i;
    for (; n < N - 1; n++)
        hs[n] = (UINT64_C(0x8000) << 48) + (uint64_t)n * (UINT64_C(1) << 50);
    hs[n++] = UINT64_MAX;
    for (size_t i = 0; i < N; i++)
        exps[i] = i % 3 ? 0 : 1000 + (int64_t)i;
    unsigned char *a = malloc(16 * N), *b = malloc(16 * N);
    pimg_chunk chunks[2] = {be_chunk(a, hs, exps, N / 2), be_chunk(b, hs + N / 2, exps + N / 2, N - N / 2)};
    hr_buf img = HR_BUF_INIT;
    cr_assert(pimg_build(42, 1, 9, chunks, 2, &img));
    pimg im;
    cr_assert_not(pimg_open(hr_buf_slice(&img), 43, 1, &im), "an image of another version");
    cr_assert_not(pimg_open(hr_buf_slice(&img), 42, 2, &im), "an image of another chunking");
    cr_assert(pimg_open(hr_buf_slice(&img), 42, 1, &im));
    cr_assert_eq(im.stamp, 9);
    for (size_t i = 0; i < N; i++) {
        int64_t e = -1;
        cr_assert(pimg_find(&im, hs[i], &e), "member %zu (%016llx)", i, (unsigned long long)hs[i]);
        cr_assert_eq(e, exps[i], "member %zu's expiry", i);
        if (i + 1 < N && hs[i] + 1 != hs[i + 1]) cr_assert_not(pimg_find(&im, hs[i] + 1, &e), "after %zu", i);
        if (i > 0 && hs[i] - 1 != hs[i - 1]) cr_assert_not(pimg_find(&im, hs[i] - 1, &e), "before %zu", i);
    }
    /* plain chunks (no expiries) mean 0: never */
    pimg_chunk plain = be_chunk(a, hs, NULL, N);
    cr_assert(pimg_build(7, 0, 1, &plain, 1, &img));
    cr_assert(pimg_open(hr_buf_slice(&img), 7, 0, &im));
    int64_t e = -1;
    cr_assert(pimg_find(&im, hs[3], &e) && e == 0);
    cr_assert_not(pimg_find(&im, UINT64_C(0x2000) << 48, &e));
    /* hashes out of order are no set: no image */
    uint64_t swapped[2] = {5, 4};
    pimg_chunk bad = be_chunk(a, swapped, NULL, 2);
    cr_assert_not(pimg_build(1, 0, 1, &bad, 1, &img));
    hr_buf_free(&img);
    free(a);
    free(b);
}

/* A test of members first..first+n-1 of "big": each result into got. */
static int64_t ptest_range(uint64_t first, size_t n, char *got) {
    uint64_t *m = malloc(n * sizeof *m);
    for (size_t i = 0; i < n; i++)
        m[i] = first + i;
    hr_batch *b = hr_batch_new();
    hr_pset_test(b, hr_slice_str("big"), m, n);
    exec(b);
    const hr_result *r = hr_batch_result(b, 0);
    cr_assert_eq(r->value.len, n);
    for (size_t i = 0; i < n; i++)
        got[i] = r->value.ptr[i] ? '1' : '0';
    got[n] = '\0';
    int64_t count = r->num;
    hr_batch_free(b);
    free(m);
    return count;
}

Test(rocks_internals, a_large_packed_set_is_tested_from_its_image_and_the_chunks_written_since) {
    /* 6,000 members (16 chunks): even numbers 0..11998; every seventh
     * expires in 3 s */
    enum { N = 6000, Q = 2000 };
    int64_t soon = hr_now_ms() + 3000;
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < N; i++)
        hr_pset_add(b, hr_slice_str("big"), 2 * (uint64_t)i, i % 7 ? 0 : soon);
    exec(b);
    hr_store_close(S);
    S = NULL;
    open_store();
    rocks_store *r = (rocks_store *)S;
    char want[Q + 1], got[Q + 1];
    for (int i = 0; i < Q; i++)
        want[i] = i % 2 ? '0' : '1';
    want[Q] = '\0';

    /* the first test reads every chunk and builds the image; the next are
     * answered from it, alike */
    cr_assert_eq(ptest_range(0, Q, got), Q / 2);
    int64_t built = hr_now_ms();
    cr_assert_lt(built, soon, "set up in time");
    cr_assert_str_eq(got, want);
    cr_assert_eq(rcache_count(r->pset_images), 1);
    cr_assert_eq(atomic_load(&r->pimg_tests), 0);
    cr_assert_eq(ptest_range(0, Q, got), Q / 2);
    cr_assert_str_eq(got, want);
    cr_assert_eq(atomic_load(&r->pimg_tests), 1, "answered from the image");

    /* a batch that writes the set and then tests it sees its own write */
    hr_batch_reset(b);
    hr_pset_add(b, hr_slice_str("big"), 1, 0);
    uint64_t one = 1;
    hr_pset_test(b, hr_slice_str("big"), &one, 1);
    exec(b);
    cr_assert_eq(hr_batch_result(b, 1)->num, 1);
    /* and so do the next tests: still from the image, but for the members
     * of the chunks written since, searched in those chunks */
    hr_batch_reset(b);
    hr_pset_rem(b, hr_slice_str("big"), 4);
    exec(b);
    want[1] = '1';
    want[4] = '0';
    cr_assert_eq(ptest_range(0, Q, got), Q / 2);
    cr_assert_str_eq(got, want);
    cr_assert_eq(atomic_load(&r->pimg_tests), 2, "the image, with the written chunks left out");

    /* members that expire are left out by their expiry, in the image and in
     * the written chunks alike */
    while (hr_now_ms() <= soon + 10)
        usleep(50 * 1000);
    for (int i = 0; i < Q; i += 2)
        if ((i / 2) % 7 == 0) want[i] = '0';
    int64_t live = 0;
    for (int i = 0; i < Q; i++)
        live += want[i] == '1';
    cr_assert_eq(ptest_range(0, Q, got), live);
    cr_assert_str_eq(got, want);
    cr_assert_eq(atomic_load(&r->pimg_tests), 3);

    /* more writes than the log keeps, all to one chunk but the first: the
     * image may miss the writes the log dropped (members 1, 3 and 4 are
     * likely in other chunks), so the next test reads the chunks and builds
     * it again (the last build was over PIMG_REBUILD_MS ago), with every
     * write; the one after uses it */
    hr_batch_reset(b);
    hr_pset_add(b, hr_slice_str("big"), 3, 0);
    exec(b);
    want[3] = '1';
    for (int i = 0; i < PIMG_LOG_ENTRIES; i++) {
        hr_batch_reset(b);
        if (i % 2)
            hr_pset_rem(b, hr_slice_str("big"), 20001);
        else
            hr_pset_add(b, hr_slice_str("big"), 20001, 0);
        exec(b);
    }
    cr_assert_gt(hr_now_ms(), built + PIMG_REBUILD_MS);
    for (int twice = 0; twice < 2; twice++) {
        cr_assert_eq(ptest_range(0, Q, got), live + 1);
        cr_assert_str_eq(got, want, "test %d", twice);
        cr_assert_eq(atomic_load(&r->pimg_tests), 3 + twice, "%s",
                     twice ? "from the new image" : "not from an image that may miss a write");
    }
    cr_assert_eq(ptest_range(20000, 3, got), 0);
    hr_batch_free(b);
}

/* A writer adding members one batch at a time, pausing half-way, and after
 * each the count of members it has added (all acknowledged). */
typedef struct adder {
    _Atomic long acked;
    long n;
} adder;

static void *add_one_by_one(void *arg) {
    adder *ad = arg;
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < ad->n; i++) {
        if (i == ad->n / 2) usleep((PIMG_REBUILD_MS + 500) * 1000); /* a pause: the set's image is built */
        hr_batch_reset(b);
        hr_pset_add(b, hr_slice_str("big"), 100000 + (uint64_t)i, 0);
        hr_err err = {0};
        if (hr_store_exec(S, b, 0, &err) != HR_OK) break;
        atomic_store(&ad->acked, i + 1);
    }
    hr_batch_free(b);
    return NULL;
}

Test(rocks_internals, an_image_never_hides_an_acknowledged_member) {
    /* tests while members are added: every member acknowledged before a
     * test began is found, whether the test reads the chunks or an image
     * (an image built from a snapshot older than a write must leave that
     * write's chunk out, as must the image built in the writer's pause once
     * the writes go on) */
    enum { N = 6000, OLD = 1000, NEW = 3000 };
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < N; i++)
        hr_pset_add(b, hr_slice_str("big"), 2 * (uint64_t)i, 0);
    exec(b);
    hr_batch_free(b);
    rocks_store *r = (rocks_store *)S;
    adder ad = {.n = NEW};
    atomic_init(&ad.acked, 0);
    pthread_t t;
    pthread_create(&t, NULL, add_one_by_one, &ad);
    uint64_t m[OLD + 64];
    long tests = 0, from_images = (long)atomic_load(&r->pimg_tests);
    for (long acked = 0; acked < NEW; tests++) {
        acked = atomic_load(&ad.acked);
        size_t n = 0;
        for (long i = 0; i < OLD; i++)
            m[n++] = 2 * (uint64_t)i;
        for (long i = acked > 64 ? acked - 64 : 0; i < acked; i++)
            m[n++] = 100000 + (uint64_t)i;
        hr_batch *q = hr_batch_new();
        hr_pset_test(q, hr_slice_str("big"), m, n);
        hr_pset_test(q, hr_slice_str("big"), m, n); /* twice: tests of the same members may use a column */
        exec(q);
        for (size_t twice = 0; twice < 2; twice++) {
            const hr_result *res = hr_batch_result(q, twice);
            for (size_t i = 0; i < n; i++)
                cr_assert(res->value.ptr[i], "test %ld.%zu: member %llu, acknowledged before it, not found", tests,
                          twice, (unsigned long long)m[i]);
        }
        hr_batch_free(q);
        if (acked == NEW) break;
    }
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&ad.acked), NEW);
    from_images = (long)atomic_load(&r->pimg_tests) - from_images;
    uint64_t from_columns, fills;
    size_t rows;
    pcols_stats(r->pcols, &from_columns, &fills, &rows);
    cr_log_info("%ld tests, %ld from images, %llu of them from the image's column", tests, from_images,
                (unsigned long long)from_columns);
    cr_assert_gt(from_images, 0, "the pause's tests used the image");
    cr_assert_gt(from_columns, 0, "and its column");
}

/* Member columns (rocks/pset_columns.c) ------------------------------------------------ */

Test(rocks_internals, pset_unmix_undoes_pset_mix) {
    const uint64_t edges[] = {0, 1, 2, UINT64_C(1) << 63, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        cr_assert_eq(pset_unmix(pset_mix(edges[i])), edges[i]);
    uint64_t x = 42;
    for (int i = 0; i < 100000; i++) {
        x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        cr_assert_eq(pset_unmix(pset_mix(x)), x, "%016llx", (unsigned long long)x);
        cr_assert_eq(pset_mix(pset_unmix(x)), x, "%016llx", (unsigned long long)x);
    }
}

/* Four sets of 6,000 members: "ca" the even numbers, "cb" the multiples of
 * three, "cc" 0..5999 of which 40 expire at soon, "cd" 0..5999 of which 200
 * expire at soon (more than a column lists as exceptions). */
enum { COL_SETS = 4, COL_N = 6000, COL_Q = 3000 };
static const char *const col_sets[COL_SETS] = {"ca", "cb", "cc", "cd"};

static int64_t col_expiry(int set, uint64_t v, int64_t soon) {
    if (set == 2 && v % 150 == 0) return soon;
    if (set == 3 && v % 30 == 0) return soon;
    return 0;
}

static bool col_member(int set, uint64_t v, int64_t now, int64_t soon) {
    bool in = set == 0 ? v % 2 == 0 && v < 2 * COL_N : set == 1 ? v % 3 == 0 && v < 3 * COL_N : v < COL_N;
    int64_t e = col_expiry(set, v, soon);
    return in && (e == 0 || now < e);
}

/* One batch testing members 0..COL_Q-1 against every set, checked against
 * col_member at a time between the batch's start and end (those near soon
 * are not checked). Returns the tests answered from columns. */
static uint64_t col_test_all(int64_t soon, uint64_t extra_in, uint64_t extra_out) {
    rocks_store *r = (rocks_store *)S;
    uint64_t m[COL_Q], tests0, tests1, fills;
    size_t rows;
    for (size_t i = 0; i < COL_Q; i++)
        m[i] = i;
    pcols_stats(r->pcols, &tests0, &fills, &rows);
    hr_batch *b = hr_batch_new();
    for (int s = 0; s < COL_SETS; s++)
        hr_pset_test(b, hr_slice_str(col_sets[s]), m, COL_Q);
    int64_t before = hr_now_ms();
    exec(b);
    int64_t after = hr_now_ms();
    pcols_stats(r->pcols, &tests1, &fills, &rows);
    for (int s = 0; s < COL_SETS; s++) {
        const hr_result *res = hr_batch_result(b, (size_t)s);
        int64_t count = 0;
        for (uint64_t v = 0; v < COL_Q; v++) {
            count += res->value.ptr[v];
            bool want = col_member(s, v, before, soon);
            if (s == 0 && v == extra_in) want = true;
            if (s == 0 && v == extra_out) want = false;
            if (want != col_member(s, v, after, soon) && !(s == 0 && (v == extra_in || v == extra_out)))
                continue; /* expired during the batch: either answer is right */
            cr_assert_eq(res->value.ptr[v], want, "set %s, member %llu", col_sets[s], (unsigned long long)v);
        }
        cr_assert_eq(res->num, count, "set %s: the count", col_sets[s]);
    }
    hr_batch_free(b);
    return tests1 - tests0;
}

Test(rocks_internals, member_columns_answer_many_sets_as_their_images_do) {
    int64_t soon = hr_now_ms() + 2500;
    hr_batch *b = hr_batch_new();
    for (int s = 0; s < COL_SETS; s++)
        for (uint64_t i = 0; i < COL_N; i++) {
            uint64_t v = s == 0 ? 2 * i : s == 1 ? 3 * i : i;
            hr_pset_add(b, hr_slice_str(col_sets[s]), v, col_expiry(s, v, soon));
        }
    exec(b);
    hr_store_close(S);
    S = NULL;
    open_store();
    rocks_store *r = (rocks_store *)S;
    const uint64_t none = UINT64_MAX;

    /* the first batch builds the images; each next one fills a column
     * (one a batch), and the tests that have one are answered from it */
    cr_assert_eq(col_test_all(soon, none, none), 0);
    uint64_t from_columns = 0;
    for (int i = 0; i < COL_SETS; i++)
        from_columns = col_test_all(soon, none, none);
    cr_assert_eq(from_columns, COL_SETS, "every set has its column");
    uint64_t tests, fills;
    size_t rows;
    pcols_stats(r->pcols, &tests, &fills, &rows);
    cr_assert_eq(fills, COL_SETS);
    /* 0..5999, and the even numbers and multiples of three above: 12,000,
     * of which 0 has a row of its own, not counted */
    cr_assert_eq(rows, 2 * COL_N - 1, "a row per member of any set");
    cr_assert_lt(hr_now_ms(), soon, "set up in time");

    /* once the members expire, "cc" still answers from its column, without
     * those it lists as expiring; "cd" listed only some, so its column was
     * valid until the others expired, and is filled again first */
    while (hr_now_ms() <= soon + 10)
        usleep(50 * 1000);
    cr_assert_eq(col_test_all(soon, none, none), COL_SETS);
    cr_assert_eq(col_test_all(soon, none, none), COL_SETS);
    uint64_t fills2;
    pcols_stats(r->pcols, &tests, &fills2, &rows);
    cr_assert_eq(fills2, fills + 1);

    /* writes since the images were built: their chunks are searched after
     * the columns answer */
    hr_batch_reset(b);
    hr_pset_add(b, hr_slice_str("ca"), 1, 0);
    hr_pset_rem(b, hr_slice_str("ca"), 4);
    exec(b);
    cr_assert_eq(col_test_all(soon, 1, 4), COL_SETS);

    /* a lone test of its members gains nothing from a column: the image */
    uint64_t tests2;
    pcols_stats(r->pcols, &tests, &fills, &rows);
    hr_batch_reset(b);
    uint64_t two[2] = {2, 3};
    hr_pset_test(b, hr_slice_str("ca"), two, 2);
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->num, 1);
    uint64_t m[100];
    for (int i = 0; i < 100; i++)
        m[i] = (uint64_t)i;
    hr_batch_reset(b);
    hr_pset_test(b, hr_slice_str("ca"), m, 100);
    exec(b);
    cr_assert_eq(hr_batch_result(b, 0)->num, 50);
    pcols_stats(r->pcols, &tests2, &fills2, &rows);
    cr_assert_eq(tests2, tests, "no test answered from a column");
    hr_batch_free(b);
}

Test(rocks_internals, tests_of_the_same_members_share_their_copy) {
    uint64_t m[3] = {1, 2, 3};
    hr_batch *b = hr_batch_new();
    hr_pset_test(b, hr_slice_str("a"), m, 3);
    hr_pset_test(b, hr_slice_str("b"), m, 3);
    hr_pset_test(b, hr_slice_str("c"), m, 2);
    m[1] = 7; /* the caller refills its array: a copy of its own */
    hr_pset_test(b, hr_slice_str("d"), m, 3);
    hr_pset_test(b, hr_slice_str("e"), m, 3);
    cr_assert_eq(b->ops[0].u64s, b->ops[1].u64s);
    cr_assert_neq(b->ops[1].u64s, b->ops[2].u64s, "fewer members");
    cr_assert_neq(b->ops[2].u64s, b->ops[3].u64s);
    cr_assert_eq(b->ops[3].u64s, b->ops[4].u64s);
    cr_assert_eq(b->ops[0].u64s[1], 2);
    cr_assert_eq(b->ops[3].u64s[1], 7);
    exec(b);
    hr_batch_reset(b);
    hr_pset_test(b, hr_slice_str("a"), m, 3); /* after a reset, nothing is shared with what was */
    cr_assert_eq(b->ops[0].u64s[1], 7);
    hr_batch_free(b);
}

/* Two threads testing the same members against "stag" twice a batch while
 * its members expire 30 at a time every 10 ms: more than a column lists as
 * exceptions, so the column is valid only until the next unlisted expiry
 * and is filled again every few tens of ms, under the other thread's reads.
 * Every answer must match the expiries at the batch's start or its end. */
enum { STAG_N = 6000, STAG_SLOTS = 200, STAG_STEP_MS = 10 };
static int64_t stag_soon;

static int64_t stag_expiry(uint64_t v) {
    return stag_soon + (int64_t)(v % STAG_SLOTS) * STAG_STEP_MS;
}

static void *stag_reader(void *arg) {
    long *bad = arg;
    uint64_t m[STAG_N];
    for (uint64_t i = 0; i < STAG_N; i++)
        m[i] = i;
    hr_batch *b = hr_batch_new();
    while (hr_now_ms() < stag_soon + STAG_SLOTS * STAG_STEP_MS + 100) {
        hr_batch_reset(b);
        hr_pset_test(b, hr_slice_str("stag"), m, STAG_N);
        hr_pset_test(b, hr_slice_str("stag"), m, STAG_N);
        int64_t before = hr_now_ms();
        hr_err err = {0};
        if (hr_store_exec(S, b, 0, &err) != HR_OK) {
            (*bad)++;
            break;
        }
        int64_t after = hr_now_ms();
        for (size_t t = 0; t < 2; t++) {
            const hr_result *res = hr_batch_result(b, t);
            for (uint64_t v = 0; v < STAG_N; v++) {
                bool at_start = before < stag_expiry(v), at_end = after < stag_expiry(v);
                if (at_start == at_end && (res->value.ptr[v] != 0) != at_start) (*bad)++;
            }
        }
    }
    hr_batch_free(b);
    return NULL;
}

Test(rocks_internals, member_columns_filled_again_under_reads_answer_right) {
    stag_soon = hr_now_ms() + 1500;
    hr_batch *b = hr_batch_new();
    for (uint64_t v = 0; v < STAG_N; v++)
        hr_pset_add(b, hr_slice_str("stag"), v, stag_expiry(v));
    exec(b);
    hr_batch_free(b);
    rocks_store *r = (rocks_store *)S;
    uint64_t tests0, fills0, tests1, fills1;
    size_t rows;
    pcols_stats(r->pcols, &tests0, &fills0, &rows);
    long bad[2] = {0, 0};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, stag_reader, &bad[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pcols_stats(r->pcols, &tests1, &fills1, &rows);
    cr_log_info("%llu tests from the column, %llu fills", (unsigned long long)(tests1 - tests0),
                (unsigned long long)(fills1 - fills0));
    cr_assert_eq(bad[0] + bad[1], 0, "wrong answers");
    cr_assert_gt(fills1 - fills0, 10, "the column was filled again and again");
    cr_assert_gt(tests1 - tests0, 100, "and answered between fills");
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

Test(rocks_internals, compaction_cuts_capped_time_lists_to_their_newest_entries) {
    cr_assert(hr_store_tlcap(S, hr_slice_str("c/"), hr_slice_str("/tl"), 5));
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
    cr_assert(hr_store_tlcap(S, hr_slice_str("c/"), hr_slice_str("/tl"), 2));
    compact_all();
    tl_times("c/a/tl", got, sizeof got);
    cr_assert_str_eq(got, "20 17");
    tl_times("d/a/tl", got, sizeof got);
    cr_assert_str_eq(got, all_but_18);

    /* Up to HR_TLCAP_MAX caps; affixes of up to HR_TLCAP_AFFIX_MAX bytes;
     * keep at least 1. Refused: false, nothing declared. */
    char affix[HR_TLCAP_AFFIX_MAX + 2];
    memset(affix, 'x', sizeof affix - 1);
    affix[sizeof affix - 1] = '\0';
    cr_assert_not(hr_store_tlcap(S, hr_slice_str(affix), hr_slice_str(""), 1), "prefix too long");
    cr_assert_not(hr_store_tlcap(S, hr_slice_str(""), hr_slice_str(affix), 1), "suffix too long");
    cr_assert_not(hr_store_tlcap(S, hr_slice_str("d/"), hr_slice_str(""), 0), "keep 0");
    for (long i = 1; i < HR_TLCAP_MAX; i++)
        cr_assert(hr_store_tlcap(S, str("e%ld/", i), hr_slice_str(""), 1), "cap %ld", i);
    cr_assert_not(hr_store_tlcap(S, hr_slice_str("d/"), hr_slice_str(""), 1), "one cap too many");
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
    hr_store_options o = {.tl_file_min = 100};
    hr_err err = {0};
    cr_assert_eq(hr_store_open(uri, &o, &S, &err), HR_OK, "%s", err.msg);
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
