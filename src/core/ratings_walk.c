/* ratings_walk.c — a member's story lists: top-rated (the highest-ranked
 * stories it rated) and unseen (those it has not), by walks down a story
 * ranking that test each window of candidates against the member's seen set
 * or its ratings; and, for members with few ratings, top-rated by ranking
 * the ratings themselves. ratings.h has the costs. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "core/rank_merge.h"
#include "core/ratings_internal.h"

#define WINDOW_MIN 64      /* unseen: the first window at least */
#define WINDOW_MAX 10000   /* the store's largest range read */
#define SET_TEST_MIN 1024  /* unseen: candidates a first test of a seen set waits for */
#define READ_CHUNK_MAX 512 /* top-rated: ratings read in one batch of a walk, at most ~4x this */

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
            if (hr_ratings_unstamp(res->entries[i].score, subject, m, a, &mine, NULL) != HR_OK) continue;
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
static int read_stamps(hr_ratings *r, hr_slice rated, const hr_zentry *const *e, size_t n,
                       const hr_zentry *kept, double *stamps, hr_err *err) {
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
        size_t done = 0;                                /* order[0..done) taken or dropped */
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
                    if (hr_ratings_unstamp(st, subject, e->member, a, &mine, NULL) != HR_OK) continue;
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
static int walk_page(hr_ratings *r, hr_slice subject, hr_rank_kind kind, const hr_zrange_spec *spec,
                     size_t limit, walk_goal goal, bool page_if_cut, hr_arena *a, hr_story_page *out,
                     bool *cut, hr_err *err) {
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
    rc = walk_page(r, subject, HR_RANK_TOP, &spec, req->limit, (walk_goal){true, cur.min}, false, a, out,
                   &cut, err);
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
    bool cut;             /* answered short: the cursor goes on */
    return walk_page(r, subject, kind, &spec, req->limit, (walk_goal){false, -INFINITY}, true, a, out, &cut,
                     err);
}
