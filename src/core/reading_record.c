/* reading_record.c — recording reads (hr_reading_record, hr_reading_record_many):
 * may they be recorded (sharing, sites, expiry), the writes to both ends of
 * each read and to the popular and trending counts, and their undo when the
 * user opted out meanwhile; three round trips whatever the number of reads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "core/exec.h"
#include "core/reading_internal.h"
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

const char *hr_read_reason(hr_read_outcome o) {
    switch (o) {
    case HR_READ_NOT_OPTED_IN: return "not_opted_in";
    case HR_READ_SITE_NOT_SELECTED: return "site_not_selected";
    case HR_READ_EXPIRED: return "expired";
    default: return NULL;
    }
}

#define SITE_CANDIDATES_MAX 128 /* a host has at most 127 labels */

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

/* One read of a record_many call while it is recorded. */
typedef struct pending {
    size_t i; /* its index in the caller's arrays */
    uint64_t h;
    int64_t t;
    hr_slice canonical; /* in the call's arena */
    size_t site_op, n_sites, prev_op;
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
 * A URL'S SET HOLDS THE SAME READERS AS ITS LIST: every read, opt-out and
 * undo changes the list and the set in the same batch, and their entries
 * expire at the same moments (reading_ttl after the read, the keys a ttl
 * after the last read). */
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
    for (size_t j = 0; j < n; j++) {
        if (p[j].first) {
            const hr_result *res = hr_batch_result(b, p[j].prev_op);
            prev = res->rc == HR_OK ? (int64_t)res->score : -1;
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
