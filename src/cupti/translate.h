/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUPTI activity records -> event.h records. Pure: no CUPTI calls, no I/O;
 * records go out through x->emit. One translator per completed buffer (it
 * keeps a little per-buffer state), so concurrent buffer completions use
 * separate translators.
 *
 *   CONCURRENT_KERNEL -> GPU_KERNEL   name truncated, FNV-1a-64 of the full name
 *   MEMCPY, MEMCPY2   -> GPU_MEMCPY   copy kind mapped (PTOP, or two devices: P2P)
 *   MEMSET            -> GPU_MEMSET
 *   SYNCHRONIZATION   -> GPU_SYNC     hdr.tid from calltrack (0 if unknown)
 *   DRIVER            -> CUDA_API_EXIT  only for the calls in cbid.c
 *   EXTERNAL_CORRELATION -> GPU_EXT_CORR  ts = start of the DRIVER record with
 *                        the same correlation id that follows it in the buffer
 *                        (CUPTI writes it just before), else the newest
 *                        timestamp seen in the buffer (now_ns if none)
 *
 * Records without timing (start and end both 0: CUPTI ran out of device
 * memory for timestamps) or with end < start are invalid: counted, not sent.
 */
#ifndef RT_CUPTI_TRANSLATE_H
#define RT_CUPTI_TRANSLATE_H

#include <cupti.h>
#include <reqtrace/event.h>

#include "calltrack.h"

#define RT_CUPTI_EXT_PENDING 8
#define RT_CUPTI_NAME_SCAN_MAX 65536 /* bound on the kernel name hashed */

typedef int (*rt_cupti_emit_fn)(const struct rt_event_hdr *ev, void *ctx);

struct rt_cupti_xlate {
	/* set by the caller */
	__u32 source; /* hdr.source */
	__u32 pid; /* hdr.pid */
	const struct rt_cupti_calltrack *calls; /* may be NULL */
	rt_cupti_emit_fn emit;
	void *ctx;
	__u64 now_ns; /* for records that carry no time and follow none that does */

	/* per buffer */
	struct rt_ev_gpu_ext_corr ext[RT_CUPTI_EXT_PENDING];
	unsigned int n_ext;
	__u64 last_ts;
	__u64 oldest; /* earliest time a record could have reached us, 0: none (lag) */

	/* counts, never reset by the translator */
	__u64 records; /* records emitted */
	__u64 unknown; /* activity kinds the library does not translate */
	__u64 invalid; /* malformed records */
	__u64 filtered; /* DRIVER records of calls outside cbid.c */
};

/*
 * Starts a buffer. After it, x->oldest is the earliest moment a record of
 * the buffer could have been delivered: its timestamp, or for SYNC records
 * (stamped at the call's entry, created at its return) their end. now -
 * oldest is how late CUPTI handed the buffer over.
 */
void rt_cupti_xlate_begin(struct rt_cupti_xlate *x);

/*
 * Translates one record. Returns 0 (emitted or held), -ENOTSUP (unknown
 * kind), -EINVAL (malformed) or -ENOENT (filtered); each is counted.
 */
int rt_cupti_xlate_record(struct rt_cupti_xlate *x, const CUpti_Activity *rec);

/* Ends a buffer: emits what is still held. */
void rt_cupti_xlate_end(struct rt_cupti_xlate *x);

/* FNV-1a, 64 bit, of at most max bytes of a NUL-terminated string. */
__u64 rt_cupti_fnv1a(const char *s, size_t max);

#endif /* RT_CUPTI_TRANSLATE_H */
