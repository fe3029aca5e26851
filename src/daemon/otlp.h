/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The OTLP/HTTP exporter of reqtraced (docs/otlp.md): finished spans go
 * into a bounded queue, leave in batches as OTLP/JSON POSTs to the
 * collector, through libcurl's multi interface driven by the daemon's
 * libuv loop (curl_multi_socket_action with a uv_poll_t per socket and one
 * uv_timer_t), so nothing blocks the loop and no thread is added. One POST
 * in flight at a time: a retried batch keeps its place and its bytes.
 *
 * Counted in request spans (one rt_span, whatever children it draws);
 * rejected_spans counts OTLP spans, the unit of partial_success.
 */
#ifndef RT_DAEMON_OTLP_H
#define RT_DAEMON_OTLP_H

#include <stdint.h>

#include <uv.h>

#include <reqtrace/span.h>

#include "daemon/otlp_conf.h"

struct rt_otlp;

struct rt_otlp_stats {
	uint64_t queued; /* waiting now, the in-flight batch included */
	uint64_t exported; /* delivered: the collector answered 2xx */
	uint64_t sampled_out; /* not chosen by the sample ratio: by design, no loss */
	/* late-amended re-emissions (revision > 0) not sent: their span ids went
	 * out already, and a collector cannot replace a span */
	uint64_t amended_skipped;
	uint64_t requests; /* POSTs answered (any status) or failed in transport */
	uint64_t retries;
	uint64_t bytes_sent; /* bodies as sent (compressed), of 2xx answers */
	/* losses, by reason */
	uint64_t dropped_queue_full;
	uint64_t dropped_rate_limited; /* over max_spans_per_s */
	uint64_t dropped_rejected; /* a non-retryable answer (400, 413, ...) */
	uint64_t dropped_retries_exhausted;
	uint64_t dropped_encode; /* a batch too large to encode */
	uint64_t dropped_shutdown; /* still queued when the daemon stopped */
	uint64_t rejected_spans; /* partial_success.rejectedSpans, summed */
	long last_status; /* the last answer's HTTP status; 0: none or transport error */
	char last_error[160];
};

/*
 * Off (returns NULL, errno 0) unless o->endpoint. NULL with errno set on a
 * bad option (headers, CA file) or no memory. The resource's host.name is
 * gethostname(); OTEL_RESOURCE_ATTRIBUTES is read here.
 */
struct rt_otlp *rt_otlp__new(uv_loop_t *loop, const struct rt_otlp_opts *o);
/* One finished span (copied). */
void rt_otlp__add(struct rt_otlp *x, const struct rt_span *s);
void rt_otlp__stats(const struct rt_otlp *x, struct rt_otlp_stats *out);
const char *rt_otlp__endpoint(const struct rt_otlp *x);
/*
 * Stops sending and closes the exporter's handles (before the daemon's
 * handle walk: they free themselves); what is still queued is counted as
 * dropped_shutdown. NULL is fine.
 */
/*
 * SIGHUP: o replaces the options of a running exporter (o->endpoint set;
 * turning it on or off is new/close). The queue, its spans and every
 * counter carry over; a smaller queue drops its oldest spans (counted as
 * queue_full). Sampling, the cap, the batch delay and service.name apply at
 * once; URL, headers, timeout, CA and compression from the next batch on
 * (the one in flight or waiting to be retried leaves as it was encoded).
 * Returns 0, or a negative errno with the running options unchanged.
 */
int rt_otlp__reconfigure(struct rt_otlp *x, const struct rt_otlp_opts *o);

void rt_otlp__close(struct rt_otlp *x);

#endif /* RT_DAEMON_OTLP_H */
