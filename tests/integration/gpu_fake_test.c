// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fake libcuda.so.1 and libnccl.so.2 (tests/fixtures/fake_cuda) behave
 * as the GPU tests assume: enqueues return at once and queue virtual work
 * on their stream, syncs block until that work is done (never earlier),
 * the legacy stream orders with the others, NCCL calls launch through the
 * driver (grouped ones at ncclGroupEnd), and every call is logged. Linked
 * against the fakes with the toolkit's own cuda.h and nccl.h, as an
 * application would be. Lower bounds are exact; upper bounds leave room
 * for a loaded machine.
 */
#include <setjmp.h>
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
#define SLACK (40 * MS) /* scheduling on a busy 2-core VM */

static const char ptx[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
			  ".visible .entry rt_spin(.param .u64 spin_ns)\n{\n\tret;\n}\n"
			  ".visible .entry other()\n{\n\tret;\n}\n";

static char log_path[] = "/tmp/rt-fake-gpu-XXXXXX";
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

static void test_context(void **state)
{
	CUdeviceptr p;
	CUdevice dev;
	CUmodule mod;

	(void)state;
	assert_int_equal(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuInit(0), CUDA_SUCCESS);
	assert_int_equal(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
	assert_int_equal(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	/* nothing current yet on this thread */
	assert_int_equal(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
	assert_int_equal(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	assert_int_equal(cuModuleLoadData(&mod, "not ptx"), CUDA_ERROR_INVALID_IMAGE);
	assert_int_equal(cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&spin, mod, "rt_spin"), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&other, mod, "other"), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&other, mod, "missing"), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(cuModuleGetFunction(&other, mod, "other"), CUDA_SUCCESS);
}

static void test_launch_is_async(void **state)
{
	CUstream s;
	uint64_t t0, t1, t2;

	(void)state;
	assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	t0 = now();
	assert_int_equal(launch(s, 30 * MS), CUDA_SUCCESS);
	assert_int_equal(launch(s, 20 * MS), CUDA_SUCCESS); /* queued behind the first */
	t1 = now();
	assert_true(t1 - t0 < 5 * MS);
	assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	t2 = now();
	assert_true(t2 - t0 >= 50 * MS);
	assert_true(t2 - t0 < 50 * MS + SLACK);
	assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);
	/* a kernel without a spin_ns parameter takes RT_FAKE_CUDA_KERNEL_NS (7 ms here) */
	t0 = now();
	assert_int_equal(cuLaunchKernel(other, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_SUCCESS);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_true(now() - t0 >= 7 * MS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	assert_int_equal(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}

static void test_copies(void **state)
{
	static char host[1 << 20], back[1 << 20];
	CUdeviceptr d;
	CUstream s;
	uint64_t t0, t1;

	(void)state;
	memset(host, 0x5a, sizeof(host));
	assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&d, sizeof(host)), CUDA_SUCCESS);
	/* 1 ms + 1 MiB at 1 GB/s: about 2.05 ms */
	t0 = now();
	assert_int_equal(cuMemcpyHtoDAsync(d, host, sizeof(host), s), CUDA_SUCCESS);
	t1 = now();
	assert_true(t1 - t0 < 2 * MS);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_true(now() - t0 >= 2 * MS);
	/* a blocking copy waits for a blocking stream's work, then copies */
	assert_int_equal(launch(s, 25 * MS), CUDA_SUCCESS);
	t0 = now();
	assert_int_equal(cuMemcpyDtoH(back, d, sizeof(back)), CUDA_SUCCESS);
	t1 = now();
	assert_true(t1 - t0 >= 25 * MS);
	assert_true(t1 - t0 < 27 * MS + SLACK);
	assert_memory_equal(host, back, sizeof(host));
	assert_int_equal(cuMemsetD8(d, 0, 16), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

static void test_events_and_ctx_sync(void **state)
{
	CUstream a, b;
	CUevent e0, e1;
	uint64_t t0;
	float ms;

	(void)state;
	assert_int_equal(cuStreamCreate(&a, 0), CUDA_SUCCESS);
	assert_int_equal(cuStreamCreate(&b, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e0, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&e1, 0), CUDA_SUCCESS);
	t0 = now();
	assert_int_equal(cuEventRecord(e0, a), CUDA_SUCCESS);
	assert_int_equal(launch(a, 15 * MS), CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(e1, a), CUDA_SUCCESS);
	assert_int_equal(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
	/* b waits for e1 on the device, then runs 10 ms: 25 ms in all */
	assert_int_equal(cuStreamWaitEvent(b, e1, 0), CUDA_SUCCESS);
	assert_int_equal(launch(b, 10 * MS), CUDA_SUCCESS);
	assert_int_equal(cuEventSynchronize(e1), CUDA_SUCCESS);
	assert_true(now() - t0 >= 15 * MS);
	assert_int_equal(cuEventElapsedTime(&ms, e0, e1), CUDA_SUCCESS);
	assert_true(ms >= 14.9f && ms < 15.0f + SLACK / 1e6f);
	assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
	assert_true(now() - t0 >= 25 * MS);
	assert_int_equal(cuEventDestroy(e0), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(e1), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(a), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(b), CUDA_SUCCESS);
}

static void test_nccl(void **state)
{
	ncclUniqueId id;
	ncclComm_t comm;
	CUdeviceptr d;
	CUstream s;
	uint64_t t0;
	int n;

	(void)state;
	assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&d, 4096), CUDA_SUCCESS);
	assert_int_equal(ncclGetUniqueId(&id), ncclSuccess);
	assert_int_equal(ncclCommInitRank(&comm, 2, id, 0), ncclInvalidArgument);
	assert_int_equal(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
	assert_int_equal(ncclCommCount(comm, &n), ncclSuccess);
	assert_int_equal(n, 1);
	/* RT_FAKE_NCCL_NS is 6 ms: returns at once, the sync waits */
	t0 = now();
	assert_int_equal(ncclAllReduce((void *)d, (void *)d, 1024, ncclFloat32, ncclSum, comm,
				       (cudaStream_t)s),
			 ncclSuccess);
	assert_true(now() - t0 < 3 * MS);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_true(now() - t0 >= 6 * MS);
	/* grouped: nothing runs before ncclGroupEnd, then both */
	t0 = now();
	assert_int_equal(ncclGroupStart(), ncclSuccess);
	assert_int_equal(ncclAllReduce((void *)d, (void *)d, 1024, ncclFloat32, ncclSum, comm,
				       (cudaStream_t)s),
			 ncclSuccess);
	assert_int_equal(
		ncclBroadcast((void *)d, (void *)d, 1024, ncclFloat32, 0, comm, (cudaStream_t)s),
		ncclSuccess);
	assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);
	assert_int_equal(ncclGroupEnd(), ncclSuccess);
	assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_true(now() - t0 >= 12 * MS);
	/* the profiling entry point is the same function */
	assert_ptr_equal((void *)ncclAllReduce, (void *)pncclAllReduce);
	assert_int_equal(ncclCommDestroy(comm), ncclSuccess);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

/* Every probed call was logged under the name the program called. */
static void test_log(void **state)
{
	char line[512], fn[128], kind[16];
	unsigned long long enter, exit_, stream, bytes;
	long tid;
	int launches = 0, syncs = 0, allreduce = 0, launch_ex = 0, h2d = 0, d2h = 0;
	FILE *f;

	(void)state;
	f = fopen(log_path, "r");
	assert_non_null(f);
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
		h2d += !strcmp(fn, "cuMemcpyHtoDAsync_v2") && bytes == 1 << 20 &&
		       !strcmp(kind, "h2d");
		d2h += !strcmp(fn, "cuMemcpyDtoH_v2") && !strcmp(kind, "d2h");
	}
	fclose(f);
	assert_int_equal(launches, 6);
	assert_int_equal(launch_ex, 2); /* NCCL's kernels: one plain, one for the group */
	assert_int_equal(allreduce, 2);
	assert_int_equal(syncs, 6);
	assert_int_equal(h2d, 1);
	assert_int_equal(d2h, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_context), cmocka_unit_test(test_launch_is_async),
		cmocka_unit_test(test_copies),	cmocka_unit_test(test_events_and_ctx_sync),
		cmocka_unit_test(test_nccl),	cmocka_unit_test(test_log),
	};
	int fd = mkstemp(log_path), rc;

	if (fd < 0)
		return 1;
	close(fd);
	setenv("RT_FAKE_GPU_LOG", log_path, 1);
	setenv("RT_FAKE_CUDA_KERNEL_NS", "7000000", 1);
	setenv("RT_FAKE_CUDA_COPY_NS", "1000000", 1);
	setenv("RT_FAKE_CUDA_COPY_GBPS", "1", 1);
	setenv("RT_FAKE_NCCL_NS", "6000000", 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(log_path);
	return rc;
}
