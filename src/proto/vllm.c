// SPDX-License-Identifier: BSD-2-Clause
/*
 * vLLM V1 engine-core messages (proto/vllm.h), field positions as at vLLM
 * commit 364631ab (docs/packs.md ("vLLM V1")).
 *
 * msgspec encodes the array_like structs as arrays in declaration order;
 * fields past the array's end take their defaults and elements past the
 * last known field are skipped, which is how msgspec itself decodes, so an
 * encoder that omits trailing defaults and a newer vLLM that appends
 * fields both decode. A field of the wrong type is an unknown shape
 * (-EPROTO), never reinterpreted.
 *
 * Each message is walked twice: once to check it whole (and to learn the
 * batch fields that follow the outputs), then again to call back, so that
 * a bad message reports nothing and the callbacks need no storage.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "proto/msgpack.h"
#include "proto/vllm.h"

/* EngineCoreRequest: fields 0..9 have no default in the struct */
#define ADD_REQUIRED 10
/* EngineCoreOutput: request_id and new_token_ids have no default */
#define OUTPUT_REQUIRED 2
/* UtilityOutput: call_id has no default */
#define UTILITY_REQUIRED 1

enum add_field {
	ADD_REQUEST_ID = 0,
	ADD_PROMPT_TOKEN_IDS = 1,
	ADD_MM_FEATURES = 2,
	ADD_SAMPLING_PARAMS = 3,
	ADD_EOS_TOKEN_ID = 5,
	ADD_ARRIVAL_TIME = 6,
	ADD_CACHE_SALT = 8,
	ADD_DATA_PARALLEL_RANK = 9,
	ADD_PROMPT_EMBEDS = 10,
	ADD_CLIENT_INDEX = 11,
	ADD_CURRENT_WAVE = 12,
	ADD_PRIORITY = 13,
	ADD_EXTERNAL_REQ_ID = 15,
};

enum out_field {
	OUT_REQUEST_ID = 0,
	OUT_NEW_TOKEN_IDS = 1,
	OUT_FINISH_REASON = 5,
	OUT_STOP_REASON = 6,
	OUT_EVENTS = 7,
	OUT_NUM_CACHED_TOKENS = 10,
	OUT_NUM_NANS = 12,
};

enum outs_field {
	OUTS_ENGINE_INDEX = 0,
	OUTS_OUTPUTS = 1,
	OUTS_SCHEDULER_STATS = 2,
	OUTS_TIMESTAMP = 3,
	OUTS_UTILITY_OUTPUT = 4,
	OUTS_FINISHED_REQUESTS = 5,
	OUTS_WAVE_COMPLETE = 6,
	OUTS_START_WAVE = 7,
};

/* skip one value found at nesting depth `at` (the top array's fields are at 1) */
static int skip_at(struct rt_mp_reader *r, unsigned at)
{
	return rt_mp_skip(r, RT_MP_DEPTH_MAX - at);
}

static int read_array(struct rt_mp_reader *r, uint32_t *n)
{
	struct rt_mp_value v;
	size_t pos = r->pos;
	int err = rt_mp_read(r, &v);

	if (err)
		return err;
	if (v.type != RT_MP_ARRAY) {
		r->pos = pos;
		return -EPROTO;
	}
	*n = v.n;
	return 0;
}

/* nil → ptr NULL */
static int read_str_nil(struct rt_mp_reader *r, struct rt_vllm_str *out, bool nil_ok)
{
	struct rt_mp_value v;
	size_t pos = r->pos;
	int err = rt_mp_read(r, &v);

	if (err)
		return err;
	if (v.type == RT_MP_NIL && nil_ok) {
		out->ptr = NULL;
		out->len = 0;
		return 0;
	}
	if (v.type != RT_MP_STR) {
		r->pos = pos;
		return -EPROTO;
	}
	out->ptr = (const char *)v.s.ptr;
	out->len = v.s.len;
	return 0;
}

/* nil → RT_VLLM_NONE */
static int read_int_nil(struct rt_mp_reader *r, int64_t *out)
{
	if (rt_mp_next_nil(r)) {
		*out = RT_VLLM_NONE;
		return 0;
	}
	return rt_mp_read_int(r, out);
}

/* nil or anything: present or not, then skipped */
static int skip_nil(struct rt_mp_reader *r, unsigned at, bool *present)
{
	if (rt_mp_next_nil(r)) {
		if (present)
			*present = false;
		return 0;
	}
	if (present)
		*present = true;
	return skip_at(r, at);
}

/* a list of n elements, skipped; nil → RT_VLLM_NONE */
static int count_list(struct rt_mp_reader *r, unsigned at, int64_t *n, bool nil_ok)
{
	uint32_t len;
	int err;

	if (nil_ok && rt_mp_next_nil(r)) {
		*n = RT_VLLM_NONE;
		return 0;
	}
	if ((err = read_array(r, &len)))
		return err;
	/* known from the header: a cut inside the list still reports it */
	*n = len;
	for (uint32_t i = 0; i < len; i++)
		if ((err = skip_at(r, at + 1)))
			return err;
	return 0;
}

static bool key_is(const struct rt_mp_value *k, const char *name)
{
	size_t n = strlen(name);

	return k->type == RT_MP_STR && k->s.len == n && memcmp(k->s.ptr, name, n) == 0;
}

/* SamplingParams: a map of the fields that differ from their defaults */
static int read_sampling(struct rt_mp_reader *r, unsigned at, struct rt_vllm_add *a)
{
	struct rt_mp_value m;
	int err;

	if (rt_mp_next_nil(r))
		return 0;
	if ((err = rt_mp_read(r, &m)))
		return err;
	if (m.type != RT_MP_MAP)
		return -EPROTO;
	a->has_sampling_params = true;
	for (uint32_t i = 0; i < m.n; i++) {
		struct rt_mp_value k;

		if ((err = rt_mp_read(r, &k)))
			return err;
		if (k.type != RT_MP_STR)
			return -EPROTO;
		if (key_is(&k, "max_tokens"))
			err = read_int_nil(r, &a->max_tokens);
		else if (key_is(&k, "n"))
			err = rt_mp_read_int(r, &a->n);
		else
			err = skip_at(r, at + 1);
		if (err)
			return err;
	}
	return 0;
}

static void add_defaults(struct rt_vllm_add *a)
{
	memset(a, 0, sizeof(*a));
	a->prompt_tokens = RT_VLLM_NONE;
	a->max_tokens = RT_VLLM_ABSENT;
	a->n = RT_VLLM_ABSENT;
	a->arrival_time = NAN;
	a->data_parallel_rank = RT_VLLM_NONE;
}

static int add_field(struct rt_mp_reader *r, uint32_t i, struct rt_vllm_add *a)
{
	int64_t scratch;

	switch (i) {
	case ADD_REQUEST_ID:
		return read_str_nil(r, &a->request_id, false);
	case ADD_PROMPT_TOKEN_IDS:
		return count_list(r, 1, &a->prompt_tokens, true);
	case ADD_MM_FEATURES:
		return skip_nil(r, 1, &a->has_mm_features);
	case ADD_SAMPLING_PARAMS:
		return read_sampling(r, 1, a);
	case ADD_EOS_TOKEN_ID:
	case ADD_CURRENT_WAVE:
		return read_int_nil(r, &scratch);
	case ADD_ARRIVAL_TIME:
		return rt_mp_read_float(r, &a->arrival_time);
	case ADD_CACHE_SALT: {
		struct rt_vllm_str salt;

		return read_str_nil(r, &salt, true);
	}
	case ADD_DATA_PARALLEL_RANK:
		return read_int_nil(r, &a->data_parallel_rank);
	case ADD_PROMPT_EMBEDS:
		return skip_nil(r, 1, &a->has_prompt_embeds);
	case ADD_CLIENT_INDEX:
		return rt_mp_read_int(r, &a->client_index);
	case ADD_PRIORITY:
		return rt_mp_read_int(r, &a->priority);
	case ADD_EXTERNAL_REQ_ID:
		return read_str_nil(r, &a->external_req_id, true);
	default: /* pooling_params, lora_request, trace_headers, newer fields */
		return skip_at(r, 1);
	}
}

/* The payload must be exactly one value: bytes after it are no vLLM message. */
static int check_end(const struct rt_mp_reader *r)
{
	return r->pos == r->size ? 0 : -EBADMSG;
}

static int decode_add(struct rt_mp_reader *r, bool cut, const struct rt_vllm_cb *cb, void *ctx)
{
	struct rt_vllm_add a;
	uint32_t n, i = 0;
	int err;

	add_defaults(&a);
	a.cut = cut;
	if ((err = read_array(r, &n)))
		return err;
	if (n < ADD_REQUIRED)
		return -EPROTO;
	for (i = 0; i < n; i++)
		if ((err = add_field(r, i, &a)))
			break;
	if (!err)
		err = check_end(r);
	a.n_fields = i;
	/* a cut capture reports the fields before the cut; others all or nothing */
	if (err && !(err == -ENODATA && cut && i > ADD_REQUEST_ID))
		return err;
	if (cb && cb->on_add)
		cb->on_add(ctx, &a);
	return err ? err : RT_VLLM_MSG_ADD;
}

/* ABORT: a list of request ids. */
static int decode_abort(struct rt_mp_reader *r, bool emit, const struct rt_vllm_cb *cb, void *ctx)
{
	uint32_t n;
	int err;

	if ((err = read_array(r, &n)))
		return err;
	for (uint32_t i = 0; i < n; i++) {
		struct rt_vllm_str id;

		if ((err = read_str_nil(r, &id, false)))
			return err;
		if (emit && cb && cb->on_abort)
			cb->on_abort(ctx, id);
	}
	err = check_end(r);
	return err ? err : RT_VLLM_MSG_ABORT;
}

/* UTILITY: [client_index, call_id, method_name, args] */
static int decode_utility(struct rt_mp_reader *r, bool emit, const struct rt_vllm_cb *cb, void *ctx)
{
	struct rt_vllm_str method;
	uint64_t call_id;
	int64_t client;
	uint32_t n;
	int err;

	if ((err = read_array(r, &n)))
		return err;
	if (n < 3)
		return -EPROTO;
	if ((err = rt_mp_read_int(r, &client)) || (err = rt_mp_read_uint(r, &call_id)) ||
	    (err = read_str_nil(r, &method, false)))
		return err;
	for (uint32_t i = 3; i < n; i++)
		if ((err = skip_at(r, 1)))
			return err;
	if ((err = check_end(r)))
		return err;
	if (emit && cb && cb->on_utility)
		cb->on_utility(ctx, call_id, method);
	return RT_VLLM_MSG_UTILITY;
}

/* START_DP_WAVE: [new_wave, exclude_engine_index]; only checked */
static int decode_dp_wave(struct rt_mp_reader *r)
{
	uint32_t n;
	int err;

	if ((err = read_array(r, &n)))
		return err;
	for (uint32_t i = 0; i < n; i++)
		if ((err = skip_at(r, 1)))
			return err;
	err = check_end(r);
	return err ? err : RT_VLLM_MSG_START_DP_WAVE;
}

static bool cut_frame(const struct rt_vllm_frame *f)
{
	return f->size > f->len;
}

static void reader_of(struct rt_mp_reader *r, const struct rt_vllm_frame *f)
{
	rt_mp_init_cut(r, f->data, f->len, f->size);
}

int rt_vllm_decode_input(const struct rt_vllm_frame *frames, size_t n_frames, unsigned flags,
			 const struct rt_vllm_cb *cb, void *ctx)
{
	const struct rt_vllm_frame *type, *payload;
	struct rt_mp_reader r;
	bool cut;
	int err;

	if ((!frames && n_frames) || (flags & ~RT_VLLM_ROUTING_ID))
		return -EINVAL;
	if (flags & RT_VLLM_ROUTING_ID) {
		if (n_frames == 0)
			return -ENOMSG;
		frames++;
		n_frames--;
	}
	if (n_frames == 0)
		return -ENOMSG;
	type = &frames[0];
	if (n_frames == 1 && type->len == 0 && !cut_frame(type))
		return RT_VLLM_MSG_EMPTY;
	if (type->len != 1 || cut_frame(type) || n_frames < 2)
		return -ENOMSG;
	payload = &frames[1];
	if (payload->len && !payload->data)
		return -EINVAL;
	cut = cut_frame(payload);
	reader_of(&r, payload);
	switch (type->data[0]) {
	case RT_VLLM_REQ_ADD:
		return decode_add(&r, cut, cb, ctx);
	case RT_VLLM_REQ_ABORT:
		if ((err = decode_abort(&r, false, NULL, NULL)) < 0)
			return err;
		reader_of(&r, payload);
		return decode_abort(&r, true, cb, ctx);
	case RT_VLLM_REQ_UTILITY:
		return decode_utility(&r, true, cb, ctx);
	case RT_VLLM_REQ_START_DP_WAVE:
		return decode_dp_wave(&r);
	default:
		return -ENOMSG;
	}
}

/* ---- EngineCoreOutputs ---- */

static int read_event(struct rt_mp_reader *r, struct rt_vllm_event *ev)
{
	struct rt_mp_value m;
	bool have_type = false, have_ts = false;
	int err;

	if ((err = rt_mp_read(r, &m)))
		return err;
	if (m.type != RT_MP_MAP)
		return -EPROTO;
	for (uint32_t i = 0; i < m.n; i++) {
		struct rt_mp_value k;
		uint64_t type;

		if ((err = rt_mp_read(r, &k)))
			return err;
		if (key_is(&k, "type")) {
			if ((err = rt_mp_read_uint(r, &type)))
				return err;
			if (type > UINT8_MAX)
				return -EPROTO;
			ev->type = (uint8_t)type;
			have_type = true;
		} else if (key_is(&k, "timestamp")) {
			if ((err = rt_mp_read_float(r, &ev->timestamp)))
				return err;
			have_ts = true;
		} else if (k.type != RT_MP_STR) {
			return -EPROTO;
		} else if ((err = skip_at(r, 5))) {
			return err;
		}
	}
	return have_type && have_ts ? 0 : -EPROTO;
}

static int read_events(struct rt_mp_reader *r, struct rt_vllm_output *o)
{
	uint32_t n;
	int err;

	if (rt_mp_next_nil(r))
		return 0;
	if ((err = read_array(r, &n)))
		return err;
	o->events_present = true;
	o->n_events = n;
	for (uint32_t i = 0; i < n; i++) {
		struct rt_vllm_event ev;

		if ((err = read_event(r, &ev)))
			return err;
		if (i < RT_VLLM_EVENTS_MAX)
			o->events[i] = ev;
	}
	return 0;
}

static int read_stop_reason(struct rt_mp_reader *r, struct rt_vllm_output *o)
{
	struct rt_mp_value v;
	size_t pos = r->pos;
	int err;

	if ((err = rt_mp_read(r, &v)))
		return err;
	switch (v.type) {
	case RT_MP_NIL:
		return 0;
	case RT_MP_UINT:
		if (v.u > INT64_MAX)
			break;
		o->stop_token = (int64_t)v.u;
		return 0;
	case RT_MP_INT:
		o->stop_token = v.i;
		return 0;
	case RT_MP_STR:
		o->stop_str.ptr = (const char *)v.s.ptr;
		o->stop_str.len = v.s.len;
		return 0;
	default:
		break;
	}
	r->pos = pos;
	return -EPROTO;
}

static int output_field(struct rt_mp_reader *r, uint32_t i, struct rt_vllm_output *o)
{
	int64_t v;
	int err;

	switch (i) {
	case OUT_REQUEST_ID:
		return read_str_nil(r, &o->request_id, false);
	case OUT_NEW_TOKEN_IDS:
		if ((err = count_list(r, 3, &v, false)))
			return err;
		o->new_tokens = (uint32_t)v;
		return 0;
	case OUT_FINISH_REASON:
		if ((err = read_int_nil(r, &v)))
			return err;
		/* FinishReason is an IntEnum: msgspec refuses other values */
		if (v != RT_VLLM_NONE && (v < RT_VLLM_FINISH_STOP || v > RT_VLLM_FINISH_ERROR))
			return -EPROTO;
		o->finish_reason = (int8_t)v;
		o->finished = v != RT_VLLM_NONE;
		return 0;
	case OUT_STOP_REASON:
		return read_stop_reason(r, o);
	case OUT_EVENTS:
		return read_events(r, o);
	case OUT_NUM_CACHED_TOKENS:
		return rt_mp_read_int(r, &o->num_cached_tokens);
	case OUT_NUM_NANS:
		return rt_mp_read_int(r, &o->num_nans_in_logits);
	default: /* logprobs, pooling output, kv_transfer_params, trace headers, experts */
		return skip_at(r, 3);
	}
}

static int read_output(struct rt_mp_reader *r, struct rt_vllm_output *o)
{
	uint32_t n;
	int err;

	memset(o, 0, sizeof(*o));
	o->finish_reason = RT_VLLM_FINISH_NONE;
	o->stop_token = RT_VLLM_NONE;
	if ((err = read_array(r, &n)))
		return err;
	if (n < OUTPUT_REQUIRED)
		return -EPROTO;
	o->n_fields = n;
	for (uint32_t i = 0; i < n; i++)
		if ((err = output_field(r, i, o)))
			return err;
	return 0;
}

static int read_utility(struct rt_mp_reader *r, struct rt_vllm_outputs *h)
{
	uint32_t n;
	bool failed = false;
	int err;

	if (rt_mp_next_nil(r))
		return 0;
	if ((err = read_array(r, &n)))
		return err;
	if (n < UTILITY_REQUIRED)
		return -EPROTO;
	if ((err = rt_mp_read_uint(r, &h->utility_call_id)))
		return err;
	if (n > 1) {
		struct rt_vllm_str msg;

		if ((err = read_str_nil(r, &msg, true)))
			return err;
		failed = msg.ptr != NULL;
	}
	for (uint32_t i = 2; i < n; i++)
		if ((err = skip_at(r, 2)))
			return err;
	h->has_utility = true;
	h->utility_failed = failed;
	return 0;
}

/* where pass one found what pass two walks again */
struct outs_walk {
	struct rt_vllm_outputs h;
	size_t outputs_pos; /* first output */
	uint32_t outputs_whole; /* outputs read wholly */
	size_t finished_pos; /* first finished id; 0 when none */
	uint32_t finished_whole;
};

static int outs_field(struct rt_mp_reader *r, uint32_t i, struct outs_walk *w)
{
	struct rt_vllm_outputs *h = &w->h;
	int64_t scratch;
	uint32_t n;
	int err;

	switch (i) {
	case OUTS_ENGINE_INDEX:
		return rt_mp_read_int(r, &h->engine_index);
	case OUTS_OUTPUTS:
		if ((err = read_array(r, &n)))
			return err;
		h->n_outputs = n;
		w->outputs_pos = r->pos;
		for (uint32_t k = 0; k < n; k++) {
			struct rt_vllm_output o;

			if ((err = read_output(r, &o)))
				return err;
			w->outputs_whole++;
		}
		return 0;
	case OUTS_SCHEDULER_STATS:
		return skip_nil(r, 1, &h->has_scheduler_stats);
	case OUTS_TIMESTAMP:
		return rt_mp_read_float(r, &h->timestamp);
	case OUTS_UTILITY_OUTPUT:
		return read_utility(r, h);
	case OUTS_FINISHED_REQUESTS:
		if (rt_mp_next_nil(r))
			return 0;
		if ((err = read_array(r, &n)))
			return err;
		h->n_finished = n;
		w->finished_pos = r->pos;
		for (uint32_t k = 0; k < n; k++) {
			struct rt_vllm_str id;

			if ((err = read_str_nil(r, &id, false)))
				return err;
			w->finished_whole++;
		}
		return 0;
	case OUTS_WAVE_COMPLETE:
	case OUTS_START_WAVE:
		return read_int_nil(r, &scratch);
	default:
		return skip_at(r, 1);
	}
}

static void outs_emit(const struct rt_vllm_frame *f, const struct outs_walk *w,
		      const struct rt_vllm_cb *cb, void *ctx)
{
	struct rt_mp_reader r;

	if (cb->on_outputs)
		cb->on_outputs(ctx, &w->h);
	reader_of(&r, f);
	r.pos = w->outputs_pos;
	for (uint32_t k = 0; cb->on_output && k < w->outputs_whole; k++) {
		struct rt_vllm_output o;

		if (read_output(&r, &o)) /* read wholly in pass one */
			return;
		cb->on_output(ctx, &w->h, &o);
	}
	r.pos = w->finished_pos;
	for (uint32_t k = 0; cb->on_finished && k < w->finished_whole; k++) {
		struct rt_vllm_str id;

		if (read_str_nil(&r, &id, false))
			return;
		cb->on_finished(ctx, id);
	}
}

int rt_vllm_decode_output(const struct rt_vllm_frame *frames, size_t n_frames,
			  const struct rt_vllm_cb *cb, void *ctx)
{
	static const char dead[] = RT_VLLM_DEAD_SENTINEL;
	const struct rt_vllm_frame *f;
	struct rt_mp_reader r;
	struct outs_walk w;
	uint32_t n, i;
	int err;

	if (!frames && n_frames)
		return -EINVAL;
	if (n_frames == 0)
		return -ENOMSG;
	f = &frames[0];
	if (f->len && !f->data)
		return -EINVAL;
	/* before msgpack: its first byte 'E' would read as the fixint 69 */
	if (n_frames == 1 && f->len == sizeof(dead) - 1 && !cut_frame(f) &&
	    memcmp(f->data, dead, f->len) == 0) {
		if (cb && cb->on_dead)
			cb->on_dead(ctx);
		return RT_VLLM_MSG_DEAD;
	}
	memset(&w, 0, sizeof(w));
	w.h.timestamp = NAN;
	w.h.cut = cut_frame(f);
	reader_of(&r, f);
	if ((err = read_array(&r, &n)))
		return err;
	w.h.n_fields = n;
	for (i = 0; i < n; i++)
		if ((err = outs_field(&r, i, &w)))
			break;
	if (!err)
		err = check_end(&r);
	/* a cut capture reports what lies wholly before the cut; others all or nothing */
	if (err && !(err == -ENODATA && w.h.cut))
		return err;
	if (err)
		w.h.n_fields = i;
	if (cb)
		outs_emit(f, &w, cb, ctx);
	return err ? err : RT_VLLM_MSG_OUTPUTS;
}

const char *rt_vllm_result_name(int ret)
{
	switch (ret) {
	case RT_VLLM_MSG_ADD:
		return "add";
	case RT_VLLM_MSG_ABORT:
		return "abort";
	case RT_VLLM_MSG_START_DP_WAVE:
		return "start_dp_wave";
	case RT_VLLM_MSG_UTILITY:
		return "utility";
	case RT_VLLM_MSG_OUTPUTS:
		return "outputs";
	case RT_VLLM_MSG_DEAD:
		return "dead";
	case RT_VLLM_MSG_EMPTY:
		return "empty";
	case -ENODATA:
		return "truncated";
	case -EBADMSG:
		return "not_msgpack";
	case -ELOOP:
		return "too_deep";
	case -ENOMSG:
		return "unknown_type";
	case -EPROTO:
		return "unknown_shape";
	case -EINVAL:
		return "invalid";
	default:
		return "other";
	}
}
