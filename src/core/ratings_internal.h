/* ratings_internal.h — what the files of ratings share: the handle, the
 * keys and the stamps that ratings.h describes, and the checks of
 * identifiers. Nothing outside core/ratings*.c includes it.
 *
 *   ratings.c        the handle, and the upsert with its crash-consistent
 *                    write path
 *   ratings_lists.c  ratings read back: one, and the newest-first pages of
 *                    a subject's, a story's and all ratings
 *   ratings_walk.c   a member's story lists, top-rated and unseen: walks
 *                    down a story ranking */
#ifndef HR_RATINGS_INTERNAL_H
#define HR_RATINGS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "common/buf.h"
#include "common/hex.h"
#include "core/ratings.h"

#define LOCK_STRIPES 256    /* a power of two */
#define ID_MAX 128          /* identifiers (API.md) */
#define WITH_SET_SLOTS 4096 /* a power of two */

struct hr_ratings {
    hr_store *store;
    hr_stories *stories;
    const char *ns;  /* the stories' */
    size_t seen_min; /* ratings from which a subject has a packed seen set */
    size_t walk_max; /* ranking entries a walk reads at most (HR_UNSEEN_SCAN) */
    /* Subjects (hashes) that had seen_min ratings at an unseen call: their
     * next call starts with the window a set test wants (see there). A
     * subject's ratings are never deleted, so an entry stays true; a stale
     * or colliding one only sizes a first window. */
    _Atomic uint64_t with_set[WITH_SET_SLOTS];
    pthread_mutex_t locks[LOCK_STRIPES];
};

/* ---- Keys ------------------------------------------------------------------ */

/* "{" NS kind a ["/" b] "}" */
static inline hr_slice key(hr_buf *k, const hr_ratings *r, const char *kind, hr_slice a, hr_slice b) {
    hr_buf_clear(k);
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, r->ns);
    hr_buf_append_str(k, kind);
    hr_buf_append_slice(k, a);
    if (b.len) {
        hr_buf_append_byte(k, '/');
        hr_buf_append_slice(k, b);
    }
    hr_buf_append_byte(k, '}');
    return hr_buf_slice(k);
}

static const hr_slice none = {"", 0};

static inline hr_slice subject_key(hr_buf *k, const hr_ratings *r, hr_slice s) {
    return key(k, r, "rs/", s, none);
}
static inline hr_slice object_key(hr_buf *k, const hr_ratings *r, hr_slice o) {
    return key(k, r, "ro/", o, none);
}
/* Shard `shard` of the index of all ratings (see ratings.h). */
static inline hr_slice all_key(hr_buf *k, const hr_ratings *r, unsigned shard) {
    char part[8];
    snprintf(part, sizeof part, "%02x", shard);
    return key(k, r, "ratings/all/", hr_slice_str(part), none);
}

/* The shard of the rating (s, o). */
static inline unsigned all_shard(hr_slice s, hr_slice o) {
    return (unsigned)((XXH3_64bits(s.ptr, s.len) * 31 + XXH3_64bits(o.ptr, o.len)) % HR_RATINGS_ALL_SHARDS);
}
/* The subject's packed seen set, in the subject's hash slot. */
static inline hr_slice seen_key(hr_buf *k, const hr_ratings *r, hr_slice s) {
    key(k, r, "rs/", s, none);
    hr_buf_append_str(k, "seen");
    return hr_buf_slice(k);
}

/* The lease of the rating (s, o) on a shared store (core/lease.h), in the
 * subject's hash slot: taken in the same batch as the rating's read. */
static inline hr_slice lease_key(hr_buf *k, const hr_ratings *r, hr_slice s, hr_slice o) {
    key(k, r, "rs/", s, none);
    hr_buf_append_str(k, "lease/");
    hr_buf_append_slice(k, o);
    return hr_buf_slice(k);
}

/* A story id (16 hex digits) as the 64-bit member of a seen set. False for
 * anything else (a ranking holds only story ids). Runs once per candidate
 * of an unseen window. */
static inline bool id_u64(hr_slice id, uint64_t *out) {
    return id.len == HR_STORY_ID_LEN && hr_hex16(id.ptr, out);
}

/* "S/O", the member of {ratings/all}. */
static inline hr_slice pair(hr_buf *m, hr_slice s, hr_slice o) {
    hr_buf_clear(m);
    hr_buf_append_slice(m, s);
    hr_buf_append_byte(m, '/');
    hr_buf_append_slice(m, o);
    return hr_buf_slice(m);
}

/* ---- Stamps ------------------------------------------------------------------ */

/* An index entry's score: time * 4 + (score + 1). Exact in a double for
 * every time up to HR_TIME_MAX_MS (2^53 / 4 is year 73,000), ordered by time
 * first, so a range by score is a range by time. */
static inline int64_t stamp_i(int score, int64_t time_ms) {
    return time_ms * 4 + (score + 1);
}
static inline double stamp(int score, int64_t time_ms) {
    return (double)stamp_i(score, time_ms);
}
/* The score a (valid) stamp holds. */
static inline int stamp_score(int64_t st) {
    return (int)(st % 4) - 1;
}

/* A stamp into *out (subject and object copied into a); HR_EINTERNAL if it
 * is no stamp. Defined in ratings.c. */
int hr_ratings_unstamp(double st, hr_slice s, hr_slice o, hr_arena *a, hr_rating *out, hr_err *err);

static inline int op_error(const hr_result *res, hr_err *err, const char *what) {
    return hr_err_set(err, res->rc, "%s: %s", what, hr_strerror(res->rc));
}

static inline bool is_id(hr_slice s) {
    return s.len >= 1 && s.len <= ID_MAX && !memchr(s.ptr, '/', s.len);
}

static inline int check_ids(hr_slice a, hr_slice b, hr_err *err) {
    if (!is_id(a) || !is_id(b)) return hr_err_set(err, HR_EINVAL, "subject and object must be identifiers");
    return HR_OK;
}

/* A list's range spec over stamps: since is a time. */
static inline int stamp_spec(const hr_list_req *req, size_t max_member, hr_arena *a, hr_zrange_spec *spec,
                             hr_err *err) {
    int rc = hr_list_spec(req, max_member, a, spec, err);
    if (rc == HR_OK && req->has_since) spec->min = stamp(-1, req->since_ms + 1);
    return rc;
}

#endif
