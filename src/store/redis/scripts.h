/* redis/scripts.h — the Lua scripts of the Redis backend.
 *
 * An op is a script when it must read before it writes, atomically, in one
 * round trip: hr_zrange (an exclusive (score, member) cursor and `more`),
 * hr_dadd and hr_dcount (a distinct counter spans several keys and switches
 * from an exact set to HyperLogLog buckets), hr_pset_add and hr_pset_rem (a
 * packed set is a marker key plus a zset of members, pruned of expired
 * members and given a key expiry at each write), hr_del and hr_expire
 * (which must reach the sub-keys of both), hr_tltrim (two removals as one),
 * hr_qclaim (re-delivery of expired leases, then new jobs, with their
 * delivery counts), hr_del_if_equal (compare, then delete) and
 * a guard with the ops after it (hr_zguard: redis/step.c). hr_tlrange
 * reuses the zrange script. redis/redis.c documents each script's KEYS and ARGV
 * where it builds the call; the scripts themselves are in redis/scripts.c.
 *
 * They run with EVALSHA; redis_cluster loads them on every new connection
 * and falls back to EVAL if a node lost them. */
#ifndef HR_REDIS_SCRIPTS_H
#define HR_REDIS_SCRIPTS_H

#include <stddef.h>

typedef enum {
    RS_ZRANGE,
    RS_DADD,
    RS_DCOUNT,
    RS_DEL,
    RS_EXPIRE,
    RS_PSET_ADD,
    RS_PSET_REM,
    RS_TLTRIM,
    RS_QCLAIM,
    RS_DEL_IF_EQUAL,
    RS_STEP,
    RS_COUNT_
} rs_id;

typedef struct rs_script {
    const char *name;
    const char *body; /* Lua source, NUL-terminated */
    char sha[41];     /* SHA1 of body in hex, as EVALSHA wants it */
} rs_script;

/* A script, its sha computed on first use. Static storage; thread-safe. */
const rs_script *rs_script_get(rs_id id);
/* Every script's body, in rs_id order; *n is RS_COUNT_. Static storage. */
const char *const *rs_script_bodies(size_t *n);

#endif
