/* store_micro.c — micro-benchmarks of store primitives through the public
 * interface (store.h), on either backend. Built by `make build/store_micro`;
 * figures in BENCHMARKS.md.
 *
 *   store_micro URI tombstones   top-20 descending read of a 5 000-member
 *                                sorted set: fresh, after 200 K score changes
 *                                (Zipf-like), and after close and reopen; on
 *                                RocksDB the set moves into memory after
 *                                5 000 changes (src/store/rocks_zmem.c)
 *   store_micro URI tombstones-disk   the same with the set kept on disk
 *                                (RocksDB: a memory budget too small for it),
 *                                as every set was before rocks_zmem.c
 *   store_micro URI pset         hr_pset_test of 10 000 members against sets
 *                                of 10 000 and 100 000 members, and the same
 *                                question as 10 000 hr_zscore in one batch
 *   store_micro URI kv           the cost of one point write and one point
 *                                read of a missing key, in batches of 16
 *                                (1 M random 40-byte keys): what every
 *                                sub-key of a batch pays
 *
 * Keys are prefixed with a random tag, so runs on a shared cluster do not
 * collide; RocksDB runs want a fresh directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "store/store.h"

static const char *uri;
static hr_store_options opts;
static hr_store *S;
static char tag[32];

static void open_store(void) {
    hr_err err = {0};
    if (hr_store_open(uri, &opts, &S, &err) != HR_OK) {
        fprintf(stderr, "store_micro: %s\n", err.msg);
        exit(1);
    }
}

static void run(hr_batch *b) {
    hr_err err = {0};
    if (hr_store_exec(S, b, 0, &err) != HR_OK) {
        fprintf(stderr, "store_micro: %s\n", err.msg);
        exit(1);
    }
}

static hr_slice key(const char *name) {
    static char k[4][96];
    static int next;
    char *p = k[next++ % 4];
    snprintf(p, sizeof k[0], "{%s}:%s", tag, name);
    return hr_slice_str(p);
}

/* Mean microseconds of a descending top-20 read, over 50 reads. */
static double top20_us(void) {
    hr_batch *b = hr_batch_new();
    uint64_t t0 = hr_mono_ns();
    for (int r = 0; r < 50; r++) {
        hr_batch_reset(b);
        hr_zrange_spec sp = hr_zrange_all(true, 20);
        hr_zrange(b, key("rank"), &sp);
        run(b);
    }
    hr_batch_free(b);
    return (double)(hr_mono_ns() - t0) / 1e3 / 50;
}

static void tombstones(void) {
    hr_batch *b = hr_batch_new();
    char m[32];
    for (int i = 0; i < 5000; i++) {
        hr_batch_reset(b);
        snprintf(m, sizeof m, "s%d", i);
        hr_zadd(b, key("rank"), 0, hr_slice_str(m));
        run(b);
    }
    printf("fresh ranking of 5000: top-20 read %.1f us\n", top20_us());
    srand(1);
    uint64_t t0 = hr_mono_ns();
    for (int i = 0; i < 200000; i++) { /* popular members get most of the votes */
        int k = (int)(5000.0 / (1 + rand() % 5000)) - 1;
        hr_batch_reset(b);
        snprintf(m, sizeof m, "s%d", k < 0 ? 0 : k);
        hr_zincr(b, key("rank"), 1, hr_slice_str(m));
        run(b);
    }
    printf("200K score changes (one hr_zincr a batch): %.2f us each\n", (double)(hr_mono_ns() - t0) / 1e3 / 200000);
    printf("after 200K score changes: top-20 read %.1f us\n", top20_us());
    hr_batch_free(b);
    hr_store_close(S);
    open_store();
    printf("after close and reopen: top-20 read %.1f us\n", top20_us());
}

static uint64_t rnd(void) {
    static uint64_t x = 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

/* A set of n random members under name; members[] receives them. */
static void fill(const char *name, uint64_t *members, size_t n, bool as_zset) {
    hr_batch *b = hr_batch_new();
    char m[8];
    for (size_t i = 0; i < n;) {
        hr_batch_reset(b);
        for (int k = 0; k < 1000 && i < n; k++, i++) {
            members[i] = rnd();
            if (as_zset) {
                memcpy(m, &members[i], 8);
                hr_zadd(b, key(name), 0, hr_slice_of(m, 8));
            } else {
                hr_pset_add(b, key(name), members[i], 0);
            }
        }
        run(b);
    }
    hr_batch_free(b);
}

/* Microseconds per member of one test of q[0..n) (half in the set). */
static double pset_test_us(const char *name, const uint64_t *q, size_t n) {
    hr_batch *b = hr_batch_new();
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        hr_batch_reset(b);
        uint64_t t0 = hr_mono_ns();
        hr_pset_test(b, key(name), q, n);
        run(b);
        double us = (double)(hr_mono_ns() - t0) / 1e3 / (double)n;
        if (us < best) best = us;
    }
    hr_batch_free(b);
    return best;
}

static void pset(void) {
    enum { Q = 10000 };
    static uint64_t small[10000], big[100000], q[Q];
    fill("p10k", small, 10000, false);
    fill("p100k", big, 100000, false);
    for (size_t i = 0; i < Q; i++) q[i] = i % 2 ? small[i] : rnd();
    printf("pset_test of %d vs a 10000-member set: %.3f us/member\n", Q, pset_test_us("p10k", q, Q));
    for (size_t i = 0; i < Q; i++) q[i] = i % 2 ? big[i * 7] : rnd();
    printf("pset_test of %d vs a 100000-member set: %.3f us/member\n", Q, pset_test_us("p100k", q, Q));

    fill("z10k", small, 10000, true);
    hr_batch *b = hr_batch_new();
    double best = 1e30;
    char m[8];
    for (int r = 0; r < 5; r++) {
        hr_batch_reset(b);
        uint64_t t0 = hr_mono_ns();
        for (size_t i = 0; i < Q; i++) {
            uint64_t v = i % 2 ? small[i] : rnd();
            memcpy(m, &v, 8);
            hr_zscore(b, key("z10k"), hr_slice_of(m, 8));
        }
        run(b);
        double us = (double)(hr_mono_ns() - t0) / 1e3 / Q;
        if (us < best) best = us;
    }
    hr_batch_free(b);
    printf("%d zscore in one batch vs a 10000-member zset: %.3f us/member\n", Q, best);
}

/* Point writes and reads of small values in batches of 16, as a rating
 * upsert's sub-keys are: 1 M puts of random 40-byte keys, then 200 K gets
 * (half present): microseconds per put and per get, and the same gets again
 * after close and reopen (from SST files instead of the memtables). */
enum { KV_PUTS = 1000000 };

/* A random key of the kv mode, in k (96 bytes). */
static hr_slice kv_key(char *k) {
    uint64_t r = rnd();
    snprintf(k, 96, "{%s}:kv:%016llx:%016llx", tag, (unsigned long long)(r % KV_PUTS), (unsigned long long)r);
    return hr_slice_str(k);
}

static void kv(void) {
    enum { PUTS = KV_PUTS, GETS = 200000, B = 16 };
    hr_batch *b = hr_batch_new();
    char k[96];
    uint64_t t0 = hr_mono_ns();
    for (int i = 0; i < PUTS;) {
        hr_batch_reset(b);
        for (int j = 0; j < B; j++, i++)
            hr_put(b, kv_key(k), hr_slice_of("12345678", 8), 0);
        run(b);
    }
    printf("kv: %.2f us per put (%d, batches of %d)\n", (double)(hr_mono_ns() - t0) / 1e3 / PUTS, PUTS, B);
    for (int pass = 0; pass < 2; pass++) {
        t0 = hr_mono_ns();
        for (int i = 0; i < GETS;) {
            hr_batch_reset(b);
            for (int j = 0; j < B; j++, i++)
                hr_get(b, kv_key(k));
            run(b);
        }
        printf("kv: %.2f us per get (missing keys)%s\n", (double)(hr_mono_ns() - t0) / 1e3 / GETS,
               pass ? " after reopen" : "");
        if (pass == 0) {
            hr_store_close(S);
            open_store();
        }
    }
    hr_batch_free(b);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "tombstones") != 0 && strcmp(argv[2], "tombstones-disk") != 0 &&
                      strcmp(argv[2], "pset") != 0 && strcmp(argv[2], "kv") != 0)) {
        fprintf(stderr, "usage: store_micro URI tombstones|tombstones-disk|pset|kv\n");
        return 2;
    }
    if (strcmp(argv[2], "tombstones-disk") == 0) opts.zset_memory_bytes = 1; /* nothing fits */
    uri = argv[1];
    snprintf(tag, sizeof tag, "micro-%lx", (unsigned long)time(NULL) ^ (unsigned long)hr_mono_ns());
    open_store();
    if (strncmp(argv[2], "tombstones", 10) == 0) tombstones();
    else if (strcmp(argv[2], "kv") == 0) kv();
    else pset();
    hr_store_close(S);
    return 0;
}
