/* test_hll.c — common/hll.c: accuracy across cardinalities, merge, idempotence,
 * encodings.
 *
 * The standard error of a p = 14 sketch is 1.04 / sqrt(16384) = 0.81 %. The
 * bounds below are 3 sigma (2.5 %) for single estimates, and 1 % for the
 * mean error over five independent 1 M sketches (whose own spread is about
 * 0.3 %), so the tests check the estimator, not the luck of one hash seed.
 * Members are deterministic, so a run is reproducible. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/hll.h"

/* A 16-byte member: (seed, i). Different seeds give independent sets. */
static void member(uint64_t seed, uint64_t i, unsigned char out[16]) {
    memcpy(out, &seed, 8);
    memcpy(out + 8, &i, 8);
}

static hll *new_hll(void) {
    hll *h = malloc(sizeof *h);
    cr_assert_not_null(h);
    hll_clear(h);
    return h;
}

/* Add members [from, to) of seed to h. */
static void fill(hll *h, uint64_t seed, uint64_t from, uint64_t to) {
    unsigned char m[16];
    for (uint64_t i = from; i < to; i++) {
        member(seed, i, m);
        hll_add(h, m, sizeof m);
    }
}

static double rel_error(uint64_t seed, uint64_t n) {
    hll *h = new_hll();
    fill(h, seed, 0, n);
    double e = (hll_estimate(h) - (double)n) / (double)n;
    free(h);
    return e;
}

Test(hll, empty_is_zero) {
    hll *h = new_hll();
    cr_assert_eq(hll_estimate(h), 0.0);
    cr_assert_eq(hll_nonzero(h), 0);
    free(h);
}

Test(hll, tiny_cardinalities_are_exact) {
    /* Below a few hundred, collisions among 16384 registers are rare and the
     * estimator behaves like linear counting: rounding gives n (or n +- 1). */
    const uint64_t ns[] = {1, 2, 10, 100, 300};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        hll *h = new_hll();
        fill(h, 7, 0, ns[k]);
        long est = lround(hll_estimate(h));
        cr_assert(labs(est - (long)ns[k]) <= (ns[k] < 100 ? 0 : 2), "n=%lu: estimate %ld",
                  (unsigned long)ns[k], est);
        free(h);
    }
}

Test(hll, mid_cardinalities_within_3_sigma) {
    const uint64_t ns[] = {1000, 10000, 50000, 100000};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        double e = rel_error(11 + k, ns[k]);
        cr_assert(fabs(e) < 0.025, "n=%lu: error %.3f %%", (unsigned long)ns[k], 100 * e);
    }
}

Test(hll, one_million_within_1_percent, .timeout = 60) {
    double sum = 0;
    for (uint64_t seed = 100; seed < 105; seed++) {
        double e = rel_error(seed, 1000000);
        cr_assert(fabs(e) < 0.025, "seed %lu: error %.3f %%", (unsigned long)seed, 100 * e);
        sum += fabs(e);
    }
    cr_assert(sum / 5 < 0.01, "mean |error| over five 1M sketches: %.3f %%", 100 * sum / 5);
}

Test(hll, ten_million_within_3_sigma, .timeout = 60) {
    /* From raw hashes: the estimator at the top of the range the server
     * sees, without spending the test's time in XXH3. */
    hll *h = new_hll();
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (uint64_t i = 0; i < 10000000; i++) {
        /* splitmix64: a bijection, so 10 M distinct well-mixed hashes */
        uint64_t z = (x += 0x9E3779B97F4A7C15u);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        z ^= z >> 31;
        uint32_t index;
        uint8_t rank;
        hll_split(z, &index, &rank);
        hll_set(h, index, rank);
    }
    double e = (hll_estimate(h) - 1e7) / 1e7;
    cr_assert(fabs(e) < 0.025, "error %.3f %%", 100 * e);
    free(h);
}

Test(hll, merge_equals_union) {
    hll *a = new_hll(), *b = new_hll(), *all = new_hll();
    fill(a, 3, 0, 60000);
    fill(b, 3, 40000, 100000);
    fill(all, 3, 0, 100000);
    hll_merge(a, b);
    cr_assert_eq(memcmp(a->reg, all->reg, HLL_REGISTERS), 0,
                 "merge of overlapping sets != sketch of the union");
    double e = (hll_estimate(a) - 100000) / 100000;
    cr_assert(fabs(e) < 0.025, "union error %.3f %%", 100 * e);
    free(a);
    free(b);
    free(all);
}

Test(hll, re_adding_changes_nothing) {
    hll *h = new_hll();
    fill(h, 5, 0, 5000);
    hll *copy = malloc(sizeof *copy);
    memcpy(copy, h, sizeof *h);
    unsigned char m[16];
    for (uint64_t i = 0; i < 5000; i++) {
        member(5, i, m);
        cr_assert_not(hll_add(h, m, sizeof m), "re-adding member %lu raised a register", (unsigned long)i);
    }
    cr_assert_eq(memcmp(h->reg, copy->reg, HLL_REGISTERS), 0);
    free(h);
    free(copy);
}

Test(hll, hash_split_ranges) {
    uint32_t index;
    uint8_t rank;
    hll_split(0, &index, &rank);
    cr_assert_eq(index, 0);
    cr_assert_eq(rank, HLL_RANK_MAX, "all-zero rest must hit the sentinel: rank %u", rank);
    hll_split(UINT64_MAX, &index, &rank);
    cr_assert_eq(index, HLL_REGISTERS - 1);
    cr_assert_eq(rank, 1);
}

Test(hll, encodings_round_trip) {
    /* sparse: few registers */
    hll *h = new_hll(), *back = new_hll();
    fill(h, 9, 0, 100);
    hr_buf buf = HR_BUF_INIT;
    hll_encode(h, &buf);
    cr_assert_eq(buf.data[0], HLL_ENC_UPDATES);
    cr_assert_eq(buf.len, 1 + 3 * hll_nonzero(h));
    cr_assert_eq(hll_decode_merge(back, buf.data, buf.len), 0);
    cr_assert_eq(memcmp(h->reg, back->reg, HLL_REGISTERS), 0);

    /* dense: most registers */
    fill(h, 9, 100, 200000);
    hr_buf_clear(&buf);
    hll_encode(h, &buf);
    cr_assert_eq(buf.data[0], HLL_ENC_DENSE);
    cr_assert_eq(buf.len, HLL_DENSE_BYTES);
    hll_clear(back);
    cr_assert_eq(hll_decode_merge(back, buf.data, buf.len), 0);
    cr_assert_eq(memcmp(h->reg, back->reg, HLL_REGISTERS), 0);

    /* a one-register update merges as max */
    hr_buf_clear(&buf);
    hll_encode_update(42, 50, &buf);
    cr_assert_eq(buf.len, 4);
    cr_assert_eq(hll_decode_merge(back, buf.data, buf.len), 0);
    cr_assert_eq(back->reg[42], 50);
    hr_buf_clear(&buf);
    hll_encode_update(42, 3, &buf);
    cr_assert_eq(hll_decode_merge(back, buf.data, buf.len), 0);
    cr_assert_eq(back->reg[42], 50, "a lower rank must not lower a register");

    /* malformed input is refused */
    cr_assert_eq(hll_decode_merge(back, "", 0), -1);
    cr_assert_eq(hll_decode_merge(back, "U\x01", 2), -1);
    cr_assert_eq(hll_decode_merge(back, "D\x01\x02", 3), -1);
    cr_assert_eq(hll_decode_merge(back, "X\x00\x00\x01", 4), -1);
    cr_assert_eq(hll_decode_merge(back, "U\x00\x00\x3f", 4), -1, "rank 63 > 51");
    hr_buf_free(&buf);
    free(h);
    free(back);
}
