/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The correlator: time-ordered events in, one span per request out.
 *
 * It keeps state keyed by process (target group), connection (pid, fd),
 * request, and thread; docs/spans.md defines what it computes. Input must
 * come through the merge (ordered by ts_ns); late records are accepted and
 * amend recently emitted spans (revision + 1).
 *
 * Pure logic: no syscalls, no clock. Every table is bounded by the options
 * and every refusal is counted in the stats.
 */
#ifndef RT_CORRELATOR_H
#define RT_CORRELATOR_H

#include <stdbool.h>
#include <stdint.h>

#include <reqtrace/event.h>
#include <reqtrace/span.h>

struct rt_correlator;

/* Called for every finished span, and again (revision + 1) when amended. */
typedef void (*rt_span_fn)(const struct rt_span *span, void *ctx);

struct rt_correlator_opts {
	rt_span_fn on_span;
	void *ctx;
	uint64_t idle_timeout_ns; /* request with no activity → outcome timeout; 0: 5 min */
	uint32_t max_procs; /* 0: 4096 */
	uint32_t max_conns; /* 0: 65536 */
	uint32_t max_requests; /* in flight; 0: 8192 */
	uint32_t max_threads; /* 0: 65536 */
	uint32_t max_vllm_requests; /* engine requests held for the join; 0: max_requests */
	uint32_t recent_spans; /* finished spans kept for amendment; 0: 1024 */
};

enum rt_unreadable {
	RT_UNREADABLE_TLS = 0,
	RT_UNREADABLE_HTTP2 = 1,
	RT_UNREADABLE_MALFORMED = 2,
	RT_UNREADABLE__COUNT = 3,
};

struct rt_correlator_stats {
	uint64_t events;
	uint64_t late_events;
	uint64_t spans; /* first emissions */
	uint64_t spans_amended; /* re-emissions */
	uint64_t requests_inflight;
	uint64_t conns;
	uint64_t threads;
	uint64_t procs;
	uint64_t unreadable[RT_UNREADABLE__COUNT]; /* connections, by reason */
	uint64_t dropped_procs, dropped_conns, dropped_requests, dropped_threads;
	uint64_t orphan_markers; /* markers naming no known request */
	uint64_t lost_records; /* from LOSS records */
	uint64_t invalid_events; /* too short for their kind */
	/* time no request owns: on CPU + runqueue; then the same split by kind
	 * (the spans' on_cpu_ms and runq_ms are kept apart, so their identity
	 * with a process's CPU needs the unattributed part apart too) */
	uint64_t unattributed_cpu_ns;
	uint64_t unattributed_on_cpu_ns, unattributed_runq_ns;
	uint64_t missed_switch_ins; /* a thread switched out that we never saw switch in */
	/* time threads held a CPU without running (steal, interrupts): runqueue */
	uint64_t not_run_ns;
	/* ARRIVAL records (docs/spans.md, "Arrival"): given to a request as its
	 * arrival_ns; refused (after the request's start, or before the end
	 * of the previous request on the connection); or used by none (no
	 * matching read, or the read began no request at its first byte) */
	uint64_t arrivals_applied, arrivals_refused, arrivals_unused;
	/* outbound connections judged comm peers (not HTTP), and connections
	 * that opened with a ZeroMQ (ZMTP) greeting: inter-process plumbing,
	 * never peers nor clients */
	uint64_t peer_conns, zmtp_conns;
	/* ZeroMQ messages assembled from ZMQ_MSG frames, times a stream lost
	 * its place (a gap, a LOSS), and frames discarded for it */
	uint64_t zmq_messages, zmq_desyncs, zmq_frames_discarded;
	/* vLLM engine requests (docs/spans.md, "vLLM"): seen (an ADD), joined
	 * to an HTTP request, dropped from the full table (max_vllm_requests)
	 * or gone unjoined, and messages of an unknown shape (ignored) */
	uint64_t vllm_requests, vllm_joined, vllm_dropped, vllm_unknown;
	/* vLLM API-server helper-thread bursts (the tokenizer executor) held
	 * for the ADDs they precede and dropped: no ADD came in time, or more
	 * members than a hold keeps */
	uint64_t vllm_exec_dropped;
};

struct rt_correlator *rt_correlator__new(const struct rt_correlator_opts *opts);
void rt_correlator__free(struct rt_correlator *c);

/* One record, in merge order; late = the merge flagged it late. */
void rt_correlator__event(struct rt_correlator *c, const struct rt_event_hdr *ev, bool late);
/*
 * A hint that ev will be handed over soon: start loading what its handler
 * reads first. !deep: the hash slots of its threads, process and
 * connection (ev a few records ahead); deep: the entries those slots point
 * to (ev nearer, its slots loaded by now). Only loads: changes nothing.
 */
void rt_correlator__prefetch(const struct rt_correlator *c, const struct rt_event_hdr *ev,
			     bool deep);

/* Everything before horizon_ns has been delivered: time out idle requests. */
void rt_correlator__advance(struct rt_correlator *c, uint64_t horizon_ns);

/*
 * End of input (replay): spans still in flight are not emitted (they did
 * not end); their number is returned so the caller can say so.
 */
uint64_t rt_correlator__finish(struct rt_correlator *c);

void rt_correlator__stats(const struct rt_correlator *c, struct rt_correlator_stats *st);

/* Target groups are numbered from 1 by TARGET records; ids above this share a slot. */
#define RT_CORR_GROUPS_MAX 64
/* Unreadable connections of a target group, by reason (out[RT_UNREADABLE__COUNT]). */
void rt_correlator__unreadable(const struct rt_correlator *c, uint32_t group_id, uint64_t *out);

/* A live view of one in-flight request, for `reqtrace top`. */
struct rt_inflight {
	const char *request_id;
	const char *path;
	const char *group;
	uint32_t pid;
	uint64_t start_ns;
	uint64_t last_activity_ns;
	uint32_t events_out;
	enum rt_phase phase; /* where it is now, as far as known */
};

typedef void (*rt_inflight_fn)(const struct rt_inflight *r, void *ctx);
void rt_correlator__inflight(const struct rt_correlator *c, rt_inflight_fn fn, void *ctx);

#endif /* RT_CORRELATOR_H */
