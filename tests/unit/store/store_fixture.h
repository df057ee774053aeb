/* store_fixture.h — the store conformance fixture: each primitive family's
 * checks live in a file of their own and run on both backends.
 *
 * Used by test_store*.c and test_rocks_tlcache.c.
 *
 * STORE_SUITES(suite) declares suites suite_rocksdb and suite_redis, and
 * STORE_TEST(suite, name) registers one check, `name(hr_store *s)`, in both
 * (BOTH_STORES, support.h): on RocksDB in a fresh temporary directory
 * (removed afterwards), and on the Redis Cluster named by $HERALD_TEST_REDIS
 * (a missing variable fails the redis tests, never skips them).
 * STORE_SUITES_MEM and STORE_TEST_MEM add suite_rocksmem, RocksDB with every
 * sorted set kept in memory (fx_rocksmem_init). Keys are namespaced by a
 * random prefix per test: K("name") is "t:<random>:name", KT("name")
 * "{t:<random>}:name" (one hash slot).
 *
 * Everything here is static: each test file gets its own copy. */
#ifndef HR_TEST_STORE_FIXTURE_H
#define HR_TEST_STORE_FIXTURE_H

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/arena.h"
#include "store/store.h"
#include "support.h"

static hr_store *S;                 /* the store under test, or NULL */
static hr_store_options store_opts; /* what S is opened with (zeros: the defaults) */
static char store_tuning[128];      /* RocksDB: the URI's tuning (rocks/memory.h), fx_tune */
static bool zsets_in_memory;        /* RocksDB keeps every sorted set in memory (fx_rocksmem_init) */
static char open_error[1024];       /* why S is NULL */
static char store_uri[128];         /* what S was opened from (fx_reopen) */
static char tmpdir[64];             /* rocks: the DB's parent directory */
static char prefix[40];             /* this test's key namespace */
static hr_arena keys;               /* memory of K() / KT() / M() */
static hr_batch *B;                 /* the batch of ONE() */

static void fx_open(void) {
    hr_err err = {0};
    char uri[sizeof store_uri + sizeof store_tuning + 256];
    bool rocks = strncmp(store_uri, "rocksdb:", 8) == 0;
    snprintf(uri, sizeof uri, "%s%s%s", store_uri, rocks && store_tuning[0] ? "?" : "",
             rocks ? store_tuning : "");
    if (hr_store_open(uri, &store_opts, &S, &err) != HR_OK)
        snprintf(open_error, sizeof open_error, "cannot open %s: %s (%s)", uri, err.msg,
                 hr_errname(err.code));
}

/* Add a parameter ("hot_keep=4") to the RocksDB URI's tuning, for the next
 * open (rocks/memory.h); a later value of a parameter wins. */
static inline void fx_tune(const char *param) {
    size_t n = strlen(store_tuning);
    snprintf(store_tuning + n, sizeof store_tuning - n, "%s%s", n ? "&" : "", param);
}

static void fx_common_init(void) {
    unsigned char r[8] = {0};
    if (getrandom(r, sizeof r, 0) != sizeof r) r[0] ^= (unsigned char)getpid();
    snprintf(prefix, sizeof prefix, "t:%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5],
             r[6], r[7]);
    B = hr_batch_new();
}

static void fx_rocks_init(void) {
    fx_common_init();
    strcpy(tmpdir, "/tmp/herald-store-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        snprintf(open_error, sizeof open_error, "mkdtemp failed");
        return;
    }
    snprintf(store_uri, sizeof store_uri, "rocksdb:%s/db", tmpdir);
    fx_open();
}

/* RocksDB with every sorted set in memory from its creation (the URI's
 * zset_memory=all): the path rankings take once they move into memory
 * (src/store/rocks/zset_memory.c). */
static inline void fx_rocksmem_init(void) {
    zsets_in_memory = true;
    fx_tune("zset_memory=all");
    fx_rocks_init();
}

static void fx_redis_init(void) {
    fx_common_init();
    const char *uri = getenv("HERALD_TEST_REDIS");
    if (uri == NULL || *uri == '\0') {
        snprintf(
            open_error, sizeof open_error,
            "HERALD_TEST_REDIS is not set: run scripts/test.sh, which starts a Redis Cluster and sets it "
            "(e.g. HERALD_TEST_REDIS=redis://127.0.0.1:7100)");
        return;
    }
    snprintf(store_uri, sizeof store_uri, "%s", uri);
    fx_open();
}

static void fx_fini(void) {
    hr_batch_free(B);
    hr_store_close(S);
    S = NULL;
    hr_arena_free(&keys);
}

static int fx_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void fx_rocks_fini(void) {
    fx_fini();
    if (tmpdir[0]) nftw(tmpdir, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static hr_store *require_store(void) {
    if (S == NULL) cr_assert_fail("%s", open_error);
    return S;
}

/* Close the store and open it again from the same place (RocksDB: the same
 * directory, as after a restart). Returns the new store. */
static inline hr_store *fx_reopen(void) {
    hr_store_close(S);
    S = NULL;
    fx_open();
    return require_store();
}

/* Suites suite_rocksdb and suite_redis, whose .init opens S on that store
 * (and .fini closes it); STORE_SUITES_MEM adds suite_rocksmem, RocksDB with
 * every sorted set kept in memory from its creation. */
#define STORE_SUITES(suite)                                                                                  \
    TestSuite(suite##_rocksdb, .init = fx_rocks_init, .fini = fx_rocks_fini, .timeout = 60);                 \
    TestSuite(suite##_redis, .init = fx_redis_init, .fini = fx_fini, .timeout = 60)
#define STORE_SUITES_MEM(suite)                                                                              \
    STORE_SUITES(suite);                                                                                     \
    TestSuite(suite##_rocksmem, .init = fx_rocksmem_init, .fini = fx_rocks_fini, .timeout = 60)

/* The runner of store checks (BOTH_STORES): the suite's .init opened S. */
static inline void store_check(const char *kind, void (*check)(hr_store *s)) {
    (void)kind;
    check(require_store());
}

/* One check, `static void name(hr_store *s)`, whose body follows, on both
 * stores; STORE_TEST_MEM also in suite_rocksmem. */
#define STORE_TEST(suite, name)                                                                              \
    static void name(hr_store *s);                                                                           \
    BOTH_STORES(suite, store_check, name)                                                                    \
    static void name(hr_store *s)
#define STORE_TEST_MEM(suite, name)                                                                          \
    static void name(hr_store *s);                                                                           \
    Test(suite##_rocksmem, name) {                                                                           \
        name(require_store());                                                                               \
    }                                                                                                        \
    STORE_TEST(suite, name)

/* This test's key `name` (binary-safe: n bytes). */
static inline hr_slice Kn(const char *name, size_t n) {
    size_t p = strlen(prefix);
    char *k = hr_arena_alloc(&keys, p + 1 + n);
    memcpy(k, prefix, p);
    k[p] = ':';
    memcpy(k + p + 1, name, n);
    return hr_slice_of(k, p + 1 + n);
}
static inline hr_slice K(const char *name) {
    return Kn(name, strlen(name));
}

/* This test's key `name` under its hash tag (one Redis Cluster slot). */
static inline hr_slice KT(const char *name) {
    char *k = hr_arena_alloc(&keys, strlen(prefix) + strlen(name) + 4);
    sprintf(k, "{%s}:%s", prefix, name);
    return hr_slice_str(k);
}

static inline hr_slice M(const char *str) {
    return hr_slice_str(str);
}

/* fmt with i, in the fixture's arena. */
static inline hr_slice Mf(const char *fmt, long i) {
    char *m = hr_arena_alloc(&keys, 64);
    snprintf(m, 64, fmt, i);
    return hr_slice_str(m);
}

static inline void exec_flags(hr_store *s, hr_batch *b, unsigned flags) {
    hr_err err = {0};
    int rc = hr_store_exec(s, b, flags, &err);
    cr_assert_eq(rc, HR_OK, "exec: %s: %s", hr_errname(rc), err.msg);
}
static void exec(hr_store *s, hr_batch *b) {
    exec_flags(s, b, 0);
}

/* Run B, which holds one op, and return its result (valid until the next
 * ONE). Usage: ONE(s, hr_tladd(B, ...))->rc */
static const hr_result *exec_one(hr_store *s) {
    exec(s, B);
    return hr_batch_result(B, 0);
}
#define ONE(s, call) (hr_batch_reset(B), (void)(call), exec_one(s))

#define assert_rc(r, want)                                                                                   \
    cr_assert_eq((r)->rc, (want), "rc %s, expected %s", hr_errname((r)->rc), hr_errname(want))

#endif
