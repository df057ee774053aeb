/* ops.c — operations endpoints: /healthz for load balancers and /metrics in
 * Prometheus text format (HTTP metrics from the transport, store operation
 * totals from the store dispatcher). */
#include "api/api.h"
#include "common/buf.h"
#include "common/clock.h"

void hr_api_healthz(hr_request *req) {
    hr_app *app = hr_req_app(req);
    hr_err err = {0};
    int rc = hr_store_ping(app->store, &err);
    if (rc != HR_OK) return hr_reply_error(req, HR_EUNAVAIL, &err);
    hr_reply_json(req, 200,
                  json_pack("{s:s,s:s}", "status", "ok", "store", hr_store_caps_of(app->store)->kind));
}

/* The fan-out queue: depth and lag (age of the oldest job) read from the
 * store, so they cover every herald process sharing it; entries and jobs
 * are this process's. */
static void fanout_metrics(hr_app *app, hr_buf *out) {
    int64_t depth = 0, oldest = 0;
    hr_err err = {0};
    bool known = hr_fanout_queue_info(app->feeds, &depth, &oldest, &err) == HR_OK;
    int64_t lag = known && depth > 0 && oldest > 0 ? hr_now_ms() - oldest : 0;
    hr_buf_printf(out,
                  "# HELP herald_fanout_queue_depth Fan-out jobs waiting or running (all processes).\n"
                  "# TYPE herald_fanout_queue_depth gauge\n"
                  "herald_fanout_queue_depth %lld\n"
                  "# HELP herald_fanout_lag_seconds Age of the oldest fan-out job not yet done.\n"
                  "# TYPE herald_fanout_lag_seconds gauge\n"
                  "herald_fanout_lag_seconds %.3f\n"
                  "# HELP herald_fanout_entries_total Timeline entries written by fan-out in this process.\n"
                  "# TYPE herald_fanout_entries_total counter\n"
                  "herald_fanout_entries_total %llu\n"
                  "# HELP herald_fanout_jobs_total Fan-out jobs completed by this process.\n"
                  "# TYPE herald_fanout_jobs_total counter\n"
                  "herald_fanout_jobs_total %llu\n",
                  known ? (long long)depth : -1LL, (double)(lag > 0 ? lag : 0) / 1000.0,
                  (unsigned long long)hr_fanout_entries_total(), (unsigned long long)hr_fanout_jobs_total());
}

/* Home timelines' first pages kept in memory (core/feeds_memo.c), where
 * they are (RocksDB). */
static void timeline_cache_metrics(hr_app *app, hr_buf *out) {
    hr_memo_stats st;
    if (!hr_feeds_page_memo_stats(app->feeds, &st)) return;
    hr_buf_printf(
        out,
        "# HELP herald_timeline_cache_hits_total Home timeline first pages answered from memory.\n"
        "# TYPE herald_timeline_cache_hits_total counter\n"
        "herald_timeline_cache_hits_total %llu\n"
        "# HELP herald_timeline_cache_misses_total First pages read from the store (stale ones included).\n"
        "# TYPE herald_timeline_cache_misses_total counter\n"
        "herald_timeline_cache_misses_total %llu\n"
        "# HELP herald_timeline_cache_stale_total Kept pages dropped because what they show changed.\n"
        "# TYPE herald_timeline_cache_stale_total counter\n"
        "herald_timeline_cache_stale_total %llu\n"
        "# HELP herald_timeline_cache_pages First pages kept.\n"
        "# TYPE herald_timeline_cache_pages gauge\n"
        "herald_timeline_cache_pages %zu\n"
        "# HELP herald_timeline_cache_bytes Memory the kept pages take (of the memos' share of memory).\n"
        "# TYPE herald_timeline_cache_bytes gauge\n"
        "herald_timeline_cache_bytes %zu\n",
        (unsigned long long)st.hits, (unsigned long long)st.misses, (unsigned long long)st.stale, st.entries,
        st.bytes);
}

void hr_api_metrics(hr_request *req) {
    hr_buf out = HR_BUF_INIT;
    hr_http_metrics_render(hr_req_server(req), &out);
    hr_store_metrics m;
    hr_store_metrics_of(((hr_app *)hr_req_app(req))->store, &m);
    hr_buf_append_str(&out, "# HELP herald_store_ops_total Store operations executed, by type.\n"
                            "# TYPE herald_store_ops_total counter\n");
    for (int t = 0; t < HR_OP_COUNT_; t++)
        hr_buf_printf(&out, "herald_store_ops_total{op=\"%s\"} %llu\n", hr_op_label((hr_op_type)t),
                      (unsigned long long)m.ops[t]);
    hr_buf_printf(&out,
                  "# HELP herald_store_batches_total Store batches (round trips) executed.\n"
                  "# TYPE herald_store_batches_total counter\n"
                  "herald_store_batches_total %llu\n"
                  "# HELP herald_store_batch_errors_total Store batches that failed.\n"
                  "# TYPE herald_store_batch_errors_total counter\n"
                  "herald_store_batch_errors_total %llu\n",
                  (unsigned long long)m.batches, (unsigned long long)m.batch_errors);
    if (m.n_caches > 0)
        hr_buf_append_str(&out,
                          "# HELP herald_store_cache_bytes Bytes a store cache holds.\n"
                          "# TYPE herald_store_cache_bytes gauge\n"
                          "# HELP herald_store_cache_budget_bytes Bytes of memory a store cache may hold.\n"
                          "# TYPE herald_store_cache_budget_bytes gauge\n");
    for (size_t i = 0; i < m.n_caches; i++)
        hr_buf_printf(&out,
                      "herald_store_cache_bytes{cache=\"%s\"} %zu\n"
                      "herald_store_cache_budget_bytes{cache=\"%s\"} %zu\n",
                      m.caches[i].name, m.caches[i].bytes, m.caches[i].name, m.caches[i].budget);
    fanout_metrics(hr_req_app(req), &out);
    timeline_cache_metrics(hr_req_app(req), &out);
    hr_reply_text(req, 200, hr_buf_slice(&out));
    hr_buf_free(&out);
}
