/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Spans as an OTLP/JSON ExportTraceServiceRequest (docs/otlp.md): the body
 * the daemon POSTs to /v1/traces and what `reqtrace export --format otlp`
 * writes. OTLP/JSON is not the generic proto3 JSON mapping: trace and span
 * ids are hex (not base64), enums are integers, keys lowerCamelCase; 64-bit
 * integers (the *UnixNano instants, intValue) are decimal strings as proto3
 * JSON writes them.
 *
 * One SERVER span per request; INTERNAL children: one per phase interval
 * (span.intervals[]), one per thread that has on-CPU slices (span.cpu.slices[])
 * with a grandchild per slice. A phase or thread with no measured time is not
 * drawn. ResourceSpans are grouped by the traced process (span.pid).
 *
 * Time: spans hold CLOCK_MONOTONIC; OTLP wants Unix epoch nanoseconds. The
 * offset REALTIME - MONOTONIC is sampled once per encoded batch, reading the
 * two clocks back to back (the closest of three tries), not once at start:
 * when NTP or an operator steps the wall clock, what is exported after the
 * step carries the new offset and agrees with the collector's clock, while
 * what was exported before keeps the offset that was true then. Within one
 * batch all spans share one offset, so their order and durations (monotonic
 * differences) are exact whatever the wall clock does.
 */
#ifndef RT_OTLP_JSON_H
#define RT_OTLP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <reqtrace/span.h>

#include "common/jsonw.h"

/* Container identity of a traced process (from its /proc/PID/cgroup). */
struct rt_otlp_proc {
	char container_id[65]; /* "" unknown */
	char pod_uid[37]; /* Kubernetes pod UID; "" unknown */
};

struct rt_otlp_attr {
	const char *key;
	const char *value;
};

/* What the resource of every ResourceSpans says besides the process. */
struct rt_otlp_resource {
	const char *service_name; /* NULL or "": the traced process's comm */
	const char *host_name; /* NULL: omitted */
	const struct rt_otlp_attr *extra; /* OTEL_RESOURCE_ATTRIBUTES; may be NULL */
	size_t n_extra;
	/* Container identity of pid; NULL: none looked up. Returns 0 when found. */
	int (*proc_info)(uint32_t pid, struct rt_otlp_proc *out, void *ctx);
	void *ctx;
	/* Ids without a traceparent hash the span with this seed; 0: a random
	 * seed drawn once per process. Tests fix it for stable ids. */
	uint64_t id_seed;
	/* Unix epoch ns minus CLOCK_MONOTONIC ns; used only when have_offset
	 * (a recording made on another boot, tests); else sampled per batch. */
	bool have_offset;
	int64_t epoch_offset_ns;
};

/* REALTIME - MONOTONIC now, from the closest of three back-to-back reads. */
int64_t rt_otlp_epoch_offset_ns(void);

/*
 * Append one ExportTraceServiceRequest holding spans[0..n) to w. Returns 0,
 * or -E2BIG when w's bound cut the text (w then holds garbage).
 */
int rt_otlp_json_encode(struct rt_jsonw *w, const struct rt_span *spans, size_t n,
			const struct rt_otlp_resource *res);

/*
 * Write one ExportTraceServiceRequest with spans[0..n) and a newline to f
 * (the file format of `reqtrace export --format otlp`; each line is a body
 * a collector accepts at /v1/traces). res may be NULL (defaults). Returns 0
 * or a negative errno.
 */
int rt_otlp_json_write(FILE *f, const struct rt_span *spans, size_t n,
		       const struct rt_otlp_resource *res);

/*
 * The ids the encoder gives a span without a traceparent: 32 and 16
 * lowercase hex digits and a NUL, never all zeros. For tests and tools.
 */
void rt_otlp_span_ids(const struct rt_span *s, uint64_t seed, char trace_id[33], char span_id[17]);

/*
 * The container id (64 hex digits in a line of /proc/PID/cgroup: docker,
 * containerd, cri-o) and Kubernetes pod UID ("pod<uid>" in a kubepods path)
 * of cgroup text. Returns 0 when either was found, -ENOENT otherwise.
 */
int rt_otlp_proc_from_cgroup(const char *text, struct rt_otlp_proc *out);

#endif /* RT_OTLP_JSON_H */
