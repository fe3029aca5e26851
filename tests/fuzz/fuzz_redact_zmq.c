// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz harness for the recorder's ZeroMQ frame redaction
 * (src/export/redact_zmq.c) over the vLLM decoder's corpus (corpus/vllm:
 * byte 0 flags, byte 1 a parameter, the rest a frame's bytes).
 *
 * Byte 0 picks the role the frame is walked as (bit 0: EngineCoreOutputs,
 * else the input payload whose type is byte 1 & 3, as fuzz_vllm reads it),
 * byte 1 where a capture is cut and how the frame is chunked. Promises
 * checked (abort() when broken):
 *   - every output byte is the input's, 0 or 'x', and nothing is written
 *     past the bytes given (exact-size heap buffers, ASan);
 *   - a prefix redacts as the whole frame does over it;
 *   - the frame fed as records in chunks (through the stream layer) gives
 *     the bytes of the whole-frame walk;
 *   - where the original decodes as that role (whole, or cut with a
 *     report), the redacted bytes decode to the same ids, counts, finish
 *     reasons, events, times and batch fields.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/redact.h"
#include "proto/vllm.h"
#include "redact_int.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_redact_zmq: broken promise: %s (line %d)\n", #cond,  \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* What the decoder reported, as text: equal text, equal reading. */
struct seen {
	char text[8192];
	size_t n;
};

static void say(struct seen *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct seen *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->n >= sizeof(s->text) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(s->text + s->n, sizeof(s->text) - s->n, fmt, ap);
	va_end(ap);
	if (n > 0)
		s->n += (size_t)n < sizeof(s->text) - s->n ? (size_t)n : sizeof(s->text) - s->n - 1;
}

static double num(double d)
{
	return isnan(d) ? -1 : d;
}

static void on_add(void *ctx, const struct rt_vllm_add *a)
{
	say(ctx, "add %.*s|%.*s|%d p%lld m%lld n%lld t%.17g r%lld c%lld q%lld e%d f%d s%d k%d n%u;",
	    (int)a->request_id.len, a->request_id.ptr ? a->request_id.ptr : "",
	    (int)a->external_req_id.len, a->external_req_id.ptr ? a->external_req_id.ptr : "",
	    a->external_req_id.ptr != NULL, (long long)a->prompt_tokens, (long long)a->max_tokens,
	    (long long)a->n, num(a->arrival_time), (long long)a->data_parallel_rank,
	    (long long)a->client_index, (long long)a->priority, a->has_prompt_embeds,
	    a->has_mm_features, a->has_sampling_params, a->cut, a->n_fields);
}

static void on_abort(void *ctx, struct rt_vllm_str id)
{
	say(ctx, "abort %.*s;", (int)id.len, id.ptr);
}

static void on_utility(void *ctx, uint64_t call_id, struct rt_vllm_str m)
{
	say(ctx, "util %llu %.*s;", (unsigned long long)call_id, (int)m.len, m.ptr);
}

static void on_outputs(void *ctx, const struct rt_vllm_outputs *o)
{
	say(ctx, "outs e%lld n%u s%d t%.17g u%d %llu %d f%u c%d n%u;", (long long)o->engine_index,
	    o->n_outputs, o->has_scheduler_stats, num(o->timestamp), o->has_utility,
	    (unsigned long long)o->utility_call_id, o->utility_failed, o->n_finished, o->cut,
	    o->n_fields);
}

static void on_output(void *ctx, const struct rt_vllm_outputs *h, const struct rt_vllm_output *o)
{
	(void)h;
	/* the stop reason's content is masked: only which kind it was stays */
	say(ctx, "out %.*s t%u f%d s%d%d e%d %u c%lld n%lld k%u", (int)o->request_id.len,
	    o->request_id.ptr, o->new_tokens, o->finish_reason, o->stop_token != RT_VLLM_NONE,
	    o->stop_str.ptr != NULL, o->events_present, o->n_events,
	    (long long)o->num_cached_tokens, (long long)o->num_nans_in_logits, o->n_fields);
	for (uint32_t i = 0; i < o->n_events && i < RT_VLLM_EVENTS_MAX; i++)
		say(ctx, " %u@%.17g", o->events[i].type, num(o->events[i].timestamp));
	say(ctx, ";");
}

static void on_finished(void *ctx, struct rt_vllm_str id)
{
	say(ctx, "fin %.*s;", (int)id.len, id.ptr);
}

static const struct rt_vllm_cb cb = {
	.on_add = on_add,
	.on_abort = on_abort,
	.on_utility = on_utility,
	.on_outputs = on_outputs,
	.on_output = on_output,
	.on_finished = on_finished,
};

static int decode(enum rt_zmq_role role, uint8_t type, const uint8_t *p, size_t len, size_t size,
		  struct seen *s)
{
	struct rt_vllm_frame f[2] = { { .data = &type, .len = 1, .size = 1 },
				      { .data = p, .len = len, .size = size } };

	s->n = 0;
	s->text[0] = '\0';
	return role == RT_ZMQ_ROLE_OUTPUTS || role == RT_ZMQ_ROLE_KEEP ?
		       rt_vllm_decode_output(&f[1], 1, &cb, s) :
		       rt_vllm_decode_input(f, 2, 0, &cb, s);
}

/*
 * What the decoder read of the original it reads of the redacted bytes; a
 * message it refused without a report stays refused (the kind of refusal
 * may differ where a value deeper than its bound was cut short).
 */
static void same_reading(int ra, const struct seen *a, int rb, const struct seen *b)
{
	if (ra >= 0 || a->n) {
		CHECK(ra == rb);
		CHECK(a->n == b->n && memcmp(a->text, b->text, a->n) == 0);
	} else {
		CHECK(rb < 0 && b->n == 0);
	}
}

static const enum rt_zmq_role input_roles[4] = { RT_ZMQ_ROLE_ADD, RT_ZMQ_ROLE_ABORT,
						 RT_ZMQ_ROLE_WAVE, RT_ZMQ_ROLE_UTILITY };

static struct rt_zmq_redact *zr;
static uint64_t calls;

/* The frame as records: [type, payload] received, or an outputs frame sent, in chunks of step. */
static void as_records(enum rt_zmq_role role, uint8_t type, const uint8_t *p, size_t n, size_t step,
		       const uint8_t *want)
{
	size_t cap = n < RT_ZMQ_CAP_MAX ? n : RT_ZMQ_CAP_MAX, off = 0;
	uint8_t *rec = malloc(sizeof(struct rt_ev_zmq_msg) + RT_ZMQ_CHUNK_MAX);
	struct rt_ev_zmq_msg *z = (void *)rec;

	CHECK(rec);
	calls++;
	memset(z, 0, sizeof(*z));
	z->hdr.kind = RT_EV_ZMQ_MSG;
	z->hdr.pid = 7;
	z->hdr.tid = 7;
	z->socket = 1;
	if (role != RT_ZMQ_ROLE_OUTPUTS && role != RT_ZMQ_ROLE_KEEP) {
		z->dir = RT_ZMQ_RECV;
		z->enter_ns = calls * 2;
		z->frame_len = 1;
		z->len = 1;
		z->flags = RT_ZMQ_MORE;
		z->data[0] = type;
		CHECK(rt_zmq_redact_record(zr, z));
		CHECK(z->data[0] == type);
	} else {
		z->dir = RT_ZMQ_SEND;
	}
	z->enter_ns = calls * 2 + 1;
	z->frame_len = (uint32_t)n;
	z->flags = n > cap ? RT_ZMQ_CUT : 0;
	do {
		size_t len = cap - off < step ? cap - off : step;

		z->offset = (uint32_t)off;
		z->len = (uint16_t)len;
		memcpy(z->data, p + off, len);
		CHECK(rt_zmq_redact_record(zr, z));
		CHECK(memcmp(z->data, want + off, len) == 0);
		off += len;
	} while (off < cap);
	free(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum rt_zmq_role role;
	uint8_t type, *in, *whole, *part;
	size_t n, cut, step;
	struct seen a, b;
	int ra, rb;

	if (size < 2)
		return 0;
	if (!zr)
		CHECK((zr = rt_zmq_redact_new(4)));
	role = data[0] & 1 ? RT_ZMQ_ROLE_OUTPUTS : input_roles[data[1] & 3];
	type = data[1] & 3;
	n = size - 2;
	in = malloc(n ? n : 1);
	whole = malloc(n ? n : 1);
	CHECK(in && whole);
	memcpy(in, data + 2, n);
	/* the stream layer keeps the engine's dead sentinel whole */
	if (role == RT_ZMQ_ROLE_OUTPUTS && n == sizeof(RT_VLLM_DEAD_SENTINEL) - 1 &&
	    !memcmp(in, RT_VLLM_DEAD_SENTINEL, n))
		role = RT_ZMQ_ROLE_KEEP;
	rt_zmq_mask_frame(role, in, n, n, whole);
	/* (0x80: the top byte of a uint64 past INT64_MAX, masked) */
	for (size_t i = 0; i < n; i++)
		CHECK(whole[i] == in[i] || whole[i] == 0 || whole[i] == RT_REDACT_MASK ||
		      (whole[i] == 0x80 && i && whole[i - 1] == 0xcf));

	/* a cut capture: a prefix, masked as the whole is over it */
	cut = n * data[1] / 256;
	part = malloc(cut ? cut : 1);
	CHECK(part);
	rt_zmq_mask_frame(role, in, cut, n, part);
	CHECK(memcmp(part, whole, cut) == 0);

	/* the decoder's reading survives redaction */
	ra = decode(role, type, in, n, n, &a);
	rb = decode(role, type, whole, n, n, &b);
	same_reading(ra, &a, rb, &b);
	ra = decode(role, type, in, cut, n, &a);
	rb = decode(role, type, part, cut, n, &b);
	same_reading(ra, &a, rb, &b);

	/* in chunks, through the stream layer */
	/* (the probe reads 4 KiB chunks: the 16-byte sentinel is always one) */
	step = role == RT_ZMQ_ROLE_KEEP ? RT_ZMQ_CHUNK_MAX : 1 + (size_t)data[1] * 17;
	as_records(role, type, in, n, step > RT_ZMQ_CHUNK_MAX ? RT_ZMQ_CHUNK_MAX : step, whole);
	free(part);
	free(whole);
	free(in);
	return 0;
}
