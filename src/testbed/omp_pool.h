/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The OpenMP half of the "omp" backend: a shared object built with -fopenmp
 * (reqtrace-testbed-omp.so) that backend_omp.c opens with dlopen. It is its
 * own object because libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once,
 * in its constructor: the backend sets them from the knobs first, then opens
 * this object, which loads libgomp (docs/testbed.md, "OpenMP backend").
 */
#ifndef TB_OMP_POOL_H
#define TB_OMP_POOL_H

#include <stdint.h>

#define TB_OMP_THREADS_MAX 64

/* What one pool thread did in one region. */
struct tb_omp_thread {
	int tid; /* kernel thread id */
	uint64_t cpu_ns; /* CLOCK_THREAD_CPUTIME_ID from entering the region to its barrier */
	uint64_t units; /* work units it ran */
};

/*
 * Runs one parallel region of `threads` threads over `units` equal work
 * units (schedule static) that burn `cpu_ns` of thread CPU in all, and fills
 * out[0..threads) by omp_get_thread_num (0 is the calling thread). Returns
 * the number of threads the region had (libgomp may give fewer).
 */
typedef int (*tb_omp_region_fn)(int threads, uint64_t units, uint64_t cpu_ns,
				struct tb_omp_thread *out);

#define TB_OMP_REGION_SYM "tb_omp_region"

#endif /* TB_OMP_POOL_H */
