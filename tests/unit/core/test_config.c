/* Unit tests of core/config: parsers, --set, config files, errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/config.h"

Test(config, durations) {
    int64_t ms;
    cr_assert_eq(hr_parse_duration_ms("1500", &ms), HR_OK);
    cr_assert_eq(ms, 1500);
    cr_assert_eq(hr_parse_duration_ms("250ms", &ms), HR_OK);
    cr_assert_eq(ms, 250);
    cr_assert_eq(hr_parse_duration_ms("30s", &ms), HR_OK);
    cr_assert_eq(ms, 30000);
    cr_assert_eq(hr_parse_duration_ms("5m", &ms), HR_OK);
    cr_assert_eq(ms, 300000);
    cr_assert_eq(hr_parse_duration_ms("2h", &ms), HR_OK);
    cr_assert_eq(ms, 7200000);
    cr_assert_eq(hr_parse_duration_ms("30d", &ms), HR_OK);
    cr_assert_eq(ms, 30LL * 86400000);
    cr_assert_eq(hr_parse_duration_ms("", &ms), HR_EINVAL);
    cr_assert_eq(hr_parse_duration_ms("-1s", &ms), HR_EINVAL);
    cr_assert_eq(hr_parse_duration_ms("10 s", &ms), HR_EINVAL);
    cr_assert_eq(hr_parse_duration_ms("10w", &ms), HR_EINVAL);
    cr_assert_eq(hr_parse_duration_ms("99999999999999999999d", &ms), HR_EINVAL);
}

Test(config, sizes_and_bools) {
    uint64_t n;
    bool b;
    cr_assert_eq(hr_parse_size("64k", &n), HR_OK);
    cr_assert_eq(n, 65536u);
    cr_assert_eq(hr_parse_size("1m", &n), HR_OK);
    cr_assert_eq(n, 1u << 20);
    cr_assert_eq(hr_parse_size("1x", &n), HR_EINVAL);
    cr_assert_eq(hr_parse_bool("yes", &b), HR_OK);
    cr_assert(b);
    cr_assert_eq(hr_parse_bool("off", &b), HR_OK);
    cr_assert_not(b);
    cr_assert_eq(hr_parse_bool("maybe", &b), HR_EINVAL);
}

Test(config, defaults_and_set) {
    hr_config c;
    hr_config_init(&c);
    cr_assert_str_eq(c.listen, "127.0.0.1:8080");
    cr_assert_str_eq(c.store, "rocksdb:./data");
    cr_assert_eq(c.counter_ttl, 30LL * 86400000);
    cr_assert_eq(c.counter_exact_limit, 10000u);
    cr_assert_eq(c.body_max, 1u << 20);
    cr_assert_eq(c.memory, HR_STORE_MEMORY_DEFAULT);
    hr_err err = {0};
    cr_assert_eq(hr_config_set_pair(&c, "memory = 6g", &err), HR_OK);
    cr_assert_eq(hr_config_store_options(&c).memory, (size_t)6 << 30);
    cr_assert_eq(hr_config_set_pair(&c, "store_cache = 2g", &err), HR_EINVAL, "the per-cache settings went");
    cr_assert_eq(hr_config_set_pair(&c, "counter_ttl = 2h", &err), HR_OK);
    cr_assert_eq(c.counter_ttl, 7200000);
    cr_assert_eq(hr_config_set_pair(&c, "store=redis://127.0.0.1:7000", &err), HR_OK);
    cr_assert_str_eq(c.store, "redis://127.0.0.1:7000");
    /* errors name the setting, and leave it unchanged */
    cr_assert_eq(hr_config_set_pair(&c, "counter_ttl=soon", &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "counter_ttl") != NULL, "%s", err.msg);
    cr_assert_eq(c.counter_ttl, 7200000);
    cr_assert_eq(hr_config_set_pair(&c, "no_such=1", &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "no_such") != NULL, "%s", err.msg);
    cr_assert_eq(hr_config_set_pair(&c, "listen", &err), HR_EINVAL);
    hr_config_free(&c);
}

Test(config, file) {
    char path[] = "/tmp/herald-config-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# a comment\n\nthreads = 3\n  sync = true  \ncounter_exact_limit=500\n");
    fclose(f);
    hr_config c;
    hr_config_init(&c);
    hr_err err = {0};
    cr_assert_eq(hr_config_load_file(&c, path, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(c.threads, 3u);
    cr_assert(c.sync);
    cr_assert_eq(c.counter_exact_limit, 500u);

    f = fopen(path, "w");
    fprintf(f, "threads = 2\nthreads = many\n");
    fclose(f);
    cr_assert_eq(hr_config_load_file(&c, path, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, ":2:") != NULL, "error names the line: %s", err.msg);
    cr_assert_eq(hr_config_load_file(&c, "/nonexistent/herald.conf", &err), HR_EINVAL);
    unlink(path);
    hr_config_free(&c);
}
