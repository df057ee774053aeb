/* test_profiles.c — core/profiles.h on both stores: profiles and objects
 * stored, replaced, deleted and refused, and a page's inclusion: each name
 * once, only what is stored, in one round trip. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/profiles.h"
#include "support.h"

typedef void (*profiles_check)(hr_profiles *p, hr_arena *a);

static void run(const char *kind, profiles_check check) {
    test_store t;
    test_store_open(&t, kind);
    char ns[40];
    test_unique(ns, sizeof ns, "pf");
    hr_profiles *p = hr_profiles_new(t.store, ns);
    hr_arena a = HR_ARENA_INIT;
    check(p, &a);
    hr_arena_free(&a);
    hr_profiles_free(p);
    test_store_close(&t);
}

static void put_ok(hr_profiles *p, hr_profile_kind kind, const char *id, const char *json) {
    hr_err err = {0};
    cr_assert_eq(hr_profiles_put(p, kind, hr_slice_str(id), hr_slice_str(json), &err), HR_OK, "%s", err.msg);
}

static void stored_replaced_deleted(hr_profiles *p, hr_arena *a) {
    hr_err err = {0};
    hr_slice json;
    cr_assert_eq(hr_profiles_get(p, HR_PROFILE_USER, hr_slice_str("bob"), a, &json, &err), HR_ENOTFOUND);
    put_ok(p, HR_PROFILE_USER, "bob", "{\"name\":\"Bob\"}");
    put_ok(p, HR_PROFILE_GROUP, "bob", "{\"name\":\"Bob's group\"}");
    put_ok(p, HR_PROFILE_OBJECT, "bob", "{\"kind\":\"object\"}");
    cr_assert_eq(hr_profiles_get(p, HR_PROFILE_USER, hr_slice_str("bob"), a, &json, &err), HR_OK);
    cr_assert(hr_slice_eq(json, hr_slice_str("{\"name\":\"Bob\"}")), "kinds are kept apart");
    put_ok(p, HR_PROFILE_USER, "bob", "{\"name\":\"Robert\"}");
    cr_assert_eq(hr_profiles_get(p, HR_PROFILE_USER, hr_slice_str("bob"), a, &json, &err), HR_OK);
    cr_assert(hr_slice_eq(json, hr_slice_str("{\"name\":\"Robert\"}")));
    cr_assert_eq(hr_profiles_delete(p, HR_PROFILE_OBJECT, hr_slice_str("bob"), &err), HR_OK, "%s", err.msg);
    cr_assert_eq(hr_profiles_delete(p, HR_PROFILE_OBJECT, hr_slice_str("bob"), &err), HR_ENOTFOUND);
    cr_assert_eq(hr_profiles_get(p, HR_PROFILE_GROUP, hr_slice_str("bob"), a, &json, &err), HR_OK);
}
BOTH_STORES(profiles, run, stored_replaced_deleted)

static void refused_and_unchanged(hr_profiles *p, hr_arena *a) {
    hr_err err = {0};
    char big[HR_OBJECT_MAX + 8];
    memset(big, ' ', sizeof big - 1);
    big[0] = '{';
    big[sizeof big - 2] = '}';
    big[sizeof big - 1] = 0;
    cr_assert_eq(hr_profiles_put(p, HR_PROFILE_USER, hr_slice_str("a b"), hr_slice_str("{}"), &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "uid"), "%s", err.msg);
    big[HR_PROFILE_MAX + 1] = '}';
    big[HR_PROFILE_MAX + 2] = 0;
    cr_assert_eq(hr_profiles_put(p, HR_PROFILE_USER, hr_slice_str("u"), hr_slice_str(big), &err), HR_ETOOBIG);
    big[HR_PROFILE_MAX + 2] = ' ';
    big[HR_PROFILE_MAX + 1] = ' ';
    cr_assert_eq(hr_profiles_put(p, HR_PROFILE_OBJECT, hr_slice_str("o"), hr_slice_str(big), &err),
                 HR_ETOOBIG);
    hr_slice json;
    cr_assert_eq(hr_profiles_get(p, HR_PROFILE_USER, hr_slice_str("u"), a, &json, &err), HR_ENOTFOUND);
    cr_assert_eq(hr_profiles_get(p, HR_PROFILE_OBJECT, hr_slice_str("o"), a, &json, &err), HR_ENOTFOUND);
}
BOTH_STORES(profiles, run, refused_and_unchanged)

static void a_page_includes_each_name_once(hr_profiles *p, hr_arena *a) {
    put_ok(p, HR_PROFILE_USER, "ann", "{\"name\":\"Ann\"}");
    put_ok(p, HR_PROFILE_USER, "bob", "{\"name\":\"Bob\"}");
    put_ok(p, HR_PROFILE_GROUP, "g1", "{\"title\":\"G\"}");
    put_ok(p, HR_PROFILE_OBJECT, "thread:7", "{\"subject\":\"hi\"}");
    hr_activity items[300];
    memset(items, 0, sizeof items);
    for (int i = 0; i < 300; i++) {
        items[i].actor = hr_slice_str(i % 3 == 0 ? "ann" : i % 3 == 1 ? "bob" : "nobody");
        items[i].verb = hr_slice_str("post");
        items[i].object = hr_slice_str(i % 2 ? "thread:7" : "thread:8");
        items[i].target = hr_slice_str(i % 5 ? "" : "group:g1");
    }
    hr_included inc;
    hr_err err = {0};
    uint64_t b0 = test_batches_total(), g0 = test_ops_total(HR_OP_GET);
    cr_assert_eq(hr_profiles_include(p, items, 300, a, &inc, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(test_batches_total() - b0, 1, "one round trip");
    /* ann, bob, nobody; g1; thread:7, thread:8, group:g1 */
    cr_assert_eq(test_ops_total(HR_OP_GET) - g0, 7, "each name read once");
    cr_assert_eq(inc.of[HR_PROFILE_USER].n, 2, "nobody has no profile: left out");
    cr_assert(hr_slice_eq(inc.of[HR_PROFILE_USER].ids[0], hr_slice_str("ann")));
    cr_assert(hr_slice_eq(inc.of[HR_PROFILE_USER].json[1], hr_slice_str("{\"name\":\"Bob\"}")));
    cr_assert_eq(inc.of[HR_PROFILE_GROUP].n, 1);
    cr_assert_eq(inc.of[HR_PROFILE_OBJECT].n, 1);
    cr_assert(hr_slice_eq(inc.of[HR_PROFILE_OBJECT].ids[0], hr_slice_str("thread:7")));
    cr_assert_eq(hr_profiles_include(p, items, 0, a, &inc, &err), HR_OK);
    cr_assert_eq(inc.of[HR_PROFILE_USER].n, 0);
}
BOTH_STORES(profiles, run, a_page_includes_each_name_once)
