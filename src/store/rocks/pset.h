/* pset.h — packed sets of 64-bit members (pset.c), the images of large
 * ones (pset_image.c) and their member columns (pset_columns.c). */
#ifndef HR_ROCKS_PSET_H
#define HR_ROCKS_PSET_H

#include "store/rocks/engine.h"

/* Each op runs one op of the batch, sets its result (memory in
 * x->b->arena) and returns 0, or a store failure (HR_EIO) that aborts the
 * batch. */
int op_pset_add(rx *x, hr_op *op);
int op_pset_rem(rx *x, hr_op *op);
int op_pset_test(rx *x, hr_op *op);
int op_pset_card(rx *x, hr_op *op);

/* Images of large packed sets (rocks_pimage.c says what and why). */
/* A set of fewer chunks, or a test of fewer members, goes through the
 * chunks. With a minimum of 8 chunks, a zipf-feed friends-reads still
 * searched many of its tests in the chunks of smaller sets; 2 made it
 * cheaper. A test of a few members (a story's seen check) gains nothing
 * from an image that would cost a read of every chunk to build. */
#define PIMG_MIN_CHUNKS 2
#define PIMG_MIN_MEMBERS 64
#define PIMG_MAX_BYTES ((size_t)16 << 20) /* a larger set (~700,000 members) has no image */
#define PIMG_SLOTS 16384                  /* the cache's slots */
#define PIMG_REBUILD_MS 1000              /* a set's image is built at most once in this time */
#define PIMG_BUILDS_PER_BATCH 4
#define PIMG_LOG_SLOTS 1024 /* the write log's slots, by the sets' key hashes */
#define PIMG_LOG_ENTRIES 64 /* the writes a slot remembers */
/* An image opened for searching: of the set's chunks as its snapshot saw
 * them, after the sequence number stamp, cut into 2^bits chunks. */
typedef struct pimg {
    const unsigned char *slots;
    uint64_t nslots, nall, stamp; /* nall: the slots, the last gap's included */
    unsigned bits;
} pimg;
/* One chunk as stored: n big-endian hashes, and their expiries (NULL: none). */
typedef struct pimg_chunk {
    const unsigned char *hs, *exps;
    size_t n;
} pimg_chunk;
/* What a batch's packed-set test does about images: img.slots set, it is
 * answered from that image, except for members of the ndirty chunks marked
 * in dirty (a bit per chunk), written since the image was built, which are
 * searched in those chunks; build, it reads every chunk and offers one. */
typedef struct pimg_op {
    pimg img;
    unsigned char *dirty;
    uint32_t ndirty;
    bool build;
} pimg_op;
static inline bool pimg_dirty(const pimg_op *st, uint32_t chunk) {
    return st->ndirty && (st->dirty[chunk / 8] >> (chunk % 8) & 1);
}
/* Whether a test of n members against set m would use an image. */
bool pimg_wanted(const rmeta *m, size_t n_members);
/* The image of the chunks (every one, in order) of a set of version
 * version cut into 2^bits chunks, read at a snapshot after sequence number
 * stamp, into out; false (out unusable) if it would pass PIMG_MAX_BYTES or
 * the hashes are not in order. */
bool pimg_build(uint64_t version, unsigned bits, uint64_t stamp, const pimg_chunk *chunks, size_t nc,
                hr_buf *out);
/* Open an image of the set's version and chunking; false if it is of another. */
bool pimg_open(hr_slice value, uint64_t version, unsigned bits, pimg *out);
/* Whether hash h is in the image, and its expiry. */
bool pimg_find(const pimg *im, uint64_t h, int64_t *expire_at);
/* Ask the CPU for the lines pimg_find will read for h. */
void pimg_prefetch(const pimg *im, uint64_t h);
/* The entry in slot i (< nall): false if the slot is a gap. */
bool pimg_entry(const pimg *im, uint64_t i, uint64_t *h, int64_t *expire_at);
/* At prefetch time, for a packed-set test op of set m: true if the test is
 * answered from a cached image (pimg_of(x, op)->img), which x now holds;
 * else it may be asked to build one (pimg_of(x, op)->build). */
bool pimg_plan(rx *x, const hr_op *op, const rmeta *m);
/* op's state (NULL: pimg_plan was never called for this batch). */
const pimg_op *pimg_of(const rx *x, const hr_op *op);
/* Build the image of set m from all its chunks and offer it to the cache. */
void pimg_offer(rx *x, const hr_op *op, const rmeta *m, const pimg_chunk *chunks, size_t nc);
/* Around the commit, as pset_before_write / _after_write (which call them
 * with the batch's changed chunks, n keys): the chunks the batch writes are
 * logged, so that the images built before leave them out. */
void pimg_before_write(rx *x, const hr_slice *chunks, size_t n);
void pimg_after_write(rx *x, const hr_slice *chunks, size_t n, bool ok, bool wrote, uint64_t stamp);
/* Member columns (rocks_pcols.c): a test of op's members against set m
 * answered from the column of its image img, into out and *count; false if
 * the image has no column, and none could be filled. */
typedef struct pcols pcols;
pcols *pcols_new(void);
void pcols_free(pcols *p);
bool pcols_test(rx *x, const hr_op *op, const rmeta *m, const pimg *img, unsigned char *out, int64_t *count);
/* Tests answered from columns, columns filled, member rows (tests). */
void pcols_stats(const pcols *p, uint64_t *tests, uint64_t *fills, size_t *rows);
/* The memory the columns take (their fixed tables), and the part of it
 * member rows use. */
size_t pcols_size(void);
size_t pcols_bytes(const pcols *p);
/* The store's log of chunk writes (rocks_pimage.c). */
typedef struct pimg_log pimg_log;
pimg_log *pimg_log_new(void);
void pimg_log_free(pimg_log *log);

/* splitmix64's finalizer: xor-shifts and multiplications by odd constants,
 * each invertible, so a bijection of 64-bit integers. A packed set stores
 * pset_mix(member ^ seed) for each member (rocks_pset.c); pset_unmix
 * (rocks_pcols.c) is its inverse. */
static inline uint64_t pset_mix(uint64_t z) {
    z ^= z >> 30;
    z *= UINT64_C(0xbf58476d1ce4e5b9);
    z ^= z >> 27;
    z *= UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return z;
}
uint64_t pset_unmix(uint64_t h);

/* Packed sets (rocks_pset.c). The chunks pset op will read given its key's
 * metadata m, appended to p. */
void pset_plan(rx *x, const hr_op *op, const rmeta *m, rplan *p);
/* How many chunks pset_plan may plan for op (an upper bound). */
size_t pset_plan_size(const rx *x, const hr_op *op, const rmeta *m);
/* Write every chunk the batch's hr_pset_add / hr_pset_rem changed, once
 * each; rocks.c calls it after the last op, before the commit. */
void pset_flush(rx *x);
/* Around the commit, as rx_cache_before_write / _after_write (which call
 * them): the chunk cache's records of the chunks pset_flush wrote (repeats
 * included) are marked in flux, then stored or forgotten; and the images'
 * log of them (pimg_before_write). */
void pset_before_write(rx *x);
void pset_after_write(rx *x, bool ok, bool wrote, uint64_t stamp);

#endif
