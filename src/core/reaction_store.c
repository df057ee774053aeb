/* reaction_store.c — see reaction_store.h. */
#include "core/reaction_store.h"

#include <math.h>
#include <string.h>

#include "common/ident.h"
#include "core/exec.h"

hr_slice hr_rs_user_key(const char *ns, hr_slice uid, hr_slice kind, hr_buf *k) {
    hr_buf_clear(k);
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, ns);
    hr_buf_append_str(k, "u/");
    hr_buf_append_slice(k, uid);
    hr_buf_append_str(k, "}/rx");
    if (kind.len) {
        hr_buf_append_byte(k, '/');
        hr_buf_append_slice(k, kind);
    }
    return hr_buf_slice(k);
}

/* LAYOUT: u8 user length, user, u8 kind length, kind, i64 time (big
 * endian), then the data to the end. */
void hr_reaction_encode(const hr_reaction *r, hr_buf *out) {
    hr_buf_append_byte(out, (uint8_t)r->user.len);
    hr_buf_append_slice(out, r->user);
    hr_buf_append_byte(out, (uint8_t)r->kind.len);
    hr_buf_append_slice(out, r->kind);
    hr_buf_append_u64be(out, (uint64_t)r->time_ms);
    hr_buf_append_slice(out, r->data);
}

bool hr_reaction_decode(hr_slice v, hr_reaction *r) {
    const char *p = v.ptr, *end = v.ptr + v.len;
    if (p >= end) return false;
    size_t ul = (uint8_t)*p++;
    if ((size_t)(end - p) < ul + 1) return false;
    r->user = hr_slice_of(p, ul);
    p += ul;
    size_t kl = (uint8_t)*p++;
    if ((size_t)(end - p) < kl + 8) return false;
    r->kind = hr_slice_of(p, kl);
    p += kl;
    r->time_ms = (int64_t)hr_load_u64be(p);
    p += 8;
    r->data = hr_slice_of(p, (size_t)(end - p));
    return ul > 0 && kl > 0;
}

/* A SUF is a like's ("like." and its user) or 20 hex digits, as an
 * activity id. */
static bool suf_valid(hr_slice suf) {
    if (suf.len > 5 && memcmp(suf.ptr, "like.", 5) == 0)
        return hr_ident_valid(hr_slice_of(suf.ptr + 5, suf.len - 5));
    return hr_activity_id_valid(suf);
}

hr_slice hr_reaction_id(hr_slice aid, hr_slice suf, hr_buf *k) {
    hr_buf_clear(k);
    hr_buf_append_slice(k, aid);
    hr_buf_append_byte(k, '-');
    hr_buf_append_slice(k, suf);
    return hr_buf_slice(k);
}

bool hr_reaction_id_split(hr_slice id, hr_slice *aid, hr_slice *suf) {
    if (id.len < HR_ACTIVITY_ID_LEN + 2 || id.len > HR_REACTION_ID_MAX || id.ptr[HR_ACTIVITY_ID_LEN] != '-')
        return false;
    *aid = hr_slice_of(id.ptr, HR_ACTIVITY_ID_LEN);
    *suf = hr_slice_of(id.ptr + HR_ACTIVITY_ID_LEN + 1, id.len - HR_ACTIVITY_ID_LEN - 1);
    return hr_activity_id_valid(*aid) && suf_valid(*suf);
}

size_t hr_rs_counts_read(hr_batch *b, const char *ns, hr_slice aid, hr_buf *k) {
    hr_zrange_spec all = hr_zrange_all(false, HR_ZRANGE_LIMIT_MAX);
    return hr_zrange(b, hr_activity_key(ns, aid, "/rc", hr_slice_of(NULL, 0), k), &all);
}

size_t hr_rs_own_read(hr_batch *b, const char *ns, hr_slice aid, hr_slice reader, hr_buf *k) {
    hr_zrange_spec all = hr_zrange_all(false, HR_ZRANGE_LIMIT_MAX);
    return hr_zrange(b, hr_activity_key(ns, aid, "/o/", reader, k), &all);
}

/* The members of a count set with a count above 0, copied into a. */
static size_t positive(const hr_result *r, hr_arena *a, hr_reaction_count **out) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_entries; i++)
        n += r->entries[i].score >= 1;
    *out = n ? hr_arena_alloc(a, n * sizeof **out) : NULL;
    n = 0;
    for (size_t i = 0; i < r->n_entries; i++)
        if (r->entries[i].score >= 1)
            (*out)[n++] = (hr_reaction_count){hr_arena_copy(a, r->entries[i].member),
                                              (int64_t)llround(r->entries[i].score)};
    return n;
}

void hr_rs_counts_fill(const hr_batch *b, size_t op, hr_arena *a, hr_activity *act) {
    act->n_counts = positive(hr_batch_result(b, op), a, &act->counts);
}

void hr_rs_own_fill(const hr_batch *b, size_t op, hr_arena *a, hr_activity *act) {
    hr_reaction_count *mine;
    size_t n = positive(hr_batch_result(b, op), a, &mine);
    act->own = n ? hr_arena_alloc(a, n * sizeof *act->own) : NULL;
    for (size_t i = 0; i < n; i++)
        act->own[i] = mine[i].kind;
    act->n_own = n;
    act->own_known = true;
}

/* LAYOUT: u8 own_known, u32 counts, per count u8 kind length, kind, i64;
 * u32 own kinds, per kind u8 length and the kind. */
void hr_rs_counts_encode(const hr_activity *act, hr_buf *out) {
    hr_buf_append_byte(out, act->own_known);
    hr_buf_append_u32be(out, (uint32_t)act->n_counts);
    for (size_t i = 0; i < act->n_counts; i++) {
        hr_buf_append_byte(out, (uint8_t)act->counts[i].kind.len);
        hr_buf_append_slice(out, act->counts[i].kind);
        hr_buf_append_u64be(out, (uint64_t)act->counts[i].n);
    }
    hr_buf_append_u32be(out, (uint32_t)act->n_own);
    for (size_t i = 0; i < act->n_own; i++) {
        hr_buf_append_byte(out, (uint8_t)act->own[i].len);
        hr_buf_append_slice(out, act->own[i]);
    }
}

/* Made by hr_rs_counts_encode in this process: trusted. */
void hr_rs_counts_decode(hr_slice v, hr_arena *a, hr_activity *act) {
    const char *p = v.ptr;
    act->own_known = *p++;
    act->n_counts = hr_load_u32be(p);
    p += 4;
    act->counts = act->n_counts ? hr_arena_alloc(a, act->n_counts * sizeof *act->counts) : NULL;
    for (size_t i = 0; i < act->n_counts; i++) {
        size_t len = (uint8_t)*p++;
        act->counts[i].kind = hr_arena_copy(a, hr_slice_of(p, len));
        p += len;
        act->counts[i].n = (int64_t)hr_load_u64be(p);
        p += 8;
    }
    act->n_own = hr_load_u32be(p);
    p += 4;
    act->own = act->n_own ? hr_arena_alloc(a, act->n_own * sizeof *act->own) : NULL;
    for (size_t i = 0; i < act->n_own; i++) {
        size_t len = (uint8_t)*p++;
        act->own[i] = hr_arena_copy(a, hr_slice_of(p, len));
        p += len;
    }
}

#define PURGE_PAGE 256

/* One page of the activity's reactions: the users' entries and the
 * records go, then the page's members of its lists; *more when some are
 * left. */
static int purge_page(hr_store *s, const char *ns, hr_slice aid, hr_batch *b, bool *more, hr_err *err) {
    hr_buf k = HR_BUF_INIT, rid = HR_BUF_INIT;
    hr_batch_reset(b);
    hr_zrange_spec first = hr_zrange_all(false, PURGE_PAGE);
    hr_zrange(b, hr_activity_key(ns, aid, "/rx", hr_slice_of(NULL, 0), &k), &first);
    int rc = hr_core_exec(s, b, 0, "reactions", err);
    const hr_result *page = rc == HR_OK ? hr_batch_result(b, 0) : NULL;
    size_t n = page ? page->n_entries : 0;
    *more = page && (page->more || n == PURGE_PAGE);
    if (n == 0) goto out;
    hr_batch *reads = hr_batch_new();
    for (size_t i = 0; i < n; i++)
        hr_get(reads, hr_activity_key(ns, aid, "/r/", page->entries[i].member, &k));
    rc = hr_core_exec(s, reads, 0, "reactions", err);
    hr_batch *w = hr_batch_new();
    for (size_t i = 0; rc == HR_OK && i < n; i++) {
        hr_slice suf = page->entries[i].member;
        hr_reaction r;
        const hr_result *res = hr_batch_result(reads, i);
        if (res->rc == HR_OK && hr_reaction_decode(res->value, &r)) {
            hr_reaction_id(aid, suf, &rid);
            hr_tlrem(w, hr_rs_user_key(ns, r.user, hr_slice_of(NULL, 0), &k), r.time_ms, hr_buf_slice(&rid));
            hr_tlrem(w, hr_rs_user_key(ns, r.user, r.kind, &k), r.time_ms, hr_buf_slice(&rid));
            hr_del(w, hr_activity_key(ns, aid, "/o/", r.user, &k));
            hr_zrem(w, hr_activity_key(ns, aid, "/rx/", r.kind, &k), suf);
        }
        hr_del(w, hr_activity_key(ns, aid, "/r/", suf, &k));
        hr_zrem(w, hr_activity_key(ns, aid, "/rx", hr_slice_of(NULL, 0), &k), suf);
    }
    if (rc == HR_OK) rc = hr_core_exec(s, w, 0, "reactions", err);
    hr_batch_free(w);
    hr_batch_free(reads);
out:
    hr_buf_free(&k);
    hr_buf_free(&rid);
    return rc;
}

int hr_rs_purge(hr_store *s, const char *ns, hr_slice aid, hr_err *err) {
    hr_batch *b = hr_batch_new();
    hr_buf k = HR_BUF_INIT;
    int rc = HR_OK;
    for (bool more = true; rc == HR_OK && more;)
        rc = purge_page(s, ns, aid, b, &more, err);
    if (rc == HR_OK) { /* what is left: the counts, and per-kind lists emptied above */
        hr_batch_reset(b);
        hr_del(b, hr_activity_key(ns, aid, "/rc", hr_slice_of(NULL, 0), &k));
        rc = hr_core_exec(s, b, 0, "reactions", err);
    }
    hr_buf_free(&k);
    hr_batch_free(b);
    return rc;
}
