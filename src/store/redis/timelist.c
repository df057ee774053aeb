/* redis/timelist.c — time lists (hr_tl*) on Redis Cluster.
 *
 * A time list at K is a sorted set at T = P "\0t" (P: K's slot prefix, see
 * redis/redis.c), so that it lives in its own key space (store.h) and in K's
 * slot: score = time_ms, member = member. Redis orders members of one score
 * by memcmp, so ZRANGE ... REV gives store.h's newest-first order (time
 * desc, member desc) as it is.
 *
 *   hr_tladd    ZADD T time member
 *               PEXPIREAT T at NX     (a new list: it gets an expiry at once)
 *               PEXPIREAT T at GT     (the list lives as long as its
 *                                     latest-expiring entry)
 *               at = expire_at_ms, or FAR for an entry that never expires,
 *               so that every list has an expiry and "no expiry" can only
 *               mean "created by a ZADD whose PEXPIREAT has not run yet";
 *               three commands, pipelined with the rest of the batch
 *   hr_tlrem    ZREM T member (a member has one time here: store.h)
 *   hr_tlrange  ZRANGE ... BYSCORE REV, or from a cursor the zrange
 *               script (arg_range, redis/internal.h), the bounds made
 *               inclusive (time < before is time <= before - 1: times are
 *               integers)
 *   hr_tltrim   the tltrim script: ZREMRANGEBYSCORE for older_than, then
 *               ZREMRANGEBYRANK keeps the `keep` highest ranks, atomically
 *
 * An entry whose expiry has already passed is not added at all: Redis cannot
 * hide it from reads, and on RocksDB reads skip it, so leaving it out is the
 * closest match. Per-entry expiry is not kept (store.h): it would cost a
 * second structure per list and a script per add. */
#include <math.h>

#include "store/redis/internal.h"

/* From this time on (the year 33658) an expiry means "never". */
#define FAR_MS INT64_C(1000000000000000)

size_t redis_tl_build(hr_arena *a, const hr_op *op, int64_t now_ms, rc_cmd *cmd) {
    unsigned slot = rc_key_slot(op->key);
    hr_slice t = sub_key(a, slot_prefix(a, op->key, slot), 't');
    args x = args_new(a, MAX_ARGS);
    memset(cmd, 0, sizeof *cmd);
    cmd->slot = slot;
    switch (op->type) {
    case HR_OP_TLADD: {
        if (op->expire_at_ms != 0 && op->expire_at_ms <= now_ms) return 0;
        int64_t at = op->expire_at_ms ? op->expire_at_ms : FAR_MS;
        arg_str(&x, "ZADD");
        arg_slice(&x, t);
        arg_i64(&x, op->time_ms);
        arg_slice(&x, op->member);
        args_to_cmd(&x, cmd);
        for (int k = 1; k <= 2; k++) {
            memset(&cmd[k], 0, sizeof cmd[k]);
            cmd[k].slot = slot;
            x = args_new(a, 4);
            arg_str(&x, "PEXPIREAT");
            arg_slice(&x, t);
            arg_i64(&x, at);
            arg_str(&x, k == 1 ? "NX" : "GT");
            args_to_cmd(&x, &cmd[k]);
        }
        return 3;
    }
    case HR_OP_TLREM:
        arg_str(&x, "ZREM");
        arg_slice(&x, t);
        arg_slice(&x, op->member);
        break;
    case HR_OP_TLRANGE: {
        const hr_tlrange_spec *r = &op->tlrange;
        if (r->before_ms == INT64_MIN || r->after_ms == INT64_MAX) return 0; /* nothing can match */
        /* Inclusive bounds: times are integers, so time < before is
         * time <= before - 1. */
        range_args ra = {
            .reverse = true, .has_cursor = r->has_cursor, .offset = r->offset, .limit = r->limit};
        ra.min =
            r->after_ms == INT64_MIN ? hr_slice_of("-inf", 4) : fmt_slice(a, "%" PRId64, r->after_ms + 1);
        ra.max =
            r->before_ms == INT64_MAX ? hr_slice_of("inf", 3) : fmt_slice(a, "%" PRId64, r->before_ms - 1);
        if (r->has_cursor) {
            ra.cursor_score = fmt_slice(a, "%" PRId64, r->cursor_time);
            ra.cursor_member = r->cursor_member;
        }
        arg_range(&x, cmd, t, &ra);
        break;
    }
    case HR_OP_TLTRIM: {
        /* KEYS: T. ARGV: the last rank to remove (keeping the `keep`
         * highest), older_than_ms or "" for none. */
        long long keep = op->keep > (size_t)INT64_MAX / 2 ? INT64_MAX / 2 : (long long)op->keep;
        arg_script(&x, cmd, RS_TLTRIM, 1);
        arg_slice(&x, t);
        arg_fmt(&x, "%lld", -(keep + 1));
        if (op->time_ms == INT64_MIN)
            arg_str(&x, "");
        else
            arg_i64(&x, op->time_ms);
        break;
    }
    default: return 0;
    }
    args_to_cmd(&x, cmd);
    return 1;
}
