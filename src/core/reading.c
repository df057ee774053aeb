/* reading.c — see reading.h for the model and the costs, reading_keys.h for
 * the keys, reading_plan.h for how friends-reads picks a side per URL. */
#include "core/reading.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/assist.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/ident.h"
#include "core/exec.h"
#include "core/friends_memo.h"
#include "core/reading_keys.h"
#include "core/url.h"

/* About one record in TRIM_EVERY (picked by the clock's last bits and the
 * URL, so no random state is shared between threads) trims the expired
 * entries of the URL's reader list and of the user's by-time set: often
 * enough that a list's size stays close to its live readers, rarely enough
 * that the range deletes (and on RocksDB the tombstones they leave for the
 * next trim to step over) cost little per read. */
#define TRIM_EVERY 16
/* A URL's canonical form is kept at least this long after its last read,
 * so that popular and trending (windows up to 7 days) can name it. */
#define URL_KEEP_MS (8 * 86400000LL)
#define OPT_OUT_BATCH 1000 /* deletions per batch when a user opts out */

struct hr_reading {
    hr_store *store;
    hr_graph *graph;
    char *ns;
    int64_t ttl;
    hr_rplan_costs costs;
    hr_trends *trends;
    hr_fmemo *memo; /* friend lists kept between calls (core/friends_memo.h) */
    hr_assist *assist; /* takes two in five of a big friends-reads' URL-set tests */
    size_t split_tests;
    bool split_no_wait;
    atomic_int running; /* friends-reads under way */
    int cpus;
};

/* Friend lists kept between calls: 4,096 users, 64 MiB (a list of 450
 * friends takes ~30 KiB, one of 5,000 ~340 KiB). */
#define MEMO_SLOTS 4096
#define MEMO_BUDGET ((size_t)64 << 20)

hr_reading *hr_reading_new(hr_store *store, hr_graph *graph, const hr_reading_options *o) {
    hr_reading *r = hr_xcalloc(1, sizeof *r);
    r->store = store;
    r->graph = graph;
    r->ns = hr_xstrdup(o->ns ? o->ns : "");
    r->ttl = o->ttl_ms > 0 ? o->ttl_ms : 1;
    r->costs = o->costs ? *o->costs : hr_rplan_default_costs();
    r->trends = hr_trends_new(store, r->ns);
    r->memo = hr_fmemo_new(store, MEMO_SLOTS, MEMO_BUDGET);
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
    hr_fmemo_free(r->memo);
    hr_assist_free(r->assist);
    free(r->ns);
    free(r);
}

hr_trends *hr_reading_trends(hr_reading *r) {
    return r->trends;
}

static int check_uid(hr_slice uid, const char *what, hr_err *err) {
    if (!hr_ident_valid(uid)) return hr_err_set(err, HR_EINVAL, "%s must be an identifier", what);
    return HR_OK;
}

/* The first live score of a reading sorted set: a read at t counts while
 * now < t + ttl. */
static double live_min(const hr_reading *r, int64_t now_ms) {
    return (double)(now_ms - r->ttl + 1);
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

/* The sites a host falls under: itself and each parent domain with a dot
 * left ("a.b.example.com", "b.example.com", "example.com"); an IP address
 * only itself. Returns how many, into s (at most max). */
static size_t site_candidates(hr_slice host, hr_slice *s, size_t max) {
    size_t n = 0;
    if (max == 0 || host.len == 0) return 0;
    s[n++] = host;
    size_t numeric = 0;
    while (numeric < host.len &&
           (host.ptr[numeric] == '.' || (host.ptr[numeric] >= '0' && host.ptr[numeric] <= '9')))
        numeric++;
    bool ip = host.ptr[0] == '[' || numeric == host.len;
    for (size_t i = 0; !ip && i < host.len && n < max; i++) {
        if (host.ptr[i] != '.') continue;
        hr_slice rest = hr_slice_of(host.ptr + i + 1, host.len - i - 1);
        if (memchr(rest.ptr, '.', rest.len) == NULL) break; /* a top-level domain is not a site */
        s[n++] = rest;
    }
    return n;
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

/* ---- Recording ------------------------------------------------------------------ */

const char *hr_read_reason(hr_read_outcome o) {
    switch (o) {
    case HR_READ_NOT_OPTED_IN: return "not_opted_in";
    case HR_READ_SITE_NOT_SELECTED: return "site_not_selected";
    case HR_READ_EXPIRED: return "expired";
    default: return NULL;
    }
}

#define SITE_CANDIDATES_MAX 128 /* a host has at most 127 labels */

/* One read of a record_many call while it is recorded. */
typedef struct pending {
    size_t i; /* its index in the caller's arrays */
    uint64_t h;
    int64_t t;
    hr_slice canonical; /* in the call's arena */
    size_t site_op, n_sites, prev_op, card_op;
    hr_trend_read rd;
    bool first, last; /* of its URL's reads in this call (sorted by time) */
} pending;

static int by_url_then_time(const void *x, const void *y) {
    const pending *a = x, *b = y;
    if (a->h != b->h) return a->h < b->h ? -1 : 1;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Canonicalise and sort the reads of a record_many call into p (in a). */
static int pending_init(const hr_slice *urls, const int64_t *times, size_t n, int64_t now_ms, hr_arena *a,
                        pending *p, hr_err *err) {
    hr_buf c = HR_BUF_INIT;
    int rc = HR_OK;
    for (size_t i = 0; i < n && rc == HR_OK; i++) {
        hr_err inner = {0};
        hr_buf_clear(&c);
        if (times[i] < 0)
            rc = hr_err_set(err, HR_EINVAL, "time must be 0 or more (ms since the epoch)");
        else if (hr_url_canonical(urls[i], &c, &inner) != HR_OK)
            rc = n == 1 ? hr_err_set(err, HR_EINVAL, "%s", inner.msg)
                        : hr_err_set(err, HR_EINVAL, "urls[%zu]: %s", i, inner.msg);
        if (rc != HR_OK) break;
        p[i] = (pending){.i = i, .canonical = hr_arena_copy(a, hr_buf_slice(&c)), .t = times[i]};
        p[i].h = hr_url_hash(p[i].canonical);
        if (p[i].t > now_ms) p[i].t = now_ms; /* a client clock ahead of ours */
    }
    hr_buf_free(&c);
    if (rc != HR_OK) return rc;
    qsort(p, n, sizeof *p, by_url_then_time);
    for (size_t j = 0; j < n; j++) {
        p[j].first = j == 0 || p[j - 1].h != p[j].h;
        p[j].last = j + 1 == n || p[j + 1].h != p[j].h;
    }
    return HR_OK;
}

/* The keys of the reader's own sets. */
typedef struct user_keys {
    hr_buf in, pset, times;
} user_keys;

static void user_keys_init(user_keys *u, const hr_reading *r, hr_slice uid) {
    memset(u, 0, sizeof *u);
    hr_rk_user(&u->in, r->ns, uid, "/in");
    hr_rk_user(&u->pset, r->ns, uid, "/p");
    hr_rk_user(&u->times, r->ns, uid, "/t");
}

static void user_keys_free(user_keys *u) {
    hr_buf_free(&u->in);
    hr_buf_free(&u->pset);
    hr_buf_free(&u->times);
}

/* Round trip 2's ops for the reads in p (b has run round trip 1): each
 * recorded read counts in its time buckets, and each URL's newest recorded
 * read goes into the reader's sets and the URL's list and set. Sets out[]
 * for every read; returns whether anything is to be written.
 *
 * A URL SET IS COMPLETE (holds every live reader of the list) when it holds
 * HR_RK_SET_COMPLETE. The member is added by a read that finds the list
 * empty: from then on every read, opt-out and undo changes the list and the
 * set in the same batch, and their entries expire at the same moments
 * (reading_ttl after the read, the keys a ttl after the last read), so they
 * hold the same readers. A store written before URL sets existed has lists
 * whose sets lack the member; friends-reads plans those URLs again without
 * URL sets (lists, probes or the friends' sets), until the list empties and
 * starts again. */
static bool write_ops(hr_reading *r, hr_slice uid, const user_keys *u, pending *p, size_t n,
                      const hr_batch *b, hr_batch *w, int64_t now_ms, hr_read_outcome *out) {
    hr_buf k = HR_BUF_INIT;
    /* Range deletes first: an op that iterates after a write would make
     * RocksDB index the whole batch. */
    bool wrote = false, any = false;
    if (((uint64_t)now_ms ^ p[0].h) % TRIM_EVERY == 0) {
        double dead = live_min(r, now_ms) - 1;
        hr_zremrange_score(w, hr_buf_slice(&u->times), -INFINITY, dead);
        for (size_t j = 0; j < n; j++) {
            hr_buf_clear(&k);
            if (p[j].first) hr_zremrange_score(w, hr_rk_url(&k, r->ns, p[j].h, "/r"), -INFINITY, dead);
        }
    }
    int64_t prev = -1; /* the previous read of the current URL: stored, or earlier in this call */
    bool fresh = false; /* the current URL's list was empty */
    for (size_t j = 0; j < n; j++) {
        if (p[j].first) {
            const hr_result *res = hr_batch_result(b, p[j].prev_op);
            prev = res->rc == HR_OK ? (int64_t)res->score : -1;
            fresh = hr_batch_result(b, p[j].card_op)->num == 0;
            any = false;
        }
        bool selected = false;
        for (size_t s = 0; s < p[j].n_sites && !selected; s++)
            selected = hr_batch_result(b, p[j].site_op + s)->rc == HR_OK;
        hr_read_outcome *o = &out[p[j].i];
        *o = !selected                   ? HR_READ_SITE_NOT_SELECTED
             : p[j].t <= now_ms - r->ttl ? HR_READ_EXPIRED
                                         : HR_READ_RECORDED;
        if (*o == HR_READ_RECORDED && p[j].t > prev) { /* else as new a read of it is recorded already */
            hr_trends_write_ops(r->trends, w, b, &p[j].rd, prev);
            prev = p[j].t;
            any = true;
        }
        if (!p[j].last || !any) continue;
        char h8[8];
        hr_pset_add(w, hr_buf_slice(&u->pset), p[j].h, prev + r->ttl);
        hr_zadd(w, hr_buf_slice(&u->times), (double)prev, hr_rk_h8(h8, p[j].h));
        hr_buf_clear(&k);
        hr_slice readers = hr_rk_url(&k, r->ns, p[j].h, "/r");
        hr_zadd(w, readers, (double)prev, uid);
        hr_expire(w, readers, now_ms + r->ttl);
        hr_buf_clear(&k);
        hr_slice set = hr_rk_url(&k, r->ns, p[j].h, "/s");
        if (fresh) hr_pset_add(w, set, HR_RK_SET_COMPLETE, 0);
        hr_pset_add(w, set, hr_rk_reader(uid), prev + r->ttl);
        hr_expire(w, set, now_ms + r->ttl);
        hr_buf_clear(&k);
        hr_put(w, hr_rk_url(&k, r->ns, p[j].h, "/u"), p[j].canonical,
               now_ms + (r->ttl > URL_KEEP_MS ? r->ttl : URL_KEEP_MS));
        wrote = true;
    }
    if (wrote) hr_expire(w, hr_buf_slice(&u->times), now_ms + r->ttl);
    hr_buf_free(&k);
    return wrote;
}

/* Take back what write_ops wrote for the URLs of p. */
static void undo_ops(hr_reading *r, hr_slice uid, const user_keys *u, const pending *p, size_t n,
                     hr_batch *w) {
    hr_buf k = HR_BUF_INIT;
    for (size_t j = 0; j < n; j++) {
        if (!p[j].last) continue;
        char h8[8];
        hr_buf_clear(&k);
        hr_zrem(w, hr_rk_url(&k, r->ns, p[j].h, "/r"), uid);
        hr_buf_clear(&k);
        hr_pset_rem(w, hr_rk_url(&k, r->ns, p[j].h, "/s"), hr_rk_reader(uid));
        hr_zrem(w, hr_buf_slice(&u->times), hr_rk_h8(h8, p[j].h));
        hr_pset_rem(w, hr_buf_slice(&u->pset), p[j].h);
    }
    hr_buf_free(&k);
}

int hr_reading_record_many(hr_reading *r, hr_slice uid, const hr_slice *urls, const int64_t *times, size_t n,
                           int64_t now_ms, hr_read_outcome *out, hr_err *err) {
    int rc = check_uid(uid, "uid", err);
    if (rc != HR_OK) return rc;
    if (n > HR_READING_RECORD_MAX)
        return hr_err_set(err, HR_EINVAL, "at most %d reads at once (got %zu)", HR_READING_RECORD_MAX, n);
    for (size_t i = 0; i < n; i++)
        out[i] = HR_READ_NOT_OPTED_IN;
    hr_arena a = HR_ARENA_INIT;
    pending *p = hr_arena_alloc(&a, (n ? n : 1) * sizeof *p);
    rc = pending_init(urls, times, n, now_ms, &a, p, err);
    if (rc != HR_OK || n == 0) {
        hr_arena_free(&a);
        return rc;
    }
    user_keys u;
    user_keys_init(&u, r, uid);
    hr_buf sk = HR_BUF_INIT, k = HR_BUF_INIT;
    hr_rk_sites(&sk, r->ns);
    hr_batch *b = hr_batch_new(), *w = hr_batch_new();

    /* Round trip 1: may we record them (sharing, sites), the reader's
     * previous read of each URL, and each URL's counters in the read's time
     * buckets. */
    size_t in_op = hr_get(b, hr_buf_slice(&u.in));
    for (size_t j = 0; j < n; j++) {
        hr_slice sites[SITE_CANDIDATES_MAX];
        p[j].n_sites = site_candidates(hr_url_host(p[j].canonical), sites, SITE_CANDIDATES_MAX);
        p[j].site_op = hr_batch_len(b);
        for (size_t s = 0; s < p[j].n_sites; s++)
            hr_zscore(b, hr_buf_slice(&sk), sites[s]);
        hr_buf_clear(&k);
        hr_slice list = hr_rk_url(&k, r->ns, p[j].h, "/r");
        p[j].prev_op = p[j].first ? hr_zscore(b, list, uid) : SIZE_MAX;
        p[j].card_op = p[j].first ? hr_zcard(b, list) : SIZE_MAX;
        p[j].rd = (hr_trend_read){.url_hash = p[j].h, .time_ms = p[j].t};
        hr_trends_read_ops(r->trends, b, &p[j].rd, now_ms);
    }
    rc = hr_core_exec(r->store, b, 0, "record read", err);
    if (rc != HR_OK || hr_batch_result(b, in_op)->rc != HR_OK) goto done; /* not opted in */

    /* Round trip 2: the writes. */
    if (!write_ops(r, uid, &u, p, n, b, w, now_ms, out)) goto done;
    rc = hr_core_exec(r->store, w, 0, "record read", err);

    /* Round trip 3: still opted in? If the user opted out meanwhile, the
     * opt-out may have listed its reads before these writes: take them back. */
    if (rc == HR_OK) {
        hr_batch_reset(b);
        in_op = hr_get(b, hr_buf_slice(&u.in));
        rc = hr_core_exec(r->store, b, 0, "record read", err);
    }
    if (rc == HR_OK && hr_batch_result(b, in_op)->rc != HR_OK) {
        hr_batch_reset(w);
        undo_ops(r, uid, &u, p, n, w);
        for (size_t i = 0; i < n; i++)
            out[i] = HR_READ_NOT_OPTED_IN;
        rc = hr_core_exec(r->store, w, 0, "record read", err);
    }
done:
    hr_batch_free(b);
    hr_batch_free(w);
    user_keys_free(&u);
    hr_buf_free(&sk);
    hr_buf_free(&k);
    hr_arena_free(&a);
    return rc;
}

int hr_reading_record(hr_reading *r, hr_slice uid, hr_slice url, int64_t time_ms, int64_t now_ms,
                      hr_read_outcome *out, hr_err *err) {
    return hr_reading_record_many(r, uid, &url, &time_ms, 1, now_ms, out, err);
}

/* ---- friends-reads ------------------------------------------------------------- */

/* One distinct canonical URL of a query. */
typedef struct qurl {
    uint64_t h;
    hr_slice canonical;
    size_t list_op; /* round trip 1: the list's first readers, and its size in num */
    size_t op;               /* round trip 2 or 3: the rest of the list, the first probe, or the URL-set test */
    int64_t size, listed;
    hr_rplan_side side;
    bool retried;     /* its URL set was not complete: planned again, answered in round trip 3 */
    bool split;       /* its URL-set test went to round trip 2's second batch */
    size_t test_slot; /* its position among the URLs tested on the friends' side */
    uint32_t *hits;   /* friend positions that read it */
    size_t n_hits, cap_hits;
} qurl;

/* Room in q->hits for `more` hits. */
static void reserve_hits(qurl *q, size_t more, hr_arena *a) {
    if (q->n_hits + more <= q->cap_hits) return;
    size_t cap = q->cap_hits ? 2 * q->cap_hits : 8;
    if (cap < q->n_hits + more) cap = q->n_hits + more;
    uint32_t *n = hr_arena_alloc(a, cap * sizeof *n);
    if (q->n_hits) memcpy(n, q->hits, q->n_hits * sizeof *n);
    q->hits = n;
    q->cap_hits = cap;
}

static void add_hit(qurl *q, uint32_t f, hr_arena *a) {
    reserve_hits(q, 1, a);
    q->hits[q->n_hits++] = f;
}

/* Mark the friends among a reader-list result; returns the entries. */
static size_t intersect(qurl *q, const hr_result *res, const hr_rplan_friends *fi, hr_arena *a) {
    for (size_t i = 0; i < res->n_entries; i++) {
        long f = hr_rplan_friends_find(fi, res->entries[i].member);
        if (f >= 0) add_hit(q, (uint32_t)f, a);
    }
    return res->n_entries;
}

/* The friends as the answer holds them. ids may be borrowed from the
 * friend list's batch, freed before the caller reads the answer: then each
 * friend that is a hit is copied into a, once (owned[f]), instead of every
 * friend up front (5,000 copies a worst-case query, most never a hit). */
typedef struct friend_ids {
    const hr_slice *ids;
    hr_slice *owned; /* NULL: ids outlive the answer */
    hr_arena *a;
} friend_ids;

static hr_slice friend_id(friend_ids *fr, size_t f) {
    if (fr->owned == NULL) return fr->ids[f];
    if (fr->owned[f].ptr == NULL) fr->owned[f] = hr_arena_copy(fr->a, fr->ids[f]);
    return fr->owned[f];
}

/* The friend ids of q's hits, in friend-list order and each once, into
 * out. Hits from the packed sets and probes come in that order already (up
 * to 5,000 a URL); a list's come in the list's order, and are put in order
 * through a bitmap of the n_friends friends, which also drops a friend
 * counted twice (qsort of those hits was ~9 % of a worst-case query). */
static void hits_out(qurl *q, friend_ids *fr, size_t n_friends, hr_arena *a, hr_url_reads *out) {
    out->friends = hr_arena_alloc(a, (q->n_hits + 1) * sizeof *out->friends);
    out->n_friends = 0;
    size_t sorted = 1;
    while (sorted < q->n_hits && q->hits[sorted - 1] <= q->hits[sorted])
        sorted++;
    if (sorted >= q->n_hits) {
        for (size_t i = 0; i < q->n_hits; i++)
            if (i == 0 || q->hits[i] != q->hits[i - 1]) out->friends[out->n_friends++] = friend_id(fr, q->hits[i]);
        return;
    }
    size_t words = (n_friends + 63) / 64;
    uint64_t *hit = hr_arena_calloc(a, words * sizeof *hit);
    for (size_t i = 0; i < q->n_hits; i++)
        hit[q->hits[i] / 64] |= UINT64_C(1) << (q->hits[i] % 64);
    for (size_t w = 0; w < words; w++)
        for (uint64_t bits = hit[w]; bits; bits &= bits - 1)
            out->friends[out->n_friends++] = friend_id(fr, 64 * w + (size_t)__builtin_ctzll(bits));
}

/* The friends of uid: one range read of the graph's friend set, added to b;
 * returns the op. The query wants them newest first, but reads them oldest
 * first, all of them when there are at most HR_READING_FRIENDS_MAX: RocksDB
 * walks backwards markedly slower (a tenth of a tail feed's query went to
 * stepping back through 450 friends), and the order is turned in memory
 * (friends_of). */
static size_t friends_op(hr_reading *r, hr_batch *b, hr_slice uid, bool reverse, const hr_origin *unless) {
    hr_buf k = HR_BUF_INIT;
    hr_graph_key(r->graph, HR_GRAPH_FRIENDS, uid, &k);
    hr_zrange_spec spec = hr_zrange_all(reverse, HR_READING_FRIENDS_MAX);
    spec.unless = unless; /* the list kept from an earlier call: "unchanged" if it still is */
    size_t op = hr_zrange(b, hr_buf_slice(&k), &spec);
    hr_buf_free(&k);
    return op;
}

/* The members of res, in its order or reversed: copied into a, or borrowed
 * (pointing into res). */
static hr_slice *member_ids(const hr_result *res, bool reversed, bool borrow, hr_arena *a, size_t *n) {
    hr_slice *ids = hr_arena_alloc(a, (res->n_entries + 1) * sizeof *ids);
    for (size_t i = 0; i < res->n_entries; i++) {
        hr_slice m = res->entries[i].member;
        ids[reversed ? res->n_entries - 1 - i : i] = borrow ? m : hr_arena_copy(a, m);
    }
    *n = res->n_entries;
    return ids;
}

/* The newest HR_READING_FRIENDS_MAX friends of uid, newest first, from
 * fwd, friends_op's oldest-first read: it holds them all unless the user has
 * more, who then costs one more round trip, reading newest first. With
 * borrow, the ids of a fwd that holds them all (!fwd->more) point into it;
 * else they are copies in a. */
static int friends_of(hr_reading *r, hr_slice uid, const hr_result *fwd, bool borrow, hr_arena *a,
                      hr_slice **friends, size_t *n, hr_err *err) {
    if (!fwd->more) {
        *friends = member_ids(fwd, true, borrow, a, n);
        return HR_OK;
    }
    hr_batch *b = hr_batch_new();
    size_t op = friends_op(r, b, uid, true, NULL);
    int rc = hr_core_exec(r->store, b, 0, "friends-reads", err);
    if (rc == HR_OK) *friends = member_ids(hr_batch_result(b, op), false, false, a, n);
    hr_batch_free(b);
    return rc;
}

/* Whether a friends-reads may hand URL-set tests to the helper:
 * while no more of them run than half the cores, so that the other half is
 * likely free. On 2 cores with two queries at a time, splitting made them
 * each wait for the helper and cost ~30 % of their calls a second
 * (BENCHMARKS.md, reading round 19). */
static bool may_split(hr_reading *r) {
    return r->assist && 2 * atomic_load_explicit(&r->running, memory_order_relaxed) <= r->cpus;
}

/* A batch run by the helper thread (common/assist.h). The caller owns it
 * and its batch, unless it stopped waiting for them (exec_round_trip_2):
 * then the helper frees them when it is done. */
typedef enum { SPLIT_PENDING, SPLIT_DONE, SPLIT_LEFT } split_state;

typedef struct split_exec {
    hr_store *store;
    hr_batch *b;
    hr_err err;
    int rc;
    atomic_int state;           /* split_state */
    _Atomic int64_t started_ns; /* when the helper started it (0: not yet) */
} split_exec;

static void run_split(void *arg) {
    split_exec *e = arg;
    atomic_store_explicit(&e->started_ns, (int64_t)hr_mono_ns(), memory_order_relaxed);
    e->rc = hr_core_exec(e->store, e->b, 0, "friends-reads", &e->err);
    int expect = SPLIT_PENDING;
    if (!atomic_compare_exchange_strong(&e->state, &expect, SPLIT_DONE)) { /* SPLIT_LEFT: the caller went on */
        hr_batch_free(e->b);
        free(e);
    }
}

/* How long a caller that has run its part waits for the helper's: until
 * the helper has run as long as the caller took, and a quarter of that
 * again. The helper's part is the smaller (friends_reads), so on time it is
 * done before. A helper later than that has most likely lost its core for
 * milliseconds (assist.h), and the caller runs the helper's part again
 * itself. */
static int64_t split_deadline(const split_exec *e, int64_t own_start, int64_t own_end) {
    int64_t own = own_end - own_start, started = atomic_load_explicit(&e->started_ns, memory_order_relaxed);
    if (started < own_start) started = own_start; /* not started: hr_assist_join_by takes it back */
    return started + own + own / 4 + 50000;       /* and 50 us for the handover */
}

/* Round trip 2: b2, and *b2s (NULL: none) on the helper thread meanwhile
 * if it is free and starts it by the time b2 is done, else after b2 on this
 * one. *late is set when the helper was left with *b2s (split_deadline):
 * *b2s is then NULL, its URLs unanswered, and the caller tests them again. */
static int exec_round_trip_2(hr_reading *r, hr_batch *b2, hr_batch **b2s, bool *late, hr_err *err) {
    *late = false;
    split_exec *e = NULL;
    if (*b2s) {
        e = hr_xcalloc(1, sizeof *e);
        *e = (split_exec){.store = r->store, .b = *b2s, .rc = HR_OK};
        atomic_init(&e->state, SPLIT_PENDING);
        atomic_init(&e->started_ns, 0);
    }
    bool helped = e && hr_assist_start(r->assist, run_split, e);
    int64_t t0 = (int64_t)hr_mono_ns();
    int rc = hr_batch_len(b2) > 0 ? hr_core_exec(r->store, b2, 0, "friends-reads", err) : HR_OK;
    hr_assist_end end = HR_ASSIST_TAKEN_BACK;
    if (helped)
        end = hr_assist_join_by(r->assist, r->split_no_wait ? 0 : split_deadline(e, t0, (int64_t)hr_mono_ns()));
    int expect = SPLIT_PENDING;
    if (end == HR_ASSIST_LATE && atomic_compare_exchange_strong(&e->state, &expect, SPLIT_LEFT)) {
        *b2s = NULL; /* the helper frees it */
        *late = true;
        return rc;
    } /* else done after all */
    if (e && r->split_no_wait) { /* tests: the caller's path for a late part, every time */
        hr_batch_free(*b2s);
        *b2s = NULL;
        *late = true;
        free(e);
        return rc;
    }
    if (e && end == HR_ASSIST_TAKEN_BACK && rc == HR_OK) run_split(e);
    if (rc == HR_OK && e && e->rc != HR_OK) {
        *err = e->err;
        rc = e->rc;
    }
    free(e);
    return rc;
}

/* Add to b the ops that answer q from its side (LIST, PROBE or URL_SET);
 * q->op is the first. list1 is q's list as round trip 1 read it (from
 * first on); fh the friends' URL-set members (URL_SET only). */
static void side_ops(hr_reading *r, qurl *q, const hr_result *list1, const hr_zrange_spec *first,
                     const hr_slice *friends, const uint64_t *fh, size_t n_friends, hr_batch *b, hr_buf *k) {
    hr_buf_clear(k);
    q->op = hr_batch_len(b);
    if (q->side == HR_RPLAN_URL_SET) {
        hr_pset_test(b, hr_rk_url(k, r->ns, q->h, "/s"), fh, n_friends + 1);
    } else if (q->side == HR_RPLAN_PROBE) {
        hr_slice key = hr_rk_url(k, r->ns, q->h, "/r");
        for (size_t f = 0; f < n_friends; f++)
            hr_zscore(b, key, friends[f]); /* op q->op + f */
    } else if (q->side == HR_RPLAN_LIST) {
        hr_zrange_spec rest = *first;
        rest.limit = HR_RPLAN_LIST_MAX;
        rest.max_size = 0;
        rest.with_size = false; /* round trip 1 had it */
        if (list1->n_entries > 0) { /* else round trip 1 skipped a long list */
            const hr_zentry *last = &list1->entries[list1->n_entries - 1];
            rest.has_cursor = true;
            rest.cursor_score = last->score;
            rest.cursor_member = last->member; /* copied by the builder */
        }
        hr_zrange(b, hr_rk_url(k, r->ns, q->h, "/r"), &rest);
    }
}

/* Take q's hits from b, where side_ops put its ops; a list read also counts
 * q's readers into q->size. False, and nothing taken, if q's URL set was not
 * complete (its last member, HR_RK_SET_COMPLETE, is not in it). */
static bool side_answer(qurl *q, const hr_batch *b, size_t n_friends, const hr_rplan_friends *fi, double live,
                        hr_arena *a) {
    if (q->side == HR_RPLAN_URL_SET) {
        hr_slice in = hr_batch_result(b, q->op)->value;
        if (in.len != n_friends + 1 || !in.ptr[n_friends]) return false;
        size_t found = 0;
        for (size_t f = 0; f < n_friends; f++)
            found += in.ptr[f] != 0;
        /* Once: up to 5,000 hits a URL, and a slot past them for the loop
         * below, which writes every friend and keeps the hits without a
         * branch (a hit is one friend in 3-20: taken branches mispredicted
         * ~40 % of this function's time, `perf annotate`). */
        reserve_hits(q, found + 1, a);
        uint32_t *hits = q->hits;
        size_t n = q->n_hits;
        for (size_t f = 0; f < n_friends; f++) {
            hits[n] = (uint32_t)f;
            n += in.ptr[f] != 0;
        }
        q->n_hits = n;
    } else if (q->side == HR_RPLAN_PROBE) {
        for (size_t f = 0; f < n_friends; f++) {
            const hr_result *z = hr_batch_result(b, q->op + f);
            if (z->rc == HR_OK && z->score >= live) add_hit(q, (uint32_t)f, a);
        }
    } else if (q->side == HR_RPLAN_LIST) {
        const hr_result *rest = hr_batch_result(b, q->op);
        int64_t readers = q->listed + (int64_t)intersect(q, rest, fi, a);
        if (!rest->more || q->size < readers) q->size = readers;
    }
    return true;
}

/* One packed-set test per friend, of every URL of q[0..nq) on the FRIENDS
 * side whose retried flag is retried, added to b; returns the first op
 * (test f is op first + f), or SIZE_MAX if no URL is on that side. */
static size_t friends_tests_ops(hr_reading *r, qurl *q, size_t nq, bool retried, const hr_slice *friends,
                                size_t n_friends, hr_batch *b, hr_buf *k, hr_arena *a) {
    uint64_t *tested = hr_arena_alloc(a, nq * sizeof *tested);
    size_t n_tested = 0;
    for (size_t j = 0; j < nq; j++)
        if (q[j].side == HR_RPLAN_FRIENDS && q[j].retried == retried) {
            q[j].test_slot = n_tested;
            tested[n_tested++] = q[j].h;
        }
    if (n_tested == 0) return SIZE_MAX;
    size_t first = hr_batch_len(b);
    for (size_t f = 0; f < n_friends; f++) {
        hr_buf_clear(k);
        hr_pset_test(b, hr_rk_user(k, r->ns, friends[f], "/p"), tested, n_tested);
    }
    return first;
}

/* The hits of friends_tests_ops' tests (first: what it returned). */
static void friends_tests_answer(qurl *q, size_t nq, bool retried, const hr_batch *b, size_t first,
                                 size_t n_friends, hr_arena *a) {
    for (size_t f = 0; first != SIZE_MAX && f < n_friends; f++) {
        const hr_result *t = hr_batch_result(b, first + f);
        for (size_t j = 0; j < nq; j++)
            if (q[j].side == HR_RPLAN_FRIENDS && q[j].retried == retried && t->value.len > q[j].test_slot &&
                t->value.ptr[q[j].test_slot])
                add_hit(&q[j], (uint32_t)f, a);
    }
}

static int friends_reads(hr_reading *r, hr_slice uid, const hr_slice *friends, size_t n_friends,
                         const hr_slice *urls, size_t n_urls, int64_t now_ms, hr_arena *a, hr_url_reads *out,
                         hr_reads_stats *stats, hr_err *err) {
    hr_reads_stats st = {0};
    int rc = check_uid(uid, "uid", err);
    if (rc != HR_OK) return rc;
    if (n_urls < 1 || n_urls > HR_READING_URLS_MAX)
        return hr_err_set(err, HR_EINVAL, "urls must hold 1..%d URLs (got %zu)", HR_READING_URLS_MAX, n_urls);
    if (friends && n_friends > HR_READING_FRIENDS_MAX)
        return hr_err_set(err, HR_EINVAL, "friends must hold at most %d ids (got %zu)",
                          HR_READING_FRIENDS_MAX, n_friends);
    for (size_t i = 0; friends && i < n_friends; i++)
        if (!hr_ident_valid(friends[i]))
            return hr_err_set(err, HR_EINVAL, "friends[%zu] must be an identifier", i);

    /* Canonical forms, each distinct one queried once. */
    qurl *q = hr_arena_calloc(a, n_urls * sizeof *q);
    size_t *of = hr_arena_alloc(a, n_urls * sizeof *of), nq = 0;
    hr_buf c = HR_BUF_INIT;
    for (size_t i = 0; i < n_urls; i++) {
        hr_err inner = {0};
        hr_buf_clear(&c);
        if (hr_url_canonical(urls[i], &c, &inner) != HR_OK) {
            hr_buf_free(&c);
            return hr_err_set(err, HR_EINVAL, "urls[%zu]: %s", i, inner.msg);
        }
        uint64_t h = hr_url_hash(hr_buf_slice(&c));
        size_t j = 0;
        while (j < nq && q[j].h != h)
            j++;
        if (j == nq) q[nq++] = (qurl){.h = h, .canonical = hr_arena_copy(a, hr_buf_slice(&c))};
        of[i] = j;
    }
    hr_buf_free(&c);

    /* Round trip 1: the friends, and per URL its size and first readers. */
    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT;
    const hr_fmemo_entry *memo = friends ? NULL : hr_fmemo_get(r->memo, uid);
    size_t fop = friends ? 0 : friends_op(r, b, uid, false, memo ? memo->origin : NULL);
    hr_zrange_spec first = hr_zrange_all(false, HR_READING_LIST_FIRST);
    first.min = live_min(r, now_ms);
    first.max_size = HR_READING_LIST_FIRST_OF;
    first.with_size = true;
    for (size_t j = 0; j < nq; j++) {
        hr_buf_clear(&k);
        q[j].list_op = hr_zrange(b, hr_rk_url(&k, r->ns, q[j].h, "/r"), &first);
    }
    rc = hr_core_exec(r->store, b, 0, "friends-reads", err);
    st.round_trips = 1;
    hr_batch *b2 = hr_batch_new(), *b2s = NULL;
    if (rc != HR_OK) goto done;
    friend_ids fr = {.ids = friends, .a = a};
    hr_rplan_friends fi;
    const hr_result *fres = friends ? NULL : hr_batch_result(b, fop);
    if (fres && memo && fres->unchanged) { /* the kept list: no decode, no index to build */
        friends = fr.ids = memo->ids;
        n_friends = memo->n;
        fi = memo->index;
        fr.owned = hr_arena_calloc(a, n_friends * sizeof *fr.owned); /* the answer copies its hits */
        st.friends_kept = true;
    } else if (fres) { /* borrowed from b, which lives until the answer is out */
        if (memo) hr_fmemo_done(r->memo, memo); /* another list now */
        memo = NULL;
        hr_slice *mine;
        bool borrowed = !fres->more; /* friends_of's rule */
        rc = friends_of(r, uid, fres, true, a, &mine, &n_friends, err);
        if (rc != HR_OK) goto done;
        st.round_trips += !borrowed;
        friends = fr.ids = mine;
        if (borrowed) fr.owned = hr_arena_calloc(a, n_friends * sizeof *fr.owned);
        /* the whole list, from the store's cache: keep it for the next call */
        if (borrowed) memo = hr_fmemo_put(r->memo, uid, fres, mine, n_friends);
        if (memo)
            fi = memo->index;
        else
            hr_rplan_friends_init(&fi, friends, n_friends, a);
    } else {
        hr_rplan_friends_init(&fi, friends, n_friends, a);
    }
    st.friends = n_friends;

    int64_t *left = hr_arena_alloc(a, nq * sizeof *left), *size = hr_arena_alloc(a, nq * sizeof *size);
    hr_rplan_side *side = hr_arena_alloc(a, nq * sizeof *side);
    for (size_t j = 0; j < nq; j++) {
        const hr_result *list = hr_batch_result(b, q[j].list_op);
        size[j] = q[j].size = list->num;
        q[j].listed = (int64_t)intersect(&q[j], list, &fi, a);
        left[j] = list->more ? (q[j].size > q[j].listed ? q[j].size - q[j].listed : 1) : 0;
    }
    hr_rplan_sides(size, left, nq, n_friends, &r->costs, side);

    /* Round trip 2, when needed: per URL the rest of its list, a lookup of
     * each friend in it, or a test of the friends against its URL set; and
     * one packed-set test per friend for all the URLs sent to the friends'
     * side. */
    uint64_t *fh = NULL; /* the friends' hashes as URL-set members, and HR_RK_SET_COMPLETE */
    size_t n_sets = 0;
    for (size_t j = 0; j < nq; j++)
        n_sets += side[j] == HR_RPLAN_URL_SET;
    /* Many URL-set tests: two in five go to a second batch, which a helper
     * thread runs while this one runs the first (common/assist.h). Why not
     * half: a helper that loses its core is left behind (exec_round_trip_2)
     * and this thread tests its part again, so a smaller part costs less
     * then; and a helper on time is done before this thread, which then does
     * not wait. Direct runs, alternated: p99 1.60-2.21 ms against 1.86-2.86
     * with halves at the same stolen CPU (BENCHMARKS.md, reading round 20).
     * Each batch reads its own snapshot, as round trip 2 reads another than
     * round trip 1's: each URL's answer is of one snapshot. */
    if (n_sets >= 2 && n_sets * n_friends >= r->split_tests && may_split(r)) b2s = hr_batch_new();
    for (size_t j = 0, nth_set = 0; j < nq; j++) {
        q[j].side = side[j];
        if (side[j] == HR_RPLAN_URL_SET && fh == NULL) {
            fh = hr_arena_alloc(a, (n_friends + 1) * sizeof *fh);
            for (size_t f = 0; f < n_friends; f++)
                fh[f] = hr_rk_reader(friends[f]);
            fh[n_friends] = HR_RK_SET_COMPLETE;
        }
        q[j].split = b2s && side[j] == HR_RPLAN_URL_SET && nth_set++ % 5 % 2 == 1; /* the 2nd and 4th of 5 */
        if (side[j] != HR_RPLAN_FRIENDS && side[j] != HR_RPLAN_DONE)
            side_ops(r, &q[j], hr_batch_result(b, q[j].list_op), &first, friends, fh, n_friends,
                     q[j].split ? b2s : b2, &k);
    }
    size_t tests = friends_tests_ops(r, q, nq, false, friends, n_friends, b2, &k, a);
    bool split = b2s != NULL, late;
    rc = exec_round_trip_2(r, b2, &b2s, &late, err);
    st.round_trips += hr_batch_len(b2) > 0 || split;
    if (rc == HR_OK && late) { /* the helper kept its part past split_deadline: test those URLs here */
        b2s = hr_batch_new();
        for (size_t j = 0; j < nq; j++)
            if (q[j].split)
                side_ops(r, &q[j], hr_batch_result(b, q[j].list_op), &first, friends, fh, n_friends, b2s, &k);
        rc = hr_core_exec(r->store, b2s, 0, "friends-reads", err);
        st.round_trips++;
        st.split_late++;
    }
    if (rc != HR_OK) goto done;
    friends_tests_answer(q, nq, false, b2, tests, n_friends, a);

    /* Round trip 3, when URL sets were not complete (a store written before
     * them): those URLs planned again without URL sets. */
    double live = live_min(r, now_ms);
    int64_t *again = hr_arena_calloc(a, nq * sizeof *again);
    bool retry = false;
    for (size_t j = 0; j < nq; j++) {
        if (q[j].side == HR_RPLAN_FRIENDS || q[j].side == HR_RPLAN_DONE) continue;
        if (side_answer(&q[j], q[j].split ? b2s : b2, n_friends, &fi, live, a)) continue;
        again[j] = left[j];
        retry = true;
    }
    if (retry) {
        hr_rplan_costs no_sets = r->costs;
        no_sets.set_test = HUGE_VAL;
        hr_rplan_sides(size, again, nq, n_friends, &no_sets, side);
        hr_batch *b3 = hr_batch_new();
        for (size_t j = 0; j < nq; j++) {
            if (again[j] == 0) continue;
            q[j].side = side[j];
            q[j].retried = true;
            q[j].split = false;
            if (side[j] != HR_RPLAN_FRIENDS)
                side_ops(r, &q[j], hr_batch_result(b, q[j].list_op), &first, friends, fh, n_friends, b3, &k);
        }
        tests = friends_tests_ops(r, q, nq, true, friends, n_friends, b3, &k, a);
        rc = hr_core_exec(r->store, b3, 0, "friends-reads", err);
        st.round_trips++;
        for (size_t j = 0; rc == HR_OK && j < nq; j++)
            if (q[j].retried && q[j].side != HR_RPLAN_FRIENDS) side_answer(&q[j], b3, n_friends, &fi, live, a);
        if (rc == HR_OK) friends_tests_answer(q, nq, true, b3, tests, n_friends, a);
        hr_batch_free(b3);
        if (rc != HR_OK) goto done;
    }
    for (size_t j = 0; j < nq; j++) {
        /* readers: side_answer counted a list read; a list read whole in
         * round trip 1 counts its live entries; else the list's size */
        if (q[j].side == HR_RPLAN_DONE || q[j].size < q[j].listed) q[j].size = q[j].listed;
        st.urls_list += q[j].side == HR_RPLAN_LIST || q[j].side == HR_RPLAN_DONE;
        st.urls_probe += q[j].side == HR_RPLAN_PROBE;
        st.urls_set += q[j].side == HR_RPLAN_URL_SET;
        st.urls_friends += q[j].side == HR_RPLAN_FRIENDS;
        st.urls_split += q[j].split;
    }
    hr_url_reads *answer = hr_arena_alloc(a, nq * sizeof *answer);
    for (size_t j = 0; j < nq; j++) {
        answer[j].url = q[j].canonical;
        answer[j].readers = q[j].size;
        hits_out(&q[j], &fr, n_friends, a, &answer[j]);
    }
    for (size_t i = 0; i < n_urls; i++)
        out[i] = answer[of[i]];
done:
    if (stats) *stats = st;
    if (memo) hr_fmemo_done(r->memo, memo);
    hr_batch_free(b);
    hr_batch_free(b2);
    hr_batch_free(b2s);
    hr_buf_free(&k);
    return rc;
}

int hr_reading_friends_reads(hr_reading *r, hr_slice uid, const hr_slice *friends, size_t n_friends,
                             const hr_slice *urls, size_t n_urls, int64_t now_ms, hr_arena *a,
                             hr_url_reads *out, hr_reads_stats *stats, hr_err *err) {
    atomic_fetch_add_explicit(&r->running, 1, memory_order_relaxed);
    int rc = friends_reads(r, uid, friends, n_friends, urls, n_urls, now_ms, a, out, stats, err);
    atomic_fetch_sub_explicit(&r->running, 1, memory_order_relaxed);
    return rc;
}

/* ---- friends-popular ----------------------------------------------------------- */

/* One friend's read of a URL in the window. */
typedef struct fread {
    uint64_t h;
    uint32_t f;
    int64_t t;
} fread_;

static int by_url_then_friend(const void *x, const void *y) {
    const fread_ *a = x, *b = y;
    if (a->h != b->h) return a->h < b->h ? -1 : 1;
    return (a->f > b->f) - (a->f < b->f);
}

typedef struct group {
    uint64_t h;
    size_t first, n; /* its reads, in the sorted array */
    size_t friends;
    int64_t latest;
} group;

static int by_friends_desc(const void *x, const void *y) {
    const group *a = x, *b = y;
    if (a->friends != b->friends) return a->friends > b->friends ? -1 : 1;
    if (a->latest != b->latest) return a->latest > b->latest ? -1 : 1;
    return (a->h > b->h) - (a->h < b->h);
}

int hr_reading_friends_popular(hr_reading *r, hr_slice uid, hr_window w, size_t limit, int64_t now_ms,
                               hr_arena *a, hr_url_reads **items, size_t *n, hr_err *err) {
    *items = NULL;
    *n = 0;
    int rc = check_uid(uid, "uid", err);
    if (rc != HR_OK) return rc;
    if (limit < 1 || limit > HR_TRENDS_LIMIT_MAX)
        return hr_err_set(err, HR_EINVAL, "limit must be 1..%d", HR_TRENDS_LIMIT_MAX);

    /* Round trip 1: the friends. */
    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT;
    size_t fop = friends_op(r, b, uid, false, NULL);
    rc = hr_core_exec(r->store, b, 0, "friends-popular", err);
    size_t m = 0;
    hr_slice *friends = NULL;
    if (rc == HR_OK) rc = friends_of(r, uid, hr_batch_result(b, fop), false, a, &friends, &m, err); /* copies: b is reset below */
    if (rc != HR_OK || m == 0) goto done;

    /* Round trip 2: each friend's newest reads in the window. */
    hr_batch_reset(b);
    size_t per = HR_FRIENDS_POPULAR_SCAN / m;
    if (per < 20) per = 20;
    if (per > HR_ZRANGE_LIMIT_MAX) per = HR_ZRANGE_LIMIT_MAX;
    hr_zrange_spec spec = hr_zrange_all(true, per);
    double since = (double)(now_ms - hr_window_ms(w) + 1);
    spec.min = since > live_min(r, now_ms) ? since : live_min(r, now_ms);
    for (size_t f = 0; f < m; f++) {
        hr_buf_clear(&k);
        hr_zrange(b, hr_rk_user(&k, r->ns, friends[f], "/t"), &spec); /* op f */
    }
    rc = hr_core_exec(r->store, b, 0, "friends-popular", err);
    if (rc != HR_OK) goto done;
    size_t total = 0;
    for (size_t f = 0; f < m; f++)
        total += hr_batch_result(b, f)->n_entries;
    fread_ *reads = hr_arena_alloc(a, (total + 1) * sizeof *reads);
    size_t nr = 0;
    for (size_t f = 0; f < m; f++) {
        const hr_result *res = hr_batch_result(b, f);
        for (size_t i = 0; i < res->n_entries; i++)
            if (hr_rk_h8_parse(res->entries[i].member, &reads[nr].h)) {
                reads[nr].f = (uint32_t)f;
                reads[nr++].t = (int64_t)res->entries[i].score;
            }
    }
    qsort(reads, nr, sizeof *reads, by_url_then_friend);
    group *g = hr_arena_alloc(a, (nr + 1) * sizeof *g);
    size_t ng = 0;
    for (size_t i = 0; i < nr; i++) {
        if (ng == 0 || g[ng - 1].h != reads[i].h) g[ng++] = (group){.h = reads[i].h, .first = i};
        group *x = &g[ng - 1];
        if (x->n == 0 || reads[i - 1].f != reads[i].f) x->friends++;
        if (reads[i].t > x->latest) x->latest = reads[i].t;
        x->n++;
    }
    qsort(g, ng, sizeof *g, by_friends_desc);
    if (ng > limit) ng = limit;

    /* Round trip 3: the URLs and their reader counts. */
    hr_batch_reset(b);
    for (size_t i = 0; i < ng; i++) {
        hr_buf_clear(&k);
        hr_get(b, hr_rk_url(&k, r->ns, g[i].h, "/u")); /* op 2i */
        hr_buf_clear(&k);
        hr_zcard(b, hr_rk_url(&k, r->ns, g[i].h, "/r")); /* op 2i + 1 */
    }
    rc = hr_core_exec(r->store, b, 0, "friends-popular", err);
    if (rc != HR_OK) goto done;
    *items = hr_arena_alloc(a, (ng + 1) * sizeof **items);
    for (size_t i = 0; i < ng; i++) {
        const hr_result *u = hr_batch_result(b, 2 * i);
        if (u->rc != HR_OK) continue; /* expired meanwhile */
        hr_url_reads *it = &(*items)[(*n)++];
        it->url = hr_arena_copy(a, u->value);
        it->readers = hr_batch_result(b, 2 * i + 1)->num;
        it->friends = hr_arena_alloc(a, g[i].friends * sizeof *it->friends);
        it->n_friends = 0;
        for (size_t j = g[i].first; j < g[i].first + g[i].n; j++)
            if (j == g[i].first || reads[j - 1].f != reads[j].f)
                it->friends[it->n_friends++] = friends[reads[j].f];
    }
done:
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}
