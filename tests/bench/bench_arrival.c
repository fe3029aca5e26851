// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the arrival programs (bpf/arrival.bpf.h: raw tracepoints on
 * sock:inet_sock_set_state and tcp:tcp_probe, which fire for every TCP
 * socket of the host) cost TCP traffic that reqtrace does not trace: a
 * loopback client (this process) and server (a forked child), neither
 * traced, in three workloads (small request/response round trips on one
 * connection, short connections with one round trip each, a bulk stream)
 * under four configurations, interleaved round by round:
 *   none     no BPF programs
 *   source   the whole BPF source attached (what reqtraced costs untraced
 *            TCP traffic: mostly the syscall tracepoints), port not watched
 *   arrival  only the two arrival programs, port not watched (every
 *            segment and state change pays the port check)
 *   watched  only the arrival programs, the server's port watched (its
 *            connections get a map entry; data segments update it)
 * Prints each round and the median ratio to `none`, plus the kernel's
 * run-time statistics of the two arrival programs (BPF_ENABLE_STATS).
 * Client and server share one CPU (the last one), so that each number is
 * CPU work plus context switches rather than cross-CPU wakeups, whose cost
 * on a VM (an IPI, a VM exit) varies far more than what is measured.
 * Asserts nothing. Run as root:
 *   bench_arrival [rounds] [round_trips] [connections] [bulk_MiB]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sources/bpf_source.h"
#include "sock.skel.h"

#define MSG 64
#define CHUNK (64 * 1024)
#define ROUNDS_MAX 32

enum config { NONE, SOURCE, ARRIVAL, WATCHED, N_CONFIGS };
enum workload { RR, CONN, BULK, N_WORKLOADS };

static const char *const config_names[N_CONFIGS] = { "none", "source", "arrival", "watched" };

struct params {
	long round_trips, conns;
	long long bulk_bytes;
};

/* per-program run-time stats of the arrival programs, summed over rounds */
struct prog_cost {
	__u64 runs, run_ns;
};

static struct prog_cost arr_cost[N_CONFIGS][2]; /* rt_arr_state, rt_arr_probe */

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int full_io(int fd, void *b, size_t n, bool out)
{
	char *p = b;

	while (n) {
		ssize_t r = out ? write(fd, p, n) : read(fd, p, n);

		if (r <= 0)
			return -1;
		p += r;
		n -= r;
	}
	return 0;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The server: echoes MSG-byte messages, or swallows a stream and acks its end. */
static void serve(int lfd, enum workload w, long conns)
{
	static char buf[CHUNK];
	long i, n = w == CONN ? conns : 1;

	for (i = 0; i < n; i++) {
		int fd = accept(lfd, NULL, NULL);
		ssize_t r;

		if (fd < 0)
			_exit(1);
		nodelay(fd);
		if (w == BULK) {
			while ((r = read(fd, buf, sizeof(buf))) > 0)
				;
			if (write(fd, "k", 1) != 1)
				_exit(1);
		} else {
			while (full_io(fd, buf, MSG, false) == 0)
				if (full_io(fd, buf, MSG, true))
					break;
		}
		close(fd);
	}
	_exit(0);
}

static int connect_to(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		return -1;
	nodelay(fd);
	return fd;
}

/*
 * One workload against a fresh server; returns ns per round trip, per
 * connection, or MB/s. With `watch`, the server's port is watched.
 */
static double run(enum workload w, const struct params *p, struct sock_bpf *watch)
{
	static char buf[CHUNK];
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	double result = -1;
	long long left;
	long i;
	__u64 t0;
	pid_t pid;
	int lfd, fd, status;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl))
		return -1;
	if (watch)
		watch->bss->rt_watch_ports[ntohs(sa.sin_port)] = 1;
	pid = fork();
	if (pid == 0)
		serve(lfd, w, p->conns);
	close(lfd);
	memset(buf, 'x', sizeof(buf));

	t0 = now_ns();
	switch (w) {
	case RR:
		fd = connect_to(&sa);
		for (i = 0; fd >= 0 && i < p->round_trips; i++)
			if (full_io(fd, buf, MSG, true) || full_io(fd, buf, MSG, false))
				break;
		if (fd >= 0 && i == p->round_trips)
			result = (double)(now_ns() - t0) / p->round_trips;
		close(fd);
		break;
	case CONN:
		for (i = 0; i < p->conns; i++) {
			fd = connect_to(&sa);
			if (fd < 0 || full_io(fd, buf, MSG, true) || full_io(fd, buf, MSG, false))
				break;
			close(fd);
		}
		if (i == p->conns)
			result = (double)(now_ns() - t0) / p->conns;
		break;
	case BULK:
		fd = connect_to(&sa);
		for (left = p->bulk_bytes; fd >= 0 && left > 0; left -= CHUNK)
			if (full_io(fd, buf, CHUNK, true))
				break;
		if (fd >= 0 && left <= 0 && !shutdown(fd, SHUT_WR) && read(fd, buf, 1) == 1)
			result = p->bulk_bytes / ((double)(now_ns() - t0) / 1e9) / 1e6;
		close(fd);
		break;
	default:
		break;
	}
	if (result < 0)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return result;
}

/* fds of this source's arrival programs: the rt_arr_* loaded after after_id */
static int find_arrival_progs(__u32 after_id, int fds[2])
{
	__u32 id = after_id;
	int found = 0;

	fds[0] = fds[1] = -1;
	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(id), k;

		if (fd < 0)
			continue;
		k = -1;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			k = !strcmp(info.name, "rt_arr_state") ? 0 :
			    !strcmp(info.name, "rt_arr_probe") ? 1 :
								 -1;
		if (k < 0 || fds[k] >= 0) {
			close(fd);
			continue;
		}
		fds[k] = fd;
		found++;
	}
	return found;
}

static void prog_snap(const int fds[2], struct prog_cost out[2])
{
	int i;

	for (i = 0; i < 2; i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		out[i].runs = out[i].run_ns = 0;
		if (fds[i] >= 0 && !bpf_obj_get_info_by_fd(fds[i], &info, &len)) {
			out[i].runs = info.run_cnt;
			out[i].run_ns = info.run_time_ns;
		}
	}
}

/* The sock object with only the arrival programs loaded and attached. */
static struct sock_bpf *arrival_only(struct bpf_link *links[2])
{
	struct sock_bpf *o = sock_bpf__open();
	struct bpf_program *prog;

	if (!o)
		return NULL;
	bpf_object__for_each_program(prog, o->obj)
		bpf_program__set_autoload(prog, prog == o->progs.rt_arr_state ||
							prog == o->progs.rt_arr_probe);
	if (sock_bpf__load(o) || !o->bss)
		goto fail;
	links[0] = bpf_program__attach(o->progs.rt_arr_state);
	links[1] = bpf_program__attach(o->progs.rt_arr_probe);
	if (!links[0] || !links[1])
		goto fail;
	o->bss->rt_arrival_on = 1;
	return o;
fail:
	bpf_link__destroy(links[0]);
	bpf_link__destroy(links[1]);
	sock_bpf__destroy(o);
	return NULL;
}

/* One round of all workloads under one configuration. */
static int round_of(enum config cfg, const struct params *p, double res[N_WORKLOADS])
{
	struct rt_bpf_source_opts opts = { 0 };
	struct prog_cost before[2], after[2];
	struct bpf_link *links[2] = { NULL, NULL };
	struct rt_bpf_source *s = NULL;
	struct sock_bpf *o = NULL;
	struct rt_bpf_stats st;
	__u32 last_id = 0, id;
	int fds[2] = { -1, -1 }, w, i;

	if (cfg == SOURCE) {
		while (!bpf_prog_get_next_id(last_id, &id))
			last_id = id;
		s = rt_bpf_source__new(&opts);
		if (!s) {
			perror("rt_bpf_source__new");
			return -1;
		}
		if (rt_bpf_source__stats(s, &st) || !st.arrival_on) {
			fprintf(stderr, "arrival tracepoints not attached\n");
			rt_bpf_source__free(s);
			return -1;
		}
		find_arrival_progs(last_id, fds);
	} else if (cfg != NONE) {
		o = arrival_only(links);
		if (!o) {
			perror("loading the arrival programs");
			return -1;
		}
		fds[0] = dup(bpf_program__fd(o->progs.rt_arr_state));
		fds[1] = dup(bpf_program__fd(o->progs.rt_arr_probe));
	}
	prog_snap(fds, before);
	for (w = 0; w < N_WORKLOADS; w++)
		res[w] = run(w, p, cfg == WATCHED ? o : NULL);
	prog_snap(fds, after);
	for (i = 0; i < 2; i++) {
		arr_cost[cfg][i].runs += after[i].runs - before[i].runs;
		arr_cost[cfg][i].run_ns += after[i].run_ns - before[i].run_ns;
		if (fds[i] >= 0)
			close(fds[i]);
	}
	bpf_link__destroy(links[0]);
	bpf_link__destroy(links[1]);
	sock_bpf__destroy(o);
	rt_bpf_source__free(s);
	for (w = 0; w < N_WORKLOADS; w++)
		if (res[w] < 0)
			return -1;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	struct params p = {
		.round_trips = argc > 2 ? atol(argv[2]) : 20000,
		.conns = argc > 3 ? atol(argv[3]) : 2000,
		.bulk_bytes = (argc > 4 ? atoll(argv[4]) : 512) << 20,
	};
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	double res[ROUNDS_MAX][N_CONFIGS][N_WORKLOADS], ratio[ROUNDS_MAX];
	int stats_fd, r, c, w;

	if (rounds < 1 || rounds > ROUNDS_MAX || p.round_trips <= 0 || p.conns <= 0 ||
	    p.bulk_bytes <= 0) {
		fprintf(stderr, "usage: %s [rounds<=%d] [round_trips] [connections] [bulk_MiB]\n",
			argv[0], ROUNDS_MAX);
		return 2;
	}
	{
		cpu_set_t set;
		int last = sysconf(_SC_NPROCESSORS_ONLN) - 1;

		CPU_ZERO(&set);
		CPU_SET(last > 0 ? last : 0, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) /* the forked servers inherit it */
			perror("sched_setaffinity");
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	printf("%d rounds; per round: %ld round trips of %d B, %ld connections of one round "
	       "trip, %lld MiB streamed in %d KiB writes\n\n",
	       rounds, p.round_trips, MSG, p.conns, p.bulk_bytes >> 20, CHUNK >> 10);
	printf("| round | config | round trip (ns) | connection (ns) | bulk (MB/s) |\n");
	printf("| --- | --- | --- | --- | --- |\n");
	for (r = 0; r < rounds; r++) {
		/* rotate the order so that no configuration always runs first */
		for (c = 0; c < N_CONFIGS; c++) {
			int cfg = (c + r) % N_CONFIGS;

			if (round_of(cfg, &p, res[r][cfg]))
				return 1;
		}
		for (c = 0; c < N_CONFIGS; c++)
			printf("| %d | %s | %.0f | %.0f | %.0f |\n", r + 1, config_names[c],
			       res[r][c][RR], res[r][c][CONN], res[r][c][BULK]);
		fflush(stdout);
	}

	printf("\nmedian ratio to `none` (time: > 1 is slower; throughput: < 1 is slower)\n\n");
	printf("| config | round trip | connection | bulk |\n| --- | --- | --- | --- |\n");
	for (c = SOURCE; c < N_CONFIGS; c++) {
		printf("| %s |", config_names[c]);
		for (w = 0; w < N_WORKLOADS; w++) {
			for (r = 0; r < rounds; r++)
				ratio[r] = res[r][c][w] / res[r][NONE][w];
			printf(" %.3f |", median(ratio, rounds));
		}
		printf("\n");
	}
	printf("\narrival programs (kernel run-time stats%s):\n",
	       stats_fd < 0 ? " UNAVAILABLE" : "");
	for (c = SOURCE; c < N_CONFIGS; c++)
		for (w = 0; w < 2; w++) {
			const struct prog_cost *pc = &arr_cost[c][w];

			printf("  %-8s %-14s %10llu runs %8.1f ns/run\n", config_names[c],
			       w ? "rt_arr_probe" : "rt_arr_state", (unsigned long long)pc->runs,
			       pc->runs ? (double)pc->run_ns / pc->runs : 0.0);
		}
	if (stats_fd >= 0)
		close(stats_fd);
	return 0;
}
