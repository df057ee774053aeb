/* rocks/zset_times.c — sets of times: sorted sets whose order is kept with the time
 * lists.
 *
 * WHY. A member of a sorted set on disk is three keys (rocks/engine.c): the set's
 * metadata (its size), the member record in "subkeys" and the index entry
 * in "zindex". Each write of one is an insert at a random place in a
 * skiplist memtable of a million entries, some twenty cache misses, and
 * RocksDB makes those inserts one writer at a time (the time lists' hashed
 * memtable turns concurrent inserts off, rocks/engine.c), so they bound how many
 * writes a second the whole store takes. A subject's ratings ({rs/S},
 * core/ratings.h) are such a set, written by every rating upsert. The time
 * lists' column family has a hashed memtable instead (rocks/timelist.c): an entry
 * goes into its own list's bucket, one or two misses. A set whose scores
 * are times (HR_DECL_TIME_SET, store.h) therefore keeps its index entries
 * there, as the entries of a time list: newest first, the order such a set
 * is read in. Its member records go to a column family of their own,
 * "timesetmembers", with a hashed memtable too (rocks/engine.c): in "timelists"
 * they would have only that family's prefix blooms, so looking up a new
 * member, a miss, would read a block of every table holding any of the
 * set's keys.
 *
 * WHAT. A set of a family declared HR_DECL_TIME_SET carries ZF_TL from its
 * creation (rocks/zset.c looks the declarations up then, once), inline
 * too; rocks/zset_inline.c spills it here. Its metadata is any set's, its member
 * records are laid out as any set's (in "timesetmembers", which the sub-key
 * compaction filter collects as it does "subkeys"). The index differs:
 *
 *   list:   the set's sub-key prefix (u16 len | key | u64 version), so a
 *           new version of the key starts an empty list
 *   entry:  time = the score, member = the member; value: i64 0 (never
 *           expires) and a mark, ZTL_ENTRY_VALUE
 *
 * The time lists order a list's entries by (time, member) descending, which
 * is a sorted set's descending (score, member) order for integer scores. So
 * scores must be integers a double holds exactly: rocks/zset.c answers
 * HR_EINVAL to a write of any other score into such a set. No user key
 * starts with the bytes of a sub-key prefix in practice (keys of time lists
 * are the domain's "{...}" names), so the lists do not collide.
 *
 * COSTS. A descending range read is one forward scan from its first entry,
 * like any time list read. An ascending one scans the whole range, newest
 * first, and visits it backwards: linear in the range, fine for a set read
 * newest first (and the rare full read). A set of times never moves into
 * memory (rocks/zset_memory.c): its members change score rarely.
 *
 * DELETION. As for any collection, deleting, expiring or overwriting such a
 * set is one metadata write. The time lists' compaction filter drops the
 * entries with the mark whose set no live record of the same version names
 * (rocks/filter.c), as the sub-key filter drops sub-keys.
 */
#include <math.h>
#include <string.h>

#include "store/rocks/timelist.h"
#include "store/rocks/zset.h"

#define EXACT_MAX 9007199254740992.0 /* 2^53 */

bool ztl_score_ok(double score) {
    return score >= -EXACT_MAX && score <= EXACT_MAX && score == trunc(score); /* NaN fails the first */
}

static int64_t time_of(uint64_t enc) {
    return (int64_t)score_decode(enc);
}

/* The index entry of (member, enc) in the set's list, into k (cleared). */
static void entry_key(hr_buf *k, hr_slice list, uint64_t enc, hr_slice member) {
    hr_buf_clear(k);
    tl_key(k, list, time_of(enc), member);
}

void ztl_write(rx *x, hr_slice key, uint64_t version, hr_slice member, bool had_old, uint64_t old_enc,
               uint64_t enc) {
    if (had_old && old_enc == enc) return;
    hr_buf list = HR_BUF_INIT, k = HR_BUF_INIT;
    key_prefix(&list, key, version);
    if (had_old) {
        entry_key(&k, hr_buf_slice(&list), old_enc, member);
        rx_del_blind(x, CF_TL, hr_buf_slice(&k));
    }
    entry_key(&k, hr_buf_slice(&list), enc, member);
    rx_put_blind(x, CF_TL, hr_buf_slice(&k), hr_slice_of(ZTL_ENTRY_VALUE, ZTL_ENTRY_VALUE_LEN));
    hr_buf_free(&list);
    hr_buf_free(&k);
    zs_member_put(x, CF_ZTLM, key, version, member, enc);
}

void ztl_remove(rx *x, hr_slice key, uint64_t version, hr_slice member, uint64_t enc) {
    hr_buf list = HR_BUF_INIT, k = HR_BUF_INIT;
    key_prefix(&list, key, version);
    entry_key(&k, hr_buf_slice(&list), enc, member);
    rx_del_blind(x, CF_TL, hr_buf_slice(&k));
    hr_buf_free(&list);
    hr_buf_free(&k);
    zs_member_del(x, CF_ZTLM, key, version, member);
}

/* A scan's state: its direction and cursor, and for an ascending read the
 * entries collected so far (the list gives them newest first). */
typedef struct zscan_ctx {
    bool reverse;
    const hr_slice *after;
    hr_buf suffix; /* enc | member of the entry at hand, compared with after */
    zcollect got;  /* ascending: to visit backwards */
} zscan_ctx;

/* Whether the entry (enc, member) lies strictly past the cursor in the read's
 * direction; *stop when no later entry of the scan can (ascending reads meet
 * the cursor from above). */
static bool past_cursor(zscan_ctx *c, uint64_t enc, hr_slice member, bool *stop) {
    if (c->after == NULL) return true;
    hr_buf_clear(&c->suffix);
    append_u64(&c->suffix, enc);
    hr_buf_append_slice(&c->suffix, member);
    int cmp = hr_slice_cmp(hr_buf_slice(&c->suffix), *c->after);
    if (c->reverse) return cmp < 0;
    *stop = cmp <= 0;
    return cmp > 0;
}

/* Where a descending read starts: the first entry at or below tmax, or past
 * the cursor when that is further. */
static void first_key(hr_buf *lo, hr_slice list, int64_t tmax, bool reverse, const hr_slice *after) {
    if (tmax == INT64_MAX)
        tl_list_prefix(lo, list);
    else
        tl_time_key(lo, list, tmax);
    if (!reverse || after == NULL) return;
    double c = score_decode(load_u64(after->ptr));
    if (!ztl_score_ok(c)) return; /* a made-up cursor: the checks of each entry apply it */
    tl_start_after(lo, list, (int64_t)c, hr_slice_of(after->ptr + 8, after->len - 8));
}

int ztl_scan(rx *x, hr_slice key, uint64_t version, bool reverse, double min, double max,
             const hr_slice *after, zs_visit visit, void *ctx) {
    if (!(min <= max)) return 0;
    int64_t tmax = max >= EXACT_MAX ? INT64_MAX : (int64_t)floor(max);
    int64_t tmin = min <= -EXACT_MAX ? INT64_MIN : (int64_t)ceil(min);
    if (tmin > tmax) return 0;
    hr_buf list = HR_BUF_INIT, lo = HR_BUF_INIT, hi = HR_BUF_INIT;
    key_prefix(&list, key, version);
    first_key(&lo, hr_buf_slice(&list), tmax, reverse, after);
    tl_list_end(&hi, hr_buf_slice(&list));
    size_t plen = 8 + 2 + list.len; /* hash | len | list */
    zscan_ctx c = {.reverse = reverse, .after = after};
    c.got.mem = &x->mem;
    c.got.max = SIZE_MAX;
    char *member = NULL;
    size_t member_cap = 0;
    int rc = 0;

    rx_iter it;
    rx_iter_open(x, &it, CF_TL, hr_buf_slice(&lo), hr_buf_slice(&hi));
    for (rocksdb_iter_seek(it.it, lo.data, lo.len); rocksdb_iter_valid(it.it); rocksdb_iter_next(it.it)) {
        hr_slice k = rx_iter_key(&it);
        if (hr_slice_cmp(k, hr_buf_slice(&hi)) >= 0) break; /* the batch's own writes are not bounded */
        if (k.len > member_cap) {
            member_cap = k.len;
            member = hr_arena_alloc(&x->mem, member_cap);
        }
        int64_t t;
        size_t mlen;
        if (tl_key_parse(k, plen, &t, member, &mlen) != 0) {
            rc = hr_err_set(x->err, HR_EIO, "rocksdb: corrupt index entry of a set of times");
            break;
        }
        if (t < tmin) break;
        if (t > tmax) continue; /* a write of the batch above the range */
        uint64_t enc = score_encode((double)t);
        hr_slice m = hr_slice_of(member, mlen);
        bool stop = false;
        bool past = past_cursor(&c, enc, m, &stop);
        if (stop) break;
        if (!past) continue;
        if (reverse ? !visit(ctx, enc, m) : !zs_collect(&c.got, enc, m)) break;
    }
    if (rc == 0) rc = rx_iter_status(x, &it);
    rx_iter_close(&it);
    for (size_t i = c.got.n; rc == 0 && i > 0; i--)
        if (!visit(ctx, c.got.encs[i - 1], c.got.members[i - 1])) break;
    hr_buf_free(&c.suffix);
    hr_buf_free(&list);
    hr_buf_free(&lo);
    hr_buf_free(&hi);
    return rc;
}
