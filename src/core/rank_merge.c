/* rank_merge.c — see rank_merge.h. */
#include "core/rank_merge.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/arena.h"

#define NO_OP ((size_t)-1)

typedef struct shard {
    hr_slice key;
    hr_zrange_spec spec; /* its cursor: the last entry read */
    bool more;           /* entries past the cursor */
    hr_zentry *waiting;  /* read, not given out: waiting[head..n) */
    size_t head, n, cap;
    size_t op; /* its read in the planned batch, or NO_OP */
} shard;

struct hr_rank_merge {
    hr_arena mem; /* keys, the start cursor, the windows given out */
    shard *shards;
    size_t n;
};

hr_rank_merge *hr_rank_merge_new(const hr_slice *keys, size_t n, const hr_zrange_spec *start) {
    hr_rank_merge *m = hr_xcalloc(1, sizeof *m);
    m->mem = (hr_arena)HR_ARENA_INIT;
    m->shards = hr_xcalloc(n ? n : 1, sizeof *m->shards);
    m->n = n;
    for (size_t i = 0; i < n; i++) {
        shard *s = &m->shards[i];
        s->key = hr_arena_copy(&m->mem, keys[i]);
        s->spec = *start;
        s->spec.reverse = true;
        s->spec.offset = 0;
        if (s->spec.has_cursor) s->spec.cursor_member = hr_arena_copy(&m->mem, start->cursor_member);
        s->more = true;
        s->op = NO_OP;
    }
    return m;
}

void hr_rank_merge_free(hr_rank_merge *m) {
    if (m == NULL) return;
    for (size_t i = 0; i < m->n; i++)
        free(m->shards[i].waiting);
    free(m->shards);
    hr_arena_free(&m->mem);
    free(m);
}

void hr_rank_merge_plan(hr_rank_merge *m, hr_batch *b, size_t want) {
    /* Each shard's share of the window, with room for the shards that hold
     * more than their share of it (stories fall into shards by a hash). */
    size_t share = want / m->n + want / (4 * m->n) + 4;
    if (share > HR_ZRANGE_LIMIT_MAX) share = HR_ZRANGE_LIMIT_MAX;
    for (size_t i = 0; i < m->n; i++) {
        shard *s = &m->shards[i];
        s->op = NO_OP;
        if (!s->more || s->n - s->head >= share) continue;
        s->spec.limit = share;
        s->op = hr_zrange(b, s->key, &s->spec);
    }
}

/* Append the entries of a read to s's waiting ones. Members stay where
 * the read put them: the caller keeps its batches until the merge ends. */
static void fold(shard *s, const hr_result *r) {
    if (s->head > 0) { /* drop what was given out */
        memmove(s->waiting, s->waiting + s->head, (s->n - s->head) * sizeof *s->waiting);
        s->n -= s->head;
        s->head = 0;
    }
    if (s->n + r->n_entries > s->cap) {
        s->cap = 2 * (s->n + r->n_entries);
        s->waiting = hr_xrealloc(s->waiting, s->cap * sizeof *s->waiting);
    }
    if (r->n_entries) memcpy(s->waiting + s->n, r->entries, r->n_entries * sizeof *r->entries);
    s->n += r->n_entries;
    s->more = r->more;
    if (r->n_entries) {
        const hr_zentry *last = &s->waiting[s->n - 1];
        s->spec.has_cursor = true;
        s->spec.cursor_score = last->score;
        s->spec.cursor_member = last->member;
    }
}

static inline uint64_t be64(const char *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return __builtin_bswap64(v);
}

/* Most neighbours in a ranking of sums tie on the score, so members compare
 * 8 bytes at a time (big-endian: memcmp's order) before the library call on
 * the rest. */
bool hr_rank_before(const hr_zentry *x, const hr_zentry *y) {
    if (x->score != y->score) return x->score > y->score;
    const char *a = x->member.ptr, *b = y->member.ptr;
    size_t n = x->member.len < y->member.len ? x->member.len : y->member.len, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t u = be64(a + i), v = be64(b + i);
        if (u != v) return u > v;
    }
    return hr_slice_cmp(hr_slice_of(a + i, x->member.len - i), hr_slice_of(b + i, y->member.len - i)) > 0;
}

void hr_rank_first(const hr_zentry **e, size_t n, size_t k) {
    if (k > n) k = n;
    if (k == 0) return;
    /* e[0..min(i, k)) holds the first-ranked of e[0..i) in order. An entry
     * ranked after the last kept one costs one comparison (most of them
     * when k is much smaller than n); one before it is inserted in place. */
    for (size_t i = 0; i < n; i++) {
        const hr_zentry *x = e[i];
        size_t at;
        if (i < k) {
            at = i; /* still filling: x's own slot ends the kept list */
        } else {
            if (!hr_rank_before(x, e[k - 1])) continue;
            e[i] = e[k - 1]; /* the last kept one leaves, to x's slot */
            at = k - 1;
        }
        while (at > 0 && hr_rank_before(x, e[at - 1])) {
            e[at] = e[at - 1];
            at--;
        }
        e[at] = x;
    }
}

int hr_rank_merge_take(hr_rank_merge *m, const hr_batch *b, const hr_zentry **out, size_t *n, hr_zentry *last,
                       hr_err *err) {
    *out = NULL;
    *n = 0;
    size_t total = 0;
    for (size_t i = 0; i < m->n; i++) {
        shard *s = &m->shards[i];
        if (s->op != NO_OP) {
            const hr_result *r = hr_batch_result(b, s->op);
            if (r->rc != HR_OK) return hr_err_set(err, r->rc, "ranking: %s", hr_strerror(r->rc));
            fold(s, r);
            s->op = NO_OP;
        }
        total += s->n - s->head;
    }
    /* The frontier: the first-ranked of the last entries read from the
     * shards with more to read. A shard with more and nothing waiting
     * (not read in this window) makes nothing certain. */
    const hr_zentry *frontier = NULL;
    for (size_t i = 0; i < m->n; i++) {
        const shard *s = &m->shards[i];
        if (!s->more) continue;
        if (s->head == s->n) return HR_OK;
        const hr_zentry *l = &s->waiting[s->n - 1];
        if (frontier == NULL || hr_rank_before(l, frontier)) frontier = l;
    }
    hr_zentry *given = hr_arena_alloc(&m->mem, (total ? total : 1) * sizeof *given);
    const hr_zentry *latest = NULL;
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
        shard *s = &m->shards[i];
        size_t from = s->head;
        while (s->head < s->n && (frontier == NULL || !hr_rank_before(frontier, &s->waiting[s->head])))
            given[k++] = s->waiting[s->head++];
        /* The shard's last one given is its latest-ranked. */
        if (s->head > from && (latest == NULL || hr_rank_before(latest, &s->waiting[s->head - 1])))
            latest = &s->waiting[s->head - 1];
    }
    if (latest) *last = *latest;
    *out = given;
    *n = k;
    return HR_OK;
}

bool hr_rank_merge_more(const hr_rank_merge *m) {
    for (size_t i = 0; i < m->n; i++)
        if (m->shards[i].more || m->shards[i].head < m->shards[i].n) return true;
    return false;
}
