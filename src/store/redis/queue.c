/* redis/queue.c — durable work queues (hr_q*) on Redis Cluster.
 *
 * A queue at K is a stream at Q = P "\0q" (P: K's slot prefix, see redis/redis.c):
 * its own key space, in K's slot. A job is an entry {"p": payload}; its id
 * is the stream id "ms-seq", so the push time is the id's ms part (the
 * server's clock). Leases are the consumer group "herald" (created by the
 * first claim, from id 0, so that it sees every job pushed before):
 *
 *   hr_qpush   XADD Q * p payload                    -> the id
 *   hr_qclaim  the qclaim script: XAUTOCLAIM of pending jobs idle for
 *              lease_ms (re-delivery, with the delivery count XPENDING
 *              reads), then XREADGROUP ... > for new ones, in one atomic
 *              call, oldest first
 *   hr_qack    XACK Q herald id, then XDEL Q id       -> XDEL's count: 1 if
 *              the job was still in the queue
 *   hr_qinfo   XLEN Q, then XRANGE Q - + COUNT 1      -> depth, push time of
 *              the oldest job
 *
 * Acked jobs are deleted, so XLEN is the depth and the first entry the
 * oldest job. An id that is not a stream id is acked without asking Redis
 * (Redis would answer with an error): num 0, as for an unknown job.
 *
 * Consumers stay in the group once seen (Redis creates them on first use);
 * each is a few dozen bytes, and workers reuse their names. */
#include <errno.h>
#include <stdlib.h>

#include "store/redis/internal.h"

#define GROUP "herald"

/* "ms-seq", both decimal. */
static bool stream_id(hr_slice id, int64_t *ms) {
    const char *dash = memchr(id.ptr, '-', id.len);
    if (dash == NULL || dash == id.ptr || dash == id.ptr + id.len - 1) return false;
    for (const char *p = id.ptr; p < id.ptr + id.len; p++)
        if (p != dash && (*p < '0' || *p > '9')) return false;
    if (ms) {
        errno = 0;
        unsigned long long v = strtoull(id.ptr, NULL, 10);
        if (errno || v > INT64_MAX) return false;
        *ms = (int64_t)v;
    }
    return true;
}

size_t redis_queue_build(hr_arena *a, const hr_op *op, rc_cmd *cmd) {
    unsigned slot = rc_key_slot(op->key);
    hr_slice q = sub_key(a, slot_prefix(a, op->key, slot), 'q');
    args x = args_new(a, MAX_ARGS);
    memset(cmd, 0, 2 * sizeof *cmd);
    cmd[0].slot = cmd[1].slot = slot;
    switch (op->type) {
    case HR_OP_QPUSH:
        arg_str(&x, "XADD");
        arg_slice(&x, q);
        arg_str(&x, "*");
        arg_str(&x, "p");
        arg_slice(&x, op->value);
        break;
    case HR_OP_QCLAIM:
        /* KEYS: Q. ARGV: consumer, max, lease_ms. */
        arg_script(&x, cmd, RS_QCLAIM, 1);
        arg_slice(&x, q);
        arg_slice(&x, op->member);
        arg_fmt(&x, "%zu", op->claim_max);
        arg_i64(&x, op->lease_ms);
        break;
    case HR_OP_QACK:
    case HR_OP_QINFO:
        if (op->type == HR_OP_QACK && !stream_id(op->member, NULL)) return 0;
        arg_str(&x, op->type == HR_OP_QACK ? "XACK" : "XLEN");
        arg_slice(&x, q);
        if (op->type == HR_OP_QACK) {
            arg_str(&x, GROUP);
            arg_slice(&x, op->member);
        }
        args_to_cmd(&x, &cmd[0]);
        x = args_new(a, 6);
        arg_str(&x, op->type == HR_OP_QACK ? "XDEL" : "XRANGE");
        arg_slice(&x, q);
        if (op->type == HR_OP_QACK) {
            arg_slice(&x, op->member);
        } else {
            arg_str(&x, "-");
            arg_str(&x, "+");
            arg_str(&x, "COUNT");
            arg_str(&x, "1");
        }
        args_to_cmd(&x, &cmd[1]);
        return 2;
    default: return 0;
    }
    args_to_cmd(&x, cmd);
    return 1;
}

static bool is_str(const redisReply *r) {
    return r->type == REDIS_REPLY_STRING;
}

/* {id1, payload1, deliveries1, ...} from the qclaim script. */
static bool decode_claim(hr_batch *b, hr_result *res, const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 3 != 0) return false;
    size_t n = r->elements / 3;
    res->n_jobs = n;
    res->jobs = n ? hr_arena_alloc(&b->arena, n * sizeof *res->jobs) : NULL;
    for (size_t k = 0; k < n; k++) {
        const redisReply *id = r->element[3 * k], *p = r->element[3 * k + 1], *d = r->element[3 * k + 2];
        hr_job *j = &res->jobs[k];
        if (!is_str(id) || !is_str(p) || d->type != REDIS_REPLY_INTEGER || d->integer < 1) return false;
        j->id = hr_arena_copy(&b->arena, hr_slice_of(id->str, id->len));
        if (!stream_id(j->id, &j->pushed_ms)) return false;
        j->payload = hr_arena_copy(&b->arena, hr_slice_of(p->str, p->len));
        j->deliveries = d->integer > UINT32_MAX ? UINT32_MAX : (uint32_t)d->integer;
    }
    return true;
}

bool redis_queue_decode(hr_batch *b, hr_op *op, const rc_cmd *cmd, size_t n) {
    hr_result *res = &op->result;
    const redisReply *r = cmd[0].reply;
    switch (op->type) {
    case HR_OP_QPUSH:
        if (!is_str(r)) return false;
        res->value = hr_arena_copy(&b->arena, hr_slice_of(r->str, r->len));
        return true;
    case HR_OP_QCLAIM: return decode_claim(b, res, r);
    case HR_OP_QACK: /* XACK, XDEL */
        if (n != 2 || r->type != REDIS_REPLY_INTEGER || cmd[1].reply->type != REDIS_REPLY_INTEGER)
            return false;
        res->num = cmd[1].reply->integer;
        return true;
    case HR_OP_QINFO: { /* XLEN, XRANGE - + COUNT 1 */
        const redisReply *first = cmd[1].reply;
        if (n != 2 || r->type != REDIS_REPLY_INTEGER || first->type != REDIS_REPLY_ARRAY) return false;
        res->num = r->integer;
        res->score = 0;
        if (first->elements == 0) return true;
        const redisReply *e = first->element[0];
        int64_t ms;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 || !is_str(e->element[0]) ||
            !stream_id(hr_slice_of(e->element[0]->str, e->element[0]->len), &ms))
            return false;
        res->score = (double)ms;
        return true;
    }
    default: return false;
    }
}
