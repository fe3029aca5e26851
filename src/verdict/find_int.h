/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Between findings.c and the detectors (find_*.c). A detector reads the
 * spans and the context's sums, and adds at most a few findings through
 * rt_find_add(); thresholds are named constants next to the detector, each
 * justified in docs/verdict.md.
 */
#ifndef RT_VERDICT_FIND_INT_H
#define RT_VERDICT_FIND_INT_H

#include "common/jsonw.h"
#include "verdict/findings.h"

struct rt_fctx {
	const struct rt_span *spans;
	size_t n;
	const struct rt_verdict *v;
	const struct rt_verdict_extra *extra;
	uint64_t w0, w1; /* the window: first origin, last end */
	double window_ns;
	double sum_dur_ns; /* summed request time (duration) */
	double phase_sum_ns[RT_PHASE__COUNT]; /* summed non-null values */
	double mean_inflight; /* sum_dur_ns / window_ns */
	bool markers; /* some span has a marker phase */
	int hot_phase; /* where the hot thread's CPU lies, -1 unknown */
	double hot_busy; /* its on-CPU over the window */
	bool hot_fired; /* a hot_thread finding was added */
	struct rt_findings *out;
};

/* Phase p's share of the summed request time. */
double rt_find_share(const struct rt_fctx *c, int p);

/*
 * Add a finding; takes the evidence writer's text (closing nothing: the
 * caller wrote a whole object). Returns 0 or -ENOMEM; beyond
 * RT_FINDINGS_MAX it drops the finding and returns 0.
 */
__attribute__((format(printf, 6, 7))) int rt_find_add(struct rt_fctx *c, enum rt_finding_kind k,
						      int tier, double score, struct rt_jsonw *ev,
						      const char *fmt, ...);

/* Shared evidence pieces. */
void rt_find_ev_thread(struct rt_jsonw *w, uint32_t tid, const char *comm);
void rt_find_ev_paths(struct rt_jsonw *w, const struct rt_fctx *c);

int rt_find_phases(struct rt_fctx *c); /* phase_dominant, comm_wait, cpu_starved */
int rt_find_hot_thread(struct rt_fctx *c);
int rt_find_load(struct rt_fctx *c); /* queue_growth, batching */
int rt_find_gpu(struct rt_fctx *c); /* gpu_idle_waiting, transfer_bound */
int rt_find_server(struct rt_fctx *c); /* server_slower_than_engine */

static inline double rt_find_ms(double ns)
{
	return ns / 1e6;
}

#endif /* RT_VERDICT_FIND_INT_H */
