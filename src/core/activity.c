/* activity.c — see activity.h.
 *
 * Stored form, version 1:
 *   u8 version (1) | u8 flags | u64be time_ms |
 *   5 x (u8 length, bytes): actor, verb, object, target, foreign_id |
 *   data (the rest)
 * flags: 1 tombstone, 2 fanned out to followers, 4 fanned out to members. */
#include "core/activity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ident.h"

enum { FLAG_TOMBSTONE = 1, FLAG_FOLLOWERS = 2, FLAG_MEMBERS = 4 };

void hr_activity_new_id(int64_t time_ms, char out[HR_ACTIVITY_ID_LEN + 1]) {
    uint32_t r;
    arc4random_buf(&r, sizeof r);
    snprintf(out, HR_ACTIVITY_ID_LEN + 1, "%012llx%08x", (unsigned long long)time_ms, (unsigned)r);
}

hr_slice hr_activity_key(const char *ns, hr_slice id, const char *suffix, hr_slice tail, hr_buf *k) {
    hr_buf_clear(k);
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, ns);
    hr_buf_append_str(k, "a/");
    hr_buf_append_slice(k, id);
    hr_buf_append_byte(k, '}');
    hr_buf_append_str(k, suffix);
    hr_buf_append_slice(k, tail);
    return hr_buf_slice(k);
}

int64_t hr_activity_id_time(hr_slice id) {
    int64_t t = 0;
    for (size_t i = 0; i < 12; i++) /* new_id's 12 hex digits of time */
        t = t * 16 + (id.ptr[i] <= '9' ? id.ptr[i] - '0' : id.ptr[i] - 'a' + 10);
    return t;
}

bool hr_activity_id_valid(hr_slice s) {
    if (s.len != HR_ACTIVITY_ID_LEN) return false;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

hr_slice hr_activity_group(const hr_activity *a) {
    static const char prefix[] = "group:";
    size_t n = sizeof prefix - 1;
    if (a->target.len > n && memcmp(a->target.ptr, prefix, n) == 0)
        return hr_slice_of(a->target.ptr + n, a->target.len - n);
    return hr_slice_of(NULL, 0);
}

static int check_field(hr_slice v, const char *name, bool required, hr_err *err) {
    if (v.len == 0) return required ? hr_err_set(err, HR_EINVAL, "%s is required", name) : HR_OK;
    if (!hr_ident_valid(v))
        return hr_err_set(err, HR_EINVAL, "%s must be an identifier (1..128 of [A-Za-z0-9._:@~-])", name);
    return HR_OK;
}

int hr_activity_check(const hr_activity *a, hr_err *err) {
    int rc = check_field(a->actor, "actor", true, err);
    if (rc == HR_OK) rc = check_field(a->verb, "verb", true, err);
    if (rc == HR_OK) rc = check_field(a->object, "object", false, err);
    if (rc == HR_OK) rc = check_field(a->target, "target", false, err);
    if (rc == HR_OK) rc = check_field(a->foreign_id, "foreign_id", false, err);
    if (rc == HR_OK && (a->time_ms < 0 || a->time_ms > HR_ACTIVITY_TIME_MAX))
        rc = hr_err_set(err, HR_EINVAL, "time must be 0..%lld", (long long)HR_ACTIVITY_TIME_MAX);
    return rc;
}

static void put_field(hr_buf *out, hr_slice v) {
    hr_buf_append_byte(out, (uint8_t)v.len);
    hr_buf_append_slice(out, v);
}

void hr_activity_encode(const hr_activity *a, bool tombstone, hr_buf *out) {
    hr_buf_append_byte(out, 1);
    hr_buf_append_byte(out, (uint8_t)((tombstone ? FLAG_TOMBSTONE : 0) |
                                      (a->fanned_followers ? FLAG_FOLLOWERS : 0) |
                                      (a->fanned_members ? FLAG_MEMBERS : 0)));
    hr_buf_append_u64be(out, (uint64_t)a->time_ms);
    put_field(out, a->actor);
    put_field(out, a->verb);
    put_field(out, a->object);
    put_field(out, a->target);
    put_field(out, a->foreign_id);
    hr_buf_append_slice(out, a->data);
}

static bool get_field(const unsigned char **p, const unsigned char *end, hr_arena *arena, hr_slice *out) {
    if (*p >= end) return false;
    size_t n = **p;
    (*p)++;
    if ((size_t)(end - *p) < n) return false;
    *out = n ? hr_arena_copy(arena, hr_slice_of((const char *)*p, n)) : hr_slice_of(NULL, 0);
    *p += n;
    return true;
}

int hr_activity_decode(hr_slice id, hr_slice v, hr_arena *arena, hr_activity *a, bool *tombstone,
                       hr_err *err) {
    memset(a, 0, sizeof *a);
    const unsigned char *p = (const unsigned char *)v.ptr, *end = p + v.len;
    if (v.len < 10 || p[0] != 1 || id.len != HR_ACTIVITY_ID_LEN) goto corrupt;
    unsigned flags = p[1];
    a->time_ms = (int64_t)hr_load_u64be(p + 2);
    p += 10;
    if (!get_field(&p, end, arena, &a->actor) || !get_field(&p, end, arena, &a->verb) ||
        !get_field(&p, end, arena, &a->object) || !get_field(&p, end, arena, &a->target) ||
        !get_field(&p, end, arena, &a->foreign_id))
        goto corrupt;
    a->data = p < end ? hr_arena_copy(arena, hr_slice_of((const char *)p, (size_t)(end - p)))
                      : hr_slice_of(NULL, 0);
    memcpy(a->id, id.ptr, HR_ACTIVITY_ID_LEN);
    a->id[HR_ACTIVITY_ID_LEN] = 0;
    a->fanned_followers = flags & FLAG_FOLLOWERS;
    a->fanned_members = flags & FLAG_MEMBERS;
    *tombstone = flags & FLAG_TOMBSTONE;
    return HR_OK;
corrupt:
    return hr_err_set(err, HR_EINTERNAL, "activity %.*s is corrupt", (int)id.len, id.ptr);
}
