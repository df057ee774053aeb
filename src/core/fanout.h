/* fanout.h — the background half of feeds: fan-out jobs and their workers.
 *
 * Creating an activity, deleting one, and every follow / unfollow / join /
 * leave push a job onto a durable queue (store.h "Durable work queues");
 * workers claim jobs with a lease, run them, and acknowledge them. A job
 * that fans out to many timelines walks the follower (or member) set in
 * pages of `batch` entries, writing each page in one store batch and then a
 * checkpoint (the job's phase and the last follower done), so a worker that
 * dies mid-way (kill -9) leaves a job that the next claim resumes from the
 * checkpoint rather than restarts. Every write is idempotent (time-list adds
 * and removes, set adds), so running part of a job twice is harmless. The
 * checkpoint doubles as a heartbeat: a job whose queue lease ran out while a
 * live worker is still on it (a job may outlast fanout_lease) is left alone
 * by whoever claims it next, as long as the checkpoint is younger than a
 * lease.
 *
 * What each job does:
 *   ADD       re-write the activity's body, feed and index entries if they
 *             are missing (a crash between the job push and those writes),
 *             then add (time, id) to every follower's and group member's
 *             timeline, trimming a timeline now and then where the store
 *             does not cap timelines itself (RocksDB does: HR_DECL_TL_CAP);
 *             for an account that just became big, add it to its
 *             followers' /big sets
 *   REMOVE    remove a deleted activity's feed, index and timeline entries
 *   RELATION  follow / join: backfill the newest timeline_max activities of
 *             the account (within timeline_ttl), or for a big account add it
 *             to the /big set; unfollow / leave: remove its entries from the
 *             timeline (one scan of a timeline bounded by timeline_max), keep
 *             those the user still sees through another follow or group
 *
 * Costs: an ADD to F followers is ceil(F / batch) x 2 round trips plus 2;
 * each timeline entry is one blind time-list add. Where the store has a
 * cheaper way to write many adds at once (RocksDB: a sorted table file,
 * store.h "Bulk time-list adds"), a worker gathers the adds of the jobs it
 * claims, up to `bulk`, and writes them at once, checkpointing and acking
 * after that write (fanout.c "Bulk"); a page then costs its read only. */
#ifndef HR_FANOUT_H
#define HR_FANOUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "core/feeds.h"

typedef struct hr_fanout_options {
    unsigned workers;    /* background threads (0: none; call hr_fanout_run) */
    int64_t lease_ms;    /* a claimed job not acknowledged by then runs again */
    size_t batch;        /* timeline entries per store batch (1..10000) */
    int64_t throttle_ms; /* pause between batches of one job (0: none) */
    int64_t poll_ms;     /* how often idle workers look for jobs of other processes */
    /* Timeline adds gathered across jobs into one bulk write (store.h,
     * hr_tlbulk) where the store's bulk writes pay and it caps timelines
     * itself (RocksDB); 0, or another store: each page is written as it is
     * read. See "Bulk" in fanout.c. */
    size_t bulk;
    /* Tests: give up a job after this many batches, exactly as a worker
     * killed there would (no ack; the lease runs out, the checkpoint stays).
     * 0: no limit. */
    unsigned max_batches;
} hr_fanout_options;

typedef struct hr_fanout hr_fanout;

/* Start o->workers threads working the queue of f. NULL never (a thread that
 * cannot start is fatal). */
hr_fanout *hr_fanout_start(hr_feeds *f, const hr_fanout_options *o);
/* Stop the workers (each finishes its current batch; unfinished jobs stay
 * leased and run again later). NULL is a no-op. */
void hr_fanout_stop(hr_fanout *fo);

/* Claim and run up to max_jobs jobs in this thread as `consumer`; *done is
 * how many ran to completion. With bulk adds (o->bulk), claim after claim
 * until o->bulk adds are gathered or a claim finds fewer than max_jobs, then
 * write them. For tests and `herald load`. */
int hr_fanout_run(hr_feeds *f, const hr_fanout_options *o, const char *consumer, size_t max_jobs,
                  size_t *done, hr_err *err);

/* The queue's depth and the push time of its oldest job (0 if empty). */
int hr_fanout_queue_info(hr_feeds *f, int64_t *depth, int64_t *oldest_ms, hr_err *err);

/* Timeline entries written and jobs completed by this process since start. */
uint64_t hr_fanout_entries_total(void);
uint64_t hr_fanout_jobs_total(void);

#endif
