/* trending.h — what is read most: popular URLs over the last hour, day or
 * week, and trending URLs (read much more in the last hour than their own
 * usual rate). Counts only: these lists name no reader, so they are public.
 *
 * COUNTING. Time is cut into buckets of three granularities, one per window:
 *
 *   granularity   bucket    window it serves   buckets read (sub-buckets + 1)
 *   0             10 min    1 h                 7
 *   1             2 h       1 d                13
 *   2             1 d       7 d                 8
 *
 * A read of URL u at time t adds 1 to u's counter of t's bucket of each
 * granularity (reading_keys.h: {rl/HEX}/c/G/B) unless the same reader's
 * previous read of u was already in that bucket, so a counter holds the
 * DISTINCT readers of u in its bucket. A window's count is the sum of its
 * buckets, the oldest one weighted by the share of it inside the window
 * (reads are assumed spread evenly across a bucket): exact for a read at
 * least one bucket inside the window, and off by at most one bucket's worth
 * at the window's old edge. A reader who comes back to u in a later bucket
 * of the window counts again: "readers" here is reader-buckets, which for
 * news (one reads an article once) is readers.
 *
 * RANKING WITHOUT RE-SCORING. The obvious ranking, a sorted set per bucket
 * whose scores are the counts (one ZINCRBY per read), moves an entry on
 * every read; RocksDB's sorted sets leave a tombstone per move in the index
 * that later range reads must step over, so a set re-scored often reads
 * ever slower (rocks/zset_memory.c). So the counts live in plain
 * counters and each bucket keeps a sorted set of CANDIDATES, written only
 * when a URL's counter reaches a milestone (1, 2, 3, 4, 6, 8, 12, 16, 24,
 * ...: the powers of two and three times them): a URL read c times in a
 * bucket moves about 2 log2(c) times, and its candidate score is within a
 * factor of 1.5 below its count. A query reads the top candidates of each
 * of its buckets (one range read each), estimates each URL's window total
 * from those milestones, keeps the best 2 * limit + 16 and reads their
 * exact counters (one batch): two round trips, O(buckets x limit) entries.
 * A URL can be missed only if its milestones put it below that cut in every
 * bucket while its true counts would put it in the answer: with the cut at
 * twice the limit and milestones within 1.5 of the counts, that takes
 * near-ties at the boundary.
 *
 * TRENDING SCORE. For a URL with r readers in the last hour and d in the
 * last day, its own baseline is b = max(d - r, 0) / 23 readers per hour
 * over the 23 hours before, and
 *
 *     score = (r - b) / sqrt(b + 1)
 *
 * Reads arriving at random are roughly Poisson, whose spread is the square
 * root of the mean: the score is how many standard deviations the last hour
 * stands above what the URL's own history predicts (a z-score), with +1 so
 * that a URL with no history scores r / 1 rather than dividing by zero.
 * So a page going from 100 to 200 readers an hour (score 10) trends above
 * one going from 1,000 to 1,100 (3.2): relative change matters, not
 * volume. A new page read 5 times in its first hour scores 5: news that
 * starts spreading ranks at once, and a page read steadily scores about 0
 * however popular it is. Listed: score > 0 and r >= HR_TRENDING_MIN_READERS
 * (one reader is noise). Candidates are the most read of the last hour:
 * since score <= r, a URL outside them cannot beat the listed ones once the
 * limit-th score is at least the candidates' smallest r.
 *
 * Costs (store round trips): recording adds 3 counter reads to the caller's
 * first batch and 3 increments (+ 3 expiries on a counter's first read, + a
 * candidate write on a milestone) to its second; popular is 2 round trips
 * (8 to 13 range reads, then limit x 8..14 counter reads); trending 2 (7
 * range reads, then limit x 21 counter reads). */
#ifndef HR_TRENDING_H
#define HR_TRENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "store/store.h"

#define HR_GRANULARITIES 3
#define HR_TRENDING_MIN_READERS 2
#define HR_TRENDS_LIMIT_MAX 1000 /* items one popular / trending call lists */

typedef enum { HR_WINDOW_1H, HR_WINDOW_1D, HR_WINDOW_7D } hr_window;

/* "1h", "1d", "7d" -> the window; HR_EINVAL otherwise. */
int hr_window_parse(const char *text, hr_window *out);
const char *hr_window_name(hr_window w);
int64_t hr_window_ms(hr_window w);
/* The bucket width of the granularity that serves window w. */
int64_t hr_window_bucket_ms(hr_window w);

/* Whether c is a milestone: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48... */
bool hr_trends_milestone(int64_t c);

/* The buckets of window w at now_ms: first..last (last is now's bucket),
 * weights[i] the share of bucket first + i inside the window (1 but for the
 * oldest). Returns the number of buckets (at most 14, the size of weights). */
#define HR_WINDOW_BUCKETS_MAX 14
size_t hr_window_buckets(hr_window w, int64_t now_ms, int64_t *first, double *weights);

/* The trending score of a URL with `hour` readers in the last hour and `day`
 * in the last day; *baseline (may be NULL) receives its readers per hour
 * over the 23 hours before. See above. */
double hr_trends_score(double hour, double day, double *baseline);

typedef struct hr_trends hr_trends;

/* Counts over store (borrowed), in namespace ns (copied). */
hr_trends *hr_trends_new(hr_store *store, const char *ns);
void hr_trends_free(hr_trends *t);

/* ---- Recording a read (core/reading_record.c), inside the caller's batches */

typedef struct hr_trend_read {
    uint64_t url_hash;
    int64_t time_ms;                    /* the read's time */
    size_t count_ops[HR_GRANULARITIES]; /* set by hr_trends_read_ops */
} hr_trend_read;

/* Add to b (the caller's first batch) the counter reads a read at
 * rd->time_ms needs; buckets already past their window are skipped. */
void hr_trends_read_ops(hr_trends *t, hr_batch *b, hr_trend_read *rd, int64_t now_ms);
/* After b ran: add to w (the caller's write batch) the increments. prev_ms
 * is the reader's previous read of the URL (-1: none): a bucket it is
 * already in is not counted again. */
void hr_trends_write_ops(hr_trends *t, hr_batch *w, const hr_batch *b, const hr_trend_read *rd,
                         int64_t prev_ms);

/* ---- Lists --------------------------------------------------------------- */

typedef struct hr_trend_item {
    uint64_t url_hash;
    hr_slice url;    /* canonical, in the arena */
    double readers;  /* popular: over the window; trending: in the last hour */
    double baseline; /* trending: readers per hour over the 23 hours before */
    double score;    /* trending: see above; popular: 0 */
} hr_trend_item;

/* The most read URLs over window w, most readers first (ties: the smaller
 * hash first), limit 1..HR_TRENDS_LIMIT_MAX (HR_EINVAL otherwise). URLs
 * whose estimate rounds to 0 are left out. *items is in a. */
int hr_trends_popular(hr_trends *t, hr_window w, size_t limit, int64_t now_ms, hr_arena *a,
                      hr_trend_item **items, size_t *n, hr_err *err);
/* The trending URLs, highest score first. */
int hr_trends_trending(hr_trends *t, size_t limit, int64_t now_ms, hr_arena *a, hr_trend_item **items,
                       size_t *n, hr_err *err);

#endif
