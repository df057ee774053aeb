/* lease.h — a lock on one thing that every herald process sharing a store
 * respects.
 *
 * WHY. A core module serialises the read-modify-write of one thing (a
 * subject's rating of a story, core/ratings.c) with an in-process striped
 * mutex. That is exact on RocksDB, which one process owns. Several herald
 * servers on one Redis Cluster each have their own mutexes, so the store
 * itself must arbitrate between them: a lease is a key that its taker writes
 * with hr_put_if_missing (a token unique to this take, and an expiry) and
 * that only the same taker deletes, with hr_del_if_equal.
 *
 * EXPIRY. A lease expires HR_LEASE_MS after it was taken, so a server killed
 * while it holds one stops that one thing for at most that long. A holder
 * must be done well within it (an upsert is a few round trips); one stalled
 * longer (a Redis failover) can find another server working on the same
 * thing.
 *
 * WAITING. A taker that finds the lease held waits (1 ms, doubling up to
 * 16 ms) and tries again, until its wait budget is spent: then HR_ECONFLICT,
 * which the API answers 409. The default budget outlasts a lease, so only a
 * thing that other servers keep taking for that long (a storm of writes of
 * one rating) gets the 409.
 *
 * COST. Taking it is one op, which the caller puts into the batch of its
 * first reads (in the same hash slot when its key shares their hash tag);
 * dropping it is one batch, or one op in the batch of the caller's last
 * writes when they share its slot. A caller on a store that one process owns
 * (hr_store_caps shared false) needs none of this. */
#ifndef HR_LEASE_H
#define HR_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/slice.h"
#include "store/store.h"

#define HR_LEASE_MS 2000 /* a lease's life */
/* How long a taker waits for a held lease by default: past a lease's life,
 * so that one left by a killed server delays a write but never fails it. */
#define HR_LEASE_WAIT_MS 2500
#define HR_LEASE_TOKEN_LEN 32 /* hex of 16 random bytes */

typedef struct hr_lease {
    char token[HR_LEASE_TOKEN_LEN + 1];
    int64_t give_up_ms; /* the wait budget's end */
    int64_t pause_us;   /* the next wait */
    bool held;
} hr_lease;

/* A lease not yet taken, with a fresh token and wait_ms to wait for it. */
void hr_lease_init(hr_lease *l, int64_t wait_ms);

/* Add the take of the lease named key to batch b; returns the op's index. */
size_t hr_lease_take_op(hr_lease *l, hr_batch *b, hr_slice key);

/* After that batch ran: HR_OK with *again false when the lease is now
 * held; HR_OK with *again true when another holder has it (after a pause:
 * run the batch again); HR_ECONFLICT with err filled once the wait budget
 * is spent; or the op's own failure. `what` names the thing in errors. */
int hr_lease_taken(hr_lease *l, const hr_batch *b, size_t op, const char *what, bool *again, hr_err *err);

/* Take the lease named key in a batch of its own, waiting while another
 * holder has it: HR_OK (held), HR_ECONFLICT once the wait is over, or a
 * store failure. For a caller whose first reads are not all in the lease's
 * hash slot: those must run after the take, not beside it. */
int hr_lease_take(hr_lease *l, hr_store *s, hr_slice key, const char *what, hr_err *err);

/* Give the lease back if held (one batch; if that fails the lease expires). */
void hr_lease_drop(hr_lease *l, hr_store *s, hr_slice key);

/* Add the return of the held lease named key to batch b, for a caller whose
 * last writes share its hash slot (they run in order before it); returns
 * the op's index. The lease is no longer held. */
size_t hr_lease_drop_op(hr_lease *l, hr_batch *b, hr_slice key);

#endif
