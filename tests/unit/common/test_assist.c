/* Unit tests: the helper thread (common/assist.h). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common/assist.h"
#include "common/clock.h"

typedef struct task {
    pthread_t ran_on;
    atomic_bool started;
    atomic_bool go; /* the task waits for it, so the helper stays busy */
    atomic_int runs;
} task;

static void run(void *arg) {
    task *t = arg;
    t->ran_on = pthread_self();
    atomic_store(&t->started, true);
    while (!atomic_load(&t->go))
        usleep(1000);
    atomic_fetch_add(&t->runs, 1);
}

Test(assist, a_task_runs_on_the_helper_and_join_waits_for_it) {
    hr_assist *h = hr_assist_new();
    cr_assert_not_null(h);
    for (int round = 0; round < 3; round++) {
        task t = {0};
        cr_assert(hr_assist_start(h, run, &t), "round %d: the helper is idle", round);
        /* busy: another caller is told to run its task itself */
        task other = {0};
        atomic_store(&other.go, true);
        cr_assert_not(hr_assist_start(h, run, &other), "round %d: the helper is busy", round);
        cr_assert_eq(atomic_load(&other.runs), 0);
        usleep(5000);
        cr_assert_eq(atomic_load(&t.runs), 0, "still waiting for go");
        atomic_store(&t.go, true);
        cr_assert(hr_assist_join(h), "round %d: it ran on the helper", round);
        cr_assert_eq(atomic_load(&t.runs), 1, "round %d: joined after the task ended", round);
        cr_assert_not(pthread_equal(t.ran_on, pthread_self()), "on another thread");
    }
    hr_assist_free(h);
}

Test(assist, a_task_not_started_is_taken_back) {
    /* join right after start: the helper has likely not woken yet; either
     * way the task runs exactly once, on the helper or by the caller */
    hr_assist *h = hr_assist_new();
    int taken_back = 0;
    for (int round = 0; round < 200; round++) {
        task t = {0};
        atomic_store(&t.go, true);
        cr_assert(hr_assist_start(h, run, &t));
        if (!hr_assist_join(h)) {
            taken_back++;
            run(&t);
        }
        cr_assert_eq(atomic_load(&t.runs), 1, "round %d", round);
    }
    cr_log_info("%d of 200 taken back", taken_back);
    hr_assist_free(h);
}

Test(assist, a_task_late_at_the_deadline_is_left_to_the_helper) {
    hr_assist *h = hr_assist_new();
    for (int round = 0; round < 3; round++) {
        task t = {0};
        cr_assert(hr_assist_start(h, run, &t), "round %d", round);
        while (!atomic_load(&t.started)) /* until the helper has started it */
            usleep(1000);
        int64_t t0 = (int64_t)hr_mono_ns();
        cr_assert_eq(hr_assist_join_by(h, t0 + 20 * 1000000), HR_ASSIST_LATE, "round %d", round);
        cr_assert_geq((int64_t)hr_mono_ns() - t0, 20 * 1000000, "it waited until the deadline");
        /* left running: the helper is busy until the task ends, then idle
         * again with no join */
        task other = {0};
        atomic_store(&other.go, true);
        cr_assert_not(hr_assist_start(h, run, &other), "round %d: busy with the late task", round);
        atomic_store(&t.go, true);
        int waited = 0;
        while (!hr_assist_start(h, run, &other) && waited++ < 5000)
            usleep(1000);
        cr_assert_lt(waited, 5000, "round %d: the helper is idle again after the late task", round);
        cr_assert_eq(atomic_load(&t.runs), 1, "round %d: the late task ran once", round);
        if (!hr_assist_join(h)) run(&other); /* not started yet: taken back */
        cr_assert_eq(atomic_load(&other.runs), 1);
    }
    hr_assist_free(h);
}

Test(assist, a_task_done_by_the_deadline_is_joined) {
    hr_assist *h = hr_assist_new();
    int done = 0;
    for (int round = 0; round < 50; round++) {
        task t = {0};
        atomic_store(&t.go, true);
        cr_assert(hr_assist_start(h, run, &t));
        hr_assist_end end = hr_assist_join_by(h, (int64_t)hr_mono_ns() + (int64_t)10 * 1000000000);
        cr_assert_neq(end, HR_ASSIST_LATE, "round %d: the task takes microseconds, the deadline 10 s", round);
        if (end == HR_ASSIST_TAKEN_BACK) run(&t);
        done += end == HR_ASSIST_DONE;
        cr_assert_eq(atomic_load(&t.runs), 1, "round %d", round);
    }
    cr_log_info("%d of 50 joined done", done);
    hr_assist_free(h);
}

Test(assist, freeing_waits_for_a_late_task) {
    hr_assist *h = hr_assist_new();
    task t = {0};
    cr_assert(hr_assist_start(h, run, &t));
    while (!atomic_load(&t.started))
        usleep(1000);
    cr_assert_eq(hr_assist_join_by(h, (int64_t)hr_mono_ns()), HR_ASSIST_LATE);
    atomic_store(&t.go, true);
    hr_assist_free(h); /* returns once the late task has ended */
    cr_assert_eq(atomic_load(&t.runs), 1);
}

Test(assist, no_helper_runs_nothing) {
    task t = {0};
    cr_assert_not(hr_assist_start(NULL, run, &t));
    hr_assist_free(NULL);
}
