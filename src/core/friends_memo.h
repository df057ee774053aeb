/* friends_memo.h — users' friend lists, with their index, kept between
 * friends-reads calls while the store's copy they point into is unchanged.
 *
 * WHY. A friends-reads of a user with 5,000 friends over long-tail URLs
 * read the friend list from the store's cache, decoded its 5,000 entries
 * into the batch, and hashed each into a friend index, on every call: a
 * large part of the call, for a list that changes only when a friendship
 * does. The RocksDB store answers a whole set from its cache with an
 * origin (store.h, hr_result.origin): the same origin, kept alive, means
 * the same set, and a read given it as spec.unless answers "unchanged"
 * without decoding anything. So the memo keeps, per user, that origin, the
 * ids (pointing into it) and the index; a call asks the store whether the
 * set is still that one, and reuses them.
 * A friendship change writes the set, the store's cache drops its copy,
 * and the next read answers the new list (a new origin). Redis gives no
 * origins: nothing is kept, every call reads the list.
 *
 * MEMORY. A fixed number of slots (by the user id's hash; a newer list
 * replaces the one in its slot) and a budget in bytes over all entries
 * (ids, index and the kept set): a list that would pass it is not kept.
 *
 * THREADS. Entries are immutable once kept and counted by reference: a
 * call holds the entry it uses until hr_fmemo_done, even if another call
 * replaces it meanwhile. One mutex guards the slots. */
#ifndef HR_FRIENDS_MEMO_H
#define HR_FRIENDS_MEMO_H

#include <stddef.h>

#include "common/slice.h"
#include "core/reading_plan.h"
#include "store/store.h"

typedef struct hr_fmemo hr_fmemo;

typedef struct hr_fmemo_entry {
    const hr_origin *origin; /* the store's set the ids point into */
    const hr_slice *ids;     /* the friends, newest first */
    size_t n;
    hr_rplan_friends index; /* over ids */
} hr_fmemo_entry;

hr_fmemo *hr_fmemo_new(hr_store *store, size_t slots, size_t budget);
/* Release every entry (none may be in use). */
void hr_fmemo_free(hr_fmemo *m);
/* uid's entry, held until hr_fmemo_done; NULL if none. */
const hr_fmemo_entry *hr_fmemo_get(hr_fmemo *m, hr_slice uid);
/* Keep uid's friends ids[0..n), read by res (a range read of the whole
 * set, which points into res->origin): returns the new entry, held until
 * hr_fmemo_done, or NULL when res has no origin or the entry would pass the
 * budget. */
const hr_fmemo_entry *hr_fmemo_put(hr_fmemo *m, hr_slice uid, const hr_result *res, const hr_slice *ids,
                                   size_t n);
void hr_fmemo_done(hr_fmemo *m, const hr_fmemo_entry *e);
/* Entries kept, and their bytes (tests). */
size_t hr_fmemo_count(hr_fmemo *m, size_t *bytes);

#endif
