/* reading_internal.h — what the files of social reading share; nothing
 * outside them includes it. reading.h has the model and the costs,
 * reading_keys.h the keys, reading_plan.h how friends-reads picks a side.
 *
 *   reading.c          the handle, the selected sites, and sharing (an
 *                      opt-out deletes the user's recorded reads)
 *   reading_record.c   recording reads
 *   reading_friends.c  friends-reads, and the friend list that it and
 *                      friends-popular read
 *   reading_split.c    friends-reads' URL-set tests split over two cores
 *   reading_popular.c  friends-popular */
#ifndef HR_READING_INTERNAL_H
#define HR_READING_INTERNAL_H

#include <stdatomic.h>

#include "common/assist.h"
#include "common/ident.h"
#include "core/reading.h"
#include "core/reading_plan.h"

struct hr_reading {
    hr_store *store;
    hr_graph *graph;
    char *ns;
    int64_t ttl;
    hr_rplan_costs costs;
    hr_trends *trends;
    hr_assist *assist; /* takes two in five of a big friends-reads' URL-set tests */
    size_t split_tests;
    bool split_no_wait;
    atomic_int running; /* friends-reads under way */
    int cpus;
};

static inline int check_uid(hr_slice uid, const char *what, hr_err *err) {
    if (!hr_ident_valid(uid)) return hr_err_set(err, HR_EINVAL, "%s must be an identifier", what);
    return HR_OK;
}

/* The first live score of a reading sorted set: a read at t counts while
 * now < t + ttl. */
static inline double live_min(const hr_reading *r, int64_t now_ms) {
    return (double)(now_ms - r->ttl + 1);
}

/* ---- The friend list (reading_friends.c) ---------------------------------- */

/* The friends of uid: one range read of the graph's friend set, added to b;
 * returns the op. The query wants them newest first, but reads them oldest
 * first, all of them when there are at most HR_READING_FRIENDS_MAX: RocksDB
 * walks backwards markedly slower (a tenth of a tail feed's query went to
 * stepping back through 450 friends), and the order is turned in memory
 * (hr_reading_friends_of). */
size_t hr_reading_friends_op(hr_reading *r, hr_batch *b, hr_slice uid, bool reverse, bool attached_only);

/* The newest HR_READING_FRIENDS_MAX friends of uid, newest first, from
 * fwd, hr_reading_friends_op's oldest-first read: it holds them all unless the user has
 * more, who then costs one more round trip, reading newest first. With
 * borrow, the ids of a fwd that holds them all (!fwd->more) point into it;
 * else they are copies in a. */
int hr_reading_friends_of(hr_reading *r, hr_slice uid, const hr_result *fwd, bool borrow, hr_arena *a,
                          hr_slice **friends, size_t *n, hr_err *err);

/* ---- Round trip 2 on two cores (reading_split.c) -------------------------- */

/* Whether a friends-reads may hand URL-set tests to the helper:
 * while no more of them run than half the cores, so that the other half is
 * likely free. On 2 cores with two queries at a time, splitting made each
 * wait for the helper, and fewer calls a second were served. */
bool hr_reading_may_split(hr_reading *r);

/* Round trip 2: b2, and *b2s (NULL: none) on the helper thread meanwhile
 * if it is free and starts it by the time b2 is done, else after b2 on this
 * one. *late is set when the helper was left with *b2s (split_deadline):
 * *b2s is then NULL, its URLs unanswered, and the caller tests them again. */
int hr_reading_exec_round_trip_2(hr_reading *r, hr_batch *b2, hr_batch **b2s, bool *late, hr_err *err);

#endif
