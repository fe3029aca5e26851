/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Library side of the injection handshake (include/reqtrace/inject.h):
 * bounded-time connect, HELLO/STATUS out, WELCOME (+ ring fd) in. Every call
 * has a deadline and never raises SIGPIPE.
 */
#ifndef RT_CUPTI_PROTO_H
#define RT_CUPTI_PROTO_H

#include <reqtrace/inject.h>

/*
 * Opens a non-blocking SOCK_SEQPACKET socket and connects it to path,
 * waiting at most timeout_ms. Returns the fd or -errno (-ENOENT and
 * -ECONNREFUSED: no daemon; -ETIMEDOUT).
 */
int rt_cupti_proto_connect(const char *path, int timeout_ms);

/* Fills h->hdr and sends HELLO. Returns 0 or -errno. */
int rt_cupti_proto_send_hello(int fd, struct rt_inject_hello *h);

/* Sends STATUS. Returns 0 or -errno. */
int rt_cupti_proto_send_status(int fd, __u32 status, __u32 cupti_result);

/*
 * Waits at most timeout_ms for WELCOME and checks its framing. *ring_fd is
 * the fd it carried (close-on-exec) or -1. Returns 0, -ETIMEDOUT,
 * -ECONNRESET (the daemon closed the socket) or -EPROTO (not a WELCOME;
 * any fd that came with it is closed).
 */
int rt_cupti_proto_recv_welcome(int fd, int timeout_ms, struct rt_inject_welcome *w, int *ring_fd);

/* Milliseconds of CLOCK_MONOTONIC. */
long long rt_cupti_now_ms(void);

#endif /* RT_CUPTI_PROTO_H */
