/* reading.c — social reading's handle, the sites an admin selects, and
 * sharing: opting in, and opting out, which deletes the user's recorded
 * reads. reading.h has the model and the costs, reading_keys.h the keys;
 * reading_internal.h lists the other parts. */
#include <stdlib.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "core/exec.h"
#include "core/reading_internal.h"
#include "core/reading_keys.h"
#include "core/url.h"

#define OPT_OUT_BATCH 1000 /* deletions per batch when a user opts out */

hr_reading *hr_reading_new(hr_store *store, hr_graph *graph, const hr_reading_options *o) {
    hr_reading *r = hr_xcalloc(1, sizeof *r);
    r->store = store;
    r->graph = graph;
    r->ns = hr_xstrdup(o->ns ? o->ns : "");
    r->ttl = o->ttl_ms > 0 ? o->ttl_ms : 1;
    r->costs = o->costs ? *o->costs : hr_rplan_default_costs();
    r->trends = hr_trends_new(store, r->ns);
    r->assist = hr_assist_new(); /* NULL (no thread): every query runs alone */
    r->split_tests = o->split_tests ? o->split_tests : HR_READING_SPLIT_TESTS;
    r->split_no_wait = o->split_no_wait;
    long cpus = o->cpus > 0 ? o->cpus : sysconf(_SC_NPROCESSORS_ONLN);
    r->cpus = cpus > 0 ? (int)cpus : 1;
    return r;
}

void hr_reading_free(hr_reading *r) {
    if (r == NULL) return;
    hr_trends_free(r->trends);
    hr_assist_free(r->assist);
    free(r->ns);
    free(r);
}

hr_trends *hr_reading_trends(hr_reading *r) {
    return r->trends;
}

/* ---- Sites -------------------------------------------------------------------- */

static int canonical_site(hr_slice domain, hr_buf *out, hr_err *err) {
    hr_err inner = {0};
    if (hr_url_canonical_host(domain, out, &inner) != HR_OK)
        return hr_err_set(err, HR_EINVAL, "domain: %s", inner.msg);
    return HR_OK;
}

/* Select (add) or unselect a site: one zadd or zrem; *changed says whether
 * it did anything. Selecting checks the limit first, in a round trip of its
 * own. */
static int site_change(hr_reading *r, hr_slice domain, bool add, int64_t now_ms, hr_arena *a, hr_slice *site,
                       bool *changed, hr_err *err) {
    hr_buf c = HR_BUF_INIT, k = HR_BUF_INIT;
    int rc = canonical_site(domain, &c, err);
    hr_slice key = hr_rk_sites(&k, r->ns), member = hr_buf_slice(&c);
    hr_batch *b = hr_batch_new();
    if (rc == HR_OK && add) {
        size_t card = hr_zcard(b, key);
        size_t had = hr_zscore(b, key, member);
        rc = hr_core_exec(r->store, b, 0, "sites", err);
        if (rc == HR_OK && hr_batch_result(b, had)->rc == HR_ENOTFOUND &&
            hr_batch_result(b, card)->num >= HR_READING_SITES_MAX)
            rc = hr_err_set(err, HR_ELIMIT, "at most %d sites can be selected", HR_READING_SITES_MAX);
        hr_batch_reset(b);
    }
    if (rc == HR_OK) {
        size_t op = add ? hr_zadd(b, key, (double)now_ms, member) : hr_zrem(b, key, member);
        rc = hr_core_exec(r->store, b, 0, "sites", err);
        if (rc == HR_OK) {
            *changed = hr_batch_result(b, op)->num == 1;
            *site = hr_arena_copy(a, member);
        }
    }
    hr_batch_free(b);
    hr_buf_free(&c);
    hr_buf_free(&k);
    return rc;
}

int hr_reading_site_add(hr_reading *r, hr_slice domain, int64_t now_ms, hr_arena *a, hr_slice *site,
                        bool *was_new, hr_err *err) {
    return site_change(r, domain, true, now_ms, a, site, was_new, err);
}

int hr_reading_site_remove(hr_reading *r, hr_slice domain, hr_arena *a, hr_slice *site, bool *was_selected,
                           hr_err *err) {
    return site_change(r, domain, false, 0, a, site, was_selected, err);
}

static int slice_cmp(const void *x, const void *y) {
    return hr_slice_cmp(*(const hr_slice *)x, *(const hr_slice *)y);
}

int hr_reading_sites(hr_reading *r, hr_arena *a, hr_slice **sites, size_t *n, hr_err *err) {
    *sites = NULL;
    *n = 0;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    hr_zrange_spec spec = hr_zrange_all(false, HR_READING_SITES_MAX);
    size_t op = hr_zrange(b, hr_rk_sites(&k, r->ns), &spec);
    int rc = hr_core_exec(r->store, b, 0, "sites", err);
    if (rc == HR_OK) {
        const hr_result *res = hr_batch_result(b, op);
        *sites = hr_arena_alloc(a, (res->n_entries + 1) * sizeof **sites);
        for (size_t i = 0; i < res->n_entries; i++)
            (*sites)[i] = hr_arena_copy(a, res->entries[i].member);
        *n = res->n_entries;
        qsort(*sites, *n, sizeof **sites, slice_cmp);
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

/* ---- Sharing ------------------------------------------------------------------ */

int hr_reading_share(hr_reading *r, hr_slice uid, bool *share, hr_err *err) {
    *share = false;
    int rc = check_uid(uid, "uid", err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op = hr_get(b, hr_rk_user(&k, r->ns, uid, "/in"));
    rc = hr_core_exec(r->store, b, 0, "sharing", err);
    if (rc == HR_OK) *share = hr_batch_result(b, op)->rc == HR_OK;
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

/* Delete uid's recorded reads: its entries in the reader lists of the URLs
 * its by-time set names, then its own sets. Runs after the opt-in flag is
 * gone (reading.h says why that order). */
static int delete_reads(hr_reading *r, hr_slice uid, hr_err *err) {
    hr_buf tk = HR_BUF_INIT, k = HR_BUF_INIT;
    hr_rk_user(&tk, r->ns, uid, "/t");
    hr_batch *b = hr_batch_new(), *w = hr_batch_new();
    hr_zrange_spec spec = hr_zrange_all(false, HR_ZRANGE_LIMIT_MAX);
    hr_arena cur = HR_ARENA_INIT;
    int rc = HR_OK;
    for (;;) {
        hr_batch_reset(b);
        size_t op = hr_zrange(b, hr_buf_slice(&tk), &spec);
        rc = hr_core_exec(r->store, b, 0, "opt-out", err);
        if (rc != HR_OK) break;
        const hr_result *res = hr_batch_result(b, op);
        for (size_t i = 0; i < res->n_entries && rc == HR_OK; i++) {
            uint64_t h;
            if (!hr_rk_h8_parse(res->entries[i].member, &h)) continue;
            hr_buf_clear(&k);
            hr_zrem(w, hr_rk_url(&k, r->ns, h, "/r"), uid);
            hr_buf_clear(&k);
            hr_pset_rem(w, hr_rk_url(&k, r->ns, h, "/s"), hr_rk_reader(uid));
            if (hr_batch_len(w) >= OPT_OUT_BATCH) {
                rc = hr_core_exec(r->store, w, 0, "opt-out", err);
                hr_batch_reset(w);
            }
        }
        if (rc != HR_OK || !res->more || res->n_entries == 0) break;
        const hr_zentry *last = &res->entries[res->n_entries - 1];
        spec.has_cursor = true;
        spec.cursor_score = last->score;
        spec.cursor_member = hr_arena_copy(&cur, last->member);
    }
    if (rc == HR_OK) {
        hr_del(w, hr_buf_slice(&tk));
        hr_buf_clear(&k);
        hr_del(w, hr_rk_user(&k, r->ns, uid, "/p"));
        rc = hr_core_exec(r->store, w, 0, "opt-out", err);
    }
    hr_arena_free(&cur);
    hr_batch_free(b);
    hr_batch_free(w);
    hr_buf_free(&tk);
    hr_buf_free(&k);
    return rc;
}

int hr_reading_set_share(hr_reading *r, hr_slice uid, bool share, int64_t now_ms, hr_err *err) {
    int rc = check_uid(uid, "uid", err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    hr_slice key = hr_rk_user(&k, r->ns, uid, "/in");
    if (share) {
        char v[8];
        hr_store_u64be(v, (uint64_t)now_ms);
        hr_put(b, key, hr_slice_of(v, 8), 0);
    } else {
        hr_del(b, key);
    }
    rc = hr_core_exec(r->store, b, 0, "sharing", err);
    if (rc == HR_OK && !share) rc = delete_reads(r, uid, err);
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}
