/* rocks/zset_inline.c — small sorted sets kept inside their metadata record.
 *
 * WHY. A range read of a sorted set on disk is an iterator seek into every
 * file that may hold part of it, and those seeks were most of a
 * friends-reads query over 100 long-tail URLs (each read by one or two
 * users). Its metadata record is read anyway, by the batch's one MultiGet.
 * So a set of at most ZINLINE_MAX_ENTRIES members (and ZINLINE_MAX_BYTES of
 * entries) keeps them in that record, as Redis keeps small sets in one
 * listpack: a range read, a score lookup, a size are then answered from the
 * record the batch already holds.
 *
 * LAYOUT (rocks/engine.c draws the record): after the flags byte (ZF_INLINE), the
 * entries, each | u64 score (encoded) | u16 member length | member bytes |,
 * in (score, member) order, the order of the "zindex" keys. The set has no
 * sub-keys at all while inline.
 *
 * LIFE. A new sorted set starts inline (unless sets are kept in memory,
 * rocks/zset_memory.c). The write that would take it past a limit spills it: every
 * entry goes to "subkeys" and "zindex" under the set's version, and the flag
 * goes; it stays on disk while it exists (shrinking back would need a range
 * read of a big set on a write). A set that empties or expires is gone, and
 * the next write starts a fresh, inline one. Stores written before this
 * format have no ZF_INLINE flag and are read as before.
 *
 * Every change rewrites the whole record (at most ~2 KiB); writes to one set
 * are serialised by its stripe lock (rocks/engine.c), so the rewrite loses nothing. */
#include <string.h>

#include "store/rocks/zset.h"

enum { ENTRY_HEAD = 8 + 2 }; /* score, member length */

/* The entry at *pos of all: its score and member; advances *pos. False at
 * the end, or at a truncated entry (a corrupt record ends the walk). */
static bool entry_next(hr_slice all, size_t *pos, uint64_t *enc, hr_slice *member) {
    if (*pos + ENTRY_HEAD > all.len) return false;
    const unsigned char *p = (const unsigned char *)all.ptr + *pos;
    size_t len = (size_t)p[8] << 8 | p[9];
    if (*pos + ENTRY_HEAD + len > all.len) return false;
    *enc = load_u64(p);
    *member = hr_slice_of((const char *)p + ENTRY_HEAD, len);
    *pos += ENTRY_HEAD + len;
    return true;
}

/* (enc, member) against another entry: the order of the zindex keys. */
static int entry_cmp(uint64_t enc, hr_slice member, uint64_t enc2, hr_slice member2) {
    if (enc != enc2) return enc < enc2 ? -1 : 1;
    return hr_slice_cmp(member, member2);
}

void zi_append(hr_buf *out, uint64_t enc, hr_slice member) {
    append_u64(out, enc);
    hr_buf_append_byte(out, (uint8_t)(member.len >> 8));
    hr_buf_append_byte(out, (uint8_t)member.len);
    hr_buf_append_slice(out, member);
}

bool zi_find(hr_slice all, hr_slice member, uint64_t *enc) {
    size_t pos = 0;
    uint64_t e;
    hr_slice m;
    while (entry_next(all, &pos, &e, &m))
        if (hr_slice_eq(m, member)) {
            *enc = e;
            return true;
        }
    return false;
}

bool zi_fits(size_t entries, size_t bytes) {
    return entries <= ZINLINE_MAX_ENTRIES && bytes <= ZINLINE_MAX_BYTES;
}

size_t zi_entry_bytes(hr_slice member) {
    return member.len <= UINT16_MAX ? ENTRY_HEAD + member.len : ZINLINE_MAX_BYTES + 1;
}

hr_slice zi_with(hr_arena *mem, hr_slice all, hr_slice member, bool removed, uint64_t enc) {
    hr_buf out = HR_BUF_INIT;
    size_t pos = 0;
    uint64_t e;
    hr_slice m;
    bool placed = removed;
    while (entry_next(all, &pos, &e, &m)) {
        if (hr_slice_eq(m, member)) continue; /* its old place */
        if (!placed && entry_cmp(enc, member, e, m) < 0) {
            zi_append(&out, enc, member);
            placed = true;
        }
        zi_append(&out, e, m);
    }
    if (!placed) zi_append(&out, enc, member);
    hr_slice copy = hr_arena_copy(mem, hr_buf_slice(&out));
    hr_buf_free(&out);
    return copy;
}

void zi_spill(rx *x, hr_slice key, rmeta *m) {
    size_t pos = 0;
    uint64_t e;
    hr_slice member;
    while (entry_next(m->zinline, &pos, &e, &member))
        zs_write_as(x, key, m, member, false, 0, e);
    m->zflags &= (uint8_t)~ZF_INLINE;
    m->zinline = hr_slice_of("", 0);
}

/* Whether (enc, member) lies strictly past the cursor "enc | member". */
static bool past_cursor(uint64_t enc, hr_slice member, const hr_slice *after, bool reverse) {
    if (after == NULL) return true;
    int c = entry_cmp(enc, member, load_u64(after->ptr), hr_slice_of(after->ptr + 8, after->len - 8));
    return reverse ? c < 0 : c > 0;
}

void zi_walk(hr_arena *mem, hr_slice all, bool reverse, double min, double max, const hr_slice *after,
             zs_visit visit, void *ctx) {
    if (min > max) return;
    uint64_t emin = score_encode(min), emax = score_encode(max);
    size_t n = 0, pos = 0, start = 0;
    uint64_t e;
    hr_slice m;
    if (!reverse) { /* one pass: a friend list of 450 is read this way on every friends-reads */
        while (entry_next(all, &pos, &e, &m)) {
            if (e > emax) return;
            if (e < emin || !past_cursor(e, m, after, false)) continue;
            if (!visit(ctx, e, m)) return;
        }
        return;
    }
    /* The entries' offsets, so that a reverse walk can go back. */
    size_t *at = hr_arena_alloc(mem, (all.len / ENTRY_HEAD + 1) * sizeof *at);
    while (entry_next(all, &pos, &e, &m)) {
        at[n++] = start;
        start = pos;
    }
    for (size_t i = n; i-- > 0;) {
        size_t p = at[i];
        entry_next(all, &p, &e, &m);
        if (e < emin) return;
        if (e > emax || !past_cursor(e, m, after, true)) continue;
        if (!visit(ctx, e, m)) return;
    }
}
