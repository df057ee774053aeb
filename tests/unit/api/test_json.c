/* Unit tests of api/json: every rejection names the field. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "api/json.h"
#include "api/json_out.h"

static json_t *parse(const char *text) {
    json_t *o = NULL;
    cr_assert_eq(hr_json_parse_object(hr_slice_str(text), &o, NULL), HR_OK, "%s", text);
    return o;
}

Test(json, parse_errors) {
    json_t *o = NULL;
    hr_err err = {0};
    cr_assert_eq(hr_json_parse_object(hr_slice_str(""), &o, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "empty"));
    cr_assert_eq(hr_json_parse_object(hr_slice_str("{\"a\":"), &o, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "not valid JSON"), "%s", err.msg);
    cr_assert_eq(hr_json_parse_object(hr_slice_str("[1,2]"), &o, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "object"));
    cr_assert_eq(hr_json_parse_object(hr_slice_str("{\"a\":1,\"a\":2}"), &o, &err), HR_EINVAL);
    cr_assert_null(o);
}

Test(json, int_fields) {
    json_t *o = parse("{\"n\": 5, \"s\": \"x\", \"big\": 99}");
    int64_t v = -1;
    bool present;
    hr_err err = {0};
    cr_assert_eq(hr_json_int_field(o, "n", true, 1, 10, &v, &present, &err), HR_OK);
    cr_assert_eq(v, 5);
    cr_assert(present);
    cr_assert_eq(hr_json_int_field(o, "missing", false, 1, 10, &v, &present, &err), HR_OK);
    cr_assert_not(present);
    cr_assert_eq(v, 5);
    cr_assert_eq(hr_json_int_field(o, "missing", true, 1, 10, &v, NULL, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "missing is required"));
    cr_assert_eq(hr_json_int_field(o, "s", true, 1, 10, &v, NULL, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "s must be an integer"), "%s", err.msg);
    cr_assert_eq(hr_json_int_field(o, "big", true, 1, 10, &v, NULL, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "big must be 1..10"), "%s", err.msg);
    json_decref(o);
}

Test(json, only_fields) {
    json_t *o = parse("{\"ttl_ms\": 5, \"ttl\": 3}");
    static const char *const allowed[] = {"ttl_ms", "exact_limit", NULL};
    hr_err err = {0};
    cr_assert_eq(hr_json_only_fields(o, allowed, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "'ttl'"), "%s", err.msg);
    json_decref(o);
}

Test(json, ident_arrays) {
    hr_arena a = HR_ARENA_INIT;
    hr_slice *items;
    size_t n;
    hr_err err = {0};
    json_t *o = parse("{\"objects\": [\"a\", \"b:c\", \"d.e-f\"]}");
    cr_assert_eq(hr_json_ident_array(o, "objects", 10, &a, &items, &n, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(n, 3);
    cr_assert(hr_slice_eq(items[1], hr_slice_str("b:c")));
    cr_assert_eq(hr_json_ident_array(o, "objects", 2, &a, &items, &n, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "1..2"), "%s", err.msg);
    json_decref(o);

    o = parse("{\"objects\": [\"ok\", \"bad id\"]}");
    cr_assert_eq(hr_json_ident_array(o, "objects", 10, &a, &items, &n, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "objects[1]"), "%s", err.msg);
    json_decref(o);
    o = parse("{\"objects\": [1]}");
    cr_assert_eq(hr_json_ident_array(o, "objects", 10, &a, &items, &n, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "objects[0] must be a string"), "%s", err.msg);
    json_decref(o);
    o = parse("{\"objects\": []}");
    cr_assert_eq(hr_json_ident_array(o, "objects", 10, &a, &items, &n, &err), HR_EINVAL);
    json_decref(o);
    o = parse("{\"objects\": \"a\"}");
    cr_assert_eq(hr_json_ident_array(o, "objects", 10, &a, &items, &n, &err), HR_EINVAL);
    json_decref(o);
    hr_arena_free(&a);
}

/* ---- api/json_out: the writer feed pages are rendered with ---- */

/* What w wrote, as a C string (the buffer is not NUL-terminated by it). */
static const char *written(hr_buf *b) {
    hr_buf_append_byte(b, '\0');
    b->len--;
    return b->data;
}

Test(json_out, commas_nesting_and_raw_values) {
    hr_buf b = HR_BUF_INIT;
    hr_jw w = hr_jw_start(&b);
    hr_jw_open(&w, '{');
    hr_jw_key(&w, "a");
    hr_jw_int(&w, -12);
    hr_jw_key(&w, "list");
    hr_jw_open(&w, '[');
    hr_jw_str(&w, hr_slice_str("x"));
    hr_jw_open(&w, '{');
    hr_jw_close(&w, '}');
    hr_jw_raw(&w, hr_slice_str("{\"k\":[1,2]}"));
    hr_jw_bool(&w, false);
    hr_jw_close(&w, ']');
    hr_jw_key(&w, "empty");
    hr_jw_open(&w, '[');
    hr_jw_close(&w, ']');
    hr_jw_key(&w, "t");
    hr_jw_bool(&w, true);
    hr_jw_close(&w, '}');
    cr_assert_str_eq(written(&b),
                     "{\"a\":-12,\"list\":[\"x\",{},{\"k\":[1,2]},false],\"empty\":[],\"t\":true}");
    hr_buf_free(&b);
}

/* Reals come out as jansson's json_real writes them, digit for digit. */
Test(json_out, reals_as_jansson_writes_them) {
    const double vals[] = {
        0.0,   -0.0, 1.0,     -3.0, 0.1,       1.0 / 3.0, 123456789.0,           1716420551.503,
        38.15, 1e20, 1.5e300, 1e-5, -2.5e-300, 4e100,     12345678901234567890.0};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        hr_buf b = HR_BUF_INIT;
        hr_jw w = hr_jw_start(&b);
        hr_jw_real(&w, vals[i]);
        json_t *ref = json_real(vals[i]);
        char *expect = json_dumps(ref, JSON_ENCODE_ANY | JSON_COMPACT);
        cr_assert_str_eq(written(&b), expect, "value %d", (int)i);
        free(expect);
        json_decref(ref);
        hr_buf_free(&b);
    }
}

/* Every string jansson would escape is escaped the same way, and the result
 * parses back to the original bytes. */
Test(json_out, strings_escape_as_jansson_does) {
    const char raw[] = "q\"b\\s/\n\r\t\b\f\x01\x1f\x7f caf\xc3\xa9 end";
    hr_slice s = hr_slice_of(raw, sizeof raw - 1);
    hr_buf b = HR_BUF_INIT;
    hr_jw w = hr_jw_start(&b);
    hr_jw_str(&w, s);
    json_t *ref = json_stringn(raw, sizeof raw - 1);
    char *expect = json_dumps(ref, JSON_ENCODE_ANY | JSON_COMPACT);
    cr_assert_str_eq(written(&b), expect);
    json_t *back = json_loadb(b.data, b.len, JSON_DECODE_ANY, NULL);
    cr_assert_not_null(back);
    cr_assert_eq(json_string_length(back), sizeof raw - 1);
    cr_assert_eq(memcmp(json_string_value(back), raw, sizeof raw - 1), 0);
    json_decref(back);
    json_decref(ref);
    free(expect);
    hr_buf_free(&b);
}

/* A key of any text is escaped as jansson escapes an object's key, and the
 * object parses back with that key. */
Test(json_out, keys_of_any_text_escape_as_jansson_does) {
    const char raw[] = "https://x.example/q?a=\"b\"&c=\\d\tcaf\xc3\xa9";
    hr_slice key = hr_slice_of(raw, sizeof raw - 1);
    hr_buf b = HR_BUF_INIT;
    hr_jw w = hr_jw_start(&b);
    hr_jw_open(&w, '{');
    hr_jw_key_str(&w, key);
    hr_jw_int(&w, 1);
    hr_jw_key_str(&w, hr_slice_str("plain"));
    hr_jw_open(&w, '[');
    hr_jw_close(&w, ']');
    hr_jw_close(&w, '}');
    json_t *ref = json_pack("{s:i,s:[]}", raw, 1, "plain");
    char *expect = json_dumps(ref, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_assert_str_eq(written(&b), expect);
    json_t *back = json_loadb(b.data, b.len, 0, NULL);
    cr_assert_not_null(back);
    cr_assert_eq(json_integer_value(json_object_get(back, raw)), 1);
    json_decref(back);
    json_decref(ref);
    free(expect);
    hr_buf_free(&b);
}
