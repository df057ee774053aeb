/* memo.c — answers kept while their store keys are unchanged (memo.h).
 *
 * 64 shards by the key's hash, each a chained hash table and a list from the
 * most to the least recently used entry, under one mutex: a hit costs a
 * hash, a lock, a check of the answer's stamps (one load each) and a copy
 * of the answer. Each shard holds at most a 64th of the budget. */
#include "core/memo.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"

#define MEMO_SHARDS 64
#define MEMO_BUCKETS_MIN 64
#define MEMO_ENTRY_OVERHEAD 16 /* the allocator's, roughly */

typedef struct memo_entry {
    struct memo_entry *next;          /* in its bucket */
    struct memo_entry *newer, *older; /* in its shard's use order */
    uint64_t hash;
    int64_t end_ms;
    size_t size; /* what it counts against the budget */
    uint32_t key_len, value_len, n_stamps;
    hr_stamp stamps[]; /* then the key's bytes, then the value's */
} memo_entry;

typedef struct memo_shard {
    pthread_mutex_t mu;
    memo_entry **buckets;
    size_t n_buckets, n, bytes;
    memo_entry *newest, *oldest;
} memo_shard;

struct hr_memo {
    hr_store *store;
    size_t shard_budget;
    memo_shard shards[MEMO_SHARDS];
    atomic_uint_fast64_t hits, misses, stale;
};

static char *entry_key(memo_entry *e) {
    return (char *)(e->stamps + e->n_stamps);
}
static char *entry_value(memo_entry *e) {
    return entry_key(e) + e->key_len;
}

hr_memo *hr_memo_new(hr_store *store, size_t budget) {
    if (budget == 0 || !hr_store_caps_of(store)->stamps) return NULL;
    hr_memo *m = hr_xcalloc(1, sizeof *m);
    m->store = store;
    m->shard_budget = budget / MEMO_SHARDS;
    for (size_t i = 0; i < MEMO_SHARDS; i++) {
        memo_shard *sh = &m->shards[i];
        pthread_mutex_init(&sh->mu, NULL);
        sh->n_buckets = MEMO_BUCKETS_MIN;
        sh->buckets = hr_xcalloc(sh->n_buckets, sizeof *sh->buckets);
    }
    return m;
}

void hr_memo_free(hr_memo *m) {
    if (m == NULL) return;
    for (size_t i = 0; i < MEMO_SHARDS; i++) {
        memo_shard *sh = &m->shards[i];
        for (memo_entry *e = sh->newest, *next; e; e = next) {
            next = e->older;
            free(e);
        }
        free(sh->buckets);
        pthread_mutex_destroy(&sh->mu);
    }
    free(m);
}

static memo_shard *shard_of(hr_memo *m, uint64_t hash) {
    return &m->shards[hash >> 58]; /* the top 6 bits; the buckets use the low ones */
}

static memo_entry **find(memo_shard *sh, uint64_t hash, hr_slice key) {
    memo_entry **at = &sh->buckets[hash & (sh->n_buckets - 1)];
    for (; *at; at = &(*at)->next)
        if ((*at)->hash == hash && (*at)->key_len == key.len && memcmp(entry_key(*at), key.ptr, key.len) == 0)
            return at;
    return at;
}

static void use_order_unlink(memo_shard *sh, memo_entry *e) {
    if (e->newer)
        e->newer->older = e->older;
    else
        sh->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        sh->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void use_order_push(memo_shard *sh, memo_entry *e) {
    e->older = sh->newest;
    e->newer = NULL;
    if (sh->newest) sh->newest->newer = e;
    sh->newest = e;
    if (sh->oldest == NULL) sh->oldest = e;
}

/* Remove the entry *at points to from its shard and free it. */
static void drop(memo_shard *sh, memo_entry **at) {
    memo_entry *e = *at;
    *at = e->next;
    use_order_unlink(sh, e);
    sh->n--;
    sh->bytes -= e->size;
    free(e);
}

static bool holds(const hr_memo *m, const memo_entry *e, int64_t now_ms) {
    if (now_ms >= e->end_ms) return false;
    for (uint32_t i = 0; i < e->n_stamps; i++)
        if (!hr_store_stamp_holds(m->store, e->stamps[i])) return false;
    return true;
}

bool hr_memo_get(hr_memo *m, hr_slice key, int64_t now_ms, hr_arena *a, hr_slice *value) {
    uint64_t hash = XXH3_64bits(key.ptr, key.len);
    memo_shard *sh = shard_of(m, hash);
    bool hit = false;
    pthread_mutex_lock(&sh->mu);
    memo_entry **at = find(sh, hash, key);
    if (*at && holds(m, *at, now_ms)) {
        memo_entry *e = *at;
        *value = hr_arena_copy(a, hr_slice_of(entry_value(e), e->value_len));
        use_order_unlink(sh, e);
        use_order_push(sh, e);
        hit = true;
    } else if (*at) {
        drop(sh, at);
        atomic_fetch_add_explicit(&m->stale, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&sh->mu);
    atomic_fetch_add_explicit(hit ? &m->hits : &m->misses, 1, memory_order_relaxed);
    return hit;
}

static void grow(memo_shard *sh) {
    size_t n = sh->n_buckets * 2;
    memo_entry **buckets = hr_xcalloc(n, sizeof *buckets);
    for (size_t i = 0; i < sh->n_buckets; i++)
        for (memo_entry *e = sh->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = buckets[e->hash & (n - 1)];
            buckets[e->hash & (n - 1)] = e;
        }
    free(sh->buckets);
    sh->buckets = buckets;
    sh->n_buckets = n;
}

void hr_memo_put(hr_memo *m, hr_slice key, hr_slice value, const hr_stamp *stamps, size_t n_stamps,
                 int64_t end_ms) {
    size_t size =
        sizeof(memo_entry) + n_stamps * sizeof(hr_stamp) + key.len + value.len + MEMO_ENTRY_OVERHEAD;
    if (size > m->shard_budget || key.len > UINT32_MAX || value.len > UINT32_MAX || n_stamps > UINT32_MAX)
        return;
    memo_entry *e = hr_xmalloc(size - MEMO_ENTRY_OVERHEAD);
    *e = (memo_entry){.hash = XXH3_64bits(key.ptr, key.len),
                      .end_ms = end_ms,
                      .size = size,
                      .key_len = (uint32_t)key.len,
                      .value_len = (uint32_t)value.len,
                      .n_stamps = (uint32_t)n_stamps};
    if (n_stamps) memcpy(e->stamps, stamps, n_stamps * sizeof *stamps);
    if (key.len) memcpy(entry_key(e), key.ptr, key.len);
    if (value.len) memcpy(entry_value(e), value.ptr, value.len);

    memo_shard *sh = shard_of(m, e->hash);
    pthread_mutex_lock(&sh->mu);
    memo_entry **at = find(sh, e->hash, key);
    if (*at) drop(sh, at);
    while (sh->bytes + size > m->shard_budget && sh->oldest) {
        memo_entry *old = sh->oldest;
        drop(sh, find(sh, old->hash, hr_slice_of(entry_key(old), old->key_len)));
    }
    if (sh->n >= sh->n_buckets) grow(sh);
    at = &sh->buckets[e->hash & (sh->n_buckets - 1)];
    e->next = *at;
    *at = e;
    use_order_push(sh, e);
    sh->n++;
    sh->bytes += size;
    pthread_mutex_unlock(&sh->mu);
}

hr_memo_stats hr_memo_stats_of(hr_memo *m) {
    hr_memo_stats st = {.hits = atomic_load_explicit(&m->hits, memory_order_relaxed),
                        .misses = atomic_load_explicit(&m->misses, memory_order_relaxed),
                        .stale = atomic_load_explicit(&m->stale, memory_order_relaxed)};
    for (size_t i = 0; i < MEMO_SHARDS; i++) {
        memo_shard *sh = &m->shards[i];
        pthread_mutex_lock(&sh->mu);
        st.entries += sh->n;
        st.bytes += sh->bytes;
        pthread_mutex_unlock(&sh->mu);
    }
    return st;
}
