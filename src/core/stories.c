/* stories.c — see stories.h for the model, the keys and the costs. */
#include "core/stories.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "common/alloc.h"
#include "common/log.h"
#include "core/exec.h"
#include "core/lease.h"
#include "core/url.h"

#define META_VERSION 1
#define META_HEAD 16  /* version 1, time 8, content length 4, flags 1, URLs 2 */
#define META_ZSTD 1   /* flags: content stored compressed */
#define CONTENT_RAW 0 /* the content value's first byte */
#define CONTENT_ZSTD 1
#define COMPRESS_MIN 1024 /* bytes: smaller content is stored raw */
#define ZSTD_LEVEL 3
#define LOCK_STRIPES 256 /* a power of two */
#define HOT_ROUNDS 8     /* settle_hot gives up after this many (see there) */

struct hr_stories {
    hr_store *store;
    char *ns;
    size_t content_max;
    pthread_mutex_t locks[LOCK_STRIPES];
};

hr_stories *hr_stories_new(hr_store *store, const hr_stories_options *opts) {
    hr_stories *s = hr_xcalloc(1, sizeof *s);
    s->store = store;
    s->ns = hr_xstrdup(opts && opts->ns ? opts->ns : "");
    s->content_max = opts && opts->content_max ? opts->content_max : HR_STORY_CONTENT_MAX;
    for (size_t i = 0; i < LOCK_STRIPES; i++)
        pthread_mutex_init(&s->locks[i], NULL);
    return s;
}

void hr_stories_free(hr_stories *s) {
    if (s == NULL) return;
    for (size_t i = 0; i < LOCK_STRIPES; i++)
        pthread_mutex_destroy(&s->locks[i]);
    free(s->ns);
    free(s);
}

const char *hr_stories_ns(const hr_stories *s) {
    return s->ns;
}

/* ---- Keys ------------------------------------------------------------------ */

/* "{" NS kind part "}" */
static void tag_key(hr_buf *k, const hr_stories *s, const char *kind, hr_slice part) {
    hr_buf_clear(k);
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, s->ns);
    hr_buf_append_str(k, kind);
    hr_buf_append_slice(k, part);
    hr_buf_append_byte(k, '}');
}

static hr_slice meta_key(hr_buf *k, const hr_stories *s, hr_slice id) {
    tag_key(k, s, "st/", id);
    return hr_buf_slice(k);
}

static hr_slice content_key(hr_buf *k, const hr_stories *s, hr_slice id) {
    tag_key(k, s, "stc/", id);
    return hr_buf_slice(k);
}

/* The lookup key of a canonical URL, by its hash in hex (= the id a story
 * created at that URL has). */
static hr_slice url_key(hr_buf *k, const hr_stories *s, hr_slice hash16) {
    tag_key(k, s, "su/", hash16);
    return hr_buf_slice(k);
}

static hr_slice recent_key(hr_buf *k, const hr_stories *s) {
    tag_key(k, s, "stories/recent", hr_slice_of("", 0));
    return hr_buf_slice(k);
}

unsigned hr_stories_rank_shard(hr_slice id) {
    return (unsigned)(XXH3_64bits(id.ptr, id.len) % HR_RANK_SHARDS);
}

/* Append "{NSrank/K}", the hash tag of shard K's keys, to k. */
static void rank_tag(const hr_stories *s, unsigned shard, hr_buf *k) {
    char part[16];
    snprintf(part, sizeof part, "rank/%u}", shard);
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, s->ns);
    hr_buf_append_str(k, part);
}

void hr_stories_rank_key(const hr_stories *s, hr_rank_kind kind, unsigned shard, hr_buf *k) {
    rank_tag(s, shard, k);
    hr_buf_append_str(k, kind == HR_RANK_HOT ? "/hot" : "/top");
}

/* The key of the shard of a ranking that holds story id. */
static hr_slice rank_key(hr_buf *k, const hr_stories *s, hr_rank_kind kind, hr_slice id) {
    hr_buf_clear(k);
    hr_stories_rank_key(s, kind, hr_stories_rank_shard(id), k);
    return hr_buf_slice(k);
}

/* ---- Ids and locks --------------------------------------------------------- */

static void id_of_hash(uint64_t h, char out[HR_STORY_ID_LEN + 1]) {
    snprintf(out, HR_STORY_ID_LEN + 1, "%016" PRIx64, h);
}

/* Canonicalise url into canon (appended) and write into id the id a story
 * created at that URL has: the hash of the canonical form. */
static int canonical_id(hr_slice url, hr_buf *canon, char id[HR_STORY_ID_LEN + 1], hr_err *err) {
    int rc = hr_url_canonical(url, canon, err);
    if (rc != HR_OK) return rc;
    id_of_hash(hr_url_hash(hr_buf_slice(canon)), id);
    return HR_OK;
}

static bool id_valid(hr_slice id) {
    if (id.len != HR_STORY_ID_LEN) return false;
    for (size_t i = 0; i < id.len; i++) {
        char c = id.ptr[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

static size_t stripe_of(hr_slice id) {
    return XXH3_64bits(id.ptr, id.len) & (LOCK_STRIPES - 1);
}

/* Lock the stripes of two ids (the same stripe once), lower stripe first so
 * that two callers never wait on each other in a cycle. */
static void lock2(hr_stories *s, hr_slice a, hr_slice b, size_t held[2]) {
    size_t x = stripe_of(a), y = stripe_of(b);
    held[0] = x < y ? x : y;
    held[1] = x < y ? y : x;
    pthread_mutex_lock(&s->locks[held[0]]);
    if (held[1] != held[0]) pthread_mutex_lock(&s->locks[held[1]]);
}

static void unlock2(hr_stories *s, const size_t held[2]) {
    if (held[1] != held[0]) pthread_mutex_unlock(&s->locks[held[1]]);
    pthread_mutex_unlock(&s->locks[held[0]]);
}

/* On a shared store (several servers: core/lease.h), the leases of the
 * same ids as lock2's, taken after it, in byte order of the ids so that two
 * servers never wait on each other in a cycle. The store's reads come after
 * them: those keys are not in the leases' hash slots. */
typedef struct id_leases {
    hr_buf key[2];
    hr_lease lease[2];
    int n;
} id_leases;

static int lease2(hr_stories *s, hr_slice a, hr_slice b, id_leases *l, hr_err *err) {
    l->n = 0;
    if (!hr_store_caps_of(s->store)->shared) return HR_OK;
    int c = memcmp(a.ptr, b.ptr, HR_STORY_ID_LEN);
    hr_slice ids[2] = {c <= 0 ? a : b, c <= 0 ? b : a};
    int rc = HR_OK;
    for (int i = 0; rc == HR_OK && i < (c ? 2 : 1); i++) {
        l->key[i] = (hr_buf)HR_BUF_INIT;
        tag_key(&l->key[i], s, "lease/", ids[i]);
        hr_lease_init(&l->lease[i], HR_LEASE_WAIT_MS);
        l->n++;
        rc = hr_lease_take(&l->lease[i], s->store, hr_buf_slice(&l->key[i]), "this story", err);
    }
    return rc;
}

static void unlease2(hr_stories *s, id_leases *l) {
    for (int i = l->n - 1; i >= 0; i--) {
        hr_lease_drop(&l->lease[i], s->store, hr_buf_slice(&l->key[i]));
        hr_buf_free(&l->key[i]);
    }
    l->n = 0;
}

/* ---- Records ---------------------------------------------------------------- */

static void meta_encode(hr_buf *out, int64_t time_ms, size_t content_len, bool compressed,
                        const hr_slice *urls, size_t n) {
    hr_buf_clear(out);
    hr_buf_append_byte(out, META_VERSION);
    hr_buf_append_u64be(out, (uint64_t)time_ms);
    hr_buf_append_u32be(out, (uint32_t)content_len);
    hr_buf_append_byte(out, compressed ? META_ZSTD : 0);
    uint8_t nb[2] = {(uint8_t)(n >> 8), (uint8_t)n};
    hr_buf_append(out, nb, 2);
    for (size_t i = 0; i < n; i++) {
        uint8_t lb[2] = {(uint8_t)(urls[i].len >> 8), (uint8_t)urls[i].len};
        hr_buf_append(out, lb, 2);
        hr_buf_append_slice(out, urls[i]);
    }
}

static int corrupt(hr_err *err, hr_slice id, const char *what) {
    return hr_err_set(err, HR_EINTERNAL, "story %.*s: %s is corrupt", (int)id.len, id.ptr, what);
}

/* Decode a metadata record into *out (urls copied into a). */
static int meta_decode(hr_slice id, hr_slice v, hr_arena *a, hr_story *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if (v.len < META_HEAD || (uint8_t)v.ptr[0] != META_VERSION) return corrupt(err, id, "metadata");
    hr_slice copy = hr_arena_copy(a, v);
    const uint8_t *p = (const uint8_t *)copy.ptr;
    out->time_ms = (int64_t)hr_load_u64be(p + 1);
    out->content_len = hr_load_u32be(p + 9);
    out->compressed = (p[13] & META_ZSTD) != 0;
    size_t n = (size_t)p[14] << 8 | p[15];
    if (n < 1 || n > HR_STORY_URLS_MAX) return corrupt(err, id, "metadata");
    out->urls = hr_arena_alloc(a, n * sizeof *out->urls);
    size_t at = META_HEAD;
    for (size_t i = 0; i < n; i++) {
        if (at + 2 > v.len) return corrupt(err, id, "metadata");
        size_t len = (size_t)p[at] << 8 | p[at + 1];
        at += 2;
        if (at + len > v.len) return corrupt(err, id, "metadata");
        out->urls[i] = hr_slice_of(copy.ptr + at, len);
        at += len;
    }
    out->n_urls = n;
    out->url = out->urls[0];
    memcpy(out->id, id.ptr, HR_STORY_ID_LEN);
    out->id[HR_STORY_ID_LEN] = '\0';
    return HR_OK;
}

/* The stored form of content in out: raw, or zstd when that pays. */
static void content_encode(hr_slice content, hr_buf *out, bool *compressed) {
    hr_buf_clear(out);
    *compressed = false;
    if (content.len > COMPRESS_MIN) {
        size_t bound = ZSTD_compressBound(content.len);
        hr_buf_reserve(out, 1 + bound);
        out->data[0] = CONTENT_ZSTD;
        size_t n = ZSTD_compress(out->data + 1, bound, content.ptr, content.len, ZSTD_LEVEL);
        if (!ZSTD_isError(n) && n <= content.len - content.len / 10) {
            out->len = 1 + n;
            out->data[out->len] = '\0';
            *compressed = true;
            return;
        }
    }
    hr_buf_append_byte(out, CONTENT_RAW);
    hr_buf_append_slice(out, content);
}

static int content_decode(hr_slice id, hr_slice v, hr_arena *a, hr_slice *out, hr_err *err) {
    if (v.len < 1) return corrupt(err, id, "content");
    if (v.ptr[0] == CONTENT_RAW) {
        *out = hr_arena_copy(a, hr_slice_of(v.ptr + 1, v.len - 1));
        return HR_OK;
    }
    if (v.ptr[0] != CONTENT_ZSTD) return corrupt(err, id, "content");
    unsigned long long size = ZSTD_getFrameContentSize(v.ptr + 1, v.len - 1);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > HR_VALUE_MAX)
        return corrupt(err, id, "content");
    char *buf = hr_arena_alloc(a, (size_t)size + 1);
    size_t n = ZSTD_decompress(buf, (size_t)size, v.ptr + 1, v.len - 1);
    if (ZSTD_isError(n) || n != size) return corrupt(err, id, "content");
    buf[n] = '\0';
    *out = hr_slice_of(buf, n);
    return HR_OK;
}

static bool has_url(const hr_story *st, hr_slice canon) {
    for (size_t i = 0; i < st->n_urls; i++)
        if (hr_slice_eq(st->urls[i], canon)) return true;
    return false;
}

/* ---- Reading stories ---------------------------------------------------- */

size_t hr_stories_fill_ops(const hr_stories *s, hr_batch *b, hr_slice id) {
    hr_buf k = HR_BUF_INIT;
    size_t first = hr_get(b, meta_key(&k, s, id));
    hr_zscore(b, rank_key(&k, s, HR_RANK_TOP, id), id);
    hr_buf_free(&k);
    return first;
}

int hr_stories_fill_result(const hr_batch *b, size_t first, hr_slice id, hr_arena *a, hr_story *out,
                           hr_err *err) {
    const hr_result *m = hr_batch_result(b, first), *sc = hr_batch_result(b, first + 1);
    if (m->rc == HR_ENOTFOUND) {
        memset(out, 0, sizeof *out);
        return HR_ENOTFOUND;
    }
    if (m->rc != HR_OK)
        return hr_err_set(err, m->rc, "story %.*s: %s", (int)id.len, id.ptr, hr_strerror(m->rc));
    int rc = meta_decode(id, m->value, a, out, err);
    if (rc != HR_OK) return rc;
    /* Not in the ranking yet: a create between its writes and its vote op. */
    if (sc->rc == HR_OK)
        out->score = (int64_t)llround(sc->score);
    else if (sc->rc != HR_ENOTFOUND)
        return hr_err_set(err, sc->rc, "ranking: %s", hr_strerror(sc->rc));
    out->hot = hr_rank_hot(out->score, out->time_ms);
    return HR_OK;
}

static int not_found(hr_err *err, hr_slice id) {
    return hr_err_set(err, HR_ENOTFOUND, "no story '%.*s'", (int)id.len, id.ptr);
}

/* One story by id in one round trip: metadata, score, and content if asked. */
static int get_one(hr_stories *s, hr_slice id, bool with_content, hr_arena *a, hr_story *out, hr_err *err) {
    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT;
    size_t f = hr_stories_fill_ops(s, b, id);
    size_t c = with_content ? hr_get(b, content_key(&k, s, id)) : 0;
    int rc = hr_store_exec(s->store, b, 0, err);
    if (rc == HR_OK) rc = hr_stories_fill_result(b, f, id, a, out, err);
    if (rc == HR_OK && with_content) {
        const hr_result *r = hr_batch_result(b, c);
        out->has_content = true;
        if (r->rc == HR_OK)
            rc = content_decode(id, r->value, a, &out->content, err);
        else if (r->rc != HR_ENOTFOUND)
            rc = hr_err_set(err, r->rc, "story content: %s", hr_strerror(r->rc));
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

int hr_stories_get(hr_stories *s, hr_slice id, bool with_content, hr_arena *a, hr_story *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if (!id_valid(id)) return not_found(err, id);
    int rc = get_one(s, id, with_content, a, out, err);
    return rc == HR_ENOTFOUND ? not_found(err, id) : rc;
}

/* The id a lookup key holds, validated. */
static int lookup_value(const hr_result *r, hr_slice *id, hr_err *err) {
    if (r->rc != HR_OK)
        return r->rc == HR_ENOTFOUND ? HR_ENOTFOUND
                                     : hr_err_set(err, r->rc, "url lookup: %s", hr_strerror(r->rc));
    if (!id_valid(r->value)) return hr_err_set(err, HR_EINTERNAL, "url lookup: corrupt story id");
    *id = r->value;
    return HR_OK;
}

int hr_stories_find(hr_stories *s, hr_slice url, bool with_content, hr_arena *a, hr_story *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    hr_buf canon = HR_BUF_INIT, k = HR_BUF_INIT;
    char hid[HR_STORY_ID_LEN + 1];
    int rc = canonical_id(url, &canon, hid, err);
    if (rc != HR_OK) return rc;
    hr_slice hs = hr_slice_of(hid, HR_STORY_ID_LEN);

    /* Most lookups are of a story's first URL: read that story speculatively
     * with the lookup key, so they cost one round trip. */
    hr_batch *b = hr_batch_new();
    size_t u = hr_get(b, url_key(&k, s, hs));
    size_t f = hr_stories_fill_ops(s, b, hs);
    size_t c = with_content ? hr_get(b, content_key(&k, s, hs)) : 0;
    rc = hr_store_exec(s->store, b, 0, err);
    hr_slice owner = {0};
    if (rc == HR_OK) rc = lookup_value(hr_batch_result(b, u), &owner, err);
    if (rc == HR_OK && !hr_slice_eq(owner, hs)) {
        /* An alias: the story is elsewhere. */
        char oid[HR_STORY_ID_LEN + 1];
        memcpy(oid, owner.ptr, HR_STORY_ID_LEN);
        oid[HR_STORY_ID_LEN] = '\0';
        rc = get_one(s, hr_slice_of(oid, HR_STORY_ID_LEN), with_content, a, out, err);
    } else if (rc == HR_OK || rc == HR_ENOTFOUND) {
        /* The URL's own story (with no lookup key only after a crash
         * between a create's writes; it must hold the URL). */
        rc = hr_stories_fill_result(b, f, hs, a, out, err);
        if (rc == HR_OK && !has_url(out, hr_buf_slice(&canon))) rc = HR_ENOTFOUND;
        if (rc == HR_OK && with_content) {
            const hr_result *r = hr_batch_result(b, c);
            out->has_content = true;
            if (r->rc == HR_OK)
                rc = content_decode(hs, r->value, a, &out->content, err);
            else if (r->rc != HR_ENOTFOUND)
                rc = hr_err_set(err, r->rc, "story content: %s", hr_strerror(r->rc));
        }
    }
    if (rc == HR_ENOTFOUND) rc = hr_err_set(err, HR_ENOTFOUND, "no story has the url %s", canon.data);
    hr_batch_free(b);
    hr_buf_free(&canon);
    hr_buf_free(&k);
    return rc;
}

/* ---- The hot ranking -------------------------------------------------------- */

size_t hr_stories_vote_op(const hr_stories *s, hr_batch *b, hr_slice id, int64_t delta) {
    hr_buf k = HR_BUF_INIT;
    size_t op = hr_zincr(b, rank_key(&k, s, HR_RANK_TOP, id), (double)delta, id);
    hr_buf_free(&k);
    return op;
}

/* The key of story id's vote notes, into k. */
static hr_slice votes_key(hr_buf *k, const hr_stories *s, hr_slice id) {
    hr_buf_clear(k);
    rank_tag(s, hr_stories_rank_shard(id), k);
    hr_buf_append_str(k, "/votes/");
    hr_buf_append_slice(k, id);
    return hr_buf_slice(k);
}

hr_vote hr_stories_vote_ops(const hr_stories *s, hr_batch *b, hr_slice id, int64_t time_ms, int64_t known_sum,
                            int64_t delta, const hr_voter *voter, bool cas) {
    hr_vote v = {.cas = cas, .guess = known_sum + delta, .guards = hr_batch_len(b)};
    hr_buf k = HR_BUF_INIT, vk = HR_BUF_INIT;
    /* Notes where a crash can cut a change short: see stories.h. */
    v.has_note = !hr_store_caps_of(s->store)->atomic_batches;
    if (v.has_note) hr_zguard(b, votes_key(&vk, s, id), voter->id, voter->noted);
    if (cas) hr_zguard(b, rank_key(&k, s, HR_RANK_TOP, id), id, (double)known_sum);
    if (v.has_note) hr_zadd(b, votes_key(&vk, s, id), voter->stamp, voter->id);
    if (cas) {
        v.op = hr_zadd(b, rank_key(&k, s, HR_RANK_TOP, id), (double)v.guess, id);
        hr_zadd(b, rank_key(&k, s, HR_RANK_HOT, id), hr_rank_hot(v.guess, time_ms), id);
    } else {
        v.op = hr_stories_vote_op(s, b, id, delta);
    }
    hr_buf_free(&k);
    hr_buf_free(&vk);
    return v;
}

bool hr_stories_vote_lost(const hr_vote *v, const hr_batch *b, int64_t *known_sum, hr_voter *voter) {
    size_t g = v->guards;
    if (v->has_note) {
        const hr_result *r = hr_batch_result(b, g++);
        if (r->rc == HR_OK || r->rc == HR_ENOTFOUND) voter->noted = r->rc == HR_OK ? r->score : NAN;
    }
    if (!v->cas) return true;
    const hr_result *r = hr_batch_result(b, g);
    if (r->rc == HR_OK) *known_sum = (int64_t)llround(r->score);
    return r->rc != HR_ENOTFOUND;
}

int64_t hr_stories_vote_sum(const hr_vote *v, const hr_batch *b) {
    return v->cas ? v->guess : (int64_t)llround(hr_batch_result(b, v->op)->score);
}

size_t hr_stories_vote_note_op(const hr_stories *s, hr_batch *b, hr_slice id, hr_slice voter) {
    hr_buf k = HR_BUF_INIT;
    size_t op = hr_zscore(b, votes_key(&k, s, id), voter);
    hr_buf_free(&k);
    return op;
}

/* Why this converges under concurrent votes (and creates, which are votes
 * of 0). Every writer first adds its delta to top with hr_zincr, which is
 * atomic and answers the sum after its increment, then runs rounds of one
 * atomic batch {hot := f(sum known), read top}, until the sum read equals
 * the one it wrote f of. Let L be the writer whose increment is the last
 * one, and S the final sum. Consider the last round of any writer to run:
 * it ran after L's increment (L itself runs a round after it), so the sum
 * it read, atomically with its write, is S; it stopped, so it had written
 * f(S). Hence hot = f(S) once every writer is done, whatever the
 * interleaving, and there is no re-scoring job. A writer that gives up
 * after HOT_ROUNDS (only under a storm of votes on one story) leaves hot
 * off until the next vote of that story settles it. f must depend only on
 * the sum and the story's time, which never changes.
 *
 * A vote of hr_stories_vote_ops with cas is a round that stopped: it read
 * the sum (its guard) and wrote hot = f(the sum it wrote) in one atomic
 * step. Its writer skips settle_hot; one without cas runs rounds as above. */
int hr_stories_settle_hot(hr_stories *s, hr_slice id, int64_t time_ms, int64_t sum, hr_err *err) {
    hr_buf top = HR_BUF_INIT, hot = HR_BUF_INIT;
    rank_key(&top, s, HR_RANK_TOP, id);
    rank_key(&hot, s, HR_RANK_HOT, id);
    hr_batch *b = hr_batch_new();
    int rc = HR_OK;
    bool settled = false;
    for (int round = 0; round < HOT_ROUNDS && !settled && rc == HR_OK; round++) {
        hr_batch_reset(b);
        hr_zadd(b, hr_buf_slice(&hot), hr_rank_hot(sum, time_ms), id);
        size_t op = hr_zscore(b, hr_buf_slice(&top), id);
        rc = hr_store_exec(s->store, b, HR_EXEC_ATOMIC, err);
        if (rc != HR_OK) break;
        const hr_result *r = hr_batch_result(b, op);
        if (r->rc == HR_ENOTFOUND) break; /* not ranked: nothing to follow */
        if (r->rc != HR_OK) {
            rc = hr_err_set(err, r->rc, "ranking: %s", hr_strerror(r->rc));
            break;
        }
        int64_t now = (int64_t)llround(r->score);
        settled = now == sum;
        sum = now;
    }
    if (rc == HR_OK && !settled)
        hr_warn("stories: hot score of %.*s not settled after %d rounds; the next vote settles it",
                (int)id.len, id.ptr, HOT_ROUNDS);
    hr_batch_free(b);
    hr_buf_free(&top);
    hr_buf_free(&hot);
    return rc;
}

/* ---- Creating stories and adding URLs ---------------------------------- */

/* Run the write batch b of story id (hr_core_exec: every op must succeed;
 * errors name the story). */
/* "story ID", what a failed batch of the story names. */
static const char *story_what(char what[32], hr_slice id) {
    snprintf(what, 32, "story %.*s", (int)id.len, id.ptr);
    return what;
}

static int exec_all(hr_stories *s, hr_batch *b, hr_slice id, hr_err *err) {
    char what[32];
    return hr_core_exec(s->store, b, 0, story_what(what, id), err);
}

/* A story's metadata record, the write that makes it exist (create). */
typedef struct story_record {
    hr_stories *s;
    hr_slice id, value;
} story_record;

static void put_record(hr_batch *b, void *ctx) {
    story_record *r = ctx;
    hr_buf k = HR_BUF_INIT;
    hr_put(b, meta_key(&k, r->s, r->id), r->value, 0);
    hr_buf_free(&k);
}

int hr_stories_create(hr_stories *s, hr_slice url, hr_slice content, int64_t time_ms, hr_arena *a,
                      hr_story *out, bool *duplicate, hr_err *err) {
    memset(out, 0, sizeof *out);
    *duplicate = false;
    if (content.len > s->content_max)
        return hr_err_set(err, HR_ETOOBIG, "content is %zu bytes; at most %zu (story_content_max)",
                          content.len, s->content_max);
    if (time_ms < 0 || time_ms > HR_TIME_MAX_MS)
        return hr_err_set(err, HR_EINVAL, "time must be 0..%lld ms since the epoch", HR_TIME_MAX_MS);
    hr_buf canon = HR_BUF_INIT;
    char idbuf[HR_STORY_ID_LEN + 1];
    int rc = canonical_id(url, &canon, idbuf, err);
    if (rc != HR_OK) return rc;
    hr_slice cs = hr_buf_slice(&canon);
    hr_slice id = hr_slice_of(idbuf, HR_STORY_ID_LEN);

    hr_buf k = HR_BUF_INIT, v = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t held[2];
    lock2(s, id, id, held); /* creates of one URL, and adding it as an alias */
    id_leases leases;
    rc = lease2(s, id, id, &leases, err);

    size_t u = hr_get(b, url_key(&k, s, id));
    size_t f = hr_stories_fill_ops(s, b, id);
    if (rc == HR_OK) rc = hr_store_exec(s->store, b, 0, err);
    hr_slice owner = {0};
    int found = rc == HR_OK ? lookup_value(hr_batch_result(b, u), &owner, err) : rc;
    bool repair_lookup = false;
    rc = found == HR_ENOTFOUND ? HR_OK : found;
    if (rc == HR_OK && found == HR_OK && !hr_slice_eq(owner, id)) {
        /* A variant of an alias of another story. */
        char oid[HR_STORY_ID_LEN + 1];
        memcpy(oid, owner.ptr, HR_STORY_ID_LEN);
        oid[HR_STORY_ID_LEN] = '\0';
        rc = get_one(s, hr_slice_of(oid, HR_STORY_ID_LEN), false, a, out, err);
        if (rc == HR_OK)
            *duplicate = true;
        else if (rc == HR_ENOTFOUND)
            rc = HR_OK; /* a lookup key left by a crash */
    }
    if (rc == HR_OK && !*duplicate) {
        /* The story created at this URL, if any. */
        rc = hr_stories_fill_result(b, f, id, a, out, err);
        if (rc == HR_OK) {
            *duplicate = true;
            repair_lookup = found != HR_OK || !hr_slice_eq(owner, id);
        } else if (rc == HR_ENOTFOUND) {
            rc = HR_OK;
        }
    }
    /* The story at our id must hold the URL, else two URLs share a hash. */
    if (rc == HR_OK && *duplicate && strcmp(out->id, idbuf) == 0 && !has_url(out, cs))
        rc = hr_err_set(err, HR_ECONFLICT, "url %s collides with the id of story %s", canon.data, out->id);

    /* The writes. The metadata record is what makes the story exist (a
     * retry of this create finds it and writes nothing more), so it comes
     * last (hr_core_write_last): a crash before it leaves pieces that the
     * retry writes again. No vote can reach the story before its metadata
     * exists (votes read it first), so its hot score is that of a sum of 0
     * and is written with the rest. */
    int64_t sum = 0;
    if (rc == HR_OK && (!*duplicate || repair_lookup)) {
        hr_batch_reset(b);
        hr_put(b, url_key(&k, s, id), id, 0);
        if (*duplicate) {
            rc = exec_all(s, b, id, err);
        } else {
            bool compressed;
            content_encode(content, &v, &compressed);
            hr_put(b, content_key(&k, s, id), hr_buf_slice(&v), 0);
            hr_zadd(b, recent_key(&k, s), (double)time_ms, id);
            /* A vote of 0: enters the ranking without resetting a sum. */
            size_t vote = hr_stories_vote_op(s, b, id, 0);
            hr_zadd(b, rank_key(&k, s, HR_RANK_HOT, id), hr_rank_hot(0, time_ms), id);
            meta_encode(&v, time_ms, content.len, compressed, &cs, 1);
            story_record rec = {.s = s, .id = id, .value = hr_buf_slice(&v)};
            char what[32];
            rc = hr_core_write_last(s->store, b, put_record, &rec, story_what(what, id), err);
            if (rc == HR_OK) sum = (int64_t)llround(hr_batch_result(b, vote)->score);
            if (rc == HR_OK) rc = meta_decode(id, hr_buf_slice(&v), a, out, err);
        }
    }
    unlease2(s, &leases);
    unlock2(s, held);

    /* A sum other than 0 (votes from a server of an older herald) needs its
     * hot score settled. */
    if (rc == HR_OK && !*duplicate) {
        if (sum != 0) rc = hr_stories_settle_hot(s, id, time_ms, sum, err);
        out->score = sum;
        out->hot = hr_rank_hot(sum, time_ms);
    }
    hr_batch_free(b);
    hr_buf_free(&canon);
    hr_buf_free(&k);
    hr_buf_free(&v);
    return rc;
}

int hr_stories_add_url(hr_stories *s, hr_slice id, hr_slice url, bool preferred, hr_arena *a, hr_story *out,
                       bool *added, hr_err *err) {
    memset(out, 0, sizeof *out);
    *added = false;
    if (!id_valid(id)) return not_found(err, id);
    hr_buf canon = HR_BUF_INIT;
    char hid[HR_STORY_ID_LEN + 1];
    int rc = canonical_id(url, &canon, hid, err);
    if (rc != HR_OK) return rc;
    hr_slice cs = hr_buf_slice(&canon);
    hr_slice hs = hr_slice_of(hid, HR_STORY_ID_LEN);

    hr_buf k = HR_BUF_INIT, v = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t held[2];
    lock2(s, id, hs, held);
    id_leases leases;
    rc = lease2(s, id, hs, &leases, err);

    /* The story, the URL's lookup key, and the story created at the URL if
     * any (whose lookup key a crash may have lost). */
    size_t f = hr_stories_fill_ops(s, b, id);
    size_t u = hr_get(b, url_key(&k, s, hs));
    size_t other = hr_get(b, meta_key(&k, s, hs));
    if (rc == HR_OK) rc = hr_store_exec(s->store, b, 0, err);
    if (rc == HR_OK) rc = hr_stories_fill_result(b, f, id, a, out, err);
    if (rc == HR_ENOTFOUND) rc = not_found(err, id);
    hr_slice owner = {0};
    bool has_lookup = false;
    if (rc == HR_OK) {
        int lr = lookup_value(hr_batch_result(b, u), &owner, err);
        if (lr == HR_OK)
            has_lookup = true;
        else if (lr == HR_ENOTFOUND && hr_batch_result(b, other)->rc == HR_OK)
            owner = hs;
        else if (lr != HR_ENOTFOUND)
            rc = lr;
    }
    if (rc == HR_OK && owner.len && !hr_slice_eq(owner, id))
        rc = hr_err_set(err, HR_ECONFLICT, "url %s belongs to story %.*s", canon.data, (int)owner.len,
                        owner.ptr);

    size_t at = out->n_urls;
    for (size_t i = 0; rc == HR_OK && i < out->n_urls; i++)
        if (hr_slice_eq(out->urls[i], cs)) at = i;
    bool is_new = at == out->n_urls;
    if (rc == HR_OK && is_new && out->n_urls >= HR_STORY_URLS_MAX)
        rc = hr_err_set(err, HR_ECONFLICT, "story %.*s already has %d urls, the most it may have",
                        (int)id.len, id.ptr, HR_STORY_URLS_MAX);
    bool rewrite = rc == HR_OK && (is_new || (preferred && at != 0));
    if (rc == HR_OK && (rewrite || !has_lookup)) {
        /* preferred: the URL first, the others in their order; else the
         * order stays and a new URL goes last. */
        hr_slice *urls = hr_arena_alloc(a, (out->n_urls + 1) * sizeof *urls);
        size_t n = 0;
        if (preferred) urls[n++] = hr_arena_copy(a, cs);
        for (size_t i = 0; i < out->n_urls; i++)
            if (!preferred || !hr_slice_eq(out->urls[i], cs)) urls[n++] = out->urls[i];
        if (!preferred && is_new) urls[n++] = hr_arena_copy(a, cs);
        hr_batch_reset(b);
        if (rewrite) {
            meta_encode(&v, out->time_ms, out->content_len, out->compressed, urls, n);
            hr_put(b, meta_key(&k, s, id), hr_buf_slice(&v), 0);
        }
        hr_put(b, url_key(&k, s, hs), id, 0);
        rc = exec_all(s, b, id, err);
        if (rc == HR_OK) {
            out->urls = urls;
            out->n_urls = n;
            out->url = urls[0];
            *added = is_new;
        }
    }
    unlease2(s, &leases);
    unlock2(s, held);
    hr_batch_free(b);
    hr_buf_free(&canon);
    hr_buf_free(&k);
    hr_buf_free(&v);
    return rc;
}

/* ---- Lists ----------------------------------------------------------------- */

int hr_stories_recent(hr_stories *s, const hr_list_req *req, hr_arena *a, hr_story_page *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    hr_zrange_spec spec;
    int rc = hr_list_spec(req, HR_STORY_ID_LEN, a, &spec, err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op = hr_zrange(b, recent_key(&k, s), &spec);
    rc = hr_store_exec(s->store, b, 0, err);
    const hr_result *r = rc == HR_OK ? hr_batch_result(b, op) : NULL;
    if (r && r->rc != HR_OK) rc = hr_err_set(err, r->rc, "recent stories: %s", hr_strerror(r->rc));
    if (rc == HR_OK && r->n_entries) {
        hr_batch *fb = hr_batch_new();
        size_t *first = hr_arena_alloc(a, r->n_entries * sizeof *first);
        for (size_t i = 0; i < r->n_entries; i++)
            first[i] = hr_stories_fill_ops(s, fb, r->entries[i].member);
        rc = hr_store_exec(s->store, fb, 0, err);
        out->items = hr_arena_alloc(a, r->n_entries * sizeof *out->items);
        for (size_t i = 0; rc == HR_OK && i < r->n_entries; i++) {
            int fr = hr_stories_fill_result(fb, first[i], r->entries[i].member, a, &out->items[out->n], err);
            if (fr == HR_OK)
                out->n++;
            else if (fr != HR_ENOTFOUND)
                rc = fr; /* a lost story: skipped */
        }
        hr_batch_free(fb);
        if (rc == HR_OK && r->more) {
            const hr_zentry *last = &r->entries[r->n_entries - 1];
            out->next_cursor = hr_list_cursor(a, last->score, last->member);
        }
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}
