// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz harness for the vLLM V1 message decoder (src/proto/vllm.c) and its
 * msgpack reader (src/proto/msgpack.c).
 *
 * Input: byte 0 holds flags, byte 1 a parameter, the rest is a frame's bytes.
 *   bit 0  an engine output (rt_vllm_decode_output), else an input whose
 *          type frame is byte 1 (rt_vllm_decode_input)
 *   bit 1  inputs: a routing-id frame first (RT_VLLM_ROUTING_ID)
 *   bit 2  also decode a cut capture: the first rest*byte1/256 bytes of it
 *   bit 3  an aux frame after the payload (never read)
 *
 * Every buffer is an exact-size heap copy, so ASan sees a read past the
 * captured bytes. Promises checked (abort() when broken): the result is a
 * known kind or errno; callbacks run only on success, or for a cut capture
 * on -ENODATA; every string handed out lies inside the frame; counts fit
 * the frame's size; finish reasons are FinishReason values; a whole
 * message decodes the same twice; a cut capture reports a prefix of the
 * outputs the whole message reports; rt_mp_skip of the payload stays
 * inside it; the id matchers (vllm_id.h), run on the ADD's two ids and
 * on pairs of output ids, keep their own promises.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/msgpack.h"
#include "proto/vllm.h"
#include "proto/vllm_id.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_vllm: broken promise: %s (line %d)\n", #cond,        \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#define IDS_MAX 64

struct st {
	const uint8_t *base;
	size_t len, size;
	int calls, outputs, batches;
	size_t ids[IDS_MAX]; /* offsets of the outputs' request ids */
	struct rt_vllm_str prev_id;
};

static void check_str(const struct st *s, struct rt_vllm_str str, bool nil_ok)
{
	if (!str.ptr) {
		CHECK(nil_ok && str.len == 0);
		return;
	}
	CHECK((const uint8_t *)str.ptr >= s->base);
	CHECK((size_t)((const uint8_t *)str.ptr - s->base) <= s->len);
	CHECK(str.len <= s->len - (size_t)((const uint8_t *)str.ptr - s->base));
}

/* the id rules (vllm_id.h) on whatever ids the message carries, each way */
static void check_ids(struct rt_vllm_str a, struct rt_vllm_str b)
{
	int64_t k = -2;
	bool sfx;

	if (rt_vllm_id_internal(a, b, &k, &sfx))
		CHECK(k >= -1 && a.len >= b.len);
	for (int dir = 0; dir < 2; dir++) {
		struct rt_vllm_str x = dir ? b : a, y = dir ? a : b;
		enum rt_vllm_id_rule r;

		if (!y.ptr)
			continue;
		r = rt_vllm_id_match_header(x, y.ptr, y.len, &k);
		CHECK(r == RT_VLLM_ID_NO_MATCH || (x.ptr && x.len > y.len));
		CHECK(r == RT_VLLM_ID_PROMPT ? k >= 0 : k == -1);
		r = rt_vllm_id_match_response(x, y.ptr, y.len, &k);
		CHECK(r != RT_VLLM_ID_EXACT ||
		      (x.len == y.len && memcmp(x.ptr, y.ptr, y.len) == 0));
		CHECK(r == RT_VLLM_ID_PROMPT ? k >= 0 : k == -1);
	}
}

static void on_add(void *ctx, const struct rt_vllm_add *a)
{
	struct st *s = ctx;

	s->calls++;
	check_str(s, a->request_id, false);
	check_str(s, a->external_req_id, true);
	CHECK(a->prompt_tokens == RT_VLLM_NONE ||
	      (a->prompt_tokens >= 0 && (uint64_t)a->prompt_tokens <= s->size));
	CHECK(a->n_fields <= s->size);
	CHECK(a->cut == (s->len < s->size));
	check_ids(a->request_id, a->external_req_id);
}

static void on_abort(void *ctx, struct rt_vllm_str id)
{
	struct st *s = ctx;

	s->calls++;
	check_str(s, id, false);
}

static void on_utility(void *ctx, uint64_t call_id, struct rt_vllm_str method)
{
	struct st *s = ctx;

	(void)call_id;
	s->calls++;
	check_str(s, method, false);
}

static void on_outputs(void *ctx, const struct rt_vllm_outputs *o)
{
	struct st *s = ctx;

	s->calls++;
	s->batches++;
	CHECK(s->batches == 1 && s->outputs == 0);
	CHECK(o->n_outputs <= s->size && o->n_finished <= s->size);
	CHECK(o->cut == (s->len < s->size));
}

static void on_output(void *ctx, const struct rt_vllm_outputs *h, const struct rt_vllm_output *o)
{
	struct st *s = ctx;

	s->calls++;
	CHECK(s->batches == 1);
	CHECK((uint32_t)s->outputs < h->n_outputs);
	check_str(s, o->request_id, false);
	check_str(s, o->stop_str, true);
	CHECK(o->stop_str.ptr == NULL || o->stop_token == RT_VLLM_NONE);
	CHECK(o->new_tokens <= s->size);
	CHECK(o->finish_reason >= RT_VLLM_FINISH_NONE && o->finish_reason <= RT_VLLM_FINISH_ERROR);
	CHECK(o->finished == (o->finish_reason != RT_VLLM_FINISH_NONE));
	CHECK(o->n_events <= s->size);
	CHECK(o->events_present || o->n_events == 0);
	CHECK(o->n_fields >= 2 && o->n_fields <= s->size);
	if (s->outputs > 0)
		check_ids(o->request_id, s->prev_id);
	s->prev_id = o->request_id;
	if (s->outputs < IDS_MAX)
		s->ids[s->outputs] = (size_t)((const uint8_t *)o->request_id.ptr - s->base);
	s->outputs++;
}

static void on_finished(void *ctx, struct rt_vllm_str id)
{
	struct st *s = ctx;

	s->calls++;
	CHECK(s->batches == 1);
	check_str(s, id, false);
}

static void on_dead(void *ctx)
{
	((struct st *)ctx)->calls++;
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

static bool known(int ret)
{
	switch (ret) {
	case RT_VLLM_MSG_ADD:
	case RT_VLLM_MSG_ABORT:
	case RT_VLLM_MSG_START_DP_WAVE:
	case RT_VLLM_MSG_UTILITY:
	case RT_VLLM_MSG_OUTPUTS:
	case RT_VLLM_MSG_DEAD:
	case RT_VLLM_MSG_EMPTY:
	case -ENODATA:
	case -EBADMSG:
	case -ELOOP:
	case -ENOMSG:
	case -EPROTO:
		return true;
	default:
		return false;
	}
}

/* decode payload[0..len) of a frame of size bytes */
static int decode(unsigned flags, uint8_t type, const uint8_t *payload, size_t len, size_t size,
		  struct st *s)
{
	static const uint8_t ident[2] = { 0, 0 };
	static const uint8_t aux[3] = { 1, 2, 3 };
	struct rt_vllm_frame f[4];
	size_t n = 0;
	int ret;

	memset(s, 0, sizeof(*s));
	s->base = payload;
	s->len = len;
	s->size = size < len ? len : size;
	if (!(flags & 1)) {
		if (flags & 2)
			f[n++] = (struct rt_vllm_frame){ ident, 2, 2 };
		f[n++] = (struct rt_vllm_frame){ &type, 1, 1 };
	}
	f[n++] = (struct rt_vllm_frame){ payload, len, size };
	if (flags & 8)
		f[n++] = (struct rt_vllm_frame){ aux, 3, 3 };
	if (flags & 1)
		ret = rt_vllm_decode_output(f, n, &cb, s);
	else
		ret = rt_vllm_decode_input(f, n, flags & 2 ? RT_VLLM_ROUTING_ID : 0, &cb, s);
	CHECK(known(ret));
	CHECK(rt_vllm_result_name(ret) != NULL);
	if (ret < 0 && !(ret == -ENODATA && s->len < s->size))
		CHECK(s->calls == 0);
	if (ret == RT_VLLM_MSG_EMPTY || ret == RT_VLLM_MSG_START_DP_WAVE)
		CHECK(s->calls == 0);
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st whole, again, cut;
	uint8_t *payload, *part;
	unsigned flags;
	size_t n, k;
	uint8_t param;
	int ret;

	if (size < 2)
		return 0;
	flags = data[0];
	param = data[1];
	n = size - 2;
	payload = malloc(n ? n : 1);
	if (!payload)
		return 0;
	memcpy(payload, data + 2, n);

	ret = decode(flags, param, payload, n, n, &whole);
	CHECK(decode(flags, param, payload, n, n, &again) == ret);
	CHECK(again.calls == whole.calls && again.outputs == whole.outputs);

	{
		struct rt_mp_reader r;

		rt_mp_init(&r, payload, n);
		if (rt_mp_skip(&r, RT_MP_DEPTH_MAX) == 0)
			CHECK(r.pos <= n);
	}

	if (flags & 4) {
		k = (size_t)((uint64_t)n * param / 256);
		part = malloc(k ? k : 1);
		if (part) {
			memcpy(part, payload, k);
			ret = decode(flags, param, part, k, n, &cut);
			if (k < n && whole.outputs > 0 && cut.outputs > 0) {
				/* a prefix of what the whole message told, at the same offsets */
				CHECK(cut.outputs <= whole.outputs);
				for (int i = 0; i < cut.outputs && i < IDS_MAX; i++)
					CHECK(cut.ids[i] == whole.ids[i]);
			}
			(void)ret;
			free(part);
		}
	}
	free(payload);
	return 0;
}
