/* Unit tests of core/auth: tokens bind users, the admin key, tampering. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "core/auth.h"

static const char secret[] = "0123456789abcdef-test-secret";

Test(auth, admin_key_and_tokens) {
    hr_auth *a = NULL;
    cr_assert_eq(hr_auth_new(hr_slice_str(secret), &a, NULL), HR_OK);
    hr_auth_result r;
    cr_assert_eq(hr_auth_check(a, hr_slice_str(secret), &r), HR_OK);
    cr_assert(r.admin);

    hr_buf t = HR_BUF_INIT;
    hr_auth_token(a, hr_slice_str("alice.smith"), &t);
    cr_assert_eq(hr_auth_check(a, hr_buf_slice(&t), &r), HR_OK);
    cr_assert_not(r.admin);
    cr_assert(hr_slice_eq(r.user, hr_slice_str("alice.smith")));

    /* the same MAC under another user name is refused */
    hr_buf forged = HR_BUF_INIT;
    hr_buf_append_str(&forged, "mallory");
    hr_buf_append_str(&forged, strrchr(t.data, '.'));
    cr_assert_eq(hr_auth_check(a, hr_buf_slice(&forged), &r), HR_EUNAUTH);

    /* one flipped character of the MAC is refused */
    t.data[t.len - 3] = t.data[t.len - 3] == 'A' ? 'B' : 'A';
    cr_assert_eq(hr_auth_check(a, hr_buf_slice(&t), &r), HR_EUNAUTH);

    cr_assert_eq(hr_auth_check(a, hr_slice_str(""), &r), HR_EUNAUTH);
    cr_assert_eq(hr_auth_check(a, hr_slice_str("0123456789abcdef"), &r), HR_EUNAUTH);

    /* a token made under another secret is refused */
    hr_auth *b = NULL;
    cr_assert_eq(hr_auth_new(hr_slice_str("another-secret-of-16+"), &b, NULL), HR_OK);
    hr_buf other = HR_BUF_INIT;
    hr_auth_token(b, hr_slice_str("alice.smith"), &other);
    cr_assert_eq(hr_auth_check(a, hr_buf_slice(&other), &r), HR_EUNAUTH);

    hr_buf_free(&t);
    hr_buf_free(&forged);
    hr_buf_free(&other);
    hr_auth_free(a);
    hr_auth_free(b);
}

Test(auth, short_secret_refused) {
    hr_auth *a = NULL;
    hr_err err = {0};
    cr_assert_eq(hr_auth_new(hr_slice_str("short"), &a, &err), HR_EINVAL);
    cr_assert_null(a);
    cr_assert(strstr(err.msg, "16") != NULL, "%s", err.msg);
}

Test(auth, secret_file_strips_one_newline) {
    char path[] = "/tmp/herald-secret-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "%s\n", secret);
    fclose(f);
    hr_auth *a = NULL;
    hr_err err = {0};
    cr_assert_eq(hr_auth_from_file(path, &a, &err), HR_OK, "%s", err.msg);
    hr_auth_result r;
    cr_assert_eq(hr_auth_check(a, hr_slice_str(secret), &r), HR_OK);
    cr_assert(r.admin);
    hr_auth_free(a);
    unlink(path);
    cr_assert_eq(hr_auth_from_file("/nonexistent/secret", &a, &err), HR_EINVAL);
}
