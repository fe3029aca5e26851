// SPDX-License-Identifier: BSD-2-Clause
/*
 * The cost of a marker call with nothing attached (expected < 10 ns: a call
 * and a return). Prints ns per call; asserts nothing about timing, since a
 * loaded machine would make such a test flaky. Run: bench_marker [calls].
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <reqtrace/marker.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *ids[4] = { "req-1", "req-2", "req-3", "req-4" };
	long calls = argc > 1 ? atol(argv[1]) : 50000000L;
	double t0, best_begin = 1e9, best_step = 1e9, dt;
	long i;
	int round;

	if (calls <= 0 || rt_mark_abi_version() != RT_MARKER_ABI_VERSION) {
		fprintf(stderr, "usage: bench_marker [calls > 0] (and a matching library)\n");
		return 2;
	}
	/* best of 5 rounds: the floor is the call's cost, the rest is the machine */
	for (round = 0; round < 5; round++) {
		t0 = now_s();
		for (i = 0; i < calls; i++)
			rt_mark_begin(ids[i & 3], RT_PHASE_DECODE);
		dt = (now_s() - t0) * 1e9 / (double)calls;
		best_begin = dt < best_begin ? dt : best_begin;

		t0 = now_s();
		for (i = 0; i < calls; i++)
			rt_mark_step_begin((uint64_t)i, 4, ids);
		dt = (now_s() - t0) * 1e9 / (double)calls;
		best_step = dt < best_step ? dt : best_step;
	}
	printf("rt_mark_begin: %.2f ns/call\n", best_begin);
	printf("rt_mark_step_begin: %.2f ns/call\n", best_step);
	return 0;
}
