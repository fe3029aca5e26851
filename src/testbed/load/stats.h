/* SPDX-License-Identifier: BSD-2-Clause */
/* reqtrace-load's per-request results and the run summary. */
#ifndef LD_STATS_H
#define LD_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct ld_result {
	char id[128];
	bool sent; /* the request was issued */
	bool ok; /* complete and valid */
	bool aborted; /* the client closed it on purpose (--abort-after-events) */
	int status; /* HTTP status, 0 if none */
	uint64_t start_ns, ttft_ns, end_ns; /* CLOCK_MONOTONIC; ttft_ns 0: none */
	uint64_t connect_ns; /* connect returned for this request; 0: a kept-alive connection */
	/* The kernel's receive instants (SO_TIMESTAMPNS, moved to CLOCK_MONOTONIC)
	 * of the read that completed the first event and of the last read with
	 * data; 0: none. Unlike ttft_ns/end_ns they do not include the client's
	 * own wakeup, which on a busy machine can take milliseconds. */
	uint64_t ttft_rx_ns, end_rx_ns;
	uint32_t events;
	int64_t tokens; /* usage.completion_tokens, -1 if none */
	char error[200];
};

struct ld_summary {
	uint64_t requests, ok, errors, aborted, not_sent;
	double duration_s; /* first start to last end */
	double throughput; /* ok requests per second */
	double tokens_per_s;
	double ttft_p50_ms, ttft_p99_ms; /* -1: no streamed request */
	double latency_p50_ms, latency_p99_ms;
};

/* Nearest-rank percentile (p in [0, 100]) of v[0, n); sorts v. -1 for n == 0. */
double ld_percentile(double *v, size_t n, double p);

/* Computes the summary over res[0, n). Returns 0 or -ENOMEM. */
int ld_summarize(const struct ld_result *res, size_t n, struct ld_summary *s);

/* One JSON Lines object (with newline) for a result. */
int ld_result_json(const struct ld_result *r, struct tb_buf *b);

/* The summary as one JSON object (with newline). */
int ld_summary_json(const struct ld_summary *s, struct tb_buf *b);

#endif /* LD_STATS_H */
