/* reading.h — social reading (seed 000, RockMelt): users who opt in share the
 * URLs they read on selected sites with their friends; a client asks, for
 * the N URLs of a feed (at most 100), which of its friends read which, and
 * how many people read each; plus what is popular, trending, and popular
 * among one's friends (core/trending.h for the first two).
 *
 * THE DATA (keys in core/reading_keys.h). A read of URL u by user x at time
 * t is kept from both ends, as DESIGN.md asks:
 *
 *   x's side   a packed set of URL hashes (hr_pset, each member expiring at
 *              t + reading_ttl), and the same reads in a sorted set by time
 *   u's side   a sorted set of its readers, scored by their last read time,
 *              and the same readers as a packed set of id hashes
 *
 * RockMelt chose user -> URL rows because URL -> user rows of popular pages
 * grow without bound and every query for such a page would scan one. Here
 * both exist and friends-reads answers each URL from the cheaper one for
 * this query (core/reading_plan.h): a URL read by few is answered from its
 * reader list intersected with the friend list in memory (cost ~ readers);
 * a URL read by many from one hr_pset_test of all the friends against its
 * packed set of readers (cost ~ friends plus a chunk per ~384 readers), or,
 * when several popular URLs meet few friends, from one hr_pset_test per
 * friend with all such URLs at once. The worst case is bounded by the
 * friends and the chunks of 100 URL sets, never by a scan of a page's
 * readers.
 *
 * URLS are canonicalised (core/url.h) and hashed (hr_url_hash); the answer
 * is keyed by each URL as sent, so variants of one page answer alike.
 *
 * SHARING. Default out. Only a user who shares has reads recorded, and
 * OPTING OUT DELETES the user's recorded reads at once (its entries in the
 * reader lists of the URLs it read, found through its by-time set, then its
 * own sets), rather than filtering every query by the friends' opt-in
 * state: a friends-reads query then needs no per-friend opt-in lookup (up to
 * 5,000 reads), and an opted-out user's reads are no longer kept. A read
 * being recorded while its user opts out cannot survive the opt-out: the
 * recorder writes, then reads the opt-in flag again and removes what it
 * wrote if the flag is gone; the opt-out removes the flag, then lists the
 * reads to delete. Whichever comes second sees the other's work, on either
 * backend. Opting in again starts from nothing.
 *
 * SITES. Reads are recorded only from selected sites: a selected domain
 * covers its subdomains ("example.com" covers "news.example.com"; IP
 * addresses only themselves). Sites are stored canonical (lower case, no
 * "www."), so "WWW.Example.com" selects example.com. Unselecting a site
 * records nothing new from it; reads already recorded stay until they
 * expire.
 *
 * EXPIRY. A read counts until t + reading_ttl: the packed sets expire
 * members by themselves, and the sorted sets are read from now - ttl on and
 * trimmed of older entries now and then (1 record in TRIM_EVERY), and
 * expire as a whole ttl after their last read.
 *
 * READERS of a URL are its distinct readers within the ttl: exact when
 * friends-reads read the URL's list, and the list's size (which may still
 * hold entries expired since its last trim) when the URL was answered from
 * another side.
 *
 * Costs in store round trips: record 3 (checks; writes; the opt-in check
 * again); friends-reads 1 when every URL's list is short (the friend list,
 * and per URL its size and first HR_READING_LIST_FIRST readers; RocksDB
 * skips the readers of a URL read by more than HR_READING_LIST_FIRST_OF,
 * store.h's max_size hint: most such URLs are answered from another side,
 * and the rest read their list whole in round trip 2, one seek instead of
 * two), 2
 * otherwise (the rest of the lists chosen, the URL-set tests and the
 * friends' tests);
 * friends-popular 3; opt-out 2 + one write per 1,000 reads. */
#ifndef HR_READING_H
#define HR_READING_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/graph.h"
#include "core/reading_plan.h"
#include "core/trending.h"
#include "store/store.h"

#define HR_READING_URLS_MAX 100      /* URLs in one friends-reads */
#define HR_READING_FRIENDS_MAX 5000  /* friends one query considers (the newest, from the graph) */
#define HR_READING_SITES_MAX 10000   /* selected sites */
#define HR_READING_LIST_FIRST 32     /* readers of each URL read in the first round trip, */
#define HR_READING_LIST_FIRST_OF 128 /* of a URL read by at most this many (a hint, below) */

typedef struct hr_reading_options {
    const char *ns;              /* key namespace, copied ("" in the server) */
    int64_t ttl_ms;              /* reading_ttl, >= 1 */
    const hr_rplan_costs *costs; /* NULL: hr_rplan_default_costs() (tests force a side) */
    /* friends-reads hands two in five of its URL-set tests to a helper
     * thread when they are at least split_tests member tests (friends x
     * URLs; 0: HR_READING_SPLIT_TESTS) and no more friends-reads run than
     * half of cpus (0: the CPUs online); tests pass 1 and a large cpus to
     * split every query with two URL-set tests or more; with split_no_wait
     * (tests only) a caller never waits for the helper's part and tests its
     * URLs again itself, the path a part the helper is late with takes */
    size_t split_tests;
    int cpus;
    bool split_no_wait;
} hr_reading_options;

/* Member tests from which a friends-reads splits its URL-set tests over two
 * cores (common/assist.h): a 450-friend user's zipf feed makes ~29,000. */
#define HR_READING_SPLIT_TESTS 8192

typedef struct hr_reading hr_reading;

/* Social reading over store and graph (borrowed; they must outlive it). */
hr_reading *hr_reading_new(hr_store *store, hr_graph *graph, const hr_reading_options *o);
void hr_reading_free(hr_reading *r);
/* The popular and trending counts it keeps (owned by r). */
hr_trends *hr_reading_trends(hr_reading *r);

/* ---- Sites --------------------------------------------------------------- */

/* Select domain (canonicalised: hr_url_canonical_host; HR_EINVAL naming
 * "domain" otherwise). *site is the canonical form, in a; *was_new whether
 * it was not selected. */
int hr_reading_site_add(hr_reading *r, hr_slice domain, int64_t now_ms, hr_arena *a, hr_slice *site,
                        bool *was_new, hr_err *err);
int hr_reading_site_remove(hr_reading *r, hr_slice domain, hr_arena *a, hr_slice *site, bool *was_selected,
                           hr_err *err);
/* Every selected site, sorted, in a. */
int hr_reading_sites(hr_reading *r, hr_arena *a, hr_slice **sites, size_t *n, hr_err *err);

/* ---- Sharing --------------------------------------------------------------- */

/* Opt uid in or out (out deletes its recorded reads, see above). */
int hr_reading_set_share(hr_reading *r, hr_slice uid, bool share, int64_t now_ms, hr_err *err);
int hr_reading_share(hr_reading *r, hr_slice uid, bool *share, hr_err *err);

/* ---- Recording -------------------------------------------------------------- */

typedef enum {
    HR_READ_RECORDED,
    HR_READ_NOT_OPTED_IN,      /* the user does not share (checked first) */
    HR_READ_SITE_NOT_SELECTED, /* the URL's host is not under a selected site */
    HR_READ_EXPIRED,           /* time is reading_ttl or more before now */
} hr_read_outcome;

/* The API's "reason" of an outcome ("not_opted_in"...); NULL for recorded. */
const char *hr_read_reason(hr_read_outcome o);

/* uid read url (as sent; HR_EINVAL naming "url" if it does not
 * canonicalise) at time_ms (0..: a time after now_ms counts as now_ms). */
int hr_reading_record(hr_reading *r, hr_slice uid, hr_slice url, int64_t time_ms, int64_t now_ms,
                      hr_read_outcome *out, hr_err *err);

#define HR_READING_RECORD_MAX 10000 /* reads one hr_reading_record_many takes */

/* The bulk form, for importers and the benchmark's loader: n reads of uid
 * (urls[i] at times[i]), out[i] the outcome of each, in the same 3 round
 * trips whatever n, so that each chunk of uid's packed set is written once.
 * Reads of one URL count in order of time. HR_EINVAL naming "urls[i]" for a
 * URL that does not canonicalise; nothing is recorded then. */
int hr_reading_record_many(hr_reading *r, hr_slice uid, const hr_slice *urls, const int64_t *times, size_t n,
                           int64_t now_ms, hr_read_outcome *out, hr_err *err);

/* ---- friends-reads ------------------------------------------------------- */

typedef struct hr_url_reads {
    hr_slice url;      /* canonical, in the arena */
    hr_slice *friends; /* the friends who read it, in friend-list order (in the arena) */
    size_t n_friends;
    int64_t readers; /* distinct readers within the ttl */
} hr_url_reads;

/* How a friends-reads call was answered (for tests and the benchmark). */
typedef struct hr_reads_stats {
    size_t friends;      /* friends considered */
    size_t urls_list;    /* URLs answered by reading their reader lists */
    size_t urls_probe;   /* URLs answered by looking the friends up in their lists */
    size_t urls_set;     /* URLs answered by testing the friends against their URL sets */
    size_t urls_friends; /* URLs answered from the friends' packed sets */
    size_t urls_split;   /* of urls_set, those tested in a second batch, on a helper thread if it was free */
    size_t split_late;   /* 1: the helper was late with that batch, and this thread tested its URLs again */
    size_t round_trips;
    bool friends_kept; /* the friend list's form kept with the store's copy of it (reading_friends.c) */
} hr_reads_stats;

/* For each of urls[0..n_urls) (1..HR_READING_URLS_MAX, as sent), which of
 * uid's friends read it. friends NULL: uid's friends from the graph (the
 * newest HR_READING_FRIENDS_MAX); else the given list (n_friends 0..
 * HR_READING_FRIENDS_MAX). Either way only users who share are revealed.
 * out[i] answers urls[i]. HR_EINVAL with a detail naming "urls[i]" for a
 * URL that does not canonicalise. stats may be NULL. */
int hr_reading_friends_reads(hr_reading *r, hr_slice uid, const hr_slice *friends, size_t n_friends,
                             const hr_slice *urls, size_t n_urls, int64_t now_ms, hr_arena *a,
                             hr_url_reads *out, hr_reads_stats *stats, hr_err *err);

/* ---- friends-popular ------------------------------------------------------- */

#define HR_FRIENDS_POPULAR_SCAN 200000 /* friends' reads one call looks at, at most */

/* The URLs most read by uid's friends within window w (and the ttl), most
 * friends first (ties: the most recent read first), limit 1..
 * HR_TRENDS_LIMIT_MAX. Each friend's newest reads are looked at, at most
 * max(20, HR_FRIENDS_POPULAR_SCAN / friends) of them. readers is the URL's
 * count as in hr_url_reads. */
int hr_reading_friends_popular(hr_reading *r, hr_slice uid, hr_window w, size_t limit, int64_t now_ms,
                               hr_arena *a, hr_url_reads **items, size_t *n, hr_err *err);

#endif
