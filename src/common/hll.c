/* hll.c — HyperLogLog with Ertl's improved estimator. See hll.h for the API.
 *
 * How it works (Flajolet et al. 2007; the layout follows redis' hyperloglog.c).
 * Every member is hashed to 64 bits with XXH3. The top 14 bits choose one of
 * m = 16384 registers; the remaining 50 bits, read from the top, give a rank
 * = 1 + the number of leading zero bits, i.e. rank k with probability 2^-k.
 * A register keeps the highest rank it has seen. Many distinct members push
 * the registers up; the same member always lands on the same register with
 * the same rank, so re-adding it never changes the sketch.
 *
 *   hash (64 bits):  |<- index: 14 bits ->|<-------- 50 bits -------->|
 *                                          000001xxxxxxxxxxxxxxxxxxxxxx
 *                                          '---' 5 zeros: rank 6
 *
 * A sentinel 1 bit just below the 50 bits caps the rank at 51, so a register
 * fits in 6 bits; we spend a byte on it anyway (hll.h says why).
 *
 * Estimating. The classic estimator (harmonic mean of 2^-reg with linear
 * counting below 2.5 m and bias tables in between) needs empirical bias
 * correction around the switch-over. We use instead the estimator of
 *
 *   Otmar Ertl, "New cardinality estimation algorithms for HyperLogLog
 *   sketches", 2017 (arXiv:1702.01284): the "improved raw estimator"
 *
 * which redis also uses since 5.0. It works on the histogram C[k] of the
 * register values and corrects both ends analytically: sigma() accounts for
 * the registers still at 0 (small cardinalities, where it behaves like linear
 * counting) and tau() for registers at the maximum rank (cardinalities near
 * 2^64, irrelevant here but free). Its relative error stays within the
 * theoretical 1.04/sqrt(m) from 0 to beyond 10^9 with no tables and no
 * switch-over point, and the result for an empty sketch is exactly 0.
 *
 * Workload: a sketch is added to one member at a time (a counter PUT past the
 * exact limit), merged a dozen at a time (the alive time buckets of a
 * counter), and estimated once per PUT: the loops below are over 16 KiB of
 * bytes and take a few microseconds.
 */
#include "hll.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

/* alpha_inf = 1 / (2 ln 2), the constant of the estimator as m -> infinity. */
#define HLL_ALPHA_INF 0.721347520444481703680

void hll_clear(hll *h) {
    memset(h->reg, 0, sizeof h->reg);
}

void hll_split(uint64_t hash, uint32_t *index, uint8_t *rank) {
    *index = (uint32_t)(hash >> HLL_Q);
    /* The low 50 bits moved to the top, with a sentinel bit under them so that
     * the count of leading zeros is at most 50. */
    uint64_t rest = (hash << HLL_P) | (UINT64_C(1) << (HLL_P - 1));
    *rank = (uint8_t)(__builtin_clzll(rest) + 1);
}

void hll_hash(const void *data, size_t len, uint32_t *index, uint8_t *rank) {
    hll_split(XXH3_64bits(data, len), index, rank);
}

bool hll_set(hll *h, uint32_t index, uint8_t rank) {
    if (h->reg[index] >= rank) return false;
    h->reg[index] = rank;
    return true;
}

bool hll_add(hll *h, const void *data, size_t len) {
    uint32_t index;
    uint8_t rank;
    hll_hash(data, len, &index, &rank);
    return hll_set(h, index, rank);
}

/* The loops over all registers below are written so that the compiler
 * vectorises them (unconditional stores, no early exits): they run on every
 * counter PUT in sketch mode. */

static void max_into(uint8_t *restrict dst, const uint8_t *restrict src) {
    for (size_t i = 0; i < HLL_REGISTERS; i++)
        dst[i] = src[i] > dst[i] ? src[i] : dst[i];
}

void hll_merge(hll *dst, const hll *src) {
    if (dst != src) max_into(dst->reg, src->reg);
}

size_t hll_nonzero(const hll *h) {
    size_t n = 0;
    for (size_t i = 0; i < HLL_REGISTERS; i++)
        n += h->reg[i] != 0;
    return n;
}

/* sigma(x) = x + sum_{k>=1} x^(2^k) 2^(k-1), for the fraction x of registers
 * at zero; infinite for x = 1, which makes the estimate of an empty sketch 0. */
static double sigma(double x) {
    if (x == 1.0) return INFINITY;
    double y = 1.0, z = x, prev;
    do {
        x *= x;
        prev = z;
        z += x * y;
        y += y;
    } while (z != prev);
    return z;
}

/* tau(x) = (1 - x - sum_{k>=1} (1 - x^(2^-k))^2 2^-k) / 3, for the fraction
 * x of registers below the maximum rank. */
static double tau(double x) {
    if (x == 0.0 || x == 1.0) return 0.0;
    double y = 1.0, z = 1.0 - x, prev;
    do {
        x = sqrt(x);
        prev = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
    } while (z != prev);
    return z / 3.0;
}

/* Ertl's improved raw estimator from the histogram of register values. */
static double estimate_from(const unsigned part[4][64]) {
    unsigned hist[HLL_RANK_MAX + 1] = {0};
    for (int k = 0; k < 64; k++)
        hist[k <= HLL_RANK_MAX ? k : HLL_RANK_MAX] += part[0][k] + part[1][k] + part[2][k] + part[3][k];
    const double m = HLL_REGISTERS;
    double z = m * tau((m - hist[HLL_Q + 1]) / m);
    for (int k = HLL_Q; k >= 1; k--) {
        z += hist[k];
        z *= 0.5;
    }
    z += m * sigma(hist[0] / m);
    return HLL_ALPHA_INF * m * m / z;
}

double hll_estimate(const hll *h) {
    return hll_estimate_union(h, h);
}

/* The histogram of max(a, b) in blocks of 64 registers: a vectorised max,
 * then four partial histograms, so that consecutive increments rarely wait
 * on each other. */
double hll_estimate_union(const hll *a, const hll *b) {
    unsigned part[4][64] = {{0}};
    uint8_t r[64];
    for (size_t i = 0; i < HLL_REGISTERS; i += 64) {
        for (int j = 0; j < 64; j++) /* vectorised: 64 registers of the union */
            r[j] = (uint8_t)((a->reg[i + j] > b->reg[i + j] ? a->reg[i + j] : b->reg[i + j]) & 63);
        for (int j = 0; j < 64; j += 4) {
            part[0][r[j]]++;
            part[1][r[j + 1]]++;
            part[2][r[j + 2]]++;
            part[3][r[j + 3]]++;
        }
    }
    return estimate_from(part);
}

/* Serialisation ------------------------------------------------------------ */

static void put_entry(unsigned char *p, uint32_t index, uint8_t rank) {
    uint32_t v = (index << 6) | rank;
    p[0] = (unsigned char)(v >> 16);
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)v;
}

void hll_encode(const hll *h, hr_buf *out) {
    /* Sparse only while it is much smaller: a dense sketch decodes with the
     * vectorised loops above, and LZ4/Zstd take its zeros out on disk. */
    size_t n = hll_nonzero(h);
    if (n > HLL_SPARSE_MAX) {
        hr_buf_append_byte(out, HLL_ENC_DENSE);
        hr_buf_append(out, h->reg, HLL_REGISTERS);
        return;
    }
    hr_buf_reserve(out, 1 + 3 * n);
    unsigned char *p = (unsigned char *)out->data + out->len;
    *p++ = HLL_ENC_UPDATES;
    for (uint32_t i = 0; i < HLL_REGISTERS; i += 8) {
        uint64_t word;
        memcpy(&word, h->reg + i, sizeof word);
        if (word == 0) continue; /* most words of a sparse sketch */
        for (uint32_t j = i; j < i + 8; j++) {
            if (h->reg[j] == 0) continue;
            put_entry(p, j, h->reg[j]);
            p += 3;
        }
    }
    out->len += 1 + 3 * n;
    out->data[out->len] = '\0'; /* hr_buf keeps its bytes terminated */
}

void hll_encode_update(uint32_t index, uint8_t rank, hr_buf *out) {
    unsigned char e[4] = {HLL_ENC_UPDATES};
    put_entry(e + 1, index, rank);
    hr_buf_append(out, e, sizeof e);
}

int hll_decode(hll *h, const void *data, size_t len) {
    const unsigned char *p = data;
    if (len == HLL_DENSE_BYTES && p[0] == HLL_ENC_DENSE) {
        uint8_t top = 0;
        for (size_t i = 0; i < HLL_REGISTERS; i++)
            top = p[1 + i] > top ? p[1 + i] : top;
        if (top > HLL_RANK_MAX) return -1;
        memcpy(h->reg, p + 1, HLL_REGISTERS);
        return 0;
    }
    hll_clear(h);
    return hll_decode_merge(h, data, len);
}

int hll_decode_merge(hll *h, const void *data, size_t len) {
    const unsigned char *p = data;
    if (len == 0) return -1;
    if (p[0] == HLL_ENC_DENSE) {
        if (len != HLL_DENSE_BYTES) return -1;
        uint8_t top = 0;
        for (size_t i = 0; i < HLL_REGISTERS; i++)
            top = p[1 + i] > top ? p[1 + i] : top;
        if (top > HLL_RANK_MAX) return -1;
        max_into(h->reg, p + 1);
        return 0;
    }
    if (p[0] != HLL_ENC_UPDATES || (len - 1) % 3 != 0) return -1;
    for (size_t off = 1; off < len; off += 3) {
        uint32_t v = ((uint32_t)p[off] << 16) | ((uint32_t)p[off + 1] << 8) | p[off + 2];
        uint32_t index = v >> 6;
        uint8_t rank = (uint8_t)(v & 63);
        if (index >= HLL_REGISTERS || rank > HLL_RANK_MAX) return -1;
        if (rank > h->reg[index]) h->reg[index] = rank;
    }
    return 0;
}
