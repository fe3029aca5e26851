// SPDX-License-Identifier: BSD-2-Clause
/*
 * ZeroMQ frames in redacted recordings (src/export/redact_zmq.c,
 * docs/privacy.md "ZeroMQ frames"). Promises:
 *
 *   - no token id and no text survives: prompt and output token ids read
 *     back as 0, strings other than request ids, method names and field
 *     names as 'x'; an aux frame, a frame in no known place and a lost
 *     stream are masked whole;
 *   - the vLLM decoder reads the same message from the redacted bytes:
 *     ids, token counts, finish reasons, events and their times, arrival
 *     time, batch fields (the golden vectors of test_vllm_decode.c, byte
 *     for byte, and generated messages);
 *   - a frame redacted chunk by chunk, as the probe cuts it (4 KiB, 16 KiB
 *     captured), is the frame redacted whole, at every split;
 *   - random and mutated bytes, cut anywhere, never crash it, never make it
 *     write outside the chunk, and only ever give a byte as it was, 0 or 'x';
 *   - the committed vLLM recording, redacted, has no token id left and
 *     decodes to the same messages (test_redact.c replays it to the same
 *     spans).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/redact.h"
#include "proto/msgpack.h"
#include "proto/vllm.h"
#include "redact_int.h"
#include "sources/rtrace_read.h"

#define S(lit) ((const uint8_t *)(lit)), (sizeof(lit) - 1)
#define X RT_REDACT_MASK
/* a whole frame given as a literal */
#define MASK_LIT(role, lit, out)                                                                   \
	rt_zmq_mask_frame(role, (const uint8_t *)(lit), sizeof(lit) - 1, sizeof(lit) - 1, out)

/* ---- what the decoder reads --------------------------------------------------- */

#define OUT_MAX 64

struct dec {
	int ret;
	int adds, aborts, utilities, batches, outputs, finished, dead;
	struct rt_vllm_add add;
	char add_id[96], add_ext[96];
	uint64_t call_id;
	char method[32];
	struct rt_vllm_outputs batch;
	struct rt_vllm_output out[OUT_MAX];
	char out_id[OUT_MAX][96];
	char finished_id[OUT_MAX][96];
	char abort_id[OUT_MAX][96];
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
	struct dec *d = ctx;

	d->adds++;
	d->add = *a;
	copy(d->add_id, sizeof(d->add_id), a->request_id);
	copy(d->add_ext, sizeof(d->add_ext), a->external_req_id);
	/* pointers into the frame differ between the two copies */
	memset(&d->add.request_id, 0, sizeof(d->add.request_id));
	memset(&d->add.external_req_id, 0, sizeof(d->add.external_req_id));
}

static void on_abort(void *ctx, struct rt_vllm_str id)
{
	struct dec *d = ctx;

	if (d->aborts < OUT_MAX)
		copy(d->abort_id[d->aborts], sizeof(d->abort_id[0]), id);
	d->aborts++;
}

static void on_utility(void *ctx, uint64_t call_id, struct rt_vllm_str method)
{
	struct dec *d = ctx;

	d->utilities++;
	d->call_id = call_id;
	copy(d->method, sizeof(d->method), method);
}

static void on_outputs(void *ctx, const struct rt_vllm_outputs *o)
{
	struct dec *d = ctx;

	d->batches++;
	d->batch = *o;
}

static void on_output(void *ctx, const struct rt_vllm_outputs *h, const struct rt_vllm_output *o)
{
	struct dec *d = ctx;

	(void)h;
	if (d->outputs < OUT_MAX) {
		struct rt_vllm_output *c = &d->out[d->outputs];

		*c = *o;
		copy(d->out_id[d->outputs], sizeof(d->out_id[0]), o->request_id);
		memset(&c->request_id, 0, sizeof(c->request_id));
		/* the stop reason is content: a stop string or a token id, masked */
		c->stop_token = o->stop_token == RT_VLLM_NONE ? 0 : 1;
		c->stop_str.ptr = o->stop_str.ptr ? "" : NULL;
	}
	d->outputs++;
}

static void on_finished(void *ctx, struct rt_vllm_str id)
{
	struct dec *d = ctx;

	if (d->finished < OUT_MAX)
		copy(d->finished_id[d->finished], sizeof(d->finished_id[0]), id);
	d->finished++;
}

static void on_dead(void *ctx)
{
	((struct dec *)ctx)->dead++;
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

/* The payload of a role decoded as the correlator would (a cut frame: len < size). */
static void decode(enum rt_zmq_role role, const uint8_t *p, size_t len, size_t size, struct dec *d)
{
	static const uint8_t types[] = { [RT_ZMQ_ROLE_ADD] = RT_VLLM_REQ_ADD,
					 [RT_ZMQ_ROLE_ABORT] = RT_VLLM_REQ_ABORT,
					 [RT_ZMQ_ROLE_UTILITY] = RT_VLLM_REQ_UTILITY,
					 [RT_ZMQ_ROLE_WAVE] = RT_VLLM_REQ_START_DP_WAVE };
	struct rt_vllm_frame f[2];

	memset(d, 0, sizeof(*d));
	f[0] = (struct rt_vllm_frame){ .data = &types[role], .len = 1, .size = 1 };
	f[1] = (struct rt_vllm_frame){ .data = p, .len = len, .size = size };
	if (role == RT_ZMQ_ROLE_OUTPUTS)
		d->ret = rt_vllm_decode_output(&f[1], 1, &cb, d);
	else
		d->ret = rt_vllm_decode_input(f, 2, 0, &cb, d);
	d->batch.timestamp = isnan(d->batch.timestamp) ? -1 : d->batch.timestamp;
	d->add.arrival_time = isnan(d->add.arrival_time) ? -1 : d->add.arrival_time;
}

/* What replay needs is what the decoder reads, the stop reason's content aside. */
static void assert_same_decode(const struct dec *a, const struct dec *b)
{
	assert_int_equal(a->ret, b->ret);
	assert_int_equal(a->adds, b->adds);
	assert_memory_equal(&a->add, &b->add, sizeof(a->add));
	assert_string_equal(a->add_id, b->add_id);
	assert_string_equal(a->add_ext, b->add_ext);
	assert_int_equal(a->aborts, b->aborts);
	for (int i = 0; i < a->aborts && i < OUT_MAX; i++)
		assert_string_equal(a->abort_id[i], b->abort_id[i]);
	assert_int_equal(a->utilities, b->utilities);
	assert_int_equal(a->call_id, b->call_id);
	assert_string_equal(a->method, b->method);
	assert_int_equal(a->batches, b->batches);
	assert_memory_equal(&a->batch, &b->batch, sizeof(a->batch));
	assert_int_equal(a->outputs, b->outputs);
	for (int i = 0; i < a->outputs && i < OUT_MAX; i++) {
		assert_string_equal(a->out_id[i], b->out_id[i]);
		assert_int_equal(a->out[i].new_tokens, b->out[i].new_tokens);
		assert_int_equal(a->out[i].finish_reason, b->out[i].finish_reason);
		assert_int_equal(a->out[i].stop_token, b->out[i].stop_token);
		assert_true((a->out[i].stop_str.ptr == NULL) == (b->out[i].stop_str.ptr == NULL));
		assert_int_equal(a->out[i].events_present, b->out[i].events_present);
		assert_int_equal(a->out[i].n_events, b->out[i].n_events);
		assert_memory_equal(a->out[i].events, b->out[i].events, sizeof(a->out[i].events));
		assert_int_equal(a->out[i].num_cached_tokens, b->out[i].num_cached_tokens);
		assert_int_equal(a->out[i].num_nans_in_logits, b->out[i].num_nans_in_logits);
		assert_int_equal(a->out[i].n_fields, b->out[i].n_fields);
	}
	assert_int_equal(a->finished, b->finished);
	for (int i = 0; i < a->finished && i < OUT_MAX; i++)
		assert_string_equal(a->finished_id[i], b->finished_id[i]);
}

/* ---- golden vectors (test_vllm_decode.c's, derived by hand from vLLM 364631ab) ---- */

static const char add_full[] = "\xdc\x00\x10"
			       "\xb4"
			       "chatcmpl-r1-0a1b2c3d"
			       "\x93\x01\xcd\x3a\xc3\x02"
			       "\xc0"
			       "\x84"
			       "\xaa"
			       "max_tokens"
			       "\x08"
			       "\xab"
			       "output_kind"
			       "\x01"
			       "\xad"
			       "_eos_token_id"
			       "\x02"
			       "\xb3"
			       "_all_stop_token_ids"
			       "\x91\x02"
			       "\xc0"
			       "\x02"
			       "\xcb\x41\xd9\x54\xfc\x40\x10\x00\x00"
			       "\xc0\xc0\xc0"
			       "\xc0"
			       "\x00\x00\x00"
			       "\xc0"
			       "\xab"
			       "chatcmpl-r1";

/* redacted: token ids 0 at their widths, the sampling values the decoder does not read masked */
static const char add_full_red[] =
	"\xdc\x00\x10"
	"\xb4"
	"chatcmpl-r1-0a1b2c3d" /* request_id kept */
	"\x93\x00\xcd\x00\x00\x00" /* prompt [1, 15043, 2] -> [0, 0, 0] */
	"\xc0"
	"\x84"
	"\xaa"
	"max_tokens"
	"\x08" /* read: kept */
	"\xab"
	"output_kind"
	"\x00"
	"\xad"
	"_eos_token_id"
	"\x00"
	"\xb3"
	"_all_stop_token_ids"
	"\x91\x00"
	"\xc0"
	"\x00" /* eos_token_id: a token id */
	"\xcb\x41\xd9\x54\xfc\x40\x10\x00\x00" /* arrival_time kept */
	"\xc0\xc0\xc0"
	"\xc0"
	"\x00\x00\x00"
	"\xc0"
	"\xab"
	"chatcmpl-r1";

static const char add_options[] = "\xdc\x00\x10"
				  "\xb5"
				  "0_cmpl-abc-0-1a2b3c4d"
				  "\x92\xcd\x01\x00\xce\x00\x01\x86\xa0"
				  "\x90"
				  "\x83"
				  "\xa1"
				  "n"
				  "\x03"
				  "\xaa"
				  "max_tokens"
				  "\xc0"
				  "\xab"
				  "temperature"
				  "\xcb\x3f\xe0\x00\x00\x00\x00\x00\x00"
				  "\xc0"
				  "\xc0"
				  "\xcb\x41\xd9\x54\xfc\x40\x60\x00\x00"
				  "\x82"
				  "\xa9"
				  "lora_name"
				  "\xa1"
				  "a"
				  "\xa7"
				  "lora_id"
				  "\x01"
				  "\xa4"
				  "salt"
				  "\x01"
				  "\xc0"
				  "\x02"
				  "\x05"
				  "\xff"
				  "\x81"
				  "\xab"
				  "traceparent"
				  "\xa5"
				  "00-ab"
				  "\xaa"
				  "cmpl-abc-0";

static const char add_options_red[] =
	"\xdc\x00\x10"
	"\xb5"
	"0_cmpl-abc-0-1a2b3c4d"
	"\x92\xcd\x00\x00\xce\x00\x00\x00\x00" /* [256, 100000]: uint16 0, uint32 0 */
	"\x90"
	"\x83"
	"\xa1"
	"n"
	"\x03"
	"\xaa"
	"max_tokens"
	"\xc0"
	"\xab"
	"temperature"
	"\xcb\x00\x00\x00\x00\x00\x00\x00\x00" /* not read: float64 0 */
	"\xc0"
	"\xc0"
	"\xcb\x41\xd9\x54\xfc\x40\x60\x00\x00"
	"\x82" /* lora_request: content, keys and all */
	"\xa9"
	"xxxxxxxxx"
	"\xa1"
	"x"
	"\xa7"
	"xxxxxxx"
	"\x00"
	"\xa4"
	"xxxx" /* cache_salt */
	"\x01\xc0\x02\x05\xff" /* rank, embeds, client index, wave, priority -1 kept */
	"\x81" /* trace_headers */
	"\xab"
	"xxxxxxxxxxx"
	"\xa5"
	"xxxxx"
	"\xaa"
	"cmpl-abc-0";

static const char outs_three[] = "\x98"
				 "\x01"
				 "\x93"
				 "\x9d"
				 "\xb2"
				 "cmpl-r3-0-11223344"
				 "\x91\xcd\x26\xb2"
				 "\xc0\xc0\xc0\xc0\xc0"
				 "\x92"
				 "\x82\xa4type\x01\xa9timestamp\xcb\x40\x59\x00\x00\x00\x00\x00\x00"
				 "\x82\xa4type\x02\xa9timestamp\xcb\x40\x59\x20\x00\x00\x00\x00\x00"
				 "\xc0\xc0"
				 "\x10"
				 "\xc0\x00"
				 "\x9d"
				 "\xb4"
				 "chatcmpl-r1-0a1b2c3d"
				 "\x92\x0d\x0e"
				 "\xc0\xc0\xc0"
				 "\x00"
				 "\xa3"
				 "END"
				 "\xc0\xc0\xc0"
				 "\x00\xc0\x00"
				 "\x9d"
				 "\xa2"
				 "r4"
				 "\x91\x07"
				 "\xc0\xc0\xc0"
				 "\x01"
				 "\xcd\x01\x00"
				 "\x91"
				 "\x82\xa9timestamp\xcb\x40\x69\x04\x00\x00\x00\x00\x00\xa4type\x03"
				 "\xc0\xc0"
				 "\x00\xc0\x00"
				 "\x82"
				 "\xb0num_running_reqs\x02"
				 "\xb0num_waiting_reqs\x00"
				 "\xcb\x40\xc8\x1d\x00\x00\x00\x00\x00"
				 "\xc0"
				 "\x91\xa2r9"
				 "\xc0\xc0";

static const char outs_three_red[] =
	"\x98"
	"\x01" /* engine_index kept */
	"\x93"
	"\x9d"
	"\xb2"
	"cmpl-r3-0-11223344"
	"\x91\xcd\x00\x00" /* new_token_ids [9906] -> [0] */
	"\xc0\xc0\xc0\xc0\xc0"
	"\x92" /* events kept */
	"\x82\xa4type\x01\xa9timestamp\xcb\x40\x59\x00\x00\x00\x00\x00\x00"
	"\x82\xa4type\x02\xa9timestamp\xcb\x40\x59\x20\x00\x00\x00\x00\x00"
	"\xc0\xc0"
	"\x10" /* num_cached_tokens kept */
	"\xc0\x00"
	"\x9d"
	"\xb4"
	"chatcmpl-r1-0a1b2c3d"
	"\x92\x00\x00" /* [13, 14] */
	"\xc0\xc0\xc0"
	"\x00" /* finish_reason STOP kept */
	"\xa3"
	"xxx" /* the stop string */
	"\xc0\xc0\xc0"
	"\x00\xc0\x00"
	"\x9d"
	"\xa2"
	"r4"
	"\x91\x00"
	"\xc0\xc0\xc0"
	"\x01"
	"\xcd\x00\x00" /* stop_reason: a token id */
	"\x91"
	"\x82\xa9timestamp\xcb\x40\x69\x04\x00\x00\x00\x00\x00\xa4type\x03"
	"\xc0\xc0"
	"\x00\xc0\x00"
	"\x82" /* scheduler_stats: not read, masked */
	"\xb0xxxxxxxxxxxxxxxx\x00"
	"\xb0xxxxxxxxxxxxxxxx\x00"
	"\xcb\x40\xc8\x1d\x00\x00\x00\x00\x00" /* timestamp kept */
	"\xc0"
	"\x91\xa2r9" /* finished_requests kept */
	"\xc0\xc0";

static const char abort_two[] = "\x92\xa2r1\xb4"
				"chatcmpl-r1-0a1b2c3d";
/* UTILITY [client 0, call 7, "add_lora", [{"lora_path": "/secret/a"}]] */
static const char utility[] = "\x94\x00\x07\xa8"
			      "add_lora"
			      "\x91\x81\xa9lora_path\xa9/secret/a";
static const char utility_red[] = "\x94\x00\x07\xa8"
				  "add_lora"
				  "\x91\x81\xa9xxxxxxxxx\xa9xxxxxxxxx";

struct golden {
	enum rt_zmq_role role;
	const char *in, *want;
	size_t len, want_len;
};

#define G(role, in, want)                                                                          \
	{                                                                                          \
		role, in, want, sizeof(in) - 1, sizeof(want) - 1                                   \
	}

static const struct golden goldens[] = {
	G(RT_ZMQ_ROLE_ADD, add_full, add_full_red),
	G(RT_ZMQ_ROLE_ADD, add_options, add_options_red),
	G(RT_ZMQ_ROLE_OUTPUTS, outs_three, outs_three_red),
	G(RT_ZMQ_ROLE_ABORT, abort_two, abort_two),
	G(RT_ZMQ_ROLE_UTILITY, utility, utility_red),
};

static void test_golden(void **state)
{
	uint8_t out[1024];

	(void)state;
	for (size_t g = 0; g < sizeof(goldens) / sizeof(goldens[0]); g++) {
		const struct golden *v = &goldens[g];
		struct dec a, b;

		assert_int_equal(v->want_len, v->len);
		rt_zmq_mask_frame(v->role, (const uint8_t *)v->in, v->len, v->len, out);
		if (memcmp(out, v->want, v->len))
			for (size_t i = 0; i < v->len; i++)
				if (out[i] != (uint8_t)v->want[i])
					fail_msg("golden %zu: byte %zu is %#x, want %#x", g, i,
						 out[i], (uint8_t)v->want[i]);
		decode(v->role, (const uint8_t *)v->in, v->len, v->len, &a);
		decode(v->role, out, v->len, v->len, &b);
		assert_true(a.ret >= 0);
		assert_same_decode(&a, &b);
	}
}

/* Every prefix redacts as the whole frame does over it: chunks are consistent. */
static void test_golden_prefixes(void **state)
{
	uint8_t whole[1024], part[1024];

	(void)state;
	for (size_t g = 0; g < sizeof(goldens) / sizeof(goldens[0]); g++) {
		const struct golden *v = &goldens[g];

		rt_zmq_mask_frame(v->role, (const uint8_t *)v->in, v->len, v->len, whole);
		for (size_t n = 0; n <= v->len; n++) {
			rt_zmq_mask_frame(v->role, (const uint8_t *)v->in, n, v->len, part);
			if (memcmp(part, whole, n))
				fail_msg("golden %zu: prefix of %zu bytes differs", g, n);
			/* a cut capture (the frame is larger than what was read) too */
			rt_zmq_mask_frame(v->role, (const uint8_t *)v->in, n, v->len + 100, part);
			assert_memory_equal(part, whole, n);
		}
	}
}

/* A payload of another role is masked where its shape departs from the role's. */
static void test_wrong_role(void **state)
{
	uint8_t out[1024];

	(void)state;
	/* an ADD walked as outputs: field 0 is no engine index; its header stays, so
	 * that the decoder refuses the redacted bytes as it refuses the original */
	MASK_LIT(RT_ZMQ_ROLE_OUTPUTS, add_full, out);
	assert_int_equal(memcmp(out, "\xdc\x00\x10\xb4", 4), 0);
	for (size_t i = 4; i < sizeof(add_full) - 1; i++)
		assert_int_equal(out[i], X);
	/* a ROUTER's routing id walked as outputs: no array; a fixint becomes 0 */
	MASK_LIT(RT_ZMQ_ROLE_OUTPUTS, "\x05\x07", out);
	assert_memory_equal(out, "\x00x", 2);
	/* outputs walked as an ABORT: the engine index is no id */
	MASK_LIT(RT_ZMQ_ROLE_ABORT, outs_three, out);
	assert_memory_equal(out, "\x98\x00", 2);
	for (size_t i = 2; i < sizeof(outs_three) - 1; i++)
		assert_int_equal(out[i], X);
	/* bytes after the payload's one value */
	MASK_LIT(RT_ZMQ_ROLE_ABORT, "\x91\xa2r1SECRET", out);
	assert_memory_equal(out, "\x91\xa2r1xxxxxx", 10);
	/* 0xc1 is no msgpack */
	MASK_LIT(RT_ZMQ_ROLE_ADD, "\x93\xa1r\xc1SECRET", out);
	assert_memory_equal(out, "\x93\xa1r\xc1xxxxxx", 10);
	/* a uint64 past INT64_MAX where content is: still past it */
	MASK_LIT(RT_ZMQ_ROLE_ABORT, "\x91\xcf\xff\xff\xff\xff\xff\xff\xff\xfe", out);
	assert_memory_equal(out, "\x91\xcfxxxxxxxx", 10); /* an ABORT wants ids: refused */
	MASK_LIT(RT_ZMQ_ROLE_WAVE, "\x91\xcf\xff\xff\xff\xff\xff\xff\xff\xfe", out);
	assert_memory_equal(out, "\x91\xcf\x80\x00\x00\x00\x00\x00\x00\x00", 10);
	/* a count no bytes can hold: its header only */
	MASK_LIT(RT_ZMQ_ROLE_ADD, "\x9f\xa1rSECRET", out);
	assert_memory_equal(out, "\x9fxxxxxxxx", 9);
	/* a type byte that is no request type */
	MASK_LIT(RT_ZMQ_ROLE_TYPE, "\x07", out);
	assert_int_equal(out[0], X);
	MASK_LIT(RT_ZMQ_ROLE_TYPE, "\x03", out);
	assert_int_equal(out[0], 3);
}

/* ---- records ------------------------------------------------------------------------ */

#define PID 4242
#define SOCK_API 0x1000 /* the API server's ROUTER */
#define SOCK_ENG 0x2000 /* the engine's input DEALER */
#define SOCK_OUT 0x3000 /* the engine's PUSH and the API server's PULL */

struct zrec {
	union {
		struct rt_ev_zmq_msg z;
		uint8_t bytes[sizeof(struct rt_ev_zmq_msg) + RT_ZMQ_CHUNK_MAX + 8];
	};
};

static uint64_t clock_ns = 1000;

/* One chunk of a frame, as the probe writes it. */
static void chunk(struct zrec *r, uint32_t tid, uint64_t sock, uint8_t dir, uint64_t enter,
		  const uint8_t *frame, uint32_t frame_len, uint32_t off, uint16_t len,
		  uint8_t flags)
{
	memset(r, 0, sizeof(*r));
	r->z.hdr.kind = RT_EV_ZMQ_MSG;
	r->z.hdr.size = (uint16_t)RT_EVENT_SIZE_ALIGN(sizeof(r->z) + len);
	r->z.hdr.pid = PID;
	r->z.hdr.tid = tid;
	r->z.hdr.ts_ns = clock_ns += 10;
	r->z.enter_ns = enter;
	r->z.socket = sock;
	r->z.dir = dir;
	r->z.frame_len = frame_len;
	r->z.offset = off;
	r->z.len = len;
	r->z.flags = flags;
	if (len)
		memcpy(r->z.data, frame + off, len);
}

/*
 * A frame through the redactor in chunks of at most step bytes (the probe:
 * 4096, at most 16 KiB read), redacted bytes to out (its captured length).
 * Returns that length.
 */
static size_t feed_frame(struct rt_redactor *rd, uint32_t tid, uint64_t sock, uint8_t dir,
			 const uint8_t *frame, size_t frame_len, uint8_t flags, size_t step,
			 uint8_t *out)
{
	size_t want = frame_len < RT_ZMQ_CAP_MAX ? frame_len : RT_ZMQ_CAP_MAX, off = 0;
	uint64_t enter = clock_ns += 10;
	struct zrec r;

	if (frame_len > want)
		flags |= RT_ZMQ_CUT;
	do {
		size_t n = want - off < step ? want - off : step;
		const struct rt_ev_zmq_msg *red;

		chunk(&r, tid, sock, dir, enter, frame, (uint32_t)frame_len, (uint32_t)off,
		      (uint16_t)n, flags);
		red = (const void *)rt_redactor__redact(rd, &r.z.hdr);
		assert_non_null(red);
		assert_int_equal(red->len, n);
		assert_int_equal(red->offset, off);
		if (out)
			memcpy(out + off, red->data, n);
		/* nothing past the chunk's bytes */
		for (size_t i = sizeof(*red) + n; i < red->hdr.size; i++)
			assert_int_equal(((const uint8_t *)red)[i], 0);
		off += n;
	} while (off < want);
	return want;
}

static void test_messages_placed(void **state)
{
	static const uint8_t ident[2] = { 0x00, 0x00 }, add_type = 0, util_type = 3;
	static const uint8_t aux[] = "SECRET tensor bytes";
	struct rt_redactor *rd = rt_redactor__new(NULL);
	struct rt_redactor_stats st;
	uint8_t out[1024];

	(void)state;
	/* the API server's send: [routing id, type, ADD] */
	feed_frame(rd, 10, SOCK_API, RT_ZMQ_SEND, ident, 2, RT_ZMQ_MORE, 4096, out);
	assert_memory_equal(out, "\x00x", 2);
	feed_frame(rd, 10, SOCK_API, RT_ZMQ_SEND, &add_type, 1, RT_ZMQ_MORE, 4096, out);
	assert_int_equal(out[0], 0);
	feed_frame(rd, 10, SOCK_API, RT_ZMQ_SEND, S(add_full), 0, 4096, out);
	assert_memory_equal(out, add_full_red, sizeof(add_full) - 1);
	/* the engine's receive: [type, ADD, aux]: the aux frame is masked whole */
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, &add_type, 1, RT_ZMQ_MORE, 4096, out);
	assert_int_equal(out[0], 0);
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, S(add_options), RT_ZMQ_MORE, 4096, out);
	assert_memory_equal(out, add_options_red, sizeof(add_options) - 1);
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, aux, sizeof(aux) - 1, 0, 4096, out);
	for (size_t i = 0; i < sizeof(aux) - 1; i++)
		assert_int_equal(out[i], X);
	/* a UTILITY on the same engine socket after it */
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, &util_type, 1, RT_ZMQ_MORE, 4096, out);
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, S(utility), 0, 4096, out);
	assert_memory_equal(out, utility_red, sizeof(utility) - 1);
	/* the engine's send and the API server's receive of EngineCoreOutputs, then an aux frame */
	feed_frame(rd, 21, SOCK_OUT, RT_ZMQ_SEND, S(outs_three), RT_ZMQ_MORE, 4096, out);
	assert_memory_equal(out, outs_three_red, sizeof(outs_three) - 1);
	feed_frame(rd, 21, SOCK_OUT, RT_ZMQ_SEND, aux, sizeof(aux) - 1, 0, 4096, out);
	assert_int_equal(out[0], X);
	feed_frame(rd, 10, SOCK_OUT, RT_ZMQ_RECV, S(outs_three), 0, 4096, out);
	assert_memory_equal(out, outs_three_red, sizeof(outs_three) - 1);
	/* the dead sentinel, kept */
	feed_frame(rd, 21, SOCK_OUT, RT_ZMQ_SEND, S(RT_VLLM_DEAD_SENTINEL), 0, 4096, out);
	assert_memory_equal(out, RT_VLLM_DEAD_SENTINEL, 16);
	/* an ADD's payload in the type byte's place is masked whole */
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, S(add_full), RT_ZMQ_MORE, 4096, out);
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, S(add_full), 0, 4096, out);
	for (size_t i = 0; i < sizeof(add_full) - 1; i++)
		assert_int_equal(out[i], X);
	rt_redactor__stats(rd, &st);
	assert_int_equal(st.zmq_masked, 3);
	assert_int_equal(st.zmq_walked, st.records - 3);
	rt_redactor__free(rd);
}

/* A LOSS, a missing chunk, another call's chunk: masked until a frame without MORE ends. */
static void test_lost_place(void **state)
{
	static const uint8_t add_type = 0;
	struct rt_redactor *rd = rt_redactor__new(NULL);
	struct rt_ev_loss loss = { 0 };
	uint8_t big[9000], out[9000];
	struct zrec r;

	(void)state;
	loss.hdr.kind = RT_EV_LOSS;
	loss.hdr.size = sizeof(loss);
	loss.hdr.pid = PID;
	loss.hdr.ts_ns = clock_ns += 10;
	loss.since_ns = 1;
	loss.count = 3;
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, &add_type, 1, RT_ZMQ_MORE, 4096, out);
	assert_ptr_equal(rt_redactor__redact(rd, &loss.hdr), &loss.hdr);
	/* the payload after the loss: its place is not known */
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, S(add_full), 0, 4096, out);
	for (size_t i = 0; i < sizeof(add_full) - 1; i++)
		assert_int_equal(out[i], X);
	/* that frame ended the message: the next one is placed again */
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, &add_type, 1, RT_ZMQ_MORE, 4096, out);
	assert_int_equal(out[0], 0);
	feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, S(add_full), 0, 4096, out);
	assert_memory_equal(out, add_full_red, sizeof(add_full) - 1);

	/* a chunk missing in a 9000-byte outputs frame: the rest of the message is masked */
	memset(big, 0x42, sizeof(big));
	memcpy(big, "\x92\x00\xdc\xff\xff", 5);
	chunk(&r, 21, SOCK_OUT, RT_ZMQ_SEND, 777, big, sizeof(big), 0, 4096, RT_ZMQ_MORE);
	rt_redactor__redact(rd, &r.z.hdr);
	chunk(&r, 21, SOCK_OUT, RT_ZMQ_SEND, 777, big, sizeof(big), 8192, 808, RT_ZMQ_MORE);
	assert_memory_equal(((const struct rt_ev_zmq_msg *)rt_redactor__redact(rd, &r.z.hdr))->data,
			    memset(out, X, 808), 808);
	feed_frame(rd, 21, SOCK_OUT, RT_ZMQ_SEND, S(outs_three), 0, 4096, out);
	assert_int_equal(out[0], X); /* still the same message */
	feed_frame(rd, 21, SOCK_OUT, RT_ZMQ_SEND, S(outs_three), 0, 4096, out);
	assert_memory_equal(out, outs_three_red, sizeof(outs_three) - 1);
	rt_redactor__free(rd);
}

/* ---- generated messages ------------------------------------------------------------ */

struct mp {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct mp *m, const void *b, size_t n)
{
	if (m->n + n > m->cap) {
		m->cap = (m->n + n) * 2;
		m->p = realloc(m->p, m->cap);
		assert_non_null(m->p);
	}
	memcpy(m->p + m->n, b, n);
	m->n += n;
}

static void put_be(struct mp *m, uint8_t type, uint64_t v, unsigned n)
{
	uint8_t b[9];

	b[0] = type;
	for (unsigned i = 0; i < n; i++)
		b[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	put(m, b, 1 + n);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static unsigned pick(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static void mp_uint(struct mp *m, uint64_t v)
{
	if (v < 128) {
		uint8_t b = (uint8_t)v;

		put(m, &b, 1);
	} else if (v < 256) {
		put_be(m, 0xcc, v, 1);
	} else if (v < 65536) {
		put_be(m, 0xcd, v, 2);
	} else if (v < (1ull << 32)) {
		put_be(m, 0xce, v, 4);
	} else {
		put_be(m, 0xcf, v, 8);
	}
}

static void mp_float(struct mp *m, double d)
{
	uint64_t raw;

	memcpy(&raw, &d, 8);
	put_be(m, 0xcb, raw, 8);
}

static void mp_hdr(struct mp *m, uint8_t fix, uint8_t fixmax, uint8_t t16, size_t n)
{
	if (n <= fixmax) {
		uint8_t b = (uint8_t)(fix | n);

		put(m, &b, 1);
	} else if (n < 65536) {
		put_be(m, t16, n, 2);
	} else {
		put_be(m, (uint8_t)(t16 + 1), n, 4);
	}
}

static void mp_arr(struct mp *m, size_t n)
{
	mp_hdr(m, 0x90, 15, 0xdc, n);
}

static void mp_map(struct mp *m, size_t n)
{
	mp_hdr(m, 0x80, 15, 0xde, n);
}

static void mp_str(struct mp *m, const char *s)
{
	size_t n = strlen(s);

	if (n < 32) {
		uint8_t b = (uint8_t)(0xa0 | n);

		put(m, &b, 1);
	} else if (n < 256) {
		put_be(m, 0xd9, n, 1);
	} else {
		put_be(m, 0xda, n, 2);
	}
	put(m, s, n);
}

static void mp_nil(struct mp *m)
{
	put(m, "\xc0", 1);
}

/* content: always holds "SECRET", which must not survive */
static void mp_secret(struct mp *m)
{
	static const char *const words[] = { "SECRET", "the SECRET prompt", "SECRET:stop",
					     "a longer SECRET stop string that needs str8 because "
					     "it is past thirty-one bytes" };

	mp_str(m, words[pick(4)]);
}

/* token ids of random widths; the values are secrets too */
static void mp_tokens(struct mp *m, size_t n)
{
	static const uint64_t scale[] = { 100, 250, 60000, 200000, 5000000000ull };

	mp_arr(m, n);
	for (size_t i = 0; i < n; i++)
		mp_uint(m, 1 + rnd() % scale[pick(5)]);
}

/* a value of no interest to the decoder, holding content at some depth */
static void mp_content(struct mp *m, int depth)
{
	switch (depth > 3 ? pick(4) : pick(7)) {
	case 0:
		mp_secret(m);
		break;
	case 1:
		mp_uint(m, 1 + rnd() % 100000);
		break;
	case 2:
		mp_float(m, -1.5 - (double)pick(100));
		break;
	case 3:
		put(m, "\xc4\x06SECRET", 8); /* bin8 */
		break;
	case 4:
		mp_arr(m, 2);
		mp_content(m, depth + 1);
		mp_content(m, depth + 1);
		break;
	case 5:
		mp_map(m, 1);
		mp_secret(m); /* a key that is content (logit_bias, extra_args) */
		mp_content(m, depth + 1);
		break;
	default:
		put(m, "\xd6\x01SECR", 6); /* fixext 4 */
		break;
	}
}

static void gen_add(struct mp *m, size_t prompt)
{
	char id[64];

	snprintf(id, sizeof(id), "cmpl-%u-0-%08x", pick(1000), (unsigned)rnd());
	mp_arr(m, 16);
	mp_str(m, id);
	mp_tokens(m, prompt);
	if (pick(2))
		mp_nil(m);
	else
		mp_content(m, 1); /* mm_features */
	mp_map(m, 5); /* sampling_params */
	mp_str(m, "max_tokens");
	mp_uint(m, 1 + pick(4000));
	mp_str(m, "stop");
	mp_arr(m, 2);
	mp_secret(m);
	mp_secret(m);
	mp_str(m, "logit_bias");
	mp_map(m, 1);
	mp_secret(m);
	mp_float(m, 2.5);
	mp_str(m, "n");
	mp_uint(m, 1 + pick(4));
	mp_str(m, "extra_args");
	mp_content(m, 1);
	mp_nil(m); /* pooling_params */
	mp_uint(m, 1 + pick(50000)); /* eos_token_id */
	mp_float(m, 1700000000.0 + pick(1000) / 8.0);
	if (pick(2))
		mp_nil(m);
	else
		mp_content(m, 1); /* lora_request */
	mp_secret(m); /* cache_salt */
	mp_nil(m);
	mp_nil(m); /* prompt_embeds */
	mp_uint(m, pick(3));
	mp_uint(m, pick(3));
	mp_uint(m, pick(3));
	mp_map(m, 1); /* trace_headers */
	mp_str(m, "traceparent");
	mp_secret(m);
	snprintf(id + strlen(id) - 9, 10, "%s", "");
	mp_str(m, id);
}

static void gen_outputs(struct mp *m, size_t n_out)
{
	mp_arr(m, 8);
	mp_uint(m, pick(2));
	mp_arr(m, n_out);
	for (size_t i = 0; i < n_out; i++) {
		char id[64];
		bool fin = pick(3) == 0;

		snprintf(id, sizeof(id), "chatcmpl-%u-%08x", pick(100000), (unsigned)rnd());
		mp_arr(m, 13);
		mp_str(m, id);
		mp_tokens(m, 1 + pick(3));
		if (pick(2))
			mp_nil(m);
		else
			mp_content(m, 2); /* logprobs */
		mp_nil(m);
		mp_nil(m);
		if (fin)
			mp_uint(m, pick(4));
		else
			mp_nil(m);
		if (!fin)
			mp_nil(m);
		else if (pick(2))
			mp_secret(m); /* a stop string */
		else
			mp_uint(m, 1 + pick(60000)); /* a stop token */
		if (pick(2)) {
			mp_nil(m);
		} else {
			mp_arr(m, 1);
			mp_map(m, 2);
			mp_str(m, "type");
			mp_uint(m, 1 + pick(3));
			mp_str(m, "timestamp");
			mp_float(m, 100.0 + pick(1000) / 16.0);
		}
		if (pick(2))
			mp_nil(m);
		else
			mp_content(m, 2); /* kv_transfer_params */
		mp_nil(m);
		mp_uint(m, pick(300));
		mp_nil(m);
		mp_uint(m, 0);
	}
	mp_content(m, 1); /* scheduler_stats */
	mp_float(m, 12345.5);
	mp_nil(m);
	mp_arr(m, 1);
	mp_str(m, "r9");
	mp_nil(m);
	mp_nil(m);
}

/* Every integer of an array at the reader: 0 after redaction. */
static void assert_zero_tokens(struct rt_mp_reader *r)
{
	struct rt_mp_value v;
	uint64_t u;

	assert_int_equal(rt_mp_read(r, &v), 0);
	assert_int_equal(v.type, RT_MP_ARRAY);
	for (uint32_t i = 0; i < v.n; i++) {
		assert_int_equal(rt_mp_read_uint(r, &u), 0);
		assert_int_equal(u, 0);
	}
}

static void assert_no_tokens(enum rt_zmq_role role, const uint8_t *p, size_t n)
{
	struct rt_mp_reader r;
	struct rt_mp_value v;

	rt_mp_init(&r, p, n);
	assert_int_equal(rt_mp_read(&r, &v), 0);
	assert_int_equal(rt_mp_skip(&r, 4), 0); /* field 0 */
	if (role == RT_ZMQ_ROLE_ADD) {
		assert_zero_tokens(&r);
		return;
	}
	assert_int_equal(rt_mp_read(&r, &v), 0); /* outputs */
	for (uint32_t k = 0, n_out = v.n; k < n_out; k++) {
		struct rt_mp_value o;

		assert_int_equal(rt_mp_read(&r, &o), 0);
		assert_int_equal(rt_mp_skip(&r, 4), 0);
		assert_zero_tokens(&r);
		for (uint32_t i = 2; i < o.n; i++)
			assert_int_equal(rt_mp_skip(&r, 30), 0);
	}
}

/* Generated messages, large ones (cut at 16 KiB) included, fed in the probe's chunks. */
static void test_generated(void **state)
{
	static uint8_t out[RT_ZMQ_CAP_MAX], whole[RT_ZMQ_CAP_MAX];
	static const uint8_t add_type = 0;
	static const size_t steps[] = { 4096, 4096, 1000, 7, 1 };
	struct rt_redactor *rd = rt_redactor__new(NULL);
	int cut = 0, chunked = 0;

	(void)state;
	for (int it = 0; it < 400; it++) {
		bool add = it % 2 == 0;
		enum rt_zmq_role role = add ? RT_ZMQ_ROLE_ADD : RT_ZMQ_ROLE_OUTPUTS;
		size_t step = steps[pick(5)], got;
		/* a few prompts past the 16 KiB the probe reads */
		size_t size = it % 20 == 0 ? 6000 : 1 + pick(300);
		struct mp m = { 0 };
		struct dec a, b;

		if (step < 64 && size > 300)
			step = 4096;
		if (add)
			gen_add(&m, size);
		else
			gen_outputs(&m, 1 + size / 8);
		if (add) {
			feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, &add_type, 1, RT_ZMQ_MORE, 4096,
				   out);
			got = feed_frame(rd, 20, SOCK_ENG, RT_ZMQ_RECV, m.p, m.n, 0, step, out);
		} else {
			got = feed_frame(rd, 21, SOCK_OUT, RT_ZMQ_SEND, m.p, m.n, 0, step, out);
		}
		/* chunked as the probe cuts it, redacted as the whole frame is */
		rt_zmq_mask_frame(role, m.p, got, m.n, whole);
		assert_memory_equal(out, whole, got);
		assert_null(memmem(out, got, "SECR", 4));
		decode(role, m.p, got, m.n, &a);
		decode(role, out, got, m.n, &b);
		assert_same_decode(&a, &b);
		chunked += got > step;
		if (got == m.n) {
			assert_int_equal(a.ret, add ? RT_VLLM_MSG_ADD : RT_VLLM_MSG_OUTPUTS);
			assert_no_tokens(role, out, got);
		} else {
			/* the capture was cut inside the prompt: the ADD's id and count still read */
			assert_int_equal(a.ret, -ENODATA);
			assert_int_equal(b.adds, 1);
			assert_int_equal(b.add.prompt_tokens, 6000);
			cut++;
		}
		free(m.p);
	}
	assert_true(cut >= 10); /* most 6000-token prompts pass 16 KiB */
	assert_true(chunked >= 100);
	rt_redactor__free(rd);
}

/* ---- random bytes ----------------------------------------------------------------- */

/* Random, mutated and cut input never crashes, never overruns, only keeps or masks. */
static void test_random(void **state)
{
	static const struct golden *srcs[] = { &goldens[0], &goldens[1], &goldens[2], &goldens[3],
					       &goldens[4] };
	static uint8_t in[RT_ZMQ_CAP_MAX + 64], out[RT_ZMQ_CAP_MAX + 64];
	struct rt_redactor *rd = rt_redactor__new(&(struct rt_redactor_opts){ .max_conns = 4 });

	(void)state;
	for (int it = 0; it < 20000; it++) {
		enum rt_zmq_role role = (enum rt_zmq_role)pick(RT_ZMQ_ROLE_WAVE + 1);
		size_t n, cut, i;
		uint8_t *o;

		if (pick(2)) {
			const struct golden *g = srcs[pick(5)];

			n = g->len;
			memcpy(in, g->in, n);
			for (int k = pick(4); k >= 0; k--)
				in[pick((unsigned)n)] = (uint8_t)rnd();
		} else {
			n = pick(it % 100 == 0 ? RT_ZMQ_CAP_MAX : 200);
			for (i = 0; i < n; i++)
				in[i] = (uint8_t)(pick(3) ? rnd() : 0x90 + pick(0x50));
		}
		cut = n ? pick((unsigned)n + 1) : 0;
		/* an exact-size heap copy of the output: ASan sees a write past it */
		o = malloc(cut ? cut : 1);
		assert_non_null(o);
		rt_zmq_mask_frame(role, in, cut, n, o);
		for (i = 0; i < cut; i++)
			if (o[i] != in[i] && o[i] != 0 && o[i] != X &&
			    !(o[i] == 0x80 && i && o[i - 1] == 0xcf))
				fail_msg("iteration %d: byte %zu became %#x (was %#x)", it, i, o[i],
					 in[i]);
		free(o);

		/* the same bytes as records with random places, flags and order */
		{
			struct zrec r;
			uint32_t off = 0, fl = (uint32_t)(n > RT_ZMQ_CAP_MAX ? RT_ZMQ_CAP_MAX : n);

			do {
				uint16_t len = (uint16_t)(fl - off < 4096 ? fl - off : 4096);
				const struct rt_ev_zmq_msg *red;

				uint32_t at = pick(16) ? off : pick(fl + 1) & ~1u;

				if (pick(8) == 0 && len)
					len = (uint16_t)pick(len);
				if (at + len > fl)
					at = fl - len;
				chunk(&r, 20 + pick(2), SOCK_ENG + pick(2), 1 + pick(2), pick(3),
				      in, (uint32_t)n, at, len, (uint8_t)pick(16));
				red = (const void *)rt_redactor__redact(rd, &r.z.hdr);
				if (red)
					for (i = 0; i < len; i++)
						if (red->data[i] != r.z.data[i] && red->data[i] &&
						    red->data[i] != X && red->data[i] != 0x80)
							fail_msg("iteration %d: record byte %zu",
								 it, i);
				off += len ? len : 1;
			} while (off < fl && pick(8));
			if (pick(50) == 0) {
				struct rt_ev_loss loss = { .hdr = { .kind = RT_EV_LOSS,
								    .size = sizeof(loss),
								    .pid = PID,
								    .ts_ns = clock_ns } };

				rt_redactor__redact(rd, &loss.hdr);
			}
		}
		memset(out, 0, sizeof(out));
	}
	rt_redactor__free(rd);
}

/* ---- the committed recording ------------------------------------------------------ */

struct asm_stream {
	uint64_t socket;
	uint8_t dir;
	uint32_t n;
	uint8_t *frames[8];
	size_t len[8];
};

struct msgs {
	int adds, outputs, with_tokens;
};

/* Decode one assembled message both ways (original, redacted) as rt_vllm_on_msg() does. */
static void check_msg(struct asm_stream *o, struct asm_stream *r, struct msgs *ms)
{
	struct rt_vllm_frame fo[8], fr[8];
	struct dec a, b;
	bool input;
	unsigned flags = 0;

	for (uint32_t i = 0; i < o->n; i++) {
		fo[i] = (struct rt_vllm_frame){ .data = o->frames[i],
						.len = o->len[i],
						.size = o->len[i] };
		fr[i] = (struct rt_vllm_frame){ .data = r->frames[i],
						.len = r->len[i],
						.size = r->len[i] };
		assert_int_equal(o->len[i], r->len[i]);
	}
	if (o->dir == RT_ZMQ_SEND) {
		input = o->n >= 3 && o->len[1] == 1;
		flags = RT_VLLM_ROUTING_ID;
	} else {
		input = o->n >= 2 && o->len[0] == 1;
	}
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (input) {
		a.ret = rt_vllm_decode_input(fo, o->n, flags, &cb, &a);
		b.ret = rt_vllm_decode_input(fr, r->n, flags, &cb, &b);
	} else {
		a.ret = rt_vllm_decode_output(fo, o->n, &cb, &a);
		b.ret = rt_vllm_decode_output(fr, r->n, &cb, &b);
	}
	a.batch.timestamp = isnan(a.batch.timestamp) ? -1 : a.batch.timestamp;
	b.batch.timestamp = isnan(b.batch.timestamp) ? -1 : b.batch.timestamp;
	a.add.arrival_time = isnan(a.add.arrival_time) ? -1 : a.add.arrival_time;
	b.add.arrival_time = isnan(b.add.arrival_time) ? -1 : b.add.arrival_time;
	assert_same_decode(&a, &b);
	ms->adds += a.adds;
	ms->outputs += a.outputs;
	if (a.ret == RT_VLLM_MSG_ADD || a.ret == RT_VLLM_MSG_OUTPUTS) {
		uint32_t p = o->dir == RT_ZMQ_SEND && input ? 2 : input ? 1 : 0;
		bool nonzero = false;

		/* the original had token ids; the redacted has none */
		for (size_t i = 0; i < o->len[p]; i++)
			nonzero |= o->frames[p][i] != r->frames[p][i];
		ms->with_tokens += nonzero;
		assert_no_tokens(input ? RT_ZMQ_ROLE_ADD : RT_ZMQ_ROLE_OUTPUTS, r->frames[p],
				 r->len[p]);
	}
}

static void test_fixture(void **state)
{
	struct rt_trace_reader *rd;
	struct rt_redactor *red = rt_redactor__new(NULL);
	const struct rt_event_hdr *ev;
	struct asm_stream so[8] = { 0 }, sr[8] = { 0 };
	struct msgs ms = { 0 };
	char path[4096];
	int records = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/fixtures/vllm/vllm-zero.rtrace", RT_SOURCE_DIR);
	rd = rt_trace_reader__open(path, NULL);
	assert_non_null(rd);
	while (rt_trace_reader__next(rd, &ev) == 1) {
		const struct rt_ev_zmq_msg *z = (const void *)ev, *zr;
		struct asm_stream *o = NULL, *r = NULL;
		int k;

		if (ev->kind != RT_EV_ZMQ_MSG) {
			rt_redactor__redact(red, ev);
			continue;
		}
		zr = (const void *)rt_redactor__redact(red, ev);
		assert_non_null(zr);
		records++;
		/* the fixture's frames are small: one chunk each */
		assert_int_equal(z->offset, 0);
		assert_int_equal(z->len, z->frame_len);
		for (k = 0; k < 8 && !o; k++)
			if (!so[k].n || (so[k].socket == z->socket && so[k].dir == z->dir)) {
				o = &so[k];
				r = &sr[k];
			}
		assert_non_null(o);
		assert_non_null(r);
		o->socket = r->socket = z->socket;
		o->dir = r->dir = z->dir;
		assert_true(o->n < 8);
		o->frames[o->n] = malloc(z->len + 1);
		r->frames[r->n] = malloc(z->len + 1);
		memcpy(o->frames[o->n], z->data, z->len);
		memcpy(r->frames[r->n], zr->data, z->len);
		o->len[o->n++] = r->len[r->n++] = z->len;
		if (!(z->flags & RT_ZMQ_MORE)) {
			check_msg(o, r, &ms);
			for (uint32_t i = 0; i < o->n; i++) {
				free(o->frames[i]);
				free(r->frames[i]);
			}
			o->n = r->n = 0;
		}
	}
	rt_trace_reader__free(rd);
	rt_redactor__free(red);
	/* 8 requests: each ADD seen at the API server's send and the engine's receive */
	assert_true(records > 100);
	assert_int_equal(ms.adds, 16);
	assert_true(ms.outputs >= 2 * 8 * 8);
	assert_true(ms.with_tokens >= ms.adds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),	   cmocka_unit_test(test_golden_prefixes),
		cmocka_unit_test(test_wrong_role), cmocka_unit_test(test_messages_placed),
		cmocka_unit_test(test_lost_place), cmocka_unit_test(test_generated),
		cmocka_unit_test(test_random),	   cmocka_unit_test(test_fixture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
