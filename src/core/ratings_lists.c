/* ratings_lists.c — ratings read back: a subject's rating of a story
 * (hr_ratings_get), and the newest-first pages of a subject's ratings, a
 * story's, and all ratings (by date, merged from their shards), each in one
 * round trip. */
#include <math.h>
#include <string.h>

#include "core/ratings_internal.h"

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
            rc = hr_ratings_unstamp(res->score, subject, object, a, out, err);
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
    hr_tlrange_spec tl = hr_tlrange_all(limit, 0);                   /* no entry expires */
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
        if (hr_ratings_unstamp(res->entries[i].score, s, o, a, &out->items[out->n], err) == HR_OK) out->n++;
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
