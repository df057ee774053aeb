/* json_out.c — see json_out.h. */
#include "api/json_out.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

hr_jw hr_jw_start(hr_buf *out) {
    hr_jw w = {.out = out};
    return w;
}

/* Before any value or key: the comma that separates it from the previous
 * item of its level, unless it is the value of a key just written. */
static void item(hr_jw *w) {
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->has_item[w->depth]) hr_buf_append_byte(w->out, ',');
    w->has_item[w->depth] = true;
}

void hr_jw_open(hr_jw *w, char bracket) {
    item(w);
    hr_buf_append_byte(w->out, (uint8_t)bracket);
    if (w->depth < HR_JW_DEPTH) w->depth++;
    w->has_item[w->depth] = false;
}

void hr_jw_close(hr_jw *w, char bracket) {
    hr_buf_append_byte(w->out, (uint8_t)bracket);
    if (w->depth > 0) w->depth--;
}

void hr_jw_key(hr_jw *w, const char *key) {
    item(w);
    hr_buf_append_byte(w->out, '"');
    hr_buf_append_str(w->out, key);
    hr_buf_append(w->out, "\":", 2);
    w->after_key = true;
}

/* s as a JSON string: quoted, escaped as RFC 8259 asks. */
static void append_string(hr_buf *out, hr_slice s) {
    hr_buf_reserve(out, s.len + 2);
    hr_buf_append_byte(out, '"');
    size_t run = 0; /* bytes copied as they are, appended in one go */
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        hr_buf_append(out, s.ptr + run, i - run);
        run = i + 1;
        char esc[8];
        switch (c) {
        case '"': hr_buf_append(out, "\\\"", 2); break;
        case '\\': hr_buf_append(out, "\\\\", 2); break;
        case '\n': hr_buf_append(out, "\\n", 2); break;
        case '\r': hr_buf_append(out, "\\r", 2); break;
        case '\t': hr_buf_append(out, "\\t", 2); break;
        case '\b': hr_buf_append(out, "\\b", 2); break;
        case '\f': hr_buf_append(out, "\\f", 2); break;
        default: snprintf(esc, sizeof esc, "\\u%04X", c); hr_buf_append(out, esc, 6);
        }
    }
    hr_buf_append(out, s.ptr + run, s.len - run);
    hr_buf_append_byte(out, '"');
}

void hr_jw_key_str(hr_jw *w, hr_slice key) {
    item(w);
    append_string(w->out, key);
    hr_buf_append_byte(w->out, ':');
    w->after_key = true;
}

void hr_jw_str(hr_jw *w, hr_slice s) {
    item(w);
    append_string(w->out, s);
}

void hr_jw_int(hr_jw *w, int64_t v) {
    item(w);
    char num[24];
    int n = snprintf(num, sizeof num, "%" PRId64, v);
    hr_buf_append(w->out, num, (size_t)n);
}

void hr_jw_real(hr_jw *w, double v) {
    item(w);
    char num[40];
    int n = snprintf(num, sizeof num, "%.17g", v);
    /* What jansson writes for a real: a '.0' when %g gave an integer (so
     * that it reads back as a real), and no '+' or leading zeros in the
     * exponent (1e+20 -> 1e20, 1e-05 -> 1e-5). */
    char *e = strchr(num, 'e');
    if (e == NULL && strchr(num, '.') == NULL) {
        num[n++] = '.';
        num[n++] = '0';
    } else if (e) {
        char *from = e + 1, *to = e + 1;
        if (*from == '-')
            from = ++to;
        else if (*from == '+')
            from++;
        while (*from == '0' && from[1] != '\0')
            from++;
        memmove(to, from, (size_t)(num + n - from));
        n -= (int)(from - to);
    }
    hr_buf_append(w->out, num, (size_t)n);
}

void hr_jw_bool(hr_jw *w, bool v) {
    item(w);
    hr_buf_append_str(w->out, v ? "true" : "false");
}

void hr_jw_raw(hr_jw *w, hr_slice json) {
    item(w);
    hr_buf_append(w->out, json.ptr, json.len);
}

void hr_jw_page_open(hr_jw *w, const char *key) {
    hr_jw_open(w, '{');
    hr_jw_key(w, key);
    hr_jw_open(w, '[');
}

void hr_jw_page_end(hr_jw *w, const char *next_cursor) {
    hr_jw_close(w, ']');
    if (next_cursor) {
        hr_jw_key(w, "next_cursor");
        hr_jw_str(w, hr_slice_of(next_cursor, strlen(next_cursor)));
    }
}

void hr_jw_page_close(hr_jw *w, const char *next_cursor) {
    hr_jw_page_end(w, next_cursor);
    hr_jw_close(w, '}');
}
