/* listener.h — the listen socket, and which I/O thread serves a connection.
 *
 * libmicrohttpd's own thread pool shares one listen socket among its
 * threads, and whichever thread wins the race to accept() serves the
 * connection for its whole life. With few connections that often puts two
 * busy ones on one thread while the other idles: wrk with 2 connections had
 * fast runs and slow ones, depending only on where its two connections
 * landed. So herald accepts connections itself, on one thread, and hands
 * each to the I/O thread (one libmicrohttpd daemon each) that has the
 * fewest open, the next in turn on a tie.
 *
 * A connection counts from its hand-over (here) to libmicrohttpd's
 * notification that it closed (server.c). */
#ifndef HR_HTTP_LISTENER_H
#define HR_HTTP_LISTENER_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/err.h"

struct MHD_Daemon;
typedef struct hr_listener hr_listener;

/* Bind addr (SO_REUSEADDR, never SO_REUSEPORT: a second server must fail
 * to bind, not take half the connections) and listen. *port: the port bound
 * (the kernel's choice for port 0). where names addr in error messages. */
int hr_listener_open(const struct sockaddr *addr, socklen_t len, const char *where, hr_listener **out,
                     uint16_t *port, hr_err *err);

/* Start the accepting thread: each connection goes to daemons[i] with the
 * lowest open[i] (both arrays of n, borrowed until hr_listener_close). */
int hr_listener_start(hr_listener *l, struct MHD_Daemon **daemons, atomic_uint *open, unsigned n,
                      hr_err *err);

/* Stop accepting (the thread ends) and close the socket; connections already
 * handed over stay with their daemons. Safe on an unstarted listener. */
void hr_listener_close(hr_listener *l);

#endif
