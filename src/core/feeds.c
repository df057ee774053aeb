/* feeds.c — see feeds.h: activity create / read / update / delete and feed
 * pages. It makes the fan-out jobs (feed_job.h) and pushes them; running
 * them is the background half, fanout.c, which calls in here
 * (feeds_internal.h) and never the other way but through the job_pushed
 * hook. */
#include "core/feeds.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/ident.h"
#include "core/exec.h"
#include "core/feed_job.h"
#include "core/feeds_internal.h"
#include "core/feeds_memo.h"
#include "core/reaction_store.h"

/* ---- Keys ---- */

static void open_tag(const hr_feeds *f, hr_buf *k, const char *kind) {
    hr_buf_clear(k);
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, f->ns);
    hr_buf_append_str(k, kind);
}

hr_slice hr_feeds_body_key(const hr_feeds *f, hr_slice id, hr_buf *k) {
    return hr_activity_key(f->ns, id, "", hr_slice_of(NULL, 0), k);
}

hr_slice hr_feeds_user_key(const hr_feeds *f, hr_slice uid, const char *suffix, hr_buf *k) {
    open_tag(f, k, "u/");
    hr_buf_append_slice(k, uid);
    hr_buf_append_byte(k, '}');
    hr_buf_append_str(k, suffix);
    return hr_buf_slice(k);
}

hr_slice hr_feeds_fid_key(const hr_feeds *f, hr_slice actor, hr_slice fid, hr_buf *k) {
    hr_feeds_user_key(f, actor, "/fid/", k);
    hr_buf_append_slice(k, fid);
    return hr_buf_slice(k);
}

hr_slice hr_feeds_group_key(const hr_feeds *f, hr_slice gid, hr_buf *k) {
    open_tag(f, k, "g/");
    hr_buf_append_slice(k, gid);
    hr_buf_append_str(k, "}/fd");
    return hr_buf_slice(k);
}

hr_slice hr_feeds_index_key(const hr_feeds *f, const char *field, hr_slice value, hr_buf *k) {
    open_tag(f, k, "ix/");
    hr_buf_append_str(k, field);
    hr_buf_append_byte(k, '/');
    hr_buf_append_slice(k, value);
    hr_buf_append_str(k, "}/l");
    return hr_buf_slice(k);
}

hr_slice hr_feeds_big_key(const hr_feeds *f, hr_buf *k) {
    open_tag(f, k, "big}");
    return hr_buf_slice(k);
}

hr_slice hr_feeds_queue_key(const hr_feeds *f, hr_buf *k) {
    open_tag(f, k, "q/");
    hr_buf_append_str(k, f->queue);
    hr_buf_append_byte(k, '}');
    return hr_buf_slice(k);
}

hr_slice hr_feeds_account(bool group, hr_slice id, hr_buf *k) {
    hr_buf_clear(k);
    hr_buf_append_str(k, group ? "g:" : "u:");
    hr_buf_append_slice(k, id);
    return hr_buf_slice(k);
}

int64_t hr_feeds_entry_expiry(const hr_feeds *f, int64_t time_ms) {
    return time_ms > INT64_MAX - f->opts.timeline_ttl_ms ? 0 : time_ms + f->opts.timeline_ttl_ms;
}

/* ---- Life cycle ---- */

hr_feeds *hr_feeds_new(hr_store *store, hr_graph *graph, const hr_feeds_options *opts) {
    hr_feeds *f = hr_xcalloc(1, sizeof *f);
    f->store = store;
    f->graph = graph;
    f->opts = *opts;
    f->ns = hr_xstrdup(opts->ns ? opts->ns : "");
    f->opts.ns = f->ns;
    f->queue = hr_xstrdup(opts->queue && *opts->queue ? opts->queue : "fanout");
    f->opts.queue = f->queue;
    /* Timelines are "{NSu/UID}/tl" (hr_feeds_user_key). */
    hr_buf prefix = HR_BUF_INIT;
    open_tag(f, &prefix, "u/");
    hr_store_decl cap = {.kind = HR_DECL_TL_CAP,
                         .prefix = hr_buf_slice(&prefix),
                         .suffix = hr_slice_str("}/tl"),
                         .keep = f->opts.timeline_max};
    f->store_caps_timelines = hr_store_declare(store, &cap);
    hr_buf_free(&prefix);
    f->pages = hr_memo_new(store, hr_store_caps_of(store)->memo_bytes);
    return f;
}

void hr_feeds_free(hr_feeds *f) {
    if (f == NULL) return;
    hr_memo_free(f->pages);
    free(f->ns);
    free(f->queue);
    free(f);
}

/* Wake this process's fan-out workers: after a batch holding a job ran. */
static void notify(hr_feeds *f) {
    if (f->job_pushed) f->job_pushed(f->job_pushed_ctx);
}

/* Add to b the push of job j onto the fan-out queue (notify wakes local
 * workers once b has run). */
static size_t push_job(hr_feeds *f, hr_batch *b, const hr_feed_job *j) {
    hr_buf k = HR_BUF_INIT, v = HR_BUF_INIT;
    hr_feed_job_encode(j, &v);
    size_t op = hr_qpush(b, hr_feeds_queue_key(f, &k), hr_buf_slice(&v));
    hr_buf_free(&k);
    hr_buf_free(&v);
    return op;
}

/* ---- Entries of one activity ---- */

/* Calls fn for every list an activity has an entry in (not timelines). */
static void for_each_list(const hr_feeds *f, const hr_activity *a, hr_batch *b,
                          void (*fn)(hr_batch *, hr_slice, const hr_activity *, int64_t), hr_buf *k) {
    fn(b, hr_feeds_user_key(f, a->actor, "/fd", k), a, 0);
    hr_slice group = hr_activity_group(a);
    if (group.len) fn(b, hr_feeds_group_key(f, group, k), a, 0);
    fn(b, hr_feeds_index_key(f, "verb", a->verb, k), a, 0);
    if (a->object.len) fn(b, hr_feeds_index_key(f, "object", a->object, k), a, 0);
    if (a->target.len && !group.len) fn(b, hr_feeds_index_key(f, "target", a->target, k), a, 0);
}

static void add_one(hr_batch *b, hr_slice key, const hr_activity *a, int64_t expiry) {
    hr_tladd(b, key, a->time_ms, hr_slice_of(a->id, HR_ACTIVITY_ID_LEN), expiry);
}

static void rem_one(hr_batch *b, hr_slice key, const hr_activity *a, int64_t expiry) {
    (void)expiry;
    hr_tlrem(b, key, a->time_ms, hr_slice_of(a->id, HR_ACTIVITY_ID_LEN));
}

/* Writes that come last (hr_core_write_last). An activity's body: readers,
 * jobs and retries go by it, so whatever comes before it must be there
 * before it changes. */
typedef struct body_write {
    hr_feeds *f;
    hr_slice id, body;
    int64_t expiry;
} body_write;

static void add_body(hr_batch *b, void *ctx) {
    body_write *w = ctx;
    hr_buf k = HR_BUF_INIT;
    hr_put(b, hr_feeds_body_key(w->f, w->id, &k), w->body, w->expiry);
    hr_buf_free(&k);
}

static int write_body_last(hr_feeds *f, hr_batch *b, hr_slice id, hr_slice body, int64_t expiry,
                           const char *what, hr_err *err) {
    body_write w = {.f = f, .id = id, .body = body, .expiry = expiry};
    return hr_core_write_last(f->store, b, add_body, &w, what, err);
}

/* A fan-out job: acknowledged with what it follows or not at all. */
typedef struct job_write {
    hr_feeds *f;
    const hr_feed_job *job;
} job_write;

static void add_job(hr_batch *b, void *ctx) {
    job_write *w = ctx;
    push_job(w->f, b, w->job);
}

int hr_feeds_write_new(hr_feeds *f, hr_batch *b, const hr_activity *a, hr_err *err) {
    hr_buf k = HR_BUF_INIT, v = HR_BUF_INIT;
    hr_slice id = hr_slice_of(a->id, HR_ACTIVITY_ID_LEN);
    for_each_list(f, a, b, add_one, &k);
    hr_activity_encode(a, false, &v);
    int rc = write_body_last(f, b, id, hr_buf_slice(&v), 0, "write activity", err);
    hr_buf_free(&k);
    hr_buf_free(&v);
    return rc;
}

void hr_feeds_remove_entries(const hr_feeds *f, hr_batch *b, const hr_activity *a) {
    hr_buf k = HR_BUF_INIT;
    for_each_list(f, a, b, rem_one, &k);
    hr_buf_free(&k);
}

/* ---- Reading bodies ---- */

/* The kinds the reader gave each of the page's activities that has
 * reactions (reaction_store.h says why after the bodies), in one batch b
 * (reset) when there are any. */
static int read_own(hr_feeds *f, hr_slice reader, hr_feed_page *out, hr_page_memo *memo, hr_batch *b,
                    hr_arena *a, hr_err *err) {
    hr_buf k = HR_BUF_INIT;
    hr_batch_reset(b);
    for (size_t i = 0; i < out->n; i++) {
        out->items[i].own_known = true;
        if (out->items[i].n_counts == 0) continue;
        hr_rs_own_read(b, f->ns, hr_slice_of(out->items[i].id, HR_ACTIVITY_ID_LEN), reader, &k);
        hr_page_memo_stamp(memo, hr_buf_slice(&k));
    }
    int rc = hr_batch_len(b) ? hr_core_exec(f->store, b, 0, "feed", err) : HR_OK;
    for (size_t i = 0, op = 0; rc == HR_OK && hr_batch_len(b) && i < out->n; i++)
        if (out->items[i].n_counts) hr_rs_own_fill(b, op++, a, &out->items[i]);
    hr_buf_free(&k);
    return rc;
}

/* Decode the body read by op `op` of b: HR_OK with *live true for an
 * activity, *live false for a missing or deleted one. */
static int body_result(const hr_batch *b, size_t op, hr_slice id, hr_arena *a, hr_activity *out, bool *live,
                       hr_err *err) {
    const hr_result *r = hr_batch_result(b, op);
    *live = false;
    if (r->rc == HR_ENOTFOUND) return HR_OK;
    bool tomb;
    int rc = hr_activity_decode(id, r->value, a, out, &tomb, err);
    if (rc == HR_OK) *live = !tomb;
    return rc;
}

/* The activity's body into *out and its state; with_counts, its
 * reactions' counts too, in the same batch. */
static int read_body(hr_feeds *f, hr_slice id, bool with_counts, hr_arena *a, hr_activity *out, int *state,
                     hr_err *err) {
    memset(out, 0, sizeof *out);
    *state = HR_BODY_MISSING;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op = hr_get(b, hr_feeds_body_key(f, id, &k));
    size_t counts = with_counts ? hr_rs_counts_read(b, f->ns, id, &k) : 0;
    int rc = hr_core_exec(f->store, b, 0, "activity", err);
    bool live = false;
    if (rc == HR_OK && hr_batch_result(b, op)->rc != HR_ENOTFOUND) {
        rc = body_result(b, op, id, a, out, &live, err);
        *state = live ? HR_BODY_LIVE : HR_BODY_DELETED;
    }
    if (rc == HR_OK && live && with_counts) hr_rs_counts_fill(b, counts, a, out);
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

int hr_feeds_body_state(hr_feeds *f, hr_slice id, hr_arena *a, hr_activity *out, int *state, hr_err *err) {
    return read_body(f, id, false, a, out, state, err);
}

int hr_feeds_get(hr_feeds *f, hr_slice id, hr_arena *a, hr_activity *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if (!hr_activity_id_valid(id))
        return hr_err_set(err, HR_ENOTFOUND, "no activity '%.*s'", (int)id.len, id.ptr);
    int state;
    int rc = read_body(f, id, true, a, out, &state, err);
    if (rc == HR_OK && state != HR_BODY_LIVE)
        rc = hr_err_set(err, HR_ENOTFOUND, "no activity '%.*s'", (int)id.len, id.ptr);
    return rc;
}

/* ---- Create, update, delete ---- */

/* Stage (1) of a create: the foreign-id mapping (*existing, empty if none)
 * and who gets fanned out (act's fanned_* flags, *flags for a job). */
static int create_plan(hr_feeds *f, hr_activity *act, hr_arena *a, hr_slice *existing, unsigned *flags,
                       hr_err *err) {
    hr_slice group = hr_activity_group(act);
    hr_buf k = HR_BUF_INIT, acct = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op_fid =
        act->foreign_id.len ? hr_get(b, hr_feeds_fid_key(f, act->actor, act->foreign_id, &k)) : SIZE_MAX;
    hr_buf_clear(&k);
    hr_graph_key(f->graph, HR_GRAPH_FOLLOWERS, act->actor, &k);
    size_t op_followers = hr_zcard(b, hr_buf_slice(&k));
    size_t op_actor_big = hr_zscore(b, hr_feeds_big_key(f, &k), hr_feeds_account(false, act->actor, &acct));
    size_t op_members = SIZE_MAX, op_group_big = SIZE_MAX;
    if (group.len) {
        hr_buf_clear(&k);
        hr_graph_key(f->graph, HR_GRAPH_MEMBERS, group, &k);
        op_members = hr_zcard(b, hr_buf_slice(&k));
        op_group_big = hr_zscore(b, hr_feeds_big_key(f, &k), hr_feeds_account(true, group, &acct));
    }
    int rc = hr_core_exec(f->store, b, 0, "create activity", err);
    *existing = hr_slice_of(NULL, 0);
    *flags = 0;
    if (rc == HR_OK) {
        if (op_fid != SIZE_MAX && hr_batch_result(b, op_fid)->rc == HR_OK)
            *existing = hr_arena_copy(a, hr_batch_result(b, op_fid)->value);
        bool big = hr_batch_result(b, op_actor_big)->rc == HR_OK;
        bool over = hr_batch_result(b, op_followers)->num > f->opts.fanout_threshold;
        act->fanned_followers = !big && !over;
        if (over && !big) *flags |= HR_JOB_MARK_ACTOR_BIG;
        if (group.len) {
            big = hr_batch_result(b, op_group_big)->rc == HR_OK;
            over = hr_batch_result(b, op_members)->num > f->opts.fanout_threshold;
            act->fanned_members = !big && !over;
            if (over && !big) *flags |= HR_JOB_MARK_GROUP_BIG;
        }
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    hr_buf_free(&acct);
    return rc;
}

int hr_feeds_create(hr_feeds *f, const hr_activity *in, int64_t now_ms, hr_arena *a, hr_activity *out,
                    bool *duplicate, hr_err *err) {
    *duplicate = false;
    hr_activity act = *in;
    if (act.time_ms == 0) act.time_ms = now_ms;
    int rc = hr_activity_check(&act, err);
    if (rc != HR_OK) return rc;
    hr_slice existing;
    unsigned flags;
    rc = create_plan(f, &act, a, &existing, &flags, err);
    if (rc != HR_OK) return rc;
    bool adopted = false;
    if (existing.len && hr_activity_id_valid(existing)) {
        int state;
        rc = hr_feeds_body_state(f, existing, a, out, &state, err);
        if (rc != HR_OK) return rc;
        if (state == HR_BODY_LIVE) {
            *duplicate = true;
            return HR_OK;
        }
        if (state == HR_BODY_MISSING) {
            /* The mapping is written first and the body last (below): an
             * activity a create cut short by a crash (or one in flight)
             * began. This create finishes it under the same id and time
             * (the one the id holds), so whatever the first one
             * wrote, and its job if it pushed one, write the same entries. */
            memcpy(act.id, existing.ptr, HR_ACTIVITY_ID_LEN);
            act.id[HR_ACTIVITY_ID_LEN] = '\0';
            act.time_ms = hr_activity_id_time(existing);
            adopted = true;
        }
        /* HR_BODY_DELETED: the foreign_id names a new activity now. */
    }
    if (!adopted) hr_activity_new_id(act.time_ms, act.id);

    /* (2) The foreign-id mapping, so that a retry finds this id whatever
     * happens next; the job, so that it is acknowledged with the activity
     * or not at all; (3) everything a reader sees, the body last (feeds.h).
     * On RocksDB the mapping goes with the job (one atomic batch). */
    hr_feed_job job = {.kind = HR_JOB_ADD, .activity = act, .flags = flags, .time_ms = now_ms};
    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT, acct = HR_BUF_INIT;
    if (act.foreign_id.len)
        hr_put(b, hr_feeds_fid_key(f, act.actor, act.foreign_id, &k), hr_slice_of(act.id, HR_ACTIVITY_ID_LEN),
               0);
    job_write then = {.f = f, .job = &job};
    rc = hr_core_write_last(f->store, b, add_job, &then, "create activity", err);
    if (rc == HR_OK) {
        hr_batch_reset(b);
        hr_slice group = hr_activity_group(&act);
        if (flags & HR_JOB_MARK_ACTOR_BIG)
            hr_zadd(b, hr_feeds_big_key(f, &k), (double)now_ms, hr_feeds_account(false, act.actor, &acct));
        if (flags & HR_JOB_MARK_GROUP_BIG)
            hr_zadd(b, hr_feeds_big_key(f, &k), (double)now_ms, hr_feeds_account(true, group, &acct));
        rc = hr_feeds_write_new(f, b, &act, err);
    }
    hr_buf_free(&k);
    hr_buf_free(&acct);
    hr_batch_free(b);
    if (rc != HR_OK) return rc;
    notify(f);
    *out = act;
    out->actor = hr_arena_copy(a, act.actor);
    out->verb = hr_arena_copy(a, act.verb);
    out->object = hr_arena_copy(a, act.object);
    out->target = hr_arena_copy(a, act.target);
    out->foreign_id = hr_arena_copy(a, act.foreign_id);
    out->data = hr_arena_copy(a, act.data);
    return HR_OK;
}

int hr_feeds_update(hr_feeds *f, hr_slice id, const hr_slice *new_object, hr_slice data, hr_arena *a,
                    hr_activity *out, hr_err *err) {
    hr_activity old;
    int rc = hr_feeds_get(f, id, a, &old, err);
    if (rc != HR_OK) return rc;
    hr_activity act = old;
    act.data = data;
    if (new_object) act.object = *new_object;
    rc = hr_activity_check(&act, err);
    if (rc != HR_OK) return rc;
    /* The object's index first, the body last: a retry after a crash
     * between them reads the old body, so it moves the index entry again. */
    hr_buf k = HR_BUF_INIT, v = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    if (!hr_slice_eq(old.object, act.object)) {
        if (old.object.len) rem_one(b, hr_feeds_index_key(f, "object", old.object, &k), &old, 0);
        if (act.object.len) add_one(b, hr_feeds_index_key(f, "object", act.object, &k), &act, 0);
    }
    hr_activity_encode(&act, false, &v);
    rc = write_body_last(f, b, id, hr_buf_slice(&v), 0, "update activity", err);
    hr_batch_free(b);
    hr_buf_free(&k);
    hr_buf_free(&v);
    if (rc != HR_OK) return rc;
    *out = act;
    out->data = hr_arena_copy(a, data);
    if (new_object) out->object = hr_arena_copy(a, *new_object);
    return HR_OK;
}

int hr_feeds_delete(hr_feeds *f, hr_slice id, int64_t now_ms, hr_err *err) {
    hr_arena arena = HR_ARENA_INIT;
    hr_activity act;
    int rc = hr_feeds_get(f, id, &arena, &act, err);
    if (rc == HR_OK) {
        /* The tombstone keeps reads from showing it (and a late ADD job from
         * bringing it back) until every entry is surely gone. */
        hr_buf v = HR_BUF_INIT;
        hr_batch *b = hr_batch_new();
        hr_feed_job job = {.kind = HR_JOB_REMOVE, .activity = act, .time_ms = now_ms};
        push_job(f, b, &job);
        /* The job first, the tombstone last: a retry after a crash between
         * them still finds the activity, so it pushes the job again. */
        hr_activity_encode(&act, true, &v);
        rc = write_body_last(f, b, id, hr_buf_slice(&v), now_ms + f->opts.timeline_ttl_ms, "delete activity",
                             err);
        hr_batch_free(b);
        hr_buf_free(&v);
        if (rc == HR_OK) notify(f);
    }
    hr_arena_free(&arena);
    return rc;
}

bool hr_feeds_page_memo_stats(hr_feeds *f, hr_memo_stats *out) {
    if (f->pages == NULL) return false;
    *out = hr_memo_stats_of(f->pages);
    return true;
}

int hr_feeds_big_count(hr_feeds *f, int64_t *n, hr_err *err) {
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op = hr_zcard(b, hr_feeds_big_key(f, &k));
    int rc = hr_core_exec(f->store, b, 0, "big accounts", err);
    *n = rc == HR_OK ? hr_batch_result(b, op)->num : 0;
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

/* ---- Graph changes ---- */

/* Add to b the job that follows a graph change (hr_feeds_relate). */
static int push_relation_job(hr_feeds *f, hr_batch *b, hr_slice uid, bool group, hr_slice other, bool adds,
                             int64_t now_ms, hr_err *err) {
    if (!hr_ident_valid(uid)) return hr_err_set(err, HR_EINVAL, "uid must be an identifier");
    if (!hr_ident_valid(other))
        return hr_err_set(err, HR_EINVAL, "%s must be an identifier", group ? "gid" : "target");
    hr_feed_job job = {
        .kind = HR_JOB_RELATION, .uid = uid, .other = other, .group = group, .adds = adds, .time_ms = now_ms};
    push_job(f, b, &job);
    return HR_OK;
}

int hr_feeds_relate(hr_feeds *f, hr_slice uid, bool group, hr_slice other, bool adds, int64_t now_ms,
                    bool *changed, hr_err *err) {
    bool flag = false;
    hr_batch *b = hr_batch_new();
    /* The job first: it is acknowledged with the change or not at all. The
     * graph runs b (graph.h). */
    int rc = push_relation_job(f, b, uid, group, other, adds, now_ms, err);
    if (rc == HR_OK && !group)
        rc = adds ? hr_graph_follow(f->graph, b, uid, other, now_ms, &flag, err)
                  : hr_graph_unfollow(f->graph, b, uid, other, &flag, err);
    else if (rc == HR_OK)
        rc = adds ? hr_graph_join(f->graph, b, other, uid, now_ms, &flag, err)
                  : hr_graph_leave(f->graph, b, other, uid, &flag, err);
    hr_batch_free(b);
    if (rc == HR_OK) notify(f);
    if (changed) *changed = rc == HR_OK && flag;
    return rc;
}

/* ---- Pages ---- */

/* A position in a feed: the last (time, id) shown and how many items came
 * before it. Text: "TIME.ID.POS", e.g. "1763700000000.019a9f3e2c00a1b2c3d4.20". */
typedef struct feed_pos {
    bool set;
    int64_t time_ms;
    char id[HR_ACTIVITY_ID_LEN + 1];
    size_t count;
    /* Items still to skip after this position: a request's offset that its
     * scan bound or read rounds ran out before skipping, carried on by its
     * next_cursor ("TIME.ID.COUNT.SKIP"; ".SKIP" only when not 0). */
    size_t skip;
} feed_pos;

static int cursor_decode(const char *text, feed_pos *p, hr_err *err) {
    memset(p, 0, sizeof *p);
    if (text == NULL) return HR_OK;
    long long t;
    unsigned long long count, skip = 0;
    int n = 0;
    if (sscanf(text, "%lld.%20[0-9a-f].%llu%n", &t, p->id, &count, &n) != 3) n = -1;
    if (n > 0 && text[n] == '.') {
        int m = 0;
        if (sscanf(text + n, ".%llu%n", &skip, &m) != 1 || skip == 0 || skip > HR_FEED_OFFSET_MAX)
            n = -1;
        else
            n += m;
    }
    if (n < 0 || text[n] != '\0' || t < 0 || strlen(p->id) != HR_ACTIVITY_ID_LEN ||
        count > HR_FEED_OFFSET_MAX + 100000ULL)
        return hr_err_set(err, HR_EINVAL, "cursor is not valid");
    p->set = true;
    p->time_ms = t;
    p->count = (size_t)count;
    p->skip = (size_t)skip;
    return HR_OK;
}

static const char *cursor_encode(hr_arena *a, const feed_pos *p) {
    char buf[128];
    int n = p->skip
                ? snprintf(buf, sizeof buf, "%" PRId64 ".%s.%zu.%zu", p->time_ms, p->id, p->count, p->skip)
                : snprintf(buf, sizeof buf, "%" PRId64 ".%s.%zu", p->time_ms, p->id, p->count);
    return hr_arena_strndup(a, buf, (size_t)n);
}

/* (time, id) newest-first order: negative when x comes first. */
static int entry_cmp(const void *pa, const void *pb) {
    const hr_zentry *x = pa, *y = pb;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return -hr_slice_cmp(x->member, y->member);
}

/* Whether activity x matches every non-empty field of filter. */
static bool matches(const hr_activity *x, const hr_activity *filter) {
    if (filter == NULL) return true;
    return (!filter->actor.len || hr_slice_eq(filter->actor, x->actor)) &&
           (!filter->verb.len || hr_slice_eq(filter->verb, x->verb)) &&
           (!filter->object.len || hr_slice_eq(filter->object, x->object)) &&
           (!filter->target.len || hr_slice_eq(filter->target, x->target));
}

/* What a page reads: time lists merged newest first. */
typedef struct page_plan {
    hr_slice *keys;
    size_t n_keys;
    int64_t after_ms;          /* the request's bound, raised by the TTL for timelines */
    size_t max_items;          /* positions past this are not shown (timeline_max) */
    size_t scan_max;           /* entries examined at most (queries) */
    const hr_activity *filter; /* queries */
    hr_slice big_key;          /* timelines: the reader's big accounts, read with the first round */
    size_t first_big;          /* keys from this one on are big accounts' feeds: every reader of
                                * one follower reads them, so the store is told they are hot */
    hr_page_memo *memo;        /* a home first page that may be kept (feeds_memo.h), or NULL */
} page_plan;

#define READ_ROUNDS 8

/* The feed keys of the big accounts in r (members "u:UID" / "g:GID"),
 * appended to plan's keys (allocated with room for them by the caller). */
static void add_big_keys(hr_feeds *f, page_plan *plan, const hr_result *r, hr_arena *a) {
    hr_buf k = HR_BUF_INIT;
    hr_slice *keys = hr_arena_alloc(a, (plan->n_keys + r->n_entries) * sizeof *keys);
    memcpy(keys, plan->keys, plan->n_keys * sizeof *keys);
    plan->keys = keys;
    plan->first_big = plan->n_keys;
    for (size_t i = 0; i < r->n_entries; i++) {
        hr_slice acct = r->entries[i].member;
        if (acct.len < 3) continue;
        hr_slice who = hr_slice_of(acct.ptr + 2, acct.len - 2);
        hr_slice key =
            acct.ptr[0] == 'g' ? hr_feeds_group_key(f, who, &k) : hr_feeds_user_key(f, who, "/fd", &k);
        plan->keys[plan->n_keys++] = hr_arena_copy(a, key);
    }
    hr_buf_free(&k);
}

/* The entries of b's range reads [first, first + n), appended to all[*n_all]
 * (copied into a: the next batch reuses b). */
static void collect(const hr_batch *b, size_t first, size_t n, hr_zentry *all, size_t *n_all, bool *more,
                    hr_arena *a) {
    for (size_t i = first; i < first + n; i++) {
        const hr_result *r = hr_batch_result(b, i);
        *more |= r->more;
        for (size_t j = 0; j < r->n_entries; j++) {
            all[*n_all] = r->entries[j];
            all[*n_all].member = hr_arena_copy(a, r->entries[j].member);
            (*n_all)++;
        }
    }
}

static size_t entries_in(const hr_batch *b, size_t first, size_t n) {
    size_t total = 0;
    for (size_t i = first; i < first + n; i++)
        total += hr_batch_result(b, i)->n_entries;
    return total;
}

static int read_page(hr_feeds *f, page_plan *plan, const hr_feed_req *req, int64_t now_ms, hr_arena *a,
                     hr_feed_page *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if (req->limit < 1 || req->limit > HR_FEED_PAGE_MAX)
        return hr_err_set(err, HR_EINVAL, "limit must be 1..%d", HR_FEED_PAGE_MAX);
    if (req->offset > HR_FEED_OFFSET_MAX)
        return hr_err_set(err, HR_EINVAL, "offset must be 0..%d", HR_FEED_OFFSET_MAX);
    feed_pos pos;
    int rc = cursor_decode(req->cursor, &pos, err);
    if (rc != HR_OK) return rc;
    if (pos.skip + req->offset > HR_FEED_OFFSET_MAX)
        return hr_err_set(err, HR_EINVAL, "offset plus the cursor's items still to skip must be 0..%d",
                          HR_FEED_OFFSET_MAX);
    out->items = hr_arena_alloc(a, req->limit * sizeof *out->items);
    size_t skip = pos.skip + req->offset, scanned = 0;
    bool more = true;
    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT;
    hr_page_memo off = {0}, *memo = plan->memo ? plan->memo : &off;
    hr_slice *bodies =
        memo->on ? hr_arena_alloc(a, req->limit * sizeof *bodies) : NULL; /* as stored, to keep */
    for (int round = 0; rc == HR_OK && round < READ_ROUNDS && more && out->n < req->limit; round++) {
        if (pos.count >= plan->max_items || scanned >= plan->scan_max) break;
        if (round > 0) memo->on = false; /* kept pages are read in one round */
        size_t want = skip + (req->limit - out->n);
        if (plan->filter) want = want * 4 > 200 ? want * 4 : 200;
        if (want > plan->scan_max - scanned) want = plan->scan_max - scanned;
        /* At most the skipped entries and the positions left to show. A feed
         * with no cap has SIZE_MAX positions: the sum must not wrap. */
        size_t room = plan->max_items - pos.count;
        if (room <= SIZE_MAX - skip && want > room + skip) want = room + skip;
        if (want > HR_ZRANGE_LIMIT_MAX) want = HR_ZRANGE_LIMIT_MAX;
        if (want == 0) break;
        /* One range read per list, from the position on. A page to be kept
         * reads one entry more, so that it knows when the entry after its
         * last expires (and with it, whether there is a next page). */
        hr_batch_reset(b);
        hr_tlrange_spec spec =
            hr_tlrange_all(memo->on && want < HR_ZRANGE_LIMIT_MAX ? want + 1 : want, now_ms);
        spec.before_ms = req->before_ms;
        spec.after_ms = plan->after_ms;
        if (pos.set) {
            spec.has_cursor = true;
            spec.cursor_time = pos.time_ms;
            spec.cursor_member = hr_slice_of(pos.id, HR_ACTIVITY_ID_LEN);
        }
        hr_tlrange_spec hot = spec;
        hot.hot = true;
        for (size_t i = 0; i < plan->n_keys; i++) {
            hr_page_memo_stamp(memo, plan->keys[i]);
            hr_tlrange(b, plan->keys[i], i >= plan->first_big ? &hot : &spec);
        }
        /* A timeline's first round also reads the reader's big accounts, so
         * that a reader who follows none (nearly everyone) costs one range
         * round trip and one multi-get. */
        bool big_now = round == 0 && plan->big_key.len > 0;
        hr_zrange_spec every = hr_zrange_all(false, HR_ZRANGE_LIMIT_MAX);
        if (big_now) hr_page_memo_stamp(memo, plan->big_key);
        size_t big_op = big_now ? hr_zrange(b, plan->big_key, &every) : 0;
        rc = hr_core_exec(f->store, b, 0, "feed", err);
        if (rc != HR_OK) break;
        more = false;
        size_t n_lists = plan->n_keys;
        size_t total = entries_in(b, 0, n_lists);
        hr_zentry *all = NULL;
        size_t n = 0;
        if (big_now && hr_batch_result(b, big_op)->n_entries > 0) {
            /* Their feeds, read from the same position in a second batch. */
            add_big_keys(f, plan, hr_batch_result(b, big_op), a);
            all = hr_arena_alloc(a, (total + 1) * sizeof *all);
            collect(b, 0, n_lists, all, &n, &more, a);
            hr_batch_reset(b);
            for (size_t i = n_lists; i < plan->n_keys; i++) {
                hr_page_memo_stamp(memo, plan->keys[i]);
                hr_tlrange(b, plan->keys[i], &hot);
            }
            rc = hr_core_exec(f->store, b, 0, "feed", err);
            if (rc != HR_OK) break;
            size_t extra = entries_in(b, 0, plan->n_keys - n_lists);
            hr_zentry *grown = hr_arena_alloc(a, (n + extra + 1) * sizeof *grown);
            memcpy(grown, all, n * sizeof *all);
            all = grown;
            collect(b, 0, plan->n_keys - n_lists, all, &n, &more, a);
        } else {
            all = hr_arena_alloc(a, (total + 1) * sizeof *all);
            collect(b, 0, n_lists, all, &n, &more, a);
        }
        for (size_t i = 0; memo->on && i < n; i++)
            hr_page_memo_entry(memo, hr_feeds_entry_expiry(f, (int64_t)all[i].score));
        /* Merge: the newest `want` of all lists, without repeats. */
        qsort(all, n, sizeof *all, entry_cmp);
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (m == 0 || entry_cmp(&all[m - 1], &all[i]) != 0) all[m++] = all[i];
        if (m > want) {
            m = want;
            more = true;
        }
        /* The bodies and their reactions' counts, in one multi-get. */
        hr_batch_reset(b);
        for (size_t i = 0; i < m; i++) {
            hr_slice body_key = hr_feeds_body_key(f, all[i].member, &k);
            hr_page_memo_stamp(memo, body_key);
            hr_get(b, body_key);
            hr_rs_counts_read(b, f->ns, all[i].member, &k);
            hr_page_memo_stamp(memo, hr_buf_slice(&k));
        }
        rc = hr_core_exec(f->store, b, 0, "feed", err);
        for (size_t i = 0; rc == HR_OK && i < m; i++) {
            hr_activity act;
            bool live;
            rc = body_result(b, 2 * i, all[i].member, a, &act, &live, err);
            if (rc != HR_OK) break;
            scanned++;
            pos.set = true;
            pos.time_ms = (int64_t)all[i].score;
            memcpy(pos.id, all[i].member.ptr, HR_ACTIVITY_ID_LEN);
            if (!live || !matches(&act, plan->filter)) continue;
            pos.count++;
            if (skip > 0) {
                skip--;
                continue;
            }
            hr_rs_counts_fill(b, 2 * i + 1, a, &act);
            if (memo->on) bodies[out->n] = hr_arena_copy(a, hr_batch_result(b, 2 * i)->value);
            out->items[out->n++] = act;
            if (out->n == req->limit || pos.count >= plan->max_items) {
                more = more || i + 1 < m;
                break;
            }
        }
    }
    if (rc == HR_OK && req->reader.len) rc = read_own(f, req->reader, out, memo, b, a, err);
    for (size_t i = 0; rc == HR_OK && memo->on && i < out->n; i++)
        hr_page_memo_item(memo, hr_slice_of(out->items[i].id, HR_ACTIVITY_ID_LEN), bodies[i], &out->items[i]);
    if (rc == HR_OK && more && pos.count < plan->max_items && pos.set) {
        pos.skip = skip;
        out->next_cursor = cursor_encode(a, &pos);
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

int hr_feeds_read(hr_feeds *f, hr_feed_kind kind, hr_slice id, const hr_feed_req *req, int64_t now_ms,
                  hr_arena *a, hr_feed_page *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if (!hr_ident_valid(id))
        return hr_err_set(err, HR_EINVAL, "%s must be an identifier", kind == HR_FEED_GROUP ? "gid" : "uid");
    if (req->reader.len && !hr_ident_valid(req->reader))
        return hr_err_set(err, HR_EINVAL, "reader must be an identifier");
    hr_buf k = HR_BUF_INIT;
    page_plan plan = {
        .after_ms = req->after_ms, .max_items = SIZE_MAX, .scan_max = SIZE_MAX, .first_big = SIZE_MAX};
    if (kind == HR_FEED_USER || kind == HR_FEED_GROUP) {
        plan.keys = hr_arena_alloc(a, sizeof *plan.keys);
        plan.keys[0] = hr_arena_copy(a, kind == HR_FEED_USER ? hr_feeds_user_key(f, id, "/fd", &k)
                                                             : hr_feeds_group_key(f, id, &k));
        plan.n_keys = 1;
    } else {
        /* The timeline and the feeds of the big accounts this user reads. */
        int64_t oldest = now_ms - f->opts.timeline_ttl_ms;
        if (plan.after_ms < oldest) plan.after_ms = oldest;
        plan.max_items = f->opts.timeline_max;
        plan.keys = hr_arena_alloc(a, sizeof *plan.keys);
        plan.keys[0] = hr_arena_copy(a, hr_feeds_user_key(f, id, "/tl", &k));
        plan.n_keys = 1;
        plan.big_key = hr_arena_copy(a, hr_feeds_user_key(f, id, "/big", &k));
    }
    hr_buf_free(&k);
    /* Kept (feeds_memo.h): a home timeline's first page, with no bounds,
     * read by its owner (whose own reactions it shows). */
    bool kept = kind == HR_FEED_TIMELINE && f->pages && req->cursor == NULL && req->offset == 0 &&
                req->before_ms == INT64_MAX && req->after_ms == INT64_MIN && hr_slice_eq(req->reader, id);
    if (!kept) return read_page(f, &plan, req, now_ms, a, out, err);
    if (hr_page_memo_get(f->pages, id, req->limit, now_ms, a, &out->items, &out->n, &out->next_cursor))
        return HR_OK;
    hr_page_memo memo;
    hr_page_memo_begin(&memo, f->store);
    plan.memo = &memo;
    int rc = read_page(f, &plan, req, now_ms, a, out, err);
    if (rc == HR_OK) hr_page_memo_put(f->pages, id, req->limit, &memo, out->n, out->next_cursor);
    hr_page_memo_end(&memo);
    return rc;
}

int hr_feeds_query(hr_feeds *f, const hr_activity *filter, const hr_feed_req *req, int64_t now_ms,
                   hr_arena *a, hr_feed_page *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    const struct {
        const char *name;
        hr_slice v;
    } fields[] = {{"actor", filter->actor},
                  {"verb", filter->verb},
                  {"object", filter->object},
                  {"target", filter->target}};
    for (size_t i = 0; i < 4; i++)
        if (fields[i].v.len && !hr_ident_valid(fields[i].v))
            return hr_err_set(err, HR_EINVAL, "%s must be an identifier", fields[i].name);
    if (req->reader.len && !hr_ident_valid(req->reader))
        return hr_err_set(err, HR_EINVAL, "reader must be an identifier");
    /* Read the list most likely to be short: an actor's or an object's
     * activities before a target's, and a verb's (often huge) last. */
    hr_buf k = HR_BUF_INIT;
    hr_slice key;
    hr_activity probe = {.target = filter->target};
    hr_slice group = hr_activity_group(&probe);
    if (filter->actor.len)
        key = hr_feeds_user_key(f, filter->actor, "/fd", &k);
    else if (filter->object.len)
        key = hr_feeds_index_key(f, "object", filter->object, &k);
    else if (group.len)
        key = hr_feeds_group_key(f, group, &k);
    else if (filter->target.len)
        key = hr_feeds_index_key(f, "target", filter->target, &k);
    else if (filter->verb.len)
        key = hr_feeds_index_key(f, "verb", filter->verb, &k);
    else {
        hr_buf_free(&k);
        return hr_err_set(err, HR_EINVAL, "give at least one of actor, verb, object, target");
    }
    hr_slice keys[1] = {hr_arena_copy(a, key)};
    hr_buf_free(&k);
    page_plan plan = {.keys = keys,
                      .n_keys = 1,
                      .after_ms = req->after_ms,
                      .max_items = SIZE_MAX,
                      .scan_max = HR_FEED_SCAN_MAX,
                      .filter = filter,
                      .first_big = SIZE_MAX};
    return read_page(f, &plan, req, now_ms, a, out, err);
}
