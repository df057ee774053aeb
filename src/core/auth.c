/* auth.c — see auth.h. */
#include "core/auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

#define MAC_LEN 32     /* SHA-256 */
#define MAC_B64_LEN 43 /* base64url of 32 bytes, unpadded */
#define SECRET_MAX 4096

struct hr_auth {
    char *secret;
    size_t len;
};

int hr_auth_new(hr_slice secret, hr_auth **out, hr_err *err) {
    *out = NULL;
    if (secret.len < HR_SECRET_MIN)
        return hr_err_set(err, HR_EINVAL, "the secret must be at least %d bytes (got %zu)", HR_SECRET_MIN,
                          secret.len);
    hr_auth *a = hr_xmalloc(sizeof *a);
    a->secret = hr_xstrndup(secret.ptr, secret.len);
    a->len = secret.len;
    *out = a;
    return HR_OK;
}

int hr_auth_from_file(const char *path, hr_auth **out, hr_err *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) return hr_err_set(err, HR_EINVAL, "cannot read secret file %s: %s", path, strerror(errno));
    char buf[SECRET_MAX + 2];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n > SECRET_MAX)
        return hr_err_set(err, HR_EINVAL, "secret file %s is over %d bytes", path, SECRET_MAX);
    if (n > 0 && buf[n - 1] == '\n') n--;
    if (n > 0 && buf[n - 1] == '\r') n--;
    int rc = hr_auth_new(hr_slice_of(buf, n), out, err);
    OPENSSL_cleanse(buf, sizeof buf);
    if (rc != HR_OK) return hr_err_set(err, rc, "secret file %s: %s", path, err ? err->msg : "");
    return HR_OK;
}

void hr_auth_free(hr_auth *a) {
    if (a == NULL) return;
    OPENSSL_cleanse(a->secret, a->len);
    free(a->secret);
    free(a);
}

/* base64url, unpadded, of the MAC of user. out holds MAC_B64_LEN + 1. */
static void user_mac(const hr_auth *a, hr_slice user, char out[MAC_B64_LEN + 1]) {
    static const char prefix[] = "herald-user-v1:";
    unsigned char msg[sizeof prefix - 1 + 1024];
    size_t n = user.len < 1024 ? user.len : 1024;
    memcpy(msg, prefix, sizeof prefix - 1);
    memcpy(msg + sizeof prefix - 1, user.ptr, n);
    unsigned char mac[MAC_LEN];
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), a->secret, (int)a->len, msg, sizeof prefix - 1 + n, mac, &mac_len);
    unsigned char b64[4 * ((MAC_LEN + 2) / 3) + 1];
    EVP_EncodeBlock(b64, mac, MAC_LEN);
    for (int i = 0; i < MAC_B64_LEN; i++) {
        char c = (char)b64[i];
        out[i] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    out[MAC_B64_LEN] = '\0';
}

void hr_auth_token(const hr_auth *a, hr_slice user, hr_buf *out) {
    char mac[MAC_B64_LEN + 1];
    user_mac(a, user, mac);
    hr_buf_append_slice(out, user);
    hr_buf_append_byte(out, '.');
    hr_buf_append(out, mac, MAC_B64_LEN);
}

int hr_auth_check(const hr_auth *a, hr_slice cred, hr_auth_result *out) {
    out->admin = false;
    out->user = hr_slice_of(NULL, 0);
    if (cred.len == a->len && CRYPTO_memcmp(cred.ptr, a->secret, a->len) == 0) {
        out->admin = true;
        return HR_OK;
    }
    /* USER "." MAC: the MAC is the last MAC_B64_LEN bytes. */
    if (cred.len < MAC_B64_LEN + 2 || cred.ptr[cred.len - MAC_B64_LEN - 1] != '.') return HR_EUNAUTH;
    hr_slice user = hr_slice_of(cred.ptr, cred.len - MAC_B64_LEN - 1);
    char mac[MAC_B64_LEN + 1];
    user_mac(a, user, mac);
    if (CRYPTO_memcmp(mac, cred.ptr + user.len + 1, MAC_B64_LEN) != 0) return HR_EUNAUTH;
    out->user = user;
    return HR_OK;
}
