/* profiles.c — see profiles.h. */
#include "core/profiles.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/ident.h"
#include "core/exec.h"

struct hr_profiles {
    hr_store *store;
    char *ns;
};

static const char *const what[] = {"uid", "gid", "object id"};

hr_profiles *hr_profiles_new(hr_store *store, const char *ns) {
    hr_profiles *p = hr_xcalloc(1, sizeof *p);
    p->store = store;
    p->ns = hr_xstrdup(ns ? ns : "");
    return p;
}

void hr_profiles_free(hr_profiles *p) {
    if (p == NULL) return;
    free(p->ns);
    free(p);
}

static hr_slice key_of(const hr_profiles *p, hr_profile_kind kind, hr_slice id, hr_buf *k) {
    static const char *const tags[] = {"u/", "g/", "o/"};
    hr_buf_clear(k);
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, p->ns);
    hr_buf_append_str(k, tags[kind]);
    hr_buf_append_slice(k, id);
    hr_buf_append_byte(k, '}');
    if (kind != HR_PROFILE_OBJECT) hr_buf_append_str(k, "/profile");
    return hr_buf_slice(k);
}

static int check_id(hr_profile_kind kind, hr_slice id, hr_err *err) {
    if (hr_ident_valid(id)) return HR_OK;
    return hr_err_set(err, HR_EINVAL, "%s must be an identifier (1..%d bytes of [A-Za-z0-9._:@~-])",
                      what[kind], HR_IDENT_MAX);
}

/* One op on id's key, run alone. */
static int run_one(hr_profiles *p, hr_profile_kind kind, hr_slice id, hr_slice json, int type, hr_arena *a,
                   hr_slice *out, hr_err *err) {
    int rc = check_id(kind, id, err);
    if (rc != HR_OK) return rc;
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    key_of(p, kind, id, &k);
    if (type == HR_OP_PUT)
        hr_put(b, hr_buf_slice(&k), json, 0);
    else if (type == HR_OP_GET)
        hr_get(b, hr_buf_slice(&k));
    else
        hr_del(b, hr_buf_slice(&k));
    rc = hr_core_exec(p->store, b, 0, "profile", err);
    const hr_result *r = hr_batch_result(b, 0);
    if (rc == HR_OK && (r->rc == HR_ENOTFOUND || (type == HR_OP_DEL && r->num == 0)))
        rc = hr_err_set(err, HR_ENOTFOUND, "no %s '%.*s'",
                        kind == HR_PROFILE_OBJECT ? "object" : "profile of", (int)id.len, id.ptr);
    if (rc == HR_OK && out) *out = hr_arena_copy(a, r->value);
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}

int hr_profiles_put(hr_profiles *p, hr_profile_kind kind, hr_slice id, hr_slice json, hr_err *err) {
    size_t max = kind == HR_PROFILE_OBJECT ? HR_OBJECT_MAX : HR_PROFILE_MAX;
    if (json.len > max)
        return hr_err_set(err, HR_ETOOBIG, "%s is %zu bytes of JSON; at most %zu",
                          kind == HR_PROFILE_OBJECT ? "the object" : "the profile", json.len, max);
    return run_one(p, kind, id, json, HR_OP_PUT, NULL, NULL, err);
}

int hr_profiles_get(hr_profiles *p, hr_profile_kind kind, hr_slice id, hr_arena *a, hr_slice *json,
                    hr_err *err) {
    return run_one(p, kind, id, hr_slice_of(NULL, 0), HR_OP_GET, a, json, err);
}

int hr_profiles_delete(hr_profiles *p, hr_profile_kind kind, hr_slice id, hr_err *err) {
    return run_one(p, kind, id, hr_slice_of(NULL, 0), HR_OP_DEL, NULL, NULL, err);
}

/* The names a page asks for, each once: open addressing over (kind, id). */
typedef struct wanted {
    hr_profile_kind *kinds;
    hr_slice *ids;
    size_t n, cap;
    size_t *slots; /* index + 1; 0 is empty */
    size_t nslots;
} wanted;

static void want(wanted *w, hr_profile_kind kind, hr_slice id) {
    if (id.len == 0 || !hr_ident_valid(id)) return;
    size_t h = (size_t)XXH3_64bits_withSeed(id.ptr, id.len, (uint64_t)kind) & (w->nslots - 1);
    for (;; h = (h + 1) & (w->nslots - 1)) {
        size_t at = w->slots[h];
        if (at == 0) break;
        if (w->kinds[at - 1] == kind && hr_slice_eq(w->ids[at - 1], id)) return;
    }
    w->kinds[w->n] = kind;
    w->ids[w->n] = id;
    w->slots[h] = ++w->n;
}

int hr_profiles_include(hr_profiles *p, const hr_activity *items, size_t n, hr_arena *a, hr_included *out,
                        hr_err *err) {
    memset(out, 0, sizeof *out);
    if (n == 0) return HR_OK;
    wanted w = {0};
    w.cap = 4 * n;
    w.nslots = 1;
    while (w.nslots < 2 * w.cap)
        w.nslots <<= 1;
    w.kinds = hr_xmalloc(w.cap * sizeof *w.kinds);
    w.ids = hr_xmalloc(w.cap * sizeof *w.ids);
    w.slots = hr_xcalloc(w.nslots, sizeof *w.slots);
    for (size_t i = 0; i < n; i++) {
        want(&w, HR_PROFILE_USER, items[i].actor);
        want(&w, HR_PROFILE_GROUP, hr_activity_group(&items[i]));
        want(&w, HR_PROFILE_OBJECT, items[i].object);
        want(&w, HR_PROFILE_OBJECT, items[i].target);
    }
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    for (size_t i = 0; i < w.n; i++)
        hr_get(b, key_of(p, w.kinds[i], w.ids[i], &k));
    int rc = hr_core_exec(p->store, b, 0, "enrich", err);
    for (int kind = 0; rc == HR_OK && kind < 3; kind++) {
        out->of[kind].ids = hr_arena_alloc(a, (w.n ? w.n : 1) * sizeof(hr_slice));
        out->of[kind].json = hr_arena_alloc(a, (w.n ? w.n : 1) * sizeof(hr_slice));
    }
    for (size_t i = 0; rc == HR_OK && i < w.n; i++) {
        const hr_result *r = hr_batch_result(b, i);
        if (r->rc != HR_OK) continue;
        size_t m = out->of[w.kinds[i]].n++;
        out->of[w.kinds[i]].ids[m] = hr_arena_copy(a, w.ids[i]);
        out->of[w.kinds[i]].json[m] = hr_arena_copy(a, r->value);
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    free(w.kinds);
    free(w.ids);
    free(w.slots);
    return rc;
}
