/* lease.c — see lease.h. */
#include "core/lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"

#define PAUSE_FIRST_US 1000
#define PAUSE_MAX_US 16000

void hr_lease_init(hr_lease *l, int64_t wait_ms) {
    unsigned char r[HR_LEASE_TOKEN_LEN / 2];
    arc4random_buf(r, sizeof r);
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(l->token + 2 * i, 3, "%02x", r[i]);
    l->give_up_ms = hr_now_ms() + wait_ms;
    l->pause_us = PAUSE_FIRST_US;
    l->held = false;
}

size_t hr_lease_take_op(hr_lease *l, hr_batch *b, hr_slice key) {
    return hr_put_if_missing(b, key, hr_slice_str(l->token), hr_now_ms() + HR_LEASE_MS);
}

int hr_lease_taken(hr_lease *l, const hr_batch *b, size_t op, const char *what, bool *again, hr_err *err) {
    *again = false;
    const hr_result *r = hr_batch_result(b, op);
    if (r->rc != HR_OK) return hr_err_set(err, r->rc, "%s: lease: %s", what, hr_strerror(r->rc));
    if (r->num == 1) {
        l->held = true;
        return HR_OK;
    }
    if (hr_now_ms() >= l->give_up_ms)
        return hr_err_set(err, HR_ECONFLICT, "%s is being written by another server; try again", what);
    struct timespec ts = {.tv_sec = 0, .tv_nsec = l->pause_us * 1000};
    nanosleep(&ts, NULL);
    if (l->pause_us < PAUSE_MAX_US) l->pause_us *= 2;
    *again = true;
    return HR_OK;
}

int hr_lease_take(hr_lease *l, hr_store *s, hr_slice key, const char *what, hr_err *err) {
    hr_batch *b = hr_batch_new();
    int rc = HR_OK;
    for (bool again = true; again;) {
        hr_batch_reset(b);
        size_t op = hr_lease_take_op(l, b, key);
        rc = hr_store_exec(s, b, 0, err);
        if (rc != HR_OK) break;
        rc = hr_lease_taken(l, b, op, what, &again, err);
    }
    hr_batch_free(b);
    return rc;
}

size_t hr_lease_drop_op(hr_lease *l, hr_batch *b, hr_slice key) {
    l->held = false;
    return hr_del_if_equal(b, key, hr_slice_str(l->token));
}

/* Log what went wrong with a return (hr_lease_drop). */
static void dropped(const hr_batch *b, size_t op, int rc, const hr_err *err, hr_slice key) {
    const hr_result *r = rc == HR_OK ? hr_batch_result(b, op) : NULL;
    const char *failed = r == NULL ? err->msg : r->rc != HR_OK ? hr_strerror(r->rc) : NULL;
    if (failed)
        hr_warn("lease %.*s not dropped (%s); it expires in %d ms", (int)key.len, key.ptr, failed,
                HR_LEASE_MS);
    else if (r->num != 1)
        hr_warn("lease %.*s was gone when dropped (held past its %d ms?)", (int)key.len, key.ptr,
                HR_LEASE_MS);
}

void hr_lease_drop(hr_lease *l, hr_store *s, hr_slice key) {
    if (!l->held) return;
    hr_batch *b = hr_batch_new();
    size_t op = hr_lease_drop_op(l, b, key);
    hr_err err = {0};
    int rc = hr_store_exec(s, b, 0, &err);
    dropped(b, op, rc, &err, key);
    hr_batch_free(b);
}
