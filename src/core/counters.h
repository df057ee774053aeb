/* counters.h — unique counters: distinct tokens (users) per object, per named
 * counter (seed 003, the Yandex design).
 *
 * A named counter ("default", "click", "view"...) has settings: ttl_ms (a
 * token's connection to an object expires that long after its last PUT) and
 * exact_limit (distinct tokens counted exactly per object; past it the store
 * switches to HyperLogLog sketches, so a hot object's cost stays O(1) and its
 * count stays right within 1 %, instead of being silently capped as the
 * seed's LIMIT did).
 *
 * Cost in store operations (one batch = one round trip each):
 *   add          1 batch: hr_dadd (RocksDB: a metadata read, a member read and
 *                one WriteBatch; Redis: one EVALSHA)
 *   count        1 batch: hr_dcount
 *   count_many   1 batch of n hr_dcount (one MultiGet / one pipeline per node)
 *   settings     cached in-process for SETTINGS_CACHE_MS, so a PUT does not
 *                pay for reading them; a change made by another herald process
 *                on the same Redis Cluster is seen within that time.
 *
 * Storage keys (the braces are Redis Cluster hash tags, so every key of one
 * object's counter lives in one slot; '/' cannot occur in identifiers, so the
 * parts cannot be confused):
 *   {uc/COUNTER/OBJECT}     distinct counter of the object's tokens
 *   {ucs/COUNTER}           the counter's settings: u64be ttl_ms, u64be exact_limit
 * Tokens are stored as their 128-bit XXH3 hash: a fixed 16 bytes whatever the
 * token's length (up to 256), with a collision chance far below the sketch's
 * error. */
#ifndef HR_COUNTERS_H
#define HR_COUNTERS_H

#include <stdint.h>

#include "common/err.h"
#include "common/slice.h"
#include "store/store.h"

#define HR_TOKEN_MAX 256   /* bytes */
#define HR_COUNTS_MAX 1000 /* objects in one count_many */
#define HR_EXACT_LIMIT_MAX 1000000

typedef struct hr_counter_settings {
    int64_t ttl_ms;      /* >= 1 */
    int64_t exact_limit; /* 1..HR_EXACT_LIMIT_MAX */
} hr_counter_settings;

typedef struct hr_counters hr_counters;

/* Counters over store (borrowed; must outlive them). defaults apply to every
 * counter never configured with hr_counters_configure. */
hr_counters *hr_counters_new(hr_store *store, hr_counter_settings defaults);
void hr_counters_free(hr_counters *c);

/* counter and object must be valid identifiers (the API layer checks); token
 * is 1..HR_TOKEN_MAX bytes (checked here: HR_EINVAL). */

/* Connect token to object; *count is the object's count after the add. */
int hr_counters_add(hr_counters *c, hr_slice counter, hr_slice object, hr_slice token, int64_t *count,
                    hr_err *err);
/* The object's count now (0 if unknown). */
int hr_counters_count(hr_counters *c, hr_slice counter, hr_slice object, int64_t *count, hr_err *err);
/* counts[i] = the count of objects[i], for n <= HR_COUNTS_MAX objects. */
int hr_counters_count_many(hr_counters *c, hr_slice counter, const hr_slice *objects, size_t n,
                           int64_t *counts, hr_err *err);

/* The counter's settings (the defaults if never configured). */
int hr_counters_settings(hr_counters *c, hr_slice counter, hr_counter_settings *out, hr_err *err);
/* Replace the counter's settings (validated: HR_EINVAL naming the field).
 * They apply to later adds and counts; connections made before keep the
 * expiry they were given. */
int hr_counters_configure(hr_counters *c, hr_slice counter, const hr_counter_settings *s, hr_err *err);

#endif
