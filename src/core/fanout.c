/* fanout.c — see fanout.h: the fan-out workers, and what each job does.
 * It is the top of the feeds modules: it calls feeds.c (the feeds object,
 * its keys and the writes a job repeats, feeds_internal.h) and decodes jobs
 * with feed_job.h, while feeds.c knows of it only the job_pushed hook that
 * hr_fanout_start sets. So the calls point one way: fanout -> feeds ->
 * feed_job (the codec once lived here, and feeds.c called in to encode). */
#include "core/fanout.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "core/exec.h"
#include "core/feed_job.h"
#include "core/feeds_internal.h"
#include "core/reaction_store.h"

static _Atomic uint64_t entries_total, jobs_total;

uint64_t hr_fanout_entries_total(void) {
    return atomic_load(&entries_total);
}
uint64_t hr_fanout_jobs_total(void) {
    return atomic_load(&jobs_total);
}

/* ---- Running one job ---- */

/* Where a job is: its phase and, within a paged phase, the last member done. */
typedef struct checkpoint {
    unsigned phase;
    bool has_cursor;
    double score;
    hr_slice member;
} checkpoint;

/* ---- Bulk: many jobs' timeline adds in one write ----
 *
 * Where the store writes bulk time-list adds in a way of its own (RocksDB:
 * one sorted table file; store.h "Bulk time-list adds") and caps timelines
 * itself (HR_DECL_TL_CAP: a trim, which reads its list, would have to wait
 * for the adds; RocksDB does both), hr_fanout_run
 * gathers the timeline adds of the jobs it claims, claim after claim, until
 * o->bulk of them are gathered or a claim finds fewer jobs than it asked
 * for, and writes them at once. What a page's write is followed by waits
 * for that write, in this order:
 *   - a job's checkpoint, which must never get ahead of the adds it covers:
 *     it is written only after them (a crash before runs the job again
 *     from its last checkpoint written; the adds are idempotent);
 *   - the acks of the jobs done.
 * A job other than an ADD (a removal, a follow, an unfollow) and an ADD's
 * phase other than timeline adds (the /big marks) first write what is
 * gathered, so that they apply after the jobs claimed before them, as they
 * do page by page.
 *
 * The price is visibility: an add shows when its gathered write is done. A
 * short queue (a claim finds fewer jobs than it asks for) writes at once; a
 * deep one writes every o->bulk adds, a second or two apart at 1 M/s. Also,
 * an unfollow or a delete that another worker runs while an earlier add of
 * the same account sits gathered here is applied first, and the add then
 * lands after it (a delete's entries stay hidden, their body being gone; an
 * unfollowed account's entry shows until it ages out). Page by page the
 * same race exists for the time of one page's write. */

typedef struct gather {
    size_t cap; /* write at this many adds */
    hr_tlbulk *adds;
    hr_batch *acks;   /* of the jobs done whose adds are gathered, with their checkpoints' deletes */
    size_t jobs;      /* acks in acks */
    uint64_t entries; /* adds gathered, for entries_total */
    size_t *done;     /* hr_fanout_run's count of jobs done */
    bool dead;        /* max_batches ran out: write nothing more */
} gather;

/* Cut a timeline to timeline_max and timeline_ttl, unless the store does
 * (HR_DECL_TL_CAP). */
static void trim_timeline(hr_feeds *f, hr_batch *b, hr_slice key, int64_t now_ms) {
    if (!f->store_caps_timelines) hr_tltrim(b, key, f->opts.timeline_max, now_ms - f->opts.timeline_ttl_ms);
}

static int gather_write(hr_feeds *f, gather *g, hr_err *err) {
    int rc = hr_tlbulk_write(g->adds, err);
    if (rc == HR_OK && hr_batch_len(g->acks)) rc = hr_core_exec(f->store, g->acks, 0, "fan-out ack", err);
    if (rc == HR_OK) {
        atomic_fetch_add(&entries_total, g->entries);
        atomic_fetch_add(&jobs_total, g->jobs);
        *g->done += g->jobs;
    }
    hr_batch_reset(g->acks);
    g->jobs = 0;
    g->entries = 0;
    return rc;
}

typedef struct job_run {
    gather *g; /* NULL: write page by page */
    hr_feeds *f;
    const hr_fanout_options *o;
    hr_slice job_id;
    hr_slice consumer; /* who runs it (at most 255 bytes) */
    hr_arena *a;
    hr_feed_job job;
    checkpoint ck;
    hr_buf ck_key;
    int64_t now_ms;
    unsigned batches; /* written so far in this run */
} job_run;

enum {
    PHASE_ENTRIES,    /* the activity's own entries */
    PHASE_FOLLOWERS,  /* followers' timelines */
    PHASE_MEMBERS,    /* group members' timelines */
    PHASE_MARK_ACTOR, /* followers' /big sets */
    PHASE_MARK_GROUP, /* members' /big sets */
    PHASE_DONE,
};

static void checkpoint_key(job_run *r) {
    hr_buf_clear(&r->ck_key);
    hr_buf_append_byte(&r->ck_key, '{');
    hr_buf_append_str(&r->ck_key, r->f->ns);
    hr_buf_append_str(&r->ck_key, "job/");
    hr_buf_append_slice(&r->ck_key, r->job_id);
    hr_buf_append_byte(&r->ck_key, '}');
}

/* The checkpoint: u8 phase | u8 has_cursor | u64be written_ms | u8 length +
 * the consumer that wrote it | [u64be score bits | member]. Each batch
 * rewrites it, so it is also the job's heartbeat: a checkpoint another
 * consumer wrote less than a lease ago means the job is running there (its
 * lease ran out in the queue while it worked: a job can outlast a lease) and
 * *busy is set, so that this claim leaves it alone. */
static int checkpoint_load(job_run *r, bool *busy, hr_err *err) {
    hr_batch *b = hr_batch_new();
    size_t op = hr_get(b, hr_buf_slice(&r->ck_key));
    int rc = hr_core_exec(r->f->store, b, 0, "fan-out checkpoint", err);
    const hr_result *res = hr_batch_result(b, op);
    memset(&r->ck, 0, sizeof r->ck);
    *busy = false;
    const unsigned char *p = (const unsigned char *)res->value.ptr;
    if (rc == HR_OK && res->rc == HR_OK && res->value.len >= 11 && res->value.len >= 11u + p[10]) {
        int64_t written = (int64_t)hr_load_u64be(p + 2);
        hr_slice owner = hr_slice_of((const char *)p + 11, p[10]);
        *busy = !hr_slice_eq(owner, r->consumer) && r->now_ms - written < r->o->lease_ms;
        r->ck.phase = p[0];
        size_t at = 11u + p[10];
        if (p[1] && res->value.len >= at + 8) {
            uint64_t bits = hr_load_u64be(p + at);
            memcpy(&r->ck.score, &bits, sizeof bits);
            r->ck.has_cursor = true;
            r->ck.member = hr_arena_copy(r->a, hr_slice_of(res->value.ptr + at + 8, res->value.len - at - 8));
        }
    }
    hr_batch_free(b);
    return rc;
}

static int checkpoint_save(job_run *r, hr_err *err) {
    hr_buf v = HR_BUF_INIT;
    hr_buf_append_byte(&v, (uint8_t)r->ck.phase);
    hr_buf_append_byte(&v, r->ck.has_cursor);
    hr_buf_append_u64be(&v, (uint64_t)hr_now_ms());
    hr_buf_append_byte(&v, (uint8_t)r->consumer.len);
    hr_buf_append_slice(&v, r->consumer);
    if (r->ck.has_cursor) {
        uint64_t bits;
        memcpy(&bits, &r->ck.score, sizeof bits);
        hr_buf_append_u64be(&v, bits);
        hr_buf_append_slice(&v, r->ck.member);
    }
    hr_batch *b = hr_batch_new();
    /* A week is far past any lease: an abandoned checkpoint goes away. */
    hr_put(b, hr_buf_slice(&r->ck_key), hr_buf_slice(&v), r->now_ms + 7 * 86400000LL);
    int rc = hr_core_exec(r->f->store, b, 0, "fan-out checkpoint", err);
    hr_batch_free(b);
    hr_buf_free(&v);
    return rc;
}

static void throttle(const job_run *r) {
    if (r->o->throttle_ms <= 0) return;
    struct timespec ts = {r->o->throttle_ms / 1000, (long)(r->o->throttle_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Per-member work of a paged phase: add ops for one follower / member to b,
 * and any timeline trims to trims (run after b, in a batch of their own: a
 * trim reads the list, and a batch that reads after it writes is indexed by
 * RocksDB, which made every blind add of the page many times dearer). */
typedef void (*member_fn)(job_run *r, hr_batch *b, hr_batch *trims, hr_slice member, hr_buf *k);

/* Now and then (1 in 1024 entries, spread by member and activity) a
 * timeline is trimmed to timeline_max: Stream-Framework's probabilistic
 * trim. A trim scans the timeline's newest timeline_max entries, so its
 * rate sets the fan-out's cost: at 1 in 64 the scans cost 16 times the
 * writes; at 1 in 1024 they cost about as much as the writes, and a busy
 * timeline holds up to about timeline_max + 1024 entries between trims.
 * Reads never show more than timeline_max either way, and entries past
 * timeline_ttl are dropped by compaction (RocksDB) or the trim.
 *
 * Where the store caps timelines itself (RocksDB: its compaction drops what
 * is past timeline_max, HR_DECL_TL_CAP), there are no trims: they were a
 * large part of a gathered fan-out's time (a scan of the list, a tombstone
 * per entry dropped, and a memtable flush at each gathered write, the
 * tombstones being in the memtable). */
static bool trim_now(hr_slice member, const char *id) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < member.len; i++)
        h = (h ^ (uint8_t)member.ptr[i]) * 16777619u;
    for (size_t i = 0; i < HR_ACTIVITY_ID_LEN; i++)
        h = (h ^ (uint8_t)id[i]) * 16777619u;
    return (h & 1023) == 0;
}

static void add_to_timeline(job_run *r, hr_batch *b, hr_batch *trims, hr_slice member, hr_buf *k) {
    const hr_activity *act = &r->job.activity;
    hr_slice key = hr_feeds_user_key(r->f, member, "/tl", k), id = hr_slice_of(act->id, HR_ACTIVITY_ID_LEN);
    int64_t expiry = hr_feeds_entry_expiry(r->f, act->time_ms);
    if (r->g) { /* gathering: the store caps timelines, no trim */
        hr_tlbulk_add(r->g->adds, key, act->time_ms, id, expiry); /* valid: what hr_tladd takes */
        return;
    }
    hr_tladd(b, key, act->time_ms, id, expiry);
    if (trim_now(member, act->id)) trim_timeline(r->f, trims, key, r->now_ms);
}

static void remove_from_timeline(job_run *r, hr_batch *b, hr_batch *trims, hr_slice member, hr_buf *k) {
    const hr_activity *act = &r->job.activity;
    hr_tlrem(b, hr_feeds_user_key(r->f, member, "/tl", k), act->time_ms,
             hr_slice_of(act->id, HR_ACTIVITY_ID_LEN));
}

static void mark_actor_big(job_run *r, hr_batch *b, hr_batch *trims, hr_slice member, hr_buf *k) {
    hr_buf acct = HR_BUF_INIT;
    hr_zadd(b, hr_feeds_user_key(r->f, member, "/big", k), (double)r->now_ms,
            hr_feeds_account(false, r->job.activity.actor, &acct));
    hr_buf_free(&acct);
}

static void mark_group_big(job_run *r, hr_batch *b, hr_batch *trims, hr_slice member, hr_buf *k) {
    hr_buf acct = HR_BUF_INIT;
    hr_zadd(b, hr_feeds_user_key(r->f, member, "/big", k), (double)r->now_ms,
            hr_feeds_account(true, hr_activity_group(&r->job.activity), &acct));
    hr_buf_free(&acct);
}

/* Walk set `set` of id (followers or members) in pages, in follow order,
 * from the checkpoint on, applying fn to each; checkpoint after each page. */
static int paged_phase(job_run *r, unsigned phase, hr_graph_set set, hr_slice id, member_fn fn, bool counts,
                       hr_err *err) {
    if (r->ck.phase > phase) return HR_OK;
    if (r->ck.phase < phase) {
        r->ck.phase = phase;
        r->ck.has_cursor = false;
    }
    /* Timeline adds join the gathered ones; other writes follow them. */
    bool gathering = r->g && fn == add_to_timeline;
    if (r->g && !gathering) {
        int rc = gather_write(r->f, r->g, err);
        if (rc != HR_OK) return rc;
    }
    hr_buf setkey = HR_BUF_INIT, k = HR_BUF_INIT;
    hr_graph_key(r->f->graph, set, id, &setkey);
    hr_batch *rb = hr_batch_new(), *wb = hr_batch_new(), *tb = hr_batch_new();
    int rc = HR_OK;
    for (;;) {
        hr_batch_reset(rb);
        hr_zrange_spec spec = hr_zrange_all(false, r->o->batch);
        if (r->ck.has_cursor) {
            spec.has_cursor = true;
            spec.cursor_score = r->ck.score;
            spec.cursor_member = r->ck.member;
        }
        size_t op = hr_zrange(rb, hr_buf_slice(&setkey), &spec);
        rc = hr_core_exec(r->f->store, rb, 0, "fan-out", err);
        if (rc != HR_OK) break;
        const hr_result *page = hr_batch_result(rb, op);
        if (page->n_entries == 0) break;
        if (!gathering) {
            hr_batch_reset(wb);
            hr_batch_reset(tb);
        }
        for (size_t i = 0; i < page->n_entries; i++)
            fn(r, wb, tb, page->entries[i].member, &k);
        if (gathering) {
            if (counts) r->g->entries += page->n_entries;
        } else {
            rc = hr_core_exec(r->f->store, wb, 0, "fan-out", err);
            if (rc == HR_OK && hr_batch_len(tb)) rc = hr_core_exec(r->f->store, tb, 0, "fan-out", err);
            if (rc != HR_OK) break;
            if (counts) atomic_fetch_add(&entries_total, page->n_entries);
        }
        const hr_zentry *last = &page->entries[page->n_entries - 1];
        r->ck.has_cursor = true;
        r->ck.score = last->score;
        r->ck.member = hr_arena_copy(r->a, last->member);
        bool more = page->more;
        /* Gathering, the checkpoint waits for the adds it covers. */
        if (!gathering || hr_tlbulk_len(r->g->adds) >= r->g->cap) {
            if (gathering) rc = gather_write(r->f, r->g, err);
            if (rc == HR_OK) rc = checkpoint_save(r, err);
        }
        if (rc != HR_OK || !more) break;
        if (r->o->max_batches && ++r->batches >= r->o->max_batches) {
            if (r->g) r->g->dead = true; /* as if killed: what is gathered is lost */
            rc = hr_err_set(err, HR_EINTERNAL, "fan-out: stopped after %u batches (max_batches)", r->batches);
            break;
        }
        throttle(r);
    }
    hr_batch_free(rb);
    hr_batch_free(wb);
    hr_batch_free(tb);
    hr_buf_free(&setkey);
    hr_buf_free(&k);
    return rc;
}

static int run_add(job_run *r, hr_err *err) {
    const hr_activity *act = &r->job.activity;
    hr_slice group = hr_activity_group(act);
    if (r->ck.phase <= PHASE_ENTRIES) {
        int state;
        hr_activity cur;
        int rc = hr_feeds_body_state(r->f, hr_slice_of(act->id, HR_ACTIVITY_ID_LEN), r->a, &cur, &state, err);
        if (rc != HR_OK) return rc;
        if (state == HR_BODY_DELETED) return HR_OK; /* deleted before it was fanned out */
        if (state == HR_BODY_MISSING) {             /* the create was cut short (feeds.h) */
            hr_batch *b = hr_batch_new();
            hr_buf k = HR_BUF_INIT;
            if (act->foreign_id.len) /* the create writes it before the job; again here, as before */
                hr_put(b, hr_feeds_fid_key(r->f, act->actor, act->foreign_id, &k),
                       hr_slice_of(act->id, HR_ACTIVITY_ID_LEN), 0);
            rc = hr_feeds_write_new(r->f, b, act, err);
            hr_buf_free(&k);
            hr_batch_free(b);
            if (rc != HR_OK) return rc;
        }
    }
    int rc = HR_OK;
    if (act->fanned_followers)
        rc = paged_phase(r, PHASE_FOLLOWERS, HR_GRAPH_FOLLOWERS, act->actor, add_to_timeline, true, err);
    if (rc == HR_OK && act->fanned_members && group.len)
        rc = paged_phase(r, PHASE_MEMBERS, HR_GRAPH_MEMBERS, group, add_to_timeline, true, err);
    if (rc == HR_OK && (r->job.flags & HR_JOB_MARK_ACTOR_BIG))
        rc = paged_phase(r, PHASE_MARK_ACTOR, HR_GRAPH_FOLLOWERS, act->actor, mark_actor_big, false, err);
    if (rc == HR_OK && (r->job.flags & HR_JOB_MARK_GROUP_BIG) && group.len)
        rc = paged_phase(r, PHASE_MARK_GROUP, HR_GRAPH_MEMBERS, group, mark_group_big, false, err);
    return rc;
}

static int run_remove(job_run *r, hr_err *err) {
    const hr_activity *act = &r->job.activity;
    hr_slice group = hr_activity_group(act);
    int rc = HR_OK;
    if (r->ck.phase <= PHASE_ENTRIES) {
        hr_batch *b = hr_batch_new();
        hr_feeds_remove_entries(r->f, b, act);
        rc = hr_core_exec(r->f->store, b, 0, "fan-out", err);
        hr_batch_free(b);
        /* Its reactions go with it (idempotent, as a job run again must be). */
        if (rc == HR_OK)
            rc = hr_rs_purge(r->f->store, r->f->ns, hr_slice_of(act->id, HR_ACTIVITY_ID_LEN), err);
    }
    if (rc == HR_OK && act->fanned_followers)
        rc =
            paged_phase(r, PHASE_FOLLOWERS, HR_GRAPH_FOLLOWERS, act->actor, remove_from_timeline, false, err);
    if (rc == HR_OK && act->fanned_members && group.len)
        rc = paged_phase(r, PHASE_MEMBERS, HR_GRAPH_MEMBERS, group, remove_from_timeline, false, err);
    return rc;
}

/* RELATION, adds: backfill the account's newest activities, or remember a
 * big account in the /big set. */
static int run_backfill(job_run *r, hr_slice account, hr_err *err) {
    const hr_feed_job *j = &r->job;
    hr_buf k = HR_BUF_INIT, k2 = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op_big = hr_zscore(b, hr_feeds_big_key(r->f, &k), account);
    hr_slice feed =
        j->group ? hr_feeds_group_key(r->f, j->other, &k) : hr_feeds_user_key(r->f, j->other, "/fd", &k);
    hr_tlrange_spec spec = hr_tlrange_all(r->f->opts.timeline_max, r->now_ms);
    spec.after_ms = r->now_ms - r->f->opts.timeline_ttl_ms;
    size_t op_feed = hr_tlrange(b, feed, &spec);
    int rc = hr_core_exec(r->f->store, b, 0, "backfill", err);
    if (rc == HR_OK) {
        bool big = hr_batch_result(b, op_big)->rc == HR_OK;
        const hr_result *entries = hr_batch_result(b, op_feed);
        hr_batch *wb = hr_batch_new();
        hr_slice tl = hr_feeds_user_key(r->f, j->uid, big ? "/big" : "/tl", &k2);
        if (big) {
            hr_zadd(wb, tl, (double)r->now_ms, account);
        } else {
            for (size_t i = 0; i < entries->n_entries; i++) {
                int64_t t = (int64_t)entries->entries[i].score;
                hr_tladd(wb, tl, t, entries->entries[i].member, hr_feeds_entry_expiry(r->f, t));
            }
            if (entries->n_entries) trim_timeline(r->f, wb, tl, r->now_ms);
        }
        if (hr_batch_len(wb)) rc = hr_core_exec(r->f->store, wb, 0, "backfill", err);
        if (rc == HR_OK && !big) atomic_fetch_add(&entries_total, entries->n_entries);
        hr_batch_free(wb);
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    hr_buf_free(&k2);
    return rc;
}

static bool contains(hr_slice *ids, size_t n, hr_slice id) {
    for (size_t i = 0; i < n; i++)
        if (hr_slice_eq(ids[i], id)) return true;
    return false;
}

/* RELATION, removes: drop the account's entries from the timeline, except
 * those the user still sees through a follow or a group. */
static int run_unlink(job_run *r, hr_slice account, hr_err *err) {
    const hr_feed_job *j = &r->job;
    /* What else brings activities in: the groups (unfollow) or the follows
     * (leave) of the user. */
    hr_slice *keep = NULL;
    size_t n_keep = 0;
    int rc = hr_graph_all(r->f->graph, j->group ? HR_GRAPH_FOLLOWS : HR_GRAPH_GROUPS, j->uid,
                          HR_ZRANGE_LIMIT_MAX, r->a, &keep, &n_keep, err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT, tl = HR_BUF_INIT;
    hr_feeds_user_key(r->f, j->uid, "/tl", &tl);
    hr_batch *b = hr_batch_new();
    hr_zrem(b, hr_feeds_user_key(r->f, j->uid, "/big", &k), account);
    rc = hr_core_exec(r->f->store, b, 0, "unlink", err);
    hr_tlrange_spec spec = hr_tlrange_all(r->o->batch, r->now_ms);
    while (rc == HR_OK) {
        hr_batch_reset(b);
        size_t op = hr_tlrange(b, hr_buf_slice(&tl), &spec);
        rc = hr_core_exec(r->f->store, b, 0, "unlink", err);
        if (rc != HR_OK) break;
        const hr_result *page = hr_batch_result(b, op);
        if (page->n_entries == 0) break;
        hr_zentry *entries = hr_arena_alloc(r->a, page->n_entries * sizeof *entries);
        size_t n = page->n_entries;
        bool more = page->more;
        for (size_t i = 0; i < n; i++) {
            entries[i] = page->entries[i];
            entries[i].member = hr_arena_copy(r->a, page->entries[i].member);
        }
        hr_batch_reset(b);
        for (size_t i = 0; i < n; i++)
            hr_get(b, hr_feeds_body_key(r->f, entries[i].member, &k));
        rc = hr_core_exec(r->f->store, b, 0, "unlink", err);
        hr_batch *wb = hr_batch_new();
        for (size_t i = 0; rc == HR_OK && i < n; i++) {
            const hr_result *res = hr_batch_result(b, i);
            if (res->rc != HR_OK) continue;
            hr_activity act;
            bool tomb;
            if (hr_activity_decode(entries[i].member, res->value, r->a, &act, &tomb, err) != HR_OK) continue;
            hr_slice group = hr_activity_group(&act);
            bool drop =
                j->group ? hr_slice_eq(group, j->other) && !contains(keep, n_keep, act.actor)
                         : hr_slice_eq(act.actor, j->other) && !(group.len && contains(keep, n_keep, group));
            if (drop) hr_tlrem(wb, hr_buf_slice(&tl), (int64_t)entries[i].score, entries[i].member);
        }
        if (rc == HR_OK && hr_batch_len(wb)) rc = hr_core_exec(r->f->store, wb, 0, "unlink", err);
        hr_batch_free(wb);
        if (!more) break;
        spec.has_cursor = true;
        spec.cursor_time = (int64_t)entries[n - 1].score;
        spec.cursor_member = entries[n - 1].member;
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    hr_buf_free(&tl);
    return rc;
}

static int run_relation(job_run *r, hr_err *err) {
    const hr_feed_job *j = &r->job;
    /* Act on the relation as it is now: a follow undone (or redone) since
     * the job was pushed has its own job behind this one. */
    bool holds;
    int rc = j->group ? hr_graph_is_member(r->f->graph, HR_GRAPH_MEMBERS, j->other, j->uid, &holds, err)
                      : hr_graph_is_member(r->f->graph, HR_GRAPH_FOLLOWS, j->uid, j->other, &holds, err);
    if (rc != HR_OK || holds != j->adds) return rc;
    hr_buf acct = HR_BUF_INIT;
    hr_slice account = hr_arena_copy(r->a, hr_feeds_account(j->group, j->other, &acct));
    hr_buf_free(&acct);
    return j->adds ? run_backfill(r, account, err) : run_unlink(r, account, err);
}

/* Run one claimed job to the end; *done false when another consumer is
 * running it (see checkpoint_load) or, gathering (g), when its ack waits
 * for the gathered adds (gather_write counts it then). */
static int run_job(hr_feeds *f, const hr_fanout_options *o, const char *consumer, const hr_job *job,
                   gather *g, bool *done, hr_err *err) {
    hr_arena a = HR_ARENA_INIT;
    job_run r = {
        .g = g, .f = f, .o = o, .job_id = job->id, .a = &a, .ck_key = HR_BUF_INIT, .now_ms = hr_now_ms()};
    r.consumer = hr_slice_of(consumer, strnlen(consumer, 255));
    bool busy = false;
    *done = false;
    int rc = hr_feed_job_decode(job->payload, &a, &r.job, err);
    if (rc != HR_OK) {
        /* Nothing can ever run it: log and drop it rather than retry forever. */
        hr_warn("fan-out: dropping job %.*s: %s", (int)job->id.len, job->id.ptr, err->msg);
        rc = HR_OK;
        goto out;
    }
    if (r.g && r.job.kind != HR_JOB_ADD) { /* after the adds gathered so far, and on its own */
        rc = gather_write(f, r.g, err);
        r.g = NULL;
        if (rc != HR_OK) goto skip;
    }
    checkpoint_key(&r);
    if (r.job.kind != HR_JOB_RELATION) rc = checkpoint_load(&r, &busy, err);
    if (busy) {
        hr_debug("fan-out: job %.*s is running elsewhere", (int)job->id.len, job->id.ptr);
        goto skip;
    }
    if (rc == HR_OK) {
        switch (r.job.kind) {
        case HR_JOB_ADD: rc = run_add(&r, err); break;
        case HR_JOB_REMOVE: rc = run_remove(&r, err); break;
        case HR_JOB_RELATION: rc = run_relation(&r, err); break;
        }
    }
out:
    if (rc == HR_OK) {
        /* Done: the ack, and the checkpoint is no longer needed. */
        hr_buf qk = HR_BUF_INIT;
        hr_batch *b = r.g ? r.g->acks : hr_batch_new();
        hr_qack(b, hr_feeds_queue_key(f, &qk), job->id);
        if (r.ck_key.len) hr_del(b, hr_buf_slice(&r.ck_key));
        hr_buf_free(&qk);
        if (r.g) {
            r.g->jobs++;
        } else {
            rc = hr_core_exec(f->store, b, 0, "fan-out ack", err);
            hr_batch_free(b);
            if (rc == HR_OK) atomic_fetch_add(&jobs_total, 1);
            *done = rc == HR_OK;
        }
    }
skip:
    hr_buf_free(&r.ck_key);
    hr_arena_free(&a);
    return rc;
}

int hr_fanout_run(hr_feeds *f, const hr_fanout_options *o, const char *consumer, size_t max_jobs,
                  size_t *done, hr_err *err) {
    *done = 0;
    if (max_jobs > HR_QCLAIM_MAX) max_jobs = HR_QCLAIM_MAX;
    gather g = {0}, *gp = NULL;
    if (o->bulk && hr_store_caps_of(f->store)->bulk_files && f->store_caps_timelines) {
        g = (gather){.cap = o->bulk, .adds = hr_tlbulk_new(f->store), .acks = hr_batch_new(), .done = done};
        gp = &g;
    }
    hr_buf qk = HR_BUF_INIT;
    hr_feeds_queue_key(f, &qk);
    hr_batch *b = hr_batch_new();
    int rc;
    size_t claimed;
    do { /* one claim, or (gathering) until enough adds or a short claim */
        hr_batch_reset(b);
        size_t op = hr_qclaim(b, hr_buf_slice(&qk), hr_slice_str(consumer), max_jobs, o->lease_ms);
        rc = hr_core_exec(f->store, b, 0, "fan-out claim", err);
        const hr_result *res = hr_batch_result(b, op);
        claimed = rc == HR_OK ? res->n_jobs : 0;
        for (size_t i = 0; rc == HR_OK && i < claimed; i++) {
            bool finished;
            rc = run_job(f, o, consumer, &res->jobs[i], gp, &finished, err);
            if (finished) (*done)++;
        }
    } while (rc == HR_OK && gp && claimed == max_jobs && hr_tlbulk_len(g.adds) < g.cap);
    if (gp) {
        /* The jobs done before a failure are written and acked all the same. */
        hr_err werr = {0};
        int wrc = g.dead ? HR_OK : gather_write(f, gp, rc == HR_OK ? err : &werr);
        if (rc == HR_OK) rc = wrc;
        hr_tlbulk_free(g.adds);
        hr_batch_free(g.acks);
    }
    hr_batch_free(b);
    hr_buf_free(&qk);
    return rc;
}

int hr_fanout_queue_info(hr_feeds *f, int64_t *depth, int64_t *oldest_ms, hr_err *err) {
    hr_buf qk = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op = hr_qinfo(b, hr_feeds_queue_key(f, &qk));
    int rc = hr_core_exec(f->store, b, 0, "fan-out queue", err);
    *depth = rc == HR_OK ? hr_batch_result(b, op)->num : 0;
    *oldest_ms = rc == HR_OK ? (int64_t)hr_batch_result(b, op)->score : 0;
    hr_batch_free(b);
    hr_buf_free(&qk);
    return rc;
}

/* ---- Workers ---- */

struct hr_fanout {
    hr_feeds *f;
    hr_fanout_options o;
    pthread_t *threads;
    unsigned n_threads;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stop;
    uint64_t pushes; /* jobs pushed by this process: a change wakes a worker */
};

typedef struct worker {
    hr_fanout *fo;
    unsigned index;
} worker;

static void job_pushed(void *ctx) {
    hr_fanout *fo = ctx;
    pthread_mutex_lock(&fo->mu);
    fo->pushes++;
    pthread_cond_signal(&fo->wake);
    pthread_mutex_unlock(&fo->mu);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    hr_fanout *fo = w->fo;
    char consumer[96];
    char host[64] = "herald";
    gethostname(host, sizeof host - 1);
    snprintf(consumer, sizeof consumer, "%s-%ld-%u", host, (long)getpid(), w->index);
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&fo->mu);
        bool stop = fo->stop;
        seen = fo->pushes;
        pthread_mutex_unlock(&fo->mu);
        if (stop) break;
        hr_err err = {0};
        size_t done = 0;
        int rc = hr_fanout_run(fo->f, &fo->o, consumer, 4, &done, &err);
        if (rc != HR_OK) hr_warn("fan-out worker %u: %s", w->index, err.msg);
        if (rc == HR_OK && done > 0) continue;
        /* Idle (or the store is failing): wait for a local push or the poll. */
        int64_t wait_ms = rc == HR_OK ? fo->o.poll_ms : 1000;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += wait_ms / 1000;
        until.tv_nsec += (wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&fo->mu);
        while (!fo->stop && fo->pushes == seen)
            if (pthread_cond_timedwait(&fo->wake, &fo->mu, &until) != 0) break;
        pthread_mutex_unlock(&fo->mu);
    }
    free(w);
    return NULL;
}

hr_fanout *hr_fanout_start(hr_feeds *f, const hr_fanout_options *o) {
    hr_fanout *fo = hr_xcalloc(1, sizeof *fo);
    fo->f = f;
    fo->o = *o;
    if (fo->o.poll_ms <= 0) fo->o.poll_ms = 100;
    pthread_mutex_init(&fo->mu, NULL);
    pthread_cond_init(&fo->wake, NULL);
    f->job_pushed = job_pushed;
    f->job_pushed_ctx = fo;
    fo->threads = hr_xcalloc(o->workers ? o->workers : 1, sizeof *fo->threads);
    for (unsigned i = 0; i < o->workers; i++) {
        worker *w = hr_xcalloc(1, sizeof *w);
        w->fo = fo;
        w->index = i;
        if (pthread_create(&fo->threads[i], NULL, worker_main, w) != 0) {
            hr_error("fan-out: cannot start worker %u", i);
            abort();
        }
        fo->n_threads++;
    }
    return fo;
}

void hr_fanout_stop(hr_fanout *fo) {
    if (fo == NULL) return;
    pthread_mutex_lock(&fo->mu);
    fo->stop = true;
    pthread_cond_broadcast(&fo->wake);
    pthread_mutex_unlock(&fo->mu);
    for (unsigned i = 0; i < fo->n_threads; i++)
        pthread_join(fo->threads[i], NULL);
    fo->f->job_pushed = NULL;
    fo->f->job_pushed_ctx = NULL;
    pthread_mutex_destroy(&fo->mu);
    pthread_cond_destroy(&fo->wake);
    free(fo->threads);
    free(fo);
}
