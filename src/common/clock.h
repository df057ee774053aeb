/* clock.h — wall-clock milliseconds since the Unix epoch (API times) and a
 * monotonic clock (durations, timeouts, latency histograms). */
#ifndef HR_CLOCK_H
#define HR_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t hr_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline uint64_t hr_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
