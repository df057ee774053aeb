/* rocks_fixture.c — the fixture of suite rocks_internals and the helpers
 * of test_rocks*.c (rocks_fixture.h). */
#include "rocks_fixture.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char tmpdir[64], uri[128];
hr_store *S;

void open_store(void) {
    hr_err err = {0};
    int rc = hr_store_open(uri, NULL, &S, &err);
    cr_assert_eq(rc, HR_OK, "open %s: %s", uri, err.msg);
}

static void init(void) {
    strcpy(tmpdir, "/tmp/herald-rocks-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    snprintf(uri, sizeof uri, "rocksdb:%s/db", tmpdir);
    open_store();
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

static void fini(void) {
    hr_store_close(S);
    S = NULL;
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(rocks_internals, .init = init, .fini = fini, .timeout = 60);

void exec(hr_batch *b) {
    hr_err err = {0};
    int rc = hr_store_exec(S, b, 0, &err);
    cr_assert_eq(rc, HR_OK, "exec: %s", err.msg);
}

hr_slice str(const char *fmt, long i) {
    static char tmp[64];
    snprintf(tmp, sizeof tmp, fmt, i);
    return hr_slice_str(tmp);
}

void zadd_n(const char *key, long n) {
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < n; i++) {
        char m[32];
        snprintf(m, sizeof m, "m%ld", i);
        hr_zadd(b, hr_slice_str(key), (double)i, hr_slice_str(m));
    }
    exec(b);
    hr_batch_free(b);
}

int64_t one_num(void (*build)(hr_batch *b, void *arg), void *arg) {
    hr_batch *b = hr_batch_new();
    build(b, arg);
    exec(b);
    int64_t n = hr_batch_result(b, 0)->num;
    hr_batch_free(b);
    return n;
}

void build_zcard(hr_batch *b, void *key) {
    hr_zcard(b, hr_slice_str(key));
}

void compact_all(void) {
    rocks_store *r = (rocks_store *)S;
    for (int i = 0; i < CF_COUNT_; i++)
        rocksdb_compact_range_cf(r->db, r->cf[i], NULL, 0, NULL, 0);
}

size_t count_keys(int cf, char tag) {
    rocks_store *r = (rocks_store *)S;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_total_order_seek(ro, 1); /* across prefixes, hashed memtables too */
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(r->db, ro, r->cf[cf]);
    size_t n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t len;
        const char *k = rocksdb_iter_key(it, &len);
        hr_slice user, rest;
        uint64_t version;
        if (tag && (key_parse(hr_slice_of(k, len), &user, &version, &rest) != 0 || rest.len == 0 ||
                    rest.ptr[0] != tag))
            continue;
        n++;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}
