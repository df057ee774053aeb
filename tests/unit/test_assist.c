/* Unit tests: the helper thread (common/assist.h). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common/assist.h"

typedef struct task {
    pthread_t ran_on;
    atomic_bool go; /* the task waits for it, so the helper stays busy */
    atomic_int runs;
} task;

static void run(void *arg) {
    task *t = arg;
    t->ran_on = pthread_self();
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

Test(assist, no_helper_runs_nothing) {
    task t = {0};
    cr_assert_not(hr_assist_start(NULL, run, &t));
    hr_assist_free(NULL);
}
