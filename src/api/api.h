/* api.h — herald's HTTP resources: the route table and what handlers share.
 *
 * One file per resource (counters.c, ops.c, ...): each parses and validates
 * its input, calls core/, and renders JSON or text. Nothing here knows which
 * store is running. routes.c holds the one table that says, for every route,
 * who may call it. */
#ifndef HR_API_H
#define HR_API_H

#include <stddef.h>

#include "core/config.h"
#include "core/counters.h"
#include "core/fanout.h"
#include "core/feeds.h"
#include "core/graph.h"
#include "core/members.h"
#include "core/profiles.h"
#include "core/ratings.h"
#include "core/reactions.h"
#include "core/reading.h"
#include "core/stories.h"
#include "http/http.h"
#include "store/store.h"

/* What every handler reaches through hr_req_app(req). Borrowed pointers,
 * owned by main.c for the life of the server. */
typedef struct hr_app {
    hr_store *store;
    hr_counters *counters;
    const hr_config *config;
    hr_stories *stories;
    hr_ratings *ratings;
    hr_members *members;
    hr_graph *graph;
    hr_feeds *feeds;
    hr_reading *reading;
    hr_reactions *reactions;
    hr_profiles *profiles;
} hr_app;

/* The paging arguments of a list (stories.c): since (ms), limit (1..1000,
 * default 20) and cursor from the query string; HR_EINVAL naming the field.
 * out->cursor points into the request (valid until it is answered). */
int hr_api_list_query(hr_request *req, hr_list_req *out, hr_err *err);

/* The data member of body as compact JSON text in the request's arena
 * (absent or null: empty); over max bytes HR_ETOOBIG naming limit. */
int hr_api_data_field(hr_request *req, const json_t *body, size_t max, const char *limit, hr_slice *out,
                      hr_err *err);
/* HR_OK when the request may act as user: the admin, or user's own token;
 * else HR_EFORBIDDEN. */
int hr_api_acts_as(hr_request *req, hr_slice user, hr_err *err);
/* The whole routing table for these settings (*n receives its length):
 * the body limits of stories and activities follow story_content_max and
 * activity_data_max. The caller frees it. */
hr_route *hr_api_routes(const hr_config *cfg, size_t *n);

/* Handlers, by resource (registered in routes.c). */
void hr_api_counter_put(hr_request *req);
void hr_api_counter_get(hr_request *req);
void hr_api_counter_counts(hr_request *req);
void hr_api_counter_settings_put(hr_request *req);
void hr_api_counter_settings_get(hr_request *req);
void hr_api_member_put(hr_request *req);
void hr_api_member_get(hr_request *req);
void hr_api_story_create(hr_request *req);
void hr_api_story_add_url(hr_request *req);
void hr_api_story_get(hr_request *req);
void hr_api_story_find(hr_request *req);
void hr_api_stories_recent(hr_request *req);
void hr_api_rating_put(hr_request *req);
void hr_api_rating_get(hr_request *req);
void hr_api_ratings_by_subject(hr_request *req);
void hr_api_ratings_by_object(hr_request *req);
void hr_api_ratings_all(hr_request *req);
void hr_api_member_top_rated(hr_request *req);
void hr_api_member_unseen(hr_request *req);
void hr_api_follow(hr_request *req);
void hr_api_unfollow(hr_request *req);
void hr_api_follows_list(hr_request *req);
void hr_api_followers_list(hr_request *req);
void hr_api_friends_list(hr_request *req);
void hr_api_group_join(hr_request *req);
void hr_api_group_leave(hr_request *req);
void hr_api_group_members_list(hr_request *req);
void hr_api_user_groups_list(hr_request *req);
void hr_api_activity_create(hr_request *req);
void hr_api_activity_get(hr_request *req);
void hr_api_activity_update(hr_request *req);
void hr_api_activity_delete(hr_request *req);
void hr_api_activities_query(hr_request *req);
void hr_api_user_feed(hr_request *req);
void hr_api_user_timeline(hr_request *req);
void hr_api_group_feed(hr_request *req);
void hr_api_reading_site_put(hr_request *req);
void hr_api_reading_site_delete(hr_request *req);
void hr_api_reading_sites(hr_request *req);
void hr_api_reading_share_put(hr_request *req);
void hr_api_reading_share_get(hr_request *req);
void hr_api_reading_record(hr_request *req);
void hr_api_friends_reads(hr_request *req);
void hr_api_reading_popular(hr_request *req);
void hr_api_reading_trending(hr_request *req);
void hr_api_friends_popular(hr_request *req);
void hr_api_reaction_add(hr_request *req);
void hr_api_reactions_of_activity(hr_request *req);
void hr_api_reactions_of_user(hr_request *req);
void hr_api_reaction_delete(hr_request *req);
void hr_api_user_profile_put(hr_request *req);
void hr_api_user_profile_get(hr_request *req);
void hr_api_group_profile_put(hr_request *req);
void hr_api_group_profile_get(hr_request *req);
void hr_api_object_put(hr_request *req);
void hr_api_object_get(hr_request *req);
void hr_api_object_delete(hr_request *req);
void hr_api_healthz(hr_request *req);
void hr_api_metrics(hr_request *req);

#endif
