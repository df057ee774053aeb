/* activity.h — an activity (API.md "Activities and feeds"): its fields, its
 * id, and the bytes it is stored as.
 *
 * An activity is stored once, under its id; feeds, timelines and indexes
 * hold only (time, id) entries and are filled in from the bodies at read
 * time (Stream-Framework's lesson), so an update shows everywhere at once and
 * a delete is one write.
 *
 * The id is time-ordered: 12 hex digits of the activity's time in ms, then 8
 * hex digits of randomness, e.g. "019a9f3e2c00a1b2c3d4". Ids of one
 * millisecond collide with probability 2^-32 per pair. */
#ifndef HR_ACTIVITY_H
#define HR_ACTIVITY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/slice.h"

#define HR_ACTIVITY_ID_LEN 20
#define HR_ACTIVITY_FIELD_MAX 128              /* bytes of actor, verb, object, target, foreign_id */
#define HR_ACTIVITY_TIME_MAX 253402300799999LL /* 9999-12-31T23:59:59.999Z, below 2^48 */

/* A kind of reaction and how many an activity has (core/reaction_store.h). */
typedef struct hr_reaction_count {
    hr_slice kind;
    int64_t n;
} hr_reaction_count;

typedef struct hr_activity {
    char id[HR_ACTIVITY_ID_LEN + 1];
    int64_t time_ms;
    hr_slice actor, verb;                /* required */
    hr_slice object, target, foreign_id; /* optional: empty when absent */
    hr_slice data;                       /* JSON text, or empty */
    /* Whether creation fanned it out to the actor's followers / the group's
     * members (false for big accounts, merged at read time instead). */
    bool fanned_followers, fanned_members;
    /* Filled by the reads that return activities, not stored in the body:
     * the counts of its reactions by kind (none: n_counts 0) and, when
     * own_known (a reader was named), the kinds that reader reacted with. */
    hr_reaction_count *counts;
    size_t n_counts;
    hr_slice *own;
    size_t n_own;
    bool own_known;
} hr_activity;

/* A new id for an activity at time_ms (0..HR_ACTIVITY_TIME_MAX) into out. */
void hr_activity_new_id(int64_t time_ms, char out[HR_ACTIVITY_ID_LEN + 1]);
/* Whether s has the form of an id. */
bool hr_activity_id_valid(hr_slice s);
/* The time an id was made for (hr_activity_new_id); id must be valid. */
int64_t hr_activity_id_time(hr_slice id);

/* A key in the activity's hash tag: "{" ns "a/" id "}" suffix tail. With
 * an empty suffix and tail it is the body's key (core/feeds.h); its
 * reactions live beside it (core/reaction_store.h). Clears k and returns
 * its contents. */
hr_slice hr_activity_key(const char *ns, hr_slice id, const char *suffix, hr_slice tail, hr_buf *k);

/* The group of an activity whose target is "group:GID" (GID non-empty), else
 * an empty slice. */
hr_slice hr_activity_group(const hr_activity *a);

/* Check the fields: actor and verb required identifiers, object / target /
 * foreign_id identifiers when present, time in range. HR_EINVAL naming the
 * field. (The API layer checks the same first; core does not trust it.) */
int hr_activity_check(const hr_activity *a, hr_err *err);

/* The stored form. A deleted activity is stored as a tombstone (its fields
 * kept for the clean-up job) until its entries are gone. */
void hr_activity_encode(const hr_activity *a, bool tombstone, hr_buf *out);
/* Decode v into *a (slices into arena). *tombstone says whether it is one.
 * HR_EINTERNAL if v is not an activity. */
int hr_activity_decode(hr_slice id, hr_slice v, hr_arena *arena, hr_activity *a, bool *tombstone,
                       hr_err *err);

#endif
