/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Findings: the verdict's ranked claims (docs/verdict.md). Each is one line,
 * the numbers behind it (a JSON object) and the objects involved (threads by
 * tid and name, paths, devices). Computed from finished spans alone, so the
 * daemon's store and a replayed recording give the same findings; what only
 * the daemon knows (the device-wide GPU busy union, NVML link counters) may
 * be passed in as rt_verdict_extra and then replaces the spans' estimate.
 * Pure: no I/O but the print functions.
 */
#ifndef RT_VERDICT_FINDINGS_H
#define RT_VERDICT_FINDINGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <reqtrace/span.h>

#include "verdict/verdict.h"

enum rt_finding_kind {
	RT_FIND_PHASE_DOMINANT = 0,
	RT_FIND_HOT_THREAD,
	RT_FIND_CPU_STARVED,
	RT_FIND_GPU_IDLE_WAITING,
	RT_FIND_BATCHING,
	RT_FIND_QUEUE_GROWTH,
	RT_FIND_COMM_WAIT,
	RT_FIND_TRANSFER_BOUND,
	RT_FIND_SERVER_SLOWER,
	RT_FIND_NONE,
	RT_FIND__COUNT,
};

#define RT_FINDINGS_MAX 16
#define RT_FINDING_CLAIM_MAX 400

struct rt_finding {
	enum rt_finding_kind kind;
	/* rank: tier first (0 a cause, 1 a phase that only says where the time
	 * went, 2 none), then score, larger first */
	int tier;
	double score; /* about the share of request time the finding explains */
	char claim[RT_FINDING_CLAIM_MAX];
	char *evidence; /* a JSON object (malloc'd) */
};

/* One PCIe or NVLink link over the window, as the daemon's NVML reader sees it. */
struct rt_verdict_link {
	uint32_t device;
	char link[24]; /* "pcie", "nvlink0", ... */
	uint64_t tx_bytes, rx_bytes; /* over the window */
	double utilisation; /* 0..1 of the link's maximum bandwidth; < 0: unknown */
};

/* What the daemon knows beyond the spans; every member optional. */
struct rt_verdict_extra {
	bool have_gpu_busy;
	double gpu_busy; /* device busy fraction over the window (kernel union), 0..1 */
	uint32_t gpu_device;
	uint32_t n_links;
	const struct rt_verdict_link *links;
};

struct rt_findings {
	uint64_t window_start_ns, window_end_ns; /* first origin, last end; 0 with no spans */
	uint32_t n_spans;
	uint32_t n;
	struct rt_finding f[RT_FINDINGS_MAX]; /* ranked, the first is the verdict */
};

const char *rt_finding_kind_name(enum rt_finding_kind k);

/*
 * Rank the findings over n finished spans; v is rt_verdict_compute() of the
 * same spans; extra may be NULL. Always at least one finding (`none` when
 * nothing crosses its threshold). Returns 0, -EINVAL or -ENOMEM; free with
 * rt_findings_free() either way.
 */
int rt_findings_compute(const struct rt_span *spans, size_t n, const struct rt_verdict *v,
			const struct rt_verdict_extra *extra, struct rt_findings *out);
void rt_findings_free(struct rt_findings *fs);

/* {"window":{...},"findings":[{"kind","claim","evidence"},...]} and a newline. */
int rt_findings_json(FILE *f, const struct rt_findings *fs);
/* The findings as numbered lines: claim, then the kind. */
void rt_findings_print(FILE *f, const struct rt_findings *fs);

#endif /* RT_VERDICT_FINDINGS_H */
