/* Unit tests of core/reading_plan: the cheaper side friends-reads answers
 * each URL from, and the friend index a list's readers are looked up in. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/arena.h"
#include "core/reading_plan.h"

/* ---- The cheaper side ------------------------------------------------------ */

static const hr_rplan_costs COSTS = {.entry = 0.5,
                                     .probe = 4,
                                     .friend_test = 12,
                                     .friend_extra = 1,
                                     .set_test = 20,
                                     .set_chunk = 3,
                                     .set_member = 0.5};
/* The same without URL sets (a side costing 1e9 is never chosen here). */
static const hr_rplan_costs NO_SETS = {.entry = 0.5,
                                       .probe = 4,
                                       .friend_test = 12,
                                       .friend_extra = 1,
                                       .set_test = 1e9,
                                       .set_chunk = 1e9,
                                       .set_member = 1e9};

Test(reading_plan, short_lists_are_read) {
    int64_t left[3] = {0, 40, 200}, size[3] = {20, 72, 232};
    hr_rplan_side side[3];
    double cost = hr_rplan_sides(size, left, 3, 450, &COSTS, side);
    cr_assert(side[0] == HR_RPLAN_DONE && side[1] == HR_RPLAN_LIST && side[2] == HR_RPLAN_LIST);
    cr_assert_float_eq(cost, 0.5 * 240, 1e-9);
}

Test(reading_plan, a_huge_list_is_probed) {
    /* 100 000 readers: 50 000 units from the list, 450 x 4 by probes, 450 x 12 by tests */
    int64_t left[3] = {10, 100000, 30}, size[3] = {42, 100032, 62};
    hr_rplan_side side[3];
    double cost = hr_rplan_sides(size, left, 3, 450, &NO_SETS, side);
    cr_assert(side[0] == HR_RPLAN_LIST && side[1] == HR_RPLAN_PROBE && side[2] == HR_RPLAN_LIST);
    cr_assert_float_eq(cost, 450 * 4 + 0.5 * 40, 1e-9);
}

Test(reading_plan, a_popular_url_is_tested_against_its_set) {
    /* 100 032 readers in 261 chunks: 20 + 261 x 3 + 450 x 0.5 = 1 028 < 1 800 by probes */
    int64_t left[3] = {10, 100000, 30}, size[3] = {42, 100032, 62};
    hr_rplan_side side[3];
    double cost = hr_rplan_sides(size, left, 3, 450, &COSTS, side);
    cr_assert(side[0] == HR_RPLAN_LIST && side[1] == HR_RPLAN_URL_SET && side[2] == HR_RPLAN_LIST);
    cr_assert_float_eq(cost, 20 + 261 * 3 + 450 * 0.5 + 0.5 * 40, 1e-9);
    /* 30 friends: a chunk each at most, and probes are cheaper (120 < 20 + 90 + 15) */
    hr_rplan_sides(size, left, 3, 30, &COSTS, side);
    cr_assert_eq(side[1], HR_RPLAN_PROBE);
    /* planned without URL sets: probes */
    hr_rplan_costs no_sets = COSTS;
    no_sets.set_test = HUGE_VAL;
    hr_rplan_sides(size, left, 3, 450, &no_sets, side);
    cr_assert_eq(side[1], HR_RPLAN_PROBE);
}

Test(reading_plan, popular_urls_share_the_friends_tests) {
    /* one popular URL is cheaper probed (1 800 < 5 400); five share the tests
     * (450 x (12 + 4) = 7 200 < 5 x 1 800) */
    int64_t left[6] = {20000, 20000, 20000, 20000, 20000, 3},
            size[6] = {20032, 20032, 20032, 20032, 20032, 35};
    hr_rplan_side side[6];
    hr_rplan_sides(size, left, 1, 450, &NO_SETS, side);
    cr_assert_eq(side[0], HR_RPLAN_PROBE);
    double cost = hr_rplan_sides(size, left, 6, 450, &NO_SETS, side);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(side[i], HR_RPLAN_FRIENDS, "URL %d", i);
    cr_assert_eq(side[5], HR_RPLAN_LIST);
    cr_assert_float_eq(cost, 450 * 16 + 1.5, 1e-9);
    /* with URL sets: 20 + 53 x 3 + 225 = 404 each, 2 020 < 7 200 */
    cost = hr_rplan_sides(size, left, 6, 450, &COSTS, side);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(side[i], HR_RPLAN_URL_SET, "URL %d", i);
    cr_assert_float_eq(cost, 5 * 404 + 1.5, 1e-9);
    /* 10 friends: 10 x (12 + 4) = 160 < 5 x (20 + 30 + 5) */
    hr_rplan_sides(size, left, 6, 10, &COSTS, side);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(side[i], HR_RPLAN_FRIENDS, "URL %d", i);
}

Test(reading_plan, the_friend_count_decides) {
    int64_t left[2] = {500, 50}, size[2] = {532, 82};
    hr_rplan_side side[2];
    hr_rplan_sides(size, left, 2, 3, &COSTS, side); /* 3 friends: 12 units of probes against 250 and 25 */
    cr_assert(side[0] == HR_RPLAN_PROBE && side[1] == HR_RPLAN_PROBE);
    hr_rplan_sides(size, left, 2, 5000, &COSTS, side); /* 5 000 friends: 20 000 units, sets 2 500 */
    cr_assert(side[0] == HR_RPLAN_LIST && side[1] == HR_RPLAN_LIST);
    cr_assert_float_eq(hr_rplan_sides(size, left, 2, 0, &COSTS, side), 0, 0,
                       "no friends: nothing to look up");
    cr_assert(side[0] == HR_RPLAN_PROBE && side[1] == HR_RPLAN_PROBE);
}

Test(reading_plan, lists_over_the_read_limit_are_never_read) {
    int64_t left[1] = {HR_RPLAN_LIST_MAX + 1}, size[1] = {HR_RPLAN_LIST_MAX + 33};
    hr_rplan_side side[1];
    hr_rplan_costs cheap_lists = {.entry = 0.001,
                                  .probe = 1000,
                                  .friend_test = 1000,
                                  .friend_extra = 1000,
                                  .set_test = 1e9,
                                  .set_chunk = 1e9,
                                  .set_member = 1e9};
    hr_rplan_sides(size, left, 1, 5000, &cheap_lists, side);
    cr_assert_eq(side[0], HR_RPLAN_PROBE);
    left[0] = HR_RPLAN_LIST_MAX;
    hr_rplan_sides(size, left, 1, 5000, &cheap_lists, side);
    cr_assert_eq(side[0], HR_RPLAN_LIST);
}

/* The modelled cost of an assignment; negative if it is not allowed. */
static double cost_of(const int64_t *size, const int64_t *left, const hr_rplan_side *side, size_t n,
                      size_t m) {
    double cost = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if ((left[i] == 0) != (side[i] == HR_RPLAN_DONE)) return -1;
        if (side[i] == HR_RPLAN_LIST && left[i] > HR_RPLAN_LIST_MAX) return -1;
        if (side[i] == HR_RPLAN_LIST) cost += COSTS.entry * (double)left[i];
        if (side[i] == HR_RPLAN_PROBE) cost += COSTS.probe * (double)m;
        if (side[i] == HR_RPLAN_URL_SET) {
            size_t chunks = (size_t)(size[i] / HR_RPLAN_SET_CHUNK_READERS + 1);
            cost += COSTS.set_test + COSTS.set_chunk * (double)(chunks < m ? chunks : m) +
                    COSTS.set_member * (double)m;
        }
        if (side[i] == HR_RPLAN_FRIENDS) k++;
    }
    if (k) cost += (double)m * (COSTS.friend_test + (k - 1) * COSTS.friend_extra);
    return cost;
}

Test(reading_plan, the_choice_is_the_cheapest) {
    /* Brute force over every assignment of 7 URLs to the four sides, for
     * random sizes and friend counts. */
    srand(7);
    for (int round = 0; round < 200; round++) {
        enum { N = 7 };
        int64_t left[N], size[N];
        size_t m = (size_t)(rand() % 3000);
        for (int i = 0; i < N; i++) {
            left[i] = rand() % 4 == 0 ? 0 : (int64_t)(rand() % 30000);
            size[i] = left[i] + 32;
        }
        hr_rplan_side side[N], trial[N];
        double got = hr_rplan_sides(size, left, N, m, &COSTS, side);
        cr_assert_float_eq(cost_of(size, left, side, N, m), got, 1e-6,
                           "round %d: the sides are the choice costed", round);
        double best = INFINITY;
        for (int code = 0; code < 16384; code++) { /* 4^7 */
            int c = code;
            for (int i = 0; i < N; i++, c /= 4)
                trial[i] = left[i] == 0 ? HR_RPLAN_DONE : (hr_rplan_side)(HR_RPLAN_LIST + c % 4);
            double x = cost_of(size, left, trial, N, m);
            if (x >= 0 && x < best) best = x;
        }
        cr_assert_float_eq(got, best, 1e-6, "round %d (%zu friends): %f, the best assignment costs %f", round,
                           m, got, best);
    }
}

/* ---- The friend index (the list side's intersection) ---------------------- */

Test(reading_plan, friend_index_against_brute_force) {
    hr_arena a = HR_ARENA_INIT;
    srand(11);
    for (int round = 0; round < 50; round++) {
        size_t n = (size_t)(rand() % 600);
        hr_slice *ids = hr_arena_alloc(&a, (n + 1) * sizeof *ids);
        for (size_t i = 0; i < n; i++) {
            char buf[32];
            int len = snprintf(buf, sizeof buf, "u%d", rand() % 800); /* repeats on purpose */
            ids[i] = hr_arena_copy(&a, hr_slice_of(buf, (size_t)len));
        }
        hr_rplan_friends f;
        hr_rplan_friends_init(&f, ids, n, &a);
        for (int q = 0; q < 900; q++) {
            char buf[32];
            int len = snprintf(buf, sizeof buf, "u%d", q);
            hr_slice id = hr_slice_of(buf, (size_t)len);
            long want = -1;
            for (size_t i = 0; i < n && want < 0; i++)
                if (hr_slice_eq(ids[i], id)) want = (long)i;
            cr_assert_eq(hr_rplan_friends_find(&f, id), want, "round %d, %s", round, buf);
        }
        hr_arena_reset(&a);
    }
    hr_arena_free(&a);
}
