// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/1.x request parser. Every realistic request is fed whole, at every
 * split point (two feeds) and byte by byte: the callbacks and infos must be
 * identical each time, and each callback must come in the feed that holds
 * the byte that triggers it (the byte-by-byte run tells which byte that is).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http.h"

#define MAX_CALLS 64
#define MAX_MSGS 8

struct rec {
	char log[8192];
	size_t len;
	int feed;
	int n_calls;
	int call_feed[MAX_CALLS];
	int n_begin, n_headers, n_complete, n_error;
	enum rt_http_error err;
	struct rt_http_req_info headers[MAX_MSGS], done[MAX_MSGS];
};

static void logf_(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct rec *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r->len += (size_t)vsnprintf(r->log + r->len, sizeof(r->log) - r->len, fmt, ap);
	va_end(ap);
	assert_true(r->len < sizeof(r->log));
	assert_true(r->n_calls < MAX_CALLS);
	r->call_feed[r->n_calls++] = r->feed;
}

static void log_info(struct rec *r, char tag, const struct rt_http_req_info *i)
{
	logf_(r, "%c %s|%s|%s|%s|%s|%s|%s|%llu|%d%d%d%d\n", tag, i->method, i->path, i->request_id,
	      i->trace_id, i->parent_span_id, i->content_type, i->user_agent,
	      (unsigned long long)i->content_length, i->chunked, i->keep_alive, i->expect_continue,
	      i->incomplete);
}

static void on_begin(void *ctx)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_begin, r->n_complete); /* no overlap */
	r->n_begin++;
	logf_(r, "B\n");
}

static void on_headers(void *ctx, const struct rt_http_req_info *info)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_begin, r->n_complete + 1);
	if (r->n_headers < MAX_MSGS)
		r->headers[r->n_headers] = *info;
	r->n_headers++;
	log_info(r, 'H', info);
}

static void on_complete(void *ctx, const struct rt_http_req_info *info)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_headers, r->n_complete + 1);
	if (r->n_complete < MAX_MSGS)
		r->done[r->n_complete] = *info;
	r->n_complete++;
	log_info(r, 'C', info);
}

static void on_error(void *ctx, enum rt_http_error err)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_error, 0);
	r->n_error++;
	r->err = err;
	logf_(r, "E %s\n", rt_http_error_name(err));
}

static const struct rt_http_req_cb cb = {
	.on_begin = on_begin,
	.on_headers = on_headers,
	.on_complete = on_complete,
	.on_error = on_error,
};

static struct rec *rec_new(void)
{
	struct rec *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	return r;
}

static int feed(struct rt_http_req_parser *p, struct rec *r, const void *buf, size_t n)
{
	int err = rt_http_req_feed(p, buf, n, &cb, r);

	r->feed++;
	return err;
}

/* Feeds [0, split) then [split, n) (split == n: one feed); byte by byte when split < 0. */
static struct rec *run(const char *in, size_t n, long split)
{
	struct rt_http_req_parser *p = rt_http_req__new();
	struct rec *r = rec_new();

	assert_non_null(p);
	if (split < 0) {
		for (size_t i = 0; i < n; i++)
			feed(p, r, in + i, 1);
	} else {
		feed(p, r, in, (size_t)split);
		if ((size_t)split < n)
			feed(p, r, in + split, n - (size_t)split);
	}
	rt_http_req__free(p);
	return r;
}

/* The whole-feed result, after checking every split (every stride-th) and byte-by-byte. */
static struct rec *check_splits(const char *in, size_t n, size_t stride)
{
	struct rec *whole = run(in, n, (long)n), *bytes = run(in, n, -1);

	assert_string_equal(whole->log, bytes->log);
	for (size_t i = 0; i <= n; i += stride) {
		struct rec *s = run(in, n, (long)i);

		if (strcmp(s->log, whole->log) != 0)
			fail_msg("split at %zu:\n%s\nwhole:\n%s", i, s->log, whole->log);
		assert_int_equal(s->n_calls, bytes->n_calls);
		for (int k = 0; k < s->n_calls; k++) {
			int want = (size_t)bytes->call_feed[k] < i ? 0 : 1;

			if (s->call_feed[k] != want)
				fail_msg("split at %zu: callback %d in feed %d, byte %d", i, k,
					 s->call_feed[k], bytes->call_feed[k]);
		}
		free(s);
	}
	free(bytes);
	return whole;
}

#define CHECK(s) check_splits((s), strlen(s), 1)

static const char curl_get[] = "GET /v1/models?limit=2 HTTP/1.1\r\n"
			       "Host: localhost:8080\r\n"
			       "User-Agent: curl/8.5.0\r\n"
			       "Accept: */*\r\n"
			       "\r\n";

static void test_curl_get(void **state)
{
	struct rec *r = CHECK(curl_get);

	(void)state;
	assert_int_equal(r->n_begin, 1);
	assert_int_equal(r->n_complete, 1);
	assert_int_equal(r->n_error, 0);
	assert_string_equal(r->done[0].method, "GET");
	assert_string_equal(r->done[0].path, "/v1/models?limit=2");
	assert_string_equal(r->done[0].user_agent, "curl/8.5.0");
	assert_string_equal(r->done[0].request_id, "");
	assert_string_equal(r->done[0].trace_id, "");
	assert_true(r->done[0].keep_alive);
	assert_false(r->done[0].incomplete);
	assert_int_equal(r->done[0].content_length, 0);
	free(r);
}

static char *python_post(void)
{
	static const char body[] = "{\"model\":\"llama\",\"messages\":[{\"role\":\"user\","
				   "\"content\":\"Hi\"}],\"stream\":true}";
	char *s = malloc(1024);

	assert_non_null(s);
	snprintf(s, 1024,
		 "POST /v1/chat/completions HTTP/1.1\r\n"
		 "Host: 127.0.0.1:8000\r\n"
		 "User-Agent: python-requests/2.31.0\r\n"
		 "Accept-Encoding: gzip, deflate\r\n"
		 "Accept: */*\r\n"
		 "Connection: keep-alive\r\n"
		 "X-Request-ID:   req-42  \r\n"
		 "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
		 "Content-Length: %zu\r\n"
		 "Content-Type: application/json\r\n"
		 "\r\n%s",
		 strlen(body), body);
	return s;
}

static void test_python_post(void **state)
{
	char *in = python_post();
	struct rec *r = CHECK(in);

	(void)state;
	assert_int_equal(r->n_complete, 1);
	assert_string_equal(r->done[0].method, "POST");
	assert_string_equal(r->done[0].path, "/v1/chat/completions");
	assert_string_equal(r->done[0].request_id, "req-42");
	assert_string_equal(r->done[0].trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(r->done[0].parent_span_id, "00f067aa0ba902b7");
	assert_string_equal(r->done[0].content_type, "application/json");
	assert_int_equal(r->done[0].content_length, strlen(strstr(in, "\r\n\r\n") + 4));
	assert_true(r->done[0].keep_alive);
	/* headers end before the body: on_headers and on_complete in different writes */
	{
		struct rt_http_req_parser *p = rt_http_req__new();
		struct rec *w = rec_new();
		size_t head = (size_t)(strstr(in, "\r\n\r\n") + 4 - in);

		feed(p, w, in, head);
		assert_int_equal(w->n_headers, 1);
		assert_int_equal(w->n_complete, 0);
		feed(p, w, in + head, strlen(in) - head);
		assert_int_equal(w->n_complete, 1);
		assert_int_equal(w->call_feed[2], 1);
		rt_http_req__free(p);
		free(w);
	}
	free(r);
	free(in);
}

static void test_chunked_upload(void **state)
{
	struct rec *r = CHECK("POST /upload HTTP/1.1\r\n"
			      "Host: x\r\n"
			      "Transfer-Encoding: gzip, chunked\r\n"
			      "Content-Length: 999\r\n"
			      "\r\n"
			      "5;name=\"v\"\r\nhello\r\n"
			      "1A\r\n0123456789abcdefghijklmnop\r\n"
			      "000\r\n"
			      "Checksum: abc\r\n"
			      "X-Other: 1\r\n"
			      "\r\n"
			      "GET /after HTTP/1.1\r\n\r\n");

	(void)state;
	assert_int_equal(r->n_complete, 2);
	assert_true(r->done[0].chunked);
	assert_int_equal(r->done[0].content_length, 0); /* chunked wins */
	assert_string_equal(r->done[1].path, "/after");
	assert_int_equal(r->n_error, 0);
	free(r);
}

static void test_keepalive_sequence(void **state)
{
	const char *msgs[] = {
		"GET /health HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n{\"a\"",
		"GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
	};
	struct rt_http_req_parser *p = rt_http_req__new();
	struct rec *r = rec_new();

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(feed(p, r, msgs[i], strlen(msgs[i])), 0);
		assert_int_equal(r->n_complete, i + 1);
	}
	/* each request begins and completes in its own write */
	for (int k = 0; k < r->n_calls; k++)
		assert_int_equal(r->call_feed[k], k / 3);
	assert_true(r->done[1].keep_alive);
	assert_false(r->done[2].keep_alive);
	rt_http_req__free(p);
	free(r);
}

static void test_pipelined(void **state)
{
	struct rec *r = CHECK("GET /a HTTP/1.1\r\nHost: h\r\nx-request-id: one\r\n\r\n"
			      "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
			      "x-request-id: two\r\n\r\nabc"
			      "\r\n" /* stray CRLF between requests is tolerated */
			      "DELETE /c HTTP/1.1\r\nHost: h\r\nx-request-id: three\r\n\r\n");

	(void)state;
	assert_int_equal(r->n_begin, 3);
	assert_int_equal(r->n_complete, 3);
	assert_string_equal(r->done[0].request_id, "one");
	assert_string_equal(r->done[1].request_id, "two");
	assert_string_equal(r->done[2].request_id, "three");
	assert_string_equal(r->done[2].method, "DELETE");
	free(r);
}

static void test_http10(void **state)
{
	struct rec *r = CHECK("GET /old HTTP/1.0\r\n\r\n"
			      "GET /ka HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"
			      "GET /close HTTP/1.1\r\nConnection: upgrade, close\r\n\r\n"
			      "GET /lf HTTP/1.1\nHost: bare-lf\n\n");

	(void)state;
	assert_int_equal(r->n_complete, 4);
	assert_false(r->done[0].keep_alive);
	assert_true(r->done[1].keep_alive);
	assert_false(r->done[2].keep_alive);
	assert_true(r->done[3].keep_alive);
	free(r);
}

static void test_expect_continue(void **state)
{
	struct rec *r = CHECK("POST /v1/completions HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\n"
			      "Content-Length: 10\r\n\r\n0123456789");

	(void)state;
	assert_int_equal(r->n_complete, 1);
	assert_true(r->headers[0].expect_continue);
	assert_int_equal(r->done[0].content_length, 10);
	free(r);
}

static void test_huge_header(void **state)
{
	size_t n = RT_HTTP_HEAD_MAX + 1000;
	char *in = malloc(n + 64);
	struct rec *r;

	(void)state;
	assert_non_null(in);
	strcpy(in, "GET / HTTP/1.1\r\nX-Big: ");
	memset(in + strlen(in), 'a', n);
	strcpy(in + n, "\r\n\r\n");
	r = check_splits(in, strlen(in), 1);
	assert_int_equal(r->n_error, 1);
	assert_int_equal(r->err, RT_HTTP_ERR_TOO_LARGE);
	assert_int_equal(r->n_complete, 0);
	free(r);

	/* too many header lines */
	in[0] = '\0';
	strcat(in, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 200; i++)
		strcat(in, "A: b\r\n");
	r = CHECK(in);
	assert_int_equal(r->err, RT_HTTP_ERR_TOO_LARGE);
	free(r);
	free(in);
}

static void test_long_values_truncated(void **state)
{
	char in[2048], path[600];
	struct rec *r;

	(void)state;
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	snprintf(in, sizeof(in),
		 "GET %s HTTP/1.1\r\nX-Request-Id: %.300s\r\nUser-Agent: %.300s\r\n\r\n", path,
		 path, path);
	r = check_splits(in, strlen(in), 1);
	assert_int_equal(r->n_complete, 1);
	assert_int_equal(strlen(r->done[0].path), RT_HTTP_PATH_MAX - 1);
	assert_int_equal(strlen(r->done[0].request_id), RT_HTTP_ID_MAX - 1);
	assert_int_equal(strlen(r->done[0].user_agent), RT_HTTP_HDR_VALUE_MAX - 1);
	assert_memory_equal(r->done[0].path, path, RT_HTTP_PATH_MAX - 1);
	free(r);
}

static void test_traceparent(void **state)
{
	static const struct {
		const char *value;
		bool valid;
	} cases[] = {
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true },
		{ "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future", true },
		{ "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false },
		{ "00-00000000000000000000000000000000-00f067aa0ba902b7-01", false },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false },
		{ "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false },
		{ "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", false },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", false },
		{ "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01", false },
		{ "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", false },
		{ "", false },
	};
	char in[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rec *r;

		snprintf(in, sizeof(in), "GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n",
			 cases[i].value);
		r = CHECK(in);
		assert_int_equal(r->n_complete, 1);
		if (cases[i].valid) {
			assert_memory_equal(r->done[0].trace_id, cases[i].value + 3, 32);
			assert_memory_equal(r->done[0].parent_span_id, cases[i].value + 36, 16);
		} else if (r->done[0].trace_id[0] || r->done[0].parent_span_id[0]) {
			fail_msg("accepted invalid traceparent \"%s\"", cases[i].value);
		}
		free(r);
	}
}

/* ---- malformed input ------------------------------------------------------ */

static struct rec *expect_error(const void *in, size_t n, enum rt_http_error want)
{
	struct rec *r = check_splits(in, n, 1);
	struct rt_http_req_parser *p = rt_http_req__new();
	struct rec *after = rec_new();

	if (r->n_error != 1 || r->err != want)
		fail_msg("want error %s, got %d errors (%s)\n%s", rt_http_error_name(want),
			 r->n_error, rt_http_error_name(r->err), r->log);
	/* afterwards everything is ignored */
	rt_http_req_feed(p, in, n, &cb, after);
	assert_int_equal(
		rt_http_req_feed(p, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, &cb, after),
		-EPROTO);
	assert_int_equal(rt_http_req_gap(p, 10, &cb, after), -EPROTO);
	assert_int_equal(after->n_error, 1);
	assert_int_equal(after->n_complete, 0);
	rt_http_req__free(p);
	free(after);
	return r;
}

static void test_tls_and_http2(void **state)
{
	static const uint8_t client_hello[] = { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01,
						0xfc, 0x03, 0x03, 0x8a, 0x1b, 0x00, 0x20, 0x61 };
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04";
	struct rec *r;

	(void)state;
	r = expect_error(client_hello, sizeof(client_hello), RT_HTTP_ERR_TLS);
	assert_int_equal(r->n_begin, 0);
	free(r);
	r = expect_error(preface, sizeof(preface) - 1, RT_HTTP_ERR_HTTP2);
	assert_int_equal(r->n_complete, 0);
	free(r);
	/* detected from the first bytes, before any line ends */
	free(expect_error("\x16\x03\x03", 3, RT_HTTP_ERR_TLS));
	free(expect_error("\x16\x04", 2, RT_HTTP_ERR_MALFORMED));
}

static void test_malformed(void **state)
{
	static const char *const cases[] = {
		"GET / HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 12a\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length:\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n;x\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
		"GET / HTTP/1.1\r\nHost localhost\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : localhost\r\n\r\n",
		"GET / HTTP/1.1\r\n: empty\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n",
		"get / HTTP/1.1\r\n\r\n",
		"GET /\r\n",
		"GET  / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1 \r\n\r\n",
		"GET / HTTP/1.x\r\n\r\n",
		"GET / FTP/1.1\r\n\r\n",
		"VERYLONGMETHODNAMEX / HTTP/1.1\r\n\r\n",
		"{\"prompt\": \"x\"}",
	};
	static const char nul_value[] = "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n";
	static const char nul_line[] = "GET /\0 HTTP/1.1\r\n\r\n";

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		free(expect_error(cases[i], strlen(cases[i]), RT_HTTP_ERR_MALFORMED));
	free(expect_error(nul_value, sizeof(nul_value) - 1, RT_HTTP_ERR_MALFORMED));
	free(expect_error(nul_line, sizeof(nul_line) - 1, RT_HTTP_ERR_MALFORMED));
}

static void test_random_binary(void **state)
{
	uint8_t buf[512];
	uint32_t x = 12345;

	(void)state;
	for (int t = 0; t < 200; t++) {
		struct rt_http_req_parser *p = rt_http_req__new();
		struct rec *r = rec_new();
		enum rt_http_error want;

		for (size_t i = 0; i < sizeof(buf); i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (uint8_t)(x >> 16);
		}
		if (t == 0) /* a TLS record header, then noise */
			memcpy(buf, "\x16\x03\x01", 3);
		want = buf[0] == 0x16 && buf[1] == 0x03 && buf[2] <= 4 ? RT_HTTP_ERR_TLS :
									 RT_HTTP_ERR_MALFORMED;
		assert_int_equal(feed(p, r, buf, sizeof(buf)), -EPROTO);
		assert_int_equal(r->n_error, 1);
		assert_int_equal(r->err, want);
		assert_int_equal(r->n_complete, 0);
		rt_http_req__free(p);
		free(r);
	}
}

/* ---- gaps ------------------------------------------------------------------ */

static void test_gap_in_body(void **state)
{
	char in[8192];
	struct rt_http_req_parser *p = rt_http_req__new();
	struct rec *r = rec_new();
	size_t n, head;

	(void)state;
	n = (size_t)snprintf(in, sizeof(in),
			     "POST /v1/completions HTTP/1.1\r\nContent-Length: 5000\r\n\r\n");
	head = n;
	memset(in + n, 'x', 5000);
	n += 5000;
	n += (size_t)snprintf(in + n, sizeof(in) - n, "GET /next HTTP/1.1\r\n\r\n");
	/* one read: head 512, tail 1024 of the 5000-byte body; then the next request */
	feed(p, r, in, 512);
	assert_int_equal(rt_http_req_gap(p, head + 5000 - 512 - 1024, &cb, r), 0);
	feed(p, r, in + head + 5000 - 1024, 1024);
	assert_int_equal(r->n_complete, 1);
	assert_true(r->done[0].incomplete);
	assert_int_equal(r->call_feed[2], 1); /* completed in the tail's feed */
	feed(p, r, in + head + 5000, n - head - 5000);
	assert_int_equal(r->n_complete, 2);
	assert_string_equal(r->done[1].path, "/next");
	assert_false(r->done[1].incomplete);

	/* a gap exactly to the end of a body keeps framing */
	feed(p, r, in, head + 10);
	rt_http_req_gap(p, 4990, &cb, r);
	assert_int_equal(r->n_complete, 3);
	feed(p, r, in + head + 5000, n - head - 5000);
	assert_int_equal(r->n_complete, 4);
	rt_http_req__free(p);
	free(r);
}

static void test_gap_in_head(void **state)
{
	char in[8192];
	struct rt_http_req_parser *p = rt_http_req__new();
	struct rec *r = rec_new();
	size_t n;

	(void)state;
	/* headers longer than the 512-byte head capture, then a 2000-byte body */
	n = (size_t)snprintf(in, sizeof(in),
			     "POST /v1/chat/completions HTTP/1.1\r\nx-request-id: big-1\r\n"
			     "Content-Length: 2000\r\nCookie: %0600d\r\n\r\n",
			     7);
	memset(in + n, '{', 2000);
	n += 2000;
	feed(p, r, in, 512);
	rt_http_req_gap(p, n - 512 - 1024, &cb, r);
	feed(p, r, in + n - 1024, 1024);
	/* guessed: the request ends with the read */
	assert_int_equal(r->n_complete, 1);
	assert_true(r->done[0].incomplete);
	assert_string_equal(r->done[0].method, "POST");
	assert_string_equal(r->done[0].path, "/v1/chat/completions");
	assert_string_equal(r->done[0].request_id, "big-1");
	/* the next read that starts like a request is parsed again ... */
	feed(p, r, "GET /again HTTP/1.1\r\n\r\n", 23);
	assert_int_equal(r->n_complete, 2);
	assert_false(r->done[1].incomplete);
	/* ... but after a gap at a message boundary, a body's continuation is skipped */
	rt_http_req_gap(p, 100, &cb, r);
	feed(p, r, "more body bytes\r\n\r\n", 19);
	assert_int_equal(r->n_begin, 2);
	feed(p, r, "GET /third HTTP/1.1\r\n\r\n", 23);
	assert_int_equal(r->n_complete, 3);
	assert_int_equal(r->n_error, 0);
	rt_http_req__free(p);
	free(r);
}

static void test_gap_in_chunked(void **state)
{
	char in[8192];
	struct rt_http_req_parser *p = rt_http_req__new();
	struct rec *r = rec_new();
	size_t n;

	(void)state;
	n = (size_t)snprintf(in, sizeof(in),
			     "POST /u HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(in + n, sizeof(in) - n, "40\r\n%064d\r\n", i);
	n += (size_t)snprintf(in + n, sizeof(in) - n, "0\r\n\r\n");
	/* the gap spans chunk boundaries: framing is lost, the last chunk ends it */
	feed(p, r, in, 512);
	rt_http_req_gap(p, n - 512 - 1024, &cb, r);
	feed(p, r, in + n - 1024, 1024);
	assert_int_equal(r->n_complete, 1);
	assert_true(r->done[0].incomplete);
	feed(p, r, "GET /ok HTTP/1.1\r\n\r\n", 20);
	assert_int_equal(r->n_complete, 2);
	assert_int_equal(r->n_error, 0);
	rt_http_req__free(p);
	free(r);
}

static void test_resync(void **state)
{
	struct rt_http_req_parser *p = rt_http_req__new();
	struct rec *r = rec_new();

	(void)state;
	/* tracing began in the middle of a request body */
	rt_http_req_resync(p, &cb, r);
	assert_int_equal(feed(p, r, "\"max_tokens\": 10}", 17), 0);
	assert_int_equal(feed(p, r, "GET /x HTTP/1.1\r\n\r\n", 19), 0);
	assert_int_equal(r->n_complete, 1);
	assert_int_equal(r->n_error, 0);
	/* a TLS connection older than the trace is still recognised */
	rt_http_req_resync(p, &cb, r);
	assert_int_equal(feed(p, r, "\x17\x03\x03\x00\x20xxxx", 9), -EPROTO);
	assert_int_equal(r->err, RT_HTTP_ERR_TLS);
	rt_http_req__free(p);
	free(r);
}

/* ---- privacy ------------------------------------------------------------- */

/* 8 bytes of a secret are enough to count as a copy. */
__attribute__((noinline)) static bool contains(const void *hay, size_t n, const char *secret)
{
	return memmem(hay, n, secret, strlen(secret) < 8 ? strlen(secret) : 8) != NULL;
}

static void test_privacy(void **state)
{
	static const char *const secrets[] = {
		"sk-live-4f9Qz7SECRETKEY",
		"session=SECRETCOOKIE",
		"SECRETAPIKEY123",
		"my secret prompt about Project Nightingale",
	};
	char in[2048], body[256];
	struct rec *r;

	(void)state;
	snprintf(body, sizeof(body), "{\"prompt\":\"%s\",\"stream\":true}", secrets[3]);
	snprintf(in, sizeof(in),
		 "POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer %s\r\nCookie: %s\r\n"
		 "X-Api-Key: %s\r\nx-request-id: rid\r\nContent-Length: %zu\r\n\r\n%s",
		 secrets[0], secrets[1], secrets[2], strlen(body), body);
	r = CHECK(in);
	assert_int_equal(r->n_complete, 1);
	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
		assert_false(contains(&r->headers[0], sizeof(r->headers[0]), secrets[i]));
		assert_false(contains(&r->done[0], sizeof(r->done[0]), secrets[i]));
		assert_false(contains(r->log, r->len, secrets[i]));
	}
	assert_string_equal(r->done[0].request_id, "rid");
	free(r);
}

static void test_null_callbacks(void **state)
{
	static const struct rt_http_req_cb none = { 0 };
	struct rt_http_req_parser *p = rt_http_req__new();

	(void)state;
	assert_int_equal(
		rt_http_req_feed(p, (const uint8_t *)curl_get, strlen(curl_get), &none, NULL), 0);
	assert_int_equal(rt_http_req_feed(p, (const uint8_t *)"\x01", 1, &none, NULL), -EPROTO);
	rt_http_req__free(p);
	rt_http_req__free(NULL);
	assert_string_equal(rt_http_error_name(RT_HTTP_ERR_GAP), "gap");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_curl_get),
		cmocka_unit_test(test_python_post),
		cmocka_unit_test(test_chunked_upload),
		cmocka_unit_test(test_keepalive_sequence),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_http10),
		cmocka_unit_test(test_expect_continue),
		cmocka_unit_test(test_huge_header),
		cmocka_unit_test(test_long_values_truncated),
		cmocka_unit_test(test_traceparent),
		cmocka_unit_test(test_tls_and_http2),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_random_binary),
		cmocka_unit_test(test_gap_in_body),
		cmocka_unit_test(test_gap_in_head),
		cmocka_unit_test(test_gap_in_chunked),
		cmocka_unit_test(test_resync),
		cmocka_unit_test(test_privacy),
		cmocka_unit_test(test_null_callbacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
