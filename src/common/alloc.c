/* alloc.c — see alloc.h. */
#include "alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* jemalloc's options, read at its start (the release binaries link it; the
 * sanitizer builds ignore the symbol). thp:always marks every mapping it
 * takes from the kernel for transparent huge pages: a friends-reads tests
 * ~29,000 members a call at random in images of up to ~2 MiB each, tens of
 * megabytes in all, and each test on 4 KiB pages also misses the TLB. It
 * lowers that query's tail latency for a little more resident memory
 * (docs/DESIGN.md, "Measured decisions"). MALLOC_CONF in the environment
 * still overrides it ("thp:default" turns it off). */
const char *malloc_conf = "thp:always";

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

char *hr_xstrdup(const char *s) {
    return hr_xstrndup(s, strlen(s));
}

/* Below this a table gains nothing from huge pages: it spans a few TLB
 * entries anyway, and malloc's rounding costs less than mmap's. */
#define TABLE_HUGE_MIN ((size_t)2 << 20)

static size_t table_bytes(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) oom(SIZE_MAX);
    return count * size;
}

void *hr_table_calloc(size_t count, size_t size) {
    size_t n = table_bytes(count, size);
    if (n < TABLE_HUGE_MIN) return hr_xcalloc(count, size);
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) oom(n);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n, MADV_HUGEPAGE); /* a hint: without THP, 4 KiB pages serve */
#endif
    return p;
}

void hr_table_free(void *p, size_t count, size_t size) {
    if (p == NULL) return;
    size_t n = table_bytes(count, size);
    if (n < TABLE_HUGE_MIN)
        free(p);
    else
        munmap(p, n);
}
