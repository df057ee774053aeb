/* arena.h — a bump allocator freed all at once.
 *
 * One arena per request (h2o's request pool) or per store batch: everything a
 * handler or a batch allocates lives until hr_arena_free (or hr_arena_reset),
 * so no individual frees, no leaks on early returns. */
#ifndef HR_ARENA_H
#define HR_ARENA_H

#include <stddef.h>

#include "slice.h"

typedef struct hr_arena_chunk hr_arena_chunk;
typedef struct hr_arena {
    hr_arena_chunk *head;
} hr_arena;

#define HR_ARENA_INIT                                                                                        \
    { NULL }

/* n bytes aligned for any type; never NULL. */
void *hr_arena_alloc(hr_arena *a, size_t n);
void *hr_arena_calloc(hr_arena *a, size_t n);
/* A copy of s in the arena (with a NUL after it, not counted). */
hr_slice hr_arena_copy(hr_arena *a, hr_slice s);
char *hr_arena_strndup(hr_arena *a, const char *s, size_t n);
/* Free all but the first chunk, ready for reuse. */
void hr_arena_reset(hr_arena *a);
/* Free everything. */
void hr_arena_free(hr_arena *a);

#endif
