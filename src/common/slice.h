/* slice.h — a borrowed, binary-safe run of bytes.
 *
 * A slice never owns its bytes: whoever hands one out says how long they stay
 * valid. Keys, members and values cross the store interface as slices. */
#ifndef HR_SLICE_H
#define HR_SLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct hr_slice {
    const char *ptr;
    size_t len;
} hr_slice;

static inline hr_slice hr_slice_of(const char *ptr, size_t len) {
    hr_slice s = {ptr, len};
    return s;
}

/* A slice over a NUL-terminated string (the NUL is not included). */
static inline hr_slice hr_slice_str(const char *s) {
    hr_slice r = {s, s ? strlen(s) : 0};
    return r;
}

static inline bool hr_slice_eq(hr_slice a, hr_slice b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* memcmp order, shorter first on a common prefix: the order RocksDB's
 * bytewise comparator and Redis' lexicographic ranges use. */
static inline int hr_slice_cmp(hr_slice a, hr_slice b) {
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    if (c != 0) return c;
    return (a.len > b.len) - (a.len < b.len);
}

#endif
