/* test_store_queue.c — durable work queues (hr_qpush, hr_qclaim, hr_qack,
 * hr_qinfo): the conformance checks, run on both backends (suites
 * queue_rocksdb and queue_redis, store_fixture.h), then what only RocksDB
 * promises: jobs survive a close and reopen of the same directory, a claim
 * after the reopen gets the un-acked jobs at once, and ids are never reused.
 *
 * Leases are short (200 ms) so that re-delivery tests sleep little. */
#include <pthread.h>

#include <rocksdb/c.h>

#include "common/clock.h"
#include "store_fixture.h"

STORE_SUITES(queue);

/* Helpers ------------------------------------------------------------------- */

static hr_slice push(hr_store *s, hr_slice q, const char *payload) {
    const hr_result *r = ONE(s, hr_qpush(B, q, M(payload)));
    assert_rc(r, HR_OK);
    cr_assert_gt(r->value.len, 0);
    cr_assert_leq(r->value.len, HR_QJOB_ID_MAX);
    return hr_arena_copy(&keys, r->value);
}

static void push_n(hr_store *s, hr_slice q, long n) {
    hr_batch *b = hr_batch_new();
    for (long i = 0; i < n; i++)
        hr_qpush(b, q, Mf("job%ld", i));
    exec(s, b);
    hr_batch_free(b);
}

/* Claim; the result is valid until the next ONE. */
static const hr_result *claim(hr_store *s, hr_slice q, const char *consumer, size_t max, int64_t lease_ms) {
    const hr_result *r = ONE(s, hr_qclaim(B, q, M(consumer), max, lease_ms));
    assert_rc(r, HR_OK);
    return r;
}

/* The payloads of a claim as "a b c". */
static void payloads(const hr_result *r, char *out, size_t cap) {
    out[0] = '\0';
    for (size_t i = 0; i < r->n_jobs; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", i ? " " : "", (int)r->jobs[i].payload.len,
                 r->jobs[i].payload.ptr);
}

static void assert_claim(const hr_result *r, const char *want, uint32_t deliveries) {
    char got[1024];
    payloads(r, got, sizeof got);
    cr_assert_str_eq(got, want, "claimed '%s', expected '%s'", got, want);
    for (size_t i = 0; i < r->n_jobs; i++)
        cr_assert_eq(r->jobs[i].deliveries, deliveries, "job %zu: %u deliveries, expected %u", i,
                     r->jobs[i].deliveries, deliveries);
}

static int64_t ack(hr_store *s, hr_slice q, hr_slice id) {
    const hr_result *r = ONE(s, hr_qack(B, q, id));
    assert_rc(r, HR_OK);
    return r->num;
}

static int64_t depth(hr_store *s, hr_slice q, double *oldest) {
    const hr_result *r = ONE(s, hr_qinfo(B, q));
    assert_rc(r, HR_OK);
    if (oldest) *oldest = r->score;
    return r->num;
}

/* Copies of a claim's ids, in the fixture's arena. */
static hr_slice *ids_of(const hr_result *r) {
    hr_slice *ids = hr_arena_alloc(&keys, (r->n_jobs + 1) * sizeof *ids);
    for (size_t i = 0; i < r->n_jobs; i++)
        ids[i] = hr_arena_copy(&keys, r->jobs[i].id);
    return ids;
}

/* Conformance -------------------------------------------------------------- */

STORE_TEST(queue, queue_push_claim_ack_info) {
    hr_slice q = K("q");
    double oldest;
    cr_assert_eq(depth(s, q, &oldest), 0);
    cr_assert_eq(oldest, 0);
    int64_t before = hr_now_ms();
    push(s, q, "a");
    push(s, q, "b");
    push(s, q, "c");
    cr_assert_eq(depth(s, q, &oldest), 3);
    cr_assert(oldest >= (double)(before - 2000) && oldest <= (double)(hr_now_ms() + 2000),
              "oldest push time %.0f, now %ld", oldest, (long)hr_now_ms());

    const hr_result *r = claim(s, q, "w1", 2, 60000);
    assert_claim(r, "a b", 1);
    cr_assert(r->jobs[0].pushed_ms >= before - 2000 && r->jobs[0].pushed_ms <= hr_now_ms() + 2000);
    cr_assert_eq((double)r->jobs[0].pushed_ms, oldest, "qinfo's score is the oldest job's push time");
    hr_slice *ids = ids_of(r);
    cr_assert_eq(ack(s, q, ids[0]), 1);
    cr_assert_eq(ack(s, q, ids[1]), 1);
    cr_assert_eq(ack(s, q, ids[1]), 0, "a second ack finds nothing");
    cr_assert_eq(depth(s, q, NULL), 1);

    r = claim(s, q, "w1", 10, 60000);
    assert_claim(r, "c", 1);
    ids = ids_of(r);
    cr_assert_eq(ack(s, q, ids[0]), 1);
    cr_assert_eq(depth(s, q, &oldest), 0);
    cr_assert_eq(oldest, 0);
    cr_assert_eq(claim(s, q, "w1", 10, 60000)->n_jobs, 0);
}

STORE_TEST(queue, queue_claims_oldest_first) {
    hr_slice q = K("order");
    push_n(s, q, 5);
    push(s, q, "late");
    assert_claim(claim(s, q, "w", 3, 60000), "job0 job1 job2", 1);
    assert_claim(claim(s, q, "w", 10, 60000), "job3 job4 late", 1);
    cr_assert_eq(claim(s, q, "w", 10, 60000)->n_jobs, 0, "every job is leased");
    cr_assert_eq(depth(s, q, NULL), 6, "leased jobs are still in the queue");
}

STORE_TEST(queue, queue_ids_sort_by_push_time) {
    hr_slice q = K("ids");
    hr_slice a = push(s, q, "a"), b = push(s, q, "b");
    cr_assert(!hr_slice_eq(a, b));
    const hr_result *r = claim(s, q, "w", 2, 60000);
    cr_assert(hr_slice_eq(r->jobs[0].id, a));
    cr_assert(hr_slice_eq(r->jobs[1].id, b));
    cr_assert_leq(r->jobs[0].pushed_ms, r->jobs[1].pushed_ms);
}

STORE_TEST(queue, queue_expired_lease_is_delivered_again) {
    hr_slice q = K("lease");
    push(s, q, "j");
    push(s, q, "k");
    assert_claim(claim(s, q, "w1", 1, 200), "j", 1);
    cr_assert_eq(claim(s, q, "w2", 1, 200)->n_jobs, 1, "the next job, not the leased one");
    cr_assert_eq(claim(s, q, "w2", 10, 200)->n_jobs, 0, "both leased");
    usleep(450 * 1000);
    const hr_result *r = claim(s, q, "w2", 10, 200);
    assert_claim(r, "j k", 2);
    hr_slice *ids = ids_of(r);
    usleep(450 * 1000);
    r = claim(s, q, "w3", 1, 200);
    assert_claim(r, "j", 3);
    /* The first worker's ack still removes the job (handlers are idempotent:
     * whoever acks first wins); a later ack finds nothing. */
    cr_assert_eq(ack(s, q, ids[0]), 1);
    cr_assert_eq(ack(s, q, ids[0]), 0);
    cr_assert_eq(ack(s, q, ids[1]), 1);
    cr_assert_eq(depth(s, q, NULL), 0);
    usleep(450 * 1000);
    cr_assert_eq(claim(s, q, "w1", 10, 200)->n_jobs, 0, "acked jobs never come back");
}

STORE_TEST(queue, queue_consumers_never_share_a_leased_job) {
    hr_slice q = K("two");
    push_n(s, q, 10);
    hr_slice *a = ids_of(claim(s, q, "a", 4, 60000));
    const hr_result *r = claim(s, q, "b", 10, 60000);
    cr_assert_eq(r->n_jobs, 6);
    for (size_t i = 0; i < r->n_jobs; i++)
        for (size_t k = 0; k < 4; k++)
            cr_assert(!hr_slice_eq(r->jobs[i].id, a[k]), "job %zu went to both consumers", i);
    assert_claim(r, "job4 job5 job6 job7 job8 job9", 1);
}

typedef struct claimer {
    hr_store *s;
    hr_slice q;
    const char *name;
    char seen[200]; /* seen[i]: times job i was claimed by this thread */
    int failures;
} claimer;

static void *claim_loop(void *arg) {
    claimer *c = arg;
    hr_batch *b = hr_batch_new();
    for (int empty = 0; empty < 3;) {
        hr_batch_reset(b);
        hr_qclaim(b, c->q, hr_slice_str(c->name), 3, 60000);
        if (hr_store_exec(c->s, b, 0, NULL) != HR_OK || hr_batch_result(b, 0)->rc != HR_OK) {
            c->failures++;
            break;
        }
        const hr_result *r = hr_batch_result(b, 0);
        empty = r->n_jobs ? 0 : empty + 1;
        for (size_t i = 0; i < r->n_jobs; i++) {
            long n = strtol(r->jobs[i].payload.ptr + 3, NULL, 10); /* "jobN" */
            if (n >= 0 && n < 200) c->seen[n]++;
        }
    }
    hr_batch_free(b);
    return NULL;
}

STORE_TEST(queue, queue_concurrent_claims_are_disjoint) {
    hr_slice q = K("race");
    push_n(s, q, 200);
    claimer c[2] = {{.s = s, .q = q, .name = "left"}, {.s = s, .q = q, .name = "right"}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, claim_loop, &c[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(c[0].failures + c[1].failures, 0);
    for (int n = 0; n < 200; n++)
        cr_assert_eq(c[0].seen[n] + c[1].seen[n], 1, "job%d claimed %d + %d times", n, c[0].seen[n],
                     c[1].seen[n]);
}

STORE_TEST(queue, queue_ack_of_unknown_ids) {
    hr_slice q = K("unknown");
    cr_assert_eq(ack(s, q, M("0000000000000001")), 0, "no such queue");
    push(s, q, "a");
    cr_assert_eq(ack(s, q, M("0000000000000001")), 0, "RocksDB form, no such job");
    cr_assert_eq(ack(s, q, M("1-0")), 0, "Redis form, no such job");
    cr_assert_eq(ack(s, q, M("not an id")), 0);
    cr_assert_eq(ack(s, q, M("-")), 0);
    cr_assert_eq(depth(s, q, NULL), 1);
    /* A job may be acked without a claim (it is removed all the same). */
    cr_assert_eq(ack(s, q, push(s, q, "b")), 1);
    cr_assert_eq(depth(s, q, NULL), 1);
}

STORE_TEST(queue, queue_own_key_space) {
    hr_slice k = K("shared");
    assert_rc(ONE(s, hr_put(B, k, M("value"), 0)), HR_OK);
    push(s, k, "job");
    assert_rc(ONE(s, hr_get(B, k)), HR_OK);
    cr_assert_eq(ONE(s, hr_del(B, k))->num, 1);
    cr_assert_eq(depth(s, k, NULL), 1, "hr_del left the queue alone");
    assert_rc(ONE(s, hr_tladd(B, k, 1, M("entry"), 0)), HR_OK); /* and a time list of the same name */
    assert_claim(claim(s, k, "w", 10, 60000), "job", 1);
}

STORE_TEST(queue, queue_batch_sees_its_own_pushes) {
    hr_slice q = KT("batch");
    hr_batch *b = hr_batch_new();
    hr_qpush(b, q, M("x"));
    hr_qpush(b, q, M("y"));
    size_t info = hr_qinfo(b, q);
    size_t c = hr_qclaim(b, q, M("w"), 10, 60000);
    exec(s, b);
    cr_assert_eq(hr_batch_result(b, info)->num, 2);
    cr_assert_gt(hr_batch_result(b, info)->score, 0);
    assert_claim(hr_batch_result(b, c), "x y", 1);
    hr_slice id = hr_arena_copy(&keys, hr_batch_result(b, c)->jobs[0].id);
    hr_batch_reset(b);
    size_t a1 = hr_qack(b, q, id);
    size_t a2 = hr_qack(b, q, id);
    info = hr_qinfo(b, q);
    exec(s, b);
    cr_assert_eq(hr_batch_result(b, a1)->num, 1);
    cr_assert_eq(hr_batch_result(b, a2)->num, 0, "the second ack of one batch sees the first");
    cr_assert_eq(hr_batch_result(b, info)->num, 1);
    hr_batch_free(b);
}

STORE_TEST(queue, queue_binary_payloads) {
    hr_slice q = K("bin");
    char p[300];
    for (int i = 0; i < 300; i++)
        p[i] = (char)i;
    assert_rc(ONE(s, hr_qpush(B, q, hr_slice_of(p, sizeof p))), HR_OK);
    const hr_result *r = claim(s, q, "w", 1, 60000);
    cr_assert_eq(r->n_jobs, 1);
    cr_assert(hr_slice_eq(r->jobs[0].payload, hr_slice_of(p, sizeof p)));
}

STORE_TEST(queue, queue_arguments_checked) {
    hr_slice q = K("args");
    char big[HR_QCONSUMER_MAX + 1];
    memset(big, 'c', sizeof big);
    assert_rc(ONE(s, hr_qpush(B, q, hr_slice_of("", 0))), HR_EINVAL);
    assert_rc(ONE(s, hr_qpush(B, hr_slice_of("", 0), M("p"))), HR_EINVAL);
    assert_rc(ONE(s, hr_qclaim(B, q, M("w"), 0, 1000)), HR_EINVAL);
    assert_rc(ONE(s, hr_qclaim(B, q, M("w"), HR_QCLAIM_MAX + 1, 1000)), HR_EINVAL);
    assert_rc(ONE(s, hr_qclaim(B, q, M("w"), 1, 0)), HR_EINVAL);
    assert_rc(ONE(s, hr_qclaim(B, q, hr_slice_of("", 0), 1, 1000)), HR_EINVAL);
    assert_rc(ONE(s, hr_qclaim(B, q, hr_slice_of(big, sizeof big), 1, 1000)), HR_EINVAL);
    assert_rc(ONE(s, hr_qclaim(B, q, hr_slice_of(big, HR_QCONSUMER_MAX), 1, 1000)), HR_OK);
    assert_rc(ONE(s, hr_qack(B, q, hr_slice_of("", 0))), HR_EINVAL);
    char id[HR_QJOB_ID_MAX + 1];
    memset(id, '1', sizeof id);
    assert_rc(ONE(s, hr_qack(B, q, hr_slice_of(id, sizeof id))), HR_EINVAL);
    assert_rc(ONE(s, hr_qack(B, q, hr_slice_of(id, HR_QJOB_ID_MAX))), HR_OK);
    cr_assert_eq(depth(s, q, NULL), 0);
}

/* RocksDB only: restarts --------------------------------------------------- */

Test(queue_rocksdb, jobs_survive_reopen_and_leases_do_not) {
    hr_store *s = require_store();
    hr_slice q = K("durable");
    push_n(s, q, 3);
    hr_slice *ids = ids_of(claim(s, q, "w", 2, 3600 * 1000)); /* leased for an hour */
    cr_assert_eq(ack(s, q, ids[0]), 1);
    s = fx_reopen();
    cr_assert_eq(depth(s, q, NULL), 2);
    /* The lease of job1 died with the process: it comes at once. */
    const hr_result *r = claim(s, q, "w", 10, 60000);
    assert_claim(r, "job1 job2", 1);
    cr_assert(hr_slice_eq(r->jobs[0].id, ids[1]), "ids are stable across a reopen");
    hr_slice *again = ids_of(r);
    cr_assert_eq(ack(s, q, again[0]), 1);
    cr_assert_eq(ack(s, q, again[1]), 1);
    cr_assert_eq(depth(s, q, NULL), 0);
}

Test(queue_rocksdb, ids_are_not_reused_after_everything_was_acked) {
    hr_store *s = require_store();
    hr_slice q = K("fresh");
    hr_slice first = push(s, q, "a");
    cr_assert_eq(ack(s, q, first), 1);
    s = fx_reopen();
    hr_slice second = push(s, q, "b");
    cr_assert_gt(hr_slice_cmp(second, first), 0, "'%.*s' after '%.*s'", (int)second.len, second.ptr,
                 (int)first.len, first.ptr);
    cr_assert_eq(depth(s, q, NULL), 1);
    assert_claim(claim(s, q, "w", 10, 60000), "b", 1);
}

Test(queue_rocksdb, an_empty_queue_after_reopen_is_not_read_from_its_first_tombstone) {
    /* Acked jobs leave tombstones until compaction. A claim on a queue that
     * every job has left must not step over them from the first seq: the
     * idle fan-out workers of a restarted server claim every few ms. */
    hr_store *s = require_store();
    hr_slice q = K("drained");
    push_n(s, q, 2000);
    for (int round = 0; round < 20; round++) {
        const hr_result *r = claim(s, q, "w", 100, 60000);
        hr_slice *ids = ids_of(r);
        size_t n = r->n_jobs;
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(ack(s, q, ids[i]), 1);
    }
    cr_assert_eq(depth(s, q, NULL), 0);
    s = fx_reopen();
    cr_assert_eq(depth(s, q, NULL), 0); /* loads the queue: one scan */
    /* exec turned this thread's RocksDB perf counters off; count again. */
    rocksdb_set_perf_level(rocksdb_enable_count);
    rocksdb_perfcontext_t *pc = rocksdb_perfcontext_create();
    rocksdb_perfcontext_reset(pc);
    cr_assert_eq(claim(s, q, "w", 10, 60000)->n_jobs, 0);
    uint64_t skipped = rocksdb_perfcontext_metric(pc, rocksdb_internal_delete_skipped_count);
    rocksdb_set_perf_level(rocksdb_disable);
    rocksdb_perfcontext_destroy(pc);
    cr_assert_lt(skipped, 10, "a claim on the empty queue stepped over %llu tombstones",
                 (unsigned long long)skipped);
    /* And the queue still works. */
    push(s, q, "after");
    assert_claim(claim(s, q, "w", 10, 60000), "after", 1);
}
