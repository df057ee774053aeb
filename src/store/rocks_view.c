/* rocks_view.c — a batch's view of the store: its own writes over a snapshot.
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
 * rocks.c fills the table before the first op runs: one MultiGet for the
 * metadata of every key of the batch, one for the sub-keys those ops will read
 * (members, sketch buckets). rx_get then answers from the table; a key nobody
 * foresaw costs one Get, and is remembered.
 *
 * Writes go to one WriteBatch, committed in one Write by rocks.c, and are
 * recorded in the table. When a later op of the batch may iterate (a zrange
 * after a zadd), rocks.c makes it a WriteBatchWithIndex, and range reads
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
 * batch; decoded forms are malloc'd and freed with the table.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "store/rocks_internal.h"

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
    bool written; /* by this batch */
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

static void grow(rx *x) {
    size_t cap = x->tab_cap ? x->tab_cap * 2 : 16;
    vent *tab = hr_xcalloc(cap, sizeof *tab);
    for (size_t i = 0; i < x->tab_cap; i++) {
        vent *e = &x->tab[i];
        if (e->state == V_EMPTY) continue;
        *slot_for(tab, cap, e->hash, e->cf, hr_slice_of(e->key, e->klen)) = *e;
    }
    free(x->tab);
    x->tab = tab;
    x->tab_cap = cap;
}

/* The entry of (cf, key); with insert, created (V_EMPTY) when missing. The
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
    for (size_t i = 0; i < x->tab_cap; i++)
        free(x->tab[i].aux);
    free(x->tab);
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

int rx_prefetch(rx *x, size_t n, const int *cfs, const hr_slice *keys) {
    if (n == 0) return 0;
    /* Keys the view does not know yet, each once. */
    const rocksdb_column_family_handle_t **hcf = hr_arena_alloc(&x->mem, n * sizeof *hcf);
    const char **kp = hr_arena_alloc(&x->mem, n * sizeof *kp);
    size_t *kl = hr_arena_alloc(&x->mem, n * sizeof *kl);
    int *kcf = hr_arena_alloc(&x->mem, n * sizeof *kcf);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        vent *e = lookup(x, cfs[i], keys[i], true);
        if (e->state != V_UNKNOWN) continue; /* known, or already in this MultiGet */
        e->state = V_ABSENT;                 /* until the MultiGet says otherwise */
        hcf[m] = x->s->cf[cfs[i]];
        kp[m] = e->key;
        kl[m] = e->klen;
        kcf[m] = cfs[i];
        m++;
    }
    if (m == 0) return 0;
    char **vals = hr_xcalloc(m, sizeof *vals);
    size_t *vlens = hr_xcalloc(m, sizeof *vlens);
    char **errs = hr_xcalloc(m, sizeof *errs);
    rocksdb_multi_get_cf(x->s->db, x->ropts, hcf, m, kp, kl, vals, vlens, errs);
    int rc = 0;
    for (size_t i = 0; i < m; i++) {
        if (errs[i] && rc == 0) {
            rc = rx_fail(x, errs[i]);
            errs[i] = NULL;
        }
        if (vals[i] && rc == 0)
            set_value(x, lookup(x, kcf[i], hr_slice_of(kp[i], kl[i]), false), vals[i], vlens[i]);
        rocksdb_free(vals[i]);
        rocksdb_free(errs[i]);
    }
    free(vals);
    free(vlens);
    free(errs);
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

void rx_iter_open(rx *x, rx_iter *ri, int cf, hr_slice lower, hr_slice upper) {
    memset(ri, 0, sizeof *ri);
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

void rx_iter_close(rx_iter *ri) {
    if (ri->it) rocksdb_iter_destroy(ri->it);
    if (ri->ropts) rocksdb_readoptions_destroy(ri->ropts);
    hr_buf_free(&ri->lower);
    hr_buf_free(&ri->upper);
    memset(ri, 0, sizeof *ri);
}

/* The metadata cache ---------------------------------------------------------
 *
 * Direct-mapped: a key lives in the slot its hash names, and a new key there
 * evicts the old one. Slots are guarded by striped mutexes. */

#define MCACHE_SLOTS 16384 /* a power of two */
#define MCACHE_LOCKS 256

typedef struct mslot {
    uint64_t hash;
    char *blob; /* key bytes, then value bytes; malloc'd */
    uint32_t klen, vlen;
    uint8_t state; /* V_EMPTY, V_ABSENT, V_VALUE */
} mslot;

struct mcache {
    pthread_mutex_t locks[MCACHE_LOCKS];
    mslot slots[MCACHE_SLOTS];
};

mcache *mcache_new(void) {
    mcache *c = hr_xcalloc(1, sizeof *c);
    for (size_t i = 0; i < MCACHE_LOCKS; i++)
        pthread_mutex_init(&c->locks[i], NULL);
    return c;
}

void mcache_free(mcache *c) {
    if (c == NULL) return;
    for (size_t i = 0; i < MCACHE_SLOTS; i++)
        free(c->slots[i].blob);
    for (size_t i = 0; i < MCACHE_LOCKS; i++)
        pthread_mutex_destroy(&c->locks[i]);
    free(c);
}

static uint64_t mcache_hash(hr_slice key) {
    return XXH3_64bits_withSeed(key.ptr, key.len, 0x6d63);
}

void mcache_set(mcache *c, hr_slice key, bool found, hr_slice raw) {
    uint64_t h = mcache_hash(key);
    size_t i = h & (MCACHE_SLOTS - 1);
    char *blob = hr_xmalloc(key.len + (found ? raw.len : 0) + 1);
    memcpy(blob, key.ptr, key.len);
    if (found && raw.len) memcpy(blob + key.len, raw.ptr, raw.len);
    pthread_mutex_t *lock = &c->locks[i % MCACHE_LOCKS];
    pthread_mutex_lock(lock);
    mslot *sl = &c->slots[i];
    free(sl->blob);
    *sl = (mslot){h, blob, (uint32_t)key.len, found ? (uint32_t)raw.len : 0, found ? V_VALUE : V_ABSENT};
    pthread_mutex_unlock(lock);
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

bool rx_meta_from_cache(rx *x, hr_slice key) {
    mcache *c = x->s->mcache;
    vent *known = lookup(x, CF_META, key, false);
    if (known && known->state != V_UNKNOWN) return false; /* the view has it already */
    uint64_t h = mcache_hash(key);
    size_t i = h & (MCACHE_SLOTS - 1);
    bool locked = holds_stripe(x, key), used = false;
    pthread_mutex_t *lock = &c->locks[i % MCACHE_LOCKS];
    pthread_mutex_lock(lock);
    const mslot *sl = &c->slots[i];
    if (sl->state != V_EMPTY && sl->hash == h && sl->klen == key.len &&
        memcmp(sl->blob, key.ptr, key.len) == 0) {
        rmeta m;
        hr_slice raw = hr_slice_of(sl->blob + sl->klen, sl->vlen);
        used = locked ||
               (sl->state == V_VALUE && meta_decode(raw, &m) == 0 && m.type == T_ZSET && (m.zflags & ZF_MEM));
        if (used) {
            vent *e = lookup(x, CF_META, key, true);
            if (sl->state == V_VALUE)
                set_value(x, e, raw.ptr, raw.len);
            else
                e->state = V_ABSENT;
        }
    }
    pthread_mutex_unlock(lock);
    return used;
}

void rx_meta_commit(rx *x) {
    for (size_t i = 0; i < x->tab_cap; i++) {
        vent *e = &x->tab[i];
        if (e->cf != CF_META || (e->state != V_VALUE && e->state != V_ABSENT)) continue;
        hr_slice key = hr_slice_of(e->key, e->klen);
        if (!e->written && !holds_stripe(x, key))
            continue; /* read at a snapshot another batch may have passed */
        mcache_set(x->s->mcache, key, e->state == V_VALUE, hr_slice_of(e->val, e->vlen));
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
