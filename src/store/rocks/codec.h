/* codec.h — the RocksDB backend's encodings: metadata records (one per
 * key, its type, expiry, version and size), sub-key prefixes, and scores as
 * order-preserving bytes. The layout is drawn at the top of engine.c. */
#ifndef HR_ROCKS_CODEC_H
#define HR_ROCKS_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/slice.h"

typedef enum { T_NONE = 0, T_STRING = 1, T_COUNTER = 2, T_ZSET = 3, T_DISTINCT = 4, T_PSET = 5 } rtype;
typedef enum { D_EXACT = 0, D_SKETCH = 1 } dmode;

/* A decoded metadata record. Which fields mean something depends on type. */
typedef struct rmeta {
    uint8_t type;      /* rtype; T_NONE: no record */
    int64_t expire_at; /* ms since epoch; the key is alive while now <= expire_at; 0 never expires */
    hr_slice value;    /* T_STRING: the value (borrowed from the raw record) */
    int64_t counter;   /* T_COUNTER */
    uint64_t version;  /* T_ZSET, T_DISTINCT, T_PSET: the version in every sub-key */
    uint64_t size;     /* T_ZSET: members; T_DISTINCT exact, T_PSET: members stored (live + not yet pruned) */
    uint8_t zflags;    /* T_ZSET: ZF_* */
    hr_slice zinline; /* T_ZSET with ZF_INLINE: its entries (rocks_zinline.c), borrowed from the raw record */
    uint8_t mode;     /* T_DISTINCT: dmode */
    int64_t ttl;      /* T_DISTINCT: the ttl_ms of the last add (the compaction filter uses it) */
    int64_t width;    /* T_DISTINCT sketch: bucket width W in ms */
    int64_t oldest;   /* T_DISTINCT exact: lower bound of the members' last-add times */
    uint64_t seed;    /* T_PSET: the seed of the members' hashes */
    int64_t soonest;  /* T_PSET: lower bound of the members' non-zero expire_at; INT64_MAX: none */
    int64_t latest;   /* T_PSET: the largest non-zero expire_at of a member (exact while forever is 0) */
    uint64_t forever; /* T_PSET: members that never expire (expire_at 0) */
    uint8_t bits;     /* T_PSET: the set has 2^bits chunks (0..PSET_MAX_BITS) */
} rmeta;

/* T_ZSET flags (bit 8 is unused). ZF_MEM: the set's order lives in memory
 * (rocks/zset_memory.c), not in "zindex", and its member records in
 * "memsetmembers" instead of "subkeys". ZF_INLINE: a small set's entries live in its metadata record
 * itself (rocks_zinline.c), with no sub-keys at all. */
#define ZF_MEM 1
#define ZF_INLINE 2
/* ZF_TL: a set of times (HR_DECL_TIME_SET), from its creation: once out of
 * line, its order is kept in "timelists" instead of "zindex", and its
 * member records in "timesetmembers" instead of "subkeys" (rocks_ztl.c). */
#define ZF_TL 4

/* A packed set has at most 2^PSET_MAX_BITS chunks (rocks_pset.c). */
#define PSET_MAX_BITS 16

/* Decode raw (borrowed; m->value points into it). 0, or -1 when corrupt. */
int meta_decode(hr_slice raw, rmeta *m);
/* Append the encoding of m to out (strings: header and m->value). */
void meta_encode(const rmeta *m, hr_buf *out);
/* True when m is a record and has not expired at now. A packed set also
 * stops existing when its last member expires (store.h: an empty set does
 * not exist), a member counting while now < its expire_at. */
static inline bool meta_alive(const rmeta *m, int64_t now) {
    if (m->type == T_NONE || (m->expire_at != 0 && now > m->expire_at)) return false;
    return m->type != T_PSET || m->forever > 0 || now < m->latest;
}

/* Sub-keys (CF_SUB, CF_ZINDEX, CF_SKETCH) all start with this prefix. */
void key_prefix(hr_buf *out, hr_slice key, uint64_t version);
/* The first key after every key with this prefix (the prefix of version+1). */
void key_prefix_end(hr_buf *out, hr_slice key, uint64_t version);
/* Split a sub-key into user key, version and what follows. -1 if malformed. */
int key_parse(hr_slice sub, hr_slice *key, uint64_t *version, hr_slice *rest);

/* Scores as 8 bytes whose unsigned big-endian order is the order of the
 * doubles (-0.0 is stored as 0.0). */
uint64_t score_encode(double d);
double score_decode(uint64_t u);
void append_u64(hr_buf *out, uint64_t v);
uint64_t load_u64(const void *p);

/* Sketch CF tags after the prefix. */
#define SKETCH_BUCKET 'B' /* 'B' | bucket number u64: an HLL sketch (hll.h encodings) */
#define SKETCH_UNION 'U'  /* 'U': cached union of the closed alive buckets */

#endif
