/* rocks/filter.c — garbage collection by compaction, and the HLL merge operator.
 *
 * Deleting or overwriting a collection is one metadata write (rocks/engine.c): its
 * sub-keys stay behind, named by a version no metadata record carries any
 * more. Expired keys likewise stay until something removes them. RocksDB
 * calls a compaction filter on every record it rewrites during compaction;
 * ours drop
 *
 *   "default" (metadata)   records expired for more than GRACE_MS (a packed
 *                          set also when its last member expired);
 *   "subkeys", "zindex",   sub-keys whose key has no metadata record, or an
 *   "sketch",              expired one, or one of another type or another
 *   "timesetmembers",      version (Kvrocks' SubKeyFilter does the same);
 *   "memsetmembers"
 *   "sketch"               also the bucket sketches of a live counter that
 *                          stopped counting (bucket i dies at (i+1) W + ttl);
 *   "zindex"               also the index keys of a sorted set whose order
 *                          moved into memory (rocks/zset_memory.c);
 *   "subkeys"              also the member records of such a set once they
 *                          moved to "memsetmembers".
 *   "timelists"            entries expired for more than GRACE_MS (their
 *                          value is their expire_at; no metadata to read);
 *                          entries of a capped list (HR_DECL_TL_CAP) past
 *                          its cap; and the index entries of sets of times
 *                          (rocks/zset_times.c; their value is marked) that the
 *                          sub-key rule above says are gone.
 *
 * The chunks of a live packed set are kept whole: expired members inside
 * them stay until rocks/pset.c rewrites the chunk (its metadata counts them,
 * so the filter may not drop them behind its back).
 *
 * The sub-key filter reads the metadata with a Get on the open DB, once per
 * user key per compaction (consecutive sub-keys share a key). That needs the
 * DB handle, which exists only after open returns and must not be used once
 * close starts: rocks_store.filters_may_read says when it may, and close
 * waits for running compactions (rocksdb_cancel_all_background_work) after
 * clearing it. Outside that window, and on any doubt (a read error, a record
 * it cannot decode), the filter keeps the record: keeping garbage is safe,
 * dropping a live sub-key is not.
 *
 * Why a grace period: an op decides a key is alive at its batch's clock and
 * writes moments later, possibly keeping the same version (hr_expire extends
 * a collection in place). A filter running just after the expiry must not
 * drop that collection's sub-keys meanwhile, so "expired" here means expired
 * GRACE_MS ago, far longer than any batch runs.
 *
 * Merge operator ("sketch" CF). A bucket's value is an HLL sketch in either
 * encoding of common/hll.h; an operand is an "updates" list of registers to
 * raise. Merging is register max, which is commutative and idempotent, so
 * RocksDB may group operands any way it likes. Reads of a bucket with
 * operands pending run the full merge, so it is cheap (merge_fold): update
 * lists are concatenated while small, a dense sketch is patched in place.
 * A malformed operand fails the merge (RocksDB reports corruption) rather
 * than silently losing registers.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/hll.h"
#include "store/rocks/filter.h"
#include "store/rocks/zset.h"

#define GRACE_MS (60 * 1000)

static void noop_destroy(void *state) {}

/* Metadata filter -------------------------------------------------------------- */

typedef struct meta_filter {
    int64_t now; /* wall clock at the start of the compaction */
} meta_filter;

static unsigned char meta_filter_run(void *state, int level, const char *key, size_t klen, const char *val,
                                     size_t vlen, char **new_val, size_t *new_len, unsigned char *changed) {
    const meta_filter *f = state;
    rmeta m;
    if (meta_decode(hr_slice_of(val, vlen), &m) != 0) return 0;
    return !meta_alive(&m, f->now - GRACE_MS); /* a key, once dead, stays dead until rewritten */
}

static const char *meta_filter_name(void *state) {
    return "herald.meta_expiry";
}

static rocksdb_compactionfilter_t *meta_filter_create(void *state, rocksdb_compactionfiltercontext_t *ctx) {
    meta_filter *f = hr_xmalloc(sizeof *f);
    f->now = hr_now_ms();
    return rocksdb_compactionfilter_create(f, free, meta_filter_run, meta_filter_name);
}

static const char *meta_factory_name(void *state) {
    return "herald.meta_expiry_factory";
}

rocksdb_compactionfilterfactory_t *rocks_meta_filter_factory(rocks_store *s) {
    return rocksdb_compactionfilterfactory_create(NULL, noop_destroy, meta_filter_create, meta_factory_name);
}

/* Sub-key filter --------------------------------------------------------------- */

typedef struct sub_factory {
    rocks_store *s; /* borrowed: outlives the DB's use of the factory */
    int cf;
} sub_factory;

typedef struct sub_filter {
    const sub_factory *fac;
    int64_t now;
    rocksdb_readoptions_t *ropts;
    /* The metadata of the last user key seen. */
    hr_buf key;
    bool have;    /* key and what follows describe a key */
    bool unknown; /* could not read it: keep everything of that key */
    rmeta m;      /* type T_NONE: no record */
} sub_filter;

static void sub_filter_destroy(void *state) {
    sub_filter *f = state;
    rocksdb_readoptions_destroy(f->ropts);
    hr_buf_free(&f->key);
    free(f);
}

/* Load the metadata of user into the filter's cache. */
static void sub_filter_load(sub_filter *f, hr_slice user) {
    hr_buf_clear(&f->key);
    hr_buf_append_slice(&f->key, user);
    f->have = true;
    f->unknown = false;
    memset(&f->m, 0, sizeof f->m);
    rocks_store *s = f->fac->s;
    char *errptr = NULL;
    size_t vlen = 0;
    char *v = rocksdb_get_cf(s->db, f->ropts, s->cf[CF_META], user.ptr, user.len, &vlen, &errptr);
    if (errptr) {
        f->unknown = true;
        rocksdb_free(errptr);
    } else if (v && meta_decode(hr_slice_of(v, vlen), &f->m) != 0) {
        f->unknown = true;
    }
    f->m.value = hr_slice_of(NULL, 0); /* points into v, freed now */
    rocksdb_free(v);
}

/* The metadata of user (its last one is kept: consecutive keys share a
 * user key), or NULL when it may not or could not be read. */
static const rmeta *meta_for(sub_filter *f, hr_slice user) {
    if (!atomic_load(&f->fac->s->filters_may_read)) return NULL;
    if (!f->have || !hr_slice_eq(user, hr_buf_slice(&f->key))) sub_filter_load(f, user);
    return f->unknown ? NULL : &f->m;
}

static unsigned char sub_filter_run(void *state, int level, const char *key, size_t klen, const char *val,
                                    size_t vlen, char **new_val, size_t *new_len, unsigned char *changed) {
    sub_filter *f = state;
    hr_slice user, rest;
    uint64_t version;
    if (key_parse(hr_slice_of(key, klen), &user, &version, &rest) != 0) return 0;
    const rmeta *m = meta_for(f, user);
    if (m == NULL) return 0;
    if (m->type != T_ZSET && m->type != T_DISTINCT && m->type != T_PSET)
        return 1; /* no record, or not a collection */
    if (!meta_alive(m, f->now - GRACE_MS)) return 1;
    if (m->version != version) return 1;
    if (f->fac->cf == CF_ZINDEX && m->type == T_ZSET && (m->zflags & ZF_MEM))
        return 1; /* a set whose order moved into memory (rocks/zset_memory.c) */
    if (f->fac->cf == CF_SUB && m->type == T_ZSET && (m->zflags & ZF_MEM))
        return 1; /* its member records moved to "memsetmembers" with it */
    if (f->fac->cf == CF_SKETCH && m->type == T_DISTINCT && m->mode == D_SKETCH && rest.len == 9 &&
        rest.ptr[0] == SKETCH_BUCKET && m->width > 0) {
        int64_t bucket = (int64_t)load_u64(rest.ptr + 1);
        if ((bucket + 1) * m->width + m->ttl < f->now - GRACE_MS) return 1;
    }
    return 0;
}

static const char *sub_filter_name(void *state) {
    return "herald.subkey_gc";
}

static sub_filter *sub_filter_new(void *factory) {
    sub_filter *f = hr_xcalloc(1, sizeof *f);
    f->fac = factory;
    f->now = hr_now_ms();
    f->ropts = rocksdb_readoptions_create();
    return f;
}

static rocksdb_compactionfilter_t *sub_filter_create(void *state, rocksdb_compactionfiltercontext_t *ctx) {
    return rocksdb_compactionfilter_create(sub_filter_new(state), sub_filter_destroy, sub_filter_run,
                                           sub_filter_name);
}

static const char *sub_factory_name(void *state) {
    return "herald.subkey_gc_factory";
}

rocksdb_compactionfilterfactory_t *rocks_sub_filter_factory(rocks_store *s, int cf) {
    sub_factory *fac = hr_xmalloc(sizeof *fac);
    fac->s = s;
    fac->cf = cf;
    return rocksdb_compactionfilterfactory_create(fac, free, sub_filter_create, sub_factory_name);
}

/* Time-list filter ---------------------------------------------------------------- */

/* The time lists' filter: expiry and the sets of times' index entries (with
 * the sub-key filter's metadata reads), and the caps (HR_DECL_TL_CAP,
 * store.h), taken as they were when the compaction started. RocksDB calls
 * it on the entries of a compaction in key order, and a list's entries are
 * one run of keys, newest first (rocks/timelist.c), so a cap is a count per
 * run: past `keep` live entries, the rest of the run goes. A compaction sees only part of a
 * list (the tables it rewrites): an entry it drops has `keep` newer entries
 * with it, which is all a cap asks, and entries elsewhere are not counted,
 * so it may keep more than keep, never fewer. RocksDB does not call the
 * filter on an entry deleted by a newer tombstone among the same tables, so
 * those are not counted; see HR_DECL_TL_CAP for the ones in other tables. */
typedef struct tl_filter {
    sub_filter *sub;
    size_t n_caps;
    const rocks_decl *caps[HR_DECL_MAX]; /* prefix and suffix fixed once declared */
    size_t keeps[HR_DECL_MAX];           /* their keep at the start */
    hr_buf run;                          /* the list last seen: hash, length, key (an entry's first bytes) */
    size_t keep;                         /* its cap's keep; 0: not capped */
    size_t live;                         /* its entries kept so far */
} tl_filter;

static void tl_filter_destroy(void *state) {
    tl_filter *f = state;
    sub_filter_destroy(f->sub);
    hr_buf_free(&f->run);
    free(f);
}

/* The keep of the first cap that list matches, 0 for none. */
static size_t cap_of(const tl_filter *f, hr_slice list) {
    for (size_t i = 0; i < f->n_caps; i++)
        if (rocks_decl_matches(f->caps[i], list)) return f->keeps[i];
    return 0;
}

/* Whether a live entry (| u64 list hash | u16 len | list | ...) is past its
 * list's cap; counts it when not. */
static bool past_cap(tl_filter *f, const char *key, size_t klen) {
    if (klen < 10) return false;
    size_t list_len = ((size_t)(unsigned char)key[8] << 8) | (unsigned char)key[9];
    if (klen < 10 + list_len) return false;
    if (f->run.len != 10 + list_len || memcmp(f->run.data, key, f->run.len) != 0) {
        hr_buf_clear(&f->run);
        hr_buf_append(&f->run, key, 10 + list_len);
        f->keep = cap_of(f, hr_slice_of(key + 10, list_len));
        f->live = 0;
    }
    if (f->keep == 0 || f->live < f->keep) {
        f->live++;
        return false;
    }
    return true;
}

/* An entry's value is its expire_at (8 bytes); a set of times' index entry
 * (rocks/zset_times.c) is marked, and its list is its sub-key prefix, which
 * key_parse splits. */
static unsigned char tl_filter_run(void *state, int level, const char *key, size_t klen, const char *val,
                                   size_t vlen, char **new_val, size_t *new_len, unsigned char *changed) {
    tl_filter *f = state;
    if (vlen == 8) {
        int64_t at = (int64_t)load_u64(val);
        if (at > 0 && at <= f->sub->now - GRACE_MS) return 1;
        return f->n_caps && past_cap(f, key, klen);
    }
    if (vlen != ZTL_ENTRY_VALUE_LEN || memcmp(val, ZTL_ENTRY_VALUE, vlen) != 0 || klen < 10) return 0;
    size_t list_len = ((size_t)(unsigned char)key[8] << 8) | (unsigned char)key[9];
    if (klen < 10 + list_len) return 0;
    hr_slice user, rest;
    uint64_t version;
    if (key_parse(hr_slice_of(key + 10, list_len), &user, &version, &rest) != 0 || rest.len) return 0;
    const rmeta *m = meta_for(f->sub, user);
    if (m == NULL) return 0;
    return m->type != T_ZSET || !meta_alive(m, f->sub->now - GRACE_MS) || m->version != version ||
           !(m->zflags & ZF_TL);
}

static const char *tl_filter_name(void *state) {
    return "herald.tl_expiry";
}

static rocksdb_compactionfilter_t *tl_filter_create(void *state, rocksdb_compactionfiltercontext_t *ctx) {
    const sub_factory *fac = state;
    tl_filter *f = hr_xcalloc(1, sizeof *f);
    f->sub = sub_filter_new(state);
    size_t n = atomic_load(&fac->s->n_decls);
    for (size_t i = 0; i < n; i++) {
        const rocks_decl *d = &fac->s->decls[i];
        if (d->kind != HR_DECL_TL_CAP) continue;
        f->caps[f->n_caps] = d;
        f->keeps[f->n_caps++] = atomic_load(&d->keep);
    }
    return rocksdb_compactionfilter_create(f, tl_filter_destroy, tl_filter_run, tl_filter_name);
}

static const char *tl_factory_name(void *state) {
    return "herald.tl_expiry_factory";
}

rocksdb_compactionfilterfactory_t *rocks_tl_filter_factory(rocks_store *s) {
    sub_factory *fac = hr_xmalloc(sizeof *fac);
    fac->s = s;
    fac->cf = CF_TL;
    return rocksdb_compactionfilterfactory_create(fac, free, tl_filter_create, tl_factory_name);
}

/* HLL merge operator ------------------------------------------------------------ */

/* Return buf's bytes to RocksDB, which frees them with merge_free. */
static char *hand_over(hr_buf *buf, size_t *len) {
    *len = buf->len;
    return buf->data;
}

static bool is_updates(const char *v, size_t len) {
    return len >= 1 && v[0] == HLL_ENC_UPDATES && (len - 1) % 3 == 0;
}

/* Merge value (NULL: none) and operands into one encoding. Every read of a
 * bucket with operands pending runs this, so it avoids decoding when it can:
 *   - all in the updates form and still small: concatenate (the form allows
 *     an index to repeat; the highest rank wins when decoded);
 *   - a dense value: copy it and raise its registers in place;
 *   - else decode everything into a sketch and encode that. */
static char *merge_fold(const char *value, size_t vlen, const char *const *ops, const size_t *lens, int n,
                        unsigned char *success, size_t *new_len) {
    hr_buf out = HR_BUF_INIT;
    bool updates = value == NULL || is_updates(value, vlen);
    size_t total = value ? vlen : 1;
    for (int i = 0; i < n; i++) {
        updates = updates && is_updates(ops[i], lens[i]);
        total += lens[i] - 1;
    }
    *success = 1;
    if (updates && total <= 1 + 3 * HLL_SPARSE_MAX) {
        hr_buf_reserve(&out, total);
        hr_buf_append_byte(&out, HLL_ENC_UPDATES);
        if (value) hr_buf_append(&out, value + 1, vlen - 1);
        for (int i = 0; i < n; i++)
            hr_buf_append(&out, ops[i] + 1, lens[i] - 1);
        return hand_over(&out, new_len);
    }
    if (value && vlen == HLL_DENSE_BYTES && value[0] == HLL_ENC_DENSE) {
        hr_buf_append(&out, value, vlen);
        hll *regs = (hll *)(out.data + 1); /* an hll is its bytes */
        for (int i = 0; i < n && *success; i++)
            *success = hll_decode_merge(regs, ops[i], lens[i]) == 0;
        return hand_over(&out, new_len);
    }
    hll *h = hr_xmalloc(sizeof *h);
    hll_clear(h);
    if (value) *success = hll_decode_merge(h, value, vlen) == 0;
    for (int i = 0; i < n && *success; i++)
        *success = hll_decode_merge(h, ops[i], lens[i]) == 0;
    hll_encode(h, &out);
    free(h);
    return hand_over(&out, new_len);
}

static char *merge_full(void *state, const char *key, size_t klen, const char *existing, size_t elen,
                        const char *const *ops, const size_t *lens, int n, unsigned char *success,
                        size_t *new_len) {
    return merge_fold(existing, elen, ops, lens, n, success, new_len);
}

static char *merge_partial(void *state, const char *key, size_t klen, const char *const *ops,
                           const size_t *lens, int n, unsigned char *success, size_t *new_len) {
    return merge_fold(NULL, 0, ops, lens, n, success, new_len);
}

static void merge_free(void *state, const char *value, size_t len) {
    free((void *)value);
}

static const char *merge_name(void *state) {
    return "herald.hll_max.v1";
}

rocksdb_mergeoperator_t *rocks_hll_merge_operator(void) {
    return rocksdb_mergeoperator_create(NULL, noop_destroy, merge_full, merge_partial, merge_free,
                                        merge_name);
}
