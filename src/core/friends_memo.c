/* friends_memo.c — see friends_memo.h. */
#include "core/friends_memo.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/arena.h"

typedef struct entry {
    hr_fmemo_entry pub; /* first: callers get &pub */
    _Atomic int refs;   /* the slot's, and each call's */
    char *uid;
    size_t uid_len;
    size_t bytes;
    hr_arena mem; /* ids, index */
} entry;

struct hr_fmemo {
    hr_store *store;
    pthread_mutex_t lock;
    entry **slot;
    size_t nslots; /* a power of two */
    size_t budget, bytes;
};

hr_fmemo *hr_fmemo_new(hr_store *store, size_t slots, size_t budget) {
    hr_fmemo *m = hr_xcalloc(1, sizeof *m);
    m->store = store;
    pthread_mutex_init(&m->lock, NULL);
    m->nslots = 1;
    while (m->nslots < slots)
        m->nslots *= 2;
    m->slot = hr_xcalloc(m->nslots, sizeof *m->slot);
    m->budget = budget;
    return m;
}

/* Drop a reference; the last frees the entry. Returns its bytes if freed. */
static size_t unref(hr_fmemo *m, entry *e) {
    if (e == NULL || atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) != 1) return 0;
    size_t bytes = e->bytes;
    hr_origin_release(m->store, (hr_origin *)e->pub.origin);
    hr_arena_free(&e->mem);
    free(e->uid);
    free(e);
    return bytes;
}

void hr_fmemo_free(hr_fmemo *m) {
    if (m == NULL) return;
    for (size_t i = 0; i < m->nslots; i++)
        unref(m, m->slot[i]);
    pthread_mutex_destroy(&m->lock);
    free(m->slot);
    free(m);
}

static size_t slot_of(const hr_fmemo *m, hr_slice uid) {
    return XXH3_64bits(uid.ptr, uid.len) & (m->nslots - 1);
}

static bool holds(const entry *e, hr_slice uid) {
    return e && e->uid_len == uid.len && memcmp(e->uid, uid.ptr, uid.len) == 0;
}

const hr_fmemo_entry *hr_fmemo_get(hr_fmemo *m, hr_slice uid) {
    size_t i = slot_of(m, uid);
    pthread_mutex_lock(&m->lock);
    entry *e = m->slot[i];
    if (holds(e, uid))
        atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    else
        e = NULL;
    pthread_mutex_unlock(&m->lock);
    return e ? &e->pub : NULL;
}

const hr_fmemo_entry *hr_fmemo_put(hr_fmemo *m, hr_slice uid, const hr_result *res, const hr_slice *ids,
                                   size_t n) {
    /* ids and the index (~2.5 slots of 12 bytes a friend), and the set
     * the ids point into, which the entry keeps alive (~20 bytes a friend) */
    size_t bytes = sizeof(entry) + uid.len + n * (sizeof *ids + 30 + 20);
    if (res->origin == NULL || bytes > m->budget) return NULL;
    /* The budget is checked before the entry is built, outside the lock:
     * calls keeping lists at the same instant may pass it by one entry each. */
    pthread_mutex_lock(&m->lock);
    entry *old = m->slot[slot_of(m, uid)];
    bool fits = m->bytes - (old ? old->bytes : 0) + bytes <= m->budget;
    pthread_mutex_unlock(&m->lock);
    if (!fits) return NULL;

    entry *e = hr_xcalloc(1, sizeof *e);
    e->uid = hr_xstrndup(uid.ptr, uid.len);
    e->uid_len = uid.len;
    e->bytes = bytes;
    e->pub.origin = hr_origin_keep(m->store, res);
    hr_slice *copy = hr_arena_alloc(&e->mem, (n + 1) * sizeof *copy);
    if (n) memcpy(copy, ids, n * sizeof *copy); /* the slices point into the kept origin */
    e->pub.ids = copy;
    e->pub.n = n;
    hr_rplan_friends_init(&e->pub.index, copy, n, &e->mem);
    atomic_init(&e->refs, 2); /* the slot's and the caller's */

    pthread_mutex_lock(&m->lock);
    size_t i = slot_of(m, uid);
    old = m->slot[i];
    m->slot[i] = e;
    m->bytes += bytes;
    if (old) m->bytes -= old->bytes;
    pthread_mutex_unlock(&m->lock);
    unref(m, old);
    return &e->pub;
}

void hr_fmemo_done(hr_fmemo *m, const hr_fmemo_entry *e) {
    unref(m, (entry *)e);
}

size_t hr_fmemo_count(hr_fmemo *m, size_t *bytes) {
    size_t n = 0;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->nslots; i++)
        n += m->slot[i] != NULL;
    if (bytes) *bytes = m->bytes;
    pthread_mutex_unlock(&m->lock);
    return n;
}
