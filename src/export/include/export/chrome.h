/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Spans (and a recording's CUPTI device records) as a Chrome Trace Event
 * Format file, which Perfetto UI and chrome://tracing open (docs/export.md).
 *
 * Tracks, each a (pid, tid) pair named by "M" metadata events:
 *   - process "requests": a track per request; a "request" slice over the
 *     span with its phase intervals (span.intervals[], nothing else: a phase
 *     without an interval is not drawn) nested under it, and further lanes
 *     of the same request where intervals overlap;
 *   - the server's processes: a track per thread (span.cpu.slices[]), each
 *     piece named by the request it served; a stretch several requests
 *     shared is one slice naming them all;
 *   - process "GPU D (pid P)": a track per CUDA stream, its kernels, copies
 *     and memsets.
 * Every slice is an "X" (complete) event; ts and dur are microseconds with
 * three decimals, exact to the nanosecond. Instants are CLOCK_MONOTONIC as
 * in the span; the file says so in otherData.
 */
#ifndef RT_EXPORT_CHROME_H
#define RT_EXPORT_CHROME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <reqtrace/event.h>
#include <reqtrace/span.h>

/* Synthetic ids sit above any Linux pid (at most 2^22), so none collides. */
#define RT_CHROME_PID_REQUESTS 0x1000000u
#define RT_CHROME_TID_REQUEST_BASE 0x1000000u /* + lane number, from 1 */
#define RT_CHROME_PID_GPU_BASE 0x2000000u /* + (process, device) number */
#define RT_CHROME_TID_GPU_BASE 0x3000000u /* + stream lane number */

/* One unit of device work as drawn. */
struct rt_chrome_gpu {
	uint64_t start_ns, end_ns;
	uint64_t corr_id;
	uint64_t bytes; /* copies and memsets */
	uint32_t pid; /* the process that queued it */
	uint32_t device;
	uint32_t stream;
	uint16_t kind; /* RT_EV_GPU_KERNEL, RT_EV_GPU_MEMCPY or RT_EV_GPU_MEMSET */
	uint8_t copy_kind; /* enum rt_copy_kind, copies */
	char name[RT_KERNEL_NAME_LEN + 1]; /* kernels */
};

/*
 * Take a record's device work into out, with the times the correlator
 * charges (src/correlate/gpu_device.c: start at hdr.ts_ns, durations past an
 * hour clamped). Returns 1 when ev is device work, 0 for any other kind,
 * -EINVAL for a short or inconsistent record (ends before it starts).
 */
int rt_chrome_gpu_from_event(const struct rt_event_hdr *ev, struct rt_chrome_gpu *out);

struct rt_chrome_stats {
	uint64_t request_tracks; /* lanes, one or more per request */
	uint64_t intervals; /* phase slices written */
	uint64_t intervals_bad; /* ended before they started: not written */
	uint64_t thread_tracks;
	uint64_t cpu_slices; /* slices written (after shared stretches are joined) */
	uint64_t gpu_tracks; /* stream lanes */
	uint64_t gpu_slices;
};

/*
 * Write the whole trace to f: spans (n of them, any order) and device
 * records (sorted here, in place; may be NULL when n_gpu is 0). st, when
 * given, receives the counts. Returns 0, -ENOMEM, or -EIO when f reports a
 * write error.
 */
int rt_chrome_write(FILE *f, const struct rt_span *spans, size_t n, struct rt_chrome_gpu *gpu,
		    size_t n_gpu, struct rt_chrome_stats *st);

#endif /* RT_EXPORT_CHROME_H */
