/* http.h — herald's HTTP transport: a server on libmicrohttpd, a routing
 * table, limits, timeouts, authentication hooks and RFC 9457 errors.
 *
 * This layer knows nothing of counters, feeds or stores. The program hands it
 * a table of routes (method, path pattern, handler, who may call it, body
 * limit); every check that a route declares (method, path parameters,
 * credentials, access, body size) runs here, in one place, before the handler
 * is called, so a handler only ever sees a request it is allowed to serve.
 *
 * Handlers run on the server's I/O threads (a pool of `threads`), are called
 * once per request with the whole body read, and answer exactly once with one
 * of the hr_reply_* functions before returning. A handler that returns
 * without answering gets a 500 logged as a bug.
 */
#ifndef HR_HTTP_H
#define HR_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/ident.h"
#include "common/slice.h"

typedef struct hr_request hr_request;
typedef struct hr_http_server hr_http_server;

/* Who is calling, as established from the Authorization header. */
typedef struct hr_principal {
    bool admin;                  /* the admin key, or a server without a secret */
    char user[HR_IDENT_MAX + 1]; /* a user token's user ("" for admin) */
} hr_principal;

/* Who may call a route. Checked before the handler runs. */
typedef enum hr_access {
    HR_ACCESS_PUBLIC, /* anyone, no credentials needed (/healthz, /metrics) */
    HR_ACCESS_ANY,    /* any valid token: admin or any user */
    HR_ACCESS_SELF,   /* admin, or the user named by the route's self_param */
    HR_ACCESS_ADMIN,  /* the admin key only */
} hr_access;

typedef void (*hr_handler)(hr_request *req);

typedef struct hr_route {
    const char *method; /* "GET", "PUT", "POST", "DELETE", "PATCH"; a GET
                         * route also answers HEAD */
    /* Literal segments and {name} parameters, e.g.
     * "/api/v1/counters/{counter}/{object}". Every parameter must be a valid
     * identifier (hr_ident_valid) or the request is answered 400 naming it.
     * A literal segment wins over a parameter at the same position. Paths
     * with an empty segment ("/a//b", a trailing "/") match no route: 404. */
    const char *pattern;
    hr_handler handler;
    hr_access access;
    const char *self_param; /* HR_ACCESS_SELF: the parameter naming the user */
    size_t body_max;        /* bytes; 0 means the server's default */
} hr_route;

/* Checks a bearer credential. Returns 0 and fills *out, or HR_EUNAUTH. */
typedef int (*hr_authenticate_fn)(void *ctx, hr_slice credential, hr_principal *out);

typedef struct hr_http_config {
    const char *host;         /* listen address, e.g. "127.0.0.1" or "0.0.0.0" */
    uint16_t port;            /* 0: pick a free port (see hr_http_port) */
    unsigned threads;         /* I/O threads; 0 means the number of cores */
    size_t body_max;          /* default body limit; 0 means 1 MiB */
    unsigned timeout_s;       /* idle / read timeout per connection; 0 means 30 */
    unsigned max_connections; /* 0 means 4096 */
    const hr_route *routes;   /* borrowed; must outlive the server */
    size_t n_routes;
    void *app; /* handed to handlers by hr_req_app */
    /* NULL: no secret, every caller acts as the admin. */
    hr_authenticate_fn authenticate;
    void *auth_ctx;
    bool access_log; /* one info line per request; off by default */
} hr_http_config;

/* Validate the routing table, bind and start serving. On success *out is the
 * running server (caller owns; hr_http_stop frees it). */
int hr_http_start(const hr_http_config *cfg, hr_http_server **out, hr_err *err);
/* The port actually bound (useful with port 0). */
uint16_t hr_http_port(const hr_http_server *s);
/* Stop accepting, finish requests in flight, free the server. NULL is a no-op. */
void hr_http_stop(hr_http_server *s);

/* ---- Reading a request (all pointers valid until the handler returns) ---- */

const char *hr_req_method(const hr_request *req);
/* The path, percent-decoded (for messages and logs; routing decodes each
 * segment on its own, so an encoded '/' never splits one). */
const char *hr_req_path(const hr_request *req);
/* A path parameter of the route by name; an empty slice if the route has
 * none of that name. Always a valid identifier, percent-decoded, and
 * NUL-terminated (the NUL not counted). */
hr_slice hr_req_param(const hr_request *req, const char *name);
/* A query-string argument (already percent-decoded), or NULL if absent. */
const char *hr_req_query(const hr_request *req, const char *name);
/* A request header, or NULL. */
const char *hr_req_header(const hr_request *req, const char *name);
/* The whole body (possibly empty), followed by a NUL byte not counted. */
hr_slice hr_req_body(const hr_request *req);
const hr_principal *hr_req_principal(const hr_request *req);
/* Memory that lives until the request is answered and done. */
hr_arena *hr_req_arena(hr_request *req);
void *hr_req_app(const hr_request *req);
/* The server answering this request (for /metrics). */
hr_http_server *hr_req_server(const hr_request *req);

/* ---- Answering (exactly once) ---- */

/* text/plain; charset=utf-8 */
void hr_reply_text(hr_request *req, unsigned status, hr_slice body);
/* application/json. Takes the reference to body (json_decref'd here). */
void hr_reply_json(hr_request *req, unsigned status, json_t *body);
/* Answer with JSON text already written (api/json_out.h). Takes the
 * buffer's memory, which the answer frees when it is sent; *text is left
 * empty. */
void hr_reply_json_text(hr_request *req, unsigned status, hr_buf *text);
/* RFC 9457 application/problem+json: {"type":"about:blank","title":<reason
 * phrase of status>,"status":status,"detail":<formatted>}. */
void hr_reply_problem(hr_request *req, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A problem for a herald error code, its status from the one table in
 * problem.c (HR_EINVAL 400, HR_ENOTFOUND 404, HR_EUNAVAIL 503, ...); the
 * detail is err->msg when set, else the code's message. Store failures
 * (HR_EIO, HR_EINTERNAL) are logged with the detail and answered with a
 * generic detail. */
void hr_reply_error(hr_request *req, int code, const hr_err *err);

/* The HTTP status for a herald error code. */
unsigned hr_status_of(int code);
/* The reason phrase of an HTTP status ("Not Found"). */
const char *hr_status_title(unsigned status);

/* ---- Metrics (requests by route and status, latency histograms) ---- */

/* Append the HTTP metrics in Prometheus text format to out. */
struct hr_buf;
void hr_http_metrics_render(const hr_http_server *s, struct hr_buf *out);

#endif
