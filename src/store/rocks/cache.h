/* cache.h — the record cache (view.c): recently read records of one kind
 * (metadata, packed-set chunks, whole small sorted sets, packed-set images)
 * kept between batches, stamped with the sequence number they were read at,
 * and the rules by which a batch may take one. */
#ifndef HR_ROCKS_CACHE_H
#define HR_ROCKS_CACHE_H

#include "store/rocks/engine.h"

/* The record cache (rocks_view.c says when a batch may use it): nslots
 * slots (a power of two: buckets of two ways) of values up to max_value
 * bytes, budget bytes of records (keys and values) in all (a record that
 * would pass it is not kept). */
rcache *rcache_new(size_t nslots, size_t max_value, size_t budget);
/* The same in memory bytes: a slot (48 bytes, half a bucket) per
 * bytes_per_slot of it, at least 1,024, rounded up to a power of two; the
 * records get the rest. */
rcache *rcache_for_memory(size_t memory, size_t bytes_per_slot, size_t max_value);
void rcache_free(rcache *c);
/* Bracket a write of a cached kind of record made outside a batch's commit
 * (stamp: the DB's latest sequence number after it). */
void rcache_write_begin(rcache *c, hr_slice key);
void rcache_write_end(rcache *c, hr_slice key, bool ok, bool found, hr_slice raw, uint64_t stamp);
/* Bytes of records the cache holds (keys and values). */
size_t rcache_bytes(rcache *c);
/* How many records the cache holds (tests). */
size_t rcache_count(rcache *c);
/* The value cached for key, if it is the one a batch whose rx.seq is seq
 * sees (not in flux, stamped <= seq); else false. *val points into the
 * cache's record, which *held keeps alive, whatever happens to the slot,
 * until rcache_release(*held) (or rx_hold: the end of the batch). */
bool rcache_take(rcache *c, hr_slice key, uint64_t seq, rblob **held, hr_slice *val);
void rcache_release(rblob *held);
/* Another reference to a record someone holds. */
void rcache_share(rblob *held);
/* A caller's form of a record it holds (hr_origin_attach), NULL if none; and
 * attaching one, counted in c's bytes until the record is freed. */
void *rcache_attached(const rblob *held);
void *rcache_attach(rcache *c, rblob *held, void *p, size_t bytes, void (*free_p)(void *));
/* Ask the CPU for the cache bucket of key in cf (record false) or for
 * key's record in it (true, once the bucket is in cache), ahead of
 * rx_cached on that key: loops ask for the bucket of the key 2 * RX_AHEAD
 * ahead and the record of the one RX_AHEAD ahead. */
void rx_cache_prefetch(rx *x, int cf, hr_slice key, bool record);
#define RX_AHEAD 8
/* Keep held until x's view is freed. */
void rx_hold(rx *x, rblob *held);
/* Offer val, read at a snapshot taken just after seq, unless a write has
 * stamped key's bucket past seq or is under way (too large: ignored). */
void rcache_offer(rcache *c, hr_slice key, hr_slice val, uint64_t seq);
/* Put the record of key in cf (CF_META, or CF_SUB for a packed-set chunk)
 * into the view from the cache when the rules allow; true if it did. Else
 * the record, once read from the DB, is offered to the cache at the end. */
bool rx_cached(rx *x, int cf, hr_slice key);
/* Around the commit's Write (rocks.c): mark the cached kinds of records the
 * batch writes as in flux; then store them (ok) or forget them, and offer
 * the ones it read. wrote: the Write was attempted. */
void rx_cache_before_write(rx *x);
void rx_cache_after_write(rx *x, bool ok, bool wrote);

#endif
