/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Prometheus listener of reqtraced (--metrics-listen, docs/metrics.md):
 * plain HTTP/1.1 on the daemon's loop, GET /metrics only, one response per
 * connection. Clients are untrusted: requests are bounded in size and time,
 * and so is the number of connections served at once.
 */
#ifndef RT_DAEMON_METRICS_H
#define RT_DAEMON_METRICS_H

#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

struct rt_daemon;
struct rt_metrics;

/*
 * "ADDR:PORT", "[ADDR6]:PORT", ":PORT" or "PORT" into addr; a bare port
 * means loopback (127.0.0.1). 0 or -EINVAL.
 */
int rt_metrics_parse_addr(const char *s, struct sockaddr_storage *addr);

/* Listens at once; NULL with errno set (bad address, bind failure). */
struct rt_metrics *rt_metrics__new(uv_loop_t *loop, const char *listen, struct rt_daemon *d);
/* Closes the listener and every client; the loop finishes the closes. */
void rt_metrics__close(struct rt_metrics *m);

#endif /* RT_DAEMON_METRICS_H */
