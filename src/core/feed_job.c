/* feed_job.c — see feed_job.h: the fan-out jobs' codec, on its own so that
 * feeds.c (which pushes jobs) and fanout.c (which runs them) share it
 * without depending on each other for it. */
#include "core/feed_job.h"

#include <string.h>

void hr_feed_job_encode(const hr_feed_job *j, hr_buf *out) {
    hr_buf_append_byte(out, (uint8_t)j->kind);
    hr_buf_append_byte(out, (uint8_t)j->flags);
    hr_buf_append_u64be(out, (uint64_t)j->time_ms);
    if (j->kind == HR_JOB_RELATION) {
        hr_buf_append_byte(out, j->group);
        hr_buf_append_byte(out, j->adds);
        hr_buf_append_byte(out, (uint8_t)j->uid.len);
        hr_buf_append_slice(out, j->uid);
        hr_buf_append_byte(out, (uint8_t)j->other.len);
        hr_buf_append_slice(out, j->other);
        return;
    }
    hr_buf body = HR_BUF_INIT;
    hr_activity_encode(&j->activity, false, &body);
    hr_buf_append_u32be(out, (uint32_t)body.len);
    hr_buf_append_slice(out, hr_buf_slice(&body));
    hr_buf_append(out, j->activity.id, HR_ACTIVITY_ID_LEN);
    hr_buf_free(&body);
}

static bool take_short(const unsigned char **p, const unsigned char *end, hr_arena *a, hr_slice *out) {
    if (*p >= end || (size_t)(end - *p - 1) < **p || **p == 0) return false;
    *out = hr_arena_copy(a, hr_slice_of((const char *)*p + 1, **p));
    *p += 1 + out->len;
    return true;
}

int hr_feed_job_decode(hr_slice payload, hr_arena *a, hr_feed_job *out, hr_err *err) {
    memset(out, 0, sizeof *out);
    const unsigned char *p = (const unsigned char *)payload.ptr, *end = p + payload.len;
    if (payload.len < 10) goto bad;
    out->kind = p[0];
    out->flags = p[1];
    out->time_ms = (int64_t)hr_load_u64be(p + 2);
    p += 10;
    if (out->kind == HR_JOB_RELATION) {
        if (end - p < 2) goto bad;
        out->group = p[0];
        out->adds = p[1];
        p += 2;
        if (!take_short(&p, end, a, &out->uid) || !take_short(&p, end, a, &out->other) || p != end) goto bad;
        return HR_OK;
    }
    if (out->kind != HR_JOB_ADD && out->kind != HR_JOB_REMOVE) goto bad;
    if (end - p < 4) goto bad;
    size_t n = hr_load_u32be(p);
    p += 4;
    if ((size_t)(end - p) != n + HR_ACTIVITY_ID_LEN) goto bad;
    bool tomb;
    hr_slice id = hr_slice_of((const char *)p + n, HR_ACTIVITY_ID_LEN);
    if (!hr_activity_id_valid(id)) goto bad;
    return hr_activity_decode(id, hr_slice_of((const char *)p, n), a, &out->activity, &tomb, err);
bad:
    return hr_err_set(err, HR_EINTERNAL, "fan-out job payload is not valid");
}
