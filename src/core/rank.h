/* rank.h — the story rankings: the "hot" formula, and list positions
 * (cursors) in a sorted set.
 *
 * A story's score is the sum of its ratings (-1, 0, +1 each). Two rankings
 * are kept as sorted sets (core/stories.h): "top" by that sum, and "hot",
 * which lets the sum decay with the story's age.
 *
 * Which hot formula, and why Reddit's. There are two well-known ones:
 *
 *   Reddit (2005):  hot = sign(s) * log10(max(|s|, 1)) + (t - 1134028003) / 45000
 *                   s the vote sum, t the story's submission time in seconds
 *   Hacker News:    rank = (p - 1) / (age_hours + 2) ^ 1.8
 *
 * HN's rank is a function of the current time: every story's rank falls
 * every second, so keeping a sorted set ordered by it needs a job that
 * re-scores every live story periodically, and between runs the order is
 * stale. Reddit's never changes unless a vote does: instead of pulling old
 * stories down, it lifts newer ones up (each 45000 s, 12.5 hours, of
 * recency is worth a factor of 10 in votes), so the order of two stories
 * is "decayed with age" relative to each other while each stored number
 * stays put. That makes hot a sort key written only on a vote (and at
 * creation), with no re-scoring job, and "the hot stories a member has not
 * seen" a range read of one sorted set, like "top". The log scale makes the
 * first 10 votes count as much as the next 90: early votes decide, and a
 * pile-on on an old story cannot hold the top for long.
 *
 * Known properties (tested): monotonic in the vote sum and in the story's
 * time; a newer story with the same sum ranks higher; a sum of 0, 1 or -1
 * ranks by time alone (log10(1) = 0); a negative sum ranks below a positive
 * one of the same age by 2 * log10(|s|). Values are about 12,000 for stories
 * of the 2020s; a double resolves them to ~2e-12, far below one millisecond
 * of story time (2.2e-8), so the order is as exact as the inputs. */
#ifndef HR_RANK_H
#define HR_RANK_H

#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/slice.h"
#include "store/store.h"

#define HR_HOT_EPOCH_S 1134028003.0 /* Reddit's epoch: 2005-12-08 07:46:43 UTC */
#define HR_HOT_PERIOD_S 45000.0     /* seconds of recency worth 10x the votes */

/* Reddit's hot score of a story with vote sum `sum` submitted at time_ms
 * (milliseconds since the Unix epoch). Pure and deterministic: every process
 * computes the same double for the same arguments, which the hot ranking's
 * convergence relies on (core/stories.c). */
double hr_rank_hot(int64_t sum, int64_t time_ms);

/* A position in a sorted set, as an opaque cursor for list paging: the
 * (score, member) of the last item of a page. Text form: 16 lower-case hex
 * digits of the score's IEEE-754 bits, then the member's bytes in hex, so a
 * cursor is URL-safe and binary-safe. */

/* Append the cursor of (score, member) to out. */
void hr_rank_cursor_encode(double score, hr_slice member, hr_buf *out);

/* Parse a cursor (NUL-terminated text, borrowed). On success *score is set
 * and *member points into arena (valid while it is). A cursor that is not
 * one this server made (odd length, non-hex, a score that is not finite, no
 * member, a member over max_member bytes) is HR_EINVAL "cursor is not
 * valid". */
int hr_rank_cursor_decode(const char *text, size_t max_member, hr_arena *arena, double *score,
                          hr_slice *member, hr_err *err);

/* A page of a newest-first (or highest-first) list over a sorted set. */
#define HR_LIST_MAX 1000 /* items in one page */

typedef struct hr_list_req {
    bool has_since; /* only items with a score (a time) > since_ms */
    int64_t since_ms;
    size_t limit;       /* 1..HR_LIST_MAX */
    const char *cursor; /* NULL, or the next_cursor of the previous page (borrowed) */
} hr_list_req;

/* A descending range spec for req: scores in (since, +inf), after the
 * cursor, at most req->limit entries. The cursor's member is copied into
 * arena. HR_EINVAL naming the field for a bad limit or cursor. */
int hr_list_spec(const hr_list_req *req, size_t max_member, hr_arena *arena, hr_zrange_spec *spec,
                 hr_err *err);

/* The cursor text of (score, member) in arena. */
const char *hr_list_cursor(hr_arena *arena, double score, hr_slice member);

#endif
