// SPDX-License-Identifier: BSD-2-Clause
/*
 * Golden byte vectors of vLLM V1's engine-core messages (proto/vllm.h).
 *
 * Every vector is derived by hand, byte by byte in the comments, from the
 * struct definitions of vLLM commit 364631ab07d283c4f08db0544a2653c5b415a427
 * (vllm/v1/engine/__init__.py) and msgspec's msgpack rules (array_like
 * structs: an array in declaration order; plain structs and SamplingParams:
 * a map of field names; floats as float64 `cb`; None `c0`; IntEnum as its
 * int), never produced by our own encoder or the Python test server, so
 * that a test server written from the same misreading cannot agree with
 * the decoder by construction. Values are invented but plausible. The
 * request-type byte is the frame before the payload.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "proto/msgpack.h"
#include "proto/vllm.h"

#define S(lit) ((const uint8_t *)(lit)), (sizeof(lit) - 1)

/* ---- what the callbacks saw ---- */

#define REC_MAX 8

struct rec {
	int adds, aborts, utilities, batches, outputs, finished, dead;
	struct rt_vllm_add add;
	char add_id[64], add_ext[64];
	char abort_id[REC_MAX][64];
	uint64_t call_id;
	char method[32];
	struct rt_vllm_outputs batch;
	struct rt_vllm_output out[REC_MAX];
	char out_id[REC_MAX][64], stop_str[REC_MAX][32];
	char finished_id[REC_MAX][64];
};

static void copy(char *dst, size_t cap, struct rt_vllm_str s)
{
	size_t n = s.len < cap - 1 ? s.len : cap - 1;

	if (!s.ptr) {
		snprintf(dst, cap, "<none>");
		return;
	}
	memcpy(dst, s.ptr, n);
	dst[n] = '\0';
}

static void on_add(void *ctx, const struct rt_vllm_add *a)
{
	struct rec *r = ctx;

	r->adds++;
	r->add = *a;
	copy(r->add_id, sizeof(r->add_id), a->request_id);
	copy(r->add_ext, sizeof(r->add_ext), a->external_req_id);
}

static void on_abort(void *ctx, struct rt_vllm_str id)
{
	struct rec *r = ctx;

	if (r->aborts < REC_MAX)
		copy(r->abort_id[r->aborts], sizeof(r->abort_id[0]), id);
	r->aborts++;
}

static void on_utility(void *ctx, uint64_t call_id, struct rt_vllm_str method)
{
	struct rec *r = ctx;

	r->utilities++;
	r->call_id = call_id;
	copy(r->method, sizeof(r->method), method);
}

static void on_outputs(void *ctx, const struct rt_vllm_outputs *o)
{
	struct rec *r = ctx;

	r->batches++;
	r->batch = *o;
}

static void on_output(void *ctx, const struct rt_vllm_outputs *h, const struct rt_vllm_output *o)
{
	struct rec *r = ctx;

	(void)h;
	if (r->outputs < REC_MAX) {
		r->out[r->outputs] = *o;
		copy(r->out_id[r->outputs], sizeof(r->out_id[0]), o->request_id);
		copy(r->stop_str[r->outputs], sizeof(r->stop_str[0]), o->stop_str);
	}
	r->outputs++;
}

static void on_finished(void *ctx, struct rt_vllm_str id)
{
	struct rec *r = ctx;

	if (r->finished < REC_MAX)
		copy(r->finished_id[r->finished], sizeof(r->finished_id[0]), id);
	r->finished++;
}

static void on_dead(void *ctx)
{
	((struct rec *)ctx)->dead++;
}

static const struct rt_vllm_cb cb = {
	.on_add = on_add,
	.on_abort = on_abort,
	.on_utility = on_utility,
	.on_outputs = on_outputs,
	.on_output = on_output,
	.on_finished = on_finished,
	.on_dead = on_dead,
};

static int calls(const struct rec *r)
{
	return r->adds + r->aborts + r->utilities + r->batches + r->outputs + r->finished + r->dead;
}

static struct rt_vllm_frame frame(const uint8_t *p, size_t n)
{
	return (struct rt_vllm_frame){ .data = p, .len = n, .size = n };
}

/* [type byte, payload] as the engine's DEALER receives it */
static int input(uint8_t type, const uint8_t *p, size_t n, struct rec *r)
{
	struct rt_vllm_frame f[2] = { frame(&type, 1), frame(p, n) };

	memset(r, 0, sizeof(*r));
	return rt_vllm_decode_input(f, 2, 0, &cb, r);
}

static int output(const uint8_t *p, size_t n, struct rec *r)
{
	struct rt_vllm_frame f = frame(p, n);

	memset(r, 0, sizeof(*r));
	return rt_vllm_decode_output(&f, 1, &cb, r);
}

/* ---- EngineCoreRequest (ADD, type byte 00) ----
 * fields: 0 request_id, 1 prompt_token_ids, 2 mm_features, 3 sampling_params,
 * 4 pooling_params, 5 eos_token_id, 6 arrival_time, 7 lora_request,
 * 8 cache_salt, 9 data_parallel_rank (no defaults), 10 prompt_embeds=None,
 * 11 client_index=0, 12 current_wave=0, 13 priority=0, 14 trace_headers=None,
 * 15 external_req_id=None. */

/* A1: a chat request from the OpenAI server, every field written
 * (msgspec writes defaults of array_like structs too, issue msgspec#720). */
static const char add_full[] =
	"\xdc\x00\x10" /* array16, 16 fields */
	"\xb4"
	"chatcmpl-r1-0a1b2c3d" /* 0 request_id: fixstr 20 = external id + "-" + 8 hex */
	"\x93\x01\xcd\x3a\xc3\x02" /* 1 prompt_token_ids [1, 15043, 2]: 15043 = uint16 0x3ac3 */
	"\xc0" /* 2 mm_features None */
	"\x84" /* 3 sampling_params: a map of the 4 non-default fields, declaration order */
	"\xaa"
	"max_tokens"
	"\x08" /*   max_tokens 8 */
	"\xab"
	"output_kind"
	"\x01" /*   output_kind DELTA */
	"\xad"
	"_eos_token_id"
	"\x02"
	"\xb3"
	"_all_stop_token_ids"
	"\x91\x02" /*   [2] */
	"\xc0" /* 4 pooling_params None */
	"\x02" /* 5 eos_token_id 2 */
	"\xcb\x41\xd9\x54\xfc\x40\x10\x00\x00" /* 6 arrival_time 1700000000.25 (time.time()) */
	"\xc0\xc0\xc0" /* 7 lora_request, 8 cache_salt, 9 data_parallel_rank: None */
	"\xc0" /* 10 prompt_embeds None */
	"\x00\x00\x00" /* 11 client_index, 12 current_wave, 13 priority: 0 */
	"\xc0" /* 14 trace_headers None */
	"\xab"
	"chatcmpl-r1"; /* 15 external_req_id, fixstr 11 */

static void test_add_full(void **state)
{
	struct rec r;

	(void)state;
	assert_int_equal(sizeof(add_full) - 1, 125); /* the research note's G1 length */
	assert_int_equal(input(0, S(add_full), &r), RT_VLLM_MSG_ADD);
	assert_int_equal(r.adds, 1);
	assert_string_equal(r.add_id, "chatcmpl-r1-0a1b2c3d");
	assert_string_equal(r.add_ext, "chatcmpl-r1");
	assert_int_equal(r.add.prompt_tokens, 3);
	assert_true(r.add.has_sampling_params);
	assert_int_equal(r.add.max_tokens, 8);
	assert_int_equal(r.add.n, RT_VLLM_ABSENT);
	assert_true(r.add.arrival_time == 1700000000.25);
	assert_int_equal(r.add.data_parallel_rank, RT_VLLM_NONE);
	assert_int_equal(r.add.client_index, 0);
	assert_int_equal(r.add.priority, 0);
	assert_false(r.add.has_prompt_embeds);
	assert_false(r.add.has_mm_features);
	assert_false(r.add.cut);
	assert_int_equal(r.add.n_fields, 16);
}

/* A2: an n=3 child of a completions request with the optional fields set */
static const char add_options[] =
	"\xdc\x00\x10" /* array16, 16 fields */
	"\xb5"
	"0_cmpl-abc-0-1a2b3c4d" /* 0 request_id: child 0 of parent "cmpl-abc-0-1a2b3c4d" (21) */
	"\x92\xcd\x01\x00\xce\x00\x01\x86\xa0" /* 1 prompt_token_ids [256, 100000] (uint16, uint32) */
	"\x90" /* 2 mm_features [] (a list, not None) */
	"\x83" /* 3 sampling_params, 3 keys */
	"\xa1"
	"n"
	"\x03" /*   n 3 */
	"\xaa"
	"max_tokens"
	"\xc0" /*   max_tokens None: until the model's length */
	"\xab"
	"temperature"
	"\xcb\x3f\xe0\x00\x00\x00\x00\x00\x00" /*   temperature 0.5, skipped */
	"\xc0" /* 4 pooling_params None */
	"\xc0" /* 5 eos_token_id None */
	"\xcb\x41\xd9\x54\xfc\x40\x60\x00\x00" /* 6 arrival_time 1700000001.5 */
	"\x82" /* 7 lora_request: a map, skipped */
	"\xa9"
	"lora_name"
	"\xa1"
	"a"
	"\xa7"
	"lora_id"
	"\x01"
	"\xa4"
	"salt" /* 8 cache_salt "salt" */
	"\x01" /* 9 data_parallel_rank 1 (X-data-parallel-rank) */
	"\xc0" /* 10 prompt_embeds None */
	"\x02" /* 11 client_index 2 */
	"\x05" /* 12 current_wave 5 */
	"\xff" /* 13 priority -1 (negative fixint) */
	"\x81" /* 14 trace_headers {"traceparent": "00-ab"} */
	"\xab"
	"traceparent"
	"\xa5"
	"00-ab"
	"\xaa"
	"cmpl-abc-0"; /* 15 external_req_id */

static void test_add_options(void **state)
{
	struct rec r;

	(void)state;
	assert_int_equal(input(0, S(add_options), &r), RT_VLLM_MSG_ADD);
	assert_int_equal(r.adds, 1);
	assert_string_equal(r.add_id, "0_cmpl-abc-0-1a2b3c4d");
	assert_string_equal(r.add_ext, "cmpl-abc-0");
	assert_int_equal(r.add.prompt_tokens, 2);
	assert_int_equal(r.add.n, 3);
	assert_int_equal(r.add.max_tokens, RT_VLLM_NONE);
	assert_true(r.add.arrival_time == 1700000001.5);
	assert_int_equal(r.add.data_parallel_rank, 1);
	assert_int_equal(r.add.client_index, 2);
	assert_int_equal(r.add.priority, -1);
	assert_true(r.add.has_mm_features);
	assert_int_equal(r.add.n_fields, 16);
}

/* A3: only the 10 fields without defaults (an encoder that omits trailing
 * defaults, as the issue expected msgspec to): the rest take defaults.
 * Prompt embeddings instead of token ids. */
static const char add_short[] =
	"\x9a" /* fixarray 10 */
	"\xa9"
	"cmpl-x-77" /* 0 request_id (no random suffix: randomisation disabled) */
	"\xc0" /* 1 prompt_token_ids None (prompt_embeds would carry the prompt) */
	"\xc0" /* 2 mm_features */
	"\x80" /* 3 sampling_params {}: every field at its default */
	"\xc0" /* 4 pooling_params */
	"\xcd\x01\x00" /* 5 eos_token_id 256 */
	"\xcb\x41\xd9\x54\xfc\x40\x10\x00\x00" /* 6 arrival_time 1700000000.25 */
	"\xc0\xc0\xc0"; /* 7 lora_request, 8 cache_salt, 9 data_parallel_rank */

static void test_add_short(void **state)
{
	struct rec r;

	(void)state;
	assert_int_equal(input(0, S(add_short), &r), RT_VLLM_MSG_ADD);
	assert_string_equal(r.add_id, "cmpl-x-77");
	assert_string_equal(r.add_ext, "<none>");
	assert_int_equal(r.add.prompt_tokens, RT_VLLM_NONE);
	assert_true(r.add.has_sampling_params);
	assert_int_equal(r.add.max_tokens, RT_VLLM_ABSENT);
	assert_int_equal(r.add.n, RT_VLLM_ABSENT);
	assert_int_equal(r.add.client_index, 0);
	assert_int_equal(r.add.n_fields, 10);
}

/* Fewer fields than the struct requires: not this vLLM's EngineCoreRequest. */
static void test_add_too_few_fields(void **state)
{
	struct rec r;

	(void)state;
	/* add_short without its last field: fixarray 9 */
	char buf[sizeof(add_short) - 1];

	memcpy(buf, add_short, sizeof(buf));
	buf[0] = (char)0x99;
	assert_int_equal(input(0, (const uint8_t *)buf, sizeof(buf) - 1, &r), -EPROTO);
	assert_int_equal(calls(&r), 0);
}

/* A field of the wrong type: arrival_time as a string */
static void test_add_wrong_type(void **state)
{
	static const char bad[] = "\x9a"
				  "\xa1"
				  "x" /* 0 request_id */
				  "\x90\xc0\xc0\xc0\xc0" /* 1-5 */
				  "\xa3"
				  "now" /* 6 arrival_time: a str, not a float */
				  "\xc0\xc0\xc0";
	struct rec r;

	(void)state;
	assert_int_equal(input(0, S(bad), &r), -EPROTO);
	assert_int_equal(calls(&r), 0);
}

/* A cut capture of A1 (first 40 of 125 bytes, inside sampling_params): the
 * id and the prompt length before the cut are reported, nothing after. */
static void test_add_cut(void **state)
{
	uint8_t type = 0;
	struct rt_vllm_frame f[2] = {
		frame(&type, 1), { .data = (const uint8_t *)add_full, .len = 40, .size = 125 }
	};
	struct rec r = { 0 };

	(void)state;
	assert_int_equal(rt_vllm_decode_input(f, 2, 0, &cb, &r), -ENODATA);
	assert_int_equal(r.adds, 1);
	assert_true(r.add.cut);
	assert_string_equal(r.add_id, "chatcmpl-r1-0a1b2c3d");
	assert_int_equal(r.add.prompt_tokens, 3);
	assert_int_equal(r.add.n_fields, 3); /* 0..2 whole; 3 (sampling) was cut */
	assert_true(isnan(r.add.arrival_time));
	/* the same 40 bytes as a whole frame: a truncated message, nothing told */
	f[1].size = 40;
	memset(&r, 0, sizeof(r));
	assert_int_equal(rt_vllm_decode_input(f, 2, 0, &cb, &r), -ENODATA);
	assert_int_equal(calls(&r), 0);
}

/* A long prompt cut inside its token list: the count is in the header. */
static void test_add_cut_in_prompt(void **state)
{
	/* dc 00 10, fixstr 1 "r", array16 of 5000 (0x1388) tokens: 1 byte each
	 * when < 128; only 3 captured */
	static const uint8_t head[] = { 0xdc, 0x00, 0x10, 0xa1, 'r', 0xdc, 0x13, 0x88, 1, 2, 3 };
	uint8_t type = 0;
	struct rt_vllm_frame f[2] = { frame(&type, 1),
				      { .data = head, .len = sizeof(head), .size = 6000 } };
	struct rec r = { 0 };

	(void)state;
	assert_int_equal(rt_vllm_decode_input(f, 2, 0, &cb, &r), -ENODATA);
	assert_int_equal(r.adds, 1);
	assert_int_equal(r.add.prompt_tokens, 5000);
	assert_int_equal(r.add.n_fields, 1);
}

/* Nesting deeper than RT_MP_DEPTH_MAX inside a skipped field (lora_request) */
static void test_add_too_deep(void **state)
{
	uint8_t buf[256];
	size_t n = 0;
	struct rec r;

	(void)state;
	memcpy(buf, "\x9a\xa1r\xc0\xc0\xc0\xc0\xc0\xcb\x41\xd9\x54\xfc\x40\x10\x00\x00", 17);
	n = 17; /* fields 0-6 */
	for (int i = 0; i < 40; i++)
		buf[n++] = 0x91; /* 7 lora_request: [[[[...]]]] 40 deep */
	buf[n++] = 0x00;
	buf[n++] = 0xc0; /* 8 */
	buf[n++] = 0xc0; /* 9 */
	assert_int_equal(input(0, buf, n, &r), -ELOOP);
	assert_int_equal(calls(&r), 0);
	/* 30 deep fits: the top array is level 1, lora's arrays 2..31 */
	n = 17;
	for (int i = 0; i < 30; i++)
		buf[n++] = 0x91;
	buf[n++] = 0x00;
	buf[n++] = 0xc0;
	buf[n++] = 0xc0;
	assert_int_equal(input(0, buf, n, &r), RT_VLLM_MSG_ADD);
}

/* ---- ABORT (type byte 01): a list of internal request ids ---- */
static const char abort_two[] = "\x92" /* fixarray 2 */
				"\xb4"
				"chatcmpl-r1-0a1b2c3d"
				"\xb2"
				"cmpl-r2-0-9f8e7d6c";

static void test_abort(void **state)
{
	struct rec r;

	(void)state;
	assert_int_equal(input(1, S(abort_two), &r), RT_VLLM_MSG_ABORT);
	assert_int_equal(r.aborts, 2);
	assert_string_equal(r.abort_id[0], "chatcmpl-r1-0a1b2c3d");
	assert_string_equal(r.abort_id[1], "cmpl-r2-0-9f8e7d6c");
	/* an id that is no string: nothing reported, not even the first */
	assert_int_equal(input(1, S("\x92\xa1x\x07"), &r), -EPROTO);
	assert_int_equal(calls(&r), 0);
}

/* ---- UTILITY (type byte 03): [client_index, call_id, method_name, args] ---- */
static void test_utility(void **state)
{
	static const char util[] = "\x94" /* fixarray 4 */
				   "\x00" /* client_index 0 */
				   "\xcf\x1e\xf0\x12\x34\x56\x78\x9a\xbc" /* call_id, uint64 */
				   "\xb2"
				   "reset_prefix_cache" /* method */
				   "\x90"; /* args () */
	struct rec r;

	(void)state;
	assert_int_equal(input(3, S(util), &r), RT_VLLM_MSG_UTILITY);
	assert_int_equal(r.utilities, 1);
	assert_true(r.call_id == 0x1ef0123456789abcull);
	assert_string_equal(r.method, "reset_prefix_cache");
}

/* ---- frames that are no request ---- */
static void test_input_frames(void **state)
{
	static const uint8_t ident[2] = { 0, 0 }, add_type = 0, bad_type = 5, failed = 4;
	static const uint8_t two[2] = { 0, 0 };
	struct rt_vllm_frame f[3];
	struct rec r = { 0 };

	(void)state;
	/* the API server's send shows the routing id first */
	f[0] = frame(ident, 2);
	f[1] = frame(&add_type, 1);
	f[2] = frame(S(add_full));
	assert_int_equal(rt_vllm_decode_input(f, 3, RT_VLLM_ROUTING_ID, &cb, &r), RT_VLLM_MSG_ADD);
	assert_int_equal(r.adds, 1);
	/* without the flag the 2-byte identity is no type byte */
	assert_int_equal(rt_vllm_decode_input(f, 3, 0, &cb, &r), -ENOMSG);
	/* unknown request types; EXECUTOR_FAILED never crosses the wire */
	f[1] = frame(&bad_type, 1);
	assert_int_equal(rt_vllm_decode_input(f, 3, RT_VLLM_ROUTING_ID, &cb, &r), -ENOMSG);
	f[1] = frame(&failed, 1);
	assert_int_equal(rt_vllm_decode_input(f, 3, RT_VLLM_ROUTING_ID, &cb, &r), -ENOMSG);
	f[1] = frame(two, 2);
	assert_int_equal(rt_vllm_decode_input(f, 3, RT_VLLM_ROUTING_ID, &cb, &r), -ENOMSG);
	/* a type byte without a payload */
	f[1] = frame(&add_type, 1);
	assert_int_equal(rt_vllm_decode_input(f, 2, RT_VLLM_ROUTING_ID, &cb, &r), -ENOMSG);
	/* the engine's first message on the input socket: one empty frame */
	f[0] = frame(ident, 0);
	assert_int_equal(rt_vllm_decode_input(f, 1, 0, &cb, &r), RT_VLLM_MSG_EMPTY);
	assert_int_equal(rt_vllm_decode_input(NULL, 0, 0, &cb, &r), -ENOMSG);
	assert_int_equal(rt_vllm_decode_input(f, 1, 0x80, &cb, &r), -EINVAL);
	assert_int_equal(r.adds, 1);
	/* a payload followed by bytes that belong to no value */
	{
		uint8_t buf[sizeof(add_full)];

		memcpy(buf, add_full, sizeof(add_full) - 1);
		buf[sizeof(add_full) - 1] = 0xc0;
		assert_int_equal(input(0, buf, sizeof(buf), &r), -EBADMSG);
		assert_int_equal(calls(&r), 0);
	}
	/* 0xc1 is never msgpack */
	assert_int_equal(input(1, S("\x91\xc1"), &r), -EBADMSG);
}

/* ---- EngineCoreOutputs ----
 * EngineCoreOutputs (array of 8): 0 engine_index, 1 outputs, 2 scheduler_stats,
 * 3 timestamp (time.monotonic()), 4 utility_output, 5 finished_requests,
 * 6 wave_complete, 7 start_wave.
 * EngineCoreOutput (array of 13): 0 request_id, 1 new_token_ids,
 * 2 new_logprobs, 3 new_prompt_logprobs_tensors, 4 pooling_output,
 * 5 finish_reason, 6 stop_reason, 7 events, 8 kv_transfer_params,
 * 9 trace_headers, 10 num_cached_tokens, 11 routed_experts,
 * 12 num_nans_in_logits.
 * EngineCoreEvent: a map {"type": 1 QUEUED | 2 SCHEDULED | 3 PREEMPTED,
 * "timestamp": float}. */

/* O1: one decode output, log_stats off (events None, no scheduler_stats) */
static const char outs_one[] =
	"\x98" /* fixarray 8 */
	"\x00" /* 0 engine_index 0 */
	"\x91" /* 1 outputs: 1 */
	"\x9d" /*   fixarray 13 */
	"\xb4"
	"chatcmpl-r1-0a1b2c3d" /*   0 request_id */
	"\x91\xcd\x01\xc2" /*   1 new_token_ids [450] */
	"\xc0\xc0\xc0" /*   2 logprobs, 3 prompt logprobs, 4 pooling_output */
	"\xc0\xc0" /*   5 finish_reason, 6 stop_reason: not finished */
	"\xc0" /*   7 events None */
	"\xc0\xc0" /*   8 kv_transfer_params, 9 trace_headers */
	"\x00\xc0\x00" /*   10 num_cached_tokens 0, 11 routed_experts, 12 num_nans 0 */
	"\xc0" /* 2 scheduler_stats None */
	"\xcb\x40\xc8\x1c\xc0\x00\x00\x00\x00" /* 3 timestamp 12345.5 */
	"\xc0\xc0\xc0\xc0"; /* 4 utility_output, 5 finished_requests, 6, 7 */

static void test_outputs_one(void **state)
{
	struct rec r;

	(void)state;
	assert_int_equal(output(S(outs_one), &r), RT_VLLM_MSG_OUTPUTS);
	assert_int_equal(r.batches, 1);
	assert_int_equal(r.batch.engine_index, 0);
	assert_int_equal(r.batch.n_outputs, 1);
	assert_false(r.batch.has_scheduler_stats);
	assert_true(r.batch.timestamp == 12345.5);
	assert_false(r.batch.has_utility);
	assert_int_equal(r.batch.n_finished, 0);
	assert_int_equal(r.batch.n_fields, 8);
	assert_int_equal(r.outputs, 1);
	assert_string_equal(r.out_id[0], "chatcmpl-r1-0a1b2c3d");
	assert_int_equal(r.out[0].new_tokens, 1);
	assert_false(r.out[0].finished);
	assert_int_equal(r.out[0].finish_reason, RT_VLLM_FINISH_NONE);
	assert_false(r.out[0].events_present);
	assert_int_equal(r.out[0].n_events, 0);
	assert_int_equal(r.out[0].stop_token, RT_VLLM_NONE);
	assert_int_equal(r.out[0].n_fields, 13);
}

/* O3: three outputs, log_stats on. r3's first output (events QUEUED and
 * SCHEDULED, 16 cached prompt tokens); r1 finished by its stop string after
 * two speculative tokens; r4 finished at max_tokens after a preemption. */
static const char outs_three[] =
	"\x98" /* fixarray 8 */
	"\x01" /* 0 engine_index 1 */
	"\x93" /* 1 outputs: 3 */
	/* output 0 */
	"\x9d"
	"\xb2"
	"cmpl-r3-0-11223344" /* 0 request_id (fixstr 18) */
	"\x91\xcd\x26\xb2" /* 1 new_token_ids [9906] */
	"\xc0\xc0\xc0\xc0\xc0" /* 2-4, 5 finish_reason None, 6 stop_reason None */
	"\x92" /* 7 events: 2 */
	"\x82\xa4type\x01\xa9timestamp\xcb\x40\x59\x00\x00\x00\x00\x00\x00" /* QUEUED 100.0 */
	"\x82\xa4type\x02\xa9timestamp\xcb\x40\x59\x20\x00\x00\x00\x00\x00" /* SCHEDULED 100.5 */
	"\xc0\xc0" /* 8, 9 */
	"\x10" /* 10 num_cached_tokens 16 */
	"\xc0\x00" /* 11, 12 */
	/* output 1 */
	"\x9d"
	"\xb4"
	"chatcmpl-r1-0a1b2c3d"
	"\x92\x0d\x0e" /* 1 new_token_ids [13, 14] */
	"\xc0\xc0\xc0"
	"\x00" /* 5 finish_reason STOP */
	"\xa3"
	"END" /* 6 stop_reason: the stop string */
	"\xc0\xc0\xc0" /* 7 events None (nothing new since the first output) */
	"\x00\xc0\x00"
	/* output 2 */
	"\x9d"
	"\xa2"
	"r4"
	"\x91\x07" /* [7] */
	"\xc0\xc0\xc0"
	"\x01" /* 5 finish_reason LENGTH */
	"\xcd\x01\x00" /* 6 stop_reason 256, a token id (uint16) */
	"\x91" /* 7 events: 1 */
	"\x82\xa9timestamp\xcb\x40\x69\x04\x00\x00\x00\x00\x00\xa4type\x03" /* keys in another
									   order: PREEMPTED 200.125 */
	"\xc0\xc0"
	"\x00\xc0\x00"
	"\x82" /* 2 scheduler_stats: a stand-in map of 2 (the real one has many keys) */
	"\xb0num_running_reqs\x02"
	"\xb0num_waiting_reqs\x00"
	"\xcb\x40\xc8\x1d\x00\x00\x00\x00\x00" /* 3 timestamp 12346.0 */
	"\xc0" /* 4 utility_output None */
	"\x91\xa2r9" /* 5 finished_requests {"r9"} */
	"\xc0\xc0"; /* 6, 7 */

static void test_outputs_three(void **state)
{
	struct rec r;

	(void)state;
	assert_int_equal(output(S(outs_three), &r), RT_VLLM_MSG_OUTPUTS);
	assert_int_equal(r.batches, 1);
	assert_int_equal(r.batch.engine_index, 1);
	assert_int_equal(r.batch.n_outputs, 3);
	assert_true(r.batch.has_scheduler_stats);
	assert_true(r.batch.timestamp == 12346.0);
	assert_int_equal(r.outputs, 3);
	assert_string_equal(r.out_id[0], "cmpl-r3-0-11223344");
	assert_true(r.out[0].events_present);
	assert_int_equal(r.out[0].n_events, 2);
	assert_int_equal(r.out[0].events[0].type, RT_VLLM_EV_QUEUED);
	assert_true(r.out[0].events[0].timestamp == 100.0);
	assert_int_equal(r.out[0].events[1].type, RT_VLLM_EV_SCHEDULED);
	assert_true(r.out[0].events[1].timestamp == 100.5);
	assert_int_equal(r.out[0].num_cached_tokens, 16);
	assert_false(r.out[0].finished);
	assert_string_equal(r.out_id[1], "chatcmpl-r1-0a1b2c3d");
	assert_int_equal(r.out[1].new_tokens, 2);
	assert_true(r.out[1].finished);
	assert_int_equal(r.out[1].finish_reason, RT_VLLM_FINISH_STOP);
	assert_string_equal(r.stop_str[1], "END");
	assert_int_equal(r.out[1].stop_token, RT_VLLM_NONE);
	assert_false(r.out[1].events_present);
	assert_string_equal(r.out_id[2], "r4");
	assert_int_equal(r.out[2].finish_reason, RT_VLLM_FINISH_LENGTH);
	assert_int_equal(r.out[2].stop_token, 256);
	assert_string_equal(r.stop_str[2], "<none>");
	assert_int_equal(r.out[2].n_events, 1);
	assert_int_equal(r.out[2].events[0].type, RT_VLLM_EV_PREEMPTED);
	assert_true(r.out[2].events[0].timestamp == 200.125);
	assert_int_equal(r.finished, 1);
	assert_string_equal(r.finished_id[0], "r9");
}

/* O4: a reply to a UTILITY call, no outputs, trailing defaults omitted */
static void test_outputs_utility(void **state)
{
	static const char util[] = "\x95" /* fixarray 5: fields 5..7 left to their defaults */
				   "\x00" /* 0 engine_index */
				   "\x90" /* 1 outputs [] */
				   "\xc0" /* 2 scheduler_stats */
				   "\xcb\x40\x72\xc0\x00\x00\x00\x00\x00" /* 3 timestamp 300.0 */
				   "\x93" /* 4 UtilityOutput: fixarray 3 */
				   "\xcf\x1e\xf0\x12\x34\x56\x78\x9a\xbc" /*   call_id */
				   "\xa4"
				   "boom" /*   failure_message */
				   "\xc0"; /*   result None */
	struct rec r;

	(void)state;
	assert_int_equal(output(S(util), &r), RT_VLLM_MSG_OUTPUTS);
	assert_int_equal(r.batches, 1);
	assert_int_equal(r.outputs, 0);
	assert_true(r.batch.has_utility);
	assert_true(r.batch.utility_failed);
	assert_true(r.batch.utility_call_id == 0x1ef0123456789abcull);
	assert_true(r.batch.timestamp == 300.0);
	assert_int_equal(r.batch.n_fields, 5);
}

/* Unknown shapes: counted, ignored, nothing reported */
static void test_outputs_unknown_shape(void **state)
{
	char buf[sizeof(outs_one)];
	struct rec r;

	(void)state;
	/* request_id an int: [0, [[7, [450]]]] */
	assert_int_equal(output(S("\x92\x00\x91\x92\x07\x91\xcd\x01\xc2"), &r), -EPROTO);
	assert_int_equal(calls(&r), 0);
	/* finish_reason 9, no FinishReason: O1's byte 32 (head 3, fixarray 1,
	 * id 21, tokens 4, fields 2-4 3) */
	memcpy(buf, outs_one, sizeof(buf));
	assert_int_equal((uint8_t)buf[32], 0xc0);
	buf[32] = 0x09;
	assert_int_equal(output((const uint8_t *)buf, sizeof(buf) - 1, &r), -EPROTO);
	buf[32] = 0x03; /* ERROR is one */
	assert_int_equal(output((const uint8_t *)buf, sizeof(buf) - 1, &r), RT_VLLM_MSG_OUTPUTS);
	assert_int_equal(r.out[0].finish_reason, RT_VLLM_FINISH_ERROR);
	/* an event without its timestamp */
	assert_int_equal(output(S("\x92\x00\x91\x98\xa1r\x90\xc0\xc0\xc0\xc0\xc0"
				  "\x91\x81\xa4type\x01"),
				&r),
			 -EPROTO);
	assert_int_equal(calls(&r), 0);
	/* not an array at all (the handshake's maps) */
	assert_int_equal(output(S("\x81\xa6status\xa5HELLO"), &r), -EPROTO);
}

/* The engine's death: one frame, 16 ASCII bytes, no msgpack */
static void test_dead(void **state)
{
	struct rt_vllm_frame f[2] = { frame(S("ENGINE_CORE_DEAD")), frame(S("x")) };
	struct rec r = { 0 };

	(void)state;
	assert_int_equal(rt_vllm_decode_output(f, 1, &cb, &r), RT_VLLM_MSG_DEAD);
	assert_int_equal(r.dead, 1);
	/* with a second frame it is no sentinel, and no msgpack either: 'E' reads
	 * as the fixint 69, followed by bytes that belong to no value */
	assert_int_equal(rt_vllm_decode_output(f, 2, &cb, &r), -EPROTO);
	assert_int_equal(r.dead, 1);
	assert_int_equal(output(S("ENGINE_CORE_DEAD!"), &r), -EPROTO);
	assert_int_equal(r.dead, 0);
}

/* A message that ends early: -ENODATA and nothing told; a cut capture tells
 * the outputs wholly before the cut */
static void test_outputs_truncated(void **state)
{
	struct rt_vllm_frame f;
	struct rec r;
	size_t n = sizeof(outs_three) - 1;

	(void)state;
	for (size_t len = 0; len < n; len++) {
		assert_int_equal(output((const uint8_t *)outs_three, len, &r), -ENODATA);
		assert_int_equal(calls(&r), 0);
	}
	/* cut inside output 1 (output 0 is 1+19+4+5+1+2*26+2+1+2 = 87 bytes after
	 * the 3-byte head, output 1 bytes 90..128): only output 0 is told, the
	 * timestamp is unknown */
	f = (struct rt_vllm_frame){ .data = (const uint8_t *)outs_three, .len = 110, .size = n };
	memset(&r, 0, sizeof(r));
	assert_int_equal(rt_vllm_decode_output(&f, 1, &cb, &r), -ENODATA);
	assert_int_equal(r.batches, 1);
	assert_true(r.batch.cut);
	assert_int_equal(r.batch.n_outputs, 3);
	assert_true(isnan(r.batch.timestamp));
	assert_int_equal(r.outputs, 1);
	assert_string_equal(r.out_id[0], "cmpl-r3-0-11223344");
	assert_int_equal(r.finished, 0);
	/* every cut length: never more outputs than whole ones, never a crash */
	for (size_t len = 0; len < n; len++) {
		f.len = len;
		memset(&r, 0, sizeof(r));
		assert_int_equal(rt_vllm_decode_output(&f, 1, &cb, &r), -ENODATA);
		assert_true(r.outputs <= 3);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_full),
		cmocka_unit_test(test_add_options),
		cmocka_unit_test(test_add_short),
		cmocka_unit_test(test_add_too_few_fields),
		cmocka_unit_test(test_add_wrong_type),
		cmocka_unit_test(test_add_cut),
		cmocka_unit_test(test_add_cut_in_prompt),
		cmocka_unit_test(test_add_too_deep),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_utility),
		cmocka_unit_test(test_input_frames),
		cmocka_unit_test(test_outputs_one),
		cmocka_unit_test(test_outputs_three),
		cmocka_unit_test(test_outputs_utility),
		cmocka_unit_test(test_outputs_unknown_shape),
		cmocka_unit_test(test_dead),
		cmocka_unit_test(test_outputs_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
