/* rocks/distinct.c — distinct counters (hr_dadd, hr_dcount) on RocksDB.
 *
 * The semantics are store.h's; this is how they map onto the layout drawn in
 * rocks/engine.c. A counter starts EXACT and may turn into a SKETCH, never back.
 *
 * EXACT: a sorted set whose score is each member's last-add time (ms), stored
 * like any sorted set (member -> time in "subkeys", time | member in
 * "zindex"). A member counts while now < time + ttl. The metadata keeps
 *
 *   size    members stored, live or not yet pruned
 *   oldest  a lower bound of their times
 *
 * so the live count is size minus the members at the front of the index with
 * time <= now - ttl. An add prunes those first (deletes them, exact size),
 * and skips even the seek while now - ttl < oldest: the common add is one
 * metadata read, one member read (both prefetched by rocks/engine.c's MultiGets) and
 * three or four writes. A count does not write: it counts the prunable
 * members instead, which are only the ones expired since the last add.
 *
 * SKETCH: the add that would make more than exact_limit live members folds
 * every live member into an HLL sketch (common/hll.h) of the time bucket of
 * its last add, buckets of width W = max(1000, ttl / 16) ms, and moves the
 * counter to a new version (the exact members become garbage for the
 * compaction filter: one metadata write instead of 2 x exact_limit deletes).
 * After that an add reads the sketch of the bucket of now and, only when the
 * member raises one of its registers, writes a merge operand of that one
 * register (rocks/filter.c's merge operator applies it). A full sketch sees
 * few raises, so a hot counter mostly costs reads and writes nothing at all.
 * A filling sketch raises a register on almost every add, and every read of
 * the bucket applies its chain of operands (DESIGN.md: long chains slow
 * RocksDB reads), so about one raise in REWRITE_EVERY writes the whole sketch
 * instead, which keeps the chain that short.
 *
 * The count in sketch mode estimates the union of the alive buckets (bucket i
 * is alive while now < (i+1) W + ttl), usually 17 sketches. Reading and
 * merging all of them on every add would cost ~300 KiB of copying, so the
 * union of the closed alive buckets (all but the one of now) is cached under
 * its own key with the bucket range it covers; it stays valid until the clock
 * enters the next bucket (at most once per W, >= 1 s), and an add is then two
 * sketch reads and one estimate of their union. An add that lands in a bucket
 * the cache covers (a request whose now_ms lags behind) deletes the cache.
 *
 * Sketches are decoded once per batch and kept in the batch's view (rx_aux),
 * so a batch of adds to one counter neither re-decodes 16 KiB per add nor
 * asks RocksDB to apply the operands it just wrote.
 *
 * Expiry: the counter's metadata expires when its newest member (exact) or
 * bucket (sketch) stops counting, so a counter nobody adds to disappears by
 * itself, and the compaction filter collects its sub-keys.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/hll.h"
#include "store/rocks/distinct.h"
#include "store/rocks/zset.h"

/* A raise writes the whole sketch instead of a merge operand once in this
 * many times (at random), so a bucket's chain of operands in the memtable
 * stays around this long: every read of the bucket (each add reads it) must
 * apply the whole chain, and a sketch filling up raises a register on almost
 * every add. A sketch is at most 16 KiB, so the rewrites cost about 512
 * bytes per raise. */
#define REWRITE_EVERY 32

static bool one_in(unsigned n) {
    static _Thread_local uint64_t state;
    if (state == 0) state = hr_mono_ns() ^ (uint64_t)(uintptr_t)&state ^ 0x9E3779B97F4A7C15u;
    state ^= state << 13; /* xorshift64 */
    state ^= state >> 7;
    state ^= state << 17;
    return state % n == 0;
}

/* At most this many buckets are read for one count (a ttl raised to more
 * than 4096 W after the conversion is cut there). */
#define MAX_BUCKETS 4096

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

static void bucket_key(hr_buf *out, hr_slice key, uint64_t version, int64_t bucket) {
    key_prefix(out, key, version);
    hr_buf_append_byte(out, SKETCH_BUCKET);
    append_u64(out, (uint64_t)bucket);
}

static void union_key(hr_buf *out, hr_slice key, uint64_t version) {
    key_prefix(out, key, version);
    hr_buf_append_byte(out, SKETCH_UNION);
}

static hr_slice arena_key(rx *x, hr_buf *tmp) {
    hr_slice s = hr_arena_copy(&x->mem, hr_buf_slice(tmp));
    hr_buf_clear(tmp);
    return s;
}

/* Load the metadata of a live distinct counter, judged at the op's now_ms.
 * Returns 1 (stop, rc set) on another type. */
static int load_distinct(rx *x, hr_op *op, rmeta *m, bool *exists) {
    int rc = rx_meta(x, op->key, m);
    if (rc) return rc;
    *exists = meta_alive(m, op->distinct.now_ms);
    if (*exists && m->type != T_DISTINCT) {
        op->result.rc = HR_EWRONGTYPE;
        return 1;
    }
    return 0;
}

void distinct_plan(rx *x, const hr_op *op, const rmeta *m, int *cfs, hr_slice *keys, size_t *n) {
    const hr_distinct_params *p = &op->distinct;
    if (!meta_alive(m, p->now_ms) || m->type != T_DISTINCT) return;
    hr_buf k = HR_BUF_INIT;
    if (m->mode == D_EXACT) {
        if (op->type == HR_OP_DADD && m->size > 0) {
            zs_member_key(&k, op->key, m->version, op->member); /* read by zs_member below */
            cfs[*n] = CF_SUB;
            keys[(*n)++] = arena_key(x, &k);
        }
    } else {
        bucket_key(&k, op->key, m->version, floor_div(p->now_ms, m->width));
        cfs[*n] = CF_SKETCH;
        keys[(*n)++] = arena_key(x, &k);
        union_key(&k, op->key, m->version);
        cfs[*n] = CF_SKETCH;
        keys[(*n)++] = arena_key(x, &k);
    }
    hr_buf_free(&k);
}

/* Exact mode --------------------------------------------------------------------- */

/* Members at the front of the index with time <= cut (expired), and the time
 * of the first one after them. */
typedef struct expired_scan {
    zcollect c; /* with c.mem NULL: count only */
    uint64_t cut_enc;
    uint64_t counted;
    bool have_next;
    int64_t next_time;
} expired_scan;

static bool expired_visit(void *ctx, uint64_t enc, hr_slice member) {
    expired_scan *e = ctx;
    if (enc > e->cut_enc) {
        e->have_next = true;
        e->next_time = (int64_t)score_decode(enc);
        return false;
    }
    e->counted++;
    return e->c.mem ? zs_collect(&e->c, enc, member) : true;
}

/* Delete the expired members of m (size and oldest updated, not written). */
static int prune(rx *x, hr_slice key, rmeta *m, int64_t cut, int64_t now) {
    if (m->size == 0 || m->oldest > cut) return 0;
    expired_scan e = {.c = {.mem = &x->mem, .max = SIZE_MAX}, .cut_enc = score_encode((double)cut)};
    int rc = zs_scan(x, key, m->version, false, -INFINITY, INFINITY, NULL, expired_visit, &e);
    if (rc) return rc;
    for (size_t i = 0; i < e.c.n; i++)
        zs_remove(x, key, m->version, e.c.members[i], e.c.encs[i]);
    m->size -= e.c.n;
    m->oldest = e.have_next ? e.next_time : now;
    return 0;
}

/* The live members of m at cut, without writing. */
static int exact_count(rx *x, hr_slice key, const rmeta *m, int64_t cut, int64_t *count) {
    *count = (int64_t)m->size;
    if (m->size == 0 || m->oldest > cut) return 0;
    expired_scan e = {.cut_enc = score_encode((double)cut)};
    int rc = zs_scan(x, key, m->version, false, -INFINITY, INFINITY, NULL, expired_visit, &e);
    *count -= (int64_t)e.counted;
    return rc;
}

/* Sketch mode --------------------------------------------------------------------- */

/* The sketch under key k (empty when absent), decoded once per batch: the
 * view keeps it (rx_aux) until the batch writes k other than through
 * sketch_add. Borrowed. */
static int sketch_at(rx *x, hr_slice k, hll **out) {
    void **slot = rx_aux(x, CF_SKETCH, k);
    if (*slot == NULL) {
        hr_slice v;
        bool found;
        int rc = rx_get(x, CF_SKETCH, k, &v, &found);
        if (rc) return rc;
        hll *h = hr_xmalloc(sizeof *h);
        if (!found)
            hll_clear(h);
        else if (hll_decode(h, v.ptr, v.len) != 0) {
            free(h);
            return hr_err_set(x->err, HR_EIO, "rocksdb: corrupt HLL sketch");
        }
        slot = rx_aux(x, CF_SKETCH, k); /* rx_get may have moved the view's entries */
        *slot = h;
    }
    *out = *slot;
    return 0;
}

/* The decoded union cache: buckets [lo, hi) in h. */
typedef struct union_aux {
    int64_t lo, hi;
    hll h;
} union_aux;

/* The union cache of m through the view (NULL when there is none). */
static int union_at(rx *x, hr_slice ukey, union_aux **out) {
    void **slot = rx_aux(x, CF_SKETCH, ukey);
    if (*slot == NULL) {
        hr_slice v;
        bool found;
        int rc = rx_get(x, CF_SKETCH, ukey, &v, &found);
        if (rc) return rc;
        if (!found) {
            *out = NULL;
            return 0;
        }
        union_aux *ua = hr_xmalloc(sizeof *ua);
        if (v.len < 16 || hll_decode(&ua->h, v.ptr + 16, v.len - 16) != 0) {
            free(ua);
            return hr_err_set(x->err, HR_EIO, "rocksdb: corrupt HLL union");
        }
        ua->lo = (int64_t)load_u64(v.ptr);
        ua->hi = (int64_t)load_u64(v.ptr + 8);
        slot = rx_aux(x, CF_SKETCH, ukey);
        *slot = ua;
    }
    *out = *slot;
    return 0;
}

/* *out = the union of buckets [lo, c) of m: the cache's when it covers
 * exactly that range (borrowed from the view), else built in u from the
 * buckets (and then, if writable, cached). When writable and touched_any, the
 * op just raised bucket `touched`: a cache that covers it is stale and goes. */
static int closed_union(rx *x, hr_slice key, const rmeta *m, int64_t lo, int64_t c, bool writable,
                        bool touched_any, int64_t touched, hll *u, const hll **out) {
    hr_buf k = HR_BUF_INIT;
    union_key(&k, key, m->version);
    hr_slice ukey = arena_key(x, &k);
    union_aux *ua;
    int rc = union_at(x, ukey, &ua);
    if (rc) goto out;
    if (ua && writable && touched_any && touched >= ua->lo && touched < ua->hi) {
        rx_del(x, CF_SKETCH, ukey); /* frees ua */
        ua = NULL;
    }
    if (ua && ua->lo == lo && ua->hi == c) {
        *out = &ua->h;
        goto out;
    }
    hll_clear(u);
    *out = u;
    if (lo >= c) goto out; /* no closed bucket is alive */

    /* The closed buckets, those not decoded yet in one MultiGet. */
    size_t n = (size_t)(c - lo);
    int *cfs = hr_arena_alloc(&x->mem, n * sizeof *cfs);
    hr_slice *keys = hr_arena_alloc(&x->mem, n * sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        bucket_key(&k, key, m->version, lo + (int64_t)i);
        cfs[i] = CF_SKETCH;
        keys[i] = arena_key(x, &k);
    }
    if ((rc = rx_prefetch(x, n, cfs, keys))) goto out;
    for (size_t i = 0; i < n; i++) {
        hll *decoded = *rx_aux(x, CF_SKETCH, keys[i]);
        if (decoded) {
            hll_merge(u, decoded);
            continue;
        }
        hr_slice v;
        bool found;
        if ((rc = rx_get(x, CF_SKETCH, keys[i], &v, &found))) goto out;
        if (found && hll_decode_merge(u, v.ptr, v.len) != 0) {
            rc = hr_err_set(x->err, HR_EIO, "rocksdb: corrupt HLL sketch");
            goto out;
        }
    }
    if (writable) {
        append_u64(&k, (uint64_t)lo);
        append_u64(&k, (uint64_t)c);
        hll_encode(u, &k);
        ua = hr_xmalloc(sizeof *ua);
        ua->lo = lo;
        ua->hi = c;
        memcpy(&ua->h, u, sizeof *u);
        rx_put_aux(x, CF_SKETCH, ukey, hr_buf_slice(&k), ua);
    }
out:
    hr_buf_free(&k);
    return rc;
}

/* The estimate of the alive buckets of m at now, given the sketch of the
 * bucket of now (cur). */
static int sketch_count(rx *x, hr_slice key, const rmeta *m, const hr_distinct_params *p, const hll *cur,
                        bool writable, bool touched_any, int64_t touched, int64_t *count) {
    int64_t c = floor_div(p->now_ms, m->width);
    int64_t lo = floor_div(p->now_ms - p->ttl_ms, m->width);
    if (lo < c - MAX_BUCKETS) lo = c - MAX_BUCKETS;
    hll *scratch = hr_xmalloc(sizeof *scratch);
    const hll *u;
    int rc = closed_union(x, key, m, lo, c, writable, touched_any, touched, scratch, &u);
    if (rc == 0) *count = llround(hll_estimate_union(u, cur));
    free(scratch);
    return rc;
}

static int sketch_add(rx *x, hr_op *op, rmeta *m) {
    const hr_distinct_params *p = &op->distinct;
    int64_t c = floor_div(p->now_ms, m->width);
    hr_buf k = HR_BUF_INIT;
    bucket_key(&k, op->key, m->version, c);
    hll *cur;
    int rc = sketch_at(x, hr_buf_slice(&k), &cur);
    if (rc) goto out;
    uint32_t index;
    uint8_t rank;
    hll_hash(op->member.ptr, op->member.len, &index, &rank);
    bool raised = cur->reg[index] < rank;
    if (raised) {
        /* Only a raise is written: a full sketch mostly costs reads. */
        hr_buf v = HR_BUF_INIT;
        cur->reg[index] = rank;
        if (one_in(REWRITE_EVERY)) {
            hll_encode(cur, &v);
            rx_put_aux(x, CF_SKETCH, hr_buf_slice(&k), hr_buf_slice(&v), cur);
        } else {
            hll_encode_update(index, rank, &v);
            rx_merge(x, CF_SKETCH, hr_buf_slice(&k), hr_buf_slice(&v), true);
        }
        hr_buf_free(&v);
    }
    rc = sketch_count(x, op->key, m, p, cur, true, raised, c, &op->result.num);
out:
    hr_buf_free(&k);
    return rc;
}

/* Conversion ------------------------------------------------------------------------ */

typedef struct bucket_set {
    size_t n;
    int64_t ids[MAX_BUCKETS];
    hll *sketches[MAX_BUCKETS];
    int64_t width;
} bucket_set;

static hll *bucket_of(bucket_set *bs, int64_t t) {
    int64_t id = floor_div(t, bs->width);
    for (size_t i = 0; i < bs->n; i++)
        if (bs->ids[i] == id) return bs->sketches[i];
    if (bs->n == MAX_BUCKETS) return NULL; /* cannot happen after a prune: times span one ttl */
    hll *h = hr_xmalloc(sizeof *h);
    hll_clear(h);
    bs->ids[bs->n] = id;
    bs->sketches[bs->n++] = h;
    return h;
}

static bool fold_visit(void *ctx, uint64_t enc, hr_slice member) {
    hll *h = bucket_of(ctx, (int64_t)score_decode(enc));
    if (h) hll_add(h, member.ptr, member.len);
    return true;
}

/* Turn the exact counter m into sketches of its members alive after cut,
 * adding op's member at now; m is updated (written by the caller). The scan
 * skips the members this op's prune just deleted itself: an op does not see
 * its own writes through an iterator (rx_iter). */
static int convert(rx *x, hr_op *op, rmeta *m, int64_t cut) {
    const hr_distinct_params *p = &op->distinct;
    bucket_set *bs = hr_xcalloc(1, sizeof *bs);
    bs->width = max64(1000, p->ttl_ms / 16);
    /* times are whole ms: alive means >= cut + 1 */
    int rc = zs_scan(x, op->key, m->version, false, (double)(cut + 1), INFINITY, NULL, fold_visit, bs);
    if (rc) goto out;
    hll *h = bucket_of(bs, p->now_ms);
    if (h) hll_add(h, op->member.ptr, op->member.len);

    m->version = rx_new_version(x); /* the exact members are left to the compaction filter */
    m->mode = D_SKETCH;
    m->size = 0;
    m->oldest = 0;
    m->width = bs->width;
    hr_buf k = HR_BUF_INIT, v = HR_BUF_INIT;
    hll *u = hr_xmalloc(sizeof *u);
    hll_clear(u);
    int64_t newest = floor_div(p->now_ms, m->width);
    for (size_t i = 0; i < bs->n; i++) {
        bucket_key(&k, op->key, m->version, bs->ids[i]);
        hll_encode(bs->sketches[i], &v);
        if (p->now_ms < (bs->ids[i] + 1) * m->width + p->ttl_ms) hll_merge(u, bs->sketches[i]);
        newest = max64(newest, bs->ids[i]);
        rx_put_aux(x, CF_SKETCH, hr_buf_slice(&k), hr_buf_slice(&v),
                   bs->sketches[i]); /* the view owns it now */
        bs->sketches[i] = NULL;
        hr_buf_clear(&k);
        hr_buf_clear(&v);
    }
    op->result.num = llround(hll_estimate(u));
    m->expire_at = max64(m->expire_at, (newest + 1) * m->width + p->ttl_ms - 1);
    free(u);
    hr_buf_free(&k);
    hr_buf_free(&v);
out:
    for (size_t i = 0; i < bs->n; i++)
        free(bs->sketches[i]);
    free(bs);
    return rc;
}

/* The ops --------------------------------------------------------------------------- */

static bool meta_changed(const rmeta *a, const rmeta *b) {
    return a->type != b->type || a->expire_at != b->expire_at || a->version != b->version ||
           a->size != b->size || a->mode != b->mode || a->ttl != b->ttl || a->width != b->width ||
           a->oldest != b->oldest;
}

int op_dadd(rx *x, hr_op *op) {
    const hr_distinct_params *p = &op->distinct;
    const int64_t now = p->now_ms;
    rmeta m, before;
    bool exists;
    int rc = load_distinct(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (!exists) {
        memset(&m, 0, sizeof m);
        m.type = T_DISTINCT;
        m.version = rx_new_version(x);
        m.mode = D_EXACT;
        m.oldest = now;
    }
    before = m;
    if (!exists) before.type = T_NONE; /* so the new record is written */
    m.ttl = p->ttl_ms;

    if (m.mode == D_SKETCH) {
        if ((rc = sketch_add(x, op, &m))) return rc;
        m.expire_at = max64(m.expire_at, (floor_div(now, m.width) + 1) * m.width + p->ttl_ms - 1);
    } else {
        const int64_t cut = now - p->ttl_ms; /* a member counts while its time > cut */
        if ((rc = prune(x, op->key, &m, cut, now))) return rc;
        bool found = false;
        uint64_t enc = 0;
        if (m.size > 0 && (rc = zs_member(x, op->key, m.version, op->member, &found, &enc))) return rc;
        if (found) {
            /* max: a request whose clock lags must not move a member back */
            int64_t t = max64((int64_t)score_decode(enc), now);
            zs_write(x, op->key, m.version, op->member, true, enc, score_encode((double)t));
            op->result.num = (int64_t)m.size;
        } else if ((int64_t)m.size + 1 > p->exact_limit) {
            if ((rc = convert(x, op, &m, cut))) return rc;
        } else {
            zs_write(x, op->key, m.version, op->member, false, 0, score_encode((double)now));
            m.size++;
            if (now < m.oldest) m.oldest = now;
            op->result.num = (int64_t)m.size;
        }
        m.expire_at = max64(m.expire_at, now + p->ttl_ms - 1);
    }
    if (meta_changed(&m, &before)) rx_put_meta(x, op->key, &m);
    return 0;
}

int op_dcount(rx *x, hr_op *op) {
    const hr_distinct_params *p = &op->distinct;
    rmeta m;
    bool exists;
    int rc = load_distinct(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (!exists) return 0;
    if (m.mode == D_EXACT) return exact_count(x, op->key, &m, p->now_ms - p->ttl_ms, &op->result.num);

    hr_buf k = HR_BUF_INIT;
    bucket_key(&k, op->key, m.version, floor_div(p->now_ms, m.width));
    hll *cur;
    rc = sketch_at(x, hr_buf_slice(&k), &cur);
    if (rc == 0) rc = sketch_count(x, op->key, &m, p, cur, false, false, 0, &op->result.num);
    hr_buf_free(&k);
    return rc;
}
