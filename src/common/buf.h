/* buf.h — a growable byte buffer, for building keys, values and text.
 *
 * The buffer owns its bytes; `data` is always NUL-terminated (the NUL is not
 * counted in len) so that text built in it can be handed to C string APIs. */
#ifndef HR_BUF_H
#define HR_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "slice.h"

typedef struct hr_buf {
    char *data;
    size_t len;
    size_t cap;
} hr_buf;

#define HR_BUF_INIT                                                                                          \
    { NULL, 0, 0 }

void hr_buf_reserve(hr_buf *b, size_t extra);
void hr_buf_append_slow(hr_buf *b, const void *p, size_t n);
/* Appends are inline: keys and answers are built from many small pieces,
 * and a call per piece showed in profiles of a timeline page. */
static inline void hr_buf_append(hr_buf *b, const void *p, size_t n) {
    if (b->len + n < b->cap) { /* room for the bytes and the trailing NUL */
        if (n) memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return;
    }
    hr_buf_append_slow(b, p, n);
}
static inline void hr_buf_append_slice(hr_buf *b, hr_slice s) {
    hr_buf_append(b, s.ptr, s.len);
}
static inline void hr_buf_append_str(hr_buf *b, const char *s) {
    hr_buf_append(b, s, strlen(s));
}
static inline void hr_buf_append_byte(hr_buf *b, uint8_t c) {
    hr_buf_append(b, &c, 1);
}
void hr_buf_printf(hr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Big-endian fixed-width integers: byte order equals numeric order. */
void hr_buf_append_u64be(hr_buf *b, uint64_t v);
void hr_buf_append_u32be(hr_buf *b, uint32_t v);
static inline hr_slice hr_buf_slice(const hr_buf *b) {
    return hr_slice_of(b->data, b->len);
}
/* Forget the contents, keep the memory. */
static inline void hr_buf_clear(hr_buf *b) {
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}
/* Free the memory; the buffer is empty and reusable afterwards. */
void hr_buf_free(hr_buf *b);

/* Inline: they decode every entry of a set walk (a friend list of ~450 on
 * each friends-reads), where a call per entry showed in profiles. memcpy
 * because p need not be aligned; the compiler makes it one load and a byte
 * swap. */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HR_BE64(v) (v)
#define HR_BE32(v) (v)
#else
#define HR_BE64(v) __builtin_bswap64(v)
#define HR_BE32(v) __builtin_bswap32(v)
#endif
static inline uint64_t hr_load_u64be(const void *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return HR_BE64(v);
}
static inline uint32_t hr_load_u32be(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return HR_BE32(v);
}
static inline void hr_store_u64be(void *p, uint64_t v) {
    v = HR_BE64(v);
    memcpy(p, &v, 8);
}

#endif
