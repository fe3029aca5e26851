// SPDX-License-Identifier: BSD-2-Clause
/* Built alone with -fopenmp into reqtrace-testbed-omp.so (omp_pool.h says why). */
#include "omp_pool.h"

#include <omp.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int tb_omp_region(int threads, uint64_t units, uint64_t cpu_ns, struct tb_omp_thread *out);

static __thread int named;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * One unit: arithmetic in user space until this thread's CPU clock has moved
 * by ns. Timed by the thread's own clock, not the wall, so a thread that is
 * preempted still does its full share of CPU (what the truth promises).
 */
static void unit(uint64_t ns, uint64_t seed)
{
	uint64_t start = thread_cpu_ns();
	volatile uint64_t x = seed | 1;
	int i;

	do {
		for (i = 0; i < 4096; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	} while (thread_cpu_ns() - start < ns);
}

__attribute__((visibility("default"))) int tb_omp_region(int threads, uint64_t units,
							 uint64_t cpu_ns, struct tb_omp_thread *out)
{
	uint64_t per = units ? cpu_ns / units : 0;
	int got = 1;

	if (threads > TB_OMP_THREADS_MAX)
		threads = TB_OMP_THREADS_MAX;
#pragma omp parallel num_threads(threads)
	{
		int me = omp_get_thread_num();
		uint64_t t0 = thread_cpu_ns(), n = 0;
		long i;

		if (me == 0)
			got = omp_get_num_threads();
		/* libgomp's workers inherit the engine's name: give them their own */
		if (me != 0 && !named) {
			pthread_setname_np(pthread_self(), "tb-omp");
			named = 1;
		}
#pragma omp for schedule(static)
		for (i = 0; i < (long)units; i++) {
			unit(per, (uint64_t)i);
			n++;
		}
		/* the for's barrier is inside: a thread that finished first waits there, as CPU */
		out[me].tid = (int)syscall(SYS_gettid);
		out[me].cpu_ns = thread_cpu_ns() - t0;
		out[me].units = n;
	}
	return got;
}
