/* reactions.h — likes, comments and other kinds of reactions to activities
 * (API.md "Reactions"). Where they are kept: core/reaction_store.h.
 *
 * A reaction is one atomic step in the activity's hash tag on both stores:
 * a guard (store.h, hr_zguard: for a like, that the user has none), then
 * the record, the activity's lists and both counts. So counts are exact
 * under concurrency: a like is counted once per user however many servers
 * race to add it, and the loser answers the winner's like. The user's own list
 * is in the user's hash tag, written before the step; a crash between
 * them, or a step that lost, leaves an entry there that names no reaction
 * (or one of another time), which reads of that list skip.
 *
 * Costs in round trips: an add 1 on RocksDB (the activity's body is read in
 * the same batch), 2 on Redis Cluster (the body and the user's list, then
 * the step), one more for a like the user already made; a delete 3; a
 * list of an activity's or a user's reactions 2. */
#ifndef HR_REACTIONS_H
#define HR_REACTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/activity.h"
#include "core/rank.h"
#include "core/reaction_store.h"
#include "store/store.h"

typedef struct hr_reactions hr_reactions;

/* Reactions over store (borrowed) to the activities of the feeds of
 * namespace ns (copied). */
hr_reactions *hr_reactions_new(hr_store *store, const char *ns);
void hr_reactions_free(hr_reactions *r);

/* React as user with kind (an identifier of at most 64 bytes) to activity
 * aid at now_ms, with data (compact JSON text of at most
 * HR_REACTION_DATA_MAX bytes, or empty). A second like of the same user
 * writes nothing: *existing is true and *out is the first. HR_ENOTFOUND
 * when the activity does not exist; HR_EINVAL naming the field. Slices of
 * *out point into a. */
int hr_reactions_add(hr_reactions *r, hr_slice aid, hr_slice user, hr_slice kind, hr_slice data,
                     int64_t now_ms, hr_arena *a, hr_reaction *out, bool *existing, hr_err *err);

/* The reaction id; HR_ENOTFOUND if there is none. */
int hr_reactions_get(hr_reactions *r, hr_slice id, hr_arena *a, hr_reaction *out, hr_err *err);

/* Delete reaction id: its counts drop in the same step. HR_ENOTFOUND if
 * it is not there (or another delete took it first). */
int hr_reactions_delete(hr_reactions *r, hr_slice id, hr_err *err);

typedef struct hr_reaction_page {
    hr_reaction *items;
    size_t n;
    const char *next_cursor; /* NULL on the last page */
} hr_reaction_page;

/* The reactions to activity aid, newest first, of one kind (empty: all).
 * HR_ENOTFOUND when the activity does not exist. */
int hr_reactions_of_activity(hr_reactions *r, hr_slice aid, hr_slice kind, const hr_list_req *req,
                             hr_arena *a, hr_reaction_page *out, hr_err *err);
/* The user's reactions, newest first, of one kind (empty: all), to
 * activities that still exist. A page may hold fewer than the limit and
 * still have a next_cursor. */
int hr_reactions_of_user(hr_reactions *r, hr_slice uid, hr_slice kind, const hr_list_req *req, int64_t now_ms,
                         hr_arena *a, hr_reaction_page *out, hr_err *err);

#endif
