/* members.c — the member resource (API.md "Stories and ratings").
 *
 *   PUT /api/v1/members/{id}  {"url": ..., "score": n} -> 200 {"id", "url", "score"}
 *       (the URL canonicalised; score an integer, default 0; only the member
 *       itself or the admin)
 *   GET /api/v1/members/{id}  the same, 404 if unknown */
#include "api/api.h"
#include "api/json.h"

static json_t *member_json(const hr_member *m) {
    return json_pack("{s:s%,s:s%,s:I}", "id", m->id.ptr, m->id.len, "url", m->url.ptr, m->url.len, "score",
                     (json_int_t)m->score);
}

void hr_api_member_put(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    int64_t score = 0;
    hr_slice url = {0};
    static const char *const fields[] = {"url", "score", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) {
        json_t *u = json_object_get(body, "url");
        if (u == NULL || json_is_null(u))
            rc = hr_err_set(&err, HR_EINVAL, "url is required");
        else if (!json_is_string(u))
            rc = hr_err_set(&err, HR_EINVAL, "url must be a string");
        else
            url = hr_slice_of(json_string_value(u), json_string_length(u));
    }
    if (rc == HR_OK)
        rc = hr_json_int_field(body, "score", false, -HR_MEMBER_SCORE_MAX, HR_MEMBER_SCORE_MAX, &score, NULL,
                               &err);
    hr_member m;
    if (rc == HR_OK)
        rc = hr_members_put(app->members, hr_req_param(req, "id"), url, score, hr_req_arena(req), &m, &err);
    json_decref(body);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, member_json(&m));
}

void hr_api_member_get(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_member m;
    int rc = hr_members_get(app->members, hr_req_param(req, "id"), hr_req_arena(req), &m, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, member_json(&m));
}
