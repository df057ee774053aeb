/* feeds.h — activities, feeds, home timelines and the hybrid fan-out
 * (API.md "Activities and feeds"; seeds 001 and 004).
 *
 * Storage (braces are Redis Cluster hash tags; NS the namespace, "" in the
 * server). Feeds and indexes are time lists (store.h): (time, activity id)
 * entries, newest first, written blind.
 *
 *   {NSa/ID}            value   the activity (core/activity.h), or its tombstone
 *   {NSu/UID}/fid/FID   value   the id of UID's activity with foreign_id FID
 *   {NSu/UID}/fd        tlist   UID's own activities (the actor index too)
 *   {NSu/UID}/tl        tlist   UID's home timeline (fanned-out entries)
 *   {NSu/UID}/big       zset    the big accounts UID follows / groups UID is
 *                               in: members "u:UID" / "g:GID"
 *   {NSg/GID}/fd        tlist   the group's feed (target "group:GID")
 *   {NSix/K/V}/l        tlist   index: K is verb, object or target
 *   {NSbig}             zset    every big account: "u:UID" / "g:GID"
 *   {NSq/QUEUE}         queue   fan-out jobs (core/feed_job.h, run by
 *                               core/fanout.h); QUEUE is the
 *                               fanout_queue setting, "fanout" by default
 *
 * Creating an activity costs 3 round trips on RocksDB: (1) a read of the
 * foreign-id mapping, the actor's follower count and whether the actor (and
 * group) is big; (2) the foreign-id mapping and the fan-out job, so that it
 * is acknowledged with the activity or not at all; (3) the feed and index
 * entries and the body. On Redis Cluster, whose batches are pipelines over
 * several slots that a crash can cut anywhere, the mapping goes before the
 * job and the body after the entries, each in a batch of its own: 5 round
 * trips with a foreign_id, 4 without.
 *
 * Why that order (test_feeds.c, create_after_a_crash, kills a create in
 * every subset of every batch on both stores). The body says the activity
 * exists. A crash before it leaves pieces: the job, if pushed, finds no
 * body and writes them all again (hr_feeds_write_new) before fanning out;
 * and the client's retry finds the mapping, written first, with no body,
 * and finishes that same activity (its id, and the time the id holds)
 * instead of making a second one. With the job first (as before
 * 2026-11-27), a crash between it and the mapping made the retry create a
 * second activity beside the job's.
 *
 * Big accounts (the hybrid): an actor with more followers than
 * fanout_threshold, or a group with more members, is not fanned out. When
 * its first activity past the threshold is created it joins {NSbig} and a
 * job adds it to each follower's /big set (and follow / join of a big
 * account adds it there). A timeline read merges the fanned-out timeline with
 * the feed of every account in the reader's /big set, by (time, id). Once
 * big, an account stays big (falling back under the threshold would drop
 * its unfanned activities from timelines).
 *
 * Reading a page costs: (1) one range read of the timeline and one of the
 * /big set (same slot: one round trip); (2) one range read per big account
 * followed; (3) one multi-get of the bodies. Deleted activities are skipped
 * (their bodies are tombstones) and the page refilled. */
#ifndef HR_FEEDS_H
#define HR_FEEDS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/activity.h"
#include "core/graph.h"
#include "core/memo.h"
#include "store/store.h"

typedef struct hr_feeds hr_feeds;

typedef struct hr_feeds_options {
    const char *ns;
    int64_t fanout_threshold; /* followers / members above which an account is big */
    int64_t timeline_ttl_ms;  /* timeline entries live this long past the activity's time */
    size_t timeline_max;      /* entries a timeline keeps (and shows) at most */
    /* The fan-out queue's name (NULL or "": "fanout"). Every process that
     * names the same queue shares its jobs; a server that must not work
     * another's jobs (a staging deployment on the same Redis Cluster, a
     * test) names its own. */
    const char *queue;
} hr_feeds_options;

/* Feeds over store and graph (borrowed); options copied. */
hr_feeds *hr_feeds_new(hr_store *store, hr_graph *graph, const hr_feeds_options *opts);
void hr_feeds_free(hr_feeds *f);

/* Create an activity from *in (id ignored; time_ms 0 means now). With a
 * foreign_id that in->actor already used, nothing is written and *out is the
 * existing activity with *duplicate true. */
int hr_feeds_create(hr_feeds *f, const hr_activity *in, int64_t now_ms, hr_arena *a, hr_activity *out,
                    bool *duplicate, hr_err *err);
/* The activity id; HR_ENOTFOUND if none (or deleted). */
int hr_feeds_get(hr_feeds *f, hr_slice id, hr_arena *a, hr_activity *out, hr_err *err);
/* Replace data, and object when new_object is non-NULL (an empty slice
 * removes it). *out is the new version. The object's index entries are
 * moved before the body changes (on Redis Cluster in a batch before it), so
 * a retry after a crash between them moves them again. */
int hr_feeds_update(hr_feeds *f, hr_slice id, const hr_slice *new_object, hr_slice data, hr_arena *a,
                    hr_activity *out, hr_err *err);
/* Delete: reads skip it at once; a job removes its entries. The job is
 * pushed before the tombstone is written (on Redis Cluster in a batch before
 * it), so a retry after a crash between them still finds the activity and
 * pushes the job again. */
int hr_feeds_delete(hr_feeds *f, hr_slice id, int64_t now_ms, hr_err *err);

typedef enum { HR_FEED_USER, HR_FEED_GROUP, HR_FEED_TIMELINE } hr_feed_kind;

/* A page request. Bounds are exclusive; cursor is a next_cursor this server
 * made (borrowed). */
typedef struct hr_feed_req {
    size_t limit;       /* 1..HR_FEED_PAGE_MAX */
    size_t offset;      /* 0..HR_FEED_OFFSET_MAX */
    int64_t before_ms;  /* INT64_MAX: none */
    int64_t after_ms;   /* INT64_MIN: none */
    const char *cursor; /* NULL or a next_cursor */
    /* Who reads the page (empty: nobody named): each activity then also
     * says which kinds of reaction the reader gave it (own_reactions). */
    hr_slice reader;
} hr_feed_req;

#define HR_FEED_PAGE_MAX 1000
#define HR_FEED_OFFSET_MAX 10000

typedef struct hr_feed_page {
    hr_activity *items;
    size_t n;
    const char *next_cursor; /* NULL on the last page */
} hr_feed_page;

/* A page of a feed: a user's own (id = uid), a group's (id = gid), or a
 * user's home timeline. */
int hr_feeds_read(hr_feeds *f, hr_feed_kind kind, hr_slice id, const hr_feed_req *req, int64_t now_ms,
                  hr_arena *a, hr_feed_page *out, hr_err *err);

/* Secondary-index query: activities matching every non-empty field of
 * filter (actor, verb, object, target), newest first. At least one field. A
 * request examines at most HR_FEED_SCAN_MAX entries; a page may then come
 * back short, with a next_cursor to go on. */
#define HR_FEED_SCAN_MAX 5000
int hr_feeds_query(hr_feeds *f, const hr_activity *filter, const hr_feed_req *req, int64_t now_ms,
                   hr_arena *a, hr_feed_page *out, hr_err *err);

/* The kept home pages' counts (memo.h), for /metrics; false when none are
 * kept: the store leaves no memory to memos (hr_store_caps.memo_bytes). */
bool hr_feeds_page_memo_stats(hr_feeds *f, hr_memo_stats *out);

/* How many accounts (users and groups) are big. */
int hr_feeds_big_count(hr_feeds *f, int64_t *n, hr_err *err);

/* A graph change with its timeline side effects (API.md "Social graph"):
 * uid starts (adds) or stops following user `other` (group false), or joins
 * or leaves group `other` (group true), at now_ms; uid and other are
 * borrowed. The change's fan-out job (which backfills uid's timeline or
 * removes the account's entries from it, and keeps uid's /big set) goes
 * into the graph's first batch, ahead of its writes (graph.h), so it is
 * acknowledged with the change or not at all; this process's fan-out
 * workers are woken once it ran. *changed (may be NULL) says whether the
 * relation changed: it did not hold before (adds) or it did (removes).
 * HR_EINVAL naming the field for an id that is not an identifier, or for
 * uid following itself. Round trips: a follow 2, the others 1. */
int hr_feeds_relate(hr_feeds *f, hr_slice uid, bool group, hr_slice other, bool adds, int64_t now_ms,
                    bool *changed, hr_err *err);

#endif
