/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Target groups: what the daemon traces (design: "Target groups").
 *
 * A target is a root pid (--pid, with its descendants) or a listening port
 * (--port: the listener's process, found again whenever it restarts). The
 * module tells the daemon which pids to trace through callbacks and keeps
 * the set of traced pids current from TASK_NEW / PROC_EXIT records.
 */
#ifndef RT_TARGETS_H
#define RT_TARGETS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <reqtrace/event.h>

#define RT_TARGETS_MAX 64
#define RT_TRACED_PIDS_MAX 4096

enum rt_target_kind {
	RT_TARGET_PID = 1,
	RT_TARGET_PORT = 2,
	RT_TARGET_COMM = 3,
};

struct rt_target {
	enum rt_target_kind kind;
	pid_t root; /* pid targets: the pid; port targets: the listener now (0: none) */
	uint16_t port;
	char comm[RT_COMM_LEN];
	uint32_t group_id;
	char group[RT_NAME_LEN];
	bool active;
	uint64_t activations; /* how many times its process was (re)found */
};

struct rt_targets_cb {
	/* Start tracing pid as a member of target t. 0 or -errno. */
	int (*add)(void *ctx, const struct rt_target *t, pid_t pid);
	/* pid left (exited or stopped being a target). */
	void (*remove)(void *ctx, const struct rt_target *t, pid_t pid);
	void *ctx;
};

struct rt_targets;

struct rt_targets *rt_targets__new(const struct rt_targets_cb *cb);
void rt_targets__free(struct rt_targets *ts);

int rt_targets__add_pid(struct rt_targets *ts, pid_t pid);
int rt_targets__add_port(struct rt_targets *ts, uint16_t port);
int rt_targets__add_comm(struct rt_targets *ts, const char *comm);

/* Find processes for inactive targets, drop dead ones. Cheap enough for 4 Hz. */
void rt_targets__scan(struct rt_targets *ts);

/* Keep the traced set current from the record stream. */
void rt_targets__observe(struct rt_targets *ts, const struct rt_event_hdr *ev);

/* Iterate targets and traced pids. */
uint32_t rt_targets__count(const struct rt_targets *ts);
const struct rt_target *rt_targets__get(const struct rt_targets *ts, uint32_t i);
/* Traced pids of target group_id (0: all), up to max. */
int rt_targets__pids(const struct rt_targets *ts, uint32_t group_id, pid_t *out, int max);
/* Group a traced pid belongs to, 0 when untraced. */
uint32_t rt_targets__group_of(const struct rt_targets *ts, pid_t pid);

#endif /* RT_TARGETS_H */
