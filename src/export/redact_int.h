/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the recording redactor (redact.h): the masker of message
 * bodies (redact_body.c, JSON in redact_json.c), which redact.c drives with
 * the body runs the HTTP engine's tap reports. Exposed for tests.
 */
#ifndef RT_REDACT_INT_H
#define RT_REDACT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_REDACT_JSON_DEPTH 64 /* deeper JSON is masked (the parsers give up at 32) */

/* A streaming JSON tokenizer that writes a masked copy of its input. */
struct rt_json_mask {
	uint64_t objs; /* bit d: nesting level d+1 is an object */
	uint64_t reported; /* bit d: ... and the value of a "usage" or "timings" key */
	uint32_t kmatch; /* keys of the keep-list the current key still matches */
	uint8_t depth;
	uint8_t st;
	uint8_t prev; /* last byte of structure outside strings; 'k' after a key, 0 after a value */
	uint8_t kv; /* how the current string is written out */
	uint8_t klen;
	uint8_t lit, lpos; /* literal (true, false, null, DONE) being matched */
	uint8_t uleft; /* hex digits left in a \u escape */
	bool outer; /* levels below depth 0 were open before a recovery: unknown */
	bool ktrack; /* the key's end was not in sight when it opened: matched byte by byte */
	bool vkeep; /* the current value's number is kept as is */
	bool skeep; /* the current value string is the response's top-level "id": kept */
	bool next_reported; /* the next object opened is a usage/timings object */
};

/* One direction's body state. */
struct rt_body_mask {
	uint8_t kind; /* RT_HTTP_TAP_BODY*; 0 before the body's first run */
	uint8_t nl; /* 1: last byte CR, 2: last bytes CR LF (a last chunk may follow) */
	bool unknown; /* after a gap: the tokenizer's state is not known */
	uint8_t sse; /* SSE line state */
	uint8_t fmatch, flen; /* SSE field name: names it still matches, length */
	bool cr; /* last byte was CR: a LF right after ends nothing */
	bool has_data; /* the current SSE event has a data line */
	struct rt_json_mask js;
};

/* A new body starts (its kind comes with its first run). */
void rt_body_mask_start(struct rt_body_mask *b);
/* Bytes of the body went uncaptured. */
void rt_body_mask_gap(struct rt_body_mask *b);
/*
 * Writes the masked form of in[0..n) to out[0..n). cls is the tap class of
 * the run (RT_HTTP_TAP_BODY*, with RT_HTTP_TAP_LAST when it ends a body of
 * known length).
 */
void rt_body_mask_run(struct rt_body_mask *b, unsigned int cls, const uint8_t *in, uint8_t *out,
		      size_t n);

void rt_json_mask_init(struct rt_json_mask *j);
/* Masks p[0], p[1..n) being what follows in the same run: returns what to write for it. */
uint8_t rt_json_mask_byte(struct rt_json_mask *j, const uint8_t *p, size_t n);

#define RT_JSON_CUT 0x1 /* the region just stops (end of a syscall), outside a string */
#define RT_JSON_OPEN 0x2 /* the region just stops, inside a string */

/*
 * in[0..n) is part of a JSON text whose start was not seen (a gap). With how
 * 0 it ends where the text does, outside any string (the end of an SSE line
 * or of a body); RT_JSON_CUT or RT_JSON_OPEN: it stops mid-text. Finds its
 * strings from the end back (quotes alternate), checks that what lies
 * between them is JSON structure, and writes the masked form to out, and to
 * end (may be NULL) the tokenizer's state where the region ends, nesting
 * counted from the region's start. False when that does not hold: out is
 * then undefined and the caller masks everything.
 */
bool rt_json_recover(const uint8_t *in, uint8_t *out, size_t n, unsigned int how,
		     struct rt_json_mask *end);

/* As rt_json_recover() on a region that stops with its run (the end of a
 * syscall): inside a string or outside one, whichever alone holds. */
bool rt_json_recover_cut(const uint8_t *in, uint8_t *out, size_t n, struct rt_json_mask *end);

/* 'x' for every byte but CR and LF. */
void rt_mask_bytes(const uint8_t *in, uint8_t *out, size_t n);

/* ---- ZeroMQ frames (redact_zmq.c) ---- */

#include <reqtrace/event.h>

#define RT_REDACT_ZMQ_STREAMS 1024 /* (pid, socket, direction) streams followed */

/* What a frame is, from its place in its message; how its bytes are written. */
enum rt_zmq_role {
	RT_ZMQ_ROLE_MASK, /* every byte 'x': aux frames, unknown places, lost streams */
	RT_ZMQ_ROLE_KEEP, /* as it is: the ENGINE_CORE_DEAD sentinel */
	RT_ZMQ_ROLE_TYPE, /* the request-type byte: kept when it is a known type */
	/* walked by structure (the rest of the enum) */
	RT_ZMQ_ROLE_OUTPUTS, /* EngineCoreOutputs (or a routing id, which it masks) */
	RT_ZMQ_ROLE_ADD, /* EngineCoreRequest */
	RT_ZMQ_ROLE_ABORT,
	RT_ZMQ_ROLE_UTILITY,
	RT_ZMQ_ROLE_WAVE, /* START_DP_WAVE */
};

/*
 * Writes the redacted form of the first len bytes of a frame of size bytes
 * to out[0..len): structure, request ids, counts, times, finish reasons and
 * event types kept; token ids and text masked in place (same type and
 * width); anything unexpected, and everything after it, 'x'. A prefix
 * gives the same bytes as the whole frame does over that prefix, except
 * for a value it ends inside, which is masked at least as much.
 */
void rt_zmq_mask_frame(enum rt_zmq_role role, const uint8_t *in, size_t len, size_t size,
		       uint8_t *out);

struct rt_zmq_redact_stats {
	uint64_t walked; /* chunks written by structure (or kept: type bytes, sentinel) */
	uint64_t masked; /* chunks masked whole: aux frames, lost streams, no slot */
	uint64_t no_slot; /* ... of which for want of a stream slot */
	uint64_t streams; /* streams followed now */
};

struct rt_zmq_redact;

/* max_streams 0: RT_REDACT_ZMQ_STREAMS. NULL on failure. */
struct rt_zmq_redact *rt_zmq_redact_new(uint32_t max_streams);
void rt_zmq_redact_free(struct rt_zmq_redact *zr);
/*
 * One ZMQ_MSG record (rt_event_check() passed), its data rewritten in
 * place: true when by structure (or kept), false when masked whole.
 */
bool rt_zmq_redact_record(struct rt_zmq_redact *zr, struct rt_ev_zmq_msg *z);
/* Records were lost for pid (0: any): its streams are masked until a message boundary. */
void rt_zmq_redact_loss(struct rt_zmq_redact *zr, uint32_t pid);
void rt_zmq_redact_drop_pid(struct rt_zmq_redact *zr, uint32_t pid);
void rt_zmq_redact_stats(const struct rt_zmq_redact *zr, struct rt_zmq_redact_stats *st);

#endif /* RT_REDACT_INT_H */
