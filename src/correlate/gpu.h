/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU work seen from the CPU, attributed to requests (gpu.c; the rules are
 * docs/gpu.md's "Attribution"). The correlator keeps one struct
 * rt_gpu_state; each request that got GPU work has a struct rt_gpu_acc.
 * Correlator internals: not a public header.
 */
#ifndef RT_CORRELATE_GPU_H
#define RT_CORRELATE_GPU_H

#include <stdbool.h>
#include <stdint.h>

#define RT_GPU_STREAMS_MAX 256 /* streams with collectives awaiting a sync, at once */
#define RT_GPU_SHARE_MAX 256 /* requests one GPU call is shared among */
#define RT_GPU_WAIT_MAX_NS (3600ULL * 1000000000ULL) /* longer timed calls are clamped */

/* What was attributed to one request. */
struct rt_gpu_acc {
	uint64_t launches; /* kernel and graph launches (shares of) */
	uint64_t h2d_bytes, d2h_bytes, p2p_bytes; /* shares of the bytes copied */
	int64_t sync_wait_ns; /* wall time the CPU waited on the GPU for it */
	int64_t comm_wait_ns; /* the part of sync_wait_ns that followed collectives */
	uint64_t calls; /* records that named it */
};

/* A stream on which collectives were enqueued since it was last waited for. */
struct rt_gpu_stream {
	uint32_t pid;
	uint64_t stream;
	uint64_t since; /* first collective enqueued */
};

struct rt_gpu_stats {
	uint64_t records; /* GPU records received */
	uint64_t attributed; /* records charged to at least one request */
	uint64_t unattributed; /* records with no request to charge */
	uint64_t cupti_driver; /* CUPTI DRIVER records (corr_id != 0): left to the CUPTI stage */
	uint64_t device; /* device-side records: left to the CUPTI stage */
	uint64_t invalid; /* too short, bad enum, exit before entry */
	uint64_t clamped; /* timed calls longer than RT_GPU_WAIT_MAX_NS */
	uint64_t streams_evicted; /* pending-collective streams dropped (table full) */
	uint64_t share_truncated; /* calls with more than RT_GPU_SHARE_MAX requests to share */
	int64_t unattributed_wait_ns; /* sync wait no request was charged with */
};

struct rt_gpu_state {
	struct rt_gpu_stream nccl[RT_GPU_STREAMS_MAX];
	uint32_t n_nccl;
	/* the engine set (docs/gpu.md) of the last call, reused while only GPU records arrive */
	uint64_t set[RT_GPU_SHARE_MAX];
	uint32_t n_set;
	uint32_t set_pid;
	uint64_t set_gen; /* non-GPU records seen when it was computed, +1 (0: none) */
	uint32_t turn; /* whose turn it is to get a remainder (round robin) */
	struct rt_gpu_stats st;
};

struct rt_correlator;

/* Counters of gpu.c for `reqtrace status` and tests. */
void rt_gpu_stats(const struct rt_correlator *c, struct rt_gpu_stats *st);

/*
 * Share i (0-based) of n of an integer quantity q: equal parts, and the
 * remainder (q % n) to share `rest`. 0 when n is 0.
 */
uint64_t rt_gpu_share(uint64_t q, uint32_t n, uint32_t i, uint32_t rest);

#endif /* RT_CORRELATE_GPU_H */
