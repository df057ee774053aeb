/* timelist.h — time lists (timelist.c, their own column family), bulk adds
 * as table files (timelist_ingest.c), and hot lists' newest entries kept in
 * memory (timelist_cache.c). */
#ifndef HR_ROCKS_TIMELIST_H
#define HR_ROCKS_TIMELIST_H

#include "store/rocks/engine.h"

/* Bulk time-list adds as table files (rocks_ingest.c). open: the
 * directory of the files (leftovers of a crash removed); close frees what
 * open and rocks.c's open set; write: the backend's tlbulk_write. */
int rocks_ingest_open(rocks_store *s, const char *path, size_t file_min, hr_err *err);
void rocks_ingest_close(rocks_store *s);
int rocks_ingest_write(hr_store *hs, hr_tlbulk *w, hr_err *err);

int op_tladd(rx *x, hr_op *op);
int op_tlrem(rx *x, hr_op *op);
int op_tlrange(rx *x, hr_op *op);
int op_tltrim(rx *x, hr_op *op);
/* At the end of every batch: free what its time-list ops kept (rx.tl). */
void tl_end(rx *x);

/* The key encoding (drawn in rocks_tl.c), exposed for the tests. Each
 * appends to out. */
void tl_list_prefix(hr_buf *out, hr_slice list);     /* hash | len | list */
void tl_list_end(hr_buf *out, hr_slice list);        /* the first key after the list */
void tl_member_encode(hr_buf *out, hr_slice member); /* escaped, order-reversing */
/* The length of tl_list_prefix's encoding of list. */
static inline size_t tl_list_prefix_len(hr_slice list) {
    return 8 + 2 + list.len;
}
void tl_key(hr_buf *out, hr_slice list, int64_t time_ms, hr_slice member);
/* The list's prefix and time_ms: no entry of time_ms or older sorts before it. */
void tl_time_key(hr_buf *out, hr_slice list, int64_t time_ms);
/* Move lo (a key of list) to the key right after the entry (time_ms,
 * member), when that lies further: where a read strictly after that
 * cursor starts. */
void tl_start_after(hr_buf *lo, hr_slice list, int64_t time_ms, hr_slice member);
/* Split an entry's key whose list prefix is prefix_len bytes: its time, and
 * its member into member (room for key.len bytes), *member_len bytes long.
 * -1 if malformed. */
int tl_key_parse(hr_slice key, size_t prefix_len, int64_t *time_ms, char *member, size_t *member_len);
/* Append the entry whose key suffix (time, encoded member) is sfx to a range
 * read's result: entries grown in out (*cap of them), at most limit. 0, or
 * HR_EIO with err filled when sfx is malformed. */
int tl_result_push(hr_result *res, hr_arena *out, size_t *cap, size_t limit, hr_slice sfx, hr_err *err);
/* Block-based tables with bloom filters of key prefixes only (the column
 * family's prefix extractor), sharing cache: for column families that are
 * scanned by prefix and never looked up by whole key (rocks.c). */
void rocks_prefix_bloom_tables(rocksdb_options_t *o, rocksdb_cache_t *cache);
/* Options of the "timelists" column family: its prefix extractor, hashed
 * memtable, tables with prefix blooms (sharing cache) and expiry filter. */
void tl_cf_options(rocksdb_options_t *o, rocksdb_cache_t *cache, rocksdb_compactionfilterfactory_t *filter);
/* Give level 0 of the time lists room for a burst of table files (bulk),
 * or take it back (see tl_cf_options). */
void tl_bulk_mode(rocks_store *s, bool bulk);

/* ------------------------------------------------------------------------ */
/* Hot time lists kept in memory (rocks_tlcache.c, which says how)           */

typedef struct tlc_list tlc_list; /* one of them */

/* keep: newest entries loaded (0: 1024); budget: the bytes its lists may
 * take (the `hotlists` share, rocks/memory.h): a list is kept while there
 * is room for its keep entries (0: none is). */
tlcache *tlcache_new(size_t keep, size_t budget);
size_t tlcache_bytes(tlcache *c); /* what its lists take, by TLC_ITEM_BYTES an entry */
void tlcache_free(tlcache *c);    /* NULL is a no-op */
size_t tlcache_lists(tlcache *c); /* lists kept */
size_t tlcache_hits(tlcache *c);  /* range reads answered from memory so far */
/* Held by every batch that writes time lists while some are kept, from
 * before it chooses its stripes until after tlcache_apply. */
void tlcache_gate_enter(tlcache *c);
void tlcache_gate_leave(tlcache *c);
/* The kept list named list, or NULL. */
tlc_list *tlcache_find(tlcache *c, hr_slice list);
/* A batch that writes time lists, holding the gate: true when some lists
 * are kept. Then, as rocks/engine.c chooses the stripes, look_up finds the
 * kept list the time-list write b->ops[i] writes, once: true if there is
 * one (the batch takes its stripe too). */
bool tlcache_begin(rx *x);
bool tlcache_look_up(rx *x, size_t i);
/* The kept copy of op's list, when the batch must keep it up to date
 * (looked up by tlcache_look_up), or NULL. */
tlc_list *tlcache_of(const rx *x, const hr_op *op);
/* Answer a range read of the suffixes [lo, hi) (hi.ptr NULL: to the end of
 * the list) from memory, as op_tlrange would at the latest committed state:
 * true when answered (res filled; *rc 0 or HR_EIO), false when the list is
 * not loaded yet or the range reaches past what it holds. */
bool tlcache_range(tlcache *c, tlc_list *l, hr_slice lo, hr_slice hi, const hr_tlrange_spec *sp,
                   hr_arena *out, hr_result *res, int *rc, hr_err *err);
/* Record a write of the batch to a kept list (the batch holds the list's
 * stripe), applied by tlcache_apply after the commit, in order. */
void tlcache_note(rx *x, tlc_list *l, bool add, hr_slice sfx, int64_t expire_at);
void tlcache_apply(rx *x);
/* A hot read of a list not kept: keep it once the batch is over. */
void tlcache_want(rx *x, hr_slice list);
/* At the end of the batch, with no lock held: register and load the lists
 * it wanted kept. */
void tlcache_keep_wanted(rx *x);

#endif
