/* rocks/view.c — a batch's view of the store: its own writes over a snapshot.
 *
 * store.h promises that each op of a batch sees the ops before it, and
 * DESIGN.md that a batch of N reads costs O(1) MultiGets. Both come from one
 * small hash table, (column family, key) -> what this batch knows:
 *
 *   ABSENT   the key does not exist (read from the snapshot, or deleted by an
 *            earlier op of the batch)
 *   VALUE    its value (read from the snapshot, or written by an earlier op)
 *   MERGED   an earlier op wrote a merge operand: the value is the snapshot's
 *            value merged with the batch's operands, which only RocksDB's
 *            WriteBatchWithIndex can compute (GetFromBatchAndDB)
 *
 * rocks/engine.c fills the table before the first op runs: one MultiGet for the
 * metadata of every key of the batch, one for the sub-keys those ops will read
 * (members, sketch buckets). rx_get then answers from the table; a key nobody
 * foresaw costs one Get, and is remembered.
 *
 * Writes go to one WriteBatch, committed in one Write by rocks/engine.c, and are
 * recorded in the table. When a later op of the batch may iterate (a zrange
 * after a zadd), rocks/engine.c makes it a WriteBatchWithIndex, and range reads
 * (rx_iter) layer it over the snapshot iterator, so the zrange sees the new
 * member. Such an iterator must not be used across writes to the keys it is
 * positioned on (RocksDB's rule for NewIteratorWithBase): the ops collect what
 * they will delete and delete it after closing the iterator.
 *
 * A table entry may also hold a decoded form of its value (rx_aux: an HLL
 * sketch), so that a batch of adds to one counter decodes its 16 KiB sketch
 * once, and never asks RocksDB to apply the merge operands it wrote itself.
 *
 * Memory: the table, its keys and values live in x->mem, freed with the
 * batch; decoded forms are malloc'd and freed with the table. Values read
 * by a MultiGet stay in RocksDB's block cache, pinned (rx.pins), and values
 * taken from the record cache in its records, held (rx.held), until the
 * view is freed. Values are never changed in place.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "store/rocks/cache.h"
#include "store/rocks/pset.h"
#include "store/rocks/zset.h"

enum { V_EMPTY = 0, V_UNKNOWN /* an entry whose value is not read yet */, V_ABSENT, V_VALUE, V_MERGED };

struct vent {
    uint64_t hash;
    const char *key;
    size_t klen;
    const char *val;
    size_t vlen;
    void *aux; /* see rx_aux; malloc'd, owned by the view */
    uint8_t cf;
    uint8_t state;
    bool written;   /* by this batch */
    bool cacheable; /* a record of a cached kind, read from the DB (see rx_cached) */
};

static uint64_t hash_of(int cf, hr_slice key) {
    return XXH3_64bits_withSeed(key.ptr, key.len, (uint64_t)cf + 1);
}

static vent *slot_for(vent *tab, size_t cap, uint64_t h, int cf, hr_slice key) {
    size_t i = (size_t)h & (cap - 1);
    for (;;) {
        vent *e = &tab[i];
        if (e->state == V_EMPTY) return e;
        if (e->hash == h && e->cf == cf && e->klen == key.len && memcmp(e->key, key.ptr, key.len) == 0)
            return e;
        i = (i + 1) & (cap - 1);
    }
}

/* Emptied view tables, zeroed, kept for later batches that need as many
 * slots. A batch of packed-set tests keeps thousands of records (a zipf-feed
 * friends-reads ~5,000: a table of 1 MiB), and a fresh zeroed table took two
 * page faults per 4 KiB in every such batch, each with a TLB flush across
 * the process's threads, a large share of that query's CPU.
 * Small tables come as cheaply from malloc; huge ones are not kept. The
 * tables kept take the `views` share of the budget (rocks/memory.h). */
#define SPARES 4
#define SPARE_MIN ((size_t)1 << 10)
#define SPARE_MAX ((size_t)1 << 17)

struct vspares {
    pthread_mutex_t lock;
    size_t budget; /* bytes the kept tables may take */
    _Atomic size_t bytes;
    vent *tab[SPARES];
    size_t cap[SPARES];
};

vspares *vspares_new(size_t budget) {
    vspares *v = hr_xcalloc(1, sizeof *v);
    pthread_mutex_init(&v->lock, NULL);
    v->budget = budget;
    return v;
}

void vspares_free(vspares *v) {
    if (v == NULL) return;
    for (size_t i = 0; i < SPARES; i++)
        free(v->tab[i]);
    pthread_mutex_destroy(&v->lock);
    free(v);
}

size_t vspares_bytes(const vspares *v) {
    return atomic_load_explicit(&v->bytes, memory_order_relaxed);
}

static bool keepable(const vspares *v, size_t cap) {
    return cap >= SPARE_MIN && cap <= SPARE_MAX && cap * sizeof(vent) <= v->budget;
}

static vent *tab_new(vspares *v, size_t cap) {
    vent *tab = NULL;
    if (keepable(v, cap)) {
        pthread_mutex_lock(&v->lock);
        for (size_t i = 0; i < SPARES && tab == NULL; i++)
            if (v->cap[i] == cap) {
                tab = v->tab[i];
                v->tab[i] = NULL;
                v->cap[i] = 0;
                atomic_fetch_sub_explicit(&v->bytes, cap * sizeof *tab, memory_order_relaxed);
            }
        pthread_mutex_unlock(&v->lock);
    }
    return tab ? tab : hr_xcalloc(cap, sizeof *tab);
}

/* Keep tab, all of whose cap slots are zero, in place of a free or smaller
 * spare while the kept tables fit the share; else free it. */
static void tab_retire(vspares *v, vent *tab, size_t cap) {
    if (keepable(v, cap)) {
        pthread_mutex_lock(&v->lock);
        size_t smallest = 0;
        for (size_t i = 1; i < SPARES; i++)
            if (v->cap[i] < v->cap[smallest]) smallest = i;
        size_t held = atomic_load_explicit(&v->bytes, memory_order_relaxed);
        size_t after = held - v->cap[smallest] * sizeof *tab + cap * sizeof *tab;
        if (v->cap[smallest] < cap && after <= v->budget) {
            vent *old = v->tab[smallest];
            v->tab[smallest] = tab;
            v->cap[smallest] = cap;
            atomic_store_explicit(&v->bytes, after, memory_order_relaxed);
            tab = old;
        }
        pthread_mutex_unlock(&v->lock);
    }
    free(tab);
}

/* Rehash the table into cap slots (a power of two above twice its entries). */
static void rehash(rx *x, size_t cap) {
    vent *tab = tab_new(x->s->views, cap);
    for (size_t i = 0; i < x->tab_cap; i++) {
        vent *e = &x->tab[i];
        if (e->state == V_EMPTY) continue;
        *slot_for(tab, cap, e->hash, e->cf, hr_slice_of(e->key, e->klen)) = *e;
    }
    if (x->tab) {
        memset(x->tab, 0, x->tab_cap * sizeof *x->tab);
        tab_retire(x->s->views, x->tab, x->tab_cap);
    }
    x->tab = tab;
    x->tab_cap = cap;
}

static void grow(rx *x) {
    rehash(x, x->tab_cap ? x->tab_cap * 2 : 16);
}

void rx_view_reserve(rx *x, size_t more) {
    size_t cap = x->tab_cap ? x->tab_cap : 16;
    while ((x->tab_len + more + 1) * 2 > cap)
        cap *= 2;
    if (cap > x->tab_cap) rehash(x, cap);
}

/* The entry of (cf, key); with insert, created (V_UNKNOWN) when missing. The
 * pointer is valid until the next insert. */
static vent *lookup(rx *x, int cf, hr_slice key, bool insert) {
    if (x->tab_cap == 0) {
        if (!insert) return NULL;
        grow(x);
    }
    uint64_t h = hash_of(cf, key);
    vent *e = slot_for(x->tab, x->tab_cap, h, cf, key);
    if (e->state != V_EMPTY) return e;
    if (!insert) return NULL;
    if ((x->tab_len + 1) * 2 > x->tab_cap) {
        grow(x);
        e = slot_for(x->tab, x->tab_cap, h, cf, key);
    }
    x->tab_len++;
    e->hash = h;
    e->cf = (uint8_t)cf;
    e->key = hr_arena_copy(&x->mem, key).ptr;
    e->klen = key.len;
    e->state = V_UNKNOWN;
    return e;
}

static void set_value(rx *x, vent *e, const char *val, size_t len) {
    e->state = V_VALUE;
    e->val = hr_arena_copy(&x->mem, hr_slice_of(val, len)).ptr;
    e->vlen = len;
}

void rx_view_free(rx *x) {
    if (x->zit) rocksdb_iter_destroy(x->zit);
    if (x->zit_ropts) rocksdb_readoptions_destroy(x->zit_ropts);
    x->zit = NULL;
    x->zit_ropts = NULL;
    for (size_t i = 0; i < x->npins; i++)
        rocksdb_pinnableslice_destroy(x->pins[i]);
    x->pins = NULL; /* in x->mem */
    x->npins = x->pins_cap = 0;
    for (size_t i = 0; i < x->nheld; i++)
        rcache_release(x->held[i]);
    x->held = NULL; /* in x->mem */
    x->nheld = x->held_cap = 0;
    for (size_t i = 0; i < x->tab_cap; i++) {
        if (x->tab[i].state == V_EMPTY) continue;
        free(x->tab[i].aux);
        memset(&x->tab[i], 0, sizeof x->tab[i]);
    }
    tab_retire(x->s->views, x->tab, x->tab_cap);
    x->tab = NULL;
    x->tab_cap = x->tab_len = 0;
}

int rx_fail(rx *x, char *errptr) {
    hr_err_set(x->err, HR_EIO, "rocksdb: %s", errptr ? errptr : "unknown error");
    rocksdb_free(errptr);
    return HR_EIO;
}

bool rx_known(rx *x, int cf, hr_slice key, hr_slice *val, bool *found) {
    vent *e = lookup(x, cf, key, false);
    if (e == NULL || (e->state != V_ABSENT && e->state != V_VALUE)) return false;
    *found = e->state == V_VALUE;
    *val = *found ? hr_slice_of(e->val, e->vlen) : hr_slice_of(NULL, 0);
    return true;
}

int rx_get(rx *x, int cf, hr_slice key, hr_slice *val, bool *found) {
    vent *e = lookup(x, cf, key, false);
    if (e != NULL && (e->state == V_ABSENT || e->state == V_VALUE)) {
        *found = e->state == V_VALUE;
        *val = *found ? hr_slice_of(e->val, e->vlen) : hr_slice_of(NULL, 0);
        return 0;
    }
    char *errptr = NULL, *v;
    size_t vlen = 0;
    if (e != NULL && e->state == V_MERGED && x->wbi == NULL) /* merges come with an aux (rx_merge) */
        return hr_err_set(x->err, HR_EINTERNAL, "rocksdb: read of a merged key in an unindexed batch");
    if (e != NULL && e->state == V_MERGED)
        v = rocksdb_writebatch_wi_get_from_batch_and_db_cf(x->wbi, x->s->db, x->ropts, x->s->cf[cf], key.ptr,
                                                           key.len, &vlen, &errptr);
    else /* nobody foresaw this read, and the batch has not written the key */
        v = rocksdb_get_cf(x->s->db, x->ropts, x->s->cf[cf], key.ptr, key.len, &vlen, &errptr);
    if (errptr) {
        rocksdb_free(v);
        return rx_fail(x, errptr);
    }
    e = lookup(x, cf, key, true);
    if (v) {
        set_value(x, e, v, vlen); /* a merged value too, until the next merge */
        rocksdb_free(v);
    } else {
        e->state = V_ABSENT;
    }
    *found = e->state == V_VALUE;
    *val = *found ? hr_slice_of(e->val, e->vlen) : hr_slice_of(NULL, 0);
    return 0;
}

/* One column family's share of a prefetch: RocksDB's batched MultiGet takes
 * one column family a call. It looks the keys up level by level together (one
 * pass over each file's index and filter for all of them) and pins the values
 * in the block cache; the older rocksdb_multi_get_cf runs one Get per key and
 * mallocs a copy of every value. The view keeps the values pinned and points
 * into them (rx.pins) until the batch ends: a friends-reads on the friends'
 * side reads megabytes of packed-set chunks, which are then never copied. */
static int multi_get_cf(rx *x, int cf, size_t m, const char *const *kp, const size_t *kl) {
    rocksdb_pinnableslice_t **vals = hr_xcalloc(m, sizeof *vals);
    char **errs = hr_xcalloc(m, sizeof *errs);
    rocksdb_batched_multi_get_cf(x->s->db, x->ropts, x->s->cf[cf], m, kp, kl, vals, errs, false);
    int rc = 0;
    for (size_t i = 0; i < m; i++) {
        if (errs[i] && rc == 0) {
            rc = rx_fail(x, errs[i]);
            errs[i] = NULL;
        }
        if (vals[i] && rc == 0) {
            vent *e = lookup(x, cf, hr_slice_of(kp[i], kl[i]), false);
            e->state = V_VALUE;
            e->val = rocksdb_pinnableslice_value(vals[i], &e->vlen);
            x->pins = arena_grow(&x->mem, x->pins, x->npins, &x->pins_cap, sizeof *x->pins, 64, 0);
            x->pins[x->npins++] = vals[i];
        } else {
            rocksdb_pinnableslice_destroy(vals[i]);
        }
        free(errs[i]);
    }
    free(vals);
    free(errs);
    return rc;
}

int rx_prefetch(rx *x, size_t n, const int *cfs, const hr_slice *keys) {
    if (n == 0) return 0;
    /* Keys the view does not know yet, each once, grouped by column family. */
    const char **kp = hr_arena_alloc(&x->mem, n * sizeof *kp);
    size_t *kl = hr_arena_alloc(&x->mem, n * sizeof *kl);
    int rc = 0;
    for (int cf = 0; cf < CF_COUNT_ && rc == 0; cf++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (cfs[i] != cf) continue;
            vent *e = lookup(x, cf, keys[i], true);
            if (e->state != V_UNKNOWN) continue; /* known, or already in this MultiGet */
            e->state = V_ABSENT;                 /* until the MultiGet says otherwise */
            kp[m] = e->key;
            kl[m] = e->klen;
            m++;
        }
        if (m) rc = multi_get_cf(x, cf, m, kp, kl);
    }
    return rc;
}

static void batch_put(rx *x, int cf, hr_slice key, hr_slice val) {
    if (x->wbi)
        rocksdb_writebatch_wi_put_cf(x->wbi, x->s->cf[cf], key.ptr, key.len, val.ptr, val.len);
    else
        rocksdb_writebatch_put_cf(x->wb, x->s->cf[cf], key.ptr, key.len, val.ptr, val.len);
}

/* A write makes the decoded form stale: drop it. */
static vent *written(rx *x, int cf, hr_slice key) {
    vent *e = lookup(x, cf, key, true);
    free(e->aux);
    e->aux = NULL;
    e->written = true;
    x->dirty = true;
    return e;
}

void rx_put(rx *x, int cf, hr_slice key, hr_slice val) {
    batch_put(x, cf, key, val);
    set_value(x, written(x, cf, key), val.ptr, val.len);
}

void rx_put_aux(rx *x, int cf, hr_slice key, hr_slice val, void *aux) {
    batch_put(x, cf, key, val);
    vent *e = lookup(x, cf, key, true);
    if (e->aux != aux) free(e->aux);
    e->aux = aux;
    e->written = true;
    x->dirty = true;
    set_value(x, e, val.ptr, val.len);
}

void rx_del(rx *x, int cf, hr_slice key) {
    rx_del_blind(x, cf, key);
    written(x, cf, key)->state = V_ABSENT;
}

void rx_put_blind(rx *x, int cf, hr_slice key, hr_slice val) {
    batch_put(x, cf, key, val);
    x->dirty = true;
}

void rx_del_blind(rx *x, int cf, hr_slice key) {
    if (x->wbi)
        rocksdb_writebatch_wi_delete_cf(x->wbi, x->s->cf[cf], key.ptr, key.len);
    else
        rocksdb_writebatch_delete_cf(x->wb, x->s->cf[cf], key.ptr, key.len);
    x->dirty = true;
}

void rx_merge(rx *x, int cf, hr_slice key, hr_slice operand, bool aux_updated) {
    if (x->wbi)
        rocksdb_writebatch_wi_merge_cf(x->wbi, x->s->cf[cf], key.ptr, key.len, operand.ptr, operand.len);
    else
        rocksdb_writebatch_merge_cf(x->wb, x->s->cf[cf], key.ptr, key.len, operand.ptr, operand.len);
    vent *e = lookup(x, cf, key, true);
    if (!aux_updated) {
        free(e->aux);
        e->aux = NULL;
    }
    e->state = V_MERGED;
    e->written = true;
    x->dirty = true;
}

void **rx_aux(rx *x, int cf, hr_slice key) {
    return &lookup(x, cf, key, true)->aux;
}

/* A batch of many range reads on "zindex" (friends-reads: one per URL) would
 * build an iterator over every memtable and level for each. When the batch's
 * iterators see the snapshot alone (an unindexed batch), one iterator serves
 * them all: a range read never leaves its collection, which is the prefix
 * (rocks/engine.c, zindex_cf_options), so prefix_same_as_start bounds it as the
 * bounds would, and the callers check every key against their range anyway. */
static bool zindex_shared(rx *x, rx_iter *ri) {
    if (x->wbi) return false;
    if (x->zit == NULL) {
        x->zit_ropts = rocksdb_readoptions_create();
        rocksdb_readoptions_set_snapshot(x->zit_ropts, x->snap);
        rocksdb_readoptions_set_prefix_same_as_start(x->zit_ropts, 1);
        x->zit = rocksdb_create_iterator_cf(x->s->db, x->zit_ropts, x->s->cf[CF_ZINDEX]);
    }
    ri->it = x->zit;
    ri->shared = true;
    return true;
}

void rx_iter_open(rx *x, rx_iter *ri, int cf, hr_slice lower, hr_slice upper) {
    memset(ri, 0, sizeof *ri);
    if (cf == CF_ZINDEX && zindex_shared(x, ri)) return;
    hr_buf_append_slice(&ri->lower, lower);
    hr_buf_append_slice(&ri->upper, upper);
    ri->ropts = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(ri->ropts, x->snap);
    rocksdb_readoptions_set_iterate_lower_bound(ri->ropts, ri->lower.data, ri->lower.len);
    rocksdb_readoptions_set_iterate_upper_bound(ri->ropts, ri->upper.data, ri->upper.len);
    rocksdb_iterator_t *base = rocksdb_create_iterator_cf(x->s->db, ri->ropts, x->s->cf[cf]);
    /* With nothing written yet, the snapshot alone is the view. The wrapper
     * takes ownership of base. */
    ri->it = x->wbi && x->dirty
                 ? rocksdb_writebatch_wi_create_iterator_with_base_cf(x->wbi, base, x->s->cf[cf])
                 : base;
}

int rx_iter_status(rx *x, rx_iter *ri) {
    char *errptr = NULL;
    rocksdb_iter_get_error(ri->it, &errptr);
    return errptr ? rx_fail(x, errptr) : 0;
}

char *rocks_scan_end(rocksdb_iterator_t *it, rocksdb_readoptions_t *ro) {
    char *errptr = NULL;
    rocksdb_iter_get_error(it, &errptr);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return errptr;
}

void rx_iter_close(rx_iter *ri) {
    if (ri->it && !ri->shared) rocksdb_iter_destroy(ri->it);
    if (ri->ropts) rocksdb_readoptions_destroy(ri->ropts);
    hr_buf_free(&ri->lower);
    hr_buf_free(&ri->upper);
    memset(ri, 0, sizeof *ri);
}

/* The record cache ------------------------------------------------------------
 *
 * Nearly every op reads its key's metadata record, a few keys (a ranking,
 * the index every upsert writes) are read by every batch of a kind, and a
 * query reads the same stories' records and the same packed-set chunks call
 * after call. Each of those reads is a memtable walk or an SST block lookup.
 * So the view may take a metadata record, or a packed-set chunk, from a
 * cache of buckets of two ways (rbucket) instead, under two rules:
 *
 *   - a batch that holds the key's stripe lock may use the cached record:
 *     every write of such a record reaches the cache at commit, under that
 *     lock, so nobody can have changed it since;
 *   - any other batch may use it when it is the record its snapshot sees.
 *     rx.seq is the DB's latest sequence number taken just before the
 *     snapshot (a lower bound of the snapshot's own). A writer marks the
 *     key's bucket "in flux" before its Write and, after it, stores the
 *     record with the DB's latest sequence number then (an upper bound of
 *     its write's). A cached record stamped s <= rx.seq, in a bucket not in
 *     flux, is the record at the snapshot: a later write of it would have
 *     marked the bucket before writing, and replaced the record (stamped >
 *     rx.seq) after. A batch that read a record from the DB may offer it to
 *     the cache, stamped rx.seq, only if no write has stamped that bucket
 *     past rx.seq (each bucket keeps the highest stamp a write gave it,
 *     whatever keys it held): else a newer record may exist that the bucket
 *     no longer shows.
 *
 * A sorted set kept in memory (rocks/zset_memory.c) is read at its latest state
 * anyway, so its metadata may be used whatever its stamp. Every write of a
 * cached kind of record goes through rx_put / rx_del (metadata) or
 * pset_flush (chunks), or brackets itself with rcache_write_begin / _end
 * (rocks/zset_memory.c's promotion). */

#define RCACHE_LOCKS 256

/* A way's record: its key's bytes, then its value's. Batches that take the
 * value (rx_cached, rcache_take) point into it instead of copying it, so it
 * is shared: the way holds a reference until it is refilled or emptied,
 * each such batch one until it ends (rx_view_free). A zipf-feed
 * friends-reads takes every chunk of ~70 popular URLs' reader sets (4-8 KiB
 * each) to test 450 friends in each: copied, that was O(readers) of work
 * per URL for O(friends) tests, and its copies and the page faults of the
 * arena they filled were a large part of the call. */
typedef struct rattach {
    void *p;
    void (*free_p)(void *);
    size_t bytes;
    _Atomic size_t *counter; /* its cache's bytes, which count it */
} rattach;

struct rblob {
    _Atomic uint32_t refs;
    _Atomic(rattach *) attached; /* a caller's form of the record (rcache_attach) */
    char bytes[];
};

static rblob *blob_new(size_t len) {
    rblob *b = hr_xmalloc(sizeof *b + len + 1);
    atomic_init(&b->refs, 1);
    atomic_init(&b->attached, NULL);
    return b;
}

void *rcache_attached(const rblob *b) {
    rattach *a = atomic_load_explicit(&((rblob *)b)->attached, memory_order_acquire);
    return a ? a->p : NULL;
}

void rcache_share(rblob *b) {
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void rcache_release(rblob *b) {
    if (b == NULL || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
    rattach *a = atomic_load_explicit(&b->attached, memory_order_acquire);
    if (a) {
        atomic_fetch_sub_explicit(a->counter, a->bytes, memory_order_relaxed);
        a->free_p(a->p);
        free(a);
    }
    free(b);
}

/* A way of a bucket: one record. */
typedef struct rway {
    uint64_t hash;
    rblob *blob; /* NULL when empty */
    uint32_t klen, vlen;
    uint64_t stamp; /* of the record */
    uint8_t state;  /* V_EMPTY, V_ABSENT, V_VALUE */
} rway;

/* Two ways per bucket: a key may sit in either of its bucket's. Direct
 * mapping (one way) made two keys of a working set that hash alike evict
 * each other on every use: 20,000 tail URLs in 1,048,576 slots are ~190
 * such pairs, so nearly every tail-feed friends-reads went to RocksDB for
 * a couple of them. With two ways and least-recently-used replacement,
 * three keys must meet in a bucket. influx and watermark are the bucket's:
 * a write of any of its keys marks it, as it marked the one slot before. */
#define RCACHE_WAYS 2
typedef struct rbucket {
    rway way[RCACHE_WAYS];
    uint32_t influx;    /* writers between write_begin and write_end */
    uint8_t recent;     /* the way used last: the other is replaced first */
    uint64_t watermark; /* the highest stamp a write gave this bucket */
} rbucket;

struct rcache {
    size_t nbuckets; /* a power of two */
    size_t max_value;
    size_t budget;        /* bytes of records (key and value) all ways may hold together */
    _Atomic size_t bytes; /* bytes of records the ways hold */
    pthread_mutex_t locks[RCACHE_LOCKS];
    rbucket *buckets;
};

rcache *rcache_new(size_t nslots, size_t max_value, size_t budget) {
    rcache *c = hr_xcalloc(1, sizeof *c);
    c->nbuckets = nslots > RCACHE_WAYS ? nslots / RCACHE_WAYS : 1;
    c->max_value = max_value;
    c->budget = budget;
    atomic_init(&c->bytes, 0);
    /* The buckets' pages are the kernel's zero page until first used, so a
     * big cache costs memory only as it fills; huge pages, because every
     * lookup lands on a random bucket of up to tens of megabytes. */
    c->buckets = hr_table_calloc(c->nbuckets, sizeof *c->buckets);
    for (size_t i = 0; i < RCACHE_LOCKS; i++)
        pthread_mutex_init(&c->locks[i], NULL);
    return c;
}

void *rcache_attach(rcache *c, rblob *b, void *p, size_t bytes, void (*free_p)(void *)) {
    rattach *a = hr_xmalloc(sizeof *a), *none = NULL;
    *a = (rattach){.p = p, .free_p = free_p, .bytes = bytes, .counter = &c->bytes};
    if (atomic_compare_exchange_strong_explicit(&b->attached, &none, a, memory_order_acq_rel,
                                                memory_order_acquire)) {
        atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
        return p;
    }
    free_p(p); /* another caller attached first */
    free(a);
    return none->p;
}

rcache *rcache_for_memory(size_t memory, size_t bytes_per_slot, size_t max_value) {
    size_t slots = 1024;
    while (slots < memory / bytes_per_slot)
        slots *= 2;
    size_t slot_bytes = slots / RCACHE_WAYS * sizeof(rbucket);
    /* the buckets come out of the memory, at most half of it */
    size_t records = memory - (slot_bytes < memory / 2 ? slot_bytes : memory / 2);
    return rcache_new(slots, max_value, records);
}

void rcache_free(rcache *c) {
    if (c == NULL) return;
    for (size_t i = 0; i < c->nbuckets; i++)
        for (int w = 0; w < RCACHE_WAYS; w++)
            rcache_release(c->buckets[i].way[w].blob);
    for (size_t i = 0; i < RCACHE_LOCKS; i++)
        pthread_mutex_destroy(&c->locks[i]);
    hr_table_free(c->buckets, c->nbuckets, sizeof *c->buckets);
    free(c);
}

static uint64_t rcache_hash(hr_slice key) {
    return XXH3_64bits_withSeed(key.ptr, key.len, 0x6d63);
}

static rbucket *bucket_of(rcache *c, uint64_t h) {
    return &c->buckets[h & (c->nbuckets - 1)];
}

/* The bucket of key, locked; unlock *lock after. */
static rbucket *bucket_lock(rcache *c, hr_slice key, uint64_t *h, pthread_mutex_t **lock) {
    *h = rcache_hash(key);
    size_t i = *h & (c->nbuckets - 1);
    *lock = &c->locks[i % RCACHE_LOCKS];
    pthread_mutex_lock(*lock);
    return &c->buckets[i];
}

static bool way_holds(const rway *w, uint64_t h, hr_slice key) {
    return w->state != V_EMPTY && w->hash == h && w->klen == key.len &&
           memcmp(w->blob->bytes, key.ptr, key.len) == 0;
}

/* The way of a locked bucket that holds key, or NULL. */
static rway *way_of(rbucket *bk, uint64_t h, hr_slice key) {
    for (int w = 0; w < RCACHE_WAYS; w++)
        if (way_holds(&bk->way[w], h, key)) return &bk->way[w];
    return NULL;
}

/* Note a use of way w of bk: the other way is replaced first. */
static void way_used(rbucket *bk, const rway *w) {
    bk->recent = (uint8_t)(w - bk->way);
}

/* Where key's record goes in a locked bucket: the way that holds it, else
 * an empty way, else the one used least recently. */
static rway *way_for(rbucket *bk, uint64_t h, hr_slice key) {
    rway *w = way_of(bk, h, key);
    if (w) return w;
    for (int i = 0; i < RCACHE_WAYS; i++)
        if (bk->way[i].state == V_EMPTY) return &bk->way[i];
    _Static_assert(RCACHE_WAYS == 2, "one bit of recency names the other way");
    return &bk->way[1 - bk->recent];
}

/* Another reference to a locked way's record. */
static rblob *way_share(rway *w) {
    rcache_share(w->blob);
    return w->blob;
}

/* The bytes of the budget a locked way's record uses. */
static size_t way_bytes(const rway *w) {
    return w->blob ? (size_t)w->klen + w->vlen : 0;
}

/* Empty a locked way. */
static void way_empty(rcache *c, rway *w) {
    atomic_fetch_sub_explicit(&c->bytes, way_bytes(w), memory_order_relaxed);
    rcache_release(w->blob);
    w->blob = NULL;
    w->vlen = 0;
    w->state = V_EMPTY;
}

/* Whether key's record, with a value of len bytes, may replace what a
 * locked way holds. The budget is checked without a global lock, so
 * threads filling other buckets at the same instant may overshoot it by one
 * record each. */
static bool way_fits(rcache *c, const rway *w, hr_slice key, size_t len) {
    size_t held = atomic_load_explicit(&c->bytes, memory_order_relaxed) - way_bytes(w);
    return len <= c->max_value && held + key.len + len <= c->budget;
}

/* Store a record in a way of a locked bucket (way_fits said it may). */
static void way_fill(rcache *c, rbucket *bk, rway *w, uint64_t h, hr_slice key, bool found, hr_slice raw,
                     uint64_t stamp) {
    rblob *blob = blob_new(key.len + (found ? raw.len : 0));
    memcpy(blob->bytes, key.ptr, key.len);
    if (found && raw.len) memcpy(blob->bytes + key.len, raw.ptr, raw.len);
    size_t vlen = found ? raw.len : 0;
    atomic_fetch_add_explicit(&c->bytes, key.len + vlen, memory_order_relaxed);
    atomic_fetch_sub_explicit(&c->bytes, way_bytes(w), memory_order_relaxed);
    rcache_release(w->blob);
    w->hash = h;
    w->blob = blob;
    w->klen = (uint32_t)key.len;
    w->vlen = (uint32_t)vlen;
    w->state = found ? V_VALUE : V_ABSENT;
    w->stamp = stamp;
    way_used(bk, w);
}

void rcache_write_begin(rcache *c, hr_slice key) {
    uint64_t h;
    pthread_mutex_t *lock;
    rbucket *bk = bucket_lock(c, key, &h, &lock);
    bk->influx++;
    pthread_mutex_unlock(lock);
}

void rcache_write_end(rcache *c, hr_slice key, bool ok, bool found, hr_slice raw, uint64_t stamp) {
    uint64_t h;
    pthread_mutex_t *lock;
    rbucket *bk = bucket_lock(c, key, &h, &lock);
    bk->influx--;
    rway *w = way_for(bk, h, key);
    if (ok && way_fits(c, w, key, found ? raw.len : 0)) {
        way_fill(c, bk, w, h, key, found, raw, stamp);
    } else if (way_holds(w, h, key)) { /* failed, or no room to keep it: forget it */
        way_empty(c, w);
    }
    if (ok && stamp > bk->watermark) bk->watermark = stamp;
    pthread_mutex_unlock(lock);
}

bool rcache_take(rcache *c, hr_slice key, uint64_t seq, rblob **held, hr_slice *val) {
    uint64_t h;
    pthread_mutex_t *lock;
    rbucket *bk = bucket_lock(c, key, &h, &lock);
    rway *w = way_of(bk, h, key);
    bool usable = w && w->state == V_VALUE && bk->influx == 0 && w->stamp <= seq;
    if (usable) {
        *val = hr_slice_of(w->blob->bytes + w->klen, w->vlen);
        *held = way_share(w);
        way_used(bk, w);
    }
    pthread_mutex_unlock(lock);
    return usable;
}

/* Offer a record read at a snapshot taken just after seq (found false: the
 * key was absent), unless a write has stamped its bucket past seq or is
 * under way, or it does not fit. */
static void offer(rcache *c, hr_slice key, bool found, hr_slice val, uint64_t seq) {
    uint64_t h;
    pthread_mutex_t *lock;
    rbucket *bk = bucket_lock(c, key, &h, &lock);
    if (bk->influx == 0 && bk->watermark <= seq) {
        rway *w = way_for(bk, h, key);
        if (way_fits(c, w, key, found ? val.len : 0)) way_fill(c, bk, w, h, key, found, val, seq);
    }
    pthread_mutex_unlock(lock);
}

void rcache_offer(rcache *c, hr_slice key, hr_slice val, uint64_t seq) {
    if (val.len > c->max_value) return;
    offer(c, key, true, val, seq);
}

size_t rcache_bytes(rcache *c) {
    return atomic_load_explicit(&c->bytes, memory_order_relaxed);
}

size_t rcache_count(rcache *c) {
    size_t n = 0;
    for (size_t i = 0; i < c->nbuckets; i++) {
        pthread_mutex_t *lock = &c->locks[i % RCACHE_LOCKS];
        pthread_mutex_lock(lock);
        for (int w = 0; w < RCACHE_WAYS; w++)
            n += c->buckets[i].way[w].state != V_EMPTY;
        pthread_mutex_unlock(lock);
    }
    return n;
}

static rcache *cache_of(rx *x, int cf) {
    return cf == CF_META ? x->s->meta_cache : x->s->chunk_cache;
}

static bool holds_stripe(const rx *x, hr_slice key) {
    uint32_t st = rocks_stripe(key);
    size_t lo = 0, hi = x->nstripes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->stripes[mid] < st)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->nstripes && x->stripes[lo] == st;
}

void rx_cache_prefetch(rx *x, int cf, hr_slice key, bool record) {
    rcache *c = cache_of(x, cf);
    uint64_t h = rcache_hash(key);
    rbucket *bk = bucket_of(c, h);
    if (!record) { /* a bucket spans two cache lines at most */
        __builtin_prefetch(bk);
        __builtin_prefetch((const char *)(bk + 1) - 1);
        return;
    }
    /* A hint only: read without the bucket's lock, the record may be gone
     * by the time the CPU fetches it (a prefetch never faults). */
    for (int w = 0; w < RCACHE_WAYS; w++) {
        if (__atomic_load_n(&bk->way[w].hash, __ATOMIC_RELAXED) != h) continue;
        rblob *b = __atomic_load_n(&bk->way[w].blob, __ATOMIC_RELAXED);
        if (b) __builtin_prefetch(b);
    }
}

void rx_hold(rx *x, rblob *held) {
    x->held = arena_grow(&x->mem, x->held, x->nheld, &x->held_cap, sizeof *x->held, 64, 0);
    x->held[x->nheld++] = held;
}

bool rx_cached(rx *x, int cf, hr_slice key) {
    vent *e = lookup(x, cf, key, false);
    if (e && e->state != V_UNKNOWN) return false; /* the view has it already */
    /* Whose stripe: a chunk's is its set's. */
    hr_slice user = key, rest;
    uint64_t version;
    if (cf != CF_META && key_parse(key, &user, &version, &rest) != 0) return false;
    bool locked = holds_stripe(x, user), used = false;
    uint64_t h;
    pthread_mutex_t *lock;
    rbucket *bk = bucket_lock(cache_of(x, cf), key, &h, &lock);
    rway *w = way_of(bk, h, key);
    if (w) {
        hr_slice raw = hr_slice_of(w->blob->bytes + w->klen, w->vlen);
        rmeta m;
        used = locked || (bk->influx == 0 && w->stamp <= x->seq) ||
               (cf == CF_META && w->state == V_VALUE && meta_decode(raw, &m) == 0 && m.type == T_ZSET &&
                (m.zflags & ZF_MEM));
        if (used) {
            way_used(bk, w);
            e = lookup(x, cf, key, true);
            if (w->state == V_VALUE) { /* shared, not copied: see rblob */
                rx_hold(x, way_share(w));
                e->state = V_VALUE;
                e->val = raw.ptr;
                e->vlen = raw.len;
            } else {
                e->state = V_ABSENT;
            }
        }
    }
    pthread_mutex_unlock(lock);
    if (!used) lookup(x, cf, key, true)->cacheable = true; /* read from the DB: offer it after */
    return used;
}

/* The records of a cached kind the batch writes: its metadata records, and
 * through their modules' hooks the packed-set chunks pset_flush wrote (and
 * the images they touch) and the sorted sets whose entries it wrote. */
void rx_cache_before_write(rx *x) {
    for (size_t i = 0; i < x->tab_cap; i++) {
        vent *e = &x->tab[i];
        if (e->cf == CF_META && e->written)
            rcache_write_begin(x->s->meta_cache, hr_slice_of(e->key, e->klen));
    }
    pset_before_write(x);
    zc_before_write(x);
}

/* A batch offers the chunk cache at most its slots / OFFER_SHARE of the
 * chunks it read (slots: its ways). A query that reads more chunks than
 * the cache holds (a friends-reads of 1,000 heavy readers' packed sets
 * reads ~8,000) copied them into slots that the same batch then evicted,
 * and a zipf-feed query's offers were mostly evicted by the next query's:
 * those copies and their page faults showed in both queries' CPU, and a
 * thirty-second share cuts them without hurting the worst case. A query of
 * a few dozen chunks (stories' unseen) offers them all either way. Metadata
 * records are small and their cache 4x larger: no cap. */
#define OFFER_SHARE 32

void rx_cache_after_write(rx *x, bool ok, bool wrote) {
    uint64_t stamp = ok && wrote ? rocksdb_get_latest_sequence_number(x->s->db) : 0;
    zc_after_write(x, ok, wrote, stamp);
    pset_after_write(x, ok, wrote, stamp);
    size_t chunk_offers_left = x->s->chunk_cache->nbuckets * RCACHE_WAYS / OFFER_SHARE;
    for (size_t i = 0; i < x->tab_cap; i++) {
        vent *e = &x->tab[i];
        if (e->state != V_VALUE && e->state != V_ABSENT) continue;
        hr_slice key = hr_slice_of(e->key, e->klen), val = hr_slice_of(e->val, e->vlen);
        bool found = e->state == V_VALUE;
        if (e->cf == CF_META && e->written) {
            if (wrote) rcache_write_end(x->s->meta_cache, key, ok, found, val, stamp);
            continue;
        }
        if (!ok || !e->cacheable || e->written || (found && val.len > cache_of(x, e->cf)->max_value))
            continue;
        if (e->cf == CF_SUB) {
            if (chunk_offers_left == 0) continue; /* the chunk cache's share is used */
            chunk_offers_left--;
        }
        offer(cache_of(x, e->cf), key, found, val, x->seq); /* read at the batch's snapshot */
    }
}

/* Metadata through the view ------------------------------------------------ */

int rx_meta(rx *x, hr_slice key, rmeta *m) {
    hr_slice raw;
    bool found;
    int rc = rx_get(x, CF_META, key, &raw, &found);
    if (rc) return rc;
    if (!found) {
        memset(m, 0, sizeof *m);
        return 0;
    }
    if (meta_decode(raw, m) != 0)
        return hr_err_set(x->err, HR_EIO, "rocksdb: corrupt metadata record (%zu bytes)", raw.len);
    return 0;
}

void rx_put_meta(rx *x, hr_slice key, const rmeta *m) {
    hr_buf buf = HR_BUF_INIT;
    meta_encode(m, &buf);
    rx_put(x, CF_META, key, hr_buf_slice(&buf));
    hr_buf_free(&buf);
}

uint64_t rx_new_version(rx *x) {
    return atomic_fetch_add(&x->s->next_version, 1);
}
