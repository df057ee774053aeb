/* rocks_internal.h — what the rocks_*.c files share; nothing outside them
 * includes it. The on-disk layout is drawn at the top of rocks.c.
 *
 *   rocks.c           open / close / exec: locks, snapshot, prefetch, commit
 *   rocks_codec.c     key, metadata and score encodings
 *   rocks_view.c      a batch's view of the store: its own writes over a
 *                     snapshot, reads grouped into MultiGets
 *   rocks_ops.c       values, counters, expiry, sorted sets
 *   rocks_distinct.c  distinct counters (exact sets, then HLL sketches)
 *   rocks_pset.c      packed sets of 64-bit members
 *   rocks_tl.c        time lists (their own column family)
 *   rocks_queue.c     durable work queues (their own column family; leases
 *                     in memory)
 *   rocks_zmem.c      sorted sets whose order is kept in memory (rankings)
 *   rocks_filter.c    the compaction filters and the HLL merge operator
 *
 * Ownership, unless a declaration says otherwise: pointer and slice
 * parameters are borrowed for the call; slices handed back point into the
 * batch's scratch arena (x->mem) and stay valid until the batch ends; every
 * function that can fail returns 0 or an hr_err code with x->err filled.
 */
#ifndef HR_ROCKS_INTERNAL_H
#define HR_ROCKS_INTERNAL_H

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <xxhash.h>

#include "common/arena.h"
#include "common/buf.h"
#include "store/backend.h"

/* Column families, in the order they are opened. */
enum {
    CF_META,   /* "default": one metadata record per key */
    CF_SUB,    /* "subkeys": collection members -> score / time */
    CF_ZINDEX, /* "zindex": (score | member) index of sorted sets and exact distinct sets */
    CF_SKETCH, /* "sketch": HLL sketches of distinct counters in sketch mode (merge operator) */
    CF_TL,     /* "timelists": time-list entries (rocks_tl.c), no metadata */
    CF_QUEUE,  /* "queues": queue jobs (rocks_queue.c), no metadata */
    CF_ZTLM,   /* "timesetmembers": member records of sets of times (rocks_ztl.c) */
    CF_ZMEMM,  /* "memsetmembers": member records of sets kept in memory (rocks_zmem.c) */
    CF_COUNT_
};

/* Stripes of the read-modify-write locks (see rocks.c). A power of two. */
#define ROCKS_STRIPES 1024u

typedef struct zreg zreg;     /* the sorted sets kept in memory (rocks_zmem.c) */
typedef struct rcache rcache; /* recently used records of one kind (rocks_view.c) */
typedef struct rblob rblob;   /* one record of an rcache, shared by reference (rocks_view.c) */
typedef struct vspares vspares; /* emptied view tables kept for reuse (rocks_view.c) */
typedef struct tlcache tlcache;       /* hot time lists' newest entries (rocks_tlcache.c) */
typedef struct tlc_list tlc_list;     /* one of them */
typedef struct tlc_change tlc_change; /* a batch's change to one, applied after its commit */

/* The stripe of a key. */
static inline uint32_t rocks_stripe(hr_slice key) {
    return (uint32_t)(XXH3_64bits(key.ptr, key.len) & (ROCKS_STRIPES - 1));
}

/* A cap on time lists (hr_store_tlcap), which the time lists' compaction
 * filter enforces (rocks_filter.c). Set once; only keep changes after. */
typedef struct rocks_tlcap {
    char prefix[HR_TLCAP_AFFIX_MAX], suffix[HR_TLCAP_AFFIX_MAX];
    size_t prefix_len, suffix_len;
    _Atomic size_t keep;
} rocks_tlcap;

/* Images of large packed sets (rocks_pimage.c): build times are kept per
 * slot of the sets' key hashes. */
#define PIMG_COOLDOWN_SLOTS 4096

typedef struct rocks_store {
    hr_store super; /* first: the dispatcher casts hr_store * to this */
    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf[CF_COUNT_];
    rocksdb_writeoptions_t *wopts;
    /* Source of collection versions: strictly increasing, seeded from the
     * clock at open so that a version is never reused across restarts. */
    _Atomic uint64_t next_version;
    /* True between the end of open and the start of close: only then may the
     * compaction filters read metadata through db. */
    atomic_bool filters_may_read;
    zreg *zreg;
    tlcache *tlc;
    rcache *meta_cache;  /* metadata records */
    rcache *chunk_cache; /* packed-set chunks */
    rcache *zset_cache;  /* whole small sorted sets on disk (rocks_zcache.c) */
    rcache *pset_images; /* images of large packed sets (rocks_pimage.c) */
    struct pimg_log *pimg_log; /* the chunks written since, for the images to leave out */
    _Atomic int64_t pimg_built[PIMG_COOLDOWN_SLOTS]; /* when a set hashing here last had an image built (ms) */
    _Atomic uint64_t pimg_tests; /* packed-set tests answered from an image (tests) */
    struct pcols *pcols;         /* member columns of the most tested images (rocks_pcols.c) */
    vspares *views;      /* batches' emptied view tables */
    pthread_mutex_t stripes[ROCKS_STRIPES];
    struct rqueues *queues; /* the queues' in-memory state (rocks_queue.c) */
    uint64_t open_seq;      /* the DB's latest sequence number when open returned */
    /* Bulk batches of time-list adds as table files (rocks_ingest.c): where
     * the files are written, and the time lists' options they are written
     * with. */
    char *ingest_dir;
    rocksdb_options_t *tl_file_options;
    size_t tl_file_min; /* adds from which a bulk write is a file */
    bool tl_bulk;       /* tl_bulk_mode is on; under tl_bulk_lock */
    pthread_mutex_t tl_bulk_lock;
    /* Caps on time lists: tl_caps[0, n_tl_caps) are set (a cap is filled in
     * before n_tl_caps counts it); declaring one takes tl_caps_lock. */
    rocks_tlcap tl_caps[HR_TLCAP_MAX];
    _Atomic size_t n_tl_caps;
    pthread_mutex_t tl_caps_lock;
} rocks_store;

/* ------------------------------------------------------------------------ */
/* Encodings (rocks_codec.c)                                                 */

typedef enum { T_NONE = 0, T_STRING = 1, T_COUNTER = 2, T_ZSET = 3, T_DISTINCT = 4, T_PSET = 5 } rtype;
typedef enum { D_EXACT = 0, D_SKETCH = 1 } dmode;

/* A decoded metadata record. Which fields mean something depends on type. */
typedef struct rmeta {
    uint8_t type;      /* rtype; T_NONE: no record */
    int64_t expire_at; /* ms since epoch; the key is alive while now <= expire_at; 0 never expires */
    hr_slice value;    /* T_STRING: the value (borrowed from the raw record) */
    int64_t counter;   /* T_COUNTER */
    uint64_t version;  /* T_ZSET, T_DISTINCT, T_PSET: the version in every sub-key */
    uint64_t size;     /* T_ZSET: members; T_DISTINCT exact, T_PSET: members stored (live + not yet pruned) */
    uint8_t zflags;    /* T_ZSET: ZF_* */
    hr_slice zinline;  /* T_ZSET with ZF_INLINE: its entries (rocks_zinline.c), borrowed from the raw record */
    uint8_t mode;      /* T_DISTINCT: dmode */
    int64_t ttl;       /* T_DISTINCT: the ttl_ms of the last add (the compaction filter uses it) */
    int64_t width;     /* T_DISTINCT sketch: bucket width W in ms */
    int64_t oldest;    /* T_DISTINCT exact: lower bound of the members' last-add times */
    uint64_t seed;     /* T_PSET: the seed of the members' hashes */
    int64_t soonest;   /* T_PSET: lower bound of the members' non-zero expire_at; INT64_MAX: none */
    int64_t latest;    /* T_PSET: the largest non-zero expire_at of a member (exact while forever is 0) */
    uint64_t forever;  /* T_PSET: members that never expire (expire_at 0) */
    uint8_t bits;      /* T_PSET: the set has 2^bits chunks (0..PSET_MAX_BITS) */
} rmeta;

/* T_ZSET flags. ZF_MEM: the set's order lives in memory (rocks_zmem.c), not
 * in "zindex". ZF_INLINE: a small set's entries live in its metadata record
 * itself (rocks_zinline.c), with no sub-keys at all. */
#define ZF_MEM 1
#define ZF_INLINE 2
/* ZF_TL: a set of times (hr_zadd_time), from its creation: once out of
 * line, its order is kept in "timelists" instead of "zindex", and its
 * member records in "timesetmembers" instead of "subkeys" (rocks_ztl.c). */
#define ZF_TL 4
/* ZF_MEMCF: with ZF_MEM, the set's member records live in "memsetmembers"
 * instead of "subkeys" (rocks_zmem.c). Every set that moves into memory
 * gets it; a set moved by a version before it keeps its records in
 * "subkeys", read and written there. */
#define ZF_MEMCF 8

/* A packed set has at most 2^PSET_MAX_BITS chunks (rocks_pset.c). */
#define PSET_MAX_BITS 16

/* Decode raw (borrowed; m->value points into it). 0, or -1 when corrupt. */
int meta_decode(hr_slice raw, rmeta *m);
/* Append the encoding of m to out (strings: header and m->value). */
void meta_encode(const rmeta *m, hr_buf *out);
/* True when m is a record and has not expired at now. A packed set also
 * stops existing when its last member expires (store.h: an empty set does
 * not exist), a member counting while now < its expire_at. */
static inline bool meta_alive(const rmeta *m, int64_t now) {
    if (m->type == T_NONE || (m->expire_at != 0 && now > m->expire_at)) return false;
    return m->type != T_PSET || m->forever > 0 || now < m->latest;
}

/* Sub-keys (CF_SUB, CF_ZINDEX, CF_SKETCH) all start with this prefix. */
void key_prefix(hr_buf *out, hr_slice key, uint64_t version);
/* The first key after every key with this prefix (the prefix of version+1). */
void key_prefix_end(hr_buf *out, hr_slice key, uint64_t version);
/* Split a sub-key into user key, version and what follows. -1 if malformed. */
int key_parse(hr_slice sub, hr_slice *key, uint64_t *version, hr_slice *rest);

/* Scores as 8 bytes whose unsigned big-endian order is the order of the
 * doubles (-0.0 is stored as 0.0). */
uint64_t score_encode(double d);
double score_decode(uint64_t u);
void append_u64(hr_buf *out, uint64_t v);
uint64_t load_u64(const void *p);

/* Sketch CF tags after the prefix. */
#define SKETCH_BUCKET 'B' /* 'B' | bucket number u64: an HLL sketch (hll.h encodings) */
#define SKETCH_UNION 'U'  /* 'U': cached union of the closed alive buckets */

/* ------------------------------------------------------------------------ */
/* One batch being executed (rocks.c, rocks_view.c)                          */

typedef struct vent vent; /* a view entry, private to rocks_view.c */
typedef struct zent zent; /* a sorted set kept in memory (rocks_zmem.c) */

/* A change to a set kept in memory, applied after the commit. */
typedef struct zstage {
    zent *e;
    hr_slice member; /* in x->mem */
    bool removed;
    uint64_t enc;
} zstage;

/* Score changes of members of a set on disk, counted toward moving it into
 * memory. */
typedef struct zmoves {
    hr_slice key; /* in x->mem */
    uint64_t version, size, moves;
} zmoves;

typedef struct rx {
    rocks_store *s;
    hr_batch *b;
    hr_err *err;
    int64_t now; /* wall clock at the start of the batch */
    /* Every write of the batch, committed at the end: in an indexed batch
     * (wbi) when an op that may iterate follows a write, so that iterators
     * see the batch's writes; else in a plain WriteBatch (wb), whose puts
     * cost a fraction (the index is a skiplist over the batch). */
    rocksdb_writebatch_wi_t *wbi;
    rocksdb_writebatch_t *wb;
    const rocksdb_snapshot_t *snap; /* every read of the DB is from this snapshot */
    rocksdb_readoptions_t *ropts;   /* with snap */
    bool dirty;                     /* wb holds something */
    const uint32_t *stripes;        /* the stripes the batch holds, ascending */
    size_t nstripes;
    uint64_t seq; /* the DB's latest sequence number just before snap */
    hr_arena mem; /* scratch, freed at the end of the batch */
    vent *tab;    /* the view: (cf, key) -> what the batch knows */
    size_t tab_cap, tab_len;
    /* Values prefetched by the batched MultiGet, pinned in RocksDB's block
     * cache (rocksdb_pinnableslice_t *): the view points into them instead of
     * copying, and unpins them when it is freed, at the end of the batch. */
    void **pins;
    size_t npins, pins_cap;
    /* Records of the record cache the view points into (rx_cached), each
     * held by a reference until the batch ends (rocks_view.c, rblob). */
    rblob **held;
    size_t nheld, held_cap;
    /* One zindex iterator for every range read of a batch that does not
     * index its writes (rx_iter_open), and its read options; freed with the
     * view. */
    rocksdb_iterator_t *zit;
    rocksdb_readoptions_t *zit_ropts;
    /* Packed-set chunks the batch changed (keys in mem, repeats allowed):
     * their decoded forms (rx_aux) are written once each, by pset_flush. */
    hr_slice *pset_dirty;
    size_t pset_ndirty, pset_dirty_cap;
    /* Whole sorted sets (rocks_zcache.c): the on-disk sets the batch wrote
     * (keys in mem, repeats allowed), and what it read whole to offer. */
    hr_slice *zc_written;
    size_t zc_nwritten, zc_written_cap;
    hr_slice *zc_offers; /* key, value, key, value... (in mem) */
    size_t zc_noffers, zc_offers_cap;
    /* While zc_scan walks a cached set: its bytes, which live as long as
     * the batch's results (hr_batch_hold), so op_zrange points into them. */
    hr_slice zc_lasting;
    /* op_zrange's exchange with zc_scan: the origin its spec names (unless),
     * and what the scan found: the same set (unchanged), or the cached set
     * it walked (origin). */
    const void *zc_unless;
    bool zc_unchanged;
    void *zc_origin;
    /* Images of large packed sets (rocks_pimage.c): per op of the batch
     * (NULL until a test plans one), and the images the batch has built. */
    struct pimg_op *pimg_ops;
    size_t pimg_builds;
    /* Member columns (rocks_pcols.c): the columns the batch has filled; the
     * members its last column test asked about (an op's u64s), whether other
     * tests share them, and their rows once looked up, when pcol_nrows rows
     * existed. */
    size_t pcol_fills;
    const uint64_t *pcol_members;
    bool pcol_shared, pcol_looked_up;
    uint32_t *pcol_rows;
    size_t pcol_cap;
    uint32_t pcol_nrows;
    hr_buf tlkey;      /* scratch for time-list keys (rocks_tl.c) */
    struct qbatch *qb; /* the queue changes to apply after the commit (rocks_queue.c) */
    /* Sets kept in memory (rocks_zmem.c): the entries the batch holds, its
     * staged changes, and moves of sets on disk. malloc'd; zmem_end frees. */
    zent **zheld;
    bool *zfresh; /* zheld[i] was created by this batch, for a new set */
    size_t nzheld, zheld_cap;
    zstage *zst;
    size_t nzst, zst_cap;
    zmoves *zmoves;
    size_t nzmoves, zmoves_cap;
    /* Time lists kept in memory (rocks_tlcache.c). tlc_of: set while the
     * batch holds the gate (it writes time lists while some are kept): per
     * op of the batch, the kept list it writes (NULL: none), looked up once
     * when the stripes are chosen. Then the batch's changes to kept lists,
     * and the lists its hot reads want kept (in mem). */
    tlc_list **tlc_of;
    tlc_change *tlc;
    size_t ntlc, tlc_cap;
    hr_slice *tlc_want;
    size_t ntlc_want, tlc_want_cap;
} rx;

/* What the batch itself knows of (cf, key), without reading the DB: true
 * when it wrote the key (or read it before), with *found and *val as rx_get
 * answers them. */
bool rx_known(rx *x, int cf, hr_slice key, hr_slice *val, bool *found);
/* Read key of cf as the batch sees it: its own earlier writes, else a value
 * prefetched or read now from the snapshot. On success *found says whether
 * the key exists and *val (valid until the batch ends) is its value. Returns
 * 0 or HR_EIO with x->err filled. */
int rx_get(rx *x, int cf, hr_slice key, hr_slice *val, bool *found);
/* Read keys[0..n) of cfs[i] that the view does not know yet with one
 * MultiGet, so that later rx_get calls on them cost nothing. The view copies
 * the keys. */
int rx_prefetch(rx *x, size_t n, const int *cfs, const hr_slice *keys);
/* Write into the batch (committed by rocks.c at the end). key and val are
 * copied. */
void rx_put(rx *x, int cf, hr_slice key, hr_slice val);
void rx_del(rx *x, int cf, hr_slice key);
/* Write into the batch without recording the write in the view: for keys
 * that no op reads with rx_get (time lists, read only by iterators), so that
 * a blind write costs the WriteBatch append alone. */
void rx_put_blind(rx *x, int cf, hr_slice key, hr_slice val);
void rx_del_blind(rx *x, int cf, hr_slice key);
/* aux_updated: the caller has applied operand to the key's aux itself. */
void rx_merge(rx *x, int cf, hr_slice key, hr_slice operand, bool aux_updated);
/* A slot for a decoded form of the value of (cf, key) (e.g. an HLL sketch),
 * so that ops of one batch decode a value once. The view owns what is
 * stored there (one malloc'd block, freed with the view) and empties the slot
 * whenever the batch writes the key, except a merge whose writer says it
 * updated the decoded form (rx_merge's aux_updated). */
void **rx_aux(rx *x, int cf, hr_slice key);
/* rx_put, and make aux (taken; may be the one already there) the decoded form. */
void rx_put_aux(rx *x, int cf, hr_slice key, hr_slice val, void *aux);

/* An iterator over [lower, upper) of cf. It sees the writes of earlier ops
 * of the batch (rocks.c indexes a batch in which an op that may iterate
 * follows a write); an op must not rely on seeing its own writes, so it
 * iterates before it writes. Callers check every key against their range:
 * the bounds apply to the snapshot, not to the batch's writes. */
typedef struct rx_iter {
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ropts; /* owns the bounds; outlives it */
    hr_buf lower, upper;
    bool shared; /* it is the batch's zindex iterator (rx.zit): close leaves it */
} rx_iter;
void rx_iter_open(rx *x, rx_iter *ri, int cf, hr_slice lower, hr_slice upper);
/* 0, or HR_EIO with x->err filled when the iterator stopped on an error. */
int rx_iter_status(rx *x, rx_iter *ri);
/* End a scan made outside a batch's view (loading a structure into memory):
 * destroy it and its read options; the error it stopped on, or NULL (free it
 * with rocksdb_free). */
char *rocks_scan_end(rocksdb_iterator_t *it, rocksdb_readoptions_t *ro);
void rx_iter_close(rx_iter *ri);
static inline hr_slice rx_iter_key(rx_iter *ri) {
    size_t n;
    const char *k = rocksdb_iter_key(ri->it, &n);
    return hr_slice_of(k, n);
}

/* An array of *cap elements of `size` bytes in arena a, n of them used,
 * made ready for one more: arr itself while there is room, else a copy in
 * a block twice as large (at least `first` elements, at most `max` when max
 * is not 0), *cap updated. The old block stays in the arena. */
static inline void *arena_grow(hr_arena *a, void *arr, size_t n, size_t *cap, size_t size, size_t first,
                               size_t max) {
    if (n < *cap) return arr;
    size_t c = *cap ? *cap * 2 : first;
    if (max && c > max) c = max;
    void *grown = hr_arena_alloc(a, c * size);
    if (n) memcpy(grown, arr, n * size);
    *cap = c;
    return grown;
}

/* Copy a RocksDB error into x->err, free it, return HR_EIO. */
int rx_fail(rx *x, char *errptr);
/* Free the view. */
void rx_view_free(rx *x);
/* Make room in the view for `more` keys at once: a batch of packed-set
 * tests may plan thousands of chunks, and growing the table by doubling (a
 * new zeroed block each time) was ~6 % of a zipf-feed friends-reads. */
void rx_view_reserve(rx *x, size_t more);

/* The emptied view tables a store keeps for its batches (rocks_view.c). */
vspares *vspares_new(void);
void vspares_free(vspares *v);
/* The record cache (rocks_view.c says when a batch may use it): nslots
 * slots (a power of two: buckets of two ways) of values up to max_value
 * bytes, budget bytes of records (keys and values) in all (a record that
 * would pass it is not kept). */
rcache *rcache_new(size_t nslots, size_t max_value, size_t budget);
/* The same in memory bytes: a slot (48 bytes, half a bucket) per
 * bytes_per_slot of it, at least 1,024, rounded up to a power of two; the
 * records get the rest. */
rcache *rcache_for_memory(size_t memory, size_t bytes_per_slot, size_t max_value);
void rcache_free(rcache *c);
/* Bracket a write of a cached kind of record made outside a batch's commit
 * (stamp: the DB's latest sequence number after it). */
void rcache_write_begin(rcache *c, hr_slice key);
void rcache_write_end(rcache *c, hr_slice key, bool ok, bool found, hr_slice raw, uint64_t stamp);
/* How many records the cache holds (tests). */
size_t rcache_count(rcache *c);
/* The value cached for key, if it is the one a batch whose rx.seq is seq
 * sees (not in flux, stamped <= seq); else false. *val points into the
 * cache's record, which *held keeps alive, whatever happens to the slot,
 * until rcache_release(*held) (or rx_hold: the end of the batch). */
bool rcache_take(rcache *c, hr_slice key, uint64_t seq, rblob **held, hr_slice *val);
void rcache_release(rblob *held);
/* Another reference to a record someone holds. */
void rcache_share(rblob *held);
/* Ask the CPU for the cache bucket of key in cf (record false) or for
 * key's record in it (true, once the bucket is in cache), ahead of
 * rx_cached on that key: loops ask for the bucket of the key 2 * RX_AHEAD
 * ahead and the record of the one RX_AHEAD ahead. */
void rx_cache_prefetch(rx *x, int cf, hr_slice key, bool record);
#define RX_AHEAD 8
/* Keep held until x's view is freed. */
void rx_hold(rx *x, rblob *held);
/* Offer val, read at a snapshot taken just after seq, unless a write has
 * stamped key's bucket past seq or is under way (too large: ignored). */
void rcache_offer(rcache *c, hr_slice key, hr_slice val, uint64_t seq);
/* Put the record of key in cf (CF_META, or CF_SUB for a packed-set chunk)
 * into the view from the cache when the rules allow; true if it did. Else
 * the record, once read from the DB, is offered to the cache at the end. */
bool rx_cached(rx *x, int cf, hr_slice key);
/* Around the commit's Write (rocks.c): mark the cached kinds of records the
 * batch writes as in flux; then store them (ok) or forget them, and offer
 * the ones it read. wrote: the Write was attempted. */
void rx_cache_before_write(rx *x);
void rx_cache_after_write(rx *x, bool ok, bool wrote);

/* Load the metadata of key through the view (m->type T_NONE when missing). A
 * corrupt record is an HR_EIO. */
int rx_meta(rx *x, hr_slice key, rmeta *m);
/* Write m as key's metadata. */
void rx_put_meta(rx *x, hr_slice key, const rmeta *m);
/* A fresh collection version. */
uint64_t rx_new_version(rx *x);

/* ------------------------------------------------------------------------ */
/* Ops (rocks_ops.c, rocks_distinct.c): each runs one op of the batch, sets its
 * result (memory in x->b->arena) and returns 0, or a store failure (HR_EIO)
 * that aborts the batch. */

int op_get(rx *x, hr_op *op);
int op_put(rx *x, hr_op *op);
int op_del(rx *x, hr_op *op);
int op_put_if_missing(rx *x, hr_op *op);
int op_zincr_with(rx *x, hr_op *op);
int op_del_if_equal(rx *x, hr_op *op);
int op_expire(rx *x, hr_op *op);
int op_incr(rx *x, hr_op *op);
int op_counter_get(rx *x, hr_op *op);
int op_zadd(rx *x, hr_op *op);
int op_zincr(rx *x, hr_op *op);
int op_zrem(rx *x, hr_op *op);
int op_zscore(rx *x, hr_op *op);
int op_zcard(rx *x, hr_op *op);
int op_zrange(rx *x, hr_op *op);
int op_zremrange_score(rx *x, hr_op *op);
int op_ztrim(rx *x, hr_op *op);
int op_dadd(rx *x, hr_op *op);
int op_dcount(rx *x, hr_op *op);
int op_pset_add(rx *x, hr_op *op);
int op_pset_rem(rx *x, hr_op *op);
int op_pset_test(rx *x, hr_op *op);
int op_pset_card(rx *x, hr_op *op);

/* Sorted-set helpers shared with the exact distinct sets (rocks_ops.c). */
/* Look up member of the collection (key, version): *found, and its encoded
 * score. */
int zs_member(rx *x, hr_slice key, uint64_t version, hr_slice member, bool *found, uint64_t *enc);
/* Set member's score to enc (old_enc: its previous score, when had_old). */
void zs_write(rx *x, hr_slice key, uint64_t version, hr_slice member, bool had_old, uint64_t old_enc,
              uint64_t enc);
/* Remove member, whose score is enc. */
void zs_remove(rx *x, hr_slice key, uint64_t version, hr_slice member, uint64_t enc);

/* Visit the index entries of (key, version) with min <= score <= max, in
 * ascending (score, member) order, or descending with reverse, strictly after
 * `after` (encoded score | member bytes) in that direction when not NULL.
 * visit returns false to stop; its member is valid only during the call. */
typedef bool (*zs_visit)(void *ctx, uint64_t enc, hr_slice member);
int zs_scan(rx *x, hr_slice key, uint64_t version, bool reverse, double min, double max,
            const hr_slice *after, zs_visit visit, void *ctx);

/* A zs_visit that copies up to max entries into mem (to act on them once the
 * iterator is closed). */
typedef struct zcollect {
    hr_arena *mem;
    size_t max;
    size_t n, cap;
    uint64_t *encs;
    hr_slice *members;
} zcollect;
bool zs_collect(void *ctx, uint64_t enc, hr_slice member);

/* Sets of times (hr_zadd_time), whose order is kept with the time lists and
 * member records in CF_ZTLM (rocks_ztl.c): the same calls as zs_write,
 * zs_remove and zs_scan. */
bool ztl_score_ok(double score); /* an integer with |score| <= 2^53 */
/* A set of times leaves its metadata record sooner than other sets: inline,
 * every write rewrites the whole record (up to 4 KB into the WAL and the
 * memtable), and out of line its writes are cheap. 16 and 128 measured
 * alike on the stories bench (BENCHMARKS.md). */
#define ZTL_INLINE_MAX_ENTRIES 16
/* The value of a set of times' index entry: expire_at 0 (never), then this
 * mark, by which the time lists' compaction filter tells the entries of a
 * deleted set (rocks_filter.c). */
#define ZTL_ENTRY_VALUE "\0\0\0\0\0\0\0\0Z"
#define ZTL_ENTRY_VALUE_LEN 9
void ztl_write(rx *x, hr_slice key, uint64_t version, hr_slice member, bool had_old, uint64_t old_enc,
               uint64_t enc);
void ztl_remove(rx *x, hr_slice key, uint64_t version, hr_slice member, uint64_t enc);
int ztl_scan(rx *x, hr_slice key, uint64_t version, bool reverse, double min, double max, const hr_slice *after,
             zs_visit visit, void *ctx);
/* Append the key of member's record in (key, version)'s set to out:
 * prefix | member bytes. */
void zs_member_key(hr_buf *out, hr_slice key, uint64_t version, hr_slice member);
/* A member record alone, in cf, for ztl_write / ztl_remove and for sets
 * kept in memory (zs_write and zs_remove write it in CF_SUB with the index
 * entry). */
void zs_member_put(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member, uint64_t enc);
void zs_member_del(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member);
/* zs_member, reading cf. */
int zs_member_in(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member, bool *found, uint64_t *enc);
/* The column family of an out-of-line set's member records. */
static inline int zs_member_cf(const rmeta *m) {
    return m->zflags & ZF_TL ? CF_ZTLM : CF_SUB;
}
/* The column family of the member records of a set kept in memory (ZF_MEM). */
static inline int zm_member_cf(const rmeta *m) {
    return m->zflags & ZF_MEMCF ? CF_ZMEMM : CF_SUB;
}
/* zs_write or ztl_write, as m's layout says: a member of a set on disk
 * (not inline, not in memory). */
void zs_write_as(rx *x, hr_slice key, const rmeta *m, hr_slice member, bool had_old, uint64_t old_enc,
                 uint64_t enc);

/* Small sorted sets inside their metadata record (rocks_zinline.c). "all"
 * is a set's entries (rmeta.zinline). A set stays inline while it has at most
 * ZINLINE_MAX_ENTRIES members and ZINLINE_MAX_BYTES of entries: 32 covers a
 * long-tail URL's readers (one or two) and friends-reads' first read of a
 * list (HR_READING_LIST_FIRST), and keeps a record under a block's 4 KiB. */
#define ZINLINE_MAX_ENTRIES 128
#define ZINLINE_MAX_BYTES 4000
/* The score of member, if it is in the set. */
bool zi_find(hr_slice all, hr_slice member, uint64_t *enc);
/* Whether a set of this many entries and bytes of them may stay inline. */
bool zi_fits(size_t entries, size_t bytes);
/* The bytes member's entry takes (more than ZINLINE_MAX_BYTES if it cannot be inline). */
size_t zi_entry_bytes(hr_slice member);
/* The entries with member's removed and, unless removed, (enc, member) in its
 * place; in mem. */
hr_slice zi_with(hr_arena *mem, hr_slice all, hr_slice member, bool removed, uint64_t enc);
/* Move an inline set's entries to sub-keys under its version; m loses ZF_INLINE
 * (the caller writes m). */
void zi_spill(rx *x, hr_slice key, rmeta *m);
/* zs_scan's walk over inline entries: the same bounds, cursor and visits. */
void zi_walk(hr_arena *mem, hr_slice all, bool reverse, double min, double max, const hr_slice *after,
             zs_visit visit, void *ctx);
/* Append an entry in the inline layout. */
void zi_append(hr_buf *out, uint64_t enc, hr_slice member);

/* Whole small sorted sets on disk, cached (rocks_zcache.c): the cache's
 * slots, and the largest set it keeps (its version and entries). zc_scan is
 * zs_scan for the set (key, m), answered from the cache when it may be; a
 * read of the whole set is offered to it. zc_note_write: the batch writes
 * the set's entries (zs_write, zs_remove). Around the commit, as the record
 * cache's rx_cache_before_write / _after_write (and called by them). */
int zc_scan(rx *x, hr_slice key, const rmeta *m, bool reverse, double min, double max, const hr_slice *after,
            zs_visit visit, void *ctx);
void zc_note_write(rx *x, hr_slice key);
void zc_before_write(rx *x);
void zc_after_write(rx *x, bool ok, bool wrote, uint64_t stamp);
/* Slots: a set's bucket is fixed by its key's hash. When the cache was
 * direct-mapped, n sets in the slots lost ~n^2 / (2 ZC_SLOTS) of them to
 * each other: with 2,048 slots, 1,000 users' friend lists kept only ~800,
 * and the rest were read from disk on every other query, each evicting
 * another: ~8 % of a friends-reads over long-tail URLs (BENCHMARKS.md,
 * round 10). 65,536 slots (3 MiB, in buckets of two ways) keep all but a
 * few of 1,000; the budget bounds the entries (~16,000 lists of 450). */
#define ZC_SLOTS 65536
/* A read of part of a set that is not cached (by score, or after a cursor)
 * reads all of it, to offer it, when it has at most this many members: a
 * URL's readers are read from the oldest that is still live, so none was
 * ever cached, and a friends-reads over long-tail URLs read ~1 list of
 * 130-440 readers a call from disk, ~20 % of its CPU (BENCHMARKS.md,
 * reading round 16). A bigger set read a page at a time stays on disk. */
#define ZC_FILL_MEMBERS 1024
#define ZC_MAX_BYTES (256u << 10)
#define ZC_BUDGET ((size_t)128 << 20)

/* Remove up to limit entries of a scan from the collection (key, m) and
 * subtract them from m->size (the caller writes m); *removed is how many. */
int zs_remove_range(rx *x, hr_slice key, rmeta *m, bool reverse, double min, double max, size_t limit,
                    uint64_t *removed);

/* The sub-keys distinct ops read, for the prefetch of rocks.c: appends to
 * cfs/keys (keys in x->mem) what op will read given its key's metadata m. */
void distinct_plan(rx *x, const hr_op *op, const rmeta *m, int *cfs, hr_slice *keys, size_t *n);

/* Keys for one MultiGet (rocks.c's prefetch), in x->mem, growing as ops
 * plan their reads. */
typedef struct rplan {
    int *cfs;
    hr_slice *keys;
    size_t n, cap;
} rplan;
/* Make room for `more` entries after the n there are (rocks.c). */
void rplan_reserve(rx *x, rplan *p, size_t more);
/* Append (cf, key), growing the list; key must live until the MultiGet
 * (x->mem). */
void rplan_add(rx *x, rplan *p, int cf, hr_slice key);

/* Images of large packed sets (rocks_pimage.c says what and why). */
/* A set of fewer chunks, or a test of fewer members, goes through the
 * chunks. With 8 chunks, a zipf-feed friends-reads still searched ~40 % of
 * its tests in the chunks of sets of 1-7 chunks; with 2, its CPU a call was
 * 8-12 % lower (BENCHMARKS.md, reading round 15). A test of a few members
 * (a story's seen check) gains nothing from an image that would cost a read
 * of every chunk to build. */
#define PIMG_MIN_CHUNKS 2
#define PIMG_MIN_MEMBERS 64
#define PIMG_MAX_BYTES ((size_t)16 << 20) /* a larger set (~700,000 members) has no image */
#define PIMG_SLOTS 16384               /* the cache's slots */
#define PIMG_REBUILD_MS 1000           /* a set's image is built at most once in this time */
#define PIMG_BUILDS_PER_BATCH 4
#define PIMG_LOG_SLOTS 1024   /* the write log's slots, by the sets' key hashes */
#define PIMG_LOG_ENTRIES 64   /* the writes a slot remembers */
/* An image opened for searching: of the set's chunks as its snapshot saw
 * them, after the sequence number stamp, cut into 2^bits chunks. */
typedef struct pimg {
    const unsigned char *slots;
    uint64_t nslots, nall, stamp; /* nall: the slots, the last gap's included */
    unsigned bits;
} pimg;
/* One chunk as stored: n big-endian hashes, and their expiries (NULL: none). */
typedef struct pimg_chunk {
    const unsigned char *hs, *exps;
    size_t n;
} pimg_chunk;
/* What a batch's packed-set test does about images: img.slots set, it is
 * answered from that image, except for members of the ndirty chunks marked
 * in dirty (a bit per chunk), written since the image was built, which are
 * searched in those chunks; build, it reads every chunk and offers one. */
typedef struct pimg_op {
    pimg img;
    unsigned char *dirty;
    uint32_t ndirty;
    bool build;
} pimg_op;
static inline bool pimg_dirty(const pimg_op *st, uint32_t chunk) {
    return st->ndirty && (st->dirty[chunk / 8] >> (chunk % 8) & 1);
}
/* Whether a test of n members against set m would use an image. */
bool pimg_wanted(const rmeta *m, size_t n_members);
/* The image of the chunks (every one, in order) of a set of version
 * version cut into 2^bits chunks, read at a snapshot after sequence number
 * stamp, into out; false (out unusable) if it would pass PIMG_MAX_BYTES or
 * the hashes are not in order. */
bool pimg_build(uint64_t version, unsigned bits, uint64_t stamp, const pimg_chunk *chunks, size_t nc,
                hr_buf *out);
/* Open an image of the set's version and chunking; false if it is of another. */
bool pimg_open(hr_slice value, uint64_t version, unsigned bits, pimg *out);
/* Whether hash h is in the image, and its expiry. */
bool pimg_find(const pimg *im, uint64_t h, int64_t *expire_at);
/* Ask the CPU for the lines pimg_find will read for h. */
void pimg_prefetch(const pimg *im, uint64_t h);
/* The entry in slot i (< nall): false if the slot is a gap. */
bool pimg_entry(const pimg *im, uint64_t i, uint64_t *h, int64_t *expire_at);
/* At prefetch time, for a packed-set test op of set m: true if the test is
 * answered from a cached image (pimg_of(x, op)->img), which x now holds;
 * else it may be asked to build one (pimg_of(x, op)->build). */
bool pimg_plan(rx *x, const hr_op *op, const rmeta *m);
/* op's state (NULL: pimg_plan was never called for this batch). */
const pimg_op *pimg_of(const rx *x, const hr_op *op);
/* Build the image of set m from all its chunks and offer it to the cache. */
void pimg_offer(rx *x, const hr_op *op, const rmeta *m, const pimg_chunk *chunks, size_t nc);
/* Around the commit, as rx_cache_before_write / _after_write (which call
 * them): the chunks the batch writes are logged, so that the images built
 * before leave them out. */
void pimg_before_write(rx *x);
void pimg_after_write(rx *x, bool ok, bool wrote, uint64_t stamp);
/* Member columns (rocks_pcols.c): a test of op's members against set m
 * answered from the column of its image img, into out and *count; false if
 * the image has no column, and none could be filled. */
typedef struct pcols pcols;
pcols *pcols_new(void);
void pcols_free(pcols *p);
bool pcols_test(rx *x, const hr_op *op, const rmeta *m, const pimg *img, unsigned char *out, int64_t *count);
/* Tests answered from columns, columns filled, member rows (tests). */
void pcols_stats(const pcols *p, uint64_t *tests, uint64_t *fills, size_t *rows);
/* The store's log of chunk writes (rocks_pimage.c). */
typedef struct pimg_log pimg_log;
pimg_log *pimg_log_new(void);
void pimg_log_free(pimg_log *log);

/* splitmix64's finalizer: xor-shifts and multiplications by odd constants,
 * each invertible, so a bijection of 64-bit integers. A packed set stores
 * pset_mix(member ^ seed) for each member (rocks_pset.c); pset_unmix
 * (rocks_pcols.c) is its inverse. */
static inline uint64_t pset_mix(uint64_t z) {
    z ^= z >> 30;
    z *= UINT64_C(0xbf58476d1ce4e5b9);
    z ^= z >> 27;
    z *= UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return z;
}
uint64_t pset_unmix(uint64_t h);

/* Packed sets (rocks_pset.c). The chunks pset op will read given its key's
 * metadata m, appended to p. */
void pset_plan(rx *x, const hr_op *op, const rmeta *m, rplan *p);
/* How many chunks pset_plan may plan for op (an upper bound). */
size_t pset_plan_size(const rx *x, const hr_op *op, const rmeta *m);
/* Write every chunk the batch's hr_pset_add / hr_pset_rem changed, once
 * each; rocks.c calls it after the last op, before the commit. */
void pset_flush(rx *x);

/* ------------------------------------------------------------------------ */
/* Time lists (rocks_tl.c)                                                   */

/* Bulk time-list adds as table files (rocks_ingest.c). open: the
 * directory of the files (leftovers of a crash removed); close frees what
 * open and rocks.c's open set; write: the backend's tlbulk_write. */
int rocks_ingest_open(rocks_store *s, const char *path, const hr_store_options *opts, hr_err *err);
void rocks_ingest_close(rocks_store *s);
int rocks_ingest_write(hr_store *hs, hr_tlbulk *w, hr_err *err);

int op_tladd(rx *x, hr_op *op);
int op_tlrem(rx *x, hr_op *op);
int op_tlrange(rx *x, hr_op *op);
int op_tltrim(rx *x, hr_op *op);

/* The key encoding (drawn in rocks_tl.c), exposed for the tests. Each
 * appends to out. */
void tl_list_prefix(hr_buf *out, hr_slice list);      /* hash | len | list */
void tl_list_end(hr_buf *out, hr_slice list);         /* the first key after the list */
void tl_member_encode(hr_buf *out, hr_slice member);  /* escaped, order-reversing */
/* The length of tl_list_prefix's encoding of list. */
static inline size_t tl_list_prefix_len(hr_slice list) {
    return 8 + 2 + list.len;
}
void tl_key(hr_buf *out, hr_slice list, int64_t time_ms, hr_slice member);
/* The list's prefix and time_ms: no entry of time_ms or older sorts before it. */
void tl_time_key(hr_buf *out, hr_slice list, int64_t time_ms);
/* Move lo (a key of list) to the key right after the entry (time_ms,
 * member), when that lies further: where a read strictly after that
 * cursor starts. */
void tl_start_after(hr_buf *lo, hr_slice list, int64_t time_ms, hr_slice member);
/* Split an entry's key whose list prefix is prefix_len bytes: its time, and
 * its member into member (room for key.len bytes), *member_len bytes long.
 * -1 if malformed. */
int tl_key_parse(hr_slice key, size_t prefix_len, int64_t *time_ms, char *member, size_t *member_len);
/* Append the entry whose key suffix (time, encoded member) is sfx to a range
 * read's result: entries grown in out (*cap of them), at most limit. 0, or
 * HR_EIO with err filled when sfx is malformed. */
int tl_result_push(hr_result *res, hr_arena *out, size_t *cap, size_t limit, hr_slice sfx, hr_err *err);
/* Block-based tables with bloom filters of key prefixes only (the column
 * family's prefix extractor), sharing cache: for column families that are
 * scanned by prefix and never looked up by whole key (rocks.c). */
void rocks_prefix_bloom_tables(rocksdb_options_t *o, rocksdb_cache_t *cache);
/* Options of the "timelists" column family: its prefix extractor, hashed
 * memtable, tables with prefix blooms (sharing cache) and expiry filter. */
void tl_cf_options(rocksdb_options_t *o, rocksdb_cache_t *cache, rocksdb_compactionfilterfactory_t *filter);
/* Give level 0 of the time lists room for a burst of table files (bulk),
 * or take it back (see tl_cf_options). */
void tl_bulk_mode(rocks_store *s, bool bulk);

/* ------------------------------------------------------------------------ */
/* Hot time lists kept in memory (rocks_tlcache.c, which says how)           */

tlcache *tlcache_new(size_t keep); /* keep: newest entries loaded (0: 1024) */
void tlcache_free(tlcache *c);     /* NULL is a no-op */
size_t tlcache_lists(tlcache *c);  /* lists kept */
size_t tlcache_hits(tlcache *c);   /* range reads answered from memory so far */
/* Held by every batch that writes time lists while some are kept, from
 * before it chooses its stripes until after tlcache_apply. */
void tlcache_gate_enter(tlcache *c);
void tlcache_gate_leave(tlcache *c);
/* The kept list named list, or NULL. */
tlc_list *tlcache_find(tlcache *c, hr_slice list);
/* Answer a range read of the suffixes [lo, hi) (hi.ptr NULL: to the end of
 * the list) from memory, as op_tlrange would at the latest committed state:
 * true when answered (res filled; *rc 0 or HR_EIO), false when the list is
 * not loaded yet or the range reaches past what it holds. */
bool tlcache_range(tlcache *c, tlc_list *l, hr_slice lo, hr_slice hi, const hr_tlrange_spec *sp, hr_arena *out,
                   hr_result *res, int *rc, hr_err *err);
/* Record a write of the batch to a kept list (the batch holds the list's
 * stripe), applied by tlcache_apply after the commit, in order. */
void tlcache_note(rx *x, tlc_list *l, bool add, hr_slice sfx, int64_t expire_at);
void tlcache_apply(rx *x);
/* A hot read of a list not kept: keep it once the batch is over. */
void tlcache_want(rx *x, hr_slice list);
/* At the end of the batch, with no lock held: register and load the lists
 * it wanted kept. */
void tlcache_keep_wanted(rx *x);

/* ------------------------------------------------------------------------ */
/* Queues (rocks_queue.c)                                                    */

typedef struct rqueues rqueues;
rqueues *queues_new(void);
void queues_free(rqueues *qs); /* NULL is a no-op */

int op_qpush(rx *x, hr_op *op);
int op_qclaim(rx *x, hr_op *op);
int op_qack(rx *x, hr_op *op);
int op_qinfo(rx *x, hr_op *op);
/* The job an hr_qack reads, appended to p for the prefetch. */
void queue_plan(rx *x, const hr_op *op, rplan *p);
/* After the commit (committed) or a failed batch: apply the batch's changes
 * to the queues' in-memory state. */
void queue_finish(rx *x, bool committed);
/* A job's key (exposed for the tests). */
void queue_job_key(hr_buf *out, hr_slice queue, uint64_t seq);
/* Sorted sets kept in memory (rocks_zmem.c)                                 */

zreg *zreg_new(const hr_store_options *opts);
void zreg_free(zreg *r);
/* The in-memory order of the set (key, m->version) (m: its metadata, with
 * ZF_MEM), built from its member records when the process has not built it
 * yet; held by the batch until zmem_end. fresh: the batch is creating the
 * set (nothing to read). *out is NULL when the set no longer exists at that
 * version (a reader's snapshot older than the set). 0 or HR_EIO. */
int zmem_acquire(rx *x, hr_slice key, const rmeta *m, bool fresh, zent **out);
/* Reads of the committed state, each under the set's read lock. */
size_t zent_len(zent *e);
bool zent_score(zent *e, hr_slice member, uint64_t *enc);
/* Visit members in (score, member) order from the first at or after (enc,
 * member) (reverse: the last at or before it), until visit returns false. */
void zent_walk(zent *e, bool reverse, uint64_t enc, hr_slice member, zs_visit visit, void *ctx);
/* Stage a change (member copied), applied by zmem_commit. */
void zmem_stage(rx *x, zent *e, hr_slice member, bool removed, uint64_t enc);
/* Count moves (score changes) of a set on disk, toward moving it in. */
void zmem_moved(rx *x, hr_slice key, const rmeta *m, uint64_t moves);
/* Whether every sorted set lives in memory from its creation (tests). */
bool zmem_all(const rx *x);
/* After a successful commit, with the batch's locks held: apply the staged
 * changes, forget sets the batch deleted or replaced, move in sets that
 * qualified. */
void zmem_commit(rx *x);
/* After a failed commit: forget the sets the batch created. */
void zmem_abort(rx *x);
/* At the end of every batch: release what the batch held. */
void zmem_end(rx *x);

/* ------------------------------------------------------------------------ */
/* Compaction filters and the merge operator (rocks_filter.c)                */

rocksdb_compactionfilterfactory_t *rocks_meta_filter_factory(rocks_store *s);
rocksdb_compactionfilterfactory_t *rocks_sub_filter_factory(rocks_store *s, int cf);
/* Drops time-list entries expired for longer than the grace period, and the
 * index entries of sets of times that are gone (rocks_ztl.c). */
rocksdb_compactionfilterfactory_t *rocks_tl_filter_factory(rocks_store *s);
bool rocks_tlcap_declare(hr_store *store, hr_slice prefix, hr_slice suffix, size_t keep);
rocksdb_mergeoperator_t *rocks_hll_merge_operator(void);

#endif
