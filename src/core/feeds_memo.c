/* feeds_memo.c — home timelines' first pages kept in memory (memo.h), for
 * feeds.c only (feeds_memo.h says why it stands apart from the feeds).
 *
 * WHY. A home page of 20 costs three store round trips: the reader's
 * timeline and big accounts, the big accounts' feeds, the bodies. At
 * 100 000 users its timeline read seeks a store much larger than RocksDB's
 * block cache, which costs several times the HTTP request around it
 * (docs/DESIGN.md, "Measured decisions"). Readers come back to the same
 * first page far more often than it changes, so it is kept, as the page
 * the reads made, and answered from memory until a key it was read from is
 * written (or an entry it shows, or the next one, expires).
 *
 * WHAT IS KEPT: the page as read_page made it (each item's id and body as
 * stored, and the next cursor), with the stamps of every key read for it:
 * the timeline, the reader's big accounts, their feeds, the bodies. Only a
 * first page (no cursor, offset or bounds) read in one round: one that had
 * to read on past deleted activities is not kept.
 *
 * VALUE: u32 items, u32 cursor length, the cursor, then per item its id
 * (HR_ACTIVITY_ID_LEN bytes), u32 body length and the body, u32 length and
 * its reactions' counts (core/reaction_store.h, hr_rs_counts_encode). The
 * counts' keys are stamped with the rest: a reaction drops the page. */
#include "core/feeds_memo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "core/reaction_store.h"

static hr_slice memo_key(hr_slice uid, size_t limit, hr_buf *k) {
    char digits[24];
    int n = snprintf(digits, sizeof digits, "/%zu", limit);
    hr_buf_clear(k);
    hr_buf_append_slice(k, uid);
    hr_buf_append(k, digits, (size_t)n);
    return hr_buf_slice(k);
}

static uint32_t read_u32(const char **p) {
    uint32_t v;
    memcpy(&v, *p, sizeof v);
    *p += sizeof v;
    return v;
}

static void append_u32(hr_buf *b, size_t v) {
    uint32_t u = (uint32_t)v;
    hr_buf_append(b, &u, sizeof u);
}

bool hr_page_memo_get(hr_memo *pages, hr_slice uid, size_t limit, int64_t now_ms, hr_arena *a,
                      hr_activity **items, size_t *n_items, const char **next_cursor) {
    hr_buf k = HR_BUF_INIT;
    hr_slice v;
    bool hit = hr_memo_get(pages, memo_key(uid, limit, &k), now_ms, a, &v);
    hr_buf_free(&k);
    if (!hit) return false;
    /* Made by hr_page_memo_put from bodies that decoded once: they decode. */
    const char *p = v.ptr;
    size_t n = read_u32(&p), cursor_len = read_u32(&p);
    *next_cursor = cursor_len ? hr_arena_strndup(a, p, cursor_len) : NULL;
    p += cursor_len;
    *items = hr_arena_alloc(a, (n ? n : 1) * sizeof **items);
    *n_items = 0;
    for (size_t i = 0; i < n; i++) {
        hr_slice id = hr_slice_of(p, HR_ACTIVITY_ID_LEN);
        p += HR_ACTIVITY_ID_LEN;
        size_t len = read_u32(&p);
        bool tomb;
        hr_err err = {0};
        if (hr_activity_decode(id, hr_slice_of(p, len), a, &(*items)[*n_items], &tomb, &err) != HR_OK || tomb)
            return false; /* cannot happen; the caller reads the store */
        p += len;
        size_t counts_len = read_u32(&p);
        hr_rs_counts_decode(hr_slice_of(p, counts_len), a, &(*items)[*n_items]);
        p += counts_len;
        (*n_items)++;
    }
    return true;
}

void hr_page_memo_begin(hr_page_memo *pm, hr_store *store) {
    *pm = (hr_page_memo){.on = true, .store = store, .end_ms = INT64_MAX, .items = HR_BUF_INIT};
}

void hr_page_memo_stamp(hr_page_memo *pm, hr_slice key) {
    if (!pm->on) return;
    if (pm->n == pm->cap) {
        pm->cap = pm->cap ? 2 * pm->cap : 32;
        pm->stamps = hr_xrealloc(pm->stamps, pm->cap * sizeof *pm->stamps);
    }
    pm->stamps[pm->n++] = hr_store_stamp(pm->store, key);
}

void hr_page_memo_entry(hr_page_memo *pm, int64_t expiry_ms) {
    if (expiry_ms && expiry_ms < pm->end_ms) pm->end_ms = expiry_ms;
}

void hr_page_memo_item(hr_page_memo *pm, hr_slice id, hr_slice body, const hr_activity *act) {
    if (!pm->on) return;
    hr_buf_append_slice(&pm->items, id);
    append_u32(&pm->items, body.len);
    hr_buf_append_slice(&pm->items, body);
    size_t at = pm->items.len;
    append_u32(&pm->items, 0);
    hr_rs_counts_encode(act, &pm->items);
    uint32_t counts_len = (uint32_t)(pm->items.len - at - 4);
    memcpy(pm->items.data + at, &counts_len, sizeof counts_len);
}

void hr_page_memo_put(hr_memo *pages, hr_slice uid, size_t limit, const hr_page_memo *pm, size_t n,
                      const char *next_cursor) {
    if (!pm->on) return;
    hr_buf k = HR_BUF_INIT, v = HR_BUF_INIT;
    size_t cursor_len = next_cursor ? strlen(next_cursor) : 0;
    append_u32(&v, n);
    append_u32(&v, cursor_len);
    hr_buf_append(&v, next_cursor, cursor_len);
    hr_buf_append_slice(&v, hr_buf_slice(&pm->items));
    hr_memo_put(pages, memo_key(uid, limit, &k), hr_buf_slice(&v), pm->stamps, pm->n, pm->end_ms);
    hr_buf_free(&k);
    hr_buf_free(&v);
}

void hr_page_memo_end(hr_page_memo *pm) {
    free(pm->stamps);
    hr_buf_free(&pm->items);
    *pm = (hr_page_memo){0};
}
