/* ratings.c — the ratings handle, and the upsert (hr_ratings_put): the
 * rating's delta to the story's sum taken under a striped mutex and, on a
 * shared store, a lease; its writes in an order that the next upsert of the
 * pair repairs after a crash. ratings.h has the model, the keys and the
 * costs; ratings_internal.h lists the other parts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "core/exec.h"
#include "core/lease.h"
#include "core/ratings_internal.h"

hr_ratings *hr_ratings_new(hr_store *store, hr_stories *stories) {
    hr_ratings *r = hr_xcalloc(1, sizeof *r);
    r->store = store;
    r->stories = stories;
    r->ns = hr_stories_ns(stories);
    r->seen_min = HR_SEEN_SET_MIN;
    r->walk_max = HR_UNSEEN_SCAN;
    for (size_t i = 0; i < LOCK_STRIPES; i++)
        pthread_mutex_init(&r->locks[i], NULL);
    /* The subjects' records are sets of times (ratings.h). Their family is
     * subject_key's: the key of an empty subject, "{NSrs/}", split before
     * its '}'. Where the store does not act on it (Redis) they are plain
     * sorted sets, read and written the same way. */
    hr_buf k = HR_BUF_INIT;
    hr_slice none_key = subject_key(&k, r, none);
    hr_store_decl times = {.kind = HR_DECL_TIME_SET,
                           .prefix = hr_slice_of(none_key.ptr, none_key.len - 1),
                           .suffix = hr_slice_of(none_key.ptr + none_key.len - 1, 1)};
    hr_store_declare(store, &times);
    hr_buf_free(&k);
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

/* ---- Stamps ---------------------------------------------------------------- */

/* See ratings_internal.h. Not inline: GCC then cannot tell that a rating
 * is filled whenever this answers HR_OK, and warns at its callers. */
int hr_ratings_unstamp(double st, hr_slice s, hr_slice o, hr_arena *a, hr_rating *out, hr_err *err) {
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

/* ---- Upsert ----------------------------------------------------------------- */

/* A vote's tries at a compare-and-set of the sum before it increments
 * instead, and its tries in all (upsert_write). */
#define VOTE_CAS_TRIES 2
#define VOTE_TRIES 4

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
    int held;        /* the subject's score that the story's sum holds */
    bool atomic;     /* the store's batches are atomic (RocksDB): no notes */
    hr_lease *lease; /* on a shared store: held from round trip 1 on */
    hr_slice lease_key;
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
static int upsert_read(upsert *u, hr_batch *b, hr_arena *a, hr_err *err) {
    hr_ratings *r = u->r;
    hr_lease *lease = u->lease;
    size_t old_op = 0, card_op = 0, st_op = 0, lease_op = 0, note_op = 0;
    int rc = HR_OK;
    for (bool again = true; again;) {
        again = false;
        hr_batch_reset(b);
        if (lease) lease_op = hr_lease_take_op(lease, b, u->lease_key);
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
        if ((rc = hr_ratings_unstamp(res->score, u->subject, u->object, a, &u->old, err)) != HR_OK) return rc;
        u->had = true;
        u->old_st = stamp_i(u->old.score, u->old.time_ms);
    } else if (res->rc != HR_ENOTFOUND) {
        return op_error(res, err, "rating");
    }
    u->rated = (size_t)hr_batch_result(b, card_op)->num;
    return u->atomic ? HR_OK : note_result(u, hr_batch_result(b, note_op), err);
}

/* The subject's record {rs/S}, the write that comes last
 * (hr_core_write_last), and on a shared store the lease's return after it
 * (same slot: in order). */
static void add_record(hr_batch *b, void *ctx) {
    upsert *u = ctx;
    hr_zadd(b, subject_key(&u->k, u->r, u->subject), (double)u->st, u->object);
    if (u->lease) hr_lease_drop_op(u->lease, b, u->lease_key);
}

/* Round trip 2, and on Redis Cluster 3: the story's list and the list of
 * all (the old entries go with blind deletes at their stamps, the new one
 * comes with a blind write), the seen set, the vote, and the subject's
 * record last (hr_core_write_last). The vote always runs on Redis Cluster
 * (a delta of 0 too), so that its note follows every upsert. A vote that
 * loses its compare-and-set writes again from what its guards found: the
 * sum (another subject's vote came in between: after VOTE_CAS_TRIES, an
 * increment instead, which cannot lose) or the note (round trip 1's read
 * raced another server's upsert of the pair, whose lease is held by now).
 * *sum: the story's sum afterwards; *settled: whether the hot score
 * followed it. */
static int upsert_write(upsert *u, hr_batch *b, hr_err *err, int64_t *sum, bool *settled) {
    hr_ratings *r = u->r;
    int64_t known = u->story.score;
    hr_voter voter = {
        .id = u->subject, .stamp = (double)u->st, .noted = u->noted ? (double)u->noted_st : NAN};
    bool cas = true;
    for (int tries = 0;; tries++) {
        int64_t delta = u->score - u->held;
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
        bool voting = delta || !u->atomic;
        hr_vote vote = {0};
        if (voting)
            vote = hr_stories_vote_ops(r->stories, b, u->object, u->story.time_ms, known, delta, &voter,
                                       cas && tries < VOTE_CAS_TRIES);
        int rc = hr_core_write_last(r->store, b, add_record, u, "rating", err);
        if (rc == HR_ECONFLICT && voting && tries < VOTE_TRIES) {
            hr_err_clear(err);
            cas = hr_stories_vote_lost(&vote, b, &known, &voter);
            u->noted = !isnan(voter.noted);
            u->noted_st = u->noted ? (int64_t)voter.noted : 0;
            upsert_decide(u);
            continue;
        }
        if (rc != HR_OK) return rc;
        *sum = voting ? hr_stories_vote_sum(&vote, b) : u->story.score;
        *settled = !voting || vote.cas;
        return HR_OK;
    }
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
                .atomic = hr_store_caps_of(r->store)->atomic_batches,
                .k = HR_BUF_INIT,
                .m = HR_BUF_INIT};
    hr_buf lk = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    /* The mutex orders this process's upserts of (subject, object); other
     * servers on a shared store are kept out by the lease (see ratings.h). */
    hr_lease lease, *held = NULL;
    if (hr_store_caps_of(r->store)->shared) {
        hr_lease_init(&lease, HR_LEASE_WAIT_MS);
        lease_key(&lk, r, subject, object);
        held = &lease;
    }
    u.lease = held;
    u.lease_key = hr_buf_slice(&lk);
    pthread_mutex_t *lock = lock_of(r, subject, object);
    pthread_mutex_lock(lock);

    rc = upsert_read(&u, b, a, err);
    upsert_decide(&u);
    bool apply = rc == HR_OK && !(u.had && time_ms < u.old.time_ms);
    int64_t sum = u.story.score;
    bool settled = true;
    if (apply) rc = upsert_write(&u, b, err, &sum, &settled);
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
