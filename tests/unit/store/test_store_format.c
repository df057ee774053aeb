/* The store's format record (store.h, HR_STORE_FORMAT): a new store records
 * the format it is written in; a store of another format, or one made
 * before formats were recorded, is refused with a message saying so. */
#include <criterion/criterion.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "support.h"

#define FORMAT_KEY "herald:store-format"

static char dir[64], uri[96];

static void fresh_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/herald-format-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(uri, sizeof uri, "rocksdb:%s/db", dir);
}

static void remove_dir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The format record of s, as text (static buffer). */
static const char *format_of(hr_store *s) {
    static char text[128];
    hr_batch *b = hr_batch_new();
    size_t op = hr_get(b, hr_slice_str(FORMAT_KEY));
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(s, b, 0, &err), HR_OK, "%s", err.msg);
    const hr_result *r = hr_batch_result(b, op);
    cr_assert_eq(r->rc, HR_OK, "no format record");
    snprintf(text, sizeof text, "%.*s", (int)r->value.len, r->value.ptr);
    hr_batch_free(b);
    return text;
}

static hr_store *open_ok(const char *at) {
    hr_store *s = NULL;
    hr_err err = {0};
    cr_assert_eq(hr_store_open(at, NULL, &s, &err), HR_OK, "open %s: %s", at, err.msg);
    return s;
}

Test(store_format, a_new_store_records_its_format_and_opens_again) {
    fresh_dir();
    char want[64];
    snprintf(want, sizeof want, "herald store format %d", HR_STORE_FORMAT);
    hr_store *s = open_ok(uri);
    cr_assert_str_eq(format_of(s), want);
    hr_store_close(s);
    s = open_ok(uri);
    cr_assert_str_eq(format_of(s), want);
    hr_store_close(s);
    remove_dir();
}

Test(store_format, a_store_of_another_format_is_refused) {
    fresh_dir();
    hr_store *s = open_ok(uri);
    hr_batch *b = hr_batch_new();
    hr_put(b, hr_slice_str(FORMAT_KEY), hr_slice_str("herald store format 999"), 0);
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(s, b, 0, &err), HR_OK, "%s", err.msg);
    hr_batch_free(b);
    hr_store_close(s);
    s = NULL;
    cr_assert_eq(hr_store_open(uri, NULL, &s, &err), HR_ECONFLICT);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, "herald store format 999") && strstr(err.msg, "build the store again"), "%s",
              err.msg);
    remove_dir();
}

Test(store_format, a_store_from_before_formats_is_refused) {
    fresh_dir();
    /* A RocksDB database with no format record, as older heralds left. */
    char path[96], *errptr = NULL;
    snprintf(path, sizeof path, "%s/db", dir);
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_t *db = rocksdb_open(o, path, &errptr);
    cr_assert_null(errptr, "%s", errptr);
    rocksdb_close(db);
    rocksdb_options_destroy(o);
    hr_store *s = NULL;
    hr_err err = {0};
    cr_assert_eq(hr_store_open(uri, NULL, &s, &err), HR_ECONFLICT);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, "before store formats"), "%s", err.msg);
    remove_dir();
}

/* Redis Cluster cannot tell a new store from an old one: it records the
 * format where there is none, and keeps it. (A cluster of another format
 * is refused by the same code as on RocksDB; the shared test cluster is
 * not changed to show it.) */
Test(store_format, a_redis_cluster_records_the_format) {
    const char *redis = getenv("HERALD_TEST_REDIS");
    cr_assert_not_null(redis, "HERALD_TEST_REDIS is not set: run the tests with scripts/test.sh");
    char want[64];
    snprintf(want, sizeof want, "herald store format %d", HR_STORE_FORMAT);
    hr_store *s = open_ok(redis);
    cr_assert_str_eq(format_of(s), want);
    hr_store_close(s);
}
