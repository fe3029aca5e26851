/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Engine pack records (PACK_CALL, PACK_BATCH: uprobes on an engine's own
 * library, docs/packs.md) → a request's tokenize, queue, prefill and decode
 * with phase_source "pack", and the members of each engine step for CPU and
 * GPU attribution. The rules are docs/spans.md's "Packs". Private to the
 * correlator.
 */
#ifndef RT_CORRELATE_PACK_H
#define RT_CORRELATE_PACK_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* What the pack saw of one request (rt_req.pack). Instants 0: not seen. */
struct rt_req_pack {
	/* tokenize calls charged to it before its first step: first entry, last return */
	uint64_t tok_from, tok_to;
	uint32_t tok_calls;
	int32_t seq; /* its sequence, -1: none joined */
	/* its steps: first entry, end of its last prompt step, end of its last step */
	uint64_t first_step, prefill_end, last_end;
	uint32_t prefill_steps, decode_steps;
	uint64_t prompt_tokens;
	bool prefilled; /* a step gave its prompt's output: what follows is decode */
	bool last_was_prefill;
};

/* One PACK_CALL or PACK_BATCH record of a known process. */
void rt_pack_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev);
/* A thread (and with group_dead its process) exited: its pack state goes. */
void rt_pack_on_exit(struct rt_correlator *c, uint32_t pid, uint32_t tid, bool group_dead);
/* Frees the pack tables (rt_correlator__free). */
void rt_pack_free(struct rt_correlator *c);

/*
 * r ends: its span's pack object (span.pack) and, when no marker gave it
 * phases and a pack step served it, the pack phase intervals into out (at
 * most RT_PACK_IV_MAX, phases tokenize, queue, prefill, decode). Returns
 * their count.
 */
#define RT_PACK_IV_MAX 4
struct rt_pack_iv {
	uint64_t from, to;
	uint8_t phase;
};
uint32_t rt_pack_finish(struct rt_req *r, struct rt_pack_iv *out);

#endif /* RT_CORRELATE_PACK_H */
