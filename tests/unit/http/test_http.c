/* Unit tests of src/http: a real server on a free loopback port, a table of
 * test handlers, and a tiny blocking HTTP/1.1 client on raw sockets (so the
 * tests see exactly the bytes on the wire: Connection headers, pipelined
 * responses, a connection closed after a 413).
 *
 * Each Criterion test runs in its own process with its own server, so tests
 * are independent and LeakSanitizer checks each one at exit. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "http/http.h"

/* ---- Test handlers ---- */

static void h_params(hr_request *req) {
    char text[600];
    hr_slice a = hr_req_param(req, "id"), x = hr_req_param(req, "x"), y = hr_req_param(req, "y");
    snprintf(text, sizeof text, "id=%.*s x=%.*s y=%.*s", (int)a.len, a.ptr, (int)x.len, x.ptr, (int)y.len,
             y.ptr);
    hr_reply_text(req, 200, hr_slice_str(text));
}

static void h_literal(hr_request *req) {
    hr_reply_text(req, 200, hr_slice_str("literal"));
}

static void h_echo(hr_request *req) {
    hr_slice b = hr_req_body(req);
    /* bodies are NUL-terminated (asserts belong to the test's thread, not here) */
    if (b.ptr[b.len] != '\0')
        hr_reply_text(req, 500, hr_slice_str("body not terminated"));
    else
        hr_reply_text(req, 200, b);
}

static void h_query(hr_request *req) {
    const char *q = hr_req_query(req, "q"), *flag = hr_req_query(req, "flag");
    char text[300];
    snprintf(text, sizeof text, "q=%s flag=%s missing=%s", q ? q : "(null)", flag ? flag : "(null)",
             hr_req_query(req, "nope") ? "yes" : "(null)");
    hr_reply_text(req, 200, hr_slice_str(text));
}

static void h_forget(hr_request *req) {
    (void)req;
}

static void h_twice(hr_request *req) {
    hr_reply_text(req, 200, hr_slice_str("first"));
    hr_reply_json(req, 201, json_pack("{s:s}", "second", "x")); /* ignored, and freed */
}

static void h_json(hr_request *req) {
    hr_reply_json(req, 201, json_pack("{s:b,s:i}", "ok", 1, "n", 7));
}

static atomic_int slow_started;
static void h_slow(hr_request *req) {
    atomic_store(&slow_started, 1);
    nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
    hr_reply_text(req, 200, hr_slice_str("slow done"));
}

static void h_whoami(hr_request *req) {
    const hr_principal *p = hr_req_principal(req);
    char text[200];
    snprintf(text, sizeof text, "%s%s", p->admin ? "admin" : p->user[0] ? "user:" : "anonymous", p->user);
    hr_reply_text(req, 200, hr_slice_str(text));
}

static void h_metrics(hr_request *req) {
    hr_buf b = HR_BUF_INIT;
    hr_http_metrics_render(hr_req_server(req), &b);
    hr_reply_text(req, 200, hr_buf_slice(&b));
    hr_buf_free(&b);
}

static void h_error(hr_request *req) {
    const char *c = hr_req_query(req, "code");
    int code = strcmp(c, "EIO") == 0        ? HR_EIO
               : strcmp(c, "UNAVAIL") == 0  ? HR_EUNAVAIL
               : strcmp(c, "NOTFOUND") == 0 ? HR_ENOTFOUND
                                            : HR_EINVAL;
    hr_err err;
    hr_err_set(&err, code, "secret internal %s detail", c);
    hr_reply_error(req, code, &err);
}

static void h_app(hr_request *req) {
    hr_reply_text(req, 200, hr_slice_str(hr_req_app(req)));
}

static void h_header(hr_request *req) {
    const char *v = hr_req_header(req, "x-test");
    hr_reply_text(req, 200, hr_slice_str(v ? v : "(null)"));
}

/* The I/O thread that runs the handler. */
static void h_thread(hr_request *req) {
    char id[32];
    snprintf(id, sizeof id, "%ld", (long)syscall(SYS_gettid));
    hr_reply_text(req, 200, hr_slice_str(id));
}

static const hr_route routes[] = {
    {"GET", "/thread", h_thread, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/items/{id}", h_params, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/items/special", h_literal, HR_ACCESS_PUBLIC, NULL, 0},
    {"PUT", "/items/{id}", h_echo, HR_ACCESS_PUBLIC, NULL, 16},
    {"GET", "/a/{x}/{y}", h_params, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/stories/recent", h_literal, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/stories/{id}/ratings", h_params, HR_ACCESS_PUBLIC, NULL, 0},
    {"POST", "/echo", h_echo, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/query", h_query, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/forget", h_forget, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/twice", h_twice, HR_ACCESS_PUBLIC, NULL, 0},
    {"POST", "/json", h_json, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/slow", h_slow, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/metrics", h_metrics, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/error", h_error, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/app", h_app, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/header", h_header, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/", h_literal, HR_ACCESS_PUBLIC, NULL, 0},
    /* auth */
    {"GET", "/public", h_whoami, HR_ACCESS_PUBLIC, NULL, 0},
    {"GET", "/any", h_whoami, HR_ACCESS_ANY, NULL, 0},
    {"GET", "/users/{uid}/private", h_whoami, HR_ACCESS_SELF, "uid", 0},
    {"POST", "/users/{uid}/private", h_whoami, HR_ACCESS_SELF, "uid", 0},
    {"GET", "/admin", h_whoami, HR_ACCESS_ADMIN, NULL, 0},
};

/* Tokens: "admin-key" is the admin, "user:NAME" is user NAME. */
static int authenticate(void *ctx, hr_slice cred, hr_principal *out) {
    (void)ctx;
    if (hr_slice_eq(cred, hr_slice_str("admin-key"))) {
        out->admin = true;
        return 0;
    }
    if (cred.len > 5 && cred.len - 5 <= HR_IDENT_MAX && memcmp(cred.ptr, "user:", 5) == 0) {
        memcpy(out->user, cred.ptr + 5, cred.len - 5);
        out->user[cred.len - 5] = '\0';
        return 0;
    }
    return HR_EUNAUTH;
}

/* ---- The server of a test ---- */

static hr_http_server *srv;
static uint16_t port;
static char app_data[] = "the app";

static hr_http_config test_config(void) {
    hr_http_config cfg = {
        .host = "127.0.0.1",
        .port = 0,
        .threads = 2,
        .body_max = 1024,
        .timeout_s = 5,
        .routes = routes,
        .n_routes = sizeof routes / sizeof routes[0],
        .app = app_data,
        .authenticate = authenticate,
    };
    return cfg;
}

static void start(void) {
    hr_http_config cfg = test_config();
    hr_err err = {0};
    cr_assert_eq(hr_http_start(&cfg, &srv, &err), 0, "%s", err.msg);
    port = hr_http_port(srv);
    cr_assert_neq(port, 0);
}

static void stop(void) {
    hr_http_stop(srv);
    srv = NULL;
}

/* ---- A tiny HTTP/1.1 client ---- */

typedef struct client {
    int fd;
    char buf[1 << 16];
    size_t len; /* bytes received and not yet consumed */
} client;

typedef struct response {
    int status;
    char head[4096]; /* status line and headers, NUL-terminated */
    char body[1 << 15];
    size_t body_len;
} response;

static int dial(int family, const char *addr) {
    int fd = socket(family, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct timeval tv = {5, 0}; /* no test hangs on a missing answer */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc;
    if (family == AF_INET) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        inet_pton(AF_INET, addr, &sa.sin_addr);
        rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    } else {
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
        inet_pton(AF_INET6, addr, &sa.sin6_addr);
        rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    }
    cr_assert_eq(rc, 0, "connect: %s", strerror(errno));
    return fd;
}

static void c_open(client *c) {
    c->fd = dial(AF_INET, "127.0.0.1");
    c->len = 0;
}

static void c_close(client *c) {
    close(c->fd);
}

static void c_send(client *c, const char *data, size_t n) {
    while (n > 0) {
        ssize_t w = send(c->fd, data, n, MSG_NOSIGNAL);
        if (w <= 0) return; /* the server may close early (413): the test reads the answer */
        data += w;
        n -= (size_t)w;
    }
}

static void c_sendf(client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void c_sendf(client *c, const char *fmt, ...) {
    char text[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    c_send(c, text, (size_t)n);
}

/* Read more bytes; false on EOF, error or timeout. */
static bool c_fill(client *c) {
    if (c->len == sizeof c->buf) return false;
    ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
    if (r <= 0) return false;
    c->len += (size_t)r;
    return true;
}

/* A header of a response head, or NULL. Copied into out. */
static const char *header(const response *r, const char *name, char *out, size_t cap) {
    size_t nl = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r");
            if (n >= cap) n = cap - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return out;
        }
    }
    return NULL;
}

/* Read one response (head only for a HEAD request). False if the
 * connection ended before a whole one came. */
static bool c_read(client *c, response *r, bool head_only) {
    char *end;
    while ((end = memmem(c->buf, c->len, "\r\n\r\n", 4)) == NULL)
        if (!c_fill(c)) return false;
    size_t head_len = (size_t)(end - c->buf) + 4;
    cr_assert_lt(head_len, sizeof r->head);
    memcpy(r->head, c->buf, head_len);
    r->head[head_len] = '\0';
    cr_assert_eq(sscanf(r->head, "HTTP/1.1 %d", &r->status), 1, "%s", r->head);
    char v[32];
    size_t body_len = 0;
    if (!head_only && header(r, "Content-Length", v, sizeof v)) body_len = strtoul(v, NULL, 10);
    cr_assert_lt(body_len, sizeof r->body);
    while (c->len < head_len + body_len)
        if (!c_fill(c)) return false;
    memcpy(r->body, c->buf + head_len, body_len);
    r->body[body_len] = '\0';
    r->body_len = body_len;
    memmove(c->buf, c->buf + head_len + body_len, c->len - head_len - body_len);
    c->len -= head_len + body_len;
    return true;
}

/* True if the server closed the connection (EOF) with nothing more. */
static bool c_closed(client *c) {
    return c->len == 0 && !c_fill(c);
}

/* One request on a fresh connection. */
static response *fetch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static response *fetch(const char *fmt, ...) {
    static response r;
    static client c;
    char text[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    c_open(&c);
    c_send(&c, text, (size_t)n);
    cr_assert(c_read(&c, &r, strncmp(text, "HEAD ", 5) == 0), "no response to %s", text);
    c_close(&c);
    return &r;
}

static response *get(const char *path) {
    return fetch("GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
}

static response *get_auth(const char *path, const char *token) {
    return fetch("GET %s HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n\r\n", path, token);
}

/* A problem+json answer with this status, whose detail contains `detail`. */
static void assert_problem(const response *r, int status, const char *detail) {
    char v[128];
    cr_assert_eq(r->status, status, "status %d, want %d: %s", r->status, status, r->body);
    cr_assert(header(r, "Content-Type", v, sizeof v));
    cr_assert_str_eq(v, "application/problem+json");
    json_error_t jerr;
    json_t *doc = json_loads(r->body, 0, &jerr);
    cr_assert(doc, "not JSON: %s", r->body);
    cr_assert_str_eq(json_string_value(json_object_get(doc, "type")), "about:blank");
    cr_assert_str_eq(json_string_value(json_object_get(doc, "title")), hr_status_title((unsigned)status));
    cr_assert_eq(json_integer_value(json_object_get(doc, "status")), status);
    const char *d = json_string_value(json_object_get(doc, "detail"));
    cr_assert(d && strstr(d, detail), "detail \"%s\" lacks \"%s\"", d ? d : "(none)", detail);
    json_decref(doc);
}

/* ---- Pure functions ---- */

Test(http_ident, rule) {
    cr_assert(hr_ident_valid(hr_slice_str("a")));
    cr_assert(hr_ident_valid(hr_slice_str("Az09._:@~-")));
    cr_assert(hr_ident_valid(hr_slice_str("thread:7369603")));
    cr_assert_not(hr_ident_valid(hr_slice_str("")));
    cr_assert_not(hr_ident_valid(hr_slice_of(NULL, 0)));
    cr_assert_not(hr_ident_valid(hr_slice_str("a b")));
    cr_assert_not(hr_ident_valid(hr_slice_str("a/b")));
    cr_assert_not(hr_ident_valid(hr_slice_str("a%41")));
    cr_assert_not(hr_ident_valid(hr_slice_str("caf\xc3\xa9")));
    cr_assert_not(hr_ident_valid(hr_slice_of("a\0b", 3)));
    char id[HR_IDENT_MAX + 2];
    memset(id, 'x', sizeof id);
    cr_assert(hr_ident_valid(hr_slice_of(id, HR_IDENT_MAX)));
    cr_assert_not(hr_ident_valid(hr_slice_of(id, HR_IDENT_MAX + 1)));
}

Test(http_problem, status_table) {
    cr_assert_eq(hr_status_of(HR_OK), 200);
    cr_assert_eq(hr_status_of(HR_EINVAL), 400);
    cr_assert_eq(hr_status_of(HR_ENOTFOUND), 404);
    cr_assert_eq(hr_status_of(HR_EEXISTS), 409);
    cr_assert_eq(hr_status_of(HR_ECONFLICT), 409);
    cr_assert_eq(hr_status_of(HR_ETOOBIG), 413);
    cr_assert_eq(hr_status_of(HR_ELIMIT), 429);
    cr_assert_eq(hr_status_of(HR_EUNAUTH), 401);
    cr_assert_eq(hr_status_of(HR_EFORBIDDEN), 403);
    cr_assert_eq(hr_status_of(HR_EWRONGTYPE), 409);
    cr_assert_eq(hr_status_of(HR_EIO), 500);
    cr_assert_eq(hr_status_of(HR_EUNAVAIL), 503);
    cr_assert_eq(hr_status_of(HR_ENOTSUP), 501);
    cr_assert_eq(hr_status_of(HR_EINTERNAL), 500);
    cr_assert_eq(hr_status_of(12345), 500);
    /* every code has a row: a new code in err.h must be added to the table */
    for (int code = HR_ERR_FIRST_ + 1; code < HR_ERR_LAST_; code++) {
        unsigned s = hr_status_of(code);
        cr_assert(s >= 400 && s < 600, "%s has status %u", hr_errname(code), s);
        if (code != HR_EIO && code != HR_EINTERNAL)
            cr_assert_neq(s, 500, "%s falls back to 500: add it to problem.c", hr_errname(code));
    }
    cr_assert_str_eq(hr_status_title(404), "Not Found");
    cr_assert_str_eq(hr_status_title(400), "Bad Request");
    cr_assert_str_eq(hr_status_title(503), "Service Unavailable");
}

/* ---- Routing table validation ---- */

static void nop(hr_request *req) {
    hr_reply_text(req, 200, hr_slice_str(""));
}

static void assert_bad_table(hr_route r, const char *msg) {
    hr_http_config cfg = {.host = "127.0.0.1", .routes = &r, .n_routes = 1};
    hr_http_server *s = (hr_http_server *)1;
    hr_err err = {0};
    cr_assert_eq(hr_http_start(&cfg, &s, &err), HR_EINVAL, "%s %s accepted", r.method, r.pattern);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, msg), "\"%s\" lacks \"%s\"", err.msg, msg);
}

Test(http_router, validation) {
    assert_bad_table((hr_route){"FETCH", "/a", nop, HR_ACCESS_ANY, NULL, 0}, "unknown method");
    assert_bad_table((hr_route){NULL, "/a", nop, HR_ACCESS_ANY, NULL, 0}, "unknown method");
    assert_bad_table((hr_route){"GET", "a", nop, HR_ACCESS_ANY, NULL, 0}, "start with '/'");
    assert_bad_table((hr_route){"GET", "/a//b", nop, HR_ACCESS_ANY, NULL, 0}, "empty segment");
    assert_bad_table((hr_route){"GET", "/a/", nop, HR_ACCESS_ANY, NULL, 0}, "trailing");
    assert_bad_table((hr_route){"GET", "/a/{b", nop, HR_ACCESS_ANY, NULL, 0}, "whole segment");
    assert_bad_table((hr_route){"GET", "/a/x{b}", nop, HR_ACCESS_ANY, NULL, 0}, "braces");
    assert_bad_table((hr_route){"GET", "/a/{}", nop, HR_ACCESS_ANY, NULL, 0}, "whole segment");
    assert_bad_table((hr_route){"GET", "/a/{b-c}", nop, HR_ACCESS_ANY, NULL, 0}, "names");
    assert_bad_table((hr_route){"GET", "/{a}/{a}", nop, HR_ACCESS_ANY, NULL, 0}, "twice");
    assert_bad_table((hr_route){"GET", "/u/{uid}", nop, HR_ACCESS_SELF, NULL, 0}, "self_param");
    assert_bad_table((hr_route){"GET", "/u/{uid}", nop, HR_ACCESS_SELF, "user", 0}, "self_param");
    assert_bad_table((hr_route){"GET", "/u", NULL, HR_ACCESS_ANY, NULL, 0}, "no handler");

    hr_route dup[] = {{"GET", "/u/{a}", nop, HR_ACCESS_ANY, NULL, 0},
                      {"GET", "/u/{b}", nop, HR_ACCESS_ANY, NULL, 0}};
    hr_http_config cfg = {.host = "127.0.0.1", .routes = dup, .n_routes = 2};
    hr_err err = {0};
    cr_assert_eq(hr_http_start(&cfg, &srv, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "route 1") && strstr(err.msg, "same method"), "%s", err.msg);
}

Test(http_router, bad_host) {
    hr_http_config cfg = test_config();
    cfg.host = "not a host name";
    hr_err err = {0};
    cr_assert_neq(hr_http_start(&cfg, &srv, &err), 0);
    cr_assert(strstr(err.msg, "listen host"), "%s", err.msg);
}

Test(http_router, port_in_use, .init = start, .fini = stop) {
    hr_http_config cfg = test_config();
    cfg.port = port;
    hr_http_server *second = NULL;
    hr_err err = {0};
    cr_assert_eq(hr_http_start(&cfg, &second, &err), HR_EIO, "a second server shared port %u", port);
    cr_assert(strstr(err.msg, "cannot listen"), "%s", err.msg);
}

/* ---- Routing ---- */

Test(http_router, params_and_literals, .init = start, .fini = stop) {
    response *r = get("/items/abc");
    cr_assert_eq(r->status, 200);
    cr_assert_str_eq(r->body, "id=abc x= y=");
    char v[64];
    cr_assert_str_eq(header(r, "Content-Type", v, sizeof v), "text/plain; charset=utf-8");

    cr_assert_str_eq(get("/items/special")->body, "literal"); /* literal beats {id} */
    cr_assert_str_eq(get("/a/1/2")->body, "id= x=1 y=2");
    cr_assert_str_eq(get("/")->body, "literal");
    /* the literal branch leads nowhere: the parameter branch is tried */
    cr_assert_str_eq(get("/stories/recent")->body, "literal");
    cr_assert_str_eq(get("/stories/recent/ratings")->body, "id=recent x= y=");
    /* query strings are not part of the path */
    cr_assert_str_eq(get("/items/q?x=1")->body, "id=q x= y=");
}

Test(http_router, percent_encoding, .init = start, .fini = stop) {
    cr_assert_str_eq(get("/items/%41%62")->body, "id=Ab x= y=");
    cr_assert_str_eq(get("/items/%73pecial")->body, "literal"); /* decoded before matching */
    cr_assert_str_eq(get("/%61/1/2")->body, "id= x=1 y=2");
    /* an encoded '/' stays in its segment, and is not an identifier */
    assert_problem(get("/items/a%2Fb"), 400, "id must be 1..128 characters");
    assert_problem(get("/items/a%20b"), 400, "id must be");
    assert_problem(get("/items/a%zz"), 400, "id must be"); /* a bad escape stays as it is */
    assert_problem(get("/items/%00"), 400, "id must be");
}

Test(http_router, not_found, .init = start, .fini = stop) {
    assert_problem(get("/nope"), 404, "no resource at /nope");
    assert_problem(get("/items"), 404, "no resource");
    assert_problem(get("/items/"), 404, "no resource"); /* trailing slash: not found */
    assert_problem(get("/items/a/"), 404, "no resource");
    assert_problem(get("/a//2"), 404, "no resource"); /* empty segment */
    assert_problem(get("/items/a/b"), 404, "no resource");
    assert_problem(get("/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s"), 404, "no resource");
    assert_problem(get("/caf%C3%A9"), 404, "no resource at /caf\xc3\xa9"); /* UTF-8 kept */
    assert_problem(get("/x%FFy"), 404, "no resource at /x?y");             /* the rest not */
}

Test(http_router, method_not_allowed, .init = start, .fini = stop) {
    response *r = fetch("DELETE /items/x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_problem(r, 405, "DELETE is not allowed");
    char v[64];
    cr_assert(header(r, "Allow", v, sizeof v));
    cr_assert_str_eq(v, "GET, HEAD, PUT");
    r = fetch("PATCH /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi");
    assert_problem(r, 405, "PATCH");
    cr_assert_str_eq(header(r, "Allow", v, sizeof v), "POST");
    r = fetch("BREW /items/x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_problem(r, 405, "BREW");
}

Test(http_router, head, .init = start, .fini = stop) {
    response *r = fetch("HEAD /items/abc HTTP/1.1\r\nHost: t\r\n\r\n");
    cr_assert_eq(r->status, 200);
    cr_assert_eq(r->body_len, 0);
}

Test(http_router, bad_identifier, .init = start, .fini = stop) {
    char path[300];
    snprintf(path, sizeof path, "/items/%0128d", 7);
    cr_assert_eq(get(path)->status, 200);
    snprintf(path, sizeof path, "/items/%0129d", 7);
    assert_problem(get(path), 400, "id must be 1..128 characters of A-Z a-z 0-9 . _ : @ ~ -");
    assert_problem(get("/a/ok/b%21d"), 400, "y must be");
    assert_problem(get("/a/b%21d/ok"), 400, "x must be"); /* the first bad one is named */
}

/* ---- Requests and answers ---- */

Test(http_server, query_and_headers, .init = start, .fini = stop) {
    cr_assert_str_eq(get("/query?q=a%20b+c&flag")->body, "q=a b c flag= missing=(null)");
    cr_assert_str_eq(get("/query")->body, "q=(null) flag=(null) missing=(null)");
    response *r = fetch("GET /header HTTP/1.1\r\nHost: t\r\nX-Test: yes\r\n\r\n");
    cr_assert_str_eq(r->body, "yes");
    cr_assert_str_eq(get("/header")->body, "(null)");
    cr_assert_str_eq(get("/app")->body, "the app");
}

Test(http_server, json, .init = start, .fini = stop) {
    response *r = fetch("POST /json HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    cr_assert_eq(r->status, 201);
    cr_assert_str_eq(r->body, "{\"ok\":true,\"n\":7}");
    char v[64];
    cr_assert_str_eq(header(r, "Content-Type", v, sizeof v), "application/json");
}

Test(http_server, body, .init = start, .fini = stop) {
    response *r = fetch("PUT /items/x HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\ntoken");
    cr_assert_eq(r->status, 200);
    cr_assert_str_eq(r->body, "token");
    /* exactly at the route's limit (16) */
    r = fetch("PUT /items/x HTTP/1.1\r\nHost: t\r\nContent-Length: 16\r\n\r\n0123456789abcdef");
    cr_assert_str_eq(r->body, "0123456789abcdef");
    r = fetch("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    cr_assert_eq(r->status, 200);
    cr_assert_eq(r->body_len, 0);
}

Test(http_server, chunked_body, .init = start, .fini = stop) {
    client c;
    c_open(&c);
    c_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                "6\r\nhello \r\n");
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL); /* two reads on the server */
    c_sendf(&c, "5\r\nworld\r\n0\r\n\r\n");
    response r;
    cr_assert(c_read(&c, &r, false));
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "hello world");
    /* a big one in many chunks, under the limit */
    char chunk[100];
    memset(chunk, 'z', sizeof chunk);
    c_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 10; i++) {
        c_sendf(&c, "64\r\n");
        c_send(&c, chunk, sizeof chunk);
        c_sendf(&c, "\r\n");
    }
    c_sendf(&c, "0\r\n\r\n");
    cr_assert(c_read(&c, &r, false));
    cr_assert_eq(r.status, 200);
    cr_assert_eq(r.body_len, 1000);
    c_close(&c);
}

Test(http_server, body_limit_declared, .init = start, .fini = stop) {
    /* The route's own limit: 16. Answered before the body is sent. */
    client c;
    c_open(&c);
    c_sendf(&c, "PUT /items/x HTTP/1.1\r\nHost: t\r\nContent-Length: 17\r\n\r\n");
    response r;
    cr_assert(c_read(&c, &r, false));
    assert_problem(&r, 413, "16 bytes at most");
    cr_assert(c_closed(&c), "the connection stays open after a 413");
    c_close(&c);
    /* The server's default: 1024. A huge declared body is never read. */
    c_open(&c);
    c_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000000\r\n\r\nxx");
    cr_assert(c_read(&c, &r, false));
    assert_problem(&r, 413, "1024 bytes at most");
    cr_assert(c_closed(&c));
    c_close(&c);
}

Test(http_server, body_limit_chunked, .init = start, .fini = stop) {
    client c;
    c_open(&c);
    c_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    char chunk[500];
    memset(chunk, 'z', sizeof chunk);
    for (int i = 0; i < 4; i++) { /* 2000 bytes against a limit of 1024 */
        c_sendf(&c, "1f4\r\n");
        c_send(&c, chunk, sizeof chunk);
        c_sendf(&c, "\r\n");
    }
    c_sendf(&c, "0\r\n\r\n");
    response r;
    cr_assert(c_read(&c, &r, false));
    assert_problem(&r, 413, "1024 bytes at most");
    cr_assert(c_closed(&c));
    c_close(&c);
}

Test(http_server, keep_alive, .init = start, .fini = stop) {
    client c;
    c_open(&c);
    response r;
    char v[64];
    for (int i = 0; i < 3; i++) {
        c_sendf(&c, "GET /items/k%d HTTP/1.1\r\nHost: t\r\n\r\n", i);
        cr_assert(c_read(&c, &r, false), "request %d got no answer", i);
        cr_assert_eq(r.status, 200);
        cr_assert_null(header(&r, "Connection", v, sizeof v), "Connection: %s", v);
    }
    /* errors answered by the checks keep the connection too */
    c_sendf(&c, "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n");
    cr_assert(c_read(&c, &r, false));
    cr_assert_eq(r.status, 404);
    cr_assert_null(header(&r, "Connection", v, sizeof v));
    c_sendf(&c, "PUT /items/bad%%21 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc");
    cr_assert(c_read(&c, &r, false));
    cr_assert_eq(r.status, 400);
    c_sendf(&c, "GET /items/last HTTP/1.1\r\nHost: t\r\n\r\n");
    cr_assert(c_read(&c, &r, false));
    cr_assert_str_eq(r.body, "id=last x= y=");
    c_close(&c);
}

/* Connections are spread over the I/O threads: with two threads, two
 * connections get one each, and four get two each. (libmicrohttpd's own
 * pool let its threads race to accept, and two connections shared one
 * thread about half the time.) */
Test(http_server, connections_spread_over_threads, .init = start, .fini = stop) {
    enum { N = 4 };
    client c[N];
    long tid[N];
    for (int i = 0; i < N; i++) {
        c_open(&c[i]);
        c_sendf(&c[i], "GET /thread HTTP/1.1\r\nHost: t\r\n\r\n");
        response r;
        cr_assert(c_read(&c[i], &r, false));
        cr_assert_eq(r.status, 200);
        tid[i] = atol(r.body);
    }
    cr_assert_neq(tid[0], tid[1], "the first two connections share I/O thread %ld", tid[0]);
    int with_first = 0;
    for (int i = 0; i < N; i++)
        with_first += tid[i] == tid[0];
    cr_assert_eq(with_first, 2, "four connections over two threads: %d on one of them", with_first);
    for (int i = 0; i < N; i++)
        c_close(&c[i]);
}

Test(http_server, pipelining, .init = start, .fini = stop) {
    client c;
    c_open(&c);
    c_sendf(&c, "GET /items/one HTTP/1.1\r\nHost: t\r\n\r\n"
                "PUT /items/two HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
                "GET /items/three HTTP/1.1\r\nHost: t\r\n\r\n");
    response r;
    cr_assert(c_read(&c, &r, false));
    cr_assert_str_eq(r.body, "id=one x= y=");
    cr_assert(c_read(&c, &r, false));
    cr_assert_str_eq(r.body, "abc");
    cr_assert(c_read(&c, &r, false));
    cr_assert_str_eq(r.body, "id=three x= y=");
    c_close(&c);
}

Test(http_server, handler_forgets_to_answer, .init = start, .fini = stop) {
    assert_problem(get("/forget"), 500, "internal error");
}

Test(http_server, handler_answers_twice, .init = start, .fini = stop) {
    response *r = get("/twice");
    cr_assert_eq(r->status, 200);
    cr_assert_str_eq(r->body, "first");
}

Test(http_server, errors, .init = start, .fini = stop) {
    response *r = get("/error?code=EIO");
    assert_problem(r, 500, "store I/O error");
    cr_assert_null(strstr(r->body, "secret"), "internals leak: %s", r->body);
    assert_problem(get("/error?code=UNAVAIL"), 503, "secret internal UNAVAIL detail");
    assert_problem(get("/error?code=NOTFOUND"), 404, "secret internal NOTFOUND detail");
    assert_problem(get("/error?code=INVAL"), 400, "INVAL");
}

Test(http_server, ipv6) {
    hr_http_config cfg = test_config();
    cfg.host = "::1";
    hr_err err = {0};
    cr_assert_eq(hr_http_start(&cfg, &srv, &err), 0, "%s", err.msg);
    port = hr_http_port(srv);
    client c;
    c.fd = dial(AF_INET6, "::1");
    c.len = 0;
    c_sendf(&c, "GET /items/six HTTP/1.1\r\nHost: t\r\n\r\n");
    response r;
    cr_assert(c_read(&c, &r, false));
    cr_assert_str_eq(r.body, "id=six x= y=");
    c_close(&c);
    stop();
    cfg.host = "[::1]";
    cr_assert_eq(hr_http_start(&cfg, &srv, &err), 0, "%s", err.msg);
    stop();
}

/* ---- Authentication and access ---- */

Test(http_auth, matrix, .init = start, .fini = stop) {
    char v[128];
    /* PUBLIC: nothing needed; a valid token still names the caller */
    cr_assert_str_eq(get("/public")->body, "anonymous");
    cr_assert_str_eq(get_auth("/public", "user:u1")->body, "user:u1");
    cr_assert_str_eq(get_auth("/public", "wrong")->body, "anonymous");

    /* no credentials, bad scheme, bad token: 401 with a challenge */
    response *r = get("/any");
    assert_problem(r, 401, "missing credentials");
    cr_assert(header(r, "WWW-Authenticate", v, sizeof v));
    cr_assert(strncmp(v, "Bearer", 6) == 0, "%s", v);
    r = fetch("GET /any HTTP/1.1\r\nHost: t\r\nAuthorization: Basic dTpw\r\n\r\n");
    assert_problem(r, 401, "Bearer");
    cr_assert(header(r, "WWW-Authenticate", v, sizeof v));
    r = get_auth("/any", "wrong");
    assert_problem(r, 401, "invalid credentials");
    cr_assert(strstr(header(r, "WWW-Authenticate", v, sizeof v), "invalid_token"));
    r = get_auth("/admin", "wrong");
    assert_problem(r, 401, "invalid credentials");

    /* ANY */
    cr_assert_str_eq(get_auth("/any", "user:u1")->body, "user:u1");
    cr_assert_str_eq(get_auth("/any", "admin-key")->body, "admin");
    r = fetch("GET /any HTTP/1.1\r\nHost: t\r\nAuthorization: bearer   user:u9  \r\n\r\n");
    cr_assert_str_eq(r->body, "user:u9"); /* scheme is case-insensitive, spaces trimmed */

    /* SELF */
    cr_assert_str_eq(get_auth("/users/u1/private", "user:u1")->body, "user:u1");
    cr_assert_str_eq(get_auth("/users/u1/private", "admin-key")->body, "admin");
    assert_problem(get_auth("/users/u2/private", "user:u1"), 403, "token for user u1 may not act as user u2");
    assert_problem(get("/users/u1/private"), 401, "missing credentials");

    /* ADMIN */
    cr_assert_str_eq(get_auth("/admin", "admin-key")->body, "admin");
    assert_problem(get_auth("/admin", "user:u1"), 403, "admin key");

    /* the identifier check comes first: a bad uid is 400 whoever asks */
    assert_problem(get_auth("/users/u%211/private", "user:u1"), 400, "uid must be");
}

Test(http_auth, rejected_body_keeps_connection, .init = start, .fini = stop) {
    client c;
    c_open(&c);
    response r;
    c_sendf(&c, "POST /users/u2/private HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer user:u1\r\n"
                "Content-Length: 5\r\n\r\nhello");
    cr_assert(c_read(&c, &r, false));
    assert_problem(&r, 403, "may not act as user u2");
    c_sendf(&c, "POST /users/u1/private HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer user:u1\r\n"
                "Content-Length: 5\r\n\r\nhello");
    cr_assert(c_read(&c, &r, false), "the connection was closed after a 403");
    cr_assert_str_eq(r.body, "user:u1");
    c_close(&c);
}

Test(http_auth, no_secret_means_admin) {
    hr_http_config cfg = test_config();
    cfg.authenticate = NULL;
    hr_err err = {0};
    cr_assert_eq(hr_http_start(&cfg, &srv, &err), 0, "%s", err.msg);
    port = hr_http_port(srv);
    cr_assert_str_eq(get("/admin")->body, "admin");
    cr_assert_str_eq(get("/users/anyone/private")->body, "admin");
    cr_assert_str_eq(get_auth("/any", "whatever")->body, "admin");
    stop();
}

/* ---- Metrics ---- */

Test(http_metrics, counters_and_histogram, .init = start, .fini = stop) {
    get("/items/a");
    get("/items/b");
    get("/items/%21");
    get("/nope");
    fetch("DELETE /items/x HTTP/1.1\r\nHost: t\r\n\r\n");
    response *r = get("/metrics");
    cr_assert_eq(r->status, 200);
    const char *want[] = {
        "# TYPE herald_http_requests_total counter\n",
        "herald_http_requests_total{route=\"/items/{id}\",method=\"GET\",status=\"200\"} 2\n",
        "herald_http_requests_total{route=\"/items/{id}\",method=\"GET\",status=\"400\"} 1\n",
        "herald_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"} 1\n",
        "herald_http_requests_total{route=\"unmatched\",method=\"DELETE\",status=\"405\"} 1\n",
        "# TYPE herald_http_request_duration_seconds histogram\n",
        ("herald_http_request_duration_seconds_bucket{route=\"/items/{id}\",method=\"GET\","
         "le=\"+Inf\"} 3\n"),
        "herald_http_request_duration_seconds_count{route=\"/items/{id}\",method=\"GET\"} 3\n",
        "herald_http_request_duration_seconds_sum{route=\"/items/{id}\",method=\"GET\"} 0.",
        "le=\"0.0001\"}",
        "le=\"10\"}",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(r->body, want[i]), "metrics lack %s:\n%s", want[i], r->body);
    /* a route nobody called has no series */
    cr_assert_null(strstr(r->body, "route=\"/twice\""));
}

/* ---- Stopping ---- */

Test(http_stop, finishes_requests_in_flight, .init = start) {
    client c;
    c_open(&c);
    c_sendf(&c, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
    while (!atomic_load(&slow_started))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    uint64_t t0 = (uint64_t)time(NULL);
    stop(); /* returns once /slow has answered */
    cr_assert_leq((uint64_t)time(NULL) - t0, 3);
    response r;
    cr_assert(c_read(&c, &r, false), "the request in flight was cut off");
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.body, "slow done");
    char v[32];
    cr_assert_str_eq(header(&r, "Connection", v, sizeof v), "close");
    c_close(&c);
    /* and nobody listens any more */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    cr_assert_neq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
}

Test(http_stop, idle_keep_alive_does_not_block) {
    start();
    client c;
    c_open(&c);
    c_sendf(&c, "GET /items/x HTTP/1.1\r\nHost: t\r\n\r\n");
    response r;
    cr_assert(c_read(&c, &r, false));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    stop();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 2, "stop waited for an idle connection");
    cr_assert(c_closed(&c));
    c_close(&c);
    hr_http_stop(NULL); /* a no-op */
}

/* ---- Misbehaving clients ---- */

Test(http_abuse, endless_body_is_cut_off, .init = start, .fini = stop) {
    /* A chunked body that goes on far past the limit: the server reads and
     * drops 1 MiB past it, then hangs up without an answer. */
    client c;
    c_open(&c);
    c_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    static char chunk[1 << 14];
    memset(chunk, 'z', sizeof chunk);
    for (int i = 0; i < 100; i++) { /* 1.6 MB */
        c_sendf(&c, "%zx\r\n", sizeof chunk);
        c_send(&c, chunk, sizeof chunk);
        c_sendf(&c, "\r\n");
    }
    response r;
    cr_assert_not(c_read(&c, &r, false), "answered %d", r.status);
    c_close(&c);
}

Test(http_abuse, expect_continue_over_limit, .init = start, .fini = stop) {
    client c;
    c_open(&c);
    c_sendf(&c, "PUT /items/x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                "Content-Length: 100\r\n\r\n");
    response r;
    cr_assert(c_read(&c, &r, false));
    assert_problem(&r, 413, "16 bytes at most"); /* not "100 Continue" */
    c_close(&c);
}

Test(http_abuse, huge_headers, .init = start, .fini = stop) {
    static char big[40000];
    memset(big, 'h', sizeof big - 1);
    client c;
    c_open(&c);
    c_sendf(&c, "GET /items/x HTTP/1.1\r\nHost: t\r\nX-Big: ");
    c_send(&c, big, strlen(big));
    c_sendf(&c, "\r\n\r\n");
    response r;
    if (c_read(&c, &r, false)) cr_assert_geq(r.status, 400); /* or just closed */
    c_close(&c);
    cr_assert_eq(get("/items/after")->status, 200); /* and the server is fine */
}

Test(http_abuse, idle_timeout) {
    hr_http_config cfg = test_config();
    cfg.timeout_s = 1;
    hr_err err = {0};
    cr_assert_eq(hr_http_start(&cfg, &srv, &err), 0, "%s", err.msg);
    port = hr_http_port(srv);
    client c;
    c_open(&c);
    c_sendf(&c, "GET /items/x HTTP/1.1\r\nHost: t\r\n"); /* and never finishes */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    response r;
    cr_assert_not(c_read(&c, &r, false));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 4, "the idle connection was not timed out");
    c_close(&c);
    stop();
}
