/* redis/redis.c — the Redis Cluster backend: store ops mapped onto Redis commands
 * and Lua scripts. Routing, pipelining and redirections are
 * redis/cluster.c's; the scripts are in redis/scripts.c.
 *
 * One op is one command (or one script call) on the op's key, so a batch is
 * one pipeline per node (or MULTI ... EXEC with HR_EXEC_ATOMIC) and every op
 * is atomic on its own. The packed-set reads are the exception: two
 * commands in a row (below).
 *
 * Each herald type lives in its own Redis type, chosen so that a native
 * command of one herald type on a key of another fails with WRONGTYPE in
 * Redis itself, as store.h asks, without a script to check:
 *
 *   herald type       Redis type at key K        commands
 *   value             string                     GET, SET [PXAT]
 *   counter           hash {"n": integer}        HINCRBY, HGET
 *   sorted set        zset                       ZADD ZREM ZSCORE ZCARD
 *                                                ZREMRANGEBYSCORE
 *                                                ZREMRANGEBYRANK, ZRANGE
 *                                                (from a cursor: zrange script)
 *   distinct counter  list (metadata), below     dadd, dcount scripts
 *   packed set        set (a marker), below        pset_add, pset_rem scripts,
 *                                                SCARD + ZMSCORE or ZCOUNT
 *   time list         zset at P "\0t"             ZADD + PEXPIREAT NX/GT, ZREM,
 *                                                ZRANGE (or zrange script),
 *                                                tltrim script
 *                                                (redis/timelist.c)
 *   queue             stream at P "\0q"           XADD, qclaim script, XACK +
 *                                                XDEL, XLEN + XRANGE
 *                                                (redis/queue.c)
 *
 * A counter is a hash, not an INCRBY string, so that a value is never
 * mistaken for a counter (INCRBY on the value "12" would succeed). A
 * distinct counter's metadata is a list, and a packed set's marker a set,
 * because no native op of herald uses lists or sets, so GET, HINCRBY or
 * ZADD on them fail with WRONGTYPE; their scripts check K's type in turn.
 * Time lists and queues live in their own key spaces (store.h), so they
 * are kept under companion keys of K (P below) that no other type uses.
 *
 * A distinct counter spans several keys, all in K's hash slot:
 *
 *   K                  list   ["herald:distinct:1", mode, gen, W, lo, hi]
 *   E = P "\0e"        zset   member -> its expiry (last add + ttl), while
 *                             mode is "exact"
 *   P "\0h" gen ":" i  HLL    bucket i, [i*W, (i+1)*W), in "sketch" mode;
 *                             lo..hi are the buckets that may be alive
 *
 * P is K itself when K has a hash tag, else "{" tag "}" K with a tag of K's
 * slot (rc_slot_tag): either way P's keys hash where K does. gen is the
 * server time at creation: if hr_put overwrites a counter, its leftover
 * buckets (which expire on their own) are never read by a later counter of
 * the same key. Every op of a distinct counter is one Lua script, so
 * concurrent adds never double count. hr_del and hr_expire are scripts too,
 * to reach the sub-keys; hr_put over a distinct counter (plain SET) leaves
 * them to expire by themselves, within ttl + W.
 *
 * A packed set keeps its members in E, in K's slot as above:
 *
 *   K   set    {"herald:pset:1"}, or {"herald:pset:1 at=" T} once hr_expire
 *              gave the set the key expiry T
 *   E   zset   member (8 bytes, big-endian, so members sort as numbers)
 *              -> its expire_at_ms, "inf" for 0 (never)
 *
 * A zset, because ZMSCORE answers a test of many members in one command
 * and a member's score is its expiry. K cannot be the zset itself: ZADD on
 * it would then succeed, and a sorted set would pass for a packed set. A
 * member is in the set while now < its score, now being the clock of the
 * herald process when the batch started (hr_now_ms), so that a batch sees
 * one instant.
 *
 * Writes (hr_pset_add, hr_pset_rem) are scripts: they prune the expired
 * members (ZREMRANGEBYSCORE: each is removed once), delete K and E when no
 * member is left, and otherwise give both the key expiry min(T, the latest
 * member expiry), absolute (PEXPIREAT), so that Redis reclaims a set whose
 * members have all expired and the set stops existing then, as store.h
 * asks. hr_expire on a packed set records T in the marker so that later
 * writes keep it.
 *
 * Reads are native, to spare Redis' one thread: a script costs it about
 * 2.3 times the CPU of ZMSCORE itself (the members cross into Lua and the
 * scores back). hr_pset_test sends SCARD K then ZMSCORE E m1 .. mn, and
 * hr_pset_card SCARD K then ZCOUNT E (now +inf, back to back on K's node:
 * SCARD is the type check (WRONGTYPE, 0 for no key, 1 for a packed set),
 * and decode compares the scores with now. Another client's write may run
 * between the two, yet the answer is always the set's state at some instant
 * between them: writes change E alone or delete K and E together, and after
 * hr_put over the set E still holds the members it had just before.
 *
 * hr_put over a packed set (plain SET) leaves E: it goes with its key
 * expiry, if it has one, or when K is next deleted or made a packed set or
 * distinct counter, which delete E first.
 *
 * Expiry of distinct counters: liveness follows the caller's now_ms (the
 * members' scores, the bucket indexes), as the contract says; Redis' own
 * expiry only reclaims memory, so it is set relative to now_ms (PEXPIRE
 * remaining-life) rather than absolute, and a caller whose clock is off
 * (or a test with a made-up now_ms) never sees data vanish early.
 * Values and hr_expire use absolute wall-clock times (PXAT, PEXPIREAT).
 *
 * Limits, all during a slot migration (resharding) only: a script that
 * declares two keys (K and E: distinct counters, packed-set writes, hr_del,
 * hr_expire) cannot run while one of them has moved and the other not, so
 * Redis answers TRYAGAIN and the op waits for the migration of the slot to
 * end (up to the timeout, then HR_EUNAVAIL); the packed-set reads, two
 * one-key commands, follow ASK instead. Bucket keys cannot be declared
 * (their names are in the metadata), so Redis cannot check them: a counter
 * whose buckets are half-moved at that instant may under-count, or make
 * MIGRATE answer BUSYKEY to the resharding tool (redis-cli then needs
 * --cluster-replace).
 */
#include "store/redis/redis.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "store/backend.h"
#include "store/redis/internal.h"

#define DEFAULT_TIMEOUT_MS 2000
#define COUNTER_FIELD "n"

typedef struct redis_store {
    hr_store super;
    rc_cluster *cluster;
} redis_store;

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */

/* "redis://HOST:PORT[,HOST:PORT...]"; an IPv6 host is bracketed. The hosts
 * are copied into *out (free each, then the array). */
static int parse_uri(const char *uri, rc_addr **out, size_t *n_out, hr_err *err) {
    const char *p = uri + strlen("redis://");
    size_t cap = 1;
    for (const char *q = p; *q; q++)
        cap += *q == ',';
    rc_addr *seeds = hr_xcalloc(cap, sizeof *seeds);
    size_t n = 0;
    int rc = HR_OK;
    while (rc == HR_OK) {
        const char *end = strchr(p, ',');
        if (end == NULL) end = p + strlen(p);
        const char *host = p, *host_end, *colon;
        if (*p == '[') {
            host = p + 1;
            host_end = memchr(host, ']', (size_t)(end - host));
            colon = host_end && host_end + 1 < end && host_end[1] == ':' ? host_end + 1 : NULL;
        } else {
            colon = NULL;
            for (const char *q = p; q < end; q++)
                if (*q == ':') colon = q;
            host_end = colon;
        }
        char *port_end = NULL;
        long port = colon ? strtol(colon + 1, &port_end, 10) : 0;
        if (colon == NULL || host_end == host || port_end != end || colon + 1 == end || port < 1 ||
            port > 65535) {
            rc = hr_err_set(err, HR_EINVAL, "bad store URI '%s': expected redis://HOST:PORT[,HOST:PORT...]",
                            uri);
            break;
        }
        seeds[n].host = hr_xstrndup(host, (size_t)(host_end - host));
        seeds[n].port = (int)port;
        n++;
        if (*end == '\0') break;
        p = end + 1;
    }
    if (rc != HR_OK) {
        for (size_t i = 0; i < n; i++)
            free((char *)seeds[i].host);
        free(seeds);
        return rc;
    }
    *out = seeds;
    *n_out = n;
    return HR_OK;
}

static int open_(const char *uri, const hr_store_options *opts, hr_store **out, hr_err *err) {
    *out = NULL;
    if (opts->timeout_ms < 0)
        return hr_err_set(err, HR_EINVAL, "redis store: negative timeout_ms %d", opts->timeout_ms);
    rc_addr *seeds;
    size_t n_seeds;
    int rc = parse_uri(uri, &seeds, &n_seeds, err);
    if (rc != HR_OK) return rc;
    size_t n_scripts;
    const char *const *scripts = rs_script_bodies(&n_scripts);
    rc_cluster *cluster;
    rc = rc_cluster_open(seeds, n_seeds, opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS, scripts,
                         n_scripts, &cluster, err);
    for (size_t i = 0; i < n_seeds; i++)
        free((char *)seeds[i].host);
    free(seeds);
    if (rc != HR_OK) return rc;
    redis_store *s = hr_xcalloc(1, sizeof *s);
    s->super.backend = &hr_redis_backend;
    s->cluster = cluster;
    *out = &s->super;
    return HR_OK;
}

static void close_(hr_store *s) {
    redis_store *rs = (redis_store *)s;
    rc_cluster_free(rs->cluster);
    free(rs);
}

static int ping_(hr_store *s, hr_err *err) {
    return rc_cluster_ping(((redis_store *)s)->cluster, err);
}

rc_cluster *hr_redis_store_cluster(hr_store *s) {
    return s && s->backend == &hr_redis_backend ? ((redis_store *)s)->cluster : NULL;
}

/* ------------------------------------------------------------------------ */
/* Ops to commands                                                           */

/* KEYS K E, then ARGV[1] P when with_prefix: the head of every
 * distinct-counter and packed-set script. */
static void arg_sub_keys(args *x, hr_slice key, unsigned slot, bool with_prefix) {
    hr_slice prefix = slot_prefix(x->a, key, slot);
    arg_slice(x, key);
    arg_slice(x, sub_key(x->a, prefix, 'e'));
    if (with_prefix) arg_slice(x, prefix);
}
static void arg_distinct_keys(args *x, hr_slice key, unsigned slot) {
    arg_sub_keys(x, key, slot, true);
}

/* A packed-set member as its 8 big-endian bytes, in the arena at p. */
static void arg_u64(args *x, char *p, uint64_t v) {
    for (int k = 7; k >= 0; k--) {
        p[k] = (char)(v & 0xff);
        v >>= 8;
    }
    arg(x, p, 8);
}

/* A negative time is a time in the past (as for RocksDB), but Redis
 * refuses negative expiries: 1 ms after the epoch is just as past. 0 (no
 * expiry) stays 0. */
static int64_t past_is_one(int64_t at_ms) {
    return at_ms < 0 ? 1 : at_ms;
}

/* A packed-set read is two native commands in a row on K's node (see the
 * top of the file): SCARD K, the type check (0: missing, 1: a packed set,
 * WRONGTYPE), then the read of E, left out when a test has no member.
 * Returns the number of commands, at cmd[0..2). */
static size_t build_pset_read(hr_arena *a, const hr_op *op, int64_t now_ms, rc_cmd *cmd) {
    memset(cmd, 0, 2 * sizeof *cmd);
    cmd[0].slot = cmd[1].slot = rc_key_slot(op->key);
    args x = args_new(a, 2);
    arg_str(&x, "SCARD");
    arg_slice(&x, op->key);
    args_to_cmd(&x, &cmd[0]);
    if (op->type == HR_OP_PSET_TEST && op->n_u64s == 0) return 1;

    hr_slice e = sub_key(a, slot_prefix(a, op->key, cmd[0].slot), 'e');
    if (op->type == HR_OP_PSET_TEST) {
        x = args_new(a, 2 + op->n_u64s);
        arg_str(&x, "ZMSCORE");
        arg_slice(&x, e);
        char *bytes = hr_arena_alloc(a, 8 * op->n_u64s);
        for (size_t k = 0; k < op->n_u64s; k++)
            arg_u64(&x, bytes + 8 * k, op->u64s[k]);
    } else {
        x = args_new(a, 4);
        arg_str(&x, "ZCOUNT");
        arg_slice(&x, e);
        arg_fmt(&x, "(%" PRId64, now_ms);
        arg_str(&x, "+inf");
    }
    args_to_cmd(&x, &cmd[1]);
    return 2;
}

/* The command(s) of op at cmd[0..MAX_CMDS_PER_OP); returns how many (0:
 * none to send, the op's result stays empty). now_ms is the batch's clock,
 * for the packed sets and time lists. */
static size_t build_cmd(hr_arena *a, const hr_op *op, int64_t now_ms, rc_cmd *cmd) {
    switch (op->type) {
    case HR_OP_PSET_TEST:
    case HR_OP_PSET_CARD: return build_pset_read(a, op, now_ms, cmd);
    case HR_OP_TLADD:
    case HR_OP_TLREM:
    case HR_OP_TLRANGE:
    case HR_OP_TLTRIM: return redis_tl_build(a, op, now_ms, cmd);
    case HR_OP_QPUSH:
    case HR_OP_QCLAIM:
    case HR_OP_QACK:
    case HR_OP_QINFO: return redis_queue_build(a, op, cmd);
    default: break;
    }
    args x = args_new(a, MAX_ARGS);
    memset(cmd, 0, sizeof *cmd);
    cmd->slot = rc_key_slot(op->key);
    switch (op->type) {
    case HR_OP_GET:
        arg_str(&x, "GET");
        arg_slice(&x, op->key);
        break;
    case HR_OP_PUT:
        arg_str(&x, "SET");
        arg_slice(&x, op->key);
        arg_slice(&x, op->value);
        if (op->expire_at_ms != 0) {
            arg_str(&x, "PXAT");
            arg_i64(&x, past_is_one(op->expire_at_ms));
        }
        break;
    case HR_OP_PUT_IF_MISSING:
        arg_str(&x, "SET");
        arg_slice(&x, op->key);
        arg_slice(&x, op->value);
        arg_str(&x, "NX");
        if (op->expire_at_ms != 0) {
            arg_str(&x, "PXAT");
            arg_i64(&x, past_is_one(op->expire_at_ms));
        }
        break;
    case HR_OP_DEL_IF_EQUAL:
        /* KEYS: K. ARGV: the value. */
        arg_script(&x, cmd, RS_DEL_IF_EQUAL, 1);
        arg_slice(&x, op->key);
        arg_slice(&x, op->value);
        break;
    case HR_OP_DEL:
        arg_script(&x, cmd, RS_DEL, 2);
        arg_distinct_keys(&x, op->key, cmd->slot);
        break;
    case HR_OP_EXPIRE:
        arg_script(&x, cmd, RS_EXPIRE, 2);
        arg_distinct_keys(&x, op->key, cmd->slot);
        arg_i64(&x, past_is_one(op->expire_at_ms));
        break;
    case HR_OP_INCR:
        arg_str(&x, "HINCRBY");
        arg_slice(&x, op->key);
        arg_str(&x, COUNTER_FIELD);
        arg_i64(&x, op->delta);
        break;
    case HR_OP_COUNTER_GET:
        arg_str(&x, "HGET");
        arg_slice(&x, op->key);
        arg_str(&x, COUNTER_FIELD);
        break;
    case HR_OP_ZADD:
        arg_str(&x, "ZADD");
        arg_slice(&x, op->key);
        arg_double(&x, op->score);
        arg_slice(&x, op->member);
        break;
    case HR_OP_ZINCR:
        arg_str(&x, "ZINCRBY");
        arg_slice(&x, op->key);
        arg_double(&x, op->score);
        arg_slice(&x, op->member);
        break;
    case HR_OP_ZREM:
        arg_str(&x, "ZREM");
        arg_slice(&x, op->key);
        arg_slice(&x, op->member);
        break;
    case HR_OP_ZSCORE:
        arg_str(&x, "ZSCORE");
        arg_slice(&x, op->key);
        arg_slice(&x, op->member);
        break;
    case HR_OP_ZCARD:
        arg_str(&x, "ZCARD");
        arg_slice(&x, op->key);
        break;
    case HR_OP_ZRANGE: {
        const hr_zrange_spec *r = &op->range;
        range_args ra = {.reverse = r->reverse,
                         .min = fmt_slice(a, DOUBLE_FMT, r->min),
                         .max = fmt_slice(a, DOUBLE_FMT, r->max),
                         .has_cursor = r->has_cursor,
                         .offset = r->offset,
                         .limit = r->limit};
        if (r->has_cursor) {
            ra.cursor_score = fmt_slice(a, DOUBLE_FMT, r->cursor_score);
            ra.cursor_member = r->cursor_member;
        }
        arg_range(&x, cmd, op->key, &ra);
        break;
    }
    case HR_OP_ZREMRANGE_SCORE:
        arg_str(&x, "ZREMRANGEBYSCORE");
        arg_slice(&x, op->key);
        arg_double(&x, op->min);
        arg_double(&x, op->max);
        break;
    case HR_OP_DADD:
        /* KEYS: K, E. ARGV: P, member, now_ms, ttl_ms, exact_limit. */
        arg_script(&x, cmd, RS_DADD, 2);
        arg_distinct_keys(&x, op->key, cmd->slot);
        arg_slice(&x, op->member);
        arg_i64(&x, op->distinct.now_ms);
        arg_i64(&x, op->distinct.ttl_ms);
        arg_i64(&x, op->distinct.exact_limit);
        break;
    case HR_OP_DCOUNT:
        /* KEYS: K, E. ARGV: P, now_ms, ttl_ms. */
        arg_script(&x, cmd, RS_DCOUNT, 2);
        arg_distinct_keys(&x, op->key, cmd->slot);
        arg_i64(&x, op->distinct.now_ms);
        arg_i64(&x, op->distinct.ttl_ms);
        break;
    case HR_OP_PSET_ADD:
        /* KEYS: K, E. ARGV: now_ms, member, expire_at_ms or "inf". */
        arg_script(&x, cmd, RS_PSET_ADD, 2);
        arg_sub_keys(&x, op->key, cmd->slot, false);
        arg_i64(&x, now_ms);
        arg_u64(&x, hr_arena_alloc(a, 8), op->u64);
        if (op->expire_at_ms == 0)
            arg_str(&x, "inf");
        else
            arg_i64(&x, op->expire_at_ms);
        break;
    case HR_OP_PSET_REM:
        /* KEYS: K, E. ARGV: now_ms, member. */
        arg_script(&x, cmd, RS_PSET_REM, 2);
        arg_sub_keys(&x, op->key, cmd->slot, false);
        arg_i64(&x, now_ms);
        arg_u64(&x, hr_arena_alloc(a, 8), op->u64);
        break;
    default: break; /* built above */
    }
    args_to_cmd(&x, cmd);
    if (op->type == HR_OP_ZRANGE && op->range.with_size) { /* the count, on the same node */
        memset(&cmd[1], 0, sizeof cmd[1]);
        cmd[1].slot = cmd->slot;
        args y = args_new(a, 2);
        arg_str(&y, "ZCARD");
        arg_slice(&y, op->key);
        args_to_cmd(&y, &cmd[1]);
        return 2;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Replies to results                                                        */

static bool reply_i64(const redisReply *r, int64_t *out) {
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return true;
    }
    if (r->type != REDIS_REPLY_STRING || r->len == 0) return false;
    char *end;
    errno = 0;
    long long v = strtoll(r->str, &end, 10);
    if (errno || end != r->str + r->len) return false;
    *out = v;
    return true;
}

/* A range read's answer (arg_range, redis/internal.h): the script's
 * {more, member, score, ...}, or ZRANGE's member, score, ... with at most
 * one entry more than limit, which only says there are more. */
static bool decode_range(hr_batch *b, hr_result *res, const redisReply *r, size_t limit) {
    if (r->type != REDIS_REPLY_ARRAY) return false;
    bool script = r->elements % 2 == 1;
    if (script && r->element[0]->type != REDIS_REPLY_INTEGER) return false;
    size_t first = script ? 1 : 0, n = r->elements / 2;
    res->more = script ? r->element[0]->integer != 0 : n > limit;
    if (!script && n > limit) n = limit;
    res->n_entries = n;
    res->entries = n ? hr_arena_alloc(&b->arena, n * sizeof *res->entries) : NULL;
    for (size_t k = 0; k < n; k++) {
        const redisReply *m = r->element[first + 2 * k], *sc = r->element[first + 2 * k + 1];
        if (m->type != REDIS_REPLY_STRING || !reply_double(sc, &res->entries[k].score)) return false;
        res->entries[k].member = hr_arena_copy(&b->arena, hr_slice_of(m->str, m->len));
    }
    return true;
}

/* ZMSCORE's scores: a member is in the set while now < its score. value
 * is one byte per member, 1 or 0. */
static bool decode_test(hr_batch *b, hr_result *res, const hr_op *op, const redisReply *r, int64_t now_ms) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != op->n_u64s) return false;
    char *in = hr_arena_alloc(&b->arena, op->n_u64s);
    int64_t n = 0;
    for (size_t k = 0; k < op->n_u64s; k++) {
        const redisReply *e = r->element[k];
        double score = 0;
        if (e->type != REDIS_REPLY_NIL && !reply_double(e, &score)) return false;
        in[k] = e->type != REDIS_REPLY_NIL && score > (double)now_ms;
        n += in[k];
    }
    res->value = hr_slice_of(in, op->n_u64s);
    res->num = n;
    return true;
}

/* Whether r is an error reply, then the op's answer: WRONGTYPE is an answer
 * about the op; any other error a store failure of the op, noted in
 * *failure (the first one wins). */
static bool reply_error(hr_op *op, size_t i, const rc_cmd *cmd, hr_err *failure) {
    const redisReply *r = cmd->reply;
    hr_result *res = &op->result;
    if (r->type != REDIS_REPLY_ERROR) return false;
    if (strncmp(r->str, "WRONGTYPE", 9) == 0) {
        res->rc = HR_EWRONGTYPE;
    } else if (op->type == HR_OP_INCR && strstr(r->str, "would overflow")) {
        res->rc = HR_EINVAL; /* an answer about this op, as RocksDB gives it */
    } else {
        res->rc = HR_EIO;
        if (failure->code == HR_OK)
            hr_err_set(failure, HR_EIO, "redis %s: op #%zu (%s): %s", cmd->node, i, hr_op_label(op->type),
                       r->str);
    }
    return true;
}

/* A reply of a type the command does not give: a store failure of the op. */
static void unexpected(hr_op *op, size_t i, const rc_cmd *cmd, hr_err *failure) {
    op->result.rc = HR_EIO;
    if (failure->code == HR_OK)
        hr_err_set(failure, HR_EIO, "redis %s: op #%zu (%s): unexpected reply (type %d)", cmd->node, i,
                   hr_op_label(op->type), cmd->reply->type);
}

/* Fill op's result from the replies of its commands, cmd[0..n) as
 * build_cmd made them. */
static void decode(hr_batch *b, hr_op *op, size_t i, const rc_cmd *cmd, size_t n_cmds, int64_t now_ms,
                   hr_err *failure) {
    hr_result *res = &op->result;
    res->rc = HR_OK;
    if (reply_error(op, i, cmd, failure)) return;
    switch (op->type) {
    case HR_OP_TLADD: /* ZADD, PEXPIREAT NX, PEXPIREAT GT */
        if (n_cmds == 3 && (reply_error(op, i, &cmd[1], failure) || reply_error(op, i, &cmd[2], failure)))
            return;
        break;
    case HR_OP_QACK:
    case HR_OP_QINFO:
        if (n_cmds == 2 && reply_error(op, i, &cmd[1], failure)) return;
        /* fall through */
    case HR_OP_QPUSH:
    case HR_OP_QCLAIM:
        if (!redis_queue_decode(b, op, cmd, n_cmds)) unexpected(op, i, cmd, failure);
        return;
    default: break;
    }
    if (op->type == HR_OP_PSET_TEST || op->type == HR_OP_PSET_CARD) {
        /* SCARD K: 1, a packed set, whose E the next reply read; 0, no key
         * (an E left by hr_put is not read). */
        if (cmd->reply->type != REDIS_REPLY_INTEGER) {
            unexpected(op, i, cmd, failure);
            return;
        }
        size_t n = op->type == HR_OP_PSET_TEST ? op->n_u64s : 0;
        if (cmd->reply->integer == 0 || (op->type == HR_OP_PSET_TEST && n == 0)) {
            res->num = 0;
            if (op->type == HR_OP_PSET_TEST) res->value = hr_slice_of(hr_arena_calloc(&b->arena, n), n);
            return;
        }
        cmd++;
        if (reply_error(op, i, cmd, failure)) return;
    }
    const redisReply *r = cmd->reply;
    bool ok;
    switch (op->type) {
    case HR_OP_GET:
        ok = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL;
        if (r->type == REDIS_REPLY_STRING)
            res->value = hr_arena_copy(&b->arena, hr_slice_of(r->str, r->len));
        else
            res->rc = HR_ENOTFOUND;
        break;
    case HR_OP_PUT: ok = r->type == REDIS_REPLY_STATUS; break;
    case HR_OP_PUT_IF_MISSING: /* OK, or nil when the key exists */
        ok = r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_NIL;
        res->num = r->type == REDIS_REPLY_STATUS;
        break;
    case HR_OP_COUNTER_GET:
        res->num = 0;
        ok = r->type == REDIS_REPLY_NIL || reply_i64(r, &res->num);
        break;
    case HR_OP_ZINCR: ok = reply_double(r, &res->score); break;
    case HR_OP_ZSCORE:
        ok = r->type == REDIS_REPLY_NIL || reply_double(r, &res->score);
        if (r->type == REDIS_REPLY_NIL) res->rc = HR_ENOTFOUND;
        break;
    case HR_OP_ZRANGE: /* and with_size's ZCARD */
        if (n_cmds == 2 && reply_error(op, i, &cmd[1], failure)) return;
        ok = decode_range(b, res, r, op->range.limit) && (n_cmds == 1 || reply_i64(cmd[1].reply, &res->num));
        break;
    case HR_OP_TLRANGE: ok = decode_range(b, res, r, op->tlrange.limit); break;
    case HR_OP_TLADD: ok = r->type == REDIS_REPLY_INTEGER; break; /* num stays 0 (store.h) */
    case HR_OP_PSET_TEST: ok = decode_test(b, res, op, r, now_ms); break;
    default: /* DEL EXPIRE INCR ZADD ZREM ZCARD ZREMRANGE_SCORE DADD DCOUNT PSET_ADD PSET_REM
              * PSET_CARD TLREM TLTRIM DEL_IF_EQUAL */
        ok = r->type == REDIS_REPLY_INTEGER;
        res->num = r->integer;
        break;
    }
    if (!ok) unexpected(op, i, cmd, failure);
}

/* ------------------------------------------------------------------------ */
/* Running a batch                                                           */

static void set_all_rc(hr_batch *b, int rc) {
    for (size_t i = 0; i < b->len; i++)
        b->ops[i].result.rc = rc;
}

static int exec_(hr_store *s, hr_batch *b, unsigned flags, hr_err *err) {
    redis_store *rs = (redis_store *)s;
    /* Up to MAX_CMDS_PER_OP commands per valid op; op_of[k] is the op of
     * cmds[k], and an op's commands are contiguous. Argument vectors live in a scratch
     * arena freed below, so the batch's arena holds only what the caller
     * reads. */
    hr_arena scratch = HR_ARENA_INIT;
    rc_cmd *cmds = hr_arena_alloc(&scratch, MAX_CMDS_PER_OP * b->len * sizeof *cmds);
    size_t *op_of = hr_arena_alloc(&scratch, MAX_CMDS_PER_OP * b->len * sizeof *op_of);
    size_t n = 0, step = hr_batch_first_guard(b); /* the guard sends the rest (redis/step.c) */
    int64_t now_ms = hr_now_ms();
    for (size_t i = 0; i < step; i++) {
        if (b->ops[i].result.rc != HR_OK) continue; /* invalid: the dispatcher said why */
        for (size_t m = build_cmd(&scratch, &b->ops[i], now_ms, &cmds[n]); m > 0; m--)
            op_of[n++] = i;
    }
    if (step < b->len && redis_step_build(&scratch, b, step, &cmds[n])) op_of[n++] = step;

    int rc = rc_run(rs->cluster, cmds, n, (flags & HR_EXEC_ATOMIC) != 0, err);
    if (rc == HR_EINVAL) {
        set_all_rc(b, rc); /* refused before sending anything */
    } else {
        hr_err failure = {0};
        for (size_t k = 0, m; k < n; k += m) {
            hr_op *op = &b->ops[op_of[k]];
            int cmd_rc = HR_OK;
            for (m = 0; k + m < n && op_of[k + m] == op_of[k]; m++)
                if (cmd_rc == HR_OK) cmd_rc = cmds[k + m].rc;
            if (op_of[k] == step)
                redis_step_decode(b, step, &cmds[k], &failure);
            else if (cmd_rc != HR_OK)
                op->result.rc = cmd_rc;
            else
                decode(b, op, op_of[k], &cmds[k], m, now_ms, &failure);
        }
        if (rc == HR_OK && failure.code != HR_OK) rc = hr_err_set(err, failure.code, "%s", failure.msg);
    }
    rc_cmds_release(cmds, n);
    hr_arena_free(&scratch);
    return rc;
}

const hr_store_backend hr_redis_backend = {
    .caps = {.kind = "redis", .shared = true, .remote = true},
    .uri_prefix = "redis://",
    .open = open_,
    .close = close_,
    .ping = ping_,
    .exec = exec_,
};
