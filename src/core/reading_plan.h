/* reading_plan.h — how friends-reads answers each URL: which side of the data
 * it reads, and the in-memory intersection. Pure functions, no store, so the
 * choice and the intersection are unit-tested on their own.
 *
 * The question: for N URLs (at most 100) and a user's M friends (450 on
 * average, up to 5,000), which friends read which URL. core/reading.h keeps
 * both directions of the data, and a URL can be answered four ways:
 *
 *   LIST     read the URL's reader list (a sorted set of user ids) and
 *            intersect it with the friends in memory (hr_rplan_friends
 *            below): about one unit per reader, whatever M is
 *   PROBE    look each friend up in the URL's reader list (M point reads
 *            of one sorted set): one unit per friend, whatever the URL's
 *            popularity
 *   URL_SET  test the M friends' id hashes against the URL's packed set of
 *            its readers' id hashes (one hr_pset_test): the chunks the
 *            friends fall in (at most one per ~384 readers) and a binary
 *            search in memory per friend
 *   FRIENDS  the friends' own packed sets of URL hashes: one hr_pset_test
 *            per friend with EVERY URL that goes this way at once (a test
 *            reads the chunks the URLs fall in, so a friend with few reads
 *            costs one chunk for all of them)
 *
 * A URL read by few (nearly all of them: popularity is log-log) is cheapest
 * as a LIST; a URL read by many costs M probes, a URL-set test, or a share
 * of the M friends' tests. The FRIENDS side has a fixed price (a test per
 * friend) that the first URL sent that way pays, and a smaller one per
 * further URL (a friend with many reads keeps them in several chunks), so
 * it pays off when several popular URLs share it and the friends are few:
 * with 5,000 heavy readers as friends it reads ~40,000 chunks, where the
 * URL sets of 38 popular URLs hold ~2,400. The choice is therefore per
 * query: each undecided URL takes the cheapest of LIST, PROBE and URL_SET,
 * then hr_rplan_sides sends the k URLs that cost most that way to the
 * FRIENDS side, for the k that minimises the total.
 *
 * The costs are in units of a list entry, found with the RocksDB backend by
 * forcing each side on the same queries: a probe (a point read of a
 * sorted-set member) costs about five entries, a friend's test about
 * fifteen for a few URLs (its metadata and one or more chunks of up to
 * 8 KiB) and half an entry per further URL. Only their ratios matter, and
 * only within a factor of a few: the sides differ by orders of magnitude at
 * the extremes, and near a break-even point either choice costs about the
 * same. On the queries measured, this choice beat the best single side
 * (docs/DESIGN.md, "Measured decisions"). */
#ifndef HR_READING_PLAN_H
#define HR_READING_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/slice.h"

/* Entries one list read returns at most (store.h HR_ZRANGE_LIMIT_MAX): a
 * longer list is never read whole. */
#define HR_RPLAN_LIST_MAX 10000

typedef enum {
    HR_RPLAN_DONE,    /* answered already (its whole list came with the first read) */
    HR_RPLAN_LIST,    /* read the rest of its list */
    HR_RPLAN_PROBE,   /* look the friends up in its list */
    HR_RPLAN_URL_SET, /* test the friends against its packed set of readers */
    HR_RPLAN_FRIENDS, /* test the friends' packed sets */
} hr_rplan_side;

typedef struct hr_rplan_costs {
    double entry;        /* reading one entry of a URL's reader list */
    double probe;        /* looking one friend up in a URL's reader list */
    double friend_test;  /* one friend's packed-set test, for the first URL */
    double friend_extra; /* per friend, for each further URL on that side */
    double set_test;     /* a URL-set test, whatever its size */
    double set_chunk;    /* each chunk of a URL set it reads */
    double set_member;   /* each friend it searches for */
} hr_rplan_costs;

/* Readers a URL set keeps per chunk, on average (store/rocks/pset.c: chunks
 * hold 256..512 entries). */
#define HR_RPLAN_SET_CHUNK_READERS 384

/* The measured defaults (see above). */
hr_rplan_costs hr_rplan_default_costs(void);

/* Decide the side of n URLs for m friends. size[i] is how many readers URL i
 * has (its list's size), left[i] how many entries of its list are still
 * unread (0: HR_RPLAN_DONE). A list longer than HR_RPLAN_LIST_MAX is never
 * read whole. Returns the modelled cost. */
double hr_rplan_sides(const int64_t *size, const int64_t *left, size_t n, size_t m, const hr_rplan_costs *c,
                      hr_rplan_side *side);

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
