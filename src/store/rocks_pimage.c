/* rocks_pimage.c — images of large packed sets: a whole set in one record of
 * memory, so that a test of many members costs about one cache line each.
 *
 * WHY. A zipf-feed friends-reads tests a user's ~450 friends against the
 * reader sets of ~65 popular URLs (core/reading_plan.h, URL_SET): ~29,000
 * member tests a query, against sets of up to 100,000 readers cut into up
 * to ~260 chunks (rocks_pset.c). Through the chunks, each test first finds
 * its chunk in the record cache (a hash of the chunk's key, a bucket lock,
 * a key compare, a reference held to the end of the batch: ~35 % of the
 * query in `perf`) and then searches a window of 32 hashes and 32 expiries
 * around its guessed place, ~10 cache lines (~45 %). An image answers the
 * same test from one cache lookup per set and ~1-2 lines per member
 * (BENCHMARKS.md, reading round 13).
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
 * LAYOUT (the record's value): | version u64 | nslots u64 | nall u64 |, then
 * nall slots of | hash u64 | expiry i64 |, host order (never on disk).
 * nall = the slots the last entry reached, or nslots, and the final gap.
 *
 * LIFE. Images live in the store's pset_images, an rcache keyed by the
 * set's key, under the record cache's rules (rocks_view.c): a batch uses an
 * image that its snapshot sees (its stamp at or below the batch's sequence
 * number, not in flux, of the set's version) while it has written nothing;
 * a batch that writes a chunk of a set marks the set's image in flux and
 * then forgets it, stamping it past the write (pimg_before_write, _after_).
 * The next test that reads every chunk of a set without an image builds
 * one and offers it. Building costs about one pass over the set (~1-2 ms for
 * 100,000 readers), a few tests' worth, so a set written between most of
 * its tests would rebuild at every test: a set is built again at most once
 * per PIMG_REBUILD_MS, and a batch builds at most PIMG_BUILDS_PER_BATCH
 * images (a cold query of 65 popular URLs would otherwise build all 65).
 * Between builds such a set is tested through its chunks, as before. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "store/rocks_internal.h"

#define PIMG_GAP INT64_MIN /* the expiry of a gap; expiries are >= 0 */
#define PIMG_HEAD 24       /* version, nslots, nall */
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
    /* rocks_pset.c tests through a table of every chunk only when nc <=
     * 4 n; only such a test may read them all to build an image */
    return n_members >= PIMG_MIN_MEMBERS && nc >= PIMG_MIN_CHUNKS && nc <= 4 * n_members;
}

bool pimg_build(uint64_t version, const pimg_chunk *chunks, size_t nc, hr_buf *out) {
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
    st64(p + 8, nslots);
    st64(p + 16, nall);
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

bool pimg_open(hr_slice value, uint64_t version, pimg *out) {
    const unsigned char *p = (const unsigned char *)value.ptr;
    if (value.len < PIMG_HEAD || ld64(p) != version) return false;
    uint64_t nslots = ld64(p + 8), nall = ld64(p + 16);
    if (nslots == 0 || nall < nslots + 1 || value.len != PIMG_HEAD + nall * PIMG_SLOT) return false;
    out->slots = p + PIMG_HEAD;
    out->nslots = nslots;
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

/* ---- The cache ---------------------------------------------------------------- */

/* The state of op in x, allocated on first use. */
static pimg_op *op_state(rx *x, const hr_op *op) {
    if (x->pimg_ops == NULL) x->pimg_ops = hr_arena_calloc(&x->mem, x->b->len * sizeof *x->pimg_ops);
    return &x->pimg_ops[op - x->b->ops];
}

const pimg_op *pimg_of(const rx *x, const hr_op *op) {
    return x->pimg_ops ? &x->pimg_ops[op - x->b->ops] : NULL;
}

/* Whether x may build the image of key now: its share of the batch's
 * builds, and no build of the set (or of a set sharing its cooldown slot)
 * in the last PIMG_REBUILD_MS. */
static bool claim_build(rx *x, hr_slice key) {
    if (x->pimg_builds >= PIMG_BUILDS_PER_BATCH) return false;
    _Atomic int64_t *last = &x->s->pimg_built[XXH3_64bits(key.ptr, key.len) & (PIMG_COOLDOWN_SLOTS - 1)];
    int64_t was = atomic_load_explicit(last, memory_order_relaxed);
    if (was != 0 && x->now - was < PIMG_REBUILD_MS) return false;
    if (!atomic_compare_exchange_strong(last, &was, x->now)) return false; /* another batch builds it */
    x->pimg_builds++;
    return true;
}

bool pimg_plan(rx *x, const hr_op *op, const rmeta *m) {
    if (x->dirty || !pimg_wanted(m, op->n_u64s)) return false;
    rblob *held;
    hr_slice value;
    pimg_op *st = op_state(x, op);
    if (rcache_take(x->s->pset_images, op->key, x->seq, &held, &value)) {
        rx_hold(x, held);
        if (pimg_open(value, m->version, &st->img)) return true;
    }
    st->build = claim_build(x, op->key);
    return false;
}

void pimg_offer(rx *x, const hr_op *op, const rmeta *m, const pimg_chunk *chunks, size_t nc) {
    if (x->dirty) return; /* its view holds its own writes */
    hr_buf img = HR_BUF_INIT;
    if (pimg_build(m->version, chunks, nc, &img)) rcache_offer(x->s->pset_images, op->key, hr_buf_slice(&img), x->seq);
    hr_buf_free(&img);
}

/* The set a chunk key belongs to. */
static bool set_of(hr_slice chunk_key, hr_slice *set) {
    uint64_t version;
    hr_slice rest;
    return key_parse(chunk_key, set, &version, &rest) == 0;
}

void pimg_before_write(rx *x) {
    hr_slice set;
    for (size_t i = 0; i < x->pset_ndirty; i++)
        if (set_of(x->pset_dirty[i], &set)) rcache_write_begin(x->s->pset_images, set);
}

void pimg_after_write(rx *x, bool ok, bool wrote, uint64_t stamp) {
    hr_slice set;
    for (size_t i = 0; wrote && i < x->pset_ndirty; i++) /* forget the image; the write stamps its bucket */
        if (set_of(x->pset_dirty[i], &set)) rcache_write_end(x->s->pset_images, set, ok, false, hr_slice_of("", 0), stamp);
}
