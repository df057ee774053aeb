/* rocks/queue.c — durable work queues (hr_qpush, hr_qclaim, hr_qack,
 * hr_qinfo) on RocksDB.
 *
 * WORKLOAD. One job per activity to fan out, claimed by a few workers in
 * the same process, acked within seconds: a queue holds few jobs at a time,
 * but a job must not be lost once hr_qpush returned, even to kill -9.
 *
 * ENCODING, column family "queues" (jobs only; leases are not persisted):
 *
 *   key:   | u16 queue key len | queue key | u64 seq |
 *   value: | i64 pushed_ms | payload |
 *
 * The length prefix keeps one queue's keys from being a prefix run of
 * another's. A job's id is its seq as 16 lowercase hex digits, so ids sort
 * as their seqs do. seq = max(last seq + 1, now_ms << 20): monotonic within
 * a queue, and never reused across restarts even when every job was acked
 * (no key is left to recover the last seq from) unless the clock steps back
 * by more than the queue's life — a reused id could match a checkpoint a
 * worker kept for an earlier job.
 *
 * IN MEMORY, per queue (rqueue), loaded the first time this process touches
 * the queue (one scan of its keys, which are few: jobs are acked):
 *
 *   next_seq  the next seq to hand out (reserved by a push before commit; a
 *             failed commit leaves a gap, never a duplicate)
 *   head      no job below it exists: claims and hr_qinfo seek there, not
 *             to the queue's first key, so they do not step over the
 *             tombstones of acked jobs (RocksDB still walks tombstones
 *             inside a Seek until compaction removes them)
 *   count     jobs committed and not acked: hr_qinfo is O(1) plus one Seek
 *   leases    seq -> (lease end, deliveries), sorted by seq; an entry
 *             stays after its lease ends so that the next claim counts the
 *             re-delivery, and goes with the ack (or when head passes it)
 *
 * CONCURRENCY. Every queue op holds its queue key's stripe lock for the whole
 * batch (rocks/engine.c), so the batches touching one queue run one after another,
 * each reading a snapshot taken after the previous one committed: a claim
 * never sees a job an earlier batch acked, a load never races a push. The
 * in-memory state is further guarded by one mutex (rqueues.mu) because the
 * map of queues is shared and because hr_qinfo's counts may be read while
 * another queue's batch changes the map. Changes that depend on the commit
 * (count, head, acked leases) are collected per batch (qpend) and applied by
 * queue_finish only when the WriteBatch committed; a claim's leases are
 * taken at once (a failed batch leaves its jobs leased until the lease
 * ends: they are re-delivered, never lost).
 *
 * Jobs pushed earlier in the same batch are visible to a later claim,
 * ack or qinfo of that batch (rocks/engine.c indexes such a batch).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "store/rocks/queue.h"

#define ID_LEN 16 /* hex digits of a job id */

typedef struct qlease {
    uint64_t seq;
    int64_t until; /* the lease runs while now < until */
    uint32_t deliveries;
} qlease;

typedef struct rqueue {
    struct rqueue *next; /* hash chain */
    uint64_t hash;
    char *name;
    size_t len;
    uint64_t next_seq, head;
    int64_t count;
    qlease *leases;
    size_t n_leases, cap_leases;
} rqueue;

struct rqueues {
    pthread_mutex_t mu;
    rqueue **tab;
    size_t cap, n;
};

/* What one batch changes in one queue, applied after its commit. */
typedef struct qpend {
    rqueue *q;
    int64_t dcount;
    bool has_head;
    uint64_t head; /* a claim's view: no job below it */
    uint64_t *acked;
    size_t n_acked, cap_acked;
} qpend;

/* The queue state of a batch (rx.queue), in x->mem, made by its first
 * queue op: the queue changes to apply after the commit (queue_finish),
 * one per queue it touches. */
struct queue_rx {
    qpend *p;
    size_t n, cap;
};

rqueues *queues_new(void) {
    rqueues *qs = hr_xcalloc(1, sizeof *qs);
    pthread_mutex_init(&qs->mu, NULL);
    return qs;
}

void queues_free(rqueues *qs) {
    if (qs == NULL) return;
    for (size_t i = 0; i < qs->cap; i++) {
        for (rqueue *q = qs->tab[i], *nx; q; q = nx) {
            nx = q->next;
            free(q->name);
            free(q->leases);
            free(q);
        }
    }
    free(qs->tab);
    pthread_mutex_destroy(&qs->mu);
    free(qs);
}

/* Keys ------------------------------------------------------------------------ */

static void qprefix(hr_buf *out, hr_slice name) {
    unsigned char len[2] = {(unsigned char)(name.len >> 8), (unsigned char)name.len};
    hr_buf_append(out, len, 2);
    hr_buf_append_slice(out, name);
}

void queue_job_key(hr_buf *out, hr_slice name, uint64_t seq) {
    qprefix(out, name);
    hr_buf_append_u64be(out, seq);
}

/* A bound past every job of the queue and before any other queue's keys:
 * its last possible job key (seq UINT64_MAX) followed by one byte. */
static void qprefix_end(hr_buf *out, hr_slice name) {
    qprefix(out, name);
    hr_buf_append_u64be(out, UINT64_MAX);
    hr_buf_append_byte(out, 0x00);
}

static hr_slice id_of(hr_arena *a, uint64_t seq) {
    char *id = hr_arena_alloc(a, ID_LEN + 1);
    snprintf(id, ID_LEN + 1, "%016" PRIx64, seq);
    return hr_slice_of(id, ID_LEN);
}

/* The seq an id names; false when it is not an id of ours. */
static bool seq_of(hr_slice id, uint64_t *seq) {
    if (id.len != ID_LEN) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < ID_LEN; i++) {
        char c = id.ptr[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return false;
        v = v << 4 | d;
    }
    *seq = v;
    return true;
}

/* The queue map ----------------------------------------------------------------- */

static rqueue *map_find(rqueues *qs, hr_slice name, uint64_t h) {
    if (qs->cap == 0) return NULL;
    for (rqueue *q = qs->tab[h & (qs->cap - 1)]; q; q = q->next)
        if (q->hash == h && q->len == name.len && memcmp(q->name, name.ptr, name.len) == 0) return q;
    return NULL;
}

static void map_add(rqueues *qs, rqueue *q) {
    if ((qs->n + 1) * 2 > qs->cap) {
        size_t cap = qs->cap ? qs->cap * 2 : 16;
        rqueue **tab = hr_xcalloc(cap, sizeof *tab);
        for (size_t i = 0; i < qs->cap; i++) {
            for (rqueue *e = qs->tab[i], *nx; e; e = nx) {
                nx = e->next;
                e->next = tab[e->hash & (cap - 1)];
                tab[e->hash & (cap - 1)] = e;
            }
        }
        free(qs->tab);
        qs->tab = tab;
        qs->cap = cap;
    }
    q->next = qs->tab[q->hash & (qs->cap - 1)];
    qs->tab[q->hash & (qs->cap - 1)] = q;
    qs->n++;
}

/* Read the queue's jobs from the batch's snapshot (not its writes: no op of
 * this batch touched the queue yet). Called with qs->mu held. */
static int queue_load(rx *x, rqueue *q) {
    hr_buf lo = HR_BUF_INIT, hi = HR_BUF_INIT;
    hr_slice name = hr_slice_of(q->name, q->len);
    qprefix(&lo, name);
    size_t plen = lo.len;
    qprefix_end(&hi, name);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(ro, x->snap);
    rocksdb_readoptions_set_iterate_upper_bound(ro, hi.data, hi.len);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(x->s->db, ro, x->s->cf[CF_QUEUE]);
    bool first = true;
    for (rocksdb_iter_seek(it, lo.data, lo.len); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t klen;
        const char *k = rocksdb_iter_key(it, &klen);
        if (klen != plen + 8) continue; /* not a job key of this queue */
        uint64_t seq = load_u64(k + plen);
        if (first) q->head = seq;
        first = false;
        q->next_seq = seq + 1;
        q->count++;
    }
    /* No job left: every job ever pushed was acked, and the next push takes
     * a seq >= now << 20 (see ENCODING). Starting head and next_seq there
     * keeps claims from seeking from seq 0 over the tombstones of every
     * acked job until the next push: after a restart on a loaded store,
     * the idle fan-out workers' claims stepped over all of them each time,
     * a large share of the server's CPU under a read load. */
    if (first && x->now > 0) q->head = q->next_seq = (uint64_t)x->now << 20;
    char *errptr = rocks_scan_end(it, ro);
    hr_buf_free(&lo);
    hr_buf_free(&hi);
    return errptr ? rx_fail(x, errptr) : 0;
}

/* The queue named by op's key, loaded if this process has not seen it, and
 * the batch's pending changes to it. */
static int queue_for(rx *x, const hr_op *op, rqueue **qo, qpend **po) {
    struct queue_rx *qb = RX_PART(x, queue);
    for (size_t i = 0; i < qb->n; i++) {
        rqueue *q = qb->p[i].q;
        if (q->len == op->key.len && memcmp(q->name, op->key.ptr, q->len) == 0) {
            *qo = q;
            *po = &qb->p[i];
            return 0;
        }
    }
    rqueues *qs = x->s->queues;
    uint64_t h = XXH3_64bits(op->key.ptr, op->key.len);
    int rc = 0;
    pthread_mutex_lock(&qs->mu);
    rqueue *q = map_find(qs, op->key, h);
    if (q == NULL) {
        q = hr_xcalloc(1, sizeof *q);
        q->hash = h;
        q->len = op->key.len;
        q->name = hr_xmalloc(q->len);
        memcpy(q->name, op->key.ptr, q->len);
        rc = queue_load(x, q);
        if (rc == 0) {
            map_add(qs, q);
        } else {
            free(q->name);
            free(q);
        }
    }
    pthread_mutex_unlock(&qs->mu);
    if (rc) return rc;
    qb->p = arena_grow(&x->mem, qb->p, qb->n, &qb->cap, sizeof *qb->p, 4, 0);
    qpend *p = &qb->p[qb->n++];
    memset(p, 0, sizeof *p);
    p->q = q;
    *qo = q;
    *po = p;
    return 0;
}

/* Leases (qs->mu held) ------------------------------------------------------------ */

/* The index of seq's lease, or where it would go. */
static size_t lease_pos(const rqueue *q, uint64_t seq) {
    size_t lo = 0, hi = q->n_leases;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (q->leases[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Lease seq until `until` unless its lease is still running at now: the
 * job's deliveries, or 0 when it is taken. */
static uint32_t lease_take(rqueue *q, uint64_t seq, int64_t now, int64_t until) {
    size_t i = lease_pos(q, seq);
    if (i < q->n_leases && q->leases[i].seq == seq) {
        if (now < q->leases[i].until) return 0;
        q->leases[i].until = until;
        return ++q->leases[i].deliveries;
    }
    if (q->n_leases == q->cap_leases) {
        q->cap_leases = q->cap_leases ? q->cap_leases * 2 : 16;
        q->leases = hr_xrealloc(q->leases, q->cap_leases * sizeof *q->leases);
    }
    memmove(&q->leases[i + 1], &q->leases[i], (q->n_leases - i) * sizeof *q->leases);
    q->leases[i] = (qlease){seq, until, 1};
    q->n_leases++;
    return 1;
}

static void lease_drop(rqueue *q, uint64_t seq) {
    size_t i = lease_pos(q, seq);
    if (i == q->n_leases || q->leases[i].seq != seq) return;
    memmove(&q->leases[i], &q->leases[i + 1], (q->n_leases - i - 1) * sizeof *q->leases);
    q->n_leases--;
}

/* Leases of jobs below head: acked by a batch whose ack we did not see
 * (never, as acks drop their lease) or gone in a failed batch. */
static void lease_prune(rqueue *q) {
    size_t k = lease_pos(q, q->head);
    if (k == 0) return;
    memmove(q->leases, &q->leases[k], (q->n_leases - k) * sizeof *q->leases);
    q->n_leases -= k;
}

/* Ops ---------------------------------------------------------------------------- */

int op_qpush(rx *x, hr_op *op) {
    rqueue *q;
    qpend *p;
    int rc = queue_for(x, op, &q, &p);
    if (rc) return rc;
    rqueues *qs = x->s->queues;
    pthread_mutex_lock(&qs->mu);
    uint64_t seq = (uint64_t)x->now << 20;
    if (seq < q->next_seq) seq = q->next_seq;
    q->next_seq = seq + 1;
    pthread_mutex_unlock(&qs->mu);

    hr_buf k = HR_BUF_INIT, v = HR_BUF_INIT;
    queue_job_key(&k, op->key, seq);
    hr_buf_append_u64be(&v, (uint64_t)x->now);
    hr_buf_append_slice(&v, op->value);
    rx_put(x, CF_QUEUE, hr_buf_slice(&k), hr_buf_slice(&v));
    hr_buf_free(&k);
    hr_buf_free(&v);
    p->dcount++;
    op->result.value = id_of(&x->b->arena, seq);
    return 0;
}

/* A walk over a queue's jobs from head on, the batch's own writes included.
 * rx_iter's bounds do not apply to those writes, so job_at checks the end
 * bound itself. */
typedef struct jobs {
    rx_iter it;
    size_t plen; /* length of the queue's key prefix */
    hr_buf hi;   /* the end bound */
} jobs;

static void jobs_open(rx *x, rqueue *q, jobs *j) {
    hr_buf lo = HR_BUF_INIT;
    hr_slice name = hr_slice_of(q->name, q->len);
    pthread_mutex_lock(&x->s->queues->mu);
    uint64_t head = q->head;
    pthread_mutex_unlock(&x->s->queues->mu);
    qprefix(&lo, name);
    j->plen = lo.len;
    hr_buf_append_u64be(&lo, head);
    j->hi = (hr_buf)HR_BUF_INIT;
    qprefix_end(&j->hi, name);
    rx_iter_open(x, &j->it, CF_QUEUE, hr_buf_slice(&lo), hr_buf_slice(&j->hi));
    rocksdb_iter_seek(j->it.it, lo.data, lo.len);
    hr_buf_free(&lo);
}

/* The job at or after the walk's position, if the queue has one: *seq and
 * its value (valid until the walk moves). */
static bool job_at(jobs *j, uint64_t *seq, hr_slice *val) {
    for (; rocksdb_iter_valid(j->it.it); rocksdb_iter_next(j->it.it)) {
        hr_slice k = rx_iter_key(&j->it);
        if (hr_slice_cmp(k, hr_buf_slice(&j->hi)) >= 0) return false;
        size_t vlen;
        const char *v = rocksdb_iter_value(j->it.it, &vlen);
        if (k.len != j->plen + 8 || vlen < 8) continue; /* not a job key: skip */
        *seq = load_u64(k.ptr + j->plen);
        *val = hr_slice_of(v, vlen);
        return true;
    }
    return false;
}

/* 0, or the iterator's error. */
static int jobs_close(rx *x, jobs *j) {
    int rc = rx_iter_status(x, &j->it);
    rx_iter_close(&j->it);
    hr_buf_free(&j->hi);
    return rc;
}

int op_qclaim(rx *x, hr_op *op) {
    rqueue *q;
    qpend *p;
    int rc = queue_for(x, op, &q, &p);
    if (rc) return rc;
    rqueues *qs = x->s->queues;
    hr_result *res = &op->result;
    hr_arena *out = &x->b->arena;
    jobs j;
    jobs_open(x, q, &j);
    uint64_t seq;
    hr_slice val;
    bool first = true;
    size_t cap = 0;
    res->n_jobs = 0;
    for (; res->n_jobs < op->claim_max && job_at(&j, &seq, &val); rocksdb_iter_next(j.it.it)) {
        if (first) { /* this batch's view: no job below seq */
            p->has_head = true;
            p->head = seq;
            first = false;
        }
        pthread_mutex_lock(&qs->mu);
        uint32_t d = lease_take(q, seq, x->now, x->now + op->lease_ms);
        pthread_mutex_unlock(&qs->mu);
        if (d == 0) continue; /* leased to someone, and the lease runs */
        res->jobs = arena_grow(out, res->jobs, res->n_jobs, &cap, sizeof *res->jobs, 8, op->claim_max);
        hr_job *job = &res->jobs[res->n_jobs++];
        job->id = id_of(out, seq);
        job->payload = hr_arena_copy(out, hr_slice_of(val.ptr + 8, val.len - 8));
        job->pushed_ms = (int64_t)load_u64(val.ptr);
        job->deliveries = d;
    }
    if (first) { /* no job at or after head: every one is acked */
        pthread_mutex_lock(&qs->mu);
        p->has_head = true;
        p->head = q->next_seq;
        pthread_mutex_unlock(&qs->mu);
    }
    rc = jobs_close(x, &j);
    if (res->n_jobs == 0) res->jobs = NULL;
    return rc;
}

int op_qack(rx *x, hr_op *op) {
    uint64_t seq;
    op->result.num = 0;
    if (!seq_of(op->member, &seq)) return 0; /* not an id of ours: no such job */
    rqueue *q;
    qpend *p;
    int rc = queue_for(x, op, &q, &p);
    if (rc) return rc;
    hr_buf k = HR_BUF_INIT;
    queue_job_key(&k, op->key, seq);
    hr_slice v;
    bool found;
    rc = rx_get(x, CF_QUEUE, hr_buf_slice(&k), &v, &found);
    if (rc == 0 && found) {
        rx_del(x, CF_QUEUE, hr_buf_slice(&k));
        op->result.num = 1;
        p->dcount--;
    }
    hr_buf_free(&k);
    if (rc == 0) { /* its lease goes, found or not */
        p->acked = arena_grow(&x->mem, p->acked, p->n_acked, &p->cap_acked, sizeof *p->acked, 16, 0);
        p->acked[p->n_acked++] = seq;
    }
    return rc;
}

int op_qinfo(rx *x, hr_op *op) {
    rqueue *q;
    qpend *p;
    int rc = queue_for(x, op, &q, &p);
    if (rc) return rc;
    pthread_mutex_lock(&x->s->queues->mu);
    int64_t count = q->count + p->dcount;
    pthread_mutex_unlock(&x->s->queues->mu);
    op->result.num = count;
    op->result.score = 0;
    if (count <= 0) return 0;
    jobs j;
    jobs_open(x, q, &j);
    uint64_t seq;
    hr_slice val;
    if (job_at(&j, &seq, &val)) op->result.score = (double)(int64_t)load_u64(val.ptr);
    return jobs_close(x, &j);
}

void queue_plan(rx *x, const hr_op *op, rplan *plan) {
    uint64_t seq;
    if (op->type != HR_OP_QACK || !seq_of(op->member, &seq)) return;
    hr_buf k = HR_BUF_INIT;
    queue_job_key(&k, op->key, seq);
    rplan_add(x, plan, CF_QUEUE, hr_arena_copy(&x->mem, hr_buf_slice(&k)));
    hr_buf_free(&k);
}

void queue_finish(rx *x, bool committed) {
    struct queue_rx *qb = x->queue;
    if (qb == NULL || !committed) return;
    rqueues *qs = x->s->queues;
    pthread_mutex_lock(&qs->mu);
    for (size_t i = 0; i < qb->n; i++) {
        qpend *p = &qb->p[i];
        rqueue *q = p->q;
        q->count += p->dcount;
        if (p->has_head && p->head > q->head) q->head = p->head;
        for (size_t k = 0; k < p->n_acked; k++) {
            lease_drop(q, p->acked[k]);
            if (p->acked[k] == q->head) q->head++;
        }
        lease_prune(q);
    }
    pthread_mutex_unlock(&qs->mu);
}
