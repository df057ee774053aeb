/* reading_popular.c — friends-popular: the URLs most read by a user's
 * friends within a window, from each friend's newest reads (their by-time
 * sets), most friends first, in three round trips. */
#include <stdlib.h>

#include "common/buf.h"
#include "core/exec.h"
#include "core/reading_internal.h"
#include "core/reading_keys.h"

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
    size_t fop = hr_reading_friends_op(r, b, uid, false, false);
    rc = hr_core_exec(r->store, b, 0, "friends-popular", err);
    size_t m = 0;
    hr_slice *friends = NULL;
    if (rc == HR_OK)
        rc = hr_reading_friends_of(r, uid, hr_batch_result(b, fop), false, a, &friends, &m,
                                   err); /* copies: b is reset below */
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
