/* backend.h — what a storage backend implements, and the batch as backends
 * see it. Included only by the backends in src/store/; nothing above store/ sees it.
 *
 * A backend is a table of function pointers (SQLite's sqlite3_vfs, redis'
 * connection.h). Its store struct embeds hr_store as its first member so that
 * the dispatcher can find the table:
 *
 *     typedef struct { hr_store super; rocksdb_t *db; ... } rocks_store;
 */
#ifndef HR_STORE_BACKEND_H
#define HR_STORE_BACKEND_H

#include <stdatomic.h>

#include "common/arena.h"
#include "common/buf.h"
#include "store/store.h"

typedef struct hr_store_backend {
    hr_store_caps caps;     /* what it can do (store.h) */
    const char *uri_prefix; /* "rocksdb:", "redis://" */
    /* uri is the whole URI, prefix included. */
    int (*open)(const char *uri, const hr_store_options *opts, hr_store **out, hr_err *err);
    void (*close)(hr_store *s);
    int (*ping)(hr_store *s, hr_err *err);
    /* See hr_store_settle; NULL (and caps.settles false): the backend has
     * no background work to wait for. */
    double (*settle)(hr_store *s, double max_s, bool *settled);
    /* Fill m's caches (hr_store_metrics_of); NULL: it keeps none. */
    void (*caches)(const hr_store *s, hr_store_metrics *m);
    /* Run b; see hr_store_exec. The dispatcher has already checked every
     * op's arguments: an op whose result.rc is not HR_OK on entry must be
     * skipped (it keeps that rc). Must set the rc of every op it runs. */
    int (*exec)(hr_store *s, hr_batch *b, unsigned flags, hr_err *err);
    /* hr_origin_attached and hr_origin_attach; NULL: it gives no origins. */
    void *(*origin_attached)(const hr_origin *o);
    void *(*origin_attach)(hr_store *s, hr_origin *o, void *p, size_t bytes, void (*free_p)(void *));
    /* Write w's adds (store.h "Bulk time-list adds") in a way of its own
     * (and caps.bulk_files true); NULL: as usual batches
     * (hr_tlbulk_write_batches). */
    int (*tlbulk_write)(hr_store *s, hr_tlbulk *w, hr_err *err);
    /* See hr_store_declare (arguments checked); NULL: the backend acts on
     * no declaration. */
    bool (*declare)(hr_store *s, const hr_store_decl *d);
} hr_store_backend;

/* The adds an hr_tlbulk gathered: lists and members are bytes at offsets
 * of `bytes` (so that its growth moves nothing that points into it). */
typedef struct hr_tlbulk_entry {
    size_t list, member;
    uint32_t list_len, member_len;
    int64_t time_ms, expire_at_ms;
} hr_tlbulk_entry;

struct hr_tlbulk {
    hr_store *s;
    hr_buf bytes;
    hr_tlbulk_entry *e;
    size_t n, cap;
    /* The backend's working memory for a write, kept from one write to the
     * next and freed with w: a gather of a million adds needs ~100 MB, and
     * fresh memory costs a page fault and a zeroing per page. */
    hr_buf scratch[3];
};

static inline hr_slice hr_tlbulk_list(const hr_tlbulk *w, const hr_tlbulk_entry *e) {
    return hr_slice_of(w->bytes.data + e->list, e->list_len);
}
static inline hr_slice hr_tlbulk_member(const hr_tlbulk *w, const hr_tlbulk_entry *e) {
    return hr_slice_of(w->bytes.data + e->member, e->member_len);
}

/* Write entries [from, to) of w as usual batches of hr_tladd. */
int hr_tlbulk_write_batches(hr_tlbulk *w, size_t from, size_t to, hr_err *err);

struct hr_store {
    const hr_store_backend *backend;
    /* Set by open: it found a store that was there before (RocksDB: a
     * database in the directory). Redis Cluster cannot tell, and says
     * false: there a store without a format record is taken as new. */
    bool existed;
    /* Set by open: the bytes of hr_store_options.memory it leaves to its
     * callers' memos (hr_store_caps.memo_bytes when stamps are counted). */
    size_t memo_bytes;
    /* The backend's caps, completed by hr_store_open. */
    hr_store_caps caps;
    /* Write stamps (store.h): the counters, when caps.stamps. */
    _Atomic uint64_t *write_counts;
};

extern const hr_store_backend hr_rocks_backend;
extern const hr_store_backend hr_redis_backend;

/* One operation. Which fields are meaningful depends on type. All slices
 * point into the batch's arena. */
typedef struct hr_op {
    hr_op_type type;
    hr_slice key;
    hr_slice member;             /* ZADD ZREM ZSCORE DADD TLADD TLREM; QCLAIM consumer; QACK id */
    hr_slice value;              /* PUT; QPUSH payload */
    int64_t expire_at_ms;        /* PUT EXPIRE PSET_ADD TLADD */
    int64_t time_ms;             /* TLADD TLREM: the entry's time; TLTRIM: older_than_ms */
    int64_t delta;               /* INCR */
    double score;                /* ZADD; ZINCR: the delta; ZGUARD: was */
    double min, max;             /* ZREMRANGE_SCORE */
    size_t keep;                 /* TLTRIM */
    hr_zrange_spec range;        /* ZRANGE (cursor_member points into the arena) */
    hr_tlrange_spec tlrange;     /* TLRANGE (likewise) */
    hr_distinct_params distinct; /* DADD DCOUNT */
    uint64_t u64;                /* PSET_ADD, PSET_REM member */
    const uint64_t *u64s;        /* PSET_TEST members */
    size_t n_u64s;
    size_t claim_max; /* QCLAIM */
    int64_t lease_ms; /* QCLAIM */
    hr_result result;
} hr_op;

/* Whether a guard that ran held (store.h, hr_zguard): after one that did
 * not, a backend runs none of the batch's ops and answers HR_ECONFLICT. */
static inline bool hr_guard_held(const hr_op *op) {
    return (op->result.rc == HR_OK || op->result.rc == HR_ENOTFOUND) && op->result.num == 1;
}

struct hr_batch {
    hr_op *ops;
    size_t len, cap;
    bool executed;
    /* Keys, values and results: freed with the batch. Backends allocate the
     * memory of their results (values, entries) here too. */
    hr_arena arena;
    /* Memory the results point into that the backend owns (hr_batch_hold):
     * released when the batch is reset or freed. */
    struct hr_batch_hold *holds;
    size_t n_holds, cap_holds;
    /* The members the last hr_pset_test was given (src, n) and its copy:
     * the next test given the same array holding the same members shares
     * the copy, so a backend sees that both ask about the same members
     * (their op.u64s are equal). */
    const uint64_t *test_src, *test_copy;
    size_t test_n;
};

/* The index of b's first guard that will run (store.h, hr_zguard; its rc
 * is HR_OK after the dispatcher's checks): from it on, the ops are one
 * step. b->len when there is none. */
static inline size_t hr_batch_first_guard(const hr_batch *b) {
    for (size_t i = 0; i < b->len; i++)
        if (b->ops[i].type == HR_OP_ZGUARD && b->ops[i].result.rc == HR_OK) return i;
    return b->len;
}

/* Keep p alive as long as b's results: release(p) when b is reset or
 * freed. A backend answers from memory it shares this way instead of
 * copying into the arena (a cached friend list of 5,000, rocks/zset_cache.c). */
void hr_batch_hold(hr_batch *b, void (*release)(void *), void *p);

/* True for the op types that change the store. */
bool hr_op_is_write(hr_op_type t);

/* The part of key Redis Cluster hashes: the hash tag if it has one, else the
 * whole key. */
hr_slice hr_key_hash_part(hr_slice key);

#endif
