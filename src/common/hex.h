/* hex.h — fixed-width lower-case hex numbers, parsed eight digits at a time.
 *
 * Story ids are 16 lower-case hex digits, and an unseen query turns every
 * candidate of its windows (a thousand or more) into its 64-bit number, so
 * the parse works on eight bytes at once (SWAR) instead of a table lookup a
 * digit. A byte-wise "at least c" is the top bit of byte + (0x80 - c), which
 * cannot carry into the next byte while every byte is below 0x80. */
#ifndef HR_HEX_H
#define HR_HEX_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define HR_HEX_BYTES(b) (0x0101010101010101ull * (uint64_t)(b))
#define HR_HEX_AT_LEAST(x, c) (((x) + HR_HEX_BYTES(0x80 - (c))) & HR_HEX_BYTES(0x80))

/* p[0..8) as a number, the first digit most significant; false unless all
 * eight are '0'-'9' or 'a'-'f'. */
static inline bool hr_hex8(const char *p, uint32_t *out) {
    uint64_t x;
    memcpy(&x, p, sizeof x); /* little-endian: the first digit is the low byte */
    if (x & HR_HEX_BYTES(0x80)) return false;
    uint64_t digit = HR_HEX_AT_LEAST(x, '0') & ~HR_HEX_AT_LEAST(x, '9' + 1);
    uint64_t letter = HR_HEX_AT_LEAST(x, 'a') & ~HR_HEX_AT_LEAST(x, 'f' + 1);
    if ((digit | letter) != HR_HEX_BYTES(0x80)) return false;
    uint64_t nib = (x & HR_HEX_BYTES(0x0f)) + (letter >> 7) * 9; /* each byte: its digit's value */
    /* Pairs of nibbles into bytes, bytes into 16-bit halves, halves into
     * the result, the first digit ending up most significant. */
    uint64_t b = ((nib & 0x000f000f000f000full) << 4) | ((nib >> 8) & 0x000f000f000f000full);
    uint64_t h = ((b & 0x000000ff000000ffull) << 8) | ((b >> 16) & 0x000000ff000000ffull);
    *out = (uint32_t)(((h & 0xffffull) << 16) | ((h >> 32) & 0xffffull));
    return true;
}

/* p[0..16) as a number, as hr_hex8. */
static inline bool hr_hex16(const char *p, uint64_t *out) {
    uint32_t hi, lo;
    if (!hr_hex8(p, &hi) || !hr_hex8(p + 8, &lo)) return false;
    *out = (uint64_t)hi << 32 | lo;
    return true;
}

#undef HR_HEX_AT_LEAST
#undef HR_HEX_BYTES

#endif
