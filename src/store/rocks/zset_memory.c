/* rocks/zset_memory.c — sorted sets whose order the RocksDB backend keeps in memory.
 *
 * WHY. On disk a sorted set is stored twice (rocks/engine.c): member -> score, and a
 * (score | member) index for ranges. Changing a member's score deletes its
 * old index key and writes a new one. A ranking re-scored on every vote (a
 * story's sum) therefore fills the region every read walks, its top, with
 * tombstones: a top-20 read slows by orders of magnitude as scores change,
 * and stays slow after a flush (bench/micro/store_micro.c; docs/DESIGN.md,
 * "Measured decisions"). No compaction schedule keeps up with tens of
 * thousands of moves a second in one small key range. Redis keeps every
 * sorted set in memory; this backend does so for the sets that need it.
 *
 * WHAT. A set is "in memory" when its metadata carries ZF_MEM. Its member
 * records (prefix | member -> score) stay on disk and are written in the
 * batch's WriteBatch, so durability and the metadata (size, expiry,
 * version) are unchanged; its index lives here instead of in the "zindex"
 * column family, which gets no more writes for it (the compaction filter
 * drops the index keys it had). At open nothing is loaded: the first op
 * that needs a set's order builds it from the member records (one scan,
 * one sort) and keeps it until close.
 *
 * WHERE ITS MEMBER RECORDS GO. Moving into memory copies them from
 * "subkeys" to "memsetmembers" in the write that marks the metadata
 * (mark_in_memory), and the sub-key compaction filter drops the
 * originals. That column family's memtable is a vector (rocks/engine.c): only
 * builds read it, so a ranking's write per vote is an append instead of a
 * skiplist insert, which was a large share of a rating upsert's CPU.
 *
 * WHICH SETS. A set moves into memory (once; never back) when, since the
 * store opened, its members have changed score at least as many times as it
 * has members, it has at least ZMEM_MIN_SIZE members, and the memory of all
 * in-memory sets stays under the "rankings" share of the memory (rocks/memory.h). That is a
 * ranking, not a list that only grows (a feed, an index by date: their
 * members rarely move). Tests can put every set in memory from its creation
 * (the URI's zset_memory=all).
 *
 * CONSISTENCY. Writers hold the key's stripe lock as for any set (rocks/engine.c),
 * so a writer's reads of the set are exact. A batch's changes are staged
 * while its ops run (later ops of the batch see them through the view and
 * the overlay in rocks/zset.c) and applied here after the WriteBatch is
 * written, before the locks are released. Readers take the set's read lock
 * for each op: they see its latest committed state, not the batch's
 * snapshot (as a Redis client sees a sorted set). A failed commit applies
 * nothing.
 *
 * MEMORY. Per member: a node (score, length, bytes) in a hash table keyed by
 * member, and a 24-byte item (score, the member's first 8 bytes, node) in an
 * ordered list of blocks of up to ZBLOCK items: about 100 bytes for a
 * 16-byte member. Order is (score, member bytes), the index keys' byte
 * order. A seek is a binary search over the blocks' first keys, kept in an
 * array of their own, then within one block; an insert or remove moves at
 * most a block.
 *
 * WHY THE FIRST 8 BYTES. A ranking's scores are sums of votes: a million
 * stories share a few thousand scores, so comparisons that stop at the
 * score would mostly go on to the member's bytes in its node, a cache miss
 * each. With the first 8 bytes beside the score (story ids differ there),
 * a seek reads the node of only the item it lands on. And a binary search
 * over the blocks' first keys in one array reads a few cache lines of it,
 * instead of a line of each block it visits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/log.h"
#include "store/rocks/cache.h"
#include "store/rocks/zset.h"

#define ZBLOCK 128           /* items per block at most */
#define ZMEM_MIN_SIZE 1024   /* members a set needs to move into memory */
#define ZMEM_MEMBER_BYTES 80 /* estimated bytes per member, besides its own */

/* The ordered structure ------------------------------------------------------ */

typedef struct znode { /* a member; the hash table owns it */
    uint64_t enc;
    uint32_t hash;
    uint32_t len;
    char bytes[];
} znode;

/* The key an item is ordered by, as far as comparisons need without the
 * node: its score and its member's head (member_head). */
typedef struct zkey {
    uint64_t enc;
    uint64_t head;
} zkey;

typedef struct zitem {
    zkey key; /* enc == node->enc; here so that comparisons rarely touch the node */
    znode *node;
} zitem;

typedef struct zblock {
    uint32_t n;
    zitem items[ZBLOCK];
} zblock;

typedef struct zmem {
    znode **tab; /* open addressing, linear probing, no tombstones */
    size_t cap, n;
    zblock **blocks;
    zkey *firsts; /* firsts[i]: the key of blocks[i]->items[0] */
    size_t nblocks, bcap;
    size_t bytes; /* of nodes, for the budget */
} zmem;

/* The member's first 8 bytes as a big-endian number, zeros past its end:
 * two heads that differ are ordered as the members' bytes are (where a
 * member ends first, its zeros are below the other's byte there, and it
 * is the smaller as a prefix of the other). Equal heads say nothing. */
static uint64_t member_head(const char *m, size_t len) {
    uint64_t h = 0;
    for (size_t i = 0; i < 8; i++)
        h = h << 8 | (i < len ? (unsigned char)m[i] : 0);
    return h;
}

/* k against ik by score and head: 0 when only the members' bytes can tell. */
static int key_cmp(zkey k, zkey ik) {
    if (k.enc != ik.enc) return k.enc < ik.enc ? -1 : 1;
    if (k.head != ik.head) return k.head < ik.head ? -1 : 1;
    return 0;
}

static int member_cmp(const char *m, size_t mlen, const znode *node) {
    return hr_slice_cmp(hr_slice_of(m, mlen), hr_slice_of(node->bytes, node->len));
}

static int item_cmp(zkey k, const char *m, size_t mlen, const zitem *it) {
    int c = key_cmp(k, it->key);
    return c ? c : member_cmp(m, mlen, it->node);
}

static znode **slot_of(zmem *z, uint32_t h, const char *m, size_t len) {
    size_t i = h & (z->cap - 1);
    for (;; i = (i + 1) & (z->cap - 1)) {
        znode *e = z->tab[i];
        if (e == NULL || (e->hash == h && e->len == len && memcmp(e->bytes, m, len) == 0)) return &z->tab[i];
    }
}

static void tab_grow(zmem *z) {
    size_t cap = z->cap ? z->cap * 2 : 64;
    znode **tab = hr_xcalloc(cap, sizeof *tab);
    for (size_t i = 0; i < z->cap; i++) {
        znode *e = z->tab[i];
        if (e == NULL) continue;
        size_t j = e->hash & (cap - 1);
        while (tab[j])
            j = (j + 1) & (cap - 1);
        tab[j] = e;
    }
    free(z->tab);
    z->tab = tab;
    z->cap = cap;
}

/* Remove the node at slot i, shifting later entries of its probe run back
 * (Knuth's algorithm R), so that lookups never need tombstones. */
static void tab_delete(zmem *z, size_t i) {
    size_t mask = z->cap - 1;
    z->tab[i] = NULL;
    for (size_t j = (i + 1) & mask; z->tab[j]; j = (j + 1) & mask) {
        size_t home = z->tab[j]->hash & mask;
        /* may the entry at j move to the hole at i? only if its home is not in (i, j] */
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        z->tab[i] = z->tab[j];
        z->tab[j] = NULL;
        i = j;
    }
    z->n--;
}

/* The position of the first item >= (enc, m) (upper: > ), as (block, index);
 * block == nblocks when there is none. */
static void seek(const zmem *z, uint64_t enc, const char *m, size_t mlen, bool upper, size_t *bi,
                 size_t *oi) {
    zkey k = {enc, member_head(m, mlen)};
    /* the last block whose first item is below the target (or not above it) */
    size_t lo = 0, hi = z->nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(k, z->firsts[mid]); /* the block itself only on a tie */
        if (c == 0) c = member_cmp(m, mlen, z->blocks[mid]->items[0].node);
        if (upper ? c >= 0 : c > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t b = lo ? lo - 1 : 0;
    if (z->nblocks == 0) {
        *bi = 0;
        *oi = 0;
        return;
    }
    const zblock *blk = z->blocks[b];
    size_t l = 0, h = blk->n;
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        int c = item_cmp(k, m, mlen, &blk->items[mid]);
        if (upper ? c >= 0 : c > 0)
            l = mid + 1;
        else
            h = mid;
    }
    if (l == blk->n) {
        b++;
        l = 0;
    }
    *bi = b;
    *oi = l;
}

/* Copy block b's first key into z->firsts (after any change of its first
 * item); an empty block, only ever about to get one, has none. */
static void first_sync(zmem *z, size_t b) {
    if (b < z->nblocks && z->blocks[b]->n > 0) z->firsts[b] = z->blocks[b]->items[0].key;
}

static void blocks_insert_at(zmem *z, size_t at, zblock *blk) {
    if (z->nblocks == z->bcap) {
        z->bcap = z->bcap ? z->bcap * 2 : 16;
        z->blocks = hr_xrealloc(z->blocks, z->bcap * sizeof *z->blocks);
        z->firsts = hr_xrealloc(z->firsts, z->bcap * sizeof *z->firsts);
    }
    memmove(&z->blocks[at + 1], &z->blocks[at], (z->nblocks - at) * sizeof *z->blocks);
    memmove(&z->firsts[at + 1], &z->firsts[at], (z->nblocks - at) * sizeof *z->firsts);
    z->blocks[at] = blk;
    z->nblocks++;
    first_sync(z, at);
}

static void blocks_remove_at(zmem *z, size_t at) {
    free(z->blocks[at]);
    memmove(&z->blocks[at], &z->blocks[at + 1], (z->nblocks - at - 1) * sizeof *z->blocks);
    memmove(&z->firsts[at], &z->firsts[at + 1], (z->nblocks - at - 1) * sizeof *z->firsts);
    z->nblocks--;
}

static void order_insert(zmem *z, znode *node) {
    if (z->nblocks == 0) blocks_insert_at(z, 0, hr_xcalloc(1, sizeof(zblock)));
    size_t bi, oi;
    seek(z, node->enc, node->bytes, node->len, true, &bi, &oi);
    if (bi == z->nblocks) { /* past the end: append to the last block */
        bi = z->nblocks - 1;
        oi = z->blocks[bi]->n;
    }
    zblock *blk = z->blocks[bi];
    if (blk->n == ZBLOCK) { /* split in halves, then insert into the right one */
        zblock *right = hr_xmalloc(sizeof *right);
        right->n = ZBLOCK / 2;
        memcpy(right->items, blk->items + ZBLOCK / 2, (ZBLOCK / 2) * sizeof(zitem));
        blk->n = ZBLOCK / 2;
        blocks_insert_at(z, bi + 1, right);
        if (oi > ZBLOCK / 2) {
            blk = right;
            oi -= ZBLOCK / 2;
        }
    }
    memmove(&blk->items[oi + 1], &blk->items[oi], (blk->n - oi) * sizeof(zitem));
    blk->items[oi] = (zitem){{node->enc, member_head(node->bytes, node->len)}, node};
    blk->n++;
    if (oi == 0) first_sync(z, blk == z->blocks[bi] ? bi : bi + 1);
}

static void order_remove(zmem *z, const znode *node) {
    size_t bi, oi;
    seek(z, node->enc, node->bytes, node->len, false, &bi, &oi);
    if (bi == z->nblocks || z->blocks[bi]->items[oi].node != node) {
        hr_error("rocksdb: in-memory sorted set lost a member (order index out of step)");
        abort(); /* an internal invariant, not an input or I/O error */
    }
    zblock *blk = z->blocks[bi];
    memmove(&blk->items[oi], &blk->items[oi + 1], (blk->n - oi - 1) * sizeof(zitem));
    blk->n--;
    if (blk->n == 0) {
        blocks_remove_at(z, bi);
        return;
    }
    if (oi == 0) first_sync(z, bi);
    if (bi + 1 < z->nblocks && blk->n + z->blocks[bi + 1]->n <= ZBLOCK / 2) {
        zblock *next = z->blocks[bi + 1];
        memcpy(&blk->items[blk->n], next->items, next->n * sizeof(zitem));
        blk->n += next->n;
        blocks_remove_at(z, bi + 1);
    }
}

static void zmem_clear(zmem *z) {
    for (size_t i = 0; i < z->cap; i++)
        free(z->tab[i]);
    for (size_t i = 0; i < z->nblocks; i++)
        free(z->blocks[i]);
    free(z->tab);
    free(z->blocks);
    free(z->firsts);
    memset(z, 0, sizeof *z);
}

static uint32_t member_hash(hr_slice m) {
    return (uint32_t)XXH3_64bits(m.ptr, m.len);
}

static const znode *zmem_find(zmem *z, hr_slice m) {
    if (z->n == 0) return NULL;
    return *slot_of(z, member_hash(m), m.ptr, m.len);
}

static void zmem_set(zmem *z, hr_slice m, uint64_t enc) {
    if ((z->n + 1) * 10 > z->cap * 7) tab_grow(z);
    uint32_t h = member_hash(m);
    znode **slot = slot_of(z, h, m.ptr, m.len);
    znode *node = *slot;
    if (node) {
        if (node->enc == enc) return;
        order_remove(z, node);
        node->enc = enc;
    } else {
        node = hr_xmalloc(sizeof *node + m.len);
        node->enc = enc;
        node->hash = h;
        node->len = (uint32_t)m.len;
        memcpy(node->bytes, m.ptr, m.len);
        *slot = node;
        z->n++;
        z->bytes += ZMEM_MEMBER_BYTES + m.len;
    }
    order_insert(z, node);
}

static void zmem_remove(zmem *z, hr_slice m) {
    if (z->n == 0) return;
    znode **slot = slot_of(z, member_hash(m), m.ptr, m.len);
    znode *node = *slot;
    if (node == NULL) return;
    order_remove(z, node);
    tab_delete(z, (size_t)(slot - z->tab));
    z->bytes -= ZMEM_MEMBER_BYTES + node->len;
    free(node);
}

/* Items of a build, sorted before they are appended block by block. */
static int build_cmp(const void *a, const void *b) {
    const zitem *x = a, *y = b;
    return item_cmp(x->key, x->node->bytes, x->node->len, y);
}

/* Fill an empty z with items[0..n) (distinct members), in any order. */
static void zmem_load(zmem *z, zitem *items, size_t n) {
    qsort(items, n, sizeof *items, build_cmp);
    while ((n + 1) * 10 > z->cap * 7)
        tab_grow(z);
    zblock *blk = NULL;
    for (size_t i = 0; i < n; i++) {
        znode *node = items[i].node;
        *slot_of(z, node->hash, node->bytes, node->len) = node;
        z->n++;
        z->bytes += ZMEM_MEMBER_BYTES + node->len;
        if (blk == NULL || blk->n == ZBLOCK * 3 / 4) { /* room for inserts without splitting at once */
            blk = hr_xmalloc(sizeof *blk);
            blk->n = 0;
            blocks_insert_at(z, z->nblocks, blk);
        }
        blk->items[blk->n++] = items[i];
        if (blk->n == 1) first_sync(z, z->nblocks - 1);
    }
}

/* The registry --------------------------------------------------------------- */

enum { Z_BUILDING, Z_READY, Z_DEAD };

struct zent {
    char *key;
    size_t klen;
    uint64_t version;
    int cf;                /* of its member records, which build reads */
    int state;             /* Z_*, under the registry's mutex */
    _Atomic int refs;      /* the registry's (while linked) + each holder's */
    pthread_rwlock_t lock; /* over z */
    zmem z;
    zent *next; /* hash chain */
};

typedef struct moves_ent {
    uint64_t hash; /* of the key; 0: free */
    uint64_t moves;
} moves_ent;

struct zreg {
    pthread_mutex_t mu;
    pthread_cond_t built;
    zent **tab; /* chained, by key hash */
    size_t cap, n;
    size_t budget;        /* bytes */
    _Atomic size_t bytes; /* of the linked entries' members */
    bool all;
    /* Moves (score changes of existing members) since open, of sets big
     * enough to qualify, by key hash (64 bits: a collision would only make a
     * set qualify early). */
    moves_ent *moves;
    size_t moves_cap, moves_n;
};

zreg *zreg_new(size_t budget, bool all) {
    zreg *r = hr_xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->built, NULL);
    r->cap = 64;
    r->tab = hr_xcalloc(r->cap, sizeof *r->tab);
    r->budget = budget;
    r->all = all;
    return r;
}

size_t zreg_bytes(zreg *r) {
    return atomic_load_explicit(&r->bytes, memory_order_relaxed);
}

static void ent_free(zent *e) {
    zmem_clear(&e->z);
    pthread_rwlock_destroy(&e->lock);
    free(e->key);
    free(e);
}

static void unref(zent *e) {
    if (atomic_fetch_sub(&e->refs, 1) == 1) ent_free(e);
}

void zreg_free(zreg *r) {
    if (r == NULL) return;
    for (size_t i = 0; i < r->cap; i++) {
        for (zent *e = r->tab[i], *next; e; e = next) {
            next = e->next;
            unref(e);
        }
    }
    free(r->tab);
    free(r->moves);
    pthread_cond_destroy(&r->built);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static uint64_t key_hash(hr_slice key) {
    return XXH3_64bits(key.ptr, key.len);
}

/* The entry of key (any version) and the link pointing to it; under mu. */
static zent **find_link(zreg *r, hr_slice key) {
    zent **link = &r->tab[key_hash(key) & (r->cap - 1)];
    for (; *link; link = &(*link)->next)
        if ((*link)->klen == key.len && memcmp((*link)->key, key.ptr, key.len) == 0) return link;
    return link;
}

static void reg_grow(zreg *r) {
    size_t cap = r->cap * 2;
    zent **tab = hr_xcalloc(cap, sizeof *tab);
    for (size_t i = 0; i < r->cap; i++) {
        for (zent *e = r->tab[i], *next; e; e = next) {
            next = e->next;
            size_t j = key_hash(hr_slice_of(e->key, e->klen)) & (cap - 1);
            e->next = tab[j];
            tab[j] = e;
        }
    }
    free(r->tab);
    r->tab = tab;
    r->cap = cap;
}

/* Unlink *link (under mu); holders keep their references. */
static void unlink_ent(zreg *r, zent **link) {
    zent *e = *link;
    *link = e->next;
    e->next = NULL;
    e->state = Z_DEAD;
    r->n--;
    atomic_fetch_sub(&r->bytes, e->z.bytes);
    unref(e);
}

/* A new entry for (key, version), linked, with a reference for the caller. */
static zent *link_new(zreg *r, hr_slice key, uint64_t version, int cf, int state) {
    if ((r->n + 1) > r->cap) reg_grow(r);
    zent *e = hr_xcalloc(1, sizeof *e);
    e->key = hr_xmalloc(key.len ? key.len : 1);
    memcpy(e->key, key.ptr, key.len);
    e->klen = key.len;
    e->version = version;
    e->cf = cf;
    e->state = state;
    atomic_init(&e->refs, 2);
    pthread_rwlock_init(&e->lock, NULL);
    zent **link = find_link(r, key);
    e->next = *link;
    *link = e;
    r->n++;
    return e;
}

/* Read every member record of (key, version) into e (state Z_BUILDING, not
 * yet visible to anyone else). 0 or HR_EIO with x->err filled. */
static int build(rx *x, zent *e) {
    hr_slice key = hr_slice_of(e->key, e->klen);
    hr_buf lo = HR_BUF_INIT, hi = HR_BUF_INIT;
    key_prefix(&lo, key, e->version);
    key_prefix_end(&hi, key, e->version);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create(); /* the latest state: no snapshot */
    rocksdb_readoptions_set_iterate_lower_bound(ro, lo.data, lo.len);
    rocksdb_readoptions_set_iterate_upper_bound(ro, hi.data, hi.len);
    rocksdb_readoptions_set_fill_cache(ro, 0);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(x->s->db, ro, x->s->cf[e->cf]);
    size_t n = 0, cap = 1024;
    zitem *items = hr_xmalloc(cap * sizeof *items);
    int rc = 0;
    for (rocksdb_iter_seek(it, lo.data, lo.len); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t klen, vlen;
        const char *k = rocksdb_iter_key(it, &klen), *v = rocksdb_iter_value(it, &vlen);
        if (klen < lo.len || vlen != 8) {
            rc = hr_err_set(x->err, HR_EIO, "rocksdb: corrupt member record of an in-memory sorted set");
            break;
        }
        if (n == cap) items = hr_xrealloc(items, (cap *= 2) * sizeof *items);
        hr_slice m = hr_slice_of(k + lo.len, klen - lo.len);
        znode *node = hr_xmalloc(sizeof *node + m.len);
        node->enc = load_u64(v);
        node->hash = member_hash(m);
        node->len = (uint32_t)m.len;
        memcpy(node->bytes, m.ptr, m.len);
        items[n++] = (zitem){{node->enc, member_head(node->bytes, node->len)}, node};
    }
    char *errptr = rocks_scan_end(it, ro);
    if (errptr && rc == 0)
        rc = rx_fail(x, errptr);
    else
        rocksdb_free(errptr);
    hr_buf_free(&lo);
    hr_buf_free(&hi);
    if (rc == 0) {
        zmem_load(&e->z, items, n);
    } else {
        for (size_t i = 0; i < n; i++)
            free(items[i].node);
    }
    free(items);
    return rc;
}

/* Does the latest metadata of key still name this version? */
static bool still_current(rx *x, hr_slice key, uint64_t version) {
    char *errptr = NULL;
    size_t vlen = 0;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *v = rocksdb_get_cf(x->s->db, ro, x->s->cf[CF_META], key.ptr, key.len, &vlen, &errptr);
    rocksdb_readoptions_destroy(ro);
    rmeta m;
    bool yes = errptr == NULL && v && meta_decode(hr_slice_of(v, vlen), &m) == 0 && m.type == T_ZSET &&
               (m.zflags & ZF_MEM) && m.version == version;
    rocksdb_free(errptr);
    rocksdb_free(v);
    return yes;
}

/* A batch's use of the sets -------------------------------------------------- */

/* Score changes of members of a set on disk, counted toward moving it into
 * memory. */
typedef struct zmoves {
    hr_slice key; /* in x->mem */
    uint64_t version, size, moves;
} zmoves;

/* The sets kept in memory as one batch uses them (rx.zmem), in x->mem, made
 * by its first use of one: the entries the batch holds, its staged
 * changes, and moves of sets on disk. The arrays are malloc'd; zmem_end
 * frees them. */
struct zmem_rx {
    zent **held;
    bool *fresh; /* held[i] was created by this batch, for a new set */
    size_t nheld, held_cap;
    zstage *st;
    size_t nst, st_cap;
    zmoves *moves;
    size_t nmoves, moves_cap;
};

static struct zmem_rx *part(rx *x) {
    return RX_PART(x, zmem);
}

/* The entries this batch holds references to, so that each is looked up once
 * per batch and released at its end. */
static zent *held(rx *x, hr_slice key, uint64_t version) {
    struct zmem_rx *z = x->zmem;
    for (size_t i = 0; z && i < z->nheld; i++) {
        zent *e = z->held[i];
        if (e->version == version && e->klen == key.len && memcmp(e->key, key.ptr, key.len) == 0) return e;
    }
    return NULL;
}

static void hold(rx *x, zent *e, bool fresh) {
    struct zmem_rx *z = part(x);
    if (z->nheld == z->held_cap) {
        z->held_cap = z->held_cap ? z->held_cap * 2 : 8;
        z->held = hr_xrealloc(z->held, z->held_cap * sizeof *z->held);
        z->fresh = hr_xrealloc(z->fresh, z->held_cap * sizeof *z->fresh);
    }
    z->fresh[z->nheld] = fresh;
    z->held[z->nheld++] = e;
}

int zmem_acquire(rx *x, hr_slice key, const rmeta *m, bool fresh, zent **out) {
    *out = held(x, key, m->version);
    if (*out) return 0;
    zreg *r = x->s->zreg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        zent **link = find_link(r, key), *e = *link;
        if (e && e->version == m->version) {
            if (e->state == Z_BUILDING) {
                pthread_cond_wait(&r->built, &r->mu);
                continue; /* it may have died meanwhile */
            }
            atomic_fetch_add(&e->refs, 1);
            pthread_mutex_unlock(&r->mu);
            hold(x, e, false);
            *out = e;
            return 0;
        }
        if (e && e->version > m->version) { /* the reader's snapshot is older than the set */
            pthread_mutex_unlock(&r->mu);
            return 0;
        }
        if (e) unlink_ent(r, link); /* a version of the key that no longer exists */
        break;
    }
    zent *e = link_new(r, key, m->version, CF_ZMEMM, fresh ? Z_READY : Z_BUILDING);
    pthread_mutex_unlock(&r->mu);
    hold(x, e, fresh);
    if (fresh) {
        *out = e;
        return 0;
    }
    /* Build outside the registry's lock; others asking for it wait (a writer
     * of the set among them, which holds the key's stripe lock: no member of
     * this version changes until the build is done, because every op that
     * changes one first acquires its entry). */
    int rc = build(x, e);
    bool gone = rc == 0 && !still_current(x, key, m->version);
    pthread_mutex_lock(&r->mu);
    zent **link = find_link(r, key);
    if (rc != 0 || gone) {
        if (*link == e) unlink_ent(r, link);
        e->state = Z_DEAD;
    } else if (e->state == Z_BUILDING) {
        e->state = Z_READY;
        atomic_fetch_add(&r->bytes, e->z.bytes);
    }
    pthread_cond_broadcast(&r->built);
    pthread_mutex_unlock(&r->mu);
    if (rc == 0 && !gone) *out = e;
    return rc;
}

size_t zent_len(zent *e) {
    pthread_rwlock_rdlock(&e->lock);
    size_t n = e->z.n;
    pthread_rwlock_unlock(&e->lock);
    return n;
}

bool zent_score(zent *e, hr_slice member, uint64_t *enc) {
    pthread_rwlock_rdlock(&e->lock);
    const znode *node = zmem_find(&e->z, member);
    if (node) *enc = node->enc;
    pthread_rwlock_unlock(&e->lock);
    return node != NULL;
}

/* Move (bi, oi) to the item before it; false at the first item. */
static bool step_back(const zmem *z, size_t *bi, size_t *oi) {
    if (*oi > 0) {
        (*oi)--;
    } else if (*bi > 0) {
        (*bi)--;
        *oi = z->blocks[*bi]->n - 1;
    } else {
        return false;
    }
    return true;
}

void zent_walk(zent *e, bool reverse, uint64_t enc, hr_slice member, zs_visit visit, void *ctx) {
    pthread_rwlock_rdlock(&e->lock);
    zmem *z = &e->z;
    size_t bi, oi;
    /* forward: the first item >= target; backward: the last item <= target */
    seek(z, enc, member.ptr, member.len, reverse, &bi, &oi);
    if (reverse && !step_back(z, &bi, &oi)) bi = z->nblocks; /* nothing at or below */
    while (bi < z->nblocks) {
        const zitem *it = &z->blocks[bi]->items[oi];
        if (!visit(ctx, it->key.enc, hr_slice_of(it->node->bytes, it->node->len))) break;
        if (reverse) {
            if (!step_back(z, &bi, &oi)) break;
        } else if (++oi == z->blocks[bi]->n) {
            bi++;
            oi = 0;
        }
    }
    pthread_rwlock_unlock(&e->lock);
}

void zmem_stage(rx *x, zent *e, hr_slice member, bool removed, uint64_t enc) {
    struct zmem_rx *z = part(x);
    if (z->nst == z->st_cap) {
        z->st_cap = z->st_cap ? z->st_cap * 2 : 16;
        z->st = hr_xrealloc(z->st, z->st_cap * sizeof *z->st);
    }
    z->st[z->nst++] = (zstage){e, hr_arena_copy(&x->mem, member), removed, enc};
}

const zstage *zmem_staged(const rx *x, size_t *n) {
    *n = x->zmem ? x->zmem->nst : 0;
    return x->zmem ? x->zmem->st : NULL;
}

void zmem_moved(rx *x, hr_slice key, const rmeta *m, uint64_t moves) {
    if (m->size < ZMEM_MIN_SIZE || x->s->zreg->all) return;
    struct zmem_rx *z = part(x);
    for (size_t i = 0; i < z->nmoves; i++) {
        zmoves *v = &z->moves[i];
        if (hr_slice_eq(v->key, key)) {
            v->moves += moves;
            v->size = m->size;
            return;
        }
    }
    if (z->nmoves == z->moves_cap) {
        z->moves_cap = z->moves_cap ? z->moves_cap * 2 : 4;
        z->moves = hr_xrealloc(z->moves, z->moves_cap * sizeof *z->moves);
    }
    z->moves[z->nmoves++] = (zmoves){hr_arena_copy(&x->mem, key), m->version, m->size, moves};
}

bool zmem_all(const rx *x) {
    return x->s->zreg->all;
}

/* Add moves to key's count; the count now. Under mu. */
static uint64_t count_moves(zreg *r, hr_slice key, uint64_t moves) {
    if ((r->moves_n + 1) * 2 > r->moves_cap) {
        size_t cap = r->moves_cap ? r->moves_cap * 2 : 64;
        moves_ent *t = hr_xcalloc(cap, sizeof *t);
        for (size_t i = 0; i < r->moves_cap; i++) {
            if (r->moves[i].hash == 0) continue;
            size_t j = r->moves[i].hash & (cap - 1);
            while (t[j].hash)
                j = (j + 1) & (cap - 1);
            t[j] = r->moves[i];
        }
        free(r->moves);
        r->moves = t;
        r->moves_cap = cap;
    }
    uint64_t h = key_hash(key) | 1; /* never 0 */
    size_t j = h & (r->moves_cap - 1);
    while (r->moves[j].hash && r->moves[j].hash != h)
        j = (j + 1) & (r->moves_cap - 1);
    if (r->moves[j].hash == 0) {
        r->moves[j].hash = h;
        r->moves_n++;
    }
    r->moves[j].moves += moves;
    return r->moves[j].moves;
}

/* Mark e's set (metadata m) in memory: m with ZF_MEM, and a copy
 * of its member records in "memsetmembers", in one write. Those in
 * "subkeys" are garbage then; the sub-key compaction filter drops them. */
static int mark_in_memory(rx *x, zent *e, rmeta *m) {
    hr_slice key = hr_slice_of(e->key, e->klen);
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    hr_buf k = HR_BUF_INIT, meta = HR_BUF_INIT;
    for (size_t b = 0; b < e->z.nblocks; b++)
        for (uint32_t i = 0; i < e->z.blocks[b]->n; i++) {
            const znode *node = e->z.blocks[b]->items[i].node;
            hr_buf_clear(&k);
            zs_member_key(&k, key, e->version, hr_slice_of(node->bytes, node->len));
            unsigned char v[8];
            hr_store_u64be(v, node->enc);
            rocksdb_writebatch_put_cf(wb, x->s->cf[CF_ZMEMM], k.data, k.len, (const char *)v, sizeof v);
        }
    m->zflags |= ZF_MEM;
    meta_encode(m, &meta);
    rocksdb_writebatch_put_cf(wb, x->s->cf[CF_META], key.ptr, key.len, meta.data, meta.len);
    char *errptr = NULL;
    rcache_write_begin(x->s->meta_cache, key);
    rocksdb_write(x->s->db, x->s->wopts, wb, &errptr);
    rcache_write_end(x->s->meta_cache, key, errptr == NULL, true, hr_buf_slice(&meta),
                     rocksdb_get_latest_sequence_number(x->s->db));
    rocksdb_writebatch_destroy(wb);
    hr_buf_free(&k);
    hr_buf_free(&meta);
    if (errptr == NULL) return 0;
    hr_warn("rocksdb: could not mark a sorted set in memory: %s", errptr);
    rocksdb_free(errptr);
    return HR_EIO;
}

/* Move (key, version) into memory: build it from its member records (the
 * batch holds the key's stripe lock, and has just committed), then mark its
 * metadata. Failures leave it on disk, as it was. */
static void promote(rx *x, const zmoves *v, uint64_t moves) {
    zreg *r = x->s->zreg;
    hr_slice raw;
    bool found;
    rmeta m;
    if (rx_get(x, CF_META, v->key, &raw, &found) != 0 || !found || meta_decode(raw, &m) != 0 ||
        m.type != T_ZSET || (m.zflags & ZF_MEM) || m.version != v->version)
        return;
    pthread_mutex_lock(&r->mu);
    zent **link = find_link(r, v->key);
    if (*link) unlink_ent(r, link); /* an older version's */
    zent *e = link_new(r, v->key, m.version, CF_SUB, Z_BUILDING);
    pthread_mutex_unlock(&r->mu);
    int rc = build(x, e);
    if (rc == 0) rc = mark_in_memory(x, e, &m);
    if (rc == 0) e->cf = CF_ZMEMM; /* before anyone else sees it */
    pthread_mutex_lock(&r->mu);
    link = find_link(r, v->key);
    if (rc == 0) {
        e->state = Z_READY;
        atomic_fetch_add(&r->bytes, e->z.bytes);
        hr_info("rocksdb: sorted set '%.*s' (%zu members) moved into memory after %llu score changes",
                (int)(v->key.len < 80 ? v->key.len : 80), v->key.ptr, e->z.n, (unsigned long long)moves);
    } else if (*link == e) {
        unlink_ent(r, link);
    }
    pthread_cond_broadcast(&r->built);
    pthread_mutex_unlock(&r->mu);
    unref(e);
}

void zmem_commit(rx *x) {
    zreg *r = x->s->zreg;
    struct zmem_rx *z = x->zmem;
    size_t nst = z ? z->nst : 0, nmoves = z ? z->nmoves : 0;
    /* 1. The staged changes, in order, one lock per run of one entry. */
    for (size_t i = 0; i < nst;) {
        zent *e = z->st[i].e;
        pthread_rwlock_wrlock(&e->lock);
        size_t before = e->z.bytes;
        for (; i < nst && z->st[i].e == e; i++) {
            const zstage *st = &z->st[i];
            if (st->removed)
                zmem_remove(&e->z, st->member);
            else
                zmem_set(&e->z, st->member, st->enc);
        }
        /* (an entry this batch replaced is unlinked: its bytes left the total) */
        if (e->state == Z_READY)
            atomic_fetch_add(&r->bytes, e->z.bytes - before); /* modular: a shrink subtracts */
        pthread_rwlock_unlock(&e->lock);
    }
    /* 2. Entries whose set this batch deleted, overwrote or re-created. */
    hr_batch *b = x->b;
    for (size_t i = 0; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        if (op->result.rc != HR_OK || !hr_op_is_write(op->type)) continue;
        pthread_mutex_lock(&r->mu);
        zent **link = find_link(r, op->key);
        bool have = *link != NULL;
        uint64_t version = have ? (*link)->version : 0;
        pthread_mutex_unlock(&r->mu);
        if (!have) continue;
        rmeta m;
        if (rx_meta(x, op->key, &m) != 0) {
            hr_err_clear(x->err);
            memset(&m, 0, sizeof m);
        }
        if (m.type == T_ZSET && (m.zflags & ZF_MEM) && m.version == version && meta_alive(&m, x->now))
            continue;
        pthread_mutex_lock(&r->mu);
        link = find_link(r, op->key);
        if (*link && (*link)->version == version && (*link)->state != Z_BUILDING) unlink_ent(r, link);
        pthread_mutex_unlock(&r->mu);
    }
    /* 3. Sets that qualified. */
    for (size_t i = 0; i < nmoves; i++) {
        const zmoves *v = &z->moves[i];
        pthread_mutex_lock(&r->mu);
        uint64_t total = count_moves(r, v->key, v->moves);
        bool go =
            total >= v->size && atomic_load(&r->bytes) + v->size * (ZMEM_MEMBER_BYTES + 16) <= r->budget;
        pthread_mutex_unlock(&r->mu);
        if (go) promote(x, v, total);
    }
}

void zmem_abort(rx *x) {
    /* A set this batch created in memory does not exist after all. */
    zreg *r = x->s->zreg;
    struct zmem_rx *z = x->zmem;
    for (size_t i = 0; z && i < z->nheld; i++) {
        if (!z->fresh[i]) continue;
        zent *e = z->held[i];
        pthread_mutex_lock(&r->mu);
        zent **link = find_link(r, hr_slice_of(e->key, e->klen));
        if (*link == e) unlink_ent(r, link);
        pthread_mutex_unlock(&r->mu);
    }
}

void zmem_end(rx *x) {
    struct zmem_rx *z = x->zmem;
    if (z == NULL) return;
    for (size_t i = 0; i < z->nheld; i++)
        unref(z->held[i]);
    free(z->held);
    free(z->fresh);
    free(z->st);
    free(z->moves);
    x->zmem = NULL; /* the part itself goes with x->mem */
}
