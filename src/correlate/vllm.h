/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vLLM V1's API-server ↔ engine-core messages (assembled by zmq_asm.c,
 * decoded by proto/vllm.h) → engine requests, joined to HTTP requests by
 * vLLM's id rules (proto/vllm_id.h), → the span's tokenize, queue, prefill
 * and decode with phase_source "pack", its `engine` object and the API
 * side's stream cost. The rules are docs/spans.md's "vLLM". Private to the
 * correlator.
 */
#ifndef RT_CORRELATE_VLLM_H
#define RT_CORRELATE_VLLM_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "pack.h"

#define RT_VLLM_EREQS_DEFAULT 4096
#define RT_VLLM_JOIN_MAX 16 /* engine requests one HTTP request may join */

/* What the engine requests joined to one HTTP request said (rt_req.vllm). */
struct rt_req_vllm {
	uint32_t n;
	uint64_t keys[RT_VLLM_JOIN_MAX]; /* hash of their internal ids */
	uint32_t join_dropped;
	/* filled when r ends (rt_vllm_end) for finalize */
	uint64_t add_ns, eng_recv_ns, sched_ns, first_out_ns, last_out_ns;
};

/* A whole ZeroMQ message (zmq_asm.c's callback). */
void rt_vllm_on_msg(struct rt_correlator *c, const struct rt_zmq_asm_msg *m);
/* The stream(s) of pid lost their place (0: any process): in-flight requests go incomplete. */
void rt_vllm_desync(struct rt_correlator *c, uint32_t pid);
/* An SSE event of r's response was written (entry at enter_ns); content: it carries tokens. */
void rt_vllm_on_sse(struct rt_correlator *c, struct rt_req *r, uint64_t enter_ns, bool content);
/* r ends: the last join attempt, span.engine, the phases' instants into r->vllm. */
void rt_vllm_end(struct rt_correlator *c, struct rt_req *r);
/* finalize: the pack phase intervals of r (at most RT_PACK_IV_MAX) into out; the count. */
uint32_t rt_vllm_finish(struct rt_req *r, struct rt_pack_iv *out);
/* The process is gone: its engine requests go. */
void rt_vllm_drop_pid(struct rt_correlator *c, uint32_t pid);
void rt_vllm_free(struct rt_correlator *c);

#endif /* RT_CORRELATE_VLLM_H */
