/* zset.h — sorted sets (zset.c) and the encodings a set takes, one per
 * set as its metadata's flags say: inline in its metadata record
 * (zset_inline.c), on disk with a (score, member) index (zset.c, read
 * whole through zset_cache.c when small), a set of times kept with the time
 * lists (zset_times.c), or kept in memory (zset_memory.c). */
#ifndef HR_ROCKS_ZSET_H
#define HR_ROCKS_ZSET_H

#include "store/rocks/engine.h"

/* Each op runs one op of the batch, sets its result (memory in
 * x->b->arena) and returns 0, or a store failure (HR_EIO) that aborts the
 * batch. */
int op_zguard(rx *x, hr_op *op);
int op_zadd(rx *x, hr_op *op);
int op_zincr(rx *x, hr_op *op);
int op_zrem(rx *x, hr_op *op);
int op_zscore(rx *x, hr_op *op);
int op_zcard(rx *x, hr_op *op);
int op_zrange(rx *x, hr_op *op);
int op_zremrange_score(rx *x, hr_op *op);

/* Sorted-set helpers shared with the exact distinct sets (rocks_ops.c). */
/* Look up member of the collection (key, version): *found, and its encoded
 * score. */
int zs_member(rx *x, hr_slice key, uint64_t version, hr_slice member, bool *found, uint64_t *enc);
/* Set member's score to enc (old_enc: its previous score, when had_old). */
void zs_write(rx *x, hr_slice key, uint64_t version, hr_slice member, bool had_old, uint64_t old_enc,
              uint64_t enc);
/* Remove member, whose score is enc. */
void zs_remove(rx *x, hr_slice key, uint64_t version, hr_slice member, uint64_t enc);

/* Visit the index entries of (key, version) with min <= score <= max, in
 * ascending (score, member) order, or descending with reverse, strictly after
 * `after` (encoded score | member bytes) in that direction when not NULL.
 * visit returns false to stop; its member is valid only during the call. */
typedef bool (*zs_visit)(void *ctx, uint64_t enc, hr_slice member);
int zs_scan(rx *x, hr_slice key, uint64_t version, bool reverse, double min, double max,
            const hr_slice *after, zs_visit visit, void *ctx);

/* A zs_visit that copies up to max entries into mem (to act on them once the
 * iterator is closed). */
typedef struct zcollect {
    hr_arena *mem;
    size_t max;
    size_t n, cap;
    uint64_t *encs;
    hr_slice *members;
} zcollect;
bool zs_collect(void *ctx, uint64_t enc, hr_slice member);

/* Sets of times (HR_DECL_TIME_SET), whose order is kept with the time lists and
 * member records in CF_ZTLM (rocks_ztl.c): the same calls as zs_write,
 * zs_remove and zs_scan. */
bool ztl_score_ok(double score); /* an integer with |score| <= 2^53 */
/* A set of times leaves its metadata record sooner than other sets: inline,
 * every write rewrites the whole record (up to 4 KB into the WAL and the
 * memtable), and out of line its writes are cheap; a limit of 128 did no
 * better than 16. */
#define ZTL_INLINE_MAX_ENTRIES 16
/* The value of a set of times' index entry: expire_at 0 (never), then this
 * mark, by which the time lists' compaction filter tells the entries of a
 * deleted set (rocks_filter.c). */
#define ZTL_ENTRY_VALUE "\0\0\0\0\0\0\0\0Z"
#define ZTL_ENTRY_VALUE_LEN 9
void ztl_write(rx *x, hr_slice key, uint64_t version, hr_slice member, bool had_old, uint64_t old_enc,
               uint64_t enc);
void ztl_remove(rx *x, hr_slice key, uint64_t version, hr_slice member, uint64_t enc);
int ztl_scan(rx *x, hr_slice key, uint64_t version, bool reverse, double min, double max,
             const hr_slice *after, zs_visit visit, void *ctx);
/* Append the key of member's record in (key, version)'s set to out:
 * prefix | member bytes. */
void zs_member_key(hr_buf *out, hr_slice key, uint64_t version, hr_slice member);
/* A member record alone, in cf, for ztl_write / ztl_remove and for sets
 * kept in memory (zs_write and zs_remove write it in CF_SUB with the index
 * entry). */
void zs_member_put(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member, uint64_t enc);
void zs_member_del(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member);
/* zs_member, reading cf. */
int zs_member_in(rx *x, int cf, hr_slice key, uint64_t version, hr_slice member, bool *found, uint64_t *enc);
/* The column family of an out-of-line set's member records. */
static inline int zs_member_cf(const rmeta *m) {
    return m->zflags & ZF_TL ? CF_ZTLM : CF_SUB;
}
/* zs_write or ztl_write, as m's layout says: a member of a set on disk
 * (not inline, not in memory). */
void zs_write_as(rx *x, hr_slice key, const rmeta *m, hr_slice member, bool had_old, uint64_t old_enc,
                 uint64_t enc);

/* Small sorted sets inside their metadata record (rocks_zinline.c). "all"
 * is a set's entries (rmeta.zinline). A set stays inline while it has at most
 * ZINLINE_MAX_ENTRIES members and ZINLINE_MAX_BYTES of entries: 32 covers a
 * long-tail URL's readers (one or two) and friends-reads' first read of a
 * list (HR_READING_LIST_FIRST), and keeps a record under a block's 4 KiB. */
#define ZINLINE_MAX_ENTRIES 128
#define ZINLINE_MAX_BYTES 4000
/* The score of member, if it is in the set. */
bool zi_find(hr_slice all, hr_slice member, uint64_t *enc);
/* Whether a set of this many entries and bytes of them may stay inline. */
bool zi_fits(size_t entries, size_t bytes);
/* The bytes member's entry takes (more than ZINLINE_MAX_BYTES if it cannot be inline). */
size_t zi_entry_bytes(hr_slice member);
/* The entries with member's removed and, unless removed, (enc, member) in its
 * place; in mem. */
hr_slice zi_with(hr_arena *mem, hr_slice all, hr_slice member, bool removed, uint64_t enc);
/* Move an inline set's entries to sub-keys under its version; m loses ZF_INLINE
 * (the caller writes m). */
void zi_spill(rx *x, hr_slice key, rmeta *m);
/* zs_scan's walk over inline entries: the same bounds, cursor and visits. */
void zi_walk(hr_arena *mem, hr_slice all, bool reverse, double min, double max, const hr_slice *after,
             zs_visit visit, void *ctx);
/* Append an entry in the inline layout. */
void zi_append(hr_buf *out, uint64_t enc, hr_slice member);

/* Whole small sorted sets on disk, cached (rocks_zcache.c): the cache's
 * slots, and the largest set it keeps (its version and entries). zc_scan is
 * zs_scan for the set (key, m), answered from the cache when it may be; a
 * read of the whole set is offered to it. zc_note_write: the batch writes
 * the set's entries (zs_write, zs_remove). Around the commit, as the record
 * cache's rx_cache_before_write / _after_write (and called by them).
 * zc_read is op_zrange's exchange with zc_scan (other callers pass NULL):
 * its spec asks for the origin alone when it carries an attachment
 * (hr_zrange_spec.attached_only, for a read of the whole set), and the
 * cached set the scan took (origin). */
typedef struct zc_read {
    bool attached_only;
    void *origin;
    /* While zc_scan walks a cached set: its bytes, which live as long as
     * the batch's results (hr_batch_hold), so op_zrange points into them. */
    hr_slice lasting;
} zc_read;
int zc_scan(rx *x, hr_slice key, const rmeta *m, bool reverse, double min, double max, const hr_slice *after,
            zs_visit visit, void *ctx, zc_read *rd);
void zc_note_write(rx *x, hr_slice key);
void zc_before_write(rx *x);
void zc_after_write(rx *x, bool ok, bool wrote, uint64_t stamp);
/* Slots: a set's bucket is fixed by its key's hash. When the cache was
 * direct-mapped, n sets in the slots lost ~n^2 / (2 ZC_SLOTS) of them to
 * each other: with 2,048 slots, 1,000 users' friend lists kept only ~800,
 * and the rest were read from disk on every other query, each evicting
 * another. 65,536 slots (3 MiB, in buckets of two ways) keep all but a
 * few of 1,000; the budget bounds the entries (~16,000 lists of 450). */
#define ZC_SLOTS 65536
/* A read of part of a set that is not cached (by score, or after a cursor)
 * reads all of it, to offer it, when it has at most this many members: a
 * URL's readers are read from the oldest that is still live, so none was
 * ever cached, and a friends-reads over long-tail URLs read about a list
 * of a few hundred readers from disk every call, a large share of its CPU.
 * A bigger set read a page at a time stays on disk. */
#define ZC_FILL_MEMBERS 1024
#define ZC_MAX_BYTES (256u << 10)
#define ZC_BUDGET ((size_t)128 << 20)

/* Sorted sets kept in memory (rocks_zmem.c)                                 */

typedef struct zent zent; /* a sorted set kept in memory */

/* A change to a set kept in memory, applied after the commit. */
typedef struct zstage {
    zent *e;
    hr_slice member; /* in x->mem */
    bool removed;
    uint64_t enc;
} zstage;

/* The sets kept in memory: at most budget bytes of them; all: every set
 * from its creation (tests). */
zreg *zreg_new(size_t budget, bool all);
/* Bytes the sets kept in memory take. */
size_t zreg_bytes(zreg *r);
void zreg_free(zreg *r);
/* The in-memory order of the set (key, m->version) (m: its metadata, with
 * ZF_MEM), built from its member records when the process has not built it
 * yet; held by the batch until zmem_end. fresh: the batch is creating the
 * set (nothing to read). *out is NULL when the set no longer exists at that
 * version (a reader's snapshot older than the set). 0 or HR_EIO. */
int zmem_acquire(rx *x, hr_slice key, const rmeta *m, bool fresh, zent **out);
/* Reads of the committed state, each under the set's read lock. */
size_t zent_len(zent *e);
bool zent_score(zent *e, hr_slice member, uint64_t *enc);
/* Visit members in (score, member) order from the first at or after (enc,
 * member) (reverse: the last at or before it), until visit returns false. */
void zent_walk(zent *e, bool reverse, uint64_t enc, hr_slice member, zs_visit visit, void *ctx);
/* Stage a change (member copied), applied by zmem_commit. */
void zmem_stage(rx *x, zent *e, hr_slice member, bool removed, uint64_t enc);
/* The changes the batch has staged, in order: *n of them. */
const zstage *zmem_staged(const rx *x, size_t *n);
/* Count moves (score changes) of a set on disk, toward moving it in. */
void zmem_moved(rx *x, hr_slice key, const rmeta *m, uint64_t moves);
/* Whether every sorted set lives in memory from its creation (tests). */
bool zmem_all(const rx *x);
/* After a successful commit, with the batch's locks held: apply the staged
 * changes, forget sets the batch deleted or replaced, move in sets that
 * qualified. */
void zmem_commit(rx *x);
/* After a failed commit: forget the sets the batch created. */
void zmem_abort(rx *x);
/* At the end of every batch: release what the batch held. */
void zmem_end(rx *x);

#endif
