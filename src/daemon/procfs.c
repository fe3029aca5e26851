// SPDX-License-Identifier: BSD-2-Clause
#include "daemon/procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

#define TCP_STATE_LISTEN 10

int rt_procfs_ppid(pid_t pid, pid_t *ppid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	err = -errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? err : -ENOENT;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: state and ppid follow the last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", ppid) != 1)
		return -EINVAL;
	return 0;
}

int rt_procfs_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

bool rt_procfs_alive(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return access(path, F_OK) == 0;
}

/* Every pid in /proc with its parent, up to max. */
static int all_pids(pid_t *pids, pid_t *ppids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max) {
		char *end;
		long v = strtol(e->d_name, &end, 10);

		if (*end || v <= 0)
			continue;
		if (rt_procfs_ppid((pid_t)v, &ppids[n]))
			continue;
		pids[n++] = (pid_t)v;
	}
	closedir(d);
	return n;
}

int rt_procfs_descendants(pid_t root, pid_t *out, int max)
{
	enum { SCAN_MAX = 65536 };
	pid_t *pids = malloc(SCAN_MAX * sizeof(pid_t)), *ppids = malloc(SCAN_MAX * sizeof(pid_t));
	int n, found = 0, i, changed = 1;

	if (!pids || !ppids) {
		free(pids);
		free(ppids);
		return -ENOMEM;
	}
	n = all_pids(pids, ppids, SCAN_MAX);
	/* fixpoint: a pid is a descendant when its parent is root or one found */
	while (n > 0 && changed) {
		changed = 0;
		for (i = 0; i < n; i++) {
			int j, known = 0, parent_in = ppids[i] == root;

			if (pids[i] == root)
				continue;
			for (j = 0; j < found; j++) {
				if (out[j] == pids[i])
					known = 1;
				if (out[j] == ppids[i])
					parent_in = 1;
			}
			if (!known && parent_in && found < max) {
				out[found++] = pids[i];
				changed = 1;
			}
		}
	}
	free(pids);
	free(ppids);
	return n < 0 ? n : found;
}

int rt_procfs_by_comm(const char *name, pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char comm[64];
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max) {
		char *end;
		long v = strtol(e->d_name, &end, 10);

		if (*end || v <= 0)
			continue;
		if (rt_procfs_comm((pid_t)v, comm, sizeof(comm)) == 0 && !strcmp(comm, name))
			out[n++] = (pid_t)v;
	}
	closedir(d);
	return n;
}

/* One line of /proc/net/tcp{,6}: 0 parsed, -1 not a socket line (the header). */
static int tcp_line(const char *line, unsigned int *state, unsigned int *lport, unsigned long *ino)
{
	char local[128], *colon;

	/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
	if (sscanf(line, " %*d: %127s %*s %x %*s %*s %*s %*u %*u %lu", local, state, ino) != 3)
		return -1;
	colon = strrchr(local, ':');
	if (!colon || sscanf(colon + 1, "%x", lport) != 1)
		return -1;
	return 0;
}

/*
 * Inode of a socket listening on port in one /proc/net/tcp-format file.
 *
 * The kernel lists listening sockets first, then walks the whole
 * established hash (shared by every namespace: milliseconds even when
 * empty). seq_file makes only as many lines as a read asks for, so small
 * reads that stop at the first non-listening line skip that walk: ~150x
 * cheaper, which matters at 4 Hz times every network namespace.
 */
static unsigned long listen_inode(const char *file, uint16_t port)
{
	enum { CHUNK = 256 };
	char buf[1024];
	size_t len = 0;
	unsigned long inode = 0;
	bool done = false;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (!done) {
		ssize_t n;
		char *line = buf, *nl;

		if (len + CHUNK >= sizeof(buf)) /* a line longer than any the kernel writes */
			break;
		n = read(fd, buf + len, CHUNK);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		while (!done && (nl = strchr(line, '\n'))) {
			unsigned int state, lport;
			unsigned long ino;

			*nl = '\0';
			if (tcp_line(line, &state, &lport, &ino) == 0) {
				if (state != TCP_STATE_LISTEN)
					done = true; /* the listening sockets are behind us */
				else if (lport == port && ino)
					inode = ino, done = true;
			}
			line = nl + 1;
		}
		len -= (size_t)(line - buf);
		memmove(buf, line, len);
	}
	close(fd);
	return inode;
}

/* Whether one of pid's fds is the socket `want` ("socket:[INODE]"). */
static bool holds_socket(pid_t pid, const char *want)
{
	char path[300], link[128];
	struct dirent *fe;
	bool found = false;
	DIR *fdd;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	fdd = opendir(path);
	if (!fdd)
		return false;
	while (!found && (fe = readdir(fdd))) {
		ssize_t n;

		if (fe->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, fe->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = !strcmp(link, want);
	}
	closedir(fdd);
	return found;
}

/* The pid owning socket inode `inode`, 0 if none. */
static pid_t socket_owner(unsigned long inode)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char want[64];
	pid_t found = 0;

	if (!d)
		return 0;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	while (!found && (e = readdir(d))) {
		char *end;
		long v = strtol(e->d_name, &end, 10);

		if (*end || v <= 0 || v > INT_MAX)
			continue;
		if (holds_socket((pid_t)v, want))
			found = (pid_t)v;
	}
	closedir(d);
	return found;
}

int rt_procfs_listener(uint16_t port, pid_t netns_pid)
{
	static const char *const files[] = { "tcp", "tcp6" };
	char path[64];
	unsigned long inode = 0;
	size_t i;

	for (i = 0; i < 2 && !inode; i++) {
		if (netns_pid)
			snprintf(path, sizeof(path), "/proc/%d/net/%s", netns_pid, files[i]);
		else
			snprintf(path, sizeof(path), "/proc/net/%s", files[i]);
		inode = listen_inode(path, port);
	}
	return inode ? socket_owner(inode) : 0;
}

int rt_procfs_netns(pid_t pid, uint64_t *ino)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/net");
	if (stat(path, &st))
		return -errno;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

struct ns_proc {
	pid_t pid;
	uint32_t ns; /* index into the namespace table; UINT32_MAX: not searched */
};

struct netns_ent {
	uint64_t ino;
	pid_t via; /* a process in it, to read its /proc/PID/net/ through */
};

/* Index of ino in tab, adding it when there is room; UINT32_MAX when full. */
static uint32_t ns_index(struct netns_ent *tab, uint32_t *n, uint64_t ino, pid_t pid,
			 uint32_t *skipped)
{
	uint32_t i;

	for (i = 0; i < *n; i++)
		if (tab[i].ino == ino)
			return i;
	if (*n >= RT_PROCFS_NETNS_MAX) {
		(*skipped)++;
		return UINT32_MAX;
	}
	tab[*n].ino = ino;
	tab[*n].via = pid;
	return (*n)++;
}

int rt_procfs_diag_listen_req(int sk, int family, uint32_t seq, uint16_t port)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.nlh.nlmsg_seq = seq;
	req.r.sdiag_family = (__u8)family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = 1u << TCP_STATE_LISTEN;
	req.r.id.idiag_sport = htons(port);
	if (sendto(sk, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0)
		return -errno;
	return 0;
}

/*
 * A listening socket on port, asked of sock_diag: with only TCP_LISTEN in
 * the state mask and the port set, the kernel walks just the listening
 * hash (inet_diag_dump_icsk skips the established one). Returns the inode,
 * 0 if none, -errno when sock_diag cannot answer.
 */
static long diag_listen_inode(int sk, uint16_t port)
{
	static const int families[] = { AF_INET, AF_INET6 };
	long buf[8192 / sizeof(long)];
	size_t f;
	int err;

	for (f = 0; f < 2; f++) {
		bool done = false;
		int rounds;

		err = rt_procfs_diag_listen_req(sk, families[f], (uint32_t)f + 1, port);
		if (err)
			return err;
		/* listening sockets on one port: a message or two; bounded all the same */
		for (rounds = 0; rounds < 64 && !done; rounds++) {
			long n = (long)recv(sk, buf, sizeof(buf), 0);
			struct nlmsghdr *h;

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
				const struct inet_diag_msg *m = NLMSG_DATA(h);

				if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
					/* an error for one family (no IPv6): nothing there */
					done = true;
					break;
				}
				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
					continue;
				if (m->idiag_state == TCP_STATE_LISTEN &&
				    ntohs(m->id.idiag_sport) == port && m->idiag_inode)
					return (long)m->idiag_inode;
			}
		}
	}
	return 0;
}

/*
 * A sock_diag socket in the network namespace of pid `via` (own: ours). A
 * socket answers for the namespace it was created in, so the thread steps
 * into that namespace for the socket() call only (setns: root's privilege).
 */
static int diag_socket(pid_t via, bool own, int self_ns)
{
	char path[64];
	int nsfd, sk;

	if (own)
		return socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (self_ns < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", via);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return -1;
	if (setns(nsfd, CLONE_NEWNET)) {
		close(nsfd);
		return -1;
	}
	close(nsfd);
	sk = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (setns(self_ns, CLONE_NEWNET))
		elog("cannot return to the daemon's network namespace: %s", strerror(errno));
	return sk;
}

/* The inode of a socket listening on port in one namespace, 0 if none. */
static unsigned long ns_listen_inode(const struct netns_ent *ns, bool own, int self_ns,
				     uint16_t port)
{
	static const char *const files[] = { "tcp", "tcp6" };
	unsigned long sock = 0;
	char path[64];
	long r = -1;
	size_t f;
	int sk;

	sk = diag_socket(ns->via, own, self_ns);
	if (sk >= 0) {
		r = diag_listen_inode(sk, port);
		close(sk);
	}
	if (r >= 0)
		return (unsigned long)r;
	/* no sock_diag (a kernel without it, setns refused): the slower file */
	for (f = 0; f < 2 && !sock; f++) {
		snprintf(path, sizeof(path), "/proc/%d/net/%s", ns->via, files[f]);
		sock = listen_inode(path, port);
	}
	return sock;
}

int rt_procfs_find_listener(uint16_t port, struct rt_procfs_listener *out)
{
	struct netns_ent *tab = calloc(RT_PROCFS_NETNS_MAX, sizeof(*tab));
	struct ns_proc *procs = malloc(RT_PROCFS_SCAN_MAX * sizeof(*procs));
	uint32_t n_ns = 0, skipped = 0, k;
	int n = 0, i, found = 0, err = 0, self_ns = -1;
	struct dirent *e;
	uint64_t ino;
	bool own;
	DIR *d = NULL;

	memset(out, 0, sizeof(*out));
	if (!tab || !procs) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* the daemon's own namespace first: where a plain --port is expected */
	own = !rt_procfs_netns(0, &ino);
	if (own)
		ns_index(tab, &n_ns, ino, getpid(), &skipped);
	d = opendir("/proc");
	if (!d) {
		err = -errno;
		goto cleanup;
	}
	while ((e = readdir(d)) && n < RT_PROCFS_SCAN_MAX) {
		char *end;
		long v = strtol(e->d_name, &end, 10);

		if (*end || v <= 0 || v > INT_MAX || rt_procfs_netns((pid_t)v, &ino))
			continue;
		procs[n].pid = (pid_t)v;
		procs[n].ns = ns_index(tab, &n_ns, ino, (pid_t)v, &skipped);
		n++;
	}
	/* this thread's namespace, to come back to (the loop thread's, not the process's) */
	if (n_ns > 1)
		self_ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	for (k = 0; k < n_ns && !found; k++) {
		unsigned long sock = ns_listen_inode(&tab[k], own && k == 0, self_ns, port);
		char want[64];

		if (!sock)
			continue;
		/* socket inodes are unique machine-wide: only this namespace can hold it */
		snprintf(want, sizeof(want), "socket:[%lu]", sock);
		for (i = 0; i < n && !found; i++) {
			if (procs[i].ns == k && holds_socket(procs[i].pid, want)) {
				out->pid = procs[i].pid;
				out->netns = tab[k].ino;
				found = 1;
			}
		}
	}
	out->netns_skipped = skipped;
cleanup:
	if (self_ns >= 0)
		close(self_ns);
	if (d)
		closedir(d);
	free(tab);
	free(procs);
	return err ? err : found;
}

/* The first cgroup v2 mount point in the daemon's mount namespace. */
static int cgroup2_root(char *buf, size_t len)
{
	char line[1024], dev[256], mnt[512], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	int found = 0;

	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %511s %63s", dev, mnt, type) != 3 ||
		    strcmp(type, "cgroup2"))
			continue;
		/* octal escapes (\040) in a mount point: not one we can use as is */
		if (strchr(mnt, '\\'))
			continue;
		found = (size_t)snprintf(buf, len, "%s", mnt) < len;
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

static bool has_procs(const char *dir)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= sizeof(path))
		return false;
	return access(path, F_OK) == 0;
}

int rt_procfs_cgroup_path(const char *arg, char *path, size_t len)
{
	char root[512];
	const char *p;
	size_t n;

	if (!*arg)
		return -EINVAL;
	/* ".." would leave the cgroup file system: never what an operator means */
	for (p = arg; (p = strstr(p, "..")); p += 2)
		if ((p == arg || p[-1] == '/') && (p[2] == '/' || !p[2]))
			return -EINVAL;
	if (arg[0] == '/' && (!strncmp(arg, "/sys/", 5) || has_procs(arg))) {
		if ((size_t)snprintf(path, len, "%s", arg) >= len)
			return -ENAMETOOLONG;
	} else {
		if (cgroup2_root(root, sizeof(root)))
			snprintf(root, sizeof(root), "/sys/fs/cgroup");
		while (*arg == '/')
			arg++;
		if ((size_t)snprintf(path, len, "%s%s%s", root, *arg ? "/" : "", arg) >= len)
			return -ENAMETOOLONG;
	}
	n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	return 0;
}

struct cg_walk {
	char path[PATH_MAX];
	pid_t *out;
	int n, max;
	unsigned int dirs;
	bool truncated;
};

static void read_procs(struct cg_walk *w, size_t plen)
{
	char line[32];
	FILE *f;

	if (plen + sizeof("/cgroup.procs") > sizeof(w->path))
		return;
	memcpy(w->path + plen, "/cgroup.procs", sizeof("/cgroup.procs"));
	f = fopen(w->path, "re");
	w->path[plen] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *end;
		long v = strtol(line, &end, 10);

		if (end == line || v <= 0 || v > INT_MAX)
			continue;
		if (w->n >= w->max) {
			w->truncated = true;
			break;
		}
		w->out[w->n++] = (pid_t)v;
	}
	fclose(f);
}

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Depth-first, one open directory per level: RT_PROCFS_CGROUP_DEPTH_MAX bounds both. */
static int walk(struct cg_walk *w, size_t plen, int depth)
{
	struct dirent *e;
	DIR *d;

	if (w->dirs >= RT_PROCFS_CGROUP_DIRS_MAX || depth > RT_PROCFS_CGROUP_DEPTH_MAX) {
		w->truncated = true;
		return 0;
	}
	d = opendir(w->path);
	if (!d)
		return -errno;
	w->dirs++;
	read_procs(w, plen);
	while ((e = readdir(d))) {
		size_t nlen = strlen(e->d_name);

		if ((e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) || e->d_name[0] == '.')
			continue;
		if (plen + 1 + nlen + 1 > sizeof(w->path)) {
			w->truncated = true;
			continue;
		}
		w->path[plen] = '/';
		memcpy(w->path + plen + 1, e->d_name, nlen + 1);
		if (e->d_type == DT_DIR || is_dir(w->path))
			walk(w, plen + 1 + nlen, depth + 1);
		w->path[plen] = '\0';
	}
	closedir(d);
	return 0;
}

int rt_procfs_cgroup_pids(const char *dir, pid_t *out, int max, bool *truncated)
{
	struct cg_walk *w = calloc(1, sizeof(*w));
	size_t len = strlen(dir);
	int err;

	*truncated = false;
	if (!w)
		return -ENOMEM;
	if (len >= sizeof(w->path)) {
		free(w);
		return -ENAMETOOLONG;
	}
	memcpy(w->path, dir, len + 1);
	w->out = out;
	w->max = max;
	err = walk(w, len, 0);
	*truncated = w->truncated;
	err = err ? err : w->n;
	free(w);
	return err;
}

int rt_procfs_find_lib(pid_t pid, const char *prefix, char *path, size_t len)
{
	char maps[64], line[4096];
	size_t plen = strlen(prefix);
	FILE *f;
	int found = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *base, *nl;

		if (!file)
			continue;
		nl = strchr(file, '\n');
		if (nl)
			*nl = '\0';
		base = strrchr(file, '/') + 1;
		if (strncmp(base, prefix, plen))
			continue;
		/* through the process's root: its mount namespace may differ */
		if ((size_t)snprintf(path, len, "/proc/%d/root%s", pid, file) < len)
			found = 1;
	}
	fclose(f);
	return found;
}
