/* test_rocks_tlcache.c — hot time lists kept in memory (rocks/timelist_cache.c).
 *
 * A read answered from memory must be exactly what RocksDB answers. Each
 * check compares the two:
 *   - hot_reads_match_cold_reads: the same random adds, removes (blind),
 *     expiries and trims go to a hot list and to a cold one (never read with
 *     `hot`, so never kept); random range reads (cursor, before, after,
 *     offset, limit) of both must agree. The store keeps 4 entries of a hot
 *     list (the URI's hot_keep), so that a list drops entries and reads past what
 *     it holds fall back to RocksDB.
 *   - concurrent_writers: four threads write eight lists while a fifth
 *     reads them hot, so that lists are registered and loaded in the middle
 *     of the writes; afterwards each list read from memory must equal the
 *     same list read from RocksDB (a batch that has written something
 *     reads RocksDB).
 * Both also check that reads were answered from memory at all. */
#include <inttypes.h>
#include <pthread.h>

#include "../store_fixture.h"
#include "common/clock.h"
#include "store/rocks/timelist.h"

static void hot_small_init(void) {
    fx_tune("hot_keep=4");
    fx_rocks_init();
}

static void hot_large_init(void) {
    fx_tune("hot_keep=100000"); /* everything stays in memory */
    fx_tune("file_min=1");      /* bulk adds as table files (bulk_adds_reach_the_kept_copy) */
    fx_rocks_init();
}

TestSuite(rocks_tlcache, .init = hot_small_init, .fini = fx_rocks_fini, .timeout = 60);
TestSuite(rocks_tlcache_mt, .init = hot_large_init, .fini = fx_rocks_fini, .timeout = 60);

#define T0 INT64_C(1700000000000)

/* The fixture's Redis suite and one-op helper, unused here. */
static inline void unused_helpers(void) {
    (void)exec_one;
    (void)fx_redis_init;
}

static tlcache *cache_of(hr_store *s) {
    return ((rocks_store *)s)->tlc;
}

/* "t:member t:member ... [more]" for a range result. */
static void render(const hr_result *r, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < r->n_entries && n + 64 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%" PRId64 ":%.*s", i ? " " : "",
                              (int64_t)r->entries[i].score - T0, (int)r->entries[i].member.len,
                              r->entries[i].member.ptr);
    if (r->more && n + 8 < cap) snprintf(out + n, cap - n, " [more]");
}

/* Range-read list with sp, from RocksDB when via_disk (the batch writes a
 * key first), rendered into out. */
static void read_list(hr_store *s, hr_batch *b, hr_slice list, const hr_tlrange_spec *sp, bool via_disk,
                      char *out, size_t cap) {
    hr_batch_reset(b);
    if (via_disk) hr_put(b, K("dirty"), M("x"), 0);
    size_t op = hr_tlrange(b, list, sp);
    exec(s, b);
    const hr_result *r = hr_batch_result(b, op);
    assert_rc(r, HR_OK);
    render(r, out, cap);
}

static const char *const NAMES[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"};
#define N_NAMES (sizeof NAMES / sizeof NAMES[0])

/* A random write of one list into b: mostly adds (some expiring, some
 * already expired), removes, now and then a trim. */
static void random_write(hr_batch *b, hr_slice list, unsigned *seed, int64_t now) {
    int kind = rand_r(seed) % 10;
    int64_t t = T0 + rand_r(seed) % 40;
    hr_slice m = M(NAMES[rand_r(seed) % N_NAMES]);
    if (kind < 6) {
        int e = rand_r(seed) % 6;
        int64_t expire = e == 0 ? now - 1000 : e == 1 ? now + 3600 * 1000 : 0;
        hr_tladd(b, list, t, m, expire);
    } else if (kind < 9) {
        hr_tlrem(b, list, t, m);
    } else {
        hr_tltrim(b, list, (size_t)(rand_r(seed) % 12),
                  rand_r(seed) % 2 ? INT64_MIN : T0 + rand_r(seed) % 20);
    }
}

static hr_tlrange_spec random_spec(unsigned *seed, int64_t now, bool hot) {
    hr_tlrange_spec sp = hr_tlrange_all((size_t)(1 + rand_r(seed) % 8), now);
    sp.hot = hot;
    if (rand_r(seed) % 3 == 0) sp.offset = (size_t)(rand_r(seed) % 4);
    if (rand_r(seed) % 3 == 0) sp.before_ms = T0 + rand_r(seed) % 45;
    if (rand_r(seed) % 4 == 0) sp.after_ms = T0 + rand_r(seed) % 30 - 2;
    if (rand_r(seed) % 3 == 0) {
        sp.has_cursor = true;
        sp.cursor_time = T0 + rand_r(seed) % 42;
        sp.cursor_member = M(NAMES[rand_r(seed) % N_NAMES]);
    }
    return sp;
}

Test(rocks_tlcache, hot_reads_match_cold_reads) {
    hr_store *s = require_store();
    hr_slice hot = K("hot"), cold = K("cold");
    hr_batch *w = hr_batch_new(), *r = hr_batch_new();
    unsigned seed = 12345;
    char got[4096], want[4096];
    size_t reads = 0;
    for (int step = 0; step < 600; step++) {
        int64_t now = hr_now_ms();
        /* The same writes, in one batch per list, in the same order. */
        int n = 1 + rand_r(&seed) % 3;
        unsigned wseed = seed;
        hr_batch_reset(w);
        for (int i = 0; i < n; i++)
            random_write(w, hot, &wseed, now);
        exec(s, w);
        wseed = seed;
        hr_batch_reset(w);
        for (int i = 0; i < n; i++)
            random_write(w, cold, &wseed, now);
        exec(s, w);
        seed = wseed;
        for (int q = 0; q < 4; q++) {
            unsigned rseed = seed;
            hr_tlrange_spec sp_hot = random_spec(&rseed, now, true);
            rseed = seed;
            hr_tlrange_spec sp_cold = random_spec(&rseed, now, false);
            seed = rseed;
            read_list(s, r, hot, &sp_hot, false, got, sizeof got);
            read_list(s, r, cold, &sp_cold, false, want, sizeof want);
            cr_assert_str_eq(got, want, "step %d read %d: hot list '%s', cold list '%s'", step, q, got, want);
            reads++;
        }
    }
    cr_assert_eq(tlcache_lists(cache_of(s)), 1, "only the hot list is kept (%zu kept)",
                 tlcache_lists(cache_of(s)));
    size_t hits = tlcache_hits(cache_of(s));
    /* Both paths well exercised: reads near the head from memory, deeper
     * ones (past the 4 to 8 entries kept) from RocksDB. */
    cr_assert_gt(hits, 100, "%zu of %zu hot reads answered from memory", hits, reads);
    cr_assert_lt(hits, reads - 100, "%zu of %zu hot reads answered from memory: the fallback went untested",
                 hits, reads);
    hr_batch_free(w);
    hr_batch_free(r);
}

Test(rocks_tlcache, writes_in_the_reading_batch_are_seen) {
    /* A batch that writes a kept list and then reads it sees its own write
     * (the read goes to RocksDB, which has the batch's writes). */
    hr_store *s = require_store();
    hr_slice l = K("l");
    hr_tlrange_spec sp = hr_tlrange_all(10, hr_now_ms());
    sp.hot = true;
    hr_batch *b = hr_batch_new();
    hr_tladd(b, l, T0 + 1, M("old"), 0);
    hr_tlrange(b, l, &sp);
    exec(s, b);
    cr_assert_eq(tlcache_lists(cache_of(s)), 1);
    hr_batch_reset(b);
    hr_tladd(b, l, T0 + 2, M("new"), 0);
    size_t op = hr_tlrange(b, l, &sp);
    exec(s, b);
    char got[256];
    render(hr_batch_result(b, op), got, sizeof got);
    cr_assert_str_eq(got, "2:new 1:old");
    /* And the next batch reads it from memory. */
    size_t hits = tlcache_hits(cache_of(s));
    read_list(s, b, l, &sp, false, got, sizeof got);
    cr_assert_str_eq(got, "2:new 1:old");
    cr_assert_eq(tlcache_hits(cache_of(s)), hits + 1);
    hr_batch_free(b);
}

/* Concurrent writers ---------------------------------------------------------- */

#define MT_LISTS 64
#define MT_WRITERS 4

typedef struct mt_ctx {
    hr_store *s;
    hr_slice lists[MT_LISTS];
    unsigned seed;
    atomic_bool *stop;
    int failures;
} mt_ctx;

static void *mt_writer(void *arg) {
    mt_ctx *c = arg;
    hr_batch *b = hr_batch_new();
    for (int i = 0; i < 400; i++) {
        hr_batch_reset(b);
        int64_t now = hr_now_ms();
        int n = 1 + rand_r(&c->seed) % 40; /* long batches: a wide window for a registration to race */
        for (int k = 0; k < n; k++)
            random_write(b, c->lists[rand_r(&c->seed) % MT_LISTS], &c->seed, now);
        hr_err err = {0};
        if (hr_store_exec(c->s, b, 0, &err) != HR_OK) c->failures++;
    }
    hr_batch_free(b);
    return NULL;
}

static void *mt_reader(void *arg) {
    mt_ctx *c = arg;
    hr_batch *b = hr_batch_new();
    for (int i = 0; !atomic_load(c->stop); i++) {
        /* The lists become hot one after another, while the writers run. */
        size_t upto = 1 + (size_t)i / 8;
        if (upto > MT_LISTS) upto = MT_LISTS;
        hr_tlrange_spec sp = random_spec(&c->seed, hr_now_ms(), true);
        hr_batch_reset(b);
        hr_tlrange(b, c->lists[rand_r(&c->seed) % upto], &sp);
        hr_err err = {0};
        if (hr_store_exec(c->s, b, 0, &err) != HR_OK) c->failures++;
    }
    hr_batch_free(b);
    return NULL;
}

Test(rocks_tlcache_mt, concurrent_writers) {
    hr_store *s = require_store();
    atomic_bool stop = false;
    mt_ctx ctx[MT_WRITERS + 1];
    for (int t = 0; t <= MT_WRITERS; t++) {
        ctx[t] = (mt_ctx){.s = s, .seed = 1000u + (unsigned)t, .stop = &stop};
        for (int i = 0; i < MT_LISTS; i++)
            ctx[t].lists[i] = Mf("list%ld", i);
    }
    pthread_t th[MT_WRITERS + 1];
    pthread_create(&th[MT_WRITERS], NULL, mt_reader, &ctx[MT_WRITERS]);
    for (int t = 0; t < MT_WRITERS; t++)
        pthread_create(&th[t], NULL, mt_writer, &ctx[t]);
    for (int t = 0; t < MT_WRITERS; t++)
        pthread_join(th[t], NULL);
    atomic_store(&stop, true);
    pthread_join(th[MT_WRITERS], NULL);
    for (int t = 0; t <= MT_WRITERS; t++)
        cr_assert_eq(ctx[t].failures, 0, "thread %d: %d failed batches", t, ctx[t].failures);

    /* Every list hot (the reader may not have reached the last ones). */
    hr_batch *b = hr_batch_new();
    hr_tlrange_spec sp = hr_tlrange_all(HR_ZRANGE_LIMIT_MAX, hr_now_ms());
    sp.hot = true;
    char mem[16384], disk[16384];
    for (int i = 0; i < MT_LISTS; i++)
        read_list(s, b, ctx[0].lists[i], &sp, false, mem, sizeof mem);
    cr_assert_eq(tlcache_lists(cache_of(s)), MT_LISTS);
    size_t hits = tlcache_hits(cache_of(s));
    for (int i = 0; i < MT_LISTS; i++) {
        read_list(s, b, ctx[0].lists[i], &sp, false, mem, sizeof mem);
        read_list(s, b, ctx[0].lists[i], &sp, true, disk, sizeof disk);
        cr_assert_str_eq(mem, disk, "list%d: in memory '%s', in RocksDB '%s'", i, mem, disk);
    }
    cr_assert_eq(tlcache_hits(cache_of(s)), hits + MT_LISTS,
                 "the final reads were not all answered from memory");
    hr_batch_free(b);
}

/* Bulk adds written as a table file (rocks/timelist_ingest.c) reach a kept list's
 * copy in memory: the same adds to a kept list and to one never read hot
 * read the same, hot and cold. */
Test(rocks_tlcache_mt, bulk_adds_reach_the_kept_copy) {
    hr_store *s = require_store();
    hr_slice hot = K("hot"), cold = K("cold");
    int64_t now = hr_now_ms();
    hr_batch *b = hr_batch_new();
    hr_tladd(b, hot, T0 + 100, M("first"), 0);
    hr_tladd(b, cold, T0 + 100, M("first"), 0);
    exec(s, b);
    hr_tlrange_spec sp = hr_tlrange_all(50, now);
    sp.hot = true;
    char got[4096], want[4096];
    read_list(s, b, hot, &sp, false, got, sizeof got); /* asks for it to be kept */
    cr_assert_eq(tlcache_lists(cache_of(s)), 1, "the hot list is kept");
    hr_tlbulk *w = hr_tlbulk_new(s);
    for (long i = 0; i < 40; i++) {
        cr_assert_eq(hr_tlbulk_add(w, hot, T0 + i, Mf("b%ld", i), 0), HR_OK);
        cr_assert_eq(hr_tlbulk_add(w, cold, T0 + i, Mf("b%ld", i), 0), HR_OK);
    }
    hr_err err = {0};
    cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "%s", err.msg);
    hr_tlbulk_free(w);
    read_list(s, b, hot, &sp, false, got, sizeof got);   /* from memory */
    read_list(s, b, cold, &sp, true, want, sizeof want); /* from RocksDB */
    cr_assert_str_eq(got, want);
    cr_assert(strstr(got, "39:b39") != NULL, "%s", got);
    hr_batch_free(b);
}
