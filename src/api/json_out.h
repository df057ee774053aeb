/* json_out.h — writing a JSON answer straight into a buffer.
 *
 * Most answers are built as jansson objects and dumped (api/json.h reads,
 * hr_reply_json writes). A feed page is the exception: twenty activities,
 * each holding `data` that is stored as JSON text already. Building it with
 * jansson meant parsing every stored `data` back into objects, allocating a
 * node per field and dumping it all again: jansson and the allocations
 * behind it were most of the server's CPU on a timeline page (docs/DESIGN.md,
 * "Measured decisions"). This writer appends the text directly and copies
 * stored JSON verbatim.
 *
 * Usage:
 *
 *   hr_jw w = hr_jw_start(&buf);
 *   hr_jw_open(&w, '{');
 *   hr_jw_key(&w, "id"); hr_jw_str(&w, id);
 *   hr_jw_key(&w, "n");  hr_jw_int(&w, 3);
 *   hr_jw_close(&w, '}');
 *
 * Commas are placed by the writer. Strings are escaped as RFC 8259 asks
 * (quote, backslash and control characters) and otherwise copied as UTF-8,
 * which is what jansson writes too. The caller keeps the structure well
 * formed (a key before each member's value, closes matching opens); nesting
 * is limited to HR_JW_DEPTH levels. */
#ifndef HR_API_JSON_OUT_H
#define HR_API_JSON_OUT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/slice.h"

#define HR_JW_DEPTH 16

typedef struct hr_jw {
    hr_buf *out;
    int depth;
    bool after_key;                 /* the next value follows "key": */
    bool has_item[HR_JW_DEPTH + 1]; /* per level: a comma goes before the next item */
} hr_jw;

hr_jw hr_jw_start(hr_buf *out);
void hr_jw_open(hr_jw *w, char bracket);    /* '{' or '[' */
void hr_jw_close(hr_jw *w, char bracket);   /* '}' or ']' */
void hr_jw_key(hr_jw *w, const char *key);  /* key: plain ASCII, not escaped */
void hr_jw_key_str(hr_jw *w, hr_slice key); /* any text: escaped as hr_jw_str */
void hr_jw_str(hr_jw *w, hr_slice s);
void hr_jw_int(hr_jw *w, int64_t v);
void hr_jw_bool(hr_jw *w, bool v);
void hr_jw_real(hr_jw *w, double v); /* finite; written as jansson writes a real */
/* The envelope of a page of items, {"KEY":[ ... ],"next_cursor":"C"}: open
 * writes up to the '[', close from the ']' on (no next_cursor when NULL). */
void hr_jw_page_open(hr_jw *w, const char *key);
void hr_jw_page_close(hr_jw *w, const char *next_cursor);
/* close without the final '}', for a page with more members after its
 * cursor (an enriched page's "included"). */
void hr_jw_page_end(hr_jw *w, const char *next_cursor);
/* A value that is JSON text already (stored compact by herald itself). */
void hr_jw_raw(hr_jw *w, hr_slice json);

#endif
