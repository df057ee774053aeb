/* test_store_tl.c — time lists (hr_tl*): the conformance checks, run on both
 * backends (suites tl_rocksdb and tl_redis, store_fixture.h), then what only
 * the RocksDB backend has: its key encoding (order, prefix safety), expiry
 * of single entries, and the compaction filter (suite rocks_tl_internals).
 *
 * Entries are written as "time:member" in the expected orders, times
 * relative to T0. Tests that need the clock to pass sleep at most 0.6 s. */
#include <inttypes.h>
#include <pthread.h>

#include "common/clock.h"
#include "store/rocks/timelist.h"
#include "store_fixture.h"

STORE_SUITES(tl);

#define T0 INT64_C(1700000000000)

/* Helpers ------------------------------------------------------------------- */

static void add(hr_store *s, hr_slice list, int64_t t, const char *member, int64_t expire_at) {
    assert_rc(ONE(s, hr_tladd(B, list, T0 + t, M(member), expire_at)), HR_OK);
}

/* The entries of r as "t:member t:member" (t relative to T0; bytes outside
 * printable ASCII as \xNN). */
static void render(const hr_result *r, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < r->n_entries && n + 16 < cap; i++) {
        n += (size_t)snprintf(out + n, cap - n, "%s%" PRId64 ":", i ? " " : "",
                              (int64_t)r->entries[i].score - T0);
        hr_slice m = r->entries[i].member;
        for (size_t k = 0; k < m.len && n + 8 < cap; k++) {
            unsigned char c = (unsigned char)m.ptr[k];
            n += (size_t)(c > 32 && c < 127 && c != '\\' ? snprintf(out + n, cap - n, "%c", c)
                                                         : snprintf(out + n, cap - n, "\\x%02x", c));
        }
    }
}

static void assert_entries(const hr_result *r, const char *want, bool more) {
    assert_rc(r, HR_OK);
    char got[4096];
    render(r, got, sizeof got);
    cr_assert_str_eq(got, want, "entries '%s', expected '%s'", got, want);
    cr_assert_eq(r->more, more, "more=%d, expected %d (entries '%s')", r->more, more, got);
}

static hr_tlrange_spec all(size_t limit) {
    return hr_tlrange_all(limit, hr_now_ms());
}

static const hr_result *range(hr_store *s, hr_slice list, hr_tlrange_spec sp) {
    return ONE(s, hr_tlrange(B, list, &sp));
}

static hr_tlrange_spec cursor(hr_tlrange_spec sp, int64_t t, const char *member) {
    sp.has_cursor = true;
    sp.cursor_time = T0 + t;
    sp.cursor_member = M(member);
    return sp;
}

/* A list of entries at times 1..5 with ties at 3 and 5:
 *   newest first: 5:c 5:b 4:d 3:z 3:y 3:x 2:e 1:f
 * (one time per member, as store.h asks) */
static hr_slice sample(hr_store *s) {
    hr_slice l = K("sample");
    hr_batch *b = hr_batch_new();
    static const struct {
        int64_t t;
        const char *m;
    } e[] = {
        {3, "y"}, {1, "f"}, {5, "b"}, {3, "x"}, {4, "d"}, {2, "e"}, {3, "z"}, {5, "c"},
    };
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
        hr_tladd(b, l, T0 + e[i].t, M(e[i].m), 0);
    exec(s, b);
    hr_batch_free(b);
    return l;
}

#define SAMPLE "5:c 5:b 4:d 3:z 3:y 3:x 2:e 1:f"

/* Conformance -------------------------------------------------------------- */

STORE_TEST(tl, tl_order_newest_first_ties_member_desc) {
    hr_slice l = sample(s);
    assert_entries(range(s, l, all(100)), SAMPLE, false);
    /* Members of one time: descending bytes, a longer member before its prefix. */
    hr_slice l2 = K("ties");
    const char *ms[] = {"a", "ab", "b", "B", "abc", "aa"};
    for (size_t i = 0; i < 6; i++)
        add(s, l2, 7, ms[i], 0);
    assert_entries(range(s, l2, all(100)), "7:b 7:abc 7:ab 7:aa 7:a 7:B", false);
    assert_entries(range(s, K("missing"), all(10)), "", false);
}

STORE_TEST(tl, tl_add_is_idempotent) {
    hr_slice l = K("idem");
    add(s, l, 1, "m", 0);
    add(s, l, 1, "m", 0);
    hr_batch *b = hr_batch_new();
    hr_tladd(b, l, T0 + 1, M("m"), 0);
    hr_tladd(b, l, T0 + 1, M("m"), 0);
    hr_tladd(b, l, T0 + 2, M("n"), 0);
    exec(s, b);
    hr_batch_free(b);
    assert_entries(range(s, l, all(10)), "2:n 1:m", false);
}

STORE_TEST(tl, tl_rem) {
    hr_slice l = sample(s);
    cr_assert_eq(ONE(s, hr_tlrem(B, l, T0 + 3, M("y")))->num, 1);
    cr_assert_eq(ONE(s, hr_tlrem(B, l, T0 + 5, M("c")))->num, 1);
    assert_entries(range(s, l, all(100)), "5:b 4:d 3:z 3:x 2:e 1:f", false);
    /* Removing every entry leaves an empty list. */
    hr_batch *b = hr_batch_new();
    const struct {
        int64_t t;
        const char *m;
    } rest[] = {{5, "b"}, {4, "d"}, {3, "z"}, {3, "x"}, {2, "e"}, {1, "f"}};
    for (size_t i = 0; i < 6; i++)
        hr_tlrem(b, l, T0 + rest[i].t, M(rest[i].m));
    exec(s, b);
    hr_batch_free(b);
    assert_entries(range(s, l, all(100)), "", false);
}

STORE_TEST(tl, tl_before_after_are_exclusive) {
    hr_slice l = sample(s);
    hr_tlrange_spec sp = all(100);
    sp.before_ms = T0 + 5;
    assert_entries(range(s, l, sp), "4:d 3:z 3:y 3:x 2:e 1:f", false);
    sp.after_ms = T0 + 2;
    assert_entries(range(s, l, sp), "4:d 3:z 3:y 3:x", false);
    sp.before_ms = T0 + 3;
    assert_entries(range(s, l, sp), "", false);
    sp = all(100);
    sp.after_ms = T0 + 3;
    assert_entries(range(s, l, sp), "5:c 5:b 4:d", false);
    sp.after_ms = T0 + 5;
    assert_entries(range(s, l, sp), "", false);
    sp = all(100);
    sp.before_ms = INT64_MIN;
    assert_entries(range(s, l, sp), "", false);
    sp = all(100);
    sp.after_ms = INT64_MAX;
    assert_entries(range(s, l, sp), "", false);
    sp = all(100);
    sp.before_ms = T0 + 3; /* before <= after: empty, not an error */
    sp.after_ms = T0 + 4;
    assert_entries(range(s, l, sp), "", false);
}

STORE_TEST(tl, tl_cursor_pages_through_ties) {
    hr_slice l = sample(s);
    /* Pages of 2, each starting after the last entry of the one before. */
    const char *pages[] = {"5:c 5:b", "4:d 3:z", "3:y 3:x", "2:e 1:f"};
    hr_tlrange_spec sp = all(2);
    for (int p = 0; p < 4; p++) {
        const hr_result *r = range(s, l, sp);
        assert_entries(r, pages[p], p < 3);
        sp = all(2);
        sp.has_cursor = true;
        sp.cursor_time = (int64_t)r->entries[1].score;
        sp.cursor_member = hr_arena_copy(&keys, r->entries[1].member); /* r goes with the next ONE */
    }
    /* A cursor inside a tie: strictly after it, by member. */
    assert_entries(range(s, l, cursor(all(100), 3, "y")), "3:x 2:e 1:f", false);
    assert_entries(range(s, l, cursor(all(100), 5, "c")), "5:b 4:d 3:z 3:y 3:x 2:e 1:f", false);
    /* A cursor that is no entry: where it would sort. */
    assert_entries(range(s, l, cursor(all(100), 3, "yy")), "3:y 3:x 2:e 1:f", false);
    assert_entries(range(s, l, cursor(all(100), 3, "a")), "2:e 1:f", false);
    assert_entries(range(s, l, cursor(all(100), 3, "zz")), "3:z 3:y 3:x 2:e 1:f", false);
    assert_entries(range(s, l, cursor(all(100), 9, "a")), SAMPLE, false);
    assert_entries(range(s, l, cursor(all(100), 0, "a")), "", false);
    /* Cursor and before together: the later start wins. */
    hr_tlrange_spec sp2 = cursor(all(100), 5, "b");
    sp2.before_ms = T0 + 3;
    assert_entries(range(s, l, sp2), "2:e 1:f", false);
    sp2 = cursor(all(100), 3, "z");
    sp2.before_ms = T0 + 5;
    assert_entries(range(s, l, sp2), "3:y 3:x 2:e 1:f", false);
}

STORE_TEST(tl, tl_offset_and_limit) {
    hr_slice l = sample(s);
    hr_tlrange_spec sp = all(3);
    sp.offset = 2;
    assert_entries(range(s, l, sp), "4:d 3:z 3:y", true);
    sp.offset = 5;
    assert_entries(range(s, l, sp), "3:x 2:e 1:f", false);
    sp.offset = 8;
    assert_entries(range(s, l, sp), "", false);
    sp = cursor(all(2), 4, "d");
    sp.offset = 1;
    assert_entries(range(s, l, sp), "3:y 3:x", true);
    sp.offset = 3;
    assert_entries(range(s, l, sp), "2:e 1:f", false);
    assert_entries(range(s, l, all(8)), SAMPLE, false);
    assert_entries(range(s, l, all(7)), "5:c 5:b 4:d 3:z 3:y 3:x 2:e", true);
    assert_entries(range(s, l, all(1)), "5:c", true);
}

STORE_TEST(tl, tl_expired_entries_are_not_read) {
    /* An entry whose expiry passed is not seen (RocksDB skips it; Redis does
     * not add it), and a list whose every entry expired is empty. */
    hr_slice l = K("exp");
    int64_t now = hr_now_ms();
    add(s, l, 1, "old", now - 1000);
    add(s, l, 2, "live", now + 60000);
    assert_entries(range(s, l, all(10)), "2:live", false);

    hr_slice soon = K("soon"), mixed = K("mixed");
    add(s, soon, 1, "a", now + 300);
    add(s, soon, 2, "b", now + 300);
    add(s, mixed, 1, "forever", 0);
    add(s, mixed, 2, "brief", now + 300);
    assert_entries(range(s, soon, all(10)), "2:b 1:a", false);
    usleep(600 * 1000);
    assert_entries(range(s, soon, all(10)), "", false);
    /* An entry without expiry keeps the list (Redis: the key) alive. */
    const hr_result *r = range(s, mixed, all(10));
    assert_rc(r, HR_OK);
    cr_assert_geq(r->n_entries, 1);
    cr_assert(hr_slice_eq(r->entries[r->n_entries - 1].member, M("forever")));
}

STORE_TEST(tl, tl_trim) {
    hr_slice l = sample(s);
    cr_assert_eq(ONE(s, hr_tltrim(B, l, 6, INT64_MIN))->num, 2);
    assert_entries(range(s, l, all(100)), "5:c 5:b 4:d 3:z 3:y 3:x", false);
    cr_assert_eq(ONE(s, hr_tltrim(B, l, 6, INT64_MIN))->num, 0);
    cr_assert_eq(ONE(s, hr_tltrim(B, l, 100, T0 + 4))->num, 3, "older than 4: the three at 3");
    assert_entries(range(s, l, all(100)), "5:c 5:b 4:d", false);
    cr_assert_eq(ONE(s, hr_tltrim(B, l, 2, T0 + 5))->num, 1, "keep 2 and older than 5: one goes");
    assert_entries(range(s, l, all(100)), "5:c 5:b", false);
    cr_assert_eq(ONE(s, hr_tltrim(B, l, 0, INT64_MIN))->num, 2);
    assert_entries(range(s, l, all(100)), "", false);
    cr_assert_eq(ONE(s, hr_tltrim(B, K("none"), 0, INT64_MIN))->num, 0);
    /* Add after trim: the list starts again. */
    add(s, l, 9, "new", 0);
    assert_entries(range(s, l, all(100)), "9:new", false);
}

STORE_TEST(tl, tl_own_key_space) {
    hr_slice k = K("shared");
    assert_rc(ONE(s, hr_put(B, k, M("value"), 0)), HR_OK);
    add(s, k, 1, "entry", 0);
    const hr_result *r = ONE(s, hr_get(B, k));
    assert_rc(r, HR_OK);
    cr_assert(hr_slice_eq(r->value, M("value")));
    assert_entries(range(s, k, all(10)), "1:entry", false);
    /* hr_del and hr_expire leave the list alone. */
    cr_assert_eq(ONE(s, hr_del(B, k))->num, 1);
    assert_entries(range(s, k, all(10)), "1:entry", false);
    cr_assert_eq(ONE(s, hr_expire(B, k, hr_now_ms() - 1))->num, 0);
    assert_entries(range(s, k, all(10)), "1:entry", false);
    /* A sorted set of the same name. */
    hr_slice z = K("zs");
    assert_rc(ONE(s, hr_zadd(B, z, 1, M("m"))), HR_OK);
    add(s, z, 2, "e", 0);
    cr_assert_eq(ONE(s, hr_zcard(B, z))->num, 1);
    assert_entries(range(s, z, all(10)), "2:e", false);
}

STORE_TEST(tl, tl_lists_do_not_bleed) {
    /* Names that are prefixes of each other, or differ in one byte. */
    const char *names[] = {"a", "ab", "a\x01", "b"};
    for (int i = 0; i < 4; i++)
        add(s, K(names[i]), i, names[i][1] == '\x01' ? "x" : names[i], 0);
    assert_entries(range(s, K("a"), all(10)), "0:a", false);
    assert_entries(range(s, K("ab"), all(10)), "1:ab", false);
    assert_entries(range(s, K("a\x01"), all(10)), "2:x", false);
    assert_entries(range(s, K("b"), all(10)), "3:b", false);
    cr_assert_eq(ONE(s, hr_tltrim(B, K("a"), 0, INT64_MIN))->num, 1);
    assert_entries(range(s, K("ab"), all(10)), "1:ab", false);
}

STORE_TEST(tl, tl_binary_members) {
    hr_slice l = Kn("bin\0list", 8);
    struct {
        const char *p;
        size_t n;
    } ms[] = {
        {"a", 1}, {"a\0", 2}, {"a\0\0", 3}, {"a\xff", 2}, {"\0", 1}, {"\xff\xff", 2}, {"\xff", 1},
    };
    hr_batch *b = hr_batch_new();
    for (size_t i = 0; i < 7; i++)
        hr_tladd(b, l, T0 + 1, hr_slice_of(ms[i].p, ms[i].n), 0);
    hr_tladd(b, l, T0 + 2, hr_slice_of("\0\0", 2), 0);
    exec(s, b);
    hr_batch_free(b);
    assert_entries(range(s, l, all(10)),
                   "2:\\x00\\x00 1:\\xff\\xff 1:\\xff 1:a\\xff 1:a\\x00\\x00 1:a\\x00 1:a 1:\\x00", false);
    /* The cursor works on binary members too. */
    hr_tlrange_spec sp = all(2);
    sp.has_cursor = true;
    sp.cursor_time = T0 + 1;
    sp.cursor_member = hr_slice_of("a\0", 2);
    assert_entries(range(s, l, sp), "1:a 1:\\x00", false);
    cr_assert_eq(ONE(s, hr_tlrem(B, l, T0 + 1, hr_slice_of("a\0", 2)))->num, 1);
    assert_entries(range(s, l, sp), "1:a 1:\\x00", false);
    sp.cursor_member = hr_slice_of("a\0\0", 3);
    assert_entries(range(s, l, sp), "1:a 1:\\x00", false);
}

STORE_TEST(tl, tl_batch_sees_its_own_writes) {
    hr_slice l = KT("rw");
    hr_batch *b = hr_batch_new();
    hr_tladd(b, l, T0 + 1, M("a"), 0);
    hr_tladd(b, l, T0 + 2, M("b"), 0);
    hr_tlrange_spec sp = all(10);
    size_t r1 = hr_tlrange(b, l, &sp);
    hr_tlrem(b, l, T0 + 2, M("b"));
    size_t r2 = hr_tlrange(b, l, &sp);
    size_t t = hr_tltrim(b, l, 0, INT64_MIN);
    size_t r3 = hr_tlrange(b, l, &sp);
    exec(s, b);
    assert_entries(hr_batch_result(b, r1), "2:b 1:a", false);
    assert_entries(hr_batch_result(b, r2), "1:a", false);
    cr_assert_eq(hr_batch_result(b, t)->num, 1);
    assert_entries(hr_batch_result(b, r3), "", false);
    hr_batch_free(b);
}

STORE_TEST(tl, tl_fanout_batch) {
    /* The fan-out shape: one batch of entries to many lists. */
    hr_batch *b = hr_batch_new();
    int64_t exp = hr_now_ms() + 3600 * 1000;
    for (long a = 0; a < 4; a++)
        for (long u = 0; u < 250; u++)
            hr_tladd(b, K(Mf("u%ld", u).ptr), T0 + a, Mf("activity:%05ld", a), exp);
    exec(s, b);
    for (size_t i = 0; i < hr_batch_len(b); i++)
        assert_rc(hr_batch_result(b, i), HR_OK);
    hr_batch_free(b);
    for (long u = 0; u < 250; u += 83)
        assert_entries(range(s, K(Mf("u%ld", u).ptr), all(10)),
                       "3:activity:00003 2:activity:00002 1:activity:00001 0:activity:00000", false);
}

STORE_TEST(tl, tl_arguments_checked) {
    hr_slice l = K("args");
    char big[HR_TL_MEMBER_MAX + 1];
    memset(big, 'm', sizeof big);
    assert_rc(ONE(s, hr_tladd(B, l, T0, hr_slice_of("", 0), 0)), HR_EINVAL);
    assert_rc(ONE(s, hr_tladd(B, l, T0, hr_slice_of(big, sizeof big), 0)), HR_EINVAL);
    assert_rc(ONE(s, hr_tladd(B, l, T0, hr_slice_of(big, HR_TL_MEMBER_MAX), 0)), HR_OK);
    assert_rc(ONE(s, hr_tladd(B, l, HR_TL_TIME_MAX + 1, M("m"), 0)), HR_EINVAL);
    assert_rc(ONE(s, hr_tladd(B, l, -HR_TL_TIME_MAX, M("m"), 0)), HR_OK);
    assert_rc(ONE(s, hr_tladd(B, l, T0, M("m"), -1)), HR_EINVAL);
    assert_rc(ONE(s, hr_tladd(B, hr_slice_of("", 0), T0, M("m"), 0)), HR_EINVAL);
    assert_rc(ONE(s, hr_tlrem(B, l, T0, hr_slice_of("", 0))), HR_EINVAL);
    assert_rc(range(s, l, all(0)), HR_EINVAL);
    assert_rc(range(s, l, all(HR_ZRANGE_LIMIT_MAX + 1)), HR_EINVAL);
    assert_rc(range(s, l, cursor(all(1), 1, "")), HR_EINVAL);
    /* What was valid went in, the extreme negative time last. */
    char want[HR_TL_MEMBER_MAX + 64];
    snprintf(want, sizeof want, "0:%.*s %" PRId64 ":m", (int)HR_TL_MEMBER_MAX, big, -HR_TL_TIME_MAX - T0);
    assert_entries(range(s, l, all(10)), want, false);
}

/* Bulk adds (hr_tlbulk) ----------------------------------------------------- */

/* Random adds to `lists` lists, the same through an hr_tlbulk (lists
 * "<tag>b<i>") and through batches of hr_tladd ("<tag>m<i>"): ties of time,
 * the same entry twice, expired entries. Then every list reads the same
 * both ways. Many adds to few lists, and a few adds to each of many (a
 * fan-out's shape; rocks/timelist_ingest.c sorts the two differently). */
#define BULK_LISTS_MAX 400
static void bulk_matches_adds_to(hr_store *s, const char *tag, int lists, int adds) {
    cr_assert_leq(lists, BULK_LISTS_MAX);
    int64_t now = hr_now_ms();
    hr_slice bulk_list[BULK_LISTS_MAX], batch_list[BULK_LISTS_MAX];
    for (int l = 0; l < lists; l++) {
        char name[32];
        snprintf(name, sizeof name, "%sb%d", tag, l);
        bulk_list[l] = K(name);
        snprintf(name, sizeof name, "%sm%d", tag, l);
        batch_list[l] = K(name);
    }
    hr_tlbulk *w = hr_tlbulk_new(s);
    hr_batch *b = hr_batch_new();
    unsigned seed = 11;
    for (int i = 0; i < adds; i++) {
        int l = rand_r(&seed) % lists;
        long t = rand_r(&seed) % 60, m = rand_r(&seed) % 30;
        /* One expiry per entry, so that an entry added twice is the same. */
        int64_t expire = (l + t + m) % 7 == 0 ? now - 1000 : (l + t + m) % 7 == 1 ? 0 : now + 3600 * 1000;
        cr_assert_eq(hr_tlbulk_add(w, bulk_list[l], T0 + t, Mf("m%ld", m), expire), HR_OK);
        hr_tladd(b, batch_list[l], T0 + t, Mf("m%ld", m), expire);
    }
    cr_assert_eq(hr_tlbulk_len(w), (size_t)adds);
    hr_err err = {0};
    cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(hr_tlbulk_len(w), 0, "a write empties it");
    exec(s, b);
    hr_batch_free(b);
    size_t total = 0;
    for (int l = 0; l < lists; l++) {
        char want[4096], got[4096];
        const hr_result *r = range(s, batch_list[l], all(1000));
        total += r->n_entries;
        render(r, want, sizeof want);
        render(range(s, bulk_list[l], all(1000)), got, sizeof got);
        cr_assert_str_eq(got, want, "list %d (%s)", l, tag);
    }
    cr_assert_geq(total, (size_t)lists, "the lists hold entries: %zu", total);
    /* A write after the bulk one wins over it, and a bulk one after it. */
    hr_slice l0 = bulk_list[0];
    size_t n = range(s, l0, all(1000))->n_entries;
    cr_assert_gt(n, 0);
    const hr_result *r = range(s, l0, all(1));
    int64_t t = (int64_t)r->entries[0].score;
    hr_slice m = hr_arena_copy(&keys, r->entries[0].member);
    assert_rc(ONE(s, hr_tlrem(B, l0, t, m)), HR_OK);
    cr_assert_eq(range(s, l0, all(1000))->n_entries, n - 1, "removed after the bulk write");
    cr_assert_eq(hr_tlbulk_add(w, l0, t, m, 0), HR_OK);
    cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(range(s, l0, all(1000))->n_entries, n, "added again by a bulk write");
    hr_tlbulk_free(w);
}

static void bulk_matches_adds(hr_store *s, const char *tag) {
    char wide[16];
    snprintf(wide, sizeof wide, "%sw", tag);
    bulk_matches_adds_to(s, tag, 12, 700);
    bulk_matches_adds_to(s, wide, BULK_LISTS_MAX, 1600);
}

/* RocksDB cuts capped lists at compaction (test_rocks.c has the cut);
 * Redis says it does not, so that callers trim. */
STORE_TEST(tl, capped_lists_are_the_stores_to_cut_on_rocksdb_only) {
    bool rocks = strncmp(store_uri, "rocksdb:", 8) == 0;
    hr_store_decl cap = {.kind = HR_DECL_TL_CAP, .prefix = M("{u/"), .suffix = M("}/tl"), .keep = 1000};
    cr_assert_eq(hr_store_declare(s, &cap), rocks);
    cap.keep = 0;
    cr_assert_not(hr_store_declare(s, &cap), "keep 0 is refused");
}

STORE_TEST(tl, bulk_adds_read_as_adds) {
    bulk_matches_adds(s, "a");
    /* What hr_tladd refuses, an add refuses, adding nothing. */
    hr_tlbulk *w = hr_tlbulk_new(s);
    cr_assert_eq(hr_tlbulk_add(w, K("x"), T0, M(""), 0), HR_EINVAL);
    cr_assert_eq(hr_tlbulk_add(w, K("x"), T0, M("m"), -1), HR_EINVAL);
    cr_assert_eq(hr_tlbulk_add(w, K("x"), HR_TL_TIME_MAX + 1, M("m"), 0), HR_EINVAL);
    cr_assert_eq(hr_tlbulk_add(w, hr_slice_of("", 0), T0, M("m"), 0), HR_EINVAL);
    cr_assert_eq(hr_tlbulk_len(w), 0);
    hr_err err = {0};
    cr_assert_eq(hr_tlbulk_write(w, &err), HR_OK, "nothing to write");
    hr_tlbulk_free(w);
    bool rocks = strncmp(store_uri, "rocksdb:", 8) == 0;
    cr_assert_eq(hr_store_caps_of(s)->bulk_files, rocks,
                 "RocksDB writes bulk adds its own way, Redis as batches");
    if (!rocks) return;

    /* RocksDB: the same as table files, which a reopen finds; a file a
     * crash left unwritten is removed at the open. */
    fx_tune("file_min=1");
    s = fx_reopen();
    bulk_matches_adds(s, "f");
    char junk[256];
    snprintf(junk, sizeof junk, "%s/db/ingest/1-1.sst", tmpdir);
    FILE *f = fopen(junk, "w");
    cr_assert_not_null(f);
    fclose(f);
    s = fx_reopen();
    cr_assert_eq(access(junk, F_OK), -1, "a leftover table file is removed at open");
    char want[4096], got[4096];
    render(range(s, K("fm3"), all(1000)), want, sizeof want);
    render(range(s, K("fb3"), all(1000)), got, sizeof got);
    cr_assert_str_eq(got, want, "after a reopen");
}

/* RocksDB only: the encoding and per-entry expiry ----------------------------- */

static char dir[64], uri[128];
static hr_store *R;

static void ri_init(void) {
    strcpy(dir, "/tmp/herald-tl-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(uri, sizeof uri, "rocksdb:%s/db", dir);
    hr_err err = {0};
    cr_assert_eq(hr_store_open(uri, NULL, &R, &err), HR_OK, "%s", err.msg);
}

static void ri_fini(void) {
    hr_store_close(R);
    R = NULL;
    nftw(dir, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(rocks_tl_internals, .init = ri_init, .fini = ri_fini, .timeout = 60);

static hr_slice key_of(hr_buf *b, const char *list, size_t llen, int64_t t, const char *m, size_t mlen) {
    hr_buf_clear(b);
    tl_key(b, hr_slice_of(list, llen), t, hr_slice_of(m, mlen));
    return hr_buf_slice(b);
}

Test(rocks_tl_internals, key_order_is_newest_first_member_desc) {
    /* For pairs of (time, member), byte order of the keys must be (time
     * desc, member desc). */
    static const int64_t times[] = {INT64_MIN, -5, -1, 0, 1, 2, T0, INT64_MAX};
    static const struct {
        const char *p;
        size_t n;
    } ms[] = {
        {"\0", 1}, {"\0\0", 2}, {"\x01", 1}, {"a", 1},      {"a\0", 2},      {"ab", 2},
        {"b", 1},  {"\xfe", 1}, {"\xff", 1}, {"\xff\0", 2}, {"\xff\xff", 2},
    };
    size_t nt = sizeof times / sizeof times[0], nm = sizeof ms / sizeof ms[0];
    hr_buf a = HR_BUF_INIT, b = HR_BUF_INIT;
    for (size_t t1 = 0; t1 < nt; t1++)
        for (size_t m1 = 0; m1 < nm; m1++)
            for (size_t t2 = 0; t2 < nt; t2++)
                for (size_t m2 = 0; m2 < nm; m2++) {
                    hr_slice ka = key_of(&a, "L", 1, times[t1], ms[m1].p, ms[m1].n);
                    hr_slice kb = key_of(&b, "L", 1, times[t2], ms[m2].p, ms[m2].n);
                    int want = times[t1] != times[t2] ? (times[t1] > times[t2] ? -1 : 1)
                                                      : -hr_slice_cmp(hr_slice_of(ms[m1].p, ms[m1].n),
                                                                      hr_slice_of(ms[m2].p, ms[m2].n));
                    int got = hr_slice_cmp(ka, kb);
                    got = (got > 0) - (got < 0);
                    want = (want > 0) - (want < 0);
                    cr_assert_eq(got, want, "t %zu m %zu vs t %zu m %zu", t1, m1, t2, m2);
                }
    hr_buf_free(&a);
    hr_buf_free(&b);
}

Test(rocks_tl_internals, key_round_trips) {
    hr_buf k = HR_BUF_INIT, p = HR_BUF_INIT;
    const char *m = "a\0\xff\x00z";
    for (size_t n = 1; n <= 5; n++) {
        key_of(&k, "list", 4, -42, m, n);
        hr_buf_clear(&p);
        tl_list_prefix(&p, M("list"));
        cr_assert_eq(memcmp(k.data, p.data, p.len), 0, "a key starts with its list's prefix");
        char out[16];
        size_t olen;
        int64_t t;
        cr_assert_eq(tl_key_parse(hr_buf_slice(&k), p.len, &t, out, &olen), 0);
        cr_assert_eq(t, -42);
        cr_assert_eq(olen, n);
        cr_assert_eq(memcmp(out, m, n), 0);
        /* A truncated key is malformed. */
        cr_assert_neq(tl_key_parse(hr_slice_of(k.data, k.len - 1), p.len, &t, out, &olen), 0);
    }
    hr_buf_free(&k);
    hr_buf_free(&p);
}

Test(rocks_tl_internals, lists_are_prefix_safe) {
    /* Every key of list A lies in [prefix(A), end(A)), and no key of another
     * list does, for names that are prefixes of each other, differ in the
     * last byte, or end in 0xFF. */
    static const struct {
        const char *p;
        size_t n;
    } names[] = {
        {"a", 1},        {"ab", 2}, {"a\0", 2},      {"a\xff", 2},
        {"\xff\xff", 2}, {"b", 1},  {"{u:1}:tl", 8}, {"{u:1}:tl0", 9},
    };
    size_t nn = sizeof names / sizeof names[0];
    hr_buf k = HR_BUF_INIT, lo = HR_BUF_INIT, hi = HR_BUF_INIT;
    static const int64_t times[] = {INT64_MIN, 0, T0, INT64_MAX};
    for (size_t a = 0; a < nn; a++) {
        hr_buf_clear(&lo);
        hr_buf_clear(&hi);
        tl_list_prefix(&lo, hr_slice_of(names[a].p, names[a].n));
        tl_list_end(&hi, hr_slice_of(names[a].p, names[a].n));
        cr_assert_eq(memcmp(lo.data, hi.data, 8), 0, "the end shares the list's 8-byte prefix");
        for (size_t b = 0; b < nn; b++)
            for (size_t t = 0; t < 4; t++) {
                hr_slice key = key_of(&k, names[b].p, names[b].n, times[t], "\xff\xff\xff", 3);
                bool inside =
                    hr_slice_cmp(key, hr_buf_slice(&lo)) >= 0 && hr_slice_cmp(key, hr_buf_slice(&hi)) < 0;
                cr_assert_eq(inside, a == b, "list %zu, key of list %zu (time %zu)", a, b, t);
            }
    }
    hr_buf_free(&k);
    hr_buf_free(&lo);
    hr_buf_free(&hi);
}

static void rexec(hr_batch *b) {
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(R, b, 0, &err), HR_OK, "%s", err.msg);
}

Test(rocks_tl_internals, entry_expiry_follows_now_ms) {
    /* Each entry expires on its own, as of the spec's now_ms. */
    hr_batch *b = hr_batch_new();
    hr_slice l = M("exp");
    hr_tladd(b, l, 3, M("c"), 3000);
    hr_tladd(b, l, 2, M("b"), 0);
    hr_tladd(b, l, 1, M("a"), 1000);
    rexec(b);
    int64_t nows[] = {999, 1000, 2999, 3000};
    const char *want[] = {"3:c 2:b 1:a", "3:c 2:b", "3:c 2:b", "2:b"};
    for (int i = 0; i < 4; i++) {
        hr_batch_reset(b);
        hr_tlrange_spec sp = hr_tlrange_all(10, nows[i]);
        hr_tlrange(b, l, &sp);
        sp.offset = 1; /* expired entries are not counted by offset */
        hr_tlrange(b, l, &sp);
        rexec(b);
        char got[256] = "";
        const hr_result *r = hr_batch_result(b, 0);
        for (size_t k = 0; k < r->n_entries; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%d:%.*s", k ? " " : "",
                     (int)r->entries[k].score, (int)r->entries[k].member.len, r->entries[k].member.ptr);
        cr_assert_str_eq(got, want[i], "now %" PRId64 ": '%s'", nows[i], got);
        cr_assert_eq(hr_batch_result(b, 1)->n_entries, r->n_entries - 1);
    }
    /* hr_tltrim drops expired entries (batch clock: now, long after 3000). */
    hr_batch_reset(b);
    hr_tltrim(b, l, 100, INT64_MIN);
    rexec(b);
    cr_assert_eq(hr_batch_result(b, 0)->num, 2);
    hr_batch_free(b);
}

/* Entries in the "timelists" column family, read raw. */
static size_t raw_count(void) {
    rocks_store *rs = (rocks_store *)R;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_total_order_seek(ro, 1);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(rs->db, ro, rs->cf[CF_TL]);
    size_t n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it))
        n++;
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

Test(rocks_tl_internals, compaction_drops_expired_entries) {
    hr_batch *b = hr_batch_new();
    int64_t now = hr_now_ms();
    for (long i = 0; i < 100; i++) {
        char m[24];
        snprintf(m, sizeof m, "m%ld", i);
        /* Long expired (past the filter's grace), or alive. */
        hr_tladd(b, M("gc"), i, M(m), i % 2 ? now - 3600 * 1000 : now + 3600 * 1000);
    }
    rexec(b);
    hr_batch_free(b);
    cr_assert_eq(raw_count(), 100);
    rocks_store *rs = (rocks_store *)R;
    rocksdb_compact_range_cf(rs->db, rs->cf[CF_TL], NULL, 0, NULL, 0);
    cr_assert_eq(raw_count(), 50);
}
