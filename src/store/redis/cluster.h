/* redis/cluster.h — a Redis Cluster client on hiredis: slots, nodes,
 * connections, pipelines and redirections. It knows nothing of herald's
 * data types; src/store/redis/redis.c maps store ops onto the commands it runs.
 *
 * Debian packages no cluster client, so routing is ours, per the Redis
 * Cluster specification:
 *
 *   key ──hash part ({tag} or whole key)──▶ CRC16 mod 16384 = slot
 *   slot ──slot map, learnt from CLUSTER SLOTS──▶ node (a master)
 *
 * The slot map is refreshed when a node answers MOVED (the slot has moved
 * for good) and when a node cannot be reached (it may have failed over);
 * ASK (a slot being migrated) is followed for that one command, prefixed
 * with ASKING, without touching the map.
 *
 * A run is one batch of commands. Commands are grouped by node; every
 * node's whole group is written before any reply is read, so the nodes work
 * in parallel and a run costs one round trip per node. Commands redirected
 * by MOVED, ASK or TRYAGAIN, or never sent because their node could not be
 * reached, go again in a next round, in their original order. Commands on
 * one key always go to one node in their order, so a read sees the writes
 * before it in the same run; commands on keys of different nodes run in
 * parallel, in no particular order between them.
 *
 * Scripts run with EVALSHA. They are loaded on every new connection, so a
 * node lacks them only after an operator's SCRIPT FLUSH; the command then
 * goes again with EVAL in the next round. That is the one case where
 * commands on one key may run out of order (those after it in the same
 * pipeline ran before it).
 *
 * Threads: one rc_cluster serves many threads at once. The slot map and
 * node table are shared, behind a rwlock (written only on MOVED and refresh).
 * Connections are not shared: a run takes a *connection set* (one lazily
 * opened hiredis context per node) from a pool and gives it back at the end,
 * so each connection serves one run at a time without a lock, and the number
 * of connections follows the number of concurrent runs, not of threads. We
 * chose a pool over thread-local sets because hr_store_close must free every
 * connection, including those of threads that are still alive, and the main
 * thread never runs pthread key destructors.
 *
 * Timeouts: every connect, write and read waits at most timeout_ms. A node
 * that failed to connect is not retried before a backoff (25 ms doubling up
 * to 1 s), so a dead node costs one timeout, not one per request. A pooled
 * connection that its node closed while it sat idle (restart, idle timeout)
 * is noticed before use by a non-blocking peek, and reopened.
 */
#ifndef HR_REDIS_CLUSTER_H
#define HR_REDIS_CLUSTER_H

#include <hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/slice.h"

#define RC_SLOTS 16384u
/* Rounds of one run that follow redirections or unreachable nodes (the
 * first sending included). Rounds that wait for a slot migration to end
 * (TRYAGAIN) are bounded by the timeout instead. */
#define RC_MAX_ROUNDS 6

/* ------------------------------------------------------------------------ */
/* Slots                                                                     */

/* CRC16-CCITT (XMODEM: polynomial 0x1021, init 0), as Redis Cluster uses. */
uint16_t rc_crc16(const void *buf, size_t len);
/* The slot of a key: CRC16 of its hash part (hr_key_hash_part) mod 16384. */
unsigned rc_key_slot(hr_slice key);
/* A short NUL-terminated tag whose slot is `slot`, the same for the life of
 * the process. "{" tag "}" before any bytes makes a key of that slot: how
 * keys derived from an untagged key are kept in its slot. */
const char *rc_slot_tag(unsigned slot);

/* ------------------------------------------------------------------------ */
/* The cluster                                                               */

typedef struct rc_cluster rc_cluster;

typedef struct rc_addr {
    const char *host; /* borrowed */
    int port;
} rc_addr;

/* Connect to the cluster through any of seeds[0..n) and learn the slot map.
 * scripts[0..n_scripts) are Lua bodies loaded (SCRIPT LOAD) on every new
 * connection, so that EVALSHA finds them; the strings are borrowed and must
 * outlive the cluster. A node with cluster support disabled is accepted as a
 * one-node "cluster" owning every slot (handy in development).
 * On failure returns HR_EUNAVAIL with err filled and *out NULL. */
int rc_cluster_open(const rc_addr *seeds, size_t n_seeds, int timeout_ms, const char *const *scripts,
                    size_t n_scripts, rc_cluster **out, hr_err *err);
/* Close every connection and free the cluster. NULL is a no-op. No run may
 * be in progress. */
void rc_cluster_free(rc_cluster *c);

/* PING every node that owns slots. HR_EUNAVAIL with err naming the node. */
int rc_cluster_ping(rc_cluster *c, hr_err *err);

/* One command of a run. The caller fills the inputs; rc_run fills the
 * outputs. argv strings are borrowed until rc_run returns. */
typedef struct rc_cmd {
    /* in */
    unsigned slot; /* where it goes: rc_key_slot of its key */
    int argc;
    const char **argv;
    const size_t *argvlen;
    /* For an EVALSHA command (argv[0] "EVALSHA", argv[1] the SHA1): the
     * script's body, sent instead with EVAL if the node answers NOSCRIPT. */
    const char *script;
    /* out */
    redisReply *reply; /* the node's answer, which may be an error reply
                        * (WRONGTYPE...); NULL when rc != HR_OK. Owned
                        * by the command: free with rc_cmds_release. */
    int rc;            /* HR_OK, or HR_EUNAVAIL when no answer came
                        * (HR_EIO when a node refused a transaction) */
    const char *node;  /* "host:port" that answered or failed; valid
                        * until the cluster is freed */
    /* private to rc_run */
    int target;     /* node index this round */
    int ask_target; /* node index after ASK, or -1 */
    uint8_t state;
    bool eval; /* send EVAL instead of EVALSHA */
} rc_cmd;

/* Run cmds[0..n) as one pipeline per node (see the top of this file). With
 * `atomic`, every command must be of one slot (else HR_EINVAL, nothing
 * sent) and they run as MULTI ... EXEC on its node: all or none.
 * Returns HR_OK when every command got an answer; otherwise the first
 * failure (HR_EUNAVAIL: node unreachable, timed out, redirected too often,
 * slot not served) with err filled, and each unanswered command has rc set.
 * A command whose rc is HR_EUNAVAIL may or may not have run (with `atomic`:
 * all of them or none). */
int rc_run(rc_cluster *c, rc_cmd *cmds, size_t n, bool atomic, hr_err *err);
/* Free the replies of cmds[0..n). */
void rc_cmds_release(rc_cmd *cmds, size_t n);

/* ------------------------------------------------------------------------ */
/* Observability and test hooks                                              */

typedef struct rc_stats {
    uint64_t round_trips; /* node pipelines sent */
    uint64_t rounds;      /* rounds of runs (1 per run without redirection) */
    uint64_t moved, ask, tryagain, noscript;
    uint64_t refreshes; /* slot map reloads from CLUSTER SLOTS */
    uint64_t connects;  /* connections opened */
} rc_stats;

rc_stats rc_cluster_stats(rc_cluster *c);

/* Tests only. Make the cached slot map wrong, as after a resharding the
 * client has not seen: every slot is pointed at the next master of the node
 * owning it, so the next command on any slot gets MOVED. */
void rc_cluster_debug_rotate_slots(rc_cluster *c);
/* Tests only. Point every slot at host:port (say, a closed port), as after
 * a failover the client has not seen. */
void rc_cluster_debug_point_slots(rc_cluster *c, const char *host, int port);

#endif
