/* ratings.c — the rating resource (API.md "Stories and ratings").
 *
 *   PUT /api/v1/ratings/{subject}/{object}  {"score": -1|0|1, "time": ms} -> 200
 *       {"subject", "object", "score", "time", "applied", "story_score"};
 *       the latest rating by time wins (an older one answers the stored
 *       rating with "applied": false). Only the subject itself (or the
 *       admin, for feeds and recommenders) may rate as the subject.
 *   GET /api/v1/ratings/{subject}/{object}  that rating
 *   GET /api/v1/ratings/{subject}           ?since=&limit=&cursor= newest first
 *   GET /api/v1/stories/{id}/ratings        the same for a story
 *   GET /api/v1/ratings                     all ratings by date
 *
 * Rating lists answer {"ratings": [{"subject", "object", "score", "time"}],
 * "next_cursor"}. Ratings are public (see core/ratings.h). */
#include "api/api.h"
#include "api/json.h"
#include "common/clock.h"

static json_t *rating_json(const hr_rating *r) {
    return json_pack("{s:s%,s:s%,s:i,s:I}", "subject", r->subject.ptr, r->subject.len, "object",
                     r->object.ptr, r->object.len, "score", r->score, "time", (json_int_t)r->time_ms);
}

static void reply_page(hr_request *req, const hr_rating_page *page) {
    json_t *items = json_array();
    for (size_t i = 0; i < page->n; i++)
        json_array_append_new(items, rating_json(&page->items[i]));
    json_t *body = json_object();
    json_object_set_new(body, "ratings", items);
    if (page->next_cursor) json_object_set_new(body, "next_cursor", json_string(page->next_cursor));
    hr_reply_json(req, 200, body);
}

void hr_api_rating_put(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    int64_t score = 0, time_ms = hr_now_ms();
    static const char *const fields[] = {"score", "time", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) rc = hr_json_int_field(body, "score", true, -1, 1, &score, NULL, &err);
    if (rc == HR_OK) rc = hr_json_int_field(body, "time", false, 0, HR_TIME_MAX_MS, &time_ms, NULL, &err);
    json_decref(body);
    hr_rating r;
    bool applied = false;
    int64_t story_score = 0;
    if (rc == HR_OK)
        rc = hr_ratings_put(app->ratings, hr_req_param(req, "subject"), hr_req_param(req, "object"),
                            (int)score, time_ms, hr_req_arena(req), &r, &applied, &story_score, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    json_t *o = rating_json(&r);
    json_object_set_new(o, "applied", json_boolean(applied));
    json_object_set_new(o, "story_score", json_integer(story_score));
    hr_reply_json(req, 200, o);
}

void hr_api_rating_get(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_rating r;
    int rc = hr_ratings_get(app->ratings, hr_req_param(req, "subject"), hr_req_param(req, "object"),
                            hr_req_arena(req), &r, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, rating_json(&r));
}

void hr_api_ratings_by_subject(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_list_req lr;
    hr_rating_page page;
    int rc = hr_api_list_query(req, &lr, &err);
    if (rc == HR_OK)
        rc = hr_ratings_by_subject(app->ratings, hr_req_param(req, "subject"), &lr, hr_req_arena(req), &page,
                                   &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_page(req, &page);
}

void hr_api_ratings_by_object(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_list_req lr;
    hr_rating_page page;
    int rc = hr_api_list_query(req, &lr, &err);
    if (rc == HR_OK)
        rc = hr_ratings_by_object(app->ratings, hr_req_param(req, "id"), &lr, hr_req_arena(req), &page, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_page(req, &page);
}

void hr_api_ratings_all(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_list_req lr;
    hr_rating_page page;
    int rc = hr_api_list_query(req, &lr, &err);
    if (rc == HR_OK) rc = hr_ratings_all(app->ratings, &lr, hr_req_arena(req), &page, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_page(req, &page);
}
