// SPDX-License-Identifier: BSD-2-Clause
/*
 * Per-hit cost of the GPU uprobes, side by side in one run: a tight loop
 * calls a probed function of the fake libcuda.so.1 (RT_FAKE_CUDA) with no
 * probe attached, with the probes attached and this process untraced (the
 * trap and the tgid filter), then traced (a record into the ring, drained
 * as the daemon would), then untraced again. Two functions: cuLaunchKernel
 * (an enqueue: one uprobe) and cuStreamSynchronize on an idle stream (a
 * timed call: a uprobe and a uretprobe). Best of 5 rounds each.
 *
 *   bench_uprobe [calls per round] [per-function]     (root: it loads BPF programs)
 *
 * "per-function" attaches one perf-event uprobe per function instead of the
 * uprobe.multi links (the loader's fallback on kernels before 6.6).
 *
 * Prints ns per call, the ratio to the unprobed call and ns added per call.
 * Asserts nothing about timing: a loaded machine would make that flaky.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "sources/bpf_source.h"

#define ROUNDS 5
#define DRAIN_EVERY 4096

static const char ptx[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
			  ".visible .entry rt_spin(.param .u64 spin_ns)\n{\n\tret;\n}\n";

static struct {
	__typeof__(cuLaunchKernel) *launch;
	__typeof__(cuStreamSynchronize) *sync;
	CUfunction spin;
	CUstream a, b;
} cu;

static struct rt_bpf_source *src;
static unsigned long long drained;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int count(const struct rt_event_hdr *ev, void *ctx)
{
	(void)ev;
	(void)ctx;
	drained++;
	return 0;
}

static int setup(void)
{
	__typeof__(cuInit) *init;
	__typeof__(cuDeviceGet) *get;
	__typeof__(cuDevicePrimaryCtxRetain) *retain;
	__typeof__(cuCtxSetCurrent) *set;
	__typeof__(cuModuleLoadData) *load;
	__typeof__(cuModuleGetFunction) *fn;
	__typeof__(cuStreamCreate) *create;
	CUcontext ctx;
	CUmodule mod;
	CUdevice dev;
	void *h = dlopen(RT_FAKE_CUDA, RTLD_NOW | RTLD_GLOBAL);

	if (!h)
		return -1;
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&get = dlsym(h, "cuDeviceGet");
	*(void **)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(h, "cuCtxSetCurrent");
	*(void **)&load = dlsym(h, "cuModuleLoadData");
	*(void **)&fn = dlsym(h, "cuModuleGetFunction");
	*(void **)&create = dlsym(h, "cuStreamCreate");
	*(void **)&cu.launch = dlsym(h, "cuLaunchKernel");
	*(void **)&cu.sync = dlsym(h, "cuStreamSynchronize");
	if (!init || !get || !retain || !set || !load || !fn || !create || !cu.launch || !cu.sync)
		return -1;
	if (init(0) || get(&dev, 0) || retain(&ctx, dev) || set(ctx) || load(&mod, ptx) ||
	    fn(&cu.spin, mod, "rt_spin") || create(&cu.a, 0) || create(&cu.b, 0))
		return -1;
	return 0;
}

/* ns per call of `which` (0: launch, 1: sync), best of ROUNDS, draining when traced. */
static double measure(int which, long calls, int drain)
{
	unsigned long long zero = 0;
	void *params[] = { &zero };
	double best = 1e18, t0, dt;
	long i;
	int r;

	for (r = 0; r < ROUNDS; r++) {
		t0 = now_ns();
		for (i = 0; i < calls; i++) {
			if (which == 0)
				cu.launch(cu.spin, 1, 1, 1, 1, 1, 1, 0, cu.a, params, NULL);
			else
				cu.sync(cu.b);
			/* the daemon drains on its own thread; here the drain is timed too */
			if (drain && (i % DRAIN_EVERY) == DRAIN_EVERY - 1)
				rt_bpf_source__consume(src, count, NULL);
		}
		dt = (now_ns() - t0) / (double)calls;
		if (drain)
			rt_bpf_source__consume(src, count, NULL);
		best = dt < best ? dt : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const char *const names[2] = { "cuLaunchKernel (uprobe)",
					      "cuStreamSynchronize (uprobe+uretprobe)" };
	struct rt_bpf_source_opts o = { .source_id = 1 };
	long calls = argc > 1 ? atol(argv[1]) : 20000;
	bool per_function = argc > 2 && !strcmp(argv[2], "per-function");
	double base[2], untraced[2], traced[2], again[2];
	struct rt_bpf_stats st;
	int w, err;

	if (calls <= 0 || (argc > 2 && !per_function)) {
		fprintf(stderr, "usage: bench_uprobe [calls > 0] [per-function]\n");
		return 2;
	}
	setenv("RT_FAKE_CUDA_KERNEL_NS", "0", 1);
	if (setup()) {
		fprintf(stderr, "bench_uprobe: cannot use the fake driver %s\n", RT_FAKE_CUDA);
		return 1;
	}
	for (w = 0; w < 2; w++)
		base[w] = measure(w, calls, 0);

	o.gpu_per_function = per_function;
	src = rt_bpf_source__new(&o);
	if (!src) {
		fprintf(stderr, "bench_uprobe: BPF source: %s (root needed)\n", strerror(errno));
		return 1;
	}
	err = rt_bpf_source__attach_gpu(src, RT_FAKE_CUDA);
	if (err) {
		fprintf(stderr, "bench_uprobe: attach: %s\n", strerror(-err));
		return 1;
	}
	for (w = 0; w < 2; w++)
		untraced[w] = measure(w, calls, 0);
	rt_bpf_source__add_pid(src, (__u32)getpid(), 1);
	for (w = 0; w < 2; w++)
		traced[w] = measure(w, calls, 1);
	rt_bpf_source__remove_pid(src, (__u32)getpid());
	for (w = 0; w < 2; w++)
		again[w] = measure(w, calls, 0);
	rt_bpf_source__consume(src, count, NULL);
	rt_bpf_source__stats(src, &st);

	printf("GPU uprobe cost per call, fake libcuda, %ld calls per round, best of %d, %s\n",
	       calls, ROUNDS,
	       per_function ? "per-function uprobes" : "uprobe.multi if the kernel has it");
	printf("%-40s %10s %10s %10s %10s %8s %12s %12s\n", "function", "no probe", "untraced",
	       "traced", "untraced'", "ratio", "+ns untraced", "+ns traced");
	for (w = 0; w < 2; w++)
		printf("%-40s %10.0f %10.0f %10.0f %10.0f %8.1f %12.0f %12.0f\n", names[w], base[w],
		       untraced[w], traced[w], again[w], traced[w] / base[w], untraced[w] - base[w],
		       traced[w] - base[w]);
	printf("records drained %llu (CUDA_API_ENTER %llu, CUDA_API_EXIT %llu, other %llu), lost "
	       "%llu\n",
	       drained, (unsigned long long)st.events[RT_EV_CUDA_API_ENTER],
	       (unsigned long long)st.events[RT_EV_CUDA_API_EXIT],
	       (unsigned long long)(drained - st.events[RT_EV_CUDA_API_ENTER] -
				    st.events[RT_EV_CUDA_API_EXIT]),
	       (unsigned long long)st.lost_total);
	rt_bpf_source__free(src);
	return 0;
}
