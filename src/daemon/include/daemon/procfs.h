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

/* Network namespaces searched per call of rt_procfs_find_listener(). */
#define RT_PROCFS_NETNS_MAX 256
/* Processes looked at per /proc scan. */
#define RT_PROCFS_SCAN_MAX 65536

/* Network namespace of pid (0: the daemon itself): the inode of /proc/PID/ns/net. */
int rt_procfs_netns(pid_t pid, uint64_t *ino);

struct rt_procfs_listener {
	pid_t pid; /* a process holding the listening socket */
	uint64_t netns; /* the namespace it listens in */
	uint32_t netns_skipped; /* namespaces past RT_PROCFS_NETNS_MAX, not searched */
};

/*
 * A process listening on TCP port in any network namespace (containers,
 * `unshare --net`): each namespace's /proc/PID/net/tcp{,6} is read once,
 * through one of its processes, the daemon's own namespace first. The
 * socket's owner is looked for among that namespace's processes only.
 * Returns 1 found (out filled), 0 none, or -errno.
 */
int rt_procfs_find_listener(uint16_t port, struct rt_procfs_listener *out);

/* Directories and depth one cgroup scan visits at most. */
#define RT_PROCFS_CGROUP_DIRS_MAX 1024
#define RT_PROCFS_CGROUP_DEPTH_MAX 32

/*
 * The cgroup directory for --cgroup ARG: an absolute path under /sys/ or
 * one that holds a cgroup.procs is taken as is; anything else
 * ("system.slice/foo.service", or "/system.slice/foo.service" as
 * /proc/PID/cgroup prints it) is relative to the cgroup v2 mount
 * (/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid systems).
 * The directory need not exist yet. 0, -EINVAL ("..") or -ENAMETOOLONG.
 */
int rt_procfs_cgroup_path(const char *arg, char *path, size_t len);

/*
 * Pids in cgroup dir and every cgroup below it (cgroup.procs of each, v1 or
 * v2), up to max; *truncated is set when max, RT_PROCFS_CGROUP_DIRS_MAX or
 * RT_PROCFS_CGROUP_DEPTH_MAX cut the walk short. Returns the count or
 * -errno (-ENOENT: no such cgroup now).
 */
int rt_procfs_cgroup_pids(const char *dir, pid_t *out, int max, bool *truncated);

/*
 * Find a mapped file whose basename starts with `prefix` (e.g.
 * "libreqtrace_marker.so") in pid's maps; write its path as seen from the
 * daemon (/proc/PID/root/...). Returns 1 found, 0 not, -errno.
 */
int rt_procfs_find_lib(pid_t pid, const char *prefix, char *path, size_t len);

/*
 * Sends a sock_diag dump request for the TCP listeners of `family` (AF_INET
 * or AF_INET6) on the NETLINK_SOCK_DIAG socket sk: those on `port` (host
 * order), or every one for port 0. With only TCP_LISTEN in the state mask
 * the kernel walks just the listening hash, never the established one. The
 * answer is the caller's to read. 0 or -errno.
 */
int rt_procfs_diag_listen_req(int sk, int family, uint32_t seq, uint16_t port);

#endif /* RT_PROCFS_H */
