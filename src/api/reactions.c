/* reactions.c — likes, comments and other reactions (API.md "Reactions"). */
#include <string.h>

#include "api/api.h"
#include "api/json.h"
#include "api/json_out.h"
#include "common/clock.h"
#include "core/reactions.h"

static void reaction_write(hr_jw *w, const hr_reaction *x) {
    hr_jw_open(w, '{');
    hr_jw_key(w, "id");
    hr_jw_str(w, x->id);
    hr_jw_key(w, "activity_id");
    hr_jw_str(w, x->activity_id);
    hr_jw_key(w, "user");
    hr_jw_str(w, x->user);
    hr_jw_key(w, "kind");
    hr_jw_str(w, x->kind);
    hr_jw_key(w, "time");
    hr_jw_int(w, x->time_ms);
    if (x->data.len) {
        hr_jw_key(w, "data");
        hr_jw_raw(w, x->data);
    }
    hr_jw_close(w, '}');
}

static void reply_page(hr_request *req, const hr_reaction_page *page) {
    hr_buf out = HR_BUF_INIT;
    hr_jw w = hr_jw_start(&out);
    hr_jw_page_open(&w, "reactions");
    for (size_t i = 0; i < page->n; i++)
        reaction_write(&w, &page->items[i]);
    hr_jw_page_close(&w, page->next_cursor);
    hr_reply_json_text(req, 200, &out);
}

void hr_api_reaction_add(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_slice user, kind, data;
    static const char *const fields[] = {"user", "kind", "data", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) rc = hr_json_ident_field(body, "user", true, &user, &err);
    if (rc == HR_OK) rc = hr_json_ident_field(body, "kind", true, &kind, &err);
    if (rc == HR_OK)
        rc = hr_api_data_field(req, body, HR_REACTION_DATA_MAX, "a reaction's data", &data, &err);
    if (rc == HR_OK) rc = hr_api_acts_as(req, user, &err);
    hr_reaction out;
    bool existing = false;
    if (rc == HR_OK)
        rc = hr_reactions_add(app->reactions, hr_req_param(req, "id"), user, kind, data, hr_now_ms(),
                              hr_req_arena(req), &out, &existing, &err);
    json_decref(body);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_buf text = HR_BUF_INIT;
    hr_jw w = hr_jw_start(&text);
    reaction_write(&w, &out);
    hr_reply_json_text(req, existing ? 200 : 201, &text);
}

void hr_api_reaction_delete(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_reaction x;
    hr_slice id = hr_req_param(req, "id");
    int rc = hr_reactions_get(app->reactions, id, hr_req_arena(req), &x, &err);
    if (rc == HR_OK) rc = hr_api_acts_as(req, x.user, &err);
    if (rc == HR_OK) rc = hr_reactions_delete(app->reactions, id, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, json_pack("{s:b}", "deleted", 1));
}

/* The list's query: kind (optional), then since, limit and cursor. */
static int list_query(hr_request *req, hr_slice *kind, hr_list_req *lr, hr_err *err) {
    const char *v = hr_req_query(req, "kind");
    *kind = v ? hr_slice_str(v) : hr_slice_of(NULL, 0);
    return hr_api_list_query(req, lr, err);
}

/* A list of an activity's reactions, or (of_user) a user's. */
static void list(hr_request *req, bool of_user) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_slice kind;
    hr_list_req lr;
    hr_reaction_page page;
    hr_arena *a = hr_req_arena(req);
    int rc = list_query(req, &kind, &lr, &err);
    if (rc == HR_OK && of_user)
        rc = hr_reactions_of_user(app->reactions, hr_req_param(req, "uid"), kind, &lr, hr_now_ms(), a, &page,
                                  &err);
    else if (rc == HR_OK)
        rc = hr_reactions_of_activity(app->reactions, hr_req_param(req, "id"), kind, &lr, a, &page, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_page(req, &page);
}

void hr_api_reactions_of_activity(hr_request *req) {
    list(req, false);
}

void hr_api_reactions_of_user(hr_request *req) {
    list(req, true);
}
