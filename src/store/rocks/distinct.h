/* distinct.h — distinct counters (distinct.c): exact sets with per-member
 * expiry up to a limit, then HyperLogLog sketches in time buckets. */
#ifndef HR_ROCKS_DISTINCT_H
#define HR_ROCKS_DISTINCT_H

#include "store/rocks/engine.h"

/* Each op runs one op of the batch, sets its result (memory in
 * x->b->arena) and returns 0, or a store failure (HR_EIO) that aborts the
 * batch. */
int op_dadd(rx *x, hr_op *op);
int op_dcount(rx *x, hr_op *op);

/* The sub-keys distinct ops read, for the prefetch of rocks.c: appends to
 * cfs/keys (keys in x->mem) what op will read given its key's metadata m. */
void distinct_plan(rx *x, const hr_op *op, const rmeta *m, int *cfs, hr_slice *keys, size_t *n);

#endif
