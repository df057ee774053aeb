/* memory.h — the RocksDB backend's one memory budget and its tuning.
 *
 * A store is given one figure, hr_store_options.memory, and shares it out
 * here among everything it keeps in memory for reads: one table says what
 * each cache holds and its share, so that a user sizes herald with one
 * setting and a newcomer finds every cache in one place. A cache takes its
 * budget from rocks_tuning.budget at open and never grows past it.
 *
 * Tuning that no user needs but tests and measurements do is given after
 * the path in the store's URI, as query parameters:
 *
 *   rocksdb:PATH?off=chunks,images&hot_keep=4&file_min=1&zset_memory=all
 *
 *   off=NAME[,NAME]  these caches get no memory (to measure what each earns)
 *   hot_keep=N       newest entries a hot time list keeps (timelist_cache.c)
 *   file_min=N       bulk time-list adds written as a table file from N on
 *   zset_memory=all  every sorted set kept in memory from its creation */
#ifndef HR_ROCKS_MEMORY_H
#define HR_ROCKS_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* X(id, name, percent of the budget, what it holds). The percents add up
 * to 100. "memos" is the store's callers' (hr_store_caps.memo_bytes). */
#define ROCKS_CACHES(X)                                                                                      \
    X(BLOCKS, "blocks", 12, "RocksDB's block cache: recently read table blocks")                             \
    X(META, "meta", 12,                                                                                      \
      "metadata records: a set's size; a small set's members, such as a rare URL's readers")                 \
    X(CHUNKS, "chunks", 18, "packed-set chunks: who read a URL, which stories a member has seen")            \
    X(ZSETS, "zsets", 6, "whole small sorted sets read whole: friend lists")                                 \
    X(IMAGES, "images", 12, "images of large packed sets: a popular URL's readers")                          \
    X(RANKINGS, "rankings", 20, "sorted sets whose order is kept in memory: rankings")                       \
    X(COLUMNS, "columns", 2, "the most tested images turned on their side: a row of bits per member")        \
    X(HOTLISTS, "hotlists", 4, "the newest entries of hot time lists: the big accounts' feeds")              \
    X(VIEWS, "views", 2, "emptied view tables of large batches, kept to spare their page faults")            \
    X(MEMOS, "memos", 12, "the callers' memos of results: home timelines' first pages")

enum {
#define ROCKS_CACHE_ID_(id, name, percent, what) ROCKS_CACHE_##id,
    ROCKS_CACHES(ROCKS_CACHE_ID_)
#undef ROCKS_CACHE_ID_
        ROCKS_CACHE_COUNT
};

typedef struct rocks_tuning {
    size_t budget[ROCKS_CACHE_COUNT]; /* bytes each cache may hold; 0: off */
    size_t tl_hot_keep;               /* 0: timelist_cache.c's default */
    size_t tl_file_min;               /* 0: timelist_ingest.c's default */
    bool zset_memory_all;
} rocks_tuning;

/* The tuning of a store given `memory` bytes (0: HR_STORE_MEMORY_DEFAULT)
 * and the text after '?' in its URI (NULL or "": none). HR_EINVAL naming
 * the parameter when one is unknown or malformed. */
int rocks_tuning_parse(const char *query, size_t memory, rocks_tuning *t, hr_err *err);

/* The backend's hr_store_backend.caches: what each cache may hold and holds. */
struct hr_store;
struct hr_store_metrics;
void rocks_caches_report(const struct hr_store *s, struct hr_store_metrics *m);

#endif
