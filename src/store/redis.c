/* redis.c — the Redis Cluster backend: store ops mapped onto Redis commands
 * and Lua scripts. Routing, pipelining and redirections are
 * redis_cluster.c's; the scripts are in redis_scripts.c.
 *
 * One op is one command (or one script call) on the op's key, so a batch is
 * one pipeline per node (or MULTI ... EXEC with HR_EXEC_ATOMIC) and every op
 * is atomic on its own.
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
 *                                                ZREMRANGEBYRANK, zrange script
 *   distinct counter  list (metadata), below     dadd, dcount scripts
 *
 * A counter is a hash, not an INCRBY string, so that a value is never
 * mistaken for a counter (INCRBY on the value "12" would succeed). A
 * distinct counter's metadata is a list because no native op of herald
 * uses lists, so GET, HINCRBY or ZADD on it fail with WRONGTYPE.
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
 * Expiry of distinct counters: liveness follows the caller's now_ms (the
 * members' scores, the bucket indexes), as the contract says; Redis' own
 * expiry only reclaims memory, so it is set relative to now_ms (PEXPIRE
 * remaining-life) rather than absolute, and a caller whose clock is off
 * (or a test with a made-up now_ms) never sees data vanish early.
 * Values and hr_expire use absolute wall-clock times (PXAT, PEXPIREAT).
 *
 * Limits, all during a slot migration (resharding) only: a script that
 * declares two keys (the distinct-counter ones: K and E) cannot run while
 * one of them has moved and the other not, so Redis answers TRYAGAIN and
 * the op waits for the migration of the slot to end (up to the timeout,
 * then HR_EUNAVAIL). Bucket keys cannot be declared (their names are in the
 * metadata), so Redis cannot check them: a counter whose buckets are
 * half-moved at that instant may under-count, or make MIGRATE answer
 * BUSYKEY to the resharding tool (redis-cli then needs --cluster-replace).
 */
#include "store/redis.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "store/backend.h"
#include "store/redis_scripts.h"

#define DEFAULT_TIMEOUT_MS 2000
#define COUNTER_FIELD "n"
/* The most arguments one op's command takes (the zrange script: EVALSHA,
 * sha, numkeys, key, 8 arguments). */
#define MAX_ARGS 12

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
/* Checking ops before sending anything                                      */

/* Whether the batch holds an op this backend does not implement yet: then
 * nothing runs. */
static int check_supported(const hr_batch *b, hr_err *err) {
    for (size_t i = 0; i < b->len; i++) {
        switch (b->ops[i].type) {
        case HR_OP_PSET_ADD:
        case HR_OP_PSET_REM:
        case HR_OP_PSET_TEST:
        case HR_OP_PSET_CARD:
        case HR_OP_QPUSH:
        case HR_OP_QCLAIM:
        case HR_OP_QACK:
            return hr_err_set(err, HR_ENOTSUP, "redis: %s is not implemented yet",
                              hr_op_label(b->ops[i].type));
        default: break;
        }
    }
    return HR_OK;
}


/* ------------------------------------------------------------------------ */
/* Ops to commands                                                           */

/* The argument vector of one command, in the run's scratch arena. */
typedef struct args {
    hr_arena *a;
    const char **v;
    size_t *len;
    int n;
} args;

static void arg(args *x, const char *p, size_t n) {
    x->v[x->n] = p ? p : "";
    x->len[x->n] = n;
    x->n++;
}
static void arg_str(args *x, const char *s) {
    arg(x, s, strlen(s));
}
static void arg_slice(args *x, hr_slice s) {
    arg(x, s.ptr, s.len);
}

static void arg_fmt(args *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg_fmt(args *x, const char *fmt, ...) {
    char buf[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    arg(x, hr_arena_strndup(x->a, buf, (size_t)n), (size_t)n);
}
static void arg_i64(args *x, int64_t v) {
    arg_fmt(x, "%" PRId64, v);
}
/* %.17g prints every double so that strtod (Redis' parser) reads back the
 * same one; infinities print as "inf" / "-inf", which Redis accepts. */
static void arg_double(args *x, double d) {
    arg_fmt(x, "%.17g", d);
}

/* EVALSHA sha numkeys: the caller adds the keys and arguments after. */
static void arg_script(args *x, rc_cmd *cmd, rs_id id, int numkeys) {
    const rs_script *sc = rs_script_get(id);
    arg_str(x, "EVALSHA");
    arg(x, sc->sha, 40);
    arg_i64(x, numkeys);
    cmd->script = sc->body;
}

/* The prefix P of a distinct counter's sub-keys (see the top of the file). */
static hr_slice distinct_prefix(hr_arena *a, hr_slice key, unsigned slot) {
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

/* KEYS K E, ARGV[1] P: the head every distinct-counter script takes. */
static void arg_distinct_keys(args *x, hr_slice key, unsigned slot) {
    hr_slice prefix = distinct_prefix(x->a, key, slot);
    char *exact = hr_arena_alloc(x->a, prefix.len + 2);
    memcpy(exact, prefix.ptr, prefix.len);
    exact[prefix.len] = '\0';
    exact[prefix.len + 1] = 'e';
    arg_slice(x, key);
    arg(x, exact, prefix.len + 2);
    arg_slice(x, prefix);
}

/* A negative time is a time in the past (as for RocksDB), but Redis
 * refuses negative expiries: 1 ms after the epoch is just as past. 0 (no
 * expiry) stays 0. */
static int64_t past_is_one(int64_t at_ms) {
    return at_ms < 0 ? 1 : at_ms;
}

static void build_cmd(hr_arena *a, const hr_op *op, rc_cmd *cmd) {
    args x = {a, hr_arena_alloc(a, MAX_ARGS * sizeof(char *)), hr_arena_alloc(a, MAX_ARGS * sizeof(size_t)),
              0};
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
        /* KEYS: K. ARGV: reverse, min, max, has_cursor, cursor_score,
         * cursor_member, offset, limit. */
        const hr_zrange_spec *r = &op->range;
        arg_script(&x, cmd, RS_ZRANGE, 1);
        arg_slice(&x, op->key);
        arg_str(&x, r->reverse ? "1" : "0");
        arg_double(&x, r->min);
        arg_double(&x, r->max);
        arg_str(&x, r->has_cursor ? "1" : "0");
        arg_double(&x, r->has_cursor ? r->cursor_score : 0);
        arg_slice(&x, r->has_cursor ? r->cursor_member : hr_slice_of("", 0));
        arg_fmt(&x, "%zu", r->offset);
        arg_fmt(&x, "%zu", r->limit);
        break;
    }
    case HR_OP_ZREMRANGE_SCORE:
        arg_str(&x, "ZREMRANGEBYSCORE");
        arg_slice(&x, op->key);
        arg_double(&x, op->min);
        arg_double(&x, op->max);
        break;
    case HR_OP_ZTRIM: {
        /* Ranks ascend by (score, member): keeping the `keep` highest
         * removes ranks 0..-(keep+1), keeping the lowest removes keep..-1. */
        long long keep = op->keep > (size_t)INT64_MAX / 2 ? INT64_MAX / 2 : (long long)op->keep;
        arg_str(&x, "ZREMRANGEBYRANK");
        arg_slice(&x, op->key);
        if (op->keep_highest) {
            arg_str(&x, "0");
            arg_fmt(&x, "%lld", -(keep + 1));
        } else {
            arg_fmt(&x, "%lld", keep);
            arg_str(&x, "-1");
        }
        break;
    }
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
    default: /* refused by check_supported */ break;
    }
    cmd->argc = x.n;
    cmd->argv = x.v;
    cmd->argvlen = x.len;
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

static bool reply_double(const redisReply *r, double *out) {
    if (r->type != REDIS_REPLY_STRING || r->len == 0) return false;
    char *end;
    *out = strtod(r->str, &end);
    return end == r->str + r->len;
}

/* {more, member1, score1, ...} from the zrange script. */
static bool decode_range(hr_batch *b, hr_result *res, const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->elements % 2 != 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return false;
    size_t n = r->elements / 2;
    res->more = r->element[0]->integer != 0;
    res->n_entries = n;
    res->entries = n ? hr_arena_alloc(&b->arena, n * sizeof *res->entries) : NULL;
    for (size_t k = 0; k < n; k++) {
        const redisReply *m = r->element[1 + 2 * k], *sc = r->element[2 + 2 * k];
        if (m->type != REDIS_REPLY_STRING || !reply_double(sc, &res->entries[k].score)) return false;
        res->entries[k].member = hr_arena_copy(&b->arena, hr_slice_of(m->str, m->len));
    }
    return true;
}

/* Fill op's result from its reply. An error reply other than WRONGTYPE is
 * a store failure of that op, noted in *failure (the first one wins). */
static void decode(hr_batch *b, hr_op *op, size_t i, const rc_cmd *cmd, hr_err *failure) {
    const redisReply *r = cmd->reply;
    hr_result *res = &op->result;
    res->rc = HR_OK;
    if (r->type == REDIS_REPLY_ERROR) {
        if (strncmp(r->str, "WRONGTYPE", 9) == 0) {
            res->rc = HR_EWRONGTYPE;
            return;
        }
        if (op->type == HR_OP_INCR && strstr(r->str, "would overflow")) {
            res->rc = HR_EINVAL; /* an answer about this op, as RocksDB gives it */
            return;
        }
        res->rc = HR_EIO;
        if (failure->code == HR_OK)
            hr_err_set(failure, HR_EIO, "redis %s: op #%zu (%s): %s", cmd->node, i, hr_op_label(op->type),
                       r->str);
        return;
    }
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
    case HR_OP_COUNTER_GET:
        res->num = 0;
        ok = r->type == REDIS_REPLY_NIL || reply_i64(r, &res->num);
        break;
    case HR_OP_ZINCR: ok = reply_double(r, &res->score); break;
    case HR_OP_ZSCORE:
        ok = r->type == REDIS_REPLY_NIL || reply_double(r, &res->score);
        if (r->type == REDIS_REPLY_NIL) res->rc = HR_ENOTFOUND;
        break;
    case HR_OP_ZRANGE: ok = decode_range(b, res, r); break;
    default: /* DEL EXPIRE INCR ZADD ZREM ZCARD ZREMRANGE_SCORE ZTRIM DADD DCOUNT */
        ok = r->type == REDIS_REPLY_INTEGER;
        res->num = r->integer;
        break;
    }
    if (!ok) {
        res->rc = HR_EIO;
        if (failure->code == HR_OK)
            hr_err_set(failure, HR_EIO, "redis %s: op #%zu (%s): unexpected reply (type %d)", cmd->node, i,
                       hr_op_label(op->type), r->type);
    }
}

/* ------------------------------------------------------------------------ */
/* Running a batch                                                           */

static void set_all_rc(hr_batch *b, int rc) {
    for (size_t i = 0; i < b->len; i++)
        b->ops[i].result.rc = rc;
}

static int exec_(hr_store *s, hr_batch *b, unsigned flags, hr_err *err) {
    redis_store *rs = (redis_store *)s;
    int rc = check_supported(b, err);
    if (rc != HR_OK) {
        set_all_rc(b, rc);
        return rc;
    }
    /* One command per valid op; op_of[k] is the op of cmds[k]. Argument
     * vectors live in a scratch arena freed below, so the batch's arena
     * holds only what the caller reads. */
    hr_arena scratch = HR_ARENA_INIT;
    rc_cmd *cmds = hr_arena_alloc(&scratch, b->len * sizeof *cmds);
    size_t *op_of = hr_arena_alloc(&scratch, b->len * sizeof *op_of);
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++) {
        if (b->ops[i].result.rc != HR_OK) continue; /* invalid: the dispatcher said why */
        build_cmd(&scratch, &b->ops[i], &cmds[n]);
        op_of[n++] = i;
    }

    rc = rc_run(rs->cluster, cmds, n, (flags & HR_EXEC_ATOMIC) != 0, err);
    if (rc == HR_EINVAL) {
        set_all_rc(b, rc); /* refused before sending anything */
    } else {
        hr_err failure = {0};
        for (size_t k = 0; k < n; k++) {
            hr_op *op = &b->ops[op_of[k]];
            if (cmds[k].rc != HR_OK)
                op->result.rc = cmds[k].rc;
            else
                decode(b, op, op_of[k], &cmds[k], &failure);
        }
        if (rc == HR_OK && failure.code != HR_OK) rc = hr_err_set(err, failure.code, "%s", failure.msg);
    }
    rc_cmds_release(cmds, n);
    hr_arena_free(&scratch);
    return rc;
}

const hr_store_backend hr_redis_backend = {"redis", "redis://", open_, close_, ping_, exec_};
