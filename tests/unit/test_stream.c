// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stream driver (src/proto/stream.h), which the correlator and the
 * recording redactor both feed: the order of a record's parts, joining
 * mid-stream, the HEAD FIFO and its bound, aborts, end of file, and the
 * outbound guess. What the parsers make of bytes is test_http_*'s subject;
 * here, what the driver decides around them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reqtrace/event.h>

#include "proto/http.h"
#include "proto/stream.h"

/* What the caller's callbacks saw, in order, as one line of text. */
struct seen {
	char log[4096];
	size_t len;
	unsigned int kept; /* bytes tapped RT_HTTP_TAP_KEEP */
};

static void say(struct seen *s, const char *what)
{
	s->len += (size_t)snprintf(s->log + s->len, sizeof(s->log) - s->len, "%s ", what);
	assert_true(s->len < sizeof(s->log));
}

static void req_begin(void *ctx)
{
	say(ctx, "req");
}

static void req_complete(void *ctx, const struct rt_http_req_info *info)
{
	char b[64];

	snprintf(b, sizeof(b), "req-done:%s", info->method);
	say(ctx, b);
}

static void on_error(void *ctx, enum rt_http_error err)
{
	say(ctx, rt_http_error_name(err));
}

static void resp_headers(void *ctx, const struct rt_http_resp_info *info)
{
	char b[64];

	snprintf(b, sizeof(b), "resp:%d%s", info->status, info->no_body ? ":nobody" : "");
	say(ctx, b);
}

static void resp_complete(void *ctx, const struct rt_http_resp_done *done)
{
	say(ctx, done->incomplete ? "resp-done:incomplete" : "resp-done");
}

static void on_gap(void *ctx, uint64_t n)
{
	char b[32];

	snprintf(b, sizeof(b), "gap:%llu", (unsigned long long)n);
	say(ctx, b);
}

static void on_tap(void *ctx, const uint8_t *p, size_t n, unsigned int cls)
{
	struct seen *s = ctx;

	(void)p;
	if (cls == RT_HTTP_TAP_KEEP)
		s->kept += (unsigned int)n;
}

static const struct rt_http_req_cb req_cb = {
	.on_begin = req_begin,
	.on_complete = req_complete,
	.on_error = on_error,
};

static const struct rt_http_resp_cb resp_cb = {
	.on_headers = resp_headers,
	.on_complete = resp_complete,
	.on_error = on_error,
};

static const struct rt_stream_ops ops = { .req = &req_cb, .resp = &resp_cb, .gap = on_gap };

/* A record that carried `ret` bytes, of which head and tail were captured. */
static struct rt_ev_sock_io *io_rec(const char *head, const char *tail, int64_t ret)
{
	size_t h = strlen(head), t = tail ? strlen(tail) : 0;
	struct rt_ev_sock_io *io = calloc(1, sizeof(*io) + h + t);

	assert_non_null(io);
	io->hdr.kind = RT_EV_SOCK_RECV;
	io->hdr.size = (uint16_t)(sizeof(*io) + h + t);
	io->ret = ret ? ret : (int64_t)(h + t);
	io->head_len = (uint16_t)h;
	io->tail_len = (uint16_t)t;
	memcpy(io->data, head, h);
	if (t)
		memcpy(io->data + h, tail, t);
	return io;
}

static int feed(struct rt_stream *st, enum rt_stream_dir dir, struct seen *s, const char *head,
		const char *tail, int64_t ret)
{
	struct rt_ev_sock_io *io = io_rec(head, tail, ret);
	int err = rt_stream_feed(st, dir, io, &ops, s);

	free(io);
	return err;
}

static void test_gap_then_tail(void **state)
{
	struct rt_stream st;
	struct seen s = { 0 };

	(void)state;
	rt_stream_init(&st, NULL);
	/* a body of known length whose middle was not captured: the gap is told
	 * to the caller before the parser, and the tail ends the message */
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s,
			      "POST /a HTTP/1.1\r\nContent-Length: 10\r\n\r\nab", "yz", 50),
			 0);
	assert_string_equal(s.log, "req gap:6 req-done:POST ");
	rt_stream_fini(&st);
}

static void test_head_fifo(void **state)
{
	static const char pipelined[] = "HEAD /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
	struct rt_stream st;
	struct seen s = { 0 };

	(void)state;
	rt_stream_init(&st, NULL);
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, pipelined, NULL, 0), 0);
	/* the answer to HEAD has no body whatever Content-Length says: the next
	 * bytes are the GET's response, not 5 bytes of body */
	assert_int_equal(feed(&st, RT_STREAM_RESP, &s,
			      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", NULL, 0),
			 0);
	assert_int_equal(feed(&st, RT_STREAM_RESP, &s,
			      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", NULL, 0),
			 0);
	assert_string_equal(s.log, "req req-done:HEAD req req-done:GET resp:200:nobody resp-done "
				   "resp:200 resp-done ");
	rt_stream_fini(&st);
}

static void test_fifo_bound(void **state)
{
	struct rt_stream st;
	struct seen s = { 0 };
	int i;

	(void)state;
	rt_stream_init(&st, NULL);
	/* a HEAD, then more GETs than the FIFO holds: the HEAD is given up */
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "HEAD / HTTP/1.1\r\n\r\n", NULL, 0), 0);
	for (i = 0; i < RT_STREAM_FIFO_MAX; i++)
		assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "GET / HTTP/1.1\r\n\r\n", NULL, 0),
				 0);
	s.len = 0;
	assert_int_equal(feed(&st, RT_STREAM_RESP, &s,
			      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", NULL, 0),
			 0);
	assert_string_equal(s.log, "resp:200 resp-done ");
	rt_stream_fini(&st);
}

static void test_abort_forgets_fifo(void **state)
{
	struct rt_stream st;
	struct seen s = { 0 };

	(void)state;
	rt_stream_init(&st, NULL);
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "HEAD / HTTP/1.1\r\n\r\n", NULL, 0), 0);
	rt_stream_abort(&st);
	s.len = 0;
	/* no request awaits this response any more: it is framed as it says */
	assert_int_equal(feed(&st, RT_STREAM_RESP, &s,
			      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", NULL, 0),
			 0);
	assert_string_equal(s.log, "resp:200 resp-done ");
	assert_true(rt_stream_abort_errno(-EPIPE));
	assert_true(rt_stream_abort_errno(-ECONNRESET));
	assert_true(rt_stream_abort_errno(-ECONNABORTED));
	assert_true(rt_stream_abort_errno(-ETIMEDOUT));
	assert_false(rt_stream_abort_errno(-EAGAIN));
	assert_false(rt_stream_abort_errno(0));
	rt_stream_fini(&st);
}

static void test_join_midstream(void **state)
{
	struct rt_stream_opts o = { .predates = true, .tap = on_tap };
	struct rt_stream st;
	struct seen s = { 0 };

	(void)state;
	/* a request body's end, then a request: the driver resynchronises */
	o.tap_ctx = &s;
	rt_stream_init(&st, &o);
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "t\"}", NULL, 0), 0);
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "GET / HTTP/1.1\r\n\r\n", NULL, 0), 0);
	assert_string_equal(s.log, "req req-done:GET ");
	rt_stream_fini(&st);

	/* TLS: unreadable at once, and the bytes that said so are kept */
	memset(&s, 0, sizeof(s));
	rt_stream_init(&st, &o);
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "\x16\x03\x01\x02\x05secret", NULL, 0),
			 -EPROTO);
	assert_string_equal(s.log, "tls ");
	assert_int_equal(s.kept, 3);
	assert_true(rt_stream_unreadable(&st));
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "GET / HTTP/1.1\r\n\r\n", NULL, 0), -EPROTO);
	rt_stream_fini(&st);

	/* the HTTP/2 preface */
	memset(&s, 0, sizeof(s));
	rt_stream_init(&st, &o);
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", NULL, 0),
			 -EPROTO);
	assert_string_equal(s.log, "http2 ");
	assert_int_equal(s.kept, 16);
	rt_stream_fini(&st);
}

static void test_eof(void **state)
{
	struct rt_stream st;
	struct seen s = { 0 };

	(void)state;
	rt_stream_init(&st, NULL);
	assert_int_equal(feed(&st, RT_STREAM_REQ, &s, "GET / HTTP/1.1\r\n\r\n", NULL, 0), 0);
	/* no length, no chunking: the response ends when the connection closes */
	assert_int_equal(feed(&st, RT_STREAM_RESP, &s, "HTTP/1.1 200 OK\r\n\r\nsome", NULL, 0), 0);
	assert_string_equal(s.log, "req req-done:GET resp:200 ");
	rt_stream_eof(&st, &ops, &s);
	assert_string_equal(s.log, "req req-done:GET resp:200 resp-done ");
	/* nothing in progress: nothing to end */
	rt_stream_eof(&st, &ops, &s);
	assert_string_equal(s.log, "req req-done:GET resp:200 resp-done ");
	rt_stream_fini(&st);
}

static void test_outbound_guess(void **state)
{
	struct rt_sock_addr eph = { .port = 40000, .family = RT_AF_INET };
	struct rt_sock_addr web = { .port = 8080, .family = RT_AF_INET };
	struct rt_sock_addr unix_a = { .port = 40000, .family = RT_AF_UNIX };

	(void)state;
	assert_true(rt_stream_guess_outbound(&eph, &web));
	assert_false(rt_stream_guess_outbound(&web, &eph));
	assert_false(rt_stream_guess_outbound(&eph, &eph));
	assert_false(rt_stream_guess_outbound(&unix_a, &web));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gap_then_tail),  cmocka_unit_test(test_head_fifo),
		cmocka_unit_test(test_fifo_bound),     cmocka_unit_test(test_abort_forgets_fifo),
		cmocka_unit_test(test_join_midstream), cmocka_unit_test(test_eof),
		cmocka_unit_test(test_outbound_guess),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
