/* err.h — herald's error codes and the caller-owned error struct.
 *
 * Every fallible function returns an int: 0 (HR_OK) or one of the negative
 * codes below. The codes, their names and their messages come from one
 * X-macro, as libuv's UV_ERRNO_MAP does, so adding a code is one line. When a
 * message must reach the log or a client, the caller passes an hr_err that
 * the callee fills; hr_err may be NULL where the caller only needs the code.
 *
 * Allocation failure is not an error code: hr_xmalloc aborts (see alloc.h),
 * so error paths cover only input, I/O and the store. */
#ifndef HR_ERR_H
#define HR_ERR_H

#include <stddef.h>

#define HR_ERRNO_MAP(X)                                                                                      \
    X(INVAL, "invalid argument")                                                                             \
    X(NOTFOUND, "not found")                                                                                 \
    X(EXISTS, "already exists")                                                                              \
    X(CONFLICT, "conflict")                                                                                  \
    X(TOOBIG, "too large")                                                                                   \
    X(LIMIT, "over a limit")                                                                                 \
    X(UNAUTH, "missing or invalid credentials")                                                              \
    X(FORBIDDEN, "not allowed for this principal")                                                           \
    X(WRONGTYPE, "key holds another type")                                                                   \
    X(IO, "store I/O error")                                                                                 \
    X(UNAVAIL, "store unavailable")                                                                          \
    X(NOTSUP, "not supported by this store")                                                                 \
    X(INTERNAL, "internal error")

enum {
    HR_OK = 0,
#define HR_ERR_ENUM_(name, msg) HR_E##name,
    HR_ERR_FIRST_ = -1000,
    HR_ERRNO_MAP(HR_ERR_ENUM_)
#undef HR_ERR_ENUM_
        HR_ERR_LAST_
};

/* A caller-owned error: the code and a human-readable message. */
typedef struct hr_err {
    int code;
    char msg[256];
} hr_err;

/* The fixed message of a code ("not found"). Never NULL. */
const char *hr_strerror(int code);
/* The name of a code ("HR_ENOTFOUND"). Never NULL. */
const char *hr_errname(int code);

/* Fill err (if not NULL) with code and a printf-style message; returns code so
 * that callers can write `return hr_err_set(err, HR_EINVAL, "...")`. */
int hr_err_set(hr_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reset err (if not NULL) to HR_OK and an empty message. */
void hr_err_clear(hr_err *err);

#endif
