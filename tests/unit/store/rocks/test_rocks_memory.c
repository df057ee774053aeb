/* The memory budget shared out (rocks/memory.c), the URI's tuning, and what
 * a store reports of its caches. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/rocks/engine.h"
#include "store/rocks/memory.h"
#include "store/rocks/timelist.h"
#include "support.h"

Test(rocks_memory, the_shares_make_the_whole_budget) {
    rocks_tuning t;
    hr_err err = {0};
    cr_assert_eq(rocks_tuning_parse(NULL, 0, &t, &err), HR_OK);
    size_t sum = 0;
    for (int i = 0; i < ROCKS_CACHE_COUNT; i++) {
        cr_assert_gt(t.budget[i], 0, "cache %d has a share", i);
        sum += t.budget[i];
    }
    cr_assert_leq(sum, HR_STORE_MEMORY_DEFAULT);
    cr_assert_geq(sum, HR_STORE_MEMORY_DEFAULT / 100 * 100, "the percents add up to 100");
    cr_assert_eq(rocks_tuning_parse("", (size_t)10 << 20, &t, &err), HR_OK);
    cr_assert_eq(t.budget[ROCKS_CACHE_CHUNKS], ((size_t)10 << 20) / 100 * 18);
}

Test(rocks_memory, tuning_parameters) {
    rocks_tuning t;
    hr_err err = {0};
    cr_assert_eq(rocks_tuning_parse("off=chunks,images&hot_keep=4&file_min=1&zset_memory=all", 0, &t, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(t.budget[ROCKS_CACHE_CHUNKS], 0);
    cr_assert_eq(t.budget[ROCKS_CACHE_IMAGES], 0);
    cr_assert_gt(t.budget[ROCKS_CACHE_META], 0);
    cr_assert_eq(t.tl_hot_keep, 4);
    cr_assert_eq(t.tl_file_min, 1);
    cr_assert(t.zset_memory_all);
    const char *bad[] = {"off=nothing",      "hot_keep=0", "hot_keep=x", "file_min=",
                         "zset_memory=some", "colour=red", "off",        "hot_keep=1234567890123456789"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = (hr_err){0};
        cr_assert_eq(rocks_tuning_parse(bad[i], 0, &t, &err), HR_EINVAL, "%s", bad[i]);
        cr_assert(strlen(err.msg) > 0);
    }
}

/* A RocksDB store in the fresh directory dir (a "/tmp/herald-memory-XXXXXX"
 * template, filled in), with query after its path and `memory` bytes (0: the
 * default). */
static hr_store *open_tuned(char *dir, const char *query, size_t memory) {
    cr_assert_not_null(mkdtemp(dir));
    char uri[128];
    snprintf(uri, sizeof uri, "rocksdb:%s%s", dir, query);
    hr_store *s;
    hr_err err = {0};
    hr_store_options o = {.memory = memory};
    cr_assert_eq(hr_store_open(uri, &o, &s, &err), HR_OK, "%s", err.msg);
    return s;
}

/* Close s and remove its directory. */
static void close_tuned(hr_store *s, const char *dir) {
    hr_store_close(s);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A store reports each cache's budget and what it holds; a cache turned off
 * holds nothing however much is read. */
Test(rocks_memory, a_store_reports_its_caches) {
    char dir[] = "/tmp/herald-memory-XXXXXX", uri[128];
    hr_store *s = open_tuned(dir, "?off=meta", (size_t)64 << 20);
    hr_err err = {0};
    hr_batch *b = hr_batch_new();
    for (int round = 0; round < 2; round++) { /* write, then read what was written */
        hr_batch_reset(b);
        for (int i = 0; i < 100; i++) {
            char k[16];
            snprintf(k, sizeof k, "z%d", i);
            if (round == 0)
                hr_zadd(b, hr_slice_str(k), i, hr_slice_str("m"));
            else
                hr_zcard(b, hr_slice_str(k));
        }
        cr_assert_eq(hr_store_exec(s, b, 0, &err), HR_OK, "%s", err.msg);
    }
    hr_store_metrics m;
    hr_store_metrics_of(s, &m);
    bool seen_meta = false, seen_blocks = false;
    for (size_t i = 0; i < m.n_caches; i++) {
        if (strcmp(m.caches[i].name, "meta") == 0) {
            seen_meta = true;
            cr_assert_eq(m.caches[i].budget, 0);
            cr_assert_eq(m.caches[i].bytes, 0);
        }
        if (strcmp(m.caches[i].name, "blocks") == 0) {
            seen_blocks = true;
            cr_assert_eq(m.caches[i].budget, ((size_t)64 << 20) / 100 * 12);
        }
    }
    cr_assert(seen_meta && seen_blocks);
    cr_assert_eq(hr_store_caps_of(s)->memo_bytes, ((size_t)64 << 20) / 100 * 12);
    hr_batch_free(b);
    close_tuned(s, dir);

    snprintf(uri, sizeof uri, "rocksdb:%s?colour=red", dir);
    cr_assert_eq(hr_store_open(uri, NULL, &s, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "colour") != NULL, "%s", err.msg);
}

/* The hot time lists and the member columns live in their shares: turned
 * off, a hot read keeps no list and no columns exist; with their shares, a
 * hot read keeps its list, which /metrics counts. */
static void hot_read(hr_store *s, hr_batch *b) {
    hr_err err = {0};
    hr_batch_reset(b);
    hr_tladd(b, hr_slice_str("{big}/feed"), 1000, hr_slice_str("a1"), 0);
    cr_assert_eq(hr_store_exec(s, b, 0, &err), HR_OK, "%s", err.msg);
    hr_batch_reset(b);
    hr_tlrange_spec sp = hr_tlrange_all(10, 2000);
    sp.hot = true;
    hr_tlrange(b, hr_slice_str("{big}/feed"), &sp);
    cr_assert_eq(hr_store_exec(s, b, 0, &err), HR_OK, "%s", err.msg);
}

static size_t held_by(hr_store *s, const char *cache) {
    hr_store_metrics m;
    hr_store_metrics_of(s, &m);
    for (size_t i = 0; i < m.n_caches; i++)
        if (strcmp(m.caches[i].name, cache) == 0) return m.caches[i].bytes;
    cr_assert_fail("no cache '%s' reported", cache);
    return 0;
}

Test(rocks_memory, hot_lists_and_columns_take_their_shares) {
    for (int off = 0; off < 2; off++) {
        char dir[] = "/tmp/herald-memory-XXXXXX";
        hr_store *s = open_tuned(dir, off ? "?off=columns,hotlists" : "", 0);
        hr_batch *b = hr_batch_new();
        hot_read(s, b);
        rocks_store *r = (rocks_store *)s;
        cr_assert_eq(tlcache_lists(r->tlc), off ? 0u : 1u, "lists kept");
        cr_assert_eq(held_by(s, "hotlists") > 0, !off);
        cr_assert_eq(r->pcols != NULL, !off, "columns exist only with their share");
        hr_batch_free(b);
        close_tuned(s, dir);
    }
}

/* Reads of n keys in one batch, each found; what the views share holds after. */
static size_t views_after_reads(const char *query, size_t memory, int n) {
    char dir[] = "/tmp/herald-memory-XXXXXX";
    hr_store *s = open_tuned(dir, query, memory);
    hr_err err = {0};
    hr_batch *b = hr_batch_new();
    for (int round = 0; round < 2; round++) { /* write, then read what was written */
        hr_batch_reset(b);
        for (int i = 0; i < n; i++) {
            char k[16];
            snprintf(k, sizeof k, "k%d", i);
            if (round == 0)
                hr_put(b, hr_slice_str(k), hr_slice_str("v"), 0);
            else
                hr_get(b, hr_slice_str(k));
        }
        cr_assert_eq(hr_store_exec(s, b, 0, &err), HR_OK, "%s", err.msg);
    }
    for (int i = 0; i < n; i++)
        cr_assert_eq(hr_batch_result(b, (size_t)i)->rc, HR_OK, "k%d found", i);
    size_t held = held_by(s, "views");
    hr_batch_free(b);
    close_tuned(s, dir);
    return held;
}

/* A batch of hundreds of records leaves its emptied view table for the next
 * one, within the `views` share: none kept when it is off or too small. */
Test(rocks_memory, view_tables_are_kept_within_their_share) {
    cr_assert_gt(views_after_reads("", (size_t)64 << 20, 600), 0);
    cr_assert_eq(views_after_reads("?off=views", (size_t)64 << 20, 600), 0);
    cr_assert_eq(views_after_reads("", (size_t)2 << 20, 600), 0,
                 "2 %% of 2 MB holds no table of 1 024 slots");
}
