/* listener.c — see listener.h. */
#include "http/listener.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/alloc.h"
#include "common/log.h"

struct hr_listener {
    int fd;
    atomic_bool closing;
    bool started;
    pthread_t thread;
    struct MHD_Daemon **daemons;
    atomic_uint *open;
    unsigned n;
    unsigned next; /* where the search for the least busy starts: turns on ties */
};

int hr_listener_open(const struct sockaddr *addr, socklen_t len, const char *where, hr_listener **out,
                     uint16_t *port, hr_err *err) {
    *out = NULL;
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return hr_err_set(err, HR_EIO, "cannot listen on %s: socket: %s", where, strerror(errno));
    int one = 1;
    /* SO_REUSEADDR: a restart must not wait for the last run's TIME_WAIT. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, addr, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        return hr_err_set(err, HR_EIO, "cannot listen on %s: %s%s", where, strerror(e),
                          e == EADDRINUSE ? " (another server on that port?)" : "");
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    *port = 0;
    if (getsockname(fd, (struct sockaddr *)&bound, &bl) == 0)
        *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    hr_listener *l = hr_xcalloc(1, sizeof *l);
    l->fd = fd;
    atomic_init(&l->closing, false);
    *out = l;
    return 0;
}

/* The daemon with the fewest open connections; on a tie, the next in turn
 * (the search starts one further each time). */
static unsigned least_busy(hr_listener *l) {
    unsigned best = l->next % l->n;
    for (unsigned k = 1; k < l->n; k++) {
        unsigned i = (l->next + k) % l->n;
        if (atomic_load_explicit(&l->open[i], memory_order_relaxed) <
            atomic_load_explicit(&l->open[best], memory_order_relaxed))
            best = i;
    }
    l->next++;
    return best;
}

static void *accept_loop(void *arg) {
    hr_listener *l = arg;
    bool warned = false;
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t pl = sizeof peer;
        int fd = accept4(l->fd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
        if (atomic_load(&l->closing)) {
            if (fd >= 0) close(fd);
            break;
        }
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
            /* Out of descriptors or memory: the connection waits in the
             * backlog; try again shortly rather than spin. */
            if (!warned) hr_warn("http: accept: %s (retrying)", strerror(errno));
            warned = true;
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
            continue;
        }
        warned = false;
        /* Counted here, at once, so that the next accept sees it; the
         * daemon's close notification takes it off (server.c). On failure
         * (over the connection limit, out of memory) the daemon has closed
         * the socket already, and no notification comes. */
        unsigned i = least_busy(l);
        atomic_fetch_add_explicit(&l->open[i], 1, memory_order_relaxed);
        if (MHD_add_connection(l->daemons[i], fd, (struct sockaddr *)&peer, pl) != MHD_YES) {
            atomic_fetch_sub_explicit(&l->open[i], 1, memory_order_relaxed);
            hr_debug("http: a connection was refused: %s", strerror(errno));
        }
    }
    return NULL;
}

int hr_listener_start(hr_listener *l, struct MHD_Daemon **daemons, atomic_uint *open, unsigned n,
                      hr_err *err) {
    l->daemons = daemons;
    l->open = open;
    l->n = n;
    int rc = pthread_create(&l->thread, NULL, accept_loop, l);
    if (rc != 0) return hr_err_set(err, HR_EIO, "cannot start the accepting thread: %s", strerror(rc));
    l->started = true;
    return 0;
}

void hr_listener_close(hr_listener *l) {
    if (l == NULL) return;
    atomic_store(&l->closing, true);
    /* shutdown() wakes a thread blocked in accept() on Linux (EINVAL). */
    shutdown(l->fd, SHUT_RDWR);
    if (l->started) pthread_join(l->thread, NULL);
    close(l->fd);
    free(l);
}
