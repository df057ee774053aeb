/* ident.c — the identifier rule of API.md and the decoding of request paths.
 *
 * Identifiers (users, groups, objects, counters, members) are 1..128 bytes of
 * [A-Za-z0-9._:@~-]. Every path parameter is checked against this rule before
 * a handler runs, so handlers and the store never see anything else in a
 * path parameter: no '/', no spaces, no control bytes, no non-ASCII.
 *
 * Paths are decoded here rather than by libmicrohttpd: it percent-decodes the
 * whole path before handing it over, which would turn "/counter/a%2Fb" into
 * three segments. We split the raw path first and decode each segment, so an
 * encoded '/' stays inside its segment (and then fails the identifier rule:
 * 400, not a surprising route), while "%41" is simply "A".
 */
#include <stdint.h>

#include "http/http_internal.h"

/* 1 for the bytes an identifier may hold. */
static const uint8_t ident_byte[256] = {
    ['-'] = 1, ['.'] = 1, ['_'] = 1, [':'] = 1, ['@'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1,
    ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1,
    ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1,
    ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,
    ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1,
    ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
    ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

bool hr_ident_valid(hr_slice s) {
    if (s.len == 0 || s.len > HR_IDENT_MAX || s.ptr == NULL) return false;
    for (size_t i = 0; i < s.len; i++)
        if (!ident_byte[(uint8_t)s.ptr[i]]) return false;
    return true;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode %HH escapes of s[0..n) in place; returns the new length. '+' is not
 * a space in a path (it is only in form-encoded query strings). */
static size_t unescape(char *s, size_t n) {
    size_t w = 0;
    for (size_t r = 0; r < n; r++) {
        int hi, lo;
        if (s[r] == '%' && r + 2 < n && (hi = hexval(s[r + 1])) >= 0 &&
            (lo = hexval(s[r + 2])) >= 0) {
            s[w++] = (char)(hi << 4 | lo);
            r += 2;
        } else {
            s[w++] = s[r];
        }
    }
    return w;
}

int hr_path_split(char *path, hr_slice *segs, size_t max) {
    if (path[0] != '/') return -1;
    if (path[1] == '\0') return 0; /* "/" */
    size_t n = 0;
    char *p = path + 1;
    for (;;) {
        char *end = p;
        while (*end != '\0' && *end != '/') end++;
        bool last = *end == '\0';
        if (n == max) return -1;
        size_t len = unescape(p, (size_t)(end - p));
        p[len] = '\0'; /* overwrites the '/' (or the old NUL), or a byte freed by decoding */
        segs[n++] = hr_slice_of(p, len);
        if (last) break;
        p = end + 1;
    }
    return (int)n;
}
