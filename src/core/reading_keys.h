/* reading_keys.h — the storage keys of social reading, in one place:
 * core/reading*.c (reads, sites, sharing) and core/trending.c (popular and
 * trending counts) share the URL keys.
 *
 * NS is the namespace ("" in the server); braces are Redis Cluster hash
 * tags, so a user's keys live in one slot, a URL's in one slot, a time
 * bucket's candidates in one slot. HEX is the URL's 64-bit hash
 * (hr_url_hash of its canonical form) as 16 lower-case hex digits; H8 is the
 * same hash as 8 big-endian bytes, used as a member.
 *
 *   {NSrs}              zset   the selected sites: member canonical host,
 *                              score = when it was selected (ms)
 *   {NSru/UID}/in       value  present while UID shares its reads: the time
 *                              it opted in (u64 big-endian)
 *   {NSru/UID}/p        pset   what UID read: URL hashes, each expiring
 *                              reading_ttl after its read
 *   {NSru/UID}/t        zset   the same reads by time: member H8, score =
 *                              the read's time (friends-popular lists these;
 *                              an opt-out walks them to delete the rest)
 *   {NSrl/HEX}/r        zset   the URL's readers: member UID, score = the
 *                              time of UID's last read of it
 *   {NSrl/HEX}/s        pset   the same readers as hashes of their ids
 *                              (hr_rk_reader), each expiring reading_ttl
 *                              after its read, for friends-reads' URL_SET
 *                              side (core/reading_record.c)
 *   {NSrl/HEX}/u        value  the URL's canonical form (for lists)
 *   {NSrl/HEX}/c/G/B    counter  distinct readers of the URL in time bucket
 *                              B (bucket number, decimal) of granularity G
 *                              (one digit; core/trending.h)
 *   {NSrp/G/B}          zset   the candidates of bucket B: member H8,
 *                              score = -(the last milestone the URL's
 *                              counter reached), so an ascending read gives
 *                              the most read first (core/trending.h)
 *
 * Identifiers never hold '{', '}' or '/', so no two keys can be confused. */
#ifndef HR_READING_KEYS_H
#define HR_READING_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include <xxhash.h>

#include "common/buf.h"
#include "common/slice.h"

/* A reader's id as a member of a URL set: a 64-bit hash (odd). Two ids
 * share a hash with probability ~2^-63: a friend would then be taken for a
 * reader of the URL. */
static inline uint64_t hr_rk_reader(hr_slice uid) {
    return XXH3_64bits(uid.ptr, uid.len) | 1;
}

/* Keys are built by appending, not with printf: a friends-reads request
 * builds one per friend, up to 5,000. */
static inline void hr_rk_hex(hr_buf *k, uint64_t v) {
    static const char digits[] = "0123456789abcdef";
    char hex[16];
    for (int i = 15; i >= 0; i--, v >>= 4)
        hex[i] = digits[v & 15];
    hr_buf_append(k, hex, 16);
}

static inline void hr_rk_open(hr_buf *k, const char *ns, const char *kind) {
    hr_buf_append_byte(k, '{');
    hr_buf_append_str(k, ns);
    hr_buf_append_str(k, kind);
}

/* Append "{NSrl/HEX}" + suffix to k (not cleared) and return all of k. */
static inline hr_slice hr_rk_url(hr_buf *k, const char *ns, uint64_t url_hash, const char *suffix) {
    hr_rk_open(k, ns, "rl/");
    hr_rk_hex(k, url_hash);
    hr_buf_append_byte(k, '}');
    hr_buf_append_str(k, suffix);
    return hr_buf_slice(k);
}

/* "{NSru/UID}" + suffix. */
static inline hr_slice hr_rk_user(hr_buf *k, const char *ns, hr_slice uid, const char *suffix) {
    hr_rk_open(k, ns, "ru/");
    hr_buf_append_slice(k, uid);
    hr_buf_append_byte(k, '}');
    hr_buf_append_str(k, suffix);
    return hr_buf_slice(k);
}

/* "{NSrs}" */
static inline hr_slice hr_rk_sites(hr_buf *k, const char *ns) {
    hr_rk_open(k, ns, "rs}");
    return hr_buf_slice(k);
}

/* "{NSrl/HEX}/c/G/B" */
static inline hr_slice hr_rk_count(hr_buf *k, const char *ns, uint64_t url_hash, int g, int64_t bucket) {
    hr_rk_url(k, ns, url_hash, "/c/");
    hr_buf_printf(k, "%d/%lld", g, (long long)bucket);
    return hr_buf_slice(k);
}

/* "{NSrp/G/B}" */
static inline hr_slice hr_rk_candidates(hr_buf *k, const char *ns, int g, int64_t bucket) {
    hr_rk_open(k, ns, "rp/");
    hr_buf_printf(k, "%d/%lld}", g, (long long)bucket);
    return hr_buf_slice(k);
}

/* A URL hash as a member (8 big-endian bytes, in buf) and back. */
static inline hr_slice hr_rk_h8(char buf[8], uint64_t url_hash) {
    hr_store_u64be(buf, url_hash);
    return hr_slice_of(buf, 8);
}

static inline bool hr_rk_h8_parse(hr_slice m, uint64_t *url_hash) {
    if (m.len != 8) return false;
    *url_hash = hr_load_u64be(m.ptr);
    return true;
}

#endif
