// SPDX-License-Identifier: BSD-2-Clause
/*
 * Recording redactor (redact.h): connections, directions, and the bytes of
 * one syscall fed through the same stream driver as the correlator's
 * (src/proto/stream.h), so that the engine's tap classifies the bytes
 * replay will parse, in the state replay will parse them in.
 *
 * Every byte of a payload starts out masked; the tap then copies back what
 * the engine reports as framing, and the body masker (redact_body.c) writes
 * bodies. A byte the engine never reports (an unparseable stream, a tail
 * the driver did not feed) stays masked: the default is to keep nothing.
 */
#include "export/redact.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/event_check.h"
#include "common/hmap.h"
#include "proto/stream.h"
#include "redact_int.h"

#define PAYLOAD_MAX (RT_SOCK_HEAD_MAX + RT_SOCK_TAIL_MAX)

struct conn {
	uint64_t first_ns; /* the first record's time */
	uint32_t pid;
	bool outbound; /* we connected: requests go out, responses come in */
	struct rt_stream stream; /* unreadable (not HTTP/1.x): masked whole */
	struct rt_body_mask req_body, resp_body;
};

struct rt_redactor {
	struct rt_hmap conns;
	struct rt_zmq_redact *zmq; /* ZeroMQ streams (redact_zmq.c) */
	struct rt_redactor_stats st;
	/* the payload being redacted: its bytes, and their redacted form */
	struct rt_body_mask *body;
	const uint8_t *payload;
	size_t payload_len;
	uint8_t out[PAYLOAD_MAX];
	/* rt_redactor__redact()'s copy */
	union {
		struct rt_event_hdr hdr;
		uint64_t align;
		uint8_t bytes[RT_EVENT_MAX];
	} copy;
};

static uint64_t conn_key(uint32_t pid, int32_t fd)
{
	return ((uint64_t)pid << 32) | (uint32_t)fd;
}

static void conn_free(struct conn *c)
{
	if (!c)
		return;
	rt_stream_fini(&c->stream);
	free(c);
}

static void conn_drop(struct rt_redactor *r, uint64_t key)
{
	conn_free(rt_hmap_del(&r->conns, key));
}

static void on_tap(void *ctx, const uint8_t *p, size_t n, unsigned int cls);

static struct conn *conn_new(struct rt_redactor *r, uint32_t pid, int32_t fd, uint64_t ts,
			     bool predates)
{
	struct rt_stream_opts so = { .predates = predates, .tap = on_tap, .tap_ctx = r };
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	rt_stream_init(&c->stream, &so);
	c->pid = pid;
	c->first_ns = ts;
	if (rt_hmap_put(&r->conns, conn_key(pid, fd), c)) {
		free(c);
		return NULL;
	}
	return c;
}

/* ---- tap and parser callbacks --------------------------------------------- */

static void on_tap(void *ctx, const uint8_t *p, size_t n, unsigned int cls)
{
	struct rt_redactor *r = ctx;
	size_t off;

	if (cls == RT_HTTP_TAP_BODY_START) {
		rt_body_mask_start(r->body);
		return;
	}
	/* the engine only reports bytes of the payload; anything else stays masked */
	if (p < r->payload || n > r->payload_len || (size_t)(p - r->payload) > r->payload_len - n)
		return;
	off = (size_t)(p - r->payload);
	if (cls == RT_HTTP_TAP_KEEP)
		memcpy(r->out + off, p, n);
	else if (cls != RT_HTTP_TAP_MASK)
		rt_body_mask_run(r->body, cls, p, r->out + off, n);
}

static void on_gap(void *ctx, uint64_t n)
{
	struct rt_redactor *r = ctx;

	(void)n;
	rt_body_mask_gap(r->body);
}

/* The tap does the work: no parser callback is needed. */
static const struct rt_stream_ops stream_ops = {
	.gap = on_gap,
};

/* ---- one syscall's bytes ------------------------------------------------- */

/* Rewrites the payload: masked, then framing and bodies written back by the tap. */
static void redact_io(struct rt_redactor *r, struct conn *c, struct rt_ev_sock_io *io, bool resp)
{
	size_t len = (size_t)io->head_len + io->tail_len;

	r->body = resp ? &c->resp_body : &c->req_body;
	r->payload = io->data;
	r->payload_len = len;
	rt_mask_bytes(io->data, r->out, len);
	rt_stream_feed(&c->stream, resp ? RT_STREAM_RESP : RT_STREAM_REQ, io, &stream_ops, r);
	memcpy(io->data, r->out, len);
	r->payload = NULL;
	r->payload_len = 0;
}

static struct conn *conn_for_io(struct rt_redactor *r, const struct rt_ev_sock_io *io)
{
	struct conn *c = rt_hmap_get(&r->conns, conn_key(io->hdr.pid, io->fd));

	if (c)
		return c;
	/* opened before the recording: the same guess as the correlator's */
	c = conn_new(r, io->hdr.pid, io->fd, io->hdr.ts_ns, true);
	if (!c)
		return NULL;
	c->outbound = rt_stream_guess_outbound(&io->local, &io->peer);
	return c;
}

static void on_io(struct rt_redactor *r, struct rt_ev_sock_io *io)
{
	size_t len = (size_t)io->head_len + io->tail_len;
	bool recv = io->hdr.kind == RT_EV_SOCK_RECV;
	struct conn *c;

	r->st.records++;
	r->st.bytes += len;
	/* the probe's record may be larger than its payload: nothing stale may ride along */
	memset(io->data + len, 0, io->hdr.size - sizeof(*io) - len);
	c = conn_for_io(r, io);
	if (!c) {
		r->st.no_slot++;
		rt_mask_bytes(io->data, io->data, len);
		return;
	}
	if (io->ret < 0 && rt_stream_abort_errno(io->ret))
		rt_stream_abort(&c->stream);
	if (rt_stream_unreadable(&c->stream)) {
		r->st.unreadable++;
		rt_mask_bytes(io->data, io->data, len);
		return;
	}
	if (io->ret < 0 || (io->ret == 0 && recv)) {
		rt_mask_bytes(io->data, io->data, len);
		return;
	}
	redact_io(r, c, io, recv == c->outbound);
}

static void on_conn(struct rt_redactor *r, const struct rt_ev_sock_conn *ev)
{
	bool outbound = ev->hdr.kind == RT_EV_SOCK_CONNECT;
	struct conn *c;

	if (ev->ret < 0 && !(outbound && ev->ret == -EINPROGRESS))
		return;
	c = rt_hmap_get(&r->conns, conn_key(ev->hdr.pid, ev->fd));
	/* I/O seen first but done after this accept (records out of order): the same connection */
	if (c && c->first_ns > ev->hdr.ts_ns && c->outbound == outbound)
		return;
	/* a missed close: the fd was reused */
	conn_drop(r, conn_key(ev->hdr.pid, ev->fd));
	c = conn_new(r, ev->hdr.pid, ev->fd, ev->hdr.ts_ns, false);
	if (c)
		c->outbound = outbound;
}

static void drop_pid(struct rt_redactor *r, uint32_t pid)
{
	uint64_t keys[256], key;
	size_t pos;
	void *val;
	uint32_t n, i;

	/* collect, then delete: the map must not change while we walk it */
	do {
		n = 0;
		pos = 0;
		while (n < 256 && (pos = rt_hmap_next(&r->conns, pos, &key, &val)) != 0)
			if (((struct conn *)val)->pid == pid)
				keys[n++] = key;
		for (i = 0; i < n; i++)
			conn_drop(r, keys[i]);
	} while (n == 256);
}

static void wipe_payload(struct rt_event_hdr *ev)
{
	if (ev->size > sizeof(struct rt_ev_sock_io))
		memset((uint8_t *)ev + sizeof(struct rt_ev_sock_io), 0,
		       ev->size - sizeof(struct rt_ev_sock_io));
}

/* Records that change the connection table only. */
static void observe(struct rt_redactor *r, const struct rt_event_hdr *ev)
{
	switch (ev->kind) {
	case RT_EV_SOCK_ACCEPT:
	case RT_EV_SOCK_CONNECT:
		on_conn(r, (const struct rt_ev_sock_conn *)ev);
		break;
	case RT_EV_SOCK_CLOSE:
		conn_drop(r, conn_key(ev->pid, ((const struct rt_ev_sock_close *)ev)->fd));
		break;
	case RT_EV_PROC_EXIT:
		if (((const struct rt_ev_proc_exit *)ev)->group_dead) {
			drop_pid(r, ev->pid);
			rt_zmq_redact_drop_pid(r->zmq, ev->pid);
		}
		break;
	case RT_EV_TARGET:
		if (((const struct rt_ev_target *)ev)->leave) {
			drop_pid(r, ev->pid);
			rt_zmq_redact_drop_pid(r->zmq, ev->pid);
		}
		break;
	case RT_EV_LOSS: {
		uint32_t kind = ((const struct rt_ev_loss *)ev)->lost_kind;

		/* as the correlator: ZeroMQ frames may be among what was lost */
		if (!kind || kind == RT_EV_ZMQ_MSG)
			rt_zmq_redact_loss(r->zmq, ev->pid);
		break;
	}
	default:
		break;
	}
}

static bool is_io(const struct rt_event_hdr *ev)
{
	return ev->kind == RT_EV_SOCK_RECV || ev->kind == RT_EV_SOCK_SEND;
}

/*
 * Kinds that open or end connections or streams (the rest, most records,
 * pass unread: SOCK_ARRIVAL among them, times and an fd, no payload).
 */
static bool is_observed(const struct rt_event_hdr *ev)
{
	return ev->kind == RT_EV_SOCK_ACCEPT || ev->kind == RT_EV_SOCK_CONNECT ||
	       ev->kind == RT_EV_SOCK_CLOSE || ev->kind == RT_EV_PROC_EXIT ||
	       ev->kind == RT_EV_TARGET || ev->kind == RT_EV_LOSS;
}

/*
 * A ZeroMQ frame (an engine's own messages: prompt and output token ids
 * next to the ids and times replay needs): redacted by its vLLM message
 * structure (redact_zmq.c), length kept. A malformed one is wiped past its
 * fixed part.
 */
static int mask_zmq(struct rt_redactor *r, struct rt_event_hdr *ev)
{
	struct rt_ev_zmq_msg *z = (struct rt_ev_zmq_msg *)ev;

	if (rt_event_check(ev, ev->size, NULL)) {
		r->st.invalid++;
		if (ev->size > sizeof(*z))
			memset(z->data, 0, ev->size - sizeof(*z));
		return -EINVAL;
	}
	/* the record may be larger than its bytes: nothing stale may ride along */
	memset(z->data + z->len, 0, ev->size - sizeof(*z) - z->len);
	if (rt_zmq_redact_record(r->zmq, z))
		r->st.zmq_walked++;
	else
		r->st.zmq_masked++;
	r->st.records++;
	r->st.bytes += z->len;
	return 0;
}

int rt_redactor__apply(struct rt_redactor *r, struct rt_event_hdr *ev)
{
	if (ev->kind == RT_EV_ZMQ_MSG)
		return mask_zmq(r, ev);
	if (!is_io(ev) && !is_observed(ev))
		return 0;
	if (rt_event_check(ev, ev->size, NULL)) {
		if (is_io(ev)) {
			r->st.invalid++;
			wipe_payload(ev);
		}
		return -EINVAL;
	}
	if (is_io(ev))
		on_io(r, (struct rt_ev_sock_io *)ev);
	else
		observe(r, ev);
	return 0;
}

const struct rt_event_hdr *rt_redactor__redact(struct rt_redactor *r, const struct rt_event_hdr *ev)
{
	if (!is_io(ev) && ev->kind != RT_EV_ZMQ_MSG) {
		if (is_observed(ev) && !rt_event_check(ev, ev->size, NULL))
			observe(r, ev);
		return ev;
	}
	if (ev->size > sizeof(r->copy) || ev->size < sizeof(struct rt_event_hdr)) {
		r->st.invalid++;
		return NULL;
	}
	memcpy(r->copy.bytes, ev, ev->size);
	return rt_redactor__apply(r, &r->copy.hdr) ? NULL : &r->copy.hdr;
}

struct rt_redactor *rt_redactor__new(const struct rt_redactor_opts *opts)
{
	struct rt_redactor *r = calloc(1, sizeof(*r));
	uint32_t max = opts && opts->max_conns ? opts->max_conns : RT_REDACT_CONNS_DEFAULT;
	int err;

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	err = rt_hmap_init(&r->conns, max);
	if (err) {
		free(r);
		errno = -err;
		return NULL;
	}
	r->zmq = rt_zmq_redact_new(0);
	if (!r->zmq) {
		rt_hmap_fini(&r->conns);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void rt_redactor__free(struct rt_redactor *r)
{
	size_t pos = 0;
	uint64_t key;
	void *val;

	if (!r)
		return;
	while ((pos = rt_hmap_next(&r->conns, pos, &key, &val)) != 0)
		conn_free(val);
	rt_hmap_fini(&r->conns);
	rt_zmq_redact_free(r->zmq);
	free(r);
}

void rt_redactor__stats(const struct rt_redactor *r, struct rt_redactor_stats *st)
{
	*st = r->st;
	st->conns = r->conns.len;
}
