/* problem.c — errors as HTTP answers: the one table from herald error codes
 * to statuses, and RFC 9457 problem documents.
 *
 * Every error a client sees goes through problem_send, with the body
 *   {"type":"about:blank","title":"Not Found","status":404,"detail":"..."}
 * and Content-Type application/problem+json. "about:blank" says the status
 * alone is the problem type (RFC 9457 section 4.2.1), so title is the reason
 * phrase of the status and detail is where the specifics go: which field,
 * which limit, which user.
 *
 * Server-side failures (HR_EIO, HR_EINTERNAL) are logged with what went wrong
 * and answered with a generic detail: the store's error text is for
 * operators, not clients. 503 (store unavailable) keeps its detail, which
 * says only that and is what a client or load balancer needs to know.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "http/http_internal.h"

/* The table. Indexed by code - HR_ERR_FIRST_; every code of err.h must have a
 * row (checked by the unit tests). */
static const unsigned status_of[HR_ERR_LAST_ - HR_ERR_FIRST_] = {
    [HR_EINVAL - HR_ERR_FIRST_] = 400,     [HR_ENOTFOUND - HR_ERR_FIRST_] = 404,
    [HR_EEXISTS - HR_ERR_FIRST_] = 409,    [HR_ECONFLICT - HR_ERR_FIRST_] = 409,
    [HR_ETOOBIG - HR_ERR_FIRST_] = 413,    [HR_ELIMIT - HR_ERR_FIRST_] = 429,
    [HR_EUNAUTH - HR_ERR_FIRST_] = 401,    [HR_EFORBIDDEN - HR_ERR_FIRST_] = 403,
    [HR_EWRONGTYPE - HR_ERR_FIRST_] = 409, [HR_EIO - HR_ERR_FIRST_] = 500,
    [HR_EUNAVAIL - HR_ERR_FIRST_] = 503,   [HR_ENOTSUP - HR_ERR_FIRST_] = 501,
    [HR_EINTERNAL - HR_ERR_FIRST_] = 500,
};

unsigned hr_status_of(int code) {
    if (code == HR_OK) return 200;
    if (code > HR_ERR_FIRST_ && code < HR_ERR_LAST_ && status_of[code - HR_ERR_FIRST_] != 0)
        return status_of[code - HR_ERR_FIRST_];
    return 500; /* a code this table does not know is a bug: never blame the client */
}

const char *hr_status_title(unsigned status) {
    /* libmicrohttpd has the IANA registry's phrases ("Content Too Large" for
     * 413, as RFC 9110 names it); "Unknown" for anything else. */
    return MHD_get_reason_phrase_for(status);
}

/* A problem document, compact JSON; malloc'd (json_dumps), caller frees. */
static char *problem_body(unsigned status, const char *detail) {
    json_t *doc = json_object();
    json_object_set_new(doc, "type", json_string("about:blank"));
    json_object_set_new(doc, "title", json_string(hr_status_title(status)));
    json_object_set_new(doc, "status", json_integer(status));
    /* json_string refuses invalid UTF-8, which a detail quoting client input
     * (a decoded path) may hold: then non-ASCII bytes become '?'. */
    json_t *d = json_string(detail);
    if (d == NULL) {
        char ascii[512];
        size_t i = 0;
        for (; detail[i] && i < sizeof ascii - 1; i++)
            ascii[i] = (unsigned char)detail[i] < 0x80 ? detail[i] : '?';
        ascii[i] = '\0';
        d = json_string(ascii);
    }
    json_object_set_new(doc, "detail", d);
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return s;
}

void problem_send(hr_request *req, unsigned status, const char *detail, const char *hdr, const char *val,
                  const char *log_detail) {
    if (server_answered(req, status)) return;
    if (status >= 500)
        hr_error("http: %u %s %s: %s", status, req->method, req->path, log_detail ? log_detail : detail);
    char *body = problem_body(status, detail);
    struct MHD_Response *resp = body ? server_response(strlen(body), body, MHD_RESPMEM_MUST_FREE)
                                     : server_response(0, "", MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
    if (hdr) MHD_add_response_header(resp, hdr, val);
    server_respond(req, status, resp);
}

void hr_reply_problem(hr_request *req, unsigned status, const char *fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    problem_send(req, status, detail, NULL, NULL, NULL);
}

void hr_reply_error(hr_request *req, int code, const hr_err *err) {
    if (code == HR_OK) code = HR_EINTERNAL; /* "failed with success" is a handler bug */
    unsigned status = hr_status_of(code);
    const char *msg = err && err->msg[0] ? err->msg : hr_strerror(code);
    if (code == HR_EIO || code == HR_EINTERNAL || status == 500) {
        char log[400];
        snprintf(log, sizeof log, "%s: %s", hr_errname(code), msg);
        problem_send(req, status, hr_strerror(code == HR_EIO ? HR_EIO : HR_EINTERNAL), NULL, NULL, log);
        return;
    }
    problem_send(req, status, msg, NULL, NULL, NULL);
}
