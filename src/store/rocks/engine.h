/* engine.h — the RocksDB backend's engine: the store (column families,
 * stripe locks, what it keeps in memory) and one batch being executed (rx):
 * its view of the store (its own writes over a snapshot, reads grouped into
 * MultiGets, view.c), iterators, and the prefetch plan. Every data type's
 * file (values.c, zset*.c, distinct.c, pset*.c, timelist*.c, queue.c)
 * builds on this header and its own; engine.c opens, closes and executes.
 *
 * Ownership, unless a declaration says otherwise: pointer and slice
 * parameters are borrowed for the call; slices handed back point into the
 * batch's scratch arena (x->mem) and stay valid until the batch ends; every
 * function that can fail returns 0 or an hr_err code with x->err filled. */
#ifndef HR_ROCKS_ENGINE_H
#define HR_ROCKS_ENGINE_H

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <string.h>
#include <xxhash.h>

#include "common/arena.h"
#include "common/buf.h"
#include "store/backend.h"
#include "store/rocks/codec.h"
#include "store/rocks/memory.h"

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

typedef struct zreg zreg;       /* the sorted sets kept in memory (rocks_zmem.c) */
typedef struct rcache rcache;   /* recently used records of one kind (rocks_view.c) */
typedef struct rblob rblob;     /* one record of an rcache, shared by reference (rocks_view.c) */
typedef struct vspares vspares; /* emptied view tables kept for reuse (rocks_view.c) */
typedef struct tlcache tlcache; /* hot time lists' newest entries (rocks_tlcache.c) */

/* The stripe of a key. */
static inline uint32_t rocks_stripe(hr_slice key) {
    return (uint32_t)(XXH3_64bits(key.ptr, key.len) & (ROCKS_STRIPES - 1));
}

/* A declaration (hr_store_declare): caps are enforced by the time lists'
 * compaction filter (rocks/filter.c), sets of times are made by
 * rocks/zset.c. Set once; only keep changes after. */
typedef struct rocks_decl {
    hr_decl_kind kind;
    char prefix[HR_DECL_AFFIX_MAX], suffix[HR_DECL_AFFIX_MAX];
    size_t prefix_len, suffix_len;
    _Atomic size_t keep;
} rocks_decl;

/* Whether key is of d's family. */
static inline bool rocks_decl_matches(const rocks_decl *d, hr_slice key) {
    return key.len >= d->prefix_len + d->suffix_len && memcmp(key.ptr, d->prefix, d->prefix_len) == 0 &&
           memcmp(key.ptr + key.len - d->suffix_len, d->suffix, d->suffix_len) == 0;
}

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
    /* What each cache may hold (rocks/memory.h), and RocksDB's block cache. */
    rocks_tuning budget;
    rocksdb_cache_t *blocks;
    zreg *zreg;
    tlcache *tlc;
    rcache *meta_cache;        /* metadata records */
    rcache *chunk_cache;       /* packed-set chunks */
    rcache *zset_cache;        /* whole small sorted sets on disk (rocks_zcache.c) */
    rcache *pset_images;       /* images of large packed sets (rocks_pimage.c) */
    struct pimg_log *pimg_log; /* the chunks written since, for the images to leave out */
    _Atomic int64_t
        pimg_built[PIMG_COOLDOWN_SLOTS]; /* when a set hashing here last had an image built (ms) */
    _Atomic uint64_t pimg_tests;         /* packed-set tests answered from an image (tests) */
    struct pcols *pcols;                 /* member columns of the most tested images (rocks_pcols.c) */
    vspares *views;                      /* batches' emptied view tables */
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
    /* Declarations: decls[0, n_decls) are set (one is filled in before
     * n_decls counts it), so readers take no lock; declaring one takes
     * decls_lock. */
    rocks_decl decls[HR_DECL_MAX];
    _Atomic size_t n_decls;
    pthread_mutex_t decls_lock;
} rocks_store;

/* Whether key is of a declared family of this kind. Takes no lock (see
 * decls above): cheap enough for every creation of a set. */
static inline bool rocks_declared(rocks_store *s, hr_decl_kind kind, hr_slice key) {
    size_t n = atomic_load_explicit(&s->n_decls, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (s->decls[i].kind == kind && rocks_decl_matches(&s->decls[i], key)) return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* One batch being executed (rocks.c, rocks_view.c)                          */

/* The private state of a data type's module in one batch, its part: the
 * module defines it, makes it in x->mem on its first use in the batch, and
 * frees what it holds outside x->mem in the hooks rocks/engine.c calls at
 * the end of the batch (zmem_end, tl_end). The engine sees none of their
 * fields. */
struct pset_rx;   /* packed-set chunks the batch changed (rocks/pset.c) */
struct pimg_rx;   /* images of large packed sets (rocks/pset_image.c) */
struct pcol_rx;   /* their member columns (rocks/pset_columns.c) */
struct zcache_rx; /* whole sorted sets written and read (rocks/zset_cache.c) */
struct zmem_rx;   /* sets kept in memory (rocks/zset_memory.c) */
struct tl_rx;     /* time lists' scratch (rocks/timelist.c) */
struct tlc_rx;    /* time lists kept in memory (rocks/timelist_cache.c) */
struct queue_rx;  /* queue changes, applied after the commit (rocks/queue.c) */

typedef struct vent vent; /* a view entry, private to rocks_view.c */

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
    /* The data types' parts (above): NULL until their module makes one. */
    struct pset_rx *pset;
    struct pimg_rx *pimg;
    struct pcol_rx *pcol;
    struct zcache_rx *zcache;
    struct zmem_rx *zmem;
    struct tl_rx *tl;
    struct tlc_rx *tlc;
    struct queue_rx *queue;
} rx;

/* The batch's part `field` of rx, made (zeroed, in x->mem, so it goes with
 * the batch) by its module's first use of it. */
#define RX_PART(x, field)                                                                                    \
    ((x)->field ? (x)->field : ((x)->field = hr_arena_calloc(&(x)->mem, sizeof *(x)->field)))

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
 * new zeroed block each time) showed in a zipf-feed friends-reads' CPU. */
void rx_view_reserve(rx *x, size_t more);

/* The emptied view tables a store keeps for its batches (rocks/view.c): up
 * to four, together at most budget bytes (the `views` share). */
vspares *vspares_new(size_t budget);
void vspares_free(vspares *v);
size_t vspares_bytes(const vspares *v);

/* Load the metadata of key through the view (m->type T_NONE when missing). A
 * corrupt record is an HR_EIO. */
int rx_meta(rx *x, hr_slice key, rmeta *m);
/* Write m as key's metadata. */
void rx_put_meta(rx *x, hr_slice key, const rmeta *m);
/* A fresh collection version. */
uint64_t rx_new_version(rx *x);

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

#endif
