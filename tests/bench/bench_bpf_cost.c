// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the BPF source costs a traced (and an untraced) process per socket
 * syscall: wall time per write() on an AF_UNIX socketpair with no programs
 * loaded, loaded but untraced, and traced (64 B and 1500 B payloads), plus
 * the kernel's own run-time statistics per program (BPF_ENABLE_STATS).
 * Prints a table; asserts nothing (timing on a shared machine is noisy).
 * Run as root: bench_bpf_cost [writes].
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sources/bpf_source.h"

#define MAX_PROGS 64

struct prog_stat {
	char name[BPF_OBJ_NAME_LEN];
	int fd;
	__u64 run_ns, runs;
};

static struct prog_stat progs[MAX_PROGS];
static int n_progs;

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *drain(void *arg)
{
	char b[65536];

	while (read(*(int *)arg, b, sizeof(b)) > 0)
		;
	return NULL;
}

/* ns per write() of `size` bytes, with a reader thread keeping the socket empty */
static double writes(long n, size_t size)
{
	static char buf[65536];
	pthread_t th;
	int sv[2];
	__u64 t0;
	long i;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pthread_create(&th, NULL, drain, &sv[1]))
		return -1;
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (write(sv[0], buf, size) != (ssize_t)size)
			break;
	t0 = now_ns() - t0;
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	return (double)t0 / n;
}

/* Our programs: those loaded after `after_id` with an rt_ name. */
static void find_progs(__u32 after_id)
{
	__u32 id = after_id;

	while (n_progs < MAX_PROGS && !bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len) || strncmp(info.name, "rt_", 3)) {
			close(fd);
			continue;
		}
		snprintf(progs[n_progs].name, sizeof(progs[n_progs].name), "%s", info.name);
		progs[n_progs++].fd = fd;
	}
}

static void snap(void)
{
	int i;

	for (i = 0; i < n_progs; i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (!bpf_obj_get_info_by_fd(progs[i].fd, &info, &len)) {
			progs[i].run_ns = info.run_time_ns;
			progs[i].runs = info.run_cnt;
		}
	}
}

static void report(const char *what, const struct prog_stat *before)
{
	int i;

	snap();
	for (i = 0; i < n_progs; i++) {
		__u64 runs = progs[i].runs - before[i].runs;

		if (runs)
			printf("  %-22s %-20s %10llu runs %8.1f ns/run\n", what, progs[i].name,
			       (unsigned long long)runs,
			       (double)(progs[i].run_ns - before[i].run_ns) / runs);
	}
}

static int ignore(const struct rt_event_hdr *ev, void *ctx)
{
	(void)ev;
	(*(long *)ctx)++;
	return 0;
}

static int traced_child(struct rt_bpf_source *s, long n, size_t size, double *ns, long *records)
{
	int p[2], go[2], status;
	pid_t pid;
	char b;

	if (pipe(p) || pipe(go))
		return -1;
	pid = fork();
	if (pid == 0) {
		double r;

		if (read(go[0], &b, 1) != 1)
			_exit(1);
		r = writes(n, size);
		_exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	rt_bpf_source__add_pid(s, pid, 1);
	if (write(go[1], "g", 1) != 1)
		return -1;
	/* drain as the daemon would while the child runs: the ring never fills */
	for (;;) {
		struct pollfd pf[2] = { { .fd = p[0], .events = POLLIN },
					{ .fd = rt_bpf_source__epoll_fd(s), .events = POLLIN } };

		poll(pf, 2, 10);
		rt_bpf_source__consume(s, ignore, records);
		if (pf[0].revents)
			break;
	}
	if (read(p[0], ns, sizeof(*ns)) != sizeof(*ns))
		return -1;
	waitpid(pid, &status, 0);
	close(p[0]);
	close(p[1]);
	close(go[0]);
	close(go[1]);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000, records = 0;
	struct rt_bpf_source_opts opts = { 0 };
	struct prog_stat before[MAX_PROGS];
	double base64, base1500, untraced, traced64, traced1500;
	struct rt_bpf_source *s;
	struct rt_bpf_stats st;
	__u32 last_id = 0, id;
	__u64 t_new;
	int stats_fd;

	if (n <= 0)
		return 2;
	base64 = writes(n, 64);
	base1500 = writes(n, 1500);

	while (!bpf_prog_get_next_id(last_id, &id))
		last_id = id;
	t_new = now_ns();
	s = rt_bpf_source__new(&opts);
	t_new = now_ns() - t_new;
	if (!s) {
		perror("rt_bpf_source__new");
		return 1;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	find_progs(last_id);

	snap();
	memcpy(before, progs, sizeof(before));
	untraced = writes(n, 64);
	printf("per-program cost (kernel run-time stats%s):\n", stats_fd < 0 ? " UNAVAILABLE" : "");
	report("untraced 64 B", before);

	memcpy(before, progs, sizeof(before));
	traced_child(s, n, 64, &traced64, &records);
	report("traced 64 B", before);
	rt_bpf_source__consume(s, ignore, &records);

	memcpy(before, progs, sizeof(before));
	traced_child(s, n / 4, 1500, &traced1500, &records);
	report("traced 1500 B", before);
	rt_bpf_source__consume(s, ignore, &records);
	rt_bpf_source__stats(s, &st);

	printf("wall time per write():\n");
	printf("  no programs      64 B %8.1f ns   1500 B %8.1f ns\n", base64, base1500);
	printf("  loaded, untraced 64 B %8.1f ns\n", untraced);
	printf("  traced           64 B %8.1f ns   1500 B %8.1f ns\n", traced64, traced1500);
	printf("rt_bpf_source__new: %.1f ms (open, load, verify, attach)\n", t_new / 1e6);
	printf("records %ld, lost %llu, ring peak %llu of %llu B\n", records,
	       (unsigned long long)st.lost_total, (unsigned long long)st.ring_avail_max,
	       (unsigned long long)st.ring_bytes);
	if (stats_fd >= 0)
		close(stats_fd);
	rt_bpf_source__free(s);
	return 0;
}
