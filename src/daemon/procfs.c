// SPDX-License-Identifier: BSD-2-Clause
#include "daemon/procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Inode of a socket listening on port in one /proc/net/tcp-format file. */
static unsigned long listen_inode(const char *file, uint16_t port)
{
	char line[512];
	unsigned long inode = 0;
	FILE *f = fopen(file, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char local[128];
		unsigned int lport, state;
		unsigned long ino;
		char *colon;

		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*d: %127s %*s %x %*s %*s %*s %*u %*u %lu", local, &state,
			   &ino) != 3)
			continue;
		colon = strrchr(local, ':');
		if (!colon || sscanf(colon + 1, "%x", &lport) != 1)
			continue;
		if (state == 0x0A /* TCP_LISTEN */ && lport == port && ino) {
			inode = ino;
			break;
		}
	}
	fclose(f);
	return inode;
}

/* The pid owning socket inode `inode`, 0 if none. */
static pid_t socket_owner(unsigned long inode)
{
	DIR *d = opendir("/proc"), *fdd;
	struct dirent *e, *fe;
	char want[64], path[300], link[128];
	pid_t found = 0;

	if (!d)
		return 0;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	while (!found && (e = readdir(d))) {
		char *end;
		long v = strtol(e->d_name, &end, 10);

		if (*end || v <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", v);
		fdd = opendir(path);
		if (!fdd)
			continue;
		while ((fe = readdir(fdd))) {
			ssize_t n;

			if (fe->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/fd/%s", v, fe->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (!strcmp(link, want)) {
				found = (pid_t)v;
				break;
			}
		}
		closedir(fdd);
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
