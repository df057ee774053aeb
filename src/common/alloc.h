/* alloc.h — allocation that never returns NULL.
 *
 * As in redis' zmalloc, running out of memory aborts the process with a
 * message: a server that cannot allocate cannot answer correctly anyway, and
 * it keeps every other error path about input, I/O and the store. */
#ifndef HR_ALLOC_H
#define HR_ALLOC_H

#include <stddef.h>

void *hr_xmalloc(size_t n);
void *hr_xcalloc(size_t count, size_t size);
void *hr_xrealloc(void *p, size_t n);
/* A NUL-terminated copy of n bytes of s (which need not be terminated). */
char *hr_xstrndup(const char *s, size_t n);
char *hr_xstrdup(const char *s);

#endif
