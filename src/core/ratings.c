/* ratings.c — see ratings.h for the model, the keys and the costs. */
#include "core/ratings.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/hex.h"
#include "core/lease.h"
#include "core/rank_merge.h"

#define LOCK_STRIPES 256  /* a power of two */
#define ID_MAX 128        /* identifiers (API.md) */
#define WINDOW_MIN 64     /* unseen: the first window at least */
#define WINDOW_MAX 10000  /* the store's largest range read */
#define SET_TEST_MIN 1024 /* unseen: candidates a first test of a seen set waits for */
#define WITH_SET_SLOTS 4096 /* a power of two */
#define READ_CHUNK_MAX 512  /* top-rated: ratings read in one batch of a walk, at most ~4x this */

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

hr_ratings *hr_ratings_new(hr_store *store, hr_stories *stories) {
    hr_ratings *r = hr_xcalloc(1, sizeof *r);
    r->store = store;
    r->stories = stories;
    r->ns = hr_stories_ns(stories);
    r->seen_min = HR_SEEN_SET_MIN;
    r->walk_max = HR_UNSEEN_SCAN;
    for (size_t i = 0; i < LOCK_STRIPES; i++)
        pthread_mutex_init(&r->locks[i], NULL);
    return r;
}

void hr_ratings_set_seen_min(hr_ratings *r, size_t n) {
    r->seen_min = n ? n : 1;
}

void hr_ratings_set_walk_max(hr_ratings *r, size_t n) {
    r->walk_max = n ? n : 1;
}

void hr_ratings_free(hr_ratings *r) {
    if (r == NULL) return;
    for (size_t i = 0; i < LOCK_STRIPES; i++)
        pthread_mutex_destroy(&r->locks[i]);
    free(r);
}

/* ---- Keys ------------------------------------------------------------------ */

/* "{" NS kind a ["/" b] "}" */
static hr_slice key(hr_buf *k, const hr_ratings *r, const char *kind, hr_slice a, hr_slice b) {
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

static hr_slice subject_key(hr_buf *k, const hr_ratings *r, hr_slice s) {
    return key(k, r, "rs/", s, none);
}
static hr_slice object_key(hr_buf *k, const hr_ratings *r, hr_slice o) {
    return key(k, r, "ro/", o, none);
}
/* Shard `shard` of the index of all ratings (see ratings.h). */
static hr_slice all_key(hr_buf *k, const hr_ratings *r, unsigned shard) {
    char part[8];
    snprintf(part, sizeof part, "%02x", shard);
    return key(k, r, "ratings/all/", hr_slice_str(part), none);
}

/* The shard of the rating (s, o). */
static unsigned all_shard(hr_slice s, hr_slice o) {
    return (unsigned)((XXH3_64bits(s.ptr, s.len) * 31 + XXH3_64bits(o.ptr, o.len)) % HR_RATINGS_ALL_SHARDS);
}
/* The subject's packed seen set, in the subject's hash slot. */
static hr_slice seen_key(hr_buf *k, const hr_ratings *r, hr_slice s) {
    key(k, r, "rs/", s, none);
    hr_buf_append_str(k, "seen");
    return hr_buf_slice(k);
}

/* The lease of the rating (s, o) on a shared store (core/lease.h), in the
 * subject's hash slot: taken in the same batch as the rating's read. */
static hr_slice lease_key(hr_buf *k, const hr_ratings *r, hr_slice s, hr_slice o) {
    key(k, r, "rs/", s, none);
    hr_buf_append_str(k, "lease/");
    hr_buf_append_slice(k, o);
    return hr_buf_slice(k);
}

/* A story id (16 hex digits) as the 64-bit member of a seen set. False for
 * anything else (a ranking holds only story ids). Runs once per candidate
 * of an unseen window. */
static bool id_u64(hr_slice id, uint64_t *out) {
    return id.len == HR_STORY_ID_LEN && hr_hex16(id.ptr, out);
}

/* "S/O", the member of {ratings/all}. */
static hr_slice pair(hr_buf *m, hr_slice s, hr_slice o) {
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
static int64_t stamp_i(int score, int64_t time_ms) {
    return time_ms * 4 + (score + 1);
}
static double stamp(int score, int64_t time_ms) {
    return (double)stamp_i(score, time_ms);
}
/* The score a (valid) stamp holds. */
static int stamp_score(int64_t st) {
    return (int)(st % 4) - 1;
}

/* A stamp into *out (subject and object copied into a). */
static int unstamp(double st, hr_slice s, hr_slice o, hr_arena *a, hr_rating *out, hr_err *err) {
    int64_t v = (int64_t)st;
    if ((double)v != st || v < 0 || v % 4 == 3)
        return hr_err_set(err, HR_EINTERNAL, "rating of %.*s by %.*s is corrupt", (int)o.len, o.ptr,
                          (int)s.len, s.ptr);
    out->subject = hr_arena_copy(a, s);
    out->object = hr_arena_copy(a, o);
    out->score = stamp_score(v);
    out->time_ms = v / 4;
    return HR_OK;
}

static int op_error(const hr_result *res, hr_err *err, const char *what) {
    return hr_err_set(err, res->rc, "%s: %s", what, hr_strerror(res->rc));
}

static bool is_id(hr_slice s) {
    return s.len >= 1 && s.len <= ID_MAX && !memchr(s.ptr, '/', s.len);
}

static int check_ids(hr_slice a, hr_slice b, hr_err *err) {
    if (!is_id(a) || !is_id(b)) return hr_err_set(err, HR_EINVAL, "subject and object must be identifiers");
    return HR_OK;
}

/* ---- Upsert ----------------------------------------------------------------- */

static pthread_mutex_t *lock_of(hr_ratings *r, hr_slice s, hr_slice o) {
    uint64_t h = XXH3_64bits(s.ptr, s.len) * 31 + XXH3_64bits(o.ptr, o.len);
    return &r->locks[h & (LOCK_STRIPES - 1)];
}

/* One upsert: what it was asked, what its first round trip read, and what
 * it decided from that (see hr_ratings_put). */
typedef struct upsert {
    hr_ratings *r;
    hr_slice subject, object;
    int score;
    int64_t time_ms, st; /* st: the new rating's stamp */
    hr_story story;
    bool had; /* the subject's record {rs/S} holds a rating of the object: old */
    hr_rating old;
    int64_t old_st;
    size_t rated; /* how many ratings the subject has */
    bool noted;   /* Redis Cluster: the story's note of the subject's vote (stories.h): noted_st */
    int64_t noted_st;
    int held;    /* the subject's score that the story's sum holds */
    bool atomic; /* the store's batches are atomic (RocksDB): no notes */
    hr_buf k, m;
} upsert;

/* The subject's score that the story's sum holds: the note's, where the
 * store keeps notes (written in one step with every change of the sum, so
 * it is right even where a killed upsert changed the sum and not the
 * record), else the record's. */
static void upsert_decide(upsert *u) {
    u->held = u->noted ? stamp_score(u->noted_st) : u->had ? u->old.score : 0;
}

/* The note's read (hr_stories_vote_note_op) into u. */
static int note_result(upsert *u, const hr_result *res, hr_err *err) {
    if (res->rc != HR_OK && res->rc != HR_ENOTFOUND) return op_error(res, err, "vote note");
    u->noted = res->rc == HR_OK;
    u->noted_st = u->noted ? (int64_t)res->score : 0;
    return HR_OK;
}

/* Round trip 1: the subject's record of the object and how many ratings
 * the subject has, the story (it must exist; its time is the hot score's),
 * and on Redis Cluster the note. On a shared store the lease is taken
 * first, in the record's slot, so the record read is the one the last
 * holder left; the batch runs again while another server holds it. The
 * note lives in another slot, so its read may come before the take: the
 * vote's compare-and-set checks it (upsert_write). */
static int upsert_read(upsert *u, hr_batch *b, hr_lease *lease, hr_slice lk, hr_arena *a, hr_err *err) {
    hr_ratings *r = u->r;
    size_t old_op = 0, card_op = 0, st_op = 0, lease_op = 0, note_op = 0;
    int rc = HR_OK;
    for (bool again = true; again;) {
        again = false;
        hr_batch_reset(b);
        if (lease) lease_op = hr_lease_take_op(lease, b, lk);
        old_op = hr_zscore(b, subject_key(&u->k, r, u->subject), u->object);
        card_op = hr_zcard(b, subject_key(&u->k, r, u->subject));
        st_op = hr_stories_fill_ops(r->stories, b, u->object);
        if (!u->atomic) note_op = hr_stories_vote_note_op(r->stories, b, u->object, u->subject);
        rc = hr_store_exec(r->store, b, 0, err);
        if (rc == HR_OK && lease) rc = hr_lease_taken(lease, b, lease_op, "this rating", &again, err);
    }
    if (rc == HR_OK) rc = hr_stories_fill_result(b, st_op, u->object, a, &u->story, err);
    if (rc == HR_ENOTFOUND)
        return hr_err_set(err, HR_ENOTFOUND, "no story '%.*s'", (int)u->object.len, u->object.ptr);
    if (rc != HR_OK) return rc;
    const hr_result *res = hr_batch_result(b, old_op);
    if (res->rc == HR_OK) {
        if ((rc = unstamp(res->score, u->subject, u->object, a, &u->old, err)) != HR_OK) return rc;
        u->had = true;
        u->old_st = stamp_i(u->old.score, u->old.time_ms);
    } else if (res->rc != HR_ENOTFOUND) {
        return op_error(res, err, "rating");
    }
    u->rated = (size_t)hr_batch_result(b, card_op)->num;
    return u->atomic ? HR_OK : note_result(u, hr_batch_result(b, note_op), err);
}

/* Read the note again (a compare-and-set found it changed since round
 * trip 1: that read raced the lease's take). */
static int upsert_reread_note(upsert *u, hr_batch *b, hr_err *err) {
    hr_batch_reset(b);
    size_t op = hr_stories_vote_note_op(u->r->stories, b, u->object, u->subject);
    int rc = hr_store_exec(u->r->store, b, 0, err);
    if (rc != HR_OK) return rc;
    if ((rc = note_result(u, hr_batch_result(b, op), err)) != HR_OK) return rc;
    upsert_decide(u);
    return HR_OK;
}

/* Round trip 2: the story's list and the list of all (the old entries go
 * with blind deletes at their stamps, the new one comes with a blind
 * write), the seen set, and the vote. On RocksDB the subject's record goes
 * in the same atomic WriteBatch. On Redis Cluster the vote's script writes
 * the note with the sum, and always runs (a delta of 0 too), so that the
 * note follows every upsert; the record comes after (upsert_finish).
 * *sum: the story's sum afterwards; *settled: whether the hot score
 * followed it. */
static int upsert_write(upsert *u, hr_batch *b, hr_err *err, int64_t *sum, bool *settled) {
    hr_ratings *r = u->r;
    int64_t delta = u->score - u->held;
    int rc = HR_OK;
    for (int tries = 0;; tries++) {
        hr_batch_reset(b);
        /* Each key into u->k is used before the next one is made. The
         * new entries are written even when the record holds them already:
         * on Redis Cluster an upsert killed mid-way may have moved them. */
        bool moved = u->had && u->old_st != u->st;
        hr_slice ok = object_key(&u->k, r, u->object);
        if (moved) hr_tlrem(b, ok, u->old_st, u->subject);
        hr_tladd(b, ok, u->st, u->subject, 0);
        hr_slice ak = all_key(&u->k, r, all_shard(u->subject, u->object));
        hr_slice member = pair(&u->m, u->subject, u->object);
        if (moved) hr_tlrem(b, ak, u->old_st, member);
        hr_tladd(b, ak, u->st, member, 0);
        uint64_t id64;
        if (!u->had && u->rated + 1 >= r->seen_min && id_u64(u->object, &id64)) /* see hr_ratings_unseen */
            hr_pset_add(b, seen_key(&u->k, r, u->subject), id64, 0);
        hr_vote vote = {0};
        hr_voter voter = {
            .id = u->subject, .stamp = (double)u->st, .noted = u->noted ? (double)u->noted_st : NAN};
        bool voting = delta || !u->atomic;
        if (voting)
            vote = hr_stories_vote_ops(r->stories, b, u->object, u->story.time_ms, u->story.score, delta,
                                       &voter);
        if (u->atomic) hr_zadd_time(b, subject_key(&u->k, r, u->subject), u->st, u->object);
        rc = hr_store_exec(r->store, b, 0, err);
        if (rc != HR_OK) return rc;
        if (voting && hr_batch_result(b, vote.op)->rc == HR_ECONFLICT && tries < 2) {
            /* The note changed since round trip 1 read it: read it again
             * (the lease is held now) and write again. */
            if ((rc = upsert_reread_note(u, b, err)) != HR_OK) return rc;
            delta = u->score - u->held;
            continue;
        }
        for (size_t i = 0; i < hr_batch_len(b); i++)
            if (hr_batch_result(b, i)->rc != HR_OK) return op_error(hr_batch_result(b, i), err, "rating");
        *sum = voting ? (int64_t)llround(hr_batch_result(b, vote.op)->score) : u->story.score;
        *settled = !voting || hr_stories_vote_settled(&vote, *sum);
        return HR_OK;
    }
}

/* Round trip 3 on Redis Cluster: the subject's record, last, and the
 * lease's return after it (same slot: in order). */
static int upsert_finish(upsert *u, hr_batch *b, hr_lease *lease, hr_slice lk, hr_err *err) {
    hr_batch_reset(b);
    size_t rating_op = hr_zadd_time(b, subject_key(&u->k, u->r, u->subject), u->st, u->object);
    size_t drop_op = lease ? hr_lease_drop_op(lease, b, lk) : 0;
    int rc = hr_store_exec(u->r->store, b, 0, err);
    if (lease) hr_lease_dropped(b, drop_op, rc, err, lk);
    const hr_result *res = hr_batch_result(b, rating_op);
    if (rc == HR_OK && res->rc != HR_OK) rc = op_error(res, err, "rating");
    return rc;
}

/* Round trips 1 to 3 (ratings.h: "Crash consistency" says why the record
 * comes last on Redis Cluster, and what the note is for). */
int hr_ratings_put(hr_ratings *r, hr_slice subject, hr_slice object, int score, int64_t time_ms, hr_arena *a,
                   hr_rating *out, bool *applied, int64_t *story_score, hr_err *err) {
    memset(out, 0, sizeof *out);
    *applied = false;
    *story_score = 0;
    int rc = check_ids(subject, object, err);
    if (rc != HR_OK) return rc;
    if (score < -1 || score > 1)
        return hr_err_set(err, HR_EINVAL, "score must be -1, 0 or 1 (got %d)", score);
    if (time_ms < 0 || time_ms > HR_TIME_MAX_MS)
        return hr_err_set(err, HR_EINVAL, "time must be 0..%lld ms since the epoch", HR_TIME_MAX_MS);

    upsert u = {.r = r,
                .subject = subject,
                .object = object,
                .score = score,
                .time_ms = time_ms,
                .st = stamp_i(score, time_ms),
                .atomic = hr_store_batches_atomic(r->store),
                .k = HR_BUF_INIT,
                .m = HR_BUF_INIT};
    hr_buf lk = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    /* The mutex orders this process's upserts of (subject, object); other
     * servers on a shared store are kept out by the lease (see ratings.h). */
    hr_lease lease, *held = NULL;
    if (hr_store_shared(r->store)) {
        hr_lease_init(&lease, HR_LEASE_WAIT_MS);
        lease_key(&lk, r, subject, object);
        held = &lease;
    }
    pthread_mutex_t *lock = lock_of(r, subject, object);
    pthread_mutex_lock(lock);

    rc = upsert_read(&u, b, held, hr_buf_slice(&lk), a, err);
    upsert_decide(&u);
    bool apply = rc == HR_OK && !(u.had && time_ms < u.old.time_ms);
    int64_t sum = u.story.score;
    bool settled = true;
    if (apply) rc = upsert_write(&u, b, err, &sum, &settled);
    if (apply && rc == HR_OK && !u.atomic) rc = upsert_finish(&u, b, held, hr_buf_slice(&lk), err);
    /* Every write has been answered: the next holder reads them all. */
    if (held) hr_lease_drop(held, r->store, hr_buf_slice(&lk));
    pthread_mutex_unlock(lock);

    /* Unless the vote's batch settled it: the hot ranking follows the sum. */
    if (apply && rc == HR_OK && !settled)
        rc = hr_stories_settle_hot(r->stories, object, u.story.time_ms, sum, err);
    if (rc == HR_OK) {
        *applied = apply;
        *story_score = sum;
        if (apply) {
            out->subject = hr_arena_copy(a, subject);
            out->object = hr_arena_copy(a, object);
            out->score = score;
            out->time_ms = time_ms;
        } else {
            *out = u.old;
        }
    }
    hr_batch_free(b);
    hr_buf_free(&u.k);
    hr_buf_free(&u.m);
    hr_buf_free(&lk);
    return rc;
}

int hr_ratings_get(hr_ratings *r, hr_slice subject, hr_slice object, hr_arena *a, hr_rating *out,
                   hr_err *err) {
    memset(out, 0, sizeof *out);
    int rc = check_ids(subject, object, err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op = hr_zscore(b, subject_key(&k, r, subject), object);
    rc = hr_store_exec(r->store, b, 0, err);
    if (rc == HR_OK) {
        const hr_result *res = hr_batch_result(b, op);
        if (res->rc == HR_OK)
            rc = unstamp(res->score, subject, object, a, out, err);
        else if (res->rc == HR_ENOTFOUND)
            rc = hr_err_set(err, HR_ENOTFOUND, "no rating of '%.*s' by '%.*s'", (int)object.len, object.ptr,
                            (int)subject.len, subject.ptr);
        else
            rc = op_error(res, err, "rating");
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

/* ---- Rating lists ------------------------------------------------------ */

/* Which part of a rating an index's members are. */
typedef enum { BY_SUBJECT, BY_OBJECT, BY_ALL } list_kind;

/* A list's range spec over stamps: since is a time. */
static int stamp_spec(const hr_list_req *req, size_t max_member, hr_arena *a, hr_zrange_spec *spec,
                      hr_err *err) {
    int rc = hr_list_spec(req, max_member, a, spec, err);
    if (rc == HR_OK && req->has_since) spec->min = stamp(-1, req->since_ms + 1);
    return rc;
}

/* The descending order of the lists: stamp, then member. */
static int desc_cmp(const hr_zentry *x, const hr_zentry *y) {
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return -hr_slice_cmp(x->member, y->member);
}

/* The time-list read of a list's range spec (newest first, by stamp). A
 * cursor is "strictly after (score, member)"; one made by this module holds
 * a stamp (an integer) and a member, and anything else a client makes up is
 * taken by what it means: a fractional score starts below it, a negative
 * one past every stamp, one past the largest time at the top. */
static hr_tlrange_spec tl_spec(const hr_zrange_spec *spec, size_t limit) {
    hr_tlrange_spec tl = hr_tlrange_all(limit, 0); /* no entry expires */
    if (spec->min > -INFINITY) tl.after_ms = (int64_t)spec->min - 1; /* a stamp: >= min is > min - 1 */
    if (!spec->has_cursor) return tl;
    double c = spec->cursor_score;
    if (c < 0) {
        tl.before_ms = INT64_MIN; /* stamps are >= 0: nothing comes after */
    } else if (c < (double)HR_TL_TIME_MAX) {
        int64_t t = (int64_t)ceil(c);
        if ((double)t == c && spec->cursor_member.len) {
            tl.has_cursor = true;
            tl.cursor_time = t;
            tl.cursor_member = spec->cursor_member;
        } else {
            tl.before_ms = t; /* every entry at c (with a member above "") or above it is before */
        }
    }
    return tl;
}

/* Entries each shard's range reads for a page of `limit`: twice its share,
 * and a few more (hashing spreads ratings evenly over the shards). */
static size_t shard_window(size_t limit) {
    return 2 * limit / HR_RATINGS_ALL_SHARDS + 4;
}

/* A page of at most `limit` entries, in descending order, from the ranges of
 * every shard (ops 0..HR_RATINGS_ALL_SHARDS-1 of b, each descending from the
 * page's cursor): a merge of sorted lists. A shard whose window ran out (its
 * range says `more`) may hold unread entries after its last one read, so the
 * page stops there: it is exact, possibly shorter than `limit`, and the
 * cursor goes on from its last entry. */
static int merge_shards(const hr_batch *b, size_t limit, hr_arena *a, hr_result *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    const hr_result *sh[HR_RATINGS_ALL_SHARDS];
    size_t at[HR_RATINGS_ALL_SHARDS] = {0}, total = 0;
    const hr_zentry *stop = NULL; /* the earliest last entry of a shard cut short */
    for (unsigned i = 0; i < HR_RATINGS_ALL_SHARDS; i++) {
        sh[i] = hr_batch_result(b, i);
        if (sh[i]->rc != HR_OK) return op_error(sh[i], err, "ratings");
        total += sh[i]->n_entries;
        if (sh[i]->more && sh[i]->n_entries) {
            const hr_zentry *last = &sh[i]->entries[sh[i]->n_entries - 1];
            if (stop == NULL || desc_cmp(last, stop) < 0) stop = last;
            out->more = true;
        }
    }
    out->entries = hr_arena_alloc(a, (limit ? limit : 1) * sizeof *out->entries);
    while (out->n_entries < limit) {
        int best = -1;
        for (unsigned i = 0; i < HR_RATINGS_ALL_SHARDS; i++)
            if (at[i] < sh[i]->n_entries &&
                (best < 0 || desc_cmp(&sh[i]->entries[at[i]], &sh[best]->entries[at[best]]) < 0))
                best = (int)i;
        if (best < 0 || (stop && desc_cmp(&sh[best]->entries[at[best]], stop) > 0)) break;
        out->entries[out->n_entries++] = sh[best]->entries[at[best]++];
    }
    if (total > out->n_entries) out->more = true;
    return HR_OK;
}

/* One page of an index in one round trip: a range read (with, for
 * BY_OBJECT, a check that the story exists; for BY_ALL, one per shard,
 * merged); the stamps are the ratings. */
static int list(hr_ratings *r, list_kind kind, hr_slice fixed, const hr_list_req *req, hr_arena *a,
                hr_rating_page *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if ((kind != BY_ALL && fixed.len == 0) || fixed.len > ID_MAX || memchr(fixed.ptr, '/', fixed.len))
        return hr_err_set(err, HR_EINVAL, "not an identifier");
    hr_zrange_spec spec;
    int rc = stamp_spec(req, 2 * ID_MAX + 1, a, &spec, err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    /* BY_ALL: the same range of every shard (ops 0..SHARDS-1), merged. */
    size_t op = 0;
    if (kind == BY_ALL) {
        hr_tlrange_spec shard = tl_spec(&spec, shard_window(spec.limit));
        for (unsigned i = 0; i < HR_RATINGS_ALL_SHARDS; i++)
            hr_tlrange(b, all_key(&k, r, i), &shard);
    } else if (kind == BY_OBJECT) {
        hr_tlrange_spec tl = tl_spec(&spec, spec.limit);
        op = hr_tlrange(b, object_key(&k, r, fixed), &tl);
    } else {
        op = hr_zrange(b, subject_key(&k, r, fixed), &spec);
    }
    size_t st = kind == BY_OBJECT ? hr_stories_fill_ops(r->stories, b, fixed) : 0;
    rc = hr_store_exec(r->store, b, 0, err);
    const hr_result *res = rc == HR_OK ? hr_batch_result(b, op) : NULL;
    if (res && res->rc != HR_OK) rc = op_error(res, err, "ratings");
    hr_result merged;
    if (rc == HR_OK && kind == BY_ALL) {
        rc = merge_shards(b, req->limit, a, &merged, err);
        res = &merged;
    }
    if (rc == HR_OK && kind == BY_OBJECT) {
        hr_story story;
        rc = hr_stories_fill_result(b, st, fixed, a, &story, err);
        if (rc == HR_ENOTFOUND)
            rc = hr_err_set(err, HR_ENOTFOUND, "no story '%.*s'", (int)fixed.len, fixed.ptr);
    }
    size_t n = rc == HR_OK ? res->n_entries : 0;
    out->items = hr_arena_alloc(a, (n ? n : 1) * sizeof *out->items);
    for (size_t i = 0; rc == HR_OK && i < n; i++) {
        hr_slice mbr = res->entries[i].member;
        hr_slice s = fixed, o = fixed;
        if (kind == BY_SUBJECT)
            o = mbr;
        else if (kind == BY_OBJECT)
            s = mbr;
        else {
            const char *slash = memchr(mbr.ptr, '/', mbr.len);
            if (slash == NULL) continue; /* not ours */
            s = hr_slice_of(mbr.ptr, (size_t)(slash - mbr.ptr));
            o = hr_slice_of(slash + 1, mbr.len - s.len - 1);
        }
        if (unstamp(res->entries[i].score, s, o, a, &out->items[out->n], err) == HR_OK) out->n++;
    }
    if (rc == HR_OK && n && res->more) {
        const hr_zentry *last = &res->entries[n - 1];
        out->next_cursor = hr_list_cursor(a, last->score, last->member);
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

int hr_ratings_by_subject(hr_ratings *r, hr_slice subject, const hr_list_req *req, hr_arena *a,
                          hr_rating_page *out, hr_err *err) {
    return list(r, BY_SUBJECT, subject, req, a, out, err);
}

int hr_ratings_by_object(hr_ratings *r, hr_slice object, const hr_list_req *req, hr_arena *a,
                         hr_rating_page *out, hr_err *err) {
    return list(r, BY_OBJECT, object, req, a, out, err);
}

int hr_ratings_all(hr_ratings *r, const hr_list_req *req, hr_arena *a, hr_rating_page *out, hr_err *err) {
    return list(r, BY_ALL, none, req, a, out, err);
}

/* ---- Story lists for a member -------------------------------------------- */

/* A ranked story id. */
typedef struct ranked {
    double score;
    char id[HR_STORY_ID_LEN + 1];
    bool has_rating; /* the subject's, for top-rated */
    int rating;
    int64_t rating_time_ms;
} ranked;

/* The rankings' order: score descending, then id descending. */
static int ranked_cmp(const void *x, const void *y) {
    const ranked *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return -strcmp(a->id, b->id);
}

static bool id_like(hr_slice m) {
    return m.len == HR_STORY_ID_LEN;
}

/* Fill page->items from ids (n of them) in one batch of each story's
 * fields. Stories gone missing are skipped. */
static int fill_page(hr_ratings *r, const ranked *ids, size_t n, hr_arena *a, hr_story_page *page,
                     hr_err *err) {
    page->items = hr_arena_alloc(a, (n ? n : 1) * sizeof *page->items);
    page->n = 0;
    if (n == 0) return HR_OK;
    hr_batch *b = hr_batch_new();
    size_t *first = hr_arena_alloc(a, n * sizeof *first);
    for (size_t i = 0; i < n; i++)
        first[i] = hr_stories_fill_ops(r->stories, b, hr_slice_of(ids[i].id, HR_STORY_ID_LEN));
    int rc = hr_store_exec(r->store, b, 0, err);
    for (size_t i = 0; rc == HR_OK && i < n; i++) {
        hr_story *st = &page->items[page->n];
        int fr = hr_stories_fill_result(b, first[i], hr_slice_of(ids[i].id, HR_STORY_ID_LEN), a, st, err);
        if (fr == HR_ENOTFOUND) continue;
        if (fr != HR_OK) {
            rc = fr;
            break;
        }
        st->has_rating = ids[i].has_rating;
        st->rating = ids[i].rating;
        st->rating_time_ms = ids[i].rating_time_ms;
        page->n++;
    }
    hr_batch_free(b);
    return rc;
}

/* Top-rated by ranking the subject's ratings since cur's min (the most recent
 * HR_TOP_RATED_SCAN of them): a range read of them, one batch of their
 * stories' sums, a sort in memory, the page from cur's cursor. The way for
 * a subject with few ratings (below seen_min), and the fallback of a walk
 * that found no page within its bound. */
static int rank_ratings(hr_ratings *r, hr_slice subject, const hr_zrange_spec *cur, size_t limit, hr_arena *a,
                        hr_story_page *out, hr_err *err) {
    hr_zrange_spec spec = hr_zrange_all(true, HR_TOP_RATED_SCAN);
    spec.min = cur->min;
    hr_buf k = HR_BUF_INIT, top[HR_RANK_SHARDS];
    for (unsigned i = 0; i < HR_RANK_SHARDS; i++) {
        top[i] = (hr_buf)HR_BUF_INIT;
        hr_stories_rank_key(r->stories, HR_RANK_TOP, i, &top[i]);
    }
    hr_batch *b = hr_batch_new(), *sb = hr_batch_new();
    size_t op = hr_zrange(b, subject_key(&k, r, subject), &spec);
    int rc = hr_store_exec(r->store, b, 0, err);
    const hr_result *res = rc == HR_OK ? hr_batch_result(b, op) : NULL;
    if (res && res->rc != HR_OK) rc = op_error(res, err, "ratings");
    size_t n = 0;
    ranked *items = NULL;
    if (rc == HR_OK && res->n_entries) {
        for (size_t i = 0; i < res->n_entries; i++)
            hr_zscore(sb, hr_buf_slice(&top[hr_stories_rank_shard(res->entries[i].member)]),
                      res->entries[i].member); /* op i */
        rc = hr_store_exec(r->store, sb, 0, err);
        items = hr_arena_alloc(a, res->n_entries * sizeof *items);
        for (size_t i = 0; rc == HR_OK && i < res->n_entries; i++) {
            const hr_result *z = hr_batch_result(sb, i);
            hr_slice m = res->entries[i].member;
            if (z->rc == HR_ENOTFOUND || !id_like(m)) continue; /* not a ranked story */
            if (z->rc != HR_OK) {
                rc = op_error(z, err, "ranking");
                break;
            }
            hr_rating mine;
            if (unstamp(res->entries[i].score, subject, m, a, &mine, NULL) != HR_OK) continue;
            items[n] = (ranked){
                .score = z->score, .has_rating = true, .rating = mine.score, .rating_time_ms = mine.time_ms};
            memcpy(items[n++].id, m.ptr, HR_STORY_ID_LEN);
        }
    }
    size_t from = 0, take = 0;
    if (rc == HR_OK && n) {
        qsort(items, n, sizeof *items, ranked_cmp);
        if (cur->has_cursor) { /* strictly after the cursor in the ranking's order */
            ranked c = {.score = cur->cursor_score};
            if (cur->cursor_member.len == HR_STORY_ID_LEN)
                memcpy(c.id, cur->cursor_member.ptr, HR_STORY_ID_LEN);
            while (from < n && ranked_cmp(&items[from], &c) <= 0)
                from++;
        }
        take = n - from < limit ? n - from : limit;
        rc = fill_page(r, items + from, take, a, out, err);
        if (rc == HR_OK && from + take < n)
            out->next_cursor = hr_list_cursor(a, items[from + take - 1].score,
                                              hr_slice_of(items[from + take - 1].id, HR_STORY_ID_LEN));
    }
    hr_batch_free(sb);
    hr_batch_free(b);
    hr_buf_free(&k);
    for (unsigned i = 0; i < HR_RANK_SHARDS; i++)
        hr_buf_free(&top[i]);
    return rc;
}

/* Make subject's seen set hold every story it has rated: add them all
 * (idempotent, so concurrent upserts and repairs do no harm). Pages of the
 * subject's ratings, one batch of adds each. */
static int seen_rebuild(hr_ratings *r, hr_slice subject, hr_arena *a, hr_err *err) {
    hr_buf k = HR_BUF_INIT, sk = HR_BUF_INIT;
    subject_key(&k, r, subject);
    seen_key(&sk, r, subject);
    hr_batch *b = hr_batch_new(), *ab = hr_batch_new();
    hr_zrange_spec spec = hr_zrange_all(true, WINDOW_MAX); /* newest first: a set of times' order */
    int rc = HR_OK;
    for (;;) {
        hr_batch_reset(b);
        hr_batch_reset(ab);
        size_t op = hr_zrange(b, hr_buf_slice(&k), &spec);
        rc = hr_store_exec(r->store, b, 0, err);
        const hr_result *res = rc == HR_OK ? hr_batch_result(b, op) : NULL;
        if (res && res->rc != HR_OK) rc = op_error(res, err, "ratings");
        if (rc != HR_OK || res->n_entries == 0) break;
        for (size_t i = 0; i < res->n_entries; i++) {
            uint64_t id;
            if (id_u64(res->entries[i].member, &id)) hr_pset_add(ab, hr_buf_slice(&sk), id, 0);
        }
        if (hr_batch_len(ab)) rc = hr_store_exec(r->store, ab, 0, err);
        if (rc != HR_OK || !res->more) break;
        const hr_zentry *last = &res->entries[res->n_entries - 1];
        spec.has_cursor = true;
        spec.cursor_score = last->score;
        spec.cursor_member = hr_arena_copy(a, last->member); /* b is reset next */
    }
    hr_batch_free(ab);
    hr_batch_free(b);
    hr_buf_free(&k);
    hr_buf_free(&sk);
    return rc;
}

/* ---- Walks down a ranking ------------------------------------------------- */

/* What a walk keeps: the stories the subject has not rated (unseen), or
 * those it has rated with a stamp >= min_stamp (top-rated). */
typedef struct walk_goal {
    bool rated;       /* keep the rated stories, with the subject's ratings */
    double min_stamp; /* rated: only ratings stamped at or after it */
} walk_goal;

/* The stamps of the subject's ratings of the n stories e[0..n) (one batch of
 * point reads) into stamps, indexed by an entry's place in kept; a story it
 * has no rating of gets -1. */
static int read_stamps(hr_ratings *r, hr_slice rated, const hr_zentry *const *e, size_t n, const hr_zentry *kept,
                       double *stamps, hr_err *err) {
    hr_batch *b = hr_batch_new();
    for (size_t i = 0; i < n; i++)
        hr_zscore(b, rated, e[i]->member); /* op i */
    int rc = hr_store_exec(r->store, b, 0, err);
    for (size_t i = 0; rc == HR_OK && i < n; i++) {
        const hr_result *z = hr_batch_result(b, i);
        if (z->rc != HR_OK && z->rc != HR_ENOTFOUND) rc = op_error(z, err, "ratings");
        stamps[e[i] - kept] = z->rc == HR_OK ? z->score : -1;
    }
    hr_batch_free(b);
    return rc;
}

/* Walk the ranking of `kind` down from spec's cursor for subject until
 * `limit` stories that meet the goal are found, into found (room for limit;
 * in the ranking's order; *n_found of them). *cursor is set when anything
 * ranks after the last one found, or, when walk_max (HR_UNSEEN_SCAN) entries
 * were read first, where the walk stopped: *cut is set then, and also when a
 * walk for rated stories finds the subject has no seen set (after its first
 * batch, with nothing found). */
static int walk_ranking(hr_ratings *r, hr_slice subject, hr_rank_kind kind, const hr_zrange_spec *spec,
                        size_t limit, walk_goal goal, hr_arena *a, ranked *found, size_t *n_found,
                        const char **cursor, bool *cut, hr_err *err) {
    *n_found = 0;
    *cursor = NULL;
    *cut = false;
    hr_buf rank[HR_RANK_SHARDS], rated = HR_BUF_INIT, seen = HR_BUF_INIT;
    hr_slice rank_keys[HR_RANK_SHARDS];
    for (unsigned i = 0; i < HR_RANK_SHARDS; i++) {
        rank[i] = (hr_buf)HR_BUF_INIT;
        hr_stories_rank_key(r->stories, kind, i, &rank[i]);
        rank_keys[i] = hr_buf_slice(&rank[i]);
    }
    hr_rank_merge *ranking = hr_rank_merge_new(rank_keys, HR_RANK_SHARDS, spec);
    subject_key(&rated, r, subject);
    seen_key(&seen, r, subject);
    size_t scanned = 0;
    size_t window = 2 * limit > WINDOW_MIN ? 2 * limit : WINDOW_MIN;
    bool use_set = false; /* test against the seen set, not the ratings */
    /* A subject known to have a seen set would read a first window only to
     * read a second before its first test: read them as one. */
    uint64_t subject_hash = XXH3_64bits(subject.ptr, subject.len) | 1; /* never 0, the empty slot */
    _Atomic uint64_t *known = &r->with_set[subject_hash & (WITH_SET_SLOTS - 1)];
    if (atomic_load_explicit(known, memory_order_relaxed) == subject_hash && window < SET_TEST_MIN)
        window = SET_TEST_MIN;
    /* Candidates taken from the ranking and not tested yet. */
    const hr_zentry **cand = NULL;
    size_t n_cand = 0, cap_cand = 0;
    hr_zentry last = {0};
    hr_batch **windows = NULL; /* the merge's entries point into them */
    size_t n_windows = 0;
    hr_batch *sb = hr_batch_new();
    int rc = HR_OK;

    for (int round = 0;; round++) {
        hr_batch *b = hr_batch_new();
        windows = hr_xrealloc(windows, (n_windows + 1) * sizeof *windows);
        windows[n_windows++] = b;
        size_t want = window < WINDOW_MAX ? window : WINDOW_MAX;
        if (want > r->walk_max - scanned) want = r->walk_max - scanned;
        hr_rank_merge_plan(ranking, b, want);
        /* With the first window: how many the subject has rated, and how
         * many its seen set holds. */
        size_t card_op = round == 0 ? hr_zcard(b, hr_buf_slice(&rated)) : 0;
        size_t pcard_op = round == 0 ? hr_pset_card(b, hr_buf_slice(&seen)) : 0;
        rc = hr_store_exec(r->store, b, 0, err);
        const hr_zentry *got = NULL;
        size_t n_got = 0;
        if (rc == HR_OK) rc = hr_rank_merge_take(ranking, b, &got, &n_got, &last, err);
        if (rc == HR_OK && round == 0) {
            int64_t n_rated = hr_batch_result(b, card_op)->num, n_set = hr_batch_result(b, pcard_op)->num;
            use_set = (size_t)n_rated >= r->seen_min;
            if (use_set) atomic_store_explicit(known, subject_hash, memory_order_relaxed);
            /* The set holds only stories the subject rated, so equal counts
             * mean equal sets; fewer: the ratings from before the subject
             * reached seen_min (or an upsert that raced with that moment). */
            if (use_set && n_set < n_rated) rc = seen_rebuild(r, subject, a, err);
            /* Rated stories are walked for with a seen set only: a subject
             * without one has few ratings, which the caller ranks instead. */
            if (goal.rated && !use_set) *cut = true;
        }
        if (rc != HR_OK || *cut) break;
        if (n_cand + n_got > cap_cand) {
            cap_cand = 2 * (n_cand + n_got);
            cand = hr_xrealloc(cand, cap_cand * sizeof *cand);
        }
        for (size_t i = 0; i < n_got; i++)
            cand[n_cand++] = &got[i];
        scanned += n_got;
        bool ranking_more = hr_rank_merge_more(ranking);
        bool more = ranking_more && scanned < r->walk_max;
        /* A test of the seen set reads all its chunks however few members
         * it tests (a subject with that many ratings has seen much of the
         * top), so test a first window only together with a bigger one. */
        if (use_set && more && n_cand < SET_TEST_MIN) {
            window = SET_TEST_MIN;
            continue;
        }
        if (n_cand == 0) break;

        /* One batch of membership tests: the seen set (one read of its
         * packed chunks), or the subject's ratings (a point read each). */
        hr_batch_reset(sb);
        if (use_set) {
            uint64_t *ids = hr_arena_alloc(a, n_cand * sizeof *ids);
            for (size_t i = 0; i < n_cand; i++)
                if (!id_u64(cand[i]->member, &ids[i])) ids[i] = 0;
            hr_pset_test(sb, hr_buf_slice(&seen), ids, n_cand);
        } else {
            for (size_t i = 0; i < n_cand; i++)
                hr_zscore(sb, hr_buf_slice(&rated), cand[i]->member); /* op i */
        }
        rc = hr_store_exec(r->store, sb, 0, err);
        const hr_result *tested = rc == HR_OK && use_set ? hr_batch_result(sb, 0) : NULL;
        if (tested && tested->rc != HR_OK) rc = op_error(tested, err, "seen set");
        /* The candidates come in no particular order (rank_merge.h): keep
         * those the goal wants, in place in cand. Rated ones are kept as
         * copies, so that a stamp read later is found by its copy's place. */
        const hr_zentry **order = cand;
        hr_zentry *kept = goal.rated ? hr_arena_alloc(a, n_cand * sizeof *kept) : NULL;
        double *stamps = goal.rated ? hr_arena_alloc(a, n_cand * sizeof *stamps) : NULL;
        size_t n_kept = 0;
        for (size_t i = 0; rc == HR_OK && i < n_cand; i++) {
            bool is_seen;
            if (use_set) {
                is_seen = tested->value.ptr[i] != 0;
            } else {
                const hr_result *z = hr_batch_result(sb, i);
                if (z->rc != HR_OK && z->rc != HR_ENOTFOUND) rc = op_error(z, err, "ratings");
                is_seen = z->rc == HR_OK;
            }
            if (is_seen != goal.rated || !id_like(cand[i]->member)) continue;
            if (kept) {
                kept[n_kept] = *cand[i];
                order[n_kept] = &kept[n_kept];
            } else {
                order[n_kept] = cand[i]; /* n_kept <= i: in place */
            }
            n_kept++;
        }
        /* Put in order the first of them that the page still has room for
         * and take them. Rated stories (the seen set only said they were
         * rated): read the stamps of the ones put in order, take the ones
         * since the goal's stamp, and go on with the rest while the page
         * has room: a subject who rated most of the top reads a page's
         * worth of ratings, not a window's. */
        bool full = false;
        size_t done = 0; /* order[0..done) taken or dropped */
        size_t read_chunk = 2 * (limit - *n_found) + 8; /* a few more: since may drop some */
        while (rc == HR_OK && done < n_kept && !full) {
            size_t chunk = goal.rated ? read_chunk : limit - *n_found;
            if (chunk > n_kept - done) chunk = n_kept - done;
            /* Since dropped many: bigger batches, up to where putting them in
             * order (an insertion each, hr_rank_first) would cost more. */
            if (read_chunk < READ_CHUNK_MAX) read_chunk *= 4;
            hr_rank_first(order + done, n_kept - done, chunk);
            if (goal.rated) rc = read_stamps(r, hr_buf_slice(&rated), order + done, chunk, kept, stamps, err);
            for (size_t i = done; rc == HR_OK && i < done + chunk && !full; i++) {
                const hr_zentry *e = order[i];
                ranked *f = &found[*n_found];
                *f = (ranked){.score = e->score};
                memcpy(f->id, e->member.ptr, HR_STORY_ID_LEN);
                f->id[HR_STORY_ID_LEN] = '\0';
                hr_rating mine;
                if (goal.rated) {
                    double st = stamps[e - kept];
                    if (st < 0 || st < goal.min_stamp) continue; /* no rating, or before since */
                    if (unstamp(st, subject, e->member, a, &mine, NULL) != HR_OK) continue;
                    f->has_rating = true;
                    f->rating = mine.score;
                    f->rating_time_ms = mine.time_ms;
                }
                full = ++*n_found == limit;
                /* A cursor when anything ranks after the page's last item. */
                if (full && (ranking_more || hr_rank_before(e, &last)))
                    *cursor = hr_list_cursor(a, e->score, e->member);
            }
            done += chunk;
        }
        n_cand = 0;
        if (rc != HR_OK || full || !ranking_more) break;
        if (scanned >= r->walk_max) { /* stopped short; the cursor goes on */
            *cursor = hr_list_cursor(a, last.score, last.member);
            *cut = true;
            break;
        }
        /* The next window: twice what the rate of kept stories so far says
         * the rest of the page needs, at most four times the last one (a
         * first window with nothing kept says little about the rate, and
         * every entry read costs: its copy, its test). */
        double rate = (double)(*n_found + 1) / (double)(scanned + 1);
        double want_next = 2.0 * (double)(limit - *n_found) / rate;
        size_t cap = 4 * window < WINDOW_MAX ? 4 * window : WINDOW_MAX;
        window = want_next < (double)window ? window : want_next > (double)cap ? cap : (size_t)want_next;
    }
    hr_batch_free(sb);
    hr_rank_merge_free(ranking);
    for (size_t i = 0; i < n_windows; i++)
        hr_batch_free(windows[i]);
    free(windows);
    free(cand);
    for (unsigned i = 0; i < HR_RANK_SHARDS; i++)
        hr_buf_free(&rank[i]);
    hr_buf_free(&rated);
    hr_buf_free(&seen);
    return rc;
}

/* ---- Story lists for a member: top-rated and unseen ------------------------- */

/* A walk's page into out (see walk_ranking), unless the walk was cut short
 * (*cut) and the caller has another way (!page_if_cut). */
static int walk_page(hr_ratings *r, hr_slice subject, hr_rank_kind kind, const hr_zrange_spec *spec, size_t limit,
                     walk_goal goal, bool page_if_cut, hr_arena *a, hr_story_page *out, bool *cut, hr_err *err) {
    ranked *found = hr_arena_alloc(a, limit * sizeof *found);
    size_t n_found;
    const char *cursor;
    int rc = walk_ranking(r, subject, kind, spec, limit, goal, a, found, &n_found, &cursor, cut, err);
    if (rc != HR_OK || (*cut && !page_if_cut)) return rc;
    rc = fill_page(r, found, n_found, a, out, err);
    out->next_cursor = cursor;
    return rc;
}

int hr_ratings_top_rated(hr_ratings *r, hr_slice subject, const hr_list_req *req, hr_arena *a,
                         hr_story_page *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if (!is_id(subject)) return hr_err_set(err, HR_EINVAL, "subject must be an identifier");
    /* The cursor and limit are checked as a list's; since is a stamp. */
    hr_zrange_spec cur;
    int rc = stamp_spec(req, HR_STORY_ID_LEN, a, &cur, err);
    if (rc != HR_OK) return rc;
    /* Walk the ranking, keeping what the subject rated. One that has rated
     * most of the top (the seed's heavy reader) finds a page in the first
     * window. */
    hr_zrange_spec spec = cur;
    spec.min = -INFINITY; /* since bounds the ratings' times, not the ranking's scores */
    bool cut;
    rc = walk_page(r, subject, HR_RANK_TOP, &spec, req->limit, (walk_goal){true, cur.min}, false, a, out, &cut, err);
    /* No seen set (a few ratings), or past the walk's bound without a page
     * (ratings mostly of stories far down the ranking, or before since):
     * rank the ratings. */
    if (rc != HR_OK || !cut) return rc;
    return rank_ratings(r, subject, &cur, req->limit, a, out, err);
}

int hr_ratings_unseen(hr_ratings *r, hr_slice subject, hr_rank_kind kind, const hr_list_req *req, hr_arena *a,
                      hr_story_page *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if (!is_id(subject)) return hr_err_set(err, HR_EINVAL, "subject must be an identifier");
    hr_zrange_spec spec;
    int rc = hr_list_spec(req, HR_STORY_ID_LEN, a, &spec, err);
    if (rc != HR_OK) return rc;
    spec.min = -INFINITY; /* since does not apply: every story is a candidate */
    bool cut; /* answered short: the cursor goes on */
    return walk_page(r, subject, kind, &spec, req->limit, (walk_goal){false, -INFINITY}, true, a, out, &cut, err);
}
