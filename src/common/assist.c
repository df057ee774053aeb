/* assist.c — a helper thread that runs one task for a caller at a time
 * (assist.h says why). A task's handover and its end go through one mutex
 * and condition variable: a few microseconds each way when the helper's
 * core is free, against tasks of hundreds. When it is not, the helper may
 * start late, so a join that finds the task not started takes it back,
 * and a join with a deadline leaves a late one to the helper. */
#include "common/assist.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/alloc.h"

/* IDLE -> OFFERED (a caller's start) -> RUNNING (the helper took it) ->
 * DONE -> IDLE (the caller's join); or OFFERED -> IDLE, taken back by a
 * join that came first; or RUNNING, left (detached) by a join past its
 * deadline, -> IDLE when fn returns. */
typedef enum { IDLE, OFFERED, RUNNING, DONE, STOPPING } assist_state;

struct hr_assist {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* state changed */
    assist_state state;
    bool detached; /* RUNNING, and no join will come */
    hr_assist_fn fn;
    void *arg;
};

static void *assist_main(void *p) {
    hr_assist *h = p;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (h->state != OFFERED && h->state != STOPPING)
            pthread_cond_wait(&h->changed, &h->lock);
        if (h->state == STOPPING) break;
        h->state = RUNNING;
        pthread_mutex_unlock(&h->lock);
        h->fn(h->arg);
        pthread_mutex_lock(&h->lock);
        h->state = h->detached ? IDLE : DONE;
        h->detached = false;
        pthread_cond_broadcast(&h->changed);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

hr_assist *hr_assist_new(void) {
    hr_assist *h = hr_xcalloc(1, sizeof *h);
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_t ca; /* deadlines are CLOCK_MONOTONIC */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->changed, &ca);
    pthread_condattr_destroy(&ca);
    h->state = IDLE;
    if (pthread_create(&h->thread, NULL, assist_main, h) != 0) {
        pthread_cond_destroy(&h->changed);
        pthread_mutex_destroy(&h->lock);
        free(h);
        return NULL;
    }
    return h;
}

void hr_assist_free(hr_assist *h) {
    if (h == NULL) return;
    pthread_mutex_lock(&h->lock);
    while (h->state == RUNNING || h->state == OFFERED) /* a task's caller joins it before this */
        pthread_cond_wait(&h->changed, &h->lock);
    h->state = STOPPING;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    pthread_cond_destroy(&h->changed);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

bool hr_assist_start(hr_assist *h, hr_assist_fn fn, void *arg) {
    if (h == NULL || pthread_mutex_trylock(&h->lock) != 0)
        return false; /* busy handing over: run it yourself */
    bool idle = h->state == IDLE;
    if (idle) {
        h->fn = fn;
        h->arg = arg;
        h->state = OFFERED;
        pthread_cond_broadcast(&h->changed);
    }
    pthread_mutex_unlock(&h->lock);
    return idle;
}

bool hr_assist_join(hr_assist *h) {
    return hr_assist_join_by(h, INT64_MAX) == HR_ASSIST_DONE;
}

hr_assist_end hr_assist_join_by(hr_assist *h, int64_t deadline_ns) {
    struct timespec until = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    pthread_mutex_lock(&h->lock);
    hr_assist_end end = HR_ASSIST_DONE;
    if (h->state == OFFERED) { /* the helper has not started it: take it back */
        end = HR_ASSIST_TAKEN_BACK;
    } else {
        int rc = 0; /* ETIMEDOUT, or EINVAL for a deadline before the epoch: stop waiting */
        while (h->state != DONE && rc == 0)
            rc = deadline_ns == INT64_MAX ? pthread_cond_wait(&h->changed, &h->lock)
                                          : pthread_cond_timedwait(&h->changed, &h->lock, &until);
        if (h->state != DONE) end = HR_ASSIST_LATE;
    }
    if (end == HR_ASSIST_LATE)
        h->detached = true; /* the helper goes back to IDLE when fn returns */
    else
        h->state = IDLE;
    pthread_mutex_unlock(&h->lock);
    return end;
}
