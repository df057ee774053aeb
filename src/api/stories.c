/* stories.c — the story resource and the members' story lists (API.md
 * "Stories and ratings").
 *
 *   POST /api/v1/stories                 {"url", "content", "time"} -> 201 the story;
 *                                        a variant of a known story's URL -> 200 that
 *                                        story with "duplicate": true
 *   POST /api/v1/stories/{id}/urls       {"url", "preferred"} -> 200 the story, "added"
 *   GET  /api/v1/stories/{id}            the story with its URLs and content
 *   GET  /api/v1/stories?url=            the same, found by any variant of any URL
 *   GET  /api/v1/stories/recent          ?since=&limit=&cursor= newest first
 *   GET  /api/v1/members/{s}/top-rated   ?since=&limit=&cursor=
 *   GET  /api/v1/members/{s}/unseen      ?rank=top|hot&limit=&cursor=
 *
 * Story lists answer {"stories": [{"id", "url", "time", "score", ...}],
 * "next_cursor"}; only single-story reads carry "content" and "urls".
 * Anyone with a valid token may post stories and add URLs: feeds and
 * recommenders are the usual posters, and a story is public data. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/json.h"
#include "api/json_out.h"
#include "common/clock.h"
#include "common/log.h"

/* ---- Shared with ratings.c: paging arguments ---- */

static int query_int(hr_request *req, const char *name, int64_t min, int64_t max, bool *present, int64_t *out,
                     hr_err *err) {
    const char *v = hr_req_query(req, name);
    *present = v != NULL;
    if (v == NULL) return HR_OK;
    uint64_t u;
    if (hr_parse_uint(v, &u) != HR_OK || u < (uint64_t)min || u > (uint64_t)max)
        return hr_err_set(err, HR_EINVAL, "%s must be an integer %lld..%lld", name, (long long)min,
                          (long long)max);
    *out = (int64_t)u;
    return HR_OK;
}

int hr_api_list_query(hr_request *req, hr_list_req *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    bool has_limit;
    int64_t limit = 20;
    int rc = query_int(req, "since", 0, HR_TIME_MAX_MS, &out->has_since, &out->since_ms, err);
    if (rc == HR_OK) rc = query_int(req, "limit", 1, HR_LIST_MAX, &has_limit, &limit, err);
    out->limit = (size_t)limit;
    out->cursor = hr_req_query(req, "cursor");
    return rc;
}

/* ---- Rendering ---- */

static json_t *url_json(hr_slice url) {
    return json_stringn(url.ptr, url.len);
}

/* A story as a list shows it; single-story reads add urls and content. */
static json_t *story_json(const hr_story *st, bool with_hot) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(st->id));
    json_object_set_new(o, "url", url_json(st->url));
    json_object_set_new(o, "time", json_integer(st->time_ms));
    json_object_set_new(o, "score", json_integer(st->score));
    if (with_hot) json_object_set_new(o, "hot", json_real(st->hot));
    if (st->has_rating) json_object_set_new(o, "rating", json_integer(st->rating));
    return o;
}

static json_t *story_full_json(const hr_story *st) {
    json_t *o = story_json(st, true);
    json_t *urls = json_array();
    for (size_t i = 0; i < st->n_urls; i++)
        json_array_append_new(urls, url_json(st->urls[i]));
    json_object_set_new(o, "urls", urls);
    json_object_set_new(o, "content_length", json_integer((json_int_t)st->content_len));
    if (st->has_content) {
        /* Content arrived as a JSON string, so it is UTF-8; anything else
         * (written below the API) cannot be shown as a JSON string. */
        json_t *c = json_stringn(st->content.ptr, st->content.len);
        if (c == NULL) hr_warn("story %s: content is not UTF-8", st->id);
        json_object_set_new(o, "content", c ? c : json_string(""));
    }
    return o;
}

/* A page of stories, written directly (api/json_out.h): the same fields as
 * story_json, without jansson objects, which showed in the server's CPU on
 * an unseen page. */
static void reply_page(hr_request *req, const hr_story_page *page, bool with_hot) {
    hr_buf out = HR_BUF_INIT;
    hr_buf_reserve(&out, 64 + page->n * 160);
    hr_jw w = hr_jw_start(&out);
    hr_jw_page_open(&w, "stories");
    for (size_t i = 0; i < page->n; i++) {
        const hr_story *st = &page->items[i];
        hr_jw_open(&w, '{');
        hr_jw_key(&w, "id");
        hr_jw_str(&w, hr_slice_str(st->id));
        hr_jw_key(&w, "url");
        hr_jw_str(&w, st->url);
        hr_jw_key(&w, "time");
        hr_jw_int(&w, st->time_ms);
        hr_jw_key(&w, "score");
        hr_jw_int(&w, st->score);
        if (with_hot) {
            hr_jw_key(&w, "hot");
            hr_jw_real(&w, st->hot);
        }
        if (st->has_rating) {
            hr_jw_key(&w, "rating");
            hr_jw_int(&w, st->rating);
        }
        hr_jw_close(&w, '}');
    }
    hr_jw_page_close(&w, page->next_cursor);
    hr_reply_json_text(req, 200, &out);
}

/* ---- Handlers ---- */

void hr_api_story_create(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_slice url = {0}, content = {"", 0};
    int64_t time_ms = hr_now_ms();
    static const char *const fields[] = {"url", "content", "time", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) rc = hr_json_string_field(body, "url", true, &url, &err);
    if (rc == HR_OK) rc = hr_json_string_field(body, "content", false, &content, &err);
    if (rc == HR_OK) rc = hr_json_int_field(body, "time", false, 0, HR_TIME_MAX_MS, &time_ms, NULL, &err);
    hr_story st;
    bool duplicate = false;
    if (rc == HR_OK)
        rc = hr_stories_create(app->stories, url, content, time_ms, hr_req_arena(req), &st, &duplicate, &err);
    json_decref(body);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    json_t *o = story_json(&st, true);
    json_object_set_new(o, "duplicate", json_boolean(duplicate));
    hr_reply_json(req, duplicate ? 200 : 201, o);
}

void hr_api_story_add_url(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_slice url = {0};
    bool preferred = false;
    static const char *const fields[] = {"url", "preferred", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) rc = hr_json_string_field(body, "url", true, &url, &err);
    if (rc == HR_OK) {
        json_t *p = json_object_get(body, "preferred");
        if (p && !json_is_null(p) && !json_is_boolean(p))
            rc = hr_err_set(&err, HR_EINVAL, "preferred must be true or false");
        preferred = p && json_is_true(p);
    }
    hr_story st;
    bool added = false;
    if (rc == HR_OK)
        rc = hr_stories_add_url(app->stories, hr_req_param(req, "id"), url, preferred, hr_req_arena(req), &st,
                                &added, &err);
    json_decref(body);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    json_t *o = story_full_json(&st);
    json_object_set_new(o, "added", json_boolean(added));
    hr_reply_json(req, 200, o);
}

void hr_api_story_get(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_story st;
    int rc = hr_stories_get(app->stories, hr_req_param(req, "id"), true, hr_req_arena(req), &st, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, story_full_json(&st));
}

void hr_api_story_find(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    const char *url = hr_req_query(req, "url");
    if (url == NULL) return hr_reply_problem(req, 400, "url is required (GET /api/v1/stories?url=...)");
    hr_story st;
    int rc = hr_stories_find(app->stories, hr_slice_str(url), true, hr_req_arena(req), &st, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, story_full_json(&st));
}

void hr_api_stories_recent(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_list_req lr;
    hr_story_page page;
    int rc = hr_api_list_query(req, &lr, &err);
    if (rc == HR_OK) rc = hr_stories_recent(app->stories, &lr, hr_req_arena(req), &page, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_page(req, &page, false);
}

void hr_api_member_top_rated(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_list_req lr;
    hr_story_page page;
    int rc = hr_api_list_query(req, &lr, &err);
    if (rc == HR_OK)
        rc = hr_ratings_top_rated(app->ratings, hr_req_param(req, "subject"), &lr, hr_req_arena(req), &page,
                                  &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_page(req, &page, false);
}

void hr_api_member_unseen(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_list_req lr;
    hr_story_page page;
    hr_rank_kind kind = HR_RANK_TOP;
    const char *rank = hr_req_query(req, "rank");
    if (rank && strcmp(rank, "hot") == 0)
        kind = HR_RANK_HOT;
    else if (rank && strcmp(rank, "top") != 0)
        return hr_reply_problem(req, 400, "rank must be top or hot");
    int rc = hr_api_list_query(req, &lr, &err);
    if (rc == HR_OK)
        rc = hr_ratings_unseen(app->ratings, hr_req_param(req, "subject"), kind, &lr, hr_req_arena(req),
                               &page, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_page(req, &page, kind == HR_RANK_HOT);
}
