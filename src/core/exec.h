/* exec.h — running a store batch from domain code, where any failed op fails
 * the request, and the one write path of a change made of several writes.
 *
 * hr_store_exec reports store failures; an op may still answer HR_EWRONGTYPE
 * (a key of another type: data corruption from the domain's point of view)
 * while the batch "ran". Domain modules want one answer: did every op run?
 * HR_ENOTFOUND is an answer, not a failure. */
#ifndef HR_CORE_EXEC_H
#define HR_CORE_EXEC_H

#include "common/err.h"
#include "store/store.h"

/* Run b; then the first op whose rc is neither HR_OK nor HR_ENOTFOUND fails
 * the call with its code and err naming `what` and the op's index. */
int hr_core_exec(hr_store *s, hr_batch *b, unsigned flags, const char *what, hr_err *err);

/* Write a change whose last write is the one that makes it visible to
 * readers and retries (an activity's body, a story's record, a job): b's
 * writes, then the ops `last` adds to the batch it is given (ctx is
 * passed along). Where the store makes every batch atomic, last's ops go
 * into b and the change is one step. Where it does not (Redis Cluster), b
 * runs first and last's ops run in a batch of their own once b is
 * answered: a crash between the two leaves b's writes without the last
 * one, which the next attempt (the client's retry, the fan-out job) finds
 * and completes, so callers make b's writes idempotent. Either way b's
 * results are read from b afterwards, at the indexes its ops returned.
 *
 * A compare-and-set in b that lost (a guard that did not hold, store.h
 * hr_zguard) ends the change there, on every store: last's writes are not
 * made, the call answers HR_ECONFLICT, and the guards' results say what
 * they found, for the caller to decide again. */
int hr_core_write_last(hr_store *s, hr_batch *b, void (*last)(hr_batch *, void *), void *ctx,
                       const char *what, hr_err *err);

#endif
