/* redis/internal.h — what redis/redis.c, redis/timelist.c and redis/queue.c share:
 * building command argument vectors in a scratch arena, the companion keys
 * of a key, and the per-type command builders and reply decoders. Nothing
 * outside src/store/redis*.c includes it. */
#ifndef HR_REDIS_INTERNAL_H
#define HR_REDIS_INTERNAL_H

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "store/backend.h"
#include "store/redis/cluster.h"
#include "store/redis/scripts.h"

/* The most arguments one op's command takes (the zrange script: EVALSHA,
 * sha, numkeys, 1 key, 8 arguments); build_pset_read and redis/step.c size
 * their own. */
#define MAX_ARGS 12
/* The most commands one op sends (hr_tladd: ZADD and two PEXPIREAT). */
#define MAX_CMDS_PER_OP 3

/* The argument vector of one command, in the run's scratch arena. */
typedef struct args {
    hr_arena *a;
    const char **v;
    size_t *len;
    int n, cap;
} args;

static inline void arg(args *x, const char *p, size_t n) {
    assert(x->n < x->cap && "an op's command has more than MAX_ARGS arguments");
    x->v[x->n] = p ? p : "";
    x->len[x->n] = n;
    x->n++;
}
static inline void arg_str(args *x, const char *s) {
    arg(x, s, strlen(s));
}
static inline void arg_slice(args *x, hr_slice s) {
    arg(x, s.ptr, s.len);
}

/* Text of at most 63 bytes, formatted into a. */
static inline hr_slice fmt_slice(hr_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline hr_slice fmt_slice(hr_arena *a, const char *fmt, ...) {
    char buf[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return hr_slice_of(hr_arena_strndup(a, buf, (size_t)n), (size_t)n);
}
#define arg_fmt(x, ...) arg_slice((x), fmt_slice((x)->a, __VA_ARGS__))
static inline void arg_i64(args *x, int64_t v) {
    arg_fmt(x, "%" PRId64, v);
}
/* %.17g prints every double so that strtod (Redis' parser) reads back the
 * same one; infinities print as "inf" / "-inf", which Redis accepts. */
#define DOUBLE_FMT "%.17g"
static inline void arg_double(args *x, double d) {
    arg_fmt(x, DOUBLE_FMT, d);
}

/* EVALSHA sha numkeys: the caller adds the keys and arguments after. */
static inline void arg_script(args *x, rc_cmd *cmd, rs_id id, int numkeys) {
    const rs_script *sc = rs_script_get(id);
    arg_str(x, "EVALSHA");
    arg(x, sc->sha, 40);
    arg_i64(x, numkeys);
    cmd->script = sc->body;
}

/* A range read of the sorted set at key (hr_zrange and hr_tlrange), by
 * score from min to max (formatted for Redis, both inclusive), descending
 * if reverse; from a (score, member) cursor, exclusive, if one is given;
 * skipping offset entries, at most limit. decode_range (redis/redis.c) reads the
 * answer of either form:
 *   - without a cursor, the common read (a first page), one native command:
 *     ZRANGE key min max BYSCORE LIMIT offset limit+1 WITHSCORES (max first
 *     and REV if reverse); the extra entry only says whether there are more;
 *   - with one, the zrange script (redis/scripts.c), which finds the rank
 *     where the cursor would be: ZRANGE cannot start at a member.
 * The script costs Redis several times the CPU of the ZRANGE it runs
 * (INFO commandstats under home timeline pages, whose first pages are two
 * such reads), so first pages go without it. */
typedef struct range_args {
    bool reverse;
    hr_slice min, max;
    bool has_cursor;
    hr_slice cursor_score, cursor_member;
    size_t offset, limit;
} range_args;

static inline void arg_range(args *x, rc_cmd *cmd, hr_slice key, const range_args *r) {
    if (!r->has_cursor) {
        arg_str(x, "ZRANGE");
        arg_slice(x, key);
        arg_slice(x, r->reverse ? r->max : r->min);
        arg_slice(x, r->reverse ? r->min : r->max);
        arg_str(x, "BYSCORE");
        if (r->reverse) arg_str(x, "REV");
        arg_str(x, "LIMIT");
        arg_fmt(x, "%zu", r->offset);
        arg_fmt(x, "%zu", r->limit + 1);
        arg_str(x, "WITHSCORES");
        return;
    }
    /* KEYS: key. ARGV: reverse, min, max, has_cursor, cursor_score,
     * cursor_member, offset, limit. */
    arg_script(x, cmd, RS_ZRANGE, 1);
    arg_slice(x, key);
    arg_str(x, r->reverse ? "1" : "0");
    arg_slice(x, r->min);
    arg_slice(x, r->max);
    arg_str(x, "1");
    arg_slice(x, r->cursor_score);
    arg_slice(x, r->cursor_member);
    arg_fmt(x, "%zu", r->offset);
    arg_fmt(x, "%zu", r->limit);
}

/* The prefix P of the companion keys of K (a distinct counter's sub-keys, a
 * packed set's members, a time list, a queue): K itself when K has a hash
 * tag, else "{" tag "}" K with a tag of K's slot (see redis/redis.c). */
static inline hr_slice slot_prefix(hr_arena *a, hr_slice key, unsigned slot) {
    if (hr_key_hash_part(key).len < key.len) return key;
    const char *tag = rc_slot_tag(slot);
    size_t tag_len = strlen(tag), len = tag_len + 2 + key.len;
    char *p = hr_arena_alloc(a, len);
    p[0] = '{';
    memcpy(p + 1, tag, tag_len);
    p[1 + tag_len] = '}';
    memcpy(p + 2 + tag_len, key.ptr, key.len);
    return hr_slice_of(p, len);
}

/* P "\0" tag: a companion key of K, in K's slot. Tags: 'e' a distinct
 * counter's exact set or a packed set's members, 't' a time list, 'q' a
 * queue's stream. */
static inline hr_slice sub_key(hr_arena *a, hr_slice prefix, char tag) {
    char *e = hr_arena_alloc(a, prefix.len + 2);
    memcpy(e, prefix.ptr, prefix.len);
    e[prefix.len] = '\0';
    e[prefix.len + 1] = tag;
    return hr_slice_of(e, prefix.len + 2);
}

static inline args args_new(hr_arena *a, size_t cap) {
    args x = {a, hr_arena_alloc(a, cap * sizeof(char *)), hr_arena_alloc(a, cap * sizeof(size_t)), 0,
              (int)cap};
    return x;
}

static inline void args_to_cmd(const args *x, rc_cmd *cmd) {
    cmd->argc = x->n;
    cmd->argv = x->v;
    cmd->argvlen = x->len;
}

/* Time lists (redis/timelist.c): the commands of a TL op at cmd[0..), how many
 * (0 when there is nothing to send; the op's result stays empty). now_ms is
 * the batch's clock. */
size_t redis_tl_build(hr_arena *a, const hr_op *op, int64_t now_ms, rc_cmd *cmd);

/* Queues (redis/queue.c): the commands of a Q op at cmd[0..), how many (0:
 * nothing to send, the result stays empty); and the op's result from their
 * replies (none is an error reply), false when a reply has the wrong
 * shape. */
size_t redis_queue_build(hr_arena *a, const hr_op *op, rc_cmd *cmd);
bool redis_queue_decode(hr_batch *b, hr_op *op, const rc_cmd *cmd, size_t n);

/* A double from a bulk-string reply (a score), all of it read. */
static inline bool reply_double(const redisReply *r, double *out) {
    if (r->type != REDIS_REPLY_STRING || r->len == 0) return false;
    char *end;
    *out = strtod(r->str, &end);
    return end == r->str + r->len;
}

/* A guard and the ops after it (redis/step.c): the step script's call at
 * cmd, for ops[g..) of b, returning 1; or 0 when those ops cannot be one
 * script (store.h says which can), after giving each of them HR_EINVAL.
 * Then every op of the step's result from the call's answer (failure:
 * the first store failure, as redis/redis.c's decode fills it). */
size_t redis_step_build(hr_arena *a, hr_batch *b, size_t g, rc_cmd *cmd);
void redis_step_decode(hr_batch *b, size_t g, const rc_cmd *cmd, hr_err *failure);

#endif
