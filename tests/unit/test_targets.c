/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Target groups with real child processes and a fake cgroup (a temp dir
 * whose cgroup.procs the test writes): members join and leave, a member's
 * exit never takes the others with it, a --comm target finds processes by
 * name, a --pid target follows its root, a --port target finds this
 * process's listener, and the bounds on arguments.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "daemon/targets.h"

#define LOG_MAX 64

struct call {
	char op; /* '+' add, '-' remove, '<' left */
	pid_t pid;
	uint32_t group_id;
};

struct fake {
	struct call log[LOG_MAX];
	int n;
};

static int cb_add(void *ctx, const struct rt_target *t, pid_t pid)
{
	struct fake *f = ctx;

	assert_true(f->n < LOG_MAX);
	f->log[f->n++] = (struct call){ '+', pid, t->group_id };
	return 0;
}

static void cb_remove(void *ctx, const struct rt_target *t, pid_t pid, bool left)
{
	struct fake *f = ctx;

	assert_true(f->n < LOG_MAX);
	f->log[f->n++] = (struct call){ left ? '<' : '-', pid, t->group_id };
}

static int count(const struct fake *f, char op, pid_t pid)
{
	int i, n = 0;

	for (i = 0; i < f->n; i++)
		if (f->log[i].op == op && f->log[i].pid == pid)
			n++;
	return n;
}

static pid_t child(const char *name)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); /* a failed test must not leave it */
		if (name)
			prctl(PR_SET_NAME, name, 0, 0, 0);
		for (;;)
			pause();
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static bool has_pid(struct rt_targets *ts, uint32_t group, pid_t pid)
{
	pid_t pids[64];
	int n = rt_targets__pids(ts, group, pids, 64), i;

	for (i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

static void write_procs(const char *dir, pid_t a, pid_t b)
{
	char path[PATH_MAX + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	if (a)
		fprintf(f, "%d\n", a);
	if (b)
		fprintf(f, "%d\n", b);
	fclose(f);
}

static void proc_exit(struct rt_targets *ts, pid_t pid)
{
	struct rt_ev_proc_exit x = { 0 };

	x.hdr.kind = RT_EV_PROC_EXIT;
	x.hdr.size = sizeof(x);
	x.hdr.pid = (__u32)pid;
	x.hdr.tid = (__u32)pid;
	x.group_dead = 1;
	rt_targets__observe(ts, &x.hdr);
}

static void test_cgroup_members(void **state)
{
	struct fake f = { 0 };
	struct rt_targets_cb cb = { cb_add, cb_remove, &f };
	struct rt_targets *ts = rt_targets__new(&cb);
	char dir[] = "/tmp/rt-test-targets-XXXXXX", sub[PATH_MAX], path[PATH_MAX + 16];
	struct rt_ev_task_new tn = { 0 };
	const struct rt_target *t;
	pid_t a = child(NULL), b = child(NULL), c = child(NULL), pids[4];

	(void)state;
	assert_non_null(ts);
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/child", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	write_procs(dir, a, 0);
	write_procs(sub, b, 0);
	assert_int_equal(rt_targets__add_cgroup(ts, dir), 0);
	t = rt_targets__get(ts, 0);
	assert_int_equal(t->kind, RT_TARGET_CGROUP);
	assert_string_equal(t->cgroup, dir);
	assert_memory_equal(t->group, "cgroup:", 7);
	assert_false(t->active);

	/* members of the cgroup and of the one below it */
	rt_targets__scan(ts);
	assert_true(t->active);
	assert_int_equal(count(&f, '+', a), 1);
	assert_int_equal(count(&f, '+', b), 1);
	assert_true(rt_targets__group_of(ts, b) == t->group_id);
	assert_true(t->netns != 0);
	rt_targets__scan(ts); /* nothing new: no second add */
	assert_int_equal(f.n, 2);

	/* a child the kernel already follows: recorded, not added again */
	tn.hdr.kind = RT_EV_TASK_NEW;
	tn.hdr.size = sizeof(tn);
	tn.hdr.pid = (__u32)a;
	tn.child_pid = (__u32)c;
	tn.child_tid = (__u32)c;
	rt_targets__observe(ts, &tn.hdr);
	assert_true(has_pid(ts, t->group_id, c));
	assert_int_equal(count(&f, '+', c), 0);

	/* a moves out while alive: it leaves (the daemon is told so); the others stay */
	write_procs(dir, c, 0);
	rt_targets__scan(ts);
	assert_int_equal(count(&f, '<', a), 1);
	assert_false(has_pid(ts, t->group_id, a));
	assert_true(has_pid(ts, t->group_id, b));
	assert_true(t->active);

	/* b exits: only b goes, even when it was the target's root */
	write_procs(sub, 0, 0);
	reap(b);
	proc_exit(ts, b);
	assert_int_equal(count(&f, '-', b), 1);
	assert_true(has_pid(ts, t->group_id, c));
	assert_true(t->active);
	assert_int_equal(t->root, c);

	/* c dies without its exit record (lost): the scan drops it, not as "left";
	 * the cgroup is empty now, the target waits */
	write_procs(dir, 0, 0);
	reap(c);
	rt_targets__scan(ts);
	assert_int_equal(count(&f, '-', c), 1);
	assert_int_equal(count(&f, '<', c), 0);
	assert_false(t->active);
	assert_int_equal(t->root, 0);
	assert_int_equal(rt_targets__pids(ts, 0, pids, 4), 0);
	assert_true(t->activations == 1);

	/* a new member: the target is active again */
	write_procs(dir, a, 0);
	rt_targets__scan(ts);
	assert_true(t->active);
	assert_int_equal(t->root, a);
	assert_true(t->activations == 2);
	assert_int_equal(count(&f, '+', a), 2);

	reap(a);
	rt_targets__free(ts);
	snprintf(path, sizeof(path), "%s/cgroup.procs", sub);
	unlink(path);
	rmdir(sub);
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	unlink(path);
	rmdir(dir);
}

static void test_comm(void **state)
{
	struct fake f = { 0 };
	struct rt_targets_cb cb = { cb_add, cb_remove, &f };
	struct rt_targets *ts = rt_targets__new(&cb);
	char name[16];
	const struct rt_target *t;
	pid_t a, b;

	(void)state;
	snprintf(name, sizeof(name), "rtt%d", getpid() % 1000000);
	assert_int_equal(rt_targets__add_comm(ts, name), 0);
	t = rt_targets__get(ts, 0);
	rt_targets__scan(ts);
	assert_false(t->active);

	a = child(name);
	b = child(name);
	usleep(50 * 1000); /* let both rename themselves */
	rt_targets__scan(ts);
	assert_true(t->active);
	assert_true(has_pid(ts, t->group_id, a));
	assert_true(has_pid(ts, t->group_id, b));

	/* the first member exits: the second stays traced, never re-added */
	reap(a);
	proc_exit(ts, a);
	rt_targets__scan(ts);
	assert_int_equal(count(&f, '-', a), 1);
	assert_int_equal(count(&f, '-', b), 0);
	assert_int_equal(count(&f, '+', b), 1);
	assert_true(t->active);
	reap(b);
	rt_targets__scan(ts);
	assert_false(t->active);
	rt_targets__free(ts);
}

static void test_pid_and_port(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct fake f = { 0 };
	struct rt_targets_cb cb = { cb_add, cb_remove, &f };
	struct rt_targets *ts = rt_targets__new(&cb);
	socklen_t len = sizeof(sa);
	const struct rt_target *tp, *tl;
	pid_t a = child(NULL);
	int fd;

	(void)state;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	assert_int_equal(rt_targets__add_pid(ts, a), 0);
	assert_int_equal(rt_targets__add_port(ts, ntohs(sa.sin_port)), 0);
	tp = rt_targets__get(ts, 0);
	tl = rt_targets__get(ts, 1);
	assert_string_equal(rt_target_kind_name(tl->kind), "port");

	rt_targets__scan(ts);
	assert_true(tp->active);
	assert_false(tl->active); /* bound, not yet listening */
	assert_int_equal(listen(fd, 4), 0);
	rt_targets__scan(ts);
	assert_true(tl->active);
	assert_int_equal(tl->root, getpid());
	assert_true(tl->netns != 0);

	/* the --pid root exits: the target is done (a pid is never reused for it) */
	reap(a);
	rt_targets__scan(ts);
	assert_false(tp->active);
	assert_int_equal(count(&f, '-', a), 1);
	rt_targets__scan(ts);
	assert_int_equal(count(&f, '+', a), 1);
	close(fd);
	rt_targets__free(ts);
}

static void test_bounds(void **state)
{
	struct fake f = { 0 };
	struct rt_targets_cb cb = { cb_add, cb_remove, &f };
	struct rt_targets *ts = rt_targets__new(&cb);
	struct rt_targets_stats st;
	int i;

	(void)state;
	assert_int_equal(rt_targets__add_comm(ts, ""), -EINVAL);
	assert_int_equal(rt_targets__add_comm(ts, "sixteen-chars-xx"), -EINVAL);
	assert_int_equal(rt_targets__add_cgroup(ts, "a/../b"), -EINVAL);
	assert_int_equal(rt_targets__add_pid(ts, 0), -EINVAL);
	assert_int_equal(rt_targets__add_port(ts, 0), -EINVAL);
	assert_int_equal(rt_targets__count(ts), 0);
	for (i = 0; i < RT_TARGETS_MAX; i++)
		assert_int_equal(rt_targets__add_cgroup(ts, "system.slice/long-unit-name.service"),
				 0);
	assert_int_equal(rt_targets__add_pid(ts, 1), -ENOSPC);
	assert_string_equal(rt_targets__get(ts, 0)->group, "cgroup:long-unit-name.service");
	assert_null(rt_targets__get(ts, RT_TARGETS_MAX));
	assert_string_equal(rt_target_kind_name(RT_TARGET_CGROUP), "cgroup");
	assert_string_equal(rt_target_kind_name((enum rt_target_kind)99), "?");
	rt_targets__stats(ts, &st);
	assert_true(st.pids_dropped == 0);
	rt_targets__free(ts);
	rt_targets__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cgroup_members),
		cmocka_unit_test(test_comm),
		cmocka_unit_test(test_pid_and_port),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
