/* counters.c — see counters.h for the model, the keys and the costs. */
#include "core/counters.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/clock.h"

#define SETTINGS_CACHE_MS 1000
#define SETTINGS_CACHE_SLOTS 64

typedef struct cached_settings {
    char name[130]; /* identifier (<= 128) + NUL; "" = empty slot */
    hr_counter_settings s;
    int64_t fetched_ms;
} cached_settings;

struct hr_counters {
    hr_store *store;
    hr_counter_settings defaults;
    pthread_mutex_t lock; /* guards cache */
    cached_settings cache[SETTINGS_CACHE_SLOTS];
};

hr_counters *hr_counters_new(hr_store *store, hr_counter_settings defaults) {
    hr_counters *c = hr_xcalloc(1, sizeof *c);
    c->store = store;
    c->defaults = defaults;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void hr_counters_free(hr_counters *c) {
    if (c == NULL) return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void object_key(hr_buf *k, hr_slice counter, hr_slice object) {
    hr_buf_append_str(k, "{uc/");
    hr_buf_append_slice(k, counter);
    hr_buf_append_byte(k, '/');
    hr_buf_append_slice(k, object);
    hr_buf_append_byte(k, '}');
}

static void settings_key(hr_buf *k, hr_slice counter) {
    hr_buf_append_str(k, "{ucs/");
    hr_buf_append_slice(k, counter);
    hr_buf_append_byte(k, '}');
}

static int check_settings(const hr_counter_settings *s, hr_err *err) {
    if (s->ttl_ms < 1) return hr_err_set(err, HR_EINVAL, "ttl_ms must be at least 1");
    if (s->exact_limit < 1 || s->exact_limit > HR_EXACT_LIMIT_MAX)
        return hr_err_set(err, HR_EINVAL, "exact_limit must be 1..%d", HR_EXACT_LIMIT_MAX);
    return HR_OK;
}

/* Cache lookups: the slot of name, or -1. Caller holds the lock. */
static int cache_find(hr_counters *c, hr_slice name) {
    for (int i = 0; i < SETTINGS_CACHE_SLOTS; i++)
        if (strlen(c->cache[i].name) == name.len && memcmp(c->cache[i].name, name.ptr, name.len) == 0)
            return i;
    return -1;
}

static void cache_put(hr_counters *c, hr_slice name, const hr_counter_settings *s, int64_t now) {
    if (name.len >= sizeof c->cache[0].name) return;
    pthread_mutex_lock(&c->lock);
    int slot = cache_find(c, name);
    if (slot < 0) { /* an empty slot, else the stalest */
        slot = 0;
        for (int i = 0; i < SETTINGS_CACHE_SLOTS; i++) {
            if (c->cache[i].name[0] == '\0') {
                slot = i;
                break;
            }
            if (c->cache[i].fetched_ms < c->cache[slot].fetched_ms) slot = i;
        }
        memcpy(c->cache[slot].name, name.ptr, name.len);
        c->cache[slot].name[name.len] = '\0';
    }
    c->cache[slot].s = *s;
    c->cache[slot].fetched_ms = now;
    pthread_mutex_unlock(&c->lock);
}

int hr_counters_settings(hr_counters *c, hr_slice counter, hr_counter_settings *out, hr_err *err) {
    int64_t now = hr_now_ms();
    pthread_mutex_lock(&c->lock);
    int slot = cache_find(c, counter);
    bool fresh = slot >= 0 && now - c->cache[slot].fetched_ms < SETTINGS_CACHE_MS;
    if (fresh) *out = c->cache[slot].s;
    pthread_mutex_unlock(&c->lock);
    if (fresh) return HR_OK;

    hr_buf key = HR_BUF_INIT;
    settings_key(&key, counter);
    hr_batch *b = hr_batch_new();
    size_t op = hr_get(b, hr_buf_slice(&key));
    int rc = hr_store_exec(c->store, b, 0, err);
    if (rc == HR_OK) {
        const hr_result *r = hr_batch_result(b, op);
        if (r->rc == HR_OK && r->value.len == 16) {
            out->ttl_ms = (int64_t)hr_load_u64be(r->value.ptr);
            out->exact_limit = (int64_t)hr_load_u64be(r->value.ptr + 8);
        } else if (r->rc == HR_ENOTFOUND) {
            *out = c->defaults;
        } else {
            rc = hr_err_set(err, r->rc == HR_OK ? HR_EINTERNAL : r->rc,
                            "counter settings of '%.*s' are unreadable", (int)counter.len, counter.ptr);
        }
    }
    hr_batch_free(b);
    hr_buf_free(&key);
    if (rc == HR_OK) cache_put(c, counter, out, now);
    return rc;
}

int hr_counters_configure(hr_counters *c, hr_slice counter, const hr_counter_settings *s, hr_err *err) {
    int rc = check_settings(s, err);
    if (rc != HR_OK) return rc;
    hr_buf key = HR_BUF_INIT;
    settings_key(&key, counter);
    char value[16];
    hr_store_u64be(value, (uint64_t)s->ttl_ms);
    hr_store_u64be(value + 8, (uint64_t)s->exact_limit);
    hr_batch *b = hr_batch_new();
    hr_put(b, hr_buf_slice(&key), hr_slice_of(value, 16), 0);
    rc = hr_store_exec(c->store, b, 0, err);
    hr_batch_free(b);
    hr_buf_free(&key);
    if (rc == HR_OK) cache_put(c, counter, s, hr_now_ms());
    return rc;
}

static hr_distinct_params params_of(const hr_counter_settings *s) {
    hr_distinct_params p = {hr_now_ms(), s->ttl_ms, s->exact_limit};
    return p;
}

int hr_counters_add(hr_counters *c, hr_slice counter, hr_slice object, hr_slice token, int64_t *count,
                    hr_err *err) {
    if (token.len < 1 || token.len > HR_TOKEN_MAX)
        return hr_err_set(err, HR_EINVAL, "token must be 1..%d bytes (got %zu)", HR_TOKEN_MAX, token.len);
    hr_counter_settings s;
    int rc = hr_counters_settings(c, counter, &s, err);
    if (rc != HR_OK) return rc;

    XXH128_hash_t h = XXH3_128bits(token.ptr, token.len);
    char member[16];
    hr_store_u64be(member, h.high64);
    hr_store_u64be(member + 8, h.low64);

    hr_buf key = HR_BUF_INIT;
    object_key(&key, counter, object);
    hr_distinct_params p = params_of(&s);
    hr_batch *b = hr_batch_new();
    size_t op = hr_dadd(b, hr_buf_slice(&key), hr_slice_of(member, 16), &p);
    rc = hr_store_exec(c->store, b, 0, err);
    if (rc == HR_OK) {
        const hr_result *r = hr_batch_result(b, op);
        if (r->rc == HR_OK)
            *count = r->num;
        else
            rc = hr_err_set(err, r->rc, "counter key holds another type");
    }
    hr_batch_free(b);
    hr_buf_free(&key);
    return rc;
}

int hr_counters_count_many(hr_counters *c, hr_slice counter, const hr_slice *objects, size_t n,
                           int64_t *counts, hr_err *err) {
    if (n > HR_COUNTS_MAX) return hr_err_set(err, HR_EINVAL, "at most %d objects at once", HR_COUNTS_MAX);
    hr_counter_settings s;
    int rc = hr_counters_settings(c, counter, &s, err);
    if (rc != HR_OK || n == 0) return rc;
    hr_distinct_params p = params_of(&s);
    hr_batch *b = hr_batch_new();
    hr_buf key = HR_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        hr_buf_clear(&key);
        object_key(&key, counter, objects[i]);
        hr_dcount(b, hr_buf_slice(&key), &p); /* op index i */
    }
    rc = hr_store_exec(c->store, b, 0, err);
    for (size_t i = 0; rc == HR_OK && i < n; i++) {
        const hr_result *r = hr_batch_result(b, i);
        if (r->rc != HR_OK)
            rc = hr_err_set(err, r->rc, "counter key holds another type");
        else
            counts[i] = r->num;
    }
    hr_batch_free(b);
    hr_buf_free(&key);
    return rc;
}

int hr_counters_count(hr_counters *c, hr_slice counter, hr_slice object, int64_t *count, hr_err *err) {
    return hr_counters_count_many(c, counter, &object, 1, count, err);
}
