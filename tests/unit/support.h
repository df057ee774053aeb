/* support.h — shared helpers of the unit tests: opening a store of either
 * kind for a test, and unique names so that tests sharing one Redis Cluster
 * never see each other's keys. */
#ifndef HR_TEST_SUPPORT_H
#define HR_TEST_SUPPORT_H

#include "store/store.h"

typedef struct test_store {
    hr_store *store;
    char dir[64]; /* RocksDB: the temporary directory, removed on close */
} test_store;

/* kind "rocksdb": a fresh temporary directory ("rocksdb-files": the same,
 * writing every bulk time-list write as a table file, hr_tlbulk). kind
 * "redis": the cluster in $HERALD_TEST_REDIS; fails the test (never skips
 * it) when that is unset. */
void test_store_open(test_store *t, const char *kind);
void test_store_close(test_store *t);
/* RocksDB: compact every column family whole, as compactions would in
 * time (the compaction filters run). Fails the test on any other kind. */
void test_store_compact(test_store *t);

/* The process's store totals (hr_store_metrics_of): batches executed, and
 * ops of type t. */
uint64_t test_batches_total(void);
uint64_t test_ops_total(hr_op_type t);

/* A name unique to this process and call: prefix + random hex. Returns buf. */
char *test_unique(char *buf, size_t cap, const char *prefix);

/* The one way a test runs on both stores: BOTH_STORES(suite, runner, check)
 * registers check in two Criterion suites, suite_rocksdb and suite_redis,
 * whose tests call runner("rocksdb", check) and runner("redis", check).
 * Each file names its suite and its runner, which opens the store (or the
 * suite's .init did) and builds what check needs over it. Without a Redis
 * Cluster ($HERALD_TEST_REDIS unset) the redis tests fail, never skip. */
#define BOTH_STORES(suite, runner, check)                                                                    \
    Test(suite##_rocksdb, check) {                                                                           \
        runner("rocksdb", check);                                                                            \
    }                                                                                                        \
    Test(suite##_redis, check) {                                                                             \
        runner("redis", check);                                                                              \
    }

#endif
