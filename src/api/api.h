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
#include "http/http.h"
#include "store/store.h"

/* What every handler reaches through hr_req_app(req). Borrowed pointers,
 * owned by main.c for the life of the server. */
typedef struct hr_app {
    hr_store *store;
    hr_counters *counters;
    const hr_config *config;
} hr_app;

/* The whole routing table (static; *n receives its length). */
const hr_route *hr_api_routes(size_t *n);

/* Handlers, by resource (registered in routes.c). */
void hr_api_counter_put(hr_request *req);
void hr_api_counter_get(hr_request *req);
void hr_api_counter_counts(hr_request *req);
void hr_api_counter_settings_put(hr_request *req);
void hr_api_counter_settings_get(hr_request *req);
void hr_api_healthz(hr_request *req);
void hr_api_metrics(hr_request *req);

#endif
