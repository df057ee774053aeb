/* alloc.c — see alloc.h. */
#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n) {
    fprintf(stderr, "herald: out of memory allocating %zu bytes\n", n);
    abort();
}

void *hr_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) oom(n);
    return p;
}

void *hr_xcalloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p == NULL) oom(count * size);
    return p;
}

void *hr_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (q == NULL) oom(n);
    return q;
}

char *hr_xstrndup(const char *s, size_t n) {
    char *p = hr_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *hr_xstrdup(const char *s) { return hr_xstrndup(s, strlen(s)); }
