/* Unit tests of core/stories and core/members over a real store, on both
 * backends, and of the story, rating and member resources through the real
 * route table on a loopback server (bad input is 4xx and changes nothing).
 *
 * Every test gets its own key namespace, so tests sharing one Redis Cluster
 * (and running in parallel) never see each other's rankings. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api.h"
#include "common/arena.h"
#include "common/log.h"
#include "core/members.h"
#include "core/ratings.h"
#include "core/stories.h"
#include "fault_store.h"
#include "support.h"

#define T0 1700000000000LL

typedef struct env {
    test_store t;
    char ns[40];
    hr_stories *stories;
    hr_ratings *ratings;
    hr_members *members;
    hr_arena a;
} env;

static void env_open(env *e, const char *kind, size_t content_max) {
    memset(e, 0, sizeof *e);
    test_store_open(&e->t, kind);
    test_unique(e->ns, sizeof e->ns - 1, "t");
    strcat(e->ns, "/");
    hr_stories_options o = {.ns = e->ns, .content_max = content_max};
    e->stories = hr_stories_new(e->t.store, &o);
    e->ratings = hr_ratings_new(e->t.store, e->stories);
    e->members = hr_members_new(e->t.store, e->ns);
}

static void env_close(env *e) {
    hr_members_free(e->members);
    hr_ratings_free(e->ratings);
    hr_stories_free(e->stories);
    hr_arena_free(&e->a);
    test_store_close(&e->t);
}

typedef void (*env_check)(env *e);

static void run(const char *kind, env_check check) {
    env e;
    env_open(&e, kind, 0);
    check(&e);
    env_close(&e);
}

static hr_story create(env *e, const char *url, const char *content, int64_t time, bool want_dup) {
    hr_story st;
    bool dup = !want_dup;
    hr_err err = {0};
    int rc =
        hr_stories_create(e->stories, hr_slice_str(url), hr_slice_str(content), time, &e->a, &st, &dup, &err);
    cr_assert_eq(rc, HR_OK, "create %s: %s", url, err.msg);
    cr_assert_eq(dup, want_dup, "create %s: duplicate is %d", url, dup);
    return st;
}

static hr_story find(env *e, const char *url) {
    hr_story st;
    hr_err err = {0};
    int rc = hr_stories_find(e->stories, hr_slice_str(url), true, &e->a, &st, &err);
    cr_assert_eq(rc, HR_OK, "find %s: %s", url, err.msg);
    return st;
}

static hr_story get(env *e, const char *id) {
    hr_story st;
    hr_err err = {0};
    int rc = hr_stories_get(e->stories, hr_slice_str(id), true, &e->a, &st, &err);
    cr_assert_eq(rc, HR_OK, "get %s: %s", id, err.msg);
    return st;
}

static void assert_url(hr_slice got, const char *want) {
    cr_assert(hr_slice_eq(got, hr_slice_str(want)), "url '%.*s', want '%s'", (int)got.len, got.ptr, want);
}

/* ---- Creation and de-duplication ---- */

static void dedup_of_variants(env *e) {
    hr_story st = create(e, "http://www.Example.com/news/story/index.html", "<p>hi</p>", T0, false);
    assert_url(st.url, "https://example.com/news/story");
    cr_assert_eq(strlen(st.id), 16);
    cr_assert_eq(st.time_ms, T0);
    cr_assert_eq(st.score, 0);
    const char *variants[] = {
        "https://example.com/news/story",
        "http://example.com/news/story/",
        "https://www.example.com/news/story/index.html",
        "HTTP://EXAMPLE.COM:80/news/story",
        "https://example.com:443/news/story?utm_source=feed&utm_medium=rss",
        "https://example.com/news/story#comments",
        "http://www.example.com./news/./story/",
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        hr_story d = create(e, variants[i], "other content, ignored", T0 + 5, true);
        cr_assert_str_eq(d.id, st.id, "%s", variants[i]);
        assert_url(d.url, "https://example.com/news/story");
        cr_assert_eq(d.time_ms, T0, "a duplicate answers the story as it is");
        hr_story f = find(e, variants[i]);
        cr_assert_str_eq(f.id, st.id);
        assert_url(f.content, "<p>hi</p>");
    }
    /* different pages stay different stories */
    hr_story other = create(e, "https://example.com/news/Story", "", T0, false);
    cr_assert_str_neq(other.id, st.id, "paths are case-sensitive");
    hr_story q = create(e, "https://example.com/news/story?page=2", "", T0, false);
    cr_assert_str_neq(q.id, st.id);
    /* the id is the canonical URL's hash: deterministic */
    hr_story again = get(e, st.id);
    cr_assert_eq(again.n_urls, 1);
}
BOTH_STORES(stories, run, dedup_of_variants)

static void refused_input_stores_nothing(env *e) {
    hr_story st;
    bool dup;
    hr_err err = {0};
    cr_assert_eq(hr_stories_create(e->stories, hr_slice_str("ftp://example.com/a"), hr_slice_str("x"), T0,
                                   &e->a, &st, &dup, &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "url"), "%s", err.msg);
    cr_assert_eq(hr_stories_create(e->stories, hr_slice_str("not a url"), hr_slice_str("x"), T0, &e->a, &st,
                                   &dup, &err),
                 HR_EINVAL);
    cr_assert_eq(hr_stories_create(e->stories, hr_slice_str("https://example.com/t"), hr_slice_str("x"), -1,
                                   &e->a, &st, &dup, &err),
                 HR_EINVAL);
    cr_assert(strstr(err.msg, "time"), "%s", err.msg);
    cr_assert_eq(hr_stories_find(e->stories, hr_slice_str("https://example.com/t"), false, &e->a, &st, &err),
                 HR_ENOTFOUND);
    cr_assert_eq(hr_stories_get(e->stories, hr_slice_str("0123456789abcdef"), false, &e->a, &st, &err),
                 HR_ENOTFOUND);
    cr_assert_eq(hr_stories_get(e->stories, hr_slice_str("not-an-id"), false, &e->a, &st, &err),
                 HR_ENOTFOUND);
    hr_list_req req = {.limit = 10};
    hr_story_page page;
    cr_assert_eq(hr_stories_recent(e->stories, &req, &e->a, &page, NULL), HR_OK);
    cr_assert_eq(page.n, 0, "nothing was stored");
}
BOTH_STORES(stories, run, refused_input_stores_nothing)

typedef struct creator {
    env *e;
    int thread;
    int created;
    char id[17];
} creator;

static void *create_same(void *arg) {
    creator *c = arg;
    hr_arena a = HR_ARENA_INIT;
    const char *variants[] = {"https://example.com/hot", "http://www.example.com/hot/",
                              "https://example.com/hot#x", "HTTPS://EXAMPLE.COM/hot/index.html"};
    for (int i = 0; i < 10; i++) {
        hr_story st;
        bool dup;
        if (hr_stories_create(c->e->stories, hr_slice_str(variants[(c->thread + i) % 4]), hr_slice_str("c"),
                              T0, &a, &st, &dup, NULL) != HR_OK)
            return (void *)1;
        c->created += !dup;
        strcpy(c->id, st.id);
        hr_arena_reset(&a);
    }
    hr_arena_free(&a);
    return NULL;
}

static void concurrent_creates_of_one_url(env *e) {
    enum { THREADS = 8 };
    creator c[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        c[i] = (creator){.e = e, .thread = i};
        cr_assert_eq(pthread_create(&th[i], NULL, create_same, &c[i]), 0);
    }
    int created = 0;
    for (int i = 0; i < THREADS; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        cr_assert_null(ret);
        created += c[i].created;
        cr_assert_str_eq(c[i].id, c[0].id, "one story");
    }
    cr_assert_eq(created, 1, "created once, the rest are duplicates");
    hr_list_req req = {.limit = 10};
    hr_story_page page;
    cr_assert_eq(hr_stories_recent(e->stories, &req, &e->a, &page, NULL), HR_OK);
    cr_assert_eq(page.n, 1);
}
BOTH_STORES(stories, run, concurrent_creates_of_one_url)

/* ---- URLs of a story ---- */

static hr_story add_url(env *e, const char *id, const char *url, bool preferred, bool want_added) {
    hr_story st;
    bool added = !want_added;
    hr_err err = {0};
    int rc = hr_stories_add_url(e->stories, hr_slice_str(id), hr_slice_str(url), preferred, &e->a, &st,
                                &added, &err);
    cr_assert_eq(rc, HR_OK, "add %s to %s: %s", url, id, err.msg);
    cr_assert_eq(added, want_added, "add %s: added %d", url, added);
    return st;
}

static void aliases_and_preferred(env *e) {
    hr_story st = create(e, "https://example.com/a", "A", T0, false);
    hr_story s2 = add_url(e, st.id, "https://amp.example.com/a?utm_campaign=x", false, true);
    cr_assert_eq(s2.n_urls, 2);
    assert_url(s2.url, "https://example.com/a");
    assert_url(s2.urls[1], "https://amp.example.com/a");
    /* found by any variant of the alias; creating at it is a duplicate */
    cr_assert_str_eq(find(e, "http://www.amp.example.com/a/").id, st.id);
    cr_assert_str_eq(create(e, "https://amp.example.com/a/index.html", "", T0, true).id, st.id);
    /* re-adding is idempotent */
    hr_story s3 = add_url(e, st.id, "http://amp.example.com/a", false, false);
    cr_assert_eq(s3.n_urls, 2);
    /* switch the preferred URL to the alias, then back */
    hr_story s4 = add_url(e, st.id, "https://amp.example.com/a", true, false);
    assert_url(s4.url, "https://amp.example.com/a");
    assert_url(get(e, st.id).url, "https://amp.example.com/a");
    assert_url(find(e, "https://example.com/a").url, "https://amp.example.com/a");
    hr_story s5 = add_url(e, st.id, "https://mirror.example.org/a", true, true);
    assert_url(s5.url, "https://mirror.example.org/a");
    hr_story g = get(e, st.id);
    cr_assert_eq(g.n_urls, 3);
    assert_url(g.urls[0], "https://mirror.example.org/a");
    assert_url(g.urls[1], "https://amp.example.com/a");
    assert_url(g.urls[2], "https://example.com/a");
    assert_url(g.content, "A");
    /* lists show the preferred URL */
    hr_list_req req = {.limit = 10};
    hr_story_page page;
    cr_assert_eq(hr_stories_recent(e->stories, &req, &e->a, &page, NULL), HR_OK);
    cr_assert_eq(page.n, 1);
    assert_url(page.items[0].url, "https://mirror.example.org/a");
}
BOTH_STORES(stories, run, aliases_and_preferred)

/* Several servers on one shared store (Redis Cluster) add URLs to one
 * story at once. Each server is an hr_stories of its own, with its own
 * in-process locks, so only the store's leases (core/lease.h) keep one
 * server's rewrite of the story's URL list from dropping another's URL.
 * On RocksDB, which one process owns, one hr_stories serves every thread. */
enum { ALIAS_THREADS = 4, ALIAS_EACH = 12 };

typedef struct url_adder {
    hr_stories *stories;
    const char *id;
    int thread, failures;
} url_adder;

static void *add_urls(void *arg) {
    url_adder *w = arg;
    hr_arena a = HR_ARENA_INIT;
    for (int i = 0; i < ALIAS_EACH; i++) {
        char url[64];
        snprintf(url, sizeof url, "https://mirror%d.example.org/s/%d", w->thread, i);
        hr_story st;
        bool added;
        hr_err err = {0};
        if (hr_stories_add_url(w->stories, hr_slice_str(w->id), hr_slice_str(url), i % 5 == 0, &a, &st,
                               &added, &err) != HR_OK ||
            !added) {
            fprintf(stderr, "add %s: %s\n", url, err.msg);
            w->failures++;
        }
        hr_arena_reset(&a);
    }
    hr_arena_free(&a);
    return NULL;
}

static void servers_adding_urls_lose_none(env *e) {
    hr_story st = create(e, "https://example.com/s", "S", T0, false);
    int n_servers = hr_store_caps_of(e->t.store)->shared ? 2 : 1;
    hr_stories_options o = {.ns = e->ns};
    hr_stories *servers[2] = {e->stories, n_servers > 1 ? hr_stories_new(e->t.store, &o) : e->stories};
    url_adder w[ALIAS_THREADS];
    pthread_t th[ALIAS_THREADS];
    for (int i = 0; i < ALIAS_THREADS; i++) {
        w[i] = (url_adder){.stories = servers[i % n_servers], .id = st.id, .thread = i};
        cr_assert_eq(pthread_create(&th[i], NULL, add_urls, &w[i]), 0);
    }
    for (int i = 0; i < ALIAS_THREADS; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(w[i].failures, 0, "thread %d: %d adds failed", i, w[i].failures);
    }
    if (n_servers > 1) hr_stories_free(servers[1]);
    hr_story g = get(e, st.id);
    cr_assert_eq(g.n_urls, 1 + ALIAS_THREADS * ALIAS_EACH, "%zu URLs kept of %d added", g.n_urls,
                 1 + ALIAS_THREADS * ALIAS_EACH);
    for (int t = 0; t < ALIAS_THREADS; t++)
        for (int i = 0; i < ALIAS_EACH; i++) {
            char url[64];
            snprintf(url, sizeof url, "https://mirror%d.example.org/s/%d", t, i);
            cr_assert_str_eq(find(e, url).id, st.id, "%s leads to the story", url);
        }
}
BOTH_STORES(stories, run, servers_adding_urls_lose_none)

static void alias_conflicts(env *e) {
    hr_story a = create(e, "https://example.com/a", "", T0, false);
    hr_story b = create(e, "https://example.com/b", "", T0, false);
    add_url(e, b.id, "https://example.net/b-copy", false, true);
    hr_story st;
    bool added;
    hr_err err = {0};
    /* another story's first URL, or its alias: 409, and nothing changes */
    cr_assert_eq(hr_stories_add_url(e->stories, hr_slice_str(a.id), hr_slice_str("http://example.com/b/"),
                                    false, &e->a, &st, &added, &err),
                 HR_ECONFLICT);
    cr_assert(strstr(err.msg, b.id), "%s", err.msg);
    cr_assert_eq(hr_stories_add_url(e->stories, hr_slice_str(a.id),
                                    hr_slice_str("https://example.net/b-copy"), true, &e->a, &st, &added,
                                    &err),
                 HR_ECONFLICT);
    cr_assert_eq(get(e, a.id).n_urls, 1);
    assert_url(get(e, a.id).url, "https://example.com/a");
    cr_assert_str_eq(find(e, "https://example.net/b-copy").id, b.id);
    /* unknown story, refused URL */
    cr_assert_eq(hr_stories_add_url(e->stories, hr_slice_str("0000000000000000"),
                                    hr_slice_str("https://example.com/c"), false, &e->a, &st, &added, &err),
                 HR_ENOTFOUND);
    cr_assert_eq(hr_stories_add_url(e->stories, hr_slice_str(a.id), hr_slice_str("mailto:x@y"), false, &e->a,
                                    &st, &added, &err),
                 HR_EINVAL);
    /* the unknown story's URL was not claimed */
    create(e, "https://example.com/c", "", T0, false);
    /* at most HR_STORY_URLS_MAX URLs */
    char url[64];
    for (int i = 1; i < HR_STORY_URLS_MAX; i++) {
        snprintf(url, sizeof url, "https://example.com/a/%d", i);
        add_url(e, a.id, url, false, true);
    }
    cr_assert_eq(hr_stories_add_url(e->stories, hr_slice_str(a.id), hr_slice_str("https://example.com/a/x"),
                                    false, &e->a, &st, &added, &err),
                 HR_ECONFLICT);
    cr_assert_eq(get(e, a.id).n_urls, HR_STORY_URLS_MAX);
}
BOTH_STORES(stories, run, alias_conflicts)

/* ---- Content ---- */

static void content_roundtrip(env *e) {
    /* small: raw */
    hr_story s1 = create(e, "https://example.com/small", "<p>small</p>", T0, false);
    hr_story g1 = get(e, s1.id);
    cr_assert(!g1.compressed);
    assert_url(g1.content, "<p>small</p>");
    cr_assert_eq(g1.content_len, 12);

    /* large HTML: compressed, and whole */
    size_t n = 200 * 1024;
    char *html = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        html[i] = "<p>The quick brown fox jumps over the lazy dog.</p>\n"[i % 52];
    html[n] = '\0';
    hr_story s2 = create(e, "https://example.com/large", html, T0, false);
    hr_story g2 = get(e, s2.id);
    cr_assert(g2.compressed, "repetitive HTML is stored compressed");
    cr_assert_eq(g2.content.len, n);
    cr_assert(memcmp(g2.content.ptr, html, n) == 0);
    cr_assert_eq(g2.content_len, n);

    /* binary-ish UTF-8 (random multi-byte characters, control characters):
     * the bytes come back exactly, whichever way they were stored */
    size_t m = 0, cap = 30000;
    unsigned char *u = malloc(cap + 8);
    unsigned seed = 7;
    while (m < cap) {
        seed = seed * 1103515245 + 12345;
        unsigned cp = (seed >> 8) % 0x10000;
        if (cp >= 0xd800 && cp < 0xe000) cp = 0x1f600 + (cp & 0xff); /* emoji instead of surrogates */
        if (cp == 0) cp = 1;
        if (cp < 0x80)
            u[m++] = (unsigned char)cp;
        else if (cp < 0x800) {
            u[m++] = (unsigned char)(0xc0 | cp >> 6);
            u[m++] = (unsigned char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            u[m++] = (unsigned char)(0xe0 | cp >> 12);
            u[m++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
            u[m++] = (unsigned char)(0x80 | (cp & 0x3f));
        } else {
            u[m++] = (unsigned char)(0xf0 | cp >> 18);
            u[m++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
            u[m++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
            u[m++] = (unsigned char)(0x80 | (cp & 0x3f));
        }
    }
    hr_story st;
    bool dup;
    cr_assert_eq(hr_stories_create(e->stories, hr_slice_str("https://example.com/utf8"),
                                   hr_slice_of((const char *)u, m), T0, &e->a, &st, &dup, NULL),
                 HR_OK);
    hr_story g3 = get(e, st.id);
    cr_assert_eq(g3.content.len, m);
    cr_assert(memcmp(g3.content.ptr, u, m) == 0);

    /* random bytes (the core is binary-safe): compression does not save 10 %,
     * so they are stored raw */
    for (size_t i = 0; i < 8192; i++) {
        seed = seed * 1103515245 + 12345;
        u[i] = (unsigned char)(seed >> 16);
    }
    cr_assert_eq(hr_stories_create(e->stories, hr_slice_str("https://example.com/random"),
                                   hr_slice_of((const char *)u, 8192), T0, &e->a, &st, &dup, NULL),
                 HR_OK);
    hr_story g4 = get(e, st.id);
    cr_assert(!g4.compressed);
    cr_assert_eq(g4.content.len, 8192);
    cr_assert(memcmp(g4.content.ptr, u, 8192) == 0);

    /* the limit: exactly content_max is fine, one more byte is 413 */
    char *big = malloc(HR_STORY_CONTENT_MAX + 2);
    memset(big, 'x', HR_STORY_CONTENT_MAX + 1);
    big[HR_STORY_CONTENT_MAX + 1] = '\0';
    hr_err err = {0};
    cr_assert_eq(hr_stories_create(e->stories, hr_slice_str("https://example.com/big"),
                                   hr_slice_of(big, HR_STORY_CONTENT_MAX + 1), T0, &e->a, &st, &dup, &err),
                 HR_ETOOBIG);
    cr_assert(strstr(err.msg, "content"), "%s", err.msg);
    cr_assert_eq(
        hr_stories_find(e->stories, hr_slice_str("https://example.com/big"), false, &e->a, &st, NULL),
        HR_ENOTFOUND);
    cr_assert_eq(hr_stories_create(e->stories, hr_slice_str("https://example.com/big"),
                                   hr_slice_of(big, HR_STORY_CONTENT_MAX), T0, &e->a, &st, &dup, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(get(e, st.id).content.len, HR_STORY_CONTENT_MAX);
    /* empty content */
    hr_story s4 = create(e, "https://example.com/empty", "", T0, false);
    cr_assert_eq(get(e, s4.id).content.len, 0);
    free(big);
    free(u);
    free(html);
}
BOTH_STORES(stories, run, content_roundtrip)

/* ---- Recent stories ---- */

static size_t page_of(env *e, hr_list_req *req, char ids[][17], size_t at) {
    hr_story_page page;
    hr_err err = {0};
    cr_assert_eq(hr_stories_recent(e->stories, req, &e->a, &page, &err), HR_OK, "%s", err.msg);
    for (size_t i = 0; i < page.n; i++)
        strcpy(ids[at + i], page.items[i].id);
    req->cursor = page.next_cursor;
    return page.n;
}

static void recent_paging(env *e) {
    /* 40 stories, several sharing a time (ties are ordered by id) */
    enum { N = 40 };
    char url[64];
    int64_t times[N];
    for (int i = 0; i < N; i++) {
        snprintf(url, sizeof url, "https://example.com/s/%d", i);
        times[i] = T0 + (i / 3) * 1000;
        create(e, url, "", times[i], false);
    }
    char ids[N + 10][17];
    hr_list_req req = {.limit = 7};
    size_t got = 0, pages = 0;
    do {
        size_t n = page_of(e, &req, ids, got);
        got += n;
        pages++;
        /* newer stories arriving between pages never shift the paging */
        if (pages == 2) {
            snprintf(url, sizeof url, "https://example.com/new/%zu", pages);
            create(e, url, "", T0 + 1000000, false);
        }
    } while (req.cursor != NULL && pages < 20);
    cr_assert_eq(got, N, "every story exactly once (got %zu)", got);
    cr_assert_eq(pages, 6);
    for (size_t i = 0; i < got; i++)
        for (size_t j = i + 1; j < got; j++)
            cr_assert_str_neq(ids[i], ids[j], "repeated %s", ids[i]);
    /* newest first */
    int64_t prev = INT64_MAX;
    for (size_t i = 0; i < got; i++) {
        int64_t t = get(e, ids[i]).time_ms;
        cr_assert(t <= prev);
        prev = t;
    }
    /* since is exclusive */
    hr_list_req sr = {.limit = 100, .has_since = true, .since_ms = T0 + 11000};
    hr_story_page page;
    cr_assert_eq(hr_stories_recent(e->stories, &sr, &e->a, &page, NULL), HR_OK);
    cr_assert_eq(page.n, 5, "the 4 stories at 12 s and 13 s, and the new one (got %zu)", page.n);
    cr_assert(page.next_cursor == NULL);
    /* bad cursor, bad limit */
    hr_err err = {0};
    hr_list_req bad = {.limit = 5, .cursor = "nonsense"};
    cr_assert_eq(hr_stories_recent(e->stories, &bad, &e->a, &page, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "cursor"), "%s", err.msg);
    bad = (hr_list_req){.limit = 0};
    cr_assert_eq(hr_stories_recent(e->stories, &bad, &e->a, &page, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "limit"), "%s", err.msg);
}
BOTH_STORES(stories, run, recent_paging)

/* ---- Members ---- */

static void members_put_get(env *e) {
    hr_member m;
    hr_err err = {0};
    cr_assert_eq(hr_members_get(e->members, hr_slice_str("feed:hn"), &e->a, &m, &err), HR_ENOTFOUND);
    cr_assert_eq(hr_members_put(e->members, hr_slice_str("feed:hn"),
                                hr_slice_str("HTTP://www.News.ycombinator.com/"), -12, &e->a, &m, &err),
                 HR_OK, "%s", err.msg);
    cr_assert_eq(hr_members_get(e->members, hr_slice_str("feed:hn"), &e->a, &m, &err), HR_OK);
    assert_url(m.url, "https://news.ycombinator.com/");
    cr_assert_eq(m.score, -12);
    cr_assert_eq(
        hr_members_put(e->members, hr_slice_str("feed:hn"), hr_slice_str("gopher://x"), 1, &e->a, &m, &err),
        HR_EINVAL);
    cr_assert_eq(hr_members_put(e->members, hr_slice_str("feed:hn"), hr_slice_str("https://a.com"),
                                HR_MEMBER_SCORE_MAX + 1, &e->a, &m, &err),
                 HR_EINVAL);
    cr_assert_eq(hr_members_get(e->members, hr_slice_str("feed:hn"), &e->a, &m, &err), HR_OK);
    cr_assert_eq(m.score, -12, "a refused PUT changes nothing");
}
BOTH_STORES(stories, run, members_put_get)

/* ---- Through HTTP: the routes, status codes and details ---- */

typedef struct http_env {
    env e;
    hr_app app;
    hr_http_server *server;
    uint16_t port;
} http_env;

typedef struct response {
    int status;
    char body[8192];
    json_t *json;
} response;

static response *call(http_env *h, const char *method, const char *path, const char *body) {
    static response r;
    json_decref(r.json);
    memset(&r, 0, sizeof r);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(h->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    size_t blen = body ? strlen(body) : 0;
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     method, path, blen);
    cr_assert_eq(write(fd, head, (size_t)n), n);
    for (size_t off = 0; off < blen;) {
        ssize_t w = write(fd, body + off, blen - off);
        if (w <= 0) break; /* the server may answer 413 and close early */
        off += (size_t)w;
    }
    static char raw[1 << 20];
    size_t len = 0;
    ssize_t k;
    while (len < sizeof raw - 1 && (k = read(fd, raw + len, sizeof raw - 1 - len)) > 0)
        len += (size_t)k;
    raw[len] = '\0';
    close(fd);
    cr_assert(sscanf(raw, "HTTP/1.1 %d", &r.status) == 1, "no status line in '%.80s'", raw);
    const char *b = strstr(raw, "\r\n\r\n");
    snprintf(r.body, sizeof r.body, "%s", b ? b + 4 : "");
    r.json = json_loads(r.body, 0, NULL);
    return &r;
}

static void expect(response *r, int status, const char *detail_part) {
    cr_assert_eq(r->status, status, "status %d, want %d: %s", r->status, status, r->body);
    if (detail_part) cr_assert(strstr(r->body, detail_part), "detail lacks '%s': %s", detail_part, r->body);
}

static void http_run(const char *kind, void (*check)(http_env *h)) {
    http_env h;
    memset(&h, 0, sizeof h);
    env_open(&h.e, kind, 0);
    h.app = (hr_app){
        .store = h.e.t.store, .stories = h.e.stories, .ratings = h.e.ratings, .members = h.e.members};
    hr_http_config cfg = {.host = "127.0.0.1", .threads = 2, .app = &h.app};
    hr_config settings;
    hr_config_init(&settings);
    hr_route *routes = hr_api_routes(&settings, &cfg.n_routes);
    cfg.routes = routes;
    hr_err err = {0};
    cr_assert_eq(hr_http_start(&cfg, &h.server, &err), HR_OK, "%s", err.msg);
    h.port = hr_http_port(h.server);
    check(&h);
    hr_http_stop(h.server);
    free(routes);
    hr_config_free(&settings);
    env_close(&h.e);
}

static const char *jstr(response *r, const char *field) {
    return json_string_value(json_object_get(r->json, field));
}

static void api_flow(http_env *h) {
    response *r =
        call(h, "POST", "/api/v1/stories",
             "{\"url\":\"http://www.example.com/x/\",\"content\":\"<b>x</b>\",\"time\":1700000000000}");
    expect(r, 201, NULL);
    char id[17];
    snprintf(id, sizeof id, "%s", jstr(r, "id"));
    cr_assert_str_eq(jstr(r, "url"), "https://example.com/x");
    r = call(h, "POST", "/api/v1/stories", "{\"url\":\"https://example.com/x/index.html\"}");
    expect(r, 200, NULL);
    cr_assert(json_is_true(json_object_get(r->json, "duplicate")));
    cr_assert_str_eq(jstr(r, "id"), id);
    r = call(h, "GET", "/api/v1/stories?url=http%3A%2F%2Fexample.com%2Fx", NULL);
    expect(r, 200, NULL);
    cr_assert_str_eq(jstr(r, "content"), "<b>x</b>");
    char path[256];
    snprintf(path, sizeof path, "/api/v1/ratings/alice/%s", id);
    r = call(h, "PUT", path, "{\"score\":1}");
    expect(r, 200, NULL);
    cr_assert_eq(json_integer_value(json_object_get(r->json, "story_score")), 1);
    r = call(h, "GET", path, NULL);
    expect(r, 200, NULL);
    cr_assert_eq(json_integer_value(json_object_get(r->json, "score")), 1);
    snprintf(path, sizeof path, "/api/v1/stories/%s", id);
    r = call(h, "GET", path, NULL);
    expect(r, 200, NULL);
    cr_assert_eq(json_integer_value(json_object_get(r->json, "score")), 1);
    r = call(h, "GET", "/api/v1/members/bob/unseen?rank=hot", NULL);
    expect(r, 200, NULL);
    cr_assert_eq(json_array_size(json_object_get(r->json, "stories")), 1);
    r = call(h, "GET", "/api/v1/members/alice/unseen", NULL);
    expect(r, 200, NULL);
    cr_assert_eq(json_array_size(json_object_get(r->json, "stories")), 0);
    r = call(h, "GET", "/api/v1/members/alice/top-rated", NULL);
    expect(r, 200, NULL);
    cr_assert_eq(json_array_size(json_object_get(r->json, "stories")), 1);
    r = call(h, "GET", "/api/v1/ratings", NULL);
    expect(r, 200, NULL);
    cr_assert_eq(json_array_size(json_object_get(r->json, "ratings")), 1);
    snprintf(path, sizeof path, "/api/v1/stories/%s/ratings", id);
    expect(call(h, "GET", path, NULL), 200, "alice");
    expect(call(h, "GET", "/api/v1/ratings/alice", NULL), 200, id);
    expect(call(h, "GET", "/api/v1/stories/recent?limit=5", NULL), 200, id);
    snprintf(path, sizeof path, "/api/v1/stories/%s/urls", id);
    r = call(h, "POST", path, "{\"url\":\"https://example.org/x-copy\",\"preferred\":true}");
    expect(r, 200, NULL);
    cr_assert_str_eq(jstr(r, "url"), "https://example.org/x-copy");
    expect(call(h, "PUT", "/api/v1/members/alice", "{\"url\":\"https://alice.example\",\"score\":3}"), 200,
           NULL);
    expect(call(h, "GET", "/api/v1/members/alice", NULL), 200, "https://alice.example/");
}
BOTH_STORES(stories_api, http_run, api_flow)

static void api_bad_input(http_env *h) {
    response *r = call(h, "POST", "/api/v1/stories", "{\"url\":\"https://example.com/y\",\"content\":\"y\"}");
    expect(r, 201, NULL);
    char id[17], path[256];
    snprintf(id, sizeof id, "%s", jstr(r, "id"));
    snprintf(path, sizeof path, "/api/v1/ratings/alice/%s", id);
    expect(call(h, "PUT", path, "{\"score\":1,\"time\":1000}"), 200, NULL);

    /* ratings: score outside -1..1, not an integer, missing, unknown field, bad time */
    expect(call(h, "PUT", path, "{\"score\":2}"), 400, "score");
    expect(call(h, "PUT", path, "{\"score\":-2}"), 400, "score");
    expect(call(h, "PUT", path, "{\"score\":0.5}"), 400, "score");
    expect(call(h, "PUT", path, "{\"score\":\"1\"}"), 400, "score");
    expect(call(h, "PUT", path, "{}"), 400, "score");
    expect(call(h, "PUT", path, "{\"score\":1,\"stars\":5}"), 400, "stars");
    expect(call(h, "PUT", path, "{\"score\":-1,\"time\":-5}"), 400, "time");
    expect(call(h, "PUT", path, "not json"), 400, "JSON");
    /* unknown story */
    expect(call(h, "PUT", "/api/v1/ratings/alice/0123456789abcdef", "{\"score\":1}"), 404, "story");
    expect(call(h, "PUT", "/api/v1/ratings/alice/nosuchstory", "{\"score\":1}"), 404, "story");
    expect(call(h, "GET", "/api/v1/stories/0123456789abcdef/ratings", NULL), 404, "story");
    expect(call(h, "GET", "/api/v1/stories/0123456789abcdef", NULL), 404, "story");
    expect(call(h, "POST", "/api/v1/stories/0123456789abcdef/urls", "{\"url\":\"https://example.com/q\"}"),
           404, "story");
    /* nothing changed */
    r = call(h, "GET", path, NULL);
    expect(r, 200, NULL);
    cr_assert_eq(json_integer_value(json_object_get(r->json, "score")), 1);
    cr_assert_eq(json_integer_value(json_object_get(r->json, "time")), 1000);

    /* stories: invalid URL (the canonicaliser's detail), missing url, wrong types */
    expect(call(h, "POST", "/api/v1/stories", "{\"url\":\"ftp://example.com/\"}"), 400, "url");
    expect(call(h, "POST", "/api/v1/stories", "{\"url\":\"https://exa mple.com/\"}"), 400, "url");
    expect(call(h, "POST", "/api/v1/stories", "{\"content\":\"x\"}"), 400, "url is required");
    expect(call(h, "POST", "/api/v1/stories", "{\"url\":\"https://example.com/z\",\"content\":5}"), 400,
           "content");
    expect(call(h, "POST", "/api/v1/stories", "{\"url\":\"https://example.com/z\",\"time\":\"now\"}"), 400,
           "time");
    expect(call(h, "GET", "/api/v1/stories", NULL), 400, "url");
    expect(call(h, "GET", "/api/v1/stories?url=javascript:alert(1)", NULL), 400, "url");
    expect(call(h, "GET", "/api/v1/stories?url=https://example.com/never", NULL), 404, "url");
    /* oversized content: 413 with a detail */
    size_t n = HR_STORY_CONTENT_MAX + 1;
    char *big = malloc(n + 64);
    int k = snprintf(big, 64, "{\"url\":\"https://example.com/big\",\"content\":\"");
    memset(big + k, 'x', n);
    strcpy(big + k + n, "\"}");
    expect(call(h, "POST", "/api/v1/stories", big), 413, "content");
    free(big);
    expect(call(h, "GET", "/api/v1/stories?url=https://example.com/big", NULL), 404, NULL);
    /* aliases: conflict and bad fields */
    expect(call(h, "POST", "/api/v1/stories", "{\"url\":\"https://example.com/other\"}"), 201, NULL);
    snprintf(path, sizeof path, "/api/v1/stories/%s/urls", id);
    expect(call(h, "POST", path, "{\"url\":\"http://example.com/other/\"}"), 409, "belongs");
    expect(call(h, "POST", path, "{\"url\":\"https://example.com/y2\",\"preferred\":\"yes\"}"), 400,
           "preferred");
    expect(call(h, "POST", path, "{\"url\":\"https://example.com/y\"}"), 200, NULL);
    /* lists: limit, cursor, since, rank */
    expect(call(h, "GET", "/api/v1/stories/recent?limit=0", NULL), 400, "limit");
    expect(call(h, "GET", "/api/v1/stories/recent?limit=1001", NULL), 400, "limit");
    expect(call(h, "GET", "/api/v1/stories/recent?limit=abc", NULL), 400, "limit");
    expect(call(h, "GET", "/api/v1/stories/recent?cursor=xyz", NULL), 400, "cursor");
    expect(call(h, "GET", "/api/v1/stories/recent?since=-1", NULL), 400, "since");
    expect(call(h, "GET", "/api/v1/ratings?cursor=00", NULL), 400, "cursor");
    expect(call(h, "GET", "/api/v1/ratings/alice?limit=5000", NULL), 400, "limit");
    expect(call(h, "GET", "/api/v1/members/alice/unseen?rank=new", NULL), 400, "rank");
    expect(call(h, "GET", "/api/v1/members/alice/top-rated?cursor=zz", NULL), 400, "cursor");
    /* members */
    expect(call(h, "PUT", "/api/v1/members/bob", "{\"url\":\"nope\"}"), 400, "url");
    expect(call(h, "PUT", "/api/v1/members/bob", "{\"url\":\"https://bob.example\",\"score\":1.5}"), 400,
           "score");
    expect(call(h, "PUT", "/api/v1/members/bob", "{\"score\":1}"), 400, "url");
    expect(call(h, "GET", "/api/v1/members/bob", NULL), 404, "bob");
    expect(call(h, "GET", "/api/v1/ratings/bob/0123456789abcdef", NULL), 404, "rating");
}
BOTH_STORES(stories_api, http_run, api_bad_input)

/* ---- Crashes ---- */

/* A story's score in a ranking; HR_ENOTFOUND when it is not ranked. */
static int ranked(env *e, hr_rank_kind kind, const char *id, double *score) {
    hr_buf k = HR_BUF_INIT;
    hr_stories_rank_key(e->stories, kind, hr_stories_rank_shard(hr_slice_str(id)), &k);
    hr_batch *b = hr_batch_new();
    size_t op = hr_zscore(b, hr_buf_slice(&k), hr_slice_str(id));
    cr_assert_eq(hr_store_exec(e->t.store, b, 0, NULL), HR_OK);
    int rc = hr_batch_result(b, op)->rc;
    *score = hr_batch_result(b, op)->score;
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

/* A request of the crash tests, run by a server over stories s. */
typedef struct story_request {
    bool add_url; /* else a create */
    const char *url, *content, *id;
    int64_t time;
} story_request;

static int story_request_run(env *e, hr_stories *s, const story_request *r, hr_story *out, hr_err *err) {
    bool flag;
    return r->add_url ? hr_stories_add_url(s, hr_slice_str(r->id), hr_slice_str(r->url), true, &e->a, out,
                                           &flag, err)
                      : hr_stories_create(s, hr_slice_str(r->url), hr_slice_str(r->content), r->time, &e->a,
                                          out, &flag, err);
}

/* Run r on a server whose store dies in batch `at` with the ops in keep
 * run (fault_store.h); its leases are expired at once. Returns how many
 * ops the batch the crash hit had, 0 if r ran whole before it. A crash in
 * the lease's return comes after every write: r then answered OK (and the
 * server died before sending it). */
static size_t story_request_dying(env *e, const story_request *r, size_t at, uint64_t keep) {
    hr_store *dying = fault_store_crash(e->t.store, at, keep);
    hr_stories_options o = {.ns = e->ns};
    hr_stories *stories = hr_stories_new(dying, &o);
    hr_story out;
    hr_err err = {0};
    hr_log_set_level(HR_LOG_ERROR); /* the dying server's warnings (a lease not given back) are expected */
    int rc = story_request_run(e, stories, r, &out, &err);
    bool crashed = fault_store_hit(dying);
    cr_assert(crashed || rc == HR_OK, "crash at %zu/%#llx: rc %d (%s)", at, (unsigned long long)keep, rc,
              err.msg);
    size_t ops = crashed ? fault_store_batch_len(dying) : 0;
    fault_store_expire_leases(dying);
    hr_stories_free(stories);
    hr_store_close(dying);
    hr_log_set_level(HR_LOG_INFO);
    return ops;
}

/* A create killed by a crash in batch `at` with the ops in keep run
 * (fault_store.h), then the client's retry on a restarted server: the
 * story is then whole (content, lookup by URL, the recent list, both
 * rankings), as if the killed create had run whole or not at all. Returns
 * how many ops the batch the crash hit had (0: it ran whole first). */
static size_t create_crashed_then_retried(env *e, int n, size_t at, uint64_t keep) {
    char url[64], content[64];
    snprintf(url, sizeof url, "https://crash.example/%d", n);
    snprintf(content, sizeof content, "<p>story %d</p>", n);
    int64_t time = T0 + n;
    story_request killed = {.url = url, .content = content, .time = time};
    size_t ops = story_request_dying(e, &killed, at, keep);
    hr_story st;
    hr_err err = {0};

    /* the retry: a new story or the one the killed create made */
    cr_assert_eq(story_request_run(e, e->stories, &killed, &st, &err), HR_OK,
                 "crash at %zu/%#llx: the retry: %s", at, (unsigned long long)keep, err.msg);
    char id[HR_STORY_ID_LEN + 1];
    strcpy(id, st.id);
    hr_story got;
    cr_assert_eq(hr_stories_get(e->stories, hr_slice_str(id), true, &e->a, &got, &err), HR_OK,
                 "crash at %zu/%#llx: get: %s", at, (unsigned long long)keep, err.msg);
    cr_assert(got.has_content && hr_slice_eq(got.content, hr_slice_str(content)),
              "crash at %zu/%#llx: the content", at, (unsigned long long)keep);
    cr_assert_eq(got.time_ms, time);
    cr_assert_str_eq(find(e, url).id, id, "crash at %zu/%#llx: found by URL", at, (unsigned long long)keep);
    double top, hot;
    cr_assert_eq(ranked(e, HR_RANK_TOP, id, &top), HR_OK, "crash at %zu/%#llx: in the top ranking", at,
                 (unsigned long long)keep);
    cr_assert_eq(ranked(e, HR_RANK_HOT, id, &hot), HR_OK, "crash at %zu/%#llx: in the hot ranking", at,
                 (unsigned long long)keep);
    cr_assert(top == 0 && hot == hr_rank_hot(0, time), "crash at %zu/%#llx: top %g, hot %g", at,
              (unsigned long long)keep, top, hot);
    hr_list_req req = {.has_since = true, .since_ms = time - 1, .limit = 10};
    hr_story_page p;
    cr_assert_eq(hr_stories_recent(e->stories, &req, &e->a, &p, &err), HR_OK, "%s", err.msg);
    bool listed = false;
    for (size_t i = 0; i < p.n; i++)
        listed |= strcmp(p.items[i].id, id) == 0;
    cr_assert(listed, "crash at %zu/%#llx: in the recent stories", at, (unsigned long long)keep);
    return ops;
}

/* An alias added to a story (add_url, preferred) killed by a crash in batch
 * `at` with the ops in keep run, then the client's retry: the story then
 * lists the alias first, and a lookup of the alias finds the story.
 * Returns how many ops the batch the crash hit had (0: it ran whole first). */
static size_t alias_crashed_then_retried(env *e, int n, size_t at, uint64_t keep) {
    char url[64], alias[64];
    snprintf(url, sizeof url, "https://alias.example/%d", n);
    snprintf(alias, sizeof alias, "https://mirror.example/%d", n);
    hr_story st = create(e, url, "<p>x</p>", T0 + n, false);
    story_request killed = {.add_url = true, .url = alias, .id = st.id};
    size_t ops = story_request_dying(e, &killed, at, keep);
    hr_story out;
    hr_err err = {0};
    cr_assert_eq(story_request_run(e, e->stories, &killed, &out, &err), HR_OK,
                 "crash at %zu/%#llx: the retry: %s", at, (unsigned long long)keep, err.msg);
    hr_story got;
    cr_assert_eq(hr_stories_get(e->stories, hr_slice_str(st.id), false, &e->a, &got, &err), HR_OK, "%s",
                 err.msg);
    cr_assert(got.n_urls == 2, "crash at %zu/%#llx: %zu URLs", at, (unsigned long long)keep, got.n_urls);
    assert_url(got.url, alias);
    cr_assert_str_eq(find(e, alias).id, st.id, "crash at %zu/%#llx: found by the alias", at,
                     (unsigned long long)keep);
    cr_assert_str_eq(find(e, url).id, st.id, "crash at %zu/%#llx: found by its first URL", at,
                     (unsigned long long)keep);
    return ops;
}

typedef struct crash_walk {
    env *e;
    int n; /* cases made so far: each has its own URL */
} crash_walk;

static size_t crash_one(void *ctx, size_t at, uint64_t keep) {
    crash_walk *w = ctx;
    return create_crashed_then_retried(w->e, w->n++, at, keep);
}

static size_t crash_alias(void *ctx, size_t at, uint64_t keep) {
    crash_walk *w = ctx;
    return alias_crashed_then_retried(w->e, w->n++, at, keep);
}

/* A server killed anywhere in a create, or in adding a URL: the client's
 * retry makes the story whole. */
static void create_after_a_crash(env *e) {
    crash_walk w = {.e = e};
    size_t tried = fault_store_every_crash(e->t.store, crash_one, &w);
    tried += fault_store_every_crash(e->t.store, crash_alias, &w);
    cr_assert(tried >= (hr_store_caps_of(e->t.store)->atomic_batches ? 4u : 20u), "%zu crashes tried", tried);
}
BOTH_STORES(stories, run, create_after_a_crash)
