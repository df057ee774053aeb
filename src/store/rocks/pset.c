/* rocks/pset.c — packed sets of 64-bit members (hr_pset_*) on RocksDB.
 *
 * What they are for: a member's reads (URL hashes) and the stories a member
 * has seen, tested against MANY members at once — "which of these 100 URLs
 * did each of my 450 friends read", "which of these 500 top stories have I
 * seen". A sorted set answers that with one point lookup per member; a
 * packed set answers it with one MultiGet of the few values the members
 * fall in and a binary search in memory per member.
 *
 * ENCODING (drawn in rocks/engine.c). The metadata record holds version, size (the
 * entries stored), a random seed, `soonest` and `latest` (bounds of the
 * entries' non-zero expiries), `forever` (entries that never expire) and
 * `bits`: the set is cut into 2^bits chunks, each a sub-key
 * `prefix | u32 chunk` whose value is a sorted array.
 *
 *   - An entry stores h = mix(member ^ seed), not the member: mix is
 *     splitmix64's finalizer, a bijection of 64-bit integers, so h identifies
 *     the member exactly (the inverse exists if an op ever lists members),
 *     and h is uniform even when members are not (story ids count up).
 *     The seed, drawn when the set is created, keeps anyone who picks
 *     members from piling them into one chunk.
 *   - A member lives in chunk h >> (64 - bits): its top bits. So a test
 *     finds a member's chunk with a shift, and all chunks together are the
 *     set sorted by h. Doubling the chunks splits chunk c into 2c and 2c+1
 *     at the next bit of h: each half is a contiguous run, no re-sort, and
 *     the chunk keys are rewritten in place (same version).
 *   - A chunk's value is a form byte, its n hashes, then their n expiries
 *     (i64, 0: never), all big-endian; the expiries are left out when no
 *     member of the chunk expires ('P', plain), which halves the bytes of a
 *     set of reads. The binary search walks the hashes only; the expiry is
 *     read for the one entry found.
 *   - The set doubles its chunks when they average more than CHUNK_TARGET
 *     entries, so chunks average 256..512 entries: 2..4 KiB plain (RocksDB's
 *     block is 4 KiB), twice that with expiries. Against a target of 256,
 *     tests of many members ran markedly faster, and adds no slower.
 *     Doubling rewrites the whole set once, so adds cost O(1)
 *     amortized; the set never shrinks its chunks (an emptied chunk is a
 *     deleted key, which MultiGet answers from the bloom filter).
 *
 * COSTS. hr_pset_test of n members against S entries reads min(n, 2^bits)
 * chunks, all in the batch's one prefetch MultiGet (rocks/engine.c step 4: a batch
 * of several tests on several sets is still one MultiGet), then does one
 * mix, one shift and one search per member, on the values as RocksDB
 * returned them (no decoding): a binary search of ~5 probes in the window
 * around the member's guessed place, whose cache lines were prefetched a
 * few members earlier (cref_find). The MultiGet dominates: a test costs
 * about the same as min(n, 2^bits) hr_get of 4 KiB values, plus a short
 * search per member. A set of PIMG_MIN_CHUNKS chunks or more, tested often,
 * is tested from its image instead (rocks/pset_image.c): one cache lookup
 * for the set and ~1-2 cache lines per member; and when that image has a
 * member column (rocks/pset_columns.c), from one bit per member, in a row
 * the batch has looked up once for all its tests of the same members.
 * hr_pset_add and hr_pset_rem read one chunk (prefetched too) and change it
 * in a decoded copy kept in the batch's view (rx_aux); pset_flush writes
 * every changed chunk once at the end of the batch, so a batch of 1,000
 * adds to one set writes each of its chunks once, not 1,000 times. The
 * metadata is written by each op, as sorted sets do. hr_pset_card is the
 * size from the metadata when no entry can have expired (now < soonest),
 * else a count of the live entries of every chunk (one MultiGet; card is
 * rare).
 *
 * EXPIRY. A member counts while now < its expire_at (0: forever), now being
 * the batch's clock. Expired entries stay in their chunk, counted by size,
 * until an add or rem rewrites that chunk, which prunes them. An add whose
 * expiry is already past stores nothing: it removes the member if it was
 * there. A set whose members have all expired does not exist (store.h: an
 * empty set does not exist): meta_alive (rocks/engine.h) ends it when
 * forever is 0 and now >= latest, and the compaction filters collect it.
 * That needs latest exact whenever forever is 0; it is kept so by each add
 * and rem, except when the member leaving held latest, or the last member
 * that never expires leaves: then the op reads the whole set once to find
 * the new latest (recount, which also makes size and soonest exact, and
 * which every doubling does anyway). A set whose members never expire
 * never pays for it.
 *
 * LOCKS. hr_pset_add and hr_pset_rem run under their key's stripe lock
 * (rocks/engine.c), so size is exact and concurrent adds of one member answer
 * "new" once. Tests and cards read the batch's snapshot and lock nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "store/rocks/cache.h"
#include "store/rocks/pset.h"

#define CHUNK_TARGET 512u   /* entries a chunk averages at most before the chunks double */
#define NO_EXPIRY INT64_MAX /* soonest of a set whose entries never expire */

static inline uint64_t hash_of(const rmeta *m, uint64_t member) {
    return pset_mix(member ^ m->seed);
}

static inline uint32_t chunk_of(const rmeta *m, uint64_t h) {
    return m->bits ? (uint32_t)(h >> (64 - m->bits)) : 0;
}

static inline bool alive(int64_t expire_at, int64_t now) {
    return expire_at == 0 || now < expire_at;
}

/* A seed for a new set: splitmix64 on a per-thread state. Not secret, only
 * unknown to whoever chooses the members. */
static uint64_t random_seed(void) {
    static _Thread_local uint64_t state;
    if (state == 0) state = hr_mono_ns() ^ (uint64_t)(uintptr_t)&state;
    state += UINT64_C(0x9E3779B97F4A7C15);
    return pset_mix(state);
}

/* Chunk keys ------------------------------------------------------------------- */

/* The sub-keys of one set's chunks: its prefix, then the chunk number. */
typedef struct ckey {
    hr_buf buf;
    size_t plen;
} ckey;

static void ckey_init(ckey *k, hr_slice key, uint64_t version) {
    memset(k, 0, sizeof *k);
    key_prefix(&k->buf, key, version);
    k->plen = k->buf.len;
    hr_buf_append_u32be(&k->buf, 0);
}

/* The key of chunk c, valid until the next ckey_at or ckey_free. */
static hr_slice ckey_at(ckey *k, uint32_t c) {
    unsigned char *p = (unsigned char *)k->buf.data + k->plen;
    p[0] = (unsigned char)(c >> 24);
    p[1] = (unsigned char)(c >> 16);
    p[2] = (unsigned char)(c >> 8);
    p[3] = (unsigned char)c;
    return hr_buf_slice(&k->buf);
}

static void ckey_free(ckey *k) {
    hr_buf_free(&k->buf);
}

/* Stored chunks ------------------------------------------------------------------ */

/* A chunk's value: a form byte, its n hashes, then, unless no member of the
 * chunk expires, their n expiries. */
enum { FORM_PLAIN = 'P', FORM_EXPIRING = 'E' };

/* A chunk as stored (borrowed from the view), or, with dec, the batch's
 * decoded copy of a chunk it changed. */
typedef struct cref {
    const struct pchunk *dec;
    const unsigned char *hs;   /* n big-endian hashes */
    const unsigned char *exps; /* n big-endian expiries; NULL: none expires */
    size_t n;
    bool loaded;
} cref;

static int parse(rx *x, hr_slice v, cref *r) {
    const unsigned char *p = (const unsigned char *)v.ptr;
    size_t width = v.len > 0 && p[0] == FORM_PLAIN ? 8 : v.len > 0 && p[0] == FORM_EXPIRING ? 16 : 0;
    if (width == 0 || (v.len - 1) % width != 0)
        return hr_err_set(x->err, HR_EIO, "rocksdb: corrupt packed-set chunk (%zu bytes)", v.len);
    r->n = (v.len - 1) / width;
    r->hs = p + 1;
    r->exps = width == 16 ? p + 1 + 8 * r->n : NULL;
    return 0;
}

static int64_t raw_expiry(const cref *r, size_t i) {
    return r->exps ? (int64_t)hr_load_u64be(r->exps + 8 * i) : 0;
}

/* Decoded chunks (to change) ------------------------------------------------------ */

typedef struct pent {
    uint64_t h;
    int64_t expire_at;
} pent;

/* A chunk being changed by the batch: one malloc'd block, kept in the view's
 * slot for its key (rx_aux), which frees it. dirty: pset_flush must write it. */
typedef struct pchunk {
    size_t n, cap;
    bool dirty;
    pent e[];
} pchunk;

static pchunk *pchunk_new(size_t cap) {
    if (cap < 16) cap = 16;
    pchunk *pc = hr_xmalloc(sizeof *pc + cap * sizeof pc->e[0]);
    pc->n = 0;
    pc->cap = cap;
    pc->dirty = false;
    return pc;
}

/* The index of the first entry with hash >= h. */
static size_t pchunk_lower(const pchunk *pc, uint64_t h) {
    size_t lo = 0, hi = pc->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pc->e[mid].h < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Insert at i; returns the chunk, which may have moved. */
static pchunk *pchunk_insert(pchunk *pc, size_t i, uint64_t h, int64_t expire_at) {
    if (pc->n == pc->cap) {
        pc->cap *= 2;
        pc = hr_xrealloc(pc, sizeof *pc + pc->cap * sizeof pc->e[0]);
    }
    memmove(&pc->e[i + 1], &pc->e[i], (pc->n - i) * sizeof pc->e[0]);
    pc->e[i].h = h;
    pc->e[i].expire_at = expire_at;
    pc->n++;
    return pc;
}

static void pchunk_remove(pchunk *pc, size_t i) {
    memmove(&pc->e[i], &pc->e[i + 1], (pc->n - i - 1) * sizeof pc->e[0]);
    pc->n--;
}

/* The packed-set state of a batch (rx.pset), in x->mem, made by its first
 * change of a chunk. */
struct pset_rx {
    /* Packed-set chunks the batch changed (keys in mem, repeats allowed):
     * their decoded forms (rx_aux) are written once each, by pset_flush. */
    hr_slice *dirty;
    size_t ndirty, dirty_cap;
};

/* Remember that the chunk under key k must be written at the end. */
static void mark_dirty(rx *x, hr_slice k, pchunk *pc) {
    if (pc->dirty) return;
    pc->dirty = true;
    struct pset_rx *ps = RX_PART(x, pset);
    if (ps->ndirty == ps->dirty_cap) {
        size_t cap = ps->dirty_cap ? ps->dirty_cap * 2 : 16;
        hr_slice *d = hr_arena_alloc(&x->mem, cap * sizeof *d);
        if (ps->ndirty) memcpy(d, ps->dirty, ps->ndirty * sizeof *d);
        ps->dirty = d;
        ps->dirty_cap = cap;
    }
    ps->dirty[ps->ndirty++] = hr_arena_copy(&x->mem, k);
}

/* Drop the expired entries of pc (chunk k of m), keeping m->size exact. */
static void prune(rx *x, hr_slice k, rmeta *m, pchunk *pc) {
    size_t w = 0;
    for (size_t i = 0; i < pc->n; i++)
        if (alive(pc->e[i].expire_at, x->now)) pc->e[w++] = pc->e[i];
    if (w == pc->n) return;
    m->size -= pc->n - w;
    pc->n = w;
    mark_dirty(x, k, pc);
}

/* Chunk k of set m, decoded to be changed, with its expired entries pruned
 * (m->size follows). It lives in the view's slot for k; a caller that makes
 * it move (pchunk_insert) stores it back there. */
static int chunk_load(rx *x, hr_slice k, rmeta *m, pchunk **out) {
    pchunk *pc = *rx_aux(x, CF_SUB, k);
    if (pc == NULL) {
        cref r = {0};
        if (m->size > 0) { /* else the set is new: no chunk exists yet */
            hr_slice v;
            bool found;
            int rc = rx_get(x, CF_SUB, k, &v, &found);
            if (rc == 0 && found) rc = parse(x, v, &r);
            if (rc) return rc;
        }
        pc = pchunk_new(r.n + r.n / 2);
        for (size_t i = 0; i < r.n; i++) {
            pc->e[i].h = hr_load_u64be(r.hs + 8 * i);
            pc->e[i].expire_at = raw_expiry(&r, i);
        }
        pc->n = r.n;
        *rx_aux(x, CF_SUB, k) = pc;
    }
    if (x->now >= m->soonest) prune(x, k, m, pc);
    *out = pc;
    return 0;
}

/* Chunks as read (tests, cards) --------------------------------------------------- */

static int chunk_ref(rx *x, hr_slice k, cref *r) {
    memset(r, 0, sizeof *r);
    r->loaded = true;
    const pchunk *pc = *rx_aux(x, CF_SUB, k);
    if (pc) {
        r->dec = pc;
        r->n = pc->n;
        return 0;
    }
    hr_slice v;
    bool found;
    int rc = rx_get(x, CF_SUB, k, &v, &found);
    return rc == 0 && found ? parse(x, v, r) : rc;
}

/* The last of n sorted hashes at base that is <= h, or the first if none
 * is, without branches on the data. */
static const unsigned char *last_at_most(const unsigned char *base, size_t n, uint64_t h) {
    for (size_t len = n; len > 1;) {
        size_t half = len / 2;
        if (hr_load_u64be(base + 8 * half) <= h) base += 8 * half;
        len -= half;
    }
    return base;
}

/* Where among a stored chunk's n sorted hashes h should be. Hashes are
 * uniform across a chunk's range (h mixes member ^ seed, and a chunk is
 * every h with the same top `bits` bits), so h sits at about n times its
 * offset in that range, give or take a binomial spread of ~sqrt(n)/2 (~10
 * places in a chunk of 384). */
static size_t guess_at(size_t n, uint64_t h, unsigned bits) {
    uint64_t offset = bits ? h << bits : h;
    return (size_t)(((unsigned __int128)offset * n) >> 64);
}

#define WINDOW 32 /* places searched around the guess before the whole chunk */

/* The WINDOW places [*lo, *hi) of a chunk of n hashes around h's guess. */
static void window_of(size_t n, uint64_t h, unsigned bits, size_t *lo, size_t *hi) {
    size_t g = guess_at(n, h, bits);
    *lo = g > WINDOW / 2 ? g - WINDOW / 2 : 0;
    *hi = *lo + WINDOW < n ? *lo + WINDOW : n;
}

/* Whether h is in r; *expire_at its expiry when it is. A stored chunk is
 * searched in the WINDOW places around h's guessed place when the hashes at
 * the window's two ends bound h (nearly always: ~90 % in chunks of 400),
 * else whole: the window's lines are the ones prefetch_guess asked for. */
static bool cref_find(const cref *r, uint64_t h, unsigned bits, int64_t *expire_at) {
    if (r->n == 0) return false;
    if (r->dec) {
        size_t i = pchunk_lower(r->dec, h);
        if (i == r->n || r->dec->e[i].h != h) return false;
        *expire_at = r->dec->e[i].expire_at;
        return true;
    }
    size_t n = r->n, lo, hi;
    window_of(n, h, bits, &lo, &hi);
    const unsigned char *p;
    if ((lo == 0 || hr_load_u64be(r->hs + 8 * (lo - 1)) < h) &&
        (hi == n || hr_load_u64be(r->hs + 8 * hi) > h))
        p = last_at_most(r->hs + 8 * lo, hi - lo, h);
    else
        p = last_at_most(r->hs, n, h);
    if (hr_load_u64be(p) != h) return false;
    *expire_at = raw_expiry(r, (size_t)(p - r->hs) / 8);
    return true;
}

/* Ask the CPU for the cache lines cref_find will read for h, ahead of it:
 * a test of thousands of members jumps between chunks at every member, and
 * the searches' loads waiting on memory were most of its time. */
static void prefetch_guess(const cref *r, uint64_t h, unsigned bits) {
    if (r->dec || r->n == 0) return;
    size_t lo, hi;
    window_of(r->n, h, bits, &lo, &hi);
    /* Every line of the window, and of its expiries: the search may end
     * anywhere in it, and the expiry of the entry found is read next (with
     * the window's ends and middle only, waiting for that read was a large
     * part of a worst-case zipf friends-reads). */
    for (size_t at = 8 * lo; at < 8 * hi; at += 64) {
        __builtin_prefetch(r->hs + at);
        if (r->exps) __builtin_prefetch(r->exps + at);
    }
    __builtin_prefetch(r->hs + 8 * (hi - 1));
    if (r->exps) __builtin_prefetch(r->exps + 8 * (hi - 1));
}

static uint64_t cref_live(const cref *r, int64_t now) {
    if (!r->dec && !r->exps) return r->n;
    uint64_t live = 0;
    for (size_t i = 0; i < r->n; i++)
        live += alive(r->dec ? r->dec->e[i].expire_at : raw_expiry(r, i), now);
    return live;
}

/* The set -------------------------------------------------------------------------- */

/* Load a live packed set: *exists false when the key is missing or expired;
 * HR_EWRONGTYPE in op's rc when it holds another type (returns 1: stop). */
static int load(rx *x, hr_op *op, rmeta *m, bool *exists) {
    int rc = rx_meta(x, op->key, m);
    if (rc) return rc;
    *exists = meta_alive(m, x->now);
    if (*exists && m->type != T_PSET) {
        op->result.rc = HR_EWRONGTYPE;
        return 1;
    }
    return 0;
}

static void new_set(rx *x, rmeta *m) {
    memset(m, 0, sizeof *m);
    m->type = T_PSET;
    m->version = rx_new_version(x);
    m->seed = random_seed();
    m->soonest = NO_EXPIRY;
}

/* Write m if an op changed it (before: as loaded); an emptied set is deleted. */
static void save(rx *x, hr_slice key, const rmeta *m, const rmeta *before, bool existed) {
    if (m->size == 0) {
        if (existed) rx_del(x, CF_META, key);
        return;
    }
    if (existed && m->size == before->size && m->soonest == before->soonest && m->latest == before->latest &&
        m->forever == before->forever && m->bits == before->bits)
        return;
    rx_put_meta(x, key, m);
}

/* Load every chunk of m decoded (one MultiGet for those the batch has not
 * decoded yet), pruning them, and recompute size, soonest, latest and
 * forever exactly. *out[c] is chunk c (also in the view's slot). */
static int recount(rx *x, rmeta *m, ckey *k, pchunk ***out) {
    uint32_t nc = 1u << m->bits;
    rplan p = {0};
    for (uint32_t c = 0; c < nc; c++) {
        hr_slice ck = ckey_at(k, c);
        if (*rx_aux(x, CF_SUB, ck) == NULL) rplan_add(x, &p, CF_SUB, hr_arena_copy(&x->mem, ck));
    }
    int rc = rx_prefetch(x, p.n, p.cfs, p.keys);
    if (rc) return rc;
    pchunk **chunks = hr_arena_alloc(&x->mem, nc * sizeof *chunks);
    for (uint32_t c = 0; c < nc; c++)
        if ((rc = chunk_load(x, ckey_at(k, c), m, &chunks[c]))) return rc;
    m->size = 0;
    m->soonest = NO_EXPIRY;
    m->latest = 0;
    m->forever = 0;
    for (uint32_t c = 0; c < nc; c++) {
        m->size += chunks[c]->n;
        for (size_t i = 0; i < chunks[c]->n; i++) {
            int64_t e = chunks[c]->e[i].expire_at;
            if (e == 0) {
                m->forever++;
                continue;
            }
            if (e < m->soonest) m->soonest = e;
            if (e > m->latest) m->latest = e;
        }
    }
    *out = chunks;
    return 0;
}

/* Double the chunks of m: recount (pruning may make room), then, if the set
 * is still over the target, split chunk c into 2c and 2c+1 at the next bit
 * of the hashes. Every chunk is rewritten, once per doubling. */
static int grow(rx *x, rmeta *m, ckey *k) {
    uint32_t nc = 1u << m->bits;
    pchunk **old;
    int rc = recount(x, m, k, &old);
    if (rc || m->size <= ((uint64_t)CHUNK_TARGET << m->bits)) return rc;

    uint64_t bit = UINT64_C(1) << (63 - m->bits);
    pchunk **split = hr_arena_alloc(&x->mem, 2 * (size_t)nc * sizeof *split);
    for (uint32_t c = 0; c < nc; c++) {
        const pchunk *o = old[c];
        size_t s = 0;
        while (s < o->n && !(o->e[s].h & bit))
            s++;
        split[2 * c] = pchunk_new(s + s / 2);
        split[2 * c + 1] = pchunk_new((o->n - s) + (o->n - s) / 2);
        memcpy(split[2 * c]->e, o->e, s * sizeof o->e[0]);
        memcpy(split[2 * c + 1]->e, o->e + s, (o->n - s) * sizeof o->e[0]);
        split[2 * c]->n = s;
        split[2 * c + 1]->n = o->n - s;
    }
    m->bits++;
    for (uint32_t c = 0; c < 2 * nc; c++) {
        hr_slice ck = ckey_at(k, c);
        void **slot = rx_aux(x, CF_SUB, ck);
        free(*slot); /* chunks below nc: the old chunk c, every one of which is split already */
        *slot = split[c];
        /* Chunks from nc up are new keys: an empty one need not be written. */
        if (c < nc || split[c]->n > 0) mark_dirty(x, ck, split[c]);
    }
    return 0;
}

/* Account for a member leaving (expiry e) or joining the set. *max_out is
 * set when the member that left may have held latest. */
static void member_out(rmeta *m, int64_t e, bool *max_out) {
    m->size--;
    if (e == 0)
        m->forever--;
    else if (e >= m->latest)
        *max_out = true;
}

static void member_in(rmeta *m, int64_t e) {
    m->size++;
    if (e == 0) {
        m->forever++;
        return;
    }
    if (e < m->soonest) m->soonest = e;
    if (e >= m->latest) m->latest = e;
}

/* After an add or rem: latest must be exact while no member is forever, and
 * may not be when the member holding it left, or the last forever member
 * did (latest is only an upper bound while some member is forever). Then
 * the whole set is read once to find it, and the set ends when its last
 * member expires, exactly. A set whose members never expire never needs it. */
static int settle(rx *x, rmeta *m, const rmeta *before, ckey *k, bool max_out) {
    if (m->size == 0 || m->forever > 0 || (!max_out && before->forever == 0)) return 0;
    pchunk **chunks;
    return recount(x, m, k, &chunks);
}

/* Ops -------------------------------------------------------------------------------- */

int op_pset_add(rx *x, hr_op *op) {
    rmeta m, before;
    bool exists;
    int rc = load(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    int64_t expire_at = op->expire_at_ms;
    bool keep = alive(expire_at, x->now);
    if (!exists && !keep) { /* a member expired already, into no set: nothing to store */
        op->result.num = 1;
        return 0;
    }
    if (!exists) new_set(x, &m);
    before = m;
    uint64_t h = hash_of(&m, op->u64);
    ckey k;
    ckey_init(&k, op->key, m.version);
    hr_slice ck = ckey_at(&k, chunk_of(&m, h));
    pchunk *pc;
    if ((rc = chunk_load(x, ck, &m, &pc))) goto done;
    size_t i = pchunk_lower(pc, h);
    bool found = i < pc->n && pc->e[i].h == h; /* and alive: chunk_load pruned the rest */
    bool max_out = false;
    if (found && pc->e[i].expire_at == expire_at) {
        /* refreshed to the same expiry: nothing changes */
    } else if (found) {
        int64_t old = pc->e[i].expire_at;
        member_out(&m, old, &max_out);
        if (keep) {
            pc->e[i].expire_at = expire_at;
            member_in(&m, expire_at);
            if (expire_at >= old) max_out = false; /* it holds latest still, or is forever */
        } else {
            pchunk_remove(pc, i); /* refreshed into the past: gone now */
        }
        mark_dirty(x, ck, pc);
    } else if (keep) {
        pc = pchunk_insert(pc, i, h, expire_at);
        *rx_aux(x, CF_SUB, ck) = pc;
        member_in(&m, expire_at);
        mark_dirty(x, ck, pc);
    }
    op->result.num = !found;
    if (m.size > ((uint64_t)CHUNK_TARGET << m.bits) && m.bits < PSET_MAX_BITS)
        rc = grow(x, &m, &k); /* recounts: latest is exact after it */
    else
        rc = settle(x, &m, &before, &k, max_out);
    if (rc == 0) save(x, op->key, &m, &before, exists);
done:
    ckey_free(&k);
    return rc;
}

int op_pset_rem(rx *x, hr_op *op) {
    rmeta m, before;
    bool exists;
    int rc = load(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (!exists) return 0;
    before = m;
    uint64_t h = hash_of(&m, op->u64);
    ckey k;
    ckey_init(&k, op->key, m.version);
    hr_slice ck = ckey_at(&k, chunk_of(&m, h));
    pchunk *pc;
    if ((rc = chunk_load(x, ck, &m, &pc)) == 0) {
        size_t i = pchunk_lower(pc, h);
        bool found = i < pc->n && pc->e[i].h == h, max_out = false;
        if (found) {
            member_out(&m, pc->e[i].expire_at, &max_out);
            pchunk_remove(pc, i);
            mark_dirty(x, ck, pc);
        }
        op->result.num = found;
        rc = settle(x, &m, &before, &k, max_out);
        if (rc == 0) save(x, op->key, &m, &before, true);
    }
    ckey_free(&k);
    return rc;
}

#define AHEAD 8 /* members a test prefetches ahead of the one it searches */

/* A test of the n hashes hs from the set's image (rocks/pset_image.c): out[i]
 * is 1 for each live member; returns how many. */
static int64_t image_test(const pimg *im, const uint64_t *hs, size_t n, int64_t now, unsigned char *out) {
    int64_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + AHEAD < n) pimg_prefetch(im, hs[i + AHEAD]);
        int64_t expire_at;
        if (pimg_find(im, hs[i], &expire_at) && alive(expire_at, now)) {
            out[i] = 1;
            count++;
        }
    }
    return count;
}

/* The hashes of op's members in set m, in x's memory. */
static uint64_t *hashes_of(rx *x, const rmeta *m, const hr_op *op) {
    uint64_t *hs = hr_arena_alloc(&x->mem, (op->n_u64s ? op->n_u64s : 1) * sizeof *hs);
    for (size_t i = 0; i < op->n_u64s; i++)
        hs[i] = hash_of(m, op->u64s[i]);
    return hs;
}

/* After a test that pimg_plan asked to build the set's image (every chunk
 * was prefetched): read the chunks it did not need, and offer the image of
 * them all, unless the batch changed one (its decoded copy is not what the
 * snapshot holds). */
static int offer_image(rx *x, const hr_op *op, const rmeta *m, ckey *k, cref *refs) {
    size_t nc = (size_t)1 << m->bits;
    pimg_chunk *chunks = hr_arena_alloc(&x->mem, nc * sizeof *chunks);
    for (uint32_t c = 0; c < nc; c++) {
        int rc;
        if (!refs[c].loaded && (rc = chunk_ref(x, ckey_at(k, c), &refs[c]))) return rc;
        if (refs[c].dec) return 0;
        chunks[c] = (pimg_chunk){refs[c].hs, refs[c].exps, refs[c].n};
    }
    pimg_offer(x, op, m, chunks, nc);
    return 0;
}

int op_pset_test(rx *x, hr_op *op) {
    rmeta m;
    bool exists;
    int rc = load(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    size_t n = op->n_u64s;
    unsigned char *out = hr_arena_calloc(&x->b->arena, n ? n : 1);
    op->result.value = hr_slice_of((const char *)out, n);
    if (!exists || n == 0) return 0;

    /* Each chunk is looked up in the view once, through a table by chunk
     * number, unless the set has far more chunks than members are asked;
     * with the table, member i + AHEAD's lines are prefetched while member
     * i is searched. */
    size_t nc = (size_t)1 << m.bits;
    const pimg_op *im = pimg_of(x, op);
    ckey k;
    if (im && im->img.slots && !x->dirty) {
        /* from the image's column (rocks/pset_columns.c), else the image itself */
        int64_t count;
        uint64_t *hs = NULL;
        if (pcols_test(x, op, &m, &im->img, out, &count)) {
            op->result.num = count;
        } else {
            hs = hashes_of(x, &m, op);
            op->result.num = image_test(&im->img, hs, n, x->now, out);
        }
        atomic_fetch_add_explicit(&x->s->pimg_tests, 1, memory_order_relaxed);
        if (im->ndirty == 0) return 0;
        /* members of chunks written since the image was built: from those */
        if (hs == NULL) hs = hashes_of(x, &m, op);
        ckey_init(&k, op->key, m.version);
        for (size_t i = 0; i < n && rc == 0; i++) {
            uint32_t c = chunk_of(&m, hs[i]);
            if (!pimg_dirty(im, c)) continue;
            cref r;
            int64_t expire_at;
            if ((rc = chunk_ref(x, ckey_at(&k, c), &r))) break;
            unsigned char live = cref_find(&r, hs[i], m.bits, &expire_at) && alive(expire_at, x->now);
            op->result.num += live - out[i];
            out[i] = live;
        }
        ckey_free(&k);
        return rc;
    }
    uint64_t *hs = hashes_of(x, &m, op);
    cref *refs = nc <= 4 * n ? hr_arena_calloc(&x->mem, nc * sizeof *refs) : NULL;
    ckey_init(&k, op->key, m.version);
    int64_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (refs && i + AHEAD < n) {
            uint32_t c = chunk_of(&m, hs[i + AHEAD]);
            if (!refs[c].loaded && (rc = chunk_ref(x, ckey_at(&k, c), &refs[c]))) break;
            prefetch_guess(&refs[c], hs[i + AHEAD], m.bits);
        }
        uint32_t c = chunk_of(&m, hs[i]);
        cref one, *r = refs ? &refs[c] : &one;
        if (!refs || !r->loaded)
            if ((rc = chunk_ref(x, ckey_at(&k, c), r))) break;
        int64_t expire_at;
        if (cref_find(r, hs[i], m.bits, &expire_at) && alive(expire_at, x->now)) {
            out[i] = 1;
            count++;
        }
    }
    if (rc == 0 && refs && im && im->build) rc = offer_image(x, op, &m, &k, refs);
    ckey_free(&k);
    op->result.num = count;
    return rc;
}

int op_pset_card(rx *x, hr_op *op) {
    rmeta m;
    bool exists;
    int rc = load(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (!exists) return 0;
    if (x->now < m.soonest) { /* nothing stored can have expired */
        op->result.num = (int64_t)m.size;
        return 0;
    }
    ckey k;
    ckey_init(&k, op->key, m.version);
    uint64_t live = 0;
    for (uint32_t c = 0; c < (1u << m.bits) && rc == 0; c++) {
        cref r;
        if ((rc = chunk_ref(x, ckey_at(&k, c), &r)) == 0) live += cref_live(&r, x->now);
    }
    ckey_free(&k);
    op->result.num = (int64_t)live;
    return rc;
}

/* For rocks/engine.c ------------------------------------------------------------------------- */

/* A chunk for the prefetch, unless the record cache has it (rocks/view.c). */
static void plan_chunk(rx *x, rplan *p, hr_slice k) {
    if (!rx_cached(x, CF_SUB, k)) rplan_add(x, p, CF_SUB, hr_arena_copy(&x->mem, k));
}

size_t pset_plan_size(const rx *x, const hr_op *op, const rmeta *m) {
    if (!meta_alive(m, x->now) || m->type != T_PSET || m->size == 0) return 0;
    size_t nc = (size_t)1 << m->bits;
    if (op->type == HR_OP_PSET_TEST) return op->n_u64s < nc && !pimg_wanted(m, op->n_u64s) ? op->n_u64s : nc;
    return op->type == HR_OP_PSET_CARD ? nc : 1;
}

void pset_plan(rx *x, const hr_op *op, const rmeta *m, rplan *p) {
    if (!meta_alive(m, x->now) || m->type != T_PSET || m->size == 0) return;
    uint32_t nc = 1u << m->bits;
    ckey k;
    ckey_init(&k, op->key, m->version);
    switch (op->type) {
    case HR_OP_PSET_ADD:
    case HR_OP_PSET_REM: plan_chunk(x, p, ckey_at(&k, chunk_of(m, hash_of(m, op->u64)))); break;
    case HR_OP_PSET_TEST: {
        if (pimg_plan(x, op, m)) { /* answered from the set's image, but for the chunks written since */
            const pimg_op *st = pimg_of(x, op);
            for (uint32_t c = 0; st->ndirty && c < nc; c++)
                if (pimg_dirty(st, c)) plan_chunk(x, p, ckey_at(&k, c));
            break;
        }
        bool every = pimg_of(x, op) && pimg_of(x, op)->build; /* to build one */
        uint32_t *cs = hr_arena_alloc(&x->mem, ((every ? nc : op->n_u64s) + 1) * sizeof *cs);
        size_t ncs = 0;
        if (every) {
            for (uint32_t c = 0; c < nc; c++)
                cs[ncs++] = c;
        } else {
            unsigned char *seen = hr_arena_calloc(&x->mem, nc / 8 + 1);
            for (size_t i = 0; i < op->n_u64s; i++) {
                uint32_t c = chunk_of(m, hash_of(m, op->u64s[i]));
                if (seen[c / 8] & (1u << (c % 8))) continue;
                seen[c / 8] |= (unsigned char)(1u << (c % 8));
                cs[ncs++] = c;
            }
        }
        /* The cache's slot of chunk j + 2 * RX_AHEAD and the record of
         * chunk j + RX_AHEAD are asked for while chunk j is looked up: a
         * set with more chunks than members asked is a new chunk, so two
         * misses, at nearly every member, and the slot's lock keeps the CPU
         * from overlapping them. */
        for (size_t j = 0; j < ncs; j++) {
            if (j + 2 * RX_AHEAD < ncs)
                rx_cache_prefetch(x, CF_SUB, ckey_at(&k, cs[j + 2 * RX_AHEAD]), false);
            if (j + RX_AHEAD < ncs) rx_cache_prefetch(x, CF_SUB, ckey_at(&k, cs[j + RX_AHEAD]), true);
            plan_chunk(x, p, ckey_at(&k, cs[j]));
        }
        break;
    }
    case HR_OP_PSET_CARD:
        if (x->now < m->soonest) break; /* answered from the metadata */
        for (uint32_t c = 0; c < nc; c++)
            plan_chunk(x, p, ckey_at(&k, c));
        break;
    default: break;
    }
    ckey_free(&k);
}

void pset_flush(rx *x) {
    struct pset_rx *ps = x->pset;
    if (ps == NULL) return; /* no chunk changed */
    hr_buf v = HR_BUF_INIT;
    for (size_t i = 0; i < ps->ndirty; i++) {
        hr_slice k = ps->dirty[i];
        pchunk *pc = *rx_aux(x, CF_SUB, k);
        if (pc == NULL || !pc->dirty) continue; /* written already: a key may be listed twice */
        pc->dirty = false;
        if (pc->n == 0) {
            rx_del(x, CF_SUB, k); /* frees pc */
            continue;
        }
        bool expiring = false;
        for (size_t j = 0; j < pc->n && !expiring; j++)
            expiring = pc->e[j].expire_at != 0;
        size_t len = 1 + (expiring ? 16 : 8) * pc->n;
        hr_buf_clear(&v);
        hr_buf_reserve(&v, len);
        unsigned char *o = (unsigned char *)v.data;
        o[0] = expiring ? FORM_EXPIRING : FORM_PLAIN;
        for (size_t j = 0; j < pc->n; j++) {
            hr_store_u64be(o + 1 + 8 * j, pc->e[j].h);
            if (expiring) hr_store_u64be(o + 1 + 8 * (pc->n + j), (uint64_t)pc->e[j].expire_at);
        }
        v.len = len;
        v.data[len] = '\0';
        rx_put_aux(x, CF_SUB, k, hr_buf_slice(&v), pc);
    }
    hr_buf_free(&v);
}

void pset_before_write(rx *x) {
    struct pset_rx *ps = x->pset;
    if (ps == NULL) return;
    for (size_t i = 0; i < ps->ndirty; i++)
        rcache_write_begin(x->s->chunk_cache, ps->dirty[i]);
    pimg_before_write(x, ps->dirty, ps->ndirty);
}

void pset_after_write(rx *x, bool ok, bool wrote, uint64_t stamp) {
    struct pset_rx *ps = x->pset;
    if (ps == NULL) return;
    pimg_after_write(x, ps->dirty, ps->ndirty, ok, wrote, stamp);
    for (size_t i = 0; wrote && i < ps->ndirty; i++) {
        hr_slice k = ps->dirty[i], v = {0};
        bool found = false, known = ok && rx_known(x, CF_SUB, k, &v, &found); /* written: known */
        rcache_write_end(x->s->chunk_cache, k, known, found, v, stamp);
    }
}
