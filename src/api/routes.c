/* routes.c — every route of the API in one table: method, path, handler, who
 * may call it (checked by the transport before the handler runs), and the
 * body limit where it differs from the server's. Keep it in the order of
 * API.md. */
#include "api/api.h"

/* A counter PUT's body is one token: no reason to accept a megabyte. */
#define TOKEN_BODY_MAX 4096

static const hr_route routes[] = {
    /* Unique counters */
    {"PUT", "/api/v1/counter/{object}", hr_api_counter_put, HR_ACCESS_ANY, NULL, TOKEN_BODY_MAX},
    {"GET", "/api/v1/counter/{object}", hr_api_counter_get, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/counters/{counter}/{object}", hr_api_counter_put, HR_ACCESS_ANY, NULL, TOKEN_BODY_MAX},
    {"GET", "/api/v1/counters/{counter}/{object}", hr_api_counter_get, HR_ACCESS_ANY, NULL, 0},
    {"POST", "/api/v1/counters/{counter}/counts", hr_api_counter_counts, HR_ACCESS_ANY, NULL, 0},
    {"PUT", "/api/v1/counters/{counter}", hr_api_counter_settings_put, HR_ACCESS_ADMIN, NULL, 0},
    {"GET", "/api/v1/counters/{counter}", hr_api_counter_settings_get, HR_ACCESS_ANY, NULL, 0},

    /* Operations */
    {"GET", "/healthz", hr_api_healthz, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/metrics", hr_api_metrics, HR_ACCESS_PUBLIC, NULL, 0},
};

const hr_route *hr_api_routes(size_t *n) {
    *n = sizeof routes / sizeof routes[0];
    return routes;
}
