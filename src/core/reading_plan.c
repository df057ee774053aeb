/* reading_plan.c — see reading_plan.h. */
#include "core/reading_plan.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

hr_rplan_costs hr_rplan_default_costs(void) {
    hr_rplan_costs c = {.entry = 1.0,
                        .probe = 5.0,
                        .friend_test = 15.0,
                        .friend_extra = 0.5,
                        .set_test = 5.0,
                        .set_chunk = 3.0,
                        .set_member = 0.1};
    return c;
}

typedef struct undecided {
    double cost; /* the cheapest of LIST, PROBE and URL_SET */
    size_t i;
} undecided;

/* Costliest first; ties by position, so the choice is deterministic. */
static int by_cost_desc(const void *x, const void *y) {
    const undecided *a = x, *b = y;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* The cheaper of LIST and PROBE for a list with left entries unread. */
static hr_rplan_side list_or_probe(int64_t left, size_t m, const hr_rplan_costs *c, double *cost) {
    double list = c->entry * (double)left, probe = c->probe * (double)m;
    bool listable = left <= HR_RPLAN_LIST_MAX;
    *cost = listable && list <= probe ? list : probe;
    return listable && list <= probe ? HR_RPLAN_LIST : HR_RPLAN_PROBE;
}

/* A URL-set test of m friends against a set of size readers. */
static double url_set_cost(int64_t size, size_t m, const hr_rplan_costs *c) {
    double chunks = (double)(size / HR_RPLAN_SET_CHUNK_READERS + 1);
    if (chunks > (double)m) chunks = (double)m;
    return c->set_test + c->set_chunk * chunks + c->set_member * (double)m;
}

double hr_rplan_sides(const int64_t *size, const int64_t *left, size_t n, size_t m, const hr_rplan_costs *c,
                      hr_rplan_side *side) {
    undecided *u = malloc((n ? n : 1) * sizeof *u);
    size_t p = 0;
    double own = 0; /* every undecided URL on its own cheapest side */
    for (size_t i = 0; i < n; i++) {
        side[i] = HR_RPLAN_DONE;
        if (left[i] <= 0) continue;
        double cost, set = url_set_cost(size[i], m, c);
        side[i] = list_or_probe(left[i], m, c, &cost);
        if (set < cost) {
            side[i] = HR_RPLAN_URL_SET;
            cost = set;
        }
        u[p] = (undecided){cost, i};
        own += u[p++].cost;
    }
    qsort(u, p, sizeof *u, by_cost_desc);

    /* cost(k): the k costliest go to the friends' side. */
    size_t best_k = 0;
    double best = own, rest = own;
    for (size_t k = 1; m > 0 && k <= p; k++) {
        rest -= u[k - 1].cost;
        double cost = (double)m * (c->friend_test + (double)(k - 1) * c->friend_extra) + rest;
        if (cost < best) {
            best = cost;
            best_k = k;
        }
    }
    for (size_t k = 0; k < best_k; k++)
        side[u[k].i] = HR_RPLAN_FRIENDS;
    free(u);
    return best;
}

/* ---- Friend index ----------------------------------------------------------- */

void hr_rplan_friends_init(hr_rplan_friends *f, const hr_slice *ids, size_t n, hr_arena *a) {
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    f->ids = ids;
    f->n = n;
    f->mask = cap - 1;
    f->slots = hr_arena_calloc(a, cap * sizeof *f->slots);
    f->hashes = hr_arena_alloc(a, cap * sizeof *f->hashes);
    for (size_t i = 0; i < n; i++) {
        uint64_t h = XXH3_64bits(ids[i].ptr, ids[i].len);
        size_t s = h & f->mask;
        bool dup = false;
        while (f->slots[s] && !dup) {
            dup = f->hashes[s] == h && hr_slice_eq(ids[f->slots[s] - 1], ids[i]);
            s = (s + 1) & f->mask;
        }
        if (dup) continue;
        f->slots[s] = (uint32_t)i + 1;
        f->hashes[s] = h;
    }
}

long hr_rplan_friends_find(const hr_rplan_friends *f, hr_slice id) {
    uint64_t h = XXH3_64bits(id.ptr, id.len);
    for (size_t s = h & f->mask; f->slots[s]; s = (s + 1) & f->mask)
        if (f->hashes[s] == h && hr_slice_eq(f->ids[f->slots[s] - 1], id)) return (long)f->slots[s] - 1;
    return -1;
}
