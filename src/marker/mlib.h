/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How libreqtrace_marker.so's files share state: marker.c (the API: the
 * shared-memory fast path, else the uprobe attach points), mwrite.c (marker
 * records into a reserved slot), mconn.c (the daemon handshake, the
 * background thread, fork).
 */
#ifndef RT_MARKER_MLIB_H
#define RT_MARKER_MLIB_H

#include <stdint.h>

#include <reqtrace/marker.h>

#include "mring.h"

/* rt_mark_state: what a marker call does while no ring is attached */
enum rt_mark_state {
	RT_MARK_UNSTARTED = 0, /* first call: read the environment, start the thread */
	RT_MARK_FALLBACK = 1, /* call the uprobe attach point */
	RT_MARK_SHM_ONLY = 2, /* REQTRACE_MARKER_SHM=1: drop (tests: prove the ring path) */
};

/* The attached ring, or NULL: read with one acquire load per marker call. */
extern struct rt_mring *rt_mark_ring;
extern int rt_mark_state;

/* The first marker call in a process (or fork child) lands here. */
void rt_mark_start(void);

/* Each returns 0, or -EPIPE when the ring is closed (the caller falls back). */
int rt_mark_w_mark(struct rt_mring *r, __u16 kind, const char *id, enum rt_phase phase);
int rt_mark_w_step_begin(struct rt_mring *r, uint64_t step, uint32_t n, const char *const *ids);
/* the same with a STEP_TOKENS record after each member, as bpf/marker.bpf.c
 * writes them; tokens NULL: none (rt_mark_step_begin) */
int rt_mark_w_step_begin_tokens(struct rt_mring *r, uint64_t step, uint32_t n,
				const char *const *ids, const uint32_t *tokens);
int rt_mark_w_step_end(struct rt_mring *r, uint64_t step);
int rt_mark_w_bind(struct rt_mring *r, const char *engine_id, const char *request_id);

/* 1 when our file still has the uprobe attach points' symbols (mself.c). */
int rt_mark_probes_findable(void);

/* fork child: the calling thread's cached tid is the parent's */
void rt_mark_w_forget_tid(void);

/* The uprobe attach points (exported: reqtraced probes them, not the API). */
void rt_mark_probe_begin(const char *request_id, enum rt_phase phase);
void rt_mark_probe_end(const char *request_id, enum rt_phase phase);
void rt_mark_probe_step_begin(uint64_t step_id, uint32_t n, const char *const *request_ids);
void rt_mark_probe_step_begin_tokens(uint64_t step_id, uint32_t n, const char *const *request_ids,
				     const uint32_t *tokens);
void rt_mark_probe_step_end(uint64_t step_id);
void rt_mark_probe_bind(const char *engine_id, const char *request_id);

#endif /* RT_MARKER_MLIB_H */
