/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Decoder of vLLM V1's API-server ↔ engine-core ZeroMQ messages, written
 * against vLLM commit 364631ab07d283c4f08db0544a2653c5b415a427
 * (vllm/v1/engine/__init__.py; docs/packs.md ("vLLM V1") has the shapes, the id
 * rules and what breaks this decoder).
 *
 * One call decodes one whole multipart message, given as its frames as
 * the application saw them (zmq_msg_send / zmq_msg_recv). Nothing is
 * allocated and nothing is kept between calls; strings handed to the
 * callbacks point into the frames (not NUL-terminated) and live as long
 * as the caller's frames.
 *
 *   input  (API server → engine): [type byte, msgpack payload, aux…]; the
 *          ROUTER's routing-id frame, which the API server's send shows
 *          first and the engine's receive never sees, is skipped when the
 *          caller says so (RT_VLLM_ROUTING_ID).
 *   output (engine → API server): [msgpack EngineCoreOutputs, aux…], or the
 *          single frame "ENGINE_CORE_DEAD".
 *
 * Aux frames (tensor bytes referenced by index) are never read.
 *
 * A whole message is checked before any callback runs, so a bad message
 * reports nothing. A frame captured only in part (len < size: the capture
 * was cut) is decoded as far as its bytes go and no further: an ADD
 * reports the fields before the cut (n_fields says how many), an
 * EngineCoreOutputs the outputs that lie wholly before it, then the call
 * returns -ENODATA. Nothing after a cut is guessed.
 *
 * Return: the message kind (enum rt_vllm_kind, ≥ 0), or a negative errno:
 *   -ENODATA  the message ends inside a value (cut, or truncated on the wire;
 *             also a length or count that claims more than the frame holds)
 *   -EBADMSG  not msgpack (a reserved byte), or bytes after the payload's value
 *   -ELOOP    nested deeper than RT_MP_DEPTH_MAX
 *   -ENOMSG   an unknown request type byte, or frames that are no vLLM
 *             message (none, an empty type frame, a type frame longer
 *             than one byte)
 *   -EPROTO   valid msgpack of an unknown shape (a field of the wrong type,
 *             too few fields): count it and ignore the message
 *   -EINVAL   bad arguments
 */
#ifndef RT_PROTO_VLLM_H
#define RT_PROTO_VLLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The single frame the engine sends on every output socket when it dies. */
#define RT_VLLM_DEAD_SENTINEL "ENGINE_CORE_DEAD"
/* Events kept per output; more are counted in n_events only. */
#define RT_VLLM_EVENTS_MAX 8

/* EngineCoreRequestType: the byte of the input's type frame. */
enum rt_vllm_req_type {
	RT_VLLM_REQ_ADD = 0,
	RT_VLLM_REQ_ABORT = 1,
	RT_VLLM_REQ_START_DP_WAVE = 2,
	RT_VLLM_REQ_UTILITY = 3,
	RT_VLLM_REQ_EXECUTOR_FAILED = 4, /* engine-internal; never on the wire */
};

/* What a successful call decoded. */
enum rt_vllm_kind {
	RT_VLLM_MSG_ADD = 0,
	RT_VLLM_MSG_ABORT = 1,
	RT_VLLM_MSG_START_DP_WAVE = 2,
	RT_VLLM_MSG_UTILITY = 3,
	RT_VLLM_MSG_OUTPUTS = 16,
	RT_VLLM_MSG_DEAD = 17,
	RT_VLLM_MSG_EMPTY = 18, /* one empty frame: the engine's hello on the input socket */
};

/* FinishReason */
enum rt_vllm_finish {
	RT_VLLM_FINISH_NONE = -1, /* not finished */
	RT_VLLM_FINISH_STOP = 0,
	RT_VLLM_FINISH_LENGTH = 1,
	RT_VLLM_FINISH_ABORT = 2,
	RT_VLLM_FINISH_ERROR = 3,
};

/* EngineCoreEventType */
enum rt_vllm_event_type {
	RT_VLLM_EV_QUEUED = 1,
	RT_VLLM_EV_SCHEDULED = 2,
	RT_VLLM_EV_PREEMPTED = 3,
};

/* Decode flags */
#define RT_VLLM_ROUTING_ID 0x1u /* input: frames[0] is the ROUTER's routing id; skip it */

struct rt_vllm_frame {
	const uint8_t *data;
	size_t len; /* bytes captured at data */
	size_t size; /* the frame's real size; len < size: the capture was cut (size < len
		      * is read as size == len) */
};

/* A string inside a frame: ptr == NULL when the field was None or absent. */
struct rt_vllm_str {
	const char *ptr;
	uint32_t len;
};

/* Integer fields that may be None or absent use these. */
#define RT_VLLM_NONE (-1)
#define RT_VLLM_ABSENT (-2) /* omitted from a map: the struct's default applies */

/* EngineCoreRequest (ADD). Fields past n_fields are at their defaults below. */
struct rt_vllm_add {
	struct rt_vllm_str request_id; /* the internal id (external + "-xxxxxxxx") */
	struct rt_vllm_str external_req_id; /* field 15: the handler's id, or NULL */
	int64_t prompt_tokens; /* len(prompt_token_ids); RT_VLLM_NONE (prompt embeds) */
	bool has_sampling_params;
	int64_t max_tokens; /* RT_VLLM_NONE: no limit; RT_VLLM_ABSENT: vLLM's default (16) */
	int64_t n; /* RT_VLLM_ABSENT: the default (1) */
	double arrival_time; /* wall clock (time.time()) seconds; NAN when not read */
	int64_t data_parallel_rank; /* RT_VLLM_NONE */
	int64_t client_index; /* default 0 */
	int64_t priority; /* default 0 */
	bool has_prompt_embeds;
	bool has_mm_features;
	bool cut; /* the payload was captured only in part */
	uint32_t n_fields; /* array length on the wire (cut: fields read wholly) */
};

struct rt_vllm_event {
	uint8_t type; /* enum rt_vllm_event_type; others are reported as read */
	double timestamp; /* time.monotonic() seconds in the engine (CLOCK_MONOTONIC) */
};

/* One EngineCoreOutput: a request that got something this step. */
struct rt_vllm_output {
	struct rt_vllm_str request_id; /* the internal id */
	uint32_t new_tokens; /* len(new_token_ids) */
	int8_t finish_reason; /* enum rt_vllm_finish */
	bool finished; /* finish_reason != NONE */
	/* stop_reason: a token id, a stop string, or neither (EOS, not finished) */
	int64_t stop_token; /* RT_VLLM_NONE when not a token */
	struct rt_vllm_str stop_str;
	bool events_present; /* events was a list (the engine logs stats) */
	uint32_t n_events; /* elements of events; the first RT_VLLM_EVENTS_MAX are below */
	struct rt_vllm_event events[RT_VLLM_EVENTS_MAX];
	int64_t num_cached_tokens; /* default 0 */
	int64_t num_nans_in_logits; /* default 0 */
	uint32_t n_fields; /* array length on the wire */
};

/* EngineCoreOutputs, told once before its outputs. */
struct rt_vllm_outputs {
	int64_t engine_index;
	uint32_t n_outputs; /* elements of outputs (cut: those announced) */
	bool has_scheduler_stats;
	double timestamp; /* time.monotonic() seconds when built; NAN when cut before it */
	bool has_utility; /* utility_output present: a reply to a UTILITY call */
	uint64_t utility_call_id;
	bool utility_failed;
	uint32_t n_finished; /* elements of finished_requests (0 when None) */
	bool cut; /* captured in part: only outputs wholly before the cut follow */
	uint32_t n_fields;
};

/* Callbacks, all optional (NULL); ctx is the one given to the call. */
struct rt_vllm_cb {
	void (*on_add)(void *ctx, const struct rt_vllm_add *add);
	/* ABORT: once per request id in the message */
	void (*on_abort)(void *ctx, struct rt_vllm_str request_id);
	/* UTILITY: [client_index, call_id, method_name, args] */
	void (*on_utility)(void *ctx, uint64_t call_id, struct rt_vllm_str method);
	/* EngineCoreOutputs: the batch, each output, each finished_requests id */
	void (*on_outputs)(void *ctx, const struct rt_vllm_outputs *outs);
	void (*on_output)(void *ctx, const struct rt_vllm_outputs *outs,
			  const struct rt_vllm_output *out);
	void (*on_finished)(void *ctx, struct rt_vllm_str request_id);
	void (*on_dead)(void *ctx);
};

/* API server → engine: a request message. flags: RT_VLLM_ROUTING_ID. */
int rt_vllm_decode_input(const struct rt_vllm_frame *frames, size_t n_frames, unsigned flags,
			 const struct rt_vllm_cb *cb, void *ctx);

/* Engine → API server: EngineCoreOutputs or the dead sentinel. */
int rt_vllm_decode_output(const struct rt_vllm_frame *frames, size_t n_frames,
			  const struct rt_vllm_cb *cb, void *ctx);

/* A stable lower-case name of a kind or decode error, for counters. */
const char *rt_vllm_result_name(int ret);

#endif
