/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Target groups: what the daemon traces (design: "Target groups", and
 * docs/targets.md).
 *
 * A target is a root pid (--pid, with its descendants), a listening port
 * (--port: the listener's process in any network namespace, found again
 * whenever it restarts), a command name (--comm: every process of that
 * name) or a cgroup (--cgroup: every process in it and in the cgroups
 * below it). The module tells the daemon which pids to trace through
 * callbacks and keeps the set of traced pids current from TASK_NEW /
 * PROC_EXIT records and from rt_targets__scan(), run every 250 ms.
 */
#ifndef RT_TARGETS_H
#define RT_TARGETS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <reqtrace/event.h>

#define RT_TARGETS_MAX 64
#define RT_TRACED_PIDS_MAX 4096
#define RT_TARGET_CGROUP_LEN 512

enum rt_target_kind {
	RT_TARGET_PID = 1,
	RT_TARGET_PORT = 2,
	RT_TARGET_COMM = 3,
	RT_TARGET_CGROUP = 4,
};

struct rt_target {
	enum rt_target_kind kind;
	/* pid: the pid; port: the listener now; comm, cgroup: one member (0: none) */
	pid_t root;
	uint16_t port;
	char comm[RT_COMM_LEN];
	char cgroup[RT_TARGET_CGROUP_LEN]; /* cgroup targets: the directory */
	uint64_t netns; /* network namespace inode of root (port: of the listener); 0 unknown */
	uint32_t group_id;
	char group[RT_NAME_LEN];
	bool active;
	uint64_t activations; /* how many times its process was (re)found */
};

struct rt_targets_cb {
	/* Start tracing pid as a member of target t. 0 or -errno. */
	int (*add)(void *ctx, const struct rt_target *t, pid_t pid);
	/*
	 * pid is no longer traced. left: it lives on but stopped being a member
	 * (moved out of the cgroup); only rt_targets__scan() reports that, so the
	 * daemon may feed records to the pipeline from here. Otherwise it exited,
	 * or its target's root did, and this may run inside rt_targets__observe().
	 */
	void (*remove)(void *ctx, const struct rt_target *t, pid_t pid, bool left);
	void *ctx;
};

struct rt_targets_stats {
	uint64_t pids_dropped; /* members not traced: RT_TRACED_PIDS_MAX reached */
	uint64_t netns_skipped; /* network namespaces past RT_PROCFS_NETNS_MAX, not searched */
	uint64_t cgroup_truncated; /* cgroup scans cut short by their bounds */
};

struct rt_targets;

/* A target set with no targets; NULL with errno set. */
struct rt_targets *rt_targets__new(const struct rt_targets_cb *cb);
/* Frees the set (NULL is fine); the callbacks are not called. */
void rt_targets__free(struct rt_targets *ts);

/* Add a target; it is looked for at the next rt_targets__scan(). 0 or -errno (-ENOSPC: full). */
int rt_targets__add_pid(struct rt_targets *ts, pid_t pid);
int rt_targets__add_port(struct rt_targets *ts, uint16_t port);
/* comm: 1 to 15 characters (-EINVAL otherwise). */
int rt_targets__add_comm(struct rt_targets *ts, const char *comm);
/*
 * path: a cgroup directory, or a path relative to the cgroup v2 mount
 * (rt_procfs_cgroup_path()). It may not exist yet. -EINVAL, -ENAMETOOLONG.
 */
int rt_targets__add_cgroup(struct rt_targets *ts, const char *path);

/*
 * Find processes for inactive targets, new members of comm and cgroup
 * targets, drop dead ones and those that left their cgroup. Bounded by the
 * RT_PROCFS_* limits; cheap enough for 4 Hz.
 */
void rt_targets__scan(struct rt_targets *ts);

/* Keep the traced set current from the record stream. */
void rt_targets__observe(struct rt_targets *ts, const struct rt_event_hdr *ev);

/* Number of targets, and target i (NULL past the end). */
uint32_t rt_targets__count(const struct rt_targets *ts);
const struct rt_target *rt_targets__get(const struct rt_targets *ts, uint32_t i);
/* Traced pids of target group_id (0: all), up to max; returns how many. */
int rt_targets__pids(const struct rt_targets *ts, uint32_t group_id, pid_t *out, int max);
/* Group a traced pid belongs to, 0 when untraced. */
uint32_t rt_targets__group_of(const struct rt_targets *ts, pid_t pid);
/* What the bounds made the module leave out. */
void rt_targets__stats(const struct rt_targets *ts, struct rt_targets_stats *st);

/* "pid", "port", "comm", "cgroup" ("?" for anything else). */
const char *rt_target_kind_name(enum rt_target_kind kind);

#endif /* RT_TARGETS_H */
