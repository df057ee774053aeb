/* reading_friends.c — friends-reads: for the URLs of a feed, which of a
 * user's friends read each, each URL answered from the side reading_plan.h
 * picks for it (its reader list, probes of it, its URL set, or the friends'
 * own sets), in one to three round trips; and the friend list that it and
 * friends-popular read. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "core/exec.h"
#include "core/reading_internal.h"
#include "core/reading_keys.h"
#include "core/url.h"

/* One distinct canonical URL of a query. */
typedef struct qurl {
    uint64_t h;
    hr_slice canonical;
    size_t list_op; /* round trip 1: the list's first readers, and its size in num */
    size_t op;      /* round trip 2: the rest of the list, the first probe, or the URL-set test */
    int64_t size, listed;
    hr_rplan_side side;
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
 * counted twice (a qsort of those hits showed in a worst-case query's profile). */
static void hits_out(qurl *q, friend_ids *fr, size_t n_friends, hr_arena *a, hr_url_reads *out) {
    out->friends = hr_arena_alloc(a, (q->n_hits + 1) * sizeof *out->friends);
    out->n_friends = 0;
    size_t sorted = 1;
    while (sorted < q->n_hits && q->hits[sorted - 1] <= q->hits[sorted])
        sorted++;
    if (sorted >= q->n_hits) {
        for (size_t i = 0; i < q->n_hits; i++)
            if (i == 0 || q->hits[i] != q->hits[i - 1])
                out->friends[out->n_friends++] = friend_id(fr, q->hits[i]);
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

/* A friend list as a friends-reads uses it: its ids, newest first (pointing
 * into the store's cached copy of the set), and their index. Built once per
 * version of the list and attached to that copy (hr_origin_attach), so the
 * next call of the same user skips decoding and indexing: for a user with
 * 5,000 friends over long-tail URLs those were a large part of the call. */
typedef struct friends_form {
    const hr_slice *ids;
    size_t n;
    hr_rplan_friends index;
    hr_arena mem; /* ids, index */
} friends_form;

static void friends_form_free(void *p) {
    friends_form *f = p;
    hr_arena_free(&f->mem);
    free(f);
}

/* The form of ids[0..n), attached to origin: the one attached (this one, or
 * one another call attached first). */
static const friends_form *friends_form_attach(hr_store *s, hr_origin *origin, const hr_slice *ids,
                                               size_t n) {
    friends_form *f = hr_xcalloc(1, sizeof *f);
    hr_slice *copy = hr_arena_alloc(&f->mem, (n + 1) * sizeof *copy);
    if (n) memcpy(copy, ids, n * sizeof *copy); /* the slices point into the cached set */
    f->ids = copy;
    f->n = n;
    hr_rplan_friends_init(&f->index, copy, n, &f->mem);
    /* ids and the index: ~2.5 slots of 12 bytes a friend */
    return hr_origin_attach(s, origin, f, sizeof *f + n * (sizeof *ids + 30), friends_form_free);
}

/* The friend list's read, and the friends from it: reading_internal.h. */
size_t hr_reading_friends_op(hr_reading *r, hr_batch *b, hr_slice uid, bool reverse, bool attached_only) {
    hr_buf k = HR_BUF_INIT;
    hr_graph_key(r->graph, HR_GRAPH_FRIENDS, uid, &k);
    hr_zrange_spec spec = hr_zrange_all(reverse, HR_READING_FRIENDS_MAX);
    spec.attached_only = attached_only; /* the list's kept form, if the store has one (friends_form) */
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

int hr_reading_friends_of(hr_reading *r, hr_slice uid, const hr_result *fwd, bool borrow, hr_arena *a,
                          hr_slice **friends, size_t *n, hr_err *err) {
    if (!fwd->more) {
        *friends = member_ids(fwd, true, borrow, a, n);
        return HR_OK;
    }
    hr_batch *b = hr_batch_new();
    size_t op = hr_reading_friends_op(r, b, uid, true, false);
    int rc = hr_core_exec(r->store, b, 0, "friends-reads", err);
    if (rc == HR_OK) *friends = member_ids(hr_batch_result(b, op), false, false, a, n);
    hr_batch_free(b);
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
        hr_pset_test(b, hr_rk_url(k, r->ns, q->h, "/s"), fh, n_friends);
    } else if (q->side == HR_RPLAN_PROBE) {
        hr_slice key = hr_rk_url(k, r->ns, q->h, "/r");
        for (size_t f = 0; f < n_friends; f++)
            hr_zscore(b, key, friends[f]); /* op q->op + f */
    } else if (q->side == HR_RPLAN_LIST) {
        hr_zrange_spec rest = *first;
        rest.limit = HR_RPLAN_LIST_MAX;
        rest.max_size = 0;
        rest.with_size = false;     /* round trip 1 had it */
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
 * q's readers into q->size. */
static void side_answer(qurl *q, const hr_batch *b, size_t n_friends, const hr_rplan_friends *fi, double live,
                        hr_arena *a) {
    if (q->side == HR_RPLAN_URL_SET) {
        hr_slice in = hr_batch_result(b, q->op)->value;
        size_t found = 0;
        for (size_t f = 0; f < n_friends; f++)
            found += in.ptr[f] != 0;
        /* Once: up to 5,000 hits a URL, and a slot past them for the loop
         * below, which writes every friend and keeps the hits without a
         * branch (a hit is one friend in 3-20: `perf annotate` showed this
         * function's time mostly in mispredicted taken branches). */
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
}

/* One packed-set test per friend, of every URL of q[0..nq) on the FRIENDS
 * side, added to b; returns the first op (test f is op first + f), or
 * SIZE_MAX if no URL is on that side. */
static size_t friends_tests_ops(hr_reading *r, qurl *q, size_t nq, const hr_slice *friends, size_t n_friends,
                                hr_batch *b, hr_buf *k, hr_arena *a) {
    uint64_t *tested = hr_arena_alloc(a, nq * sizeof *tested);
    size_t n_tested = 0;
    for (size_t j = 0; j < nq; j++)
        if (q[j].side == HR_RPLAN_FRIENDS) {
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
static void friends_tests_answer(qurl *q, size_t nq, const hr_batch *b, size_t first, size_t n_friends,
                                 hr_arena *a) {
    for (size_t f = 0; first != SIZE_MAX && f < n_friends; f++) {
        const hr_result *t = hr_batch_result(b, first + f);
        for (size_t j = 0; j < nq; j++)
            if (q[j].side == HR_RPLAN_FRIENDS && t->value.len > q[j].test_slot &&
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
    size_t fop = friends ? 0 : hr_reading_friends_op(r, b, uid, false, true);
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
    /* b holds the store's copy of the list, and with it its kept form, until the answer is out */
    const friends_form *kept = fres ? hr_origin_attached(r->store, fres->origin) : NULL;
    if (kept) { /* no decode, no index to build */
        friends = fr.ids = kept->ids;
        n_friends = kept->n;
        fi = kept->index;
        fr.owned = hr_arena_calloc(a, n_friends * sizeof *fr.owned); /* the answer copies its hits */
        st.friends_kept = true;
    } else if (fres) { /* borrowed from b */
        hr_slice *mine;
        bool borrowed = !fres->more; /* hr_reading_friends_of's rule */
        rc = hr_reading_friends_of(r, uid, fres, true, a, &mine, &n_friends, err);
        if (rc != HR_OK) goto done;
        st.round_trips += !borrowed;
        friends = fr.ids = mine;
        if (borrowed) fr.owned = hr_arena_calloc(a, n_friends * sizeof *fr.owned);
        /* the whole list, from the store's cache: keep its form there for the next call */
        if (borrowed && fres->origin) kept = friends_form_attach(r->store, fres->origin, mine, n_friends);
        if (kept)
            fi = kept->index;
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
    uint64_t *fh = NULL; /* the friends' hashes as URL-set members */
    size_t n_sets = 0;
    for (size_t j = 0; j < nq; j++)
        n_sets += side[j] == HR_RPLAN_URL_SET;
    /* Many URL-set tests: two in five go to a second batch, which a helper
     * thread runs while this one runs the first (common/assist.h). Why not
     * half: a helper that loses its core is left behind (hr_reading_exec_round_trip_2)
     * and this thread tests its part again, so a smaller part costs less
     * then; and a helper on time is done before this thread, which then does
     * not wait; alternated runs gave a lower p99 than halves did.
     * Each batch reads its own snapshot, as round trip 2 reads another than
     * round trip 1's: each URL's answer is of one snapshot. */
    if (n_sets >= 2 && n_sets * n_friends >= r->split_tests && hr_reading_may_split(r)) b2s = hr_batch_new();
    for (size_t j = 0, nth_set = 0; j < nq; j++) {
        q[j].side = side[j];
        if (side[j] == HR_RPLAN_URL_SET && fh == NULL) {
            fh = hr_arena_alloc(a, n_friends * sizeof *fh);
            for (size_t f = 0; f < n_friends; f++)
                fh[f] = hr_rk_reader(friends[f]);
        }
        q[j].split = b2s && side[j] == HR_RPLAN_URL_SET && nth_set++ % 5 % 2 == 1; /* the 2nd and 4th of 5 */
        if (side[j] != HR_RPLAN_FRIENDS && side[j] != HR_RPLAN_DONE)
            side_ops(r, &q[j], hr_batch_result(b, q[j].list_op), &first, friends, fh, n_friends,
                     q[j].split ? b2s : b2, &k);
    }
    size_t tests = friends_tests_ops(r, q, nq, friends, n_friends, b2, &k, a);
    bool split = b2s != NULL, late;
    rc = hr_reading_exec_round_trip_2(r, b2, &b2s, &late, err);
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
    friends_tests_answer(q, nq, b2, tests, n_friends, a);
    double live = live_min(r, now_ms);
    for (size_t j = 0; j < nq; j++)
        if (q[j].side != HR_RPLAN_FRIENDS && q[j].side != HR_RPLAN_DONE)
            side_answer(&q[j], q[j].split ? b2s : b2, n_friends, &fi, live, a);
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
