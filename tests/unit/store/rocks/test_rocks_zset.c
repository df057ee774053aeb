/* test_rocks_zset.c — the RocksDB backend's layouts of sorted sets (suite
 * rocks_internals, rocks_fixture.h): rankings moved into memory
 * (rocks/zset_memory.c) and kept there through restarts, crashes, an older
 * version's layout and a memory budget; sets of times kept with the time
 * lists; small sets inline in their metadata record. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rocks_fixture.h"

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
        _exit(meta_of("rank").zflags == ZF_MEM ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child wrote a set in memory");
    open_store();
    cr_assert_eq(meta_of("rank").zflags, ZF_MEM);
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

/* Declare the sorted sets named prefix...suffix sets of times. */
static void declare_times(const char *prefix, const char *suffix) {
    hr_store_decl d = {
        .kind = HR_DECL_TIME_SET, .prefix = hr_slice_str(prefix), .suffix = hr_slice_str(suffix)};
    cr_assert(hr_store_declare(S, &d));
}

Test(rocks_internals, a_set_of_times_keeps_its_order_with_the_time_lists) {
    const long n = 40; /* past ZTL_INLINE_MAX_ENTRIES: out of line */
    declare_times("times", "");
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < n; i++)
        hr_zadd(b, hr_slice_str("times"), (double)(1000 + i), str("m%ld", i));
    exec(b);
    rmeta m = meta_of("times");
    cr_assert_eq(m.zflags, ZF_TL, "flags %d", m.zflags);
    cr_assert_eq(m.size, n);
    cr_assert_eq(count_keys(CF_ZINDEX, 0) + count_keys(CF_SUB, 0), 0, "nothing in zindex and subkeys");
    cr_assert_eq(count_keys(CF_TL, 0), n, "an index entry a member in timelists");
    cr_assert_eq(count_keys(CF_ZTLM, 0), n, "a member record a member in timesetmembers");

    /* a move deletes the old entry; a removal both keys */
    hr_batch_reset(b);
    hr_zadd(b, hr_slice_str("times"), 5, hr_slice_str("m7"));
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
    hr_zadd(b, hr_slice_str("times2"), 1, hr_slice_str("kept"));
    for (long i = 0; i < ZTL_INLINE_MAX_ENTRIES; i++)
        hr_zadd(b, hr_slice_str("times2"), (double)(2 + i), str("m%ld", i));
    exec(b);
    compact_all();
    cr_assert_eq(count_keys(CF_TL, 0), ZTL_INLINE_MAX_ENTRIES + 1, "only the live set's entries remain");
    cr_assert_eq(count_keys(CF_ZTLM, 0), ZTL_INLINE_MAX_ENTRIES + 1, "and its member records");

    /* a set made before its family was declared stays as it was made */
    zadd_n("plain", 20);
    declare_times("plain", "");
    hr_batch_reset(b);
    hr_zadd(b, hr_slice_str("plain"), 77, hr_slice_str("late"));
    exec(b);
    cr_assert_eq(meta_of("plain").zflags & ZF_TL, 0);
    hr_batch_free(b);
}

Test(rocks_internals, sets_of_times_are_the_declared_families_sorted_sets) {
    declare_times("{r/", "}");
    /* a cap declares time lists: the sorted sets of its family stay plain */
    hr_store_decl cap = {
        .kind = HR_DECL_TL_CAP, .prefix = hr_slice_str("{q/"), .suffix = hr_slice_str("}"), .keep = 3};
    cr_assert(hr_store_declare(S, &cap));
    static const char *const sets[] = {"{r/a}", "{r/}", "{r/a}x", "x{r/a}", "{q/a}", "{r}"};
    static const bool times[] = {true, true, false, false, false, false};
    hr_batch *b = hr_batch_new();
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        hr_zadd(b, hr_slice_str(sets[i]), 1, hr_slice_str("m"));
    hr_zincr(b, hr_slice_str("{r/incr}"), 2, hr_slice_str("m")); /* any op that makes a set */
    exec(b);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        cr_assert_eq((meta_of(sets[i]).zflags & ZF_TL) != 0, times[i], "%s", sets[i]);
    cr_assert(meta_of("{r/incr}").zflags & ZF_TL);
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

Test(rocks_internals, ranking_memory_budget) {
    /* a budget too small for the set keeps it on disk, still correct */
    hr_store_close(S);
    hr_store_options o = {.memory = 4600}; /* ~1,000 bytes for rankings (rocks/memory.h) */
    hr_err err = {0};
    cr_assert_eq(hr_store_open(uri, &o, &S, &err), HR_OK, "%s", err.msg);
    zadd_n("rank", 1100);
    churn("rank", 4000);
    cr_assert_eq(meta_of("rank").zflags & ZF_MEM, 0);
    char top[128];
    top5("rank", top, sizeof top);
    cr_assert_str_eq(top, "m1099 m1098 m1097 m1096 m1095");
}
