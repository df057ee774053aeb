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

/* A zeroed table of count x size bytes that is read at random (a cache's
 * slots): from mmap, and marked for transparent huge pages where the kernel
 * allows them, so that a lookup in a table of tens of megabytes does not
 * also miss the TLB (each 4 KiB page needs its own TLB entry, a 2 MiB page
 * covers 512 of them). Its pages, as calloc's, cost memory only once
 * written. Free with hr_table_free(p, count, size). */
void *hr_table_calloc(size_t count, size_t size);
void hr_table_free(void *p, size_t count, size_t size);

#endif
