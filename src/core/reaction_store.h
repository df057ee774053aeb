/* reaction_store.h — where an activity's reactions are kept, and how the
 * reads of activities fetch their counts in the same round trip as the
 * bodies (API.md "Reactions"). The calls users make are in
 * core/reactions.h; feeds.c and fanout.c use this part only, so neither
 * depends on the reactions' handle.
 *
 * Storage, in the activity's hash tag so that a reaction's change is one
 * atomic step on both stores (store.h, hr_zguard). AID is the activity's
 * id; SUF the reaction's part after "AID-" (its id is AID-SUF).
 *
 *   {NSa/AID}/rc        zset    kind -> count of the activity's reactions
 *   {NSa/AID}/o/UID     zset    kind -> count of UID's reactions to it
 *   {NSa/AID}/rx        zset    SUF -> time: every reaction, by time
 *   {NSa/AID}/rx/KIND   zset    the same, of one kind
 *   {NSa/AID}/r/SUF     value   the reaction (reaction_encode)
 *   {NSu/UID}/rx        tlist   (time, reaction id): UID's reactions
 *   {NSu/UID}/rx/KIND   tlist   the same, of one kind
 *
 * Counts go down to 0 and stay as members of 0: readers leave them out. A
 * like is one per user and activity, so its SUF is "like." then the user:
 * its record is found without a list. Other kinds get a time-ordered SUF
 * of 20 hex digits, as activity ids. */
#ifndef HR_REACTION_STORE_H
#define HR_REACTION_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/activity.h"
#include "store/store.h"

#define HR_REACTION_DATA_MAX 8192 /* bytes of a reaction's data as compact JSON */
#define HR_REACTION_ID_MAX (HR_ACTIVITY_ID_LEN + 1 + 5 + 128)

typedef struct hr_reaction {
    hr_slice id, activity_id, user, kind;
    int64_t time_ms;
    hr_slice data; /* JSON text, or empty */
} hr_reaction;

/* The user's list of reactions (of one kind, unless kind is empty); the
 * activity's keys are hr_activity_key's (core/activity.h). Clears k and
 * returns its contents. */
hr_slice hr_rs_user_key(const char *ns, hr_slice uid, hr_slice kind, hr_buf *k);

/* The stored form of a reaction (its id, activity and SUF are in its key). */
void hr_reaction_encode(const hr_reaction *r, hr_buf *out);
/* Decode v into *r (slices into v); false if v is not a reaction's. */
bool hr_reaction_decode(hr_slice v, hr_reaction *r);

/* A reaction's id, "AID-SUF", into k (cleared); returns its contents. */
hr_slice hr_reaction_id(hr_slice aid, hr_slice suf, hr_buf *k);
/* Split a reaction id into its activity's id and its SUF; false if it has
 * not that form. */
bool hr_reaction_id_split(hr_slice id, hr_slice *aid, hr_slice *suf);

/* The read of one activity's counts, added to b beside its body (no extra
 * round trip): returns its op; hr_rs_counts_fill reads the result into
 * *act. */
size_t hr_rs_counts_read(hr_batch *b, const char *ns, hr_slice aid, hr_buf *k);
void hr_rs_counts_fill(const hr_batch *b, size_t op, hr_arena *a, hr_activity *act);
/* The read of the kinds reader gave an activity. Only an activity with
 * counts can have any, so a page reads them after its bodies, for those
 * alone: most activities of most pages have none, and a read per activity
 * would cost every page. hr_rs_own_fill sets act's own kinds (own_known). */
size_t hr_rs_own_read(hr_batch *b, const char *ns, hr_slice aid, hr_slice reader, hr_buf *k);
void hr_rs_own_fill(const hr_batch *b, size_t op, hr_arena *a, hr_activity *act);

/* An activity's counts and own kinds as bytes, for a page kept in memory,
 * and back. */
void hr_rs_counts_encode(const hr_activity *act, hr_buf *out);
void hr_rs_counts_decode(hr_slice v, hr_arena *a, hr_activity *act);

/* Delete every reaction of a deleted activity: their records, counts,
 * lists and the entries in their users' lists. Idempotent; pages through
 * the activity's list in batches. */
int hr_rs_purge(hr_store *s, const char *ns, hr_slice aid, hr_err *err);

#endif
