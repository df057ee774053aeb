/* load.c — see load.h. */
#include "load/load.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"

#define DAY_MS 86400000LL
#define GROUP_EVERY 100 /* one group per this many users */

/* xorshift64*: fast, per thread, reproducible from the seed. */
static uint64_t next_u64(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static double next_unit(uint64_t *s) { /* (0, 1] */
    return ((double)(next_u64(s) >> 11) + 1.0) / 9007199254740992.0;
}

/* Zipf's law over n items by inverse CDF: a table of cumulative weights. */
typedef struct zipf {
    double *cum;
    uint64_t n;
} zipf;

static void zipf_init(zipf *z, uint64_t n, double s) {
    z->n = n;
    z->cum = hr_xcalloc(n, sizeof *z->cum);
    double total = 0;
    for (uint64_t i = 0; i < n; i++)
        z->cum[i] = total += pow((double)(i + 1), -s);
    for (uint64_t i = 0; i < n; i++)
        z->cum[i] /= total;
}

static uint64_t zipf_draw(const zipf *z, uint64_t *rng) {
    double u = next_unit(rng);
    uint64_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (z->cum[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Pareto with shape 2 and the given mean, rounded, in [1, max]. */
static uint64_t pareto_draw(uint64_t *rng, double mean, uint64_t max) {
    double x = (mean / 2.0) / sqrt(next_unit(rng));
    uint64_t d = (uint64_t)llround(x);
    if (d < 1) d = 1;
    return d > max ? max : d;
}

static const char *const verbs[] = {"greeting", "post", "photo_tag", "rsvp", "new_discussion"};

typedef struct shared {
    hr_store *store;
    hr_graph *graph;
    hr_feeds *feeds;
    const hr_fanout_options *fo;
    const hr_load_options *o;
    zipf users_by_pop, groups_by_pop;
    uint64_t n_groups;
    int64_t now;
    _Atomic uint64_t next, done, follows, activities, memberships;
    _Atomic int failed;
    hr_err err;
    pthread_mutex_t err_mu;
    const char *phase;
    uint64_t phase_total;
    struct planned_post *posts; /* phase 2, oldest first */
    uint64_t n_posts;
} shared;

/* One activity to post: who, when, and the seed of its other fields. */
typedef struct planned_post {
    int64_t time_ms;
    uint64_t user;
    uint64_t nth; /* of the user's posts */
    uint64_t seed;
} planned_post;

static void fail(shared *sh, const hr_err *err) {
    pthread_mutex_lock(&sh->err_mu);
    if (!atomic_load(&sh->failed)) sh->err = *err;
    atomic_store(&sh->failed, 1);
    pthread_mutex_unlock(&sh->err_mu);
}

static void progress(shared *sh, bool final) {
    if (!sh->o->out) return;
    uint64_t done = atomic_load(&sh->done), total = sh->phase_total ? sh->phase_total : 1;
    if (done > total) done = total;
    if (sh->o->progress) {
        int width = 40, fill = (int)(width * done / total);
        fprintf(sh->o->out, "\r%-12s [%.*s%*s] %3d%% %llu/%llu", sh->phase, fill,
                "########################################", width - fill, "", (int)(100 * done / total),
                (unsigned long long)done, (unsigned long long)total);
        if (final) fputc('\n', sh->o->out);
        fflush(sh->o->out);
    } else if (final) {
        fprintf(sh->o->out, "%s: %llu done\n", sh->phase, (unsigned long long)done);
    }
}

/* Phase 1: each user's follows and group memberships. */
static void load_user(shared *sh, uint64_t u, uint64_t *rng, hr_arena *a) {
    const hr_load_options *o = sh->o;
    uint64_t d = pareto_draw(rng, o->follows_mean, o->follows_max);
    if (d > o->users - 1) d = o->users - 1;
    uint64_t *picked = hr_arena_alloc(a, d * sizeof *picked);
    hr_slice *targets = hr_arena_alloc(a, d * sizeof *targets);
    size_t n = 0;
    for (uint64_t tries = 0; n < d && tries < d * 4; tries++) {
        uint64_t t =
            next_unit(rng) < o->popular ? zipf_draw(&sh->users_by_pop, rng) : next_u64(rng) % o->users;
        if (t == u) continue;
        bool dup = false;
        for (size_t i = 0; i < n && !dup; i++)
            dup = picked[i] == t;
        if (dup) continue;
        picked[n] = t;
        char name[32];
        int len = snprintf(name, sizeof name, "u%llu", (unsigned long long)t);
        targets[n++] = hr_arena_copy(a, hr_slice_of(name, (size_t)len));
    }
    char me[32];
    int len = snprintf(me, sizeof me, "u%llu", (unsigned long long)u);
    hr_err err = {0};
    for (size_t off = 0; off < n; off += HR_ZRANGE_LIMIT_MAX) {
        size_t chunk = n - off < HR_ZRANGE_LIMIT_MAX ? n - off : HR_ZRANGE_LIMIT_MAX;
        if (hr_graph_follow_many(sh->graph, hr_slice_of(me, (size_t)len), targets + off, chunk,
                                 sh->now - 90 * DAY_MS, &err) != HR_OK)
            return fail(sh, &err);
    }
    atomic_fetch_add(&sh->follows, n);
    /* 0..4 groups */
    unsigned groups = (unsigned)(next_u64(rng) % 5);
    for (unsigned i = 0; i < groups && sh->n_groups; i++) {
        char g[32];
        int glen = snprintf(g, sizeof g, "g%llu", (unsigned long long)zipf_draw(&sh->groups_by_pop, rng));
        hr_batch *b = hr_batch_new();
        bool fresh = false;
        int rc = hr_graph_join(sh->graph, b, hr_slice_of(g, (size_t)glen), hr_slice_of(me, (size_t)len),
                               sh->now - 90 * DAY_MS, &fresh, &err);
        hr_batch_free(b);
        if (rc != HR_OK) return fail(sh, &err);
        if (fresh) atomic_fetch_add(&sh->memberships, 1);
    }
}

/* Phase 2 posts in time order, oldest first, as a live service receives
 * them: each fan-out then adds the newest entry of every timeline it
 * touches, which is the write pattern time lists are built for (and what
 * the fan-out benchmark must measure). Each user's posts (Poisson-ish: the
 * floor of the mean, plus one with the remainder's chance) get times over
 * the last 60 days and seeds of their own, drawn from the user's stream so
 * that a run is reproducible whatever the threads do. */
static int post_order(const void *pa, const void *pb) {
    const planned_post *x = pa, *y = pb;
    if (x->time_ms != y->time_ms) return x->time_ms < y->time_ms ? -1 : 1;
    return x->user < y->user ? -1 : x->user > y->user;
}

static void plan_posts(shared *sh) {
    double mean = sh->o->activities;
    size_t cap = (size_t)(sh->o->users * (mean + 1)) + 1, n = 0;
    planned_post *posts = hr_xcalloc(cap, sizeof *posts);
    for (uint64_t u = 0; u < sh->o->users; u++) {
        uint64_t rng = (sh->o->seed * 0x9E3779B97F4A7C15ULL + 0x51ED) ^ (u * 0xD1B54A32D192ED03ULL);
        if (rng == 0) rng = 1;
        uint64_t k = (uint64_t)mean + (next_unit(&rng) <= mean - floor(mean) ? 1 : 0);
        for (uint64_t i = 0; i < k && n < cap; i++)
            posts[n++] =
                (planned_post){.time_ms = sh->now - (int64_t)(next_u64(&rng) % (uint64_t)(60 * DAY_MS)),
                               .user = u,
                               .nth = i,
                               .seed = next_u64(&rng) | 1};
    }
    qsort(posts, n, sizeof *posts, post_order);
    sh->posts = posts;
    sh->n_posts = n;
}

/* Phase 2: post number `index` of the plan. */
static void post_one(shared *sh, uint64_t index, uint64_t *unused, hr_arena *a) {
    const planned_post *p = &sh->posts[index];
    uint64_t rng = p->seed;
    char me[32];
    int len = snprintf(me, sizeof me, "u%llu", (unsigned long long)p->user);
    hr_slice *groups = NULL;
    size_t n_groups = 0;
    hr_err err = {0};
    if (hr_graph_all(sh->graph, HR_GRAPH_GROUPS, hr_slice_of(me, (size_t)len), 10, a, &groups, &n_groups,
                     &err) != HR_OK)
        return fail(sh, &err);
    char object[48], target[48], data[64];
    snprintf(object, sizeof object, "object:%llu", (unsigned long long)(next_u64(&rng) % 1000000));
    hr_activity in = {.actor = hr_slice_of(me, (size_t)len),
                      .verb = hr_slice_str(verbs[next_u64(&rng) % (sizeof verbs / sizeof verbs[0])]),
                      .object = hr_slice_str(object),
                      .time_ms = p->time_ms};
    if (n_groups && next_u64(&rng) % 5 == 0) {
        hr_slice g = groups[next_u64(&rng) % n_groups];
        snprintf(target, sizeof target, "group:%.*s", (int)g.len, g.ptr);
        in.target = hr_slice_str(target);
    }
    int dlen = snprintf(data, sizeof data, "{\"text\":\"synthetic %llu\"}", (unsigned long long)p->nth);
    in.data = hr_slice_of(data, (size_t)dlen);
    hr_activity out;
    bool dup;
    if (hr_feeds_create(sh->feeds, &in, sh->now, a, &out, &dup, &err) != HR_OK) return fail(sh, &err);
    atomic_fetch_add(&sh->activities, 1);
}

typedef void (*per_user_fn)(shared *sh, uint64_t u, uint64_t *rng, hr_arena *a);

typedef struct worker_arg {
    shared *sh;
    per_user_fn fn;
    unsigned index;
} worker_arg;

static void *users_worker(void *p) {
    worker_arg *w = p;
    shared *sh = w->sh;
    uint64_t rng = sh->o->seed * 0x9E3779B97F4A7C15ULL + 1;
    for (;;) {
        uint64_t u = atomic_fetch_add(&sh->next, 1);
        if (u >= sh->phase_total || atomic_load(&sh->failed)) break;
        /* A user's own stream, whatever thread draws it: reproducible runs. */
        uint64_t urng = rng ^ (u * 0xD1B54A32D192ED03ULL);
        if (urng == 0) urng = 1;
        hr_arena a = HR_ARENA_INIT;
        w->fn(sh, u, &urng, &a);
        hr_arena_free(&a);
        atomic_fetch_add(&sh->done, 1);
        if (w->index == 0 && u % 97 == 0) progress(sh, false);
    }
    return NULL;
}

static void *drain_worker(void *p) {
    worker_arg *w = p;
    shared *sh = w->sh;
    char consumer[32];
    snprintf(consumer, sizeof consumer, "load-%u", w->index);
    hr_err err = {0};
    int idle = 0;
    while (!atomic_load(&sh->failed) && idle < 3) {
        size_t done = 0;
        if (hr_fanout_run(sh->feeds, sh->fo, consumer, 8, &done, &err) != HR_OK) return fail(sh, &err), NULL;
        atomic_fetch_add(&sh->done, done);
        idle = done ? 0 : idle + 1;
        if (w->index == 0) progress(sh, false);
    }
    return NULL;
}

static double run_phase(shared *sh, const char *name, uint64_t total, void *(*fn)(void *),
                        per_user_fn per_user) {
    sh->phase = name;
    sh->phase_total = total;
    atomic_store(&sh->next, 0);
    atomic_store(&sh->done, 0);
    unsigned n = sh->o->threads ? sh->o->threads : 1;
    pthread_t *t = hr_xcalloc(n, sizeof *t);
    worker_arg *args = hr_xcalloc(n, sizeof *args);
    uint64_t t0 = hr_mono_ns();
    for (unsigned i = 0; i < n; i++) {
        args[i] = (worker_arg){sh, per_user, i};
        pthread_create(&t[i], NULL, fn, &args[i]);
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    double secs = (double)(hr_mono_ns() - t0) / 1e9;
    progress(sh, true);
    free(t);
    free(args);
    return secs;
}

#define SETTLE_MAX_S 3600.0 /* far past any compaction of a load */

double hr_load_settle(hr_store *store, FILE *out, const char *what, bool *settled) {
    *settled = true;
    if (!hr_store_caps_of(store)->settles) return 0;
    if (out) fprintf(out, "herald load: waiting for %s\n", what);
    return hr_store_settle(store, SETTLE_MAX_S, settled);
}

int hr_load_run(hr_store *store, hr_graph *graph, hr_feeds *feeds, const hr_fanout_options *fo,
                const hr_load_options *o, hr_load_stats *stats, hr_err *err) {
    memset(stats, 0, sizeof *stats);
    if (o->users < 2 && !o->fanout_only) return hr_err_set(err, HR_EINVAL, "--users must be at least 2");
    shared *sh = hr_xcalloc(1, sizeof *sh);
    sh->store = store;
    sh->graph = graph;
    sh->feeds = feeds;
    sh->fo = fo;
    sh->o = o;
    sh->now = hr_now_ms();
    sh->n_groups = o->users / GROUP_EVERY;
    pthread_mutex_init(&sh->err_mu, NULL);
    zipf_init(&sh->users_by_pop, o->users, 1.0);
    if (sh->n_groups) zipf_init(&sh->groups_by_pop, sh->n_groups, 1.0);

    if (!o->fanout_only) {
        stats->graph_s = run_phase(sh, "graph", o->users, users_worker, load_user);
        if (!atomic_load(&sh->failed)) {
            plan_posts(sh);
            stats->activities_s = run_phase(sh, "activities", sh->n_posts, users_worker, post_one);
        }
    }
    /* The graph phase can leave compactions behind it. The fan-out is
     * timed on a settled store, so that its rate is its own work (with the
     * flushes and compactions of its own entries that run while it drains),
     * not the graph's. */
    if (!atomic_load(&sh->failed) && !o->no_fanout) {
        bool settled;
        stats->settle_s =
            hr_load_settle(store, o->out, "the graph's compactions before the fan-out", &settled);
    }
    uint64_t before = hr_fanout_entries_total();
    if (!atomic_load(&sh->failed) && !o->no_fanout) {
        int64_t depth = 0, oldest;
        hr_fanout_queue_info(feeds, &depth, &oldest, err);
        stats->fanout_s = run_phase(sh, "fan-out jobs", (uint64_t)depth, drain_worker, NULL);
    }
    stats->users = o->fanout_only ? 0 : o->users;
    stats->follows = atomic_load(&sh->follows);
    stats->groups = sh->n_groups;
    stats->memberships = atomic_load(&sh->memberships);
    stats->activities = atomic_load(&sh->activities);
    stats->fanout_entries = hr_fanout_entries_total() - before;
    int64_t big = 0;
    if (!atomic_load(&sh->failed) && hr_feeds_big_count(feeds, &big, err) == HR_OK)
        stats->big_accounts = (uint64_t)big;
    int rc = HR_OK;
    if (atomic_load(&sh->failed)) {
        *err = sh->err;
        rc = err->code ? err->code : HR_EINTERNAL;
    }
    free(sh->posts);
    free(sh->users_by_pop.cum);
    free(sh->groups_by_pop.cum);
    pthread_mutex_destroy(&sh->err_mu);
    free(sh);
    return rc;
}
