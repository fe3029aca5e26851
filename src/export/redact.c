// SPDX-License-Identifier: BSD-2-Clause
/*
 * Recording redactor (redact.h): connections, directions, and the bytes of
 * one syscall fed to the parsers exactly as the correlator feeds them
 * (src/correlate/conn.c, feed()), so that the engine's tap classifies the
 * bytes replay will parse, in the state replay will parse them in.
 *
 * Every byte of a feed starts out masked; the tap then copies back what the
 * engine reports as framing, and the body masker (redact_body.c) writes
 * bodies. A byte the engine never reports (an unparseable stream) stays
 * masked: the default is to keep nothing.
 */
#include "export/redact.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/event_check.h"
#include "common/hmap.h"
#include "correlate/http_int.h"
#include "export/redact_int.h"

#define FIFO_MAX 16 /* as RT_CONN_FIFO_MAX: pipelined requests awaiting responses */
#define EPHEMERAL_PORT_MIN 32768 /* as conn.c: guesses who opened a connection */
#define FEED_MAX (RT_SOCK_HEAD_MAX > RT_SOCK_TAIL_MAX ? RT_SOCK_HEAD_MAX : RT_SOCK_TAIL_MAX)

struct conn {
	uint64_t first_ns; /* the first record's time */
	uint32_t pid;
	bool outbound; /* we connected: requests go out, responses come in */
	bool predates; /* first seen mid-stream: wait for a message start */
	bool req_resynced, resp_resynced;
	bool unreadable; /* not HTTP/1.x: the correlator stops parsing it, we mask it */
	bool responding; /* a response began and did not end */
	bool req_head; /* the request being read is a HEAD */
	uint8_t n_fifo;
	uint16_t fifo_head; /* bit i: the i-th request awaiting a response is a HEAD */
	struct rt_http_req_parser *req;
	struct rt_http_resp_parser *resp;
	struct rt_body_mask req_body, resp_body;
};

struct rt_redactor {
	struct rt_hmap conns;
	struct rt_redactor_stats st;
	/* the feed being redacted */
	struct conn *cur;
	struct rt_body_mask *body;
	const uint8_t *feed;
	size_t feed_len;
	uint8_t out[FEED_MAX];
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
	rt_http_req__free(c->req);
	rt_http_resp__free(c->resp);
	free(c);
}

static void conn_drop(struct rt_redactor *r, uint64_t key)
{
	conn_free(rt_hmap_del(&r->conns, key));
}

static struct conn *conn_new(struct rt_redactor *r, uint32_t pid, int32_t fd, uint64_t ts)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
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
	/* the engine only reports bytes of the feed; anything else stays masked */
	if (p < r->feed || n > r->feed_len || (size_t)(p - r->feed) > r->feed_len - n)
		return;
	off = (size_t)(p - r->feed);
	if (cls == RT_HTTP_TAP_KEEP)
		memcpy(r->out + off, p, n);
	else if (cls != RT_HTTP_TAP_MASK)
		rt_body_mask_run(r->body, cls, p, r->out + off, n);
}

static void req_on_headers(void *ctx, const struct rt_http_req_info *info)
{
	struct rt_redactor *r = ctx;

	r->cur->req_head = !strcmp(info->method, "HEAD");
}

static void req_on_complete(void *ctx, const struct rt_http_req_info *info)
{
	struct conn *c = ((struct rt_redactor *)ctx)->cur;

	(void)info;
	if (c->n_fifo >= FIFO_MAX) { /* the correlator gives up on the oldest */
		c->fifo_head >>= 1;
		c->n_fifo--;
	}
	if (c->req_head)
		c->fifo_head |= (uint16_t)(1u << c->n_fifo);
	else
		c->fifo_head &= (uint16_t) ~(1u << c->n_fifo);
	c->n_fifo++;
	c->req_head = false;
}

static void on_error(void *ctx, enum rt_http_error err)
{
	struct conn *c = ((struct rt_redactor *)ctx)->cur;

	(void)err;
	c->unreadable = true;
	c->responding = false;
}

static void resp_on_begin(void *ctx)
{
	struct conn *c = ((struct rt_redactor *)ctx)->cur;

	if (c->responding || !c->n_fifo)
		return;
	c->responding = true;
	c->fifo_head >>= 1;
	c->n_fifo--;
}

static void resp_on_complete(void *ctx, const struct rt_http_resp_done *done)
{
	(void)done;
	((struct rt_redactor *)ctx)->cur->responding = false;
}

static const struct rt_http_req_cb req_cb = {
	.on_headers = req_on_headers,
	.on_complete = req_on_complete,
	.on_error = on_error,
};

static const struct rt_http_resp_cb resp_cb = {
	.on_begin = resp_on_begin,
	.on_complete = resp_on_complete,
	.on_error = on_error,
};

/* ---- one syscall's bytes ------------------------------------------------- */

/* Parses p[0..n) (head or tail of a record) and rewrites it. */
static int feed(struct rt_redactor *r, struct conn *c, bool resp, uint8_t *p, size_t n)
{
	int err;

	r->cur = c;
	r->body = resp ? &c->resp_body : &c->req_body;
	r->feed = p;
	r->feed_len = n;
	rt_mask_bytes(p, r->out, n);
	if (resp)
		err = rt_http_resp_feed(c->resp, p, n, &resp_cb, r);
	else
		err = rt_http_req_feed(c->req, p, n, &req_cb, r);
	memcpy(p, r->out, n);
	r->feed = NULL;
	r->feed_len = 0;
	return err;
}

static int gap(struct rt_redactor *r, struct conn *c, bool resp, uint64_t n)
{
	r->cur = c;
	r->body = resp ? &c->resp_body : &c->req_body;
	rt_body_mask_gap(r->body);
	if (resp)
		return rt_http_resp_gap(c->resp, n, &resp_cb, r);
	return rt_http_req_gap(c->req, n, &req_cb, r);
}

static bool parsers_ready(struct rt_redactor *r, struct conn *c, bool resp)
{
	if (resp && !c->resp) {
		c->resp = rt_http_resp__new();
		if (c->resp)
			rt_http_resp_set_tap(c->resp, on_tap, r);
	} else if (!resp && !c->req) {
		c->req = rt_http_req__new();
		if (c->req)
			rt_http_req_set_tap(c->req, on_tap, r);
	}
	return resp ? c->resp != NULL : c->req != NULL;
}

/* As the correlator's feed(): head, gap, then the tail (even empty after a gap). */
static void redact_io(struct rt_redactor *r, struct conn *c, struct rt_ev_sock_io *io, bool resp)
{
	uint8_t *data = io->data;
	uint64_t ret = (uint64_t)io->ret;
	uint64_t gap_n =
		ret > (uint64_t)io->head_len + io->tail_len ? ret - io->head_len - io->tail_len : 0;
	bool tail_done = false;

	if (!parsers_ready(r, c, resp)) {
		rt_mask_bytes(data, data, io->head_len + io->tail_len);
		return;
	}
	if (resp) {
		if (!c->responding && c->n_fifo)
			rt_http_resp_expect_head(c->resp, c->fifo_head & 1);
		if (c->predates && !c->resp_resynced) {
			rt_http_resp_resync(c->resp, &resp_cb, r);
			c->resp_resynced = true;
		}
	} else if (c->predates && !c->req_resynced) {
		rt_http_req_resync(c->req, &req_cb, r);
		c->req_resynced = true;
	}
	if (feed(r, c, resp, data, io->head_len) == 0) {
		if (gap_n)
			gap(r, c, resp, gap_n);
		if ((gap_n || io->tail_len) && !c->unreadable) {
			feed(r, c, resp, data + io->head_len, io->tail_len);
			tail_done = true;
		}
	}
	if (!tail_done)
		rt_mask_bytes(data + io->head_len, data + io->head_len, io->tail_len);
	r->cur = NULL;
}

static bool is_abort_errno(int64_t ret)
{
	return ret == -EPIPE || ret == -ECONNRESET || ret == -ECONNABORTED || ret == -ETIMEDOUT;
}

static struct conn *conn_for_io(struct rt_redactor *r, const struct rt_ev_sock_io *io)
{
	struct conn *c = rt_hmap_get(&r->conns, conn_key(io->hdr.pid, io->fd));

	if (c)
		return c;
	/* opened before the recording: the same guess as the correlator's */
	c = conn_new(r, io->hdr.pid, io->fd, io->hdr.ts_ns);
	if (!c)
		return NULL;
	c->predates = true;
	c->outbound = io->local.port >= EPHEMERAL_PORT_MIN && io->peer.port < EPHEMERAL_PORT_MIN &&
		      io->local.family != RT_AF_UNIX;
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
	if (io->ret < 0 && is_abort_errno(io->ret)) {
		c->n_fifo = 0;
		c->responding = false;
	}
	if (c->unreadable) {
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
	c = conn_new(r, ev->hdr.pid, ev->fd, ev->hdr.ts_ns);
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
		if (((const struct rt_ev_proc_exit *)ev)->group_dead)
			drop_pid(r, ev->pid);
		break;
	case RT_EV_TARGET:
		if (((const struct rt_ev_target *)ev)->leave)
			drop_pid(r, ev->pid);
		break;
	default:
		break;
	}
}

static bool is_io(const struct rt_event_hdr *ev)
{
	return ev->kind == RT_EV_SOCK_RECV || ev->kind == RT_EV_SOCK_SEND;
}

/* Kinds that open or end connections (the rest, most records, pass unread). */
static bool is_observed(const struct rt_event_hdr *ev)
{
	return ev->kind == RT_EV_SOCK_ACCEPT || ev->kind == RT_EV_SOCK_CONNECT ||
	       ev->kind == RT_EV_SOCK_CLOSE || ev->kind == RT_EV_PROC_EXIT ||
	       ev->kind == RT_EV_TARGET;
}

int rt_redactor__apply(struct rt_redactor *r, struct rt_event_hdr *ev)
{
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
	if (!is_io(ev)) {
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
	free(r);
}

void rt_redactor__stats(const struct rt_redactor *r, struct rt_redactor_stats *st)
{
	*st = r->st;
	st->conns = r->conns.len;
}
