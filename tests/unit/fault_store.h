/* fault_store.h — a store wrapper that makes a herald server fail the way
 * a real one can, for tests of what the code above the store does then.
 *
 * CRASH. fault_store_crash(inner, at, keep) wraps inner: the batches a
 * caller runs through it run on inner, until its batch number `at` (0 is
 * the first). Of that batch only the ops whose bit is set in keep run: the
 * others are the part of a pipeline (on Redis Cluster, the commands for
 * other nodes) that a server killed mid-way never sent. That batch answers
 * HR_EIO, and so does every batch after it, without running: the server is
 * gone. A guard and the ops after it (store.h, hr_zguard) are one step,
 * sent whole or not at all: they are one part of the batch, whose bit is
 * the guard's. A store whose batches are atomic (RocksDB: one WriteBatch) can only
 * die between batches: keep must then be 0 or every op (FAULT_KEEP_ALL).
 * A killed server's leases (core/lease.h) stay until they expire;
 * fault_store_expire_leases deletes the ones it took at once, as their
 * expiry would a moment later, so that a test's retry need not wait.
 *
 * SPLIT. fault_store_split(inner, at, first, between, arg): batch `at` runs
 * in two parts, the ops whose key contains `first` and then the others,
 * with between(arg) in the middle (another server's writes, on inner): on
 * Redis Cluster a pipeline's commands for different nodes arrive in any
 * order, and another server's can come in between.
 *
 * Writes through a wrapper reach inner past inner's hr_store_exec, so
 * inner's write stamps (store.h) do not count them, as they would not count
 * another server's: a home page kept by feeds over inner (core/feeds_memo.c)
 * is not told of them. A test that reads such a page after writing through a
 * wrapper reads it first after a write through inner that changes it. */
#ifndef HR_TEST_FAULT_STORE_H
#define HR_TEST_FAULT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define FAULT_KEEP_ALL UINT64_MAX

hr_store *fault_store_crash(hr_store *inner, size_t at, uint64_t keep);
hr_store *fault_store_split(hr_store *inner, size_t at, const char *first, void (*between)(void *),
                            void *arg);
/* Whether the fault happened (the batch `at` was reached). */
bool fault_store_hit(const hr_store *s);
/* How many parts (ops, a step counting as one) the batch the fault hit
 * had. */
size_t fault_store_batch_len(const hr_store *s);
/* Delete on inner the keys the ops run through s took with
 * hr_put_if_missing (leases). */
void fault_store_expire_leases(hr_store *s);

/* Call one(ctx, at, keep) at every crash point of one operation: each batch
 * `at` from 0 on, with every subset `keep` of its parts where inner's batches
 * are not atomic (a pipeline cut anywhere), or none and all of them where
 * they are. one makes a fresh case, crashes it with fault_store_crash(inner,
 * at, keep), checks what the retry repairs, and answers how many parts
 * batch `at` had (fault_store_batch_len): 0 once `at` is past the operation's last batch, which ends the
 * walk. Returns how many crashes were tried. */
size_t fault_store_every_crash(const hr_store *inner, size_t (*one)(void *ctx, size_t at, uint64_t keep),
                               void *ctx);

/* hr_store_close frees the wrapper; inner stays open. */

#endif
