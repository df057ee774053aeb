/* metrics.c — HTTP request metrics in Prometheus text format.
 *
 *   herald_http_requests_total{route="/api/v1/counter/{object}",method="PUT",status="200"} 42
 *   herald_http_request_duration_seconds_bucket{route=...,method=...,le="0.001"} 40
 *   herald_http_request_duration_seconds_sum / _count
 *
 * One series per route of the table (labelled by its pattern and method, so
 * cardinality is bounded by the table, never by client input) and one per
 * method for requests that matched no route (route="unmatched": 404, 405).
 * A HEAD answered by a GET route counts under that route.
 *
 * This runs on every request, on every I/O thread: a request costs a few
 * relaxed atomic adds on its route's own cache lines and no lock.
 * Statuses are counted in a fixed set of slots (the statuses herald answers,
 * then one per class for anything else), latencies in fixed buckets; the
 * render cumulates the buckets. A render racing with requests may see a
 * count and a sum from slightly different instants, as Prometheus allows.
 */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "http/http_internal.h"

/* Bucket upper bounds: 100 µs .. 10 s. */
static const uint64_t bucket_ns[MX_BUCKETS] = {
    100000,   250000,    500000,    1000000,   2500000,    5000000,    10000000,   25000000,
    50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};
static const char *const bucket_le[MX_BUCKETS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
    "0.05",   "0.1",     "0.25",   "0.5",   "1",      "2.5",   "5",    "10",
};

/* Status slots: the statuses herald answers, then 1xx..5xx for the rest. */
static const unsigned slot_status[MX_STATUS_SLOTS - 5] = {
    200, 201, 202, 204, 400, 401, 403, 404, 405, 409, 413, 429, 500, 501, 503, 304,
};
static const char *const class_label[5] = {"1xx", "2xx", "3xx", "4xx", "5xx"};

static unsigned status_slot(unsigned status) {
    for (unsigned i = 0; i < MX_STATUS_SLOTS - 5; i++)
        if (slot_status[i] == status) return i;
    unsigned cls = status / 100;
    if (cls < 1 || cls > 5) cls = 5;
    return MX_STATUS_SLOTS - 5 + cls - 1;
}

void metrics_init(hr_metrics *m, size_t n_routes) {
    /* aligned_alloc: the series are cache-line aligned (see mx_series); the
     * size is a multiple of the alignment because sizeof is. */
    size_t size = (n_routes + MX_UNMATCHED) * sizeof(mx_series);
    m->routes = aligned_alloc(_Alignof(mx_series), size);
    if (m->routes == NULL) abort(); /* as hr_xmalloc does: see alloc.h */
    memset(m->routes, 0, size);
    m->unmatched = m->routes + n_routes;
    m->n_routes = n_routes;
}

void metrics_free(hr_metrics *m) {
    free(m->routes);
    m->routes = m->unmatched = NULL;
    m->n_routes = 0;
}

/* The series of unmatched requests for a method. */
static unsigned unmatched_index(const char *method) {
    int mi = hr_method_index(method);
    if (mi >= 0) return (unsigned)mi;
    return strcmp(method, "HEAD") == 0 ? HM_COUNT : HM_COUNT + 1;
}

void metrics_observe(hr_metrics *m, int route, const char *method, unsigned status, uint64_t ns) {
    mx_series *s = route >= 0 ? &m->routes[route] : &m->unmatched[unmatched_index(method)];
    unsigned b = 0;
    while (b < MX_BUCKETS && ns > bucket_ns[b])
        b++;
    atomic_fetch_add_explicit(&s->status[status_slot(status)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_ns, ns, memory_order_relaxed);
}

/* A label value: Prometheus escapes backslash, double quote and newline. */
static void label(hr_buf *out, const char *v) {
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') hr_buf_append_byte(out, '\\');
        if (*v == '\n') {
            hr_buf_append_str(out, "\\n");
            continue;
        }
        hr_buf_append_byte(out, (uint8_t)*v);
    }
}

static void labels(hr_buf *out, const char *route, const char *method) {
    hr_buf_append_str(out, "route=\"");
    label(out, route);
    hr_buf_append_str(out, "\",method=\"");
    label(out, method);
    hr_buf_append_byte(out, '"');
}

static void render_counts(hr_buf *out, const mx_series *s, const char *route, const char *method) {
    for (unsigned i = 0; i < MX_STATUS_SLOTS; i++) {
        uint64_t n = atomic_load_explicit(&s->status[i], memory_order_relaxed);
        if (n == 0) continue;
        hr_buf_append_str(out, "herald_http_requests_total{");
        labels(out, route, method);
        if (i < MX_STATUS_SLOTS - 5)
            hr_buf_printf(out, ",status=\"%u\"} %llu\n", slot_status[i], (unsigned long long)n);
        else
            hr_buf_printf(out, ",status=\"%s\"} %llu\n", class_label[i - (MX_STATUS_SLOTS - 5)],
                          (unsigned long long)n);
    }
}

static void render_histogram(hr_buf *out, const mx_series *s, const char *route, const char *method) {
    uint64_t counts[MX_BUCKETS + 1], total = 0;
    for (unsigned b = 0; b <= MX_BUCKETS; b++) {
        counts[b] = atomic_load_explicit(&s->bucket[b], memory_order_relaxed);
        total += counts[b];
    }
    if (total == 0) return;
    uint64_t cum = 0;
    for (unsigned b = 0; b <= MX_BUCKETS; b++) {
        cum += counts[b];
        hr_buf_append_str(out, "herald_http_request_duration_seconds_bucket{");
        labels(out, route, method);
        hr_buf_printf(out, ",le=\"%s\"} %llu\n", b < MX_BUCKETS ? bucket_le[b] : "+Inf",
                      (unsigned long long)cum);
    }
    uint64_t sum = atomic_load_explicit(&s->sum_ns, memory_order_relaxed);
    hr_buf_append_str(out, "herald_http_request_duration_seconds_sum{");
    labels(out, route, method);
    hr_buf_printf(out, "} %llu.%09llu\n", (unsigned long long)(sum / 1000000000u),
                  (unsigned long long)(sum % 1000000000u));
    hr_buf_append_str(out, "herald_http_request_duration_seconds_count{");
    labels(out, route, method);
    hr_buf_printf(out, "} %llu\n", (unsigned long long)total);
}

static const char *unmatched_method(unsigned i) {
    if (i < HM_COUNT) return hr_method_names[i];
    return i == HM_COUNT ? "HEAD" : "other";
}

void hr_http_metrics_render(const hr_http_server *srv, hr_buf *out) {
    const hr_metrics *m = &srv->metrics;
    const hr_router *r = &srv->router;

    hr_buf_append_str(out, "# HELP herald_http_requests_total HTTP requests answered, by "
                           "route pattern, method and status.\n"
                           "# TYPE herald_http_requests_total counter\n");
    for (size_t i = 0; i < m->n_routes; i++)
        render_counts(out, &m->routes[i], r->routes[i].def->pattern, hr_method_names[r->routes[i].method]);
    for (unsigned i = 0; i < MX_UNMATCHED; i++)
        render_counts(out, &m->unmatched[i], "unmatched", unmatched_method(i));

    hr_buf_append_str(out, "# HELP herald_http_request_duration_seconds Time from the request "
                           "line to the answer being queued.\n"
                           "# TYPE herald_http_request_duration_seconds histogram\n");
    for (size_t i = 0; i < m->n_routes; i++)
        render_histogram(out, &m->routes[i], r->routes[i].def->pattern, hr_method_names[r->routes[i].method]);
    for (unsigned i = 0; i < MX_UNMATCHED; i++)
        render_histogram(out, &m->unmatched[i], "unmatched", unmatched_method(i));
}
