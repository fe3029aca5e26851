/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Merge throughput: records/s through push + drain with four sources, three
 * of them ring-like (within 1 ms of now, out of order) and one CUPTI-like
 * (the previous 100 ms window, handed over during the next one), at 1 M
 * records/s of event time, so ~150 k records are held at any time. Not a
 * test: run by hand, numbers go to docs/benchmarks.md.
 *
 *   bench_merge [records (default 10000000)] [record size (default 40)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "merge/merge.h"

#define MS 1000000ULL
#define PLAN 4096 /* precomputed ts offsets, cycled */

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int count(const struct rt_event_hdr *ev, unsigned int flags, void *ctx)
{
	(void)flags;
	*(__u64 *)ctx += ev->ts_ns & 1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long n = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000000ULL;
	size_t size = argc > 2 ? strtoul(argv[2], NULL, 0) : 40;
	static _Alignas(8) unsigned char buf[RT_EVENT_MAX];
	struct rt_event_hdr *ev = (void *)buf, wm = { .kind = RT_EV_WATERMARK, .size = sizeof(wm) };
	struct rt_merge_opts o = { .max_pending = 1 << 20, .max_bytes = 1ULL << 30 };
	__u64 jitter[PLAN], sink = 0, t, start, elapsed, lo;
	struct rt_merge_stats st;
	struct rt_merge *m;
	unsigned long long i;
	unsigned int s;

	if (size < sizeof(*ev) || size > RT_EVENT_MAX || size % 8) {
		fprintf(stderr, "record size must be a multiple of 8 in [24, %d]\n", RT_EVENT_MAX);
		return 2;
	}
	srand(1);
	for (i = 0; i < PLAN; i++)
		jitter[i] = (__u64)rand() % MS;
	m = rt_merge__new(&o);
	if (!m)
		return 1;
	for (s = 0; s < 4; s++)
		rt_merge__add_source(m, s);
	memset(buf, 0, sizeof(buf));
	ev->kind = RT_EV_SCHED_SWITCH;
	ev->size = size;

	/* "now" advances 1 us per record */
	t = 1000 * MS;
	lo = t - 100 * MS;
	start = now_ns();
	for (i = 0; i < n; i++, t += 1000) {
		s = i % 4;
		ev->source = s;
		if (s < 3) {
			ev->ts_ns = t - jitter[i % PLAN];
		} else {
			/* CUPTI: the window [lo, lo + 100 ms), in any order */
			ev->ts_ns = lo + jitter[i % PLAN] * 100;
		}
		if (rt_merge__push_release(m, ev, count, &sink))
			return 1;
		if ((i & 255) == 255) {
			for (wm.source = 0; wm.source < 3; wm.source++) {
				wm.ts_ns = t - MS;
				rt_merge__push(m, &wm);
			}
			if (t - lo >= 200 * MS) {
				lo += 100 * MS;
				wm.source = 3;
				wm.ts_ns = lo;
				rt_merge__push(m, &wm);
			}
			rt_merge__drain(m, count, &sink);
		}
	}
	rt_merge__flush(m, count, &sink);
	elapsed = now_ns() - start;
	rt_merge__stats(m, &st);
	printf("bench_merge: %llu records of %zu B in %.3f s: %.2f M records/s "
	       "(pending max %llu, late %llu, forced %llu)\n",
	       n, size, elapsed / 1e9, n / (elapsed / 1e3), (unsigned long long)st.pending_max,
	       (unsigned long long)st.late, (unsigned long long)st.forced);
	rt_merge__free(m);
	return sink == (__u64)-1;
}
