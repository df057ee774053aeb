/* feed_job.h — a fan-out job: what it asks for, and its bytes in the queue.
 *
 * feeds.c makes jobs (a create, a delete, a follow / unfollow / join /
 * leave) and pushes them onto the fan-out queue; fanout.c claims and runs
 * them. The job and its codec live here, apart from both, so that neither
 * needs the other for it: fanout -> feeds -> feed_job, and fanout ->
 * feed_job. (They were in fanout.c, declared in feeds_internal.h, so feeds.c
 * and fanout.c called each other.) This file knows activities (activity.h)
 * and nothing of the store.
 *
 * The payload, as the durable queue holds it (store.h "Durable work
 * queues"); jobs outlive the process that pushed them, so it changes only
 * with a way to read the old one:
 *
 *   u8 kind | u8 flags | u64be time_ms | then
 *   ADD, REMOVE: u32be length + the activity's stored form, then its id
 *   RELATION:    u8 group | u8 adds | u8 length + uid | u8 length + other */
#ifndef HR_FEED_JOB_H
#define HR_FEED_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/activity.h"

typedef enum {
    HR_JOB_ADD = 1,      /* an activity was created: fan it out */
    HR_JOB_REMOVE = 2,   /* an activity was deleted: remove its entries */
    HR_JOB_RELATION = 3, /* follow / unfollow / join / leave: backfill or remove */
} hr_job_kind;

/* Flags of an ADD job: the actor / group became big with this activity, and
 * their followers' /big sets must learn it. */
enum { HR_JOB_MARK_ACTOR_BIG = 1, HR_JOB_MARK_GROUP_BIG = 2 };

typedef struct hr_feed_job {
    hr_job_kind kind;
    /* ADD, REMOVE: the activity (its fanned_* flags say what to fan out). */
    hr_activity activity;
    unsigned flags;
    /* RELATION: uid started (adds) or stopped following user `other` (group
     * false) or being a member of group `other` (group true); each 1..255
     * bytes. */
    hr_slice uid, other;
    bool group, adds;
    int64_t time_ms; /* when the job was made */
} hr_feed_job;

/* Append j's payload to out. j and what it points to are borrowed. */
void hr_feed_job_encode(const hr_feed_job *j, hr_buf *out);
/* Decode payload (borrowed) into *out, its slices copied into a.
 * HR_EINTERNAL if payload is not a job's (nothing can ever run it). */
int hr_feed_job_decode(hr_slice payload, hr_arena *a, hr_feed_job *out, hr_err *err);

#endif
