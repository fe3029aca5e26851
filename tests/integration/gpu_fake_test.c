// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fake libcuda.so.1 and libnccl.so.2 (tests/fixtures/fake_cuda) behave
 * as the GPU tests assume: enqueues return at once and queue virtual work
 * on their stream, syncs block until that work is done (never earlier),
 * the legacy stream orders with the others, NCCL calls launch through the
 * driver (grouped ones at ncclGroupEnd), and every call is logged. Linked
 * against the fakes with the toolkit's own cuda.h and nccl.h, as an
 * application would be.
 *
 * Nothing here depends on the machine's speed. Durations are read from the
 * fake device's own clock (events recorded around work queued behind a
 * gate, so the work runs back to back and the elapsed time is exact); "an
 * enqueue returns at once" is "the call returned while its stream still
 * had the gate's ten minutes of work"; syncs are checked against exact
 * lower bounds ("never earlier") and "done afterwards". A case depends on no
 * other: each sets up what it needs and counts only its own calls.
 */
#include <setjmp.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>
#include <nccl.h>

#define MS 1000000ULL
/* Work that no stall of the test's thread outlasts: whatever is queued behind
 * it is still pending when the test looks, however slow the machine. The
 * stream holding it is destroyed, never waited for. */
#define GATE_NS (600000ULL * MS)
#define COPY_BYTES (1u << 20)

static const char ptx[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
			  ".visible .entry rt_spin(.param .u64 spin_ns)\n{\n\tret;\n}\n"
			  ".visible .entry other()\n{\n\tret;\n}\n";

static char log_path[] = "/tmp/rt-fake-gpu-XXXXXX";
static char self_exe[4096];
static CUcontext ctx;
static CUfunction spin, other;

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static CUresult launch(CUstream s, uint64_t ns)
{
	void *params[] = { &ns };

	return cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

/* The device time between two events, in ns, from the fake's own clock. */
static void assert_elapsed(CUevent a, CUevent b, uint64_t want_ns)
{
	float ms = -1;

	assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
	/* float ms keeps ~7 digits: a few ns of rounding on these durations */
	if (ms * 1e6 < (double)want_ns - 100 || ms * 1e6 > (double)want_ns + 100)
		fail_msg("elapsed %.6f ms on the device clock, want %.6f ms", ms, want_ns / 1e6);
}

/* A stream whose first ten minutes are taken: work queued on it next starts
 * at a known virtual time and runs back to back. */
static CUstream gated_stream(void)
{
	CUstream s;

	assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	assert_int_equal(launch(s, GATE_NS), CUDA_SUCCESS);
	return s;
}

/* Initialised, a context current on this thread, the module loaded: what
 * every case but test_uninitialised starts from, whichever runs first. */
static int ready(void **state)
{
	static CUmodule mod;
	CUdevice dev;

	(void)state;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx))
		return -1;
	if (!mod && (cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&spin, mod, "rt_spin") ||
		     cuModuleGetFunction(&other, mod, "other")))
		return -1;
	return 0;
}

/* Run in a fresh process (main's "--uninitialised"): nothing is set up yet. */
static int uninitialised_checks(void)
{
	CUdeviceptr p;
	CUdevice dev;

	if (cuMemAlloc(&p, 16) != CUDA_ERROR_NOT_INITIALIZED)
		return 1;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS)
		return 2;
	/* nothing current yet on this thread */
	if (cuMemAlloc(&p, 16) != CUDA_ERROR_INVALID_CONTEXT)
		return 3;
	return 0;
}

static void test_uninitialised(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(self_exe, self_exe, "--uninitialised", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_context(void **state)
{
	CUfunction f;
	CUmodule mod;
	CUdevice dev;

	(void)state;
	assert_int_equal(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
	assert_int_equal(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	assert_int_equal(cuModuleLoadData(&mod, "not ptx"), CUDA_ERROR_INVALID_IMAGE);
	assert_int_equal(cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&f, mod, "rt_spin"), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&f, mod, "missing"), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(cuModuleGetFunction(&f, mod, "other"), CUDA_SUCCESS);
	assert_int_equal(cuModuleUnload(mod), CUDA_SUCCESS);
}

static void test_launch_is_async(void **state)
{
	CUevent e0, e1, e2;
	CUstream s;
	uint64_t t0;

	(void)state;
	assert_int_equal(cuEventCreate(&e0, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e1, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e2, 0), CUDA_SUCCESS);
	/* launches return with their work pending, and queue behind each other */
	s = gated_stream();
	assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_int_equal(cuEventRecord(e0, s), CUDA_SUCCESS);
	assert_int_equal(launch(s, 30 * MS), CUDA_SUCCESS);
	assert_int_equal(launch(s, 20 * MS), CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(e1, s), CUDA_SUCCESS);
	/* a kernel without a spin_ns parameter takes RT_FAKE_CUDA_KERNEL_NS (7 ms here) */
	assert_int_equal(cuLaunchKernel(other, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(e2, s), CUDA_SUCCESS);
	assert_int_equal(cuEventQuery(e2), CUDA_ERROR_NOT_READY);
	assert_elapsed(e0, e1, 50 * MS);
	assert_elapsed(e1, e2, 7 * MS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	assert_int_equal(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);

	/* a sync returns when the work is done, never earlier */
	assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	t0 = now();
	assert_int_equal(launch(s, 30 * MS), CUDA_SUCCESS);
	assert_int_equal(launch(s, 20 * MS), CUDA_SUCCESS);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_true(now() - t0 >= 50 * MS);
	assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e0), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e1), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e2), CUDA_SUCCESS);
}

static void test_copies(void **state)
{
	static char host[COPY_BYTES], back[COPY_BYTES];
	/* 1 ms + 1 MiB at 1 GB/s */
	const uint64_t copy_ns = 1 * MS + COPY_BYTES;
	CUevent e0, e1;
	CUdeviceptr d;
	CUstream s;
	uint64_t t0, t1;

	(void)state;
	memset(host, 0x5a, sizeof(host));
	memset(back, 0, sizeof(back));
	assert_int_equal(cuEventCreate(&e0, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e1, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&d, sizeof(host)), CUDA_SUCCESS);
	/* an async copy returns with its work pending and takes its configured time */
	s = gated_stream();
	assert_int_equal(cuEventRecord(e0, s), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoDAsync(d, host, sizeof(host), s), CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(e1, s), CUDA_SUCCESS);
	assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_elapsed(e0, e1, copy_ns);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	/* its sync waits at least that long */
	assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	t0 = now();
	assert_int_equal(cuMemcpyHtoDAsync(d, host, sizeof(host), s), CUDA_SUCCESS);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_true(now() - t0 >= copy_ns);
	/* a blocking copy waits for a blocking stream's work, then copies */
	t0 = now();
	assert_int_equal(launch(s, 25 * MS), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(back, d, sizeof(back)), CUDA_SUCCESS);
	t1 = now();
	assert_true(t1 - t0 >= 25 * MS + copy_ns);
	assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);
	assert_memory_equal(host, back, sizeof(host));
	assert_int_equal(cuMemsetD8(d, 0, 16), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e0), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e1), CUDA_SUCCESS);
}

static void test_events_and_ctx_sync(void **state)
{
	CUstream a, b;
	CUevent e0, e1, e2;
	uint64_t t0;

	(void)state;
	assert_int_equal(cuEventCreate(&e0, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e1, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e2, 0), CUDA_SUCCESS);
	/* on the device clock: b waits for e1, then runs its 10 ms */
	a = gated_stream();
	assert_int_equal(cuStreamCreate(&b, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(e0, a), CUDA_SUCCESS);
	assert_int_equal(launch(a, 15 * MS), CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(e1, a), CUDA_SUCCESS);
	assert_int_equal(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
	assert_int_equal(cuStreamWaitEvent(b, e1, 0), CUDA_SUCCESS);
	assert_int_equal(launch(b, 10 * MS), CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(e2, b), CUDA_SUCCESS);
	assert_int_equal(cuStreamQuery(b), CUDA_ERROR_NOT_READY);
	assert_elapsed(e0, e1, 15 * MS);
	assert_elapsed(e1, e2, 10 * MS);
	assert_int_equal(cuStreamDestroy(a), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(b), CUDA_SUCCESS);

	/* on the host: an event sync and a context sync wait for it all */
	assert_int_equal(cuStreamCreate(&a, 0), CUDA_SUCCESS);
	assert_int_equal(cuStreamCreate(&b, 0), CUDA_SUCCESS);
	t0 = now();
	assert_int_equal(launch(a, 15 * MS), CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(e1, a), CUDA_SUCCESS);
	assert_int_equal(cuStreamWaitEvent(b, e1, 0), CUDA_SUCCESS);
	assert_int_equal(launch(b, 10 * MS), CUDA_SUCCESS);
	assert_int_equal(cuEventSynchronize(e1), CUDA_SUCCESS);
	assert_true(now() - t0 >= 15 * MS);
	assert_int_equal(cuEventQuery(e1), CUDA_SUCCESS);
	assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
	assert_true(now() - t0 >= 25 * MS);
	assert_int_equal(cuStreamQuery(a), CUDA_SUCCESS);
	assert_int_equal(cuStreamQuery(b), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e0), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e1), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e2), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(a), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(b), CUDA_SUCCESS);
}

static void test_nccl(void **state)
{
	/* RT_FAKE_NCCL_NS (6 ms) + 4 KiB at RT_FAKE_NCCL_GBPS (1 GB/s) */
	const uint64_t coll_ns = 6 * MS + 4096;
	ncclUniqueId id;
	ncclComm_t comm;
	CUevent e0, e1, e2;
	CUdeviceptr d;
	CUstream s;
	uint64_t t0;
	int n;

	(void)state;
	assert_int_equal(cuEventCreate(&e0, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e1, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e2, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&d, 4096), CUDA_SUCCESS);
	assert_int_equal(ncclGetUniqueId(&id), ncclSuccess);
	assert_int_equal(ncclCommInitRank(&comm, 2, id, 0), ncclInvalidArgument);
	assert_int_equal(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
	assert_int_equal(ncclCommCount(comm, &n), ncclSuccess);
	assert_int_equal(n, 1);
	/* a collective returns with its work queued, and takes its configured time */
	s = gated_stream();
	assert_int_equal(cuEventRecord(e0, s), CUDA_SUCCESS);
	assert_int_equal(ncclAllReduce((void *)d, (void *)d, 1024, ncclFloat32, ncclSum, comm,
				       (cudaStream_t)s),
			 ncclSuccess);
	assert_int_equal(cuEventRecord(e1, s), CUDA_SUCCESS);
	assert_elapsed(e0, e1, coll_ns);
	/* grouped: nothing is queued before ncclGroupEnd, then both */
	assert_int_equal(ncclGroupStart(), ncclSuccess);
	assert_int_equal(ncclAllReduce((void *)d, (void *)d, 1024, ncclFloat32, ncclSum, comm,
				       (cudaStream_t)s),
			 ncclSuccess);
	assert_int_equal(
		ncclBroadcast((void *)d, (void *)d, 1024, ncclFloat32, 0, comm, (cudaStream_t)s),
		ncclSuccess);
	assert_int_equal(cuEventRecord(e2, s), CUDA_SUCCESS);
	assert_elapsed(e1, e2, 0);
	assert_int_equal(ncclGroupEnd(), ncclSuccess);
	assert_int_equal(cuEventRecord(e2, s), CUDA_SUCCESS);
	assert_elapsed(e1, e2, 2 * coll_ns);
	assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	/* the host's sync waits for the collective */
	assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	t0 = now();
	assert_int_equal(ncclAllReduce((void *)d, (void *)d, 1024, ncclFloat32, ncclSum, comm,
				       (cudaStream_t)s),
			 ncclSuccess);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_true(now() - t0 >= coll_ns);
	/* the profiling entry point is the same function */
	assert_ptr_equal((void *)ncclAllReduce, (void *)pncclAllReduce);
	assert_int_equal(ncclCommDestroy(comm), ncclSuccess);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e0), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e1), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e2), CUDA_SUCCESS);
}

/* Every probed call this case makes is logged under the name it called. */
static void test_log(void **state)
{
	static char host[COPY_BYTES], back[COPY_BYTES];
	char line[512], fn[128], kind[16];
	unsigned long long enter, exit_, stream, bytes;
	int launches = 0, syncs = 0, allreduce = 0, launch_ex = 0, h2d = 0, d2h = 0;
	ncclUniqueId id;
	ncclComm_t comm;
	CUdeviceptr d;
	CUstream s;
	long tid;
	FILE *f;

	(void)state;
	/* only what is logged from here on is this case's */
	f = fopen(log_path, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);

	assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&d, COPY_BYTES), CUDA_SUCCESS);
	assert_int_equal(launch(s, 1 * MS), CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel(other, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoDAsync(d, host, COPY_BYTES, s), CUDA_SUCCESS);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(back, d, COPY_BYTES), CUDA_SUCCESS);
	assert_int_equal(ncclGetUniqueId(&id), ncclSuccess);
	assert_int_equal(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
	assert_int_equal(ncclAllReduce((void *)d, (void *)d, 16, ncclFloat32, ncclSum, comm,
				       (cudaStream_t)s),
			 ncclSuccess);
	assert_int_equal(ncclGroupStart(), ncclSuccess);
	assert_int_equal(ncclAllReduce((void *)d, (void *)d, 16, ncclFloat32, ncclSum, comm,
				       (cudaStream_t)s),
			 ncclSuccess);
	assert_int_equal(ncclGroupEnd(), ncclSuccess);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_int_equal(ncclCommDestroy(comm), ncclSuccess);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);

	while (fgets(line, sizeof(line), f)) {
		assert_int_equal(sscanf(line, "%llu %llu %ld %127s %llx %llu %15s", &enter, &exit_,
					&tid, fn, &stream, &bytes, kind),
				 7);
		assert_true(exit_ >= enter);
		assert_int_equal(tid, gettid());
		launches += !strcmp(fn, "cuLaunchKernel");
		launch_ex += !strcmp(fn, "cuLaunchKernelEx");
		syncs += !strcmp(fn, "cuStreamSynchronize");
		allreduce += !strcmp(fn, "ncclAllReduce");
		h2d += !strcmp(fn, "cuMemcpyHtoDAsync_v2") && bytes == COPY_BYTES &&
		       !strcmp(kind, "h2d");
		d2h += !strcmp(fn, "cuMemcpyDtoH_v2") && bytes == COPY_BYTES &&
		       !strcmp(kind, "d2h");
	}
	fclose(f);
	assert_int_equal(launches, 2);
	assert_int_equal(launch_ex, 2); /* NCCL's kernels: one plain, one for the group */
	assert_int_equal(allreduce, 2);
	assert_int_equal(syncs, 2);
	assert_int_equal(h2d, 1);
	assert_int_equal(d2h, 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uninitialised),
		cmocka_unit_test_setup(test_context, ready),
		cmocka_unit_test_setup(test_launch_is_async, ready),
		cmocka_unit_test_setup(test_copies, ready),
		cmocka_unit_test_setup(test_events_and_ctx_sync, ready),
		cmocka_unit_test_setup(test_nccl, ready),
		cmocka_unit_test_setup(test_log, ready),
	};
	ssize_t n;
	int fd, rc;

	setenv("RT_FAKE_CUDA_KERNEL_NS", "7000000", 1);
	setenv("RT_FAKE_CUDA_COPY_NS", "1000000", 1);
	setenv("RT_FAKE_CUDA_COPY_GBPS", "1", 1);
	setenv("RT_FAKE_NCCL_NS", "6000000", 1);
	setenv("RT_FAKE_NCCL_GBPS", "1", 1);
	if (argc == 2 && !strcmp(argv[1], "--uninitialised"))
		return uninitialised_checks();
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 1;
	fd = mkstemp(log_path);
	if (fd < 0)
		return 1;
	close(fd);
	setenv("RT_FAKE_GPU_LOG", log_path, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(log_path);
	return rc;
}
