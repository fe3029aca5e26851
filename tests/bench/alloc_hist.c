// SPDX-License-Identifier: BSD-2-Clause
/*
 * Where a process's heap goes, by allocation size: an LD_PRELOAD shim (a
 * benchmark aid, not built by CMake) that counts live allocations per usable
 * size and, on SIGUSR2, writes "size count bytes" lines, largest total first,
 * to /tmp/alloc_hist.PID. glibc only (__libc_* entry points).
 *
 *   cc -O2 -shared -fPIC -o /tmp/alloc_hist.so tests/bench/alloc_hist.c
 *   LD_PRELOAD=/tmp/alloc_hist.so reqtraced ...; kill -USR2 PID
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZES 65536 /* usable sizes counted exactly below this, the rest together */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static _Atomic long live[SIZES + 1];
static _Atomic long big_bytes; /* live bytes of allocations of SIZES or more */

static void count(void *p, int d)
{
	size_t u;

	if (!p)
		return;
	u = malloc_usable_size(p);
	atomic_fetch_add(&live[u < SIZES ? u : SIZES], d);
	if (u >= SIZES)
		atomic_fetch_add(&big_bytes, d * (long)u);
}

void *malloc(size_t n)
{
	void *p = __libc_malloc(n);

	count(p, 1);
	return p;
}

void *calloc(size_t a, size_t b)
{
	void *p = __libc_calloc(a, b);

	count(p, 1);
	return p;
}

void *realloc(void *o, size_t n)
{
	void *p;

	count(o, -1);
	p = __libc_realloc(o, n);
	count(p ? p : o, 1);
	return p;
}

void free(void *p)
{
	count(p, -1);
	__libc_free(p);
}

static int by_bytes(const void *a, const void *b)
{
	const long *x = a, *y = b;

	return x[2] < y[2] ? 1 : x[2] > y[2] ? -1 : 0;
}

static void dump(int sig)
{
	static long rows[SIZES + 1][3];
	char path[64];
	long n = 0, i, total = 0;
	FILE *f;

	(void)sig;
	for (i = 0; i <= SIZES; i++) {
		long c = atomic_load(&live[i]);

		if (c > 0) {
			rows[n][0] = i;
			rows[n][1] = c;
			rows[n][2] = i < SIZES ? c * i : atomic_load(&big_bytes);
			total += i < SIZES ? c * i : atomic_load(&big_bytes);
			n++;
		}
	}
	qsort(rows, (size_t)n, sizeof(rows[0]), by_bytes);
	snprintf(path, sizeof(path), "/tmp/alloc_hist.%d", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "# live heap %ld bytes (usable); size count bytes (size %d: that or more)\n",
		total, SIZES);
	for (i = 0; i < n && i < 40; i++)
		fprintf(f, "%ld %ld %ld\n", rows[i][0], rows[i][1], rows[i][2]);
	fclose(f);
}

__attribute__((constructor)) static void init(void)
{
	signal(SIGUSR2, dump);
}
