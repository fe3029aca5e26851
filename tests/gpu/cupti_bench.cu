// SPDX-License-Identifier: BSD-2-Clause
/*
 * Known GPU work for tests/gpu/run.sh: spin kernels of set durations, H2D and
 * D2H copies of pinned memory and one blocking device sync, each timed by the
 * program itself (CUDA events for device work, CLOCK_MONOTONIC for the CPU
 * side), written as JSON lines for tests/gpu/cupti_check.py to compare with
 * what libreqtrace_cupti.so recorded.
 *
 * usage: cupti_bench OUT.jsonl [SETTLE_S]
 *   SETTLE_S: seconds to wait after CUDA init so the injection library's
 *   handshake (and its retries) are done before the measured work (default 6)
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                 \
				cudaGetErrorString(e_));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Spins on the device's ns timer: a kernel that lasts what it is told. */
__global__ void rt_spin(unsigned long long ns)
{
	unsigned long long t0, t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while (t - t0 < ns);
}

int main(int argc, char **argv)
{
	static const unsigned long long kernel_us[] = { 50, 200, 1000, 5000, 20000 };
	const size_t bytes = 64u << 20;
	cudaEvent_t e0, e1;
	cudaStream_t s;
	void *host, *dev;
	unsigned long long cpu0, cpu1;
	int settle = argc > 2 ? atoi(argv[2]) : 6, i, r;
	float ms;
	FILE *out;

	if (argc < 2) {
		fprintf(stderr, "usage: %s OUT.jsonl [SETTLE_S]\n", argv[0]);
		return 2;
	}
	out = fopen(argv[1], "w");
	if (!out)
		return 1;
	CHECK(cudaFree(0)); /* cuInit: libcuda calls InitializeInjection here */
	fprintf(out, "{\"op\":\"start\",\"pid\":%d}\n", (int)getpid());
	sleep(settle);
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	CHECK(cudaMallocHost(&host, bytes));
	CHECK(cudaMalloc(&dev, bytes));

	/* warm-up: module loading and first-launch costs stay out of the numbers */
	rt_spin<<<1, 1, 0, s>>>(1000);
	CHECK(cudaStreamSynchronize(s));
	fprintf(out, "{\"op\":\"kernel\",\"warmup\":1}\n");

	for (r = 0; r < 3; r++) {
		for (i = 0; i < (int)(sizeof(kernel_us) / sizeof(kernel_us[0])); i++) {
			CHECK(cudaEventRecord(e0, s));
			cpu0 = mono_ns();
			rt_spin<<<1, 1, 0, s>>>(kernel_us[i] * 1000);
			CHECK(cudaGetLastError());
			CHECK(cudaEventRecord(e1, s));
			CHECK(cudaEventSynchronize(e1));
			CHECK(cudaEventElapsedTime(&ms, e0, e1));
			fprintf(out,
				"{\"op\":\"kernel\",\"warmup\":0,\"target_us\":%llu,\"event_us\":%.3f,"
				"\"cpu_launch_ns\":%llu}\n",
				kernel_us[i], ms * 1000.0, cpu0);
		}
		CHECK(cudaEventRecord(e0, s));
		CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
		CHECK(cudaEventRecord(e1, s));
		CHECK(cudaEventSynchronize(e1));
		CHECK(cudaEventElapsedTime(&ms, e0, e1));
		fprintf(out, "{\"op\":\"h2d\",\"bytes\":%zu,\"event_us\":%.3f}\n", bytes, ms * 1000.0);
		CHECK(cudaEventRecord(e0, s));
		CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
		CHECK(cudaEventRecord(e1, s));
		CHECK(cudaEventSynchronize(e1));
		CHECK(cudaEventElapsedTime(&ms, e0, e1));
		fprintf(out, "{\"op\":\"d2h\",\"bytes\":%zu,\"event_us\":%.3f}\n", bytes, ms * 1000.0);
	}
	/* a blocking sync the host really waits in: 50 ms of device work first */
	rt_spin<<<1, 1, 0, s>>>(50ULL * 1000 * 1000);
	fprintf(out, "{\"op\":\"kernel\",\"warmup\":1}\n"); /* not timed by events */
	cpu0 = mono_ns();
	CHECK(cudaDeviceSynchronize());
	cpu1 = mono_ns();
	fprintf(out, "{\"op\":\"sync\",\"cpu_us\":%.3f}\n", (cpu1 - cpu0) / 1000.0);
	CHECK(cudaFreeHost(host));
	CHECK(cudaFree(dev));
	fclose(out);
	return 0;
}
