/* graph.h — the social graph: directed follows, friends (mutual follows) and
 * group membership (API.md "Social graph").
 *
 * Each relation is kept from both ends, as sorted sets scored by the time it
 * was made, so every list is newest first and pages by cursor:
 *
 *   {NSu/UID}/fo   zset  whom UID follows         member target, score = time
 *   {NSu/UID}/fr   zset  who follows UID          member follower
 *   {NSu/UID}/fs   zset  UID's friends            member friend (both follow)
 *   {NSu/UID}/gr   zset  the groups UID is in     member group id
 *   {NSg/GID}/mb   zset  the members of group GID member user id
 *
 * A user's keys share the hash tag {NSu/UID}, a group's {NSg/GID}, so each
 * end lives in one Redis Cluster slot. NS is the namespace ("" in the
 * server); identifiers never contain '{', '}' or '/'.
 *
 * Why a friends set and not "follows ∩ followers" at read time: social
 * reading asks for all of a user's friends (450 on average, up to 5,000) on
 * every friends-reads request; one range read of a set is far cheaper than
 * a score lookup per follow. The set is kept by follow and unfollow: after
 * writing its edge, a follow reads the reverse edge (in a second batch, so
 * that of two users following each other at the same instant at least one
 * sees the other's edge) and, if it is there, adds both friend entries.
 *
 * Costs in round trips (store batches): follow 2, unfollow 1, join/leave 1,
 * a list page 1 (friends, follows, followers, members, groups), a count 1. */
#ifndef HR_GRAPH_H
#define HR_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/rank.h"
#include "store/store.h"

typedef struct hr_graph hr_graph;

/* The sets of the graph. */
typedef enum {
    HR_GRAPH_FOLLOWS,   /* a user's follows */
    HR_GRAPH_FOLLOWERS, /* a user's followers */
    HR_GRAPH_FRIENDS,   /* a user's friends */
    HR_GRAPH_GROUPS,    /* a user's groups */
    HR_GRAPH_MEMBERS,   /* a group's members */
} hr_graph_set;

/* The graph over store (borrowed), with key namespace ns (copied). */
hr_graph *hr_graph_new(hr_store *store, const char *ns);
void hr_graph_free(hr_graph *g);

/* Append the key of set `set` of id (a user or, for HR_GRAPH_MEMBERS, a
 * group) to k: for modules that read the sets directly (fan-out pages
 * through followers with its own cursor). */
void hr_graph_key(const hr_graph *g, hr_graph_set set, hr_slice id, hr_buf *k);

/* uid follows target at now_ms. The writes are added to b, which may already
 * hold the caller's own ops (a backfill job): they run in the same first
 * batch, so the caller's ops are acknowledged with the follow. b is executed
 * (and must not have been); the caller reads its ops' results afterwards and
 * frees b. *was_new (may be NULL) says whether uid did not follow target
 * before. HR_EINVAL for uid == target. */
int hr_graph_follow(hr_graph *g, hr_batch *b, hr_slice uid, hr_slice target, int64_t now_ms, bool *was_new,
                    hr_err *err);
/* uid follows every one of targets[0..n) (n <= HR_ZRANGE_LIMIT_MAX; none
 * equal to uid): the bulk form of hr_graph_follow for loading a graph, with
 * no fan-out jobs. 3 round trips whatever n: both ends of every edge, then
 * the reverse edges, then the friend entries. */
int hr_graph_follow_many(hr_graph *g, hr_slice uid, const hr_slice *targets, size_t n, int64_t now_ms,
                         hr_err *err);

/* uid stops following target (and they stop being friends). As for follow,
 * the writes join b. *was_following (may be NULL) says whether uid did. */
int hr_graph_unfollow(hr_graph *g, hr_batch *b, hr_slice uid, hr_slice target, bool *was_following,
                      hr_err *err);

/* uid joins / leaves group gid; as for follow, the writes join b. */
int hr_graph_join(hr_graph *g, hr_batch *b, hr_slice gid, hr_slice uid, int64_t now_ms, bool *was_new,
                  hr_err *err);
int hr_graph_leave(hr_graph *g, hr_batch *b, hr_slice gid, hr_slice uid, bool *was_member, hr_err *err);

/* A page of ids, newest relation first. */
typedef struct hr_id_page {
    hr_slice *ids; /* in the arena */
    int64_t *times;
    size_t n;
    const char *next_cursor; /* NULL on the last page */
} hr_id_page;

/* A page of set `set` of id. HR_EINVAL naming the field for a bad limit or
 * cursor. */
int hr_graph_list(hr_graph *g, hr_graph_set set, hr_slice id, const hr_list_req *req, hr_arena *a,
                  hr_id_page *out, hr_err *err);

/* Members of set `set` of id, newest first, at most max (1..HR_ZRANGE_LIMIT_MAX):
 * one range read. */
int hr_graph_all(hr_graph *g, hr_graph_set set, hr_slice id, size_t max, hr_arena *a, hr_slice **ids,
                 size_t *n, hr_err *err);

/* How many members set `set` of id has. */
int hr_graph_count(hr_graph *g, hr_graph_set set, hr_slice id, int64_t *n, hr_err *err);

/* Whether uid follows target / uid is in group gid. */
int hr_graph_is_member(hr_graph *g, hr_graph_set set, hr_slice id, hr_slice member, bool *yes, hr_err *err);

#endif
