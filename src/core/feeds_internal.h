/* feeds_internal.h — what fanout.c (background jobs) needs of feeds.c
 * beyond feeds.h: the feeds object, the keys of feeds.h, and the writes and
 * reads a job repeats. The jobs themselves are feed_job.h; kept home pages
 * are feeds_memo.h. Dependencies point one way: fanout.c calls feeds.c,
 * which calls fanout.c only through the job_pushed hook that
 * hr_fanout_start sets. Nothing but feeds.c and fanout.c (and the unit
 * tests, for keys) includes it. */
#ifndef HR_FEEDS_INTERNAL_H
#define HR_FEEDS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "core/feeds.h"
#include "core/memo.h"

struct hr_feeds {
    hr_store *store;
    hr_graph *graph;
    char *ns;
    char *queue; /* the fan-out queue's name (hr_feeds_options.queue) */
    hr_feeds_options opts;
    /* The store drops what timelines hold past timeline_max by itself
     * (HR_DECL_TL_CAP, RocksDB), so fan-out does not trim them. */
    bool store_caps_timelines;
    /* Home timelines' first pages, kept while unchanged (feeds_memo.h);
     * NULL: read the store every time. */
    hr_memo *pages;
    /* Called after a job was pushed, so that local workers start at once
     * rather than at their next poll (fanout.c sets it). */
    void (*job_pushed)(void *ctx);
    void *job_pushed_ctx;
};

/* ---- Keys (feeds.h lists them). Each appends to k after clearing it. ---- */
hr_slice hr_feeds_body_key(const hr_feeds *f, hr_slice id, hr_buf *k);
hr_slice hr_feeds_fid_key(const hr_feeds *f, hr_slice actor, hr_slice fid, hr_buf *k);
/* uid's key of suffix "/fd" (own feed), "/tl" (home timeline) or "/big". */
hr_slice hr_feeds_user_key(const hr_feeds *f, hr_slice uid, const char *suffix, hr_buf *k);
/* The group's feed. */
hr_slice hr_feeds_group_key(const hr_feeds *f, hr_slice gid, hr_buf *k);
hr_slice hr_feeds_index_key(const hr_feeds *f, const char *field, hr_slice value, hr_buf *k);
hr_slice hr_feeds_big_key(const hr_feeds *f, hr_buf *k);
hr_slice hr_feeds_queue_key(const hr_feeds *f, hr_buf *k);
/* "u:UID" or "g:GID": a big account as /big sets name it. */
hr_slice hr_feeds_account(bool group, hr_slice id, hr_buf *k);

/* Write activity a (with id) into existence, with whatever b already holds
 * (ops of the caller's, or none): its feed and index entries, and its body
 * LAST (the foreign-id mapping is the caller's: a create writes it first): in the same batch where batches
 * are atomic (RocksDB), in a batch of its own after the rest is answered where they are not (Redis Cluster).
 * The body is what says the activity exists (a job finds it and repairs nothing; a create by foreign_id finds
 * it and is a duplicate), so a crash before it leaves pieces the fan-out job writes again. Idempotent. */
int hr_feeds_write_new(hr_feeds *f, hr_batch *b, const hr_activity *a, hr_err *err);
/* The body of activity id as stored: *state HR_BODY_MISSING, HR_BODY_LIVE
 * (decoded into *out) or HR_BODY_DELETED (a tombstone). */
enum { HR_BODY_MISSING, HR_BODY_LIVE, HR_BODY_DELETED };
int hr_feeds_body_state(hr_feeds *f, hr_slice id, hr_arena *a, hr_activity *out, int *state, hr_err *err);
/* Add to b the removal of a's feed and index entries (not timelines). */
void hr_feeds_remove_entries(const hr_feeds *f, hr_batch *b, const hr_activity *a);

/* The expiry of a timeline entry for an activity at time_ms. */
int64_t hr_feeds_entry_expiry(const hr_feeds *f, int64_t time_ms);

#endif
