/* rocks_fixture.h — the fixture of the RocksDB backend's white-box tests
 * (test_rocks*.c), and the helpers they share. Every test of suite
 * rocks_internals, in whichever file, runs on a store opened on a fresh
 * temporary directory (removed afterwards): S. The suite is declared once,
 * in rocks_fixture.c, with that setup; Criterion runs each test in a
 * process of its own, so the state here is each test's. */
#ifndef HR_TEST_ROCKS_FIXTURE_H
#define HR_TEST_ROCKS_FIXTURE_H

#include <criterion/criterion.h>

#include "store/rocks/cache.h"
#include "store/rocks/pset.h"
#include "store/rocks/zset.h"

extern char tmpdir[64]; /* the store's parent directory */
extern char uri[128];   /* what S is opened from */
extern hr_store *S;     /* the store under test */

/* Open S from uri again (after the test closed it: a restart). */
void open_store(void);

/* Run b on S; fails the test on an error. */
void exec(hr_batch *b);

/* fmt with i, valid until the next call (the builders copy it at once). */
hr_slice str(const char *fmt, long i);

/* Members m0..m<n-1> of key, m<i> at score i, in one batch. */
void zadd_n(const char *key, long n);

/* The num of the one op build(b, arg) adds to a batch, run. */
int64_t one_num(void (*build)(hr_batch *b, void *arg), void *arg);
/* A zcard of key (a C string), for one_num. */
void build_zcard(hr_batch *b, void *key);

/* Compact every column family of S whole. */
void compact_all(void);

/* Keys of cf; with tag, only sketch keys whose byte after the prefix is tag. */
size_t count_keys(int cf, char tag);

#endif
