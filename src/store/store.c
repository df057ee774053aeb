/* store.c — opening a store by URI, and the one place every batch passes
 * through (so op totals for /metrics are counted once, for every backend). */
#include "store/backend.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"

static const hr_store_backend *const backends[] = {&hr_rocks_backend, &hr_redis_backend};

static _Atomic uint64_t op_totals[HR_OP_COUNT_];
static _Atomic uint64_t batches_total, batch_errors_total;

#define STAMP_SLOTS (1u << 20) /* write stamps' counters (8 MB) */

/* The record of a store's format: a value under a key no caller makes
 * (callers' keys are namespaced, store.h), "herald store format N". */
#define FORMAT_KEY "herald:store-format"
#define FORMAT_TEXT "herald store format "
#define FORMAT_REBUILD "move it away and build the store again from your data"

/* Make s's format record if s is new; refuse s unless it records ours. */
static int check_format(hr_store *s, const char *uri, hr_err *err) {
    char want[64];
    int n = snprintf(want, sizeof want, FORMAT_TEXT "%d", HR_STORE_FORMAT);
    hr_slice key = hr_slice_str(FORMAT_KEY), text = hr_slice_of(want, (size_t)n);
    hr_batch *b = hr_batch_new();
    size_t op = hr_get(b, key);
    int rc = hr_store_exec(s, b, 0, err);
    if (rc == HR_OK && hr_batch_result(b, op)->rc == HR_ENOTFOUND) {
        if (s->existed) {
            hr_batch_free(b);
            return hr_err_set(err, HR_ECONFLICT,
                              "store %s was made by a herald from before store formats; this herald reads "
                              "format %d only: " FORMAT_REBUILD,
                              uri, HR_STORE_FORMAT);
        }
        /* New: record the format. Another server opening the same new
         * store may race us: the read after the write says who won. */
        hr_batch_reset(b);
        hr_put_if_missing(b, key, text, 0);
        op = hr_get(b, key);
        rc = hr_store_exec(s, b, 0, err);
    }
    const hr_result *r = hr_batch_result(b, op);
    if (rc == HR_OK && (r->rc != HR_OK || !hr_slice_eq(r->value, text)))
        rc = hr_err_set(err, HR_ECONFLICT,
                        "store %s holds '%.*s' where its format should be; this herald reads format %d "
                        "only: " FORMAT_REBUILD,
                        uri, r->rc == HR_OK ? (int)(r->value.len < 64 ? r->value.len : 64) : 0,
                        r->rc == HR_OK ? r->value.ptr : "", HR_STORE_FORMAT);
    hr_batch_free(b);
    return rc;
}

int hr_store_open(const char *uri, const hr_store_options *opts, hr_store **out, hr_err *err) {
    *out = NULL;
    hr_store_options defaults = {0};
    if (opts == NULL) opts = &defaults;
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        const char *prefix = backends[i]->uri_prefix;
        if (strncmp(uri, prefix, strlen(prefix)) != 0) continue;
        hr_store *s;
        int rc = backends[i]->open(uri, opts, &s, err);
        if (rc != HR_OK) return rc;
        s->caps = backends[i]->caps;
        s->caps.stamps = !s->caps.shared;
        s->caps.memo_bytes = s->caps.stamps ? s->memo_bytes : 0;
        if (s->caps.stamps) s->write_counts = hr_xcalloc(STAMP_SLOTS, sizeof *s->write_counts);
        rc = check_format(s, uri, err);
        if (rc != HR_OK) {
            hr_store_close(s);
            return rc;
        }
        *out = s;
        return HR_OK;
    }
    return hr_err_set(err, HR_EINVAL,
                      "unknown store '%s': expected rocksdb:PATH or redis://HOST:PORT[,HOST:PORT...]", uri);
}

void hr_store_close(hr_store *s) {
    if (s == NULL) return;
    free((void *)s->write_counts);
    s->backend->close(s);
}

const hr_store_caps *hr_store_caps_of(const hr_store *s) {
    return &s->caps;
}

void *hr_origin_attached(const hr_store *s, const hr_origin *o) {
    return o && s->backend->origin_attached ? s->backend->origin_attached(o) : NULL;
}

void *hr_origin_attach(hr_store *s, hr_origin *o, void *p, size_t bytes, void (*free_p)(void *)) {
    return s->backend->origin_attach(s, o, p, bytes, free_p);
}

int hr_store_ping(hr_store *s, hr_err *err) {
    return s->backend->ping(s, err);
}

double hr_store_settle(hr_store *s, double max_s, bool *settled) {
    bool done = true;
    double waited = s->backend->settle ? s->backend->settle(s, max_s, &done) : 0;
    if (settled) *settled = done;
    return waited;
}

static bool tl_time_ok(int64_t t) {
    return t >= -HR_TL_TIME_MAX && t <= HR_TL_TIME_MAX;
}
static bool tl_member_ok(hr_slice m) {
    return m.len >= 1 && m.len <= HR_TL_MEMBER_MAX;
}

/* An op's arguments, checked once here for every backend: HR_OK, or the
 * op's own rc. An invalid op is not run (backends skip ops whose rc is set);
 * the rest of the batch runs. */
static int validate(const hr_op *op) {
    if (op->key.len == 0 || op->key.len > HR_KEY_MAX) return HR_EINVAL;
    switch (op->type) {
    case HR_OP_PUT:
    case HR_OP_PUT_IF_MISSING:
    case HR_OP_DEL_IF_EQUAL: return op->value.len > HR_VALUE_MAX ? HR_ETOOBIG : HR_OK;
    case HR_OP_ZADD:
    case HR_OP_ZINCR: return isfinite(op->score) ? HR_OK : HR_EINVAL;
    case HR_OP_ZGUARD: return isinf(op->score) ? HR_EINVAL : HR_OK; /* NAN: absent */
    case HR_OP_ZREMRANGE_SCORE: return isnan(op->min) || isnan(op->max) ? HR_EINVAL : HR_OK;
    case HR_OP_ZRANGE: {
        const hr_zrange_spec *sp = &op->range;
        if (sp->limit < 1 || sp->limit > HR_ZRANGE_LIMIT_MAX || isnan(sp->min) || isnan(sp->max))
            return HR_EINVAL;
        return sp->has_cursor && isnan(sp->cursor_score) ? HR_EINVAL : HR_OK;
    }
    case HR_OP_DADD:
        if (op->distinct.exact_limit < 1) return HR_EINVAL;
        /* fall through */
    case HR_OP_DCOUNT: return op->distinct.ttl_ms < 1 ? HR_EINVAL : HR_OK;
    case HR_OP_PSET_ADD: return op->expire_at_ms < 0 ? HR_EINVAL : HR_OK;
    case HR_OP_PSET_TEST: return op->n_u64s > HR_PSET_TEST_MAX ? HR_EINVAL : HR_OK;
    case HR_OP_TLADD:
        if (op->expire_at_ms < 0) return HR_EINVAL;
        /* fall through */
    case HR_OP_TLREM: return tl_time_ok(op->time_ms) && tl_member_ok(op->member) ? HR_OK : HR_EINVAL;
    case HR_OP_TLRANGE: {
        const hr_tlrange_spec *sp = &op->tlrange;
        if (sp->limit < 1 || sp->limit > HR_ZRANGE_LIMIT_MAX) return HR_EINVAL;
        return !sp->has_cursor || (tl_time_ok(sp->cursor_time) && tl_member_ok(sp->cursor_member))
                   ? HR_OK
                   : HR_EINVAL;
    }
    case HR_OP_QPUSH:
        if (op->value.len > HR_VALUE_MAX) return HR_ETOOBIG;
        return op->value.len == 0 ? HR_EINVAL : HR_OK;
    case HR_OP_QCLAIM:
        if (op->claim_max < 1 || op->claim_max > HR_QCLAIM_MAX || op->lease_ms < 1) return HR_EINVAL;
        return op->member.len >= 1 && op->member.len <= HR_QCONSUMER_MAX ? HR_OK : HR_EINVAL;
    case HR_OP_QACK: return op->member.len >= 1 && op->member.len <= HR_QJOB_ID_MAX ? HR_OK : HR_EINVAL;
    default: return HR_OK;
    }
}

/* Write stamps (store.h) ------------------------------------------------- */

static uint32_t stamp_slot(hr_slice key) {
    return (uint32_t)(XXH3_64bits(key.ptr, key.len) & (STAMP_SLOTS - 1));
}

static void count_write(_Atomic uint64_t *counts, hr_slice key) {
    atomic_fetch_add_explicit(&counts[stamp_slot(key)], 1, memory_order_release);
}

/* After the batch ran, failed or not (a failed batch may have applied some
 * of its writes): every key it may have written. */
static void count_batch_writes(_Atomic uint64_t *counts, const hr_batch *b) {
    for (size_t i = 0; i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        if (!hr_op_is_write(op->type)) continue;
        count_write(counts, op->key);
    }
}

hr_stamp hr_store_stamp(const hr_store *s, hr_slice key) {
    uint32_t slot = stamp_slot(key);
    if (s->write_counts == NULL) return (hr_stamp){.slot = STAMP_SLOTS}; /* never holds */
    return (hr_stamp){.slot = slot,
                      .count = atomic_load_explicit(&s->write_counts[slot], memory_order_acquire)};
}

bool hr_store_stamp_holds(const hr_store *s, hr_stamp st) {
    return st.slot < STAMP_SLOTS &&
           atomic_load_explicit(&s->write_counts[st.slot], memory_order_acquire) == st.count;
}

/* Batches ------------------------------------------------------------------ */

int hr_store_exec(hr_store *s, hr_batch *b, unsigned flags, hr_err *err) {
    if (b->executed) return hr_err_set(err, HR_EINVAL, "batch executed twice without reset");
    b->executed = true;
    bool unguarded = false; /* an invalid guard guards nothing: what it guards is not run */
    for (size_t i = 0; i < b->len; i++) {
        hr_op *op = &b->ops[i];
        atomic_fetch_add_explicit(&op_totals[op->type], 1, memory_order_relaxed);
        op->result.rc = unguarded ? HR_EINVAL : validate(op);
        unguarded = unguarded || (op->type == HR_OP_ZGUARD && op->result.rc != HR_OK);
    }
    atomic_fetch_add_explicit(&batches_total, 1, memory_order_relaxed);
    if (b->len == 0) return HR_OK;
    int rc = s->backend->exec(s, b, flags, err);
    if (rc != HR_OK) atomic_fetch_add_explicit(&batch_errors_total, 1, memory_order_relaxed);
    if (s->write_counts) count_batch_writes(s->write_counts, b);
    return rc;
}

const char *hr_op_label(hr_op_type t) {
    switch (t) {
#define HR_OP_LABEL_(name, label)                                                                            \
    case HR_OP_##name: return label;
        HR_OP_TYPES(HR_OP_LABEL_)
#undef HR_OP_LABEL_
    default: return "?";
    }
}

void hr_store_metrics_of(const hr_store *s, hr_store_metrics *m) {
    memset(m, 0, sizeof *m);
    for (int t = 0; t < HR_OP_COUNT_; t++)
        m->ops[t] = atomic_load_explicit(&op_totals[t], memory_order_relaxed);
    m->batches = atomic_load(&batches_total);
    m->batch_errors = atomic_load(&batch_errors_total);
    if (s && s->backend->caches) s->backend->caches(s, m);
}

bool hr_op_is_write(hr_op_type t) {
    switch (t) {
    case HR_OP_PUT:
    case HR_OP_DEL:
    case HR_OP_EXPIRE:
    case HR_OP_INCR:
    case HR_OP_ZADD:
    case HR_OP_ZINCR:
    case HR_OP_ZREM:
    case HR_OP_ZREMRANGE_SCORE:
    case HR_OP_DADD:
    case HR_OP_PSET_ADD:
    case HR_OP_PSET_REM:
    case HR_OP_TLADD:
    case HR_OP_TLREM:
    case HR_OP_TLTRIM:
    case HR_OP_QPUSH:
    case HR_OP_QCLAIM:
    case HR_OP_QACK:
    case HR_OP_PUT_IF_MISSING:
    case HR_OP_DEL_IF_EQUAL: return true;
    default: return false;
    }
}

hr_slice hr_key_hash_part(hr_slice key) {
    const char *open = memchr(key.ptr, '{', key.len);
    if (open == NULL) return key;
    size_t start = (size_t)(open - key.ptr) + 1;
    const char *close = memchr(key.ptr + start, '}', key.len - start);
    if (close == NULL || close == key.ptr + start) return key; /* none, or "{}" */
    return hr_slice_of(key.ptr + start, (size_t)(close - (key.ptr + start)));
}

/* Bulk time-list adds (store.h) ------------------------------------------ */

#define TLBULK_BATCH 1000 /* adds per batch when written as batches */

hr_tlbulk *hr_tlbulk_new(hr_store *s) {
    hr_tlbulk *w = hr_xcalloc(1, sizeof *w);
    w->s = s;
    w->bytes = (hr_buf)HR_BUF_INIT;
    return w;
}

int hr_tlbulk_add(hr_tlbulk *w, hr_slice key, int64_t time_ms, hr_slice member, int64_t expire_at_ms) {
    if (key.len == 0 || key.len > HR_KEY_MAX || expire_at_ms < 0 || !tl_time_ok(time_ms) ||
        !tl_member_ok(member))
        return HR_EINVAL;
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 1024;
        w->e = hr_xrealloc(w->e, w->cap * sizeof *w->e);
    }
    hr_tlbulk_entry *e = &w->e[w->n++];
    *e = (hr_tlbulk_entry){.list = w->bytes.len,
                           .list_len = (uint32_t)key.len,
                           .time_ms = time_ms,
                           .expire_at_ms = expire_at_ms};
    hr_buf_append_slice(&w->bytes, key);
    e->member = w->bytes.len;
    e->member_len = (uint32_t)member.len;
    hr_buf_append_slice(&w->bytes, member);
    return HR_OK;
}

size_t hr_tlbulk_len(const hr_tlbulk *w) {
    return w->n;
}

int hr_tlbulk_write_batches(hr_tlbulk *w, size_t from, size_t to, hr_err *err) {
    hr_batch *b = hr_batch_new();
    int rc = HR_OK;
    for (size_t i = from; i < to && rc == HR_OK; i += TLBULK_BATCH) {
        hr_batch_reset(b);
        for (size_t j = i; j < to && j < i + TLBULK_BATCH; j++)
            hr_tladd(b, hr_tlbulk_list(w, &w->e[j]), w->e[j].time_ms, hr_tlbulk_member(w, &w->e[j]),
                     w->e[j].expire_at_ms);
        rc = hr_store_exec(w->s, b, 0, err);
    }
    hr_batch_free(b);
    return rc;
}

int hr_tlbulk_write(hr_tlbulk *w, hr_err *err) {
    int rc = HR_OK;
    if (w->s->backend->tlbulk_write) /* empty too: the writer has caught up (store.h) */
        rc = w->s->backend->tlbulk_write(w->s, w, err);
    else if (w->n > 0)
        rc = hr_tlbulk_write_batches(w, 0, w->n, err);
    _Atomic uint64_t *counts = w->s->write_counts;
    if (counts) /* after the write, applied or not, as for a batch */
        for (size_t i = 0; i < w->n; i++)
            if (i == 0 || !hr_slice_eq(hr_tlbulk_list(w, &w->e[i]), hr_tlbulk_list(w, &w->e[i - 1])))
                count_write(counts, hr_tlbulk_list(w, &w->e[i]));
    w->n = 0;
    hr_buf_clear(&w->bytes);
    return rc;
}

void hr_tlbulk_free(hr_tlbulk *w) {
    if (w == NULL) return;
    hr_buf_free(&w->bytes);
    for (size_t i = 0; i < sizeof w->scratch / sizeof w->scratch[0]; i++)
        hr_buf_free(&w->scratch[i]);
    free(w->e);
    free(w);
}

bool hr_store_declare(hr_store *s, const hr_store_decl *d) {
    if (d->prefix.len > HR_DECL_AFFIX_MAX || d->suffix.len > HR_DECL_AFFIX_MAX) return false;
    if (d->kind != HR_DECL_TIME_SET && (d->kind != HR_DECL_TL_CAP || d->keep == 0)) return false;
    return s->backend->declare && s->backend->declare(s, d);
}
