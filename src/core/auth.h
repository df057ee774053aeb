/* auth.h — the admin key and user tokens.
 *
 * The secret (the content of --secret-file) is the admin key. A user token
 * binds a user id to the secret:
 *
 *     token = USER "." base64url( HMAC-SHA256(secret, "herald-user-v1:" USER) )
 *
 * so the server checks a token without storing anything, and a token for one
 * user can never be turned into a token for another. The user id comes first
 * and the MAC after the last '.', since ids may themselves contain dots.
 * Comparisons are constant-time (CRYPTO_memcmp) so timing reveals nothing of
 * the key or a MAC. Rotating the secret revokes every token. */
#ifndef HR_AUTH_H
#define HR_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/slice.h"

#define HR_SECRET_MIN 16 /* bytes */

typedef struct hr_auth hr_auth;

/* An authenticator for the given secret (copied). The secret must hold at
 * least HR_SECRET_MIN bytes, else HR_EINVAL. */
int hr_auth_new(hr_slice secret, hr_auth **out, hr_err *err);
/* Read the secret from a file (one trailing newline, "\n" or "\r\n", is not
 * part of the key) and build an authenticator. */
int hr_auth_from_file(const char *path, hr_auth **out, hr_err *err);
void hr_auth_free(hr_auth *a);

/* Append the token of user (a valid identifier) to out. */
void hr_auth_token(const hr_auth *a, hr_slice user, hr_buf *out);

/* What a credential proves. */
typedef struct hr_auth_result {
    bool admin;
    hr_slice user; /* for a user token: points into the credential */
} hr_auth_result;

/* HR_OK when the credential is the admin key or a valid user token, else
 * HR_EUNAUTH. */
int hr_auth_check(const hr_auth *a, hr_slice credential, hr_auth_result *out);

#endif
