/* zset.c — sorted sets on RocksDB: their members' records, their (score,
 * member) index, and the ops of store.h, over the encodings a set can take
 * (inline in its metadata, on disk, a set of times, kept in memory: see
 * zset.h). The rules of values.c hold here too.
 *
 * Results are allocated in the batch's arena (x->b->arena).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/rocks/zset.h"

/* Sorted-set primitives (also used by the exact distinct sets) --------------- */

void zs_member_key(hr_buf *out, hr_slice key, uint64_t version, hr_slice member) {
    key_prefix(out, key, version);
    hr_buf_append_slice(out, member);
}

static void index_key(hr_buf *out, hr_slice key, uint64_t version, uint64_t enc, hr_slice member) {
    key_prefix(out, key, version);
    append_u64(out, enc);
    hr_buf_append_slice(out, member);
}

int zs_member(rx *x, hr_slice key, uint64_t version, hr_slice member, bool *found, uint64_t *enc) {
    return zs_member_in(x, CF_SUB, key, version, member, found, enc);
}

int zs_member_in(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member, bool *found, uint64_t *enc) {
    hr_buf k = HR_BUF_INIT;
    zs_member_key(&k, key, version, member);
    hr_slice v;
    int rc = rx_get(x, cf, hr_buf_slice(&k), &v, found);
    hr_buf_free(&k);
    if (rc) return rc;
    if (*found && v.len != 8) return hr_err_set(x->err, HR_EIO, "rocksdb: corrupt member record");
    *enc = *found ? load_u64(v.ptr) : 0;
    return 0;
}

void zs_write(rx *x, hr_slice key, uint64_t version, hr_slice member, bool had_old, uint64_t old_enc,
              uint64_t enc) {
    if (had_old && old_enc == enc) return;
    zc_note_write(x, key);
    hr_buf k = HR_BUF_INIT;
    if (had_old) {
        index_key(&k, key, version, old_enc, member);
        rx_del(x, CF_ZINDEX, hr_buf_slice(&k));
        hr_buf_clear(&k);
    }
    index_key(&k, key, version, enc, member);
    rx_put(x, CF_ZINDEX, hr_buf_slice(&k), hr_slice_of("", 0));
    hr_buf_free(&k);
    zs_member_put(x, CF_SUB, key, version, member, enc);
}

void zs_write_as(rx *x, hr_slice key, const rmeta *m, hr_slice member, bool had_old, uint64_t old_enc,
                 uint64_t enc) {
    if (m->zflags & ZF_TL)
        ztl_write(x, key, m->version, member, had_old, old_enc, enc);
    else
        zs_write(x, key, m->version, member, had_old, old_enc, enc);
}

void zs_member_put(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member, uint64_t enc) {
    hr_buf k = HR_BUF_INIT;
    zs_member_key(&k, key, version, member);
    unsigned char v[8];
    hr_store_u64be(v, enc);
    rx_put(x, cf, hr_buf_slice(&k), hr_slice_of((const char *)v, 8));
    hr_buf_free(&k);
}

void zs_member_del(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member) {
    hr_buf k = HR_BUF_INIT;
    zs_member_key(&k, key, version, member);
    rx_del(x, cf, hr_buf_slice(&k));
    hr_buf_free(&k);
}

void zs_remove(rx *x, hr_slice key, uint64_t version, hr_slice member, uint64_t enc) {
    zc_note_write(x, key);
    hr_buf k = HR_BUF_INIT;
    index_key(&k, key, version, enc, member);
    rx_del(x, CF_ZINDEX, hr_buf_slice(&k));
    hr_buf_free(&k);
    zs_member_del(x, CF_SUB, key, version, member);
}

int zs_scan(rx *x, hr_slice key, uint64_t version, bool reverse, double min, double max,
            const hr_slice *after, zs_visit visit, void *ctx) {
    if (min > max) return 0;
    uint64_t emin = score_encode(min), emax = score_encode(max);
    hr_buf lo = HR_BUF_INIT, hi = HR_BUF_INIT, target = HR_BUF_INIT;
    key_prefix(&lo, key, version);
    key_prefix_end(&hi, key, version);
    const size_t plen = lo.len;
    rx_iter ri;
    rx_iter_open(x, &ri, CF_ZINDEX, hr_buf_slice(&lo), hr_buf_slice(&hi));

    /* Position on the first candidate. Forward: (min, "") or the cursor,
     * whichever is later. Backward: the last key below (max's successor, "")
     * or the cursor, whichever is earlier. Entries equal to the cursor, and
     * the rare key the seek lands on outside [min, max], are skipped below. */
    unsigned char bound[8];
    hr_store_u64be(bound, reverse ? emax + 1 : emin);
    hr_slice start = hr_slice_of((const char *)bound, 8);
    if (after && (reverse ? hr_slice_cmp(*after, start) < 0 : hr_slice_cmp(*after, start) > 0))
        start = *after;
    hr_buf_append_slice(&target, hr_buf_slice(&lo));
    hr_buf_append_slice(&target, start);
    if (reverse)
        rocksdb_iter_seek_for_prev(ri.it, target.data, target.len);
    else
        rocksdb_iter_seek(ri.it, target.data, target.len);

    for (; rocksdb_iter_valid(ri.it); reverse ? rocksdb_iter_prev(ri.it) : rocksdb_iter_next(ri.it)) {
        hr_slice k = rx_iter_key(&ri);
        /* The batch's own writes are not bounded by the snapshot's bounds. */
        if (k.len < plen + 8 || memcmp(k.ptr, lo.data, plen) != 0) break;
        hr_slice suffix = hr_slice_of(k.ptr + plen, k.len - plen);
        uint64_t enc = load_u64(suffix.ptr);
        if (reverse ? enc < emin : enc > emax) break;
        if (reverse ? enc > emax : enc < emin) continue;
        if (after && (reverse ? hr_slice_cmp(suffix, *after) >= 0 : hr_slice_cmp(suffix, *after) <= 0))
            continue;
        if (!visit(ctx, enc, hr_slice_of(suffix.ptr + 8, suffix.len - 8))) break;
    }
    int rc = rx_iter_status(x, &ri);
    rx_iter_close(&ri);
    hr_buf_free(&lo);
    hr_buf_free(&hi);
    hr_buf_free(&target);
    return rc;
}

bool zs_collect(void *ctx, uint64_t enc, hr_slice member) {
    zcollect *c = ctx;
    if (c->n == c->max) return false;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        uint64_t *e = hr_arena_alloc(c->mem, cap * sizeof *e);
        hr_slice *m = hr_arena_alloc(c->mem, cap * sizeof *m);
        if (c->n) {
            memcpy(e, c->encs, c->n * sizeof *e);
            memcpy(m, c->members, c->n * sizeof *m);
        }
        c->encs = e;
        c->members = m;
        c->cap = cap;
    }
    c->encs[c->n] = enc;
    c->members[c->n] = hr_arena_copy(c->mem, member);
    c->n++;
    return true;
}

/* Sorted sets kept in memory (rocks/zset_memory.c) ------------------------------------
 *
 * Their member records are written as any set's, in
 * "memsetmembers" (the batch's view sees its own writes), but never the
 * "zindex" column family: the order is the in-memory one, plus the changes
 * this batch staged (zmem_stage), which zmem_commit applies after the
 * commit. */

/* The member's score: this batch's own change to it, else the set's. */
static int zm_member(rx *x, hr_slice key, const rmeta *m, hr_slice member, bool *found, uint64_t *enc) {
    hr_buf k = HR_BUF_INIT;
    zs_member_key(&k, key, m->version, member);
    hr_slice v;
    bool known = rx_known(x, CF_ZMEMM, hr_buf_slice(&k), &v, found);
    hr_buf_free(&k);
    if (known) {
        if (*found && v.len != 8) return hr_err_set(x->err, HR_EIO, "rocksdb: corrupt member record");
        *enc = *found ? load_u64(v.ptr) : 0;
        return 0;
    }
    zent *e;
    int rc = zmem_acquire(x, key, m, false, &e);
    if (rc) return rc;
    *found = e != NULL && zent_score(e, member, enc);
    return 0;
}

/* Write member's record (removed: delete it) and stage the change. */
static int zm_change(rx *x, hr_slice key, const rmeta *m, hr_slice member, bool removed, uint64_t enc,
                     bool fresh) {
    zent *e;
    int rc = zmem_acquire(x, key, m, fresh, &e);
    if (rc) return rc;
    if (e == NULL) return hr_err_set(x->err, HR_EINTERNAL, "rocksdb: a set being written is gone");
    if (removed)
        zs_member_del(x, CF_ZMEMM, key, m->version, member);
    else
        zs_member_put(x, CF_ZMEMM, key, m->version, member, enc);
    zmem_stage(x, e, member, removed, enc);
    return 0;
}

/* An entry of the batch's own changes, for the merge below. */
typedef struct zov {
    uint64_t enc;
    hr_slice member;
} zov;

/* A walk over a set in memory: zs_scan's bounds, cursor and visitor, and the
 * batch's staged changes merged in. */
typedef struct zmwalk {
    rx *x;
    hr_slice key;
    uint64_t version;
    int cf; /* of the member records */
    bool reverse;
    uint64_t emin, emax;
    const hr_slice *after;
    zs_visit visit;
    void *ctx;
    bool stopped;
    zov *ov; /* the batch's members with their final scores, in walk order */
    size_t nov, iov;
    hr_buf k;
} zmwalk;

/* (enc, member) against an encoded "enc | member" position. */
static int pos_cmp(uint64_t enc, hr_slice member, hr_slice pos) {
    uint64_t penc = load_u64(pos.ptr);
    if (enc != penc) return enc < penc ? -1 : 1;
    return hr_slice_cmp(member, hr_slice_of(pos.ptr + 8, pos.len - 8));
}

static int ov_cmp(const void *a, const void *b) {
    const zov *x = a, *y = b;
    if (x->enc != y->enc) return x->enc < y->enc ? -1 : 1;
    return hr_slice_cmp(x->member, y->member);
}

/* Apply zs_scan's rules to one entry; false once the walk must stop. */
static bool zm_emit(zmwalk *w, uint64_t enc, hr_slice member) {
    if (w->reverse ? enc < w->emin : enc > w->emax) return false;
    if (w->reverse ? enc > w->emax : enc < w->emin) return true;
    if (w->after) {
        int c = pos_cmp(enc, member, *w->after);
        if (w->reverse ? c >= 0 : c <= 0) return true;
    }
    return w->visit(w->ctx, enc, member);
}

/* Whether the batch staged a change of member (then its place in memory is stale). */
static bool zm_staged(zmwalk *w, hr_slice member) {
    hr_buf_clear(&w->k);
    zs_member_key(&w->k, w->key, w->version, member);
    hr_slice v;
    bool found;
    return rx_known(w->x, w->cf, hr_buf_slice(&w->k), &v, &found);
}

static bool zm_visit(void *ctx, uint64_t enc, hr_slice member) {
    zmwalk *w = ctx;
    if (w->ov) {
        if (zm_staged(w, member)) return true;
        for (; w->iov < w->nov; w->iov++) { /* the batch's entries that come first */
            const zov *o = &w->ov[w->iov];
            int c = o->enc != enc ? (o->enc < enc ? -1 : 1) : hr_slice_cmp(o->member, member);
            if (w->reverse ? c < 0 : c > 0) break;
            if (!zm_emit(w, o->enc, o->member)) return !(w->stopped = true);
        }
    }
    if (!zm_emit(w, enc, member)) return !(w->stopped = true);
    return true;
}

static int zm_scan(rx *x, hr_slice key, const rmeta *m, bool reverse, double min, double max,
                   const hr_slice *after, zs_visit visit, void *ctx) {
    if (min > max) return 0;
    zent *e;
    int rc = zmem_acquire(x, key, m, false, &e);
    if (rc || e == NULL) return rc;
    zmwalk w = {.x = x,
                .key = key,
                .version = m->version,
                .cf = CF_ZMEMM,
                .reverse = reverse,
                .emin = score_encode(min),
                .emax = score_encode(max),
                .after = after,
                .visit = visit,
                .ctx = ctx,
                .k = HR_BUF_INIT};
    /* The batch's own changes to this set, each member once, at its final
     * score; with any, the walk skips the members they moved or removed. */
    bool mine = false;
    size_t nst;
    const zstage *st = zmem_staged(x, &nst);
    for (size_t i = 0; i < nst; i++) {
        if (st[i].e != e) continue;
        mine = true;
        hr_slice member = st[i].member;
        bool dup = false;
        for (size_t j = 0; j < w.nov && !dup; j++)
            dup = hr_slice_eq(w.ov[j].member, member);
        hr_slice v;
        bool found;
        if (dup || !zm_staged(&w, member) || !rx_known(x, w.cf, hr_buf_slice(&w.k), &v, &found) || !found ||
            v.len != 8)
            continue;
        if (w.ov == NULL) w.ov = hr_arena_alloc(&x->mem, nst * sizeof *w.ov);
        w.ov[w.nov++] = (zov){load_u64(v.ptr), member};
    }
    if (mine && w.ov == NULL) w.ov = hr_arena_alloc(&x->mem, sizeof *w.ov); /* removals only */
    if (w.nov) {
        qsort(w.ov, w.nov, sizeof *w.ov, ov_cmp);
        if (reverse)
            for (size_t i = 0; i < w.nov / 2; i++) {
                zov t = w.ov[i];
                w.ov[i] = w.ov[w.nov - 1 - i];
                w.ov[w.nov - 1 - i] = t;
            }
    }
    /* Start as zs_scan does: the later of (min, "") and the cursor forward,
     * the earlier of (max's successor, "") and the cursor backward. */
    uint64_t start = reverse ? w.emax + 1 : w.emin;
    hr_slice smember = hr_slice_of("", 0);
    if (after && (reverse ? pos_cmp(start, smember, *after) > 0 : pos_cmp(start, smember, *after) < 0)) {
        start = load_u64(after->ptr);
        smember = hr_slice_of(after->ptr + 8, after->len - 8);
    }
    zent_walk(e, reverse, start, smember, zm_visit, &w);
    for (; !w.stopped && w.iov < w.nov; w.iov++)
        if (!zm_emit(&w, w.ov[w.iov].enc, w.ov[w.iov].member)) break;
    hr_buf_free(&w.k);
    return 0;
}

/* Dispatch: the set's entries inline, its order on disk or in memory. -------
 * An inline set's changes are made to m (m->zinline); the caller writes m. */

static int zget(rx *x, hr_slice key, const rmeta *m, hr_slice member, bool *found, uint64_t *enc) {
    if (m->zflags & ZF_INLINE) {
        *found = zi_find(m->zinline, member, enc);
        return 0;
    }
    if (m->zflags & ZF_MEM) return zm_member(x, key, m, member, found, enc);
    return zs_member_in(x, zs_member_cf(m), key, m->version, member, found, enc);
}

static int zput(rx *x, hr_slice key, rmeta *m, hr_slice member, bool had_old, uint64_t old_enc, uint64_t enc,
                bool fresh) {
    if (m->zflags & ZF_INLINE) {
        if (had_old && old_enc == enc) return 0;
        size_t bytes = m->zinline.len + (had_old ? 0 : zi_entry_bytes(member));
        size_t entries = (size_t)m->size + !had_old;
        if (zi_fits(entries, bytes) && !((m->zflags & ZF_TL) && entries > ZTL_INLINE_MAX_ENTRIES)) {
            m->zinline = zi_with(&x->mem, m->zinline, member, false, enc);
            return 0;
        }
        zi_spill(x, key, m); /* and then written as any set on disk */
    }
    if (m->zflags & ZF_MEM)
        return had_old && old_enc == enc ? 0 : zm_change(x, key, m, member, false, enc, fresh);
    zs_write_as(x, key, m, member, had_old, old_enc, enc);
    return 0;
}

static int zdel(rx *x, hr_slice key, rmeta *m, hr_slice member, uint64_t enc) {
    if (m->zflags & ZF_INLINE) {
        m->zinline = zi_with(&x->mem, m->zinline, member, true, 0);
        return 0;
    }
    if (m->zflags & ZF_MEM) return zm_change(x, key, m, member, true, 0, false);
    if (m->zflags & ZF_TL)
        ztl_remove(x, key, m->version, member, enc);
    else
        zs_remove(x, key, m->version, member, enc);
    return 0;
}

static int zscan(rx *x, hr_slice key, const rmeta *m, bool reverse, double min, double max,
                 const hr_slice *after, zs_visit visit, void *ctx, zc_read *rd) {
    if (m->zflags & ZF_INLINE) {
        zi_walk(&x->mem, m->zinline, reverse, min, max, after, visit, ctx);
        return 0;
    }
    if (m->zflags & ZF_MEM) return zm_scan(x, key, m, reverse, min, max, after, visit, ctx);
    if (m->zflags & ZF_TL) return ztl_scan(x, key, m->version, reverse, min, max, after, visit, ctx);
    return zc_scan(x, key, m, reverse, min, max, after, visit, ctx, rd);
}

/* Remove the members with min <= score <= max from the collection (key, m)
 * and subtract them from m->size (the caller writes m); *removed is how
 * many. */
static int zs_remove_range(rx *x, hr_slice key, rmeta *m, double min, double max, uint64_t *removed) {
    zcollect c = {.mem = &x->mem, .max = SIZE_MAX};
    int rc = zscan(x, key, m, false, min, max, NULL, zs_collect, &c, NULL);
    for (size_t i = 0; rc == 0 && i < c.n; i++)
        rc = zdel(x, key, m, c.members[i], c.encs[i]);
    if (rc) return rc;
    m->size -= c.n;
    *removed = c.n;
    return 0;
}

/* Write m after its size changed: a collection that became empty is deleted. */
static void put_or_delete(rx *x, hr_slice key, const rmeta *m) {
    if (m->size == 0)
        rx_del(x, CF_META, key);
    else
        rx_put_meta(x, key, m);
}

/* Sorted sets ------------------------------------------------------------------ */

/* Load a live sorted set: *exists false when the key is missing or expired;
 * HR_EWRONGTYPE set in op's rc when it holds another type (returns 1: stop). */
static int load_zset(rx *x, hr_op *op, rmeta *m, bool *exists) {
    int rc = rx_meta(x, op->key, m);
    if (rc) return rc;
    *exists = meta_alive(m, x->now);
    if (*exists && m->type != T_ZSET) {
        op->result.rc = HR_EWRONGTYPE;
        return 1;
    }
    return 0;
}

/* Set a member's score; with `increment`, add op->score to its old score
 * (0 when new). Runs under the key's stripe lock, so an increment is atomic. */
static int zset_write_score(rx *x, hr_op *op, bool increment) {
    rmeta m;
    bool exists, found = false;
    uint64_t old = 0;
    int rc = load_zset(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (!exists) {
        memset(&m, 0, sizeof m);
        m.type = T_ZSET;
        m.version = rx_new_version(x);
        /* rocks/zset_inline.c: small sets start inline; rocks/zset_times.c:
         * sets of times, those of a declared family (HR_DECL_TIME_SET) */
        m.zflags = zmem_all(x)                                       ? ZF_MEM
                   : rocks_declared(x->s, HR_DECL_TIME_SET, op->key) ? ZF_INLINE | ZF_TL
                                                                     : ZF_INLINE;
    }
    if (m.size > 0 && (rc = zget(x, op->key, &m, op->member, &found, &old))) return rc;
    double score = op->score;
    if (increment && found) score += score_decode(old);
    if ((m.zflags & ZF_TL) && !ztl_score_ok(score)) {
        op->result.rc = HR_EINVAL; /* store.h: a set of times holds integers */
        return 0;
    }
    uint64_t enc = score_encode(score);
    bool was_inline = m.zflags & ZF_INLINE;
    if ((rc = zput(x, op->key, &m, op->member, found, old, enc, !exists))) return rc;
    if (found && old != enc && !(m.zflags & (ZF_MEM | ZF_INLINE | ZF_TL))) zmem_moved(x, op->key, &m, 1);
    if (!found) m.size++;
    if (!found || (was_inline && old != enc)) rx_put_meta(x, op->key, &m);
    op->result.num = !found;
    op->result.score = score;
    return 0;
}

int op_zadd(rx *x, hr_op *op) {
    return zset_write_score(x, op, false);
}
int op_zincr(rx *x, hr_op *op) {
    return zset_write_score(x, op, true);
}

int op_zrem(rx *x, hr_op *op) {
    rmeta m;
    bool exists, found = false;
    uint64_t enc = 0;
    int rc = load_zset(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (exists && (rc = zget(x, op->key, &m, op->member, &found, &enc))) return rc;
    if (found) {
        if ((rc = zdel(x, op->key, &m, op->member, enc))) return rc;
        m.size--;
        put_or_delete(x, op->key, &m);
    }
    op->result.num = found;
    return 0;
}

int op_zscore(rx *x, hr_op *op) {
    rmeta m;
    bool exists, found = false;
    uint64_t enc = 0;
    int rc = load_zset(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (exists && (rc = zget(x, op->key, &m, op->member, &found, &enc))) return rc;
    if (found)
        op->result.score = score_decode(enc);
    else
        op->result.rc = HR_ENOTFOUND;
    return 0;
}

/* The batch holds the guard's stripe (rocks/engine.c, write_stripes): no
 * other batch writes the member between the test and the ops it guards. */
int op_zguard(rx *x, hr_op *op) {
    int rc = op_zscore(x, op);
    if (rc) return rc;
    bool found = op->result.rc == HR_OK;
    op->result.num =
        isnan(op->score) ? op->result.rc == HR_ENOTFOUND : found && op->result.score == op->score;
    return 0;
}

int op_zcard(rx *x, hr_op *op) {
    rmeta m;
    bool exists;
    int rc = load_zset(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    op->result.num = exists ? (int64_t)m.size : 0;
    return 0;
}

typedef struct zpage {
    const rx *x;       /* entries are results, in x->b's arena */
    const zc_read *rd; /* the cached set's bytes, while zc_scan walks one */
    size_t skip, limit;
    size_t cap; /* entries allocated: min(limit, size) */
    hr_result *res;
} zpage;

static bool page(void *ctx, uint64_t enc, hr_slice member) {
    zpage *p = ctx;
    if (p->skip) {
        p->skip--;
        return true;
    }
    if (p->res->n_entries == p->limit) {
        p->res->more = true; /* one past the page exists */
        return false;
    }
    if (p->res->n_entries == p->cap) return false; /* more entries than the size says: stop safely */
    hr_zentry *e = &p->res->entries[p->res->n_entries++];
    e->score = score_decode(enc);
    /* A member of a cached set lives as long as the results (zc_scan):
     * not copied (5,000 copies a worst-case friends-reads). */
    hr_slice lasting = p->rd->lasting;
    uintptr_t lo = (uintptr_t)lasting.ptr, at = (uintptr_t)member.ptr;
    bool in_place = lasting.ptr && at >= lo && at + member.len <= lo + lasting.len;
    e->member = in_place ? member : hr_arena_copy(&p->x->b->arena, member);
    return true;
}

int op_zrange(rx *x, hr_op *op) {
    const hr_zrange_spec *sp = &op->range;
    rmeta m;
    bool exists;
    int rc = load_zset(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (!exists) return 0;
    uint64_t size = m.size;
    if (sp->with_size) op->result.num = (int64_t)m.size; /* what op_zcard answers */
    if (m.zflags & ZF_MEM) { /* read at its latest state, which may have grown since the snapshot */
        zent *e;
        if ((rc = zmem_acquire(x, op->key, &m, false, &e))) return rc;
        if (e && zent_len(e) > size) size = zent_len(e);
    }
    if (sp->offset >= size) return 0;
    if (sp->max_size && size > sp->max_size) { /* the hint (store.h) */
        op->result.more = true;
        return 0;
    }
    size_t cap = sp->limit < size ? sp->limit : (size_t)size;
    op->result.entries = hr_arena_alloc(&x->b->arena, cap * sizeof(hr_zentry));
    zc_read rd = {.attached_only = sp->attached_only && !sp->has_cursor && sp->offset == 0 &&
                                   sp->min == -INFINITY && sp->max == INFINITY && sp->limit >= size};
    zpage p = {.x = x, .rd = &rd, .skip = sp->offset, .limit = sp->limit, .cap = cap, .res = &op->result};
    hr_buf cursor = HR_BUF_INIT;
    hr_slice after;
    if (sp->has_cursor) {
        append_u64(&cursor, score_encode(sp->cursor_score));
        hr_buf_append_slice(&cursor, sp->cursor_member);
        after = hr_buf_slice(&cursor);
    }
    rc = zscan(x, op->key, &m, sp->reverse, sp->min, sp->max, sp->has_cursor ? &after : NULL, page, &p, &rd);
    op->result.origin = rd.origin;
    hr_buf_free(&cursor);
    return rc;
}

int op_zremrange_score(rx *x, hr_op *op) {
    rmeta m;
    bool exists;
    uint64_t removed = 0;
    int rc = load_zset(x, op, &m, &exists);
    if (rc) return rc < 0 ? rc : 0;
    if (exists && (rc = zs_remove_range(x, op->key, &m, op->min, op->max, &removed))) return rc;
    if (removed) put_or_delete(x, op->key, &m);
    op->result.num = (int64_t)removed;
    return 0;
}
