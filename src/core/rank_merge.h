/* rank_merge.h — a ranking kept in several sorted sets, read in one order.
 *
 * The stories' rankings are split into shards (core/stories.h says why).
 * A reader wants the whole ranking's order: score descending, ties by
 * member descending, which is what a reverse hr_zrange gives within one
 * shard. A merge reads every shard in the same batch, window by window, each
 * shard from its own cursor, and gives out the entries whose place is
 * certain: those ranked at or before the frontier, the first-ranked of the
 * last entries read from the shards that have more (any entry a shard has
 * not read yet ranks after its last one read, so after the frontier).
 * Entries read past the frontier wait for the next window; none is read
 * twice, nor copied (they stay in the batches' answers).
 *
 * A window's entries are all ranked after the previous window's, but come
 * out in no particular order among themselves: putting 1 000 entries of 8
 * shards in order costs 8 comparisons each, and a reader that filters them
 * (unseen: most of the top is seen) puts in order only the few it keeps
 * (hr_rank_first). Deciding what is certain costs one comparison an entry.
 *
 * Use: plan a window into a batch (with any other ops), run the batch, take
 * what the window made certain; repeat while hr_rank_merge_more. Cost per
 * window: one hr_zrange per shard that has more to read and fewer waiting
 * entries than its share of the window. */
#ifndef HR_RANK_MERGE_H
#define HR_RANK_MERGE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "common/slice.h"
#include "store/store.h"

typedef struct hr_rank_merge hr_rank_merge;

/* A merge of the n shards named by keys (copied), read in reverse order
 * from where start says: its score bounds and its cursor (strictly after
 * it) apply to every shard; its limit and direction are ignored. */
hr_rank_merge *hr_rank_merge_new(const hr_slice *keys, size_t n, const hr_zrange_spec *start);
void hr_rank_merge_free(hr_rank_merge *m);

/* Add to b the reads of a window of about want entries in all. */
void hr_rank_merge_plan(hr_rank_merge *m, hr_batch *b, size_t want);

/* After b ran: fold in what its reads answered, then set *out to the
 * entries now certain (*n of them, in no particular order) and *last to the
 * last-ranked of them (when *n > 0). The entries point into the batches'
 * answers: keep every batch given to take, neither reset nor freed, until
 * the merge is freed. HR_OK, or a read's store error with err filled. */
int hr_rank_merge_take(hr_rank_merge *m, const hr_batch *b, const hr_zentry **out, size_t *n, hr_zentry *last,
                       hr_err *err);

/* Whether entries lie past the last one taken. */
bool hr_rank_merge_more(const hr_rank_merge *m);

/* Whether x ranks before y: a higher score, or the same and a member after
 * it in memcmp order. */
bool hr_rank_before(const hr_zentry *x, const hr_zentry *y);

/* Reorder the n entries of e (pointers to them) so that e[0..k) holds the
 * k first-ranked in the ranking's order (all n when k >= n) and the rest
 * follow in no particular order. Cost: n comparisons plus one insertion per
 * entry that enters the first k on the way. */
void hr_rank_first(const hr_zentry **e, size_t n, size_t k);

#endif
