/* arena.c — see arena.h. Chunks double up to 1 MiB; a request larger than a
 * chunk gets a chunk of its own. */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct hr_arena_chunk {
    hr_arena_chunk *next;
    size_t cap, used;
    max_align_t data[]; /* aligned for any type */
};

enum { FIRST_CHUNK = 4096 - sizeof(hr_arena_chunk), MAX_CHUNK = 1 << 20 };

static size_t align_up(size_t n) {
    const size_t a = _Alignof(max_align_t);
    return (n + a - 1) & ~(a - 1);
}

void *hr_arena_alloc(hr_arena *a, size_t n) {
    n = align_up(n ? n : 1);
    hr_arena_chunk *c = a->head;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = c ? c->cap * 2 : FIRST_CHUNK;
        if (cap > MAX_CHUNK) cap = MAX_CHUNK;
        if (cap < n) cap = n;
        hr_arena_chunk *nc = hr_xmalloc(sizeof *nc + cap);
        nc->cap = cap;
        nc->used = 0;
        nc->next = c;
        a->head = nc;
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

void *hr_arena_calloc(hr_arena *a, size_t n) {
    void *p = hr_arena_alloc(a, n);
    memset(p, 0, n);
    return p;
}

char *hr_arena_strndup(hr_arena *a, const char *s, size_t n) {
    char *p = hr_arena_alloc(a, n + 1);
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

hr_slice hr_arena_copy(hr_arena *a, hr_slice s) {
    return hr_slice_of(hr_arena_strndup(a, s.ptr, s.len), s.len);
}

void hr_arena_reset(hr_arena *a) {
    hr_arena_chunk *c = a->head;
    if (c == NULL) return;
    /* keep the newest (largest) chunk */
    hr_arena_chunk *rest = c->next;
    while (rest) {
        hr_arena_chunk *n = rest->next;
        free(rest);
        rest = n;
    }
    c->next = NULL;
    c->used = 0;
}

void hr_arena_free(hr_arena *a) {
    hr_arena_chunk *c = a->head;
    while (c) {
        hr_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
}
