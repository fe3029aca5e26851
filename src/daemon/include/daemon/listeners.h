/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Listen-queue health of the targets (docs/targets.md "Listen queues").
 *
 * A request waits in the kernel before the server sees it: first in the
 * listening socket's accept queue, which holds at most the backlog given to
 * listen(). When it is full the kernel drops the handshake and counts it in
 * ListenOverflows/ListenDrops (TcpExt, /proc/PID/net/netstat): the client
 * retries or times out and no span ever starts. Those counters exist only per
 * network namespace, never per listener.
 *
 * Every refresh (1 s, and soon after targets change) finds the listening TCP
 * sockets each target's processes hold: sock_diag's LISTEN dump of the
 * process's network namespace (accept queue now, its limit, the socket's
 * inode), or /proc/PID/net/tcp{,6} when sock_diag cannot answer (no limit
 * there: the kernel prints 0 in tx_queue for a listener), joined with the
 * socket:[INODE] links of /proc/PID/fd. Everything is bounded; what the
 * bounds leave out is counted.
 *
 * The parsers take the text or bytes as given, so tests feed them anything.
 */
#ifndef RT_LISTENERS_H
#define RT_LISTENERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/targets.h"

/* listeners shown per target, and in all */
#define RT_LISTEN_PER_TARGET_MAX 16
#define RT_LISTEN_TOTAL_MAX 256
/* listening sockets read per namespace, processes whose fds are read per target */
#define RT_LISTEN_NS_SOCKS_MAX 1024
#define RT_LISTEN_PIDS_MAX 64
/* network namespaces followed per target, and in all */
#define RT_LISTEN_TARGET_NETNS_MAX 4
#define RT_LISTEN_NETNS_MAX 64
/* fds looked at per process when joining inodes */
#define RT_LISTEN_FDS_MAX 65536

struct rt_listen_sock {
	uint64_t inode;
	uint8_t addr[16]; /* network byte order; IPv4 in the first 4 bytes */
	uint8_t family; /* AF_INET or AF_INET6 */
	uint16_t port; /* host order */
	uint32_t queue; /* sk_ack_backlog: connections waiting for accept() */
	uint32_t limit; /* sk_max_ack_backlog; 0: unknown (read from /proc) */
};

/*
 * LISTEN lines (state 0A) of /proc/net/tcp (v6 false) or tcp6 text, up to
 * max into out; stops at the first socket line that is not listening (the
 * kernel lists listeners first) and sets *ended. The first line is the
 * header. Lines that do not parse, an unterminated last one included, are
 * counted in *bad and skipped; listeners past max in *skipped. A listener's
 * limit is 0: the file does not have it. Pointers but out may be NULL.
 * Returns how many were written.
 */
int rt_listen_parse_tcp(const char *text, size_t len, bool v6, struct rt_listen_sock *out, int max,
			uint32_t *skipped, uint32_t *bad, bool *ended);

/*
 * The inet_diag_msg records of one sock_diag dump reply (netlink messages,
 * as recv() returned them) that are listening sockets, up to max into out.
 * Returns how many were written, or -errno for an NLMSG_ERROR (EINVAL for
 * nothing usable); *done is set by NLMSG_DONE.
 */
int rt_listen_parse_diag(const void *buf, size_t len, struct rt_listen_sock *out, int max,
			 uint32_t *skipped, bool *done);

/*
 * ListenOverflows and ListenDrops from /proc/PID/net/netstat text (the
 * TcpExt: header and value lines, matched by name). 0, or -EINVAL when
 * either is missing, malformed or past 64 bits.
 */
int rt_listen_parse_netstat(const char *text, size_t len, uint64_t *overflows, uint64_t *drops);

/* "127.0.0.1:8080", "[::1]:8080"; buf of RT_LISTEN_ADDR_LEN. */
#define RT_LISTEN_ADDR_LEN 56
void rt_listen_addr_str(const struct rt_listen_sock *s, char *buf, size_t len);

/* One listener of a target, as last refreshed. */
struct rt_listener {
	struct rt_listen_sock s;
	uint64_t netns;
	uint32_t queue_max; /* the most seen at a refresh */
	pid_t pid; /* a target process holding it */
};

/* One network namespace a target's processes live in. */
struct rt_listen_netns {
	uint64_t ino;
	bool counters; /* the counters below could be read */
	uint64_t overflows, drops; /* since the daemon started watching the namespace */
};

struct rt_listen_group {
	uint32_t group_id;
	int n;
	struct rt_listener l[RT_LISTEN_PER_TARGET_MAX];
	int n_netns;
	struct rt_listen_netns netns[RT_LISTEN_TARGET_NETNS_MAX];
	uint32_t skipped; /* listeners past the bounds at the last refresh */
	bool from_proc; /* sock_diag failed: limits unknown */
};

struct rt_listeners_stats {
	uint64_t refreshes;
	uint32_t skipped; /* listeners past the bounds at the last refresh */
	uint32_t netns_skipped; /* namespaces past the bounds at the last refresh */
	uint64_t fd_walks; /* /proc/PID/fd scans (only when the listener set changed) */
};

struct rt_listeners_opts {
	/* a port not reported before (host order); ctx as given */
	void (*new_port)(void *ctx, uint16_t port);
	void *ctx;
	bool no_diag; /* read /proc/PID/net/tcp{,6} only, as when sock_diag fails (tests) */
};

struct rt_listeners;

struct rt_listeners *rt_listeners__new(const struct rt_listeners_opts *o);
void rt_listeners__free(struct rt_listeners *ls);
/* Re-read the listeners of every target in ts. */
void rt_listeners__refresh(struct rt_listeners *ls, const struct rt_targets *ts);
/* The listeners of target group_id at the last refresh; NULL if none known. */
const struct rt_listen_group *rt_listeners__group(const struct rt_listeners *ls, uint32_t group_id);
void rt_listeners__stats(const struct rt_listeners *ls, struct rt_listeners_stats *st);

#endif /* RT_LISTENERS_H */
