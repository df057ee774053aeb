/* store_micro.c — micro-benchmarks of store primitives through the public
 * interface (store.h), on either backend. Built by `make build/store_micro`;
 * figures in BENCHMARKS.md.
 *
 *   store_micro URI tombstones   top-20 descending read of a 5 000-member
 *                                sorted set: fresh, after 200 K score changes
 *                                (Zipf-like), and after close and reopen; on
 *                                RocksDB the set moves into memory after
 *                                5 000 changes (src/store/rocks/zset_memory.c)
 *   store_micro URI tombstones-disk   the same with the set kept on disk
 *                                (RocksDB: a memory budget too small for it),
 *                                as every set was before rocks/zset_memory.c
 *   store_micro URI pset         hr_pset_test of 10 000 members against sets
 *                                of 10 000 and 100 000 members, and the same
 *                                question as 10 000 hr_zscore in one batch
 *   store_micro URI fanout [N [T]]
 *                                fan-out: N time-list entries (default
 *                                4 500 000) written with hr_tladd in batches
 *                                of 1 000 by T threads (default 1); each
 *                                activity goes to 450 different lists out of
 *                                100 000 ("{u:N}:tl"), 20-byte members, an
 *                                expiry on every entry; prints entries/s
 *   store_micro URI zfanout [N [T]]
 *                                the same entries as hr_zadd (on Redis: one
 *                                pipelined ZADD each, the reference the
 *                                RocksDB time lists are measured against)
 *   store_micro URI kv           the cost of one point write and one point
 *                                read of a missing key, in batches of 16
 *                                (1 M random 40-byte keys): what every
 *                                sub-key of a batch pays
 *   store_micro URI ranges       hr_zcard + hr_zrange of 100 short sorted sets
 *                                in one batch (200 K sets of 1..8 members
 *                                written over four reopens, some empty): what
 *                                friends-reads pays per reader list
 *
 * Keys are prefixed with a random tag, so runs on a shared cluster do not
 * collide; RocksDB runs want a fresh directory. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
    printf("200K score changes (one hr_zincr a batch): %.2f us each\n",
           (double)(hr_mono_ns() - t0) / 1e3 / 200000);
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
    for (size_t i = 0; i < Q; i++)
        q[i] = i % 2 ? small[i] : rnd();
    printf("pset_test of %d vs a 10000-member set: %.3f us/member\n", Q, pset_test_us("p10k", q, Q));
    for (size_t i = 0; i < Q; i++)
        q[i] = i % 2 ? big[i * 7] : rnd();
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

/* Fan-out ------------------------------------------------------------------- */

enum { USERS = 100000, FOLLOWERS = 450, BATCH = 1000, STRIDE = 211 /* prime, coprime to USERS */ };

typedef struct fan {
    long from, to; /* entries [from, to) of the run */
    bool zset;     /* hr_zadd instead of hr_tladd */
    double cpu_s;  /* out: this writer thread's CPU time */
} fan;

/* Entry e of the run: activity e / 450, sent to its actor's e % 450-th
 * follower; followers of one activity are 450 different users. */
static char run_id[8];

static void *fan_run(void *arg) {
    fan *f = arg;
    hr_batch *b = hr_batch_new();
    char k[40], m[24];
    int64_t t0 = INT64_C(1700000000000), expire = hr_now_ms() + INT64_C(30) * 86400 * 1000;
    for (long e = f->from; e < f->to;) {
        hr_batch_reset(b);
        for (int n = 0; n < BATCH && e < f->to; n++, e++) {
            long act = e / FOLLOWERS, actor = (act * 7919) % USERS;
            long user = (actor + 1 + (e % FOLLOWERS) * STRIDE) % USERS;
            snprintf(k, sizeof k, "{u:%ld}:tl%s", user, run_id); /* run_id: runs on a shared cluster differ */
            snprintf(m, sizeof m, "a:%018ld", act);              /* 20 bytes, as an activity id */
            if (f->zset)
                hr_zadd(b, hr_slice_str(k), (double)(t0 + act), hr_slice_of(m, 20));
            else
                hr_tladd(b, hr_slice_str(k), t0 + act, hr_slice_of(m, 20), expire);
        }
        run(b);
        for (size_t i = 0; i < hr_batch_len(b); i++)
            if (hr_batch_result(b, i)->rc != HR_OK) {
                fprintf(stderr, "store_micro: entry failed: %s\n", hr_errname(hr_batch_result(b, i)->rc));
                exit(1);
            }
    }
    hr_batch_free(b);
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    f->cpu_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    return NULL;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static void fanout(long entries, int threads, bool zset) {
    fan f[16];
    pthread_t t[16];
    snprintf(run_id, sizeof run_id, ".%04x", (unsigned)(hr_mono_ns() & 0xffff));
    uint64_t t0 = hr_mono_ns();
    double c0 = cpu_s();
    for (int i = 0; i < threads; i++) {
        f[i] = (fan){entries * i / threads, entries * (i + 1) / threads, zset, 0};
        pthread_create(&t[i], NULL, fan_run, &f[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double s = (double)(hr_mono_ns() - t0) / 1e9, cpu = cpu_s() - c0, writers = 0;
    for (int i = 0; i < threads; i++)
        writers += f[i].cpu_s;
    printf("%s %s: %ld entries, %d thread(s), batches of %d: %.2f s, %.0f entries/s "
           "(CPU per entry: %.2f us in the writer threads, %.2f us in the whole process)\n",
           hr_store_caps_of(S)->kind, zset ? "zadd" : "tladd", entries, threads, BATCH, s,
           (double)entries / s, writers * 1e6 / (double)entries, cpu * 1e6 / (double)entries);
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

/* Range reads of many short sorted sets in one batch, as friends-reads reads
 * the reader lists of a feed's 100 URLs: 200 K sets of 1..8 members, written
 * in four rounds with a close and reopen after each (so each set is spread
 * over several SST files, as reads accumulated over days are; some sets stay
 * empty, as most URLs of a feed may), then batches
 * of 100 hr_zrange (32 members at most) of random sets, and the same sets'
 * hr_zcard: microseconds per range read. */
static void ranges(void) {
    enum { SETS = 200000, ROUNDS = 4, PER_BATCH = 100, READS = 100000 };
    hr_batch *b = hr_batch_new();
    char k[96], m[32];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < SETS;) {
            hr_batch_reset(b);
            for (int j = 0; j < 1000; j++, i++) {
                snprintf(k, sizeof k, "{%s}:r:%d", tag, i);
                for (int n = 0; n < ((i >> round) & 3) % 3; n++) { /* 0..2 a round: 0..8 in all */
                    snprintf(m, sizeof m, "u%d.%d", round, n);
                    hr_zadd(b, hr_slice_str(k), round * 10 + n, hr_slice_str(m));
                }
            }
            run(b);
        }
        hr_store_close(S);
        open_store();
    }
    hr_zrange_spec sp = hr_zrange_all(false, 32);
    uint64_t t0 = hr_mono_ns();
    size_t entries = 0;
    for (int i = 0; i < READS;) {
        hr_batch_reset(b);
        for (int j = 0; j < PER_BATCH; j++, i++) {
            snprintf(k, sizeof k, "{%s}:r:%d", tag, (int)(rnd() % SETS));
            hr_zcard(b, hr_slice_str(k));
            hr_zrange(b, hr_slice_str(k), &sp);
        }
        run(b);
        for (size_t j = 1; j < hr_batch_len(b); j += 2)
            entries += hr_batch_result(b, j)->n_entries;
    }
    printf("ranges: %.2f us per zcard + zrange of a short set (%.2f members on average, batches of %d, "
           "%d rounds of writes)\n",
           (double)(hr_mono_ns() - t0) / 1e3 / READS, (double)entries / READS, PER_BATCH, ROUNDS);
    hr_batch_free(b);
}

int main(int argc, char **argv) {
    bool fan_mode = argc >= 3 && (strcmp(argv[2], "fanout") == 0 || strcmp(argv[2], "zfanout") == 0);
    bool one_word = argc == 3 && (strcmp(argv[2], "tombstones") == 0 ||
                                  strcmp(argv[2], "tombstones-disk") == 0 || strcmp(argv[2], "pset") == 0 ||
                                  strcmp(argv[2], "kv") == 0 || strcmp(argv[2], "ranges") == 0);
    if (!one_word && !(fan_mode && argc <= 5)) {
        fprintf(stderr, "usage: store_micro URI tombstones|tombstones-disk|pset|kv|ranges\n"
                        "       store_micro URI fanout|zfanout [ENTRIES [THREADS]]\n");
        return 2;
    }
    uri = argv[1];
    static char tuned[4096];
    if (strcmp(argv[2], "tombstones-disk") == 0 && strncmp(uri, "rocksdb:", 8) == 0) {
        snprintf(tuned, sizeof tuned, "%s%soff=rankings", uri,
                 strchr(uri, '?') ? "&" : "?"); /* nothing fits */
        uri = tuned;
    }
    snprintf(tag, sizeof tag, "micro-%lx", (unsigned long)time(NULL) ^ (unsigned long)hr_mono_ns());
    open_store();
    if (fan_mode) {
        long n = argc > 3 ? atol(argv[3]) : 4500000;
        int threads = argc > 4 ? atoi(argv[4]) : 1;
        if (n < 1 || threads < 1 || threads > 16) {
            fprintf(stderr, "store_micro: ENTRIES >= 1, THREADS 1..16\n");
            return 2;
        }
        fanout(n, threads, argv[2][0] == 'z');
    } else if (strncmp(argv[2], "tombstones", 10) == 0) {
        tombstones();
    } else if (strcmp(argv[2], "kv") == 0) {
        kv();
    } else if (strcmp(argv[2], "ranges") == 0) {
        ranges();
    } else {
        pset();
    }
    hr_store_close(S);
    return 0;
}
