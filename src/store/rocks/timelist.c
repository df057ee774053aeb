/* rocks/timelist.c — time lists (hr_tl*) on RocksDB: feeds and timelines.
 *
 * WORKLOAD. Fan-out writes an activity's entry into the timeline of every
 * follower: batches of ~1,000 adds, each to a different list, millions a
 * second at peak. Reads are "the newest page of one list". So an add must be
 * one blind write (no read, no metadata, no lock), and a read one forward
 * scan of one list.
 *
 * ENCODING, column family "timelists" (one entry, one key):
 *
 *   key:   +-----------+---------+-----------+--------------+--------------+
 *          | list hash | key len | list key  | time, newest | member,      |
 *          | u64       | u16     | 1..1024 B | first: u64   | escaped (*)  |
 *          +-----------+---------+-----------+--------------+--------------+
 *   value: | i64 expire_at_ms (0: never) |
 *
 *   - list hash: XXH3-64 of the list key. It makes the first 8 bytes a
 *     fixed-width prefix per list, which is what RocksDB's prefix machinery
 *     wants: the prefix extractor (fixed 8) feeds the hashed memtable (an
 *     add touches one small bucket instead of walking a skiplist of a
 *     million entries) and the prefix bloom filters of the tables (a read
 *     skips every table that holds nothing of its list).
 *   - key len + list key: the exact list. Length-prefixed, so one list's
 *     prefix is never a prefix of another list's keys ("a" vs "ab" differ
 *     in the length; same length, different bytes, neither is a prefix).
 *   - time: UINT64_MAX - (time_ms with its sign bit flipped), big-endian:
 *     newest first in byte order, for every int64 time.
 *   - (*) member: each byte b as 0xFF - b, except that b = 0x00 (which
 *     would become 0xFF) is written FF 00; then the terminator FF FF. Byte
 *     order of the encodings is then DESCENDING member order (a longer
 *     member before its own prefix: "ab" before "a"), as store.h asks for
 *     entries of one time, and no encoding is a prefix of another (FF FF
 *     appears only at the end), so (time, member) -> key is one-to-one and
 *     the key that follows a key K in byte order is K + "\0".
 *
 *   So a list is one contiguous run of keys in newest-first order: a read
 *   is one Seek and Next calls, never a reverse iteration (several times
 *   slower in RocksDB). The iterator's upper bound is the end of the list
 *   (or of the after_ms bound), so a scan stops there without looking at the
 *   next list.
 *
 * COSTS. hr_tladd and hr_tlrem write one key / one tombstone into the
 * batch's WriteBatch, without recording them in the batch's view and
 * without a lock (rocks/engine.c leaves them out of the stripes), except on a hot
 * list kept in memory (rocks/timelist_cache.c): its writers take its stripe and
 * update its copy after the commit. A range read of a kept list is answered
 * from memory when the copy holds the range. Otherwise hr_tlrange seeks
 * to max(before bound, cursor) and reads offset + limit live entries (plus
 * one, for `more`); expired entries are skipped and not counted.
 * hr_tltrim scans the whole list and deletes, in the same WriteBatch, what
 * goes; it runs under the list's stripe lock so that two trims do not count
 * the same deletions.
 *
 * EXPIRY. Reads compare expire_at with the spec's now_ms; hr_tltrim with
 * the batch's clock. The compaction filter (rocks/filter.c) drops entries
 * expired for more than its grace period, and the entries of a capped list
 * (HR_DECL_TL_CAP) past its cap.
 *
 * COLUMN FAMILY OPTIONS (tl_cf_options), chosen by measuring fan-out with
 * store_micro (docs/DESIGN.md, "Measured decisions"):
 *
 *   - A hashed memtable (HashLinkList, a bucket per 8-byte list hash).
 *     With RocksDB's default skiplist memtable a fan-out add lands at a
 *     random place in a skiplist of a million entries, some twenty cache
 *     misses. In a list's bucket the newest entry goes first: one or two
 *     misses. The price comes at flush, where the memtable is sorted into a
 *     skiplist list by list (one random insert per list, sequential ones
 *     after), and in that a hashed memtable takes no concurrent inserts:
 *     allow_concurrent_memtable_write is off for the whole DB
 *     (rocks/engine.c; the group-commit leader inserts a write group's
 *     batches).
 *   - 256 MB memtables, three at most: the flush's cost per list is spread
 *     over more entries per list, and the CPU per fan-out entry fell with
 *     each doubling from 64 MB.
 *   - No memtable bloom (the bucket answers for its list), and prefix
 *     blooms only in the tables (no whole-key filter): lists are scanned,
 *     never looked up by key. Reads stay within their list's prefix (the bounds),
 *     as a hashed memtable requires.
 *   - Tried and left: unordered_write (a snapshot could see half a batch,
 *     which store.h rules out) and, for as much CPU per entry or more, two
 *     writer threads on a concurrent skiplist, pipelined writes with two
 *     writers, a hashed skiplist memtable, four times the buckets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/log.h"
#include "store/rocks/timelist.h"

/* The memtable: see "COLUMN FAMILY OPTIONS" above. */
#define TL_WRITE_BUFFER ((size_t)256 << 20)
#define TL_WRITE_BUFFERS 3      /* one filling, up to two being flushed */
#define TL_HASH_BUCKETS 1000003 /* buckets of list hashes (8 MB per memtable) */
/* Level-0 tables that start a compaction (see tl_cf_options): at rest, and
 * while table files are being ingested (tl_bulk_mode). */
#define TL_L0_COMPACTION 4
#define TL_L0_COMPACTION_BULK 16
#define TL_L0_SLOWDOWN 48
#define TL_L0_STOP 64

/* Key encoding ---------------------------------------------------------------- */

static inline uint64_t time_inv(int64_t t) {
    return ~((uint64_t)t ^ (UINT64_C(1) << 63));
}
static inline int64_t time_of_inv(uint64_t inv) {
    return (int64_t)(~inv ^ (UINT64_C(1) << 63));
}

void tl_list_prefix(hr_buf *out, hr_slice list) {
    unsigned char len[2] = {(unsigned char)(list.len >> 8), (unsigned char)list.len};
    hr_buf_append_u64be(out, XXH3_64bits(list.ptr, list.len));
    hr_buf_append(out, len, 2);
    hr_buf_append_slice(out, list);
}

void tl_list_end(hr_buf *out, hr_slice list) {
    size_t start = out->len;
    tl_list_prefix(out, list);
    /* The successor of the prefix: bump its last byte that is not 0xFF and
     * drop the ones after. The length field (<= 1024) never carries, so the
     * end shares the list's 8-byte hash. */
    while (out->len > start) {
        unsigned char *c = (unsigned char *)&out->data[out->len - 1];
        if (*c != 0xFF) {
            (*c)++;
            break;
        }
        out->data[--out->len] = '\0';
    }
}

void tl_member_encode(hr_buf *out, hr_slice member) {
    /* Written in place: every fan-out entry comes through here. */
    hr_buf_reserve(out, 2 * member.len + 2);
    unsigned char *o = (unsigned char *)out->data + out->len, *start = o;
    for (size_t i = 0; i < member.len; i++) {
        unsigned char c = (unsigned char)~(unsigned char)member.ptr[i];
        *o++ = c;
        if (c == 0xFF) *o++ = 0x00;
    }
    *o++ = 0xFF;
    *o++ = 0xFF;
    out->len += (size_t)(o - start);
    out->data[out->len] = '\0';
}

/* Decode an encoded member that must fill enc exactly; the member's bytes go
 * to out (room for enc.len bytes). Its length, or -1 when malformed. */
static long member_decode(hr_slice enc, char *out) {
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)enc.ptr;
    for (size_t i = 0; i < enc.len; i++) {
        if (p[i] != 0xFF) {
            out[n++] = (char)~p[i];
            continue;
        }
        if (i + 1 >= enc.len) return -1;
        if (p[i + 1] == 0xFF) return i + 2 == enc.len ? (long)n : -1; /* the terminator */
        if (p[i + 1] != 0x00) return -1;
        out[n++] = 0x00;
        i++;
    }
    return -1; /* no terminator */
}

void tl_key(hr_buf *out, hr_slice list, int64_t time_ms, hr_slice member) {
    tl_list_prefix(out, list);
    hr_buf_append_u64be(out, time_inv(time_ms));
    tl_member_encode(out, member);
}

void tl_time_key(hr_buf *out, hr_slice list, int64_t time_ms) {
    tl_list_prefix(out, list);
    hr_buf_append_u64be(out, time_inv(time_ms));
}

void tl_start_after(hr_buf *lo, hr_slice list, int64_t time_ms, hr_slice member) {
    hr_buf c = HR_BUF_INIT;
    tl_key(&c, list, time_ms, member);
    hr_buf_append_byte(&c, 0x00); /* the key right after the cursor's */
    if (hr_slice_cmp(hr_buf_slice(&c), hr_buf_slice(lo)) > 0) {
        hr_buf_clear(lo);
        hr_buf_append_slice(lo, hr_buf_slice(&c));
    }
    hr_buf_free(&c);
}

int tl_key_parse(hr_slice key, size_t prefix_len, int64_t *time_ms, char *member, size_t *member_len) {
    if (key.len < prefix_len + 8) return -1;
    *time_ms = time_of_inv(load_u64(key.ptr + prefix_len));
    long n = member_decode(hr_slice_of(key.ptr + prefix_len + 8, key.len - prefix_len - 8), member);
    if (n < 0) return -1;
    *member_len = (size_t)n;
    return 0;
}

/* Whether an entry whose value is v has expired at now. A value that is not
 * 8 bytes is treated as never expiring (it is not ours to judge). */
static bool expired(hr_slice v, int64_t now) {
    if (v.len != 8) return false;
    int64_t at = (int64_t)load_u64(v.ptr);
    return at > 0 && at <= now;
}

static int bufcmp(const hr_buf *a, const hr_buf *b) {
    return hr_slice_cmp(hr_buf_slice(a), hr_buf_slice(b));
}

/* Ops ---------------------------------------------------------------------- */

/* The time lists' state of a batch (rx.tl), in x->mem, made by its first
 * add or remove; tl_end frees what it holds. */
struct tl_rx {
    hr_buf key; /* scratch for time-list keys */
};

/* The scratch key, emptied, for op's entry. */
static hr_buf *scratch_key(rx *x) {
    if (x->tl == NULL) {
        x->tl = hr_arena_alloc(&x->mem, sizeof *x->tl);
        x->tl->key = (hr_buf)HR_BUF_INIT;
    }
    hr_buf_clear(&x->tl->key);
    return &x->tl->key;
}

void tl_end(rx *x) {
    if (x->tl) hr_buf_free(&x->tl->key);
    x->tl = NULL; /* the part itself goes with x->mem */
}

/* After op wrote the entry whose key is k: the same change for its list's
 * copy in memory, if the list is kept. */
static void note_kept(rx *x, const hr_op *op, const hr_buf *k, bool add) {
    if (x->tlc == NULL) return; /* made before the first op when lists are kept: no call per add without */
    tlc_list *l = tlcache_of(x, op);
    if (l == NULL) return;
    size_t plen = tl_list_prefix_len(op->key);
    tlcache_note(x, l, add, hr_slice_of(k->data + plen, k->len - plen), add ? op->expire_at_ms : 0);
}

int op_tladd(rx *x, hr_op *op) {
    hr_buf *k = scratch_key(x);
    tl_key(k, op->key, op->time_ms, op->member);
    char v[8];
    hr_store_u64be(v, (uint64_t)op->expire_at_ms);
    rx_put_blind(x, CF_TL, hr_buf_slice(k), hr_slice_of(v, 8));
    note_kept(x, op, k, true);
    return 0;
}

int op_tlrem(rx *x, hr_op *op) {
    hr_buf *k = scratch_key(x);
    tl_key(k, op->key, op->time_ms, op->member);
    rx_del_blind(x, CF_TL, hr_buf_slice(k));
    note_kept(x, op, k, false);
    op->result.num = 1; /* blind: store.h says so */
    return 0;
}

/* The keys [lo, hi) a range read walks; false when the range is empty. */
static bool range_bounds(hr_slice list, const hr_tlrange_spec *sp, hr_buf *lo, hr_buf *hi) {
    if (sp->before_ms == INT64_MIN || sp->after_ms == INT64_MAX) return false;
    tl_list_prefix(lo, list);
    size_t plen = lo->len;
    if (sp->before_ms != INT64_MAX) hr_buf_append_u64be(lo, time_inv(sp->before_ms) + 1);
    if (sp->has_cursor) tl_start_after(lo, list, sp->cursor_time, sp->cursor_member);
    if (sp->after_ms != INT64_MIN) {
        hr_buf_append(hi, lo->data, plen);
        hr_buf_append_u64be(hi, time_inv(sp->after_ms));
    } else {
        tl_list_end(hi, list);
    }
    return bufcmp(lo, hi) < 0;
}

int tl_result_push(hr_result *res, hr_arena *out, size_t *cap, size_t limit, hr_slice sfx, hr_err *err) {
    /* Grown as needed: most reads ask for a page, a few for 10,000. */
    res->entries = arena_grow(out, res->entries, res->n_entries, cap, sizeof *res->entries, 32, limit);
    char *m = hr_arena_alloc(out, sfx.len + 1);
    int64_t t;
    size_t mlen;
    if (tl_key_parse(sfx, 0, &t, m, &mlen) != 0)
        return hr_err_set(err, HR_EIO, "rocksdb: corrupt time list key (%zu bytes after the list)", sfx.len);
    m[mlen] = '\0';
    res->entries[res->n_entries].score = (double)t;
    res->entries[res->n_entries].member = hr_slice_of(m, mlen);
    res->n_entries++;
    return 0;
}

/* The range read from the list's copy in memory, when it is kept, the batch
 * has written nothing (its own writes are in RocksDB's view only) and the
 * copy holds the range. A hot read of a list not kept asks for it to be. */
static bool range_from_memory(rx *x, hr_op *op, hr_slice lo, hr_slice hi, int *rc) {
    tlc_list *l = tlcache_find(x->s->tlc, op->key);
    if (l == NULL) {
        if (op->tlrange.hot) tlcache_want(x, op->key);
        return false;
    }
    if (x->dirty) return false;
    size_t plen = tl_list_prefix_len(op->key);
    hr_slice lo_sfx = hr_slice_of(lo.ptr + plen, lo.len - plen);
    /* hi is the list's end (no bound) or prefix + the after_ms position. */
    hr_slice hi_sfx =
        op->tlrange.after_ms != INT64_MIN ? hr_slice_of(hi.ptr + plen, hi.len - plen) : hr_slice_of(NULL, 0);
    return tlcache_range(x->s->tlc, l, lo_sfx, hi_sfx, &op->tlrange, &x->b->arena, &op->result, rc, x->err);
}

int op_tlrange(rx *x, hr_op *op) {
    const hr_tlrange_spec *sp = &op->tlrange;
    hr_result *res = &op->result;
    hr_arena *out = &x->b->arena;
    hr_buf lo = HR_BUF_INIT, hi = HR_BUF_INIT;
    res->n_entries = 0;
    res->more = false;
    int rc = 0;
    if (range_bounds(op->key, sp, &lo, &hi) &&
        !range_from_memory(x, op, hr_buf_slice(&lo), hr_buf_slice(&hi), &rc)) {
        size_t plen = tl_list_prefix_len(op->key), skip = sp->offset, cap = 0;
        hr_slice hslice = hr_buf_slice(&hi);
        rx_iter it;
        rx_iter_open(x, &it, CF_TL, hr_buf_slice(&lo), hslice);
        for (rocksdb_iter_seek(it.it, lo.data, lo.len); rocksdb_iter_valid(it.it); rocksdb_iter_next(it.it)) {
            hr_slice k = rx_iter_key(&it);
            if (hr_slice_cmp(k, hslice) >= 0) break; /* the batch's own writes are not bounded */
            size_t vlen;
            const char *v = rocksdb_iter_value(it.it, &vlen);
            if (expired(hr_slice_of(v, vlen), sp->now_ms)) continue;
            if (skip > 0) {
                skip--;
                continue;
            }
            if (res->n_entries == sp->limit) {
                res->more = true;
                break;
            }
            if (k.len < plen) {
                rc = hr_err_set(x->err, HR_EIO, "rocksdb: corrupt time list key (%zu bytes)", k.len);
                break;
            }
            rc = tl_result_push(res, out, &cap, sp->limit, hr_slice_of(k.ptr + plen, k.len - plen), x->err);
            if (rc != 0) break;
        }
        if (rc == 0) rc = rx_iter_status(x, &it);
        rx_iter_close(&it);
    }
    if (res->n_entries == 0) res->entries = NULL;
    hr_buf_free(&lo);
    hr_buf_free(&hi);
    return rc;
}

int op_tltrim(rx *x, hr_op *op) {
    hr_buf lo = HR_BUF_INIT, hi = HR_BUF_INIT;
    tl_list_prefix(&lo, op->key);
    tl_list_end(&hi, op->key);
    size_t plen = lo.len, live = 0, n = 0, cap = 0;
    hr_slice *gone = NULL;
    int64_t older = op->time_ms;
    rx_iter it;
    rx_iter_open(x, &it, CF_TL, hr_buf_slice(&lo), hr_buf_slice(&hi));
    for (rocksdb_iter_seek(it.it, lo.data, lo.len); rocksdb_iter_valid(it.it); rocksdb_iter_next(it.it)) {
        hr_slice k = rx_iter_key(&it);
        if (hr_slice_cmp(k, hr_buf_slice(&hi)) >= 0) break;
        size_t vlen;
        const char *v = rocksdb_iter_value(it.it, &vlen);
        bool drop = expired(hr_slice_of(v, vlen), x->now);
        if (!drop && older != INT64_MIN && k.len >= plen + 8)
            drop = time_of_inv(load_u64(k.ptr + plen)) < older;
        if (!drop) drop = live++ >= op->keep;
        if (!drop) continue;
        /* Deleted after the iterator is closed (rocks/view.c says why). */
        gone = arena_grow(&x->mem, gone, n, &cap, sizeof *gone, 64, 0);
        gone[n++] = hr_arena_copy(&x->mem, k);
    }
    int rc = rx_iter_status(x, &it);
    rx_iter_close(&it);
    if (rc == 0) {
        tlc_list *l = tlcache_of(x, op);
        for (size_t i = 0; i < n; i++) {
            rx_del_blind(x, CF_TL, gone[i]);
            if (l) tlcache_note(x, l, false, hr_slice_of(gone[i].ptr + plen, gone[i].len - plen), 0);
        }
        op->result.num = (int64_t)n;
    }
    hr_buf_free(&lo);
    hr_buf_free(&hi);
    return rc;
}

/* Column family options ------------------------------------------------------ */

void tl_cf_options(rocksdb_options_t *o, rocksdb_cache_t *cache, rocksdb_compactionfilterfactory_t *filter) {
    rocksdb_options_set_prefix_extractor(o, rocksdb_slicetransform_create_fixed_prefix(8));
    rocksdb_options_set_hash_link_list_rep(o, TL_HASH_BUCKETS);
    rocksdb_options_set_write_buffer_size(o, TL_WRITE_BUFFER);
    rocksdb_options_set_max_write_buffer_number(o, TL_WRITE_BUFFERS);
    /* No memtable bloom filter (rocks/engine.c gives every other column family
     * one): a list's bucket in the hashed memtable already says whether the
     * memtable holds the list, and nothing looks a time-list key up by
     * itself. Each add paid for two random writes into a 13 MB filter, and
     * store_micro's fan-out ran faster without it. */
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(o, 0);
    rocksdb_options_set_compaction_filter_factory(o, filter);

    /* Bloom filters of list prefixes, not of whole keys: a time list is only
     * ever scanned, never looked up by key. */
    rocks_prefix_bloom_tables(o, cache);

    /* While table files are ingested (rocks/timelist_ingest.c), level 0 may hold 16
     * tables before they are compacted (4 by default, and at rest), and
     * writes slow down from 48 (20). Every table of the time lists spans
     * nearly every list (a fan-out writes to random timelines), so each
     * compaction of level 0 rewrites the whole level below it; with table
     * files ingested a million entries at a time, the default trigger
     * compacted every few seconds and stalled the writes, and the fan-out
     * drained far slower. But a read of a list seeks every level-0 table
     * (each holds the list), and a burst left up to 15 of them behind it,
     * which slowed every timeline page at rest. So the trigger is raised
     * only for the burst (tl_bulk_mode). */
    rocksdb_options_set_level0_file_num_compaction_trigger(o, TL_L0_COMPACTION);
    rocksdb_options_set_level0_slowdown_writes_trigger(o, TL_L0_SLOWDOWN);
    rocksdb_options_set_level0_stop_writes_trigger(o, TL_L0_STOP);
}

void tl_bulk_mode(rocks_store *s, bool bulk) {
    pthread_mutex_lock(&s->tl_bulk_lock);
    if (s->tl_bulk != bulk) {
        char trigger[16];
        snprintf(trigger, sizeof trigger, "%d", bulk ? TL_L0_COMPACTION_BULK : TL_L0_COMPACTION);
        const char *keys[1] = {"level0_file_num_compaction_trigger"}, *values[1] = {trigger};
        char *errptr = NULL;
        rocksdb_set_options_cf(s->db, s->cf[CF_TL], 1, keys, values, &errptr);
        if (errptr) {
            hr_warn("rocksdb: cannot set the time lists' level-0 trigger to %s: %s", trigger, errptr);
            rocksdb_free(errptr);
        } else {
            s->tl_bulk = bulk;
            hr_debug("rocksdb: time lists' level-0 compaction trigger %s", trigger);
        }
    }
    pthread_mutex_unlock(&s->tl_bulk_lock);
}
