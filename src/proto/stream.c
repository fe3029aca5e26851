// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stream driver (stream.h). Its callbacks sit between the parsers and
 * the caller's: they keep the driver's own state (the HEAD FIFO, the
 * unreadable verdict) and pass every call on unchanged, so the caller sees
 * exactly what the parsers report.
 */
#include "proto/stream.h"

#include <errno.h>
#include <string.h>

#include "http_int.h"

/* One call's context, handed to the parsers as theirs. */
struct call {
	struct rt_stream *s;
	const struct rt_stream_ops *ops;
	void *ctx;
};

/* ---- requests --------------------------------------------------------------- */

static void req_on_begin(void *ctx)
{
	struct call *k = ctx;

	k->s->req_head = false;
	if (k->ops->req && k->ops->req->on_begin)
		k->ops->req->on_begin(k->ctx);
}

static void req_on_headers(void *ctx, const struct rt_http_req_info *info)
{
	struct call *k = ctx;

	k->s->req_head = !strcmp(info->method, "HEAD");
	if (k->ops->req && k->ops->req->on_headers)
		k->ops->req->on_headers(k->ctx, info);
}

static void req_on_complete(void *ctx, const struct rt_http_req_info *info)
{
	struct call *k = ctx;
	struct rt_stream *s = k->s;

	if (s->n_fifo >= RT_STREAM_FIFO_MAX) { /* a client pipelining this deep: drop the oldest */
		s->fifo_head >>= 1;
		s->n_fifo--;
	}
	if (s->req_head)
		s->fifo_head |= (uint16_t)(1u << s->n_fifo);
	else
		s->fifo_head &= (uint16_t) ~(1u << s->n_fifo);
	s->n_fifo++;
	s->req_head = false;
	if (k->ops->req && k->ops->req->on_complete)
		k->ops->req->on_complete(k->ctx, info);
}

static void req_on_error(void *ctx, enum rt_http_error err)
{
	struct call *k = ctx;

	/* a response being written may still end at the close (rt_stream_eof) */
	k->s->unreadable = true;
	if (k->ops->req && k->ops->req->on_error)
		k->ops->req->on_error(k->ctx, err);
}

static const struct rt_http_req_cb req_cb = {
	.on_begin = req_on_begin,
	.on_headers = req_on_headers,
	.on_complete = req_on_complete,
	.on_error = req_on_error,
};

/* ---- responses -------------------------------------------------------------- */

static void resp_on_begin(void *ctx)
{
	struct call *k = ctx;
	struct rt_stream *s = k->s;

	/* a response to a request we did not see (before tracing) pops nothing */
	if (!s->responding && s->n_fifo) {
		s->responding = true;
		s->fifo_head >>= 1;
		s->n_fifo--;
	}
	if (k->ops->resp && k->ops->resp->on_begin)
		k->ops->resp->on_begin(k->ctx);
}

static void resp_on_headers(void *ctx, const struct rt_http_resp_info *info)
{
	struct call *k = ctx;

	k->s->close_delimited = info->close_delimited;
	if (k->ops->resp && k->ops->resp->on_headers)
		k->ops->resp->on_headers(k->ctx, info);
}

static void resp_on_sse_event(void *ctx, const struct rt_sse_event *ev)
{
	struct call *k = ctx;

	if (k->ops->resp && k->ops->resp->on_sse_event)
		k->ops->resp->on_sse_event(k->ctx, ev);
}

static void resp_on_complete(void *ctx, const struct rt_http_resp_done *done)
{
	struct call *k = ctx;

	k->s->responding = false;
	if (k->ops->resp && k->ops->resp->on_complete)
		k->ops->resp->on_complete(k->ctx, done);
}

static void resp_on_error(void *ctx, enum rt_http_error err)
{
	struct call *k = ctx;

	k->s->unreadable = true;
	k->s->responding = false;
	if (k->ops->resp && k->ops->resp->on_error)
		k->ops->resp->on_error(k->ctx, err);
}

static const struct rt_http_resp_cb resp_cb = {
	.on_begin = resp_on_begin,
	.on_headers = resp_on_headers,
	.on_sse_event = resp_on_sse_event,
	.on_complete = resp_on_complete,
	.on_error = resp_on_error,
};

/* ---- one record --------------------------------------------------------------- */

static bool parser_ready(struct rt_stream *s, enum rt_stream_dir dir)
{
	if (dir == RT_STREAM_REQ && !s->req) {
		s->req = rt_http_req__new();
		if (s->req && s->tap)
			rt_http_req_set_tap(s->req, s->tap, s->tap_ctx);
	} else if (dir == RT_STREAM_RESP && !s->resp) {
		s->resp = rt_http_resp__new();
		if (s->resp && s->tap)
			rt_http_resp_set_tap(s->resp, s->tap, s->tap_ctx);
	}
	return dir == RT_STREAM_REQ ? s->req != NULL : s->resp != NULL;
}

/*
 * Joined mid-stream (no ACCEPT seen: an accept() already waiting when
 * tracing began reports none). A TLS record or the HTTP/2 preface in the
 * first request bytes still says what the connection is. The bytes that
 * said it are tapped as kept, so that a redacted recording says it too.
 */
static enum rt_http_error sniff(const struct rt_stream *s, const uint8_t *p, size_t n)
{
	static const char h2[] = "PRI * HTTP/2.0\r\n";

	if (n >= 3 && p[0] == 0x16 && p[1] == 0x03 && p[2] <= 0x04) {
		if (s->tap)
			s->tap(s->tap_ctx, p, 3, RT_HTTP_TAP_KEEP);
		return RT_HTTP_ERR_TLS;
	}
	if (n >= sizeof(h2) - 1 && !memcmp(p, h2, sizeof(h2) - 1)) {
		if (s->tap)
			s->tap(s->tap_ctx, p, sizeof(h2) - 1, RT_HTTP_TAP_KEEP);
		return RT_HTTP_ERR_HTTP2;
	}
	return RT_HTTP_ERR_NONE;
}

static int feed_req(struct call *k, const struct rt_ev_sock_io *io, uint64_t gap)
{
	struct rt_stream *s = k->s;
	enum rt_http_error what;
	int err;

	if (s->predates && !s->req_resynced) {
		what = sniff(s, io->data, io->head_len);
		if (what != RT_HTTP_ERR_NONE) {
			req_on_error(k, what);
			return -EPROTO;
		}
		rt_http_req_resync(s->req, &req_cb, k);
		s->req_resynced = true;
	}
	err = rt_http_req_feed(s->req, io->data, io->head_len, &req_cb, k);
	if (err)
		return err;
	if (gap) {
		if (k->ops->gap)
			k->ops->gap(k->ctx, gap);
		rt_http_req_gap(s->req, gap, &req_cb, k);
	}
	if ((gap || io->tail_len) && !s->unreadable)
		rt_http_req_feed(s->req, io->data + io->head_len, io->tail_len, &req_cb, k);
	return s->unreadable ? -EPROTO : 0;
}

static int feed_resp(struct call *k, const struct rt_ev_sock_io *io, uint64_t gap)
{
	struct rt_stream *s = k->s;
	int err;

	/* latched by the next status line: say it before the response's bytes */
	if (!s->responding && s->n_fifo)
		rt_http_resp_expect_head(s->resp, s->fifo_head & 1);
	if (s->predates && !s->resp_resynced) {
		rt_http_resp_resync(s->resp, &resp_cb, k);
		s->resp_resynced = true;
	}
	err = rt_http_resp_feed(s->resp, io->data, io->head_len, &resp_cb, k);
	if (err)
		return err;
	if (gap) {
		if (k->ops->gap)
			k->ops->gap(k->ctx, gap);
		rt_http_resp_gap(s->resp, gap, &resp_cb, k);
	}
	if ((gap || io->tail_len) && !s->unreadable)
		rt_http_resp_feed(s->resp, io->data + io->head_len, io->tail_len, &resp_cb, k);
	return s->unreadable ? -EPROTO : 0;
}

int rt_stream_feed(struct rt_stream *s, enum rt_stream_dir dir, const struct rt_ev_sock_io *io,
		   const struct rt_stream_ops *ops, void *ctx)
{
	struct call k = { .s = s, .ops = ops, .ctx = ctx };
	uint64_t ret = (uint64_t)io->ret;
	uint64_t gap =
		ret > (uint64_t)io->head_len + io->tail_len ? ret - io->head_len - io->tail_len : 0;

	if (s->unreadable)
		return -EPROTO;
	if (!parser_ready(s, dir))
		return -ENOMEM;
	return dir == RT_STREAM_REQ ? feed_req(&k, io, gap) : feed_resp(&k, io, gap);
}

void rt_stream_eof(struct rt_stream *s, const struct rt_stream_ops *ops, void *ctx)
{
	struct call k = { .s = s, .ops = ops, .ctx = ctx };

	/* the server's close is how a close-delimited response ends */
	if (s->resp && s->responding && s->close_delimited)
		rt_http_resp_eof(s->resp, &resp_cb, &k);
}

void rt_stream_abort(struct rt_stream *s)
{
	s->n_fifo = 0;
	s->fifo_head = 0;
	s->responding = false;
}

bool rt_stream_unreadable(const struct rt_stream *s)
{
	return s->unreadable;
}

void rt_stream_init(struct rt_stream *s, const struct rt_stream_opts *opts)
{
	memset(s, 0, sizeof(*s));
	if (!opts)
		return;
	s->predates = opts->predates;
	s->tap = opts->tap;
	s->tap_ctx = opts->tap_ctx;
}

void rt_stream_fini(struct rt_stream *s)
{
	rt_http_req__free(s->req);
	rt_http_resp__free(s->resp);
	s->req = NULL;
	s->resp = NULL;
}

bool rt_stream_abort_errno(int64_t ret)
{
	return ret == -EPIPE || ret == -ECONNRESET || ret == -ECONNABORTED || ret == -ETIMEDOUT;
}

bool rt_stream_guess_outbound(const struct rt_sock_addr *local, const struct rt_sock_addr *peer)
{
	return local->port >= RT_STREAM_EPHEMERAL_PORT_MIN &&
	       peer->port < RT_STREAM_EPHEMERAL_PORT_MIN && local->family != RT_AF_UNIX;
}
