/* Unit tests of core/rank_merge over a real store, on both backends: a
 * ranking split into sorted sets read back in its one order, window by
 * window, against a model sorted in memory. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "core/rank_merge.h"
#include "support.h"

#define SHARDS 5
#define MEMBERS 700

typedef struct entry {
    double score;
    char member[24];
} entry;

/* The ranking's order: score descending, ties by member descending (memcmp,
 * shorter first on a common prefix). */
static int by_rank(const void *x, const void *y) {
    const entry *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return -hr_slice_cmp(hr_slice_str(a->member), hr_slice_str(b->member));
}

typedef struct env {
    test_store t;
    char keys[SHARDS][64];
    hr_slice key_slices[SHARDS];
    entry all[MEMBERS]; /* sorted by by_rank once filled */
} env;

/* MEMBERS members over SHARDS sets: few distinct scores (many ties across
 * shards), members of different lengths sharing prefixes ("m1", "m10"). */
static void fill(env *e, unsigned seed) {
    char ns[32];
    test_unique(ns, sizeof ns, "rm");
    for (int s = 0; s < SHARDS; s++) {
        snprintf(e->keys[s], sizeof e->keys[s], "{%s/%d}/rank", ns, s);
        e->key_slices[s] = hr_slice_str(e->keys[s]);
    }
    srand(seed);
    hr_batch *b = hr_batch_new();
    for (int i = 0; i < MEMBERS; i++) {
        entry *x = &e->all[i];
        x->score = (double)(rand() % 9 - 4);
        snprintf(x->member, sizeof x->member, "m%d", i);
        hr_zadd(b, e->key_slices[rand() % SHARDS], x->score, hr_slice_str(x->member));
    }
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, NULL), HR_OK);
    hr_batch_free(b);
    qsort(e->all, MEMBERS, sizeof e->all[0], by_rank);
}

/* Read the merge to its end in windows of `window`; the entries must be
 * want[0..n_want) in order, each once. */
static void read_all(env *e, const hr_zrange_spec *start, size_t window, const entry *want, size_t n_want) {
    hr_rank_merge *m = hr_rank_merge_new(e->key_slices, SHARDS, start);
    size_t got = 0;
    enum { ROUNDS_MAX = 2000 };
    hr_batch **batches = calloc(ROUNDS_MAX, sizeof *batches); /* kept: the entries point into them */
    int rounds = 0;
    hr_zentry last = {0};
    for (; hr_rank_merge_more(m); rounds++) {
        cr_assert(rounds < ROUNDS_MAX, "the merge makes progress");
        hr_batch *b = batches[rounds] = hr_batch_new();
        hr_rank_merge_plan(m, b, window);
        cr_assert_eq(hr_store_exec(e->t.store, b, 0, NULL), HR_OK);
        const hr_zentry *out;
        size_t n;
        hr_err err = {0};
        cr_assert_eq(hr_rank_merge_take(m, b, &out, &n, &last, &err), HR_OK, "%s", err.msg);
        cr_assert(n > 0 || !hr_rank_merge_more(m), "a window with more to read gives something out");
        /* In no particular order: sorted here, then compared with the
         * model, which also checks that each window ranks after the last. */
        const hr_zentry **sorted = calloc(n ? n : 1, sizeof *sorted);
        for (size_t i = 0; i < n; i++)
            sorted[i] = &out[i];
        hr_rank_first(sorted, n, n);
        for (size_t i = 0; i < n; i++, got++) {
            const hr_zentry *x = sorted[i];
            cr_assert(got < n_want, "more entries than the ranking holds (window %zu)", window);
            cr_assert(x->score == want[got].score && hr_slice_eq(x->member, hr_slice_str(want[got].member)),
                      "position %zu (window %zu): got %.*s %g, want %s %g", got, window, (int)x->member.len,
                      x->member.ptr, x->score, want[got].member, want[got].score);
        }
        if (n)
            cr_assert(last.score == sorted[n - 1]->score && hr_slice_eq(last.member, sorted[n - 1]->member),
                      "last is the last-ranked entry of the window");
        free(sorted);
    }
    cr_assert_eq(got, n_want, "window %zu", window);
    hr_rank_merge_free(m);
    for (int i = 0; i < rounds; i++)
        hr_batch_free(batches[i]);
    free(batches);
}

static void merges_in_order(env *e) {
    fill(e, 7);
    hr_zrange_spec all = hr_zrange_all(true, 1);
    size_t windows[] = {1, 3, 20, 64, 1024, 20000};
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
        read_all(e, &all, windows[w], e->all, MEMBERS);

    /* From a cursor: strictly after it, whichever shard holds it. */
    for (size_t at = 0; at < MEMBERS; at += 97) {
        hr_zrange_spec from = all;
        from.has_cursor = true;
        from.cursor_score = e->all[at].score;
        from.cursor_member = hr_slice_str(e->all[at].member);
        read_all(e, &from, 50, e->all + at + 1, MEMBERS - at - 1);
    }

    /* With score bounds: only the entries inside them. */
    hr_zrange_spec bounded = all;
    bounded.min = -1;
    bounded.max = 2;
    entry in[MEMBERS];
    size_t n_in = 0;
    for (size_t i = 0; i < MEMBERS; i++)
        if (e->all[i].score >= -1 && e->all[i].score <= 2) in[n_in++] = e->all[i];
    read_all(e, &bounded, 40, in, n_in);
}

static void empty_ranking(env *e) {
    char ns[32];
    test_unique(ns, sizeof ns, "rm");
    for (int s = 0; s < SHARDS; s++) {
        snprintf(e->keys[s], sizeof e->keys[s], "{%s/%d}/rank", ns, s);
        e->key_slices[s] = hr_slice_str(e->keys[s]);
    }
    hr_zrange_spec all = hr_zrange_all(true, 1);
    read_all(e, &all, 64, NULL, 0);
}

static void run(const char *kind, void (*check)(env *e)) {
    env *e = calloc(1, sizeof *e);
    test_store_open(&e->t, kind);
    check(e);
    test_store_close(&e->t);
    free(e);
}

BOTH_STORES(rank_merge, run, merges_in_order)
BOTH_STORES(rank_merge, run, empty_ranking)

/* hr_rank_first: the k first-ranked in order, the rest kept (a permutation),
 * for every k from none to all, over entries with many tied scores. */
Test(rank_merge, first_k_in_order) {
    enum { N = 300 };
    entry model[N];
    hr_zentry ents[N];
    srand(11);
    for (int i = 0; i < N; i++) {
        model[i].score = (double)(rand() % 7);
        snprintf(model[i].member, sizeof model[i].member, "s%d", rand() % 1000 * 1000 + i);
        ents[i] = (hr_zentry){model[i].score, hr_slice_str(model[i].member)};
    }
    entry sorted[N];
    memcpy(sorted, model, sizeof sorted);
    qsort(sorted, N, sizeof sorted[0], by_rank);
    for (size_t k = 0; k <= N + 1; k += (k < 30 ? 1 : 37)) {
        const hr_zentry *e[N];
        for (int i = 0; i < N; i++)
            e[(i * 7) % N] = &ents[i]; /* a fixed shuffle (7 and 300 are coprime) */
        hr_rank_first(e, N, k);
        for (size_t i = 0; i < k && i < N; i++)
            cr_assert(hr_slice_eq(e[i]->member, hr_slice_str(sorted[i].member)),
                      "k %zu, position %zu: %.*s, want %s", k, i, (int)e[i]->member.len, e[i]->member.ptr,
                      sorted[i].member);
        bool seen[N] = {0};
        for (int i = 0; i < N; i++) {
            size_t at = (size_t)(e[i] - ents);
            cr_assert(at < N && !seen[at], "k %zu: every entry once", k);
            seen[at] = true;
        }
    }
}
