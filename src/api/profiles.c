/* profiles.c — users' and groups' profiles and application objects (API.md
 * "Profiles, objects and enrichment"). Who may write is in routes.c. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/json.h"

static void put(hr_request *req, hr_profile_kind kind, const char *param) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    char *text = rc == HR_OK ? json_dumps(body, JSON_COMPACT) : NULL;
    if (rc == HR_OK && text == NULL) rc = hr_err_set(&err, HR_EINVAL, "the body cannot be encoded");
    if (rc == HR_OK)
        rc = hr_profiles_put(app->profiles, kind, hr_req_param(req, param), hr_slice_str(text), &err);
    if (rc == HR_OK) {
        hr_buf out = HR_BUF_INIT;
        hr_buf_append_str(&out, text);
        hr_reply_json_text(req, 200, &out);
    }
    free(text);
    json_decref(body);
    if (rc != HR_OK) hr_reply_error(req, rc, &err);
}

static void get(hr_request *req, hr_profile_kind kind, const char *param) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_slice json;
    int rc = hr_profiles_get(app->profiles, kind, hr_req_param(req, param), hr_req_arena(req), &json, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_buf out = HR_BUF_INIT;
    hr_buf_append_slice(&out, json);
    hr_reply_json_text(req, 200, &out);
}

void hr_api_user_profile_put(hr_request *req) {
    put(req, HR_PROFILE_USER, "uid");
}
void hr_api_user_profile_get(hr_request *req) {
    get(req, HR_PROFILE_USER, "uid");
}
void hr_api_group_profile_put(hr_request *req) {
    put(req, HR_PROFILE_GROUP, "gid");
}
void hr_api_group_profile_get(hr_request *req) {
    get(req, HR_PROFILE_GROUP, "gid");
}
void hr_api_object_put(hr_request *req) {
    put(req, HR_PROFILE_OBJECT, "oid");
}
void hr_api_object_get(hr_request *req) {
    get(req, HR_PROFILE_OBJECT, "oid");
}

void hr_api_object_delete(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    int rc = hr_profiles_delete(app->profiles, HR_PROFILE_OBJECT, hr_req_param(req, "oid"), &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, json_pack("{s:b}", "deleted", 1));
}
