/* routes.c — every route of the API in one table: method, path, handler, who
 * may call it (checked by the transport before the handler runs), and the
 * body limit where it differs from the server's. Keep it in the order of
 * API.md. */
#include <string.h>

#include "api/api.h"
#include "common/alloc.h"

/* A counter PUT's body is one token: no reason to accept a megabyte. */
#define TOKEN_BODY_MAX 4096
/* A story's content (story_content_max) and an activity's data
 * (activity_data_max) arrive as JSON strings, which escaping ("\u0001") can
 * make up to 6x longer, next to a few small fields: their routes' limits
 * follow those settings (hr_api_routes), never below the server's default.
 * Content or data over its setting is refused by the handler (413). */
#define ESCAPED_MAX(setting) (6 * (size_t)(setting) + 65536)
#define STORY_BODY_MAX 1    /* placeholder: hr_api_routes sets it */
#define ACTIVITY_BODY_MAX 2 /* placeholder: hr_api_routes sets it */
/* Ratings, members and URLs are small JSON objects. */
#define SMALL_BODY_MAX 16384
/* Profiles (4 KiB) and objects (16 KiB) are limited as compact JSON, which
 * the sent text may exceed by its spaces and escapes. */
#define PROFILE_BODY_MAX (6 * 16384 + 4096)
/* friends-reads: 100 URLs of up to 2 KiB (escaped up to 6x) and, from the
 * admin, 5,000 friend ids of up to 128 bytes. */
#define READS_BODY_MAX (2u << 20)

static const hr_route routes[] = {
    /* Unique counters */
    {"PUT", "/api/v1/counter/{object}", hr_api_counter_put, HR_ACCESS_ANY, NULL, TOKEN_BODY_MAX},
    {"GET", "/api/v1/counter/{object}", hr_api_counter_get, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/counters/{counter}/{object}", hr_api_counter_put, HR_ACCESS_ANY, NULL, TOKEN_BODY_MAX},
    {"GET", "/api/v1/counters/{counter}/{object}", hr_api_counter_get, HR_ACCESS_ANY, NULL, 0},
    {"POST", "/api/v1/counters/{counter}/counts", hr_api_counter_counts, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/counters/{counter}", hr_api_counter_settings_put, HR_ACCESS_ADMIN, NULL, 0},
    {"GET", "/api/v1/counters/{counter}", hr_api_counter_settings_get, HR_ACCESS_ANY, NULL, 0},

    /* Stories and ratings */
    {"PUT", "/api/v1/members/{id}", hr_api_member_put, HR_ACCESS_SELF, "id", SMALL_BODY_MAX},
    {"GET", "/api/v1/members/{id}", hr_api_member_get, HR_ACCESS_ANY, NULL, 0},
    {"POST", "/api/v1/stories", hr_api_story_create, HR_ACCESS_ANY, NULL, STORY_BODY_MAX},
    {"POST", "/api/v1/stories/{id}/urls", hr_api_story_add_url, HR_ACCESS_ANY, NULL, SMALL_BODY_MAX},
    {"GET", "/api/v1/stories/{id}", hr_api_story_get, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/stories", hr_api_story_find, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/stories/recent", hr_api_stories_recent, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/ratings/{subject}/{object}", hr_api_rating_put, HR_ACCESS_SELF, "subject",
     SMALL_BODY_MAX},
    {"GET", "/api/v1/ratings/{subject}/{object}", hr_api_rating_get, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/ratings/{subject}", hr_api_ratings_by_subject, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/stories/{id}/ratings", hr_api_ratings_by_object, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/ratings", hr_api_ratings_all, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/members/{subject}/top-rated", hr_api_member_top_rated, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/members/{subject}/unseen", hr_api_member_unseen, HR_ACCESS_ANY, NULL, 0},

    /* Social graph */
    {"PUT", "/api/v1/users/{uid}/follows/{target}", hr_api_follow, HR_ACCESS_SELF, "uid", 0},
    {"DELETE", "/api/v1/users/{uid}/follows/{target}", hr_api_unfollow, HR_ACCESS_SELF, "uid", 0},
    {"GET", "/api/v1/users/{uid}/follows", hr_api_follows_list, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/users/{uid}/followers", hr_api_followers_list, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/users/{uid}/friends", hr_api_friends_list, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/groups/{gid}/members/{uid}", hr_api_group_join, HR_ACCESS_SELF, "uid", 0},
    {"DELETE", "/api/v1/groups/{gid}/members/{uid}", hr_api_group_leave, HR_ACCESS_SELF, "uid", 0},
    {"GET", "/api/v1/groups/{gid}/members", hr_api_group_members_list, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/users/{uid}/groups", hr_api_user_groups_list, HR_ACCESS_ANY, NULL, 0},

    /* Activities and feeds */
    {"POST", "/api/v1/activities", hr_api_activity_create, HR_ACCESS_ANY, NULL, ACTIVITY_BODY_MAX},
    {"GET", "/api/v1/activities", hr_api_activities_query, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/activities/{id}", hr_api_activity_get, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/activities/{id}", hr_api_activity_update, HR_ACCESS_ANY, NULL, ACTIVITY_BODY_MAX},
    {"DELETE", "/api/v1/activities/{id}", hr_api_activity_delete, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/users/{uid}/feed", hr_api_user_feed, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/users/{uid}/timeline", hr_api_user_timeline, HR_ACCESS_SELF, "uid", 0},
    {"GET", "/api/v1/groups/{gid}/feed", hr_api_group_feed, HR_ACCESS_ANY, NULL, 0},

    /* Reactions */
    {"POST", "/api/v1/activities/{id}/reactions", hr_api_reaction_add, HR_ACCESS_ANY, NULL, SMALL_BODY_MAX},
    {"GET", "/api/v1/activities/{id}/reactions", hr_api_reactions_of_activity, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/users/{uid}/reactions", hr_api_reactions_of_user, HR_ACCESS_ANY, NULL, 0},
    {"DELETE", "/api/v1/reactions/{id}", hr_api_reaction_delete, HR_ACCESS_ANY, NULL, 0},

    /* Profiles and objects */
    {"PUT", "/api/v1/users/{uid}/profile", hr_api_user_profile_put, HR_ACCESS_SELF, "uid", PROFILE_BODY_MAX},
    {"GET", "/api/v1/users/{uid}/profile", hr_api_user_profile_get, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/groups/{gid}/profile", hr_api_group_profile_put, HR_ACCESS_ADMIN, NULL,
     PROFILE_BODY_MAX},
    {"GET", "/api/v1/groups/{gid}/profile", hr_api_group_profile_get, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/objects/{oid}", hr_api_object_put, HR_ACCESS_ADMIN, NULL, PROFILE_BODY_MAX},
    {"GET", "/api/v1/objects/{oid}", hr_api_object_get, HR_ACCESS_ANY, NULL, 0},
    {"DELETE", "/api/v1/objects/{oid}", hr_api_object_delete, HR_ACCESS_ADMIN, NULL, 0},

    /* Social reading */
    {"PUT", "/api/v1/reading/sites/{domain}", hr_api_reading_site_put, HR_ACCESS_ADMIN, NULL, 0},
    {"DELETE", "/api/v1/reading/sites/{domain}", hr_api_reading_site_delete, HR_ACCESS_ADMIN, NULL, 0},
    {"GET", "/api/v1/reading/sites", hr_api_reading_sites, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/users/{uid}/reading", hr_api_reading_share_put, HR_ACCESS_SELF, "uid", SMALL_BODY_MAX},
    {"GET", "/api/v1/users/{uid}/reading", hr_api_reading_share_get, HR_ACCESS_SELF, "uid", 0},
    {"POST", "/api/v1/users/{uid}/reads", hr_api_reading_record, HR_ACCESS_SELF, "uid", SMALL_BODY_MAX},
    {"POST", "/api/v1/users/{uid}/friends-reads", hr_api_friends_reads, HR_ACCESS_SELF, "uid",
     READS_BODY_MAX},
    {"GET", "/api/v1/reading/popular", hr_api_reading_popular, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/reading/trending", hr_api_reading_trending, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/api/v1/users/{uid}/friends-popular", hr_api_friends_popular, HR_ACCESS_SELF, "uid", 0},

    /* Operations */
    {"GET", "/healthz", hr_api_healthz, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/metrics", hr_api_metrics, HR_ACCESS_PUBLIC, NULL, 0},
};

hr_route *hr_api_routes(const hr_config *cfg, size_t *n) {
    *n = sizeof routes / sizeof routes[0];
    hr_route *out = hr_xmalloc(sizeof routes);
    memcpy(out, routes, sizeof routes);
    for (size_t i = 0; i < *n; i++) {
        size_t limit;
        if (out[i].body_max == STORY_BODY_MAX)
            limit = ESCAPED_MAX(cfg->story_content_max);
        else if (out[i].body_max == ACTIVITY_BODY_MAX)
            limit = ESCAPED_MAX(cfg->activity_data_max);
        else
            continue;
        out[i].body_max = limit > cfg->body_max ? limit : (size_t)cfg->body_max;
    }
    return out;
}
