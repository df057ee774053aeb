/* ident.c — the decoding of request paths.
 *
 * Every path parameter is checked against the identifier rule
 * (common/ident.h) before a handler runs, so handlers and the store never
 * see anything else in a path parameter: no '/', no spaces, no control
 * bytes, no non-ASCII.
 *
 * Paths are decoded here rather than by libmicrohttpd: it percent-decodes the
 * whole path before handing it over, which would turn "/counter/a%2Fb" into
 * three segments. We split the raw path first and decode each segment, so an
 * encoded '/' stays inside its segment (and then fails the identifier rule:
 * 400, not a surprising route), while "%41" is simply "A".
 */
#include <stdint.h>

#include "http/http_internal.h"

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
        if (s[r] == '%' && r + 2 < n && (hi = hexval(s[r + 1])) >= 0 && (lo = hexval(s[r + 2])) >= 0) {
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
        while (*end != '\0' && *end != '/')
            end++;
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
