/* graph.c — the social graph resource (API.md "Social graph").
 *
 *   PUT    /api/v1/users/{uid}/follows/{target}   200 {"following": true, "new": bool}
 *   DELETE /api/v1/users/{uid}/follows/{target}   200 {"following": false, "was_following": bool}
 *   GET    /api/v1/users/{uid}/follows | followers | friends   {"users": [...], "next_cursor"}
 *   PUT    /api/v1/groups/{gid}/members/{uid}     200 {"member": true, "new": bool}
 *   DELETE /api/v1/groups/{gid}/members/{uid}     200 {"member": false, "was_member": bool}
 *   GET    /api/v1/groups/{gid}/members           {"users": [...], "next_cursor"}
 *   GET    /api/v1/users/{uid}/groups             {"groups": [...], "next_cursor"}
 *
 * Writes act for {uid} (the route table lets only that user or the admin
 * call them); the graph itself is public, as on most social networks. A
 * write is one call to core, hr_feeds_relate (core/feeds.h), which makes
 * the change with its timeline side effects (backfill on follow and join,
 * removal on unfollow and leave). */
#include "api/api.h"
#include "api/json.h"
#include "common/clock.h"

static void reply_ids(hr_request *req, const char *field, const hr_id_page *page) {
    json_t *ids = json_array();
    for (size_t i = 0; i < page->n; i++)
        json_array_append_new(ids, json_stringn(page->ids[i].ptr, page->ids[i].len));
    json_t *body = json_object();
    json_object_set_new(body, field, ids);
    if (page->next_cursor) json_object_set_new(body, "next_cursor", json_string(page->next_cursor));
    hr_reply_json(req, 200, body);
}

static void list(hr_request *req, hr_graph_set set, const char *param, const char *field) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_list_req lr;
    hr_id_page page;
    int rc = hr_api_list_query(req, &lr, &err);
    if (rc == HR_OK)
        rc = hr_graph_list(app->graph, set, hr_req_param(req, param), &lr, hr_req_arena(req), &page, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_ids(req, field, &page);
}

void hr_api_follows_list(hr_request *req) {
    list(req, HR_GRAPH_FOLLOWS, "uid", "users");
}
void hr_api_followers_list(hr_request *req) {
    list(req, HR_GRAPH_FOLLOWERS, "uid", "users");
}
void hr_api_friends_list(hr_request *req) {
    list(req, HR_GRAPH_FRIENDS, "uid", "users");
}
void hr_api_user_groups_list(hr_request *req) {
    list(req, HR_GRAPH_GROUPS, "uid", "groups");
}
void hr_api_group_members_list(hr_request *req) {
    list(req, HR_GRAPH_MEMBERS, "gid", "users");
}

/* One graph write, with its timeline side effects (core/feeds.h). */
typedef enum { FOLLOW, UNFOLLOW, JOIN, LEAVE } graph_change;

static void change(hr_request *req, graph_change what) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    bool adds = what == FOLLOW || what == JOIN;
    bool groups = what == JOIN || what == LEAVE;
    hr_slice uid = hr_req_param(req, "uid");
    hr_slice other = groups ? hr_req_param(req, "gid") : hr_req_param(req, "target");
    bool flag = false;
    int rc = hr_feeds_relate(app->feeds, uid, groups, other, adds, hr_now_ms(), &flag, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    const char *state = groups ? "member" : "following";
    const char *before = adds ? "new" : groups ? "was_member" : "was_following";
    hr_reply_json(req, 200, json_pack("{s:b,s:b}", state, adds, before, flag));
}

void hr_api_follow(hr_request *req) {
    change(req, FOLLOW);
}
void hr_api_unfollow(hr_request *req) {
    change(req, UNFOLLOW);
}
void hr_api_group_join(hr_request *req) {
    change(req, JOIN);
}
void hr_api_group_leave(hr_request *req) {
    change(req, LEAVE);
}
