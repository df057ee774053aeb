/* values.h — values, counters and expiry (values.c). */
#ifndef HR_ROCKS_VALUES_H
#define HR_ROCKS_VALUES_H

#include "store/rocks/engine.h"

/* Each op runs one op of the batch, sets its result (memory in
 * x->b->arena) and returns 0, or a store failure (HR_EIO) that aborts the
 * batch. */
int op_get(rx *x, hr_op *op);
int op_put(rx *x, hr_op *op);
int op_del(rx *x, hr_op *op);
int op_put_if_missing(rx *x, hr_op *op);
int op_del_if_equal(rx *x, hr_op *op);
int op_expire(rx *x, hr_op *op);
int op_incr(rx *x, hr_op *op);
int op_counter_get(rx *x, hr_op *op);

#endif
