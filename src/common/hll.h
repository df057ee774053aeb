/* hll.h — HyperLogLog cardinality sketches (p = 14) for the distinct counters.
 *
 * A sketch estimates how many distinct members were added to it, in 16 KiB,
 * with a standard error of 1.04 / sqrt(16384) = 0.81 %, at any cardinality
 * from 0 to far beyond 10^9. Sketches merge losslessly (register-wise max), so
 * the union of several time buckets is estimated as well as each bucket.
 *
 * The RocksDB backend stores one sketch per time bucket of a distinct counter
 * (see store/rocks/engine.c) and updates it with a merge operator whose operands are
 * the "update" encoding below; the Redis backend uses Redis' own PFADD and
 * does not use this module. See hll.c for the algorithm and its sources.
 *
 * Not thread-safe: a sketch belongs to one thread at a time. The caller
 * allocates sketches (16 KiB each: on the heap, not the stack, in server
 * threads); pointers passed in are borrowed for the call.
 */
#ifndef HR_HLL_H
#define HR_HLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define HLL_P 14                    /* index bits */
#define HLL_REGISTERS (1u << HLL_P) /* 16384 */
#define HLL_Q (64 - HLL_P)          /* bits left for the rank: 50 */
#define HLL_RANK_MAX (HLL_Q + 1)    /* largest register value: 51 (fits 6 bits) */

/* A dense sketch: register i is reg[i], one byte each (values 0..51). One byte
 * a register rather than 6 bits packed: merges and estimates are plain byte
 * loops the compiler vectorises, and on disk LZ4/Zstd takes the slack out. */
typedef struct hll {
    uint8_t reg[HLL_REGISTERS];
} hll;

/* Zero every register (the empty set). */
void hll_clear(hll *h);

/* The register index and rank of a member: XXH3-64 of its bytes, top 14 bits
 * the index, rank 1 + the leading zeros of the other 50 bits (1..51). data
 * is borrowed. */
void hll_hash(const void *data, size_t len, uint32_t *index, uint8_t *rank);
/* The same from an already computed 64-bit hash. */
void hll_split(uint64_t hash, uint32_t *index, uint8_t *rank);

/* Raise register index to rank if it is lower; true when it changed. */
bool hll_set(hll *h, uint32_t index, uint8_t rank);
/* Add a member (hll_hash + hll_set); true when a register changed, i.e. the
 * sketch's estimate may have moved. Re-adding a member never changes it. */
bool hll_add(hll *h, const void *data, size_t len);
/* dst = register-wise max(dst, src): dst becomes the sketch of the union. */
void hll_merge(hll *dst, const hll *src);
/* The estimated number of distinct members (0 for an empty sketch). */
double hll_estimate(const hll *h);
/* The estimate of the union of a and b, without building it. */
double hll_estimate_union(const hll *a, const hll *b);
/* Number of non-zero registers. */
size_t hll_nonzero(const hll *h);

/* Serialised forms --------------------------------------------------------
 *
 *   dense    'D' | 16384 bytes, register i at byte i
 *   updates  'U' | n x 3 bytes, each (index << 6 | rank) as 24-bit big-endian
 *
 * "Updates" is both the sparse form of a mostly-empty sketch and the merge
 * operand that raises a few registers; an entry may repeat an index (the
 * highest rank wins) and order does not matter. Decoding is always a merge
 * into an existing sketch, so a stored value and its operands are applied the
 * same way. */
#define HLL_ENC_DENSE 'D'
#define HLL_ENC_UPDATES 'U'
#define HLL_DENSE_BYTES (1 + HLL_REGISTERS)

/* Registers set up to which hll_encode writes the updates form (6 KiB). */
#define HLL_SPARSE_MAX 2048

/* Append h to out: the updates form up to HLL_SPARSE_MAX registers set, else
 * dense. */
void hll_encode(const hll *h, hr_buf *out);
/* Append a one-entry updates encoding (the merge operand of one add). */
void hll_encode_update(uint32_t index, uint8_t rank, hr_buf *out);
/* Merge the encoded sketch (either form) in data[0..len) into h. Returns 0,
 * or -1 when data is malformed (h may then be partly updated). */
int hll_decode_merge(hll *h, const void *data, size_t len);
/* h = the encoded sketch (hll_clear + hll_decode_merge, faster for dense). */
int hll_decode(hll *h, const void *data, size_t len);

#endif
