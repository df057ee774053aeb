/* json.h — reading request bodies with jansson, with errors that name the
 * field, so every resource rejects bad input the same way (400, a detail,
 * nothing stored).
 *
 * All functions return HR_OK or HR_EINVAL with err->msg ready to be the
 * problem's detail. */
#ifndef HR_API_JSON_H
#define HR_API_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"

/* Parse body as a JSON object. On success *out is a new reference the caller
 * json_decref's. */
int hr_json_parse_object(hr_slice body, json_t **out, hr_err *err);

/* Fail on any member of obj not named in allowed (a NULL-terminated list),
 * so that a misspelt field is an error rather than silently ignored. */
int hr_json_only_fields(const json_t *obj, const char *const *allowed, hr_err *err);

/* An integer field in [min, max]. A missing field is an error if required,
 * else *present is false and *out untouched. present may be NULL. */
int hr_json_int_field(const json_t *obj, const char *name, bool required, int64_t min, int64_t max,
                      int64_t *out, bool *present, hr_err *err);

/* A string field; missing or null is an error if required, else *out is
 * left untouched. *out points into obj. */
int hr_json_string_field(const json_t *obj, const char *name, bool required, hr_slice *out, hr_err *err);

/* An identifier field (common/ident.h), as hr_json_string_field. */
int hr_json_ident_field(const json_t *obj, const char *name, bool required, hr_slice *out, hr_err *err);

/* An array field of 1..max identifiers. *items (allocated in arena) holds
 * *n slices pointing into obj, valid while obj is. */
int hr_json_ident_array(const json_t *obj, const char *name, size_t max, hr_arena *arena, hr_slice **items,
                        size_t *n, hr_err *err);

#endif
