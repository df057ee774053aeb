/* Unit tests of social reading: the cheaper-side choice and the friend index
 * (core/reading_plan.h), the trending arithmetic (core/trending.h), and
 * core/reading over a real store on both backends, where friends-reads is
 * checked against a brute-force model with each side forced in turn. Every
 * store test has its own key namespace. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/clock.h"
#include "core/friends_memo.h"
#include "core/graph.h"
#include "core/reading.h"
#include "core/reading_keys.h"
#include "core/reading_plan.h"
#include "core/url.h"
#include "core/trending.h"
#include "support.h"

#define MINUTE 60000LL
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)

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
    /* planned again without URL sets (an incomplete set): probes */
    hr_rplan_costs no_sets = COSTS;
    no_sets.set_test = HUGE_VAL;
    hr_rplan_sides(size, left, 3, 450, &no_sets, side);
    cr_assert_eq(side[1], HR_RPLAN_PROBE);
}

Test(reading_plan, popular_urls_share_the_friends_tests) {
    /* one popular URL is cheaper probed (1 800 < 5 400); five share the tests
     * (450 x (12 + 4) = 7 200 < 5 x 1 800) */
    int64_t left[6] = {20000, 20000, 20000, 20000, 20000, 3}, size[6] = {20032, 20032, 20032, 20032, 20032, 35};
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
    cr_assert_float_eq(hr_rplan_sides(size, left, 2, 0, &COSTS, side), 0, 0, "no friends: nothing to look up");
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
static double cost_of(const int64_t *size, const int64_t *left, const hr_rplan_side *side, size_t n, size_t m) {
    double cost = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if ((left[i] == 0) != (side[i] == HR_RPLAN_DONE)) return -1;
        if (side[i] == HR_RPLAN_LIST && left[i] > HR_RPLAN_LIST_MAX) return -1;
        if (side[i] == HR_RPLAN_LIST) cost += COSTS.entry * (double)left[i];
        if (side[i] == HR_RPLAN_PROBE) cost += COSTS.probe * (double)m;
        if (side[i] == HR_RPLAN_URL_SET) {
            size_t chunks = (size_t)(size[i] / HR_RPLAN_SET_CHUNK_READERS + 1);
            cost += COSTS.set_test + COSTS.set_chunk * (double)(chunks < m ? chunks : m) + COSTS.set_member * (double)m;
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
        cr_assert_float_eq(cost_of(size, left, side, N, m), got, 1e-6, "round %d: the sides are the choice costed",
                           round);
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

/* ---- Trending arithmetic ---------------------------------------------------------- */

Test(reading_trends, milestones) {
    static const int64_t yes[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 1024, 1536, 3LL << 40};
    static const int64_t no[] = {0, -1, 5, 7, 9, 10, 11, 13, 15, 17, 18, 20, 36, 40, 1000, 1023, 1025};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        cr_assert(hr_trends_milestone(yes[i]), "%lld", (long long)yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        cr_assert(!hr_trends_milestone(no[i]), "%lld", (long long)no[i]);
    /* consecutive milestones are at most 1.5 apart past 2, so a candidate's
     * score is within that factor of its count */
    int64_t last = 2;
    for (int64_t c = 3; c < 100000; c++) {
        if (!hr_trends_milestone(c)) continue;
        cr_assert_leq((double)c / (double)last, 1.5 + 1e-12);
        last = c;
    }
}

Test(reading_trends, window_parse) {
    hr_window w;
    cr_assert_eq(hr_window_parse("1h", &w), HR_OK);
    cr_assert_eq(w, HR_WINDOW_1H);
    cr_assert_eq(hr_window_parse("7d", &w), HR_OK);
    cr_assert_eq(hr_window_ms(w), 7 * DAY);
    cr_assert_eq(hr_window_parse("1w", &w), HR_EINVAL);
    cr_assert_eq(hr_window_parse("", &w), HR_EINVAL);
    cr_assert_eq(hr_window_parse(NULL, &w), HR_EINVAL);
    cr_assert_str_eq(hr_window_name(HR_WINDOW_1D), "1d");
}

Test(reading_trends, window_buckets_cover_the_window) {
    static const hr_window ws[] = {HR_WINDOW_1H, HR_WINDOW_1D, HR_WINDOW_7D};
    for (size_t i = 0; i < 3; i++) {
        int64_t width = hr_window_bucket_ms(ws[i]), span = hr_window_ms(ws[i]);
        for (int64_t now = 1700000000000LL; now < 1700000000000LL + 2 * width; now += width / 7 + 13) {
            int64_t first;
            double wt[HR_WINDOW_BUCKETS_MAX];
            size_t n = hr_window_buckets(ws[i], now, &first, wt);
            cr_assert_leq(n, (size_t)HR_WINDOW_BUCKETS_MAX);
            cr_assert_eq(first + (int64_t)n - 1, now / width, "the last bucket is now's");
            /* the weighted buckets add up to the window, the current one counted to now */
            double covered = (wt[0] - 1) * (double)width;
            for (size_t j = 0; j < n; j++)
                covered += (double)width;
            covered -= (double)((now / width + 1) * width - now);
            cr_assert_float_eq(covered, (double)span, 1e-3, "window %s at %lld", hr_window_name(ws[i]),
                               (long long)now);
            for (size_t j = 1; j < n; j++)
                cr_assert_float_eq(wt[j], 1.0, 0);
            cr_assert(wt[0] > 0 && wt[0] <= 1);
        }
    }
}

Test(reading_trends, score) {
    double b;
    /* a page with no history scores its readers */
    cr_assert_float_eq(hr_trends_score(5, 5, &b), 5.0, 1e-12);
    cr_assert_float_eq(b, 0.0, 0);
    /* steady reading scores 0: 100 an hour for a day */
    cr_assert_float_eq(hr_trends_score(100, 2400, &b), 0.0, 1e-9);
    cr_assert_float_eq(b, 100.0, 1e-9);
    /* relative change beats volume: 100 -> 200 over 1000 -> 1100 */
    double doubling = hr_trends_score(200, 200 + 23 * 100, NULL);
    double bump = hr_trends_score(1100, 1100 + 23 * 1000, NULL);
    cr_assert_float_eq(doubling, 100 / sqrt(101), 1e-9);
    cr_assert_gt(doubling, bump);
    /* monotonic: more in the last hour up, more before down */
    for (int r = 0; r < 50; r++)
        for (int d = r; d < 500; d += 7) {
            cr_assert_lt(hr_trends_score(r, d, NULL), hr_trends_score(r + 1, d + 1, NULL));
            cr_assert_geq(hr_trends_score(r, d, NULL), hr_trends_score(r, d + 23, NULL));
        }
    /* a day count below the hour's (estimates of two granularities) */
    cr_assert_float_eq(hr_trends_score(10, 8, &b), 10.0, 1e-12);
    cr_assert_float_eq(b, 0.0, 0);
}

/* ---- core/reading over a store --------------------------------------------------- */

typedef struct env {
    test_store t;
    char ns[40];
    hr_graph *graph;
    hr_reading *reading;
    hr_arena a;
    int64_t ttl;
} env;

typedef void (*env_check)(env *e);

/* Costs that force one side for every URL not answered in round trip 1. */
static const hr_rplan_costs FORCE_LISTS = {
    .entry = 0, .probe = 1, .friend_test = 1, .friend_extra = 1, .set_test = 1, .set_chunk = 1, .set_member = 1};
static const hr_rplan_costs FORCE_PROBES = {.entry = 1e9,
                                            .probe = 0,
                                            .friend_test = 1,
                                            .friend_extra = 1,
                                            .set_test = 1,
                                            .set_chunk = 1,
                                            .set_member = 1};
static const hr_rplan_costs FORCE_SETS = {.entry = 1e9,
                                          .probe = 1e9,
                                          .friend_test = 1e9,
                                          .friend_extra = 1e9,
                                          .set_test = 0,
                                          .set_chunk = 0,
                                          .set_member = 0};
static const hr_rplan_costs FORCE_TESTS = {.entry = 1e9,
                                           .probe = 1e9,
                                           .friend_test = 0,
                                           .friend_extra = 0,
                                           .set_test = 1e9,
                                           .set_chunk = 1e9,
                                           .set_member = 1e9};

/* split: HR_READING_SPLIT_TESTS's stand-in (0: the default; 1: every
 * friends-reads with two URL-set tests or more splits them, whatever the
 * machine's cores) */
static void open_reading_split(env *e, int64_t ttl, const hr_rplan_costs *costs, size_t split, bool no_wait) {
    hr_reading_free(e->reading);
    hr_reading_options o = {.ns = e->ns,
                            .ttl_ms = ttl,
                            .costs = costs,
                            .split_tests = split,
                            .cpus = split == 1 ? 64 : 0,
                            .split_no_wait = no_wait};
    e->reading = hr_reading_new(e->t.store, e->graph, &o);
    e->ttl = ttl;
}

static void open_reading(env *e, int64_t ttl, const hr_rplan_costs *costs) {
    open_reading_split(e, ttl, costs, 0, false);
}

static void run(const char *kind, env_check check) {
    env e;
    memset(&e, 0, sizeof e);
    test_store_open(&e.t, kind);
    test_unique(e.ns, sizeof e.ns - 1, "t");
    strcat(e.ns, "/");
    e.graph = hr_graph_new(e.t.store, e.ns);
    open_reading(&e, 30 * DAY, NULL);
    check(&e);
    hr_reading_free(e.reading);
    hr_graph_free(e.graph);
    hr_arena_free(&e.a);
    test_store_close(&e.t);
}

#define BOTH_BACKENDS(check) TEST_BOTH_BACKENDS(reading_rocksdb, reading_redis, run, check)

static void befriend(env *e, const char *x, const char *y) {
    hr_err err = {0};
    for (int i = 0; i < 2; i++) {
        hr_batch *b = hr_batch_new();
        cr_assert_eq(hr_graph_follow(e->graph, b, hr_slice_str(i ? y : x), hr_slice_str(i ? x : y),
                                     hr_now_ms(), NULL, &err),
                     HR_OK, "%s", err.msg);
        hr_batch_free(b);
    }
}

static void site(env *e, const char *domain) {
    hr_slice s;
    bool was_new;
    hr_err err = {0};
    cr_assert_eq(
        hr_reading_site_add(e->reading, hr_slice_str(domain), hr_now_ms(), &e->a, &s, &was_new, &err), HR_OK,
        "%s", err.msg);
}

static void share(env *e, const char *uid, bool on) {
    hr_err err = {0};
    cr_assert_eq(hr_reading_set_share(e->reading, hr_slice_str(uid), on, hr_now_ms(), &err), HR_OK, "%s",
                 err.msg);
}

static hr_read_outcome record_at(env *e, const char *uid, const char *url, int64_t t) {
    hr_read_outcome o;
    hr_err err = {0};
    cr_assert_eq(
        hr_reading_record(e->reading, hr_slice_str(uid), hr_slice_str(url), t, hr_now_ms(), &o, &err), HR_OK,
        "record %s %s: %s", uid, url, err.msg);
    return o;
}

static void read_ok(env *e, const char *uid, const char *url) {
    cr_assert_eq(record_at(e, uid, url, hr_now_ms()), HR_READ_RECORDED, "%s read %s", uid, url);
}

/* Each of readers[0..n) shares and reads url. */
static void all_read(env *e, const char *const *readers, size_t n, const char *url) {
    for (size_t i = 0; i < n; i++) {
        share(e, readers[i], true);
        read_ok(e, readers[i], url);
    }
}

/* friends-reads for n URLs; the answers into out (in e->a). */
static hr_reads_stats ask(env *e, const char *uid, const hr_slice *friends, size_t nf,
                          const char *const *urls, size_t n, hr_url_reads *out) {
    hr_slice *u = hr_arena_alloc(&e->a, n * sizeof *u);
    for (size_t i = 0; i < n; i++)
        u[i] = hr_slice_str(urls[i]);
    hr_reads_stats st;
    hr_err err = {0};
    cr_assert_eq(hr_reading_friends_reads(e->reading, hr_slice_str(uid), friends, nf, u, n, hr_now_ms(),
                                          &e->a, out, &st, &err),
                 HR_OK, "%s", err.msg);
    return st;
}

/* "a,b" the friends of an answer, joined, for messages and comparisons. */
static const char *joined(env *e, const hr_url_reads *r) {
    hr_buf b = HR_BUF_INIT;
    for (size_t i = 0; i < r->n_friends; i++) {
        if (i) hr_buf_append_byte(&b, ',');
        hr_buf_append_slice(&b, r->friends[i]);
    }
    hr_slice s = hr_arena_copy(&e->a, hr_buf_slice(&b));
    hr_buf_free(&b);
    return s.ptr;
}

static void sites_and_reasons(env *e) {
    site(e, "WWW.News.example.");
    site(e, "blog.example.org");
    hr_slice *s;
    size_t n;
    cr_assert_eq(hr_reading_sites(e->reading, &e->a, &s, &n, NULL), HR_OK);
    cr_assert_eq(n, 2);
    cr_assert(hr_slice_eq(s[0], hr_slice_str("blog.example.org")) &&
                  hr_slice_eq(s[1], hr_slice_str("news.example")),
              "sorted and canonical");

    cr_assert_eq(record_at(e, "ann", "https://news.example/a", hr_now_ms()), HR_READ_NOT_OPTED_IN);
    share(e, "ann", true);
    bool on;
    cr_assert_eq(hr_reading_share(e->reading, hr_slice_str("ann"), &on, NULL), HR_OK);
    cr_assert(on);
    read_ok(e, "ann", "https://news.example/a");
    read_ok(e, "ann", "http://www.sports.news.example/b"); /* a subdomain of a selected site */
    cr_assert_eq(record_at(e, "ann", "https://example.org/c", hr_now_ms()), HR_READ_SITE_NOT_SELECTED,
                 "the parent of a selected site is not selected");
    cr_assert_eq(record_at(e, "ann", "https://other.example.org/c", hr_now_ms()), HR_READ_SITE_NOT_SELECTED);
    cr_assert_eq(record_at(e, "ann", "https://news.example.evil.com/", hr_now_ms()),
                 HR_READ_SITE_NOT_SELECTED);
    cr_assert_eq(record_at(e, "ann", "https://news.example/old", hr_now_ms() - e->ttl - 1), HR_READ_EXPIRED);
    /* not opted in is said before anything else */
    cr_assert_eq(record_at(e, "bob", "https://elsewhere.example/", hr_now_ms()), HR_READ_NOT_OPTED_IN);

    bool was;
    hr_slice canon;
    cr_assert_eq(hr_reading_site_remove(e->reading, hr_slice_str("news.example"), &e->a, &canon, &was, NULL),
                 HR_OK);
    cr_assert(was);
    cr_assert_eq(record_at(e, "ann", "https://news.example/a2", hr_now_ms()), HR_READ_SITE_NOT_SELECTED);
    cr_assert_eq(hr_reading_site_remove(e->reading, hr_slice_str("news.example"), &e->a, &canon, &was, NULL),
                 HR_OK);
    cr_assert(!was);

    hr_err err = {0};
    bool was_new;
    cr_assert_eq(
        hr_reading_site_add(e->reading, hr_slice_str("bad domain"), 0, &e->a, &canon, &was_new, &err),
        HR_EINVAL);
    cr_assert(strstr(err.msg, "domain") != NULL, "%s", err.msg);
    hr_read_outcome o;
    cr_assert_eq(hr_reading_record(e->reading, hr_slice_str("ann"), hr_slice_str("ftp://x.com/"), 0,
                                   hr_now_ms(), &o, &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "url") != NULL, "%s", err.msg);
}
BOTH_BACKENDS(sites_and_reasons)

static void friends_only_and_variants_fold(env *e) {
    site(e, "paper.example");
    const char *users[] = {"me", "f1", "f2", "f3", "stranger", "fan"};
    for (size_t i = 0; i < 6; i++)
        share(e, users[i], true);
    befriend(e, "me", "f1");
    befriend(e, "me", "f2");
    befriend(e, "me", "f3");
    /* fan follows me, I do not follow fan: not a friend */
    hr_batch *b = hr_batch_new();
    cr_assert_eq(
        hr_graph_follow(e->graph, b, hr_slice_str("fan"), hr_slice_str("me"), hr_now_ms(), NULL, NULL),
        HR_OK);
    hr_batch_free(b);

    read_ok(e, "f1", "https://paper.example/story?utm_source=x");
    read_ok(e, "f3", "http://www.paper.example:80/story/#comments");
    read_ok(e, "stranger", "https://paper.example/story");
    read_ok(e, "fan", "https://paper.example/story");
    read_ok(e, "f2", "https://paper.example/other");

    const char *urls[] = {"HTTPS://PAPER.example/story/index.html", "https://paper.example/story",
                          "https://paper.example/other", "https://paper.example/unread"};
    hr_url_reads out[4];
    hr_reads_stats st = ask(e, "me", NULL, 0, urls, 4, out);
    cr_assert_eq(st.friends, 3);
    cr_assert_str_eq(joined(e, &out[0]), "f3,f1", "in friend-list order: the newest friend first");
    cr_assert_str_eq(joined(e, &out[1]), "f3,f1", "variants answer alike");
    cr_assert_eq(out[0].readers, 4, "readers counts everyone who shares");
    cr_assert(hr_slice_eq(out[0].url, hr_slice_str("https://paper.example/story")));
    cr_assert_str_eq(joined(e, &out[2]), "f2");
    cr_assert_eq(out[2].readers, 1);
    cr_assert_eq(out[3].n_friends, 0);
    cr_assert_eq(out[3].readers, 0);
    cr_assert_eq(st.round_trips, 1, "short lists: one round trip");

    /* the admin's list replaces the graph's; non-sharing users stay hidden */
    hr_slice given[] = {hr_slice_str("stranger"), hr_slice_str("nobody"), hr_slice_str("f3")};
    ask(e, "me", given, 3, urls, 2, out);
    cr_assert_str_eq(joined(e, &out[0]), "stranger,f3", "in the order given");
    ask(e, "me", given, 0, urls, 1, out);
    cr_assert_eq(out[0].n_friends, 0, "an empty list is no friends");

    /* opting out hides at once, and deletes */
    share(e, "f3", false);
    ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_str_eq(joined(e, &out[0]), "f1");
    cr_assert_eq(out[0].readers, 3);
    share(e, "f3", true);
    ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_str_eq(joined(e, &out[0]), "f1", "opting in again starts from nothing");

    /* bad input */
    hr_slice bad[] = {hr_slice_str("https://paper.example/x"), hr_slice_str("not a url")};
    hr_err err = {0};
    cr_assert_eq(hr_reading_friends_reads(e->reading, hr_slice_str("me"), NULL, 0, bad, 2, hr_now_ms(), &e->a,
                                          out, NULL, &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "urls[1]") != NULL, "%s", err.msg);
    hr_url_reads many[HR_READING_URLS_MAX + 1];
    hr_slice u101[HR_READING_URLS_MAX + 1];
    for (size_t i = 0; i <= HR_READING_URLS_MAX; i++)
        u101[i] = bad[0];
    cr_assert_eq(hr_reading_friends_reads(e->reading, hr_slice_str("me"), NULL, 0, u101,
                                          HR_READING_URLS_MAX + 1, hr_now_ms(), &e->a, many, NULL, &err),
                 HR_EINVAL);
    cr_assert_eq(hr_reading_friends_reads(e->reading, hr_slice_str("me"), NULL, 0, u101, HR_READING_URLS_MAX,
                                          hr_now_ms(), &e->a, many, NULL, &err),
                 HR_OK);
}
BOTH_BACKENDS(friends_only_and_variants_fold)

/* A user with more friends than a query considers: the newest
 * HR_READING_FRIENDS_MAX count, newest first (the query reads the friend set
 * oldest first, and again newest first only when it is that large). */
static void only_the_newest_friends_count(env *e) {
    site(e, "paper.example");
    hr_buf k = HR_BUF_INIT;
    hr_graph_key(e->graph, HR_GRAPH_FRIENDS, hr_slice_str("me"), &k);
    hr_batch *b = hr_batch_new();
    char id[16];
    for (int i = 0; i <= HR_READING_FRIENDS_MAX; i++) { /* f0 the oldest friend, f5000 the newest */
        snprintf(id, sizeof id, "f%d", i);
        hr_zadd(b, hr_buf_slice(&k), 1000 + i, hr_slice_str(id));
    }
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, &err), HR_OK, "%s", err.msg);
    hr_batch_free(b);
    hr_buf_free(&k);
    const char *readers[] = {"f0", "f2500", "f5000"};
    all_read(e, readers, 3, "https://paper.example/story");
    const char *urls[] = {"https://paper.example/story"};
    hr_url_reads out[1];
    hr_reads_stats st = ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(st.friends, HR_READING_FRIENDS_MAX);
    cr_assert_str_eq(joined(e, &out[0]), "f5000,f2500", "the newest friends, newest first; f0 is beyond them");
    cr_assert_eq(out[0].readers, 3);

    hr_url_reads *pop;
    size_t n;
    cr_assert_eq(hr_reading_friends_popular(e->reading, hr_slice_str("me"), HR_WINDOW_1D, 10, hr_now_ms(), &e->a,
                                            &pop, &n, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(n, 1);
    cr_assert_eq(pop[0].n_friends, 2, "friends-popular considers the same friends");
}
BOTH_BACKENDS(only_the_newest_friends_count)

static void unfriend(env *e, const char *x, const char *y) {
    hr_err err = {0};
    hr_batch *b = hr_batch_new();
    cr_assert_eq(hr_graph_unfollow(e->graph, b, hr_slice_str(x), hr_slice_str(y), NULL, &err), HR_OK, "%s",
                 err.msg);
    hr_batch_free(b);
}

/* A friend list too long to sit in its metadata record is kept between
 * calls (core/friends_memo.h) on RocksDB, while it is unchanged: a call
 * after a friendship ends or begins answers the new list. */
static void friends_kept_between_calls(env *e) {
    bool rocks = strcmp(hr_store_kind(e->t.store), "rocksdb") == 0;
    site(e, "paper.example");
    char id[16];
    for (int i = 0; i < 150; i++) {
        snprintf(id, sizeof id, "f%d", i);
        befriend(e, "me", id);
    }
    const char *readers[] = {"f1", "f2", "g"};
    all_read(e, readers, 3, "https://paper.example/story");
    const char *urls[] = {"https://paper.example/story"};
    hr_url_reads out[1];
    hr_reads_stats st = ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_str_eq(joined(e, &out[0]), "f2,f1");
    cr_assert_not(st.friends_kept, "the first call reads the list");
    /* the first call read it from disk, the second from the store's cache
     * (and keeps it), the third and later use what was kept */
    for (int again = 0; again < 3; again++) {
        st = ask(e, "me", NULL, 0, urls, 1, out);
        cr_assert_str_eq(joined(e, &out[0]), "f2,f1");
        cr_assert_eq(st.friends, 150);
        cr_assert_eq(st.friends_kept, rocks && again > 0, "call %d: the kept list (on RocksDB)", again);
    }
    unfriend(e, "f2", "me"); /* no longer mutual */
    for (int again = 0; again < 3; again++) {
        st = ask(e, "me", NULL, 0, urls, 1, out);
        cr_assert_str_eq(joined(e, &out[0]), "f1", "call %d: an ended friendship shows at once", again);
        cr_assert_eq(st.friends, 149);
        cr_assert_eq(st.friends_kept, rocks && again > 1, "call %d", again);
    }
    befriend(e, "me", "g");
    for (int again = 0; again < 3; again++) {
        st = ask(e, "me", NULL, 0, urls, 1, out);
        cr_assert_str_eq(joined(e, &out[0]), "g,f1", "call %d: a new friendship shows at once", again);
        cr_assert_eq(st.friends_kept, rocks && again > 1, "call %d", again);
    }
    /* another user's list is kept apart */
    befriend(e, "you", "f1");
    st = ask(e, "you", NULL, 0, urls, 1, out);
    cr_assert_str_eq(joined(e, &out[0]), "f1");
    cr_assert_not(st.friends_kept, "a list of one is inline: never kept");
}
BOTH_BACKENDS(friends_kept_between_calls)

/* A range read of a set of 200 members from the RocksDB store's cache (the
 * second read; the first offers it), into *b. */
static const hr_result *cached_set(env *e, const char *key, hr_batch **b) {
    hr_batch *w = hr_batch_new();
    char m[16];
    for (int i = 0; i < 200; i++) {
        snprintf(m, sizeof m, "m%d", i);
        hr_zadd(w, hr_slice_str(key), i, hr_slice_str(m));
    }
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(e->t.store, w, 0, &err), HR_OK, "%s", err.msg);
    hr_batch_free(w);
    hr_zrange_spec all = hr_zrange_all(false, 1000);
    for (int i = 0; i < 2; i++) {
        *b = hr_batch_new();
        hr_zrange(*b, hr_slice_str(key), &all);
        cr_assert_eq(hr_store_exec(e->t.store, *b, 0, &err), HR_OK, "%s", err.msg);
        if (i == 0) hr_batch_free(*b);
    }
    const hr_result *r = hr_batch_result(*b, 0);
    cr_assert_geq(r->n_entries, 200);
    cr_assert_not_null(r->origin, "read from the cache: it has an origin");
    return r;
}

/* A read of the whole set key given origin as spec.unless: how many
 * entries it answered, or -1 for "unchanged" (and no entries). */
static long read_unless(env *e, const char *key, const hr_origin *origin) {
    hr_zrange_spec all = hr_zrange_all(false, 1000);
    all.unless = origin;
    hr_batch *b = hr_batch_new();
    hr_zrange(b, hr_slice_str(key), &all);
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, &err), HR_OK, "%s", err.msg);
    const hr_result *r = hr_batch_result(b, 0);
    long n = r->unchanged ? -1 : (long)r->n_entries;
    if (r->unchanged) cr_assert_eq(r->n_entries, 0);
    hr_batch_free(b);
    return n;
}

static hr_slice *ids_of(env *e, const hr_result *r) {
    hr_slice *ids = hr_arena_alloc(&e->a, r->n_entries * sizeof *ids);
    for (size_t i = 0; i < r->n_entries; i++)
        ids[i] = r->entries[i].member;
    return ids;
}

Test(reading_rocksdb, a_kept_friend_list_outlives_its_batch_and_its_replacement) {
    env e;
    memset(&e, 0, sizeof e);
    test_store_open(&e.t, "rocksdb");
    hr_batch *b;
    const hr_result *r = cached_set(&e, "set", &b);
    hr_fmemo *m = hr_fmemo_new(e.t.store, 4, 1 << 20);
    const hr_fmemo_entry *kept = hr_fmemo_put(m, hr_slice_str("u"), r, ids_of(&e, r), r->n_entries);
    cr_assert_not_null(kept);
    hr_batch_free(b); /* the entry keeps the set its ids point into */
    const hr_fmemo_entry *again = hr_fmemo_get(m, hr_slice_str("u"));
    cr_assert_eq(again, kept);
    cr_assert_null(hr_fmemo_get(m, hr_slice_str("v")));
    hr_fmemo_done(m, again);

    /* the set changes: the store's cache lets go of it; a read given the
     * kept origin answers the new set, not "unchanged" */
    hr_batch *w = hr_batch_new();
    hr_zadd(w, hr_slice_str("set"), 1000, hr_slice_str("newest"));
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(e.t.store, w, 0, &err), HR_OK, "%s", err.msg);
    hr_batch_free(w);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(read_unless(&e, "set", kept->origin), 201, "read %d", i);
    /* replaced while a call still uses it: readable until done (ASan) */
    r = cached_set(&e, "set", &b);
    const hr_fmemo_entry *newer = hr_fmemo_put(m, hr_slice_str("u"), r, ids_of(&e, r), r->n_entries);
    cr_assert_not_null(newer);
    cr_assert(hr_slice_eq(kept->ids[199], hr_slice_str("m199")));
    cr_assert_eq(hr_rplan_friends_find(&kept->index, hr_slice_str("m5")), 5);
    hr_fmemo_done(m, kept);
    /* unchanged: a read given the newer origin reads nothing */
    cr_assert_eq(read_unless(&e, "set", newer->origin), -1);
    hr_fmemo_done(m, newer);
    hr_batch_free(b);
    size_t bytes;
    cr_assert_eq(hr_fmemo_count(m, &bytes), 1);
    /* an entry over the budget is not kept */
    hr_fmemo *small = hr_fmemo_new(e.t.store, 4, 1000);
    r = cached_set(&e, "set", &b);
    cr_assert_null(hr_fmemo_put(small, hr_slice_str("u"), r, ids_of(&e, r), r->n_entries));
    cr_assert_eq(hr_fmemo_count(small, NULL), 0);
    hr_batch_free(b);
    hr_fmemo_free(small);
    hr_fmemo_free(m);
    hr_arena_free(&e.a);
    test_store_close(&e.t);
}

/* Random reads among 60 users and 30 URLs; friends-reads for each user with
 * each side forced (lists, probes, URL sets, the friends' sets) and the
 * default, against
 * the model. Some URLs get long lists, so the first round trip's 32 readers
 * do not answer them. */
static void model_both_sides(env *e) {
    enum { USERS = 60, URLS = 30 };
    site(e, "model.example");
    char uid[USERS][16], url[URLS][48];
    bool read[USERS][URLS] = {{false}}, friend_[USERS][USERS] = {{false}}, shares[USERS];
    srand(3);
    for (int u = 0; u < USERS; u++) {
        snprintf(uid[u], sizeof uid[u], "u%02d", u);
        shares[u] = u % 7 != 3;
        if (shares[u]) share(e, uid[u], true);
    }
    for (int i = 0; i < URLS; i++)
        snprintf(url[i], sizeof url[i], "https://model.example/%d", i);
    for (int u = 0; u < USERS; u++)
        for (int v = u + 1; v < USERS; v++)
            if (rand() % 4 == 0) {
                befriend(e, uid[u], uid[v]);
                friend_[u][v] = friend_[v][u] = true;
            }
    for (int u = 0; u < USERS; u++)
        for (int i = 0; i < URLS; i++) {
            /* URLs 0..2 are read by nearly everyone: lists past the first read */
            int p = i < 3 ? 95 : 12;
            if (rand() % 100 >= p) continue;
            hr_read_outcome o = record_at(e, uid[u], url[i], hr_now_ms() - (rand() % 1000));
            cr_assert_eq(o, shares[u] ? HR_READ_RECORDED : HR_READ_NOT_OPTED_IN);
            read[u][i] = shares[u];
        }
    const char *urls[URLS];
    for (int i = 0; i < URLS; i++)
        urls[i] = url[i];
    /* the sides forced one by one, the planner's choice, and URL sets with
     * their tests split over two batches (core/reading.c, round trip 2),
     * the second batch's URLs tested again by the caller in mode 6, as when
     * the helper is late with them */
    const hr_rplan_costs *modes[] = {&FORCE_LISTS, &FORCE_PROBES, &FORCE_SETS, &FORCE_TESTS, NULL, &FORCE_SETS,
                                     &FORCE_SETS};
    for (int mode = 0; mode < 7; mode++) {
        open_reading_split(e, 30 * DAY, modes[mode], mode >= 5 ? 1 : 0, mode == 6);
        size_t via[4] = {0}, split = 0, late = 0, queries_split = 0;
        for (int u = 0; u < USERS; u++) {
            hr_url_reads out[URLS];
            hr_reads_stats st = ask(e, uid[u], NULL, 0, urls, URLS, out);
            split += st.urls_split;
            late += st.split_late;
            queries_split += st.urls_split > 0;
            via[0] += st.urls_list;
            via[1] += st.urls_probe;
            via[2] += st.urls_set;
            via[3] += st.urls_friends;
            /* (and one more when the second batch was tested again) */
            cr_assert_leq(st.round_trips, 2 + st.split_late, "mode %d: every URL set is complete", mode);
            for (int i = 0; i < URLS; i++) {
                hr_buf want = HR_BUF_INIT;
                int64_t readers = 0;
                for (int v = 0; v < USERS; v++) {
                    readers += read[v][i];
                    if (!friend_[u][v] || !read[v][i]) continue;
                    if (want.len) hr_buf_append_byte(&want, ',');
                    hr_buf_append_str(&want, uid[v]);
                }
                /* the graph lists friends newest first: compare as sets */
                hr_buf got = HR_BUF_INIT;
                for (int v = 0; v < USERS; v++)
                    for (size_t j = 0; j < out[i].n_friends; j++)
                        if (hr_slice_eq(out[i].friends[j], hr_slice_str(uid[v]))) {
                            if (got.len) hr_buf_append_byte(&got, ',');
                            hr_buf_append_str(&got, uid[v]);
                        }
                cr_assert_str_eq(got.len ? got.data : "", want.len ? want.data : "", "mode %d, %s, URL %d",
                                 mode, uid[u], i);
                cr_assert_eq(out[i].readers, readers, "mode %d, %s, URL %d: readers", mode, uid[u], i);
                hr_buf_free(&want);
                hr_buf_free(&got);
            }
        }
        /* users with friends ask about 3 long lists each; short lists count as read */
        if (mode >= 5)
            cr_assert_geq(split, 10, "two in five URL sets in the second batch");
        else
            cr_assert_eq(split, 0, "mode %d: too few tests to split", mode);
        if (mode == 6)
            cr_assert_eq(late, queries_split, "every second batch tested again");
        else if (mode != 5) /* mode 5: when the helper was late */
            cr_assert_eq(late, 0, "mode %d: nothing split", mode);
        int forced = mode >= 5 ? 2 : mode;
        for (int side = 0; side < 4 && mode != 4; side++) {
            if (side == forced)
                cr_assert_geq(via[side], 30, "mode %d", mode);
            else if (side != 0)
                cr_assert_eq(via[side], 0, "mode %d, side %d", mode, side);
        }
    }
}
BOTH_BACKENDS(model_both_sides)

/* Remove HR_RK_SET_COMPLETE from url's URL set, as if the store had been
 * written before URL sets existed. */
static void forget_set_complete(env *e, const char *url) {
    hr_buf c = HR_BUF_INIT, k = HR_BUF_INIT;
    cr_assert_eq(hr_url_canonical(hr_slice_str(url), &c, NULL), HR_OK);
    hr_batch *b = hr_batch_new();
    size_t op = hr_pset_rem(b, hr_rk_url(&k, e->ns, hr_url_hash(hr_buf_slice(&c)), "/s"), HR_RK_SET_COMPLETE);
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(hr_batch_result(b, op)->num, 1, "the URL set was complete");
    hr_batch_free(b);
    hr_buf_free(&c);
    hr_buf_free(&k);
}

/* 40 readers of one URL (past the first round trip's 32): the URL-set side
 * answers them, hides a reader who opts out, and a set that does not say it
 * is complete is not trusted: the URL is read from its list instead, in a
 * third round trip, until the list empties and starts again. */
static void url_sets(env *e) {
    site(e, "set.example");
    const char *url = "https://set.example/a";
    share(e, "me", true);
    char uid[40][16];
    for (int i = 0; i < 40; i++) {
        snprintf(uid[i], sizeof uid[i], "r%02d", i);
        share(e, uid[i], true);
        if (i % 2 == 0) befriend(e, "me", uid[i]);
        read_ok(e, uid[i], url);
    }
    open_reading(e, 30 * DAY, &FORCE_SETS);
    const char *urls[] = {url};
    hr_url_reads out[1];
    hr_reads_stats st = ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(st.urls_set, 1);
    cr_assert_eq(st.round_trips, 2);
    cr_assert_eq(out[0].n_friends, 20);
    cr_assert_eq(out[0].readers, 40);

    share(e, "r04", false);
    ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(out[0].n_friends, 19, "an opted-out reader is hidden at once");
    for (size_t i = 0; i < out[0].n_friends; i++)
        cr_assert(!hr_slice_eq(out[0].friends[i], hr_slice_str("r04")));

    forget_set_complete(e, url);
    st = ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(st.round_trips, 3, "an incomplete set costs a round trip");
    cr_assert_eq(st.urls_set, 0);
    cr_assert_eq(st.urls_list + st.urls_probe, 1);
    cr_assert_eq(out[0].n_friends, 19, "and is answered from the list");
    cr_assert_eq(out[0].readers, 39);
    /* planned again without URL sets: here the friends' sets are cheapest */
    hr_rplan_costs sets_then_tests = FORCE_SETS;
    sets_then_tests.friend_test = sets_then_tests.friend_extra = 0;
    open_reading(e, 30 * DAY, &sets_then_tests);
    st = ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(st.round_trips, 3);
    cr_assert_eq(st.urls_friends, 1);
    cr_assert_eq(out[0].n_friends, 19);
    open_reading(e, 30 * DAY, &FORCE_SETS);
    /* a new reader does not make the set complete: the list holds older ones */
    share(e, "late", true);
    befriend(e, "me", "late");
    read_ok(e, "late", url);
    st = ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(st.round_trips, 3);
    cr_assert_eq(out[0].n_friends, 20);

    /* every reader leaves; the next read starts a complete set */
    for (int i = 0; i < 40; i++)
        share(e, uid[i], false);
    share(e, "late", false);
    share(e, "late", true);
    for (int i = 0; i < 36; i++) {
        share(e, uid[i], true);
        read_ok(e, uid[i], url);
    }
    st = ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(st.round_trips, 2);
    cr_assert_eq(st.urls_set, 1);
    cr_assert_eq(out[0].n_friends, 18);
    cr_assert_eq(out[0].readers, 36);
}
BOTH_BACKENDS(url_sets)

/* A list longer than the first round trip reads (RocksDB skips it there:
 * HR_READING_LIST_FIRST_OF) is read whole in the second, next to a short
 * one answered by the first. */
static void long_list_read_whole(env *e) {
    site(e, "long.example");
    share(e, "me", true);
    enum { LONG = HR_READING_LIST_FIRST_OF + 22 };
    const char *urls[] = {"https://long.example/a", "https://long.example/b"};
    for (int i = 0; i < LONG; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "r%03d", i);
        share(e, uid, true);
        if (i % 3 == 0) befriend(e, "me", uid);
        read_ok(e, uid, urls[0]);
        if (i < 5) read_ok(e, uid, urls[1]);
    }
    open_reading(e, 30 * DAY, &FORCE_LISTS);
    hr_url_reads out[2];
    hr_reads_stats st = ask(e, "me", NULL, 0, urls, 2, out);
    cr_assert_eq(st.urls_list, 2);
    cr_assert_eq(st.round_trips, 2);
    cr_assert_eq(out[0].readers, LONG);
    cr_assert_eq(out[0].n_friends, (LONG + 2) / 3);
    for (size_t i = 0; i < out[0].n_friends; i++) {
        char id[16];
        snprintf(id, sizeof id, "%.*s", (int)out[0].friends[i].len, out[0].friends[i].ptr);
        int n = atoi(id + 1);
        cr_assert_eq(n % 3, 0, "%.*s is no friend", (int)out[0].friends[i].len, out[0].friends[i].ptr);
        for (size_t j = 0; j < i; j++)
            cr_assert_not(hr_slice_eq(out[0].friends[i], out[0].friends[j]), "a friend twice");
    }
    cr_assert_eq(out[1].readers, 5);
    cr_assert_str_eq(joined(e, &out[1]), "r003,r000");
}
BOTH_BACKENDS(long_list_read_whole)

static void reads_expire(env *e) {
    open_reading(e, 1500, NULL);
    site(e, "ttl.example");
    share(e, "me", true);
    share(e, "f", true);
    befriend(e, "me", "f");
    read_ok(e, "f", "https://ttl.example/a");
    const char *urls[] = {"https://ttl.example/a"};
    hr_url_reads out[1];
    ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(out[0].n_friends, 1);
    cr_assert_eq(out[0].readers, 1);
    /* both sides see the expiry */
    struct timespec ts = {1, 700000000};
    nanosleep(&ts, NULL);
    ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(out[0].n_friends, 0, "expired on the list side");
    cr_assert_eq(out[0].readers, 0);
    /* the other sides, with the expired entry still in the list */
    const hr_rplan_costs *modes[] = {&FORCE_PROBES, &FORCE_SETS, &FORCE_TESTS};
    for (int i = 0; i < 3; i++) {
        open_reading(e, 1500, modes[i]);
        ask(e, "me", NULL, 0, urls, 1, out);
        cr_assert_eq(out[0].n_friends, 0, "expired on side %d", i);
    }
}
BOTH_BACKENDS(reads_expire)

static hr_trend_item *popular(env *e, hr_window w, size_t *n) {
    hr_trend_item *items;
    hr_err err = {0};
    cr_assert_eq(hr_trends_popular(hr_reading_trends(e->reading), w, 50, hr_now_ms(), &e->a, &items, n, &err),
                 HR_OK, "%s", err.msg);
    return items;
}

/* n readers of url at time t (users named prefix0, prefix1...). */
static void readers_at(env *e, const char *prefix, int n, const char *url, int64_t t) {
    for (int i = 0; i < n; i++) {
        char u[32];
        snprintf(u, sizeof u, "%s%d", prefix, i);
        share(e, u, true);
        cr_assert_eq(record_at(e, u, url, t), HR_READ_RECORDED);
    }
}

static void popular_windows(env *e) {
    site(e, "pop.example");
    int64_t now = hr_now_ms();
    readers_at(e, "x", 5, "https://pop.example/x", now - 3 * HOUR);
    /* y: two moments in one 10-minute bucket (so in one bucket of every granularity) */
    int64_t y1 = (now - 30 * MINUTE) / (10 * MINUTE) * (10 * MINUTE) + MINUTE, y2 = y1 + 2 * MINUTE;
    readers_at(e, "y", 3, "https://pop.example/y", y1);
    readers_at(e, "z", 4, "https://pop.example/z", now - 2 * DAY);
    readers_at(e, "o", 6, "https://pop.example/old", now - 9 * DAY); /* past every window */
    /* a reader coming back in the same bucket counts once */
    cr_assert_eq(record_at(e, "y0", "https://pop.example/y", y2), HR_READ_RECORDED);
    size_t n;
    hr_trend_item *it = popular(e, HR_WINDOW_1H, &n);
    cr_assert_eq(n, 1);
    cr_assert(hr_slice_eq(it[0].url, hr_slice_str("https://pop.example/y")));
    cr_assert_float_eq(it[0].readers, 3, 1e-9);
    it = popular(e, HR_WINDOW_1D, &n);
    cr_assert_eq(n, 2);
    cr_assert(hr_slice_eq(it[0].url, hr_slice_str("https://pop.example/x")) && llround(it[0].readers) == 5);
    cr_assert(hr_slice_eq(it[1].url, hr_slice_str("https://pop.example/y")));
    it = popular(e, HR_WINDOW_7D, &n);
    cr_assert_eq(n, 3);
    cr_assert(hr_slice_eq(it[0].url, hr_slice_str("https://pop.example/x")));
    cr_assert(hr_slice_eq(it[1].url, hr_slice_str("https://pop.example/z")) && llround(it[1].readers) == 4);
    cr_assert(hr_slice_eq(it[2].url, hr_slice_str("https://pop.example/y")));
}
BOTH_BACKENDS(popular_windows)

static void trending_order(env *e) {
    site(e, "trend.example");
    int64_t now = hr_now_ms();
    /* steady: 5 an hour for the 21 hours before, then 4 in the last hour */
    for (int h = 2; h <= 22; h++) {
        char p[16];
        snprintf(p, sizeof p, "s%d-", h);
        readers_at(e, p, 5, "https://trend.example/steady", now - h * HOUR);
    }
    readers_at(e, "s0-", 4, "https://trend.example/steady", now - 5 * MINUTE);
    readers_at(e, "n", 6, "https://trend.example/new", now - 5 * MINUTE);      /* new: 6 */
    readers_at(e, "r", 3, "https://trend.example/rising", now - 3 * HOUR);     /* 3 before... */
    readers_at(e, "q", 9, "https://trend.example/rising", now - 5 * MINUTE);   /* ...9 now */
    readers_at(e, "one", 1, "https://trend.example/single", now - 5 * MINUTE); /* noise */
    hr_trend_item *it;
    size_t n;
    hr_err err = {0};
    cr_assert_eq(hr_trends_trending(hr_reading_trends(e->reading), 10, hr_now_ms(), &e->a, &it, &n, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(n, 2, "steady scores 0 or less, single is under the minimum");
    cr_assert(hr_slice_eq(it[0].url, hr_slice_str("https://trend.example/rising")), "%.*s",
              (int)it[0].url.len, it[0].url.ptr);
    cr_assert_float_eq(it[0].readers, 9, 1e-9);
    cr_assert_float_eq(it[0].baseline, 3.0 / 23, 1e-9);
    cr_assert(hr_slice_eq(it[1].url, hr_slice_str("https://trend.example/new")));
    cr_assert_float_eq(it[1].score, 6, 1e-9);
    cr_assert_gt(it[0].score, it[1].score);
}
BOTH_BACKENDS(trending_order)

static void friends_popular(env *e) {
    site(e, "fp.example");
    const char *fr[] = {"a", "b", "c", "d"};
    share(e, "me", true);
    for (int i = 0; i < 4; i++) {
        share(e, fr[i], true);
        befriend(e, "me", fr[i]);
    }
    share(e, "other", true);
    int64_t now = hr_now_ms();
    cr_assert_eq(record_at(e, "a", "https://fp.example/1", now - 10 * MINUTE), HR_READ_RECORDED);
    cr_assert_eq(record_at(e, "b", "https://fp.example/1", now - 20 * MINUTE), HR_READ_RECORDED);
    cr_assert_eq(record_at(e, "c", "https://fp.example/1", now - 2 * DAY), HR_READ_RECORDED);
    cr_assert_eq(record_at(e, "a", "https://fp.example/2", now - 5 * MINUTE), HR_READ_RECORDED);
    cr_assert_eq(record_at(e, "d", "https://fp.example/2", now - 30 * MINUTE), HR_READ_RECORDED);
    cr_assert_eq(record_at(e, "d", "https://fp.example/3", now - 1 * MINUTE), HR_READ_RECORDED);
    readers_at(e, "other", 1, "https://fp.example/3", now);
    readers_at(e, "other", 1, "https://fp.example/4", now);
    hr_url_reads *it;
    size_t n;
    hr_err err = {0};
    cr_assert_eq(hr_reading_friends_popular(e->reading, hr_slice_str("me"), HR_WINDOW_1D, 10, hr_now_ms(),
                                            &e->a, &it, &n, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(n, 3, "URL 4 has no friend reader");
    /* 1 and 2 have two friends each in the day; 2 was read more recently */
    cr_assert(hr_slice_eq(it[0].url, hr_slice_str("https://fp.example/2")));
    cr_assert(hr_slice_eq(it[1].url, hr_slice_str("https://fp.example/1")));
    cr_assert_eq(it[1].n_friends, 2);
    cr_assert_eq(it[1].readers, 3);
    cr_assert(hr_slice_eq(it[2].url, hr_slice_str("https://fp.example/3")));
    cr_assert_eq(it[2].readers, 2);
    cr_assert_eq(hr_reading_friends_popular(e->reading, hr_slice_str("me"), HR_WINDOW_7D, 1, hr_now_ms(),
                                            &e->a, &it, &n, &err),
                 HR_OK);
    cr_assert_eq(n, 1);
    cr_assert(hr_slice_eq(it[0].url, hr_slice_str("https://fp.example/1")) && it[0].n_friends == 3);
}
BOTH_BACKENDS(friends_popular)

static void record_many_in_one_call(env *e) {
    site(e, "bulk.example");
    share(e, "me", true);
    share(e, "f", true);
    befriend(e, "me", "f");
    int64_t now = hr_now_ms();
    int64_t t0 = (now - 50 * MINUTE) / (10 * MINUTE) * (10 * MINUTE); /* a 10-minute bucket's start */
    hr_slice urls[] = {hr_slice_str("https://bulk.example/a"),      hr_slice_str("https://other.example/b"),
                       hr_slice_str("https://www.bulk.example/a/"), hr_slice_str("https://bulk.example/old"),
                       hr_slice_str("https://bulk.example/a"),      hr_slice_str("https://bulk.example/c")};
    int64_t times[] = {t0 + MINUTE, now, t0 + 2 * MINUTE, now - 40 * DAY, t0 + 25 * MINUTE, now};
    hr_read_outcome out[6];
    hr_err err = {0};
    cr_assert_eq(hr_reading_record_many(e->reading, hr_slice_str("f"), urls, times, 6, now, out, &err), HR_OK,
                 "%s", err.msg);
    hr_read_outcome want[] = {HR_READ_RECORDED, HR_READ_SITE_NOT_SELECTED, HR_READ_RECORDED,
                              HR_READ_EXPIRED,  HR_READ_RECORDED,          HR_READ_RECORDED};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(out[i], want[i], "read %d", i);
    const char *q[] = {"https://bulk.example/a", "https://bulk.example/c"};
    hr_url_reads r[2];
    ask(e, "me", NULL, 0, q, 2, r);
    cr_assert(r[0].n_friends == 1 && r[0].readers == 1 && r[1].n_friends == 1);
    /* two 10-minute buckets of the last hour hold f's reads of a: 2 reader-buckets */
    size_t n;
    hr_trend_item *it = popular(e, HR_WINDOW_1H, &n);
    cr_assert_eq(n, 2);
    cr_assert(hr_slice_eq(it[0].url, hr_slice_str("https://bulk.example/a")));
    cr_assert_float_eq(it[0].readers, 2, 1e-9);
    /* the same reads again change nothing: they are not newer */
    cr_assert_eq(hr_reading_record_many(e->reading, hr_slice_str("f"), urls, times, 6, now, out, &err),
                 HR_OK);
    it = popular(e, HR_WINDOW_1H, &n);
    cr_assert_float_eq(it[0].readers, 2, 1e-9);
    /* a bad URL refuses the whole call, naming it */
    urls[4] = hr_slice_str("nope");
    cr_assert_eq(hr_reading_record_many(e->reading, hr_slice_str("f"), urls, times, 6, now, out, &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "urls[4]") != NULL, "%s", err.msg);
    /* not sharing: nothing recorded */
    urls[4] = hr_slice_str("https://bulk.example/d");
    cr_assert_eq(hr_reading_record_many(e->reading, hr_slice_str("nobody"), urls, times, 6, now, out, &err),
                 HR_OK);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(out[i], HR_READ_NOT_OPTED_IN);
}
BOTH_BACKENDS(record_many_in_one_call)
