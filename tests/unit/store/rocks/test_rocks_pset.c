/* test_rocks_pset.c — the RocksDB backend's large packed sets (suite
 * rocks_internals, rocks_fixture.h): their images (rocks/pset_image.c), tested
 * together with the chunks written since and never hiding an acknowledged
 * member, and their member columns (rocks/pset_columns.c), which answer many sets'
 * tests at once and are filled again as members expire. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "rocks_fixture.h"

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
    /* (a slow set-up leaves less of the wait above after the build) */
    while (hr_now_ms() <= built + PIMG_REBUILD_MS)
        usleep(10 * 1000);
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
                cr_assert(res->value.ptr[i], "test %ld.%zu: member %llu, acknowledged before it, not found",
                          tests, twice, (unsigned long long)m[i]);
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
    /* Room for the set-up on a busy machine: the members expire after it. */
    int64_t soon = hr_now_ms() + 5000;
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
