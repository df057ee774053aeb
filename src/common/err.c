/* err.c — messages and names for the codes of err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

const char *hr_strerror(int code) {
    switch (code) {
    case HR_OK: return "ok";
#define HR_ERR_MSG_(name, msg)                                                                               \
    case HR_E##name: return msg;
        HR_ERRNO_MAP(HR_ERR_MSG_)
#undef HR_ERR_MSG_
    default: return "unknown error";
    }
}

const char *hr_errname(int code) {
    switch (code) {
    case HR_OK: return "HR_OK";
#define HR_ERR_NAME_(name, msg)                                                                              \
    case HR_E##name: return "HR_E" #name;
        HR_ERRNO_MAP(HR_ERR_NAME_)
#undef HR_ERR_NAME_
    default: return "HR_E?";
    }
}

int hr_err_set(hr_err *err, int code, const char *fmt, ...) {
    if (err == NULL) return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void hr_err_clear(hr_err *err) {
    if (err == NULL) return;
    err->code = HR_OK;
    err->msg[0] = '\0';
}
