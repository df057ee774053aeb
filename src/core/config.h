/* config.h — every setting of the server, in one table.
 *
 * A setting has a name, a type, a default and a line of help. It can be given
 * as `--set NAME=VALUE`, as a line `NAME = VALUE` of a `--config FILE`, and
 * the common ones by a flag of their own (`--listen` is `--set listen=`).
 * Later sources win: defaults, then the file, then flags in command-line
 * order. `herald --help` prints this table, so it cannot drift from the code.
 *
 * Types: STR (text), UINT (whole number), BOOL (true/false/yes/no/on/off/1/0),
 * DURATION (whole number with an optional ms/s/m/h/d suffix, stored in ms;
 * no suffix means ms), SIZE (bytes with an optional k/m/g suffix, powers of
 * 1024). */
#ifndef HR_CONFIG_H
#define HR_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "store/store.h"

/* X(name, type, default, help) */
#define HR_SETTINGS(X)                                                                                       \
    X(listen, STR, "127.0.0.1:8080", "address and port to serve HTTP on")                                    \
    X(store, STR, "rocksdb:./data", "rocksdb:PATH or redis://HOST:PORT[,HOST:PORT...]")                      \
    X(secret_file, STR, "", "file holding the admin key; without it, loopback only")                         \
    X(threads, UINT, "0", "HTTP I/O threads (0: one per core; four per core on Redis Cluster)")              \
    X(sync, BOOL, "false", "fsync the RocksDB WAL before acknowledging a write")                             \
    X(body_max, SIZE, "1m", "largest request body of routes without a limit of their own")                   \
    X(timeout, DURATION, "30s", "idle / read timeout of a connection")                                       \
    X(max_connections, UINT, "4096", "connections served at once")                                           \
    X(store_timeout, DURATION, "2s", "Redis: timeout of one store round trip")                               \
    X(memory, SIZE, "2g",                                                                                    \
      "RocksDB: memory kept to answer reads, shared out among its caches (docs/DESIGN.md, Memory)")          \
    X(log_level, STR, "info", "debug, info, warn or error")                                                  \
    X(counter_ttl, DURATION, "30d", "a counter connection expires this long after its last PUT")             \
    X(counter_exact_limit, UINT, "10000", "distinct tokens counted exactly per object before the sketch")    \
    X(story_content_max, SIZE, "256k", "largest story content accepted (bytes, before compression)")         \
    X(fanout_threshold, UINT, "10000",                                                                       \
      "actors and groups with more followers/members are merged at read time, not fanned out")               \
    X(timeline_ttl, DURATION, "60d", "timeline entries expire this long after the activity's time")          \
    X(timeline_max, UINT, "1000", "entries a home timeline keeps at most")                                   \
    X(fanout_workers, UINT, "2", "background threads that fan activities out to timelines")                  \
    X(fanout_lease, DURATION, "30s",                                                                         \
      "a fan-out job not finished this long after it was claimed is run again")                              \
    X(fanout_queue, STR, "fanout",                                                                           \
      "name of the fan-out job queue: processes naming the same one share its jobs")                         \
    X(fanout_batch, UINT, "1000", "timeline entries a fan-out worker writes per store batch")                \
    X(fanout_bulk, UINT, "1000000",                                                                          \
      "RocksDB: timeline adds a fan-out worker gathers into one sorted table file (0: write page by page)")  \
    X(fanout_throttle, DURATION, "0",                                                                        \
      "pause between two batches of one fan-out job, to cap its share of the store")                         \
    X(activity_data_max, SIZE, "64k", "largest activity data accepted (bytes of JSON)")                      \
    X(reading_ttl, DURATION, "30d", "a recorded read (social reading) counts this long after its time")

typedef enum { HR_SET_STR, HR_SET_UINT, HR_SET_BOOL, HR_SET_DURATION, HR_SET_SIZE } hr_setting_type;

typedef struct hr_config {
#define HR_CFG_FIELD_STR(name) char *name;
#define HR_CFG_FIELD_UINT(name) uint64_t name;
#define HR_CFG_FIELD_BOOL(name) bool name;
#define HR_CFG_FIELD_DURATION(name) int64_t name; /* ms */
#define HR_CFG_FIELD_SIZE(name) uint64_t name;    /* bytes */
#define HR_CFG_FIELD_(name, type, def, help) HR_CFG_FIELD_##type(name)
    HR_SETTINGS(HR_CFG_FIELD_)
#undef HR_CFG_FIELD_
} hr_config;

/* The store's options the settings give (herald serve and load, and the
 * benches' loaders, open it alike). */
hr_store_options hr_config_store_options(const hr_config *cfg);

/* Fill cfg with the defaults. The caller releases it with hr_config_free. */
void hr_config_init(hr_config *cfg);
void hr_config_free(hr_config *cfg);

/* Set one setting from text. HR_EINVAL with err naming the setting when the
 * name is unknown or the value does not parse; cfg is then unchanged. */
int hr_config_set(hr_config *cfg, const char *name, const char *value, hr_err *err);
/* "NAME=VALUE" as given to --set. */
int hr_config_set_pair(hr_config *cfg, const char *pair, hr_err *err);
/* Lines of "NAME = VALUE"; blank lines and lines starting with '#' are
 * skipped. err names the file and line of the first error. */
int hr_config_load_file(hr_config *cfg, const char *path, hr_err *err);

/* Parsers shared with the API (durations in query strings and bodies). */
int hr_parse_duration_ms(const char *s, int64_t *out);
int hr_parse_uint(const char *s, uint64_t *out);
int hr_parse_size(const char *s, uint64_t *out);
int hr_parse_bool(const char *s, bool *out);

/* Append "  NAME  (default D)  HELP" lines for --help to f. */
#include <stdio.h>
void hr_config_print_help(FILE *f);

#endif
