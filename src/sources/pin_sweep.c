// SPDX-License-Identifier: BSD-2-Clause
/* Directories of pinned links, as plain files (pin_sweep.h, bpf_pin.c). */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "pin_sweep.h"

unsigned long long rt_pin_start_time(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	size_t n;
	FILE *f;
	int i;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command name, which may hold spaces and parentheses */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* field 3 (state) follows ") "; the start time is field 22 */
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &st) != 1)
		return 0;
	return st;
}

unsigned rt_pin_remove_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	unsigned n = 0;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		if (!unlink(path))
			n++;
	}
	closedir(d);
	rmdir(dir);
	return n;
}

unsigned rt_pin_sweep(const char *root, const char *own)
{
	char dir[PATH_MAX];
	unsigned long long st;
	unsigned n, swept = 0;
	struct dirent *e;
	long pid;
	DIR *d;

	d = opendir(root);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (sscanf(e->d_name, "%ld-%llu-", &pid, &st) != 2 || pid <= 0)
			continue;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name) >= sizeof(dir) ||
		    !strcmp(dir, own))
			continue;
		/* alive: the same pid with the same start time */
		if (rt_pin_start_time(pid) == st)
			continue;
		n = rt_pin_remove_dir(dir);
		swept++;
		ilog("removed %u BPF link pins of reqtraced pid %ld, which did not exit cleanly; "
		     "the "
		     "kernel detaches them now",
		     n, pid);
	}
	closedir(d);
	return swept;
}
