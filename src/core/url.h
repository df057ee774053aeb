/* url.h — canonical URLs: one spelling for every variant of a page.
 *
 * Social reading counts readers per page and stories are found by any of
 * their URLs, so a URL is canonicalised before it is hashed: the variants a
 * browser, a share button or a newsletter produce for one page must come out
 * as one string. The canonical form is itself a URL, and lists show it:
 *
 *     https://host[:port]/path[?query]
 *
 * What folds (and why it is safe to fold):
 *
 *   - scheme: http and https name the same page (sites redirect one to the
 *     other); both become "https://". Only http and https are accepted,
 *     in any case.
 *   - host: ASCII lower-cased (DNS is case-insensitive); one trailing dot
 *     dropped ("a.com." is the fully qualified spelling of "a.com");
 *     leading "www." labels dropped while what remains still has a dot, so
 *     "www.a.com" is "a.com" but "www.com" stays. "www2.", "m.", "amp." are
 *     not folded: those are often separate servers with other content.
 *     Percent-escapes in a host are decoded ("%61.com" is "a.com").
 *   - port: empty, 80 and 443 are dropped, whatever the scheme. Once the
 *     scheme is folded, the canonical form names "the site's web port", and
 *     the two default ports serve one site in practice. Other ports are kept,
 *     in decimal without leading zeros.
 *   - userinfo ("user:pass@") is dropped: it does not select a page, and
 *     credentials must never be stored or shown in a list.
 *   - fragment ("#...") is dropped: it never reaches the server. That
 *     includes "#!" hash-bang fragments, deprecated since 2015.
 *   - percent-encoding (RFC 3986 6.2.2.2): an escape of an unreserved
 *     character (A-Z a-z 0-9 - . _ ~) is decoded ("%7E" is "~"); every other
 *     escape keeps its meaning and has its hex upper-cased ("%2f" is "%2F").
 *     Reserved characters are never decoded: "%2F" is not "/", "%26" is not
 *     "&". Characters RFC 3986 does not allow raw in a path or query
 *     (" < > [ ] ^ ` { | }) are escaped, which is what a server receives
 *     for them anyway; a '%' not followed by two hex digits becomes "%25".
 *   - non-ASCII bytes in the path and query are percent-encoded as they
 *     stand (UTF-8 in, "%C3%A9" out), as browsers do: ".../café" and
 *     ".../caf%C3%A9" are one page. In the host they are refused: folding an
 *     internationalised name needs IDNA, so such a host must be sent in its
 *     ASCII "xn--" form, which is what browsers report (location.href).
 *     "xn--" hosts are kept as given, lower-cased.
 *   - dot segments are removed (RFC 3986 5.2.4), after escapes are decoded,
 *     so "/a/./b/../c" and "/a/%2e%2E/c" resolve as a browser resolves them.
 *   - trailing slashes are dropped ("/a/" is "/a"); an empty path is "/".
 *     Servers nearly always redirect one form to the other.
 *   - a final directory-index document is dropped ("/a/index.html" is "/a"):
 *     index.html, index.htm and index.php (the default DirectoryIndex of
 *     Apache, nginx and PHP set-ups; matched case-sensitively, since those
 *     servers are) and default.asp, default.aspx (IIS defaults; matched in
 *     any case, since IIS is case-insensitive and writes "Default.aspx").
 *     Other names (index.jsp, index.shtml, home.html) are rare defaults and
 *     are kept; only the last segment is looked at.
 *   - query: empty parameters ("a=1&&b=2&") and an empty query ("?") are
 *     dropped, and so are the tracking parameters below, whose names are
 *     compared in any case after escapes are normalised. The remaining
 *     parameters keep their order and duplicates. They are not sorted:
 *     order can matter to a server (repeated keys, "a[]=" lists, signed
 *     URLs), and a shared link is copied, not retyped, so the same page is
 *     almost never seen with its parameters reordered. Not sorting may miss
 *     a fold; sorting could merge two different pages, which is worse.
 *
 * Tracking parameters (they say who sent the reader, not what was read),
 * after Firefox's query stripping list and ClearURLs:
 *     utm_*                                       Google Analytics / Urchin
 *     mtm_* pk_campaign pk_kwd pk_keyword pk_source Matomo (Piwik) campaigns
 *       pk_medium pk_content
 *     hsa_* __hssc __hstc __hsfp hsctatracking     HubSpot ads and cookies
 *     fbclid gclid gclsrc dclid gbraid wbraid      Facebook, Google Ads
 *       gad_source srsltid                         Google Ads, Merchant Center
 *     msclkid yclid twclid ttclid li_fat_id        Bing, Yandex, X, TikTok, LinkedIn
 *       _openstat epik rb_clickid                  Yandex, Pinterest, Rebrandly
 *     igshid igsh                                  Instagram shares
 *     mc_cid mc_eid _hsenc _hsmi mkt_tok           Mailchimp, HubSpot, Marketo mails
 *       oly_anon_id oly_enc_id vero_id vero_conv   Omeda, Vero
 *       ml_subscriber ml_subscriber_hash _kx       MailerLite, Klaviyo
 *       ck_subscriber_id _bta_tid _bta_c __s       ConvertKit, Bronto, Drip
 *       wickedid s_cid                             Wicked Reports, Adobe Analytics
 *     _ga _gl                                      Google cross-domain linker
 *     ref_src ref_url                              X embeds
 * "ref", "source", "si", "s" are not on the list: real sites use them to
 * select content (GitHub's ?ref=branch).
 *
 * What deliberately does not fold: the path and query are case-sensitive
 * ("/Page" and "/page" are two pages on most servers); empty path segments
 * ("/a//b") stay; "+" in a query is not turned into "%20" (that is form
 * encoding, an application convention); IPv4 addresses are not rewritten
 * (no "0x7f.1" to "127.0.0.1"); subdomains other than "www." stay.
 *
 * IPv6 literal hosts are kept in brackets, in RFC 5952 text form
 * ("[2001:DB8:0::1]" is "[2001:db8::1]"); zone identifiers are refused.
 *
 * Refused, with HR_EINVAL and a detail naming the problem (the detail is
 * shown to API clients in a 400 problem): more than HR_URL_MAX bytes, before
 * or after canonicalisation; a scheme other than http or https; no host;
 * control characters, spaces or backslashes anywhere (a backslash is where
 * parsers disagree about the host, so it is refused rather than guessed);
 * non-ASCII, invalid characters, empty labels, labels over 63 bytes or over
 * 253 bytes in a host; a port that is not a number from 1 to 65535.
 *
 * Invariants, checked by the unit tests over random and mutated input: an
 * accepted URL gives printable ASCII starting with "https://", at most
 * HR_URL_MAX bytes, and canonicalising it again gives it back unchanged. */
#ifndef HR_URL_H
#define HR_URL_H

#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/slice.h"

#define HR_URL_MAX 2048 /* bytes, of the URL as sent and of its canonical form */

/* Append the canonical form of url (borrowed) to out. On error returns
 * HR_EINVAL with a detail in err (which may be NULL) and leaves out as it was. */
int hr_url_canonical(hr_slice url, hr_buf *out, hr_err *err);

/* Append the canonical form of a bare host (no scheme, port or path), as it
 * appears in canonical URLs, to out: "WWW.Example.com." gives "example.com",
 * "[::1]" stays "[::1]". For the selected-sites list, so that a site and the
 * hosts of canonical URLs compare byte for byte. HR_EINVAL as above, with a
 * detail that starts "host ..." rather than "url ...". */
int hr_url_canonical_host(hr_slice host, hr_buf *out, hr_err *err);

/* The host of a canonical URL, brackets included for IPv6, pointing into
 * canonical (valid as long as it is). An empty slice if canonical does not
 * start with "https://". */
hr_slice hr_url_host(hr_slice canonical);

/* The 64-bit id of a canonical URL in packed sets: XXH3_64bits, unseeded, so
 * it is stable across processes, machines and xxhash versions (XXH3's output
 * is frozen since 0.8.0). Pass the canonical form, not the URL as sent. */
uint64_t hr_url_hash(hr_slice canonical);

#endif
