/* test_store_zmodel.c — sorted sets read back against models: a set of
 * times against the plain set holding the same members, rankings under
 * many moves and ties, and whole reads that must follow every change (and,
 * under load, every atomic batch). Conformance checks, run on RocksDB, on
 * RocksDB with every sorted set in memory, and on Redis Cluster (suites
 * zmodel_rocksdb, zmodel_rocksmem, zmodel_redis; store_fixture.h). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_checks.h"

STORE_SUITES_MEM(zmodel);

/* Two range results hold the same entries (members and scores) and `more`. */
static void assert_same_range(const hr_result *got, const hr_result *want, const char *what) {
    assert_rc(got, want->rc);
    cr_assert_eq(got->n_entries, want->n_entries, "%s: %zu entries, expected %zu", what, got->n_entries,
                 want->n_entries);
    for (size_t i = 0; i < want->n_entries; i++) {
        cr_assert(hr_slice_eq(got->entries[i].member, want->entries[i].member),
                  "%s: entry %zu is '%.*s', not '%.*s'", what, i, (int)got->entries[i].member.len,
                  got->entries[i].member.ptr, (int)want->entries[i].member.len, want->entries[i].member.ptr);
        cr_assert_eq(got->entries[i].score, want->entries[i].score, "%s: entry %zu", what, i);
    }
    cr_assert_eq(got->more, want->more, "%s: more", what);
}

/* Every read of the set of times `t` answers as the same reads of the plain
 * set `z` holding the same members. */
static void assert_sets_agree(hr_store *s, hr_slice z, hr_slice t, int stage) {
    static const double bounds[][2] = {{-INFINITY, INFINITY}, {5000, 20000}, {7000.5, 31000}, {-3000, -1}};
    static const size_t limits[] = {1, 7, 1000};
    hr_batch *b = hr_batch_new();
    size_t cz = hr_zcard(b, z), ct = hr_zcard(b, t);
    size_t sz[8], st[8];
    for (long i = 0; i < 8; i++) {
        sz[i] = hr_zscore(b, z, Mf("m%03ld", i * 41));
        st[i] = hr_zscore(b, t, Mf("m%03ld", i * 41));
    }
    exec(s, b);
    cr_assert_eq(hr_batch_result(b, ct)->num, hr_batch_result(b, cz)->num, "stage %d: sizes", stage);
    for (int i = 0; i < 8; i++) {
        assert_rc(hr_batch_result(b, st[i]), hr_batch_result(b, sz[i])->rc);
        cr_assert_eq(hr_batch_result(b, st[i])->score, hr_batch_result(b, sz[i])->score, "stage %d", stage);
    }
    char what[96];
    for (int rev = 0; rev < 2; rev++)
        for (size_t bi = 0; bi < sizeof bounds / sizeof bounds[0]; bi++)
            for (size_t li = 0; li < 3; li++)
                for (int cur = 0; cur < 4; cur++) {
                    hr_zrange_spec sp = range(rev, bounds[bi][0], bounds[bi][1], limits[li]);
                    sp.offset = cur == 3 ? 3 : 0;
                    if (cur == 1) sp = after(sp, 12000, "m100"); /* a cursor on an integer score */
                    if (cur == 2) sp = after(sp, 15000.5, "m");  /* between scores */
                    hr_batch_reset(b);
                    size_t oz = hr_zrange(b, z, &sp), ot = hr_zrange(b, t, &sp);
                    exec(s, b);
                    snprintf(what, sizeof what, "stage %d, %s [%g, %g] limit %zu cursor %d", stage,
                             rev ? "desc" : "asc", bounds[bi][0], bounds[bi][1], limits[li], cur);
                    assert_same_range(hr_batch_result(b, ot), hr_batch_result(b, oz), what);
                    /* and page on from the last entry read */
                    const hr_result *r = hr_batch_result(b, oz);
                    if (r->n_entries == 0) continue;
                    hr_zentry last = r->entries[r->n_entries - 1];
                    char m[16];
                    snprintf(m, sizeof m, "%.*s", (int)last.member.len, last.member.ptr);
                    hr_zrange_spec next =
                        after(range(rev, bounds[bi][0], bounds[bi][1], limits[li]), last.score, m);
                    hr_batch_reset(b);
                    oz = hr_zrange(b, z, &next), ot = hr_zrange(b, t, &next);
                    exec(s, b);
                    assert_same_range(hr_batch_result(b, ot), hr_batch_result(b, oz), what);
                }
    hr_batch_free(b);
}

STORE_TEST_MEM(zmodel, a_set_of_times_answers_as_a_sorted_set) {
    hr_slice z = K("plain"), t = K("times");
    /* this test's keys that end in "times" are sets of times: RocksDB acts
     * on that, Redis keeps them as any sorted set */
    hr_store_decl times = {.kind = HR_DECL_TIME_SET, .prefix = M(prefix), .suffix = M("times")};
    cr_assert_eq(hr_store_declare(s, &times), strncmp(store_uri, "rocksdb:", 8) == 0);
    hr_batch *b = hr_batch_new();
    /* Scores with ties and a few negatives, in batches: inline at first,
     * then past the inline limit (rocks/zset_inline.c), then moved and removed. */
    for (long i = 0; i < 300; i++) {
        int64_t score = (i * 7919 % 40) * 1000 - (i % 13 == 0 ? 2500 : 0);
        if (i % 50 == 0) hr_batch_reset(b);
        hr_zadd(b, z, (double)score, Mf("m%03ld", i));
        hr_zadd(b, t, (double)score, Mf("m%03ld", i));
        if (i % 50 == 49 || i == 9) {
            exec(s, b);
            for (size_t j = 0; j < hr_batch_len(b); j += 2)
                cr_assert_eq(hr_batch_result(b, j + 1)->num, hr_batch_result(b, j)->num, "new?");
            hr_batch_reset(b);
            if (i == 9) assert_sets_agree(s, z, t, 1);
        }
    }
    assert_sets_agree(s, z, t, 2);
    hr_batch_reset(b);
    for (long i = 0; i < 300; i += 7) {
        hr_zadd(b, z, (double)(i * 100), Mf("m%03ld", i)); /* moved */
        hr_zadd(b, t, (double)(i * 100), Mf("m%03ld", i));
    }
    for (long i = 3; i < 300; i += 11) {
        hr_zrem(b, z, Mf("m%03ld", i));
        hr_zrem(b, t, Mf("m%03ld", i));
    }
    exec(s, b);
    for (size_t j = 0; j < hr_batch_len(b); j += 2)
        cr_assert_eq(hr_batch_result(b, j + 1)->num, hr_batch_result(b, j)->num, "op %zu", j);
    assert_sets_agree(s, z, t, 3);
    /* removals by score, in the middle and at either end */
    hr_batch_reset(b);
    hr_zremrange_score(b, z, 5000, 9000);
    hr_zremrange_score(b, t, 5000, 9000);
    hr_zremrange_score(b, z, -INFINITY, 0);
    hr_zremrange_score(b, t, -INFINITY, 0);
    hr_zremrange_score(b, z, 33000, INFINITY);
    hr_zremrange_score(b, t, 33000, INFINITY);
    exec(s, b);
    for (size_t j = 0; j < hr_batch_len(b); j += 2) {
        cr_assert_gt(hr_batch_result(b, j)->num, 0, "op %zu removed nothing: the test would prove little", j);
        cr_assert_eq(hr_batch_result(b, j + 1)->num, hr_batch_result(b, j)->num, "op %zu", j);
    }
    assert_sets_agree(s, z, t, 4);
    hr_batch_free(b);
}

typedef char member_name[24];

/* A set's order, (score, member bytes), over a model's indices. */
static const double *sort_scores;
static const member_name *sort_names;
static int by_score_then_member(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (sort_scores[x] != sort_scores[y]) return sort_scores[x] < sort_scores[y] ? -1 : 1;
    return hr_slice_cmp(hr_slice_str(sort_names[x]), hr_slice_str(sort_names[y]));
}

/* Read the whole set z by cursor pages of `page` in both directions and
 * compare with a model: its want members are names[order[0..want)], with
 * scores score[order[i]] (order is sorted here, into the set's order). */
static void assert_pages(hr_store *s, hr_slice z, const member_name *names, const double *score, int *order,
                         int want, size_t page) {
    sort_scores = score;
    sort_names = names;
    qsort(order, (size_t)want, sizeof *order, by_score_then_member);
    for (int reverse = 0; reverse < 2; reverse++) {
        hr_zrange_spec sp = hr_zrange_all(reverse, page);
        int seen = 0;
        member_name lm; /* the cursor's member: sp points to it */
        for (;;) {
            const hr_result *r = ONE(s, hr_zrange(B, z, &sp));
            assert_rc(r, HR_OK);
            for (size_t i = 0; i < r->n_entries; i++, seen++) {
                cr_assert(seen < want, "more members than the model's %d", want);
                int k = order[reverse ? want - 1 - seen : seen];
                cr_assert(hr_slice_eq(r->entries[i].member, hr_slice_str(names[k])) &&
                              r->entries[i].score == score[k],
                          "%s entry %d: %.*s %g, expected %s %g", reverse ? "reverse" : "forward", seen,
                          (int)r->entries[i].member.len, r->entries[i].member.ptr, r->entries[i].score,
                          names[k], score[k]);
            }
            if (!r->more) break;
            const hr_zentry *last = &r->entries[r->n_entries - 1];
            snprintf(lm, sizeof lm, "%.*s", (int)last->member.len, last->member.ptr);
            sp = after(sp, last->score, lm);
        }
        cr_assert_eq(seen, want, "%s: %d members, expected %d", reverse ? "reverse" : "forward", seen, want);
    }
}

/* The set of n members m0000.. with scores score[] (those live), read by
 * pages of 97 both ways against the model, and its zcard. */
static void assert_ranking(hr_store *s, hr_slice z, const double *score, const bool *live, int n) {
    int *order = malloc((size_t)n * sizeof *order), want = 0;
    member_name *names = malloc((size_t)n * sizeof *names);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "m%04d", i);
        if (live[i]) order[want++] = i;
    }
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, want);
    assert_pages(s, z, names, score, order, want, 97);
    free(names);
    free(order);
}

/* Members m0000.. m<first-1> with scores i % mod, added to z in one batch
 * (b, reset first) and to the model assert_ranking reads. */
static void model_fill(hr_store *s, hr_batch *b, hr_slice z, double *score, bool *live, int first, int mod) {
    hr_batch_reset(b);
    for (int i = 0; i < first; i++) {
        score[i] = (double)(i % mod);
        live[i] = true;
        hr_zadd(b, z, score[i], Mf("m%04ld", i));
    }
    exec(s, b);
}

STORE_TEST_MEM(zmodel, zset_ranking_under_moves) {
    /* A ranking: 1200 members, then many score changes concentrated on a
     * few (as votes are), removals and new members; the order, read by
     * cursor pages both ways, always matches a model. On RocksDB this also
     * moves the set into memory midway (more changes than members). */
    enum { N = 1300, FIRST = 1200 };
    hr_slice z = K("rank");
    double score[N] = {0};
    bool live[N] = {0};
    hr_batch *b = hr_batch_new();
    model_fill(s, b, z, score, live, FIRST, 7);
    assert_ranking(s, z, score, live, N);
    unsigned r = 12345;
    for (int round = 0; round < 30; round++) {
        hr_batch_reset(b);
        for (int j = 0; j < 100; j++) {
            r = r * 1103515245u + 12345u;
            int k = (int)((r >> 8) % 1000) < 700 ? (int)((r >> 8) % 20) : (int)((r >> 8) % FIRST);
            if (!live[k]) continue;
            double d = (r & 1) ? 1 : -1;
            score[k] += d;
            hr_zincr(b, z, d, Mf("m%04ld", k));
        }
        if (round % 10 == 9) { /* a removal and a new member now and then */
            int gone = round, added = FIRST + round;
            live[gone] = false;
            hr_zrem(b, z, Mf("m%04ld", gone));
            live[added] = true;
            score[added] = 3.5;
            hr_zadd(b, z, 3.5, Mf("m%04ld", added));
        }
        exec(s, b);
        if (round % 10 == 9) assert_ranking(s, z, score, live, N);
    }
    /* a zadd that moves a member to where it already is changes nothing */
    cr_assert_eq(ONE(s, hr_zadd(B, z, score[100], M("m0100")))->num, 0);
    assert_ranking(s, z, score, live, N);
    hr_batch_free(b);
}

/* Members of ranking_ties: many share their first 8 bytes, some end
 * within them, and scores tie (rocks/zset_memory.c orders by the score and the
 * first 8 bytes before it reads a member's node). */
enum { TIE_MEMBERS = 603 };
static member_name tie_name[TIE_MEMBERS];
static double tie_score[TIE_MEMBERS];

STORE_TEST_MEM(zmodel, zset_ranking_ties_on_shared_prefixes) {
    /* Members "prefix__000".."prefix__299" (the same first 8 bytes),
     * "prefix_0".."prefix_299" (8 and 9 bytes: "prefix_1" is the head of
     * "prefix_10"), and "prefix_", "prefix__" and "p", which end inside
     * the others' first 8 bytes; scores 0..2, then 3000 moves of +-1. The
     * order, read by cursor pages of 37 both ways, matches a model. */
    hr_slice z = K("ties");
    int n = 0;
    for (int i = 0; i < 300; i++)
        snprintf(tie_name[n++], sizeof tie_name[0], "prefix__%03d", i);
    for (int i = 0; i < 300; i++)
        snprintf(tie_name[n++], sizeof tie_name[0], "prefix_%d", i);
    snprintf(tie_name[n++], sizeof tie_name[0], "prefix_");
    snprintf(tie_name[n++], sizeof tie_name[0], "prefix__");
    snprintf(tie_name[n++], sizeof tie_name[0], "p");
    cr_assert_eq(n, TIE_MEMBERS);
    hr_batch *b = hr_batch_new();
    for (int i = 0; i < n; i++) {
        tie_score[i] = (double)(i % 3);
        hr_zadd(b, z, tie_score[i], M(tie_name[i]));
    }
    exec(s, b);
    unsigned r = 777;
    for (int round = 0; round < 30; round++) {
        hr_batch_reset(b);
        for (int j = 0; j < 100; j++) {
            r = r * 1103515245u + 12345u;
            int k = (int)((r >> 8) % (unsigned)n);
            double d = (r & 1) ? 1 : -1;
            tie_score[k] += d;
            hr_zincr(b, z, d, M(tie_name[k]));
        }
        exec(s, b);
    }
    hr_batch_free(b);

    int order[TIE_MEMBERS];
    for (int i = 0; i < n; i++)
        order[i] = i;
    assert_pages(s, z, tie_name, tie_score, order, n, 37);
}

STORE_TEST_MEM(zmodel, zset_whole_reads_follow_changes) {
    /* A set read whole again and again between small changes (a friend
     * list): on RocksDB the whole reads are cached (rocks/zset_cache.c), and
     * every read after a change, whole or by pages either way, must show
     * it. 300 members: past the inline sets, and too few changes to move
     * the set into memory. */
    enum { N = 400, FIRST = 300 };
    hr_slice z = K("friends");
    double score[N] = {0};
    bool live[N] = {0};
    hr_batch *b = hr_batch_new();
    model_fill(s, b, z, score, live, FIRST, 5);
    hr_zrange_spec whole = hr_zrange_all(false, 1000), whole_rev = hr_zrange_all(true, 1000);
    for (int round = 0; round < 20; round++) {
        for (int twice = 0; twice < 2; twice++) { /* the second reads from the cache */
            size_t n_live = 0;
            for (int i = 0; i < N; i++)
                n_live += live[i];
            cr_assert_eq(ONE(s, hr_zrange(B, z, &whole))->n_entries, n_live, "round %d", round);
            cr_assert_eq(ONE(s, hr_zrange(B, z, &whole_rev))->n_entries, n_live, "round %d", round);
            assert_ranking(s, z, score, live, N);
        }
        hr_batch_reset(b);
        int added = FIRST + round, gone = round * 7, moved = round * 11 + 3;
        live[added] = true;
        score[added] = 2.5;
        hr_zadd(b, z, 2.5, Mf("m%04ld", added));
        live[gone] = false;
        hr_zrem(b, z, Mf("m%04ld", gone));
        if (live[moved]) {
            score[moved] += 10;
            hr_zincr(b, z, 10, Mf("m%04ld", moved));
        }
        exec(s, b);
    }
    /* deleted and made again: the new set only */
    ONE(s, hr_del(B, z));
    memset(live, 0, sizeof live);
    hr_batch_reset(b);
    for (int i = 0; i < 200; i++) {
        score[i] = -(double)i;
        live[i] = true;
        hr_zadd(b, z, score[i], Mf("m%04ld", i));
    }
    exec(s, b);
    cr_assert_eq(ONE(s, hr_zrange(B, z, &whole))->n_entries, 200);
    assert_ranking(s, z, score, live, N);
    hr_batch_free(b);
}

/* A writer adds a member to a set and sets a count in the same atomic
 * batch; readers read the count and the whole set in one batch: the set
 * must have exactly that many members (a cached set that missed a write
 * would have fewer). */
typedef struct whole_shared {
    hr_store *s;
    hr_slice n, set;
    atomic_int done;
    int failures;
    char why[160];
} whole_shared;

enum { WHOLE_FIRST = 200, WHOLE_ADDS = 600 };

static void *whole_writer(void *arg) {
    whole_shared *sh = arg;
    hr_batch *b = hr_batch_new();
    char v[32], m[32];
    for (long i = WHOLE_FIRST; i < WHOLE_FIRST + WHOLE_ADDS; i++) {
        hr_batch_reset(b);
        snprintf(m, sizeof m, "m%04ld", i);
        snprintf(v, sizeof v, "%ld", i + 1);
        hr_zadd(b, sh->set, (double)(i % 13), hr_slice_str(m));
        hr_put(b, sh->n, hr_slice_str(v), 0);
        if (hr_store_exec(sh->s, b, HR_EXEC_ATOMIC, NULL) != HR_OK && sh->failures++ == 0)
            snprintf(sh->why, sizeof sh->why, "write %ld failed", i);
    }
    atomic_store(&sh->done, 1);
    hr_batch_free(b);
    return NULL;
}

static void *whole_reader(void *arg) {
    whole_shared *sh = arg;
    hr_batch *b = hr_batch_new();
    hr_zrange_spec whole = hr_zrange_all(false, 5000);
    while (!atomic_load(&sh->done) && sh->failures == 0) {
        hr_batch_reset(b);
        size_t rn = hr_get(b, sh->n);
        size_t rz = hr_zrange(b, sh->set, &whole);
        if (hr_store_exec(sh->s, b, HR_EXEC_ATOMIC, NULL) != HR_OK) {
            if (sh->failures++ == 0) snprintf(sh->why, sizeof sh->why, "read failed");
            break;
        }
        long n = value_of(hr_batch_result(b, rn));
        size_t got = hr_batch_result(b, rz)->n_entries;
        if ((long)got != n && sh->failures++ == 0)
            snprintf(sh->why, sizeof sh->why, "a batch saw n = %ld and %zu members", n, got);
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST_MEM(zmodel, zset_whole_reads_seen_whole_under_load) {
    /* Sets kept in memory are read at their latest state, not at the
     * batch's snapshot (store.h): this check is for the others. */
    if (zsets_in_memory) return;
    whole_shared sh = {.s = s, .n = KT("n"), .set = KT("set")};
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < WHOLE_FIRST; i++)
        hr_zadd(b, sh.set, (double)(i % 13), Mf("m%04ld", i));
    hr_put(b, sh.n, Mf("%ld", WHOLE_FIRST), 0);
    exec(s, b);
    hr_batch_free(b);
    pthread_t w, r[2];
    pthread_create(&w, NULL, whole_writer, &sh);
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, whole_reader, &sh);
    pthread_join(w, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    cr_assert_eq(sh.failures, 0, "%d failures, the first: %s", sh.failures, sh.why);
    cr_assert_eq(ONE(s, hr_zcard(B, sh.set))->num, WHOLE_FIRST + WHOLE_ADDS);
}
