/* rocks/engine.c — the embedded storage backend: store.h's primitives on RocksDB.
 *
 * Workload: every HTTP request runs one or a few batches here, straight from
 * the I/O threads, so a batch must cost microseconds: reads grouped into
 * MultiGets, writes into one WriteBatch, no scans on the hot paths (a counter
 * PUT, an activity write, a timeline page). Values are small (ids, JSON
 * bodies); collections range from a handful of members to millions.
 *
 * LAYOUT. Eight column families. The encodings follow Apache Kvrocks: one
 * metadata record per key, and collections whose members live in sub-keys
 * that carry the collection's version. Integers are big-endian, fixed width.
 *
 * "default" — metadata, one record per key, the key as given (only ever
 * read by key, never iterated: its memtable is hashed, meta_cf_options):
 *
 *   key:   | user key (1..1024 bytes) |
 *   value: +------+-----------+-------------------------------------------+
 *          | type | expire_at | type-specific                              |
 *          | u8   | i64       |                                            |
 *          +------+-----------+-------------------------------------------+
 *     string    1                value bytes (inline: a get is one read)
 *     counter   2                i64 value (inline; rocks/values.c says why a Put
 *                                under the stripe lock and not a merge operand)
 *     zset      3                u64 version | u64 size [| u8 flags: 1 = order
 *                                kept in memory, rocks/zset_memory.c; 2 = inline;
 *                                4 = a set of times, its order in "timelists",
 *                                rocks/zset_times.c; absent = 0] [| with flag 2, the entries:
 *                                (u64 score (encoded) | u16 len | member)...
 *                                in (score, member) order; rocks/zset_inline.c]
 *     distinct  4                u64 version | u64 size | u8 mode (0 exact, 1 sketch)
 *                                | i64 ttl_ms | i64 width_ms | i64 oldest_ms
 *     pset      5                u64 version | u64 size | u64 seed | i64 soonest
 *                                | i64 latest | u64 forever | u8 bits
 *
 *   expire_at is ms since the epoch; the key is alive while now <= expire_at
 *   (redis' PEXPIREAT); 0 never expires. A packed set also ends when its last
 *   member expires: when forever (members that never expire) is 0 and
 *   now >= latest (the largest member expiry). size counts stored entries,
 *   soonest bounds their non-zero expiries from below (rocks/pset.c).
 *
 * Every sub-key starts with the same prefix, which names the collection:
 *
 *   prefix:  +-----------+----------------------+-------------+
 *            | key len   | user key             | version     |
 *            | u16       |                      | u64         |
 *            +-----------+----------------------+-------------+
 *
 * "subkeys" — members of sorted sets and of exact distinct sets:
 *
 *   key:   | prefix | member bytes |          value: | u64 score (encoded) |
 *
 *   and the chunks of packed sets, 2^bits of them (rocks/pset.c):
 *
 *   key:   | prefix | u32 chunk |
 *   value: +------+-------------------------+----------------------------+
 *          | form | n hashes, u64, ascending | n expire_at, i64 (form 'E') |
 *          | u8   | h = mix(member ^ seed)   | 0: never; absent: form 'P' |
 *          +------+-------------------------+----------------------------+
 *
 *   A member lives in the chunk numbered by the top `bits` bits of h; mix is
 *   a bijection, so h stands for the member exactly. An empty chunk has no
 *   key.
 *
 * "zindex" — the same members ordered for range reads:
 *
 *   key:   | prefix | u64 score (encoded) | member bytes |    value: empty
 *
 *   Scores are encoded so that unsigned byte order is double order (sign bit
 *   set for positives, all bits flipped for negatives; rocks/codec.c), so
 *   one seek + next/prev walks (score, member) order. An exact distinct set
 *   is a sorted set whose score is each member's last-add time in ms. A
 *   sorted set whose order moved into memory (a ranking re-scored on every
 *   vote; rocks/zset_memory.c) has no keys here: its member records, in
 *   "memsetmembers", are its record.
 *   Nor has a set of times (HR_DECL_TIME_SET): its order is a time list named
 *   after its prefix, in "timelists", and its member records are in
 *   "timesetmembers" (rocks/zset_times.c).
 *
 * "sketch" — distinct counters in sketch mode (merge operator: register max):
 *
 *   key:   | prefix | 'B' | u64 bucket |     value: HLL sketch (common/hll.h)
 *   key:   | prefix | 'U' |                value: i64 lo | i64 hi | HLL sketch
 *                                           (cached union of buckets [lo, hi))
 *
 * "timelists" — time-list entries, one key each, no metadata (drawn in
 * rocks/timelist.c):
 *
 *   key:   | u64 list hash | u16 len | list key | u64 inverted time | member (escaped) |
 *   value: | i64 expire_at |
 *
 * "timesetmembers" — the member records of sets of times (HR_DECL_TIME_SET,
 *   rocks/zset_times.c), in the layout of "subkeys" but in a hashed memtable:
 *
 *   key:   | prefix | member bytes |          value: | u64 score (encoded) |
 *
 * "memsetmembers" — the member records of sorted sets kept in memory
 *   (ZF_MEM, rocks/zset_memory.c), in the layout of "subkeys" but in a vector
 *   memtable (mem_set_members_cf_options):
 *
 *   key:   | prefix | member bytes |          value: | u64 score (encoded) |
 *
 * "queues" — queue jobs, no metadata (rocks/queue.c; leases in memory):
 *
 *   key:   | u16 len | queue key | u64 seq |      value: | i64 pushed_ms | payload |
 *
 * Versions: a collection gets a fresh version when it is created (and a
 * distinct counter again when it turns into sketches; a packed set keeps
 * its version when it doubles its chunks, rewriting them in place).
 * Deleting, overwriting or expiring it touches only the metadata: its
 * sub-keys become unreachable (no record names their version) and
 * rocks/filter.c's compaction filter reclaims them. So hr_del of a million-member set is one write. Versions
 * count up from the clock in microseconds x 1024 at open, so they increase
 * across restarts unless the wall clock steps back (Kvrocks makes the same
 * bet).
 *
 * BATCHES. exec runs in four steps:
 *
 *   1. lock the stripes of every key the batch writes (below);
 *   2. take a snapshot: every read of the batch sees the DB at one point, so
 *      concurrent batches see each other's writes all or nothing;
 *   3. prefetch: one MultiGet of every key's metadata, then one of the
 *      sub-keys the ops will read (members, sketch buckets, packed-set
 *      chunks, jobs to ack) — a batch of N gets or zscores, or of pset
 *      tests on N sets, costs one or two MultiGets, never N Gets (and
 *      metadata records and packed-set chunks come from rocks/view.c's
 *      cache when the rules there allow);
 *   4. run the ops in order against the batch's view (rocks/view.c: its own
 *      writes over the snapshot), write the packed-set chunks the ops
 *      changed (once each, however many ops changed one) and commit all
 *      writes in one WriteBatch (WAL on; fsynced with opts->sync). Every
 *      batch is atomic, with or without HR_EXEC_ATOMIC. The WriteBatch is
 *      indexed (a WriteBatchWithIndex, whose puts cost ~50x more) only when
 *      an op that may iterate follows a write, so that its range read sees
 *      the write. Still under the locks, the record cache and the sorted
 *      sets kept in memory then take the batch's changes; after the commit,
 *      the queues' in-memory state takes them too (rocks/queue.c).
 *
 * LOCKS. hr_incr, hr_zadd (is the member new? the size), hr_dadd (is the
 * member new? the count), hr_pset_add and hr_pset_rem (is the member new?
 * the size) read, decide and write. Two batches doing that on one key at
 * once would both read the old state, so a batch holds a mutex per key it
 * writes from before its reads until after its commit. Keys map to
 * 1024 stripes by hash; a batch locks its stripes in ascending order, so two
 * batches never wait on each other in a cycle. Read-only batches take no
 * lock. Queue ops (hr_qinfo too) hold their queue's stripe, which orders
 * the batches of one queue (rocks/queue.c); time-list adds and removes are
 * blind and take none, hr_tltrim takes its list's.
 *
 * TTL. Reads compare expire_at with the batch's clock (distinct counters with
 * the op's now_ms) and treat expired keys as missing; the compaction filters
 * (rocks/filter.c) remove expired records and every sub-key no live record
 * names.
 *
 * NOTE: reverse range reads walk
 * the memtable's skiplist backwards, several times slower than forward ones
 * (DESIGN.md: store newest-first orders inverted, so reads go forward).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "store/rocks/cache.h"
#include "store/rocks/distinct.h"
#include "store/rocks/filter.h"
#include "store/rocks/pset.h"
#include "store/rocks/queue.h"
#include "store/rocks/timelist.h"
#include "store/rocks/values.h"
#include "store/rocks/zset.h"

static const char *const cf_names[CF_COUNT_] = {"default",   "subkeys", "zindex",         "sketch",
                                                "timelists", "queues",  "timesetmembers", "memsetmembers"};

/* Opening ------------------------------------------------------------------- */

/* mkdir -p; 0 or -1 with errno. path is borrowed. */
static int mkdir_p(const char *path) {
    char *p = hr_xstrdup(path);
    int rc = 0;
    for (char *s = p + 1; rc == 0; s++) {
        if (*s != '/' && *s != '\0') continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) rc = -1;
        *s = c;
        if (c == '\0') break;
    }
    free(p);
    return rc;
}

/* "zindex" is only ever scanned, and a scan never leaves one collection: its
 * bounds are the collection's prefix (rocks/zset.c, zs_scan). A seek into a
 * short set (a URL's one or two readers) still positions an iterator in every
 * level and L0 file, which is most of a small range read's cost (perf of
 * friends-reads on tail feeds). With the collection prefix as
 * the prefix extractor, each file's bloom filter holds the prefixes it has,
 * and a seek skips the files without the collection. The prefix is the
 * sub-key's first 2 + key length + 8 bytes (rocks/engine.c, LAYOUT). Keys too short
 * to hold one (none are written) fall outside the domain: seeks to them read
 * every file, as before. */
static char *zx_prefix(void *state, const char *key, size_t len, size_t *plen) {
    (void)state;
    (void)len;
    *plen = 2 + (((size_t)(unsigned char)key[0] << 8) | (unsigned char)key[1]) + 8;
    return (char *)key;
}

static unsigned char zx_in_domain(void *state, const char *key, size_t len) {
    (void)state;
    return len >= 2 && len >= 2 + (((size_t)(unsigned char)key[0] << 8) | (unsigned char)key[1]) + 8;
}

static unsigned char zx_in_range(void *state, const char *key, size_t len) {
    (void)state, (void)key, (void)len;
    return 0; /* unused by RocksDB since 6.x */
}

static void zx_free(void *state) {
    (void)state; /* stateless; RocksDB calls this whatever we pass */
}

static const char *zx_name(void *state) {
    (void)state;
    return "herald.collection_prefix.1"; /* recorded in each SST: change with the encoding */
}

/* The collection prefix as o's prefix extractor (o owns it). */
static void set_collection_prefix(rocksdb_options_t *o) {
    rocksdb_options_set_prefix_extractor(
        o, rocksdb_slicetransform_create(NULL, zx_free, zx_prefix, zx_in_domain, zx_in_range, zx_name));
}

static void zindex_cf_options(rocksdb_options_t *o, rocksdb_cache_t *cache) {
    set_collection_prefix(o);
    /* Prefixes only: nobody looks up an index key by itself, and one filter
     * entry per collection instead of one per member keeps the filters small. */
    rocks_prefix_bloom_tables(o, cache);
}

/* The metadata records: a hashed memtable in which each key is its own
 * bucket (the whole key is the prefix), so that writing a record is a hash
 * and a push at the head of its bucket instead of a walk down a skiplist of
 * every record the memtable holds. Nothing iterates over metadata; every
 * read is a Get or a MultiGet, which a hashed memtable answers from the
 * bucket. The price is at flush, where RocksDB sorts a copy of the memtable
 * (in the background), which loads of graphs and reads repay (docs/DESIGN.md,
 * "Measured decisions"). */
#define META_BUCKETS 1000003 /* 8 MB per memtable */
static void meta_cf_options(rocksdb_options_t *o) {
    rocksdb_options_set_prefix_extractor(o, rocksdb_slicetransform_create_noop());
    rocksdb_options_set_hash_link_list_rep(o, META_BUCKETS);
}

/* The member records of sets of times (rocks/zset_times.c): a hashed memtable with
 * the collection prefix as its key, so that a write goes into its set's own
 * short bucket instead of a random place in a skiplist, which rating upserts
 * repay (docs/DESIGN.md, "Measured decisions"). Lookups keep the whole-key blooms of
 * the tables the DB's options give every column family: a new member's
 * lookup, which misses, reads no block. */
#define TIME_SET_MEMBER_BUCKETS 1000003 /* 8 MB per memtable */
static void time_set_members_cf_options(rocksdb_options_t *o) {
    set_collection_prefix(o);
    rocksdb_options_set_hash_link_list_rep(o, TIME_SET_MEMBER_BUCKETS);
}

/* The member records of sets kept in memory (rocks/zset_memory.c): written on
 * every score change (each vote writes a ranking's), read only by a scan
 * when the set is built, never by key: the sets' reads are answered from
 * memory. So their memtable is a vector: a write appends a pointer, and a
 * flush sorts them once, where a skiplist paid some twenty cache misses
 * per write. A vector's reads sort a copy of it, and a build is such a
 * read: a build happens at a set's first use after open, when the memtable
 * is empty (RocksDB flushes what it recovers from the log), or when a set
 * moves into memory, once (docs/DESIGN.md, "Rankings kept in memory"). No
 * memtable bloom: nothing looks a record up. */
static void mem_set_members_cf_options(rocksdb_options_t *o) {
    rocksdb_options_set_memtable_vector_rep(o);
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(o, 0);
}

void rocks_prefix_bloom_tables(rocksdb_options_t *o, rocksdb_cache_t *cache) {
    rocksdb_block_based_table_options_t *t = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(t, cache);
    rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_block_based_options_set_whole_key_filtering(t, 0);
    rocksdb_block_based_options_set_format_version(t, 5);
    rocksdb_options_set_block_based_table_factory(o, t);
    rocksdb_block_based_options_destroy(t);
}

/* Options for the DB and for each column family. compression is a
 * rocksdb_*_compression constant. The filter factories and the merge operator
 * are owned by the options (and then by the DB) once set. */
static rocksdb_options_t *make_options(rocks_store *s, int compression,
                                       rocksdb_options_t *cfopts[CF_COUNT_]) {
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_options_set_create_missing_column_families(o, 1);
    /* Two cores: flushes and compactions share two background threads. */
    rocksdb_options_increase_parallelism(o, 2);
    rocksdb_options_set_max_background_jobs(o, 2);
    rocksdb_options_set_bytes_per_sync(o, 1 << 20);
    rocksdb_options_set_level_compaction_dynamic_level_bytes(o, 1);
    rocksdb_options_set_compression(o, compression);
    /* The time lists' hashed memtable (rocks/timelist.c) cannot take concurrent
     * inserts; the group-commit leader inserts each write group's batches. */
    rocksdb_options_set_allow_concurrent_memtable_write(o, 0);
    /* A write-ahead log segment is deleted once every column family that
     * wrote into it has flushed. The time lists' memtables are large (256 MB,
     * rocks/timelist.c) and, where they fill slowly (ratings' lists, a quiet feed),
     * they kept gigabytes of log alive, all replayed at open: a stories store
     * took 25 s to reopen instead of 6. Past this much log, RocksDB flushes
     * the column families that hold the oldest segment. */
    rocksdb_options_set_max_total_wal_size(o, (uint64_t)512 << 20);
    /* Most point reads of a batch ask for keys that are not in the memtables
     * (a new member, a record flushed long ago); a bloom filter over each
     * memtable's keys answers those without a walk down its skiplist (not
     * in the time lists' memtable, whose buckets answer that: rocks/timelist.c).
     * bench/micro/store_micro kv shows the difference: a missing key's read
     * is several times cheaper with the filter. */
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(o, 0.05);
    rocksdb_options_set_memtable_whole_key_filtering(o, 1);

    rocksdb_block_based_table_options_t *t = rocksdb_block_based_options_create();
    rocksdb_cache_t *cache = s->blocks;
    rocksdb_block_based_options_set_block_cache(t, cache);
    /* ~10 bits per key: 1 % false positives, so a miss rarely reads a block.
     * The table options own the policy. */
    rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_block_based_options_set_format_version(t, 5);
    rocksdb_options_set_block_based_table_factory(o, t); /* copies t; shares the cache */
    rocksdb_block_based_options_destroy(t);

    for (int i = 0; i < CF_COUNT_; i++) {
        cfopts[i] = rocksdb_options_create_copy(o);
        switch (i) {
        case CF_META:
            meta_cf_options(cfopts[i]);
            rocksdb_options_set_compaction_filter_factory(cfopts[i], rocks_meta_filter_factory(s));
            break;
        case CF_TL: tl_cf_options(cfopts[i], cache, rocks_tl_filter_factory(s)); break;
        case CF_ZINDEX:
            zindex_cf_options(cfopts[i], cache);
            rocksdb_options_set_compaction_filter_factory(cfopts[i], rocks_sub_filter_factory(s, i));
            break;
        case CF_QUEUE: break; /* jobs go when acked */
        case CF_ZMEMM:
            mem_set_members_cf_options(cfopts[i]);
            rocksdb_options_set_compaction_filter_factory(cfopts[i], rocks_sub_filter_factory(s, i));
            break;
        case CF_ZTLM:
            time_set_members_cf_options(cfopts[i]);
            rocksdb_options_set_compaction_filter_factory(cfopts[i], rocks_sub_filter_factory(s, i));
            break;
        default:
            rocksdb_options_set_compaction_filter_factory(cfopts[i], rocks_sub_filter_factory(s, i));
            if (i == CF_SKETCH) rocksdb_options_set_merge_operator(cfopts[i], rocks_hll_merge_operator());
        }
    }
    return o;
}

static void free_options(rocksdb_options_t *o, rocksdb_options_t *cfopts[CF_COUNT_]) {
    for (int i = 0; i < CF_COUNT_; i++)
        rocksdb_options_destroy(cfopts[i]);
    rocksdb_options_destroy(o);
}

static void close_(hr_store *hs);

/* What open_ makes around the database: its locks and what it keeps in
 * memory, and s itself (close_, or open_ when the database fails to open). */
static void free_store(rocks_store *s) {
    for (size_t i = 0; i < ROCKS_STRIPES; i++)
        pthread_mutex_destroy(&s->stripes[i]);
    pthread_mutex_destroy(&s->decls_lock);
    pthread_mutex_destroy(&s->tl_bulk_lock);
    queues_free(s->queues);
    zreg_free(s->zreg);
    tlcache_free(s->tlc);
    rcache_free(s->meta_cache);
    rcache_free(s->chunk_cache);
    rcache_free(s->zset_cache);
    rcache_free(s->pset_images);
    pimg_log_free(s->pimg_log);
    pcols_free(s->pcols);
    vspares_free(s->views);
    if (s->blocks) rocksdb_cache_destroy(s->blocks);
    free(s);
}

static int open_(const char *uri, const hr_store_options *opts, hr_store **out, hr_err *err) {
    *out = NULL;
    /* rocksdb:PATH[?TUNING] (rocks/memory.h) */
    char path[PATH_MAX];
    const char *rest = uri + strlen(hr_rocks_backend.uri_prefix), *query = strchr(rest, '?');
    size_t path_len = query ? (size_t)(query - rest) : strlen(rest);
    if (path_len == 0) return hr_err_set(err, HR_EINVAL, "store '%s': expected rocksdb:PATH", uri);
    if (path_len >= sizeof path - 16) return hr_err_set(err, HR_EINVAL, "store '%s': path too long", uri);
    memcpy(path, rest, path_len);
    path[path_len] = '\0';
    rocks_tuning tune;
    int trc = rocks_tuning_parse(query ? query + 1 : NULL, opts->memory, &tune, err);
    if (trc != HR_OK) return trc;
    if (mkdir_p(path) != 0)
        return hr_err_set(err, HR_EIO, "rocksdb: cannot create %s: %s", path, strerror(errno));

    rocks_store *s = hr_xcalloc(1, sizeof *s);
    s->super.backend = &hr_rocks_backend;
    /* A database is there when RocksDB's CURRENT file is (hr_store_open
     * then requires its format record). */
    char current[PATH_MAX + 16];
    snprintf(current, sizeof current, "%s/CURRENT", path);
    s->super.existed = access(current, F_OK) == 0;
    for (size_t i = 0; i < ROCKS_STRIPES; i++)
        pthread_mutex_init(&s->stripes[i], NULL);
    pthread_mutex_init(&s->decls_lock, NULL);
    pthread_mutex_init(&s->tl_bulk_lock, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    atomic_init(&s->next_version, ((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u) * 1024u);
    atomic_init(&s->filters_may_read, false);
    /* Every cache from its share of the memory (rocks/memory.h). */
    s->budget = tune;
    s->super.memo_bytes = tune.budget[ROCKS_CACHE_MEMOS];
    s->blocks = rocksdb_cache_create_lru(tune.budget[ROCKS_CACHE_BLOCKS]);
    s->zreg = zreg_new(tune.budget[ROCKS_CACHE_RANKINGS], tune.zset_memory_all);
    s->tlc = tlcache_new(tune.tl_hot_keep, tune.budget[ROCKS_CACHE_HOTLISTS]);
    /* A slot per 256 bytes of the metadata cache: its records (a URL's
     * readers inline, a set's size) are ~50-200 bytes, and a friends-reads
     * of a feed of 100 rarely read URLs is 100 of them. A slot per 4 KiB of
     * the chunk cache (a chunk holds 2-8 KiB). Both so that the working set
     * rarely fills both ways of a bucket (rocks/view.c). */
    s->meta_cache = rcache_for_memory(tune.budget[ROCKS_CACHE_META], 256, 4096);
    s->chunk_cache = rcache_for_memory(tune.budget[ROCKS_CACHE_CHUNKS], 4096, 1u << 16);
    s->zset_cache = rcache_new(ZC_SLOTS, ZC_MAX_BYTES, tune.budget[ROCKS_CACHE_ZSETS]);
    s->pset_images = rcache_new(PIMG_SLOTS, PIMG_MAX_BYTES, tune.budget[ROCKS_CACHE_IMAGES]);
    s->pimg_log = pimg_log_new();
    s->pcols = tune.budget[ROCKS_CACHE_COLUMNS] >= pcols_size() ? pcols_new() : NULL; /* NULL: none */
    s->views = vspares_new(tune.budget[ROCKS_CACHE_VIEWS]);

    /* LZ4 when this RocksDB has it, else no compression. */
    static const int compressions[] = {rocksdb_lz4_compression, rocksdb_no_compression};
    char *errptr = NULL;
    for (size_t c = 0; c < sizeof compressions / sizeof compressions[0]; c++) {
        rocksdb_options_t *cfopts[CF_COUNT_];
        rocksdb_options_t *o = make_options(s, compressions[c], cfopts);
        rocksdb_free(errptr);
        errptr = NULL;
        s->db = rocksdb_open_column_families(o, path, CF_COUNT_, cf_names,
                                             (const rocksdb_options_t *const *)cfopts, s->cf, &errptr);
        if (s->db)
            s->tl_file_options = rocksdb_options_create_copy(cfopts[CF_TL]); /* rocks/timelist_ingest.c */
        free_options(o, cfopts);
        if (s->db || strstr(errptr, "ompression") == NULL) break;
    }
    if (s->db == NULL) {
        int rc = hr_err_set(err, HR_EIO, "rocksdb: cannot open %s: %s", path, errptr);
        rocksdb_free(errptr);
        free_store(s);
        return rc;
    }
    s->queues = queues_new();
    s->open_seq = rocksdb_get_latest_sequence_number(s->db);
    s->wopts = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(s->wopts, opts->sync);
    atomic_store(&s->filters_may_read, true);
    int rc = rocks_ingest_open(s, path, tune.tl_file_min, err);
    if (rc != HR_OK) {
        close_(&s->super);
        return rc;
    }
    *out = &s->super;
    return HR_OK;
}

/* Write every memtable to disk before a clean close. With the WAL on,
 * RocksDB closes without flushing, and the next open replays the log into
 * memtables at the cost of the original inserts: a stories store 1/20 of
 * the bench's size took 22-27 s to reopen that way. A flush here takes a
 * second or two and makes a restart after a clean stop quick (a crash still
 * replays, bounded by max_total_wal_size). Failures are logged: the log
 * still holds every write. */
static void flush_all(rocks_store *s) {
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    for (int i = 0; i < CF_COUNT_; i++) {
        char *errptr = NULL;
        rocksdb_flush_cf(s->db, fo, s->cf[i], &errptr);
        if (errptr) {
            hr_warn("rocksdb: flush of column family %s at close failed: %s", cf_names[i], errptr);
            rocksdb_free(errptr);
        }
    }
    rocksdb_flushoptions_destroy(fo);
}

/* Let RocksDB retire the write-ahead logs of a run that wrote nothing.
 * Every open starts a new log, and a log is deleted only once each column
 * family's memtable that could hold its writes has been flushed; a flush
 * also marks the empty column families as past it. A run with no write
 * flushes nothing, so its empty log stayed, and so did every earlier one
 * back to the last run that wrote: a server restarted while idle (a
 * read-only replica, a supervisor's restarts) gained a log file per start,
 * and each open listed and "recovered" all of them (292 of them on a bench
 * store reopened for read-only measurements). One deletion of a key
 * nothing uses, in the queues' family (no compaction filter, no reader
 * outside a queue's own prefix), gives flush_all a memtable to flush. */
static void retire_idle_logs(rocks_store *s) {
    if (rocksdb_get_latest_sequence_number(s->db) != s->open_seq) return; /* flush_all will */
    static const char marker[] = "\0herald/idle-close";
    char *errptr = NULL;
    rocksdb_delete_cf(s->db, s->wopts, s->cf[CF_QUEUE], marker, sizeof marker - 1, &errptr);
    if (errptr) {
        hr_warn("rocksdb: marking an idle close failed: %s", errptr);
        rocksdb_free(errptr);
    }
}

static void close_(hr_store *hs) {
    rocks_store *s = (rocks_store *)hs;
    retire_idle_logs(s);
    flush_all(s);
    /* No filter may read through db from here on; wait out running ones. */
    atomic_store(&s->filters_may_read, false);
    rocksdb_cancel_all_background_work(s->db, 1);
    for (int i = 0; i < CF_COUNT_; i++)
        rocksdb_column_family_handle_destroy(s->cf[i]);
    rocksdb_close(s->db);
    rocksdb_writeoptions_destroy(s->wopts);
    rocks_ingest_close(s);
    free_store(s);
}

static int ping_(hr_store *hs, hr_err *err) {
    return HR_OK; /* in-process: open means up */
}

/* Flushes and compactions queued or running, summed over the properties
 * that count them. */
static uint64_t background_work(rocks_store *s) {
    uint64_t busy = 0, v;
    if (rocksdb_property_int(s->db, "rocksdb.num-running-compactions", &v) == 0) busy += v;
    if (rocksdb_property_int(s->db, "rocksdb.num-running-flushes", &v) == 0) busy += v;
    for (int cf = 0; cf < CF_COUNT_; cf++) {
        if (rocksdb_property_int_cf(s->db, s->cf[cf], "rocksdb.compaction-pending", &v) == 0) busy += v;
        if (rocksdb_property_int_cf(s->db, s->cf[cf], "rocksdb.mem-table-flush-pending", &v) == 0) busy += v;
    }
    return busy;
}

/* Polls: RocksDB has no call that waits for its background work in this
 * version's C API, and a fifth of a second is nothing next to a compaction. */
static double settle_(hr_store *hs, double max_s, bool *settled) {
    rocks_store *s = (rocks_store *)hs;
    uint64_t t0 = hr_mono_ns();
    for (;;) {
        double waited = (double)(hr_mono_ns() - t0) / 1e9;
        *settled = background_work(s) == 0;
        if (*settled || waited >= max_s) return waited;
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Executing a batch ---------------------------------------------------------- */

typedef int (*op_fn)(rx *x, hr_op *op);

/* One op a line. */
/* clang-format off */
static const op_fn op_table[HR_OP_COUNT_] = {
    [HR_OP_GET] = op_get,
    [HR_OP_PUT] = op_put,
    [HR_OP_DEL] = op_del,
    [HR_OP_EXPIRE] = op_expire,
    [HR_OP_INCR] = op_incr,
    [HR_OP_COUNTER_GET] = op_counter_get,
    [HR_OP_ZADD] = op_zadd,
    [HR_OP_ZINCR] = op_zincr,
    [HR_OP_ZREM] = op_zrem,
    [HR_OP_ZSCORE] = op_zscore,
    [HR_OP_ZCARD] = op_zcard,
    [HR_OP_ZRANGE] = op_zrange,
    [HR_OP_ZREMRANGE_SCORE] = op_zremrange_score,
    [HR_OP_DADD] = op_dadd,
    [HR_OP_DCOUNT] = op_dcount,
    [HR_OP_PSET_ADD] = op_pset_add,
    [HR_OP_PSET_REM] = op_pset_rem,
    [HR_OP_PSET_TEST] = op_pset_test,
    [HR_OP_PSET_CARD] = op_pset_card,
    [HR_OP_TLADD] = op_tladd,
    [HR_OP_TLREM] = op_tlrem,
    [HR_OP_TLRANGE] = op_tlrange,
    [HR_OP_TLTRIM] = op_tltrim,
    [HR_OP_QPUSH] = op_qpush,
    [HR_OP_QCLAIM] = op_qclaim,
    [HR_OP_QACK] = op_qack,
    [HR_OP_QINFO] = op_qinfo,
    [HR_OP_PUT_IF_MISSING] = op_put_if_missing,
    [HR_OP_DEL_IF_EQUAL] = op_del_if_equal,
    [HR_OP_ZGUARD] = op_zguard,
};
/* clang-format on */

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Whether op holds its key's stripe (see LOCKS above). */
static bool takes_stripe(hr_op_type t) {
    switch (t) {
    case HR_OP_TLADD:
    case HR_OP_TLREM: return false; /* blind */
    case HR_OP_QINFO: return true;  /* reads the queue's in-memory state */
    case HR_OP_ZGUARD: return true; /* what it tests stays so until the batch ends */
    default: return hr_op_is_write(t);
    }
}

/* Whether op reads its key's metadata record. */
static bool reads_meta(hr_op_type t) {
    switch (t) {
    case HR_OP_PUT: /* overwrites it blindly */
    case HR_OP_TLADD:
    case HR_OP_TLREM:
    case HR_OP_TLRANGE:
    case HR_OP_TLTRIM:
    case HR_OP_QPUSH:
    case HR_OP_QCLAIM:
    case HR_OP_QACK:
    case HR_OP_QINFO: /* own key spaces */ return false;
    default: return true;
    }
}

/* Whether t writes a time list. */
static bool is_tl_write(hr_op_type t) {
    return t == HR_OP_TLADD || t == HR_OP_TLREM || t == HR_OP_TLTRIM;
}

/* The sorted, distinct stripes of the keys x->b writes; *n of them, in
 * x->mem. With kept (the batch holds the kept lists' gate and some are
 * kept), each time-list write looks up its kept list
 * (rocks/timelist_cache.c), and blind writes of a kept list take its
 * stripe too (rocks/timelist_cache.c says why). */
static uint32_t *write_stripes(rx *x, bool kept, size_t *n) {
    hr_batch *b = x->b;
    uint32_t *st = hr_arena_alloc(&x->mem, (b->len ? b->len : 1) * sizeof *st);
    size_t k = 0;
    for (size_t i = 0; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        if (op->result.rc != HR_OK) continue;
        bool writes_kept = kept && is_tl_write(op->type) && tlcache_look_up(x, i);
        if (takes_stripe(op->type) || writes_kept) st[k++] = rocks_stripe(op->key);
    }
    qsort(st, k, sizeof *st, cmp_u32);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || st[u - 1] != st[i]) st[u++] = st[i];
    *n = u;
    return st;
}

void rplan_reserve(rx *x, rplan *p, size_t more) {
    if (p->n + more <= p->cap) return;
    size_t cap = p->cap ? p->cap * 2 : 16;
    while (cap < p->n + more)
        cap *= 2;
    int *cfs = hr_arena_alloc(&x->mem, cap * sizeof *cfs);
    hr_slice *keys = hr_arena_alloc(&x->mem, cap * sizeof *keys);
    if (p->n) {
        memcpy(cfs, p->cfs, p->n * sizeof *cfs);
        memcpy(keys, p->keys, p->n * sizeof *keys);
    }
    p->cfs = cfs;
    p->keys = keys;
    p->cap = cap;
}

void rplan_add(rx *x, rplan *p, int cf, hr_slice key) {
    rplan_reserve(x, p, 1);
    p->cfs[p->n] = cf;
    p->keys[p->n++] = key;
}

/* Step 4: the metadata of every key, then the sub-keys the ops will read. */
static int prefetch(rx *x) {
    hr_batch *b = x->b;
    rplan p = {0};
    rplan_reserve(x, &p, b->len);
    for (size_t i = 0; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        /* As pset_plan does for chunks: the cache's slot of op i + 2 *
         * RX_AHEAD's metadata and the record of op i + RX_AHEAD's are asked
         * for while op i's is looked up. A tail-feed friends-reads looks up
         * 100 URLs' records in a cache of a million slots: two misses each. */
        if (i + 2 * RX_AHEAD < b->len) rx_cache_prefetch(x, CF_META, b->ops[i + 2 * RX_AHEAD].key, false);
        if (i + RX_AHEAD < b->len) rx_cache_prefetch(x, CF_META, b->ops[i + RX_AHEAD].key, true);
        if (op->result.rc != HR_OK || !reads_meta(op->type)) continue;
        if (rx_cached(x, CF_META, op->key)) continue;
        rplan_add(x, &p, CF_META, op->key);
    }
    int rc = rx_prefetch(x, p.n, p.cfs, p.keys);
    if (rc) return rc;

    /* Room in the view for the chunks the packed-set ops will plan, at once. */
    size_t chunks = 0;
    for (size_t i = 0; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        rmeta m;
        bool pset = op->type == HR_OP_PSET_ADD || op->type == HR_OP_PSET_REM || op->type == HR_OP_PSET_TEST ||
                    op->type == HR_OP_PSET_CARD;
        if (op->result.rc == HR_OK && pset && rx_meta(x, op->key, &m) == 0)
            chunks += pset_plan_size(x, op, &m);
    }
    rx_view_reserve(x, chunks);

    p.n = 0;
    hr_buf k = HR_BUF_INIT;
    for (size_t i = 0; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        rmeta m;
        if (op->result.rc != HR_OK) continue;
        switch (op->type) {
        case HR_OP_ZADD:
        case HR_OP_ZINCR:
        case HR_OP_ZREM:
        case HR_OP_ZSCORE:
        case HR_OP_ZGUARD:
            if (rx_meta(x, op->key, &m) != 0 || !meta_alive(&m, x->now) || m.type != T_ZSET || m.size == 0 ||
                (m.zflags & (ZF_MEM | ZF_INLINE))) /* a set in memory or inline: read there */
                break;
            zs_member_key(&k, op->key, m.version, op->member);
            rplan_add(x, &p, zs_member_cf(&m), hr_arena_copy(&x->mem, hr_buf_slice(&k)));
            hr_buf_clear(&k);
            break;
        case HR_OP_DADD:
        case HR_OP_DCOUNT:
            rplan_reserve(x, &p, 2); /* distinct_plan adds at most two */
            if (rx_meta(x, op->key, &m) == 0) distinct_plan(x, op, &m, p.cfs, p.keys, &p.n);
            break;
        case HR_OP_PSET_ADD:
        case HR_OP_PSET_REM:
        case HR_OP_PSET_TEST:
        case HR_OP_PSET_CARD:
            if (rx_meta(x, op->key, &m) == 0) pset_plan(x, op, &m, &p);
            break;
        case HR_OP_QACK: queue_plan(x, op, &p); break;
        default: break;
        }
    }
    hr_buf_free(&k);
    hr_err_clear(x->err); /* a corrupt record seen while planning is reported by its op */
    return rx_prefetch(x, p.n, p.cfs, p.keys);
}

/* Whether b writes time lists (then it may have to keep kept ones current). */
static bool writes_time_lists(const hr_batch *b) {
    for (size_t i = 0; i < b->len; i++)
        if (b->ops[i].result.rc == HR_OK && is_tl_write(b->ops[i].type)) return true;
    return false;
}

/* Whether an op that may iterate follows a write: then iterators must see
 * the batch's writes, and the batch is indexed (see rx.wbi). */
static bool needs_index(const hr_batch *b) {
    bool wrote = false;
    for (size_t i = 0; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        if (op->result.rc != HR_OK) continue;
        switch (op->type) {
        case HR_OP_ZRANGE:
        case HR_OP_ZREMRANGE_SCORE:
        case HR_OP_DADD:
        case HR_OP_DCOUNT:
        case HR_OP_TLRANGE:
        case HR_OP_TLTRIM:
        case HR_OP_QCLAIM:
        case HR_OP_QINFO:
            if (wrote) return true;
            break;
        default: break;
        }
        wrote = wrote || hr_op_is_write(op->type);
    }
    return false;
}

static int fail_all(hr_batch *b, int rc) {
    for (size_t i = 0; i < b->len; i++)
        b->ops[i].result.rc = rc;
    return rc;
}

static int exec_(hr_store *hs, hr_batch *b, unsigned flags, hr_err *err) {
    (void)flags; /* every batch is one WriteBatch: atomic either way */
    rocks_store *s = (rocks_store *)hs;
    /* RocksDB counts key comparisons in a thread-local perf context by
     * default, a large part of a memtable insert's time in the time lists'
     * fan-out. Nothing here reads those counts. */
    static _Thread_local bool perf_off;
    if (!perf_off) {
        rocksdb_set_perf_level(rocksdb_disable);
        perf_off = true;
    }

    rx x = {.s = s, .b = b, .err = err, .mem = HR_ARENA_INIT};
    /* Every batch that writes time lists holds the gate, also while no
     * list is kept: a batch that skipped it then could commit after the
     * first list was registered and loaded, and that list would miss its
     * write (rocks/timelist_cache.c, CONSISTENCY). Holding the gate, the
     * set of kept lists cannot change, so with none kept there is nothing
     * to look up. */
    bool gated = writes_time_lists(b), kept = false;
    if (gated) {
        tlcache_gate_enter(s->tlc);
        kept = tlcache_begin(&x);
    }
    size_t n_stripes;
    uint32_t *stripes = write_stripes(&x, kept, &n_stripes);
    x.stripes = stripes;
    x.nstripes = n_stripes;
    for (size_t i = 0; i < n_stripes; i++)
        pthread_mutex_lock(&s->stripes[stripes[i]]);

    x.now = hr_now_ms();
    x.seq = rocksdb_get_latest_sequence_number(s->db); /* before the snapshot: see rocks/view.c */
    x.snap = rocksdb_create_snapshot(s->db);
    x.ropts = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(x.ropts, x.snap);
    if (needs_index(b))
        x.wbi = rocksdb_writebatch_wi_create(0, 1); /* overwrite_key: required by NewIteratorWithBase */
    else
        x.wb = rocksdb_writebatch_create();

    int rc = prefetch(&x);
    bool guarded_out = false; /* a guard did not hold: the rest is not run (store.h) */
    for (size_t i = 0; i < b->len && rc == 0; i++) {
        hr_op *op = &b->ops[i];
        if (guarded_out && op->result.rc == HR_OK) op->result.rc = HR_ECONFLICT;
        if (op->result.rc == HR_OK) rc = op_table[op->type](&x, op);
        guarded_out = guarded_out || (op->type == HR_OP_ZGUARD && !hr_guard_held(op));
    }
    if (rc == 0) pset_flush(&x); /* packed-set chunks: each written once, however many ops changed it */
    bool wrote = rc == 0 && x.dirty;
    if (wrote) {
        rx_cache_before_write(&x);
        char *errptr = NULL;
        if (x.wbi)
            rocksdb_write_writebatch_wi(s->db, s->wopts, x.wbi, &errptr);
        else
            rocksdb_write(s->db, s->wopts, x.wb, &errptr);
        if (errptr) rc = rx_fail(&x, errptr);
    }
    if (wrote || rc == 0) rx_cache_after_write(&x, rc == 0, wrote); /* the record cache, under the locks */
    if (rc == 0) zmem_commit(&x);                                   /* then the sets kept in memory */
    if (rc == 0) tlcache_apply(&x);                                 /* and the time lists */
    if (rc != 0) {
        zmem_abort(&x);
        fail_all(b, rc); /* nothing was written */
    }
    queue_finish(&x, rc == 0);

    if (x.wbi) rocksdb_writebatch_wi_destroy(x.wbi);
    if (x.wb) rocksdb_writebatch_destroy(x.wb);
    rocksdb_readoptions_destroy(x.ropts);
    rocksdb_release_snapshot(s->db, x.snap);
    for (size_t i = n_stripes; i-- > 0;)
        pthread_mutex_unlock(&s->stripes[stripes[i]]);
    if (gated) tlcache_gate_leave(s->tlc);
    if (rc == 0) tlcache_keep_wanted(&x); /* with no lock held */
    zmem_end(&x);
    rx_view_free(&x);
    tl_end(&x);
    hr_arena_free(&x.mem);
    return rc;
}

/* Origins are the zset cache's records (rocks/zset_cache.c). */
static void *origin_attached(const hr_origin *o) {
    return rcache_attached((const rblob *)o);
}

static void *origin_attach(hr_store *hs, hr_origin *o, void *p, size_t bytes, void (*free_p)(void *)) {
    return rcache_attach(((rocks_store *)hs)->zset_cache, (rblob *)o, p, bytes, free_p);
}

/* Declarations (store.h) ------------------------------------------------------ */

static bool rocks_declare(hr_store *hs, const hr_store_decl *d) {
    rocks_store *s = (rocks_store *)hs;
    pthread_mutex_lock(&s->decls_lock);
    size_t n = atomic_load(&s->n_decls), i = 0;
    for (; i < n; i++) {
        const rocks_decl *e = &s->decls[i];
        if (e->kind == d->kind && hr_slice_eq(d->prefix, hr_slice_of(e->prefix, e->prefix_len)) &&
            hr_slice_eq(d->suffix, hr_slice_of(e->suffix, e->suffix_len)))
            break;
    }
    bool declared = i < HR_DECL_MAX;
    if (declared) {
        rocks_decl *e = &s->decls[i];
        atomic_store(&e->keep, d->keep);
        if (i == n) { /* new: filled in before it is counted */
            e->kind = d->kind;
            if (d->prefix.len) memcpy(e->prefix, d->prefix.ptr, d->prefix.len);
            e->prefix_len = d->prefix.len;
            if (d->suffix.len) memcpy(e->suffix, d->suffix.ptr, d->suffix.len);
            e->suffix_len = d->suffix.len;
            atomic_store(&s->n_decls, n + 1);
        }
    }
    pthread_mutex_unlock(&s->decls_lock);
    return declared;
}

const hr_store_backend hr_rocks_backend = {
    .caps = {.kind = "rocksdb", .atomic_batches = true, .settles = true, .bulk_files = true},
    .uri_prefix = "rocksdb:",
    .open = open_,
    .close = close_,
    .ping = ping_,
    .settle = settle_,
    .caches = rocks_caches_report,
    .exec = exec_,
    .origin_attached = origin_attached,
    .origin_attach = origin_attach,
    .tlbulk_write = rocks_ingest_write,
    .declare = rocks_declare,
};
