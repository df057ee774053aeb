/* members.c — see members.h. */
#include "core/members.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "core/url.h"

struct hr_members {
    hr_store *store;
    char *ns;
};

hr_members *hr_members_new(hr_store *store, const char *ns) {
    hr_members *m = hr_xcalloc(1, sizeof *m);
    m->store = store;
    m->ns = hr_xstrdup(ns ? ns : "");
    return m;
}

void hr_members_free(hr_members *m) {
    if (m == NULL) return;
    free(m->ns);
    free(m);
}

static hr_slice member_key(hr_buf *k, const hr_members *m, hr_slice id) {
    hr_buf_clear(k);
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, m->ns);
    hr_buf_append_str(k, "mb/");
    hr_buf_append_slice(k, id);
    hr_buf_append_byte(k, '}');
    return hr_buf_slice(k);
}

int hr_members_put(hr_members *m, hr_slice id, hr_slice url, int64_t score, hr_arena *a, hr_member *out,
                   hr_err *err) {
    memset(out, 0, sizeof *out);
    if (id.len < 1 || id.len > 128 || memchr(id.ptr, '/', id.len))
        return hr_err_set(err, HR_EINVAL, "id must be an identifier");
    if (score < -HR_MEMBER_SCORE_MAX || score > HR_MEMBER_SCORE_MAX)
        return hr_err_set(err, HR_EINVAL, "score must be an integer of at most 2^53 - 1 in size");
    hr_buf v = HR_BUF_INIT, k = HR_BUF_INIT;
    hr_buf_append_u64be(&v, (uint64_t)score);
    int rc = hr_url_canonical(url, &v, err);
    if (rc != HR_OK) {
        hr_buf_free(&v);
        return rc;
    }
    hr_batch *b = hr_batch_new();
    size_t op = hr_put(b, member_key(&k, m, id), hr_buf_slice(&v), 0);
    rc = hr_store_exec(m->store, b, 0, err);
    if (rc == HR_OK && hr_batch_result(b, op)->rc != HR_OK)
        rc = hr_err_set(err, hr_batch_result(b, op)->rc, "member: %s",
                        hr_strerror(hr_batch_result(b, op)->rc));
    if (rc == HR_OK) {
        out->id = hr_arena_copy(a, id);
        out->url = hr_arena_copy(a, hr_slice_of(v.data + 8, v.len - 8));
        out->score = score;
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    hr_buf_free(&v);
    return rc;
}

int hr_members_get(hr_members *m, hr_slice id, hr_arena *a, hr_member *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    if (id.len < 1 || id.len > 128 || memchr(id.ptr, '/', id.len))
        return hr_err_set(err, HR_EINVAL, "id must be an identifier");
    hr_buf k = HR_BUF_INIT;
    hr_batch *b = hr_batch_new();
    size_t op = hr_get(b, member_key(&k, m, id));
    int rc = hr_store_exec(m->store, b, 0, err);
    if (rc == HR_OK) {
        const hr_result *r = hr_batch_result(b, op);
        if (r->rc == HR_ENOTFOUND)
            rc = hr_err_set(err, HR_ENOTFOUND, "no member '%.*s'", (int)id.len, id.ptr);
        else if (r->rc != HR_OK)
            rc = hr_err_set(err, r->rc, "member: %s", hr_strerror(r->rc));
        else if (r->value.len < 8)
            rc = hr_err_set(err, HR_EINTERNAL, "member '%.*s' is corrupt", (int)id.len, id.ptr);
        else {
            out->id = hr_arena_copy(a, id);
            out->score = (int64_t)hr_load_u64be(r->value.ptr);
            out->url = hr_arena_copy(a, hr_slice_of(r->value.ptr + 8, r->value.len - 8));
        }
    }
    hr_batch_free(b);
    hr_buf_free(&k);
    return rc;
}
