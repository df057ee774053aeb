/* Unit tests of core/counters over a real store, on both backends: each
 * check is written once and registered for RocksDB and Redis Cluster. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "core/counters.h"
#include "support.h"

static const hr_counter_settings defaults = {30LL * 86400000, 10000};

typedef void (*counters_check)(hr_counters *c, hr_slice counter);

static void run(const char *kind, counters_check check) {
    test_store t;
    test_store_open(&t, kind);
    hr_counters *c = hr_counters_new(t.store, defaults);
    char name[64];
    test_unique(name, sizeof name, "ctr");
    check(c, hr_slice_str(name));
    hr_counters_free(c);
    test_store_close(&t);
}

static int64_t add(hr_counters *c, hr_slice counter, const char *object, const char *token) {
    int64_t n = -1;
    hr_err err = {0};
    int rc = hr_counters_add(c, counter, hr_slice_str(object), hr_slice_str(token), &n, &err);
    cr_assert_eq(rc, HR_OK, "add %s %s: %s", object, token, err.msg);
    return n;
}

static int64_t count(hr_counters *c, hr_slice counter, const char *object) {
    int64_t n = -1;
    hr_err err = {0};
    cr_assert_eq(hr_counters_count(c, counter, hr_slice_str(object), &n, &err), HR_OK, "%s", err.msg);
    return n;
}

static void distinct_tokens(hr_counters *c, hr_slice ctr) {
    cr_assert_eq(count(c, ctr, "obj"), 0);
    cr_assert_eq(add(c, ctr, "obj", "t1"), 1);
    cr_assert_eq(add(c, ctr, "obj", "t2"), 2);
    cr_assert_eq(add(c, ctr, "obj", "t1"), 2, "a repeated token is not counted again");
    cr_assert_eq(add(c, ctr, "other", "t1"), 1, "objects are counted apart");
    cr_assert_eq(count(c, ctr, "obj"), 2);
    /* tokens are binary-safe and long ones are fine */
    char longtok[HR_TOKEN_MAX + 1];
    memset(longtok, 'x', HR_TOKEN_MAX);
    longtok[HR_TOKEN_MAX] = '\0';
    cr_assert_eq(add(c, ctr, "obj", longtok), 3);
}
BOTH_STORES(counters, run, distinct_tokens)

static void bad_tokens_change_nothing(hr_counters *c, hr_slice ctr) {
    add(c, ctr, "obj", "t1");
    int64_t n = -1;
    hr_err err = {0};
    cr_assert_eq(hr_counters_add(c, ctr, hr_slice_str("obj"), hr_slice_str(""), &n, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "token"), "%s", err.msg);
    char big[HR_TOKEN_MAX + 2];
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert_eq(hr_counters_add(c, ctr, hr_slice_str("obj"), hr_slice_str(big), &n, &err), HR_EINVAL);
    cr_assert_eq(count(c, ctr, "obj"), 1);
}
BOTH_STORES(counters, run, bad_tokens_change_nothing)

static void count_many(hr_counters *c, hr_slice ctr) {
    add(c, ctr, "a", "t1");
    add(c, ctr, "a", "t2");
    add(c, ctr, "b", "t1");
    hr_slice objs[3] = {hr_slice_str("a"), hr_slice_str("b"), hr_slice_str("never")};
    int64_t counts[3];
    cr_assert_eq(hr_counters_count_many(c, ctr, objs, 3, counts, NULL), HR_OK);
    cr_assert_eq(counts[0], 2);
    cr_assert_eq(counts[1], 1);
    cr_assert_eq(counts[2], 0);
    hr_err err = {0};
    cr_assert_eq(hr_counters_count_many(c, ctr, objs, HR_COUNTS_MAX + 1, counts, &err), HR_EINVAL);
}
BOTH_STORES(counters, run, count_many)

static void named_counters_are_apart(hr_counters *c, hr_slice ctr) {
    char other[80];
    snprintf(other, sizeof other, "%.*s-other", (int)ctr.len, ctr.ptr);
    add(c, ctr, "obj", "t1");
    cr_assert_eq(count(c, hr_slice_str(other), "obj"), 0);
    cr_assert_eq(add(c, hr_slice_str(other), "obj", "t9"), 1);
    cr_assert_eq(count(c, ctr, "obj"), 1);
}
BOTH_STORES(counters, run, named_counters_are_apart)

static void settings(hr_counters *c, hr_slice ctr) {
    hr_counter_settings s;
    cr_assert_eq(hr_counters_settings(c, ctr, &s, NULL), HR_OK);
    cr_assert_eq(s.ttl_ms, defaults.ttl_ms);
    cr_assert_eq(s.exact_limit, defaults.exact_limit);
    hr_counter_settings mine = {60000, 42};
    cr_assert_eq(hr_counters_configure(c, ctr, &mine, NULL), HR_OK);
    cr_assert_eq(hr_counters_settings(c, ctr, &s, NULL), HR_OK);
    cr_assert_eq(s.ttl_ms, 60000);
    cr_assert_eq(s.exact_limit, 42);
    hr_err err = {0};
    hr_counter_settings bad = {0, 42};
    cr_assert_eq(hr_counters_configure(c, ctr, &bad, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "ttl_ms"), "%s", err.msg);
    bad = (hr_counter_settings){1000, 0};
    cr_assert_eq(hr_counters_configure(c, ctr, &bad, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "exact_limit"), "%s", err.msg);
    cr_assert_eq(hr_counters_settings(c, ctr, &s, NULL), HR_OK);
    cr_assert_eq(s.exact_limit, 42, "a rejected change leaves the settings alone");
}
BOTH_STORES(counters, run, settings)

static void ttl_expires_connections(hr_counters *c, hr_slice ctr) {
    hr_counter_settings s = {400, 100};
    cr_assert_eq(hr_counters_configure(c, ctr, &s, NULL), HR_OK);
    add(c, ctr, "obj", "t1");
    cr_assert_eq(add(c, ctr, "obj", "t2"), 2);
    usleep(700 * 1000);
    cr_assert_eq(count(c, ctr, "obj"), 0, "both connections expired");
    cr_assert_eq(add(c, ctr, "obj", "t1"), 1, "a token counts again after expiry");
}
BOTH_STORES(counters, run, ttl_expires_connections)

static void estimate_past_the_limit(hr_counters *c, hr_slice ctr) {
    hr_counter_settings s = {3600000, 50};
    cr_assert_eq(hr_counters_configure(c, ctr, &s, NULL), HR_OK);
    char tok[32];
    for (int i = 0; i < 50; i++) {
        snprintf(tok, sizeof tok, "tok%d", i);
        cr_assert_eq(add(c, ctr, "hot", tok), i + 1, "exact up to the limit");
    }
    int64_t last = 0;
    for (int i = 50; i < 3000; i++) {
        snprintf(tok, sizeof tok, "tok%d", i);
        last = add(c, ctr, "hot", tok);
    }
    double err = (double)(last - 3000) / 3000.0;
    cr_assert(err > -0.03 && err < 0.03, "estimate %lld for 3000 distinct", (long long)last);
    /* re-adding known tokens leaves the estimate where it was */
    for (int i = 0; i < 500; i++) {
        snprintf(tok, sizeof tok, "tok%d", i);
        add(c, ctr, "hot", tok);
    }
    cr_assert_eq(count(c, ctr, "hot"), last);
}
BOTH_STORES(counters, run, estimate_past_the_limit)
