/* graph.c — see graph.h. */
#include "core/graph.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "core/exec.h"

#define ID_MAX 128

struct hr_graph {
    hr_store *store;
    char *ns;
};

hr_graph *hr_graph_new(hr_store *store, const char *ns) {
    hr_graph *g = hr_xcalloc(1, sizeof *g);
    g->store = store;
    g->ns = hr_xstrdup(ns ? ns : "");
    return g;
}

void hr_graph_free(hr_graph *g) {
    if (g == NULL) return;
    free(g->ns);
    free(g);
}

void hr_graph_key(const hr_graph *g, hr_graph_set set, hr_slice id, hr_buf *k) {
    static const char *const suffix[] = {
        [HR_GRAPH_FOLLOWS] = "/fo", [HR_GRAPH_FOLLOWERS] = "/fr", [HR_GRAPH_FRIENDS] = "/fs",
        [HR_GRAPH_GROUPS] = "/gr",  [HR_GRAPH_MEMBERS] = "/mb",
    };
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, g->ns);
    hr_buf_append_str(k, set == HR_GRAPH_MEMBERS ? "g/" : "u/");
    hr_buf_append_slice(k, id);
    hr_buf_append_byte(k, '}');
    hr_buf_append_str(k, suffix[set]);
}

/* The key of a set in a scratch buffer (cleared first). */
static hr_slice key_of(const hr_graph *g, hr_graph_set set, hr_slice id, hr_buf *k) {
    hr_buf_clear(k);
    hr_graph_key(g, set, id, k);
    return hr_buf_slice(k);
}

static int check_id(hr_slice id, const char *what, hr_err *err) {
    if (id.len < 1 || id.len > ID_MAX || memchr(id.ptr, '/', id.len) || memchr(id.ptr, '{', id.len) ||
        memchr(id.ptr, '}', id.len))
        return hr_err_set(err, HR_EINVAL, "%s must be an identifier", what);
    return HR_OK;
}

/* Add the two ends of a relation (a in set `from` of x, x in set `to` of a...)
 * as zadd or zrem; returns the index of the first op. */
static size_t relate(const hr_graph *g, hr_batch *b, hr_graph_set fwd, hr_slice a, hr_graph_set back,
                     hr_slice z, bool add, int64_t now_ms) {
    hr_buf k = HR_BUF_INIT;
    size_t first =
        add ? hr_zadd(b, key_of(g, fwd, a, &k), (double)now_ms, z) : hr_zrem(b, key_of(g, fwd, a, &k), z);
    if (add)
        hr_zadd(b, key_of(g, back, z, &k), (double)now_ms, a);
    else
        hr_zrem(b, key_of(g, back, z, &k), a);
    hr_buf_free(&k);
    return first;
}

int hr_graph_follow(hr_graph *g, hr_batch *b, hr_slice uid, hr_slice target, int64_t now_ms, bool *was_new,
                    hr_err *err) {
    int rc = check_id(uid, "uid", err);
    if (rc == HR_OK) rc = check_id(target, "target", err);
    if (rc != HR_OK) return rc;
    if (hr_slice_eq(uid, target)) return hr_err_set(err, HR_EINVAL, "a user cannot follow itself");
    size_t op = relate(g, b, HR_GRAPH_FOLLOWS, uid, HR_GRAPH_FOLLOWERS, target, true, now_ms);
    rc = hr_core_exec(g->store, b, 0, "follow", err);
    if (rc != HR_OK) return rc;
    if (was_new) *was_new = hr_batch_result(b, op)->num == 1;

    /* Only now that our edge is written, look for the reverse one (graph.h
     * says why this order makes concurrent mutual follows meet). */
    hr_buf k = HR_BUF_INIT;
    hr_batch *rb = hr_batch_new();
    size_t rev = hr_zscore(rb, key_of(g, HR_GRAPH_FOLLOWS, target, &k), uid);
    rc = hr_core_exec(g->store, rb, 0, "follow", err);
    if (rc == HR_OK && hr_batch_result(rb, rev)->rc == HR_OK) {
        hr_batch_reset(rb);
        relate(g, rb, HR_GRAPH_FRIENDS, uid, HR_GRAPH_FRIENDS, target, true, now_ms);
        rc = hr_core_exec(g->store, rb, 0, "follow", err);
    }
    hr_batch_free(rb);
    hr_buf_free(&k);
    return rc;
}

int hr_graph_follow_many(hr_graph *g, hr_slice uid, const hr_slice *targets, size_t n, int64_t now_ms,
                         hr_err *err) {
    int rc = check_id(uid, "uid", err);
    for (size_t i = 0; rc == HR_OK && i < n; i++) {
        rc = check_id(targets[i], "target", err);
        if (rc == HR_OK && hr_slice_eq(uid, targets[i]))
            rc = hr_err_set(err, HR_EINVAL, "a user cannot follow itself");
    }
    if (rc != HR_OK) return rc;
    hr_batch *b = hr_batch_new();
    for (size_t i = 0; i < n; i++)
        relate(g, b, HR_GRAPH_FOLLOWS, uid, HR_GRAPH_FOLLOWERS, targets[i], true, now_ms);
    rc = hr_core_exec(g->store, b, 0, "follow", err);
    hr_buf k = HR_BUF_INIT;
    if (rc == HR_OK) {
        hr_batch_reset(b);
        for (size_t i = 0; i < n; i++)
            hr_zscore(b, key_of(g, HR_GRAPH_FOLLOWS, targets[i], &k), uid);
        rc = hr_core_exec(g->store, b, 0, "follow", err);
    }
    if (rc == HR_OK) {
        hr_batch *fb = hr_batch_new();
        for (size_t i = 0; i < n; i++)
            if (hr_batch_result(b, i)->rc == HR_OK)
                relate(g, fb, HR_GRAPH_FRIENDS, uid, HR_GRAPH_FRIENDS, targets[i], true, now_ms);
        if (hr_batch_len(fb)) rc = hr_core_exec(g->store, fb, 0, "follow", err);
        hr_batch_free(fb);
    }
    hr_buf_free(&k);
    hr_batch_free(b);
    return rc;
}

int hr_graph_unfollow(hr_graph *g, hr_batch *b, hr_slice uid, hr_slice target, bool *was_following,
                      hr_err *err) {
    int rc = check_id(uid, "uid", err);
    if (rc == HR_OK) rc = check_id(target, "target", err);
    if (rc != HR_OK) return rc;
    size_t op = relate(g, b, HR_GRAPH_FOLLOWS, uid, HR_GRAPH_FOLLOWERS, target, false, 0);
    relate(g, b, HR_GRAPH_FRIENDS, uid, HR_GRAPH_FRIENDS, target, false, 0);
    rc = hr_core_exec(g->store, b, 0, "unfollow", err);
    if (rc == HR_OK && was_following) *was_following = hr_batch_result(b, op)->num == 1;
    return rc;
}

int hr_graph_join(hr_graph *g, hr_batch *b, hr_slice gid, hr_slice uid, int64_t now_ms, bool *was_new,
                  hr_err *err) {
    int rc = check_id(gid, "gid", err);
    if (rc == HR_OK) rc = check_id(uid, "uid", err);
    if (rc != HR_OK) return rc;
    size_t op = relate(g, b, HR_GRAPH_GROUPS, uid, HR_GRAPH_MEMBERS, gid, true, now_ms);
    rc = hr_core_exec(g->store, b, 0, "join", err);
    if (rc == HR_OK && was_new) *was_new = hr_batch_result(b, op)->num == 1;
    return rc;
}

int hr_graph_leave(hr_graph *g, hr_batch *b, hr_slice gid, hr_slice uid, bool *was_member, hr_err *err) {
    int rc = check_id(gid, "gid", err);
    if (rc == HR_OK) rc = check_id(uid, "uid", err);
    if (rc != HR_OK) return rc;
    size_t op = relate(g, b, HR_GRAPH_GROUPS, uid, HR_GRAPH_MEMBERS, gid, false, 0);
    rc = hr_core_exec(g->store, b, 0, "leave", err);
    if (rc == HR_OK && was_member) *was_member = hr_batch_result(b, op)->num == 1;
    return rc;
}

/* Run one range read of a set; *r is its result (valid while rb lives). */
static int range_read(hr_graph *g, hr_graph_set set, hr_slice id, const hr_zrange_spec *spec, hr_batch *rb,
                      const hr_result **r, hr_err *err) {
    int rc = check_id(id, set == HR_GRAPH_MEMBERS ? "gid" : "uid", err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT;
    size_t op = hr_zrange(rb, key_of(g, set, id, &k), spec);
    hr_buf_free(&k);
    rc = hr_core_exec(g->store, rb, 0, "graph list", err);
    *r = hr_batch_result(rb, op);
    return rc;
}

static void copy_ids(const hr_result *r, hr_arena *a, hr_slice **ids, int64_t **times, size_t *n) {
    *n = r->n_entries;
    *ids = hr_arena_alloc(a, (r->n_entries + 1) * sizeof **ids);
    if (times) *times = hr_arena_alloc(a, (r->n_entries + 1) * sizeof **times);
    for (size_t i = 0; i < r->n_entries; i++) {
        (*ids)[i] = hr_arena_copy(a, r->entries[i].member);
        if (times) (*times)[i] = (int64_t)r->entries[i].score;
    }
}

int hr_graph_list(hr_graph *g, hr_graph_set set, hr_slice id, const hr_list_req *req, hr_arena *a,
                  hr_id_page *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    hr_zrange_spec spec;
    int rc = hr_list_spec(req, ID_MAX, a, &spec, err);
    if (rc != HR_OK) return rc;
    hr_batch *rb = hr_batch_new();
    const hr_result *r;
    rc = range_read(g, set, id, &spec, rb, &r, err);
    if (rc == HR_OK) {
        copy_ids(r, a, &out->ids, &out->times, &out->n);
        if (r->more && r->n_entries > 0) {
            const hr_zentry *last = &r->entries[r->n_entries - 1];
            out->next_cursor = hr_list_cursor(a, last->score, last->member);
        }
    }
    hr_batch_free(rb);
    return rc;
}

int hr_graph_all(hr_graph *g, hr_graph_set set, hr_slice id, size_t max, hr_arena *a, hr_slice **ids,
                 size_t *n, hr_err *err) {
    *ids = NULL;
    *n = 0;
    if (max < 1 || max > HR_ZRANGE_LIMIT_MAX) return hr_err_set(err, HR_EINVAL, "max out of range");
    hr_zrange_spec spec = hr_zrange_all(true, max);
    hr_batch *rb = hr_batch_new();
    const hr_result *r;
    int rc = range_read(g, set, id, &spec, rb, &r, err);
    if (rc == HR_OK) copy_ids(r, a, ids, NULL, n);
    hr_batch_free(rb);
    return rc;
}

int hr_graph_count(hr_graph *g, hr_graph_set set, hr_slice id, int64_t *n, hr_err *err) {
    *n = 0;
    hr_buf k = HR_BUF_INIT;
    hr_batch *rb = hr_batch_new();
    size_t op = hr_zcard(rb, key_of(g, set, id, &k));
    int rc = hr_core_exec(g->store, rb, 0, "graph count", err);
    if (rc == HR_OK) *n = hr_batch_result(rb, op)->num;
    hr_batch_free(rb);
    hr_buf_free(&k);
    return rc;
}

int hr_graph_is_member(hr_graph *g, hr_graph_set set, hr_slice id, hr_slice member, bool *yes, hr_err *err) {
    *yes = false;
    hr_buf k = HR_BUF_INIT;
    hr_batch *rb = hr_batch_new();
    size_t op = hr_zscore(rb, key_of(g, set, id, &k), member);
    int rc = hr_core_exec(g->store, rb, 0, "graph lookup", err);
    if (rc == HR_OK) *yes = hr_batch_result(rb, op)->rc == HR_OK;
    hr_batch_free(rb);
    hr_buf_free(&k);
    return rc;
}
