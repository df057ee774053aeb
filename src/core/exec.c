/* exec.c — see exec.h. */
#include "core/exec.h"

int hr_core_exec(hr_store *s, hr_batch *b, unsigned flags, const char *what, hr_err *err) {
    int rc = hr_store_exec(s, b, flags, err);
    if (rc != HR_OK) return rc;
    for (size_t i = 0; i < hr_batch_len(b); i++) {
        int op_rc = hr_batch_result(b, i)->rc;
        if (op_rc != HR_OK && op_rc != HR_ENOTFOUND)
            return hr_err_set(err, op_rc, "%s: operation %zu: %s", what, i, hr_strerror(op_rc));
    }
    return HR_OK;
}

int hr_core_write_last(hr_store *s, hr_batch *b, void (*last)(hr_batch *, void *), void *ctx,
                       const char *what, hr_err *err) {
    if (hr_store_caps_of(s)->atomic_batches) {
        last(b, ctx);
        return hr_core_exec(s, b, 0, what, err);
    }
    int rc = hr_batch_len(b) ? hr_core_exec(s, b, 0, what, err) : HR_OK;
    if (rc != HR_OK) return rc;
    hr_batch *then = hr_batch_new();
    last(then, ctx);
    rc = hr_core_exec(s, then, 0, what, err);
    hr_batch_free(then);
    return rc;
}
