/* Unit tests of core/lease over a real store, on both backends: one holder
 * at a time, waiting and giving up, giving back. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "core/lease.h"
#include "support.h"

typedef void (*lease_check)(hr_store *s, hr_slice key);

static void run(const char *kind, lease_check check) {
    test_store t;
    test_store_open(&t, kind);
    char key[48];
    test_unique(key, sizeof key, "lease:");
    check(t.store, hr_slice_str(key));
    test_store_close(&t);
}

/* One attempt: HR_OK with *again as hr_lease_taken says, or its error. */
static int try_take(hr_store *s, hr_lease *l, hr_slice key, bool *again, hr_err *err) {
    hr_batch *b = hr_batch_new();
    size_t op = hr_lease_take_op(l, b, key);
    int rc = hr_store_exec(s, b, 0, err);
    if (rc == HR_OK) rc = hr_lease_taken(l, b, op, "the thing", again, err);
    hr_batch_free(b);
    return rc;
}

static void one_holder_then_the_next(hr_store *s, hr_slice key) {
    hr_lease first, second;
    hr_lease_init(&first, 1000);
    int64_t start = hr_now_ms(); /* the second's wait budget starts at its init */
    hr_lease_init(&second, 40);
    cr_assert_str_neq(first.token, second.token, "every take has its own token");
    cr_assert_eq(strlen(first.token), HR_LEASE_TOKEN_LEN);
    bool again = true;
    hr_err err = {0};
    cr_assert_eq(try_take(s, &first, key, &again, &err), HR_OK, "%s", err.msg);
    cr_assert(!again && first.held, "a free lease is taken at once");

    /* the second taker waits (1, 2, 4... ms between tries) and gives up */
    int tries = 0, rc;
    do {
        rc = try_take(s, &second, key, &again, &err);
        tries++;
    } while (rc == HR_OK && again);
    cr_assert_eq(rc, HR_ECONFLICT, "a held lease is refused in the end: %s", hr_errname(rc));
    cr_assert(strstr(err.msg, "the thing") != NULL, "the error names it: %s", err.msg);
    cr_assert(!second.held);
    cr_assert(tries >= 3, "it waited and tried again (%d tries)", tries);
    cr_assert(hr_now_ms() - start >= 40, "for its wait budget");

    /* given back, it is free for a new take; dropping twice is harmless */
    hr_lease_drop(&first, s, key);
    cr_assert(!first.held);
    hr_lease_drop(&first, s, key);
    hr_lease_init(&second, 40);
    cr_assert_eq(try_take(s, &second, key, &again, &err), HR_OK, "%s", err.msg);
    cr_assert(!again && second.held);
    hr_lease_drop(&second, s, key);
}
BOTH_STORES(lease, run, one_holder_then_the_next)

/* A lease another holder took cannot be given back by this one: a holder
 * whose lease expired and was taken again must not free the new one. */
static void only_its_holder_drops_it(hr_store *s, hr_slice key) {
    hr_lease mine, theirs;
    hr_lease_init(&mine, 0);
    hr_lease_init(&theirs, 0);
    bool again;
    hr_err err = {0};
    cr_assert_eq(try_take(s, &theirs, key, &again, &err), HR_OK);
    cr_assert(theirs.held);
    mine.held = true; /* as if it had held the lease before it expired */
    hr_lease_drop(&mine, s, key);
    hr_lease fresh;
    hr_lease_init(&fresh, 0);
    cr_assert_eq(try_take(s, &fresh, key, &again, &err), HR_ECONFLICT, "still theirs");
    hr_lease_drop(&theirs, s, key);
}
BOTH_STORES(lease, run, only_its_holder_drops_it)

/* hr_lease_take waits for a holder that gives the lease back in time, and
 * gives up on one that does not. */
typedef struct late_drop {
    hr_store *s;
    hr_slice key;
    hr_lease *lease;
} late_drop;

static void *drop_later(void *arg) {
    late_drop *d = arg;
    usleep(30 * 1000);
    hr_lease_drop(d->lease, d->s, d->key);
    return NULL;
}

static void take_waits_for_the_holder(hr_store *s, hr_slice key) {
    hr_lease holder, waiter;
    hr_lease_init(&holder, 0);
    hr_err err = {0};
    cr_assert_eq(hr_lease_take(&holder, s, key, "it", &err), HR_OK, "%s", err.msg);
    hr_lease_init(&waiter, 20);
    cr_assert_eq(hr_lease_take(&waiter, s, key, "it", &err), HR_ECONFLICT, "20 ms is not enough");
    late_drop d = {s, key, &holder};
    pthread_t t;
    int64_t start = hr_now_ms(); /* the holder gives it back 30 ms after this */
    pthread_create(&t, NULL, drop_later, &d);
    hr_lease_init(&waiter, 2000);
    cr_assert_eq(hr_lease_take(&waiter, s, key, "it", &err), HR_OK, "%s", err.msg);
    cr_assert(waiter.held && hr_now_ms() - start >= 29, "taken once the holder gave it back");
    pthread_join(t, NULL);
    hr_lease_drop(&waiter, s, key);
}
BOTH_STORES(lease, run, take_waits_for_the_holder)
