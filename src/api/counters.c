/* counters.c — the unique-counter resource (API.md "Unique counters").
 *
 * The seed-compatible endpoints speak plain text: a PUT's body is the raw
 * token and every answer is the count in decimal, so the seed's own commands
 * work unchanged:
 *     curl -X PUT -d token http://HOST/api/v1/counter/object_id   ->  43
 *     curl http://HOST/api/v1/counter/object_id                   ->  43
 * `/counter/X` is the counter named "default"; `/counters/NAME/X` any other. */
#include <stdio.h>

#include "api/api.h"
#include "api/json.h"

/* The route's {counter}, or "default" on the seed's /counter/ routes. */
static hr_slice counter_of(const hr_request *req) {
    hr_slice name = hr_req_param(req, "counter");
    return name.len ? name : hr_slice_str("default");
}

static void reply_count(hr_request *req, int64_t count) {
    char text[32];
    int n = snprintf(text, sizeof text, "%lld\n", (long long)count);
    hr_reply_text(req, 200, hr_slice_of(text, (size_t)n));
}

void hr_api_counter_put(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    int64_t count = 0;
    int rc = hr_counters_add(app->counters, counter_of(req), hr_req_param(req, "object"), hr_req_body(req),
                             &count, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_count(req, count);
}

void hr_api_counter_get(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    int64_t count = 0;
    int rc = hr_counters_count(app->counters, counter_of(req), hr_req_param(req, "object"), &count, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    reply_count(req, count);
}

void hr_api_counter_counts(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_slice *objects = NULL;
    size_t n = 0;
    static const char *const fields[] = {"objects", NULL};
    int rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK)
        rc = hr_json_ident_array(body, "objects", HR_COUNTS_MAX, hr_req_arena(req), &objects, &n, &err);
    int64_t *counts = NULL;
    if (rc == HR_OK) {
        counts = hr_arena_alloc(hr_req_arena(req), n * sizeof *counts);
        rc = hr_counters_count_many(app->counters, counter_of(req), objects, n, counts, &err);
    }
    if (rc != HR_OK) {
        json_decref(body);
        return hr_reply_error(req, rc, &err);
    }
    json_t *map = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_setn_new_nocheck(map, objects[i].ptr, objects[i].len, json_integer(counts[i]));
    json_decref(body); /* objects point into body: only now */
    hr_reply_json(req, 200, json_pack("{s:o}", "counts", map));
}

static json_t *settings_json(hr_slice counter, const hr_counter_settings *s) {
    return json_pack("{s:s%,s:I,s:I}", "counter", counter.ptr, counter.len, "ttl_ms", (json_int_t)s->ttl_ms,
                     "exact_limit", (json_int_t)s->exact_limit);
}

void hr_api_counter_settings_get(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    hr_counter_settings s;
    int rc = hr_counters_settings(app->counters, counter_of(req), &s, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, settings_json(counter_of(req), &s));
}

void hr_api_counter_settings_put(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    json_t *body = NULL;
    hr_counter_settings s;
    static const char *const fields[] = {"ttl_ms", "exact_limit", NULL};
    /* Start from the current settings: either field may be left out. */
    int rc = hr_counters_settings(app->counters, counter_of(req), &s, &err);
    if (rc == HR_OK) rc = hr_json_parse_object(hr_req_body(req), &body, &err);
    if (rc == HR_OK) rc = hr_json_only_fields(body, fields, &err);
    if (rc == HR_OK) rc = hr_json_int_field(body, "ttl_ms", false, 1, INT64_MAX / 4, &s.ttl_ms, NULL, &err);
    if (rc == HR_OK)
        rc = hr_json_int_field(body, "exact_limit", false, 1, HR_EXACT_LIMIT_MAX, &s.exact_limit, NULL, &err);
    json_decref(body);
    if (rc == HR_OK) rc = hr_counters_configure(app->counters, counter_of(req), &s, &err);
    if (rc != HR_OK) return hr_reply_error(req, rc, &err);
    hr_reply_json(req, 200, settings_json(counter_of(req), &s));
}
