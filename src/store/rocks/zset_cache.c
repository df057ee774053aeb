/* rocks/zset_cache.c — whole small sorted sets on disk, kept in a cache.
 *
 * WHY. Some sets are read whole on nearly every request of their kind and
 * rarely written: a user's friends (every friends-reads and friends-popular
 * reads all of them), a reader's big accounts (every timeline page). On disk
 * such a read is an iterator over the "zindex" column family: a seek into
 * every file that may hold the set, then a step per member across the
 * merged levels: for 450 friends, a large part of a friends-reads over 100
 * long-tail URLs. Sets small enough to be inline (rocks/zset_inline.c) are read
 * with their metadata already; sets kept in memory (rocks/zset_memory.c) are
 * rankings. This is for the ones between: up to ZC_MAX_MEMBERS members.
 *
 * WHAT. The store's zset_cache (an rcache, rocks/view.c) maps a set's key to
 * its version and all its entries, in the inline layout, so that zi_walk
 * answers any range read of it (bounds, cursor, direction, limit) as
 * zs_scan would. A range read of a whole set (no bounds, no cursor) that
 * went to disk offers what it read, at the end of its batch. A batch that
 * takes a cached set holds it as long as its results (hr_batch_hold), so
 * op_zrange's members point into it (zc_read.lasting) instead of being
 * copied: the copies were a large part of a friends-reads' CPU for a user
 * with 5,000 friends over long-tail URLs.
 *
 * CONSISTENCY. The record cache's rules (rocks/view.c), with writers that
 * only invalidate: zs_write and zs_remove, the only writers of a set's index
 * entries, note the set; around the commit its slot is marked in flux, then
 * emptied and stamped with the sequence number after the write. A batch
 * takes a cached set only when that is the set its snapshot sees (not in
 * flux, stamped at or below the sequence number taken before its snapshot,
 * the version its metadata names), and only while it has written nothing
 * itself (its own writes are not in the cache). A batch's offer is refused
 * if a write has stamped the slot past its snapshot or is under way. A new
 * version (the set deleted and created again, or expired) never matches.
 *
 * SIZE. A set of up to ZC_MAX_MEMBERS members and ZC_MAX_BYTES of entries:
 * room for the largest friend list a friends-reads takes (5,000 friends,
 * core/reading.h) with ids of up to ~40 bytes. With the limit at 4,096 and
 * 64 KiB, a user of 5,000 friends read them from disk on every query, most
 * of a worst-case friends-reads over 100 long-tail URLs.
 *
 * MEMORY. ZC_SLOTS slots (buckets of two ways, rocks/view.c), ZC_BUDGET
 * bytes of entries in all (rcache_new): a set of 450 friends with 8-byte ids
 * takes ~8 KiB, one of 5,000 ~80 KiB. */
#include <math.h>
#include <string.h>

#include "store/rocks/cache.h"
#include "store/rocks/zset.h"

#define ZC_MAX_MEMBERS 8192
#define ZC_VERSION_BYTES 8

/* A visitor that copies every entry it sees (in the inline layout) before
 * passing it on; stopped: the caller's visitor asked to stop. */
typedef struct tee {
    zs_visit visit;
    void *ctx;
    hr_buf copy;
    bool stopped;
} tee;

static bool copy_visit(void *ctx, uint64_t enc, hr_slice member) {
    zi_append(ctx, enc, member);
    return true;
}

static bool tee_visit(void *ctx, uint64_t enc, hr_slice member) {
    tee *t = ctx;
    zi_append(&t->copy, enc, member);
    if (t->visit(t->ctx, enc, member)) return true;
    t->stopped = true;
    return false;
}

/* The whole sorted sets of a batch (rx.zcache), in x->mem, made by the
 * first set it writes or reads whole to offer: the on-disk sets the batch
 * wrote (keys in mem, repeats allowed), and what it read whole to offer. */
struct zcache_rx {
    hr_slice *written;
    size_t nwritten, written_cap;
    hr_slice *offers; /* key, value, key, value... (in mem) */
    size_t noffers, offers_cap;
};

static struct zcache_rx *part(rx *x) {
    return RX_PART(x, zcache);
}

static void offer_later(rx *x, hr_slice key, hr_slice value) {
    struct zcache_rx *zc = part(x);
    zc->offers = arena_grow(&x->mem, zc->offers, zc->noffers, &zc->offers_cap, sizeof *zc->offers, 8, 0);
    zc->offers[zc->noffers++] = hr_arena_copy(&x->mem, key);
    zc->offers = arena_grow(&x->mem, zc->offers, zc->noffers, &zc->offers_cap, sizeof *zc->offers, 8, 0);
    zc->offers[zc->noffers++] = hr_arena_copy(&x->mem, value);
}

static void release_blob(void *held) {
    rcache_release(held);
}

int zc_scan(rx *x, hr_slice key, const rmeta *m, bool reverse, double min, double max, const hr_slice *after,
            zs_visit visit, void *ctx, zc_read *rd) {
    bool cacheable = m->size <= ZC_MAX_MEMBERS && !x->dirty;
    hr_slice cached;
    rblob *held = NULL;
    if (cacheable &&
        rcache_take(x->s->zset_cache, key, x->seq, &held, &cached)) /* held as long as the results */
        hr_batch_hold(x->b, release_blob, held);
    if (held && cached.len >= ZC_VERSION_BYTES && load_u64(cached.ptr) == m->version) {
        if (rd) {
            rd->origin = held;
            if (rd->attached_only && rcache_attached(held)) return 0; /* the caller's form stands for them */
            rd->lasting = cached; /* op_zrange's results may point into it */
        }
        zi_walk(&x->mem, hr_slice_of(cached.ptr + ZC_VERSION_BYTES, cached.len - ZC_VERSION_BYTES), reverse,
                min, max, after, visit, ctx);
        if (rd) rd->lasting = hr_slice_of(NULL, 0);
        return 0;
    }
    bool whole = after == NULL && min == -INFINITY && max == INFINITY;
    if (!cacheable || (!whole && m->size > ZC_FILL_MEMBERS))
        return zs_scan(x, key, m->version, reverse, min, max, after, visit, ctx);
    if (!whole) { /* a small set: read whole once, then answered from the cache */
        hr_buf all = HR_BUF_INIT;
        append_u64(&all, m->version);
        int rc = zs_scan(x, key, m->version, false, -INFINITY, INFINITY, NULL, copy_visit, &all);
        if (rc == 0) {
            zi_walk(&x->mem, hr_slice_of(all.data + ZC_VERSION_BYTES, all.len - ZC_VERSION_BYTES), reverse,
                    min, max, after, visit, ctx);
            if (all.len <= ZC_MAX_BYTES) offer_later(x, key, hr_buf_slice(&all));
        }
        hr_buf_free(&all);
        return rc;
    }
    /* The whole set is read: copy it as it goes, in ascending order. */
    tee t = {.visit = visit, .ctx = ctx};
    append_u64(&t.copy, m->version);
    int rc;
    if (!reverse) {
        rc = zs_scan(x, key, m->version, false, min, max, NULL, tee_visit, &t);
    } else {
        zcollect c = {.mem = &x->mem, .max = SIZE_MAX};
        rc = zs_scan(x, key, m->version, false, min, max, NULL, zs_collect, &c);
        for (size_t i = 0; i < c.n; i++)
            zi_append(&t.copy, c.encs[i], c.members[i]);
        for (size_t i = c.n; rc == 0 && i-- > 0;)
            if (!visit(ctx, c.encs[i], c.members[i])) break;
    }
    if (rc == 0 && !t.stopped && t.copy.len <= ZC_MAX_BYTES) offer_later(x, key, hr_buf_slice(&t.copy));
    hr_buf_free(&t.copy);
    return rc;
}

void zc_note_write(rx *x, hr_slice key) {
    struct zcache_rx *zc = part(x);
    if (zc->nwritten && hr_slice_eq(zc->written[zc->nwritten - 1], key)) return; /* the same set again */
    zc->written = arena_grow(&x->mem, zc->written, zc->nwritten, &zc->written_cap, sizeof *zc->written, 8, 0);
    zc->written[zc->nwritten++] = hr_arena_copy(&x->mem, key);
}

void zc_before_write(rx *x) {
    struct zcache_rx *zc = x->zcache;
    for (size_t i = 0; zc && i < zc->nwritten; i++)
        rcache_write_begin(x->s->zset_cache, zc->written[i]);
}

void zc_after_write(rx *x, bool ok, bool wrote, uint64_t stamp) {
    struct zcache_rx *zc = x->zcache;
    if (zc == NULL) return;
    for (size_t i = 0; wrote && i < zc->nwritten; i++) /* forget the set; a write stamped its slot */
        rcache_write_end(x->s->zset_cache, zc->written[i], ok, false, hr_slice_of("", 0), stamp);
    for (size_t i = 0; ok && i + 1 < zc->noffers; i += 2)
        rcache_offer(x->s->zset_cache, zc->offers[i], zc->offers[i + 1], x->seq);
}
