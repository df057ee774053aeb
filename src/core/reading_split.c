/* reading_split.c — friends-reads' round trip 2 over two cores: a second
 * batch of URL-set tests handed to a helper thread (common/assist.h) while
 * the caller runs the first, how long the caller waits for it, and the
 * helper's part left to it when it is late (the caller then tests those
 * URLs again itself, reading_friends.c). */
#include <stdatomic.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "core/exec.h"
#include "core/reading_internal.h"

/* hr_reading_may_split and hr_reading_exec_round_trip_2: reading_internal.h. */
bool hr_reading_may_split(hr_reading *r) {
    return r->assist && 2 * atomic_load_explicit(&r->running, memory_order_relaxed) <= r->cpus;
}

/* A batch run by the helper thread (common/assist.h). The caller owns it
 * and its batch, unless it stopped waiting for them (hr_reading_exec_round_trip_2):
 * then the helper frees them when it is done. */
typedef enum { SPLIT_PENDING, SPLIT_DONE, SPLIT_LEFT } split_state;

typedef struct split_exec {
    hr_store *store;
    hr_batch *b;
    hr_err err;
    int rc;
    atomic_int state;           /* split_state */
    _Atomic int64_t started_ns; /* when the helper started it (0: not yet) */
} split_exec;

static void run_split(void *arg) {
    split_exec *e = arg;
    atomic_store_explicit(&e->started_ns, (int64_t)hr_mono_ns(), memory_order_relaxed);
    e->rc = hr_core_exec(e->store, e->b, 0, "friends-reads", &e->err);
    int expect = SPLIT_PENDING;
    if (!atomic_compare_exchange_strong(&e->state, &expect,
                                        SPLIT_DONE)) { /* SPLIT_LEFT: the caller went on */
        hr_batch_free(e->b);
        free(e);
    }
}

/* How long a caller that has run its part waits for the helper's: until
 * the helper has run as long as the caller took, and a quarter of that
 * again. The helper's part is the smaller (friends_reads), so on time it is
 * done before. A helper later than that has most likely lost its core for
 * milliseconds (assist.h), and the caller runs the helper's part again
 * itself. */
static int64_t split_deadline(const split_exec *e, int64_t own_start, int64_t own_end) {
    int64_t own = own_end - own_start, started = atomic_load_explicit(&e->started_ns, memory_order_relaxed);
    if (started < own_start) started = own_start; /* not started: hr_assist_join_by takes it back */
    return started + own + own / 4 + 50000;       /* and 50 us for the handover */
}

int hr_reading_exec_round_trip_2(hr_reading *r, hr_batch *b2, hr_batch **b2s, bool *late, hr_err *err) {
    *late = false;
    split_exec *e = NULL;
    if (*b2s) {
        e = hr_xcalloc(1, sizeof *e);
        *e = (split_exec){.store = r->store, .b = *b2s, .rc = HR_OK};
        atomic_init(&e->state, SPLIT_PENDING);
        atomic_init(&e->started_ns, 0);
    }
    bool helped = e && hr_assist_start(r->assist, run_split, e);
    int64_t t0 = (int64_t)hr_mono_ns();
    int rc = hr_batch_len(b2) > 0 ? hr_core_exec(r->store, b2, 0, "friends-reads", err) : HR_OK;
    hr_assist_end end = HR_ASSIST_TAKEN_BACK;
    if (helped)
        end =
            hr_assist_join_by(r->assist, r->split_no_wait ? 0 : split_deadline(e, t0, (int64_t)hr_mono_ns()));
    int expect = SPLIT_PENDING;
    if (end == HR_ASSIST_LATE && atomic_compare_exchange_strong(&e->state, &expect, SPLIT_LEFT)) {
        *b2s = NULL; /* the helper frees it */
        *late = true;
        return rc;
    }                            /* else done after all */
    if (e && r->split_no_wait) { /* tests: the caller's path for a late part, every time */
        hr_batch_free(*b2s);
        *b2s = NULL;
        *late = true;
        free(e);
        return rc;
    }
    if (e && end == HR_ASSIST_TAKEN_BACK && rc == HR_OK) run_split(e);
    if (rc == HR_OK && e && e->rc != HR_OK) {
        *err = e->err;
        rc = e->rc;
    }
    free(e);
    return rc;
}
