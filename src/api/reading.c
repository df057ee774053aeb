/* reading.c — the social reading resources (API.md "Social reading").
 *
 *   PUT    /api/v1/reading/sites/{domain}   (admin) 200 {"site", "selected": true, "new"}
 *   DELETE /api/v1/reading/sites/{domain}   (admin) 200 {"site", "selected": false, "was_selected"}
 *   GET    /api/v1/reading/sites            {"sites": [...]}, sorted
 *   PUT    /api/v1/users/{uid}/reading      {"share": bool} -> 200 {"share"}; false deletes
 *                                           uid's recorded reads (core/reading.h)
 *   GET    /api/v1/users/{uid}/reading      {"share"}
 *   POST   /api/v1/users/{uid}/reads        {"url", "time"} -> 202 {"recorded": true, "url"}
 *                                           or 200 {"recorded": false, "reason"}
 *   POST   /api/v1/users/{uid}/friends-reads  {"urls": [...], "friends": [...]} ->
 *                                           {"urls": {"<as sent>": {"url", "friends", "readers"}}}
 *   GET    /api/v1/reading/popular          ?window=1h|1d|7d&limit= {"window", "urls": [{"url", "readers"}]}
 *   GET    /api/v1/reading/trending         ?limit= {"urls": [{"url", "readers", "baseline", "score"}]}
 *   GET    /api/v1/users/{uid}/friends-popular  ?window=&limit= {"window", "urls": [{"url",
 *                                           "friends", "readers"}]}
 *
 * Everything under /users/{uid} acts for uid: the route table lets only
 * that user's token or the admin call it, so a user asks only which of ITS
 * friends read what. Only the admin may pass "friends". window defaults to
 * 1d, limit to 20 (1..1000). */
#include <math.h>

#include "api/api.h"
#include "api/json.h"
#include "api/json_out.h"
#include "common/clock.h"

static json_t *slice_json(hr_slice s) {
    return json_stringn(s.ptr, s.len);
}

static json_t *ids_json(const hr_slice *ids, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, slice_json(ids[i]));
    return a;
}

/* ---- Sites ---------------------------------------------------------------------- */

static void site_change(hr_request *req, bool select) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_slice site;
    bool flag = false;
    hr_slice domain = hr_req_param(req, "domain");
    int rc =
        select ? hr_reading_site_add(app->reading, domain, hr_now_ms(), hr_req_arena(req), &site, &flag, &err)
               : hr_reading_site_remove(app->reading, domain, hr_req_arena(req), &site, &flag, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200,
                  json_pack("{s:o,s:b,s:b}", "site", slice_json(site), "selected", select,
                            select ? "new" : "was_selected", flag));
}

void hr_api_reading_site_put(hr_request *req) {
    site_change(req, true);
}
void hr_api_reading_site_delete(hr_request *req) {
    site_change(req, false);
}

void hr_api_reading_sites(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_slice *sites;
    size_t n;
    int rc = hr_reading_sites(app->reading, hr_req_arena(req), &sites, &n, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, json_pack("{s:o}", "sites", ids_json(sites, n)));
}

/* ---- Sharing ------------------------------------------------------------------ */

void hr_api_reading_share_put(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    static const char *const fields[] = {"share", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    json_t *v = rc == HR_OK ? json_object_get(body, "share") : NULL;
    if (rc == HR_OK && !json_is_boolean(v))
        rc = hr_err_set(&err, HR_EINVAL, "share is required: true or false");
    bool share = json_is_true(v);
    json_decref(body);
    if (rc == HR_OK)
        rc = hr_reading_set_share(app->reading, hr_req_param(req, "uid"), share, hr_now_ms(), &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, json_pack("{s:b}", "share", share));
}

void hr_api_reading_share_get(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    bool share = false;
    int rc = hr_reading_share(app->reading, hr_req_param(req, "uid"), &share, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, json_pack("{s:b}", "share", share));
}

/* ---- Reads ---------------------------------------------------------------------- */

void hr_api_reading_record(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_slice url = {0};
    int64_t now = hr_now_ms(), time_ms = now;
    static const char *const fields[] = {"url", "time", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) rc = hr_json_string_field(body, "url", true, &url, &err);
    if (rc == HR_OK) rc = hr_json_int_field(body, "time", false, 0, HR_TIME_MAX_MS, &time_ms, NULL, &err);
    hr_read_outcome out = HR_READ_RECORDED;
    if (rc == HR_OK)
        rc = hr_reading_record(app->reading, hr_req_param(req, "uid"), url, time_ms, now, &out, &err);
    json_decref(body); /* url pointed into it */
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    if (out == HR_READ_RECORDED)
        hr_reply_json(req, 202, json_pack("{s:b}", "recorded", true));
    else
        hr_reply_json(req, 200, json_pack("{s:b,s:s}", "recorded", false, "reason", hr_read_reason(out)));
}

/* "urls": 1..HR_READING_URLS_MAX strings, pointing into obj. */
static int url_array(const json_t *obj, hr_arena *a, hr_slice **urls, size_t *n, hr_err *err) {
    json_t *v = json_object_get(obj, "urls");
    if (v == NULL) return hr_err_set(err, HR_EINVAL, "urls is required");
    if (!json_is_array(v)) return hr_err_set(err, HR_EINVAL, "urls must be an array of URLs");
    *n = json_array_size(v);
    if (*n < 1 || *n > HR_READING_URLS_MAX)
        return hr_err_set(err, HR_EINVAL, "urls must hold 1..%d URLs (got %zu)", HR_READING_URLS_MAX, *n);
    *urls = hr_arena_alloc(a, *n * sizeof **urls);
    for (size_t i = 0; i < *n; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_string(e)) return hr_err_set(err, HR_EINVAL, "urls[%zu] must be a string", i);
        (*urls)[i] = hr_slice_of(json_string_value(e), json_string_length(e));
    }
    return HR_OK;
}

/* "friends" (admin only): 0..HR_READING_FRIENDS_MAX identifiers. */
static int friend_array(hr_request *req, const json_t *obj, hr_slice **friends, size_t *n, hr_err *err) {
    json_t *v = json_object_get(obj, "friends");
    *friends = NULL;
    *n = 0;
    if (v == NULL) return HR_OK;
    if (!hr_req_principal(req)->admin)
        return hr_err_set(err, HR_EFORBIDDEN, "only the admin key may pass friends");
    if (json_is_array(v) && json_array_size(v) == 0) {
        *friends = hr_arena_alloc(hr_req_arena(req), sizeof **friends); /* none, not "the graph's" */
        return HR_OK;
    }
    return hr_json_ident_array(obj, "friends", HR_READING_FRIENDS_MAX, hr_req_arena(req), friends, n, err);
}

/* Whether urls[i] is the first of its bytes among urls[0..i]: the answer
 * has one key per URL as sent (n <= HR_READING_URLS_MAX, so quadratic is a
 * few thousand comparisons at most). */
static bool first_of_its_kind(const hr_slice *urls, size_t i) {
    for (size_t j = 0; j < i; j++)
        if (hr_slice_eq(urls[j], urls[i])) return false;
    return true;
}

/* {"urls":{URL as sent:{"url":canonical,"friends":[...],"readers":n},...}},
 * written directly (api/json_out.h): a worst-case answer (5,000 friends who
 * read much) holds ~170,000 friend ids, 1.3 MB, and building it as jansson
 * objects was a large share of the server's CPU on that call. */
static void reply_friends_reads(hr_request *req, const hr_slice *urls, const hr_url_reads *out, size_t n) {
    hr_buf text = HR_BUF_INIT;
    hr_jw w = hr_jw_start(&text);
    hr_jw_open(&w, '{');
    hr_jw_key(&w, "urls");
    hr_jw_open(&w, '{');
    for (size_t i = 0; i < n; i++) {
        if (!first_of_its_kind(urls, i)) continue;
        hr_jw_key_str(&w, urls[i]);
        hr_jw_open(&w, '{');
        hr_jw_key(&w, "url");
        hr_jw_str(&w, out[i].url);
        hr_jw_key(&w, "friends");
        hr_jw_open(&w, '[');
        for (size_t f = 0; f < out[i].n_friends; f++)
            hr_jw_str(&w, out[i].friends[f]);
        hr_jw_close(&w, ']');
        hr_jw_key(&w, "readers");
        hr_jw_int(&w, out[i].readers);
        hr_jw_close(&w, '}');
    }
    hr_jw_close(&w, '}');
    hr_jw_close(&w, '}');
    hr_reply_json_text(req, 200, &text);
}

void hr_api_friends_reads(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_arena *a = hr_req_arena(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_slice *urls = NULL, *friends = NULL;
    size_t n = 0, nf = 0;
    static const char *const fields[] = {"urls", "friends", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) rc = url_array(body, a, &urls, &n, &err);
    if (rc == HR_OK) rc = friend_array(req, body, &friends, &nf, &err);
    hr_url_reads *out = rc == HR_OK ? hr_arena_alloc(a, n * sizeof *out) : NULL;
    if (rc == HR_OK)
        rc = hr_reading_friends_reads(app->reading, hr_req_param(req, "uid"), friends, nf, urls, n,
                                      hr_now_ms(), a, out, NULL, &err);
    if (rc == HR_OK)
        reply_friends_reads(req, urls, out, n);
    else
        hr_reply_error(req, rc, &err);
    json_decref(body); /* after the reply: urls point into it */
}

/* ---- Lists ------------------------------------------------------------------------ */

/* ?window= (default 1d) and ?limit= (default 20). */
static int list_query(hr_request *req, bool windowed, hr_window *w, size_t *limit, hr_err *err) {
    hr_list_req lr;
    int rc = hr_api_list_query(req, &lr, err);
    *limit = lr.limit;
    *w = HR_WINDOW_1D;
    const char *text = hr_req_query(req, "window");
    if (rc == HR_OK && windowed && text && hr_window_parse(text, w) != HR_OK)
        rc = hr_err_set(err, HR_EINVAL, "window must be 1h, 1d or 7d");
    return rc;
}

static json_t *trend_items(const hr_trend_item *it, size_t n, bool trending) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:o,s:I}", "url", slice_json(it[i].url), "readers",
                              (json_int_t)llround(it[i].readers));
        if (trending) {
            json_object_set_new(o, "baseline", json_real(it[i].baseline));
            json_object_set_new(o, "score", json_real(it[i].score));
        }
        json_array_append_new(a, o);
    }
    return a;
}

static void trends(hr_request *req, bool trending) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_window w;
    size_t limit, n = 0;
    hr_trend_item *it = NULL;
    hr_trends *t = hr_reading_trends(app->reading);
    int rc = list_query(req, !trending, &w, &limit, &err);
    if (rc == HR_OK)
        rc = trending ? hr_trends_trending(t, limit, hr_now_ms(), hr_req_arena(req), &it, &n, &err)
                      : hr_trends_popular(t, w, limit, hr_now_ms(), hr_req_arena(req), &it, &n, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    json_t *body = json_pack("{s:o}", "urls", trend_items(it, n, trending));
    json_object_set_new(body, "window", json_string(trending ? "1h" : hr_window_name(w)));
    hr_reply_json(req, 200, body);
}

void hr_api_reading_popular(hr_request *req) {
    trends(req, false);
}
void hr_api_reading_trending(hr_request *req) {
    trends(req, true);
}

void hr_api_friends_popular(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_window w;
    size_t limit, n = 0;
    hr_url_reads *it = NULL;
    int rc = list_query(req, true, &w, &limit, &err);
    if (rc == HR_OK)
        rc = hr_reading_friends_popular(app->reading, hr_req_param(req, "uid"), w, limit, hr_now_ms(),
                                        hr_req_arena(req), &it, &n, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    json_t *urls = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(urls, json_pack("{s:o,s:o,s:I}", "url", slice_json(it[i].url), "friends",
                                              ids_json(it[i].friends, it[i].n_friends), "readers",
                                              (json_int_t)it[i].readers));
    hr_reply_json(req, 200, json_pack("{s:s,s:o}", "window", hr_window_name(w), "urls", urls));
}
