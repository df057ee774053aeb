/* values.c — values, counters and expiry on RocksDB: a key's whole state
 * lives in its metadata record (codec.h), read through the batch's view.
 *
 * The rules every op of this backend follows:
 *
 *   - an expired record is a missing key (its sub-keys are garbage the
 *     compaction filter collects, because the next collection under the same
 *     key gets a new version);
 *   - an op on a live key of another type answers HR_EWRONGTYPE and writes
 *     nothing;
 *   - a collection's size in its metadata is exact (the engine's stripe lock
 *     is held across every read-modify-write), and a collection whose size
 *     drops to 0 is deleted.
 *
 * Results are allocated in the batch's arena (x->b->arena).
 */
#include <string.h>

#include "store/rocks/values.h"

/* Values -------------------------------------------------------------------- */

int op_get(rx *x, hr_op *op) {
    rmeta m;
    int rc = rx_meta(x, op->key, &m);
    if (rc) return rc;
    if (!meta_alive(&m, x->now))
        op->result.rc = HR_ENOTFOUND;
    else if (m.type != T_STRING)
        op->result.rc = HR_EWRONGTYPE;
    else
        op->result.value = hr_arena_copy(&x->b->arena, m.value);
    return 0;
}

int op_put(rx *x, hr_op *op) {
    /* Whatever the key held is replaced by one metadata write; a collection's
     * sub-keys are orphaned with their version. */
    rmeta m = {.type = T_STRING, .expire_at = op->expire_at_ms, .value = op->value};
    rx_put_meta(x, op->key, &m);
    return 0;
}

int op_del(rx *x, hr_op *op) {
    rmeta m;
    int rc = rx_meta(x, op->key, &m);
    if (rc) return rc;
    if (m.type != T_NONE) rx_del(x, CF_META, op->key); /* expired records too: less for compaction */
    op->result.num = meta_alive(&m, x->now);
    return 0;
}

int op_put_if_missing(rx *x, hr_op *op) {
    rmeta m;
    int rc = rx_meta(x, op->key, &m);
    if (rc) return rc;
    op->result.num = !meta_alive(&m, x->now);
    return op->result.num ? op_put(x, op) : 0;
}

int op_del_if_equal(rx *x, hr_op *op) {
    rmeta m;
    int rc = rx_meta(x, op->key, &m);
    if (rc) return rc;
    if (!meta_alive(&m, x->now)) return 0;
    if (m.type != T_STRING) {
        op->result.rc = HR_EWRONGTYPE;
        return 0;
    }
    op->result.num = hr_slice_eq(m.value, op->value);
    if (op->result.num) rx_del(x, CF_META, op->key);
    return 0;
}

int op_expire(rx *x, hr_op *op) {
    rmeta m;
    int rc = rx_meta(x, op->key, &m);
    if (rc) return rc;
    if (!meta_alive(&m, x->now)) {
        op->result.num = 0;
        return 0;
    }
    op->result.num = 1;
    if (op->expire_at_ms != 0 && op->expire_at_ms < x->now) {
        rx_del(x, CF_META, op->key); /* already past: gone now */
        return 0;
    }
    m.expire_at = op->expire_at_ms;
    rx_put_meta(x, op->key, &m);
    return 0;
}

/* Counters -------------------------------------------------------------------
 *
 * The value lives in the counter's metadata record. hr_incr must answer the
 * new value, so it reads the old one anyway, under the stripe lock; writing
 * the sum as a Put then costs no more than writing a merge operand and keeps
 * reads of a hot counter at one record instead of a chain of operands (the
 * slow case DESIGN.md measured). */

int op_incr(rx *x, hr_op *op) {
    rmeta m;
    int rc = rx_meta(x, op->key, &m);
    if (rc) return rc;
    if (!meta_alive(&m, x->now)) {
        memset(&m, 0, sizeof m);
        m.type = T_COUNTER;
    } else if (m.type != T_COUNTER) {
        op->result.rc = HR_EWRONGTYPE;
        return 0;
    }
    int64_t v;
    if (__builtin_add_overflow(m.counter, op->delta, &v)) {
        op->result.rc = HR_EINVAL; /* as redis: "increment would overflow" */
        return 0;
    }
    m.counter = v;
    rx_put_meta(x, op->key, &m);
    op->result.num = v;
    return 0;
}

int op_counter_get(rx *x, hr_op *op) {
    rmeta m;
    int rc = rx_meta(x, op->key, &m);
    if (rc) return rc;
    if (!meta_alive(&m, x->now))
        op->result.num = 0;
    else if (m.type != T_COUNTER)
        op->result.rc = HR_EWRONGTYPE;
    else
        op->result.num = m.counter;
    return 0;
}
