/* store.h — herald's storage interface: data-structure primitives in batches.
 *
 * Everything above src/store/ talks to storage only through this file. The
 * primitives are modelled on Redis data types, so that the Redis Cluster
 * backend is a thin mapping and the RocksDB backend follows Kvrocks'
 * well-known encodings:
 *
 *   values            get / put (optional expiry) / del            hr_get, hr_put, hr_del
 *   counters          add and read a 64-bit integer                 hr_incr, hr_counter_get
 *   sorted sets       (score, member) order, ranges with cursors   hr_zadd ... hr_zrange
 *   distinct counts   exact set with per-member expiry up to a     hr_dadd, hr_dcount
 *                     limit, then HyperLogLog sketches in time
 *                     buckets
 *   key expiry        any key                                      hr_expire
 *   packed u64 sets   many-member tests of a user's reads         hr_pset_add ... hr_pset_test
 *   time lists        feeds and timelines: blind (time, member)    hr_tladd ... hr_tltrim
 *                     adds, newest-first ranges
 *   durable queues    fan-out jobs with leases and acks            hr_qpush ... hr_qinfo
 *
 * THE BATCH IS THE ONLY WAY IN. A caller builds an hr_batch of operations
 * (each builder returns the op's index), runs it with hr_store_exec, then
 * reads each op's hr_result. One batch costs O(1) round trips: RocksDB groups
 * its reads into MultiGet and its writes into one WriteBatch; Redis Cluster
 * sends one pipeline per node. A "multi-get" is simply many hr_get in one
 * batch.
 *
 * Order: ops on the same key apply in the order they were added, and each op
 * sees the effects of the ops before it on that key in the same batch (a read
 * after a write of the same key reads the write). Ops on different keys may
 * apply in any order (Redis Cluster runs each node's part in parallel), so a
 * concurrent reader of a non-atomic batch may see a later write before an
 * earlier one. Reads are not isolated from concurrent writers unless the op
 * says so.
 *
 * Atomicity: with HR_EXEC_ATOMIC either all writes of the batch apply or none,
 * and concurrent batches see all or none of them. RocksDB gives this for any
 * batch; Redis Cluster only within one hash slot, so an atomic batch must keep
 * all its keys under one hash tag (see below) or hr_store_exec fails with
 * HR_EINVAL before anything is written. Without the flag, a failed batch may
 * have applied some of its writes (each op's rc says which ran).
 *
 * Single-op atomicity: every op is atomic on its own against concurrent
 * batches, including the read-modify-write ones (hr_incr, hr_zadd's is-new,
 * hr_dadd's count): concurrent hr_dadd of the same member never counts it
 * twice (RocksDB: striped locks in-process; Redis: a Lua script).
 *
 * Keys are binary-safe, 1..HR_KEY_MAX bytes. A key that must live in the same
 * Redis Cluster slot as others carries a hash tag: the bytes between the first
 * '{' and the next '}' (when non-empty) are what is hashed, exactly as Redis
 * Cluster does, e.g. "{c:default:obj1}:set". RocksDB ignores tags.
 *
 * A key holds one type at a time. An op of another type on it fails with
 * HR_EWRONGTYPE (in its own rc). hr_del and hr_expire work on every type.
 *
 * Thread safety: hr_store_exec may be called from many threads at once on one
 * hr_store. A batch belongs to one thread at a time.
 */
#ifndef HR_STORE_H
#define HR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/slice.h"

#define HR_KEY_MAX 1024u           /* bytes */
#define HR_ZRANGE_LIMIT_MAX 10000u /* entries one hr_zrange returns at most */
#define HR_VALUE_MAX (64u << 20)   /* bytes */

typedef struct hr_store hr_store;
typedef struct hr_batch hr_batch;
typedef struct hr_origin hr_origin; /* memory a store's results point into (hr_result.origin) */
typedef struct hr_job hr_job;       /* a queue job, see "Durable work queues" */

/* ------------------------------------------------------------------------ */
/* Opening and closing                                                       */

typedef struct hr_store_options {
    /* RocksDB: fsync the WAL before a write is acknowledged (group commit).
     * Without it a write survives kill -9 of the server (it is in the WAL in
     * the OS page cache) but not a power loss. Redis: ignored (the cluster's
     * own appendfsync decides). */
    bool sync;
    /* Bytes the store may keep in memory to answer reads; 0 means
     * HR_STORE_MEMORY_DEFAULT. RocksDB shares it out among its caches
     * (rocks/memory.h) and leaves a share to its callers' memos
     * (hr_store_caps.memo_bytes). Redis: ignored (the cluster holds it all). */
    size_t memory;
    /* Redis: per-command timeout in milliseconds; 0 means 2000. */
    int timeout_ms;
} hr_store_options;
#define HR_STORE_MEMORY_DEFAULT ((size_t)2 << 30)

/* Open a store from a URI:
 *   rocksdb:PATH[?TUNING]           embedded RocksDB in directory PATH (created
 *                                   if missing); TUNING, for tests and
 *                                   measurements, in rocks/memory.h
 *   redis://HOST:PORT[,HOST:PORT]   a Redis Cluster, any of whose nodes are
 *                                   given as seeds; the slot map is learnt from
 *                                   CLUSTER SLOTS
 * opts may be NULL (defaults). On success *out is the store, which the caller
 * owns and releases with hr_store_close. On failure returns HR_EINVAL (bad
 * URI), HR_EIO or HR_EUNAVAIL with err filled, and *out is NULL.
 *
 * A store records the format of its keys and values, HR_STORE_FORMAT, when
 * it is made. A store of another format, or one made before formats were
 * recorded, is refused with HR_ECONFLICT and a message that says so: herald
 * reads one format and keeps no code for older ones, so such a store is
 * built again from the data it came from. */
#define HR_STORE_FORMAT 1
int hr_store_open(const char *uri, const hr_store_options *opts, hr_store **out, hr_err *err);

/* Flush and close. NULL is a no-op. No hr_store_exec may be running. */
void hr_store_close(hr_store *s);

/* What a store can do, stated once by its backend. */
typedef struct hr_store_caps {
    const char *kind; /* "rocksdb" or "redis" */
    /* EVERY batch is atomic as HR_EXEC_ATOMIC makes one, flagged or not,
     * whatever its keys: its writes apply all or none, concurrent batches
     * see all or none of them, and its read-modify-write ops (hr_zincr, ...)
     * read and write inside it (RocksDB: one WriteBatch under its keys'
     * locks). False on Redis Cluster, where only a flagged batch of one hash
     * slot is. Lets a caller fold into one batch what must otherwise be
     * ordered (core/exec.h, hr_core_write_last) or checked by a second,
     * atomic one (core/ratings.c: the hot score with the vote). One
     * exception on RocksDB, for readers only: a sorted set kept in memory
     * (rocks/zset_memory.c) or a hot time list kept in memory
     * (rocks/timelist_cache.c, hr_tlrange_spec.hot) is read at its latest
     * committed state op by op, as a Redis client reads one, so a batch
     * reading two such collections may see a concurrent batch's change in
     * one and not yet in the other. Writers are unaffected: they write under
     * the collections' locks. */
    bool atomic_batches;
    /* Other processes may write the same data at the same time: several
     * herald servers on one Redis Cluster. False on RocksDB, which one
     * process owns (a second server on the directory is refused). A caller
     * that serialises a read-modify-write with an in-process mutex must, on
     * a shared store, also hold a lease in the store (core/lease.h). */
    bool shared;
    /* Running a batch is a network round trip (Redis Cluster): the thread
     * that runs it mostly waits, so a server needs more threads than cores
     * to keep its cores busy. False on RocksDB, where a batch is CPU work in
     * the process. */
    bool remote;
    /* The store has background work for hr_store_settle to wait for
     * (RocksDB's flushes and compactions; Redis has none). */
    bool settles;
    /* The store writes bulk time-list adds (hr_tlbulk_write) in a way of its
     * own, RocksDB as table files: gathering many per write pays. Else a
     * caller may as well write as it goes. */
    bool bulk_files;
    /* Write stamps ("Write stamps" below) are counted: the store is not
     * shared, so this process sees every write. */
    bool stamps;
    /* Bytes of hr_store_options.memory left to the callers' memos of
     * results (core/memo.h); 0 when they should keep none (no stamps). */
    size_t memo_bytes;
} hr_store_caps;

/* s's capabilities (valid as long as s). */
const hr_store_caps *hr_store_caps_of(const hr_store *s);

/* 0 when the store answers (RocksDB: always once open; Redis: every master
 * answers PING), else HR_EUNAVAIL with err filled. */
int hr_store_ping(hr_store *s, hr_err *err);

/* Wait, at most max_s seconds, until the store has no background work
 * queued or running (RocksDB: memtable flushes and compactions; Redis: none
 * that herald can see, so it returns at once). Returns the seconds waited;
 * *settled (may be NULL) says whether the work was done in time. For bulk
 * loaders (herald load): a bulk load leaves RocksDB tens of level-0 files
 * to compact, and a server started at once shares the cores with those
 * compactions and reads through every one of those files until they are
 * done (docs/DESIGN.md, "Measured decisions"). */
double hr_store_settle(hr_store *s, double max_s, bool *settled);

/* Flags for hr_store_exec. */
enum {
    HR_EXEC_ATOMIC = 1 << 0, /* all writes or none (see above) */
};

/* Run every op of the batch. Returns 0 when the batch ran (each op's own rc
 * may still be HR_ENOTFOUND or HR_EWRONGTYPE, which are answers, not store
 * failures), or a store failure (HR_EIO, HR_EUNAVAIL, HR_EINVAL for a batch
 * the backend cannot run) with err filled. A batch can be executed once; to
 * reuse its memory call hr_batch_reset. */
int hr_store_exec(hr_store *s, hr_batch *b, unsigned flags, hr_err *err);

/* Totals of ops executed since start, by op type, for /metrics. */
/* clang-format off */
typedef enum {
#define HR_OP_TYPES(X)                                                                  \
    X(GET, "get") X(PUT, "put") X(DEL, "del") X(EXPIRE, "expire") X(INCR, "incr")       \
    X(COUNTER_GET, "counter_get") X(ZADD, "zadd") X(ZINCR, "zincr") X(ZREM, "zrem")     \
    X(ZSCORE, "zscore") X(ZCARD, "zcard") X(ZRANGE, "zrange")                           \
    X(ZREMRANGE_SCORE, "zremrange_score") X(DADD, "dadd")                               \
    X(DCOUNT, "dcount") X(PSET_ADD, "pset_add") X(PSET_REM, "pset_rem")                 \
    X(PSET_TEST, "pset_test") X(PSET_CARD, "pset_card")                                 \
    X(TLADD, "tladd") X(TLREM, "tlrem") X(TLRANGE, "tlrange") X(TLTRIM, "tltrim")       \
    X(QPUSH, "qpush") X(QCLAIM, "qclaim") X(QACK, "qack") X(QINFO, "qinfo")             \
    X(PUT_IF_MISSING, "put_if_missing") X(DEL_IF_EQUAL, "del_if_equal")                 \
    X(ZGUARD, "zguard")
#define HR_OP_ENUM_(name, label) HR_OP_##name,
    HR_OP_TYPES(HR_OP_ENUM_)
#undef HR_OP_ENUM_
    HR_OP_COUNT_
} hr_op_type;
/* clang-format on */

const char *hr_op_label(hr_op_type t);

/* What the store has done and what it holds, for /metrics and the benches. */
#define HR_STORE_CACHES_MAX 16
typedef struct hr_store_metrics {
    /* Since the process started, over all its stores: ops by type, batches
     * executed, and batches that failed with a store error. */
    uint64_t ops[HR_OP_COUNT_];
    uint64_t batches, batch_errors;
    /* The store's caches (none on Redis): each one's name, the bytes of
     * hr_store_options.memory it may hold, and the bytes it holds now. */
    struct {
        const char *name;
        size_t budget, bytes;
    } caches[HR_STORE_CACHES_MAX];
    size_t n_caches;
} hr_store_metrics;
/* Fill m; s may be NULL (the totals only). */
void hr_store_metrics_of(const hr_store *s, hr_store_metrics *m);

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */

/* A new, empty batch. Never NULL. */
hr_batch *hr_batch_new(void);
/* Free the batch, its copies of keys and values, and its results. NULL is a
 * no-op. */
void hr_batch_free(hr_batch *b);
/* Empty the batch for reuse (keeps memory). Results read before are invalid. */
void hr_batch_reset(hr_batch *b);
/* Number of ops added. */
size_t hr_batch_len(const hr_batch *b);

/* An entry of a sorted set. */
typedef struct hr_zentry {
    double score;
    hr_slice member;
} hr_zentry;

/* What an op answered, valid after hr_store_exec and until the batch is
 * reset or freed (slices point into the batch's memory). */
typedef struct hr_result {
    /* HR_OK; HR_ENOTFOUND for hr_get / hr_zscore of a missing key or member
     * (hr_counter_get, hr_zcard, hr_zrange and hr_dcount answer 0 / empty
     * instead); HR_EWRONGTYPE; or the store failure that stopped the batch. */
    int rc;
    /* hr_get: the value. */
    hr_slice value;
    /* hr_incr, hr_counter_get: the counter's value.
     * hr_zadd: 1 if the member was new, 0 if its score was updated.
     * hr_zrem: 1 if removed, 0 if absent. hr_del: 1 if a key was deleted.
     * hr_zremrange_score: members removed.
     * hr_zcard: members. hr_dadd, hr_dcount: distinct members counted.
     * hr_expire: 1 if the key exists (and got the expiry), else 0. */
    int64_t num;
    /* hr_zscore, hr_zincr: the member's score. */
    double score;
    /* hr_zrange, hr_tlrange: the entries in the order asked for. */
    hr_zentry *entries;
    size_t n_entries;
    /* hr_zrange, hr_tlrange: true when more entries lie past the last one
     * returned. */
    bool more;
    /* hr_qclaim: the jobs claimed. */
    hr_job *jobs;
    size_t n_jobs;
    /* hr_zrange: not NULL when the entries point into memory the store
     * shares and never changes (RocksDB: a whole set in its cache), valid as
     * long as the result. A caller may attach to it its own form of the set
     * (hr_origin_attach), which later reads of the same copy find. */
    hr_origin *origin;
} hr_result;

/* Origins' attachments: a caller that turns a set it reads whole into a
 * structure of its own (an index of a user's friends) builds it once per
 * version of the set instead of on every read, and keeps no memo of its
 * own: the attachment lives in the store's cache with the copy of the set,
 * counts against the store's memory, and goes when the copy goes (a write
 * of the set drops it). */

/* What o carries (NULL: nothing yet). Valid as long as the result that gave o. */
void *hr_origin_attached(const hr_store *s, const hr_origin *o);
/* Attach p, of about `bytes`, to o; free_p(p) runs when the store drops
 * its copy. Returns what o carries then: p, or what another caller attached
 * first (p is then freed at once). A backend that gives no origins never
 * calls this with one. */
void *hr_origin_attach(hr_store *s, hr_origin *o, void *p, size_t bytes, void (*free_p)(void *));

/* The result of op i (an index returned by a builder below). */
const hr_result *hr_batch_result(const hr_batch *b, size_t i);

/* Every builder copies the slices it is given into the batch: the caller's
 * buffers may be reused at once. Each returns the index of the new op. */

/* Values ---------------------------------------------------------------- */

/* Read a value; rc HR_ENOTFOUND when missing or expired. */
size_t hr_get(hr_batch *b, hr_slice key);
/* Write a value, replacing whatever key held (of any type). expire_at_ms is
 * the wall-clock time (ms since epoch) after which reads treat the key as
 * missing; 0 means never. */
size_t hr_put(hr_batch *b, hr_slice key, hr_slice value, int64_t expire_at_ms);
/* Delete a key of any type (a whole sorted set or distinct counter in O(1)
 * for the caller). */
size_t hr_del(hr_batch *b, hr_slice key);
/* Set (or with 0, remove) the expiry of an existing key of any type. */
size_t hr_expire(hr_batch *b, hr_slice key, int64_t expire_at_ms);
/* hr_put only when the key is missing (or expired); num 1 if it wrote.
 * Atomic against every other writer of the key, in any process (Redis:
 * SET NX). With hr_del_if_equal, a lock that several herald processes
 * sharing one store can take (core/lease.h). */
size_t hr_put_if_missing(hr_batch *b, hr_slice key, hr_slice value, int64_t expire_at_ms);
/* Delete the key only while it holds this value (a value written by hr_put
 * or hr_put_if_missing); num 1 if it deleted. Atomic like hr_put_if_missing
 * (Redis: a script). */
size_t hr_del_if_equal(hr_batch *b, hr_slice key, hr_slice value);

/* Counters -------------------------------------------------------------- */

/* Add delta to a 64-bit counter (missing counts as 0); result num is the new
 * value. */
size_t hr_incr(hr_batch *b, hr_slice key, int64_t delta);
/* Read a counter; num is 0 when missing. */
size_t hr_counter_get(hr_batch *b, hr_slice key);

/* Sorted sets ----------------------------------------------------------- */
/* Members are ordered by (score, member bytes). Scores are finite doubles;
 * integers up to 2^53 (such as millisecond times) are exact. An empty sorted
 * set does not exist (hr_zrem of the last member deletes the key).
 *
 * A sorted set the RocksDB backend keeps in memory (a ranking; see
 * hr_store_options) is read at its latest committed state rather than at the
 * batch's snapshot, as Redis reads every sorted set: a batch that reads it
 * and other keys may see a concurrent batch's change to it before that
 * batch's other writes. */

/* Add a member or update its score; num 1 if new. */
size_t hr_zadd(hr_batch *b, hr_slice key, double score, hr_slice member);
/* Add delta to a member's score (a missing member starts at 0), atomically
 * against concurrent batches: score is the new score. Concurrent increments
 * never lose one (a story's vote sum). */
size_t hr_zincr(hr_batch *b, hr_slice key, double delta, hr_slice member);
/* A compare-and-set's compare: the ops added to b after the guard, to the
 * end of the batch, run only if member of key has score `was` now (NAN: if
 * it is absent); when it does not, none of them runs and each answers rc
 * HR_ECONFLICT (hr_core_exec then fails the batch with it). The guard
 * answers num 1 if it held, else 0, and the member's score as hr_zscore
 * does (rc HR_ENOTFOUND when absent), so a caller that lost can decide
 * again from what it found without reading it again. A second guard after
 * the first is one more condition on the ops after it.
 *
 * The guard and the ops after it are one atomic step on every store: the
 * whole batch where batches are atomic (hr_store_caps), one script on Redis
 * Cluster, where the ops before the guard are not part of it. Where batches
 * are not atomic, the ops after a guard must share its hash slot (one hash
 * tag) and be sorted-set ops (hr_zadd, hr_zincr, hr_zrem, hr_zscore,
 * hr_zguard) or hr_put without an expiry; else they answer HR_EINVAL. A
 * story's vote, its hot score and its note of the voter (core/stories.c)
 * are one such step, as is a reaction (core/reactions.h). */
size_t hr_zguard(hr_batch *b, hr_slice key, hr_slice member, double was);
/* Remove a member; num 1 if it was there. */
size_t hr_zrem(hr_batch *b, hr_slice key, hr_slice member);
/* A member's score; rc HR_ENOTFOUND if absent. */
size_t hr_zscore(hr_batch *b, hr_slice key, hr_slice member);
/* Number of members (0 if the key is missing). */
size_t hr_zcard(hr_batch *b, hr_slice key);

/* A range read: entries in [min, max] by score, in ascending (score, member)
 * order, or descending with `reverse`, starting strictly after the cursor if
 * one is given, skipping `offset` entries, returning at most `limit`. */
typedef struct hr_zrange_spec {
    bool reverse;
    double min, max;     /* inclusive score bounds; use -INFINITY / INFINITY */
    bool has_cursor;     /* start strictly after (cursor_score, cursor_member) */
    double cursor_score; /* in the direction of the read */
    hr_slice cursor_member;
    size_t offset;
    size_t limit;       /* 1..HR_ZRANGE_LIMIT_MAX */
    size_t max_size;    /* 0, or a hint: for a set of more members than
                         * this, the backend may answer no entries and
                         * more = true instead of reading them. RocksDB
                         * does, where a set too big to be kept in its
                         * metadata record costs a seek into every level
                         * that holds part of it; Redis does not. */
    bool attached_only; /* a read of the whole set: when the set comes
                         * from an origin with an attachment, answer
                         * that origin and no entries (the caller's
                         * form of the set stands for them) */
    bool with_size;     /* also answer the set's member count in num, as
                         * hr_zcard would (0 if the key is missing): one
                         * op where a caller needs both. RocksDB has the
                         * count at hand; Redis sends a ZCARD with it. */
} hr_zrange_spec;

/* A spec for the whole set in the given direction, with a limit. */
hr_zrange_spec hr_zrange_all(bool reverse, size_t limit);

size_t hr_zrange(hr_batch *b, hr_slice key, const hr_zrange_spec *spec);
/* Remove every member with min <= score <= max; num is how many. */
size_t hr_zremrange_score(hr_batch *b, hr_slice key, double min, double max);

/* Distinct counts --------------------------------------------------------- */
/* A distinct counter counts the members added within the last ttl_ms: a
 * member counts while now_ms < (time of its last hr_dadd) + ttl_ms.
 *
 * It is exact while it holds at most exact_limit live members. The add that
 * would make it exceed exact_limit converts it to sketch mode: every live
 * member is folded into HyperLogLog sketches (14-bit precision, 16384
 * registers, standard error 0.81 %), one per time bucket of width
 * W = max(1000, ttl_ms / 16) ms chosen at conversion and kept with the
 * counter; a member goes into the bucket of its last add time. In sketch
 * mode an add goes into the bucket of now_ms, and the count estimates the
 * union of the buckets still alive (bucket [i*W, (i+1)*W) is alive while
 * now_ms < (i+1)*W + ttl_ms), so the TTL keeps applying to the estimate,
 * with at most W of extra life. A counter never returns from sketch mode.
 * The whole counter expires when nothing in it is alive.
 *
 * The hash of a member for the sketch: RocksDB uses XXH3-64 of the member
 * bytes (common/hll.h); Redis uses its own PFADD. Estimates therefore differ
 * slightly between backends, never by more than the standard error. */
typedef struct hr_distinct_params {
    int64_t now_ms;      /* the clock of the request, so a batch is consistent */
    int64_t ttl_ms;      /* >= 1 */
    int64_t exact_limit; /* >= 1 */
} hr_distinct_params;

/* Add member (refreshing its time); num is the count after the add. */
size_t hr_dadd(hr_batch *b, hr_slice key, hr_slice member, const hr_distinct_params *p);
/* The count now; 0 if the key is missing. exact_limit is ignored. */
size_t hr_dcount(hr_batch *b, hr_slice key, const hr_distinct_params *p);

/* Packed sets of 64-bit members ------------------------------------------ */
/* A set of 64-bit members (a user's reads as URL hashes, the stories a member
 * has seen), each with its own expiry, built to be tested against MANY
 * members at once: the test costs one read of the set's packed chunks
 * (RocksDB: one MultiGet of ceil(size / chunk) values, then binary searches
 * in memory; Redis: one ZMSCORE), never one lookup per member. A member
 * counts while now < its expire_at_ms (0: never expires). An empty set does
 * not exist. */

#define HR_PSET_TEST_MAX 100000u /* members one hr_pset_test may ask about */

/* Add member or refresh its expiry (the new expire_at_ms replaces the old);
 * num 1 if it was not in the set (or had expired), else 0. */
size_t hr_pset_add(hr_batch *b, hr_slice key, uint64_t member, int64_t expire_at_ms);
/* Remove member; num 1 if it was in the set. */
size_t hr_pset_rem(hr_batch *b, hr_slice key, uint64_t member);
/* Which of members[0..n) (n <= HR_PSET_TEST_MAX; repeats allowed) are in the
 * set now: value holds n bytes, value.ptr[i] == 1 if members[i] is in the set
 * and 0 if not; num is how many are. A missing key answers all 0. */
size_t hr_pset_test(hr_batch *b, hr_slice key, const uint64_t *members, size_t n);
/* Members in the set now (0 if the key is missing). */
size_t hr_pset_card(hr_batch *b, hr_slice key);

/* Time lists -------------------------------------------------------------- */
/* A time list holds (time_ms, member) entries read newest first: the feeds,
 * timelines and secondary indexes of activities. Unlike a sorted set it keeps
 * no member->score index, so an add is one blind, idempotent write (adding
 * the same (time, member) twice leaves one entry) and costs RocksDB one
 * memtable insert: fan-out writes many of these a second. The price: a
 * member is found only with its time (hr_tlrem takes both), and there is no
 * exact size.
 *
 * Order: newest first, and among entries of one time, members descending
 * in memcmp order (the reverse of hr_slice_cmp: "b", "ab", "a"), on both
 * backends.
 *
 * ONE TIME PER MEMBER. Redis keeps a list as a sorted set, which holds a
 * member once: adding a member again at another time moves it there, and
 * hr_tlrem removes the member whatever time_ms says. RocksDB keeps (t1, m)
 * and (t2, m) as two entries, and hr_tlrem removes only (time_ms, member).
 * Callers give each member one time (an activity id and the activity's
 * time), and then both backends agree.
 *
 * Each entry may carry an expiry (0: never). RocksDB stores it with the
 * entry: reads skip expired entries and compaction drops them. Redis cannot
 * expire a member, so there the LIST expires when its latest-expiring entry
 * does (the key's expiry only ever moves later; an entry without expiry
 * makes the list live for ever), and until then reads return entries whose
 * own expiry has passed; hr_tltrim's "expired" clause is RocksDB's only.
 * Callers that must not see old entries bound reads with after_ms (now -
 * ttl), which both backends honour exactly.
 *
 * Time lists live in their own key space: a time list and a value or sorted
 * set may share a key name, and hr_del / hr_expire do not apply to them (a
 * list is emptied by hr_tltrim). Members are 1..HR_TL_MEMBER_MAX bytes;
 * times (time_ms, cursor_time) lie within +-2^53 (exact as Redis scores);
 * expire_at_ms >= 0. */

/* Room for a pair of identifiers "A/B" (128 bytes each, API.md), as the
 * list of all ratings holds (core/ratings.h). */
#define HR_TL_MEMBER_MAX 320u
#define HR_TL_TIME_MAX ((int64_t)1 << 53) /* |time_ms| <= this */

/* Add (time_ms, member), or set its expiry if it is there; num is 0 (a
 * blind write does not know whether the entry was new). */
size_t hr_tladd(hr_batch *b, hr_slice key, int64_t time_ms, hr_slice member, int64_t expire_at_ms);
/* Remove the entry (time_ms, member); num 1 if it was there (RocksDB answers
 * 1 without looking: the delete is blind too). */
size_t hr_tlrem(hr_batch *b, hr_slice key, int64_t time_ms, hr_slice member);

/* A newest-first range read. Entries come back as hr_zentry with score = the
 * time (exact: times are integers below 2^53). */
typedef struct hr_tlrange_spec {
    int64_t before_ms;      /* only entries with time < before_ms; INT64_MAX: no bound */
    int64_t after_ms;       /* only entries with time > after_ms; INT64_MIN: no bound */
    bool has_cursor;        /* start strictly after (cursor_time, cursor_member) in */
    int64_t cursor_time;    /* newest-first order: (time desc, member desc) */
    hr_slice cursor_member; /* (it need not be an entry of the list) */
    size_t offset;          /* entries to skip first (after the cursor) */
    size_t limit;           /* 1..HR_ZRANGE_LIMIT_MAX */
    int64_t now_ms;         /* RocksDB: entries with 0 < expire_at_ms <= now_ms are
                             * skipped (and not counted by offset); Redis: see above */
    bool hot;               /* many readers read this list (a big account's feed):
                             * RocksDB keeps its newest entries in memory from then
                             * on (rocks/timelist_cache.c); Redis: ignored */
} hr_tlrange_spec;

/* A spec for the whole list newest first, with a limit, as of now_ms. */
hr_tlrange_spec hr_tlrange_all(size_t limit, int64_t now_ms);

size_t hr_tlrange(hr_batch *b, hr_slice key, const hr_tlrange_spec *spec);
/* Keep only the `keep` newest entries and drop every entry older than
 * older_than_ms (time < older_than_ms; INT64_MIN: none) or (RocksDB)
 * expired as of the batch's clock; num is how many were removed. keep may
 * be 0 (empties the list). Costs a scan of the list: callers trim now and
 * then, not on every add. */
size_t hr_tltrim(hr_batch *b, hr_slice key, size_t keep, int64_t older_than_ms);

/* Declarations ----------------------------------------------------------- */
/* What a caller tells the store about a family of keys: those whose name
 * starts with prefix and ends with suffix, the two not overlapping (the
 * name is at least as long as both). The store may then keep the family
 * in a way of its own, which a caller could not ask for key by key without
 * knowing the backend. A declaration is not stored: a caller declares on
 * each open, before it writes the family (core: where it makes what names
 * those keys), and it holds until close. May be called while the store
 * runs. */
typedef enum hr_decl_kind {
    /* Sorted sets whose scores are all integers (times in ms, or stamps
     * built from them; |score| <= 2^53) and that are read mostly newest
     * first (a subject's ratings). RocksDB makes a matching set a set of
     * times when it creates it (a set made before the declaration stays as
     * it was made): it keeps the set's order with the time lists and its
     * member records in a column family of their own, both in hashed
     * memtables, where a write costs less (rocks/zset_times.c); a
     * non-integer score into such a set (hr_zadd, hr_zincr) is HR_EINVAL,
     * and an ascending range read of it costs the whole range. keep is
     * unused. */
    HR_DECL_TIME_SET,
    /* Time lists that need only their `keep` (at least 1) newest entries
     * (newest as hr_tlrange reads them), so that the store may drop the
     * others whenever it likes: a reader of such a list must not read past
     * its first `keep` entries, which may or may not still be there. Where
     * the store does not act on the cap, the caller trims with hr_tltrim.
     *
     * RocksDB: the compaction filter (rocks/filter.c) drops an entry when at
     * least `keep` newer live entries of its list are among the entries
     * compacted with it. So a list is cut with no read and no tombstone,
     * which hr_tltrim costs, some time after it grew past keep; until then
     * it holds more. The cut is that of a trim at that moment: a removal
     * (hr_tlrem) of one of those newer entries afterwards leaves the list
     * one entry short of keep, as it would after hr_tltrim, and a removal
     * the compaction does not see yet (still in a newer table) counts as
     * one too. */
    HR_DECL_TL_CAP,
} hr_decl_kind;

typedef struct hr_store_decl {
    hr_decl_kind kind;
    hr_slice prefix, suffix; /* at most HR_DECL_AFFIX_MAX bytes each; either may be empty */
    size_t keep;             /* HR_DECL_TL_CAP: entries kept */
} hr_store_decl;

#define HR_DECL_MAX 8 /* declarations a store holds, of all kinds */
#define HR_DECL_AFFIX_MAX 64

/* Declare d. Returns true when the store acts on it; false when it does not
 * (Redis Cluster, which keeps every sorted set and time list alike; a
 * store that holds HR_DECL_MAX declarations already; an affix too long, a
 * cap's keep 0), and then the store treats the family as any other keys. A declaration of
 * the kind, prefix and suffix of an earlier one replaces it (a cap's
 * keep). */
bool hr_store_declare(hr_store *s, const hr_store_decl *d);

/* Bulk time-list adds ---------------------------------------------------- */
/* A fan-out writes millions of time-list adds, one per follower's timeline,
 * that need no atomicity with anything. An hr_tlbulk gathers them (outside
 * any batch: an add costs ~40 bytes plus its list and member here, against
 * an op's 512) and writes them in the cheapest way the store has:
 *   - RocksDB, from 50,000 adds on (tl_file_min): sorted into one table
 *     file, ingested into the time lists (rocks/timelist_ingest.c). No WAL, no
 *     memtable: a fan-out drains far faster, but each write has a fixed cost
 *     (a flush of the time lists' memtable, a level-0 table more), so
 *     gathering more per write pays.
 *   - otherwise (Redis; RocksDB below that): batches of hr_tladd, as a
 *     caller would write them.
 * hr_tlbulk_write returns when every add is visible and durable, as a batch
 * does, and empties w either way. It is not atomic: a failed write may
 * have applied some of the adds (adds are idempotent: write them again).
 * Adds of one list at one time with one member are one entry, whichever
 * expiry wins. Adds written as a file are not in the op totals of
 * /metrics (herald_fanout_entries_total counts the fan-out's). A write of
 * too few adds for a file, an empty one included, tells RocksDB that the
 * writer has caught up: a burst of files ends, and their level-0 tables are
 * compacted as usual again (rocks/timelist.c, tl_bulk_mode). An hr_tlbulk
 * belongs to one thread at a time. */
typedef struct hr_tlbulk hr_tlbulk;
hr_tlbulk *hr_tlbulk_new(hr_store *s);
/* HR_OK, or HR_EINVAL (nothing added) for what hr_tladd would refuse. */
int hr_tlbulk_add(hr_tlbulk *w, hr_slice key, int64_t time_ms, hr_slice member, int64_t expire_at_ms);
size_t hr_tlbulk_len(const hr_tlbulk *w);
int hr_tlbulk_write(hr_tlbulk *w, hr_err *err);
void hr_tlbulk_free(hr_tlbulk *w);

/* Write stamps ----------------------------------------------------------- */
/* What lets a caller keep a result in memory and know, later, that nothing
 * it read has been written since (core/memo.h). On a store whose caps say
 * `stamps`, every batch
 * and bulk write through this store object counts a write against each key
 * it writes, after the write is applied: a stamp taken before a read and
 * still holding after it says that no write of that key was applied in
 * between, or since. Keys share counters (2^20 of them, by hash), so a stamp
 * may stop holding for another key's write: never the other way round.
 *
 * Only this process's writes are counted, so a shared store, where other
 * servers write too, has none. Reads are not counted, and neither is what a store
 * drops by itself: expiry (which readers already apply by their own clock)
 * and capped lists past their keep. */
typedef struct hr_stamp {
    uint32_t slot;
    uint64_t count;
} hr_stamp;
/* Key's stamp now (caps.stamps). */
hr_stamp hr_store_stamp(const hr_store *s, hr_slice key);
/* Whether no write of the stamp's key was applied since it was taken. */
bool hr_store_stamp_holds(const hr_store *s, hr_stamp st);

/* Durable work queues ---------------------------------------------------- */
/* A queue of jobs (fan-out work). A pushed job stays until acknowledged. A
 * claim leases up to `max` jobs, oldest first, to a consumer for lease_ms;
 * a job whose lease runs out without an ack is handed out again by a later
 * claim (to any consumer), so a worker that crashes loses no job, and a job
 * may run more than once: job handlers must be idempotent. A claim never
 * hands out a job whose lease is still running. A job's id is opaque (at
 * most HR_QJOB_ID_MAX bytes), never reused within a queue, and sorts by push
 * time; an id of the other backend's form, or of no job, acks nothing.
 *
 * Queues live in their own key space, as time lists do: a queue may share a
 * name with a value, and hr_del / hr_expire do not apply to it.
 *
 * RocksDB: jobs are keys of their own (written to the WAL before the push
 * returns, so a pushed job survives kill -9); ids are 16 hex digits. Leases
 * live in the process's memory (one process owns the database), so a
 * restart frees every lease at once: a claim after reopening gets the
 * un-acked jobs at once, and deliveries count from 1 again.
 * Redis: a stream with a consumer group (XADD, XREADGROUP, XAUTOCLAIM,
 * XACK + XDEL); ids are stream ids ("ms-seq"). A lease is the pending
 * entry's idle time, so a job goes out again once it has been idle for the
 * lease_ms of the claim that takes it: workers of one queue use one
 * lease_ms. A queue is one Redis key, so a queue lives in one slot. */

#define HR_QJOB_ID_MAX 64u
#define HR_QCLAIM_MAX 1000u   /* jobs one claim returns at most */
#define HR_QCONSUMER_MAX 128u /* bytes of a consumer's name */

struct hr_job {
    hr_slice id;
    hr_slice payload;
    int64_t pushed_ms;   /* when it was pushed (wall clock; Redis: the server's) */
    uint32_t deliveries; /* 1 on its first claim, more on re-delivery */
};

/* Push a job; the result's value is its id. Payloads are 1..HR_VALUE_MAX
 * bytes. */
size_t hr_qpush(hr_batch *b, hr_slice queue, hr_slice payload);
/* Claim up to max (1..HR_QCLAIM_MAX) jobs for consumer (an identifier of the
 * worker, 1..HR_QCONSUMER_MAX bytes) with a lease of lease_ms (>= 1); the
 * result's jobs / n_jobs hold them, oldest first. None available: n_jobs 0. */
size_t hr_qclaim(hr_batch *b, hr_slice queue, hr_slice consumer, size_t max, int64_t lease_ms);
/* Acknowledge (remove) a job; num 1 if it was still in the queue. The job
 * id is 1..HR_QJOB_ID_MAX bytes. */
size_t hr_qack(hr_batch *b, hr_slice queue, hr_slice job_id);
/* The queue's depth: num = jobs pushed and not yet acknowledged; score = the
 * push time (ms) of the oldest of them, 0 when there is none (lag = now -
 * score). */
size_t hr_qinfo(hr_batch *b, hr_slice queue);

#endif
