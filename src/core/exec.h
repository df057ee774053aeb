/* exec.h — running a store batch from domain code, where any failed op fails
 * the request.
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

#endif
