/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The control socket: a unix stream socket speaking JSON Lines
 * (docs/protocol.md). Each request is one line; the answer is zero or more
 * payload lines and one terminator line, {"end":true,...} or
 * {"error":"..."}. Requests on one connection are answered in order.
 *
 * Every peer is identified with SO_PEERCRED when it connects; the daemon's
 * handler decides what each may do (rt_ctl_uid()).
 */
#ifndef RT_CONTROL_H
#define RT_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <uv.h>

#define RT_CTL_PROTOCOL 1
#define RT_CTL_LINE_MAX 65536
#define RT_CTL_CLIENTS_MAX 64
#define RT_CTL_PENDING_MAX (256u << 20) /* unread answer bytes before a client is dropped */
#define RT_CTL_PAUSE_BYTES (256u << 10) /* unread answer bytes before its requests wait */

struct rt_control;
struct rt_ctl_client;

/* Answer req; call rt_ctl_end()/rt_ctl_error() now or later (rt_ctl_hold). */
typedef void (*rt_ctl_handler)(struct rt_ctl_client *cl, const char *cmd, const cJSON *req,
			       void *ctx);
/* cl disconnected while the handler held it. */
typedef void (*rt_ctl_gone)(struct rt_ctl_client *cl, void *ctx);

struct rt_control_opts {
	const char *path;
	gid_t group; /* members may connect (mode 0660); (gid_t)-1: root only (0600) */
	rt_ctl_handler handler;
	rt_ctl_gone gone;
	void *ctx;
};

struct rt_control_stats {
	unsigned long accepted, refused, requests, bad_requests, dropped_slow;
};

struct rt_control *rt_control__new(uv_loop_t *loop, const struct rt_control_opts *o);
/* Close every handle; the loop must run afterwards to finish closing. */
void rt_control__close(struct rt_control *c);
void rt_control__stats(const struct rt_control *c, struct rt_control_stats *st);

uid_t rt_ctl_uid(const struct rt_ctl_client *cl);
pid_t rt_ctl_pid(const struct rt_ctl_client *cl);
/* One payload line (without its newline). */
int rt_ctl_send(struct rt_ctl_client *cl, const char *line, size_t len);
/* Terminate the answer: {"end":true<,extra>}; extra is "" or `"k":v,...`. */
void rt_ctl_end(struct rt_ctl_client *cl, const char *extra);
__attribute__((format(printf, 2, 3))) void rt_ctl_error(struct rt_ctl_client *cl, const char *fmt,
							...);
/* The answer will be finished later: keep reading requests queued until then. */
void rt_ctl_hold(struct rt_ctl_client *cl);

#endif /* RT_CONTROL_H */
