/* members.h — members: the users, feeds and internal components that rate
 * stories (seed 002: "a member has a URL and a score").
 *
 * A member is a small record under its id: its URL (canonicalised by
 * core/url.h, so a feed is recognisable by any variant of its address) and
 * an integer score the application keeps (reputation, trust, weight).
 * Ratings do not require a member record: any identifier may rate.
 *
 * Storage key (a Redis Cluster hash tag; NS as in core/stories.h):
 *
 *   {NSmb/ID}   value  i64be score, then the canonical URL
 *
 * Cost: put 1 round trip (one write), get 1 (one read). */
#ifndef HR_MEMBERS_H
#define HR_MEMBERS_H

#include <stdint.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "store/store.h"

#define HR_MEMBER_SCORE_MAX 9007199254740991LL /* 2^53 - 1: exact in JSON doubles */

typedef struct hr_member {
    hr_slice id;  /* in the arena given */
    hr_slice url; /* canonical, in the arena given */
    int64_t score;
} hr_member;

typedef struct hr_members hr_members;

/* Members over store (borrowed), with key namespace ns ("" in the server;
 * copied). */
hr_members *hr_members_new(hr_store *store, const char *ns);
void hr_members_free(hr_members *m);

/* Create or replace member id (an identifier; the API layer checks) with url
 * (canonicalised: HR_EINVAL with the canonicaliser's detail if refused) and
 * score (|score| <= HR_MEMBER_SCORE_MAX, else HR_EINVAL). *out is the member
 * as stored. */
int hr_members_put(hr_members *m, hr_slice id, hr_slice url, int64_t score, hr_arena *a, hr_member *out,
                   hr_err *err);

/* Member id; HR_ENOTFOUND if none. */
int hr_members_get(hr_members *m, hr_slice id, hr_arena *a, hr_member *out, hr_err *err);

#endif
