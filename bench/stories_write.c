/* stories_write.c — the write side of the stories benchmark's loader: the
 * dataset's model (seeded generators, Zipf draws of stories, scores, rating
 * times, each story's URL and HTML) and the worker threads that create the
 * stories and upsert the ratings (phases 1 to 4), with their progress.
 *
 * The model is kept in one place because other parts replay it: the story
 * ids come from the URLs (--upserts-only recomputes them), the content from
 * (seed, story) (the export writes it again), and each thread's ratings from
 * (seed, thread). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/ratings.h"
#include "core/stories.h"
#include "stories_load.h"

static atomic_size_t progress; /* the running phase's count, for its progress lines */

/* ---- Random numbers (splitmix64 / xoshiro256**, per thread) ------------- */

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s;
    uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return res;
}

static double rng_unit(rng *r) {
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}
uint64_t rng_below(rng *r, uint64_t n) {
    return (uint64_t)(rng_unit(r) * (double)n) % n;
}

/* A story index drawn from the Zipf distribution. */
size_t zipf_story(rng *r) {
    double u = rng_unit(r);
    size_t lo = 0, hi = n_stories - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return perm[lo];
}

/* 1 (60 %), -1 (15 %), 0 (25 %). */
int draw_score(rng *r) {
    uint64_t x = rng_below(r, 100);
    return x < 60 ? 1 : x < 75 ? -1 : 0;
}

/* A rating time between the story's time and the end of the span. */
int64_t draw_time(rng *r, size_t story) {
    int64_t t0 = story_time[story];
    return t0 + (int64_t)rng_below(r, (uint64_t)(END_MS - t0) + 1);
}

/* ---- Content ------------------------------------------------------------- */

static const char *const words[] = {
    "the",      "of",       "and",      "a",       "to",     "in",       "is",        "you",      "that",
    "it",       "he",       "was",      "for",     "on",     "are",      "as",        "with",     "his",
    "they",     "at",       "be",       "this",    "have",   "from",     "or",        "one",      "had",
    "by",       "word",     "but",      "not",     "what",   "all",      "were",      "we",       "when",
    "your",     "can",      "said",     "there",   "use",    "an",       "each",      "which",    "she",
    "do",       "how",      "their",    "if",      "will",   "up",       "other",     "about",    "out",
    "many",     "then",     "them",     "these",   "so",     "some",     "her",       "would",    "make",
    "like",     "him",      "into",     "time",    "has",    "look",     "two",       "more",     "write",
    "go",       "see",      "number",   "no",      "way",    "could",    "people",    "my",       "than",
    "first",    "water",    "been",     "call",    "who",    "oil",      "its",       "now",      "find",
    "long",     "down",     "day",      "did",     "get",    "come",     "made",      "may",      "part",
    "server",   "database", "network",  "release", "kernel", "startup",  "market",    "election", "climate",
    "research", "science",  "football", "review",  "launch", "security", "privacy",   "browser",  "energy",
    "policy",   "report",   "council",  "company", "museum", "festival", "interview", "analysis", "opinion",
    "weather",  "storage",  "latency",  "cluster",
};
#define N_WORDS (sizeof words / sizeof words[0])

/* Story i's content, deterministic in (seed, i), 1024..2048 bytes of HTML
 * with no tab, newline or backslash (PostgreSQL COPY text format as is). */
size_t make_content(size_t i, char *out, size_t cap) {
    uint64_t x = opt.seed * 1000003u + i;
    rng r;
    rng_seed(&r, splitmix(&x));
    size_t target = 1024 + rng_below(&r, 1025), n = 0;
    n += (size_t)snprintf(out + n, cap - n,
                          "<!doctype html><html><head><meta charset=\"utf-8\"><title>Story %zu</title>"
                          "</head><body><article><h1>",
                          i);
    for (int w = 0; w < 6; w++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", w ? " " : "", words[rng_below(&r, N_WORDS)]);
    n += (size_t)snprintf(out + n, cap - n, "</h1><p>");
    const char *tail = "</p></article></body></html>";
    size_t tail_len = strlen(tail);
    while (n + tail_len + 24 < target) {
        const char *w = words[rng_below(&r, N_WORDS)];
        if (rng_below(&r, 14) == 0)
            n += (size_t)snprintf(out + n, cap - n, ".</p><p>%s", w);
        else
            n += (size_t)snprintf(out + n, cap - n, " %s", w);
    }
    memcpy(out + n, tail, tail_len);
    n += tail_len;
    out[n] = '\0';
    return n;
}

size_t make_url(size_t i, char *out, size_t cap) {
    return (size_t)snprintf(out, cap, "https://site%zu.example/story/%zu", i % 1000, i);
}

/* ---- Progress ------------------------------------------------------------ */

void phase_start(phase *p, const char *name, size_t total) {
    p->name = name;
    p->total = total;
    p->t0 = p->last_t = now_s();
    p->last_n = 0;
    atomic_store(&progress, 0);
    if (total) fprintf(stderr, "stories_load: %s: %zu to do\n", name, total);
}

/* Print progress every `every` seconds until done (or a failure). */
static void phase_watch(phase *p, double every, bool (*done)(void)) {
    while (!done()) {
        usleep(100000);
        double t = now_s();
        if (t - p->last_t < every) continue;
        size_t n = atomic_load(&progress);
        double rate = (double)(n - p->last_n) / (t - p->last_t);
        double avg = (double)n / (t - p->t0);
        double eta = avg > 0 && p->total ? (double)(p->total - n) / avg : 0;
        if (p->total)
            fprintf(stderr, "stories_load: %s: %zu/%zu (%.1f%%), %.0f/s now, %.0f/s average, ETA %.0f s\n",
                    p->name, n, p->total, 100.0 * (double)n / (double)p->total, rate, avg, eta);
        else
            fprintf(stderr, "stories_load: %s: %zu, %.0f/s now, %.0f/s average\n", p->name, n, rate, avg);
        p->last_t = t;
        p->last_n = n;
    }
}

double phase_end(phase *p, size_t n) {
    double secs = now_s() - p->t0;
    fprintf(stderr, "stories_load: %s: %zu in %.1f s, %.0f/s\n", p->name, n, secs, (double)n / secs);
    return secs;
}

/* ---- Worker threads ------------------------------------------------------- */

worker *workers;
static atomic_int running;

static bool workers_done(void) {
    return atomic_load(&running) == 0 || atomic_load(&failed) != 0;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    w->fn(w);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

void run_workers(void *(*fn)(void *), phase *p, size_t total, double every) {
    atomic_store(&running, opt.threads);
    for (int t = 0; t < opt.threads; t++) {
        worker *w = &workers[t];
        w->id = t;
        w->fn = fn;
        w->from = total * (size_t)t / (size_t)opt.threads;
        w->to = total * (size_t)(t + 1) / (size_t)opt.threads;
        w->done = 0;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) die("pthread_create: %s", strerror(errno));
    }
    phase_watch(p, every, workers_done);
    for (int t = 0; t < opt.threads; t++)
        pthread_join(workers[t].th, NULL);
    if (atomic_load(&failed)) die("%s failed (see above)", p->name);
}

void *create_stories(void *arg) {
    worker *w = arg;
    char url[128];
    char *content = malloc(4096);
    hr_arena a = HR_ARENA_INIT;
    for (size_t i = (size_t)w->id; i < n_stories && !atomic_load(&failed); i += (size_t)opt.threads) {
        hr_err err = {0};
        size_t ul = make_url(i, url, sizeof url);
        size_t cl = make_content(i, content, 4096);
        hr_story st;
        bool dup = false;
        int rc = hr_stories_create(stories, hr_slice_of(url, ul), hr_slice_of(content, cl), story_time[i], &a,
                                   &st, &dup, &err);
        if (rc == HR_OK && dup)
            rc = hr_err_set(&err, HR_ECONFLICT, "story %zu (%s) is a duplicate of %s", i, url, st.id);
        if (rc != HR_OK) {
            fail("hr_stories_create", rc, &err);
            break;
        }
        memcpy(ids[i], st.id, HR_STORY_ID_LEN + 1);
        hr_arena_reset(&a);
        atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
    }
    hr_arena_free(&a);
    free(content);
    return NULL;
}

int put_one(worker *w, hr_arena *a, const char *subject, size_t story, int score, int64_t time_ms,
            bool sample) {
    hr_err err = {0};
    hr_rating out;
    bool applied;
    int64_t sum;
    uint64_t t0 = sample ? now_ns() : 0;
    int rc = hr_ratings_put(ratings, hr_slice_str(subject), hr_slice_of(ids[story], HR_STORY_ID_LEN), score,
                            time_ms, a, &out, &applied, &sum, &err);
    if (sample && w->n_lat < w->cap_lat) w->lat[w->n_lat++] = now_ns() - t0;
    hr_arena_reset(a);
    if (rc != HR_OK) fail("hr_ratings_put", rc, &err);
    return rc;
}

/* Ratings [from, to) of the bulk model; the thread's generator depends on
 * (seed, thread) only. */
void *put_ratings(void *arg) {
    worker *w = arg;
    rng r;
    rng_seed(&r, opt.seed * 7919 + 1 + (uint64_t)w->id);
    hr_arena a = HR_ARENA_INIT;
    char subject[32];
    for (size_t i = w->from; i < w->to && !atomic_load(&failed); i++) {
        snprintf(subject, sizeof subject, "u%" PRIu64, rng_below(&r, n_members));
        size_t s = zipf_story(&r);
        if (put_one(w, &a, subject, s, draw_score(&r), draw_time(&r, s), i % SAMPLE_EVERY == 0) != HR_OK)
            break;
        w->done++;
        atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
    }
    hr_arena_free(&a);
    return NULL;
}

/* The time of a rating of the steady-state phase: back-dated as in the load,
 * or (live) the phase's clock, END_MS at its start. */
static int64_t timed_time(rng *r, size_t story, const worker *w) {
    if (!w->live) return draw_time(r, story);
    return END_MS + (int64_t)((now_s() - (w->until - opt.duration)) * 1000.0);
}

/* The same model until w->until (the steady-state phase). The live run
 * draws its own subjects and stories, not a replay of the back-dated run's
 * (which would make every one of them a re-rating). */
static void *put_timed(void *arg) {
    worker *w = arg;
    rng r;
    rng_seed(&r, opt.seed * 104729 + 17 + (uint64_t)w->id + (w->live ? 7919 * 64 : 0));
    hr_arena a = HR_ARENA_INIT;
    char subject[32];
    for (size_t i = 0; !atomic_load(&failed); i++) {
        if ((i & 63) == 0 && now_s() >= w->until) break;
        snprintf(subject, sizeof subject, "u%" PRIu64, rng_below(&r, n_members));
        size_t s = zipf_story(&r);
        if (put_one(w, &a, subject, s, draw_score(&r), timed_time(&r, s, w), true) != HR_OK) break;
        w->done++;
        atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
    }
    hr_arena_free(&a);
    return NULL;
}

/* ---- Timed upserts (phase 4) ----------------------------------------------- */

/* The latencies the workers sampled, summarised; their samples are cleared. */
stats workers_latency(void) {
    size_t n = 0;
    for (int t = 0; t < opt.threads; t++)
        n += workers[t].n_lat;
    uint64_t *all = malloc((n ? n : 1) * sizeof *all);
    if (!all) die("out of memory");
    n = 0;
    for (int t = 0; t < opt.threads; t++) {
        memcpy(all + n, workers[t].lat, workers[t].n_lat * sizeof *all);
        n += workers[t].n_lat;
        workers[t].n_lat = 0;
    }
    stats s = summarise(all, n);
    free(all);
    return s;
}

/* Phase 4: the upsert model on the loaded store for --duration seconds, its
 * ratings back-dated as the load's or (live) stamped with the phase's clock.
 * Prints UPSERTS_PER_S, UPSERT_* (live: LIVE_UPSERTS_PER_S, LIVE_UPSERT_*). */
void timed_upserts(bool live) {
    const char *pre = live ? "LIVE_" : "";
    phase p;
    phase_start(&p, live ? "upserts (timed, live)" : "upserts (timed, back-dated)", 0);
    double until = now_s() + opt.duration;
    for (int t = 0; t < opt.threads; t++) {
        workers[t].until = until;
        workers[t].live = live;
        size_t cap = (size_t)(opt.duration * 200000) + 16;
        if (cap > workers[t].cap_lat) {
            free(workers[t].lat);
            workers[t].lat = malloc(cap * sizeof(uint64_t));
            workers[t].cap_lat = cap;
        }
    }
    opcount c0 = ops_now();
    double tcpu0 = cpu_s();
    run_workers(put_timed, &p, 0, 5);
    double secs = now_s() - p.t0;
    double cpu = cpu_s() - tcpu0;
    opcount c1 = ops_now();
    size_t done = 0;
    for (int t = 0; t < opt.threads; t++)
        done += workers[t].done;
    stats s = workers_latency();
    double cpu_us = done ? cpu * 1e6 / (double)done : 0;
    fprintf(stderr,
            "stories_load: %s: %zu in %.1f s, %.0f/s, %.1f us of CPU each, p50 %.3f ms, p99 %.3f ms\n",
            p.name, done, secs, (double)done / secs, cpu_us, s.p50, s.p99);
    printf("%sUPSERT_THREADS=%d\n%sUPSERT_SECS=%.1f\n%sUPSERT_DONE=%zu\n%sUPSERTS_PER_S=%.0f\n%sUPSERT_CPU_"
           "US=%.1f\n",
           pre, opt.threads, pre, secs, pre, done, pre, (double)done / secs, pre, cpu_us);
    char key[32];
    snprintf(key, sizeof key, "%sUPSERT", pre);
    print_ops(key, &c0, &c1, done);
    print_stats(key, &s);
    print_caches(key);
}
