/* stories_load.c — the stories-and-ratings benchmark's loader and in-process
 * measurements (issue 5; bench/stories.sh runs it, see BENCHMARKS.md).
 *
 * Builds the dataset through the core API (hr_stories_create, hr_ratings_put)
 * on a store, the way the server would, then measures in the same process:
 *
 *   1. stories     N stories (1 M x scale): URL https://site{i%1000}.example/story/{i},
 *                  1-2 KiB of HTML, times uniform over 30 days
 *   2. heavy       member "heavy" rates 10 000 distinct stories drawn from the
 *                  Zipf below (so it has seen much of the top)
 *   3. ratings     R upserts (20 M x scale): subject uniform over M members
 *                  u0..u{M-1} (100 K x scale), object Zipf(s) over the stories
 *                  (a random permutation of ranks), score 1 (60 %), -1 (15 %),
 *                  0 (25 %), time uniform between the story's time and the end
 *                  of the 30 days; --threads threads; upserts/s with progress
 *   4. upserts     the same model for --duration seconds on the loaded store:
 *                  the steady-state upsert rate and its latency percentiles,
 *                  twice: back-dated (times drawn as the load's), then live
 *                  (each rating stamped with a clock that starts at the end of
 *                  the 30 days and moves with real time, as live traffic is: a
 *                  new entry goes at the head of each time list instead of at
 *                  a random place in it; a re-rating always wins)
 *   5. queries     once RocksDB has finished the flushes and compactions the
 *                  load queued (QUIESCE_SECS; PostgreSQL too is measured after
 *                  its load): unseen (heavy, rank=top, limit 20) --calls
 *                  times on one thread (p50/p90/p99/max; at most --query-secs),
 *                  then on --threads threads (calls/s, over 2 s at least); the
 *                  same for rank=hot, for a typical member, and top-rated;
 *                  with the store ops per call
 *   6. export      (--out DIR) the final state read back through the core API:
 *                  stories.tsv (id, url, time, score, content) and ratings.tsv
 *                  (subject, object, score, time) for PostgreSQL's COPY (text
 *                  format: no tab, newline or backslash occurs in the values),
 *                  put_objects.txt (100 000 Zipf draws of story ids, for the
 *                  wrk PUT script), unseen_heavy.txt (herald's first page)
 *   7. reopened    the store closed and reopened (a restarted server's view),
 *                  and the unseen query of phase 5 again
 *
 * Results go to stdout as KEY=VALUE lines (sourced by bench/stories.sh);
 * progress goes to stderr.
 *
 * The loader is three files, one job each: this one reads the options, runs
 * the phases in order and writes phase 6's export; stories_write.c is the
 * dataset's model and the threads that write it (phases 1-4); stories_query.c
 * times the queries (phase 5) and summarises latencies. stories_load.h is
 * what they share.
 *
 * usage: stories_load --store URI [--scale F] [--threads N] [--seed N]
 *                     [--zipf S] [--calls N] [--duration S] [--out DIR]
 *                     [--query-secs S]   (time limit of one query's latency run: 30)
 *                     [--queries-only]   (phase 5 on a store loaded before)
 *                     [--upserts-only]   (phase 4 on a store loaded before; give each
 *                                         such run its own --seed: the same seed
 *                                         replays the upserts of the load's phase 4,
 *                                         which change nothing and cost a fifth of
 *                                         new ones)
 *                     [--timed both|backdated|live]  (which runs phase 4 times: both)
 *                     [--only KEY]       (phase 5: only that query: UNSEEN_TOP,
 *                                         UNSEEN_HOT, UNSEEN_TYPICAL, TOP_RATED)
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/ratings.h"
#include "core/stories.h"
#include "core/url.h"
#include "store/store.h"
#include "stories_load.h"

/* ---- Options and shared state ------------------------------------------- */

stories_opts opt = {.scale = 1.0,
                    .threads = 2,
                    .seed = 42,
                    .zipf_s = 1.0,
                    .calls = 2000,
                    .duration = 10.0,
                    .query_secs = 30.0};

size_t n_stories, n_members;
static size_t n_ratings, n_heavy;
char (*ids)[HR_STORY_ID_LEN + 1]; /* story i's id */
int64_t *story_time;              /* story i's time */
uint32_t *perm;                   /* Zipf rank -> story index */
double *cdf;                      /* Zipf CDF over ranks */

hr_store *store;
hr_stories *stories;
hr_ratings *ratings;

atomic_int failed;

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stories_load: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

void fail(const char *what, int rc, const hr_err *err) {
    if (atomic_fetch_add(&failed, 1) == 0)
        fprintf(stderr, "stories_load: %s failed: %s (%s)\n", what, hr_errname(rc),
                err && err->msg[0] ? err->msg : hr_strerror(rc));
}

/* ---- Export ----------------------------------------------------------------- */

static FILE *open_out(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", opt.out, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) die("cannot write %s: %s", path, strerror(errno));
    static char bufs[4][1 << 20];
    static int next;
    setvbuf(f, bufs[next++ % 4], _IOFBF, sizeof bufs[0]);
    return f;
}

static void close_out(FILE *f, const char *name) {
    if (fflush(f) != 0 || ferror(f) || fclose(f) != 0)
        die("writing %s/%s failed: %s", opt.out, name, strerror(errno));
}

/* Every story with its score as herald has it, in index order. */
static size_t export_stories(int64_t *score_sum) {
    FILE *f = open_out("stories.tsv");
    char *content = malloc(4096);
    hr_arena a = HR_ARENA_INIT;
    *score_sum = 0;
    for (size_t i = 0; i < n_stories; i++) {
        hr_err err = {0};
        hr_story st;
        int rc = hr_stories_get(stories, hr_slice_of(ids[i], HR_STORY_ID_LEN), false, &a, &st, &err);
        if (rc != HR_OK) {
            fail("hr_stories_get", rc, &err);
            die("export failed");
        }
        make_content(i, content, 4096);
        fprintf(f, "%s\t%.*s\t%" PRId64 "\t%" PRId64 "\t%s\n", ids[i], (int)st.url.len, st.url.ptr,
                st.time_ms, st.score, content);
        *score_sum += st.score;
        hr_arena_reset(&a);
        if ((i & 0x3ffff) == 0x3ffff)
            fprintf(stderr, "stories_load: export: %zu/%zu stories\n", i + 1, n_stories);
    }
    hr_arena_free(&a);
    free(content);
    close_out(f, "stories.tsv");
    return n_stories;
}

/* Every rating, through the all-ratings list (newest first, paged). */
static size_t export_ratings(int64_t *score_sum, size_t *heavy_n) {
    FILE *f = open_out("ratings.tsv");
    hr_arena a = HR_ARENA_INIT;
    char *cursor = NULL;
    size_t n = 0;
    *score_sum = 0;
    *heavy_n = 0;
    size_t next_note = 1000000;
    for (;;) {
        hr_err err = {0};
        hr_list_req req = {.limit = HR_LIST_MAX, .cursor = cursor};
        hr_rating_page page;
        int rc = hr_ratings_all(ratings, &req, &a, &page, &err);
        if (rc != HR_OK) {
            fail("hr_ratings_all", rc, &err);
            die("export failed");
        }
        for (size_t i = 0; i < page.n; i++) {
            const hr_rating *r = &page.items[i];
            fprintf(f, "%.*s\t%.*s\t%d\t%" PRId64 "\n", (int)r->subject.len, r->subject.ptr,
                    (int)r->object.len, r->object.ptr, r->score, r->time_ms);
            *score_sum += r->score;
            if (hr_slice_eq(r->subject, hr_slice_str(HEAVY))) (*heavy_n)++;
        }
        n += page.n;
        if (n >= next_note) {
            fprintf(stderr, "stories_load: export: %zu ratings\n", n);
            next_note += 1000000;
        }
        free(cursor);
        cursor = page.next_cursor ? strdup(page.next_cursor) : NULL;
        hr_arena_reset(&a);
        if (cursor == NULL) break;
    }
    hr_arena_free(&a);
    close_out(f, "ratings.tsv");
    return n;
}

/* ---- Main ---------------------------------------------------------------------- */

static void usage(void) {
    fprintf(stderr, "usage: stories_load --store URI [--scale F] [--threads N] [--seed N] [--zipf S]\n"
                    "                    [--calls N] [--duration S] [--out DIR] [--query-secs S]\n"
                    "                    [--queries-only] [--upserts-only] [--only KEY]\n"
                    "                    [--timed both|backdated|live]\n");
    exit(2);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--queries-only") == 0) {
            opt.queries_only = true;
            continue;
        }
        if (strcmp(a, "--upserts-only") == 0) {
            opt.upserts_only = true;
            continue;
        }
        if (v == NULL) usage();
        if (strcmp(a, "--store") == 0)
            opt.store = v;
        else if (strcmp(a, "--scale") == 0)
            opt.scale = atof(v);
        else if (strcmp(a, "--threads") == 0)
            opt.threads = atoi(v);
        else if (strcmp(a, "--seed") == 0)
            opt.seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--zipf") == 0)
            opt.zipf_s = atof(v);
        else if (strcmp(a, "--calls") == 0)
            opt.calls = atoi(v);
        else if (strcmp(a, "--duration") == 0)
            opt.duration = atof(v);
        else if (strcmp(a, "--out") == 0)
            opt.out = v;
        else if (strcmp(a, "--query-secs") == 0)
            opt.query_secs = atof(v);
        else if (strcmp(a, "--only") == 0)
            opt.only = v;
        else if (strcmp(a, "--timed") == 0) {
            if (strcmp(v, "both") == 0)
                opt.timed = TIMED_BOTH;
            else if (strcmp(v, "backdated") == 0)
                opt.timed = TIMED_BACKDATED;
            else if (strcmp(v, "live") == 0)
                opt.timed = TIMED_LIVE;
            else
                usage();
        } else
            usage();
        i++;
    }
    if (opt.store == NULL || !(opt.scale > 0 && opt.scale <= 10) || opt.threads < 1 || opt.threads > 64 ||
        opt.calls < 1 || opt.duration < 0 || !(opt.zipf_s > 0) || !(opt.query_secs > 0))
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0);

    n_stories = (size_t)llround(FULL_STORIES * opt.scale);
    n_members = (size_t)llround(FULL_MEMBERS * opt.scale);
    n_ratings = (size_t)llround(FULL_RATINGS * opt.scale);
    if (n_stories < 100 || n_members < 10) die("scale %.4g is too small", opt.scale);
    n_heavy = HEAVY_RATINGS < n_stories / 2 ? HEAVY_RATINGS : n_stories / 2;
    printf("SCALE=%g\nSTORIES=%zu\nMEMBERS=%zu\nRATINGS_UPSERTS=%zu\nHEAVY_RATINGS=%zu\nTHREADS=%d\nZIPF_S=%"
           "g\nSEED=%" PRIu64 "\n",
           opt.scale, n_stories, n_members, n_ratings, n_heavy, opt.threads, opt.zipf_s, opt.seed);

    /* The dataset's skeleton: story times, the Zipf CDF and rank permutation. */
    ids = calloc(n_stories, sizeof *ids);
    story_time = malloc(n_stories * sizeof *story_time);
    perm = malloc(n_stories * sizeof *perm);
    cdf = malloc(n_stories * sizeof *cdf);
    workers = calloc((size_t)opt.threads, sizeof *workers);
    if (!ids || !story_time || !perm || !cdf || !workers) die("out of memory");
    rng g;
    rng_seed(&g, opt.seed);
    for (size_t i = 0; i < n_stories; i++) {
        story_time[i] = END_MS - SPAN_MS + (int64_t)rng_below(&g, (uint64_t)SPAN_MS);
        perm[i] = (uint32_t)i;
    }
    for (size_t i = n_stories - 1; i > 0; i--) {
        size_t j = rng_below(&g, i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    double total = 0;
    for (size_t k = 0; k < n_stories; k++)
        cdf[k] = (total += pow((double)(k + 1), -opt.zipf_s));
    for (size_t k = 0; k < n_stories; k++)
        cdf[k] /= total;
    cdf[n_stories - 1] = 1.0;

    hr_err err = {0};
    if (hr_store_open(opt.store, NULL, &store, &err) != HR_OK) die("cannot open %s: %s", opt.store, err.msg);
    stories = hr_stories_new(store, NULL);
    ratings = hr_ratings_new(store, stories);

    phase p;
    if (opt.queries_only) goto queries;
    if (opt.upserts_only) { /* the ids the load gave the stories: the hashes of their URLs */
        hr_buf canon = HR_BUF_INIT;
        char url[128];
        for (size_t i = 0; i < n_stories; i++) {
            hr_buf_clear(&canon);
            if (hr_url_canonical(hr_slice_of(url, make_url(i, url, sizeof url)), &canon, &err) != HR_OK)
                die("url %zu: %s", i, err.msg);
            snprintf(ids[i], sizeof ids[i], "%016" PRIx64, hr_url_hash(hr_buf_slice(&canon)));
        }
        hr_buf_free(&canon);
        goto upserts;
    }

    /* 1. Stories. */
    phase_start(&p, "stories", n_stories);
    run_workers(create_stories, &p, n_stories, 5);
    double secs = phase_end(&p, n_stories);
    printf("STORIES_SECS=%.1f\nSTORIES_PER_S=%.0f\n", secs, (double)n_stories / secs);

    /* 2. The heavy member: n_heavy distinct stories from the Zipf. */
    {
        phase_start(&p, "heavy member", n_heavy);
        unsigned char *taken = calloc(n_stories, 1);
        rng h;
        rng_seed(&h, opt.seed * 31 + 5);
        hr_arena a = HR_ARENA_INIT;
        worker *w = &workers[0];
        size_t top_seen = 0;
        for (size_t n = 0; n < n_heavy;) {
            size_t s = zipf_story(&h);
            if (taken[s]) continue;
            taken[s] = 1;
            if (put_one(w, &a, HEAVY, s, draw_score(&h), draw_time(&h, s), false) != HR_OK)
                die("heavy member failed");
            n++;
        }
        /* How much of the Zipf head it has seen (ranks 0..999). */
        for (size_t k = 0; k < 1000 && k < n_stories; k++)
            top_seen += taken[perm[k]];
        hr_arena_free(&a);
        free(taken);
        phase_end(&p, n_heavy);
        printf("HEAVY_SEEN_OF_ZIPF_TOP1000=%zu\n", top_seen);
    }

    /* 3. Bulk ratings. */
    for (int t = 0; t < opt.threads; t++) {
        workers[t].cap_lat = n_ratings / SAMPLE_EVERY / (size_t)opt.threads + 16;
        workers[t].lat = malloc(workers[t].cap_lat * sizeof(uint64_t));
        workers[t].n_lat = 0;
    }
    phase_start(&p, "ratings", n_ratings);
    double cpu0 = cpu_s();
    run_workers(put_ratings, &p, n_ratings, 10);
    secs = phase_end(&p, n_ratings);
    printf("LOAD_UPSERT_CPU_US=%.1f\n", (cpu_s() - cpu0) * 1e6 / (double)n_ratings);
    {
        stats s = workers_latency();
        printf("LOAD_SECS=%.1f\nLOAD_UPSERTS_PER_S=%.0f\n", secs, (double)n_ratings / secs);
        print_stats("LOAD_UPSERT", &s);
        print_caches("LOAD_UPSERT");
    }

    /* 4. Steady-state upserts on the loaded store: back-dated as the load's,
     * then live. */
upserts:
    if (opt.duration > 0 && opt.timed != TIMED_LIVE) timed_upserts(false);
    if (opt.duration > 0 && opt.timed != TIMED_BACKDATED) timed_upserts(true);
    for (int t = 0; t < opt.threads; t++)
        free(workers[t].lat);

    if (opt.upserts_only) goto done;

    /* 5. Queries, on a quiet store (hr_store_settle). */
queries:;
    double quiet = hr_store_settle(store, 600, NULL);
    fprintf(stderr, "stories_load: waited %.1f s for RocksDB's flushes and compactions before the queries\n",
            quiet);
    printf("QUIESCE_SECS=%.1f\n", quiet);
    run_queries("", false);

    /* 6. Export. */
    if (opt.out && !opt.queries_only) {
        hr_arena a = HR_ARENA_INIT;
        size_t items;
        hr_story_page page;
        query q = {Q_UNSEEN_TOP, HEAVY, 20};
        if (run_query(&q, &a, &items, &page) != HR_OK) die("unseen failed");
        FILE *f = open_out("unseen_heavy.txt");
        for (size_t i = 0; i < page.n; i++)
            fprintf(f, "%s\t%" PRId64 "\n", page.items[i].id, page.items[i].score);
        close_out(f, "unseen_heavy.txt");
        hr_arena_free(&a);

        f = open_out("put_objects.txt");
        rng r;
        rng_seed(&r, opt.seed * 65537 + 3);
        for (size_t i = 0; i < PUT_OBJECTS; i++)
            fprintf(f, "%s\n", ids[zipf_story(&r)]);
        close_out(f, "put_objects.txt");

        phase_start(&p, "export", 0);
        int64_t story_sum = 0, rating_sum = 0;
        size_t heavy_n = 0;
        size_t ns = export_stories(&story_sum);
        size_t nr = export_ratings(&rating_sum, &heavy_n);
        secs = phase_end(&p, ns + nr);
        printf("EXPORT_SECS=%.1f\nEXPORT_STORIES=%zu\nEXPORT_RATINGS=%zu\nEXPORT_HEAVY_RATINGS=%zu\n"
               "EXPORT_STORY_SCORE_SUM=%" PRId64 "\nEXPORT_RATING_SCORE_SUM=%" PRId64 "\n",
               secs, ns, nr, heavy_n, story_sum, rating_sum);
        if (story_sum != rating_sum)
            fprintf(stderr,
                    "stories_load: WARNING: the stories' scores sum to %" PRId64
                    " but the ratings to %" PRId64 "\n",
                    story_sum, rating_sum);
    }

    /* 7. The unseen query again after closing and reopening the store (what
     * a restarted server sees: the memtables recovered and flushed). */
    if (!opt.queries_only) {
        double t0 = now_s();
        hr_ratings_free(ratings);
        hr_stories_free(stories);
        hr_store_close(store);
        double t1 = now_s();
        if (hr_store_open(opt.store, NULL, &store, &err) != HR_OK)
            die("cannot reopen %s: %s", opt.store, err.msg);
        stories = hr_stories_new(store, NULL);
        ratings = hr_ratings_new(store, stories);
        fprintf(stderr, "stories_load: store closed in %.1f s, reopened in %.1f s\n", t1 - t0, now_s() - t1);
        printf("CLOSE_SECS=%.1f\nREOPEN_SECS=%.1f\n", t1 - t0, now_s() - t1);
        printf("REOPEN_QUIESCE_SECS=%.1f\n", hr_store_settle(store, 600, NULL));
        run_queries("REOPENED_", true);
    }

done:;
    double t0 = now_s();
    hr_ratings_free(ratings);
    hr_stories_free(stories);
    hr_store_close(store);
    fprintf(stderr, "stories_load: store closed in %.1f s\n", now_s() - t0);
    return 0;
}
