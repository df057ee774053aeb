/* rank.c — see rank.h. */
#include "core/rank.h"

#include <math.h>
#include <string.h>

double hr_rank_hot(int64_t sum, int64_t time_ms) {
    double s = (double)sum;
    double order = log10(fmax(fabs(s), 1.0));
    double sign = s > 0 ? 1.0 : s < 0 ? -1.0 : 0.0;
    double seconds = (double)time_ms / 1000.0 - HR_HOT_EPOCH_S;
    return sign * order + seconds / HR_HOT_PERIOD_S;
}

static const char hexdigits[] = "0123456789abcdef";

static void append_hex(hr_buf *out, const unsigned char *p, size_t n) {
    hr_buf_reserve(out, 2 * n);
    for (size_t i = 0; i < n; i++) {
        hr_buf_append_byte(out, (uint8_t)hexdigits[p[i] >> 4]);
        hr_buf_append_byte(out, (uint8_t)hexdigits[p[i] & 15]);
    }
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void hr_rank_cursor_encode(double score, hr_slice member, hr_buf *out) {
    uint64_t bits;
    memcpy(&bits, &score, sizeof bits);
    unsigned char be[8];
    hr_store_u64be(be, bits);
    append_hex(out, be, 8);
    append_hex(out, (const unsigned char *)member.ptr, member.len);
}

int hr_rank_cursor_decode(const char *text, size_t max_member, hr_arena *arena, double *score,
                          hr_slice *member, hr_err *err) {
    size_t len = strlen(text);
    if (len < 18 || len % 2 != 0 || (len - 16) / 2 > max_member)
        return hr_err_set(err, HR_EINVAL, "cursor is not valid");
    size_t n = len / 2;
    unsigned char *bytes = hr_arena_alloc(arena, n + 1);
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(text[2 * i]), lo = hexval(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return hr_err_set(err, HR_EINVAL, "cursor is not valid");
        bytes[i] = (unsigned char)(hi << 4 | lo);
    }
    bytes[n] = '\0';
    uint64_t bits = hr_load_u64be(bytes);
    double d;
    memcpy(&d, &bits, sizeof d);
    if (!isfinite(d)) return hr_err_set(err, HR_EINVAL, "cursor is not valid");
    *score = d;
    *member = hr_slice_of((const char *)bytes + 8, n - 8);
    return HR_OK;
}

int hr_list_spec(const hr_list_req *req, size_t max_member, hr_arena *arena, hr_zrange_spec *spec,
                 hr_err *err) {
    if (req->limit < 1 || req->limit > HR_LIST_MAX)
        return hr_err_set(err, HR_EINVAL, "limit must be 1..%d", HR_LIST_MAX);
    *spec = hr_zrange_all(true, req->limit);
    /* Times are whole milliseconds: "after since" is ">= since + 1". */
    if (req->has_since) spec->min = (double)req->since_ms + 1;
    if (req->cursor) {
        int rc = hr_rank_cursor_decode(req->cursor, max_member, arena, &spec->cursor_score,
                                       &spec->cursor_member, err);
        if (rc != HR_OK) return rc;
        spec->has_cursor = true;
    }
    return HR_OK;
}

const char *hr_list_cursor(hr_arena *arena, double score, hr_slice member) {
    hr_buf b = HR_BUF_INIT;
    hr_rank_cursor_encode(score, member, &b);
    const char *out = hr_arena_strndup(arena, b.data, b.len);
    hr_buf_free(&b);
    return out;
}
