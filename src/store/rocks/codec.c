/* rocks/codec.c — the byte layouts of the RocksDB backend: metadata records,
 * sub-key prefixes and order-preserving scores. The layouts are drawn at the
 * top of rocks/engine.c; this file is their single implementation, so that a change
 * of format is a change here.
 *
 * All integers are fixed-width big-endian: in keys that makes byte order
 * numeric order, and in values it keeps one convention. Signed 64-bit values
 * (expiry, counters, times) are stored as their two's complement bits. */
#include <math.h>
#include <string.h>

#include "store/rocks/codec.h"

void append_u64(hr_buf *out, uint64_t v) {
    hr_buf_append_u64be(out, v);
}
uint64_t load_u64(const void *p) {
    return hr_load_u64be(p);
}

/* Metadata ----------------------------------------------------------------- */

enum { HEADER = 1 + 8 }; /* type, expire_at */

void meta_encode(const rmeta *m, hr_buf *out) {
    hr_buf_append_byte(out, m->type);
    append_u64(out, (uint64_t)m->expire_at);
    switch (m->type) {
    case T_STRING: hr_buf_append_slice(out, m->value); break;
    case T_COUNTER: append_u64(out, (uint64_t)m->counter); break;
    case T_ZSET:
        append_u64(out, m->version);
        append_u64(out, m->size);
        if (m->zflags) hr_buf_append_byte(out, m->zflags); /* absent: 0 */
        if (m->zflags & ZF_INLINE) hr_buf_append_slice(out, m->zinline);
        break;
    case T_DISTINCT:
        append_u64(out, m->version);
        append_u64(out, m->size);
        hr_buf_append_byte(out, m->mode);
        append_u64(out, (uint64_t)m->ttl);
        append_u64(out, (uint64_t)m->width);
        append_u64(out, (uint64_t)m->oldest);
        break;
    case T_PSET:
        append_u64(out, m->version);
        append_u64(out, m->size);
        append_u64(out, m->seed);
        append_u64(out, (uint64_t)m->soonest);
        append_u64(out, (uint64_t)m->latest);
        append_u64(out, m->forever);
        hr_buf_append_byte(out, m->bits);
        break;
    }
}

int meta_decode(hr_slice raw, rmeta *m) {
    memset(m, 0, sizeof *m);
    const unsigned char *p = (const unsigned char *)raw.ptr;
    if (raw.len < HEADER) return -1;
    m->type = p[0];
    m->expire_at = (int64_t)load_u64(p + 1);
    p += HEADER;
    size_t rest = raw.len - HEADER;
    switch (m->type) {
    case T_STRING: m->value = hr_slice_of((const char *)p, rest); return 0;
    case T_COUNTER:
        if (rest != 8) return -1;
        m->counter = (int64_t)load_u64(p);
        return 0;
    case T_ZSET:
        if (rest < 16) return -1;
        m->version = load_u64(p);
        m->size = load_u64(p + 8);
        m->zflags = rest > 16 ? p[16] : 0;
        if (m->zflags & ZF_INLINE)
            m->zinline = hr_slice_of((const char *)p + 17, rest - 17);
        else if (rest > 17)
            return -1;
        return 0;
    case T_DISTINCT:
        if (rest != 16 + 1 + 24) return -1;
        m->version = load_u64(p);
        m->size = load_u64(p + 8);
        m->mode = p[16];
        m->ttl = (int64_t)load_u64(p + 17);
        m->width = (int64_t)load_u64(p + 25);
        m->oldest = (int64_t)load_u64(p + 33);
        if (m->mode == D_SKETCH) return m->width > 0 ? 0 : -1; /* W divides times */
        return m->mode == D_EXACT ? 0 : -1;
    case T_PSET:
        if (rest != 6 * 8 + 1) return -1;
        m->version = load_u64(p);
        m->size = load_u64(p + 8);
        m->seed = load_u64(p + 16);
        m->soonest = (int64_t)load_u64(p + 24);
        m->latest = (int64_t)load_u64(p + 32);
        m->forever = load_u64(p + 40);
        m->bits = p[48];
        return m->bits <= PSET_MAX_BITS ? 0 : -1;
    default: return -1;
    }
}

/* Sub-keys ------------------------------------------------------------------ */

void key_prefix(hr_buf *out, hr_slice key, uint64_t version) {
    unsigned char len[2] = {(unsigned char)(key.len >> 8), (unsigned char)key.len};
    hr_buf_append(out, len, 2);
    hr_buf_append_slice(out, key);
    append_u64(out, version);
}

void key_prefix_end(hr_buf *out, hr_slice key, uint64_t version) {
    /* Versions come from a counter seeded with the clock: never UINT64_MAX. */
    key_prefix(out, key, version + 1);
}

int key_parse(hr_slice sub, hr_slice *key, uint64_t *version, hr_slice *rest) {
    const unsigned char *p = (const unsigned char *)sub.ptr;
    if (sub.len < 2) return -1;
    size_t klen = ((size_t)p[0] << 8) | p[1];
    if (klen == 0 || sub.len < 2 + klen + 8) return -1;
    *key = hr_slice_of(sub.ptr + 2, klen);
    *version = load_u64(p + 2 + klen);
    *rest = hr_slice_of(sub.ptr + 2 + klen + 8, sub.len - 2 - klen - 8);
    return 0;
}

/* Scores --------------------------------------------------------------------
 *
 * IEEE-754 doubles compare like sign-magnitude integers. Setting the sign bit
 * of a positive number and flipping every bit of a negative one turns that
 * into unsigned order:
 *
 *   -inf -> 0x000fffffffffffff   -1.0 -> 0x400fffffffffffff
 *    0.0 -> 0x8000000000000000    1.0 -> 0xbff0000000000000   +inf -> 0xfff0000000000000
 *
 * -0.0 is folded into 0.0 first, so that equal scores have equal bytes. */
uint64_t score_encode(double d) {
    if (d == 0.0) d = 0.0;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return (u & (UINT64_C(1) << 63)) ? ~u : u | (UINT64_C(1) << 63);
}

double score_decode(uint64_t u) {
    u = (u & (UINT64_C(1) << 63)) ? u & ~(UINT64_C(1) << 63) : ~u;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
