/* memo.h — results kept in memory for as long as what they were read from
 * is unchanged.
 *
 * A memo maps a key (the question: a reader's home timeline, first page of
 * 20) to a value (the answer, in whatever bytes its user chose) together
 * with the store stamps (store.h, "Write stamps") of every store key the
 * answer was read from, each taken before that key was read. An answer
 * comes back only while every stamp still holds and the clock is before the
 * answer's own end (when the oldest entry it shows expires, say): so it is
 * what reading the store again would answer, without reading it.
 *
 * The memory it holds is bounded (budget bytes); past it, the answers used
 * least recently go. Only a store whose writes all pass through this process
 * can be stamped (hr_store_caps.stamps): on a shared one, hr_memo_new answers
 * NULL and the caller reads the store every time. Thread-safe. */
#ifndef HR_MEMO_H
#define HR_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/slice.h"
#include "store/store.h"

typedef struct hr_memo hr_memo;

/* A memo of at most budget bytes over store (borrowed). NULL (no memo)
 * when budget is 0 or the store has no stamps. hr_memo_free(NULL) is a
 * no-op. */
hr_memo *hr_memo_new(hr_store *store, size_t budget);
void hr_memo_free(hr_memo *m);

/* The value kept for key, copied into a, if every stamp it was kept with
 * holds and now_ms is before its end. An answer that no longer holds is
 * dropped. */
bool hr_memo_get(hr_memo *m, hr_slice key, int64_t now_ms, hr_arena *a, hr_slice *value);

/* Keep value for key (replacing what key had), read from the store keys
 * whose stamps are given, until end_ms (INT64_MAX: no end). A value larger
 * than a 64th of the budget is not kept. */
void hr_memo_put(hr_memo *m, hr_slice key, hr_slice value, const hr_stamp *stamps, size_t n_stamps,
                 int64_t end_ms);

/* For /metrics and the tests. */
typedef struct hr_memo_stats {
    uint64_t hits, misses, stale; /* stale: found, but a stamp no longer held or it had ended */
    size_t entries, bytes;
} hr_memo_stats;
hr_memo_stats hr_memo_stats_of(hr_memo *m);

#endif
