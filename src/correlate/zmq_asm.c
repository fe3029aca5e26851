// SPDX-License-Identifier: BSD-2-Clause
/*
 * ZeroMQ message assembly (zmq_asm.h). The merge keeps a source's records
 * in arrival order among equal timestamps, and the probe writes a frame's
 * chunks back to back, so a frame's chunks come in offset order, one call
 * (tid, enter_ns) at a time; anything else is a gap.
 */
#include "zmq_asm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"

struct stream {
	uint32_t pid;
	uint64_t socket;
	uint8_t dir;

	bool desync;
	/* while desynchronised: a frame without MORE was seen, by this call */
	bool end_seen;
	uint32_t end_tid;
	uint64_t end_enter;

	/* the frame being read */
	bool in_frame;
	uint32_t f_tid;
	uint64_t f_enter, f_ts;
	uint32_t f_size, f_want, f_got;
	uint8_t f_flags;
	size_t f_start; /* where its bytes begin in buf */

	struct rt_zmq_asm_msg msg; /* frames[].data unset until delivery */
	size_t frame_off[RT_ZMQ_ASM_FRAMES_MAX];
	uint8_t *buf;
	size_t used, cap;
};

struct rt_zmq_asm {
	struct rt_hmap streams;
	rt_zmq_asm_fn fn;
	void *ctx;
	struct rt_zmq_asm_stats st;
};

static uint64_t stream_key(uint32_t pid, uint64_t socket, uint8_t dir)
{
	return rt_hash_u64(rt_hash_u64(socket) ^ ((uint64_t)pid << 8 | dir));
}

static struct stream *stream_get(struct rt_zmq_asm *a, const struct rt_ev_zmq_msg *ev)
{
	uint64_t key = stream_key(ev->hdr.pid, ev->socket, ev->dir);
	struct stream *s = rt_hmap_get(&a->streams, key);

	if (s)
		/* another stream under the same key: rare, and not assembled */
		return s->pid == ev->hdr.pid && s->socket == ev->socket && s->dir == ev->dir ? s :
											       NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = ev->hdr.pid;
	s->socket = ev->socket;
	s->dir = ev->dir;
	if (rt_hmap_put(&a->streams, key, s)) {
		free(s);
		return NULL;
	}
	return s;
}

static void msg_reset(struct stream *s)
{
	memset(&s->msg, 0, sizeof(s->msg));
	s->used = 0;
}

/* The stream lost its place: what it held is discarded. */
static void desync(struct rt_zmq_asm *a, struct stream *s)
{
	a->st.frames_discarded += s->msg.n_frames + (s->in_frame ? 1 : 0);
	if (!s->desync)
		a->st.desyncs++;
	msg_reset(s);
	s->in_frame = false;
	s->desync = true;
	s->end_seen = false;
}

static int reserve(struct stream *s, size_t need)
{
	size_t cap = s->cap ? s->cap : 4096;
	uint8_t *p;

	/* a buffer even for an empty first frame: frames point into it */
	if (s->buf && need <= s->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	p = realloc(s->buf, cap);
	if (!p)
		return -ENOMEM;
	s->buf = p;
	s->cap = cap;
	return 0;
}

static void deliver(struct rt_zmq_asm *a, struct stream *s)
{
	uint32_t i;

	for (i = 0; i < s->msg.n_frames; i++)
		s->msg.frames[i].data = s->buf + s->frame_off[i];
	a->st.messages++;
	if (a->fn)
		a->fn(a->ctx, &s->msg);
	msg_reset(s);
}

static void frame_done(struct rt_zmq_asm *a, struct stream *s)
{
	struct rt_zmq_asm_msg *m = &s->msg;

	s->in_frame = false;
	a->st.frames++;
	if (m->n_frames == RT_ZMQ_ASM_FRAMES_MAX) {
		a->st.frames_truncated++;
		m->truncated = true;
		s->used = s->f_start;
	} else {
		struct rt_zmq_asm_frame *f = &m->frames[m->n_frames];

		if (!m->n_frames) {
			m->pid = s->pid;
			m->socket = s->socket;
			m->dir = s->dir;
			m->first_enter_ns = s->f_enter;
			m->first_ts_ns = s->f_ts;
		}
		s->frame_off[m->n_frames++] = s->f_start;
		f->len = s->f_got;
		f->size = s->f_size;
		f->flags = s->f_flags;
	}
	m->tid = s->f_tid;
	m->last_ts_ns = s->f_ts;
	if (s->f_got < s->f_size || s->f_flags & (RT_ZMQ_FAULT | RT_ZMQ_LAYOUT))
		m->cut = true;
	if (!(s->f_flags & RT_ZMQ_MORE))
		deliver(a, s);
}

/* While desynchronised: only a frame without MORE tells where a message ends. */
static bool still_desync(struct rt_zmq_asm *a, struct stream *s, const struct rt_ev_zmq_msg *ev)
{
	bool same_call = s->end_seen && ev->hdr.tid == s->end_tid && ev->enter_ns == s->end_enter;

	if (ev->offset == 0 && s->end_seen && !same_call) {
		s->desync = s->end_seen = false;
		return false;
	}
	if (ev->offset == 0 && !same_call)
		a->st.frames_discarded++;
	if (!(ev->flags & RT_ZMQ_MORE)) {
		s->end_seen = true;
		s->end_tid = ev->hdr.tid;
		s->end_enter = ev->enter_ns;
	}
	return true;
}

void rt_zmq_asm__record(struct rt_zmq_asm *a, const struct rt_ev_zmq_msg *ev)
{
	struct stream *s = stream_get(a, ev);

	if (!s) {
		a->st.streams_full++;
		return;
	}
	a->st.chunks++;
	if (s->desync && still_desync(a, s, ev))
		return;
	if (ev->offset == 0) {
		if (s->in_frame) {
			/* the previous frame never completed; if it ended its message, this one starts the next */
			bool boundary = !(s->f_flags & RT_ZMQ_MORE);

			desync(a, s);
			if (!boundary)
				return (void)still_desync(a, s, ev);
			s->desync = false;
		}
		s->in_frame = true;
		s->f_tid = ev->hdr.tid;
		s->f_enter = ev->enter_ns;
		s->f_ts = ev->hdr.ts_ns;
		s->f_size = ev->frame_len;
		s->f_flags = ev->flags;
		s->f_want = ev->flags & RT_ZMQ_LAYOUT	   ? 0 :
			    ev->frame_len < RT_ZMQ_CAP_MAX ? ev->frame_len :
							     RT_ZMQ_CAP_MAX;
		s->f_got = 0;
		s->f_start = s->used;
	} else if (!s->in_frame || ev->hdr.tid != s->f_tid || ev->enter_ns != s->f_enter ||
		   ev->offset != s->f_got) {
		/* a chunk missing, or another call's in the middle */
		desync(a, s);
		still_desync(a, s, ev);
		return;
	}
	if ((uint64_t)s->f_got + ev->len > s->f_want || reserve(s, s->used + ev->len)) {
		desync(a, s);
		return;
	}
	memcpy(s->buf + s->used, ev->data, ev->len);
	s->used += ev->len;
	s->f_got += ev->len;
	if (s->f_got == s->f_want)
		frame_done(a, s);
}

void rt_zmq_asm__loss(struct rt_zmq_asm *a, uint32_t pid)
{
	size_t pos = 0;
	uint64_t key;
	void *val;

	/* whole messages may be gone too: every stream of the process waits for a boundary */
	while ((pos = rt_hmap_next(&a->streams, pos, &key, &val)) != 0) {
		struct stream *s = val;

		if (!pid || s->pid == pid)
			desync(a, s);
	}
}

static void stream_free(struct stream *s)
{
	if (!s)
		return;
	free(s->buf);
	free(s);
}

struct drop_ctx {
	struct rt_zmq_asm *a;
	uint32_t pid;
};

static bool of_pid(const void *val, void *ctx)
{
	return ((const struct stream *)val)->pid == ((const struct drop_ctx *)ctx)->pid;
}

static void stream_gone(void *val, void *ctx)
{
	struct rt_zmq_asm *a = ((struct drop_ctx *)ctx)->a;
	struct stream *s = val;

	if (s->in_frame || s->msg.n_frames)
		a->st.frames_discarded += s->msg.n_frames + (s->in_frame ? 1 : 0);
	stream_free(s);
}

void rt_zmq_asm__drop_pid(struct rt_zmq_asm *a, uint32_t pid)
{
	struct drop_ctx d = { .a = a, .pid = pid };

	rt_hmap_del_if(&a->streams, of_pid, stream_gone, &d);
}

struct rt_zmq_asm *rt_zmq_asm__new(uint32_t max_streams, rt_zmq_asm_fn fn, void *ctx)
{
	struct rt_zmq_asm *a = calloc(1, sizeof(*a));
	int err;

	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	err = rt_hmap_init(&a->streams, max_streams ? max_streams : RT_ZMQ_ASM_STREAMS_DEFAULT);
	if (err) {
		free(a);
		errno = -err;
		return NULL;
	}
	a->fn = fn;
	a->ctx = ctx;
	return a;
}

void rt_zmq_asm__free(struct rt_zmq_asm *a)
{
	size_t pos = 0;
	uint64_t key;
	void *val;

	if (!a)
		return;
	while ((pos = rt_hmap_next(&a->streams, pos, &key, &val)) != 0)
		stream_free(val);
	rt_hmap_fini(&a->streams);
	free(a);
}

void rt_zmq_asm__stats(const struct rt_zmq_asm *a, struct rt_zmq_asm_stats *st)
{
	*st = a->st;
}
