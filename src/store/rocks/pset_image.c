/* rocks/pset_image.c — images of large packed sets: a whole set in one record of
 * memory, so that a test of many members costs about one cache line each.
 *
 * WHY. A zipf-feed friends-reads tests a user's ~450 friends against the
 * reader sets of ~65 popular URLs (core/reading_plan.h, URL_SET): ~29,000
 * member tests a query, against sets of up to 100,000 readers cut into up
 * to ~260 chunks (rocks/pset.c). Through the chunks, each test first finds
 * its chunk in the record cache (a hash of the chunk's key, a bucket lock,
 * a key compare, a reference held to the end of the batch) and then
 * searches a window of 32 hashes and 32 expiries around its guessed place,
 * ~10 cache lines: the two were most of the query. An image answers the
 * same test from one cache lookup per set and ~1-2 lines per member.
 *
 * WHAT. A set's (hash, expiry) entries, 16 bytes each, in hash order in a
 * table with gaps: nslots ~ entries / 0.7, and entry h lies at the
 * first slot from its home, home(h) = (h >> 32) * nslots >> 32, not taken
 * by a smaller hash. Built in hash order (the chunks, one after another,
 * are the set sorted by hash), each entry lands at max(home, the previous
 * entry's slot + 1). Homes grow with h, so every slot from home(h) to h's
 * own holds a smaller hash: a search starts at home(h) and steps while the
 * slot holds a smaller hash, and stops at h, a larger one or a gap. Gaps
 * hold UINT64_MAX with the expiry PIMG_GAP, and a gap ends the table, so
 * every search stops. At a load of 0.7 a search reads ~2 slots on average,
 * nearly always in one or two cache lines; the table is the set's entries
 * and ~40 % more (~23 bytes a member, in memory only).
 *
 * LAYOUT (the record's value): | version u64 | bits u64 | stamp u64 |
 * nslots u64 | nall u64 |, then nall slots of | hash u64 | expiry i64 |,
 * host order (never on disk). nall = the slots the last entry reached, or
 * nslots, and the final gap. bits: the set's chunking (2^bits chunks) when
 * it was built; stamp: the sequence number its snapshot was taken after.
 *
 * LIFE. Images live in the store's pset_images, an rcache keyed by the
 * set's key, under the record cache's rules (rocks/view.c): a batch uses an
 * image that its snapshot sees (its stamp at or below the batch's sequence
 * number, of the set's version and chunking) while it has written nothing.
 * The next test that reads every chunk of a set without an image builds
 * one and offers it. Building costs about one pass over the set, a few
 * tests' worth, so a set is built again at most once per PIMG_REBUILD_MS,
 * and a batch builds at most PIMG_BUILDS_PER_BATCH images (a cold query of
 * 65 popular URLs would otherwise build all 65).
 *
 * WRITES. A write to a popular URL's set changes one of its ~260 chunks.
 * Retiring the image at each write, as the first version did, sent every
 * test back to the chunks between rebuilds, and a zipf-feed query's CPU
 * grew with the rate of recorded reads. So an image outlives writes: the
 * store logs which chunk of which set each batch writes (pimg_before_write,
 * _after_write), and a test leaves out of the image the chunks written
 * after it was built, searching its members of those few chunks in the
 * chunks themselves, read at its own snapshot. The log keeps the last
 * PIMG_LOG_ENTRIES writes of the sets hashing to each of PIMG_LOG_SLOTS
 * slots; an image older than a write the slot has forgotten is not used
 * (and is built again), nor one with more than a quarter of its chunks
 * written since. The log is a fixed ~2 MB (32 bytes an entry). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "store/rocks/cache.h"
#include "store/rocks/pset.h"

#define PIMG_GAP INT64_MIN /* the expiry of a gap; expiries are >= 0 */
#define PIMG_HEAD 40       /* version, bits, stamp, nslots, nall */
#define PIMG_SLOT 16

static inline uint64_t ld64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline void st64(unsigned char *p, uint64_t v) {
    memcpy(p, &v, 8);
}

static inline uint64_t home(uint64_t nslots, uint64_t h) {
    return (uint64_t)(((unsigned __int128)(h >> 32) * nslots) >> 32);
}

bool pimg_wanted(const rmeta *m, size_t n_members) {
    size_t nc = (size_t)1 << m->bits;
    /* rocks/pset.c tests through a table of every chunk only when nc <=
     * 4 n; only such a test may read them all to build an image */
    return n_members >= PIMG_MIN_MEMBERS && nc >= PIMG_MIN_CHUNKS && nc <= 4 * n_members;
}

bool pimg_build(uint64_t version, unsigned bits, uint64_t stamp, const pimg_chunk *chunks, size_t nc,
                hr_buf *out) {
    uint64_t total = 0;
    for (size_t c = 0; c < nc; c++)
        total += chunks[c].n;
    uint64_t nslots = total + total * 3 / 7 + 1; /* a load of 0.7 */
    /* Pass 1: where the last entry lands (and the hashes are in order). */
    uint64_t next = 0, prev = 0;
    bool first = true;
    for (size_t c = 0; c < nc; c++)
        for (size_t i = 0; i < chunks[c].n; i++) {
            uint64_t h = hr_load_u64be(chunks[c].hs + 8 * i);
            if (!first && h <= prev) return false; /* not a set in hash order: no image */
            uint64_t at = home(nslots, h);
            next = (at > next ? at : next) + 1;
            prev = h;
            first = false;
        }
    uint64_t nall = (next > nslots ? next : nslots) + 1;
    size_t bytes = PIMG_HEAD + (size_t)nall * PIMG_SLOT;
    if (bytes > PIMG_MAX_BYTES) return false;
    hr_buf_clear(out);
    hr_buf_reserve(out, bytes);
    unsigned char *p = (unsigned char *)out->data;
    st64(p, version);
    st64(p + 8, bits);
    st64(p + 16, stamp);
    st64(p + 24, nslots);
    st64(p + 32, nall);
    unsigned char *slots = p + PIMG_HEAD;
    for (uint64_t s = 0; s < nall; s++) {
        st64(slots + PIMG_SLOT * s, UINT64_MAX);
        st64(slots + PIMG_SLOT * s + 8, (uint64_t)PIMG_GAP);
    }
    /* Pass 2: place them. */
    next = 0;
    for (size_t c = 0; c < nc; c++)
        for (size_t i = 0; i < chunks[c].n; i++) {
            uint64_t h = hr_load_u64be(chunks[c].hs + 8 * i), at = home(nslots, h);
            if (at < next) at = next;
            int64_t expire_at = chunks[c].exps ? (int64_t)hr_load_u64be(chunks[c].exps + 8 * i) : 0;
            st64(slots + PIMG_SLOT * at, h);
            st64(slots + PIMG_SLOT * at + 8, (uint64_t)expire_at);
            next = at + 1;
        }
    out->len = bytes;
    return true;
}

bool pimg_open(hr_slice value, uint64_t version, unsigned bits, pimg *out) {
    const unsigned char *p = (const unsigned char *)value.ptr;
    if (value.len < PIMG_HEAD || ld64(p) != version || ld64(p + 8) != bits) return false;
    uint64_t nslots = ld64(p + 24), nall = ld64(p + 32);
    if (nslots == 0 || nall < nslots + 1 || value.len != PIMG_HEAD + nall * PIMG_SLOT) return false;
    out->slots = p + PIMG_HEAD;
    out->nslots = nslots;
    out->nall = nall;
    out->stamp = ld64(p + 16);
    out->bits = bits;
    return true;
}

void pimg_prefetch(const pimg *im, uint64_t h) {
    const unsigned char *s = im->slots + PIMG_SLOT * home(im->nslots, h);
    __builtin_prefetch(s);
    __builtin_prefetch(s + 2 * PIMG_SLOT); /* a search reads ~2 slots; a slot may straddle two lines */
}

bool pimg_find(const pimg *im, uint64_t h, int64_t *expire_at) {
    const unsigned char *s = im->slots + PIMG_SLOT * home(im->nslots, h);
    while (ld64(s) < h)
        s += PIMG_SLOT;
    if (ld64(s) != h) return false;
    int64_t e = (int64_t)ld64(s + 8);
    if (e == PIMG_GAP) return false; /* h is UINT64_MAX, and this is a gap */
    *expire_at = e;
    return true;
}

bool pimg_entry(const pimg *im, uint64_t i, uint64_t *h, int64_t *expire_at) {
    const unsigned char *s = im->slots + PIMG_SLOT * i;
    int64_t e = (int64_t)ld64(s + 8);
    if (e == PIMG_GAP) return false;
    *h = ld64(s);
    *expire_at = e;
    return true;
}

/* ---- The write log ------------------------------------------------------------ */

#define PENDING UINT64_MAX /* the stamp of a write not yet committed */

/* A write of chunk `chunk` of the set whose key hashes to `set`, by batch
 * `writer`, committed at or before `stamp` (PENDING until it is). A void
 * entry (a write that did not happen) has writer NULL and stamp 0. */
typedef struct lentry {
    uint64_t set, stamp;
    const rx *writer;
    uint32_t chunk;
} lentry;

/* The last PIMG_LOG_ENTRIES writes to the sets hashing here, oldest first
 * from head, in a ring. floor: the highest stamp of a write the ring has
 * dropped; lost: dropped writes still pending (their stamps unknown), each
 * raising floor when its batch ends. An image stamped below floor, or any
 * while lost > 0, may miss a write: it is not used. */
typedef struct lslot {
    pthread_mutex_t lock;
    uint32_t head, n, lost;
    uint64_t floor;
    lentry e[PIMG_LOG_ENTRIES];
} lslot;

struct pimg_log {
    lslot slots[PIMG_LOG_SLOTS];
};

pimg_log *pimg_log_new(void) {
    pimg_log *log = hr_xcalloc(1, sizeof *log);
    for (size_t i = 0; i < PIMG_LOG_SLOTS; i++)
        pthread_mutex_init(&log->slots[i].lock, NULL);
    return log;
}

void pimg_log_free(pimg_log *log) {
    if (log == NULL) return;
    for (size_t i = 0; i < PIMG_LOG_SLOTS; i++)
        pthread_mutex_destroy(&log->slots[i].lock);
    free(log);
}

static uint64_t set_hash(hr_slice set) {
    return XXH3_64bits(set.ptr, set.len);
}

static lslot *slot_lock(pimg_log *log, uint64_t set) {
    lslot *sl = &log->slots[set % PIMG_LOG_SLOTS];
    pthread_mutex_lock(&sl->lock);
    return sl;
}

static lentry *entry_at(lslot *sl, uint32_t i) {
    return &sl->e[(sl->head + i) % PIMG_LOG_ENTRIES];
}

/* Append a pending write to a locked slot, dropping the oldest if full. */
static void log_append(lslot *sl, uint64_t set, uint32_t chunk, const rx *writer) {
    if (sl->n == PIMG_LOG_ENTRIES) {
        lentry *old = entry_at(sl, 0);
        if (old->stamp == PENDING)
            sl->lost++;
        else if (old->stamp > sl->floor)
            sl->floor = old->stamp;
        sl->head = (sl->head + 1) % PIMG_LOG_ENTRIES;
        sl->n--;
    }
    *entry_at(sl, sl->n++) = (lentry){set, PENDING, writer, chunk};
}

/* The batch's pending write of (set, chunk) ends: committed at or before
 * stamp if wrote, else void. */
static void log_settle(lslot *sl, uint64_t set, uint32_t chunk, const rx *writer, bool wrote,
                       uint64_t stamp) {
    for (uint32_t i = 0; i < sl->n; i++) {
        lentry *e = entry_at(sl, i);
        if (e->writer == writer && e->stamp == PENDING && e->set == set && e->chunk == chunk) {
            *e = wrote ? (lentry){set, stamp, NULL, chunk} : (lentry){0, 0, NULL, 0};
            return;
        }
    }
    sl->lost--; /* dropped while pending */
    if (wrote && stamp > sl->floor) sl->floor = stamp;
}

/* The set and the chunk number of a chunk key (rocks/pset.c: the set's key
 * prefix, then the chunk as a u32, big-endian). */
static bool chunk_of_key(hr_slice chunk_key, uint64_t *set, uint32_t *chunk) {
    hr_slice key, rest;
    uint64_t version;
    if (key_parse(chunk_key, &key, &version, &rest) != 0 || rest.len != 4) return false;
    const unsigned char *p = (const unsigned char *)rest.ptr;
    *set = set_hash(key);
    *chunk = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    return true;
}

void pimg_before_write(rx *x, const hr_slice *chunks, size_t n) {
    uint64_t set;
    uint32_t chunk;
    for (size_t i = 0; i < n; i++) {
        if (!chunk_of_key(chunks[i], &set, &chunk)) continue;
        lslot *sl = slot_lock(x->s->pimg_log, set);
        log_append(sl, set, chunk, x);
        pthread_mutex_unlock(&sl->lock);
    }
}

void pimg_after_write(rx *x, const hr_slice *chunks, size_t n, bool ok, bool wrote, uint64_t stamp) {
    uint64_t set;
    uint32_t chunk;
    if (!wrote) return; /* nothing was logged */
    for (size_t i = 0; i < n; i++) {
        if (!chunk_of_key(chunks[i], &set, &chunk)) continue;
        lslot *sl = slot_lock(x->s->pimg_log, set);
        log_settle(sl, set, chunk, x, ok, stamp);
        pthread_mutex_unlock(&sl->lock);
    }
}

/* Mark in st the chunks of the set (key hash set) written since its image
 * was built, or pending: a stamp is the sequence number after the commit
 * or later, so a write stamped after the image's may be in it already, and
 * is left out all the same. False if the image may miss a write (the slot
 * dropped one newer than it), or too many chunks were written. */
static bool mark_written(rx *x, uint64_t set, pimg_op *st) {
    uint32_t nc = UINT32_C(1) << st->img.bits;
    bool usable = true;
    lslot *sl = slot_lock(x->s->pimg_log, set);
    if (sl->lost > 0 || sl->floor > st->img.stamp) usable = false;
    for (uint32_t i = 0; usable && i < sl->n; i++) {
        const lentry *e = entry_at(sl, i);
        if (e->set != set || e->stamp <= st->img.stamp || e->chunk >= nc) continue;
        if (st->dirty == NULL) st->dirty = hr_arena_calloc(&x->mem, nc / 8 + 1);
        if (st->dirty[e->chunk / 8] >> (e->chunk % 8) & 1) continue;
        st->dirty[e->chunk / 8] |= (unsigned char)(1u << (e->chunk % 8));
        usable = ++st->ndirty <= nc / 4;
    }
    pthread_mutex_unlock(&sl->lock);
    return usable;
}

/* ---- The cache ---------------------------------------------------------------- */

/* The images' state of a batch (rx.pimg), in x->mem, made when a test
 * first plans one (NULL until then). */
struct pimg_rx {
    size_t builds; /* the images the batch has built */
    pimg_op ops[]; /* per op of the batch */
};

/* The state of op in x, allocated on first use. */
static pimg_op *op_state(rx *x, const hr_op *op) {
    if (x->pimg == NULL)
        x->pimg = hr_arena_calloc(&x->mem, sizeof *x->pimg + x->b->len * sizeof x->pimg->ops[0]);
    return &x->pimg->ops[op - x->b->ops];
}

const pimg_op *pimg_of(const rx *x, const hr_op *op) {
    return x->pimg ? &x->pimg->ops[op - x->b->ops] : NULL;
}

/* Whether x may build the image of the set (key hash set) now: its share of
 * the batch's builds, and no build of the set (or of a set sharing its
 * cooldown slot) in the last PIMG_REBUILD_MS. After op_state (x->pimg set). */
static bool claim_build(rx *x, uint64_t set) {
    if (x->pimg->builds >= PIMG_BUILDS_PER_BATCH) return false;
    _Atomic int64_t *last = &x->s->pimg_built[set & (PIMG_COOLDOWN_SLOTS - 1)];
    int64_t was = atomic_load_explicit(last, memory_order_relaxed);
    if (was != 0 && x->now - was < PIMG_REBUILD_MS) return false;
    if (!atomic_compare_exchange_strong(last, &was, x->now)) return false; /* another batch builds it */
    x->pimg->builds++;
    return true;
}

bool pimg_plan(rx *x, const hr_op *op, const rmeta *m) {
    if (x->dirty || !pimg_wanted(m, op->n_u64s)) return false;
    rblob *held;
    hr_slice value;
    pimg_op *st = op_state(x, op);
    uint64_t set = set_hash(op->key);
    if (rcache_take(x->s->pset_images, op->key, x->seq, &held, &value)) {
        rx_hold(x, held);
        if (pimg_open(value, m->version, m->bits, &st->img)) {
            if (mark_written(x, set, st)) return true;
            st->img.slots = NULL; /* too old: built again, when it may be */
            st->ndirty = 0;
        }
    }
    st->build = claim_build(x, set);
    return false;
}

void pimg_offer(rx *x, const hr_op *op, const rmeta *m, const pimg_chunk *chunks, size_t nc) {
    if (x->dirty) return; /* its view holds its own writes */
    hr_buf img = HR_BUF_INIT;
    if (pimg_build(m->version, m->bits, x->seq, chunks, nc, &img))
        rcache_offer(x->s->pset_images, op->key, hr_buf_slice(&img), x->seq);
    hr_buf_free(&img);
}
