/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verdict (first version): given finished spans, which phase dominates
 * p50 and p99 latency, which thread did the most CPU work for them, and a
 * few evidence lines that say only what the spans show (`reqtrace why`,
 * the end of `reqtrace demo`). Pure: no I/O but the print function.
 */
#ifndef RT_VERDICT_H
#define RT_VERDICT_H

#include <stdbool.h>
#include <stdio.h>

#include <reqtrace/span.h>

#include "verdict/stats.h"

#define RT_VERDICT_LINES_MAX 12
#define RT_VERDICT_LINE_MAX 320

struct rt_verdict_thread {
	uint32_t tid;
	char comm[RT_SPAN_COMM_MAX];
	int64_t on_cpu_ns; /* summed over the spans that list it */
	int64_t runq_ns;
	uint32_t spans; /* spans that list it */
	bool shared; /* shared in at least one of them */
};

struct rt_verdict {
	struct rt_span_stats stats;
	int dominant_p50; /* enum rt_phase with the largest p50, -1 when no phase has a value */
	int dominant_p99; /* the same at p99 */
	double share_p50; /* dominant phase's p50 / duration p50 (0 when that is 0) */
	double share_p99;
	bool have_hot;
	struct rt_verdict_thread hot; /* largest summed on-CPU */
	int64_t total_on_cpu_ns; /* sum of the spans' cpu.on_cpu_ns */
	int64_t total_runq_ns; /* sum of the spans' cpu.runq_ns */
	double hot_share; /* hot.on_cpu_ns / total_on_cpu_ns */
	uint32_t threads; /* distinct threads seen */
	uint32_t n_lines;
	char lines[RT_VERDICT_LINES_MAX][RT_VERDICT_LINE_MAX]; /* evidence, most important first */
};

/*
 * Judge n spans (one revision per request, as the store keeps them). Zero
 * spans is not an error: one line says there is nothing to judge. Scratch
 * space grows with n (16 threads a span at most). Returns 0, -EINVAL, or
 * -ENOMEM.
 */
int rt_verdict_compute(const struct rt_span *spans, size_t n, struct rt_verdict *out);

/* The verdict as text: a summary line, the per-phase table, the evidence. */
void rt_verdict_print(FILE *f, const struct rt_verdict *v);

#endif /* RT_VERDICT_H */
