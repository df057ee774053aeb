/* redis/redis.h — what the Redis Cluster backend offers beyond the store
 * interface: access to its cluster client, for tests (slot-map hooks and
 * statistics in redis/cluster.h). Nothing outside src/store and the tests
 * includes it. */
#ifndef HR_STORE_REDIS_H
#define HR_STORE_REDIS_H

#include "store/redis/cluster.h"
#include "store/store.h"

/* The cluster client of a store opened on redis://, or NULL for a store of
 * another kind. Borrowed: valid until hr_store_close. */
rc_cluster *hr_redis_store_cluster(hr_store *s);

#endif
