/* store_checks.h — what the conformance checks of test_store*.c share (the
 * families of store primitives, one file each): asserts on results, range
 * specs, a few fills, and the shape of their multi-threaded checks. Used
 * with store_fixture.h, which it includes. Everything here is static
 * inline: each test file gets its own copy of what it uses. */
#ifndef HR_TEST_STORE_CHECKS_H
#define HR_TEST_STORE_CHECKS_H

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store_fixture.h"

static inline hr_distinct_params dp(int64_t now, int64_t ttl, int64_t limit) {
    hr_distinct_params p = {.now_ms = now, .ttl_ms = ttl, .exact_limit = limit};
    return p;
}

static inline void assert_value(const hr_result *r, const char *want, size_t n) {
    assert_rc(r, HR_OK);
    cr_assert_eq(r->value.len, n, "value length %zu, expected %zu", r->value.len, n);
    cr_assert_eq(memcmp(r->value.ptr, want, n), 0, "value differs");
}

/* Assert a zrange result: members in order, given as "a b c" (scores not checked). */
static inline void assert_members(const hr_result *r, const char *want, bool more) {
    assert_rc(r, HR_OK);
    char got[1024] = "";
    for (size_t i = 0; i < r->n_entries; i++) {
        if (i) strcat(got, " ");
        strncat(got, r->entries[i].member.ptr, r->entries[i].member.len);
    }
    cr_assert_str_eq(got, want, "members '%s', expected '%s'", got, want);
    cr_assert_eq(r->more, more, "more=%d, expected %d (members '%s')", r->more, more, got);
}

static inline hr_zrange_spec range(bool reverse, double min, double max, size_t limit) {
    hr_zrange_spec sp = hr_zrange_all(reverse, limit);
    sp.min = min;
    sp.max = max;
    return sp;
}

static inline hr_zrange_spec after(hr_zrange_spec sp, double score, const char *member) {
    sp.has_cursor = true;
    sp.cursor_score = score;
    sp.cursor_member = M(member);
    return sp;
}

static inline void assert_near(int64_t got, double want, double rel, const char *what) {
    cr_assert(fabs((double)got - want) <= rel * want, "%s: %ld, expected %.0f +- %.1f %%", what, (long)got,
              want, 100 * rel);
}

/* z: (-1.5 z) (1 a) (2 b) (2 c) (3 d) (5 e) */
static inline void fill_zset(hr_store *s, hr_slice z) {
    hr_batch *b = hr_batch_new();
    hr_zadd(b, z, 2, M("c"));
    hr_zadd(b, z, 5, M("e"));
    hr_zadd(b, z, -1.5, M("z"));
    hr_zadd(b, z, 1, M("a"));
    hr_zadd(b, z, 3, M("d"));
    hr_zadd(b, z, 2, M("b"));
    exec(s, b);
    hr_batch_free(b);
}

static inline long value_of(const hr_result *r) {
    return r->rc == HR_OK ? strtol(r->value.ptr, NULL, 10) : 0; /* values end in the batch's NUL */
}

/* Threads of the concurrent checks, and what each is given. */
enum { THREADS = 8 };

typedef struct worker {
    hr_store *s;
    hr_slice key;
    int id, n;
    int64_t *seen; /* results, n of them */
    int failures;
    int64_t max;
} worker;

/* Run fn on THREADS threads, thread i given args + i * size bytes, and wait
 * for them all. */
static inline void run_threads(void *(*fn)(void *), void *args, size_t size) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * size);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
}

#endif
