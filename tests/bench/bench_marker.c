// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a marker call costs the calling thread, three ways in one run:
 *
 *   not traced  no ring, no uprobe: the call and its fallback check;
 *   uprobe      the daemon's marker uprobes attached and this process
 *               traced (root and BPF; skipped otherwise), BPF ring drained
 *               by a second thread;
 *   shm         a ring handed over by an inject server in this process
 *               (the daemon's code), drained by a second thread every
 *               500 us, or in a spin with RT_BENCH_SPIN=1 (the worst case:
 *               the reader keeps pulling the lines the writers write).
 *
 * ns per call, median of the rounds, by the thread CPU clock and the wall
 * clock. Each shm batch fits the ring and the
 * bench waits, untimed, for the consumer between batches: a ring left full
 * would time the cheaper drop path. Every record is counted on arrival and
 * the bench says how many arrived. Asserts nothing about timing (a loaded
 * machine would make that flaky). Run: bench_marker [rounds] [calls].
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <reqtrace/marker.h>

#include "sources/inject_server.h"
#ifdef RT_BENCH_BPF
#include "sources/bpf_source.h"
#endif

#define ROUNDS_MAX 31
#define BATCH_BEGIN 8192 /* 120 B slots: 1 MiB of the 2 MiB ring */
#define BATCH_STEP 1024 /* 536 B slots (4 members) */

static const char *const ids[4] = { "req-1", "req-2", "req-3", "req-4" };

static struct {
	struct rt_inject_server *srv;
#ifdef RT_BENCH_BPF
	struct rt_bpf_source *bpf;
#endif
	int stop;
	__u64 shm_records; /* marker records that came through the ring (atomic) */
	__u64 bpf_records;
} B;

static double clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* ns per call by two clocks: the calling thread's CPU time (a uprobe's
 * handler runs on it too; time preempted by other jobs does not count) and
 * the wall clock (which does) */
struct cost {
	double cpu, wall;
};

static int count_shm(const struct rt_event_hdr *ev, void *ctx)
{
	(void)ctx;
	if (ev->kind >= RT_EV_MARK_BEGIN && ev->kind <= RT_EV_MARK_BIND)
		__atomic_fetch_add(&B.shm_records, 1, __ATOMIC_RELAXED);
	return 0;
}

#ifdef RT_BENCH_BPF
static int count_bpf(const struct rt_event_hdr *ev, void *ctx)
{
	(void)ctx;
	if (ev->kind >= RT_EV_MARK_BEGIN && ev->kind <= RT_EV_MARK_BIND)
		__atomic_fetch_add(&B.bpf_records, 1, __ATOMIC_RELAXED);
	return 0;
}
#endif

/* The daemon's side: drains whatever is set up, on the other core. */
static void *consumer(void *arg)
{
	const char *e = getenv("RT_BENCH_SPIN");
	int spin = e && !strcmp(e, "1");

	(void)arg;
	while (!__atomic_load_n(&B.stop, __ATOMIC_ACQUIRE)) {
		struct rt_inject_server *srv = __atomic_load_n(&B.srv, __ATOMIC_ACQUIRE);

		if (srv) {
			rt_inject_server__on_readable(srv);
			rt_inject_server__consume(srv, count_shm, NULL);
		}
#ifdef RT_BENCH_BPF
		if (B.bpf)
			rt_bpf_source__consume(B.bpf, count_bpf, NULL);
#endif
		/* RT_BENCH_SPIN=1: drain in a spin, fighting the writers for the
		 * header's and the slots' cache lines; else every 500 us, as a daemon
		 * woken by its sources and its timer does */
		if (!spin || !srv)
			usleep(spin ? 200 : 500);
	}
	return NULL;
}

static void call_begin(long i)
{
	rt_mark_begin(ids[i & 3], RT_PHASE_DECODE);
}

static void call_step(long i)
{
	rt_mark_step_begin((uint64_t)i, 4, ids);
}

/* Waits (untimed) until `want` ring records have arrived. */
static void wait_shm(__u64 want)
{
	double deadline = now_ns() + 10e9;

	while (__atomic_load_n(&B.shm_records, __ATOMIC_RELAXED) < want && now_ns() < deadline)
		sched_yield();
}

/* One round: calls in batches, waiting (untimed) for the ring between them. */
static struct cost round_ns(void (*fn)(long), long calls, long batch, int shm, __u64 per_call)
{
	struct cost t = { 0, 0 };
	double c0, w0;
	long i = 0, j, end;
	__u64 base = __atomic_load_n(&B.shm_records, __ATOMIC_RELAXED);

	while (i < calls) {
		end = i + batch < calls ? i + batch : calls;
		w0 = now_ns();
		c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (j = i; j < end; j++)
			fn(j);
		t.cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		t.wall += now_ns() - w0;
		if (shm)
			wait_shm(base + (__u64)end * per_call);
		i = end;
	}
	t.cpu /= (double)calls;
	t.wall /= (double)calls;
	return t;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct cost median(void (*fn)(long), int rounds, long calls, long batch, int shm,
			  __u64 per_call)
{
	double cpu[ROUNDS_MAX], wall[ROUNDS_MAX];
	struct cost c;
	int k;

	for (k = 0; k < rounds; k++) {
		c = round_ns(fn, calls, batch, shm, per_call);
		cpu[k] = c.cpu;
		wall[k] = c.wall;
	}
	qsort(cpu, rounds, sizeof(cpu[0]), cmp_d);
	qsort(wall, rounds, sizeof(wall[0]), cmp_d);
	c.cpu = cpu[rounds / 2];
	c.wall = wall[rounds / 2];
	return c;
}

static void row(const char *name, struct cost nt, struct cost up, const char *up_why,
		struct cost sh, const char *sh_why, int wall)
{
	printf("%-28s %12.2f ", name, wall ? nt.wall : nt.cpu);
	up_why ? printf("%12s ", "-") : printf("%12.1f ", wall ? up.wall : up.cpu);
	sh_why ? printf("%12s\n", "-") : printf("%12.1f\n", wall ? sh.wall : sh.cpu);
}

#ifdef RT_BENCH_BPF
/* Attaches the marker uprobes to the library this bench calls and traces us. */
static int uprobe_setup(void)
{
	struct rt_bpf_source_opts o = { .source_id = 1 };
	Dl_info info;

	if (geteuid() != 0)
		return -EPERM;
	if (!dladdr((void *)rt_mark_begin, &info) || !info.dli_fname)
		return -ENOENT;
	B.bpf = rt_bpf_source__new(&o);
	if (!B.bpf)
		return -errno;
	if (rt_bpf_source__attach_markers(B.bpf, info.dli_fname) ||
	    rt_bpf_source__add_pid(B.bpf, (__u32)getpid(), 1))
		return -EIO;
	return 0;
}
#endif

static int allow_all(__u32 pid, void *ctx)
{
	(void)ctx;
	return pid == (__u32)getpid(); /* this process is the only peer */
}

/* An inject server at path; the library's thread finds it within its retry backoff. */
static int shm_setup(const char *path)
{
	struct rt_inject_server_opts o = { .path = path,
					   .first_source_id = 100,
					   .allow_pid = allow_all };
	struct rt_inject_server *s = rt_inject_server__new(&o);
	double deadline = now_ns() + 30e9;

	if (!s)
		return -errno;
	__atomic_store_n(&B.srv, s, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&B.shm_records, __ATOMIC_RELAXED) && now_ns() < deadline) {
		rt_mark_step_end(0);
		usleep(1000);
	}
	return __atomic_load_n(&B.shm_records, __ATOMIC_RELAXED) ? 0 : -ETIMEDOUT;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	long calls = argc > 2 ? atol(argv[2]) : 1000000L;
	long up_calls = calls / 100 > 1000 ? calls / 100 : 1000;
	struct cost nt_b, nt_s, up_b = { 0, 0 }, up_s = { 0, 0 }, sh_b = { 0, 0 }, sh_s = { 0, 0 };
	int wall;
	char dir[] = "/tmp/rt-bench-marker-XXXXXX", path[64];
	const char *up_why = NULL, *sh_why = NULL;
	__u64 shm_base = 0, shm_want = 0;
	pthread_t th;
	int err;

	if (rounds < 1 || rounds > ROUNDS_MAX || calls <= 0 ||
	    rt_mark_abi_version() != RT_MARKER_ABI_VERSION || !mkdtemp(dir)) {
		fprintf(stderr, "usage: bench_marker [rounds 1-%d] [calls > 0]\n", ROUNDS_MAX);
		return 2;
	}
	/* the library reads these at its first call: a socket nobody listens on yet */
	snprintf(path, sizeof(path), "%s/inject.sock", dir);
	setenv("REQTRACE_SOCKET", path, 1);
	unsetenv("REQTRACE_MARKER_SHM");

	nt_b = median(call_begin, rounds, calls, calls, 0, 0);
	nt_s = median(call_step, rounds, calls, calls, 0, 0);

#ifdef RT_BENCH_BPF
	err = uprobe_setup();
	if (err)
		up_why = err == -EPERM ? "needs root" : "BPF setup failed";
#else
	up_why = "built without BPF";
#endif
	if (pthread_create(&th, NULL, consumer, NULL)) {
		fprintf(stderr, "cannot start the consumer thread\n");
		return 1;
	}
	if (!up_why) {
		up_b = median(call_begin, rounds, up_calls, up_calls, 0, 0);
		up_s = median(call_step, rounds, up_calls, up_calls, 0, 0);
	}

	err = shm_setup(path);
	if (err) {
		sh_why = "no ring attached";
	} else {
		shm_base = __atomic_load_n(&B.shm_records, __ATOMIC_RELAXED);
		sh_b = median(call_begin, rounds, calls, BATCH_BEGIN, 1, 1);
		sh_s = median(call_step, rounds, calls / 4, BATCH_STEP, 1, 5);
		shm_want = (__u64)rounds * (__u64)calls + (__u64)rounds * (__u64)(calls / 4) * 5;
	}
	__atomic_store_n(&B.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);

	printf("marker call, ns per call (median of %d rounds; %ld calls per round, %ld traced by "
	       "uprobe)\n",
	       rounds, calls, up_calls);
	for (wall = 0; wall < 2; wall++) {
		printf("%-28s %12s %12s %12s\n", wall ? "wall clock" : "thread CPU time",
		       "not traced", "uprobe", "shm");
		row("rt_mark_begin", nt_b, up_b, up_why, sh_b, sh_why, wall);
		row("rt_mark_step_begin (4 ids)", nt_s, up_s, up_why, sh_s, sh_why, wall);
	}
	if (up_why)
		printf("uprobe: skipped (%s)\n", up_why);
	else
		printf("uprobe: %llu marker records through the BPF ring\n",
		       (unsigned long long)B.bpf_records);
	if (sh_why) {
		printf("shm: skipped (%s)\n", sh_why);
	} else {
		struct rt_inject_server_stats st;

		rt_inject_server__stats(B.srv, &st);
		printf("shm: %llu of %llu marker records arrived, %llu late, %llu invalid, %llu "
		       "lost\n",
		       (unsigned long long)(__atomic_load_n(&B.shm_records, __ATOMIC_RELAXED) -
					    shm_base),
		       (unsigned long long)shm_want, (unsigned long long)st.mark_late,
		       (unsigned long long)st.mark_invalid, (unsigned long long)st.lost);
	}
	rt_inject_server__free(B.srv);
#ifdef RT_BENCH_BPF
	rt_bpf_source__free(B.bpf);
#endif
	rmdir(dir);
	return 0;
}
