/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Percentiles over a set of spans: what `top` shows and the verdict reasons
 * from. Nearest rank, as the span record's own ITL percentiles: the p-th
 * percentile of n values is the ceil(p * n / 100)-th smallest, always a
 * value that was observed.
 */
#ifndef RT_VERDICT_STATS_H
#define RT_VERDICT_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <reqtrace/span.h>

/* Nearest-rank percentile (1..100) of n values sorted ascending; RT_NULL_NS if n is 0. */
int64_t rt_pct_sorted(const int64_t *sorted, size_t n, unsigned int p);

struct rt_pct {
	uint32_t n; /* values it was taken over; 0: none (both percentiles RT_NULL_NS) */
	int64_t p50_ns, p99_ns;
};

#define RT_OUTCOME__COUNT 5

struct rt_span_stats {
	uint32_t n_spans;
	uint64_t first_start_ns, last_end_ns; /* 0 when there are no spans */
	struct rt_pct duration; /* end_ns - start_ns */
	struct rt_pct ttft; /* streamed spans only */
	struct rt_pct itl_p50; /* over the spans' own ITL p50 (spans with an ITL) */
	struct rt_pct itl_p99; /* over the spans' own ITL p99 */
	struct rt_pct phase[RT_PHASE__COUNT]; /* each over the spans where it is non-null */
	uint32_t outcomes[RT_OUTCOME__COUNT];
	uint32_t incomplete; /* spans flagged incomplete */
	uint64_t tokens; /* sum of tokens_out where reported */
	uint32_t n_tokens; /* spans that reported tokens_out */
};

/*
 * Fill out from n spans (spans may be NULL when n is 0). Allocates scratch
 * space for n values. Returns 0, -EINVAL, or -ENOMEM.
 */
int rt_span_stats_compute(const struct rt_span *spans, size_t n, struct rt_span_stats *out);

#endif /* RT_VERDICT_STATS_H */
