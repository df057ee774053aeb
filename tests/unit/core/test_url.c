/* test_url.c — core/url: the canonical form, rule by rule, the rejections and
 * their details, idempotence, and a fuzz loop over random and mutated input.
 *
 * The tables are the specification by example: each row is an input and its
 * canonical form, or an input and a word its rejection detail must contain.
 * The fuzz loop is deterministic (fixed seeds), so a failure reproduces. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/url.h"

typedef struct accept_case {
    const char *in;
    const char *want;
} accept_case;

static const accept_case ACCEPT[] = {
    /* scheme: http and https fold; any case */
    {"http://example.com", "https://example.com/"},
    {"https://example.com/", "https://example.com/"},
    {"HTTP://EXAMPLE.COM/", "https://example.com/"},
    {"HtTpS://Example.Com/Path", "https://example.com/Path"},
    /* host: lower-case, www., trailing dot */
    {"http://www.example.com/a", "https://example.com/a"},
    {"http://WWW.Example.COM/a", "https://example.com/a"},
    {"http://www.www.example.com/", "https://example.com/"},
    {"http://www.com/", "https://www.com/"},
    {"http://www.localhost/", "https://www.localhost/"},
    {"http://www2.example.com/", "https://www2.example.com/"},
    {"http://m.example.com/", "https://m.example.com/"},
    {"http://wwwexample.com/", "https://wwwexample.com/"},
    {"http://blog.www.example.com/", "https://blog.www.example.com/"},
    {"http://example.com./a", "https://example.com/a"},
    {"http://www.example.com.:80/", "https://example.com/"},
    {"http://%65xample.%43om/", "https://example.com/"},
    {"http://my_host.example.com/", "https://my_host.example.com/"},
    {"http://localhost/", "https://localhost/"},
    {"http://127.0.0.1:80/a", "https://127.0.0.1/a"},
    {"http://XN--BCHER-KVA.example/", "https://xn--bcher-kva.example/"},
    /* IPv6 literals: brackets kept, RFC 5952 text */
    {"http://[::1]/", "https://[::1]/"},
    {"http://[::1]:8080", "https://[::1]:8080/"},
    {"http://[2001:DB8:0:0:0:0:0:1]:443/a", "https://[2001:db8::1]/a"},
    {"http://[::FFFF:1.2.3.4]/", "https://[::ffff:1.2.3.4]/"},
    /* ports */
    {"http://example.com:80/a", "https://example.com/a"},
    {"https://example.com:443/a", "https://example.com/a"},
    {"http://example.com:443/", "https://example.com/"},
    {"https://example.com:80/", "https://example.com/"},
    {"http://example.com:8080/a", "https://example.com:8080/a"},
    {"http://example.com:00080/", "https://example.com/"},
    {"http://example.com:08080/", "https://example.com:8080/"},
    {"http://example.com:/", "https://example.com/"},
    {"http://example.com:65535/", "https://example.com:65535/"},
    {"http://example.com:1", "https://example.com:1/"},
    /* userinfo is dropped */
    {"http://user:pass@example.com/", "https://example.com/"},
    {"http://user@www.example.com:80/a", "https://example.com/a"},
    {"http://a@b:c@example.com/", "https://example.com/"},
    {"http://example.com:80@evil.com/", "https://evil.com/"},
    {"http://example.com/a@b", "https://example.com/a@b"},
    {"http://example.com?x=@evil.com", "https://example.com/?x=@evil.com"},
    /* index documents */
    {"http://example.com/index.html", "https://example.com/"},
    {"http://example.com/a/index.html", "https://example.com/a"},
    {"http://example.com/a/index.htm", "https://example.com/a"},
    {"http://example.com/a/index.php?x=1", "https://example.com/a?x=1"},
    {"http://example.com/a/Default.aspx", "https://example.com/a"},
    {"http://example.com/DEFAULT.ASP", "https://example.com/"},
    {"http://example.com/a/INDEX.HTML", "https://example.com/a/INDEX.HTML"},
    {"http://example.com/a/index.html5", "https://example.com/a/index.html5"},
    {"http://example.com/a/myindex.html", "https://example.com/a/myindex.html"},
    {"http://example.com/a/index.jsp", "https://example.com/a/index.jsp"},
    {"http://example.com/index.html/", "https://example.com/"},
    {"http://example.com/index.html/index.php", "https://example.com/"},
    {"http://example.com/index.php/route", "https://example.com/index.php/route"},
    {"http://example.com/%69ndex.html", "https://example.com/"},
    /* trailing slashes; empty inner segments stay */
    {"http://example.com/a/", "https://example.com/a"},
    {"http://example.com/a//", "https://example.com/a"},
    {"http://example.com///", "https://example.com/"},
    {"http://example.com/a//b", "https://example.com/a//b"},
    {"http://example.com//a", "https://example.com//a"},
    /* dot segments (RFC 3986 5.2.4) */
    {"http://example.com/a/./b/../c", "https://example.com/a/c"},
    {"http://example.com/../a", "https://example.com/a"},
    {"http://example.com/a/b/..", "https://example.com/a"},
    {"http://example.com/a/b/.", "https://example.com/a/b"},
    {"http://example.com/./", "https://example.com/"},
    {"http://example.com/a/../../../b", "https://example.com/b"},
    {"http://example.com/a//../b", "https://example.com/a/b"},
    {"http://example.com/a/%2E%2e/b", "https://example.com/b"},
    {"http://example.com/a/.../b", "https://example.com/a/.../b"},
    {"http://example.com/a/..b/.c", "https://example.com/a/..b/.c"},
    {"http://example.com/a/b/../index.html", "https://example.com/a"},
    /* fragments */
    {"http://example.com/a#frag", "https://example.com/a"},
    {"http://example.com/#", "https://example.com/"},
    {"http://example.com#x", "https://example.com/"},
    {"http://example.com/a?b=1#frag?c=2", "https://example.com/a?b=1"},
    {"http://example.com/#!/user/42", "https://example.com/"},
    {"http://example.com/a#caf\xc3\xa9", "https://example.com/a"},
    /* query: tracking parameters, empties, order */
    {"http://example.com/a?utm_source=x&utm_medium=y", "https://example.com/a"},
    {"http://example.com/a?id=7&utm_source=x", "https://example.com/a?id=7"},
    {"http://example.com/a?utm_campaign=x&id=7&fbclid=abc", "https://example.com/a?id=7"},
    {"http://example.com/?gclid=1&dclid=2&msclkid=3&mc_cid=4&mc_eid=5&_ga=6&yclid=7&igshid=8&ref_src=9&k=1",
     "https://example.com/?k=1"},
    {"http://example.com/?gclsrc=1&gbraid=2&wbraid=3&twclid=4&ttclid=5&li_fat_id=6&igsh=7&k=1",
     "https://example.com/?k=1"},
    {"http://example.com/?_hsenc=1&_hsmi=2&mkt_tok=3&_gl=4&ref_url=5&utm_id&utm_=1", "https://example.com/"},
    {"http://example.com/?UTM_Source=x&Id=1&FBCLID=2", "https://example.com/?Id=1"},
    /* more tracking families (social reading, issue 4) */
    {"http://example.com/a?mtm_campaign=x&mtm_kwd=y&id=3&pk_campaign=z&pk_kwd=w",
     "https://example.com/a?id=3"},
    {"http://example.com/a?pk_keyword=1&pk_source=2&pk_medium=3&pk_content=4&p=1",
     "https://example.com/a?p=1"},
    {"http://example.com/a?hsa_acc=1&hsa_cam=2&__hssc=3&__hstc=4&__hsfp=5&hsCtaTracking=6&x",
     "https://example.com/a?x"},
    {"http://example.com/a?gad_source=1&srsltid=2&_openstat=3&epik=4&rb_clickid=5&k=v",
     "https://example.com/a?k=v"},
    {"http://example.com/"
     "a?oly_anon_id=1&oly_enc_id=2&vero_id=3&vero_conv=4&ml_subscriber=5&ml_subscriber_hash=6",
     "https://example.com/a"},
    {"http://example.com/a?_kx=1&ck_subscriber_id=2&_bta_tid=3&_bta_c=4&__s=5&wickedid=6&s_cid=7&q=1",
     "https://example.com/a?q=1"},
    {"http://example.com/a?MTM_Source=1&HSA_net=2&Pk_Kwd=3&b=2", "https://example.com/a?b=2"},
    /* near misses stay: a prefix needs its underscore, names match whole */
    {"http://example.com/a?mtm=1&hsa=2&pk=3&pk_id=4&_s=5&s=6&epiks=7&gad=8",
     "https://example.com/a?mtm=1&hsa=2&pk=3&pk_id=4&_s=5&s=6&epiks=7&gad=8"},
    {"http://example.com/?utm%5Fsource=x&a=1", "https://example.com/?a=1"},
    {"http://example.com/?fbclid", "https://example.com/"},
    {"http://example.com/?ref=main&source=rss&s=1", "https://example.com/?ref=main&source=rss&s=1"},
    {"http://example.com/?x=utm_source&y=fbclid", "https://example.com/?x=utm_source&y=fbclid"},
    {"http://example.com/?utmx=1&fbclidx=2", "https://example.com/?utmx=1&fbclidx=2"},
    {"http://example.com/a?b=2&a=1", "https://example.com/a?b=2&a=1"},
    {"http://example.com/a?a=1&a=2&a=1", "https://example.com/a?a=1&a=2&a=1"},
    {"http://example.com/a?", "https://example.com/a"},
    {"http://example.com/a?&&", "https://example.com/a"},
    {"http://example.com/a?#x", "https://example.com/a"},
    {"http://example.com/a?a=1&&b=2&", "https://example.com/a?a=1&b=2"},
    {"http://example.com/a?=&=x", "https://example.com/a?=&=x"},
    {"http://example.com/a?flag", "https://example.com/a?flag"},
    {"http://example.com/a/?x=1", "https://example.com/a?x=1"},
    {"http://example.com?a=1", "https://example.com/?a=1"},
    {"http://example.com/a?q=a+b", "https://example.com/a?q=a+b"},
    {"http://example.com/a?u=http://b.com/?c=d", "https://example.com/a?u=http://b.com/?c=d"},
    /* case: path and query keep theirs */
    {"http://Example.com/Page", "https://example.com/Page"},
    {"http://example.com/page?Q=Value", "https://example.com/page?Q=Value"},
    /* percent-encoding */
    {"http://example.com/%41%42%7e%2d%2E%5f%30", "https://example.com/AB~-._0"},
    {"http://example.com/a%2fb", "https://example.com/a%2Fb"},
    {"http://example.com/a%2Fb/../c", "https://example.com/c"},
    {"http://example.com/%3a%40%21%24", "https://example.com/%3A%40%21%24"},
    {"http://example.com/?q=a%26b%3dc", "https://example.com/?q=a%26b%3Dc"},
    {"http://example.com/%25", "https://example.com/%25"},
    {"http://example.com/%2541", "https://example.com/%2541"},
    {"http://example.com/100%", "https://example.com/100%25"},
    {"http://example.com/%zz", "https://example.com/%25zz"},
    {"http://example.com/?a=%4", "https://example.com/?a=%254"},
    {"http://example.com/%00", "https://example.com/%00"},
    {"http://example.com/caf\xc3\xa9", "https://example.com/caf%C3%A9"},
    {"http://example.com/caf%c3%a9", "https://example.com/caf%C3%A9"},
    {"http://example.com/?q=\xe2\x82\xac", "https://example.com/?q=%E2%82%AC"},
    {"http://example.com/a{b}|c^d`e", "https://example.com/a%7Bb%7D%7Cc%5Ed%60e"},
    {"http://example.com/?a[]=1&a[]=2", "https://example.com/?a%5B%5D=1&a%5B%5D=2"},
    {"http://example.com/\"<>", "https://example.com/%22%3C%3E"},
    {"http://example.com/a!$&'()*+,;=:@b", "https://example.com/a!$&'()*+,;=:@b"},
};

typedef struct reject_case {
    const char *in;
    const char *detail; /* a substring of err.msg */
} reject_case;

static const reject_case REJECT[] = {
    {"", "empty"},
    {"example.com", "must start with http:// or https://"},
    {"www.example.com/a", "must start with http:// or https://"},
    {"//example.com/", "must start with http:// or https://"},
    {"ftp://example.com/", "must start with http:// or https://"},
    {"file:///etc/passwd", "must start with http:// or https://"},
    {"javascript:alert(1)", "must start with http:// or https://"},
    {"http:/example.com", "must start with http:// or https://"},
    {"http:example.com", "must start with http:// or https://"},
    {"httpx://example.com", "must start with http:// or https://"},
    {"http://", "no host"},
    {"https:///a", "no host"},
    {"http://?a", "no host"},
    {"http://user@/a", "no host"},
    {"http://:80/", "no host"},
    {"http://./", "url host is empty"},
    {"http://exa mple.com/", "space"},
    {"http://example.com/a b", "space"},
    {" http://example.com/", "space"},
    {"http://example.com/\t", "control character"},
    {"http://example.com/\n", "control character"},
    {"http://example.com/a\x7f", "control character"},
    {"http://example.com/#a\x01", "control character"},
    {"http://example.com\\@evil.com/", "backslash"},
    {"http://example.com/a\\b", "backslash"},
    {"http://b\303\274cher.de/", "ASCII"},
    {"http://example.com%C3%A9/", "ASCII"},
    {"http://a..com/", "empty label"},
    {"http://.a.com/", "empty label"},
    {"http://a.com../", "empty label"},
    {"http://exa$mple.com/", "host contains '$'"},
    {"http://exa~mple.com/", "host contains '~'"},
    {"http://example.com%2F.evil.com/", "host contains '/'"},
    {"http://example%00.com/", "host contains the byte 0x00"},
    {"http://example.com%zz/", "percent-escape"},
    {"http://example.com%2/", "percent-escape"},
    {"http://example.com:0/", "port"},
    {"http://example.com:65536/", "port"},
    {"http://example.com:99999999999999999999999/", "port"},
    {"http://example.com:8x/", "port"},
    {"http://example.com:80:80/", "port"},
    {"http://example.com:-1/", "port"},
    {"http://example.com: 80/", "space"},
    {"http://[::1/", "'[' without ']'"},
    {"http://[::1]x/", "after its IPv6 address"},
    {"http://[::g]/", "IPv6"},
    {"http://[]/", "IPv6"},
    {"http://[fe80::1%25eth0]/", "IPv6"},
    {"http://[v1.fe]/", "IPv6"},
    {"http://[1.2.3.4]/", "IPv6"},
    {"http://[::1]:0/", "port"},
};

static void expect_accept(const char *in, size_t len, const char *want) {
    hr_buf out = HR_BUF_INIT;
    hr_err err = {0};
    int rc = hr_url_canonical(hr_slice_of(in, len), &out, &err);
    cr_expect_eq(rc, HR_OK, "%s: rejected (%s)", in, err.msg);
    if (rc == HR_OK) cr_expect_str_eq(out.data, want, "input %s", in);
    hr_buf_free(&out);
}

Test(url, accepted_table) {
    size_t n = sizeof ACCEPT / sizeof ACCEPT[0];
    cr_assert_geq(n, 60);
    for (size_t i = 0; i < n; i++)
        expect_accept(ACCEPT[i].in, strlen(ACCEPT[i].in), ACCEPT[i].want);
}

Test(url, rejected_table) {
    for (size_t i = 0; i < sizeof REJECT / sizeof REJECT[0]; i++) {
        hr_buf out = HR_BUF_INIT;
        hr_buf_append_str(&out, "kept");
        hr_err err = {0};
        int rc = hr_url_canonical(hr_slice_str(REJECT[i].in), &out, &err);
        cr_expect_eq(rc, HR_EINVAL, "%s: accepted as %s", REJECT[i].in, out.data);
        cr_expect_eq(err.code, HR_EINVAL, "%s", REJECT[i].in);
        cr_expect(strstr(err.msg, REJECT[i].detail) != NULL, "%s: detail \"%s\", want \"%s\"", REJECT[i].in,
                  err.msg, REJECT[i].detail);
        cr_expect(strncmp(err.msg, "url ", 4) == 0, "detail names the field: %s", err.msg);
        cr_expect_str_eq(out.data, "kept", "%s: out changed on rejection", REJECT[i].in);
        hr_buf_free(&out);
    }
}

Test(url, canonical_forms_are_fixed_points) {
    for (size_t i = 0; i < sizeof ACCEPT / sizeof ACCEPT[0]; i++) {
        hr_slice w = hr_slice_str(ACCEPT[i].want);
        expect_accept(ACCEPT[i].want, w.len, ACCEPT[i].want);
    }
}

Test(url, null_err_and_embedded_nul) {
    hr_buf out = HR_BUF_INIT;
    cr_assert_eq(hr_url_canonical(hr_slice_str("ftp://a"), &out, NULL), HR_EINVAL);
    static const char nul[] = "http://example.com/a\0b";
    hr_err err = {0};
    cr_assert_eq(hr_url_canonical(hr_slice_of(nul, sizeof nul - 1), &out, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "control character (byte 0x00 at offset 20)") != NULL, "%s", err.msg);
    /* a slice, not a string: bytes after len are never read */
    cr_assert_eq(hr_url_canonical(hr_slice_of(nul, 18), &out, &err), HR_OK);
    cr_assert_str_eq(out.data, "https://example.com/");
    hr_buf_free(&out);
}

Test(url, appends_to_out) {
    hr_buf out = HR_BUF_INIT;
    hr_buf_append_str(&out, "x=");
    cr_assert_eq(hr_url_canonical(hr_slice_str("http://www.a.com/b/"), &out, NULL), HR_OK);
    hr_buf_append_byte(&out, ' ');
    cr_assert_eq(hr_url_canonical(hr_slice_str("HTTP://A.COM:443/b#c"), &out, NULL), HR_OK);
    cr_assert_str_eq(out.data, "x=https://a.com/b https://a.com/b");
    hr_buf_free(&out);
}

/* A URL of exactly n bytes: "http://a.com/" then 'p's. */
static void long_url(hr_buf *b, size_t n, char fill) {
    hr_buf_clear(b);
    hr_buf_append_str(b, "http://a.com/");
    while (b->len < n)
        hr_buf_append_byte(b, (uint8_t)fill);
}

Test(url, length_limits) {
    hr_buf in = HR_BUF_INIT, out = HR_BUF_INIT;
    hr_err err = {0};
    long_url(&in, HR_URL_MAX + 1, 'p'); /* "http" -> "https" adds one byte */
    cr_assert_eq(hr_url_canonical(hr_buf_slice(&in), &out, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "over 2048 bytes") != NULL, "%s", err.msg);

    long_url(&in, HR_URL_MAX, 'p');
    hr_buf_clear(&out);
    cr_assert_eq(hr_url_canonical(hr_buf_slice(&in), &out, &err), HR_EINVAL, "2049 bytes once https");
    cr_assert(strstr(err.msg, "once normalised") != NULL, "%s", err.msg);
    cr_assert_eq(out.len, 0);

    hr_buf_clear(&in);
    hr_buf_append_str(&in, "https://a.com/");
    while (in.len < HR_URL_MAX)
        hr_buf_append_byte(&in, 'p');
    hr_buf_clear(&out);
    cr_assert_eq(hr_url_canonical(hr_buf_slice(&in), &out, &err), HR_OK, "%s", err.msg);
    cr_assert_eq(out.len, HR_URL_MAX);

    /* 2048 bytes in, but the escapes of non-ASCII bytes triple them */
    hr_buf_clear(&in);
    hr_buf_append_str(&in, "https://a.com/");
    while (in.len < 1000)
        hr_buf_append_byte(&in, 0xe9);
    hr_buf_clear(&out);
    cr_assert_eq(hr_url_canonical(hr_buf_slice(&in), &out, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "once normalised") != NULL, "%s", err.msg);
    cr_assert_eq(out.len, 0);

    /* a long tracking tail that canonicalises short is still over the input limit */
    hr_buf_clear(&in);
    hr_buf_append_str(&in, "https://a.com/?utm_source=");
    while (in.len < HR_URL_MAX + 10)
        hr_buf_append_byte(&in, 'x');
    cr_assert_eq(hr_url_canonical(hr_buf_slice(&in), &out, &err), HR_EINVAL);

    /* hosts: 253 bytes (63+1+63+1+63+1+61) pass, 254 do not; a trailing dot is free */
    char host[300];
    memset(host, 'a', sizeof host);
    host[63] = host[127] = host[191] = '.';
    static const struct {
        size_t len;
        int dot, ok;
    } hosts[] = {{252, 0, 1}, {253, 0, 1}, {253, 1, 1}, {254, 0, 0}, {254, 1, 0}};
    for (size_t k = 0; k < sizeof hosts / sizeof hosts[0]; k++) {
        hr_buf_clear(&in);
        hr_buf_append_str(&in, "http://");
        hr_buf_append(&in, host, hosts[k].len);
        if (hosts[k].dot) hr_buf_append_byte(&in, '.');
        hr_buf_append_byte(&in, '/');
        hr_buf_clear(&out);
        int rc = hr_url_canonical(hr_buf_slice(&in), &out, &err);
        if (hosts[k].ok) {
            cr_expect_eq(rc, HR_OK, "host of %zu: %s", hosts[k].len, err.msg);
            cr_expect_eq(out.len, 8 + hosts[k].len + 1);
        } else {
            cr_expect_eq(rc, HR_EINVAL, "host of %zu", hosts[k].len);
            cr_expect(strstr(err.msg, "over 253 bytes") != NULL, "%s", err.msg);
        }
    }
    hr_buf_clear(&in);
    hr_buf_append_str(&in, "http://");
    hr_buf_append(&in, host, 63);
    hr_buf_append_str(&in, ".com/");
    cr_assert_eq(hr_url_canonical(hr_buf_slice(&in), &out, &err), HR_OK, "%s", err.msg);
    hr_buf_clear(&in);
    hr_buf_append_str(&in, "http://");
    hr_buf_append(&in, host + 64, 63);
    hr_buf_append_str(&in, "a.com/");
    cr_assert_eq(hr_url_canonical(hr_buf_slice(&in), &out, &err), HR_EINVAL);
    cr_assert(strstr(err.msg, "label over 63") != NULL, "%s", err.msg);
    hr_buf_free(&in);
    hr_buf_free(&out);
}

Test(url, host_of_canonical) {
    static const struct {
        const char *url, *host;
    } cases[] = {
        {"https://example.com/", "example.com"},
        {"https://example.com:8080/a", "example.com"},
        {"https://example.com/?a=b:c", "example.com"},
        {"https://[::1]:8080/", "[::1]"},
        {"https://[2001:db8::1]/", "[2001:db8::1]"},
        {"https://a.b", "a.b"},
        {"http://example.com/", ""},
        {"https:/", ""},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hr_slice h = hr_url_host(hr_slice_str(cases[i].url));
        cr_expect(hr_slice_eq(h, hr_slice_str(cases[i].host)), "%s: got %.*s", cases[i].url, (int)h.len,
                  h.ptr ? h.ptr : "");
    }
    /* the host of every canonical URL in the table is its canonical host */
    for (size_t i = 0; i < sizeof ACCEPT / sizeof ACCEPT[0]; i++) {
        hr_slice h = hr_url_host(hr_slice_str(ACCEPT[i].want));
        hr_buf out = HR_BUF_INIT;
        cr_expect_eq(hr_url_canonical_host(h, &out, NULL), HR_OK, "%s", ACCEPT[i].want);
        cr_expect(hr_slice_eq(h, hr_buf_slice(&out)), "%s", ACCEPT[i].want);
        hr_buf_free(&out);
    }
}

Test(url, canonical_host) {
    static const struct {
        const char *in, *want; /* want NULL: refused */
    } cases[] = {
        {"Example.COM", "example.com"},
        {"www.example.com.", "example.com"},
        {"www.com", "www.com"},
        {"[::1]", "[::1]"},
        {"[0:0::1]", "[::1]"},
        {"xn--bcher-kva.de", "xn--bcher-kva.de"},
        {"", NULL},
        {"example.com:80", NULL},
        {"example.com/", NULL},
        {"a..b", NULL},
        {"b\303\274cher.de", NULL},
        {"exa mple.com", NULL},
        {"[::1]:80", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hr_buf out = HR_BUF_INIT;
        hr_err err = {0};
        int rc = hr_url_canonical_host(hr_slice_str(cases[i].in), &out, &err);
        if (cases[i].want) {
            cr_expect_eq(rc, HR_OK, "%s: %s", cases[i].in, err.msg);
            if (rc == HR_OK) cr_expect_str_eq(out.data, cases[i].want);
        } else {
            cr_expect_eq(rc, HR_EINVAL, "%s accepted", cases[i].in);
            cr_expect(strncmp(err.msg, "host ", 5) == 0, "%s: detail names the field: %s", cases[i].in,
                      err.msg);
            cr_expect_eq(out.len, 0);
        }
        hr_buf_free(&out);
    }
}

Test(url, hash_of_variants) {
    static const char *const variants[] = {
        "http://www.example.com/story/index.html?utm_source=tw#top",
        "https://EXAMPLE.com:443/story/",
        "http://user:pw@example.com./story/./?fbclid=1",
        "https://example.com/%73tory",
    };
    hr_buf first = HR_BUF_INIT, out = HR_BUF_INIT;
    cr_assert_eq(hr_url_canonical(hr_slice_str(variants[0]), &first, NULL), HR_OK);
    cr_assert_str_eq(first.data, "https://example.com/story");
    uint64_t h = hr_url_hash(hr_buf_slice(&first));
    for (size_t i = 1; i < sizeof variants / sizeof variants[0]; i++) {
        hr_buf_clear(&out);
        cr_assert_eq(hr_url_canonical(hr_slice_str(variants[i]), &out, NULL), HR_OK);
        cr_expect_str_eq(out.data, first.data);
        cr_expect_eq(hr_url_hash(hr_buf_slice(&out)), h);
    }
    /* a different page, and the case-sensitive path */
    cr_expect_neq(hr_url_hash(hr_slice_str("https://example.com/Story")), h);
    cr_expect_neq(hr_url_hash(hr_slice_str("https://example.com/story2")), h);
    /* stable: XXH3_64bits of the empty input is a published constant */
    cr_expect_eq(hr_url_hash(hr_slice_of(NULL, 0)), UINT64_C(0x2D06800538D394C2));
    hr_buf_free(&first);
    hr_buf_free(&out);
}

/* --- fuzz ---------------------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}
static size_t rnd_below(size_t n) {
    return (size_t)(rnd() % n);
}

/* Pieces that reach the parser's corners when spliced into a URL. */
static const char *const TOKENS[] = {
    "%",
    "%2",
    "%2e",
    "%2E%2E",
    "%41",
    "%c3%a9",
    "%25",
    "%00",
    "/",
    "//",
    "/./",
    "/../",
    "..",
    ".",
    "?",
    "&",
    "&&",
    "=",
    "#",
    "@",
    ":",
    ":80",
    ":443",
    ":0",
    "[",
    "]",
    "[::1]",
    "www.",
    "WWW.",
    "index.html",
    "Default.aspx",
    "utm_source=x",
    "fbclid=1",
    "\xc3\xa9",
    "\xff",
    "http://",
    "https://",
    "HTTP://",
    "a",
    "Z",
    "0",
    "-",
    "_",
    "~",
    "+",
    "|",
    "{",
    "\"",
    "\t",
    " ",
    "\\",
    "\x7f",
};

/* Mutate b in 1 to 4 places; nine times in ten only after its "://", so that
 * most mutants keep a scheme and exercise what follows. */
static void mutate(hr_buf *b) {
    int rounds = 1 + (int)rnd_below(4);
    for (int r = 0; r < rounds; r++) {
        const char *sep = b->len ? strstr(b->data, "://") : NULL;
        size_t lo = sep && rnd_below(10) ? (size_t)(sep - b->data) + 3 : 0;
        size_t pos = lo + rnd_below(b->len - lo + 1);
        switch (rnd_below(5)) {
        case 0: /* overwrite a byte */
            if (pos < b->len) b->data[pos] = (char)rnd_below(256);
            break;
        case 1: /* delete a run */
            if (pos < b->len) {
                size_t at = pos, n = 1 + rnd_below(4);
                if (n > b->len - at) n = b->len - at;
                memmove(b->data + at, b->data + at + n, b->len - at - n);
                b->len -= n;
                b->data[b->len] = '\0';
            }
            break;
        default: { /* insert a token */
            const char *t = TOKENS[rnd_below(sizeof TOKENS / sizeof TOKENS[0])];
            size_t tl = strlen(t), old = b->len;
            hr_buf_reserve(b, tl);
            memmove(b->data + pos + tl, b->data + pos, old - pos);
            memcpy(b->data + pos, t, tl);
            b->len = old + tl;
            b->data[b->len] = '\0';
        }
        }
    }
}

/* Canonicalise in; if accepted, check the output's invariants and that it is
 * a fixed point. Returns whether in was accepted. */
static bool check_one(const hr_buf *in, hr_buf *out, hr_buf *again) {
    hr_err err = {0};
    hr_buf_clear(out);
    hr_buf_append_str(out, "<>");
    int rc = hr_url_canonical(hr_buf_slice(in), out, &err);
    if (rc != HR_OK) {
        cr_assert_eq(rc, HR_EINVAL);
        cr_assert(strncmp(err.msg, "url ", 4) == 0, "detail: %s", err.msg);
        cr_assert(out->len == 2 && strcmp(out->data, "<>") == 0, "out changed on rejection");
        return false;
    }
    hr_slice c = hr_slice_of(out->data + 2, out->len - 2);
    cr_assert(c.len >= 9 && c.len <= HR_URL_MAX, "length %zu", c.len);
    cr_assert(memcmp(c.ptr, "https://", 8) == 0);
    for (size_t i = 0; i < c.len; i++) {
        unsigned char ch = (unsigned char)c.ptr[i];
        cr_assert(ch > 0x20 && ch < 0x7f && ch != '#' && ch != '\\', "byte 0x%02X in %.*s", ch, (int)c.len,
                  c.ptr);
    }
    cr_assert_gt(hr_url_host(c).len, 0);
    hr_buf_clear(again);
    rc = hr_url_canonical(c, again, &err);
    cr_assert_eq(rc, HR_OK, "canonical %.*s refused: %s", (int)c.len, c.ptr, err.msg);
    cr_assert(hr_slice_eq(c, hr_buf_slice(again)), "not idempotent:\n  in    %s\n  once  %.*s\n  twice %s",
              in->data, (int)c.len, c.ptr, again->data);
    return true;
}

Test(url, fuzz_random_and_mutated) {
    /* path and query characters, with the ones that make corners */
    static const char ALPHABET[] = "aAzZ09.-_~%2eEfF/?#&=@:[]!$'()*+,;www";
    static const char *const HOSTS[] = {"example.com", "WWW.a.b", "[::1]",   "a.com:8080",
                                        "u:p@a.com.",  "%41.b",   "x.y:443", "www.www.c.d:80"};
    hr_buf in = HR_BUF_INIT, out = HR_BUF_INIT, again = HR_BUF_INIT;
    size_t tried[4] = {0}, accepted[4] = {0}, total = 100000;
    rng_state = UINT64_C(0x9E3779B97F4A7C15);
    for (size_t it = 0; it < total; it++) {
        size_t kind = it % 4;
        hr_buf_clear(&in);
        switch (kind) {
        case 0: { /* random bytes, sometimes around the length limit */
            size_t n = it % 1000 == 0 ? HR_URL_MAX - 8 + rnd_below(16) : rnd_below(80);
            if (rnd_below(2)) hr_buf_append_str(&in, rnd_below(2) ? "http://" : "https://");
            for (size_t i = 0; i < n; i++)
                hr_buf_append_byte(&in, (uint8_t)rnd_below(256));
            break;
        }
        case 1: { /* a scheme, a host, then URL-ish characters */
            hr_buf_append_str(&in, rnd_below(2) ? "http://" : "HTTPS://");
            hr_buf_append_str(&in, HOSTS[rnd_below(sizeof HOSTS / sizeof HOSTS[0])]);
            if (rnd_below(8)) hr_buf_append_byte(&in, rnd_below(4) ? '/' : '?');
            size_t n = rnd_below(60);
            for (size_t i = 0; i < n; i++)
                hr_buf_append_byte(&in, (uint8_t)ALPHABET[rnd_below(sizeof ALPHABET - 1)]);
            break;
        }
        default: /* a table input, mutated */
            hr_buf_append_str(&in, ACCEPT[rnd_below(sizeof ACCEPT / sizeof ACCEPT[0])].in);
            mutate(&in);
            break;
        }
        tried[kind]++;
        if (check_one(&in, &out, &again)) accepted[kind]++;
    }
    cr_log_info("fuzz: accepted %zu/%zu random, %zu/%zu URL-ish, %zu/%zu mutated", accepted[0], tried[0],
                accepted[1], tried[1], accepted[2] + accepted[3], tried[2] + tried[3]);
    /* the structured inputs must mostly stay URLs, or the loop tests only rejections */
    cr_expect_gt(accepted[1], tried[1] / 3, "URL-ish: accepted %zu of %zu", accepted[1], tried[1]);
    cr_expect_gt(accepted[2] + accepted[3], (tried[2] + tried[3]) * 3 / 10, "mutated: accepted %zu of %zu",
                 accepted[2] + accepted[3], tried[2] + tried[3]);
    hr_buf_free(&in);
    hr_buf_free(&out);
    hr_buf_free(&again);
}
