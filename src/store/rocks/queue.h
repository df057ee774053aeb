/* queue.h — durable work queues (queue.c: their own column family; leases
 * in memory). */
#ifndef HR_ROCKS_QUEUE_H
#define HR_ROCKS_QUEUE_H

#include "store/rocks/engine.h"

typedef struct rqueues rqueues;
rqueues *queues_new(void);
void queues_free(rqueues *qs); /* NULL is a no-op */

int op_qpush(rx *x, hr_op *op);
int op_qclaim(rx *x, hr_op *op);
int op_qack(rx *x, hr_op *op);
int op_qinfo(rx *x, hr_op *op);
/* The job an hr_qack reads, appended to p for the prefetch. */
void queue_plan(rx *x, const hr_op *op, rplan *p);
/* After the commit (committed) or a failed batch: apply the batch's changes
 * to the queues' in-memory state. */
void queue_finish(rx *x, bool committed);
/* A job's key (exposed for the tests). */
void queue_job_key(hr_buf *out, hr_slice queue, uint64_t seq);

#endif
