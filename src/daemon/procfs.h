/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the daemon reads from /proc to find its targets. Paths inside a
 * process (its libraries) are resolved through /proc/PID/root, so a
 * process in a container is handled like any other.
 */
#ifndef RT_PROCFS_H
#define RT_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Parent pid of pid, or -errno. */
int rt_procfs_ppid(pid_t pid, pid_t *ppid);
/* The process's comm ("" when gone). */
int rt_procfs_comm(pid_t pid, char *buf, size_t len);
bool rt_procfs_alive(pid_t pid);

/*
 * All pids whose ancestry includes root (root excluded), up to max.
 * Returns the count or -errno.
 */
int rt_procfs_descendants(pid_t root, pid_t *out, int max);

/* Pids whose comm equals name, up to max. */
int rt_procfs_by_comm(const char *name, pid_t *out, int max);

/*
 * The pid of a process holding a TCP socket listening on port (any local
 * address, IPv4 or IPv6), in the daemon's network namespace, or in the
 * namespace of netns_pid when it is not 0. Returns the pid, 0 if none,
 * or -errno.
 */
int rt_procfs_listener(uint16_t port, pid_t netns_pid);

/*
 * Find a mapped file whose basename starts with `prefix` (e.g.
 * "libreqtrace_marker.so") in pid's maps; write its path as seen from the
 * daemon (/proc/PID/root/...). Returns 1 found, 0 not, -errno.
 */
int rt_procfs_find_lib(pid_t pid, const char *prefix, char *path, size_t len);

#endif /* RT_PROCFS_H */
