/* test_redis_cluster.c — the Redis Cluster client under the redis backend
 * (src/store/redis/cluster.c): slot hashing, routing, redirections,
 * timeouts and outages. What every store primitive answers is the
 * conformance suite's job (test_store*.c, suites `redis*`); this file tests the
 * plumbing that suite takes for granted.
 *
 * Suites:
 *   redis_cluster       no cluster needed: CRC16 and slots, URI parsing,
 *                       unreachable and silent nodes, and a private
 *                       standalone redis-server spawned by the test (outage,
 *                       restart, lost scripts) so the shared cluster is
 *                       never disturbed
 *   redis_cluster_live  against the cluster in $HERALD_TEST_REDIS (start one
 *                       with scripts/redis-cluster.sh start 7100); without
 *                       it every test FAILS, saying so
 *
 * Tests run in parallel processes against one cluster. The only test that
 * changes the cluster (a real slot migration) works on slot MIGRATION_SLOT,
 * which the test counting round trips keeps its keys out of.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "store/backend.h"
#include "store/redis/redis.h"

extern char **environ;

#define MIGRATION_SLOT 7777u

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static hr_slice S(const char *s) {
    return hr_slice_str(s);
}

static unsigned slot_of(const char *key) {
    return rc_key_slot(hr_slice_str(key));
}

/* A name unique to this process: prefix + pid + counter. */
static const char *uniq(char *buf, size_t cap, const char *fmt) {
    static unsigned counter;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%d-%u", (int)getpid(), counter++);
    snprintf(buf, cap, fmt, tmp);
    return buf;
}

static const char *live_uri(void) {
    const char *uri = getenv("HERALD_TEST_REDIS");
    if (uri == NULL || *uri == '\0')
        cr_assert_fail("HERALD_TEST_REDIS is not set: start a cluster with "
                       "`scripts/redis-cluster.sh start 7100` and export "
                       "HERALD_TEST_REDIS=redis://127.0.0.1:7100");
    return uri;
}

static hr_store *open_or_fail(const char *uri, int timeout_ms) {
    hr_store_options o = {.timeout_ms = timeout_ms};
    hr_store *s = NULL;
    hr_err err = {0};
    int rc = hr_store_open(uri, &o, &s, &err);
    cr_assert_eq(rc, HR_OK, "open %s: %s: %s", uri, hr_errname(rc), err.msg);
    return s;
}

static void exec_ok(hr_store *s, hr_batch *b, unsigned flags) {
    hr_err err = {0};
    int rc = hr_store_exec(s, b, flags, &err);
    cr_assert_eq(rc, HR_OK, "exec: %s: %s", hr_errname(rc), err.msg);
}

static void assert_value(const hr_result *r, const char *want) {
    cr_assert_eq(r->rc, HR_OK, "rc %s", hr_errname(r->rc));
    cr_assert(hr_slice_eq(r->value, S(want)), "value '%.*s', expected '%s'", (int)r->value.len, r->value.ptr,
              want);
}

/* A loopback port nobody listens on (bound then closed: good enough). */
static int closed_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A socket that accepts connections (in the kernel) and never answers. */
static int silent_listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 16) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static double elapsed_ms(uint64_t since) {
    return (double)(hr_mono_ns() - since) / 1e6;
}

/* Raw hiredis, to look at the cluster behind the client's back. */
static redisContext *raw_connect(const char *host, int port) {
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    cr_assert(c && !c->err, "raw connect %s:%d: %s", host, port, c ? c->errstr : "oom");
    redisSetTimeout(c, tv);
    return c;
}

static redisReply *raw(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    cr_assert(r != NULL, "raw command '%s': %s", fmt, c->errstr);
    return r;
}

static void raw_ok(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    cr_assert(r != NULL, "raw '%s': %s", fmt, c->errstr);
    cr_assert(r->type != REDIS_REPLY_ERROR, "raw '%s': %s", fmt, r->str);
    freeReplyObject(r);
}

/* The first seed of a redis:// URI. */
static void first_seed(const char *uri, char *host, size_t cap, int *port) {
    const char *p = uri + strlen("redis://"), *colon = strchr(p, ':');
    cr_assert(colon != NULL);
    snprintf(host, cap, "%.*s", (int)(colon - p), p);
    *port = atoi(colon + 1);
}

typedef struct master {
    char host[64];
    int port;
    char id[48];
    redisContext *ctx;
} master;

typedef struct cluster_view {
    master m[16];
    int n;
    int owner[RC_SLOTS]; /* index into m */
} cluster_view;

/* The masters and slot owners, from CLUSTER SLOTS of the first seed. */
static cluster_view *view_cluster(const char *uri) {
    char host[64];
    int port;
    first_seed(uri, host, sizeof host, &port);
    redisContext *seed = raw_connect(host, port);
    redisReply *r = raw(seed, "CLUSTER SLOTS");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "CLUSTER SLOTS: %s", r->str ? r->str : "?");
    cluster_view *v = calloc(1, sizeof *v);
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i], *node = e->element[2];
        int k = 0;
        while (k < v->n && strcmp(v->m[k].id, node->element[2]->str) != 0)
            k++;
        if (k == v->n) {
            cr_assert(v->n < 16);
            snprintf(v->m[k].host, sizeof v->m[k].host, "%s", node->element[0]->str);
            v->m[k].port = (int)node->element[1]->integer;
            snprintf(v->m[k].id, sizeof v->m[k].id, "%s", node->element[2]->str);
            v->n++;
        }
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            v->owner[s] = k;
    }
    freeReplyObject(r);
    redisFree(seed);
    for (int k = 0; k < v->n; k++)
        v->m[k].ctx = raw_connect(v->m[k].host, v->m[k].port);
    return v;
}

static void view_free(cluster_view *v) {
    if (v == NULL) return;
    for (int k = 0; k < v->n; k++)
        redisFree(v->m[k].ctx);
    free(v);
}

/* ------------------------------------------------------------------------ */
/* Slots (no cluster needed)                                                 */

TestSuite(redis_cluster, .timeout = 60);

Test(redis_cluster, crc16_vectors) {
    cr_assert_eq(rc_crc16("123456789", 9), 0x31C3, "the XMODEM check value");
    cr_assert_eq(rc_crc16("", 0), 0);
    cr_assert_eq(rc_crc16("A", 1), 0x58E5);
}

Test(redis_cluster, key_slot_known_keys) {
    /* reference values from CLUSTER KEYSLOT of Redis 7.0 */
    cr_assert_eq(slot_of("foo"), 12182);
    cr_assert_eq(slot_of("bar"), 5061);
    cr_assert_eq(slot_of("hello"), 866);
    cr_assert_eq(slot_of("123456789"), 12739);
    cr_assert_eq(slot_of("{user1000}.following"), 3443);
    cr_assert_eq(slot_of("{user1000}.followers"), 3443, "one tag, one slot");
    cr_assert_eq(slot_of("user1000"), 3443, "the tag is what is hashed");
}

Test(redis_cluster, hash_tag_edge_cases) {
    cr_assert_eq(slot_of("{}foo"), 9500, "an empty tag: the whole key is hashed");
    cr_assert_neq(slot_of("{}foo"), slot_of("foo"));
    cr_assert_eq(slot_of("foo{}{bar}"), 8363, "the first {} is empty: whole key, not 'bar'");
    cr_assert_eq(slot_of("foo{{bar}}zap"), 4015, "tag is '{bar'");
    cr_assert_eq(slot_of("foo{{bar}}zap"), slot_of("{bar"));
    cr_assert_eq(slot_of("foo{bar}{zap}"), slot_of("bar"), "only the first tag counts");
    cr_assert_eq(slot_of("foo{bar"), 15278, "no closing brace: whole key");
    cr_assert_eq(slot_of("a{b}c"), slot_of("b"));
    cr_assert_eq(slot_of("{user1000"), 8723);
    cr_assert_eq(slot_of("x}y{z}"), slot_of("z"), "a '}' before the first '{' does not matter");
    /* binary keys: a NUL inside the tag is part of it */
    hr_slice k1 = hr_slice_of("{a\0b}x", 6), k2 = hr_slice_of("{a\0b}y", 6);
    cr_assert_eq(rc_key_slot(k1), rc_key_slot(k2));
    cr_assert_eq(rc_key_slot(k1), rc_crc16("a\0b", 3) & 16383);
}

Test(redis_cluster, slot_tags_cover_every_slot) {
    for (unsigned s = 0; s < RC_SLOTS; s++) {
        const char *tag = rc_slot_tag(s);
        size_t n = strlen(tag);
        cr_assert(n >= 1 && n <= 7, "slot %u: tag '%s'", s, tag);
        cr_assert(strpbrk(tag, "{}") == NULL);
        cr_assert_eq(rc_crc16(tag, n) & 16383, s, "tag '%s' is not of slot %u", tag, s);
        char key[32];
        snprintf(key, sizeof key, "{%s}anything", tag);
        cr_assert_eq(slot_of(key), s);
    }
    cr_assert_str_eq(rc_slot_tag(5), rc_slot_tag(5), "stable");
}

/* ------------------------------------------------------------------------ */
/* Opening, outages, timeouts (no cluster needed)                           */

Test(redis_cluster, bad_uris_rejected) {
    const char *bad[] = {"redis://",           "redis://host",      "redis://host:",    "redis://host:0",
                         "redis://host:65536", "redis://:7000",     "redis://h:1,",     "redis://h:1,h2",
                         "redis://h:12x",      "redis://[::1]7000", "redis://h:7000/db"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hr_store *s = (hr_store *)1;
        hr_err err = {0};
        int rc = hr_store_open(bad[i], NULL, &s, &err);
        cr_assert_eq(rc, HR_EINVAL, "%s: %s", bad[i], hr_errname(rc));
        cr_assert_null(s);
        cr_assert(strstr(err.msg, "redis://HOST:PORT") != NULL, "%s: message '%s'", bad[i], err.msg);
    }
}

Test(redis_cluster, unavailable_closed_port) {
    int port = closed_port();
    char uri[64], node[32];
    snprintf(uri, sizeof uri, "redis://127.0.0.1:%d", port);
    snprintf(node, sizeof node, "127.0.0.1:%d", port);
    hr_store_options o = {.timeout_ms = 500};
    hr_store *s = (hr_store *)1;
    hr_err err = {0};
    uint64_t t0 = hr_mono_ns();
    int rc = hr_store_open(uri, &o, &s, &err);
    cr_assert_eq(rc, HR_EUNAVAIL, "%s", hr_errname(rc));
    cr_assert_null(s);
    cr_assert_lt(elapsed_ms(t0), 500, "a refused connection fails at once");
    cr_assert(strstr(err.msg, node) && strstr(err.msg, "refused"), "message names the node and why: %s",
              err.msg);
}

Test(redis_cluster, unavailable_silent_node_times_out) {
    int port;
    int fd = silent_listener(&port);
    char uri[64];
    snprintf(uri, sizeof uri, "redis://127.0.0.1:%d", port);
    hr_store_options o = {.timeout_ms = 300};
    hr_store *s = (hr_store *)1;
    hr_err err = {0};
    uint64_t t0 = hr_mono_ns();
    int rc = hr_store_open(uri, &o, &s, &err);
    double ms = elapsed_ms(t0);
    close(fd);
    cr_assert_eq(rc, HR_EUNAVAIL, "%s", hr_errname(rc));
    cr_assert(ms >= 250 && ms < 1500, "gave up after %.0f ms, timeout is 300", ms);
    cr_assert(strstr(err.msg, "no answer within 300 ms"), "message: %s", err.msg);
}

/* The private redis-server running now, if any: a failed assertion ends
 * the test before its stop_redis, and the .fini below kills it then. */
static pid_t spawned = -1;

/* A private redis-server (no cluster: the client treats it as one node that
 * owns every slot), so outages can be staged without touching the shared
 * cluster. Its standard streams are /dev/null: one left holding the test
 * runner's stdout would keep a pipe reading it (`unit | tail`) open. */
static pid_t spawn_redis(int port) {
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    char *argv[] = {"redis-server", "--port", port_s,        "--bind", "127.0.0.1", "--save",    "",
                    "--appendonly", "no",     "--daemonize", "no",     "--logfile", "/dev/null", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (int fd = 0; fd <= 2; fd++)
        posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, "redis-server", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(rc, 0, "cannot start redis-server: %s", strerror(rc));
    spawned = pid;
    for (int i = 0; i < 100; i++) { /* up to 5 s */
        struct timeval tv = {0, 200000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
        bool up = c && !c->err;
        if (c) redisFree(c);
        if (up) return pid;
        usleep(50 * 1000);
    }
    kill(pid, SIGKILL);
    cr_assert_fail("redis-server on port %d did not come up", port);
    return -1;
}

static void stop_redis(pid_t pid) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    spawned = -1;
}

static void stop_spawned(void) {
    if (spawned > 0) stop_redis(spawned);
}

Test(redis_cluster, standalone_outage_restart_and_lost_scripts, .fini = stop_spawned) {
    int port = closed_port();
    pid_t pid = spawn_redis(port);
    char uri[64];
    snprintf(uri, sizeof uri, "redis://127.0.0.1:%d", port);
    hr_store *s = open_or_fail(uri, 500);
    rc_cluster *c = hr_redis_store_cluster(s);
    hr_batch *b = hr_batch_new();
    hr_err err = {0};

    /* works as a one-node cluster, scripts included */
    hr_put(b, S("a"), S("1"), 0);
    hr_zadd(b, S("z"), 1, S("m"));
    /* from a cursor: a read without one is a native ZRANGE (redis/internal.h) */
    hr_zrange_spec sp = hr_zrange_all(false, 10);
    sp.has_cursor = true;
    sp.cursor_score = 0;
    sp.cursor_member = S("");
    size_t zr = hr_zrange(b, S("z"), &sp);
    exec_ok(s, b, 0);
    cr_assert_eq(hr_batch_result(b, zr)->n_entries, 1);
    cr_assert_eq(hr_store_ping(s, &err), HR_OK, "%s", err.msg);

    /* the node forgets its scripts: EVALSHA gets NOSCRIPT, EVAL follows */
    redisContext *rawc = raw_connect("127.0.0.1", port);
    raw_ok(rawc, "SCRIPT FLUSH");
    redisFree(rawc);
    rc_stats st0 = rc_cluster_stats(c);
    hr_batch_reset(b);
    zr = hr_zrange(b, S("z"), &sp);
    exec_ok(s, b, 0);
    cr_assert_eq(hr_batch_result(b, zr)->n_entries, 1);
    cr_assert_eq(rc_cluster_stats(c).noscript, st0.noscript + 1);

    /* the node dies: a batch fails fast, naming the node */
    stop_redis(pid);
    hr_batch_reset(b);
    hr_get(b, S("a"));
    uint64_t t0 = hr_mono_ns();
    int rc = hr_store_exec(s, b, 0, &err);
    cr_assert_eq(rc, HR_EUNAVAIL, "%s", hr_errname(rc));
    cr_assert_lt(elapsed_ms(t0), 500, "within the timeout");
    cr_assert_eq(hr_batch_result(b, 0)->rc, HR_EUNAVAIL);
    char node[32];
    snprintf(node, sizeof node, "127.0.0.1:%d", port);
    cr_assert(strstr(err.msg, node) && strstr(err.msg, "refused"), "message: %s", err.msg);
    cr_assert_eq(hr_store_ping(s, &err), HR_EUNAVAIL);

    /* it comes back: after the reconnect backoff the store answers again */
    pid = spawn_redis(port);
    bool back = false;
    for (int i = 0; i < 40 && !back; i++) {
        hr_batch_reset(b);
        hr_put(b, S("a"), S("2"), 0);
        hr_get(b, S("a"));
        back = hr_store_exec(s, b, 0, NULL) == HR_OK;
        if (!back) usleep(100 * 1000);
    }
    cr_assert(back, "no recovery within 4 s of the restart");
    assert_value(hr_batch_result(b, 1), "2");
    stop_redis(pid);
    hr_batch_free(b);
    hr_store_close(s);
}

/* ------------------------------------------------------------------------ */
/* Against the live cluster                                                  */

TestSuite(redis_cluster_live, .timeout = 60);

Test(redis_cluster_live, keyslot_matches_server) {
    cluster_view *v = view_cluster(live_uri());
    redisContext *c = v->m[0].ctx;
    unsigned seed = (unsigned)getpid();
    for (int i = 0; i < 300; i++) {
        unsigned char key[24];
        size_t n = 1 + (size_t)(rand_r(&seed) % (int)sizeof key);
        /* random bytes, with braces often enough to make tags */
        for (size_t k = 0; k < n; k++) {
            int x = rand_r(&seed) % 8;
            key[k] = x == 0 ? '{' : x == 1 ? '}' : (unsigned char)rand_r(&seed);
        }
        const char *argv[3] = {"CLUSTER", "KEYSLOT", (const char *)key};
        size_t lens[3] = {7, 7, n};
        redisReply *r = redisCommandArgv(c, 3, argv, lens);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER);
        cr_assert_eq(rc_key_slot(hr_slice_of((const char *)key, n)), (unsigned)r->integer, "key %d", i);
        freeReplyObject(r);
    }
    view_free(v);
}

Test(redis_cluster_live, ping_every_master) {
    hr_store *s = open_or_fail(live_uri(), 0);
    hr_err err = {0};
    cr_assert_eq(hr_store_ping(s, &err), HR_OK, "%s", err.msg);
    cr_assert_str_eq(hr_store_caps_of(s)->kind, "redis");
    hr_store_close(s);
}

Test(redis_cluster_live, dead_first_seed_is_skipped) {
    char uri[128];
    snprintf(uri, sizeof uri, "redis://127.0.0.1:%d,%s", closed_port(), live_uri() + strlen("redis://"));
    hr_store *s = open_or_fail(uri, 500);
    hr_err err = {0};
    cr_assert_eq(hr_store_ping(s, &err), HR_OK, "%s", err.msg);
    hr_store_close(s);
}

Test(redis_cluster_live, batch_of_1000_keys_one_round_trip_per_node) {
    cluster_view *v = view_cluster(live_uri());
    hr_store *s = open_or_fail(live_uri(), 0);
    rc_cluster *c = hr_redis_store_cluster(s);
    enum { N = 1000 };
    static char keys[N][48], vals[N][48];
    int per_node[16] = {0};
    char base[32];
    uniq(base, sizeof base, "rt:%s");
    hr_batch *b = hr_batch_new();
    for (int i = 0, made = 0; made < N; i++) {
        snprintf(keys[made], sizeof keys[made], "%s:%d", base, i);
        if (slot_of(keys[made]) == MIGRATION_SLOT) continue; /* see the top of the file */
        snprintf(vals[made], sizeof vals[made], "value-%d", i);
        hr_put(b, S(keys[made]), S(vals[made]), hr_now_ms() + 600000);
        per_node[v->owner[slot_of(keys[made])]]++;
        made++;
    }
    for (int k = 0; k < v->n; k++)
        cr_assert_gt(per_node[k], 0, "the keys reach every master");

    rc_stats before = rc_cluster_stats(c);
    exec_ok(s, b, 0);
    rc_stats after = rc_cluster_stats(c);
    cr_assert_eq(after.round_trips - before.round_trips, (uint64_t)v->n, "one pipeline per master");
    cr_assert_eq(after.rounds - before.rounds, 1);
    cr_assert_eq(after.moved - before.moved, 0);

    hr_batch_reset(b);
    for (int i = 0; i < N; i++)
        hr_get(b, S(keys[i]));
    before = rc_cluster_stats(c);
    exec_ok(s, b, 0);
    after = rc_cluster_stats(c);
    cr_assert_eq(after.round_trips - before.round_trips, (uint64_t)v->n);
    for (int i = 0; i < N; i++)
        assert_value(hr_batch_result(b, (size_t)i), vals[i]);

    /* each key sits on the master that owns its slot: asked directly, the
     * owner answers (a wrong one would say MOVED) */
    for (int i = 0; i < N; i += 7) {
        redisReply *r = raw(v->m[v->owner[slot_of(keys[i])]].ctx, "GET %s", keys[i]);
        cr_assert_eq(r->type, REDIS_REPLY_STRING, "%s: %s", keys[i], r->str ? r->str : "nil");
        cr_assert_str_eq(r->str, vals[i]);
        freeReplyObject(r);
    }
    hr_batch_free(b);
    hr_store_close(s);
    view_free(v);
}

Test(redis_cluster_live, stale_slot_map_is_refreshed_on_moved) {
    hr_store *s = open_or_fail(live_uri(), 0);
    rc_cluster *c = hr_redis_store_cluster(s);
    char base[32], key[64];
    uniq(base, sizeof base, "mv:%s");
    hr_batch *b = hr_batch_new();
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "%s:%d", base, i);
        hr_put(b, S(key), S(key), 0);
    }
    exec_ok(s, b, 0);

    /* every slot now points at the wrong master, as after a resharding */
    rc_cluster_debug_rotate_slots(c);
    rc_stats before = rc_cluster_stats(c);
    hr_batch_reset(b);
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "%s:%d", base, i);
        hr_get(b, S(key));
        hr_incr(b, S(key), 0); /* on a value: WRONGTYPE, answered in order */
    }
    exec_ok(s, b, 0);
    rc_stats after = rc_cluster_stats(c);
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "%s:%d", base, i);
        assert_value(hr_batch_result(b, (size_t)(2 * i)), key);
        cr_assert_eq(hr_batch_result(b, (size_t)(2 * i + 1))->rc, HR_EWRONGTYPE);
    }
    cr_assert_gt(after.moved - before.moved, 0, "the nodes answered MOVED");
    cr_assert_geq(after.refreshes - before.refreshes, 1, "and the map was reloaded");
    cr_assert_eq(after.rounds - before.rounds, 2, "one retry round was enough");

    /* the reloaded map is right: no MOVED any more */
    before = rc_cluster_stats(c);
    hr_batch_reset(b);
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "%s:%d", base, i);
        hr_del(b, S(key));
    }
    exec_ok(s, b, 0);
    after = rc_cluster_stats(c);
    cr_assert_eq(after.moved - before.moved, 0);
    hr_batch_free(b);
    hr_store_close(s);
}

Test(redis_cluster_live, unreachable_node_in_map_triggers_refresh) {
    hr_store *s = open_or_fail(live_uri(), 500);
    rc_cluster *c = hr_redis_store_cluster(s);
    char key[64];
    uniq(key, sizeof key, "un:%s");
    /* as after a failover the client has not seen: the map names a node
     * that is gone */
    rc_cluster_debug_point_slots(c, "127.0.0.1", closed_port());
    rc_stats before = rc_cluster_stats(c);
    hr_batch *b = hr_batch_new();
    hr_put(b, S(key), S("v"), 0);
    hr_get(b, S(key));
    hr_del(b, S(key));
    exec_ok(s, b, 0);
    assert_value(hr_batch_result(b, 1), "v");
    cr_assert_geq(rc_cluster_stats(c).refreshes - before.refreshes, 1);
    hr_err err = {0};
    cr_assert_eq(hr_store_ping(s, &err), HR_OK, "%s", err.msg);
    hr_batch_free(b);
    hr_store_close(s);
}

Test(redis_cluster_live, silent_node_costs_one_timeout) {
    hr_store *s = open_or_fail(live_uri(), 300);
    rc_cluster *c = hr_redis_store_cluster(s);
    int port;
    int fd = silent_listener(&port);
    rc_cluster_debug_point_slots(c, "127.0.0.1", port);
    char key[64];
    uniq(key, sizeof key, "si:%s");
    hr_batch *b = hr_batch_new();
    hr_put(b, S(key), S("v"), 0);
    uint64_t t0 = hr_mono_ns();
    exec_ok(s, b, 0); /* the connect times out, the map is reloaded, the put goes to the owner */
    double ms = elapsed_ms(t0);
    close(fd);
    cr_assert(ms >= 250 && ms < 1500, "took %.0f ms with a 300 ms timeout", ms);
    hr_batch_reset(b);
    hr_del(b, S(key));
    exec_ok(s, b, 0);
    cr_assert_eq(hr_batch_result(b, 0)->num, 1);
    hr_batch_free(b);
    hr_store_close(s);
}

Test(redis_cluster_live, atomic_batch_across_slots_refused_before_sending) {
    hr_store *s = open_or_fail(live_uri(), 0);
    rc_cluster *c = hr_redis_store_cluster(s);
    char k1[64], k2[64];
    uniq(k1, sizeof k1, "{at-a-%s}:x");
    uniq(k2, sizeof k2, "{at-b-%s}:x");
    cr_assert_neq(slot_of(k1), slot_of(k2));
    hr_batch *b = hr_batch_new();
    hr_put(b, S(k1), S("1"), 0);
    hr_put(b, S(k2), S("2"), 0);
    rc_stats before = rc_cluster_stats(c);
    hr_err err = {0};
    int rc = hr_store_exec(s, b, HR_EXEC_ATOMIC, &err);
    cr_assert_eq(rc, HR_EINVAL, "%s", hr_errname(rc));
    cr_assert(strstr(err.msg, "hash tag"), "message says what to do: %s", err.msg);
    cr_assert_eq(hr_batch_result(b, 0)->rc, HR_EINVAL);
    cr_assert_eq(hr_batch_result(b, 1)->rc, HR_EINVAL);
    cr_assert_eq(rc_cluster_stats(c).round_trips, before.round_trips, "nothing was sent");
    hr_batch_reset(b);
    hr_get(b, S(k1));
    hr_get(b, S(k2));
    exec_ok(s, b, 0);
    cr_assert_eq(hr_batch_result(b, 0)->rc, HR_ENOTFOUND, "nothing was written");
    cr_assert_eq(hr_batch_result(b, 1)->rc, HR_ENOTFOUND);
    hr_batch_free(b);
    hr_store_close(s);
}

Test(redis_cluster_live, atomic_batch_with_scripts) {
    hr_store *s = open_or_fail(live_uri(), 0);
    char tag[48], kd[64], kz[64], kv[64];
    uniq(tag, sizeof tag, "{as-%s}");
    snprintf(kd, sizeof kd, "%s:d", tag);
    snprintf(kz, sizeof kz, "%s:z", tag);
    snprintf(kv, sizeof kv, "%s:v", tag);
    hr_distinct_params p = {.now_ms = hr_now_ms(), .ttl_ms = 60000, .exact_limit = 2};
    hr_batch *b = hr_batch_new();
    hr_dadd(b, S(kd), S("a"), &p);
    hr_dadd(b, S(kd), S("b"), &p);
    size_t i_conv = hr_dadd(b, S(kd), S("c"), &p); /* converts to sketch, inside MULTI */
    hr_zadd(b, S(kz), 1, S("m1"));
    hr_zadd(b, S(kz), 2, S("m2"));
    hr_zrange_spec sp = hr_zrange_all(true, 1);
    size_t i_range = hr_zrange(b, S(kz), &sp);
    hr_put(b, S(kv), S("v"), 0);
    size_t i_exp = hr_expire(b, S(kv), hr_now_ms() + 60000);
    size_t i_del = hr_del(b, S(kd));
    size_t i_count = hr_dcount(b, S(kd), &p);
    exec_ok(s, b, HR_EXEC_ATOMIC);
    cr_assert_eq(hr_batch_result(b, i_conv)->num, 3);
    const hr_result *r = hr_batch_result(b, i_range);
    cr_assert_eq(r->n_entries, 1);
    cr_assert(hr_slice_eq(r->entries[0].member, S("m2")) && r->more);
    cr_assert_eq(hr_batch_result(b, i_exp)->num, 1);
    cr_assert_eq(hr_batch_result(b, i_del)->num, 1);
    cr_assert_eq(hr_batch_result(b, i_count)->num, 0);
    hr_batch_reset(b);
    hr_del(b, S(kz));
    hr_del(b, S(kv));
    exec_ok(s, b, HR_EXEC_ATOMIC);
    hr_batch_free(b);
    hr_store_close(s);
}

/* Invalid arguments and counter overflow are answers about one op (as the
 * RocksDB backend gives them): that op is not sent, the others run. */
Test(redis_cluster_live, invalid_ops_answered_alone) {
    hr_store *s = open_or_fail(live_uri(), 0);
    char k[64], k2[64], c[64];
    uniq(k, sizeof k, "inv:%s:k");
    uniq(k2, sizeof k2, "inv:%s:k2");
    uniq(c, sizeof c, "inv:%s:c");
    hr_batch *b = hr_batch_new();
    hr_zrange_spec no_limit = hr_zrange_all(false, 0);
    size_t put = hr_put(b, S(k), S("v"), 0);
    size_t bad_range = hr_zrange(b, S(k), &no_limit);
    size_t get = hr_get(b, S(k));
    size_t empty_key = hr_get(b, hr_slice_of("", 0));
    size_t max = hr_incr(b, S(c), INT64_MAX);
    size_t overflow = hr_incr(b, S(c), 1);
    size_t after = hr_counter_get(b, S(c));
    size_t past = hr_put(b, S(k2), S("x"), -5); /* a negative time is in the past */
    size_t gone = hr_get(b, S(k2));
    exec_ok(s, b, 0);
    cr_assert_eq(hr_batch_result(b, put)->rc, HR_OK);
    cr_assert_eq(hr_batch_result(b, bad_range)->rc, HR_EINVAL);
    assert_value(hr_batch_result(b, get), "v");
    cr_assert_eq(hr_batch_result(b, empty_key)->rc, HR_EINVAL);
    cr_assert_eq(hr_batch_result(b, max)->num, INT64_MAX);
    cr_assert_eq(hr_batch_result(b, overflow)->rc, HR_EINVAL);
    cr_assert_eq(hr_batch_result(b, after)->num, INT64_MAX, "the overflowing add changed nothing");
    cr_assert_eq(hr_batch_result(b, past)->rc, HR_OK);
    cr_assert_eq(hr_batch_result(b, gone)->rc, HR_ENOTFOUND);
    hr_batch_reset(b);
    hr_del(b, S(k));
    hr_del(b, S(c));
    exec_ok(s, b, 0);
    hr_batch_free(b);
    hr_store_close(s);
}

/* Keys on node c matching *needle* (SCAN, binary-safe pattern). */
static long count_keys(redisContext *c, const char *needle) {
    char pattern[128];
    snprintf(pattern, sizeof pattern, "*%s*", needle);
    long n = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = raw(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        n += (long)r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

/* A distinct counter in sketch mode spans several keys: all in its key's
 * slot (with or without a hash tag), and hr_expire / hr_del reach them. */
Test(redis_cluster_live, distinct_subkeys_follow_their_key) {
    cluster_view *v = view_cluster(live_uri());
    hr_store *s = open_or_fail(live_uri(), 0);
    char untagged[64], tagged[64], odd[64], needle[48];
    uniq(needle, sizeof needle, "dk-%s");
    snprintf(untagged, sizeof untagged, "%s:plain", needle);
    snprintf(tagged, sizeof tagged, "{%s}:tagged", needle);
    snprintf(odd, sizeof odd, "{}%s}{", needle); /* braces, but no tag */
    const char *keys[] = {untagged, tagged, odd};
    int64_t t0 = hr_now_ms();
    hr_batch *b = hr_batch_new();
    for (int k = 0; k < 3; k++) {
        hr_batch_reset(b);
        /* 40 members over 4 s with ttl 16 s: W = 1 s, several buckets */
        for (int i = 0; i < 40; i++) {
            hr_distinct_params p = {.now_ms = t0 + i * 100, .ttl_ms = 16000, .exact_limit = 5};
            char m[16];
            snprintf(m, sizeof m, "m%d", i);
            hr_dadd(b, S(keys[k]), S(m), &p);
        }
        exec_ok(s, b, 0);
        cr_assert_eq(hr_batch_result(b, 39)->num, 40, "%s", keys[k]);
        /* every sub-key (each has the key in its name) is on the master
         * owning the key's slot: the metadata and 4 or 5 buckets */
        master *owner = &v->m[v->owner[slot_of(keys[k])]];
        long subkeys = count_keys(owner->ctx, keys[k]);
        cr_assert_geq(subkeys, 5, "%s: %ld keys on its owner", keys[k], subkeys);
        for (int o = 0; o < v->n; o++)
            if (&v->m[o] != owner) cr_assert_eq(count_keys(v->m[o].ctx, keys[k]), 0, "keys on another node");
    }
    /* an expiry in the past and a delete take every sub-key with them */
    hr_batch_reset(b);
    hr_expire(b, S(untagged), t0 - 1);
    hr_del(b, S(tagged));
    hr_expire(b, S(odd), t0 - 1);
    exec_ok(s, b, 0);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(hr_batch_result(b, (size_t)k)->num, 1);
    for (int o = 0; o < v->n; o++)
        cr_assert_eq(count_keys(v->m[o].ctx, needle), 0, "leftover sub-keys");
    hr_batch_free(b);
    hr_store_close(s);
    view_free(v);
}

/* A real migration of MIGRATION_SLOT from its owner A to another master B
 * and back, as redis-cli --cluster reshard does it: ASK while migrating,
 * MOVED after. */
static cluster_view *mig_view;

/* The steps of redis-cli --cluster reshard for one slot: mark it
 * migrating on its owner and importing on the target (start_move), then
 * MIGRATE its keys and hand it over on every master (finish_move). */
static void start_move(cluster_view *v, int from, int to) {
    raw_ok(v->m[to].ctx, "CLUSTER SETSLOT %u IMPORTING %s", MIGRATION_SLOT, v->m[from].id);
    raw_ok(v->m[from].ctx, "CLUSTER SETSLOT %u MIGRATING %s", MIGRATION_SLOT, v->m[to].id);
}

static void finish_move(cluster_view *v, int from, int to) {
    master *a = &v->m[from], *b = &v->m[to];
    char port[16];
    snprintf(port, sizeof port, "%d", b->port);
    for (;;) {
        redisReply *r = raw(a->ctx, "CLUSTER GETKEYSINSLOT %u 100", MIGRATION_SLOT);
        size_t n = r->elements;
        if (n > 0) {
            /* MIGRATE host port "" db timeout KEYS k1 k2 ... */
            const char *head[7] = {"MIGRATE", b->host, port, "", "0", "5000", "KEYS"};
            const char **argv = calloc(n + 7, sizeof *argv);
            size_t *lens = calloc(n + 7, sizeof *lens);
            for (int k = 0; k < 7; k++)
                argv[k] = head[k], lens[k] = strlen(head[k]);
            for (size_t k = 0; k < n; k++)
                argv[7 + k] = r->element[k]->str, lens[7 + k] = r->element[k]->len;
            redisReply *m = redisCommandArgv(a->ctx, (int)(n + 7), argv, lens);
            cr_assert(m && m->type != REDIS_REPLY_ERROR, "MIGRATE: %s", m ? m->str : a->ctx->errstr);
            freeReplyObject(m);
            free(argv);
            free(lens);
        }
        freeReplyObject(r);
        if (n == 0) break;
    }
    /* the new owner first, as redis-cli does, then everyone else */
    raw_ok(b->ctx, "CLUSTER SETSLOT %u NODE %s", MIGRATION_SLOT, b->id);
    for (int k = 0; k < v->n; k++)
        if (k != to) raw_ok(v->m[k].ctx, "CLUSTER SETSLOT %u NODE %s", MIGRATION_SLOT, b->id);
    v->owner[MIGRATION_SLOT] = to;
}

static void mig_fini(void) {
    /* if a test failed half-way, leave no slot half-migrated */
    if (mig_view == NULL) return;
    for (int k = 0; k < mig_view->n; k++) {
        redisReply *r = redisCommand(mig_view->m[k].ctx, "CLUSTER SETSLOT %u STABLE", MIGRATION_SLOT);
        freeReplyObject(r);
    }
    view_free(mig_view);
    mig_view = NULL;
}

typedef struct late_add {
    hr_store *s;
    const char *key;
    hr_distinct_params p;
    int rc;
    hr_err err;
    int64_t num;
} late_add;

static void *add_late(void *arg) {
    late_add *la = arg;
    hr_batch *b = hr_batch_new();
    hr_dadd(b, S(la->key), S("z"), &la->p);
    la->rc = hr_store_exec(la->s, b, 0, &la->err);
    la->num = hr_batch_result(b, 0)->num;
    hr_batch_free(b);
    return NULL;
}

Test(redis_cluster_live, slot_migration_ask_then_moved, .fini = mig_fini) {
    cluster_view *v = mig_view = view_cluster(live_uri());
    cr_assert_geq(v->n, 2, "needs two masters");
    int a = v->owner[MIGRATION_SLOT], bn = (a + 1) % v->n;
    hr_store *s = open_or_fail(live_uri(), 0);
    rc_cluster *c = hr_redis_store_cluster(s);
    char tag[48], k_old[64], k_new[64], k_atomic[64], k_d[64], k_late[64];
    snprintf(tag, sizeof tag, "{%s}%d", rc_slot_tag(MIGRATION_SLOT), (int)getpid());
    snprintf(k_old, sizeof k_old, "%s:old", tag);
    snprintf(k_new, sizeof k_new, "%s:new", tag);
    snprintf(k_atomic, sizeof k_atomic, "%s:atomic", tag);
    snprintf(k_d, sizeof k_d, "%s:d", tag);
    snprintf(k_late, sizeof k_late, "%s:late", tag);
    cr_assert_eq(slot_of(k_old), MIGRATION_SLOT);

    hr_distinct_params p = {.now_ms = hr_now_ms(), .ttl_ms = 60000, .exact_limit = 10};
    hr_batch *b = hr_batch_new();
    hr_put(b, S(k_old), S("old"), 0);
    hr_dadd(b, S(k_d), S("x"), &p);
    exec_ok(s, b, 0);

    /* half-way: A migrating, B importing. Keys A no longer has are ASKed
     * to B; keys A still has are served by A. */
    start_move(v, a, bn);
    rc_stats before = rc_cluster_stats(c);
    hr_batch_reset(b);
    hr_put(b, S(k_new), S("new"), 0);
    hr_get(b, S(k_old));
    hr_get(b, S(k_new));
    hr_dadd(b, S(k_d), S("y"), &p); /* its keys are all still on A */
    exec_ok(s, b, 0);
    assert_value(hr_batch_result(b, 1), "old");
    assert_value(hr_batch_result(b, 2), "new");
    cr_assert_eq(hr_batch_result(b, 3)->num, 2);
    cr_assert_geq(rc_cluster_stats(c).ask - before.ask, 2, "new keys were ASKed to the importing node");
    /* an atomic batch of keys A does not have goes to B, ASKING first */
    hr_batch_reset(b);
    hr_put(b, S(k_atomic), S("a"), 0);
    hr_get(b, S(k_atomic));
    exec_ok(s, b, HR_EXEC_ATOMIC);
    assert_value(hr_batch_result(b, 1), "a");
    redisReply *r = raw(v->m[bn].ctx, "CLUSTER COUNTKEYSINSLOT %u", MIGRATION_SLOT);
    cr_assert_eq(r->integer, 2, "the new keys are on the importing node");
    freeReplyObject(r);

    /* A new distinct counter is a multi-key script: Redis answers TRYAGAIN
     * until the migration ends, and the client waits for it (up to its
     * timeout). The move completes meanwhile: the client, whose map still
     * says A, then gets MOVED. */
    late_add la = {.s = s, .key = k_late, .p = p};
    pthread_t th;
    pthread_create(&th, NULL, add_late, &la);
    usleep(100 * 1000);
    finish_move(v, a, bn);
    pthread_join(th, NULL);
    cr_assert_eq(la.rc, HR_OK, "%s: %s", hr_errname(la.rc), la.err.msg);
    cr_assert_eq(la.num, 1);
    cr_assert_geq(rc_cluster_stats(c).tryagain - before.tryagain, 1);
    hr_batch_reset(b);
    hr_get(b, S(k_old));
    hr_get(b, S(k_new));
    hr_get(b, S(k_atomic));
    exec_ok(s, b, 0);
    assert_value(hr_batch_result(b, 0), "old");
    assert_value(hr_batch_result(b, 1), "new");
    assert_value(hr_batch_result(b, 2), "a");
    /* whichever of the late add and these reads came first saw MOVED and
     * fixed the shared map for the other */
    cr_assert_geq(rc_cluster_stats(c).moved - before.moved, 1);

    /* and back home */
    start_move(v, bn, a);
    finish_move(v, bn, a);
    hr_batch_reset(b);
    hr_del(b, S(k_old));
    hr_del(b, S(k_new));
    hr_del(b, S(k_atomic));
    hr_del(b, S(k_d));
    hr_del(b, S(k_late));
    exec_ok(s, b, 0);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(hr_batch_result(b, i)->num, 1);
    hr_batch_free(b);
    hr_store_close(s);
}

/* Many threads share one store: each run borrows a connection set from the
 * pool, so connections follow the concurrency, not the number of runs. */
typedef struct thread_arg {
    hr_store *s;
    int id, failures;
} thread_arg;

static void *hammer(void *p) {
    thread_arg *t = p;
    hr_batch *b = hr_batch_new();
    char key[64], val[32];
    for (int round = 0; round < 100; round++) {
        hr_batch_reset(b);
        for (int i = 0; i < 20; i++) {
            snprintf(key, sizeof key, "th:%d:%d:%d", (int)getpid(), t->id, i);
            snprintf(val, sizeof val, "%d", round);
            hr_put(b, S(key), S(val), hr_now_ms() + 60000);
            hr_get(b, S(key));
        }
        if (hr_store_exec(t->s, b, 0, NULL) != HR_OK) {
            t->failures++;
            continue;
        }
        for (int i = 0; i < 20; i++) {
            const hr_result *r = hr_batch_result(b, (size_t)(2 * i + 1));
            snprintf(val, sizeof val, "%d", round);
            if (r->rc != HR_OK || !hr_slice_eq(r->value, S(val))) t->failures++;
        }
    }
    hr_batch_free(b);
    return NULL;
}

Test(redis_cluster_live, threads_share_the_connection_pool) {
    enum { T = 8 };
    cluster_view *v = view_cluster(live_uri());
    hr_store *s = open_or_fail(live_uri(), 0);
    rc_cluster *c = hr_redis_store_cluster(s);
    uint64_t connects0 = rc_cluster_stats(c).connects;
    pthread_t th[T];
    thread_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (thread_arg){.s = s, .id = i};
        pthread_create(&th[i], NULL, hammer, &args[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(args[i].failures, 0, "thread %d", i);
    }
    uint64_t connects = rc_cluster_stats(c).connects - connects0;
    cr_assert_leq(connects, (uint64_t)(T * v->n), "%lu connections for %d threads", (unsigned long)connects,
                  T);
    hr_store_close(s);
    view_free(v);
}
