/* activities.c — activities and feeds (API.md "Activities and feeds").
 *
 *   POST   /api/v1/activities            201 the activity (200 + "duplicate": true
 *                                        for a foreign_id the actor used before)
 *   GET    /api/v1/activities/{id}       the activity
 *   PUT    /api/v1/activities/{id}       {"data": ..., "object": ...} -> the new version
 *   DELETE /api/v1/activities/{id}       200 {"deleted": true}
 *   GET    /api/v1/users/{uid}/feed      the user's own activities
 *   GET    /api/v1/users/{uid}/timeline  the home timeline (only uid or the admin)
 *   GET    /api/v1/groups/{gid}/feed     the group's activities
 *   GET    /api/v1/activities?actor=&verb=&object=&target=   secondary index
 *
 * A user token acts only as its user: it creates activities with itself as
 * actor, and updates or deletes only its own. Feed reads take limit, offset,
 * cursor, before and after. */
#include <limits.h>
#include <string.h>

#include "api/api.h"
#include "api/json.h"
#include "api/json_out.h"
#include "common/clock.h"
#include "common/log.h"

/* ---- Rendering ---- */

/* An activity's members, in the order API.md shows them. data is stored as
 * the compact JSON text the create or update was given (dumped by jansson
 * there, so it is valid JSON) and goes out verbatim. */
static void activity_write(hr_jw *w, const hr_activity *x) {
    hr_jw_open(w, '{');
    hr_jw_key(w, "id");
    hr_jw_str(w, hr_slice_of(x->id, strlen(x->id)));
    hr_jw_key(w, "actor");
    hr_jw_str(w, x->actor);
    hr_jw_key(w, "verb");
    hr_jw_str(w, x->verb);
    if (x->object.len) {
        hr_jw_key(w, "object");
        hr_jw_str(w, x->object);
    }
    if (x->target.len) {
        hr_jw_key(w, "target");
        hr_jw_str(w, x->target);
    }
    hr_jw_key(w, "time");
    hr_jw_int(w, x->time_ms);
    if (x->foreign_id.len) {
        hr_jw_key(w, "foreign_id");
        hr_jw_str(w, x->foreign_id);
    }
    if (x->data.len) {
        hr_jw_key(w, "data");
        hr_jw_raw(w, x->data);
    }
    if (x->n_counts) {
        hr_jw_key(w, "reaction_counts");
        hr_jw_open(w, '{');
        for (size_t i = 0; i < x->n_counts; i++) {
            hr_jw_key_str(w, x->counts[i].kind);
            hr_jw_int(w, x->counts[i].n);
        }
        hr_jw_close(w, '}');
    }
    if (x->own_known) {
        hr_jw_key(w, "own_reactions");
        hr_jw_open(w, '[');
        for (size_t i = 0; i < x->n_own; i++)
            hr_jw_str(w, x->own[i]);
        hr_jw_close(w, ']');
    }
}

/* One activity; "duplicate": true for a create that found it already made. */
static void reply_activity(hr_request *req, unsigned status, const hr_activity *x, bool duplicate) {
    hr_buf out = HR_BUF_INIT;
    hr_jw w = hr_jw_start(&out);
    activity_write(&w, x);
    if (duplicate) {
        hr_jw_key(&w, "duplicate");
        hr_jw_bool(&w, true);
    }
    hr_jw_close(&w, '}');
    hr_reply_json_text(req, status, &out);
}

/* "included": {"users": {id: profile}, "groups": {...}, "objects": {...}}. */
static void included_write(hr_jw *w, const hr_included *inc) {
    static const char *const names[] = {"users", "groups", "objects"};
    hr_jw_key(w, "included");
    hr_jw_open(w, '{');
    for (int kind = 0; kind < 3; kind++) {
        hr_jw_key(w, names[kind]);
        hr_jw_open(w, '{');
        for (size_t i = 0; i < inc->of[kind].n; i++) {
            hr_jw_key_str(w, inc->of[kind].ids[i]);
            hr_jw_raw(w, inc->of[kind].json[i]);
        }
        hr_jw_close(w, '}');
    }
    hr_jw_close(w, '}');
}

/* A page of activities; inc (NULL: not enriched) the profiles it names. */
static void reply_page(hr_request *req, const hr_feed_page *page, const hr_included *inc) {
    hr_buf out = HR_BUF_INIT;
    hr_buf_reserve(&out, 256 + page->n * 256);
    hr_jw w = hr_jw_start(&out);
    hr_jw_page_open(&w, "activities");
    for (size_t i = 0; i < page->n; i++) {
        activity_write(&w, &page->items[i]);
        hr_jw_close(&w, '}');
    }
    hr_jw_page_end(&w, page->next_cursor);
    if (inc) included_write(&w, inc);
    hr_jw_close(&w, '}');
    hr_reply_json_text(req, 200, &out);
}

/* enrich=true|false (default false). */
static int enrich_query(hr_request *req, bool *on, hr_err *err) {
    const char *v = hr_req_query(req, "enrich");
    *on = v && strcmp(v, "true") == 0;
    if (v && !*on && strcmp(v, "false") != 0)
        return hr_err_set(err, HR_EINVAL, "enrich must be true or false");
    return HR_OK;
}

/* Answer a page read with rc, enriched when the query asks. */
static void reply_read(hr_request *req, int rc, bool enrich, const hr_feed_page *page, hr_err *err) {
    const hr_app *app = hr_req_app(req);
    hr_included inc;
    if (rc == HR_OK && enrich)
        rc = hr_profiles_include(app->profiles, page->items, page->n, hr_req_arena(req), &inc, err);
    if (rc != HR_OK) return hr_reply_error(req, rc, err);
    reply_page(req, page, enrich ? &inc : NULL);
}

/* ---- Input ---- */

int hr_api_data_field(hr_request *req, const json_t *body, size_t max, const char *limit, hr_slice *out,
                      hr_err *err) {
    *out = hr_slice_of(NULL, 0);
    json_t *d = json_object_get(body, "data");
    if (d == NULL || json_is_null(d)) return HR_OK;
    char *text = json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL) return hr_err_set(err, HR_EINVAL, "data cannot be encoded");
    size_t n = strlen(text);
    int rc = HR_OK;
    if (n > max)
        rc = hr_err_set(err, HR_ETOOBIG, "data is %zu bytes of JSON; at most %zu (%s)", n, max, limit);
    else
        *out = hr_arena_copy(hr_req_arena(req), hr_slice_of(text, n));
    free(text);
    return rc;
}

static int data_field(hr_request *req, const json_t *body, hr_slice *out, hr_err *err) {
    const hr_app *app = hr_req_app(req);
    return hr_api_data_field(req, body, app->config->activity_data_max, "activity_data_max", out, err);
}

int hr_api_acts_as(hr_request *req, hr_slice user, hr_err *err) {
    const hr_principal *p = hr_req_principal(req);
    if (p->admin || hr_slice_eq(user, hr_slice_str(p->user))) return HR_OK;
    return hr_err_set(err, HR_EFORBIDDEN, "this token acts only as user '%s'", p->user);
}

static int query_time(hr_request *req, const char *name, int64_t *out, hr_err *err) {
    const char *v = hr_req_query(req, name);
    if (v == NULL) return HR_OK;
    uint64_t u;
    if (hr_parse_uint(v, &u) != HR_OK || u > (uint64_t)HR_ACTIVITY_TIME_MAX)
        return hr_err_set(err, HR_EINVAL, "%s must be a time in ms (0..%lld)", name,
                          (long long)HR_ACTIVITY_TIME_MAX);
    *out = (int64_t)u;
    return HR_OK;
}

static int feed_query(hr_request *req, hr_feed_req *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    out->limit = 20;
    out->before_ms = INT64_MAX;
    out->after_ms = INT64_MIN;
    const char *v = hr_req_query(req, "limit");
    uint64_t u;
    if (v && (hr_parse_uint(v, &u) != HR_OK || u < 1 || u > HR_FEED_PAGE_MAX))
        return hr_err_set(err, HR_EINVAL, "limit must be 1..%d", HR_FEED_PAGE_MAX);
    if (v) out->limit = (size_t)u;
    v = hr_req_query(req, "offset");
    if (v && (hr_parse_uint(v, &u) != HR_OK || u > HR_FEED_OFFSET_MAX))
        return hr_err_set(err, HR_EINVAL, "offset must be 0..%d", HR_FEED_OFFSET_MAX);
    if (v) out->offset = (size_t)u;
    int rc = query_time(req, "before", &out->before_ms, err);
    if (rc == HR_OK) rc = query_time(req, "after", &out->after_ms, err);
    out->cursor = hr_req_query(req, "cursor");
    /* own_reactions are the reader's: a user token names only its user. */
    v = hr_req_query(req, "reader");
    if (v && rc == HR_OK) {
        out->reader = hr_slice_str(v);
        if (!hr_ident_valid(out->reader)) return hr_err_set(err, HR_EINVAL, "reader must be an identifier");
        rc = hr_api_acts_as(req, out->reader, err);
    }
    return rc;
}

/* ---- Handlers ---- */

void hr_api_activity_create(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_activity in = {0};
    int64_t time_ms = 0;
    static const char *const fields[] = {"actor", "verb",       "object", "target",
                                         "time",  "foreign_id", "data",   NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) rc = hr_json_ident_field(body, "actor", true, &in.actor, &err);
    if (rc == HR_OK) rc = hr_json_ident_field(body, "verb", true, &in.verb, &err);
    if (rc == HR_OK) rc = hr_json_ident_field(body, "object", false, &in.object, &err);
    if (rc == HR_OK) rc = hr_json_ident_field(body, "target", false, &in.target, &err);
    if (rc == HR_OK) rc = hr_json_ident_field(body, "foreign_id", false, &in.foreign_id, &err);
    if (rc == HR_OK)
        rc = hr_json_int_field(body, "time", false, 1, HR_ACTIVITY_TIME_MAX, &time_ms, NULL, &err);
    if (rc == HR_OK) rc = data_field(req, body, &in.data, &err);
    if (rc == HR_OK) rc = hr_api_acts_as(req, in.actor, &err);
    in.time_ms = time_ms;
    hr_activity out;
    bool duplicate = false;
    if (rc == HR_OK)
        rc = hr_feeds_create(app->feeds, &in, hr_now_ms(), hr_req_arena(req), &out, &duplicate, &err);
    json_decref(body);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_activity(req, duplicate ? 200 : 201, &out, duplicate);
}

void hr_api_activity_get(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_activity x;
    int rc = hr_feeds_get(app->feeds, hr_req_param(req, "id"), hr_req_arena(req), &x, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_activity(req, 200, &x, false);
}

void hr_api_activity_update(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_slice object = {0}, data = {0};
    hr_activity cur, out;
    static const char *const fields[] = {"data", "object", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    bool has_object = rc == HR_OK && json_object_get(body, "object") != NULL;
    if (rc == HR_OK) rc = hr_json_ident_field(body, "object", false, &object, &err);
    if (rc == HR_OK) rc = data_field(req, body, &data, &err);
    if (rc == HR_OK) rc = hr_feeds_get(app->feeds, hr_req_param(req, "id"), hr_req_arena(req), &cur, &err);
    if (rc == HR_OK) rc = hr_api_acts_as(req, cur.actor, &err);
    if (rc == HR_OK)
        rc = hr_feeds_update(app->feeds, hr_req_param(req, "id"), has_object ? &object : NULL, data,
                             hr_req_arena(req), &out, &err);
    json_decref(body);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_activity(req, 200, &out, false);
}

void hr_api_activity_delete(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_activity cur;
    int rc = hr_feeds_get(app->feeds, hr_req_param(req, "id"), hr_req_arena(req), &cur, &err);
    if (rc == HR_OK) rc = hr_api_acts_as(req, cur.actor, &err);
    if (rc == HR_OK) rc = hr_feeds_delete(app->feeds, hr_req_param(req, "id"), hr_now_ms(), &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, json_pack("{s:b}", "deleted", 1));
}

static void feed(hr_request *req, hr_feed_kind kind, const char *param) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_feed_req fr;
    hr_feed_page page;
    bool enrich = false;
    int rc = feed_query(req, &fr, &err);
    if (rc == HR_OK) rc = enrich_query(req, &enrich, &err);
    /* A home timeline is read by its owner (the route lets no one else). */
    if (rc == HR_OK && kind == HR_FEED_TIMELINE) fr.reader = hr_req_param(req, param);
    if (rc == HR_OK)
        rc = hr_feeds_read(app->feeds, kind, hr_req_param(req, param), &fr, hr_now_ms(), hr_req_arena(req),
                           &page, &err);
    reply_read(req, rc, enrich, &page, &err);
}

void hr_api_user_feed(hr_request *req) {
    feed(req, HR_FEED_USER, "uid");
}
void hr_api_user_timeline(hr_request *req) {
    feed(req, HR_FEED_TIMELINE, "uid");
}
void hr_api_group_feed(hr_request *req) {
    feed(req, HR_FEED_GROUP, "gid");
}

void hr_api_activities_query(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_feed_req fr;
    hr_feed_page page;
    hr_activity filter = {0};
    bool enrich = false;
    int rc = feed_query(req, &fr, &err);
    if (rc == HR_OK) rc = enrich_query(req, &enrich, &err);
    const char *names[] = {"actor", "verb", "object", "target"};
    hr_slice *slots[] = {&filter.actor, &filter.verb, &filter.object, &filter.target};
    for (size_t i = 0; rc == HR_OK && i < 4; i++) {
        const char *v = hr_req_query(req, names[i]);
        if (v == NULL) continue;
        *slots[i] = hr_slice_str(v);
        if (!hr_ident_valid(*slots[i]))
            rc = hr_err_set(&err, HR_EINVAL, "%s must be an identifier (1..%d bytes of [A-Za-z0-9._:@~-])",
                            names[i], HR_IDENT_MAX);
    }
    if (rc == HR_OK)
        rc = hr_feeds_query(app->feeds, &filter, &fr, hr_now_ms(), hr_req_arena(req), &page, &err);
    reply_read(req, rc, enrich, &page, &err);
}
