/* fault_store.c — see fault_store.h. */
#include "fault_store.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "store/backend.h"

#define LEASES_MAX 16
#define SPLIT_OPS_MAX 64

typedef struct fault_store {
    hr_store super;
    hr_store_backend backend; /* inner's, with exec and close of our own */
    hr_store *inner;
    size_t at, seen;
    size_t at_len;     /* ops in batch `at` */
    uint64_t keep;     /* crash */
    const char *first; /* split */
    void (*between)(void *);
    void *arg;
    hr_buf leases[LEASES_MAX]; /* keys taken with hr_put_if_missing */
    size_t n_leases;
} fault_store;

static bool key_has(const hr_op *op, const char *part) {
    return memmem(op->key.ptr, op->key.len, part, strlen(part)) != NULL;
}

/* Batch `at` in two parts: the ops on `first` keys, between(), the rest.
 * An op's rc on entry (its argument check) decides whether it runs; a
 * part's ops are kept from the other's run with HR_EIO, and their results
 * restored after it. */
static int run_split(fault_store *c, hr_batch *b, unsigned flags, hr_err *err) {
    cr_assert(b->len <= SPLIT_OPS_MAX);
    int entry_rc[SPLIT_OPS_MAX];
    hr_result done[SPLIT_OPS_MAX];
    for (size_t i = 0; i < b->len; i++) {
        entry_rc[i] = b->ops[i].result.rc;
        if (!key_has(&b->ops[i], c->first)) b->ops[i].result.rc = HR_EIO;
    }
    int rc = c->inner->backend->exec(c->inner, b, flags, err);
    if (rc != HR_OK) return rc;
    c->between(c->arg);
    for (size_t i = 0; i < b->len; i++) {
        done[i] = b->ops[i].result;
        if (key_has(&b->ops[i], c->first))
            b->ops[i].result.rc = HR_EIO;
        else
            b->ops[i].result.rc = entry_rc[i];
    }
    rc = c->inner->backend->exec(c->inner, b, flags, err);
    for (size_t i = 0; i < b->len; i++)
        if (key_has(&b->ops[i], c->first)) b->ops[i].result = done[i];
    return rc;
}

static int fault_exec(hr_store *s, hr_batch *b, unsigned flags, hr_err *err) {
    fault_store *c = (fault_store *)s;
    size_t n = c->seen++;
    bool crash = c->between == NULL;
    if (crash && n > c->at) return hr_err_set(err, HR_EIO, "fault_store: the server is gone");
    size_t step = hr_batch_first_guard(b); /* a step is sent whole (one script) or not at all */
    if (n == c->at) c->at_len = step < b->len ? step + 1 : b->len;
    int rc;
    if (n == c->at && !crash) {
        rc = run_split(c, b, flags, err);
    } else {
        if (n == c->at) {
            cr_assert(!c->inner->backend->caps.atomic_batches || c->keep == 0 || c->keep == FAULT_KEEP_ALL,
                      "an atomic batch runs whole or not at all");
            for (size_t i = 0; i < b->len; i++) {
                size_t part = i < step ? i : step;
                if (part >= 64 || !(c->keep >> part & 1)) b->ops[i].result.rc = HR_EIO; /* never sent */
            }
        }
        rc = c->inner->backend->exec(c->inner, b, flags, err);
    }
    for (size_t i = 0; rc == HR_OK && i < b->len; i++) {
        const hr_op *op = &b->ops[i];
        if (op->type == HR_OP_PUT_IF_MISSING && op->result.rc == HR_OK && op->result.num == 1) {
            cr_assert(c->n_leases < LEASES_MAX);
            hr_buf_clear(&c->leases[c->n_leases]);
            hr_buf_append_slice(&c->leases[c->n_leases++], op->key);
        }
    }
    if (crash && n == c->at) return hr_err_set(err, HR_EIO, "fault_store: killed in this batch");
    return rc;
}

static void fault_close(hr_store *s) {
    fault_store *c = (fault_store *)s;
    for (size_t i = 0; i < LEASES_MAX; i++)
        hr_buf_free(&c->leases[i]);
    free(c);
}

/* A bulk write of the inner store, as batches: so that fault_exec sees
 * them, while callers still gather their adds as for the inner store. */
static int fault_tlbulk_write(hr_store *s, hr_tlbulk *w, hr_err *err) {
    return hr_tlbulk_write_batches(w, 0, w->n, err);
}

/* The inner store's declarations. */
static bool fault_declare(hr_store *s, const hr_store_decl *d) {
    return hr_store_declare(((fault_store *)s)->inner, d);
}

static fault_store *wrap(hr_store *inner, size_t at) {
    fault_store *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    c->backend = *inner->backend;
    c->backend.exec = fault_exec;
    c->backend.close = fault_close;
    if (c->backend.tlbulk_write) c->backend.tlbulk_write = fault_tlbulk_write;
    if (c->backend.declare) c->backend.declare = fault_declare;
    c->super.backend = &c->backend;
    /* The inner store's caps, without stamps: the wrapper counts no writes. */
    c->super.caps = inner->caps;
    c->super.caps.stamps = false;
    c->super.caps.memo_bytes = 0;
    c->inner = inner;
    c->at = at;
    return c;
}

hr_store *fault_store_crash(hr_store *inner, size_t at, uint64_t keep) {
    fault_store *c = wrap(inner, at);
    c->keep = keep;
    return &c->super;
}

hr_store *fault_store_split(hr_store *inner, size_t at, const char *first, void (*between)(void *),
                            void *arg) {
    fault_store *c = wrap(inner, at);
    c->first = first;
    c->between = between;
    c->arg = arg;
    return &c->super;
}

bool fault_store_hit(const hr_store *s) {
    const fault_store *c = (const fault_store *)s;
    return c->seen > c->at;
}

size_t fault_store_batch_len(const hr_store *s) {
    return ((const fault_store *)s)->at_len;
}

size_t fault_store_every_crash(const hr_store *inner, size_t (*one)(void *ctx, size_t at, uint64_t keep),
                               void *ctx) {
    bool atomic = inner->backend->caps.atomic_batches;
    size_t tried = 0;
    for (size_t at = 0;; at++) {
        size_t ops = one(ctx, at, 0);
        if (ops == 0) return tried;
        tried++;
        cr_assert(atomic || ops < 64, "batch %zu has %zu ops: too many subsets", at, ops);
        uint64_t masks = atomic ? 2 : (uint64_t)1 << ops;
        for (uint64_t m = 1; m < masks; m++, tried++)
            one(ctx, at, atomic ? FAULT_KEEP_ALL : m);
    }
}

void fault_store_expire_leases(hr_store *s) {
    fault_store *c = (fault_store *)s;
    hr_batch *b = hr_batch_new();
    for (size_t i = 0; i < c->n_leases; i++)
        hr_del(b, hr_buf_slice(&c->leases[i]));
    cr_assert_eq(hr_store_exec(c->inner, b, 0, NULL), HR_OK);
    hr_batch_free(b);
}
