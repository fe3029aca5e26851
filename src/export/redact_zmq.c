// SPDX-License-Identifier: BSD-2-Clause
/*
 * ZeroMQ frames in a redacted recording (redact_int.h; docs/privacy.md,
 * "ZeroMQ frames"). A vLLM V1 server's messages name their requests and
 * carry the times and counts replay needs, next to prompt token ids,
 * generated token ids and sampling strings it must not keep. The frame's
 * role (the message's type byte, its payload, an aux frame) comes from its
 * place in the message, as the correlator's decoder tells them apart
 * (src/correlate/vllm.c); the payload is walked with the msgpack reader
 * along the field positions of src/proto/vllm.c, and every byte is written
 * as kept, masked in place (same msgpack type and width: an integer becomes
 * 0, a float 0.0, a string's text 'x', bin and ext bytes 0), or left
 * masked: whatever the walk does not reach (everything after a value of an
 * unexpected type, of which only the header is kept so that the decoder
 * refuses it alike, or after a byte that is no msgpack) stays 'x'. The
 * default is to keep nothing.
 *
 * A frame comes in chunks of up to 4 KiB: its captured bytes so far are
 * held (at most RT_ZMQ_CAP_MAX per stream) and walked again from the start
 * with each chunk, so that a value split across chunks is masked as one,
 * and only the chunk's own bytes are written. Streams follow zmq_asm.c's
 * rules: a chunk out of place or a LOSS makes the stream lose its place,
 * and everything is masked until a frame without MORE ends a message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "export/redact.h"
#include "proto/msgpack.h"
#include "proto/vllm.h"
#include "redact_int.h"

/* ---- one frame's bytes ------------------------------------------------------ */

#define T(t) (1u << (t))
#define ANY 0xffffu
#define INTS (T(RT_MP_UINT) | T(RT_MP_INT))
#define NUMS (INTS | T(RT_MP_FLOAT))

enum how { KEEP, MASK };

struct walk {
	struct rt_mp_reader r;
	uint8_t *out;
	unsigned depth;
};

/* The type a byte starts; -1 for 0xc1, which is no msgpack. */
static int type_of(uint8_t b)
{
	if (b <= 0x7f || (b >= 0xcc && b <= 0xcf))
		return RT_MP_UINT;
	if (b >= 0xe0 || (b >= 0xd0 && b <= 0xd3))
		return RT_MP_INT;
	if (b <= 0x8f || b == 0xde || b == 0xdf)
		return RT_MP_MAP;
	if (b <= 0x9f || b == 0xdc || b == 0xdd)
		return RT_MP_ARRAY;
	if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb))
		return RT_MP_STR;
	switch (b) {
	case 0xc0:
		return RT_MP_NIL;
	case 0xc2:
	case 0xc3:
		return RT_MP_BOOL;
	case 0xc4:
	case 0xc5:
	case 0xc6:
		return RT_MP_BIN;
	case 0xca:
	case 0xcb:
		return RT_MP_FLOAT;
	case 0xc1:
		return -1;
	default: /* c7-c9, d4-d8 */
		return RT_MP_EXT;
	}
}

/* Bytes of a value's header that masking keeps: the type byte, a length or count, an ext type. */
static size_t hdr_len(uint8_t b)
{
	switch (b) {
	case 0xc4:
	case 0xd9:
	case 0xd4:
	case 0xd5:
	case 0xd6:
	case 0xd7:
	case 0xd8:
		return 2;
	case 0xc5:
	case 0xda:
	case 0xc7:
	case 0xdc:
	case 0xde:
		return 3;
	case 0xc8:
		return 4;
	case 0xc6:
	case 0xdb:
	case 0xdd:
	case 0xdf:
		return 5;
	case 0xc9:
		return 6;
	default:
		return 1;
	}
}

/* Writes the value read at in[at..end): as it is, or masked in place. */
static void emit(struct walk *w, size_t at, size_t end, int t, enum how how)
{
	const uint8_t *in = w->r.buf;
	size_t h = hdr_len(in[at]);

	if (t == RT_MP_ARRAY || t == RT_MP_MAP) /* the elements are values of their own */
		end = at + h < end ? at + h : end;
	if (h > end - at)
		h = end - at;
	if (how == KEEP || t == RT_MP_NIL || t == RT_MP_BOOL || t == RT_MP_ARRAY ||
	    t == RT_MP_MAP) {
		memcpy(w->out + at, in + at, end - at);
		return;
	}
	if ((t == RT_MP_UINT || t == RT_MP_INT) && (in[at] <= 0x7f || in[at] >= 0xe0)) {
		w->out[at] = 0; /* a fixint: the value is the type byte */
		return;
	}
	memcpy(w->out + at, in + at, h);
	memset(w->out + at + h, t == RT_MP_STR ? RT_REDACT_MASK : 0, end - at - h);
	/* a uint64 past INT64_MAX stays past it: the decoder refuses those where it wants an int */
	if (in[at] == 0xcf && end - at > 1 && in[at + 1] & 0x80)
		w->out[at + 1] = 0x80;
}

/*
 * A value of a type the walk did not expect, or no msgpack: its header
 * (type, length) is kept, so that the decoder refuses the redacted bytes as
 * it refuses the original; what follows stays masked.
 */
static int refuse(struct walk *w, size_t at, int t, int err)
{
	const uint8_t *in = w->r.buf;
	size_t end = at + hdr_len(in[at]);

	if (t < 0)
		w->out[at] = in[at];
	else
		emit(w, at, end < w->r.len ? end : w->r.len, t, MASK);
	return err;
}

/*
 * One value of a type in allow, written as how says. A value the bytes end
 * inside (a chunk still to come, or a cut capture) is written as far as it
 * goes and the walk ends there (-ENODATA).
 */
static int value(struct walk *w, unsigned allow, enum how how, struct rt_mp_value *v)
{
	size_t at = w->r.pos;
	int t, err;

	if (at >= w->r.len)
		return -ENODATA;
	t = type_of(w->r.buf[at]);
	if (t < 0)
		return refuse(w, at, t, -EBADMSG);
	if (!(allow & T(t)))
		return refuse(w, at, t, -EPROTO);
	err = rt_mp_read(&w->r, v);
	if (err == -ENODATA) {
		emit(w, at, w->r.len, t, how);
		w->r.pos = w->r.len;
		return err;
	}
	if (err)
		return err;
	emit(w, at, w->r.pos, t, how);
	return 0;
}

static int keep(struct walk *w, unsigned allow)
{
	struct rt_mp_value v;

	return value(w, allow, KEEP, &v);
}

static bool nil(struct walk *w)
{
	size_t at = w->r.pos;

	if (!rt_mp_next_nil(&w->r))
		return false;
	w->out[at] = 0xc0;
	return true;
}

/* Content: every value masked in place, at any depth; keys of maps too. */
static int deep(struct walk *w)
{
	struct rt_mp_value v;
	uint64_t n;
	int err;

	/* deeper than the decoder reads (rt_mp_skip()'s bound): it refuses those itself */
	if (w->depth >= RT_MP_DEPTH_MAX + 4)
		return -ELOOP;
	if ((err = value(w, ANY, MASK, &v)))
		return err;
	if (v.type != RT_MP_ARRAY && v.type != RT_MP_MAP)
		return 0;
	n = (uint64_t)v.n * (v.type == RT_MP_MAP ? 2 : 1);
	w->depth++;
	for (uint64_t i = 0; i < n && !err; i++)
		err = deep(w);
	w->depth--;
	return err;
}

static bool key_is(const struct rt_mp_value *k, const char *name)
{
	size_t n = strlen(name);

	return k->s.len == n && memcmp(k->s.ptr, name, n) == 0;
}

/* A map whose keys are field names (kept): the values of keys[] kept when of a type in allow. */
static int fields_map(struct walk *w, const char *const *keys, const unsigned *allow, size_t n_keys)
{
	struct rt_mp_value m, k;
	int err = 0;

	if ((err = value(w, T(RT_MP_MAP), KEEP, &m)))
		return err;
	w->depth++;
	for (uint32_t i = 0; i < m.n && !err; i++) {
		size_t j;

		if ((err = value(w, T(RT_MP_STR), KEEP, &k)))
			break;
		for (j = 0; j < n_keys && !key_is(&k, keys[j]); j++)
			;
		err = j < n_keys ? keep(w, allow[j]) : deep(w);
	}
	w->depth--;
	return err;
}

/* An array_like struct: field i through fn, fields past those it knows masked. */
static int fields(struct walk *w, int (*fn)(struct walk *w, uint32_t i))
{
	struct rt_mp_value a;
	int err;

	if ((err = value(w, T(RT_MP_ARRAY), KEEP, &a)))
		return err;
	w->depth++;
	for (uint32_t i = 0; i < a.n && !err; i++)
		err = fn(w, i);
	w->depth--;
	return err;
}

/* SamplingParams: a map of the fields not at their defaults; the decoder reads two. */
static int sampling(struct walk *w)
{
	static const char *const keys[] = { "max_tokens", "n" };
	static const unsigned allow[] = { INTS | T(RT_MP_NIL), INTS };

	return nil(w) ? 0 : fields_map(w, keys, allow, 2);
}

/* EngineCoreRequest, by proto/vllm.c's field numbers */
static int add_field(struct walk *w, uint32_t i)
{
	switch (i) {
	case 0: /* request_id */
		return keep(w, T(RT_MP_STR));
	case 3:
		return sampling(w);
	case 6: /* arrival_time */
		return keep(w, NUMS);
	case 9: /* data_parallel_rank */
	case 11: /* client_index */
	case 12: /* current_wave */
	case 13: /* priority */
		return keep(w, INTS | T(RT_MP_NIL));
	case 15: /* external_req_id */
		return keep(w, T(RT_MP_STR) | T(RT_MP_NIL));
	default:
		/* prompt_token_ids, mm_features, pooling_params, eos_token_id,
		 * lora_request, cache_salt, prompt_embeds, trace_headers, and
		 * fields newer than the decoder */
		return deep(w);
	}
}

/* ABORT: request ids */
static int abort_field(struct walk *w, uint32_t i)
{
	(void)i;
	return keep(w, T(RT_MP_STR));
}

/* UTILITY: [client_index, call_id, method_name, args] */
static int utility_field(struct walk *w, uint32_t i)
{
	return i < 2 ? keep(w, INTS) : i == 2 ? keep(w, T(RT_MP_STR)) : deep(w);
}

/* START_DP_WAVE: [new_wave, exclude_engine_index], read by nobody */
static int wave_field(struct walk *w, uint32_t i)
{
	(void)i;
	return deep(w);
}

static int event(struct walk *w)
{
	static const char *const keys[] = { "type", "timestamp" };
	static const unsigned allow[] = { INTS, NUMS };

	return fields_map(w, keys, allow, 2);
}

/* EngineCoreOutput */
static int output_field(struct walk *w, uint32_t i)
{
	struct rt_mp_value a;
	int err;

	switch (i) {
	case 0: /* request_id */
		return keep(w, T(RT_MP_STR));
	case 5: /* finish_reason */
		return keep(w, INTS | T(RT_MP_NIL));
	case 7: /* events: QUEUED/SCHEDULED/PREEMPTED and their times */
		if (nil(w))
			return 0;
		if ((err = value(w, T(RT_MP_ARRAY), KEEP, &a)))
			return err;
		w->depth++;
		for (uint32_t k = 0; k < a.n && !err; k++)
			err = event(w);
		w->depth--;
		return err;
	case 10: /* num_cached_tokens */
	case 12: /* num_nans_in_logits */
		return keep(w, INTS);
	default:
		/* new_token_ids, logprobs, pooling output, stop_reason (a token
		 * id or a stop string), kv_transfer_params, trace headers, experts */
		return deep(w);
	}
}

static int output(struct walk *w)
{
	return fields(w, output_field);
}

/* UtilityOutput: [call_id, failure_message, result] */
static int utility_out_field(struct walk *w, uint32_t i)
{
	return i == 0 ? keep(w, INTS) : deep(w);
}

/* EngineCoreOutputs */
static int outs_field(struct walk *w, uint32_t i)
{
	struct rt_mp_value a;
	int err;

	switch (i) {
	case 0: /* engine_index */
		return keep(w, INTS);
	case 1: /* outputs */
	case 5: /* finished_requests: request ids, or None */
		if (i == 5 && nil(w))
			return 0;
		if ((err = value(w, T(RT_MP_ARRAY), KEEP, &a)))
			return err;
		w->depth++;
		for (uint32_t k = 0; k < a.n && !err; k++)
			err = i == 1 ? output(w) : keep(w, T(RT_MP_STR));
		w->depth--;
		return err;
	case 3: /* timestamp */
		return keep(w, NUMS);
	case 4: /* utility_output */
		return nil(w) ? 0 : fields(w, utility_out_field);
	case 6: /* wave_complete */
	case 7: /* start_wave */
		return keep(w, INTS | T(RT_MP_NIL));
	default: /* scheduler_stats, newer fields */
		return deep(w);
	}
}

void rt_zmq_mask_frame(enum rt_zmq_role role, const uint8_t *in, size_t len, size_t size,
		       uint8_t *out)
{
	struct walk w = { .out = out };

	memset(out, RT_REDACT_MASK, len);
	rt_mp_init_cut(&w.r, in, len, size);
	switch (role) {
	case RT_ZMQ_ROLE_KEEP:
		memcpy(out, in, len);
		break;
	case RT_ZMQ_ROLE_TYPE:
		if (len == 1 && in[0] <= RT_VLLM_REQ_UTILITY)
			out[0] = in[0];
		break;
	case RT_ZMQ_ROLE_OUTPUTS:
		fields(&w, outs_field);
		break;
	case RT_ZMQ_ROLE_ADD:
		fields(&w, add_field);
		break;
	case RT_ZMQ_ROLE_ABORT:
		fields(&w, abort_field);
		break;
	case RT_ZMQ_ROLE_UTILITY:
		fields(&w, utility_field);
		break;
	case RT_ZMQ_ROLE_WAVE:
		fields(&w, wave_field);
		break;
	default: /* RT_ZMQ_ROLE_MASK */
		break;
	}
	/* bytes after the one value a payload is stay masked: the walk never reached them */
}

/* ---- streams ---------------------------------------------------------------- */

struct zstream {
	uint32_t pid;
	uint64_t socket;
	uint8_t dir;

	uint32_t frame_i; /* the frame's place in its message */
	int type; /* the message's request-type byte; -1: none (yet) */

	bool desync;
	bool end_seen; /* while desynchronised: a frame without MORE, by this call */
	uint32_t end_tid;
	uint64_t end_enter;

	bool in_frame;
	uint32_t f_tid;
	uint64_t f_enter;
	uint32_t f_size, f_want, f_got;
	uint8_t f_flags;
	enum rt_zmq_role role;
	uint8_t *buf; /* the frame's captured bytes so far (RT_ZMQ_CAP_MAX) */
};

struct rt_zmq_redact {
	struct rt_hmap streams;
	struct rt_zmq_redact_stats st;
	uint8_t scratch[RT_ZMQ_CAP_MAX];
};

static uint64_t stream_key(uint32_t pid, uint64_t socket, uint8_t dir)
{
	return rt_hash_u64(rt_hash_u64(socket) ^ ((uint64_t)pid << 8 | dir));
}

static void msg_end(struct zstream *s)
{
	s->frame_i = 0;
	s->type = -1;
}

static struct zstream *stream_get(struct rt_zmq_redact *zr, const struct rt_ev_zmq_msg *z)
{
	uint64_t key = stream_key(z->hdr.pid, z->socket, z->dir);
	struct zstream *s = rt_hmap_get(&zr->streams, key);

	if (s)
		/* another stream under the same key: masked */
		return s->pid == z->hdr.pid && s->socket == z->socket && s->dir == z->dir ? s :
											    NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = z->hdr.pid;
	s->socket = z->socket;
	s->dir = z->dir;
	msg_end(s);
	if (rt_hmap_put(&zr->streams, key, s)) {
		free(s);
		return NULL;
	}
	return s;
}

static void stream_free(struct zstream *s)
{
	if (!s)
		return;
	free(s->buf);
	free(s);
}

/* The stream lost its place: masked until a message boundary. */
static void lose(struct zstream *s)
{
	s->desync = true;
	s->end_seen = false;
	s->in_frame = false;
	msg_end(s);
}

/* As zmq_asm.c: only a frame without MORE tells where the next message starts. */
static bool still_desync(struct zstream *s, const struct rt_ev_zmq_msg *z)
{
	bool same_call = s->end_seen && z->hdr.tid == s->end_tid && z->enter_ns == s->end_enter;

	if (z->offset == 0 && s->end_seen && !same_call) {
		s->desync = s->end_seen = false;
		msg_end(s);
		return false;
	}
	if (!(z->flags & RT_ZMQ_MORE)) {
		s->end_seen = true;
		s->end_tid = z->hdr.tid;
		s->end_enter = z->enter_ns;
	}
	return true;
}

static enum rt_zmq_role role_of_type(int type)
{
	switch (type) {
	case RT_VLLM_REQ_ADD:
		return RT_ZMQ_ROLE_ADD;
	case RT_VLLM_REQ_ABORT:
		return RT_ZMQ_ROLE_ABORT;
	case RT_VLLM_REQ_START_DP_WAVE:
		return RT_ZMQ_ROLE_WAVE;
	case RT_VLLM_REQ_UTILITY:
		return RT_ZMQ_ROLE_UTILITY;
	default:
		return RT_ZMQ_ROLE_MASK;
	}
}

/*
 * The frame's role from its place, as rt_vllm_on_msg() tells inputs from
 * outputs: the API server sends [routing id, type, payload, aux…], the
 * engine receives [type, payload, aux…]; an EngineCoreOutputs is a
 * message's first frame. A routing id is walked as an EngineCoreOutputs
 * and, being none, masked.
 */
static enum rt_zmq_role role_for(const struct zstream *s, const struct rt_ev_zmq_msg *z)
{
	static const char dead[] = RT_VLLM_DEAD_SENTINEL;
	uint32_t first = z->dir == RT_ZMQ_SEND ? 1 : 0; /* where the type byte is */

	if (z->flags & (RT_ZMQ_FAULT | RT_ZMQ_LAYOUT))
		return RT_ZMQ_ROLE_MASK;
	if (s->frame_i == 0 && !(z->flags & RT_ZMQ_MORE) && z->frame_len == sizeof(dead) - 1 &&
	    z->len == z->frame_len && !memcmp(z->data, dead, z->len))
		return RT_ZMQ_ROLE_KEEP;
	if (s->frame_i == first && z->frame_len == 1)
		return RT_ZMQ_ROLE_TYPE;
	if (s->frame_i == 0)
		return RT_ZMQ_ROLE_OUTPUTS;
	if (s->frame_i == first + 1 && s->type >= 0)
		return role_of_type(s->type);
	return RT_ZMQ_ROLE_MASK; /* aux frames (tensor bytes), and anything unplaced */
}

static void frame_start(struct zstream *s, const struct rt_ev_zmq_msg *z)
{
	s->in_frame = true;
	s->f_tid = z->hdr.tid;
	s->f_enter = z->enter_ns;
	s->f_size = z->frame_len;
	s->f_flags = z->flags;
	s->f_want = z->flags & RT_ZMQ_LAYOUT	  ? 0 :
		    z->frame_len < RT_ZMQ_CAP_MAX ? z->frame_len :
						    RT_ZMQ_CAP_MAX;
	s->f_got = 0;
	s->role = role_for(s, z);
	if (s->role >= RT_ZMQ_ROLE_OUTPUTS && !s->buf && !(s->buf = malloc(RT_ZMQ_CAP_MAX)))
		s->role = RT_ZMQ_ROLE_MASK;
}

static void frame_done(struct zstream *s, const struct rt_ev_zmq_msg *z)
{
	s->in_frame = false;
	if (s->role == RT_ZMQ_ROLE_TYPE && z->len == 1 && z->data[0] <= RT_VLLM_REQ_UTILITY)
		s->type = z->data[0];
	s->frame_i++;
	if (!(s->f_flags & RT_ZMQ_MORE))
		msg_end(s);
}

/* Where the chunk belongs, or NULL: the stream is lost, and the chunk is masked. */
static struct zstream *place(struct rt_zmq_redact *zr, const struct rt_ev_zmq_msg *z)
{
	struct zstream *s = stream_get(zr, z);

	if (!s) {
		zr->st.no_slot++;
		return NULL;
	}
	if (s->desync && still_desync(s, z))
		return NULL;
	if (z->offset == 0) {
		if (s->in_frame) {
			/* the frame before never completed; if it ended its message, this one starts the next */
			bool boundary = !(s->f_flags & RT_ZMQ_MORE);

			lose(s);
			if (!boundary) {
				still_desync(s, z);
				return NULL;
			}
			s->desync = false;
		}
		frame_start(s, z);
	} else if (!s->in_frame || z->hdr.tid != s->f_tid || z->enter_ns != s->f_enter ||
		   z->offset != s->f_got) {
		/* a chunk missing, or another call's in the middle */
		lose(s);
		still_desync(s, z);
		return NULL;
	}
	if ((uint64_t)s->f_got + z->len > s->f_want) {
		lose(s);
		return NULL;
	}
	return s;
}

bool rt_zmq_redact_record(struct rt_zmq_redact *zr, struct rt_ev_zmq_msg *z)
{
	struct zstream *s = place(zr, z);
	bool walked = s && s->role != RT_ZMQ_ROLE_MASK;

	if (!walked) {
		memset(z->data, RT_REDACT_MASK, z->len);
		zr->st.masked++;
	} else if (s->role == RT_ZMQ_ROLE_TYPE) {
		rt_zmq_mask_frame(s->role, z->data, z->len, z->frame_len, zr->scratch);
		memcpy(z->data, zr->scratch, z->len);
		zr->st.walked++;
	} else if (s->role != RT_ZMQ_ROLE_KEEP) {
		/* the frame so far, walked again: a value split across chunks is masked as one */
		memcpy(s->buf + s->f_got, z->data, z->len);
		rt_zmq_mask_frame(s->role, s->buf, s->f_got + z->len, s->f_size, zr->scratch);
		memcpy(z->data, zr->scratch + s->f_got, z->len);
		zr->st.walked++;
	} else {
		zr->st.walked++;
	}
	if (s) {
		s->f_got += z->len;
		if (s->f_got == s->f_want)
			frame_done(s, z);
	}
	return walked;
}

void rt_zmq_redact_loss(struct rt_zmq_redact *zr, uint32_t pid)
{
	size_t pos = 0;
	void *val;

	while ((pos = rt_hmap_next(&zr->streams, pos, NULL, &val)) != 0) {
		struct zstream *s = val;

		if (!pid || s->pid == pid)
			lose(s);
	}
}

static bool of_pid(const void *val, void *ctx)
{
	return ((const struct zstream *)val)->pid == *(const uint32_t *)ctx;
}

static void stream_gone(void *val, void *ctx)
{
	(void)ctx;
	stream_free(val);
}

void rt_zmq_redact_drop_pid(struct rt_zmq_redact *zr, uint32_t pid)
{
	rt_hmap_del_if(&zr->streams, of_pid, stream_gone, &pid);
}

struct rt_zmq_redact *rt_zmq_redact_new(uint32_t max_streams)
{
	struct rt_zmq_redact *zr = calloc(1, sizeof(*zr));

	if (!zr)
		return NULL;
	if (rt_hmap_init(&zr->streams, max_streams ? max_streams : RT_REDACT_ZMQ_STREAMS)) {
		free(zr);
		return NULL;
	}
	return zr;
}

void rt_zmq_redact_free(struct rt_zmq_redact *zr)
{
	size_t pos = 0;
	void *val;

	if (!zr)
		return;
	while ((pos = rt_hmap_next(&zr->streams, pos, NULL, &val)) != 0)
		stream_free(val);
	rt_hmap_fini(&zr->streams);
	free(zr);
}

void rt_zmq_redact_stats(const struct rt_zmq_redact *zr, struct rt_zmq_redact_stats *st)
{
	*st = zr->st;
	st->streams = zr->streams.len;
}
