/* batch.c — building batches: each builder copies its arguments into the
 * batch's arena and appends one hr_op. See store.h for the semantics. */
#include <math.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "store/backend.h"

hr_batch *hr_batch_new(void) {
    return hr_xcalloc(1, sizeof(hr_batch));
}

struct hr_batch_hold {
    void (*release)(void *);
    void *p;
};

void hr_batch_hold(hr_batch *b, void (*release)(void *), void *p) {
    if (b->n_holds == b->cap_holds) {
        b->cap_holds = b->cap_holds ? 2 * b->cap_holds : 8;
        b->holds = hr_xrealloc(b->holds, b->cap_holds * sizeof *b->holds);
    }
    b->holds[b->n_holds++] = (struct hr_batch_hold){release, p};
}

static void release_holds(hr_batch *b) {
    for (size_t i = 0; i < b->n_holds; i++)
        b->holds[i].release(b->holds[i].p);
    b->n_holds = 0;
}

void hr_batch_free(hr_batch *b) {
    if (b == NULL) return;
    release_holds(b);
    free(b->holds);
    hr_arena_free(&b->arena);
    free(b->ops);
    free(b);
}

void hr_batch_reset(hr_batch *b) {
    release_holds(b);
    hr_arena_reset(&b->arena);
    b->len = 0;
    b->executed = false;
    b->test_src = b->test_copy = NULL;
}

size_t hr_batch_len(const hr_batch *b) {
    return b->len;
}

const hr_result *hr_batch_result(const hr_batch *b, size_t i) {
    return &b->ops[i].result;
}

static hr_op *push(hr_batch *b, hr_op_type type, hr_slice key) {
    if (b->len == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->ops = hr_xrealloc(b->ops, b->cap * sizeof *b->ops);
    }
    hr_op *op = &b->ops[b->len++];
    memset(op, 0, sizeof *op);
    op->type = type;
    op->key = hr_arena_copy(&b->arena, key);
    return op;
}

static size_t last(const hr_batch *b) {
    return b->len - 1;
}

size_t hr_get(hr_batch *b, hr_slice key) {
    push(b, HR_OP_GET, key);
    return last(b);
}

size_t hr_put(hr_batch *b, hr_slice key, hr_slice value, int64_t expire_at_ms) {
    hr_op *op = push(b, HR_OP_PUT, key);
    op->value = hr_arena_copy(&b->arena, value);
    op->expire_at_ms = expire_at_ms;
    return last(b);
}

size_t hr_put_if_missing(hr_batch *b, hr_slice key, hr_slice value, int64_t expire_at_ms) {
    size_t i = hr_put(b, key, value, expire_at_ms);
    b->ops[i].type = HR_OP_PUT_IF_MISSING;
    return i;
}

size_t hr_del_if_equal(hr_batch *b, hr_slice key, hr_slice value) {
    hr_op *op = push(b, HR_OP_DEL_IF_EQUAL, key);
    op->value = hr_arena_copy(&b->arena, value);
    return last(b);
}

size_t hr_del(hr_batch *b, hr_slice key) {
    push(b, HR_OP_DEL, key);
    return last(b);
}

size_t hr_expire(hr_batch *b, hr_slice key, int64_t expire_at_ms) {
    push(b, HR_OP_EXPIRE, key)->expire_at_ms = expire_at_ms;
    return last(b);
}

size_t hr_incr(hr_batch *b, hr_slice key, int64_t delta) {
    push(b, HR_OP_INCR, key)->delta = delta;
    return last(b);
}

size_t hr_counter_get(hr_batch *b, hr_slice key) {
    push(b, HR_OP_COUNTER_GET, key);
    return last(b);
}

static hr_op *push_member(hr_batch *b, hr_op_type type, hr_slice key, hr_slice member) {
    hr_op *op = push(b, type, key);
    op->member = hr_arena_copy(&b->arena, member);
    return op;
}

size_t hr_zadd(hr_batch *b, hr_slice key, double score, hr_slice member) {
    push_member(b, HR_OP_ZADD, key, member)->score = score;
    return last(b);
}

size_t hr_zincr(hr_batch *b, hr_slice key, double delta, hr_slice member) {
    push_member(b, HR_OP_ZINCR, key, member)->score = delta;
    return last(b);
}

size_t hr_zguard(hr_batch *b, hr_slice key, hr_slice member, double was) {
    push_member(b, HR_OP_ZGUARD, key, member)->score = was;
    return last(b);
}

size_t hr_zrem(hr_batch *b, hr_slice key, hr_slice member) {
    push_member(b, HR_OP_ZREM, key, member);
    return last(b);
}

size_t hr_zscore(hr_batch *b, hr_slice key, hr_slice member) {
    push_member(b, HR_OP_ZSCORE, key, member);
    return last(b);
}

size_t hr_zcard(hr_batch *b, hr_slice key) {
    push(b, HR_OP_ZCARD, key);
    return last(b);
}

hr_zrange_spec hr_zrange_all(bool reverse, size_t limit) {
    hr_zrange_spec s = {0};
    s.reverse = reverse;
    s.min = -INFINITY;
    s.max = INFINITY;
    s.limit = limit;
    return s;
}

size_t hr_zrange(hr_batch *b, hr_slice key, const hr_zrange_spec *spec) {
    hr_op *op = push(b, HR_OP_ZRANGE, key);
    op->range = *spec;
    if (spec->has_cursor) op->range.cursor_member = hr_arena_copy(&b->arena, spec->cursor_member);
    return last(b);
}

size_t hr_zremrange_score(hr_batch *b, hr_slice key, double min, double max) {
    hr_op *op = push(b, HR_OP_ZREMRANGE_SCORE, key);
    op->min = min;
    op->max = max;
    return last(b);
}

size_t hr_dadd(hr_batch *b, hr_slice key, hr_slice member, const hr_distinct_params *p) {
    push_member(b, HR_OP_DADD, key, member)->distinct = *p;
    return last(b);
}

size_t hr_dcount(hr_batch *b, hr_slice key, const hr_distinct_params *p) {
    push(b, HR_OP_DCOUNT, key)->distinct = *p;
    return last(b);
}

size_t hr_pset_add(hr_batch *b, hr_slice key, uint64_t member, int64_t expire_at_ms) {
    hr_op *op = push(b, HR_OP_PSET_ADD, key);
    op->u64 = member;
    op->expire_at_ms = expire_at_ms;
    return last(b);
}

size_t hr_pset_rem(hr_batch *b, hr_slice key, uint64_t member) {
    push(b, HR_OP_PSET_REM, key)->u64 = member;
    return last(b);
}

size_t hr_pset_card(hr_batch *b, hr_slice key) {
    push(b, HR_OP_PSET_CARD, key);
    return last(b);
}

size_t hr_pset_test(hr_batch *b, hr_slice key, const uint64_t *members, size_t n) {
    hr_op *op = push(b, HR_OP_PSET_TEST, key);
    /* the same array with the same members (a caller may refill one) */
    bool same = members == b->test_src && n == b->test_n && n &&
                memcmp(members, b->test_copy, n * sizeof *members) == 0;
    if (!same) {
        uint64_t *copy = hr_arena_alloc(&b->arena, n * sizeof *copy);
        if (n) memcpy(copy, members, n * sizeof *copy);
        b->test_src = members;
        b->test_copy = copy;
        b->test_n = n;
    }
    op->u64s = b->test_copy;
    op->n_u64s = n;
    return last(b);
}

size_t hr_tladd(hr_batch *b, hr_slice key, int64_t time_ms, hr_slice member, int64_t expire_at_ms) {
    hr_op *op = push_member(b, HR_OP_TLADD, key, member);
    op->time_ms = time_ms;
    op->expire_at_ms = expire_at_ms;
    return last(b);
}

size_t hr_tlrem(hr_batch *b, hr_slice key, int64_t time_ms, hr_slice member) {
    push_member(b, HR_OP_TLREM, key, member)->time_ms = time_ms;
    return last(b);
}

hr_tlrange_spec hr_tlrange_all(size_t limit, int64_t now_ms) {
    hr_tlrange_spec s = {0};
    s.before_ms = INT64_MAX;
    s.after_ms = INT64_MIN;
    s.limit = limit;
    s.now_ms = now_ms;
    return s;
}

size_t hr_tlrange(hr_batch *b, hr_slice key, const hr_tlrange_spec *spec) {
    hr_op *op = push(b, HR_OP_TLRANGE, key);
    op->tlrange = *spec;
    if (spec->has_cursor) op->tlrange.cursor_member = hr_arena_copy(&b->arena, spec->cursor_member);
    return last(b);
}

size_t hr_tltrim(hr_batch *b, hr_slice key, size_t keep, int64_t older_than_ms) {
    hr_op *op = push(b, HR_OP_TLTRIM, key);
    op->keep = keep;
    op->time_ms = older_than_ms;
    return last(b);
}

size_t hr_qpush(hr_batch *b, hr_slice queue, hr_slice payload) {
    push(b, HR_OP_QPUSH, queue)->value = hr_arena_copy(&b->arena, payload);
    return last(b);
}

size_t hr_qclaim(hr_batch *b, hr_slice queue, hr_slice consumer, size_t max, int64_t lease_ms) {
    hr_op *op = push_member(b, HR_OP_QCLAIM, queue, consumer);
    op->claim_max = max;
    op->lease_ms = lease_ms;
    return last(b);
}

size_t hr_qack(hr_batch *b, hr_slice queue, hr_slice job_id) {
    push_member(b, HR_OP_QACK, queue, job_id);
    return last(b);
}

size_t hr_qinfo(hr_batch *b, hr_slice queue) {
    push(b, HR_OP_QINFO, queue);
    return last(b);
}
