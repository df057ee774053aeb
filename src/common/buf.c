/* buf.c — see buf.h. */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"

void hr_buf_reserve(hr_buf *b, size_t extra) {
    size_t need = b->len + extra + 1; /* +1: the trailing NUL */
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->data = hr_xrealloc(b->data, cap);
    b->cap = cap;
}

void hr_buf_append_slow(hr_buf *b, const void *p, size_t n) {
    hr_buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void hr_buf_printf(hr_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0) return;
    hr_buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void hr_buf_append_u64be(hr_buf *b, uint64_t v) {
    unsigned char o[8];
    hr_store_u64be(o, v);
    hr_buf_append(b, o, 8);
}

void hr_buf_append_u32be(hr_buf *b, uint32_t v) {
    unsigned char o[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    hr_buf_append(b, o, 4);
}

void hr_buf_free(hr_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
