/* rocks/memory.c — the memory budget shared out, and the URI's tuning. */
#include "store/rocks/memory.h"

#include <string.h>

#include "store/rocks/cache.h"
#include "store/rocks/pset.h"
#include "store/rocks/timelist.h"
#include "store/rocks/zset.h"

static const struct {
    const char *name;
    unsigned percent;
} caches[ROCKS_CACHE_COUNT] = {
#define ROCKS_CACHE_ROW_(id, name, percent, what) {name, percent},
    ROCKS_CACHES(ROCKS_CACHE_ROW_)
#undef ROCKS_CACHE_ROW_
};

/* A whole number of at most 18 digits, nothing else. */
static bool parse_count(const char *s, size_t len, size_t *out) {
    if (len == 0 || len > 18) return false;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* Turn off the caches named in the comma-separated list v[0..len). */
static int turn_off(const char *v, size_t len, rocks_tuning *t, hr_err *err) {
    while (len > 0) {
        const char *comma = memchr(v, ',', len);
        size_t n = comma ? (size_t)(comma - v) : len;
        int found = -1;
        for (int i = 0; i < ROCKS_CACHE_COUNT; i++)
            if (strlen(caches[i].name) == n && memcmp(caches[i].name, v, n) == 0) found = i;
        if (found < 0)
            return hr_err_set(err, HR_EINVAL, "rocksdb URI: off names no cache: '%.*s'", (int)n, v);
        t->budget[found] = 0;
        v += comma ? n + 1 : n;
        len -= comma ? n + 1 : n;
    }
    return HR_OK;
}

int rocks_tuning_parse(const char *query, size_t memory, rocks_tuning *t, hr_err *err) {
    memset(t, 0, sizeof *t);
    if (memory == 0) memory = HR_STORE_MEMORY_DEFAULT;
    for (int i = 0; i < ROCKS_CACHE_COUNT; i++)
        t->budget[i] = memory / 100 * caches[i].percent;
    const char *p = query ? query : "";
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (eq == NULL) return hr_err_set(err, HR_EINVAL, "rocksdb URI: '%.*s' is not NAME=VALUE", (int)n, p);
        size_t klen = (size_t)(eq - p), vlen = n - klen - 1;
        const char *v = eq + 1;
        int rc = HR_OK;
#define IS(name) (klen == sizeof name - 1 && memcmp(p, name, klen) == 0)
        if (IS("off"))
            rc = turn_off(v, vlen, t, err);
        else if (IS("hot_keep") && parse_count(v, vlen, &t->tl_hot_keep) && t->tl_hot_keep > 0)
            ;
        else if (IS("file_min") && parse_count(v, vlen, &t->tl_file_min) && t->tl_file_min > 0)
            ;
        else if (IS("zset_memory") && vlen == 3 && memcmp(v, "all", 3) == 0)
            t->zset_memory_all = true;
        else
            rc = hr_err_set(err, HR_EINVAL, "rocksdb URI: unknown or malformed parameter '%.*s'", (int)n, p);
#undef IS
        if (rc != HR_OK) return rc;
        p += amp ? n + 1 : n;
    }
    return HR_OK;
}

void rocks_caches_report(const hr_store *hs, hr_store_metrics *m) {
    const rocks_store *s = (const rocks_store *)hs;
    for (int i = 0; i < ROCKS_CACHE_COUNT && m->n_caches < HR_STORE_CACHES_MAX; i++) {
        size_t held = 0;
        switch (i) {
        case ROCKS_CACHE_BLOCKS: held = rocksdb_cache_get_usage(s->blocks); break;
        case ROCKS_CACHE_META: held = rcache_bytes(s->meta_cache); break;
        case ROCKS_CACHE_CHUNKS: held = rcache_bytes(s->chunk_cache); break;
        case ROCKS_CACHE_ZSETS: held = rcache_bytes(s->zset_cache); break;
        case ROCKS_CACHE_IMAGES: held = rcache_bytes(s->pset_images); break;
        case ROCKS_CACHE_RANKINGS: held = zreg_bytes(s->zreg); break;
        case ROCKS_CACHE_COLUMNS: held = s->pcols ? pcols_bytes(s->pcols) : 0; break;
        case ROCKS_CACHE_HOTLISTS: held = tlcache_bytes(s->tlc); break;
        case ROCKS_CACHE_VIEWS: held = vspares_bytes(s->views); break;
        default: continue; /* the memos are the callers' to report */
        }
        m->caches[m->n_caches].name = caches[i].name;
        m->caches[m->n_caches].budget = s->budget.budget[i];
        m->caches[m->n_caches].bytes = held;
        m->n_caches++;
    }
}
