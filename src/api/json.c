/* json.c — see json.h. */
#include "api/json.h"

#include <string.h>

#include "http/http.h"

int hr_json_parse_object(hr_slice body, json_t **out, hr_err *err) {
    *out = NULL;
    if (body.len == 0) return hr_err_set(err, HR_EINVAL, "body must be a JSON object (it is empty)");
    json_error_t je;
    json_t *v = json_loadb(body.ptr, body.len, JSON_REJECT_DUPLICATES, &je);
    if (v == NULL)
        return hr_err_set(err, HR_EINVAL, "body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                          je.column);
    if (!json_is_object(v)) {
        json_decref(v);
        return hr_err_set(err, HR_EINVAL, "body must be a JSON object");
    }
    *out = v;
    return HR_OK;
}

int hr_json_only_fields(const json_t *obj, const char *const *allowed, hr_err *err) {
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, key) == 0;
        if (!known) return hr_err_set(err, HR_EINVAL, "unknown field '%.64s'", key);
    }
    return HR_OK;
}

int hr_json_int_field(const json_t *obj, const char *name, bool required, int64_t min, int64_t max,
                      int64_t *out, bool *present, hr_err *err) {
    if (present) *present = false;
    json_t *v = json_object_get(obj, name);
    if (v == NULL || json_is_null(v)) {
        if (required) return hr_err_set(err, HR_EINVAL, "%s is required", name);
        return HR_OK;
    }
    if (!json_is_integer(v))
        return hr_err_set(err, HR_EINVAL, "%s must be an integer %lld..%lld", name, (long long)min,
                          (long long)max);
    json_int_t i = json_integer_value(v);
    if (i < min || i > max)
        return hr_err_set(err, HR_EINVAL, "%s must be %lld..%lld (got %lld)", name, (long long)min,
                          (long long)max, (long long)i);
    *out = i;
    if (present) *present = true;
    return HR_OK;
}

int hr_json_ident_array(const json_t *obj, const char *name, size_t max, hr_arena *arena, hr_slice **items,
                        size_t *n, hr_err *err) {
    *items = NULL;
    *n = 0;
    json_t *v = json_object_get(obj, name);
    if (v == NULL) return hr_err_set(err, HR_EINVAL, "%s is required", name);
    if (!json_is_array(v)) return hr_err_set(err, HR_EINVAL, "%s must be an array of identifiers", name);
    size_t len = json_array_size(v);
    if (len < 1 || len > max)
        return hr_err_set(err, HR_EINVAL, "%s must hold 1..%zu identifiers (got %zu)", name, max, len);
    hr_slice *out = hr_arena_alloc(arena, len * sizeof *out);
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_string(e)) return hr_err_set(err, HR_EINVAL, "%s[%zu] must be a string", name, i);
        hr_slice s = hr_slice_of(json_string_value(e), json_string_length(e));
        if (!hr_ident_valid(s))
            return hr_err_set(err, HR_EINVAL, "%s[%zu] must be 1..%d characters of A-Z a-z 0-9 . _ : @ ~ -",
                              name, i, HR_IDENT_MAX);
        out[i] = s;
    }
    *items = out;
    *n = len;
    return HR_OK;
}

int hr_json_string_field(const json_t *obj, const char *name, bool required, hr_slice *out, hr_err *err) {
    json_t *v = json_object_get(obj, name);
    if (v == NULL || json_is_null(v)) {
        if (required) return hr_err_set(err, HR_EINVAL, "%s is required", name);
        return HR_OK;
    }
    if (!json_is_string(v)) return hr_err_set(err, HR_EINVAL, "%s must be a string", name);
    *out = hr_slice_of(json_string_value(v), json_string_length(v));
    return HR_OK;
}

int hr_json_ident_field(const json_t *obj, const char *name, bool required, hr_slice *out, hr_err *err) {
    hr_slice v = {0};
    int rc = hr_json_string_field(obj, name, required, &v, err);
    if (rc != HR_OK || v.ptr == NULL) return rc;
    if (!hr_ident_valid(v))
        return hr_err_set(err, HR_EINVAL, "%s must be an identifier (1..%d bytes of [A-Za-z0-9._:@~-])", name,
                          HR_IDENT_MAX);
    *out = v;
    return HR_OK;
}
