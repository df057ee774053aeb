/* redis/cluster.c — slot routing, connections and pipelined runs against a
 * Redis Cluster; see redis/cluster.h for the model.
 *
 * Invariants:
 *   - nodes[] only grows, and a node never changes once published: an index
 *     (as stored in slots[] and in a connection set) stays valid for the life
 *     of the cluster, and a node's name can be read without a lock.
 *   - slots[] and n_nodes change only under the write lock; MOVED and refresh
 *     are the only writers.
 *   - A connection set is used by one run at a time (it is out of the pool
 *     while in use). A connection is either idle with no reply pending, or it
 *     is dropped: after any I/O error or timeout we free it rather than guess
 *     where its byte stream stands.
 *
 * Workload: many short runs (1 to ~1,000 commands) from many HTTP threads;
 * redirections are rare (resharding, failover), so their handling favours
 * simplicity over speed.
 */
#include "store/redis/cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "store/backend.h"

/* A cluster of more nodes than this is not one we plan for (Redis itself
 * suggests at most ~1,000); a fixed table keeps node pointers stable. */
#define RC_MAX_NODES 1024
/* A refresh done this recently is good enough: do not reload the map again
 * (many threads hit the same MOVED at once after a resharding). */
#define RC_REFRESH_MIN_NS (50u * 1000000u)
#define RC_BACKOFF_FIRST_MS 25
#define RC_BACKOFF_MAX_MS 1000

/* ------------------------------------------------------------------------ */
/* Nodes, connection sets, the cluster                                       */

typedef struct rc_node {
    char *host;
    int port;
    char *name;                                  /* "host:port", for messages */
    _Atomic int fails;                           /* consecutive failed connects */
    _Atomic uint64_t retry_at_ns;                /* monotonic: no connect before this */
    pthread_mutex_t mu;                          /* guards last_error */
    char last_error[sizeof(((hr_err *)0)->msg)]; /* why the last connect failed */
} rc_node;

/* One connection per node, indexed like nodes[]; NULL until first used. */
typedef struct rc_connset {
    struct rc_connset *next; /* in the pool */
    redisContext **ctx;
    size_t n;
} rc_connset;

struct rc_cluster {
    int timeout_ms;
    const char *const *scripts;
    size_t n_scripts;

    pthread_rwlock_t lock; /* slots, n_nodes (see invariants) */
    rc_node *nodes[RC_MAX_NODES];
    _Atomic size_t n_nodes;
    int16_t slots[RC_SLOTS]; /* node index, or -1: no node known */

    pthread_mutex_t refresh_mu; /* one CLUSTER SLOTS reload at a time */
    _Atomic uint64_t last_refresh_ns;

    pthread_mutex_t pool_mu;
    rc_connset *pool; /* idle connection sets */

    _Atomic uint64_t st_round_trips, st_rounds, st_moved, st_ask, st_tryagain, st_noscript, st_refreshes,
        st_connects;
};

#define STAT_INC(c, f) atomic_fetch_add_explicit(&(c)->f, 1, memory_order_relaxed)

static struct timeval ms_to_tv(int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/* The index of host:port, added if new. Caller holds the write lock.
 * Returns -1 when the table is full. */
static int node_find_or_add_locked(rc_cluster *c, const char *host, size_t host_len, int port) {
    size_t n = atomic_load(&c->n_nodes);
    for (size_t i = 0; i < n; i++) {
        const rc_node *nd = c->nodes[i];
        if (nd->port == port && strlen(nd->host) == host_len && memcmp(nd->host, host, host_len) == 0)
            return (int)i;
    }
    if (n == RC_MAX_NODES) return -1;
    rc_node *nd = hr_xcalloc(1, sizeof *nd);
    pthread_mutex_init(&nd->mu, NULL);
    nd->host = hr_xstrndup(host, host_len);
    nd->port = port;
    size_t name_len = host_len + 16;
    nd->name = hr_xmalloc(name_len);
    snprintf(nd->name, name_len, "%s:%d", nd->host, port);
    c->nodes[n] = nd;
    atomic_store(&c->n_nodes, n + 1); /* publish after the node is complete */
    return (int)n;
}

static int node_find_or_add(rc_cluster *c, const char *host, size_t host_len, int port) {
    pthread_rwlock_wrlock(&c->lock);
    int i = node_find_or_add_locked(c, host, host_len, port);
    pthread_rwlock_unlock(&c->lock);
    return i;
}

static rc_connset *set_take(rc_cluster *c) {
    pthread_mutex_lock(&c->pool_mu);
    rc_connset *s = c->pool;
    if (s) c->pool = s->next;
    pthread_mutex_unlock(&c->pool_mu);
    return s ? s : hr_xcalloc(1, sizeof *s);
}

static void set_give(rc_cluster *c, rc_connset *s) {
    pthread_mutex_lock(&c->pool_mu);
    s->next = c->pool;
    c->pool = s;
    pthread_mutex_unlock(&c->pool_mu);
}

static void set_free(rc_connset *s) {
    for (size_t i = 0; i < s->n; i++)
        if (s->ctx[i]) redisFree(s->ctx[i]);
    free(s->ctx);
    free(s);
}

static void conn_drop(rc_connset *s, int node) {
    if ((size_t)node < s->n && s->ctx[node]) {
        redisFree(s->ctx[node]);
        s->ctx[node] = NULL;
    }
}

/* An idle pooled connection may have been closed by the node (restart,
 * idle timeout) since its last use. A non-blocking peek tells, without a
 * round trip: EOF, an error, or stray bytes mean it cannot be trusted. */
static bool conn_usable(const redisContext *ctx) {
    if (ctx->err) return false;
    char byte;
    ssize_t r = recv(ctx->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Describe an I/O failure of ctx on node n into err. */
static int io_error(const rc_cluster *c, const rc_node *n, const redisContext *ctx, const char *what,
                    hr_err *err) {
    if (ctx && ctx->err == REDIS_ERR_IO &&
        (strstr(ctx->errstr, "temporarily unavailable") || strstr(ctx->errstr, "timed out")))
        return hr_err_set(err, HR_EUNAVAIL, "redis %s: %s: no answer within %d ms", n->name, what,
                          c->timeout_ms);
    return hr_err_set(err, HR_EUNAVAIL, "redis %s: %s: %s", n->name, what,
                      ctx ? (ctx->err == REDIS_ERR_EOF ? "connection closed by the node" : ctx->errstr)
                          : "out of memory");
}

static int flush(redisContext *ctx) {
    int done = 0;
    while (!done)
        if (redisBufferWrite(ctx, &done) != REDIS_OK) return -1;
    return 0;
}

/* Load the scripts on a new connection, in one round trip. */
static int load_scripts(const rc_cluster *c, const rc_node *n, redisContext *ctx, hr_err *err) {
    for (size_t i = 0; i < c->n_scripts; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", c->scripts[i]};
        size_t lens[3] = {6, 4, strlen(c->scripts[i])};
        redisAppendCommandArgv(ctx, 3, argv, lens);
    }
    int rc = HR_OK;
    for (size_t i = 0; i < c->n_scripts; i++) {
        redisReply *r = NULL;
        if (redisGetReply(ctx, (void **)&r) != REDIS_OK) return io_error(c, n, ctx, "SCRIPT LOAD", err);
        if (r->type == REDIS_REPLY_ERROR && rc == HR_OK)
            rc = hr_err_set(err, HR_EUNAVAIL, "redis %s: SCRIPT LOAD: %.*s", n->name, (int)r->len, r->str);
        freeReplyObject(r);
    }
    return rc;
}

static redisContext *connect_node(rc_cluster *c, const rc_node *n, hr_err *err) {
    STAT_INC(c, st_connects);
    redisContext *ctx = redisConnectWithTimeout(n->host, n->port, ms_to_tv(c->timeout_ms));
    if (ctx == NULL || ctx->err) {
        if (ctx && (strstr(ctx->errstr, "in progress") || strstr(ctx->errstr, "timed out")))
            hr_err_set(err, HR_EUNAVAIL, "redis %s: connect: no answer within %d ms", n->name, c->timeout_ms);
        else
            hr_err_set(err, HR_EUNAVAIL, "redis %s: connect: %s", n->name,
                       ctx ? ctx->errstr : "out of memory");
        if (ctx) redisFree(ctx);
        return NULL;
    }
    if (redisSetTimeout(ctx, ms_to_tv(c->timeout_ms)) != REDIS_OK || load_scripts(c, n, ctx, err) != HR_OK) {
        if (ctx->err) io_error(c, n, ctx, "connect", err);
        redisFree(ctx);
        return NULL;
    }
    redisEnableKeepAlive(ctx);
    return ctx;
}

/* The set's connection to node i, opened if needed; NULL with err filled
 * when the node cannot be reached or is in its reconnect backoff. */
static redisContext *conn_get(rc_cluster *c, rc_connset *s, int i, hr_err *err) {
    if ((size_t)i >= s->n) {
        size_t n = atomic_load(&c->n_nodes);
        s->ctx = hr_xrealloc(s->ctx, n * sizeof *s->ctx);
        memset(s->ctx + s->n, 0, (n - s->n) * sizeof *s->ctx);
        s->n = n;
    }
    if (s->ctx[i] && !conn_usable(s->ctx[i])) conn_drop(s, i);
    if (s->ctx[i]) return s->ctx[i];

    rc_node *n = c->nodes[i];
    uint64_t now = hr_mono_ns(), retry_at = atomic_load(&n->retry_at_ns);
    if (now < retry_at) {
        pthread_mutex_lock(&n->mu);
        hr_err_set(err, HR_EUNAVAIL, "%s (%d failures in a row; next attempt in %llu ms)", n->last_error,
                   atomic_load(&n->fails), (unsigned long long)((retry_at - now) / 1000000));
        pthread_mutex_unlock(&n->mu);
        return NULL;
    }
    hr_err e;
    redisContext *ctx = connect_node(c, n, &e);
    if (ctx == NULL) {
        hr_err_set(err, e.code, "%s", e.msg);
        pthread_mutex_lock(&n->mu);
        snprintf(n->last_error, sizeof n->last_error, "%s", e.msg);
        pthread_mutex_unlock(&n->mu);
        int fails = atomic_fetch_add(&n->fails, 1) + 1;
        uint64_t ms = RC_BACKOFF_FIRST_MS << (fails < 7 ? fails - 1 : 6);
        if (ms > RC_BACKOFF_MAX_MS) ms = RC_BACKOFF_MAX_MS;
        atomic_store(&n->retry_at_ns, hr_mono_ns() + ms * 1000000);
        return NULL;
    }
    atomic_store(&n->fails, 0);
    atomic_store(&n->retry_at_ns, 0);
    s->ctx[i] = ctx;
    return ctx;
}

/* ------------------------------------------------------------------------ */
/* The slot map                                                              */

static size_t masters(rc_cluster *c, int *out);

typedef struct slot_range {
    unsigned lo, hi;
    const char *host;
    size_t host_len;
    int port;
} slot_range;

/* Parse a CLUSTER SLOTS reply into ranges (borrowing its strings). A node
 * that does not know its own address reports "" or "?": it is the node we
 * asked, so use that node's host. Returns the count, or -1 if malformed. */
static long parse_slots(const redisReply *r, const rc_node *asked, slot_range *out) {
    if (r->type != REDIS_REPLY_ARRAY) return -1;
    long n = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) return -1;
        const redisReply *lo = e->element[0], *hi = e->element[1], *master = e->element[2];
        if (lo->type != REDIS_REPLY_INTEGER || hi->type != REDIS_REPLY_INTEGER ||
            master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
            master->element[0]->type != REDIS_REPLY_STRING ||
            master->element[1]->type != REDIS_REPLY_INTEGER || lo->integer < 0 || hi->integer < lo->integer ||
            hi->integer >= (long long)RC_SLOTS)
            return -1;
        slot_range *sr = &out[n++];
        sr->lo = (unsigned)lo->integer;
        sr->hi = (unsigned)hi->integer;
        sr->host = master->element[0]->str;
        sr->host_len = master->element[0]->len;
        if (sr->host_len == 0 || (sr->host_len == 1 && sr->host[0] == '?')) {
            sr->host = asked->host;
            sr->host_len = strlen(asked->host);
        }
        sr->port = (int)master->element[1]->integer;
    }
    return n;
}

/* Ask node i for the slot map and install it. */
static int load_slots_from(rc_cluster *c, rc_connset *s, int i, hr_err *err) {
    redisContext *ctx = conn_get(c, s, i, err);
    if (ctx == NULL) return HR_EUNAVAIL;
    const rc_node *asked = c->nodes[i];
    redisReply *r = redisCommand(ctx, "CLUSTER SLOTS");
    if (r == NULL) {
        io_error(c, asked, ctx, "CLUSTER SLOTS", err);
        conn_drop(s, i);
        return HR_EUNAVAIL;
    }
    int rc = HR_OK;
    if (r->type == REDIS_REPLY_ERROR) {
        if (strstr(r->str, "cluster support disabled")) {
            /* A lone Redis without cluster mode: it owns every slot. */
            pthread_rwlock_wrlock(&c->lock);
            for (unsigned slot = 0; slot < RC_SLOTS; slot++)
                c->slots[slot] = (int16_t)i;
            pthread_rwlock_unlock(&c->lock);
        } else {
            rc = hr_err_set(err, HR_EUNAVAIL, "redis %s: CLUSTER SLOTS: %s", asked->name, r->str);
        }
        freeReplyObject(r);
        return rc;
    }
    slot_range *ranges = hr_xmalloc((r->type == REDIS_REPLY_ARRAY ? r->elements : 0) * sizeof *ranges + 1);
    long n = parse_slots(r, asked, ranges);
    if (n < 0) {
        rc = hr_err_set(err, HR_EUNAVAIL, "redis %s: CLUSTER SLOTS: unexpected reply", asked->name);
    } else {
        pthread_rwlock_wrlock(&c->lock);
        for (unsigned slot = 0; slot < RC_SLOTS; slot++)
            c->slots[slot] = -1;
        for (long k = 0; k < n; k++) {
            int node = node_find_or_add_locked(c, ranges[k].host, ranges[k].host_len, ranges[k].port);
            for (unsigned slot = ranges[k].lo; node >= 0 && slot <= ranges[k].hi; slot++)
                c->slots[slot] = (int16_t)node;
        }
        pthread_rwlock_unlock(&c->lock);
    }
    free(ranges);
    freeReplyObject(r);
    return rc;
}

/* Reload the slot map from the first node that answers. Unless forced,
 * skipped when a reload finished after we asked or very recently: after a
 * resharding many runs see MOVED at once and one reload serves them all. */
static int refresh(rc_cluster *c, rc_connset *s, bool force, hr_err *err) {
    uint64_t asked = hr_mono_ns();
    pthread_mutex_lock(&c->refresh_mu);
    uint64_t last = atomic_load(&c->last_refresh_ns);
    if (!force && last != 0 && (last >= asked || asked - last < RC_REFRESH_MIN_NS)) {
        pthread_mutex_unlock(&c->refresh_mu);
        return HR_OK;
    }
    STAT_INC(c, st_refreshes);
    /* Ask the masters we know first, then the other nodes (seeds that own
     * nothing, former masters): a dead seed is not asked before live ones. */
    int *order = hr_xmalloc(RC_MAX_NODES * sizeof *order);
    size_t n_order = masters(c, order), n_masters = n_order, n = atomic_load(&c->n_nodes);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < n_masters && order[k] != (int)i)
            k++;
        if (k == n_masters) order[n_order++] = (int)i;
    }
    int rc = hr_err_set(err, HR_EUNAVAIL, "redis: no node known");
    for (size_t k = 0; k < n_order && rc != HR_OK; k++) {
        hr_err e;
        rc = load_slots_from(c, s, order[k], &e);
        /* Keep the first failure: the likeliest cause. */
        if (rc != HR_OK && k == 0) hr_err_set(err, e.code, "%s", e.msg);
    }
    free(order);
    if (rc == HR_OK) hr_err_clear(err);
    atomic_store(&c->last_refresh_ns, hr_mono_ns());
    pthread_mutex_unlock(&c->refresh_mu);
    return rc;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": the node index the reply names,
 * added to the table if new (and, for MOVED, installed for the slot).
 * An empty host means the host of the node that answered. */
static int redirect_target(rc_cluster *c, const redisReply *r, const rc_node *from, bool moved) {
    const char *p = strchr(r->str, ' ');
    if (p == NULL) return -1;
    char *end;
    unsigned long slot = strtoul(p + 1, &end, 10);
    if (*end != ' ' || slot >= RC_SLOTS) return -1;
    const char *host = end + 1, *colon = strrchr(host, ':');
    if (colon == NULL) return -1;
    int port = atoi(colon + 1);
    size_t host_len = (size_t)(colon - host);
    if (host_len == 0) {
        host = from->host;
        host_len = strlen(host);
    }
    pthread_rwlock_wrlock(&c->lock);
    int node = node_find_or_add_locked(c, host, host_len, port);
    if (moved && node >= 0) c->slots[slot] = (int16_t)node;
    pthread_rwlock_unlock(&c->lock);
    return node;
}

/* ------------------------------------------------------------------------ */
/* Opening and closing                                                       */

int rc_cluster_open(const rc_addr *seeds, size_t n_seeds, int timeout_ms, const char *const *scripts,
                    size_t n_scripts, rc_cluster **out, hr_err *err) {
    *out = NULL;
    rc_cluster *c = hr_xcalloc(1, sizeof *c);
    c->timeout_ms = timeout_ms;
    c->scripts = scripts;
    c->n_scripts = n_scripts;
    pthread_rwlock_init(&c->lock, NULL);
    pthread_mutex_init(&c->refresh_mu, NULL);
    pthread_mutex_init(&c->pool_mu, NULL);
    for (unsigned slot = 0; slot < RC_SLOTS; slot++)
        c->slots[slot] = -1;
    for (size_t i = 0; i < n_seeds; i++)
        if (node_find_or_add(c, seeds[i].host, strlen(seeds[i].host), seeds[i].port) < 0) break;

    rc_connset *s = set_take(c);
    int rc = refresh(c, s, true, err);
    set_give(c, s);
    if (rc == HR_OK) {
        unsigned served = 0;
        for (unsigned slot = 0; slot < RC_SLOTS; slot++)
            served += c->slots[slot] >= 0;
        if (served == 0)
            rc = hr_err_set(err, HR_EUNAVAIL,
                            "redis %s: the cluster serves no slot (not created yet? see "
                            "scripts/redis-cluster.sh)",
                            c->nodes[0]->name);
    }
    if (rc != HR_OK) {
        rc_cluster_free(c);
        return rc;
    }
    *out = c;
    return HR_OK;
}

void rc_cluster_free(rc_cluster *c) {
    if (c == NULL) return;
    while (c->pool) {
        rc_connset *s = c->pool;
        c->pool = s->next;
        set_free(s);
    }
    size_t n = atomic_load(&c->n_nodes);
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_destroy(&c->nodes[i]->mu);
        free(c->nodes[i]->host);
        free(c->nodes[i]->name);
        free(c->nodes[i]);
    }
    pthread_rwlock_destroy(&c->lock);
    pthread_mutex_destroy(&c->refresh_mu);
    pthread_mutex_destroy(&c->pool_mu);
    free(c);
}

/* The distinct nodes that own slots, in slot order; returns the count. */
static size_t masters(rc_cluster *c, int *out) {
    size_t n = 0;
    pthread_rwlock_rdlock(&c->lock);
    for (unsigned slot = 0; slot < RC_SLOTS; slot++) {
        int node = c->slots[slot];
        if (node < 0) continue;
        size_t k = 0;
        while (k < n && out[k] != node)
            k++;
        if (k == n) out[n++] = node;
    }
    pthread_rwlock_unlock(&c->lock);
    return n;
}

int rc_cluster_ping(rc_cluster *c, hr_err *err) {
    int *nodes = hr_xmalloc(RC_MAX_NODES * sizeof *nodes);
    size_t n = masters(c, nodes);
    rc_connset *s = set_take(c);
    int rc = n ? HR_OK : hr_err_set(err, HR_EUNAVAIL, "redis: no node serves any slot");
    for (size_t k = 0; k < n && rc == HR_OK; k++) {
        redisContext *ctx = conn_get(c, s, nodes[k], err);
        if (ctx == NULL) {
            rc = HR_EUNAVAIL;
            break;
        }
        redisReply *r = redisCommand(ctx, "PING");
        if (r == NULL) {
            rc = io_error(c, c->nodes[nodes[k]], ctx, "PING", err);
            conn_drop(s, nodes[k]);
        } else if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0) {
            rc = hr_err_set(err, HR_EUNAVAIL, "redis %s: PING: %s", c->nodes[nodes[k]]->name,
                            r->str ? r->str : "unexpected reply");
        }
        freeReplyObject(r);
    }
    set_give(c, s);
    free(nodes);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                      */

enum { CMD_PENDING, CMD_DONE, CMD_FAILED };

/* What a round learnt that the next round must act on. */
typedef struct round_notes {
    bool refresh;   /* reload the slot map first */
    bool tryagain;  /* pause first: a multi-key op met a migration */
    hr_err failure; /* the first command failure, for the run's error */
    hr_err pending; /* the latest reason a command is still pending */
} round_notes;

static bool starts_with(const redisReply *r, const char *prefix) {
    size_t n = strlen(prefix);
    return r->len >= n && memcmp(r->str, prefix, n) == 0;
}

/* Append cmd, as EVAL with the script's body when cmd->eval. */
static void append_cmd(redisContext *ctx, const rc_cmd *cmd) {
    if (!cmd->eval) {
        redisAppendCommandArgv(ctx, cmd->argc, cmd->argv, cmd->argvlen);
        return;
    }
    const char **argv = hr_xmalloc((size_t)cmd->argc * sizeof *argv);
    size_t *lens = hr_xmalloc((size_t)cmd->argc * sizeof *lens);
    memcpy(argv, cmd->argv, (size_t)cmd->argc * sizeof *argv);
    memcpy(lens, cmd->argvlen, (size_t)cmd->argc * sizeof *lens);
    argv[0] = "EVAL";
    lens[0] = 4;
    argv[1] = cmd->script;
    lens[1] = strlen(cmd->script);
    redisAppendCommandArgv(ctx, cmd->argc, argv, lens);
    free(argv);
    free(lens);
}

static void cmd_fail(rc_cmd *cmd, const rc_node *n) {
    cmd->state = CMD_FAILED;
    cmd->rc = HR_EUNAVAIL;
    cmd->node = n ? n->name : NULL;
}

static void note_failure(round_notes *notes, const hr_err *e) {
    if (notes->failure.code == HR_OK) notes->failure = *e;
}

/* Sort pending commands by (node, position): each node's commands become one
 * contiguous run, in batch order. */
static int by_target(const void *a, const void *b, void *arg) {
    const rc_cmd *cmds = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (cmds[x].target != cmds[y].target) return cmds[x].target < cmds[y].target ? -1 : 1;
    return (x > y) - (x < y);
}

/* A redirection in a reply: MOVED (installed in the map), ASK (*ask_target
 * set) or TRYAGAIN; REDIR_NONE for any other reply. */
enum { REDIR_NONE, REDIR_MOVED, REDIR_ASK, REDIR_TRYAGAIN };

static int redirection(rc_cluster *c, const redisReply *r, const rc_node *from, int *ask_target) {
    if (r->type != REDIS_REPLY_ERROR) return REDIR_NONE;
    if (starts_with(r, "MOVED ")) {
        STAT_INC(c, st_moved);
        redirect_target(c, r, from, true);
        return REDIR_MOVED;
    }
    if (starts_with(r, "ASK ")) {
        STAT_INC(c, st_ask);
        *ask_target = redirect_target(c, r, from, false);
        return REDIR_ASK;
    }
    if (starts_with(r, "TRYAGAIN")) {
        STAT_INC(c, st_tryagain);
        return REDIR_TRYAGAIN;
    }
    return REDIR_NONE;
}

/* Judge one reply of a pipeline; takes ownership of r. A redirected
 * command stays pending for the next round. */
static void on_reply(rc_cluster *c, rc_cmd *cmd, const rc_node *from, redisReply *r, round_notes *notes) {
    int ask_target = -1;
    int redir = redirection(c, r, from, &ask_target);
    cmd->ask_target = ask_target;
    if (redir != REDIR_NONE) {
        notes->refresh |= redir == REDIR_MOVED;
        notes->tryagain |= redir == REDIR_TRYAGAIN;
        hr_err_set(&notes->pending, HR_EUNAVAIL, "redis %s: still redirected: %s", from->name, r->str);
        freeReplyObject(r);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        if (starts_with(r, "NOSCRIPT") && cmd->script && !cmd->eval) {
            /* The node lost its scripts (SCRIPT FLUSH) since we connected:
             * send the body next round (see "Scripts" in the header). */
            STAT_INC(c, st_noscript);
            cmd->eval = true;
            freeReplyObject(r);
            return;
        }
        if (starts_with(r, "CLUSTERDOWN") || starts_with(r, "LOADING") || starts_with(r, "MASTERDOWN")) {
            hr_err e;
            hr_err_set(&e, HR_EUNAVAIL, "redis %s: %s", from->name, r->str);
            note_failure(notes, &e);
            cmd_fail(cmd, from);
            freeReplyObject(r);
            return;
        }
    }
    cmd->state = CMD_DONE;
    cmd->reply = r;
    cmd->node = from->name;
}

/* One round: route the pending commands, write each node's pipeline, then
 * read every node's replies. */
static void run_round(rc_cluster *c, rc_connset *s, rc_cmd *cmds, size_t n, size_t *order,
                      round_notes *notes) {
    size_t m = 0;
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < n; i++) {
        rc_cmd *cmd = &cmds[i];
        if (cmd->state != CMD_PENDING) continue;
        cmd->target = cmd->ask_target >= 0 ? cmd->ask_target : c->slots[cmd->slot];
        if (cmd->target < 0) {
            hr_err_set(&notes->pending, HR_EUNAVAIL, "redis: slot %u is not served by any node", cmd->slot);
            notes->refresh = true;
            continue; /* stays pending: a refresh may find its node */
        }
        order[m++] = i;
    }
    pthread_rwlock_unlock(&c->lock);
    qsort_r(order, m, sizeof *order, by_target, cmds);

    /* Write every node's pipeline before reading any reply. A group whose
     * node cannot be reached stays pending (nothing was sent) and the map is
     * reloaded: the slot may have a new master after a failover. */
    for (size_t g = 0; g < m;) {
        size_t end = g;
        int node = cmds[order[g]].target;
        while (end < m && cmds[order[end]].target == node)
            end++;
        hr_err e;
        redisContext *ctx = conn_get(c, s, node, &notes->pending);
        if (ctx == NULL) {
            notes->refresh = true;
            for (size_t k = g; k < end; k++)
                cmds[order[k]].target = -1; /* unsent */
        } else {
            for (size_t k = g; k < end; k++) {
                const rc_cmd *cmd = &cmds[order[k]];
                if (cmd->ask_target >= 0) redisAppendCommand(ctx, "ASKING");
                append_cmd(ctx, cmd);
            }
            STAT_INC(c, st_round_trips);
            if (flush(ctx) != 0) {
                /* Part of the pipeline may have gone out: its commands may
                 * have run, so they fail rather than run twice. */
                io_error(c, c->nodes[node], ctx, "write", &e);
                note_failure(notes, &e);
                notes->refresh = true;
                for (size_t k = g; k < end; k++)
                    cmd_fail(&cmds[order[k]], c->nodes[node]);
                conn_drop(s, node);
            }
        }
        g = end;
    }

    for (size_t g = 0; g < m;) {
        size_t end = g;
        int node = cmds[order[g]].target;
        while (end < m && cmds[order[end]].target == node)
            end++;
        if (node < 0 || cmds[order[g]].state == CMD_FAILED) {
            g = end;
            continue;
        }
        redisContext *ctx = s->ctx[node];
        const rc_node *from = c->nodes[node];
        for (size_t k = g; k < end; k++) {
            rc_cmd *cmd = &cmds[order[k]];
            redisReply *r = NULL;
            bool ok = true;
            if (cmd->ask_target >= 0) {
                ok = redisGetReply(ctx, (void **)&r) == REDIS_OK;
                freeReplyObject(r);
                r = NULL;
            }
            if (ok) ok = redisGetReply(ctx, (void **)&r) == REDIS_OK;
            if (!ok) {
                hr_err e;
                io_error(c, from, ctx, "read", &e);
                note_failure(notes, &e);
                notes->refresh = true;
                for (size_t f = k; f < end; f++)
                    cmd_fail(&cmds[order[f]], from);
                conn_drop(s, node);
                break;
            }
            on_reply(c, cmd, from, r, notes);
        }
        g = end;
    }
}

static void pause_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Before retry round `round`: reload the map, or pause while a migration
 * completes, as the previous round asked. */
static void prepare_retry(rc_cluster *c, rc_connset *s, int round, round_notes *notes) {
    if (notes->refresh) refresh(c, s, false, NULL);
    if (notes->tryagain) pause_ms(round < 5 ? 10 * round : 50);
    notes->refresh = notes->tryagain = false;
}

/* Whether a run with commands still pending goes another round. Rounds
 * that followed a redirection or met an unreachable node are bounded by
 * RC_MAX_ROUNDS (*spent counts them); rounds that waited on a slot
 * migration (TRYAGAIN: multi-key commands wait for it to end) are bounded
 * by the timeout instead, and do not spend that budget, so that the MOVED
 * that follows the end of a migration can still be followed. */
static bool go_again(const rc_cluster *c, int *spent, const round_notes *notes, uint64_t started) {
    if (!notes->tryagain) return ++*spent < RC_MAX_ROUNDS;
    return hr_mono_ns() - started < (uint64_t)c->timeout_ms * 1000000;
}

/* Finish a run: the first command failure is the run's error; commands
 * still pending after the last round fail with the latest reason known. */
static int run_result(rc_cmd *cmds, size_t n, const round_notes *notes, hr_err *err) {
    int rc = HR_OK;
    bool gave_up = false;
    for (size_t i = 0; i < n; i++) {
        if (cmds[i].state == CMD_PENDING) {
            cmd_fail(&cmds[i], NULL);
            gave_up = true;
        } else if (cmds[i].state == CMD_FAILED && rc == HR_OK) {
            rc = cmds[i].rc;
        }
    }
    if (rc != HR_OK && notes->failure.code != HR_OK) return hr_err_set(err, rc, "%s", notes->failure.msg);
    if (gave_up && notes->pending.code != HR_OK)
        return hr_err_set(err, HR_EUNAVAIL, "%s (gave up after retrying)", notes->pending.msg);
    if (rc != HR_OK || gave_up) return hr_err_set(err, rc ? rc : HR_EUNAVAIL, "redis: command failed");
    return HR_OK;
}

/* One attempt at MULTI ... EXEC of every command on the node of their one
 * slot. Returns true when the transaction ran (every command done) or
 * failed for good (every command failed); false to retry. A MOVED, ASK or
 * TRYAGAIN, while queueing or for EXEC itself, discards the transaction:
 * nothing ran, so it goes again whole (after ASK, to the importing node,
 * prefixed with ASKING, which lasts until EXEC). */
static bool atomic_round(rc_cluster *c, rc_connset *s, rc_cmd *cmds, size_t n, int *ask_target,
                         round_notes *notes) {
    bool asking = *ask_target >= 0;
    pthread_rwlock_rdlock(&c->lock);
    int node = asking ? *ask_target : c->slots[cmds[0].slot];
    pthread_rwlock_unlock(&c->lock);
    *ask_target = -1;
    if (node < 0) {
        hr_err_set(&notes->pending, HR_EUNAVAIL, "redis: slot %u is not served by any node", cmds[0].slot);
        notes->refresh = true;
        return false;
    }
    const rc_node *from = c->nodes[node];
    redisContext *ctx = conn_get(c, s, node, &notes->pending);
    if (ctx == NULL) {
        notes->refresh = true;
        return false;
    }
    if (asking) redisAppendCommand(ctx, "ASKING");
    redisAppendCommand(ctx, "MULTI");
    for (size_t i = 0; i < n; i++)
        append_cmd(ctx, &cmds[i]);
    redisAppendCommand(ctx, "EXEC");
    STAT_INC(c, st_round_trips);

    /* Replies: [+OK for ASKING], +OK for MULTI, +QUEUED or an error per
     * command, then EXEC's array or error. */
    bool io_failed = flush(ctx) != 0;
    int redir = REDIR_NONE;
    hr_err refused = {0};
    redisReply *r = NULL;
    size_t before_exec = (asking ? 2 : 1) + n;
    for (size_t i = 0; i <= before_exec && !io_failed; i++) {
        freeReplyObject(r);
        r = NULL;
        if (redisGetReply(ctx, (void **)&r) != REDIS_OK) {
            io_failed = true;
            break;
        }
        if (i == before_exec) break; /* EXEC's reply, judged below */
        int d = redirection(c, r, from, ask_target);
        if (redir == REDIR_NONE) redir = d;
        if (d == REDIR_NONE && r->type == REDIS_REPLY_ERROR && refused.code == HR_OK)
            hr_err_set(&refused, HR_EIO, "redis %s: transaction refused: %s", from->name, r->str);
    }
    if (io_failed) {
        /* It may or may not have run (all of it or none). */
        hr_err e;
        io_error(c, from, ctx, "transaction", &e);
        note_failure(notes, &e);
        conn_drop(s, node);
        for (size_t i = 0; i < n; i++)
            cmd_fail(&cmds[i], from);
        return true;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == n) {
        for (size_t i = 0; i < n; i++) {
            cmds[i].reply = r->element[i];
            r->element[i] = NULL; /* now the command's */
            cmds[i].state = CMD_DONE;
            cmds[i].node = from->name;
        }
        freeReplyObject(r);
        return true;
    }
    if (redir == REDIR_NONE) redir = redirection(c, r, from, ask_target);
    if (redir == REDIR_NONE) {
        if (refused.code == HR_OK)
            hr_err_set(&refused, HR_EIO, "redis %s: EXEC: %s", from->name,
                       r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        note_failure(notes, &refused);
        for (size_t i = 0; i < n; i++) {
            cmd_fail(&cmds[i], from);
            cmds[i].rc = HR_EIO;
        }
        return true;
    }
    hr_err_set(&notes->pending, HR_EUNAVAIL, "redis %s: transaction still redirected: %s", from->name,
               r->type == REDIS_REPLY_ERROR ? r->str : "?");
    freeReplyObject(r);
    notes->refresh = redir == REDIR_MOVED;
    notes->tryagain = redir == REDIR_TRYAGAIN;
    return false;
}

int rc_run(rc_cluster *c, rc_cmd *cmds, size_t n, bool atomic, hr_err *err) {
    for (size_t i = 0; i < n; i++) {
        rc_cmd *cmd = &cmds[i];
        cmd->reply = NULL;
        cmd->rc = HR_OK;
        cmd->node = NULL;
        cmd->target = cmd->ask_target = -1;
        cmd->state = CMD_PENDING;
        /* In a transaction a NOSCRIPT would fail one command and let the
         * others run: send the bodies so that cannot happen. */
        cmd->eval = atomic && cmd->script != NULL;
    }
    if (n == 0) return HR_OK;
    if (atomic) {
        for (size_t i = 1; i < n; i++)
            if (cmds[i].slot != cmds[0].slot)
                return hr_err_set(err, HR_EINVAL,
                                  "an atomic batch must keep all its keys in one hash slot (found "
                                  "slots %u and %u): give them one hash tag",
                                  cmds[0].slot, cmds[i].slot);
    }
    /* Rounds: the first sends everything; each next one sends what was
     * redirected or could not be sent. */
    rc_connset *s = set_take(c);
    size_t *order = atomic ? NULL : hr_xmalloc(n * sizeof *order);
    round_notes notes = {0};
    int ask_target = -1, spent = 0;
    uint64_t started = hr_mono_ns();
    for (int round = 0;; round++) {
        if (round > 0) prepare_retry(c, s, round, &notes);
        STAT_INC(c, st_rounds);
        bool pending;
        if (atomic) {
            pending = !atomic_round(c, s, cmds, n, &ask_target, &notes);
        } else {
            run_round(c, s, cmds, n, order, &notes);
            pending = false;
            for (size_t i = 0; i < n && !pending; i++)
                pending = cmds[i].state == CMD_PENDING;
        }
        if (!pending || !go_again(c, &spent, &notes, started)) break;
    }
    int rc = run_result(cmds, n, &notes, err);
    free(order);
    set_give(c, s);
    return rc;
}

void rc_cmds_release(rc_cmd *cmds, size_t n) {
    for (size_t i = 0; i < n; i++) {
        freeReplyObject(cmds[i].reply);
        cmds[i].reply = NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* Observability and test hooks                                              */

rc_stats rc_cluster_stats(rc_cluster *c) {
    rc_stats st = {
        .round_trips = atomic_load(&c->st_round_trips),
        .rounds = atomic_load(&c->st_rounds),
        .moved = atomic_load(&c->st_moved),
        .ask = atomic_load(&c->st_ask),
        .tryagain = atomic_load(&c->st_tryagain),
        .noscript = atomic_load(&c->st_noscript),
        .refreshes = atomic_load(&c->st_refreshes),
        .connects = atomic_load(&c->st_connects),
    };
    return st;
}

void rc_cluster_debug_rotate_slots(rc_cluster *c) {
    int *nodes = hr_xmalloc(RC_MAX_NODES * sizeof *nodes);
    size_t n = masters(c, nodes);
    pthread_rwlock_wrlock(&c->lock);
    for (unsigned slot = 0; slot < RC_SLOTS && n > 1; slot++) {
        size_t k = 0;
        while (nodes[k] != c->slots[slot])
            k++;
        c->slots[slot] = (int16_t)nodes[(k + 1) % n];
    }
    pthread_rwlock_unlock(&c->lock);
    atomic_store(&c->last_refresh_ns, 0); /* let the next refresh happen */
    free(nodes);
}

void rc_cluster_debug_point_slots(rc_cluster *c, const char *host, int port) {
    pthread_rwlock_wrlock(&c->lock);
    int node = node_find_or_add_locked(c, host, strlen(host), port);
    for (unsigned slot = 0; slot < RC_SLOTS && node >= 0; slot++)
        c->slots[slot] = (int16_t)node;
    pthread_rwlock_unlock(&c->lock);
    atomic_store(&c->last_refresh_ns, 0);
}
