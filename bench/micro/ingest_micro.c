/* ingest_micro.c — how fast could a fan-out tier write timeline entries on
 * this host if it sorted them in memory and handed RocksDB finished files,
 * instead of writing them through the memtables as herald does? The
 * question "Time lists: where the time goes" in BENCHMARKS.md leaves open
 * for issue 3's 1 M entries/s. RocksDB's C API directly, not herald's store:
 * the store has no such path (yet), and the figure is the ceiling of one.
 *
 *   ingest_micro DIR memtable|ingest|buckets [ENTRIES [THREADS [CHUNK [SIDE]]]]
 *
 * Both modes write the same ENTRIES (default 20 000 000) entries, made as
 * store_micro's fanout makes them: each activity goes to 450 of 100 000
 * lists. A key is what rocks/timelist.c writes: the list's 8-byte hash, the
 * 8-byte inverted time, a 20-byte member; the value an 8-byte expiry. They
 * go into one RocksDB with the time lists' options (LZ4, leveled with
 * dynamic level sizes, 2 background jobs, a hashed memtable of 256 MB keyed
 * by the list hash, prefix blooms):
 *   memtable: each of THREADS (default 2) writes batches of 1 000 puts,
 *             WAL on, as herald's fan-out does;
 *   ingest:   each thread sorts CHUNK entries (default 2 000 000) in memory
 *             (qsort), writes them into one table file and ingests it
 *             (moved, not copied). A tier would be durable through its
 *             jobs: a job is acknowledged only once its entries' file is
 *             ingested;
 *   buckets:  the same, ordered as a tier's per-list buffers would hold
 *             them: a job's entries reach each list in time order, so a
 *             chunk needs only its lists ordered (a counting sort by each
 *             list's rank in key order, then each list newest first).
 * SIDE (default 0): meanwhile, one more thread writes SIDE entries a second
 * through the memtable into the same column family, 100 a batch, at random
 * lists and the newest times: what else writes the time lists (actors'
 * feeds, group feeds, trims). A file whose keys overlap the memtable makes
 * RocksDB flush the memtable before it ingests the file.
 * Prints entries/s when the writes return, and when the flushes and
 * compactions they caused are done: the second is the one to compare, as
 * the work is only moved to the background otherwise. DIR must not exist. */
#include <inttypes.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { LISTS = 100000, FANOUT = 450, KEY = 36, VAL = 8, PUT_BATCH = 1000 };

typedef struct entry {
    char key[KEY];
    char val[VAL];
} entry;

static rocksdb_t *db;
static rocksdb_options_t *opts;
static const char *dir;
static int ingest_mode;           /* 1 ingest, 2 buckets */
static uint32_t list_rank[LISTS]; /* buckets: the order of the lists' keys */
static long chunk = 2000000;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, char *err) {
    fprintf(stderr, "ingest_micro: %s: %s\n", what, err ? err : "failed");
    exit(1);
}

static void put_be64(char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (char)(v & 0xff);
}

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser: the list's hash */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Entry number n: activity n / FANOUT, to the (n % FANOUT)-th of its lists;
 * returns the list. */
static uint32_t make_entry(long n, entry *e) {
    uint64_t activity = (uint64_t)(n / FANOUT);
    uint64_t list = (activity * 7919 + (uint64_t)(n % FANOUT) * 222) % LISTS; /* 450 distinct lists */
    put_be64(e->key, mix(list + 1));
    put_be64(e->key + 8, UINT64_MAX - (1700000000000ULL + activity));
    snprintf(e->key + 16, 21, "a%019" PRIu64, activity);
    put_be64(e->val, 1700000000000ULL + 60ULL * 86400000ULL);
    return (uint32_t)list;
}

typedef struct ranked {
    uint64_t hash;
    uint32_t list;
} ranked;

static int by_hash(const void *a, const void *b) {
    uint64_t x = ((const ranked *)a)->hash, y = ((const ranked *)b)->hash;
    return (x > y) - (x < y);
}

/* buckets: each list's place in key order (by its hash, the key's first
 * 8 bytes, big-endian). */
static void rank_lists(void) {
    static ranked r[LISTS];
    for (uint32_t l = 0; l < LISTS; l++)
        r[l] = (ranked){mix(l + 1), l};
    qsort(r, LISTS, sizeof r[0], by_hash);
    for (uint32_t i = 0; i < LISTS; i++)
        list_rank[r[i].list] = i;
}

/* buckets: src[0..k) (whose lists are in lists[]) into dst in key order: by
 * list rank, and within a list newest first (the reverse of arrival). */
static void bucket_sort(const entry *src, const uint32_t *lists, long k, entry *dst) {
    static __thread long start[LISTS + 1];
    memset(start, 0, sizeof start);
    for (long i = 0; i < k; i++)
        start[list_rank[lists[i]] + 1]++;
    for (long r = 0; r < LISTS; r++)
        start[r + 1] += start[r];
    /* fill each list's range from its end, so the last arrival comes first */
    static __thread long end[LISTS];
    for (long r = 0; r < LISTS; r++)
        end[r] = start[r + 1];
    for (long i = 0; i < k; i++)
        dst[--end[list_rank[lists[i]]]] = src[i];
}

static int by_key(const void *a, const void *b) {
    return memcmp(a, b, KEY);
}

typedef struct worker {
    long from, to;
    int id;
} worker;

static void write_memtable(const worker *w) {
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    entry e;
    for (long n = w->from; n < w->to;) {
        rocksdb_writebatch_clear(b);
        for (int i = 0; i < PUT_BATCH && n < w->to; i++, n++) {
            make_entry(n, &e);
            rocksdb_writebatch_put(b, e.key, KEY, e.val, VAL);
        }
        char *err = NULL;
        rocksdb_write(db, wo, b, &err);
        if (err) die("write", err);
    }
    rocksdb_writebatch_destroy(b);
    rocksdb_writeoptions_destroy(wo);
}

static void write_ingested(const worker *w) {
    entry *buf = malloc((size_t)chunk * sizeof *buf), *sorted = buf;
    uint32_t *lists = NULL;
    if (ingest_mode == 2) {
        sorted = malloc((size_t)chunk * sizeof *sorted);
        lists = malloc((size_t)chunk * sizeof *lists);
    }
    if (!buf || !sorted || (ingest_mode == 2 && !lists)) die("malloc", NULL);
    rocksdb_envoptions_t *eo = rocksdb_envoptions_create();
    rocksdb_ingestexternalfileoptions_t *io = rocksdb_ingestexternalfileoptions_create();
    rocksdb_ingestexternalfileoptions_set_move_files(io, 1);
    int file = 0;
    for (long n = w->from; n < w->to;) {
        long k = 0;
        for (; k < chunk && n < w->to; k++, n++) {
            uint32_t l = make_entry(n, &buf[k]);
            if (lists) lists[k] = l;
        }
        if (ingest_mode == 2)
            bucket_sort(buf, lists, k, sorted);
        else
            qsort(buf, (size_t)k, sizeof *buf, by_key);
        char path[512];
        snprintf(path, sizeof path, "%s.t%d.%d.sst", dir, w->id, file++);
        rocksdb_sstfilewriter_t *sw = rocksdb_sstfilewriter_create(eo, opts);
        char *err = NULL;
        rocksdb_sstfilewriter_open(sw, path, &err);
        if (err) die("sst open", err);
        for (long i = 0; i < k; i++) {
            if (i && memcmp(sorted[i].key, sorted[i - 1].key, KEY) <= 0) { /* a file's keys ascend */
                if (memcmp(sorted[i].key, sorted[i - 1].key, KEY) == 0) continue;
                die("order", "a chunk's keys are not in order");
            }
            rocksdb_sstfilewriter_put(sw, sorted[i].key, KEY, sorted[i].val, VAL, &err);
            if (err) die("sst put", err);
        }
        rocksdb_sstfilewriter_finish(sw, &err);
        if (err) die("sst finish", err);
        rocksdb_sstfilewriter_destroy(sw);
        const char *files[1] = {path};
        rocksdb_ingest_external_file(db, files, 1, io, &err);
        if (err) die("ingest", err);
    }
    rocksdb_ingestexternalfileoptions_destroy(io);
    rocksdb_envoptions_destroy(eo);
    if (sorted != buf) free(sorted);
    free(lists);
    free(buf);
}

/* SIDE: entries a second through the memtable until `side_stop`. */
static long side_rate;
static volatile int side_stop;
static long side_written;

static void *side_writer(void *arg) {
    (void)arg;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    entry e;
    double start = now_s();
    uint64_t r = 88172645463325252ULL;
    while (!side_stop) {
        rocksdb_writebatch_clear(b);
        for (int i = 0; i < 100; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            make_entry((long)(r % 1000000000), &e);
            put_be64(e.key + 8, UINT64_MAX - (1800000000000ULL + (uint64_t)side_written + (uint64_t)i));
            rocksdb_writebatch_put(b, e.key, KEY, e.val, VAL);
        }
        char *err = NULL;
        rocksdb_write(db, wo, b, &err);
        if (err) die("side write", err);
        side_written += 100;
        double ahead = (double)side_written / (double)side_rate - (now_s() - start);
        if (ahead > 0) usleep((useconds_t)(ahead * 1e6));
    }
    rocksdb_writebatch_destroy(b);
    rocksdb_writeoptions_destroy(wo);
    return NULL;
}

static void *run(void *arg) {
    if (ingest_mode)
        write_ingested(arg);
    else
        write_memtable(arg);
    return NULL;
}

static uint64_t prop(const char *name) {
    uint64_t v = 0;
    return rocksdb_property_int(db, name, &v) == 0 ? v : 0;
}

/* Wait until no flush or compaction is pending or running. */
static void settle(void) {
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *err = NULL;
    rocksdb_flush(db, fo, &err);
    if (err) die("flush", err);
    rocksdb_flushoptions_destroy(fo);
    while (prop("rocksdb.compaction-pending") || prop("rocksdb.num-running-compactions") ||
           prop("rocksdb.num-running-flushes") || prop("rocksdb.mem-table-flush-pending"))
        usleep(100000);
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[2], "memtable") != 0 && strcmp(argv[2], "ingest") != 0 &&
                     strcmp(argv[2], "buckets") != 0)) {
        fprintf(stderr,
                "usage: ingest_micro DIR memtable|ingest|buckets [ENTRIES [THREADS [CHUNK [SIDE]]]]\n");
        return 2;
    }
    dir = argv[1];
    ingest_mode = strcmp(argv[2], "ingest") == 0 ? 1 : strcmp(argv[2], "buckets") == 0 ? 2 : 0;
    if (ingest_mode == 2) rank_lists();
    long entries = argc > 3 ? atol(argv[3]) : 20000000;
    int threads = argc > 4 ? atoi(argv[4]) : 2;
    if (argc > 5) chunk = atol(argv[5]);
    if (argc > 6) side_rate = atol(argv[6]);
    if (entries < 1 || threads < 1 || threads > 16 || chunk < 1 || side_rate < 0) {
        fprintf(stderr, "ingest_micro: ENTRIES, THREADS (1..16) and CHUNK must be positive, SIDE >= 0\n");
        return 2;
    }

    opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(opts, 1);
    rocksdb_options_set_error_if_exists(opts, 1);
    rocksdb_options_increase_parallelism(opts, 2);
    rocksdb_options_set_max_background_jobs(opts, 2);
    rocksdb_options_set_bytes_per_sync(opts, 1 << 20);
    rocksdb_options_set_level_compaction_dynamic_level_bytes(opts, 1);
    rocksdb_options_set_compression(opts, rocksdb_lz4_compression);
    rocksdb_options_set_allow_concurrent_memtable_write(opts, 0);
    rocksdb_options_set_max_total_wal_size(opts, (uint64_t)512 << 20);
    rocksdb_options_set_prefix_extractor(opts, rocksdb_slicetransform_create_fixed_prefix(8));
    rocksdb_options_set_hash_link_list_rep(opts, 1000003);
    rocksdb_options_set_write_buffer_size(opts, (size_t)256 << 20);
    rocksdb_options_set_max_write_buffer_number(opts, 3);
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(opts, 0);
    rocksdb_block_based_table_options_t *t = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_block_based_options_set_whole_key_filtering(t, 0);
    rocksdb_block_based_options_set_format_version(t, 5);
    rocksdb_options_set_block_based_table_factory(opts, t);
    char *err = NULL;
    db = rocksdb_open(opts, dir, &err);
    if (err) die("open", err);

    worker w[16];
    pthread_t th[16], side;
    double t0 = now_s();
    if (side_rate) pthread_create(&side, NULL, side_writer, NULL);
    for (int i = 0; i < threads; i++) {
        /* whole activities per thread, as a fan-out job is */
        long per = (entries / FANOUT + threads - 1) / threads * FANOUT;
        w[i] = (worker){.from = per * i, .to = per * (i + 1) < entries ? per * (i + 1) : entries, .id = i};
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double written = now_s() - t0;
    if (side_rate) {
        side_stop = 1;
        pthread_join(side, NULL);
    }
    settle();
    double settled = now_s() - t0;
    printf("ingest_micro %s: %ld entries, %d thread(s)%s: written in %.1f s (%.0f entries/s), "
           "settled in %.1f s (%.0f entries/s); L0 files %" PRIu64 ", live data %.2f GB\n",
           argv[2], entries, threads, ingest_mode ? "" : ", batches of 1000", written,
           (double)entries / written, settled, (double)entries / settled, prop("rocksdb.num-files-at-level0"),
           (double)prop("rocksdb.live-sst-files-size") / 1e9);
    if (ingest_mode) printf("  (chunks of %ld entries a file)\n", chunk);
    if (side_rate)
        printf("  (and %ld entries through the memtable beside them, %.0f/s)\n", side_written,
               (double)side_written / written);
    rocksdb_close(db);
    rocksdb_block_based_options_destroy(t);
    rocksdb_options_destroy(opts);
    return 0;
}
