/* feeds_memo.h — home timelines' first pages kept in memory, for feeds.c
 * (the why and the value's layout: feeds_memo.c).
 *
 * It works on the memo (memo.h) the feeds own and on the page being read,
 * and knows nothing of the feeds object or their keys: feeds.c decides
 * which pages are kept (a home timeline's first page, with a memo) and
 * when an entry expires, and calls in here; nothing here calls feeds.c.
 * (It once took the feeds object through feeds_internal.h and called back
 * into feeds.c for the expiry, a loop.) */
#ifndef HR_FEEDS_MEMO_H
#define HR_FEEDS_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/slice.h"
#include "core/activity.h"
#include "core/memo.h"
#include "store/store.h"

/* A page being read that may be kept: the stamps of the keys read for it,
 * taken before each read, when the oldest entry it read expires, and its
 * items. on false: not to be kept (then the calls below do nothing, and
 * store may be NULL). */
typedef struct hr_page_memo {
    bool on;
    hr_store *store; /* whose stamps (borrowed) */
    hr_stamp *stamps;
    size_t n, cap;
    int64_t end_ms;
    hr_buf items;
} hr_page_memo;

/* The kept first page of `limit` of uid's home timeline in pages (borrowed,
 * not NULL), if it still holds at now_ms: its items (decoded into a, the
 * array too), their count and its next cursor (NULL on the last page).
 * false: not kept, or no longer; the outputs are then to be ignored. */
bool hr_page_memo_get(hr_memo *pages, hr_slice uid, size_t limit, int64_t now_ms, hr_arena *a,
                      hr_activity **items, size_t *n, const char **next_cursor);
/* Start a page read over store (borrowed: it must outlive pm's use). */
void hr_page_memo_begin(hr_page_memo *pm, hr_store *store);
/* Before key (borrowed) is read for the page. */
void hr_page_memo_stamp(hr_page_memo *pm, hr_slice key);
/* An entry the page's reads returned, shown or not, that expires at
 * expiry_ms (0: never): the page holds until the oldest of them expires. */
void hr_page_memo_entry(hr_page_memo *pm, int64_t expiry_ms);
/* An item shown, with its body as stored (both copied) and its reactions'
 * counts as act holds them, in page order. */
void hr_page_memo_item(hr_page_memo *pm, hr_slice id, hr_slice body, const hr_activity *act);
/* Keep the page read, of n items (those given to hr_page_memo_item) and
 * next_cursor (borrowed; NULL: the last page), as uid's first page of
 * `limit` in pages, unless pm was turned off on the way. */
void hr_page_memo_put(hr_memo *pages, hr_slice uid, size_t limit, const hr_page_memo *pm, size_t n,
                      const char *next_cursor);
/* Free what pm holds; pm may be begun again. */
void hr_page_memo_end(hr_page_memo *pm);

#endif
