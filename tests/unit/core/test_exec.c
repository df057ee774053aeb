/* Unit tests of core/exec over a real store, on both backends: the one
 * write path of a change (hr_core_write_last), its last write after the
 * rest, and a compare-and-set in the rest that lost, which stops it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "core/exec.h"
#include "support.h"

typedef struct keys {
    char set[64], other[64], record[64];
} keys;

typedef void (*exec_check)(hr_store *s, const keys *k);

static void run(const char *kind, exec_check check) {
    test_store t;
    test_store_open(&t, kind);
    char tag[40];
    test_unique(tag, sizeof tag, "exec:");
    keys k;
    snprintf(k.set, sizeof k.set, "{%s}set", tag);
    snprintf(k.other, sizeof k.other, "{%s}other", tag);
    snprintf(k.record, sizeof k.record, "%s:record", tag); /* another slot */
    check(t.store, &k);
    test_store_close(&t);
}

/* The record (the last write) holds `value`; NULL: it is missing. */
static void assert_record(hr_store *s, const keys *k, const char *value) {
    hr_batch *b = hr_batch_new();
    size_t op = hr_get(b, hr_slice_str(k->record));
    cr_assert_eq(hr_store_exec(s, b, 0, NULL), HR_OK);
    const hr_result *r = hr_batch_result(b, op);
    if (value == NULL) {
        cr_assert_eq(r->rc, HR_ENOTFOUND, "no record was to be written");
    } else {
        cr_assert_eq(r->rc, HR_OK);
        cr_assert(hr_slice_eq(r->value, hr_slice_str(value)), "record %.*s", (int)r->value.len, r->value.ptr);
    }
    hr_batch_free(b);
}

static double score_of(hr_store *s, const char *key) {
    hr_batch *b = hr_batch_new();
    size_t op = hr_zscore(b, hr_slice_str(key), hr_slice_str("m"));
    cr_assert_eq(hr_store_exec(s, b, 0, NULL), HR_OK);
    const hr_result *r = hr_batch_result(b, op);
    double v = r->rc == HR_OK ? r->score : NAN;
    hr_batch_free(b);
    return v;
}

typedef struct last_write {
    const keys *k;
    const char *value;
    int calls;
} last_write;

static void put_record(hr_batch *b, void *ctx) {
    last_write *w = ctx;
    w->calls++;
    hr_put(b, hr_slice_str(w->k->record), hr_slice_str(w->value), 0);
}

/* A change: a write outside the step, then a compare-and-set of the set's
 * member m from `was` to `to`, with a write of another key of its slot. */
static int change(hr_store *s, const keys *k, double was, double to, last_write *w, hr_batch *b,
                  size_t *guard, hr_err *err) {
    hr_batch_reset(b);
    hr_zadd(b, hr_slice_str(k->other), to, hr_slice_str("before"));
    *guard = hr_zguard(b, hr_slice_str(k->set), hr_slice_str("m"), was);
    hr_zadd(b, hr_slice_str(k->set), to, hr_slice_str("m"));
    hr_zadd(b, hr_slice_str(k->other), to, hr_slice_str("m"));
    return hr_core_write_last(s, b, put_record, w, "the change", err);
}

static void last_write_follows_a_guard(hr_store *s, const keys *k) {
    hr_batch *b = hr_batch_new();
    hr_err err = {0};
    size_t g;
    last_write w = {k, "one", 0};
    cr_assert_eq(change(s, k, NAN, 1, &w, b, &g, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(w.calls, 1);
    cr_assert_eq(hr_batch_result(b, g)->num, 1, "the guard held");
    assert_record(s, k, "one");
    cr_assert_eq(score_of(s, k->set), 1);

    /* lost: the member is at 1, not absent */
    w = (last_write){k, "two", 0};
    err = (hr_err){0};
    cr_assert_eq(change(s, k, NAN, 2, &w, b, &g, &err), HR_ECONFLICT);
    cr_assert(err.msg[0] != '\0', "the conflict is explained");
    const hr_result *r = hr_batch_result(b, g);
    cr_assert(r->rc == HR_OK && r->num == 0 && r->score == 1, "the guard says what it found: %g", r->score);
    assert_record(s, k, "one"); /* the last write was not made */
    cr_assert_eq(score_of(s, k->set), 1);
    cr_assert_eq(score_of(s, k->other), 1, "nothing of the step was written");

    /* decided again from what the guard found: it holds */
    err = (hr_err){0};
    cr_assert_eq(change(s, k, r->score, 2, &w, b, &g, &err), HR_OK, "%s", err.msg);
    assert_record(s, k, "two");
    cr_assert_eq(score_of(s, k->set), 2);
    cr_assert_eq(score_of(s, k->other), 2);
    hr_batch_free(b);
}
BOTH_STORES(exec, run, last_write_follows_a_guard)
