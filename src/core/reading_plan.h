/* reading_plan.h — how friends-reads answers each URL: which side of the data
 * it reads, and the in-memory intersection. Pure functions, no store, so the
 * choice and the intersection are unit-tested on their own.
 *
 * The question: for N URLs (at most 100) and a user's M friends (450 on
 * average, up to 5,000), which friends read which URL. core/reading.h keeps
 * both directions of the data:
 *
 *   the URL side      per URL, its readers (a sorted set of user ids):
 *                     reading it costs one range read, about one unit per
 *                     reader; the answer is the readers that are friends
 *                     (hr_rplan_friends_* below), whatever M is
 *   the friends side  per friend, a packed set of the URL hashes it read:
 *                     one hr_pset_test per friend with every URL that goes
 *                     this way, whatever the URLs' popularity
 *
 * A URL read by a few people (nearly all of them: URL popularity is
 * log-log) is cheapest from its own list; a URL read by a hundred thousand
 * people is cheapest from the friends' sets. The friends' side has a fixed
 * price (a test per friend) that the first URL sent that way pays, and a
 * smaller price per further URL (a friend with many reads keeps them in
 * several chunks, and a further URL may fall in another one). So the choice
 * is per query, not per URL alone: hr_rplan_sides sorts the undecided URLs
 * by the readers left to read and sends the k largest to the friends' side,
 * for the k that minimises the modelled cost.
 *
 * The costs are in microseconds per unit, measured on this project's machine
 * with the RocksDB backend (BENCHMARKS.md, "Social reading"): a list entry
 * ~0.5 us, a friend's test ~12 us (its metadata and one chunk of up to 8
 * KiB). They need only be right within a factor of a few: the two sides
 * differ by orders of magnitude at the extremes, and near the break-even
 * point either choice costs about the same. */
#ifndef HR_READING_PLAN_H
#define HR_READING_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/slice.h"

/* Entries one list read returns at most (store.h HR_ZRANGE_LIMIT_MAX): a
 * longer list is always answered from the friends' side. */
#define HR_RPLAN_LIST_MAX 10000

typedef struct hr_rplan_costs {
    double entry;        /* reading one entry of a URL's reader list */
    double friend_test;  /* one friend's packed-set test, for the first URL */
    double friend_extra; /* per friend, for each further URL on that side */
} hr_rplan_costs;

/* The measured defaults (see above). */
hr_rplan_costs hr_rplan_default_costs(void);

/* Decide the side of n URLs. left[i] is how many entries of URL i's list are
 * still unread (0: already answered, it takes no side). On return
 * friends_side[i] is true for the URLs to test against the m friends' sets;
 * a URL with more than HR_RPLAN_LIST_MAX entries left always goes there. With
 * m == 0 every URL stays on its list side (there is nobody to test).
 * Returns the modelled cost of the choice. */
double hr_rplan_sides(const int64_t *left, size_t n, size_t m, const hr_rplan_costs *c, bool *friends_side);

/* ---- The friend index: user id -> position in the friend list ---------- */

/* An open-addressing table over m ids (borrowed: they must outlive it), so
 * that a reader list of R entries is intersected with the friends in O(R).
 * Repeated ids keep their first position. */
typedef struct hr_rplan_friends {
    const hr_slice *ids;
    size_t n;
    uint32_t *slots; /* position + 1; 0 = empty */
    uint64_t *hashes;
    size_t mask;
} hr_rplan_friends;

/* Build the index in arena a. */
void hr_rplan_friends_init(hr_rplan_friends *f, const hr_slice *ids, size_t n, hr_arena *a);
/* The position of id in the list, or -1. */
long hr_rplan_friends_find(const hr_rplan_friends *f, hr_slice id);

#endif
