/* redis.c — placeholder until the redis backend lands: opening fails cleanly. */
#include "store/backend.h"

static int open_(const char *uri, const hr_store_options *opts, hr_store **out, hr_err *err) {
    (void)opts;
    *out = NULL;
    return hr_err_set(err, HR_ENOTSUP, "store '%s': backend not built yet", uri);
}
static void close_(hr_store *s) { (void)s; }
static int ping_(hr_store *s, hr_err *err) { (void)s; return hr_err_set(err, HR_EUNAVAIL, "no backend"); }
static int exec_(hr_store *s, hr_batch *b, unsigned flags, hr_err *err) {
    (void)s; (void)b; (void)flags;
    return hr_err_set(err, HR_ENOTSUP, "no backend");
}
const hr_store_backend hr_redis_backend = {"redis", "redis://", open_, close_, ping_, exec_};
