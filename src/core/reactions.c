/* reactions.c — see reactions.h. */
#include "core/reactions.h"

#include <math.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "common/ident.h"
#include "core/exec.h"

#define KIND_MAX 64
#define LIKE "like"
#define ADD_ROUNDS 8 /* tries of a like whose step lost to the same user's */

struct hr_reactions {
    hr_store *store;
    char *ns;
};

static const hr_slice none = {NULL, 0};

hr_reactions *hr_reactions_new(hr_store *store, const char *ns) {
    hr_reactions *r = hr_xcalloc(1, sizeof *r);
    r->store = store;
    r->ns = hr_xstrdup(ns ? ns : "");
    return r;
}

void hr_reactions_free(hr_reactions *r) {
    if (r == NULL) return;
    free(r->ns);
    free(r);
}

static bool is_like(hr_slice kind) {
    return hr_slice_eq(kind, hr_slice_str(LIKE));
}

static int check_kind(hr_slice kind, bool optional, hr_err *err) {
    if (optional && kind.len == 0) return HR_OK;
    if (kind.len > KIND_MAX || !hr_ident_valid(kind))
        return hr_err_set(err, HR_EINVAL, "kind must be an identifier of 1..%d bytes of [A-Za-z0-9._:@~-]",
                          KIND_MAX);
    return HR_OK;
}

/* Whether the body read at op is a live activity; HR_ENOTFOUND if not. */
static int activity_live(const hr_batch *b, size_t op, hr_slice aid, hr_arena *a, hr_err *err) {
    const hr_result *res = hr_batch_result(b, op);
    hr_activity act;
    bool tomb = true;
    if (res->rc == HR_OK && hr_activity_decode(aid, res->value, a, &act, &tomb, err) != HR_OK)
        return err->code;
    if (res->rc != HR_OK || tomb)
        return hr_err_set(err, HR_ENOTFOUND, "no activity %.*s", (int)aid.len, aid.ptr);
    return HR_OK;
}

/* The reaction of id aid-suf stored as v, into *out (copied into a). */
static bool reaction_of(hr_slice aid, hr_slice suf, hr_slice v, hr_arena *a, hr_reaction *out) {
    hr_reaction x;
    if (!hr_reaction_decode(v, &x)) return false;
    hr_buf k = HR_BUF_INIT;
    hr_slice id = hr_arena_copy(a, hr_reaction_id(aid, suf, &k));
    hr_buf_free(&k);
    *out = (hr_reaction){.id = id,
                         .activity_id = hr_slice_of(id.ptr, aid.len),
                         .user = hr_arena_copy(a, x.user),
                         .kind = hr_arena_copy(a, x.kind),
                         .time_ms = x.time_ms,
                         .data = hr_arena_copy(a, x.data)};
    return true;
}

/* The step that makes a reaction (reactions.h): b's ops so far are the
 * user's lists; these go last. */
typedef struct add_step {
    hr_reactions *r;
    const hr_reaction *x;
    hr_slice suf;
    bool like;
    double was; /* a like: the user's count of likes read, NAN: none */
    hr_buf record;
} add_step;

static void add_last(hr_batch *b, void *ctx) {
    add_step *s = ctx;
    const char *ns = s->r->ns;
    hr_slice aid = s->x->activity_id;
    hr_buf k = HR_BUF_INIT;
    /* A like: only while the user has none. Another kind: its new id is
     * not in the list yet, which always holds; the guard makes the writes
     * after it one step on Redis Cluster too. */
    if (s->like)
        hr_zguard(b, hr_activity_key(ns, aid, "/o/", s->x->user, &k), s->x->kind, s->was);
    else
        hr_zguard(b, hr_activity_key(ns, aid, "/rx", none, &k), s->suf, NAN);
    hr_put(b, hr_activity_key(ns, aid, "/r/", s->suf, &k), hr_buf_slice(&s->record), 0);
    hr_zadd(b, hr_activity_key(ns, aid, "/rx", none, &k), (double)s->x->time_ms, s->suf);
    hr_zadd(b, hr_activity_key(ns, aid, "/rx/", s->x->kind, &k), (double)s->x->time_ms, s->suf);
    hr_zincr(b, hr_activity_key(ns, aid, "/rc", none, &k), 1, s->x->kind);
    hr_zincr(b, hr_activity_key(ns, aid, "/o/", s->x->user, &k), 1, s->x->kind);
    hr_buf_free(&k);
}

/* A like's state for the user: *was the count of likes read (NAN: none),
 * and when it is 1 or more the like itself into *out. */
static int like_state(hr_reactions *r, hr_slice aid, hr_slice user, hr_slice suf, hr_arena *a, double *was,
                      hr_reaction *out, bool *found, hr_err *err) {
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    hr_zscore(b, hr_activity_key(r->ns, aid, "/o/", user, &k), hr_slice_str(LIKE));
    hr_get(b, hr_activity_key(r->ns, aid, "/r/", suf, &k));
    int rc = hr_core_exec(r->store, b, 0, "reaction", err);
    const hr_result *own = hr_batch_result(b, 0), *rec = hr_batch_result(b, 1);
    *was = rc == HR_OK && own->rc == HR_OK ? own->score : NAN;
    *found = rc == HR_OK && *was >= 1 && rec->rc == HR_OK && reaction_of(aid, suf, rec->value, a, out);
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

/* Why one batch (on RocksDB; two round trips on Redis Cluster): the
 * activity's body is read beside the writes rather than before them. A
 * reaction to an activity that does not exist (or no longer) is invisible
 * (every read of reactions reads the body too) and is removed at once; a
 * like the user already made loses its guard and is read then. */
int hr_reactions_add(hr_reactions *r, hr_slice aid, hr_slice user, hr_slice kind, hr_slice data,
                     int64_t now_ms, hr_arena *a, hr_reaction *out, bool *existing, hr_err *err) {
    *existing = false;
    if (!hr_activity_id_valid(aid))
        return hr_err_set(err, HR_ENOTFOUND, "no activity %.*s", (int)aid.len, aid.ptr);
    if (!hr_ident_valid(user)) return hr_err_set(err, HR_EINVAL, "user must be an identifier");
    int rc = check_kind(kind, false, err);
    if (rc != HR_OK) return rc;
    if (data.len > HR_REACTION_DATA_MAX)
        return hr_err_set(err, HR_ETOOBIG, "data is over %d bytes", HR_REACTION_DATA_MAX);
    bool like = is_like(kind);
    hr_buf k = HR_BUF_INIT, sufb = HR_BUF_INIT, rid = HR_BUF_INIT;
    if (like) {
        hr_buf_append_str(&sufb, LIKE ".");
        hr_buf_append_slice(&sufb, user);
    } else {
        char id[HR_ACTIVITY_ID_LEN + 1];
        hr_activity_new_id(now_ms, id);
        hr_buf_append(&sufb, id, HR_ACTIVITY_ID_LEN);
    }
    hr_reaction_id(aid, hr_buf_slice(&sufb), &rid);
    hr_reaction x = {.activity_id = aid, .user = user, .kind = kind, .time_ms = now_ms, .data = data};
    add_step step = {
        .r = r, .x = &x, .suf = hr_buf_slice(&sufb), .like = like, .was = NAN, .record = HR_BUF_INIT};
    hr_reaction_encode(&x, &step.record);
    hr_batch *b = hr_batch_new();
    rc = HR_ECONFLICT;
    for (int round = 0; round < ADD_ROUNDS && rc == HR_ECONFLICT; round++) {
        hr_batch_reset(b);
        hr_get(b, hr_activity_key(r->ns, aid, "", none, &k));
        /* The user's lists first (reactions.h: their entry names the id). */
        hr_tladd(b, hr_rs_user_key(r->ns, user, none, &k), now_ms, hr_buf_slice(&rid), 0);
        hr_tladd(b, hr_rs_user_key(r->ns, user, kind, &k), now_ms, hr_buf_slice(&rid), 0);
        rc = hr_core_write_last(r->store, b, add_last, &step, "reaction", err);
        if (rc != HR_OK && rc != HR_ECONFLICT) break;
        if (activity_live(b, 0, aid, a, err) != HR_OK) {
            hr_err ignored = {0};
            if (rc == HR_OK) hr_rs_purge(r->store, r->ns, aid, &ignored);
            rc = HR_ENOTFOUND;
            break;
        }
        if (rc == HR_OK) {
            reaction_of(aid, step.suf, hr_buf_slice(&step.record), a, out);
            break;
        }
        /* A like's guard lost: the user has one (answer it), or had one
         * and took it back (count 0: try again from there). Another kind's
         * holds but for an id made twice in one millisecond. */
        if (!like) break;
        bool found = false;
        rc = like_state(r, aid, user, step.suf, a, &step.was, out, &found, err);
        if (rc == HR_OK && found) {
            *existing = true;
            break;
        }
        if (rc == HR_OK) rc = HR_ECONFLICT;
    }
    if (rc == HR_ECONFLICT)
        hr_err_set(err, HR_ECONFLICT, "too many concurrent reactions of this user; try again");
    hr_batch_free(b);
    hr_buf_free(&k);
    hr_buf_free(&sufb);
    hr_buf_free(&rid);
    hr_buf_free(&step.record);
    return rc;
}

int hr_reactions_get(hr_reactions *r, hr_slice id, hr_arena *a, hr_reaction *out, hr_err *err) {
    hr_slice aid, suf;
    if (!hr_reaction_id_split(id, &aid, &suf))
        return hr_err_set(err, HR_ENOTFOUND, "no reaction %.*s", (int)id.len, id.ptr);
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    hr_get(b, hr_activity_key(r->ns, aid, "/r/", suf, &k));
    hr_zscore(b, hr_activity_key(r->ns, aid, "/rx", none, &k), suf);
    int rc = hr_core_exec(r->store, b, 0, "reaction", err);
    if (rc == HR_OK) {
        const hr_result *rec = hr_batch_result(b, 0), *at = hr_batch_result(b, 1);
        /* A record stays a moment after its delete's step (its list entry
         * goes in the step): the list says whether it is there. */
        if (rec->rc != HR_OK || at->rc != HR_OK || !reaction_of(aid, suf, rec->value, a, out))
            rc = hr_err_set(err, HR_ENOTFOUND, "no reaction %.*s", (int)id.len, id.ptr);
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

int hr_reactions_delete(hr_reactions *r, hr_slice id, hr_err *err) {
    hr_arena a = HR_ARENA_INIT;
    hr_reaction x;
    int rc = hr_reactions_get(r, id, &a, &x, err);
    if (rc != HR_OK) {
        hr_arena_free(&a);
        return rc;
    }
    hr_slice aid, suf;
    hr_reaction_id_split(x.id, &aid, &suf);
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    /* One step: the entry must still be there, so two deletes count once.
     * The record is emptied in the step (a like made again at once writes
     * its own) and deleted after, only while it is still empty. */
    hr_zguard(b, hr_activity_key(r->ns, aid, "/rx", none, &k), suf, (double)x.time_ms);
    hr_zrem(b, hr_activity_key(r->ns, aid, "/rx", none, &k), suf);
    hr_zrem(b, hr_activity_key(r->ns, aid, "/rx/", x.kind, &k), suf);
    hr_zincr(b, hr_activity_key(r->ns, aid, "/rc", none, &k), -1, x.kind);
    hr_zincr(b, hr_activity_key(r->ns, aid, "/o/", x.user, &k), -1, x.kind);
    hr_put(b, hr_activity_key(r->ns, aid, "/r/", suf, &k), none, 0);
    rc = hr_core_exec(r->store, b, 0, "reaction", err);
    if (rc == HR_ECONFLICT) rc = hr_err_set(err, HR_ENOTFOUND, "no reaction %.*s", (int)id.len, id.ptr);
    if (rc == HR_OK) {
        hr_batch_reset(b);
        hr_del_if_equal(b, hr_activity_key(r->ns, aid, "/r/", suf, &k), none);
        hr_tlrem(b, hr_rs_user_key(r->ns, x.user, none, &k), x.time_ms, x.id);
        hr_tlrem(b, hr_rs_user_key(r->ns, x.user, x.kind, &k), x.time_ms, x.id);
        rc = hr_core_exec(r->store, b, 0, "reaction", err);
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    hr_arena_free(&a);
    return rc;
}

int hr_reactions_of_activity(hr_reactions *r, hr_slice aid, hr_slice kind, const hr_list_req *req,
                             hr_arena *a, hr_reaction_page *out, hr_err *err) {
    *out = (hr_reaction_page){0};
    if (!hr_activity_id_valid(aid))
        return hr_err_set(err, HR_ENOTFOUND, "no activity %.*s", (int)aid.len, aid.ptr);
    int rc = check_kind(kind, true, err);
    hr_zrange_spec spec;
    if (rc == HR_OK) rc = hr_list_spec(req, HR_REACTION_ID_MAX, a, &spec, err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new(), *recs = hr_batch_new();
    hr_get(b, hr_activity_key(r->ns, aid, "", none, &k));
    hr_zrange(b,
              kind.len ? hr_activity_key(r->ns, aid, "/rx/", kind, &k)
                       : hr_activity_key(r->ns, aid, "/rx", none, &k),
              &spec);
    rc = hr_core_exec(r->store, b, 0, "reactions", err);
    if (rc == HR_OK) rc = activity_live(b, 0, aid, a, err);
    const hr_result *list = rc == HR_OK ? hr_batch_result(b, 1) : NULL;
    if (list && list->n_entries) {
        for (size_t i = 0; i < list->n_entries; i++)
            hr_get(recs, hr_activity_key(r->ns, aid, "/r/", list->entries[i].member, &k));
        rc = hr_core_exec(r->store, recs, 0, "reactions", err);
        out->items = hr_arena_alloc(a, list->n_entries * sizeof *out->items);
        for (size_t i = 0; rc == HR_OK && i < list->n_entries; i++) {
            const hr_result *rec = hr_batch_result(recs, i);
            if (rec->rc == HR_OK &&
                reaction_of(aid, list->entries[i].member, rec->value, a, &out->items[out->n]))
                out->n++;
        }
        if (rc == HR_OK && list->more) {
            const hr_zentry *last = &list->entries[list->n_entries - 1];
            out->next_cursor = hr_list_cursor(a, last->score, last->member);
        }
    }
    hr_batch_free(b);
    hr_batch_free(recs);
    hr_buf_free(&k);
    return rc;
}

int hr_reactions_of_user(hr_reactions *r, hr_slice uid, hr_slice kind, const hr_list_req *req, int64_t now_ms,
                         hr_arena *a, hr_reaction_page *out, hr_err *err) {
    *out = (hr_reaction_page){0};
    if (!hr_ident_valid(uid)) return hr_err_set(err, HR_EINVAL, "uid must be an identifier");
    int rc = check_kind(kind, true, err);
    hr_zrange_spec z;
    if (rc == HR_OK) rc = hr_list_spec(req, HR_REACTION_ID_MAX, a, &z, err);
    if (rc != HR_OK) return rc;
    hr_tlrange_spec spec = hr_tlrange_all(z.limit, now_ms);
    if (req->has_since) spec.after_ms = req->since_ms;
    if (z.has_cursor) {
        spec.has_cursor = true;
        spec.cursor_time = (int64_t)z.cursor_score;
        spec.cursor_member = z.cursor_member;
    }
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new(), *recs = hr_batch_new();
    hr_tlrange(b, hr_rs_user_key(r->ns, uid, kind, &k), &spec);
    rc = hr_core_exec(r->store, b, 0, "reactions", err);
    const hr_result *list = rc == HR_OK ? hr_batch_result(b, 0) : NULL;
    size_t n = list ? list->n_entries : 0;
    hr_slice *aids = n ? hr_arena_alloc(a, n * sizeof *aids) : NULL,
             *sufs = n ? hr_arena_alloc(a, n * sizeof *sufs) : NULL;
    /* Per entry: the record, its place in the activity's list (the step
     * that made it may have lost, or its delete be under way) and the
     * activity (deleted: its reactions go with it). */
    for (size_t i = 0; i < n; i++) {
        if (!hr_reaction_id_split(list->entries[i].member, &aids[i], &sufs[i])) aids[i] = none;
        if (aids[i].len == 0) continue;
        hr_get(recs, hr_activity_key(r->ns, aids[i], "/r/", sufs[i], &k));
        hr_zscore(recs, hr_activity_key(r->ns, aids[i], "/rx", none, &k), sufs[i]);
        hr_get(recs, hr_activity_key(r->ns, aids[i], "", none, &k));
    }
    if (hr_batch_len(recs)) rc = hr_core_exec(r->store, recs, 0, "reactions", err);
    out->items = n ? hr_arena_alloc(a, n * sizeof *out->items) : NULL;
    for (size_t i = 0, op = 0; rc == HR_OK && i < n; i++) {
        if (aids[i].len == 0) continue;
        const hr_result *rec = hr_batch_result(recs, op), *at = hr_batch_result(recs, op + 1);
        hr_err ignored = {0};
        bool live = activity_live(recs, op + 2, aids[i], a, &ignored) == HR_OK;
        op += 3;
        hr_reaction *x = &out->items[out->n];
        if (!live || rec->rc != HR_OK || at->rc != HR_OK || !reaction_of(aids[i], sufs[i], rec->value, a, x))
            continue;
        if ((double)x->time_ms != list->entries[i].score || at->score != list->entries[i].score) continue;
        out->n++;
    }
    if (rc == HR_OK && list && list->more && n) {
        const hr_zentry *last = &list->entries[n - 1];
        out->next_cursor = hr_list_cursor(a, last->score, last->member);
    }
    hr_batch_free(b);
    hr_batch_free(recs);
    hr_buf_free(&k);
    return rc;
}
