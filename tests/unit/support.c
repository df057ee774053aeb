/* support.c — see support.h. */
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "store/rocks/engine.h"

void test_store_open(test_store *t, const char *kind) {
    memset(t, 0, sizeof *t);
    char uri[256];
    hr_store_options opts = {0};
    /* rocksdb-files: every bulk write a table file */
    const char *tuning = strcmp(kind, "rocksdb-files") == 0 ? "?file_min=1" : "";
    if (strncmp(kind, "rocksdb", 7) == 0) {
        snprintf(t->dir, sizeof t->dir, "/tmp/herald-test-XXXXXX");
        cr_assert_not_null(mkdtemp(t->dir), "mkdtemp");
        snprintf(uri, sizeof uri, "rocksdb:%s%s", t->dir, tuning);
    } else {
        const char *redis = getenv("HERALD_TEST_REDIS");
        cr_assert_not_null(redis, "HERALD_TEST_REDIS is not set: run the tests with scripts/test.sh "
                                  "(make test), which starts a Redis Cluster");
        snprintf(uri, sizeof uri, "%s", redis);
    }
    hr_err err = {0};
    int rc = hr_store_open(uri, &opts, &t->store, &err);
    cr_assert_eq(rc, HR_OK, "open %s: %s", uri, err.msg);
}

void test_store_close(test_store *t) {
    hr_store_close(t->store);
    t->store = NULL;
    if (t->dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", t->dir);
        t->dir[0] = '\0';
    }
}

void test_store_compact(test_store *t) {
    cr_assert_str_eq(hr_store_caps_of(t->store)->kind, "rocksdb", "only RocksDB compacts");
    rocks_store *r = (rocks_store *)t->store;
    for (int i = 0; i < CF_COUNT_; i++)
        rocksdb_compact_range_cf(r->db, r->cf[i], NULL, 0, NULL, 0);
}

char *test_unique(char *buf, size_t cap, const char *prefix) {
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != sizeof r) cr_assert_fail("getrandom");
    snprintf(buf, cap, "%s%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2], r[3], r[4], r[5], r[6],
             r[7]);
    return buf;
}

uint64_t test_batches_total(void) {
    hr_store_metrics m;
    hr_store_metrics_of(NULL, &m);
    return m.batches;
}

uint64_t test_ops_total(hr_op_type t) {
    hr_store_metrics m;
    hr_store_metrics_of(NULL, &m);
    return m.ops[t];
}
