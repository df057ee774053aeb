/* config.c — parsing settings; see config.h for the table and the rules. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

int hr_parse_uint(const char *s, uint64_t *out) {
    if (s == NULL || !isdigit((unsigned char)s[0])) return HR_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') return HR_EINVAL;
    *out = v;
    return HR_OK;
}

/* A whole number followed by one of the suffixes, each with its multiplier. */
static int parse_scaled(const char *s, const char *const *suffixes, const uint64_t *mult, size_t n,
                        uint64_t *out) {
    if (s == NULL || !isdigit((unsigned char)s[0])) return HR_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0) return HR_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(end, suffixes[i]) != 0) continue;
        if (mult[i] != 0 && v > UINT64_MAX / mult[i]) return HR_EINVAL;
        *out = v * mult[i];
        return HR_OK;
    }
    return HR_EINVAL;
}

int hr_parse_duration_ms(const char *s, int64_t *out) {
    static const char *const suf[] = {"", "ms", "s", "m", "h", "d"};
    static const uint64_t mult[] = {1, 1, 1000, 60000, 3600000, 86400000};
    uint64_t v;
    if (parse_scaled(s, suf, mult, 6, &v) != HR_OK || v > INT64_MAX) return HR_EINVAL;
    *out = (int64_t)v;
    return HR_OK;
}

int hr_parse_size(const char *s, uint64_t *out) {
    static const char *const suf[] = {"", "k", "m", "g", "K", "M", "G"};
    static const uint64_t mult[] = {1, 1u << 10, 1u << 20, 1u << 30, 1u << 10, 1u << 20, 1u << 30};
    return parse_scaled(s, suf, mult, 7, out);
}

int hr_parse_bool(const char *s, bool *out) {
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, yes[i]) == 0) return *out = true, HR_OK;
        if (strcmp(s, no[i]) == 0) return *out = false, HR_OK;
    }
    return HR_EINVAL;
}

static const char *type_hint(hr_setting_type t) {
    switch (t) {
    case HR_SET_UINT: return "a whole number";
    case HR_SET_BOOL: return "true or false";
    case HR_SET_DURATION: return "a duration such as 500ms, 30s, 5m, 2h or 30d";
    case HR_SET_SIZE: return "a size such as 4096, 64k or 1m";
    default: return "text";
    }
}

/* Parse value as `type` into the field at `field`. */
static int parse_into(hr_setting_type type, void *field, const char *value) {
    switch (type) {
    case HR_SET_STR:
        free(*(char **)field);
        *(char **)field = hr_xstrdup(value);
        return HR_OK;
    case HR_SET_UINT: return hr_parse_uint(value, field);
    case HR_SET_BOOL: return hr_parse_bool(value, field);
    case HR_SET_DURATION: return hr_parse_duration_ms(value, field);
    case HR_SET_SIZE: return hr_parse_size(value, field);
    }
    return HR_EINVAL;
}

void hr_config_init(hr_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
#define HR_CFG_DEFAULT_(name, type, def, help)                                                               \
    if (parse_into(HR_SET_##type, &cfg->name, def) != HR_OK) abort();
    HR_SETTINGS(HR_CFG_DEFAULT_)
#undef HR_CFG_DEFAULT_
}

void hr_config_free(hr_config *cfg) {
#define HR_CFG_FREE_STR(name) free(cfg->name);
#define HR_CFG_FREE_UINT(name)
#define HR_CFG_FREE_BOOL(name)
#define HR_CFG_FREE_DURATION(name)
#define HR_CFG_FREE_SIZE(name)
#define HR_CFG_FREE_(name, type, def, help) HR_CFG_FREE_##type(name)
    HR_SETTINGS(HR_CFG_FREE_)
#undef HR_CFG_FREE_
    memset(cfg, 0, sizeof *cfg);
}

int hr_config_set(hr_config *cfg, const char *name, const char *value, hr_err *err) {
#define HR_CFG_SET_(sname, type, def, help)                                                                  \
    if (strcmp(name, #sname) == 0) {                                                                         \
        if (parse_into(HR_SET_##type, &cfg->sname, value) != HR_OK)                                          \
            return hr_err_set(err, HR_EINVAL, "setting %s: '%s' is not %s", name, value,                     \
                              type_hint(HR_SET_##type));                                                     \
        return HR_OK;                                                                                        \
    }
    HR_SETTINGS(HR_CFG_SET_)
#undef HR_CFG_SET_
    return hr_err_set(err, HR_EINVAL, "unknown setting '%s' (herald --help lists them)", name);
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int hr_config_set_pair(hr_config *cfg, const char *pair, hr_err *err) {
    const char *eq = strchr(pair, '=');
    if (eq == NULL) return hr_err_set(err, HR_EINVAL, "--set takes NAME=VALUE, got '%s'", pair);
    char *name = hr_xstrndup(pair, (size_t)(eq - pair));
    char *value = hr_xstrdup(eq + 1);
    int rc = hr_config_set(cfg, trim(name), trim(value), err);
    free(name);
    free(value);
    return rc;
}

int hr_config_load_file(hr_config *cfg, const char *path, hr_err *err) {
    FILE *f = fopen(path, "r");
    if (f == NULL) return hr_err_set(err, HR_EINVAL, "cannot read config file %s: %s", path, strerror(errno));
    char line[4096];
    int lineno = 0, rc = HR_OK;
    while (rc == HR_OK && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        char *s = trim(line);
        if (*s == '\0' || *s == '#') continue;
        hr_err inner = {0};
        rc = hr_config_set_pair(cfg, s, &inner);
        if (rc != HR_OK) hr_err_set(err, rc, "%s:%d: %s", path, lineno, inner.msg);
    }
    fclose(f);
    return rc;
}

void hr_config_print_help(FILE *f) {
#define HR_CFG_HELP_(name, type, def, help)                                                                  \
    fprintf(f, "  %-20s %s (default: %s)\n", #name, help, *def ? def : "none");
    HR_SETTINGS(HR_CFG_HELP_)
#undef HR_CFG_HELP_
}

hr_store_options hr_config_store_options(const hr_config *cfg) {
    return (hr_store_options){
        .sync = cfg->sync, .timeout_ms = (int)cfg->store_timeout, .memory = cfg->memory};
}
