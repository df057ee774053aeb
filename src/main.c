/* main.c — the herald program: parses the command line and wires the parts
 * together (store -> core -> api routes -> http server). Nothing else lives
 * here.
 *
 *   herald serve [options]                 run the server
 *   herald token USER --secret-file FILE   print a user token
 *   herald --help | --version
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/log.h"
#include "core/auth.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/fanout.h"
#include "core/feeds.h"
#include "core/graph.h"
#include "core/members.h"
#include "core/ratings.h"
#include "core/reading.h"
#include "core/stories.h"
#include "http/http.h"
#include "load/load.h"
#include "store/store.h"
#include <unistd.h>

#define HERALD_VERSION "0.1.0"

/* Exit statuses: 0 ok, 1 runtime failure, 2 bad usage or configuration. */
enum { EXIT_USAGE = 2 };

static void usage(FILE *f) {
    fprintf(
        f,
        "herald %s — unique counters, activity feeds, social reading, stories and ratings over HTTP/JSON\n"
        "\n"
        "usage:\n"
        "  herald serve [--listen HOST:PORT] [--store URI] [--secret-file FILE]\n"
        "               [--threads N] [--sync] [--set NAME=VALUE]... [--config FILE]\n"
        "  herald token USER --secret-file FILE   print a token that may act as USER\n"
        "  herald load [--users N] [--activities N] [--seed N] [--store URI] [--threads N]\n"
        "              [--no-fanout | --fanout-only] [--set NAME=VALUE]...\n"
        "              build a synthetic social dataset: N users (default 10000) following\n"
        "              ~450 each (power law), groups, N x activities posts over 60 days,\n"
        "              fanned out once RocksDB has compacted the graph (so the fan-out's\n"
        "              time is its own); a progress bar on a terminal; then waits for\n"
        "              RocksDB's compactions of the load, so that a server started next\n"
        "              reads a settled store. --no-fanout leaves the fan-out jobs queued;\n"
        "              --fanout-only builds nothing and drains (timed) the jobs a store\n"
        "              holds: one dataset fanned out several ways\n"
        "  herald --help | --version\n"
        "\n"
        "serve options (each is also a setting: --listen X is --set listen=X):\n"
        "  --listen HOST:PORT   where to serve HTTP (default 127.0.0.1:8080)\n"
        "  --store URI          rocksdb:PATH (default rocksdb:./data) or\n"
        "                       redis://HOST:PORT[,HOST:PORT...] (a Redis Cluster, which\n"
        "                       any number of herald servers may share)\n"
        "  --secret-file FILE   the admin key; user tokens are HMACs under it. Without it\n"
        "                       every caller is the admin, so herald listens on loopback only\n"
        "  --threads N          HTTP I/O threads (default: one per core; four per core on\n"
        "                       Redis Cluster, where a request mostly waits on the network)\n"
        "  --sync               fsync the RocksDB WAL before acknowledging a write\n"
        "  --set NAME=VALUE     any setting below\n"
        "  --config FILE        settings as lines of NAME = VALUE ('#' starts a comment);\n"
        "                       read first, so flags given on the command line win\n"
        "\n"
        "settings (durations take ms, s, m, h, d; sizes take k, m, g):\n",
        HERALD_VERSION);
    hr_config_print_help(f);
    fprintf(f, "\n`serve` prints one line containing \"ready\" when it takes requests, and exits\n"
               "cleanly on SIGTERM or SIGINT after finishing the requests in flight.\n");
}

/* ---- serve ---------------------------------------------------------------- */

/* The feed and fan-out settings, checked once for serve and load. */
static bool feed_settings_valid(const hr_config *cfg) {
    if (cfg->timeline_max < 1 || cfg->timeline_max > HR_ZRANGE_LIMIT_MAX || cfg->timeline_ttl < 1 ||
        cfg->fanout_batch < 1 || cfg->fanout_batch > HR_ZRANGE_LIMIT_MAX || cfg->fanout_lease < 1 ||
        cfg->fanout_workers > 64 || cfg->fanout_threshold > INT64_MAX || cfg->fanout_bulk > 100000000 ||
        !hr_ident_valid(hr_slice_str(cfg->fanout_queue))) {
        fprintf(stderr,
                "herald: timeline_max and fanout_batch must be 1..%u, timeline_ttl and fanout_lease at "
                "least 1ms, fanout_workers at most 64, fanout_bulk at most 100000000, fanout_queue an "
                "identifier\n",
                HR_ZRANGE_LIMIT_MAX);
        return false;
    }
    return true;
}

#define FEEDS_OPTIONS(cfg)                                                                                   \
    .ns = "", .fanout_threshold = (int64_t)(cfg).fanout_threshold, .timeline_ttl_ms = (cfg).timeline_ttl,    \
    .timeline_max = (size_t)(cfg).timeline_max, .queue = (cfg).fanout_queue
#define FANOUT_OPTIONS(cfg)                                                                                  \
    .workers = (unsigned)(cfg).fanout_workers, .lease_ms = (cfg).fanout_lease,                               \
    .batch = (size_t)(cfg).fanout_batch, .throttle_ms = (cfg).fanout_throttle, .poll_ms = 100,               \
    .bulk = (size_t)(cfg).fanout_bulk

/* Split "HOST:PORT" or "[V6]:PORT" into host and port. */
static int split_listen(const char *listen, char *host, size_t host_cap, uint16_t *port, hr_err *err) {
    const char *colon = strrchr(listen, ':');
    if (colon == NULL) return hr_err_set(err, HR_EINVAL, "--listen takes HOST:PORT, got '%s'", listen);
    const char *h = listen;
    size_t hlen = (size_t)(colon - listen);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') h++, hlen -= 2;
    uint64_t p;
    if (hlen == 0 || hlen >= host_cap || hr_parse_uint(colon + 1, &p) != HR_OK || p > 65535)
        return hr_err_set(err, HR_EINVAL, "--listen takes HOST:PORT with a port 0..65535, got '%s'", listen);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t)p;
    return HR_OK;
}

static bool is_loopback(const char *host) {
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 || strcmp(host, "localhost") == 0;
}

/* The transport's credential check: the admin key or a user token. */
static int authenticate(void *ctx, hr_slice credential, hr_principal *out) {
    hr_auth_result r;
    if (hr_auth_check(ctx, credential, &r) != HR_OK) return HR_EUNAUTH;
    memset(out, 0, sizeof *out);
    out->admin = r.admin;
    if (!r.admin) {
        if (!hr_ident_valid(r.user)) return HR_EUNAUTH;
        memcpy(out->user, r.user.ptr, r.user.len);
    }
    return HR_OK;
}

/* Apply the command line to cfg: --config files first, then every other flag
 * in order. Returns 0, or EXIT_USAGE after printing why. */
static int parse_serve_args(int argc, char **argv, hr_config *cfg) {
    hr_err err = {0};
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--config") != 0) continue;
        if (i + 1 >= argc) return fprintf(stderr, "herald: --config needs a FILE\n"), EXIT_USAGE;
        if (hr_config_load_file(cfg, argv[++i], &err) != HR_OK)
            return fprintf(stderr, "herald: %s\n", err.msg), EXIT_USAGE;
    }
    static const struct {
        const char *flag, *setting;
    } valued[] = {
        {"--listen", "listen"},   {"--store", "store"},         {"--secret-file", "secret_file"},
        {"--threads", "threads"}, {"--log-level", "log_level"},
    };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc = HR_OK;
        if (strcmp(a, "--config") == 0) {
            i++;
            continue;
        }
        if (strcmp(a, "--sync") == 0) {
            rc = hr_config_set(cfg, "sync", "true", &err);
        } else if (strcmp(a, "--set") == 0) {
            if (i + 1 >= argc) return fprintf(stderr, "herald: --set needs NAME=VALUE\n"), EXIT_USAGE;
            rc = hr_config_set_pair(cfg, argv[++i], &err);
        } else {
            const char *setting = NULL;
            for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
                if (strcmp(a, valued[k].flag) == 0) setting = valued[k].setting;
            if (setting == NULL)
                return fprintf(stderr, "herald: unknown option '%s' (see herald --help)\n", a), EXIT_USAGE;
            if (i + 1 >= argc) return fprintf(stderr, "herald: %s needs a value\n", a), EXIT_USAGE;
            rc = hr_config_set(cfg, setting, argv[++i], &err);
        }
        if (rc != HR_OK) return fprintf(stderr, "herald: %s\n", err.msg), EXIT_USAGE;
    }
    return 0;
}

/* The I/O threads when --threads is not given: one per core keeps the cores
 * busy when a request is CPU work in the process (RocksDB). On Redis Cluster
 * a request mostly waits for its round trips, and one thread per core left
 * the cores idle: home timeline pages a second grew with the threads up to
 * four per core, and no further (docs/DESIGN.md, "Measured decisions"). */
static unsigned default_io_threads(const hr_store *store) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = cores > 0 ? (unsigned)cores : 1;
    return hr_store_caps_of(store)->remote ? 4 * n : n;
}

static int serve(int argc, char **argv) {
    hr_config cfg;
    hr_config_init(&cfg);
    int status = parse_serve_args(argc, argv, &cfg);
    hr_err err = {0};
    char host[256];
    uint16_t port = 0;
    hr_auth *auth = NULL;
    hr_store *store = NULL;
    hr_counters *counters = NULL;
    hr_stories *stories = NULL;
    hr_route *routes = NULL;
    hr_ratings *ratings = NULL;
    hr_members *members = NULL;
    hr_graph *graph = NULL;
    hr_feeds *feeds = NULL;
    hr_fanout *fanout = NULL;
    hr_reading *reading = NULL;
    hr_reactions *reactions = NULL;
    hr_profiles *profiles = NULL;
    hr_http_server *server = NULL;
    if (status != 0) goto done;

    hr_log_level level;
    if (hr_log_parse_level(cfg.log_level, &level) != 0) {
        fprintf(stderr, "herald: log_level must be debug, info, warn or error\n");
        status = EXIT_USAGE;
        goto done;
    }
    hr_log_set_level(level);
    if (split_listen(cfg.listen, host, sizeof host, &port, &err) != HR_OK) {
        fprintf(stderr, "herald: %s\n", err.msg);
        status = EXIT_USAGE;
        goto done;
    }
    if (cfg.secret_file[0] != '\0') {
        if (hr_auth_from_file(cfg.secret_file, &auth, &err) != HR_OK) {
            fprintf(stderr, "herald: %s\n", err.msg);
            status = EXIT_USAGE;
            goto done;
        }
    } else if (!is_loopback(host)) {
        /* Protected mode: without a secret every caller is the admin. */
        fprintf(stderr,
                "herald: refusing to listen on %s without a secret: with no --secret-file every\n"
                "caller acts as the admin. Give --secret-file FILE, or listen on 127.0.0.1.\n",
                cfg.listen);
        status = EXIT_USAGE;
        goto done;
    }

    /* SIGINT and SIGTERM are taken by sigwait below; block them before any
     * thread starts so that every thread inherits the mask. A client that
     * hangs up must not kill the server. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    hr_store_options sopts = hr_config_store_options(&cfg);
    if (hr_store_open(cfg.store, &sopts, &store, &err) != HR_OK) {
        fprintf(stderr, "herald: cannot open store %s: %s\n", cfg.store, err.msg);
        status = 1;
        goto done;
    }
    if (cfg.counter_ttl < 1 || cfg.counter_exact_limit < 1 || cfg.counter_exact_limit > HR_EXACT_LIMIT_MAX) {
        fprintf(stderr, "herald: counter_ttl must be at least 1ms and counter_exact_limit 1..%d\n",
                HR_EXACT_LIMIT_MAX);
        status = EXIT_USAGE;
        goto done;
    }
    hr_counter_settings defaults = {cfg.counter_ttl, (int64_t)cfg.counter_exact_limit};
    counters = hr_counters_new(store, defaults);
    if (cfg.story_content_max < 1 || cfg.story_content_max > HR_VALUE_MAX / 2) {
        fprintf(stderr, "herald: story_content_max must be 1..%u bytes\n", HR_VALUE_MAX / 2);
        status = EXIT_USAGE;
        goto done;
    }
    if (cfg.activity_data_max < 1 || cfg.activity_data_max > HR_VALUE_MAX / 8) {
        fprintf(stderr, "herald: activity_data_max must be 1..%u bytes\n", HR_VALUE_MAX / 8);
        status = EXIT_USAGE;
        goto done;
    }
    hr_stories_options story_opts = {.ns = "", .content_max = (size_t)cfg.story_content_max};
    stories = hr_stories_new(store, &story_opts);
    ratings = hr_ratings_new(store, stories);
    members = hr_members_new(store, "");
    if (!feed_settings_valid(&cfg)) {
        status = EXIT_USAGE;
        goto done;
    }
    graph = hr_graph_new(store, "");
    feeds = hr_feeds_new(store, graph, &(hr_feeds_options){FEEDS_OPTIONS(cfg)});
    fanout = hr_fanout_start(feeds, &(hr_fanout_options){FANOUT_OPTIONS(cfg)});
    if (cfg.reading_ttl < 1) {
        fprintf(stderr, "herald: reading_ttl must be at least 1ms\n");
        status = EXIT_USAGE;
        goto done;
    }
    hr_reading_options reading_opts = {.ns = "", .ttl_ms = cfg.reading_ttl};
    reading = hr_reading_new(store, graph, &reading_opts);
    reactions = hr_reactions_new(store, "");
    profiles = hr_profiles_new(store, "");
    hr_app app = {.store = store,
                  .counters = counters,
                  .config = &cfg,
                  .stories = stories,
                  .ratings = ratings,
                  .members = members,
                  .graph = graph,
                  .feeds = feeds,
                  .reading = reading,
                  .reactions = reactions,
                  .profiles = profiles};

    hr_http_config hcfg = {0};
    hcfg.host = host;
    hcfg.port = port;
    hcfg.threads = cfg.threads ? (unsigned)cfg.threads : default_io_threads(store);
    hcfg.body_max = cfg.body_max;
    hcfg.timeout_s = (unsigned)((cfg.timeout + 999) / 1000);
    hcfg.max_connections = (unsigned)cfg.max_connections;
    routes = hr_api_routes(&cfg, &hcfg.n_routes);
    hcfg.routes = routes;
    hcfg.app = &app;
    if (auth) {
        hcfg.authenticate = authenticate;
        hcfg.auth_ctx = auth;
    }
    if (hr_http_start(&hcfg, &server, &err) != HR_OK) {
        fprintf(stderr, "herald: cannot serve on %s: %s\n", cfg.listen, err.msg);
        status = 1;
        goto done;
    }
    bool v6 = strchr(host, ':') != NULL;
    printf("herald ready: listening on http://%s%s%s:%u (store %s, %u I/O threads%s)\n", v6 ? "[" : "", host,
           v6 ? "]" : "", (unsigned)hr_http_port(server), cfg.store, hcfg.threads,
           auth ? ", tokens required" : ", no secret: loopback only");
    fflush(stdout);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    hr_info("%s received: finishing requests in flight", sig == SIGINT ? "SIGINT" : "SIGTERM");

done:
    hr_http_stop(server);
    hr_fanout_stop(fanout);
    hr_reactions_free(reactions);
    hr_profiles_free(profiles);
    hr_reading_free(reading);
    hr_feeds_free(feeds);
    hr_graph_free(graph);
    hr_members_free(members);
    hr_ratings_free(ratings);
    hr_stories_free(stories);
    free(routes);
    hr_counters_free(counters);
    hr_store_close(store);
    hr_auth_free(auth);
    hr_config_free(&cfg);
    if (server) hr_info("stopped");
    return status;
}

/* ---- load ----------------------------------------------------------------- */

/* herald load [--users N] [--activities N] [--seed N] [serve's --store, --set,
 * --config, --threads]: the loader's own flags are taken out first, the rest
 * are settings (fanout_threshold decides who is big while loading). */
static int load(int argc, char **argv) {
    hr_load_options lo = {.users = 10000,
                          .follows_mean = 450,
                          .follows_max = 5000,
                          .popular = 0.1,
                          .activities = 1,
                          .threads = 2,
                          .seed = 1,
                          .out = stderr,
                          .progress = isatty(2)};
    char **rest = hr_xcalloc((size_t)argc + 1, sizeof *rest);
    int n_rest = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--no-fanout") == 0 || strcmp(a, "--fanout-only") == 0) {
            *(a[2] == 'n' ? &lo.no_fanout : &lo.fanout_only) = true;
            continue;
        }
        bool ours = strcmp(a, "--users") == 0 || strcmp(a, "--activities") == 0 || strcmp(a, "--seed") == 0;
        if (!ours) {
            rest[n_rest++] = argv[i];
            continue;
        }
        char *end = NULL;
        const char *v = i + 1 < argc ? argv[++i] : "";
        double d = strtod(v, &end);
        if (end == v || *end != '\0' || d < 0 || d > 1e9) {
            free(rest);
            return fprintf(stderr, "herald load: %s needs a number\n", a), EXIT_USAGE;
        }
        if (strcmp(a, "--users") == 0 && d < 2) {
            free(rest);
            return fprintf(stderr, "herald load: --users must be at least 2\n"), EXIT_USAGE;
        }
        if (strcmp(a, "--users") == 0)
            lo.users = (uint64_t)d;
        else if (strcmp(a, "--activities") == 0)
            lo.activities = d;
        else
            lo.seed = (uint64_t)d;
    }
    hr_config cfg;
    hr_config_init(&cfg);
    int status = parse_serve_args(n_rest, rest, &cfg);
    free(rest);
    if (status == 0 && lo.no_fanout && lo.fanout_only) {
        fprintf(stderr, "herald load: --no-fanout and --fanout-only exclude each other\n");
        status = EXIT_USAGE;
    }
    if (status == 0 && !feed_settings_valid(&cfg)) status = EXIT_USAGE;
    if (cfg.threads) lo.threads = (unsigned)cfg.threads;
    hr_store *store = NULL;
    hr_err err = {0};
    hr_store_options sopts = hr_config_store_options(&cfg);
    if (status == 0 && hr_store_open(cfg.store, &sopts, &store, &err) != HR_OK) {
        fprintf(stderr, "herald load: cannot open store %s: %s\n", cfg.store, err.msg);
        status = 1;
    }
    if (status == 0) {
        hr_graph *graph = hr_graph_new(store, "");
        hr_feeds *feeds = hr_feeds_new(store, graph, &(hr_feeds_options){FEEDS_OPTIONS(cfg)});
        hr_fanout_options fo = {FANOUT_OPTIONS(cfg)};
        hr_load_stats st;
        if (lo.fanout_only)
            fprintf(stderr, "herald load: the fan-out jobs queued in %s\n", cfg.store);
        else
            fprintf(stderr, "herald load: %llu users into %s\n", (unsigned long long)lo.users, cfg.store);
        if (hr_load_run(store, graph, feeds, &fo, &lo, &st, &err) != HR_OK) {
            fprintf(stderr, "herald load: %s\n", err.msg);
            status = 1;
        } else if (lo.no_fanout) {
            printf("users %llu  follows %llu  groups %llu  activities %llu: fan-out jobs left queued\n",
                   (unsigned long long)st.users, (unsigned long long)st.follows,
                   (unsigned long long)st.groups, (unsigned long long)st.activities);
        } else if (lo.fanout_only) {
            printf("fan-out %.1fs after %.1fs settling: %llu timeline entries, %.0f entries/s\n", st.fanout_s,
                   st.settle_s, (unsigned long long)st.fanout_entries,
                   st.fanout_s > 0 ? (double)st.fanout_entries / st.fanout_s : 0.0);
        } else {
            printf(
                "users %llu  follows %llu (%.0f per user)  groups %llu  memberships %llu  activities %llu  "
                "big accounts %llu\n",
                (unsigned long long)st.users, (unsigned long long)st.follows,
                (double)st.follows / (double)st.users, (unsigned long long)st.groups,
                (unsigned long long)st.memberships, (unsigned long long)st.activities,
                (unsigned long long)st.big_accounts);
            printf("graph %.1fs (%.0f follows/s)  activities %.1fs (%.0f creates/s)  graph settled %.1fs  "
                   "fan-out %.1fs: %llu timeline entries, %.0f entries/s\n",
                   st.graph_s, (double)st.follows / st.graph_s, st.activities_s,
                   (double)st.activities / st.activities_s, st.settle_s, st.fanout_s,
                   (unsigned long long)st.fanout_entries,
                   st.fanout_s > 0 ? (double)st.fanout_entries / st.fanout_s : 0.0);
        }
        if (status == 0 && hr_store_caps_of(store)->settles) {
            /* The load leaves RocksDB level-0 files to compact; a server
             * started at once would read through them and share the cores
             * with their compaction (hr_store_settle). */
            bool settled;
            double waited = hr_load_settle(store, stderr, "the store's flushes and compactions", &settled);
            printf("settled in %.1fs%s\n", waited, settled ? "" : " (gave up: compactions still running)");
        }
        hr_feeds_free(feeds);
        hr_graph_free(graph);
    }
    hr_store_close(store);
    hr_config_free(&cfg);
    return status;
}

/* ---- token ---------------------------------------------------------------- */

static int token(int argc, char **argv) {
    const char *user = NULL, *secret_file = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--secret-file") == 0 && i + 1 < argc)
            secret_file = argv[++i];
        else if (argv[i][0] != '-' && user == NULL)
            user = argv[i];
        else
            return fprintf(stderr, "herald token: unexpected '%s'\n", argv[i]), EXIT_USAGE;
    }
    if (user == NULL || secret_file == NULL)
        return fprintf(stderr, "usage: herald token USER --secret-file FILE\n"), EXIT_USAGE;
    if (!hr_ident_valid(hr_slice_str(user)))
        return fprintf(stderr, "herald token: USER must be 1..%d characters of A-Z a-z 0-9 . _ : @ ~ -\n",
                       HR_IDENT_MAX),
               EXIT_USAGE;
    hr_auth *auth = NULL;
    hr_err err = {0};
    if (hr_auth_from_file(secret_file, &auth, &err) != HR_OK)
        return fprintf(stderr, "herald token: %s\n", err.msg), EXIT_USAGE;
    hr_buf out = HR_BUF_INIT;
    hr_auth_token(auth, hr_slice_str(user), &out);
    printf("%s\n", out.data);
    hr_buf_free(&out);
    hr_auth_free(auth);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("herald %s\n", HERALD_VERSION);
        return 0;
    }
    if (strcmp(cmd, "serve") == 0) return serve(argc - 2, argv + 2);
    if (strcmp(cmd, "token") == 0) return token(argc - 2, argv + 2);
    if (strcmp(cmd, "load") == 0) return load(argc - 2, argv + 2);
    fprintf(stderr, "herald: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
