/* log.h — one line per event on stderr: time, level, message.
 *
 * Lines are written with a single write(2) so that lines from concurrent
 * threads never interleave. The level is set once at start-up. */
#ifndef HR_LOG_H
#define HR_LOG_H

typedef enum { HR_LOG_DEBUG, HR_LOG_INFO, HR_LOG_WARN, HR_LOG_ERROR } hr_log_level;

void hr_log_set_level(hr_log_level level);
/* Parse "debug" / "info" / "warn" / "error"; returns 0 or -1. */
int hr_log_parse_level(const char *s, hr_log_level *out);
void hr_log(hr_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define hr_debug(...) hr_log(HR_LOG_DEBUG, __VA_ARGS__)
#define hr_info(...) hr_log(HR_LOG_INFO, __VA_ARGS__)
#define hr_warn(...) hr_log(HR_LOG_WARN, __VA_ARGS__)
#define hr_error(...) hr_log(HR_LOG_ERROR, __VA_ARGS__)

#endif
