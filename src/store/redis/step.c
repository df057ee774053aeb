/* redis/step.c — a guard and the ops after it (store.h, hr_zguard) as one
 * call of the step script (redis/scripts.c): Redis runs a script without
 * running anything else, so the guard's test and the writes it guards are
 * one step for every other client, in the one hash slot the script may
 * touch. */
#include <math.h>

#include "store/redis/internal.h"

/* The script's code of an op that may be part of a step, or NULL. */
static const char *step_code(const hr_op *op) {
    switch (op->type) {
    case HR_OP_PUT: return op->expire_at_ms == 0 ? "p" : NULL;
    case HR_OP_ZGUARD: return "g";
    case HR_OP_ZADD: return "a";
    case HR_OP_ZINCR: return "i";
    case HR_OP_ZREM: return "r";
    case HR_OP_ZSCORE: return "s";
    default: return NULL;
    }
}

/* The ops of the step from g on that are to run: the valid ones (an invalid
 * op answers for itself, as outside a step). */
static bool in_step(const hr_op *op) {
    return op->result.rc == HR_OK;
}

size_t redis_step_build(hr_arena *a, hr_batch *b, size_t g, rc_cmd *cmd) {
    unsigned slot = rc_key_slot(b->ops[g].key);
    size_t n = 0;
    bool ok = true;
    for (size_t i = g; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        if (!in_step(op)) continue;
        ok = ok && step_code(op) != NULL && rc_key_slot(op->key) == slot;
        n++;
    }
    if (!ok) { /* store.h: such a step cannot be one script; none of it runs */
        for (size_t i = g; i < b->len; i++)
            if (in_step(&b->ops[i])) b->ops[i].result.rc = HR_EINVAL;
        return 0;
    }
    /* EVALSHA sha numkeys, then n keys and 3 n arguments. */
    args x = args_new(a, 3 + 4 * n);
    memset(cmd, 0, sizeof *cmd);
    cmd->slot = slot;
    arg_script(&x, cmd, RS_STEP, (int)n);
    for (size_t i = g; i < b->len; i++)
        if (in_step(&b->ops[i])) arg_slice(&x, b->ops[i].key);
    for (size_t i = g; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        if (!in_step(op)) continue;
        arg_str(&x, step_code(op));
        arg_slice(&x, op->type == HR_OP_PUT ? op->value : op->member);
        bool no_number = op->type == HR_OP_PUT || op->type == HR_OP_ZREM || op->type == HR_OP_ZSCORE ||
                         (op->type == HR_OP_ZGUARD && isnan(op->score)); /* a guard's NAN: absent */
        if (no_number)
            arg_str(&x, "");
        else
            arg_double(&x, op->score);
    }
    args_to_cmd(&x, cmd);
    return 1;
}

/* Whether an op's three replies (the script's rc, num, score) have the
 * shapes the script gives. */
static bool well_formed(const hr_op *op, redisReply *const *e) {
    if (e[0]->type != REDIS_REPLY_INTEGER || e[1]->type != REDIS_REPLY_INTEGER ||
        e[2]->type != REDIS_REPLY_STRING || e[0]->integer < 0 || e[0]->integer > 3)
        return false;
    double d;
    bool scored = op->type != HR_OP_ZADD && op->type != HR_OP_ZREM && op->type != HR_OP_PUT;
    return e[0]->integer != 0 || !scored || reply_double(e[2], &d);
}

/* A well-formed op's replies into its result. */
static void decode_one(hr_op *op, redisReply *const *e, size_t i, const rc_cmd *cmd, hr_err *failure) {
    hr_result *res = &op->result;
    res->num = e[1]->integer;
    switch (e[0]->integer) {
    case 0:
        res->rc = HR_OK;
        if (op->type != HR_OP_ZADD && op->type != HR_OP_ZREM && op->type != HR_OP_PUT)
            reply_double(e[2], &res->score);
        break;
    case 1: res->rc = HR_ENOTFOUND; break;
    case 2: res->rc = HR_ECONFLICT; break;
    default:
        if (strncmp(e[2]->str, "WRONGTYPE", 9) == 0) {
            res->rc = HR_EWRONGTYPE;
        } else {
            res->rc = HR_EIO;
            if (failure->code == HR_OK)
                hr_err_set(failure, HR_EIO, "redis %s: op #%zu (%s): %s", cmd->node, i, hr_op_label(op->type),
                           e[2]->str);
        }
    }
}

void redis_step_decode(hr_batch *b, size_t g, const rc_cmd *cmd, hr_err *failure) {
    size_t n = 0;
    for (size_t i = g; i < b->len; i++)
        n += in_step(&b->ops[i]);
    const redisReply *r = cmd->reply;
    bool ok = cmd->rc == HR_OK && r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 * n;
    for (size_t i = g, k = 0; i < b->len && ok; i++)
        if (in_step(&b->ops[i])) ok = well_formed(&b->ops[i], &r->element[3 * k++]);
    if (ok) {
        for (size_t i = g, k = 0; i < b->len; i++)
            if (in_step(&b->ops[i])) decode_one(&b->ops[i], &r->element[3 * k++], i, cmd, failure);
        return;
    }
    /* The call failed as a whole (cmd->rc), or answered what the script
     * does not: the step's ops share the failure. */
    int rc = cmd->rc != HR_OK ? cmd->rc : HR_EIO;
    if (rc == HR_EIO && failure->code == HR_OK) {
        const char *why = r && r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply";
        hr_err_set(failure, HR_EIO, "redis %s: op #%zu (zguard step): %s", cmd->node, g, why);
    }
    for (size_t i = g; i < b->len; i++)
        if (in_step(&b->ops[i])) b->ops[i].result.rc = rc;
}
