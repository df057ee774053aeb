/* assist.h — a helper thread that runs one task for a caller at a time.
 *
 * WHY. A friends-reads of a user with ~450 friends over a feed of popular
 * URLs tests the friends against ~65 URL sets: ~29,000 member tests, most of
 * the call. The tests of different URLs are independent, so a caller can
 * hand part of them to another core while it does the rest. Under load
 * every core is busy with requests of its own and the helper is taken, so a
 * call that finds it busy runs the task itself: the helper lowers latency
 * when there are cores to spare and costs nothing (but a failed try) when
 * there are not.
 *
 * USE. hr_assist_start(h, fn, arg) hands fn(arg) to the helper if it is idle
 * and returns true; the caller must then hr_assist_join(h) before it reads
 * what fn wrote. false: the helper is busy with another caller's task, and
 * the caller runs fn(arg) itself. hr_assist_join returns false if the
 * helper had not started the task (its core was busy): the task is taken
 * back, and the caller runs it itself, rather than wait for that core.
 *
 * LATE TASKS. A helper that has started may still stop for milliseconds:
 * on a virtual machine its core is sometimes given to another guest, and a
 * join then waits many times as long as the part takes. hr_assist_join_by
 * waits only until a deadline; a task still running then is left to the
 * helper (HR_ASSIST_LATE), which goes back to idle by itself when fn
 * returns. From then on fn(arg) and the caller share arg with no join
 * between them: they must agree who frees it, and the caller does the
 * task's work again if it needs it (core/reading_split.c). */
#ifndef HR_ASSIST_H
#define HR_ASSIST_H
#include <stdbool.h>
#include <stdint.h>

typedef struct hr_assist hr_assist;
typedef void (*hr_assist_fn)(void *arg);

/* A helper with its thread started; NULL if the thread could not start. */
hr_assist *hr_assist_new(void);
/* Stop the thread (waiting for a task it runs) and free h; NULL is a no-op. */
void hr_assist_free(hr_assist *h);
bool hr_assist_start(hr_assist *h, hr_assist_fn fn, void *arg);
bool hr_assist_join(hr_assist *h);

typedef enum {
    HR_ASSIST_DONE,       /* fn(arg) returned on the helper */
    HR_ASSIST_TAKEN_BACK, /* the helper had not started it: the caller runs it */
    HR_ASSIST_LATE        /* still running at the deadline: left to the helper */
} hr_assist_end;

/* hr_assist_join, waiting until deadline_ns at most (CLOCK_MONOTONIC, as
 * hr_mono_ns in common/clock.h). */
hr_assist_end hr_assist_join_by(hr_assist *h, int64_t deadline_ns);

#endif
