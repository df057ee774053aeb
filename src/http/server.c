/* server.c — the HTTP server: libmicrohttpd glue, the life of a request, and
 * the checks every route declares, run in one place before any handler.
 *
 * Threads. cfg->threads libmicrohttpd daemons, one I/O thread (epoll) each,
 * and an accepting thread (listener.c) that gives each new connection to
 * the daemon with the fewest. A connection stays on one thread; its requests, the
 * handler calls and the completion callback all run there. Shared state is
 * the compiled routing table (immutable), the metrics (relaxed atomics) and
 * the in-flight count (an atomic), so the hot path takes no lock.
 *
 * The life of a request, and the libmicrohttpd calls that drive it:
 *
 *   on_uri        request line parsed: allocate the hr_request (freed in
 *                 on_completed), copy the raw path, start the clock
 *   on_access #1  headers parsed (RQ_NEW -> RQ_BODY): route, path parameters,
 *                 credentials, access, declared body size. A failed check is
 *                 kept as a pending problem, not answered yet: answering on
 *                 the first call makes libmicrohttpd close the connection,
 *                 and a client that sent a bad token should keep its
 *                 keep-alive connection. The exception is a declared body
 *                 over the limit: that is answered at once, so the client
 *                 never uploads it (the connection then closes, as it must).
 *   on_access #k  a chunk of body (libmicrohttpd has already undone chunked
 *                 transfer coding): appended to the arena, or counted and
 *                 dropped if a check failed. Past the limit (a chunked body
 *                 declares no length) nothing more is kept: libmicrohttpd
 *                 0.9.75 refuses a response queued mid-body, so the rest is
 *                 read and dropped and 413 answered at the end, with
 *                 Connection: close; a client still sending DISCARD_MAX
 *                 bytes past the limit is disconnected without an answer.
 *   on_access #n  upload_data_size 0, the body is complete: answer the
 *                 pending problem, or call the handler, which answers with
 *                 an hr_reply_* function (RQ_BODY -> RQ_ANSWERED).
 *   on_completed  the response is sent or the connection died: free.
 *
 * Every answer goes through server_respond: it refuses a second answer,
 * counts the request in the metrics, and asks the client to close while the
 * server is stopping.
 *
 * Paths: libmicrohttpd hands the access handler a percent-decoded path,
 * which would make "%2F" a separator. Routing uses the raw path instead,
 * captured in on_uri and decoded segment by segment (see ident.c).
 * hr_req_path is the decoded path, for messages and logs.
 *
 * Authentication: with no cfg->authenticate every caller is the admin (main.c
 * then listens on loopback only). Otherwise `Authorization: Bearer <token>`
 * is checked for every route but PUBLIC ones (where a valid token still
 * names the principal, and a bad one is ignored): none or a bad one is 401
 * with WWW-Authenticate, a valid one without the route's access is 403.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "http/http_internal.h"

enum {
    DEFAULT_BODY_MAX = 1 << 20,
    DEFAULT_TIMEOUT_S = 30,
    DEFAULT_MAX_CONNECTIONS = 4096,
    /* libmicrohttpd's per-connection pool holds the request line, headers
     * and the read buffer that bodies stream through. 0.9.75 zeroes the
     * pool between requests, so its size is paid on every request: each
     * halving from 64 KiB served more requests a second. 16 KiB still takes
     * ~16 KB of headers (nginx's default is 8 KB). */
    CONNECTION_MEMORY = 16 * 1024,
    STOP_WAIT_MS = 5000,   /* hr_http_stop waits this long for requests in flight */
    DISCARD_MAX = 1 << 20, /* body bytes dropped past the limit before disconnecting */
};

/* ---- Answering ---- */

void server_respond(hr_request *req, unsigned status, struct MHD_Response *resp) {
    hr_http_server *srv = req->srv;
    if (server_answered(req, status)) {
        MHD_destroy_response(resp);
        return;
    }
    /* While stopping, ask keep-alive clients to go: the listen socket is
     * closed, and this connection will be soon. */
    if (req->close_after || atomic_load_explicit(&srv->stopping, memory_order_relaxed))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    req->state = RQ_ANSWERED;
    req->status = status;
    if (MHD_queue_response(req->conn, status, resp) != MHD_YES)
        hr_error("http: %s %s: libmicrohttpd refused the %u response", req->method, req->path, status);
    MHD_destroy_response(resp); /* libmicrohttpd holds its own reference until sent */

    uint64_t ns = hr_mono_ns() - req->start_ns;
    metrics_observe(&srv->metrics, req->route, req->method, status, ns);
    if (srv->cfg.access_log)
        hr_info("http: %s %s %u %.3fms", req->method, req->path, status, (double)ns / 1e6);
}

bool server_answered(hr_request *req, unsigned status) {
    if (req->state != RQ_ANSWERED) return false;
    hr_error("http: bug: %s %s answered twice (%u, then %u); the second answer is ignored", req->method,
             req->path, req->status, status);
    return true;
}

struct MHD_Response *server_response(size_t len, const void *data, enum MHD_ResponseMemoryMode mode) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)data, mode);
    if (resp == NULL) { /* only malloc fails here: abort, as hr_xmalloc does */
        hr_error("http: out of memory creating a response of %zu bytes", len);
        abort();
    }
    return resp;
}

void hr_reply_text(hr_request *req, unsigned status, hr_slice body) {
    if (server_answered(req, status)) return;
    struct MHD_Response *resp = server_response(body.len, body.len ? body.ptr : "", MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    server_respond(req, status, resp);
}

void hr_reply_json(hr_request *req, unsigned status, json_t *body) {
    if (server_answered(req, status)) {
        json_decref(body);
        return;
    }
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(body);
    if (text == NULL) {
        problem_send(req, 500, hr_strerror(HR_EINTERNAL), NULL, NULL,
                     "bug: hr_reply_json was given no body, or one that does not encode");
        return;
    }
    /* MUST_FREE: libmicrohttpd free()s the text with the response, which
     * matches jansson's default allocator (herald never replaces it). */
    struct MHD_Response *resp = server_response(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    server_respond(req, status, resp);
}

void hr_reply_json_text(hr_request *req, unsigned status, hr_buf *text) {
    if (server_answered(req, status)) {
        hr_buf_free(text);
        return;
    }
    size_t len = text->len;
    char *data = text->data ? text->data : hr_xmalloc(1);
    *text = (hr_buf)HR_BUF_INIT;
    /* MUST_FREE: hr_buf's memory comes from malloc (common/alloc.c). */
    struct MHD_Response *resp = server_response(len, data, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    server_respond(req, status, resp);
}

/* ---- The checks before the handler ---- */

/* Remember a failed check, to be answered when the body is in. The first
 * failure wins: later checks do not run once one has failed. */
static void pend(hr_request *req, unsigned status, const char *hdr, const char *val, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void pend(hr_request *req, unsigned status, const char *hdr, const char *val, const char *fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    req->pend_status = status;
    req->pend_detail = hr_arena_strndup(&req->arena, detail, strlen(detail));
    req->pend_hdr = hdr;
    req->pend_val = val ? hr_arena_strndup(&req->arena, val, strlen(val)) : NULL;
}

static void answer_pending(hr_request *req) {
    problem_send(req, req->pend_status, req->pend_detail, req->pend_hdr, req->pend_val, NULL);
}

/* No route: 404, or 405 with Allow if the path exists for other methods. */
static void check_unmatched(hr_request *req, unsigned allow) {
    if (allow == 0) {
        pend(req, 404, NULL, NULL, "no resource at %.200s", req->path);
        return;
    }
    char list[64] = "";
    size_t n = 0;
    for (int m = 0; m < HM_COUNT; m++) {
        if (!(allow & (1u << m))) continue;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", hr_method_names[m]);
        if (m == HM_GET) n += (size_t)snprintf(list + n, sizeof list - n, ", HEAD");
    }
    pend(req, 405, MHD_HTTP_HEADER_ALLOW, list, "%.20s is not allowed on %.200s (allowed: %s)", req->method,
         req->path, list);
}

static bool check_params(hr_request *req, const rt_route *rt) {
    for (unsigned k = 0; k < rt->n_params; k++) {
        if (hr_ident_valid(req->segs[rt->param_seg[k]])) continue;
        pend(req, 400, NULL, NULL, "%s must be 1..%d characters of A-Z a-z 0-9 . _ : @ ~ -",
             rt->param_name[k], HR_IDENT_MAX);
        return false;
    }
    return true;
}

/* The credential of an Authorization header: 0 and *cred, or -1 if there
 * is no header, -2 if it is not a Bearer credential. */
static int bearer(const char *h, hr_slice *cred) {
    if (h == NULL) return -1;
    while (*h == ' ' || *h == '\t')
        h++;
    if (strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] != '\t')) return -2;
    h += 6;
    while (*h == ' ' || *h == '\t')
        h++;
    size_t n = strlen(h);
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    if (n == 0) return -2;
    *cred = hr_slice_of(h, n);
    return 0;
}

static const char challenge[] = "Bearer realm=\"herald\"";
static const char challenge_bad[] = "Bearer realm=\"herald\", error=\"invalid_token\"";

static void check_access(hr_request *req, const rt_route *rt) {
    const hr_http_config *cfg = &req->srv->cfg;
    if (cfg->authenticate == NULL) {
        req->principal.admin = true;
        return;
    }
    hr_slice cred;
    int found =
        bearer(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), &cred);
    int rc = HR_EUNAUTH;
    if (found == 0) {
        rc = cfg->authenticate(cfg->auth_ctx, cred, &req->principal);
        if (rc != 0) memset(&req->principal, 0, sizeof req->principal);
        req->principal.user[HR_IDENT_MAX] = '\0'; /* whatever the callback did */
    }

    hr_access access = rt->def->access;
    if (access == HR_ACCESS_PUBLIC) return; /* anonymous unless a valid token says otherwise */
    if (found == -1) {
        pend(req, 401, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge,
             "missing credentials: send Authorization: Bearer <token>");
        return;
    }
    if (found == -2) {
        pend(req, 401, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge,
             "the Authorization header must be Bearer <token>");
        return;
    }
    if (rc != 0) {
        pend(req, 401, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge_bad, "invalid credentials");
        return;
    }
    const hr_principal *p = &req->principal;
    if (p->admin || access == HR_ACCESS_ANY) return;
    if (access == HR_ACCESS_ADMIN) {
        pend(req, 403, NULL, NULL, "this call needs the admin key; the token is for user %s", p->user);
        return;
    }
    /* HR_ACCESS_SELF */
    hr_slice self = req->segs[rt->param_seg[rt->self_param]];
    if (!hr_slice_eq(hr_slice_str(p->user), self))
        pend(req, 403, NULL, NULL, "token for user %s may not act as user %.*s", p->user, (int)self.len,
             self.ptr);
}

/* A body over the limit: the first failed check if there was one, else 413.
 * Answered at once when the declared length is over (libmicrohttpd then
 * closes the connection and never reads the body), else at the end. */
static void reject_body(hr_request *req) {
    if (req->pend_status) {
        answer_pending(req);
        return;
    }
    char detail[96];
    snprintf(detail, sizeof detail, "body too large: %zu bytes at most", req->body_max);
    problem_send(req, 413, detail, NULL, NULL, NULL);
}

/* Parse a Content-Length value; false if it is not a plain decimal. */
static bool parse_length(const char *s, uint64_t *out) {
    if (s == NULL || *s == '\0') return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

/* The first access-handler call: every check a route declares. */
static void check(hr_request *req) {
    hr_http_server *srv = req->srv;
    int method = hr_method_index(req->method);
    if (method < 0 && strcmp(req->method, "HEAD") == 0) method = HM_GET;

    req->n_segs = hr_path_split(req->raw_path, req->segs, RT_SEGMENTS_MAX);
    unsigned allow = 0;
    if (req->n_segs >= 0)
        req->route = router_match(&srv->router, method, req->segs, (size_t)req->n_segs, &allow);
    const rt_route *rt = req->route >= 0 ? &srv->router.routes[req->route] : NULL;
    req->body_max = rt && rt->def->body_max ? rt->def->body_max : srv->cfg.body_max;

    if (rt == NULL)
        check_unmatched(req, allow);
    else if (check_params(req, rt))
        check_access(req, rt);

    uint64_t declared;
    if (parse_length(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH),
                     &declared)) {
        if (declared > req->body_max) {
            /* Answer now, before the client uploads it; libmicrohttpd
             * closes the connection afterwards. */
            reject_body(req);
            return;
        }
        req->body_cap = (size_t)declared; /* a hint: allocate once */
    }
}

/* ---- The body ---- */

/* Keep (or drop) a chunk of body. False if the client has sent so much past
 * the limit that the connection should be dropped. */
static bool take_body(hr_request *req, const char *data, size_t n) {
    if (req->over_limit || n > req->body_max - req->body_len) {
        req->over_limit = true;
        req->dropped += n;
        return req->dropped <= DISCARD_MAX;
    }
    if (req->pend_status) { /* a check failed: count, do not keep */
        req->body_len += n;
        return true;
    }
    size_t need = req->body_len + n; /* + a NUL */
    if (req->body == NULL || need > req->body_cap) {
        /* First chunk: the declared length if any; then double (the old
         * copy stays in the arena until the request ends). */
        size_t cap = req->body == NULL && req->body_cap >= need ? req->body_cap : 2 * need;
        if (cap < 256) cap = 256;
        if (cap > req->body_max) cap = req->body_max;
        char *p = hr_arena_alloc(&req->arena, cap + 1);
        if (req->body_len) memcpy(p, req->body, req->body_len);
        req->body = p;
        req->body_cap = cap;
    }
    memcpy(req->body + req->body_len, data, n);
    req->body_len += n;
    req->body[req->body_len] = '\0';
    return true;
}

/* The last access-handler call: the body is in. */
static void finish(hr_request *req) {
    if (req->over_limit) {
        req->close_after = true; /* a client that ignores the limit: let it go */
        reject_body(req);
        return;
    }
    if (req->pend_status) {
        answer_pending(req);
        return;
    }
    const rt_route *rt = &req->srv->router.routes[req->route];
    rt->def->handler(req);
    if (req->state != RQ_ANSWERED)
        problem_send(req, 500, hr_strerror(HR_EINTERNAL), NULL, NULL,
                     "bug: the handler returned without answering");
}

/* ---- libmicrohttpd callbacks ---- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
    hr_http_server *srv = cls;
    atomic_fetch_add_explicit(&srv->in_flight, 1, memory_order_relaxed);
    hr_request *req = hr_xcalloc(1, sizeof *req);
    req->srv = srv;
    req->conn = conn;
    req->start_ns = hr_mono_ns();
    req->state = RQ_NEW;
    req->route = -1;
    req->method = "?";
    req->path = "?";
    /* uri is the request target as sent, query included. */
    size_t n = strcspn(uri, "?#");
    req->raw_path = n < sizeof req->path_inline ? req->path_inline : hr_arena_alloc(&req->arena, n + 1);
    memcpy(req->raw_path, uri, n);
    req->raw_path[n] = '\0';
    return req;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    hr_http_server *srv = cls;
    hr_request *req = *con_cls;
    if (req == NULL) return;
    *con_cls = NULL;
    hr_arena_free(&req->arena);
    free(req);
    /* release: hr_http_stop reads 0 only after everything above is done */
    atomic_fetch_sub_explicit(&srv->in_flight, 1, memory_order_release);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls) {
    hr_request *req = *con_cls;
    if (req == NULL) return MHD_NO; /* cannot happen (on_uri runs first); drop the connection */
    switch (req->state) {
    case RQ_NEW:
        req->state = RQ_BODY;
        req->method = method;
        req->path = url;
        check(req);
        return MHD_YES;
    case RQ_BODY:
        if (*upload_data_size != 0) {
            bool keep = take_body(req, upload_data, *upload_data_size);
            *upload_data_size = 0;
            return keep ? MHD_YES : MHD_NO; /* MHD_NO: drop the connection */
        }
        finish(req);
        return MHD_YES;
    case RQ_ANSWERED:
        *upload_data_size = 0; /* answered early: drop the rest */
        return MHD_YES;
    }
    return MHD_NO;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    hr_warn("http: libmicrohttpd: %s", line);
}

/* ---- Start and stop ---- */

/* cfg->host (an IPv4 or IPv6 literal, "[::1]", or a name) and port as a
 * socket address. */
static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss, bool *v6, hr_err *err) {
    char name[256];
    if (host == NULL || host[0] == '\0') host = "127.0.0.1";
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') { /* "[::1]" as in a URL */
        host++;
        n -= 2;
    }
    if (n >= sizeof name) return hr_err_set(err, HR_EINVAL, "listen host too long");
    memcpy(name, host, n);
    name[n] = '\0';

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc != 0 || res == NULL)
        return hr_err_set(err, HR_EINVAL, "cannot resolve listen host %s: %s", name, gai_strerror(rc));
    memset(ss, 0, sizeof *ss);
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    if (*v6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    freeaddrinfo(res);
    return 0;
}

/* A closed connection leaves its daemon's count (srv->open[i], cls), which
 * the listener raised when it handed the connection over. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
        atomic_fetch_sub_explicit((atomic_uint *)cls, 1, memory_order_relaxed);
}

static void stop_daemons(hr_http_server *srv) {
    for (unsigned i = 0; i < srv->n_daemons; i++)
        if (srv->daemons[i]) MHD_stop_daemon(srv->daemons[i]);
    free(srv->daemons);
    free(srv->open);
}

int hr_http_start(const hr_http_config *cfg, hr_http_server **out, hr_err *err) {
    *out = NULL;
    hr_http_server *srv = hr_xcalloc(1, sizeof *srv);
    srv->cfg = *cfg;
    if (srv->cfg.body_max == 0) srv->cfg.body_max = DEFAULT_BODY_MAX;
    if (srv->cfg.timeout_s == 0) srv->cfg.timeout_s = DEFAULT_TIMEOUT_S;
    if (srv->cfg.max_connections == 0) srv->cfg.max_connections = DEFAULT_MAX_CONNECTIONS;
    unsigned threads = srv->cfg.threads;
    if (threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (unsigned)cores : 1;
    }

    int rc = router_build(&srv->router, cfg->routes, cfg->n_routes, err);
    if (rc != 0) {
        free(srv);
        return rc;
    }
    metrics_init(&srv->metrics, cfg->n_routes);

    struct sockaddr_storage addr;
    bool v6 = false;
    rc = resolve(cfg->host, cfg->port, &addr, &v6, err);
    if (rc != 0) goto fail;
    char where[300];
    snprintf(where, sizeof where, "%s:%u", cfg->host ? cfg->host : "127.0.0.1", (unsigned)cfg->port);
    rc = hr_listener_open((struct sockaddr *)&addr,
                          v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in), where,
                          &srv->listener, &srv->port, err);
    if (rc != 0) goto fail;

    /* One daemon per I/O thread, none listening: the listener hands each
     * its connections (listener.h says why). The connection limit is split
     * between them, as the listener spreads connections evenly. */
    srv->n_daemons = threads;
    srv->daemons = hr_xcalloc(threads, sizeof *srv->daemons);
    srv->open = hr_xcalloc(threads, sizeof *srv->open);
    unsigned limit = (srv->cfg.max_connections + threads - 1) / threads;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG |
                     MHD_USE_NO_LISTEN_SOCKET;
    for (unsigned i = 0; i < threads; i++) {
        atomic_init(&srv->open[i], 0);
        srv->daemons[i] = MHD_start_daemon(
            flags, 0, NULL, NULL, on_access, srv,
            /* the logger first, so that start-up errors reach it */
            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_CONNECTION_LIMIT, limit,
            MHD_OPTION_CONNECTION_TIMEOUT, srv->cfg.timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
            (size_t)CONNECTION_MEMORY, MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_NOTIFY_COMPLETED,
            on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, &srv->open[i], MHD_OPTION_END);
        if (srv->daemons[i] == NULL) {
            rc = hr_err_set(err, HR_EIO, "cannot start HTTP I/O thread %u (see the log above)", i);
            goto fail;
        }
    }
    rc = hr_listener_start(srv->listener, srv->daemons, srv->open, threads, err);
    if (rc != 0) goto fail;
    *out = srv;
    return 0;

fail:
    hr_listener_close(srv->listener);
    stop_daemons(srv);
    metrics_free(&srv->metrics);
    router_free(&srv->router);
    free(srv);
    return rc;
}

uint16_t hr_http_port(const hr_http_server *srv) {
    return srv ? srv->port : 0;
}

void hr_http_stop(hr_http_server *srv) {
    if (srv == NULL) return;
    atomic_store(&srv->stopping, true);
    hr_listener_close(srv->listener); /* no new connections */
    /* Requests already read keep going on their I/O threads; wait for them
     * (bounded: a client stalled mid-body must not hold up a shutdown). */
    for (int waited = 0; waited < STOP_WAIT_MS; waited += 5) {
        if (atomic_load_explicit(&srv->in_flight, memory_order_acquire) == 0) break;
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
    unsigned left = atomic_load(&srv->in_flight);
    if (left) hr_warn("http: stopping with %u requests still in flight", left);
    stop_daemons(srv);
    metrics_free(&srv->metrics);
    router_free(&srv->router);
    free(srv);
}

/* ---- Reading a request ---- */

const char *hr_req_method(const hr_request *req) {
    return req->method;
}
const char *hr_req_path(const hr_request *req) {
    return req->path;
}

hr_slice hr_req_param(const hr_request *req, const char *name) {
    if (req->route < 0) return hr_slice_of("", 0);
    const rt_route *rt = &req->srv->router.routes[req->route];
    for (unsigned k = 0; k < rt->n_params; k++)
        if (strcmp(rt->param_name[k], name) == 0) return req->segs[rt->param_seg[k]];
    return hr_slice_of("", 0);
}

const char *hr_req_query(const hr_request *req, const char *name) {
    const char *v = NULL;
    size_t n = 0;
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v, &n) !=
        MHD_YES)
        return NULL;
    return v ? v : ""; /* "?flag" has no value: present, empty */
}

const char *hr_req_header(const hr_request *req, const char *name) {
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

hr_slice hr_req_body(const hr_request *req) {
    return req->body ? hr_slice_of(req->body, req->body_len) : hr_slice_of("", 0);
}

const hr_principal *hr_req_principal(const hr_request *req) {
    return &req->principal;
}
hr_arena *hr_req_arena(hr_request *req) {
    return &req->arena;
}
void *hr_req_app(const hr_request *req) {
    return req->srv->cfg.app;
}
hr_http_server *hr_req_server(const hr_request *req) {
    return req->srv;
}
