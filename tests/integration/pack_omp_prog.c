// SPDX-License-Identifier: BSD-2-Clause
/*
 * An OpenMP program for tests/integration/pack_daemon.py (the libgomp
 * pack): prints "ready", waits for a line on stdin, runs three parallel
 * regions of two threads (GOMP_parallel), prints "done TID", and exits when
 * stdin closes.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char line[64];
	volatile double sum = 0;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	for (r = 0; r < 3; r++) {
		double s = 0;
		int i;

#pragma omp parallel for reduction(+ : s) num_threads(2)
		for (i = 0; i < 100000; i++)
			s += i * 0.5;
		sum += s;
	}
	printf("done %d\n", (int)gettid());
	while (fgets(line, sizeof(line), stdin))
		;
	return sum > 0 ? 0 : 1;
}
