/* url.c — see url.h for the rules and their reasons.
 *
 * One pass, left to right, writing straight into the caller's buffer:
 *
 *   check every byte (length, controls, spaces, backslashes)
 *   scheme     "http://" or "https://", any case
 *   authority  up to the first '/', '?' or '#'; userinfo is everything up to
 *              its last '@' (as browsers split it) and is skipped; the host
 *              is normalised into a small local array and the port parsed.
 *              Everything that can be refused is refused here, before a
 *              byte is written.
 *   path       copied with its escapes normalised, then dot segments removed
 *              and trailing slashes and index documents trimmed, in place
 *              (both steps only shrink it)
 *   query      one parameter at a time: written, its name looked at, taken
 *              back if it is empty or tracking; the '?' is taken back if no
 *              parameter is left
 *   fragment   ignored
 *
 * The order of the steps is what makes canonicalisation idempotent, which
 * matters because canonical URLs are stored and shown, and may come back as
 * input: escapes are decoded before dot segments are removed (else "%2E%2E"
 * would become a ".." that only the next pass removes); trailing slashes and
 * index documents are trimmed until neither applies ("/index.html/" needs
 * both, twice); "www." labels are stripped in a loop; repeated trailing dots
 * and empty labels are refused rather than half-fixed; and the canonical form
 * is held to HR_URL_MAX as the input is, so it is always accepted again.
 *
 * Bounds: every read is of s[i] with i < n checked first; a '%' looks ahead
 * only when i + 2 < n. The host is written into a fixed array with its
 * length checked before each byte. Input is untrusted (it arrives in API
 * bodies), so nothing here may read past the slice or loop without
 * advancing. */
#include "core/url.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>
#include <xxhash.h>

#define HOST_MAX 253 /* a DNS name in text form, without its trailing dot */
#define LABEL_MAX 63
#define IPV6_TEXT_MAX 45 /* INET6_ADDRSTRLEN - 1 */

static const char HEX[] = "0123456789ABCDEF";

/* Tracking parameter names, compared in any case, and the prefixes of
 * whole families of them. See url.h for where they come from. */
/* clang-format off */
static const char *const TRACKING[] = {
    "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "gad_source", "srsltid",
    "msclkid", "yclid", "twclid", "ttclid", "li_fat_id", "_openstat", "epik", "rb_clickid",
    "igshid", "igsh",
    "mc_cid", "mc_eid", "_hsenc", "_hsmi", "mkt_tok",
    "oly_anon_id", "oly_enc_id", "vero_id", "vero_conv", "ml_subscriber", "ml_subscriber_hash", "_kx",
    "ck_subscriber_id", "_bta_tid", "_bta_c", "__s", "wickedid", "s_cid",
    "pk_campaign", "pk_kwd", "pk_keyword", "pk_source", "pk_medium", "pk_content",
    "__hssc", "__hstc", "__hsfp", "hsctatracking",
    "_ga", "_gl", "ref_src", "ref_url",
};
/* clang-format on */
static const char *const TRACKING_PREFIXES[] = {"utm_", "mtm_", "hsa_"};

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool is_alnum(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static unsigned char lower(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* RFC 3986 2.3: the characters whose escapes may be decoded. */
static bool is_unreserved(unsigned char c) {
    return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* Bytes that may not stand raw in a canonical path or query: non-ASCII, and
 * the printable ASCII that RFC 3986 allows nowhere outside a host literal.
 * (Controls and spaces are refused before we get here, '%' is handled by the
 * caller, '#' ends the query, '\' is refused.) */
static bool must_escape(unsigned char c) {
    switch (c) { /* a switch, not strchr: this runs on every byte of a path */
    case '"':
    case '<':
    case '>':
    case '[':
    case ']':
    case '^':
    case '`':
    case '{':
    case '|':
    case '}': return true;
    default: return c >= 0x80;
    }
}

/* Whether the NUL-terminated lit (lower case) starts s[0..n), ignoring
 * ASCII case; *m is lit's length when it does. One pass, no strlen: the
 * tracking-parameter lists are tested against every query parameter, and
 * most names differ at their first byte. */
static bool starts_ci(const char *s, size_t n, const char *lit, size_t *m) {
    size_t i = 0;
    for (; lit[i]; i++)
        if (i == n || lower((unsigned char)s[i]) != (unsigned char)lit[i]) return false;
    *m = i;
    return true;
}

/* ASCII case-insensitive equality of p[0..n) and lit (lower case). */
static bool eq_ci(const char *p, size_t n, const char *lit) {
    size_t m;
    return starts_ci(p, n, lit, &m) && m == n;
}

static bool prefix_ci(const unsigned char *s, size_t n, const char *lit) {
    size_t m;
    return starts_ci((const char *)s, n, lit, &m);
}

static void truncate_to(hr_buf *b, size_t len) {
    b->len = len;
    if (b->data) b->data[len] = '\0';
}

static void put_escape(hr_buf *out, unsigned char v) {
    char e[3] = {'%', HEX[v >> 4], HEX[v & 15]};
    hr_buf_append(out, e, 3);
}

/* Append s[0..n) (a path or one query parameter) with its escapes
 * normalised: escapes of unreserved characters decoded, other escapes
 * upper-cased, a stray '%' written "%25", disallowed bytes escaped. */
static void put_normalised(hr_buf *out, const unsigned char *s, size_t n) {
    hr_buf_reserve(out, 3 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = hi >= 0 ? hexval(s[i + 2]) : -1;
            if (lo < 0) {
                put_escape(out, '%');
                continue;
            }
            unsigned char v = (unsigned char)(hi << 4 | lo);
            if (is_unreserved(v))
                hr_buf_append_byte(out, v);
            else
                put_escape(out, v);
            i += 2;
        } else if (must_escape(c)) {
            put_escape(out, c);
        } else {
            hr_buf_append_byte(out, c);
        }
    }
}

/* RFC 3986 5.2.4 on p[0..n), an absolute path (p[0] == '/'), in place.
 * The output holds whole segments, each after its '/'; the write position
 * never passes the read position, since every segment written was read at
 * or after it. Returns the new length (at least 1). */
static size_t remove_dots(char *p, size_t n) {
    size_t r = 0, w = 0;
    while (r < n) { /* p[r] == '/' */
        size_t s = r + 1, e = s;
        while (e < n && p[e] != '/')
            e++;
        size_t len = e - s;
        bool last = e == n;
        if (len == 1 && p[s] == '.') {
            if (last) p[w++] = '/';
        } else if (len == 2 && p[s] == '.' && p[s + 1] == '.') {
            if (w > 0) { /* drop the last output segment and its '/' */
                w--;
                while (w > 0 && p[w] != '/')
                    w--;
            }
            if (last) p[w++] = '/';
        } else {
            memmove(p + w, p + r, e - r);
            w += e - r;
        }
        r = e;
    }
    if (w == 0) p[w++] = '/';
    return w;
}

static bool is_index(const char *p, size_t n) {
    if (n < 9 || n > 12) return false; /* "index.htm" .. "default.aspx": most last segments */
    static const char *const exact[] = {"index.html", "index.htm", "index.php"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (n == strlen(exact[i]) && memcmp(p, exact[i], n) == 0) return true;
    return eq_ci(p, n, "default.asp") || eq_ci(p, n, "default.aspx");
}

/* Drop trailing slashes and a final index document from the absolute path
 * p[0..n) until neither applies. Returns the new length (at least 1). */
static size_t trim_tail(const char *p, size_t n) {
    for (;;) {
        while (n > 1 && p[n - 1] == '/')
            n--;
        size_t s = n;
        while (s > 0 && p[s - 1] != '/')
            s--;
        if (s == 0 || !is_index(p + s, n - s)) return n;
        n = s; /* keeps the '/' before the document; the loop trims it */
    }
}

static bool is_tracking(const char *name, size_t n) {
    for (size_t i = 0; i < sizeof TRACKING_PREFIXES / sizeof TRACKING_PREFIXES[0]; i++)
        if (prefix_ci((const unsigned char *)name, n, TRACKING_PREFIXES[i])) return true;
    for (size_t i = 0; i < sizeof TRACKING / sizeof TRACKING[0]; i++)
        if (eq_ci(name, n, TRACKING[i])) return true;
    return false;
}

/* A normalised host: at most HOST_MAX bytes plus room for one more, so that
 * "too long" is seen before the array is overrun. */
typedef struct host_text {
    char s[HOST_MAX + 2];
    size_t len;
} host_text;

/* The bracketed IPv6 literal s[0..n) ("[...]") in RFC 5952 form, brackets
 * included. */
static int norm_ipv6(const unsigned char *s, size_t n, const char *what, host_text *h, hr_err *err) {
    if (n < 2 || s[n - 1] != ']' || n - 2 > IPV6_TEXT_MAX)
        return hr_err_set(err, HR_EINVAL, "%s is not a valid IPv6 address", what);
    char in[IPV6_TEXT_MAX + 1];
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = s[i];
        if (hexval(c) < 0 && c != ':' && c != '.')
            return hr_err_set(err, HR_EINVAL, "%s is not a valid IPv6 address", what);
        in[i - 1] = (char)c;
    }
    in[n - 2] = '\0';
    struct in6_addr a;
    char txt[INET6_ADDRSTRLEN];
    if (inet_pton(AF_INET6, in, &a) != 1 || inet_ntop(AF_INET6, &a, txt, sizeof txt) == NULL)
        return hr_err_set(err, HR_EINVAL, "%s is not a valid IPv6 address", what);
    size_t t = strlen(txt);
    h->s[0] = '[';
    memcpy(h->s + 1, txt, t);
    h->s[t + 1] = ']';
    h->len = t + 2;
    return HR_OK;
}

/* The registered name s[0..n): escapes decoded, lower-cased, one trailing
 * dot and leading "www." labels dropped, validated. */
static int norm_name(const unsigned char *s, size_t n, const char *what, host_text *h, hr_err *err) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = hi >= 0 ? hexval(s[i + 2]) : -1;
            if (lo < 0) return hr_err_set(err, HR_EINVAL, "%s has a bad percent-escape", what);
            c = (unsigned char)(hi << 4 | lo);
            i += 2;
        }
        if (c >= 0x80)
            return hr_err_set(err, HR_EINVAL,
                              "%s must be ASCII: send an internationalised domain name "
                              "in its xn-- (punycode) form",
                              what);
        c = lower(c);
        if (!is_alnum(c) && c != '-' && c != '.' && c != '_') {
            if (c > 0x20 && c < 0x7f) return hr_err_set(err, HR_EINVAL, "%s contains '%c'", what, c);
            return hr_err_set(err, HR_EINVAL, "%s contains the byte 0x%02X", what, c);
        }
        if (len > HOST_MAX) return hr_err_set(err, HR_EINVAL, "%s is over %d bytes", what, HOST_MAX);
        h->s[len++] = (char)c;
    }
    if (len > 0 && h->s[len - 1] == '.') len--;
    if (len == 0) return hr_err_set(err, HR_EINVAL, "%s is empty", what);
    if (len > HOST_MAX) return hr_err_set(err, HR_EINVAL, "%s is over %d bytes", what, HOST_MAX);
    for (size_t i = 0;; i++) { /* i: the start of a label */
        size_t e = i;
        while (e < len && h->s[e] != '.')
            e++;
        if (e == i)
            return hr_err_set(err, HR_EINVAL, "%s has an empty label (a leading dot or two dots in a row)",
                              what);
        if (e - i > LABEL_MAX)
            return hr_err_set(err, HR_EINVAL, "%s has a label over %d bytes", what, LABEL_MAX);
        if (e == len) break;
        i = e;
    }
    size_t start = 0;
    while (len - start > 4 && memcmp(h->s + start, "www.", 4) == 0 &&
           memchr(h->s + start + 4, '.', len - start - 4) != NULL)
        start += 4;
    memmove(h->s, h->s + start, len - start);
    h->len = len - start;
    return HR_OK;
}

/* The host s[0..n) into h. what names it in error details: "url host" for
 * the host of a URL, "host" for a bare one. */
static int norm_host(const unsigned char *s, size_t n, const char *what, host_text *h, hr_err *err) {
    if (n == 0) return hr_err_set(err, HR_EINVAL, "%s is empty", what);
    if (s[0] == '[') return norm_ipv6(s, n, what, h, err);
    return norm_name(s, n, what, h, err);
}

/* The port s[0..n): 0 when empty or a default port, else 1..65535. */
static int parse_port(const unsigned char *s, size_t n, unsigned *port, hr_err *err) {
    unsigned long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') goto bad;
        v = v * 10 + (unsigned)(s[i] - '0');
        if (v > 65535) goto bad;
    }
    if (n > 0 && v == 0) goto bad;
    *port = v == 80 || v == 443 ? 0 : (unsigned)v;
    return HR_OK;
bad:
    return hr_err_set(err, HR_EINVAL, "url port must be a number from 1 to 65535");
}

/* Bytes refused anywhere in a URL. */
static int check_bytes(const unsigned char *s, size_t n, hr_err *err) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c < 0x20 || c == 0x7f)
            return hr_err_set(err, HR_EINVAL, "url contains a control character (byte 0x%02X at offset %zu)",
                              c, i);
        if (c == ' ')
            return hr_err_set(err, HR_EINVAL, "url contains a space at offset %zu (send it as %%20)", i);
        if (c == '\\') return hr_err_set(err, HR_EINVAL, "url contains a backslash at offset %zu", i);
    }
    return HR_OK;
}

int hr_url_canonical(hr_slice url, hr_buf *out, hr_err *err) {
    const unsigned char *s = (const unsigned char *)url.ptr;
    size_t n = url.len;
    if (n == 0) return hr_err_set(err, HR_EINVAL, "url is empty");
    if (n > HR_URL_MAX) return hr_err_set(err, HR_EINVAL, "url is over %d bytes", HR_URL_MAX);
    int rc = check_bytes(s, n, err);
    if (rc != HR_OK) return rc;

    size_t i;
    if (prefix_ci(s, n, "https://"))
        i = 8;
    else if (prefix_ci(s, n, "http://"))
        i = 7;
    else
        return hr_err_set(err, HR_EINVAL, "url must start with http:// or https://");

    /* Authority: [userinfo@]host[:port], up to the first '/', '?' or '#'. */
    size_t auth_end = i;
    while (auth_end < n && s[auth_end] != '/' && s[auth_end] != '?' && s[auth_end] != '#')
        auth_end++;
    size_t hs = i;
    for (size_t k = i; k < auth_end; k++)
        if (s[k] == '@') hs = k + 1;
    size_t he = hs;
    if (he < auth_end && s[he] == '[') {
        while (he < auth_end && s[he] != ']')
            he++;
        if (he == auth_end) return hr_err_set(err, HR_EINVAL, "url host has '[' without ']'");
        he++;
        if (he < auth_end && s[he] != ':')
            return hr_err_set(err, HR_EINVAL, "url host has characters after its IPv6 address");
    } else {
        while (he < auth_end && s[he] != ':')
            he++;
    }
    host_text host;
    if (he == hs) return hr_err_set(err, HR_EINVAL, "url has no host");
    rc = norm_host(s + hs, he - hs, "url host", &host, err);
    if (rc != HR_OK) return rc;
    unsigned port = 0;
    if (he < auth_end) {
        rc = parse_port(s + he + 1, auth_end - he - 1, &port, err);
        if (rc != HR_OK) return rc;
    }

    /* Nothing below can fail but the final length check. */
    size_t start = out->len;
    hr_buf_append(out, "https://", 8);
    hr_buf_append(out, host.s, host.len);
    if (port) hr_buf_printf(out, ":%u", port);

    size_t path_end = auth_end;
    while (path_end < n && s[path_end] != '?' && s[path_end] != '#')
        path_end++;
    size_t pb = out->len;
    if (path_end > auth_end)
        put_normalised(out, s + auth_end, path_end - auth_end); /* starts with '/' */
    else
        hr_buf_append_byte(out, '/');
    size_t plen = remove_dots(out->data + pb, out->len - pb);
    plen = trim_tail(out->data + pb, plen);
    truncate_to(out, pb + plen);

    if (path_end < n && s[path_end] == '?') {
        size_t q = path_end + 1, q_end = q;
        while (q_end < n && s[q_end] != '#')
            q_end++;
        size_t qmark = out->len;
        hr_buf_append_byte(out, '?');
        while (q <= q_end) {
            size_t e = q;
            while (e < q_end && s[e] != '&')
                e++;
            if (e > q) {
                size_t mark = out->len;
                if (mark > qmark + 1) hr_buf_append_byte(out, '&');
                size_t name = out->len;
                put_normalised(out, s + q, e - q);
                const char *eq = memchr(out->data + name, '=', out->len - name);
                size_t name_len = eq ? (size_t)(eq - (out->data + name)) : out->len - name;
                if (is_tracking(out->data + name, name_len)) truncate_to(out, mark);
            }
            q = e + 1;
        }
        if (out->len == qmark + 1) truncate_to(out, qmark);
    }

    if (out->len - start > HR_URL_MAX) {
        truncate_to(out, start);
        return hr_err_set(err, HR_EINVAL, "url is over %d bytes once normalised", HR_URL_MAX);
    }
    return HR_OK;
}

int hr_url_canonical_host(hr_slice host, hr_buf *out, hr_err *err) {
    const unsigned char *s = (const unsigned char *)host.ptr;
    size_t n = host.len;
    if (n > HR_URL_MAX) return hr_err_set(err, HR_EINVAL, "host is over %d bytes", HOST_MAX);
    host_text h;
    int rc = norm_host(s, n, "host", &h, err);
    if (rc != HR_OK) return rc;
    hr_buf_append(out, h.s, h.len);
    return HR_OK;
}

hr_slice hr_url_host(hr_slice c) {
    if (c.len < 8 || memcmp(c.ptr, "https://", 8) != 0) return hr_slice_of(NULL, 0);
    size_t i = 8;
    if (i < c.len && c.ptr[i] == '[') {
        while (i < c.len && c.ptr[i] != ']')
            i++;
        if (i < c.len) i++;
    } else {
        while (i < c.len && c.ptr[i] != ':' && c.ptr[i] != '/' && c.ptr[i] != '?')
            i++;
    }
    return hr_slice_of(c.ptr + 8, i - 8);
}

uint64_t hr_url_hash(hr_slice canonical) {
    return XXH3_64bits(canonical.ptr, canonical.len);
}
