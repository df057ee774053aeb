/* rocks/timelist_cache.c — the newest entries of hot time lists, kept in memory.
 *
 * WHY. A home timeline page merges, at read time, the feeds of the big
 * accounts its reader follows (core/feeds.c: they are not fanned out). At
 * 100 000 users a reader follows ~9 of them, so a page is ~10 range reads
 * of RocksDB, and each costs an iterator over every memtable and level plus
 * a seek in each (op_tlrange was a large share of a page's CPU in profiles).
 * The same few lists are read by every reader: their newest entries belong
 * in memory, as Redis would keep them.
 *
 * WHICH LISTS. The caller says: a range read with hr_tlrange_spec.hot asks
 * the store to keep the list's head in memory. After that batch, the list's
 * newest `keep` entries are loaded (one scan) and from then on kept up to
 * date by every batch that writes the list, until the store closes. At most
 * TLC_MAX_LISTS lists, and a new one only while the `hotlists` share of the
 * store's memory (rocks/memory.h) has room for its keep entries (a list
 * grows to 2 x keep between truncations); past that, hot reads read
 * RocksDB as before.
 *
 * WHAT IS KEPT. A list's entries as their key suffixes (time, encoded
 * member: rocks/timelist.c), so that byte order is the list's order, with their
 * expiry. A list of more than 2 x keep entries drops its oldest down to keep;
 * from then on it covers only the keys before `floor` (byte order: the newer
 * ones), and a read that needs an entry past the floor reads RocksDB. A read
 * answered here is exactly what op_tlrange would answer at the list's latest
 * committed state (the differential tests in test_store_tl.c check it).
 *
 * CONSISTENCY. Time-list adds and removes are blind writes that take no
 * lock (rocks/engine.c), so a batch that writes a kept list must be made to:
 *   - Every batch that writes time lists holds the gate (a read lock) from
 *     before it chooses its stripes until its changes are applied here.
 *     While it holds the gate, the set of kept lists does not change.
 *   - Such a batch takes the stripe of every kept list it writes, and
 *     applies its changes to the list after its WriteBatch is written,
 *     before releasing the stripe. So the changes of a list are applied in
 *     the order they were committed.
 *   - A new list is registered under the gate's write lock, which waits for
 *     every batch that chose its stripes without knowing the list. It is
 *     then loaded from the latest state of the DB under its stripe, so a
 *     later writer either committed before the load (which reads its
 *     write; its apply found the list not ready and skipped it) or waits
 *     for the stripe until the list is ready.
 *   - Readers take no stripe and no gate: they read a list under its mutex,
 *     at its latest committed state (not at their batch's snapshot, as with
 *     the sorted sets kept in memory: store.h). A batch that has written
 *     anything reads RocksDB, which sees its own writes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/log.h"
#include "store/rocks/timelist.h"

#define TLC_SLOTS 2048        /* registry slots (open addressing), twice the lists */
#define TLC_MAX_LISTS 1024    /* lists kept at most */
#define TLC_KEEP_DEFAULT 1024 /* newest entries loaded; a list holds up to twice that */
/* What an entry costs, counted against the budget: its tlc_item and its
 * suffix (8 bytes of time and a member of some tens of bytes) from malloc. */
#define TLC_ITEM_BYTES 64

typedef struct tlc_item {
    char *sfx; /* time (8 bytes) + encoded member, as in the list's keys */
    uint32_t len;
    int64_t expire_at; /* 0: never */
} tlc_item;

struct tlc_list {
    tlcache *c;    /* whose entries count (tlcache.items) */
    uint64_t hash; /* XXH3 of the list key */
    char *key;
    size_t key_len;
    pthread_mutex_t mu; /* guards everything below */
    bool ready;         /* loaded; until then only the loader touches the items */
    /* Sorted by suffix, largest (oldest) first, so that the newest entry,
     * the usual add, is appended. */
    tlc_item *items;
    size_t n, cap;
    /* NULL: the whole list is here. Else only suffixes < floor are (the
     * newer entries): what is older was dropped or never loaded. */
    char *floor;
    uint32_t floor_len;
};

struct tlcache {
    pthread_rwlock_t gate;
    _Atomic(tlc_list *) slots[TLC_SLOTS]; /* set once under the gate's write lock, never cleared */
    atomic_size_t n;
    size_t keep;
    size_t budget;       /* bytes its entries may take (tlcache_bytes) */
    atomic_size_t items; /* entries of every list */
    atomic_size_t hits;  /* range reads answered here (for the tests) */
};

/* A change a batch made to a kept list, applied after its commit. */
typedef struct tlc_change {
    tlc_list *list;
    bool add;
    hr_slice sfx; /* in the batch's scratch arena */
    int64_t expire_at;
} tlc_change;

/* The kept lists' state of a batch (rx.tlc), in x->mem, made by
 * tlcache_begin or the first hot read of a list not kept. of: set while the
 * batch holds the gate (it writes time lists while some are kept): per op
 * of the batch, the kept list it writes (NULL: none), looked up once when
 * the stripes are chosen. Then the batch's changes to kept lists, and the
 * lists its hot reads want kept (in mem). */
struct tlc_rx {
    tlc_list **of;
    tlc_change *ch;
    size_t nch, ch_cap;
    hr_slice *want;
    size_t nwant, want_cap;
};

static struct tlc_rx *part(rx *x) {
    return RX_PART(x, tlc);
}

tlcache *tlcache_new(size_t keep, size_t budget) {
    tlcache *c = hr_xcalloc(1, sizeof *c);
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* A registration must not wait forever behind a stream of fan-out
     * batches, each holding the gate for reading. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->gate, &attr);
    pthread_rwlockattr_destroy(&attr);
    c->keep = keep ? keep : TLC_KEEP_DEFAULT;
    c->budget = budget;
    return c;
}

size_t tlcache_bytes(tlcache *c) {
    return atomic_load_explicit(&c->items, memory_order_relaxed) * TLC_ITEM_BYTES;
}

static void list_free(tlc_list *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i].sfx);
    free(l->items);
    free(l->floor);
    free(l->key);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void tlcache_free(tlcache *c) {
    if (c == NULL) return;
    for (size_t i = 0; i < TLC_SLOTS; i++) {
        tlc_list *l = atomic_load(&c->slots[i]);
        if (l) list_free(l);
    }
    pthread_rwlock_destroy(&c->gate);
    free(c);
}

size_t tlcache_lists(tlcache *c) {
    return atomic_load(&c->n);
}

size_t tlcache_hits(tlcache *c) {
    return atomic_load_explicit(&c->hits, memory_order_relaxed);
}

void tlcache_gate_enter(tlcache *c) {
    pthread_rwlock_rdlock(&c->gate);
}

void tlcache_gate_leave(tlcache *c) {
    pthread_rwlock_unlock(&c->gate);
}

tlc_list *tlcache_find(tlcache *c, hr_slice list) {
    if (atomic_load_explicit(&c->n, memory_order_acquire) == 0) return NULL;
    uint64_t h = XXH3_64bits(list.ptr, list.len);
    for (size_t i = h & (TLC_SLOTS - 1);; i = (i + 1) & (TLC_SLOTS - 1)) {
        tlc_list *l = atomic_load_explicit(&c->slots[i], memory_order_acquire);
        if (l == NULL) return NULL;
        if (l->hash == h && l->key_len == list.len && memcmp(l->key, list.ptr, list.len) == 0) return l;
    }
}

/* Items ---------------------------------------------------------------------- */

static int sfx_cmp(const char *a, size_t alen, const char *b, size_t blen) {
    return hr_slice_cmp(hr_slice_of(a, alen), hr_slice_of(b, blen));
}

/* How many items have a suffix >= s (they come first: largest first). */
static size_t count_ge(const tlc_list *l, hr_slice s) {
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sfx_cmp(l->items[mid].sfx, l->items[mid].len, s.ptr, s.len) >= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool covered(const tlc_list *l, hr_slice s) {
    return l->floor == NULL || sfx_cmp(s.ptr, s.len, l->floor, l->floor_len) < 0;
}

/* Keep the newest `keep` items; the floor becomes the smallest dropped. */
static void truncate_to(tlc_list *l, size_t keep) {
    size_t drop = l->n - keep;
    atomic_fetch_sub_explicit(&l->c->items, drop, memory_order_relaxed);
    for (size_t i = 0; i + 1 < drop; i++)
        free(l->items[i].sfx);
    free(l->floor);
    l->floor = l->items[drop - 1].sfx;
    l->floor_len = l->items[drop - 1].len;
    memmove(l->items, l->items + drop, keep * sizeof *l->items);
    l->n = keep;
}

static void item_add(tlc_list *l, hr_slice sfx, int64_t expire_at, size_t keep) {
    if (!covered(l, sfx)) return; /* older than what is here: RocksDB has it */
    size_t pos = count_ge(l, sfx);
    if (pos > 0 && sfx_cmp(l->items[pos - 1].sfx, l->items[pos - 1].len, sfx.ptr, sfx.len) == 0) {
        l->items[pos - 1].expire_at = expire_at; /* the same key written again */
        return;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->items = hr_xrealloc(l->items, l->cap * sizeof *l->items);
    }
    memmove(l->items + pos + 1, l->items + pos, (l->n - pos) * sizeof *l->items);
    char *copy = hr_xmalloc(sfx.len ? sfx.len : 1);
    memcpy(copy, sfx.ptr, sfx.len);
    l->items[pos] = (tlc_item){copy, (uint32_t)sfx.len, expire_at};
    l->n++;
    atomic_fetch_add_explicit(&l->c->items, 1, memory_order_relaxed);
    if (l->n > 2 * keep) truncate_to(l, keep);
}

static void item_remove(tlc_list *l, hr_slice sfx) {
    size_t pos = count_ge(l, sfx);
    if (pos == 0 || sfx_cmp(l->items[pos - 1].sfx, l->items[pos - 1].len, sfx.ptr, sfx.len) != 0) return;
    free(l->items[pos - 1].sfx);
    memmove(l->items + pos - 1, l->items + pos, (l->n - pos) * sizeof *l->items);
    l->n--;
    atomic_fetch_sub_explicit(&l->c->items, 1, memory_order_relaxed);
}

/* Reads ---------------------------------------------------------------------- */

static bool range_locked(tlc_list *l, hr_slice lo, hr_slice hi, const hr_tlrange_spec *sp, hr_arena *out,
                         hr_result *res, int *rc, hr_err *err) {
    if (!l->ready || !covered(l, lo)) return false;
    res->n_entries = 0;
    res->more = false;
    res->entries = NULL;
    size_t cap = 0, skip = sp->offset;
    /* Newest first: from the last item >= lo towards the first. */
    for (size_t i = count_ge(l, lo); i-- > 0;) {
        const tlc_item *it = &l->items[i];
        if (hi.ptr && sfx_cmp(it->sfx, it->len, hi.ptr, hi.len) >= 0) break; /* past the range */
        if (it->expire_at > 0 && it->expire_at <= sp->now_ms) continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        if (res->n_entries == sp->limit) {
            res->more = true;
            return true;
        }
        *rc = tl_result_push(res, out, &cap, sp->limit, hr_slice_of(it->sfx, it->len), err);
        if (*rc != 0) return true;
    }
    /* Ran out of items: the answer is complete when nothing of the range
     * lies past the floor. */
    return l->floor == NULL || (hi.ptr && sfx_cmp(l->floor, l->floor_len, hi.ptr, hi.len) >= 0);
}

bool tlcache_range(tlcache *c, tlc_list *l, hr_slice lo, hr_slice hi, const hr_tlrange_spec *sp,
                   hr_arena *out, hr_result *res, int *rc, hr_err *err) {
    pthread_mutex_lock(&l->mu);
    bool answered = range_locked(l, lo, hi, sp, out, res, rc, err);
    pthread_mutex_unlock(&l->mu);
    if (answered) {
        atomic_fetch_add_explicit(&c->hits, 1, memory_order_relaxed);
    } else { /* RocksDB answers it: drop what was gathered */
        res->n_entries = 0;
        res->entries = NULL;
        res->more = false;
    }
    return answered;
}

/* Writes --------------------------------------------------------------------- */

bool tlcache_begin(rx *x) {
    if (tlcache_lists(x->s->tlc) == 0) return false;
    part(x)->of = hr_arena_calloc(&x->mem, x->b->len * sizeof *x->tlc->of);
    return true;
}

bool tlcache_look_up(rx *x, size_t i) {
    return (x->tlc->of[i] = tlcache_find(x->s->tlc, x->b->ops[i].key)) != NULL;
}

tlc_list *tlcache_of(const rx *x, const hr_op *op) {
    return x->tlc && x->tlc->of ? x->tlc->of[op - x->b->ops] : NULL;
}

void tlcache_note(rx *x, tlc_list *l, bool add, hr_slice sfx, int64_t expire_at) {
    struct tlc_rx *t = part(x);
    t->ch = arena_grow(&x->mem, t->ch, t->nch, &t->ch_cap, sizeof *t->ch, 16, 0);
    t->ch[t->nch++] = (tlc_change){l, add, hr_arena_copy(&x->mem, sfx), expire_at};
}

void tlcache_apply(rx *x) {
    size_t keep = x->s->tlc->keep;
    struct tlc_rx *t = x->tlc;
    for (size_t i = 0; t && i < t->nch; i++) {
        tlc_change *ch = &t->ch[i];
        pthread_mutex_lock(&ch->list->mu);
        if (ch->list->ready) { /* else its loader reads this batch's write */
            if (ch->add)
                item_add(ch->list, ch->sfx, ch->expire_at, keep);
            else
                item_remove(ch->list, ch->sfx);
        }
        pthread_mutex_unlock(&ch->list->mu);
    }
}

void tlcache_want(rx *x, hr_slice list) {
    struct tlc_rx *t = part(x);
    for (size_t i = 0; i < t->nwant; i++)
        if (hr_slice_eq(t->want[i], list)) return;
    t->want = arena_grow(&x->mem, t->want, t->nwant, &t->want_cap, sizeof *t->want, 8, 0);
    t->want[t->nwant++] = hr_arena_copy(&x->mem, list);
}

/* Registration and loading --------------------------------------------------- */

/* Read the newest keep entries of the list (and whether there are more) into
 * l, from the DB's latest state. The caller holds the list's stripe. */
static int load(rocks_store *s, tlc_list *l, size_t keep) {
    hr_slice list = hr_slice_of(l->key, l->key_len);
    hr_buf lo = HR_BUF_INIT, hi = HR_BUF_INIT;
    tl_list_prefix(&lo, list);
    tl_list_end(&hi, list);
    size_t plen = lo.len;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_upper_bound(ro, hi.data, hi.len);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, ro, s->cf[CF_TL]);
    tlc_item *newest_first = hr_xmalloc((keep + 1) * sizeof *newest_first);
    size_t n = 0;
    for (rocksdb_iter_seek(it, lo.data, lo.len); rocksdb_iter_valid(it) && n <= keep; rocksdb_iter_next(it)) {
        size_t klen, vlen;
        const char *k = rocksdb_iter_key(it, &klen);
        const char *v = rocksdb_iter_value(it, &vlen);
        if (klen < plen + 8) continue;
        char *copy = hr_xmalloc(klen - plen);
        memcpy(copy, k + plen, klen - plen);
        newest_first[n++] = (tlc_item){copy, (uint32_t)(klen - plen), vlen == 8 ? (int64_t)load_u64(v) : 0};
    }
    char *errptr = rocks_scan_end(it, ro);
    hr_buf_free(&lo);
    hr_buf_free(&hi);
    if (errptr) {
        hr_warn("rocksdb: time list '%.*s' not kept in memory: %s", (int)list.len, list.ptr, errptr);
        rocksdb_free(errptr);
        for (size_t i = 0; i < n; i++)
            free(newest_first[i].sfx);
        free(newest_first);
        return -1;
    }
    if (n > keep) { /* one more than kept: the floor */
        l->floor = newest_first[keep].sfx;
        l->floor_len = newest_first[keep].len;
        n = keep;
    }
    l->cap = n > 32 ? n : 32;
    l->items = hr_xmalloc(l->cap * sizeof *l->items);
    for (size_t i = 0; i < n; i++)
        l->items[i] = newest_first[n - 1 - i];
    l->n = n;
    atomic_fetch_add_explicit(&l->c->items, n, memory_order_relaxed);
    free(newest_first);
    return 0;
}

static void keep_list(rocks_store *s, hr_slice list) {
    tlcache *c = s->tlc;
    pthread_rwlock_wrlock(&c->gate); /* waits for the writers that did not know the list */
    /* A new list loads up to keep entries: they must fit in the budget. */
    bool room =
        atomic_load(&c->n) < TLC_MAX_LISTS && tlcache_bytes(c) + c->keep * TLC_ITEM_BYTES <= c->budget;
    if (tlcache_find(c, list) || !room) {
        pthread_rwlock_unlock(&c->gate);
        return;
    }
    tlc_list *l = hr_xcalloc(1, sizeof *l);
    l->c = c;
    l->hash = XXH3_64bits(list.ptr, list.len);
    l->key = hr_xmalloc(list.len ? list.len : 1);
    memcpy(l->key, list.ptr, list.len);
    l->key_len = list.len;
    pthread_mutex_init(&l->mu, NULL);
    size_t i = l->hash & (TLC_SLOTS - 1);
    while (atomic_load(&c->slots[i]))
        i = (i + 1) & (TLC_SLOTS - 1);
    atomic_store_explicit(&c->slots[i], l, memory_order_release);
    atomic_fetch_add_explicit(&c->n, 1, memory_order_release);
    pthread_rwlock_unlock(&c->gate);

    /* Writers that know the list now take its stripe: load under it. */
    pthread_mutex_t *stripe = &s->stripes[rocks_stripe(list)];
    pthread_mutex_lock(stripe);
    pthread_mutex_lock(&l->mu);
    if (load(s, l, c->keep) == 0) {
        l->ready = true;
        hr_info("rocksdb: time list '%.*s' (%zu newest entries%s) kept in memory", (int)list.len, list.ptr,
                l->n, l->floor ? ", more on disk" : "");
    }
    pthread_mutex_unlock(&l->mu);
    pthread_mutex_unlock(stripe);
}

void tlcache_keep_wanted(rx *x) {
    struct tlc_rx *t = x->tlc;
    for (size_t i = 0; t && i < t->nwant; i++)
        keep_list(x->s, t->want[i]);
}
