/* ratings.h — ratings of stories by subjects, and the two member queries
 * built on them: "top-rated" and "unseen" (seed 002).
 *
 * A subject (a user, a feed, a recommender, the home-page builder) rates an
 * object, a story (core/stories.h), with +1 (liked), -1 (disliked) or 0
 * (seen: do not show it again). A subject has at most one rating of an
 * object: a PUT is an upsert, and the story's score (the sum of its
 * ratings) and every index follow the change at once.
 *
 * Which rating wins: the latest BY TIME. A rating carries a time (the
 * client's, or now); a rating older than the stored one is not applied
 * (the stored one is answered, applied = false), one as old or newer
 * replaces it. So a feed replaying old ratings, or two devices syncing out
 * of order, cannot undo a newer decision; a client that sends no time gets
 * "now", which is last-write-wins in practice.
 *
 * Ratings are public: any caller may list a subject's ratings (the seed's
 * model: feeds and recommenders are subjects, and their ratings are the
 * product). The social-reading rule that a user's reads are revealed only
 * to friends does not apply to ratings.
 *
 * Storage keys (braces are Redis Cluster hash tags; NS is the stories'
 * namespace; '/' cannot occur in identifiers, so "S/O" splits at its '/'):
 *
 *   {NSrs/S}          zset   member O: the subject's ratings newest first,
 *                            the rating itself (GET, upsert), AND the
 *                            subject's seen set (any rating, 0 included);
 *                            a set of times (its scores are stamps;
 *                            hr_ratings_new declares the family,
 *                            HR_DECL_TIME_SET), which RocksDB writes into
 *                            hashed memtables
 *   {NSrs/S}seen      pset   the same stories as 64-bit ids (a story id is
 *                            16 hex digits), kept once the subject has
 *                            HR_SEEN_SET_MIN ratings: what unseen and
 *                            top-rated test candidates against (below)
 *   {NSro/O}          time list  member S: the story's ratings
 *   {NSratings/all/XX} time list  member "S/O": all ratings by date, in
 *                            HR_RATINGS_ALL_SHARDS shards (XX = 00..0f, by a
 *                            hash of S/O); a page reads the same range of
 *                            every shard (twice its share of the page) in
 *                            one batch and merges them, and stops early
 *                            where a shard's window ran out (the cursor goes
 *                            on from there)
 *
 * Only {rs/S} is a sorted set: the rating is read from it by member. The
 * other two are only ever read as newest-first pages, so they are time
 * lists (store.h) with the stamp as the time: an upsert writes each with
 * one blind write (and a blind delete of the entry at the old stamp, known
 * from the read of {rs/S}), where a sorted set costs a member read, a
 * member record, an index entry and the size. A re-rating at the same
 * stamp changes nothing.
 *
 * Every entry's score is a stamp, time_ms * 4 + (score + 1): ordered by
 * time first, so a range by stamp is a range by date, and the rating is in
 * the stamp, so no list needs a second read for the scores, and there is no
 * separate rating record to keep in step (a double holds the stamp exactly
 * for every time up to year 73,000). The design first drawn had a value
 * {rt/S/O} per rating and a multi-get per list: the stamp saves a write per
 * upsert and a round trip per list.
 *
 * Each index holds one entry per (subject, object), at the latest rating's
 * stamp. All ratings by date are sharded because every upsert writes that
 * index: as one key it was one lock every upsert took on RocksDB (held
 * through the commit, so upserts ran one at a time there) and one hot key
 * on one Redis Cluster node, as the seed's rating_by_date table was one
 * partition. Shards by date would not help (every new rating is today's);
 * shards by hash spread both, and cost a read of each shard per page.
 *
 * Concurrency. The story's sum is changed by hr_zincr (atomic), so votes
 * of different subjects never lose one, in one process or many. An upsert
 * computes its delta (new - old score) from the stored rating, so two
 * upserts of the SAME (subject, object) must not interleave: a striped
 * mutex per (subject, object) is held from that read to the write. That is
 * exact on RocksDB (one process). On Redis Cluster several herald servers
 * may share the store (hr_store_caps shared), and each has its own mutexes: an
 * upsert there also holds a lease on (subject, object) in the store
 * (core/lease.h), taken in the batch of its first read, in the subject's
 * hash slot ahead of that read, and given back once its writes are
 * answered. Without it, two servers upserting one pair at the same instant
 * (a double click landing on two servers) could both compute the delta
 * from the same old rating, leaving the sum off by it, and index entries
 * of a rating that lost (the two-server tests in test_ratings.c and
 * test_ratings.py fail so). A server that finds the lease held waits up to
 * HR_LEASE_WAIT_MS, then answers HR_ECONFLICT (409).
 *
 * Crash consistency. On RocksDB the upsert's writes are one WriteBatch. On
 * Redis Cluster they live in several hash slots, and a batch is a pipeline
 * that a killed server can leave part-done. Two rules make the next upsert
 * of the pair (the client's retry, or any later rating) repair whatever a
 * killed one left:
 *   - the subject's record {rs/S}, where the next upsert reads the old
 *     rating, is written last (hr_core_write_last: a batch of its own,
 *     round trip 3, with the lease's return in its slot), after the lists,
 *     the seen set and the vote; every upsert writes the lists' new
 *     entries, even at an unchanged stamp (a killed one may have moved
 *     them), and they and the seen set are blind, idempotent writes;
 *   - the vote notes the subject's stamp with the sum, in one step
 *     ({NSrank/K}/votes/ID, core/stories.h), on every upsert, a delta of 0
 *     too. The note, not the record, says which score of the subject the
 *     sum holds: the delta is taken from it, so a vote whose record a
 *     crash cut off is neither added twice nor kept alongside the next one.
 * The vote is a compare-and-set (store.h, hr_zguard): its step runs only
 * if the note is the one round trip 1 read and the sum the one it read,
 * and writes the note, the sum and the hot score of that sum. The note is
 * read in another slot than the lease's, so the read can reach its node
 * before another server's upsert of the pair while the lease's take
 * reaches its own after it; and another subject's vote of the story may
 * come between the read of the sum and the vote. Either way the guard
 * does not hold, nothing of the step or the record is written, and the
 * upsert decides again from what the guards found (no read again). After
 * VOTE_CAS_TRIES lost sums (a storm of votes on one story) the vote is an
 * increment, which cannot lose, and the hot score is settled after it
 * (hr_stories_settle_hot): a server killed in between leaves it stale
 * until the story's next vote. Until the next upsert, a killed one can
 * leave the sum and the lists showing its rating while GET shows the old
 * one. test_ratings.c kills an upsert in every subset of every round
 * trip's parts (upsert_after_a_crash) and runs the race
 * (stale_note_is_read_again). The price on Redis: one note per rated pair
 * (a sorted-set member in the story's ranking slot, about 40 bytes) and a
 * step script on every upsert, in the round trips it already makes.
 * All servers sharing a cluster must run this version: an older one moves
 * the sum without the note. A killed server's lease delays a retry of the
 * same rating by up to HR_LEASE_MS.
 *
 * Cost in store round trips (one batch each):
 *   put          2 (read the rating and the story; write the indexes and
 *                the vote: the sum and its hot score set if the sum is
 *                still the one read, hr_zguard), + 1 more of the second
 *                when another vote of the story came in between (after
 *                two such, an increment and the hot score settled apart,
 *                core/stories.h hr_stories_settle_hot). In store ops, a
 *                new rating that changes the sum: zscore, zcard, get and
 *                zscore of top; zadd {rs/S}, tladd x2, the guard, zadd of
 *                top, zadd of hot. RocksDB: 7 memtable writes (3 for {rs/S}: member
 *                record and index entry, both into hashed memtables
 *                (store/rocks/zset_times.c), and size; 1 for each list; the top
 *                and hot member records, appends to a vector memtable as
 *                the rankings are kept in memory, store/rocks/zset_memory.c)
 *                and 2 point reads of the member record, in 2 batches
 *                (the lists as sorted sets and hot settled apart cost 11
 *                writes, 4 member reads, 3 batches). Redis Cluster: 3
 *                batches: the first also takes the lease and reads the
 *                note, the vote's step script writes the note, and the
 *                third writes the subject's record and gives the lease
 *                back (crash consistency, above); one more when the note
 *                read raced another server's upsert
 *   get          1
 *   by_subject   1: a range read
 *   by_object    1 (the range read and the story's existence together)
 *   all          1 (a range read of each shard)
 *   top_rated    unseen's walk down the top ranking (below), keeping the
 *                stories the seen set HAS: its first batch reads a window
 *                and the subject's count. A subject with fewer than
 *                HR_SEEN_SET_MIN ratings (no seen set) stops there and has
 *                its ratings ranked: 3 more (its ratings since a date, the
 *                most recent HR_TOP_RATED_SCAN of them; one batch of their
 *                stories' sums, sorted in memory; the page's stories). One
 *                with a seen set goes on: its set test, then one batch of
 *                point reads of its ratings of the first twice-a-page of the
 *                kept stories in order (their times: since; more batches,
 *                four times bigger each, while since drops too many), then
 *                the page's stories. A member who rated most of the top: 4
 *                batches, ~70 point reads, where ranking its 10,000
 *                ratings would read them all. A
 *                walk that reads HR_UNSEEN_SCAN entries without a page
 *                (ratings mostly of stories far down, or before since)
 *                ranks the ratings instead.
 *   unseen       2 per window + 1: a window of the ranking (descending
 *                from the cursor: one range read of each of its
 *                HR_RANK_SHARDS shards, merged by core/rank_merge), one
 *                batch of membership tests; windows
 *                start at max(2*limit, 64) entries, and each next one is
 *                twice what the unseen rate seen so far says the rest of
 *                the page needs (at most 4x the last, up to 10,000), until
 *                `limit` unseen stories are found; then one multi-get of
 *                the page's stories. The membership test of a subject with
 *                fewer than HR_SEEN_SET_MIN ratings is a point read of its
 *                ratings per candidate (few candidates: such a subject has
 *                seen little of the top); past that, one hr_pset_test of
 *                the candidates against {rs/S}seen. That test reads every
 *                chunk of the set (~30 for 10,000 ratings) however few
 *                candidates it has, so the first window is tested only
 *                together with a second of 1,024: a member who has seen
 *                most of the top costs 2 batches of 8 range reads, 1 test,
 *                1 multi-get; from its next call on (the process remembers
 *                subjects found with a seen set), one batch of 8 range
 *                reads of the bigger window. The
 *                candidates come in no particular order; only the unseen
 *                ones the page keeps are put in order. An upsert adds
 *                a new rating to that set once the subject has
 *                HR_SEEN_SET_MIN ratings; unseen fills it with the older
 *                ones the first time it finds it smaller than the ratings
 *                (equal counts mean equal sets: it only ever holds rated
 *                stories, and ratings are never deleted). Entries read:
 *                O(limit + stories the subject has seen among those ranked
 *                above the page), never every story. At most HR_UNSEEN_SCAN
 *                entries per call: past it the page is answered short,
 *                with a cursor. */
#ifndef HR_RATINGS_H
#define HR_RATINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/rank.h"
#include "core/stories.h"
#include "store/store.h"

#define HR_TOP_RATED_SCAN 10000  /* a subject's most recent ratings top_rated ranks */
#define HR_RATINGS_ALL_SHARDS 16 /* shards of the all-ratings index */
/* Ranking entries one unseen call reads at most. A bound on latency: a
 * candidate read from disk and tested by point reads costs some thirty
 * times one in a ranking kept in memory with a seen set, so 20,000 take a
 * few milliseconds at best and tens at worst. A member who has seen more
 * of the top than that gets a short page and a cursor to go on. */
#define HR_UNSEEN_SCAN 20000
/* Ratings from which a subject's seen stories are also kept as a packed set
 * (an upsert then rewrites one of its chunks, a few KiB; below it the point
 * reads are cheaper). */
#define HR_SEEN_SET_MIN 1000

/* A rating as read; slices point into the arena the call was given. */
typedef struct hr_rating {
    hr_slice subject, object;
    int score; /* -1, 0, 1 */
    int64_t time_ms;
} hr_rating;

typedef struct hr_rating_page {
    hr_rating *items;
    size_t n;
    const char *next_cursor; /* in the arena; NULL on the last page */
} hr_rating_page;

typedef struct hr_ratings hr_ratings;

/* Ratings of the stories of `stories` (borrowed, as is store; both must
 * outlive them), in the stories' namespace. Declares the subjects' records
 * to the store (above), so it comes before the first rating is written. */
hr_ratings *hr_ratings_new(hr_store *store, hr_stories *stories);
void hr_ratings_free(hr_ratings *r);
/* For tests: the number of ratings from which a subject has a seen set
 * (HR_SEEN_SET_MIN by default). */
void hr_ratings_set_seen_min(hr_ratings *r, size_t n);
/* For tests: the ranking entries a walk of top-rated or unseen reads at most
 * (HR_UNSEEN_SCAN by default). */
void hr_ratings_set_walk_max(hr_ratings *r, size_t n);

/* subject and object are identifiers (the API layer checks); object must be
 * a story (HR_ENOTFOUND otherwise). */

/* Upsert subject's rating of object: score -1..1, time_ms 0..HR_TIME_MAX_MS
 * (HR_EINVAL naming the field otherwise, before anything is read). *out is
 * the rating stored afterwards, *applied false when the stored one was newer
 * and was kept, *story_score the story's sum afterwards. */
int hr_ratings_put(hr_ratings *r, hr_slice subject, hr_slice object, int score, int64_t time_ms, hr_arena *a,
                   hr_rating *out, bool *applied, int64_t *story_score, hr_err *err);

/* subject's rating of object; HR_ENOTFOUND if none. */
int hr_ratings_get(hr_ratings *r, hr_slice subject, hr_slice object, hr_arena *a, hr_rating *out,
                   hr_err *err);

/* Lists, newest first, after req->since_ms. */
int hr_ratings_by_subject(hr_ratings *r, hr_slice subject, const hr_list_req *req, hr_arena *a,
                          hr_rating_page *out, hr_err *err);
/* HR_ENOTFOUND when object is not a story. */
int hr_ratings_by_object(hr_ratings *r, hr_slice object, const hr_list_req *req, hr_arena *a,
                         hr_rating_page *out, hr_err *err);
int hr_ratings_all(hr_ratings *r, const hr_list_req *req, hr_arena *a, hr_rating_page *out, hr_err *err);

/* The highest-scoring stories subject rated (any rating, 0 included) after
 * req->since_ms, by score descending, ties by id descending (the rankings'
 * order). Each item carries the subject's own rating (has_rating). A
 * subject with fewer than HR_SEEN_SET_MIN ratings has its most recent
 * HR_TOP_RATED_SCAN ratings since the date ranked; one with more has all of
 * them, when the walk down the ranking finds the page (see the costs). */
int hr_ratings_top_rated(hr_ratings *r, hr_slice subject, const hr_list_req *req, hr_arena *a,
                         hr_story_page *out, hr_err *err);

/* The highest-ranked stories (by kind: the sum, or hot) subject has not
 * rated, rating 0 (seen) included. req->since_ms is ignored. */
int hr_ratings_unseen(hr_ratings *r, hr_slice subject, hr_rank_kind kind, const hr_list_req *req, hr_arena *a,
                      hr_story_page *out, hr_err *err);

#endif
