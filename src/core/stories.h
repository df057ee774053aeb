/* stories.h — stories: a text with one or more URLs, one of them preferred,
 * found by any variant of any of them; and the two story rankings (seed 002,
 * the social reader data model).
 *
 * A story is created from a URL. The URL is canonicalised (core/url.h), so
 * the variants a share button or a feed produce (http/https, www., :80,
 * index.html, a trailing slash, utm_* parameters...) are one story: creating
 * a story at a variant of a known story's URL answers that story, marked a
 * duplicate, and changes nothing. More URLs can be added to a story later
 * (aliases, e.g. an AMP page or a syndicated copy), and any one made the
 * preferred URL that lists show.
 *
 * Story id: the 16 lower-case hex digits of hr_url_hash(canonical first
 * URL). Deterministic, so two concurrent creates of one URL (two feeds
 * posting the same link, or two herald processes) write the same id and the
 * same index entries: creation is idempotent, and no compare-and-set is
 * needed to avoid two stories for one URL. A 64-bit hash can collide; a
 * collision is detected (the story found does not hold the URL) and answered
 * HR_ECONFLICT rather than merging two pages.
 *
 * Storage keys (braces are Redis Cluster hash tags; NS is the namespace of
 * hr_stories_options, "" in the server; '/' cannot occur in identifiers):
 *
 *   {NSst/ID}          value  story metadata, binary (below): small, so
 *                             lists never read content
 *   {NSstc/ID}         value  content: a flag byte (0 raw, 1 zstd) + bytes
 *   {NSsu/HASH16}      value  the story id of a canonical URL (the first URL
 *                             and every alias), HASH16 = hex hr_url_hash
 *   {NSstories/recent} zset   member ID, score = story time (ms)
 *   {NSrank/K}/top     zset   member ID, score = sum of ratings, for the
 *                             stories of shard K (0..HR_RANK_SHARDS-1)
 *   {NSrank/K}/hot     zset   member ID, score = hr_rank_hot(sum, time)
 *   {NSrank/K}/votes/ID zset  Redis Cluster only: whose votes the sum
 *                             holds: member S, score = the stamp of the
 *                             rating of subject S that the sum last
 *                             changed for (core/ratings.h), written in one
 *                             step with the sum (hr_stories_vote_ops)
 *
 * Metadata record (big-endian):
 *
 *   +----+---------+-------------+-------+--------+------------+-----+
 *   | 01 | time 8B | content 4B  | flags | n 2B   | len 2B url | ... |  x n
 *   +----+---------+-------------+-------+--------+------------+-----+
 *    ver   ms        length as     bit0:   URLs,   canonical URLs, the
 *                    posted        zstd            preferred one first
 *
 * Content is stored whole, zstd-compressed (level 3) when it is over 1 KiB
 * and compression saves at least 10 %, else raw. At most content_max bytes
 * (the story_content_max setting), else HR_ETOOBIG.
 *
 * The rankings. "top" holds every story from its creation (score 0), so
 * unrated stories are in it and "unseen" finds them. Its score changes only
 * by hr_zincr (atomic: concurrent votes never lose one). "hot" is a
 * function of (sum, story time) that never decays by itself (core/rank.h),
 * so it is stored and rewritten only when the sum changes. A story's two
 * entries share one hash tag ({NSrank/K}) so that writing hot and
 * re-reading the sum is one atomic batch (hr_stories_settle_hot explains
 * why that converges).
 *
 * Why shards (K = hr_stories_rank_shard(ID), a hash of the id): every vote
 * writes a ranking, and a store serialises the writes of one key (RocksDB
 * holds the key's lock through the commit; Redis runs one node's commands
 * one at a time). With one ranking, the votes of two threads on different
 * stories queued behind each other: two threads upserted no more ratings
 * than one. With HR_RANK_SHARDS of them, two votes wait for each
 * other only when their stories share a shard. Readers of the whole order
 * read every shard in one batch and merge (core/rank_merge.h).
 *
 * Concurrency: metadata is read-modify-write (adding a URL). In one process
 * a striped mutex per story id serialises those, and creates of one URL.
 * Between servers sharing one Redis Cluster (hr_store_caps shared), each with
 * its own mutexes, the same ids are also leased in the store (core/lease.h)
 * in byte order, each in a batch of its own before the first read: without
 * that, two URLs added to one story at the same instant on two servers
 * could lose one from the story's list (test_stories.c's two-server test
 * lost 13-15 of 48 so). A lease held past HR_LEASE_WAIT_MS answers
 * HR_ECONFLICT (409).
 * Crash consistency. A story exists once its metadata record does: a
 * create that finds it is a duplicate and writes nothing more (but a
 * missing lookup key). So a create writes the metadata last: with the rest
 * in one atomic WriteBatch on RocksDB; on Redis Cluster, where a batch is a
 * pipeline over several slots, in a batch of its own after the lookup key,
 * the content, the recent list and both rankings are answered. A crash
 * before it leaves pieces that nothing shows (lists and rankings skip ids
 * without metadata; a lookup key to no story is ignored) and that the
 * retry of the create writes again. The hot score is written with the rest
 * (a new story's sum is 0: a vote needs the metadata first), not settled
 * after: a crash in between left a story out of the hot ranking on both
 * stores until its first vote. test_stories.c (create_after_a_crash) kills
 * a create, and an add_url, in every subset of every batch: an add_url
 * writes the new lookup key whether or not the metadata already lists the
 * URL, so its retry repairs either half.
 *
 * Cost in store round trips (one batch each):
 *   create      2 (a new story: lookup, writes; 3 on Redis Cluster, the
 *               metadata last), 1 for a duplicate of the URL's own story, 2
 *               for a duplicate by alias
 *   get         1 (metadata, content, score)
 *   find (url)  1 when the URL is the story's first, 2 through an alias
 *   add_url     2 (1 when the URL is already the story's and no switch)
 *   recent      2 (a range read, a multi-get of metadata + scores)
 *   settle_hot  1 (an atomic batch on the story's {rank/K} slot), more only while
 *               other votes of the same story land at the same moment
 * On Redis Cluster, create and add_url take 2 more (the lease's take and its
 * return), add_url with a URL of another id 4 more (two leases). */
#ifndef HR_STORIES_H
#define HR_STORIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/rank.h"
#include "store/store.h"

#define HR_STORY_ID_LEN 16                 /* hex digits */
#define HR_RANK_SHARDS 8                   /* sorted sets per ranking (see above) */
#define HR_STORY_URLS_MAX 64               /* URLs of one story */
#define HR_STORY_CONTENT_MAX (256u * 1024) /* default of story_content_max */
#define HR_TIME_MAX_MS 253402300799999LL   /* 9999-12-31T23:59:59.999Z */

typedef enum hr_rank_kind { HR_RANK_TOP, HR_RANK_HOT } hr_rank_kind;

/* A story as read. Slices and arrays point into the arena the call was
 * given, valid while it is. */
typedef struct hr_story {
    char id[HR_STORY_ID_LEN + 1];
    hr_slice url;   /* the preferred canonical URL (urls[0]) */
    hr_slice *urls; /* every canonical URL, the preferred one first */
    size_t n_urls;
    int64_t time_ms;
    int64_t score;      /* the sum of its ratings */
    double hot;         /* hr_rank_hot(score, time_ms) */
    size_t content_len; /* bytes, as posted */
    bool compressed;    /* stored zstd-compressed */
    bool has_content;   /* content was read (single-story reads) */
    hr_slice content;
    /* Set by list queries that know it (core/ratings.h top-rated). */
    bool has_rating;
    int rating;
    int64_t rating_time_ms;
} hr_story;

/* A page of stories; next_cursor (in the arena) is NULL on the last page. */
typedef struct hr_story_page {
    hr_story *items;
    size_t n;
    const char *next_cursor;
} hr_story_page;

typedef struct hr_stories_options {
    /* Prefix of every key's hash tag: "" in the server. Tests give each test
     * its own, so that tests sharing one Redis Cluster never see each
     * other's rankings. Copied. */
    const char *ns;
    /* Largest content in bytes; 0 means HR_STORY_CONTENT_MAX. */
    size_t content_max;
} hr_stories_options;

typedef struct hr_stories hr_stories;

/* Stories over store (borrowed; must outlive them). opts may be NULL. */
hr_stories *hr_stories_new(hr_store *store, const hr_stories_options *opts);
void hr_stories_free(hr_stories *s);

/* The namespace given at creation (for core/ratings.c). */
const char *hr_stories_ns(const hr_stories *s);

/* Create a story at url (as sent: canonicalised here; HR_EINVAL with the
 * canonicaliser's detail if it is refused) with content (binary-safe,
 * HR_ETOOBIG over content_max) and time_ms (0..HR_TIME_MAX_MS). If url is
 * a variant of a URL of a known story, *duplicate is true, *out is that
 * story and nothing is written (content and time are ignored). *out has no
 * content. Everything is checked before anything is written. */
int hr_stories_create(hr_stories *s, hr_slice url, hr_slice content, int64_t time_ms, hr_arena *a,
                      hr_story *out, bool *duplicate, hr_err *err);

/* The story of id, with its content if with_content; HR_ENOTFOUND if none. */
int hr_stories_get(hr_stories *s, hr_slice id, bool with_content, hr_arena *a, hr_story *out, hr_err *err);

/* The story that has url (any variant of any of its URLs); HR_EINVAL for a
 * refused URL, HR_ENOTFOUND if no story has it. */
int hr_stories_find(hr_stories *s, hr_slice url, bool with_content, hr_arena *a, hr_story *out, hr_err *err);

/* Add url to story id's URLs (and make it the preferred one if preferred).
 * *added is true when the URL was new to the story; adding a URL the story
 * already has is not an error (it may still switch the preferred URL).
 * HR_ENOTFOUND: no story id. HR_ECONFLICT: url belongs to another story,
 * or the story already holds HR_STORY_URLS_MAX URLs. *out is the story after
 * the change, without content. */
int hr_stories_add_url(hr_stories *s, hr_slice id, hr_slice url, bool preferred, hr_arena *a, hr_story *out,
                       bool *added, hr_err *err);

/* The newest stories (by story time, newest first), after req->since_ms. */
int hr_stories_recent(hr_stories *s, const hr_list_req *req, hr_arena *a, hr_story_page *out, hr_err *err);

/* ---- For core/ratings*.c: the pieces of a vote and of story lists ---- */

/* The shard of the rankings that holds story id (0..HR_RANK_SHARDS-1). */
unsigned hr_stories_rank_shard(hr_slice id);
/* Append the key of shard `shard` of a ranking to k. */
void hr_stories_rank_key(const hr_stories *s, hr_rank_kind kind, unsigned shard, hr_buf *k);

/* Add to b the ops that read story id's list fields (metadata and score);
 * returns the index of the first. Read the result with hr_stories_fill_result. */
size_t hr_stories_fill_ops(const hr_stories *s, hr_batch *b, hr_slice id);
/* The story read by the ops at first (after the batch ran) into *out:
 * HR_OK, HR_ENOTFOUND (no such story), or HR_EINTERNAL / the op's store
 * error with err filled. */
int hr_stories_fill_result(const hr_batch *b, size_t first, hr_slice id, hr_arena *a, hr_story *out,
                           hr_err *err);

/* Add to b the vote's change of story id's sum: the result's score is the
 * new sum. */
size_t hr_stories_vote_op(const hr_stories *s, hr_batch *b, hr_slice id, int64_t delta);

/* Which vote a change of a sum is: the voter's id, the stamp of the vote
 * (a rating's, core/ratings.c), and the stamp the voter's note holds as
 * the caller read it (NAN: none). */
typedef struct hr_voter {
    hr_slice id;
    double stamp;
    double noted;
} hr_voter;

/* A vote as hr_stories_vote_ops added it to a batch. */
typedef struct hr_vote {
    size_t op;     /* the sum's write */
    bool cas;      /* the sum is set to guess, with the hot score of it */
    int64_t guess; /* with cas: the sum written */
    size_t guards; /* the index of the first guard: the note's, then the sum's (with cas) */
    bool has_note; /* a guard of the voter's note comes first */
} hr_vote;

/* Add to b, at its end, the vote's change of story id's sum by delta, as
 * one step (store.h, hr_zguard), and return it. With cas, a compare-and-set
 * of the sum read before (known_sum): the sum is set to known_sum + delta
 * and the hot score to the one of that sum, if the sum is still known_sum;
 * the hot score is then settled with the vote, one batch instead of two.
 * Without cas, an increment, which never loses to another vote: the hot
 * score is then the caller's to settle (hr_stories_settle_hot).
 *
 * On a store whose batches are not atomic (Redis Cluster) the voter's
 * stamp is noted in the same step ({NSrank/K}/votes/ID), if the note is
 * still voter->noted: whatever else a crash leaves undone, the note says
 * which of the voter's votes the sum holds (core/ratings.c reads it with
 * hr_stories_vote_note_op). The voter is not read on an atomic store (no
 * notes there).
 *
 * When a guard does not hold, nothing of the step is written and the
 * batch's ops from the step on answer HR_ECONFLICT: hr_stories_vote_lost
 * says what the guards found. */
hr_vote hr_stories_vote_ops(const hr_stories *s, hr_batch *b, hr_slice id, int64_t time_ms, int64_t known_sum,
                            int64_t delta, const hr_voter *voter, bool cas);
/* After a vote's batch that lost: the sum (*known_sum) and the voter's note
 * (voter->noted) as its guards found them, where they ran. False when the
 * sum cannot be compared (the story has none in the ranking): vote
 * without cas then. */
bool hr_stories_vote_lost(const hr_vote *v, const hr_batch *b, int64_t *known_sum, hr_voter *voter);
/* The sum after a vote's batch that ran. */
int64_t hr_stories_vote_sum(const hr_vote *v, const hr_batch *b);
/* On a store whose batches are not atomic: add to b the read of voter's
 * note on story id (hr_zscore: the stamp, or HR_ENOTFOUND when the sum
 * holds no vote of the voter's noted there); returns the op's index. */
size_t hr_stories_vote_note_op(const hr_stories *s, hr_batch *b, hr_slice id, hr_slice voter);

/* Make the hot score of story id (submitted at time_ms) follow its sum,
 * after an hr_zincr of top answered `sum`. Writes hot = f(sum) and re-reads
 * the sum in one atomic batch; while the sum read differs from the one
 * written, writes again (at most a few rounds). */
int hr_stories_settle_hot(hr_stories *s, hr_slice id, int64_t time_ms, int64_t sum, hr_err *err);

#endif
