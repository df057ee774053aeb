/* Unit tests of core/reading over a real store, on both backends: sites
 * and the reasons a read is not recorded, expiry, the popular and trending
 * counts the reads feed, friends-popular, and recording many reads in one
 * call. friends-reads has its own file (test_reading_friends.c). Every test
 * has its own key namespace (reading_env.h). */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "reading_env.h"

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
BOTH_STORES(reading, run, sites_and_reasons)

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
BOTH_STORES(reading, run, reads_expire)

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
BOTH_STORES(reading, run, popular_windows)

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
BOTH_STORES(reading, run, trending_order)

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
BOTH_STORES(reading, run, friends_popular)

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
BOTH_STORES(reading, run, record_many_in_one_call)
