/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /proc and cgroup helpers: --cgroup path resolution, the bounded recursive
 * cgroup.procs walk (on a fake tree in a temp dir), network namespace
 * inodes, and finding a listener (this process's own socket) through the
 * per-namespace search.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "daemon/procfs.h"

static char tmp[256];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/rt-test-procfs-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd) == 0 ? 0 : -1;
}

static int cmp_pid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

static void test_cgroup_path(void **state)
{
	char p[PATH_MAX], longarg[600];
	size_t n;

	(void)state;
	assert_int_equal(
		rt_procfs_cgroup_path("/sys/fs/cgroup/system.slice/x.service/", p, sizeof(p)), 0);
	assert_string_equal(p, "/sys/fs/cgroup/system.slice/x.service");

	/* relative, and as /proc/PID/cgroup prints it: both under the v2 mount */
	assert_int_equal(rt_procfs_cgroup_path("system.slice/x.service", p, sizeof(p)), 0);
	n = strlen(p);
	assert_true(n > strlen("/system.slice/x.service"));
	assert_string_equal(p + n - strlen("/system.slice/x.service"), "/system.slice/x.service");
	assert_int_equal(p[0], '/');
	assert_int_equal(rt_procfs_cgroup_path("/system.slice/x.service", longarg, sizeof(longarg)),
			 0);
	assert_string_equal(longarg, p);

	/* an absolute directory holding cgroup.procs is taken as is */
	put("cgroup.procs", "");
	assert_int_equal(rt_procfs_cgroup_path(tmp, p, sizeof(p)), 0);
	assert_string_equal(p, tmp);

	assert_int_equal(rt_procfs_cgroup_path("", p, sizeof(p)), -EINVAL);
	assert_int_equal(rt_procfs_cgroup_path("..", p, sizeof(p)), -EINVAL);
	assert_int_equal(rt_procfs_cgroup_path("a/../b", p, sizeof(p)), -EINVAL);
	assert_int_equal(rt_procfs_cgroup_path("/sys/fs/cgroup/a/..", p, sizeof(p)), -EINVAL);
	assert_int_equal(rt_procfs_cgroup_path("a..b/c..", p, sizeof(p)), 0);
	memset(longarg, 'x', sizeof(longarg) - 1);
	longarg[sizeof(longarg) - 1] = '\0';
	assert_int_equal(rt_procfs_cgroup_path(longarg, p, 64), -ENAMETOOLONG);
}

static void test_cgroup_pids_tree(void **state)
{
	pid_t out[16];
	bool trunc;
	char sub[PATH_MAX];
	int n;

	(void)state;
	put("cgroup.procs", "10\n11\n");
	dir("a");
	put("a/cgroup.procs", "20\n");
	dir("a/b");
	put("a/b/cgroup.procs", "30\ngarbage\n-5\n0\n31\n");
	dir("c"); /* no cgroup.procs (a v1 sibling, say): skipped */
	put("c/other", "99\n");

	n = rt_procfs_cgroup_pids(tmp, out, 16, &trunc);
	assert_int_equal(n, 5);
	assert_false(trunc);
	qsort(out, (size_t)n, sizeof(out[0]), cmp_pid);
	assert_int_equal(out[0], 10);
	assert_int_equal(out[1], 11);
	assert_int_equal(out[2], 20);
	assert_int_equal(out[3], 30);
	assert_int_equal(out[4], 31);

	/* a subtree only */
	snprintf(sub, sizeof(sub), "%s/a", tmp);
	n = rt_procfs_cgroup_pids(sub, out, 16, &trunc);
	assert_int_equal(n, 3);

	/* the output bound */
	n = rt_procfs_cgroup_pids(tmp, out, 3, &trunc);
	assert_int_equal(n, 3);
	assert_true(trunc);

	snprintf(sub, sizeof(sub), "%s/missing", tmp);
	assert_int_equal(rt_procfs_cgroup_pids(sub, out, 16, &trunc), -ENOENT);
}

static void test_cgroup_pids_depth(void **state)
{
	char rel[PATH_MAX] = "";
	pid_t out[64];
	bool trunc;
	int i, n;

	(void)state;
	/* a chain deeper than the walk goes: the deepest levels are left out, and said so */
	for (i = 0; i < RT_PROCFS_CGROUP_DEPTH_MAX + 4; i++) {
		char file[PATH_MAX + 16];

		strcat(rel, i ? "/d" : "d");
		dir(rel);
		snprintf(file, sizeof(file), "%s/cgroup.procs", rel);
		put(file, "7\n");
	}
	n = rt_procfs_cgroup_pids(tmp, out, 64, &trunc);
	assert_true(trunc);
	assert_int_equal(n, RT_PROCFS_CGROUP_DEPTH_MAX);
}

static void test_netns(void **state)
{
	uint64_t a = 0, b = 0;
	struct stat st;

	(void)state;
	assert_int_equal(stat("/proc/self/ns/net", &st), 0);
	assert_int_equal(rt_procfs_netns(0, &a), 0);
	assert_int_equal(rt_procfs_netns(getpid(), &b), 0);
	assert_true(a == (uint64_t)st.st_ino);
	assert_true(a == b);
	assert_true(rt_procfs_netns(-1, &a) < 0);
}

static void test_find_listener(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	struct rt_procfs_listener l;
	uint64_t own;
	uint16_t port;
	int fd;

	(void)state;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);

	/* bound, not listening: nothing */
	assert_int_equal(rt_procfs_find_listener(port, &l), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(rt_procfs_find_listener(port, &l), 1);
	assert_int_equal(l.pid, getpid());
	assert_int_equal(rt_procfs_netns(0, &own), 0);
	assert_true(l.netns == own);
	assert_int_equal(l.netns_skipped, 0);
	assert_int_equal(rt_procfs_listener(port, 0), getpid());
	close(fd);
	assert_int_equal(rt_procfs_find_listener(port, &l), 0);
	assert_int_equal(l.pid, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cgroup_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cgroup_pids_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cgroup_pids_depth, setup, teardown),
		cmocka_unit_test(test_netns),
		cmocka_unit_test(test_find_listener),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
