/* http_internal.h — what the files of src/http/ share and nobody else sees.
 *
 *   router.c   the routing table compiled into a trie of path segments
 *   server.c   libmicrohttpd glue: request life cycle, checks, auth, replies
 *   problem.c  RFC 9457 bodies and the one herald-code -> HTTP-status table
 *   metrics.c  per-route request counters and latency histograms
 *   ident.c    the identifier rule and percent-decoding of path segments
 *
 * Nothing here is part of the contract; http.h is.
 */
#ifndef HR_HTTP_INTERNAL_H
#define HR_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"
#include "http/listener.h"

/* ---- Methods ---- */

/* The methods a route may declare. HEAD is served by the GET route of a path
 * (libmicrohttpd leaves the body out), so it has no slot of its own. */
enum {
    HM_GET,
    HM_PUT,
    HM_POST,
    HM_DELETE,
    HM_PATCH,
    HM_COUNT,
};
extern const char *const hr_method_names[HM_COUNT];
/* The slot of a route method, or -1 for anything else (HEAD included). */
int hr_method_index(const char *method);

/* ---- Router (router.c) ---- */

enum {
    RT_PARAMS_MAX = 8,    /* path parameters in one pattern */
    RT_SEGMENTS_MAX = 16, /* segments in one path; longer paths match nothing */
};

/* One route of the table, compiled. */
typedef struct rt_route {
    const hr_route *def; /* borrowed from the caller's table */
    int method;          /* HM_* */
    unsigned n_params;
    unsigned param_seg[RT_PARAMS_MAX]; /* segment position of each parameter */
    char *param_name[RT_PARAMS_MAX];   /* owned, NUL-terminated */
    int self_param;                    /* HR_ACCESS_SELF: index in param_*, else -1 */
} rt_route;

typedef struct rt_node rt_node;

typedef struct hr_router {
    rt_node *nodes; /* nodes[0] is the root ("/") */
    size_t n_nodes, cap_nodes;
    rt_route *routes; /* same order as the caller's table */
    size_t n_routes;
} hr_router;

/* Validate and compile a routing table. On failure err names the route and
 * what is wrong, and r is left empty (router_free is still safe). */
int router_build(hr_router *r, const hr_route *routes, size_t n, hr_err *err);
void router_free(hr_router *r);
/* Find the route for a method slot (HM_*, or -1) and a decoded path given as
 * segments. Returns the route index, or -1; then *allow is the set of method
 * slots (bit 1<<HM_*) the path does have — empty means "not found", non-empty
 * "method not allowed". Literal segments win over parameters; if a literal
 * branch leads nowhere the parameter branch is tried. */
int router_match(const hr_router *r, int method, const hr_slice *segs, size_t n_segs, unsigned *allow);

/* ---- Path decoding (ident.c) ---- */

/* Split the raw request path (as sent, before any percent-decoding) in place
 * into segments, percent-decoding each one; each segment is NUL-terminated in
 * place. A %2F decodes to a '/' inside its segment, never a separator; an
 * invalid escape is kept as it is. Returns the number of segments, or -1 if
 * the path does not start with '/' or has more than max segments. "/" has no
 * segments; "/a/" has two, the second empty. */
int hr_path_split(char *path, hr_slice *segs, size_t max);

/* ---- Metrics (metrics.c) ---- */

/* Latency buckets, upper bounds in nanoseconds; one more bucket is +Inf. */
enum { MX_BUCKETS = 16, MX_STATUS_SLOTS = 21 };

/* The counters of one series (one route, or unmatched requests of one
 * method). Written with relaxed atomic adds on the hot path; aligned so that
 * two routes never share a cache line. */
typedef struct mx_series {
    _Alignas(64) _Atomic uint64_t status[MX_STATUS_SLOTS];
    _Atomic uint64_t bucket[MX_BUCKETS + 1]; /* not cumulative; cumulated when rendered */
    _Atomic uint64_t sum_ns;
} mx_series;

/* Unmatched requests (404 and 405) are counted per method: the five that
 * routes may have, HEAD, and "other" (any other token a client sends). */
enum { MX_UNMATCHED = HM_COUNT + 2 };

typedef struct hr_metrics {
    /* One allocation (cache-line aligned, owned): n_routes series, one per
     * route in table order, then MX_UNMATCHED series. */
    mx_series *routes;
    mx_series *unmatched; /* routes + n_routes */
    size_t n_routes;
} hr_metrics;

void metrics_init(hr_metrics *m, size_t n_routes);
void metrics_free(hr_metrics *m);
/* Count one answered request: route index or -1 (unmatched, then `method`
 * picks the series), status, latency. Lock-free. */
void metrics_observe(hr_metrics *m, int route, const char *method, unsigned status, uint64_t ns);

/* ---- The server and a request (server.c) ---- */

struct hr_http_server {
    hr_listener *listener;       /* accepts, and picks each connection's daemon */
    struct MHD_Daemon **daemons; /* one per I/O thread */
    atomic_uint *open;           /* connections open per daemon (listener.h) */
    unsigned n_daemons;
    hr_http_config cfg; /* a copy; cfg.routes stays borrowed */
    hr_router router;
    hr_metrics metrics;
    uint16_t port;
    atomic_uint in_flight; /* requests seen (request line parsed) and not yet completed */
    atomic_bool stopping;  /* responses carry Connection: close */
};

/* Where a request is in its life; see the comment of on_access in server.c. */
typedef enum req_state {
    RQ_NEW,     /* the request line is parsed, the access handler not yet called */
    RQ_BODY,    /* checks done; accumulating (or discarding) the body */
    RQ_ANSWERED /* a response is queued */
} req_state;

struct hr_request {
    hr_http_server *srv;
    struct MHD_Connection *conn;
    const char *method; /* libmicrohttpd's, valid for the request */
    const char *path;   /* decoded by libmicrohttpd */
    uint64_t start_ns;
    req_state state;
    unsigned status; /* of the response queued, once RQ_ANSWERED */

    /* Routing. */
    int route;      /* index into srv->router.routes, or -1 */
    char *raw_path; /* the path as sent, split in place into segs */
    hr_slice segs[RT_SEGMENTS_MAX];
    int n_segs;

    /* A check failed before the handler: answer this once the body (which
     * is discarded) is in, so that the connection can be kept alive. */
    unsigned pend_status;
    const char *pend_detail;         /* in the arena */
    const char *pend_hdr, *pend_val; /* one extra header (Allow, WWW-Authenticate) */

    /* The body: arena memory, NUL-terminated (the NUL not counted). */
    char *body;
    size_t body_len, body_cap, body_max;
    bool over_limit;  /* more than body_max came: the rest is dropped */
    size_t dropped;   /* bytes dropped past the limit */
    bool close_after; /* the response asks the client to close */

    hr_principal principal;
    hr_arena arena;
    char path_inline[256]; /* raw_path when it fits, to save an allocation */
};

/* True, with the bug logged, if req already has its answer: the reply
 * functions check it first, and a second answer is dropped. */
bool server_answered(hr_request *req, unsigned status);
/* A response over a buffer (libmicrohttpd's memory modes); never NULL. */
struct MHD_Response *server_response(size_t len, const void *data, enum MHD_ResponseMemoryMode mode);
/* Queue a response: the one place every answer goes through (metrics, the
 * answered-twice check, Connection: close while stopping, 5xx and access
 * logging). Takes resp. */
void server_respond(hr_request *req, unsigned status, struct MHD_Response *resp);
/* A problem answer with an optional extra header; log_detail (may be NULL)
 * is what the log says for a 5xx instead of the client's detail. */
void problem_send(hr_request *req, unsigned status, const char *detail, const char *hdr, const char *val,
                  const char *log_detail);

#endif
