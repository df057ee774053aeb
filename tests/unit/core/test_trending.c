/* Unit tests of the trending arithmetic of core/trending.h: milestones,
 * windows and their buckets, and the trending score (the counts over a
 * store are tested in test_reading.c). */
#include <criterion/criterion.h>
#include <math.h>

#include "core/trending.h"

#define DAY 86400000LL

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
