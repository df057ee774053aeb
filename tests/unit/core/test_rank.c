/* Unit tests of core/rank: the hot formula (Reddit's) and list cursors.
 * Pure functions: no store. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/rank.h"

#define T0 1700000000000LL /* 2023-11-14, ms */
#define HOUR 3600000LL

Test(rank, hot_matches_reddit) {
    /* Reddit's _hot(ups, downs, date): sign * log10(max(|s|,1)) + (t - 1134028003) / 45000 */
    double secs = (double)T0 / 1000 - 1134028003.0;
    cr_assert_float_eq(hr_rank_hot(0, T0), secs / 45000, 1e-9);
    cr_assert_float_eq(hr_rank_hot(10, T0), 1 + secs / 45000, 1e-9);
    cr_assert_float_eq(hr_rank_hot(-100, T0), -2 + secs / 45000, 1e-9);
    cr_assert_float_eq(hr_rank_hot(1000, T0), 3 + secs / 45000, 1e-9);
}

Test(rank, hot_sign_and_log_scale) {
    double zero = hr_rank_hot(0, T0);
    /* 1 and -1 count as nothing: log10(1) = 0 */
    cr_assert_float_eq(hr_rank_hot(1, T0), zero, 1e-12);
    cr_assert_float_eq(hr_rank_hot(-1, T0), zero, 1e-12);
    cr_assert(hr_rank_hot(2, T0) > zero);
    cr_assert(hr_rank_hot(-2, T0) < zero);
    /* log scale: 1 -> 10 is worth as much as 10 -> 100 */
    double d1 = hr_rank_hot(10, T0) - hr_rank_hot(1, T0);
    double d2 = hr_rank_hot(100, T0) - hr_rank_hot(10, T0);
    cr_assert_float_eq(d1, d2, 1e-9);
    cr_assert_float_eq(d1, 1.0, 1e-9);
    /* symmetric around zero */
    cr_assert_float_eq(hr_rank_hot(50, T0) - zero, zero - hr_rank_hot(-50, T0), 1e-9);
}

Test(rank, hot_time_term) {
    /* 12.5 hours of recency are worth a factor of 10 in votes */
    cr_assert_float_eq(hr_rank_hot(1, T0 + 45000000LL), hr_rank_hot(10, T0), 1e-9);
    cr_assert_float_eq(hr_rank_hot(0, T0 + 45000000LL) - hr_rank_hot(0, T0), 1.0, 1e-9);
    /* a newer story with equal votes ranks higher, even by one millisecond */
    for (int64_t s = -20; s <= 20; s++) {
        cr_assert(hr_rank_hot(s, T0 + 1) > hr_rank_hot(s, T0), "sum %lld", (long long)s);
        cr_assert(hr_rank_hot(s, T0 + HOUR) > hr_rank_hot(s, T0));
    }
    /* decay relative to newer stories: a 100-vote story a day old is below a
     * 10-vote story of now (24 h = 1.92 orders of magnitude) */
    cr_assert(hr_rank_hot(10, T0 + 24 * HOUR) > hr_rank_hot(100, T0));
    cr_assert(hr_rank_hot(10, T0 + 6 * HOUR) < hr_rank_hot(100, T0));
}

Test(rank, hot_monotonic) {
    for (int64_t s = -1000; s < 1000; s++)
        cr_assert(hr_rank_hot(s + 1, T0) >= hr_rank_hot(s, T0), "not monotonic in votes at %lld",
                  (long long)s);
    for (int64_t t = 0; t < 1000; t++)
        cr_assert(hr_rank_hot(7, T0 + t * 60000) < hr_rank_hot(7, T0 + (t + 1) * 60000));
    /* deterministic: the convergence of the stored hot score relies on it */
    cr_assert(hr_rank_hot(123, T0) == hr_rank_hot(123, T0));
}

Test(rank, cursor_roundtrip) {
    hr_arena a = HR_ARENA_INIT;
    const double scores[] = {0, -0.5, 12577.155488888, 1700000000000.0, -3, 1e300};
    const char *members[] = {"0123456789abcdef", "alice/0123456789abcdef", "x", "a\x01\xff"};
    for (size_t i = 0; i < sizeof scores / sizeof scores[0]; i++) {
        for (size_t j = 0; j < sizeof members / sizeof members[0]; j++) {
            hr_buf b = HR_BUF_INIT;
            hr_rank_cursor_encode(scores[i], hr_slice_str(members[j]), &b);
            for (size_t k = 0; k < b.len; k++)
                cr_assert(strchr("0123456789abcdef", b.data[k]), "URL-safe: %s", b.data);
            double s;
            hr_slice m;
            cr_assert_eq(hr_rank_cursor_decode(b.data, 300, &a, &s, &m, NULL), HR_OK);
            cr_assert(s == scores[i]);
            cr_assert(hr_slice_eq(m, hr_slice_str(members[j])));
            hr_buf_free(&b);
        }
    }
    hr_arena_free(&a);
}

Test(rank, cursor_rejects_garbage) {
    hr_arena a = HR_ARENA_INIT;
    double s;
    hr_slice m;
    hr_err err = {0};
    const char *bad[] = {"",
                         "00",
                         "zz",
                         "0000000000000000",    /* no member */
                         "000000000000000061a", /* odd length */
                         "00000000000000006g",  /* not hex */
                         "7ff000000000000061",  /* +inf */
                         "7ff800000000000061"}; /* NaN */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(hr_rank_cursor_decode(bad[i], 300, &a, &s, &m, &err), HR_EINVAL, "%s", bad[i]);
        cr_assert(strstr(err.msg, "cursor"), "%s", err.msg);
    }
    /* a member longer than the list's members can be */
    hr_buf b = HR_BUF_INIT;
    hr_rank_cursor_encode(1, hr_slice_str("0123456789abcdef0"), &b);
    cr_assert_eq(hr_rank_cursor_decode(b.data, 16, &a, &s, &m, NULL), HR_EINVAL);
    hr_buf_free(&b);
    hr_arena_free(&a);
}

Test(rank, list_spec) {
    hr_arena a = HR_ARENA_INIT;
    hr_zrange_spec sp;
    hr_err err = {0};
    hr_list_req req = {.limit = 20};
    cr_assert_eq(hr_list_spec(&req, 16, &a, &sp, NULL), HR_OK);
    cr_assert(sp.reverse && !sp.has_cursor && sp.limit == 20 && isinf(sp.min) && sp.min < 0);
    req = (hr_list_req){.has_since = true, .since_ms = 1000, .limit = 5};
    cr_assert_eq(hr_list_spec(&req, 16, &a, &sp, NULL), HR_OK);
    cr_assert(sp.min == 1001, "since is exclusive");
    req.limit = 0;
    cr_assert_eq(hr_list_spec(&req, 16, &a, &sp, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "limit"), "%s", err.msg);
    req.limit = HR_LIST_MAX + 1;
    cr_assert_eq(hr_list_spec(&req, 16, &a, &sp, &err), HR_EINVAL);
    req.limit = 3;
    req.cursor = hr_list_cursor(&a, 42, hr_slice_str("abc"));
    cr_assert_eq(hr_list_spec(&req, 16, &a, &sp, NULL), HR_OK);
    cr_assert(sp.has_cursor && sp.cursor_score == 42 && hr_slice_eq(sp.cursor_member, hr_slice_str("abc")));
    hr_arena_free(&a);
}
