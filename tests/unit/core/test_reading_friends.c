/* Unit tests of friends-reads (core/reading_friends.c) over a real store,
 * on both backends: friends only, variants of a URL answering alike, the
 * newest friends, friend lists kept between calls, a brute-force model
 * checked with each side forced in turn, URL sets, and long lists. Every
 * test has its own key namespace (reading_env.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reading_keys.h"
#include "core/url.h"
#include "reading_env.h"

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
BOTH_STORES(reading, run, friends_only_and_variants_fold)

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
    cr_assert_str_eq(joined(e, &out[0]), "f5000,f2500",
                     "the newest friends, newest first; f0 is beyond them");
    cr_assert_eq(out[0].readers, 3);

    hr_url_reads *pop;
    size_t n;
    cr_assert_eq(hr_reading_friends_popular(e->reading, hr_slice_str("me"), HR_WINDOW_1D, 10, hr_now_ms(),
                                            &e->a, &pop, &n, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(n, 1);
    cr_assert_eq(pop[0].n_friends, 2, "friends-popular considers the same friends");
}
BOTH_STORES(reading, run, only_the_newest_friends_count)

static void unfriend(env *e, const char *x, const char *y) {
    hr_err err = {0};
    hr_batch *b = hr_batch_new();
    cr_assert_eq(hr_graph_unfollow(e->graph, b, hr_slice_str(x), hr_slice_str(y), NULL, &err), HR_OK, "%s",
                 err.msg);
    hr_batch_free(b);
}

/* A friend list too long to sit in its metadata record is kept between
 * calls on RocksDB (its form attached to the store's cached copy,
 * reading_friends.c), while it is unchanged: a call
 * after a friendship ends or begins answers the new list. */
static void friends_kept_between_calls(env *e) {
    bool rocks = strcmp(hr_store_caps_of(e->t.store)->kind, "rocksdb") == 0;
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
BOTH_STORES(reading, run, friends_kept_between_calls)

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

/* A read of the whole set key that asks for the origin alone when it
 * carries an attachment: its result, in *b (freed by the caller). */
static const hr_result *read_attached_only(env *e, const char *key, hr_batch **b) {
    hr_zrange_spec all = hr_zrange_all(false, 1000);
    all.attached_only = true;
    *b = hr_batch_new();
    hr_zrange(*b, hr_slice_str(key), &all);
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(e->t.store, *b, 0, &err), HR_OK, "%s", err.msg);
    return hr_batch_result(*b, 0);
}

static int forms_freed;
static void free_form(void *p) {
    forms_freed++;
    free(p);
}

static size_t zsets_bytes(env *e) {
    hr_store_metrics m;
    hr_store_metrics_of(e->t.store, &m);
    for (size_t i = 0; i < m.n_caches; i++)
        if (strcmp(m.caches[i].name, "zsets") == 0) return m.caches[i].bytes;
    cr_assert_fail("no zsets cache");
    return 0;
}

/* What a caller attaches to a cached set (hr_origin_attach) is found by
 * later reads of the same copy, counts against the cache's memory, and goes
 * with the copy when the set is written. */
Test(reading_rocksdb, an_attachment_lives_with_the_cached_copy) {
    env e;
    memset(&e, 0, sizeof e);
    test_store_open(&e.t, "rocksdb");
    forms_freed = 0;
    hr_batch *b, *b2;
    const hr_result *r = cached_set(&e, "set", &b);
    cr_assert_null(hr_origin_attached(e.t.store, r->origin));
    size_t before = zsets_bytes(&e);
    int *form = malloc(sizeof *form), *late = malloc(sizeof *late);
    cr_assert_eq(hr_origin_attach(e.t.store, r->origin, form, 1000, free_form), form);
    cr_assert_eq(hr_origin_attach(e.t.store, r->origin, late, 1000, free_form), form, "the first one stays");
    cr_assert_eq(forms_freed, 1, "the late one is freed at once");
    cr_assert_eq(zsets_bytes(&e), before + 1000);
    hr_batch_free(b);

    /* asked for: the origin alone; not asked for: the entries as ever */
    r = read_attached_only(&e, "set", &b);
    cr_assert_eq(r->n_entries, 0);
    cr_assert_eq(hr_origin_attached(e.t.store, r->origin), form);
    hr_batch_free(b);
    r = cached_set(&e, "set", &b);
    cr_assert_eq(r->n_entries, 200);
    cr_assert_eq(hr_origin_attached(e.t.store, r->origin), form);

    /* the set changes: the next reads answer the new set, and the form
     * goes once nobody holds the old copy */
    hr_batch *w = hr_batch_new();
    hr_zadd(w, hr_slice_str("set"), 1000, hr_slice_str("newest"));
    hr_err err = {0};
    cr_assert_eq(hr_store_exec(e.t.store, w, 0, &err), HR_OK, "%s", err.msg);
    hr_batch_free(w);
    for (int i = 0; i < 2; i++) {
        r = read_attached_only(&e, "set", &b2);
        cr_assert_eq(r->n_entries, 201, "read %d", i);
        cr_assert_null(hr_origin_attached(e.t.store, r->origin));
        hr_batch_free(b2);
    }
    cr_assert_eq(forms_freed, 1, "b still holds the old copy");
    size_t held = zsets_bytes(&e);
    hr_batch_free(b);
    cr_assert_eq(forms_freed, 2);
    cr_assert_eq(zsets_bytes(&e), held - 1000, "its bytes go with it");
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
     * their tests split over two batches (core/reading_split.c, round trip 2),
     * the second batch's URLs tested again by the caller in mode 6, as when
     * the helper is late with them */
    const hr_rplan_costs *modes[] = {&FORCE_LISTS, &FORCE_PROBES, &FORCE_SETS, &FORCE_TESTS,
                                     NULL,         &FORCE_SETS,   &FORCE_SETS};
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
BOTH_STORES(reading, run, model_both_sides)

/* 40 readers of one URL (past the first round trip's 32): the URL-set side
 * answers them, in two round trips, hides a reader who opts out at once,
 * shows a new one at once, and holds the same readers as the list after
 * they all leave and some come back. */
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

    share(e, "late", true);
    befriend(e, "me", "late");
    read_ok(e, "late", url);
    st = ask(e, "me", NULL, 0, urls, 1, out);
    cr_assert_eq(st.round_trips, 2);
    cr_assert_eq(st.urls_set, 1);
    cr_assert_eq(out[0].n_friends, 20, "a new reader is in the set at once");
    cr_assert_eq(out[0].readers, 40);

    /* every reader leaves; the set empties with the list and fills with it */
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
BOTH_STORES(reading, run, url_sets)

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
BOTH_STORES(reading, run, long_list_read_whole)
