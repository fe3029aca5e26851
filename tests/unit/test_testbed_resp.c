// SPDX-License-Identifier: BSD-2-Clause
/* reqtrace-load's response checker (src/testbed/load/resp.c). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "load/resp.h"
#include "load/stats.h"

#define HEAD_SSE                                                                                   \
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"     \
	"x-request-id: r1\r\n\r\n"

static const char *const ev_tok = "data: {\"choices\":[{\"index\":0,\"text\":\" hi\"}]}\n\n";
static const char *const ev_usage =
	"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\n";
static const char *const ev_done = "data: [DONE]\n\n";

/* Builds a chunked SSE response of the given events (one chunk each). */
static char *sse(const char *const *events, int n, const char *head)
{
	static char buf[8192];
	size_t len = 0;
	int i;

	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s", head);
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%zx\r\n%s\r\n",
					strlen(events[i]), events[i]);
	snprintf(buf + len, sizeof(buf) - len, "0\r\n\r\n");
	return buf;
}

/* Feeds s in pieces of `step` bytes; returns the final result. */
static int feed(struct ld_resp *r, const char *s, size_t step)
{
	size_t off = 0, n, len = strlen(s);
	int rc = 0;

	while (off < len && rc == 0) {
		n = len - off < step ? len - off : step;
		rc = ld_resp_feed(r, s + off, n);
		off += n;
	}
	return rc;
}

static int check_stream(const char *s, size_t step, struct ld_resp *r)
{
	ld_resp_init(r, true, "r1", 16);
	return feed(r, s, step);
}

static void test_stream_ok(void **state)
{
	const char *evs[] = { ev_tok, ev_tok, ev_usage, ev_done };
	const char *s = sse(evs, 4, HEAD_SSE);
	struct ld_resp r;
	size_t step;

	(void)state;
	/* any split of the bytes gives the same verdict */
	for (step = 1; step < 64; step += 7) {
		assert_int_equal(check_stream(s, step, &r), 1);
		assert_int_equal(r.events, 2);
		assert_int_equal(r.completion_tokens, 2);
		assert_true(r.done_seen);
		assert_true(r.keep_alive);
		ld_resp_fini(&r);
	}
}

static void test_stream_errors(void **state)
{
	const char *no_done[] = { ev_tok, ev_tok, ev_usage };
	const char *mismatch[] = { ev_tok, ev_usage, ev_done };
	const char *bad_json[] = { ev_tok, "data: {\"choices\":[{\"text\":\"x\"}\n\n", ev_usage,
				   ev_done };
	const char *after_done[] = { ev_tok, ev_tok, ev_usage, ev_done, ev_tok };
	const char *no_choices[] = { "data: {\"x\":1}\n\n", ev_usage, ev_done };
	const char *bad_line[] = { "garbage line\n\n", ev_done };
	const char *after_usage[] = { ev_tok, ev_usage, ev_tok, ev_done };
	const char *ok[] = { ev_tok, ev_tok, ev_usage, ev_done };
	struct {
		const char *what, *resp;
	} cases[] = {
		{ "no [DONE]", sse(no_done, 3, HEAD_SSE) },
		{ "usage mismatch", sse(mismatch, 3, HEAD_SSE) },
		{ "bad json", sse(bad_json, 4, HEAD_SSE) },
		{ "event after done", sse(after_done, 5, HEAD_SSE) },
		{ "no choices", sse(no_choices, 3, HEAD_SSE) },
		{ "bad line", sse(bad_line, 2, HEAD_SSE) },
		{ "content after usage", sse(after_usage, 4, HEAD_SSE) },
		{ "status 500", sse(ok, 4,
				    "HTTP/1.1 500 Oops\r\nContent-Type: text/event-stream\r\n"
				    "Transfer-Encoding: chunked\r\n\r\n") },
		{ "wrong id", sse(ok, 4,
				  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
				  "Transfer-Encoding: chunked\r\nx-request-id: r2\r\n\r\n") },
		{ "not sse", sse(ok, 4,
				 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Transfer-Encoding: chunked\r\n\r\n") },
		{ "bad chunk size", HEAD_SSE "zz\r\nabc\r\n0\r\n\r\n" },
		{ "chunk without crlf", HEAD_SSE "3\r\nabcX\r\n0\r\n\r\n" },
		{ "bad status line", "HTTP/1.1 2x0 OK\r\n\r\n" },
	};
	struct ld_resp r;
	char *copy;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		copy = strdup(cases[i].resp); /* sse() reuses its buffer */
		assert_non_null(copy);
		if (check_stream(copy, 5, &r) != -EPROTO)
			fail_msg("%s: accepted", cases[i].what);
		assert_true(r.err[0] != '\0');
		ld_resp_fini(&r);
		free(copy);
	}
	/* too many tokens for max_tokens */
	ld_resp_init(&r, true, NULL, 1);
	assert_int_equal(feed(&r, sse(ok, 4, HEAD_SSE), 9), -EPROTO);
	ld_resp_fini(&r);
}

static void test_stream_truncated(void **state)
{
	const char *evs[] = { ev_tok, ev_tok, ev_usage, ev_done };
	char *s = strdup(sse(evs, 4, HEAD_SSE));
	struct ld_resp r;

	(void)state;
	s[strlen(s) - 20] = '\0';
	assert_int_equal(check_stream(s, 11, &r), 0);
	assert_int_equal(ld_resp_feed(&r, NULL, 0), -EPROTO); /* closed mid-response */
	ld_resp_fini(&r);
	free(s);
}

static void test_json(void **state)
{
	const char *body = "{\"choices\":[{\"index\":0,\"text\":\" a b\"}],"
			   "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}";
	char resp[1024];
	struct ld_resp r;

	(void)state;
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n%s",
		 strlen(body), body);
	ld_resp_init(&r, false, NULL, -1);
	assert_int_equal(feed(&r, resp, 3), 1);
	assert_int_equal(r.events, 1);
	assert_int_equal(r.completion_tokens, 2);
	assert_false(r.keep_alive);
	/* bytes past the end are an error: the client never pipelines */
	assert_int_equal(ld_resp_feed(&r, "x", 1), -EPROTO);
	ld_resp_fini(&r);

	/* close-delimited */
	snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n%s",
		 body);
	ld_resp_init(&r, false, NULL, -1);
	assert_int_equal(feed(&r, resp, 50), 0);
	assert_int_equal(ld_resp_feed(&r, NULL, 0), 1);
	ld_resp_fini(&r);

	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n"
		 "{\"a\":1}");
	ld_resp_init(&r, false, NULL, -1);
	assert_int_equal(feed(&r, resp, 50), -EPROTO);
	ld_resp_fini(&r);
}

static void test_stats(void **state)
{
	double v[] = { 5, 1, 4, 2, 3 };
	struct ld_result res[3] = { 0 };
	struct ld_summary s;
	struct tb_buf b;

	(void)state;
	assert_true(ld_percentile(v, 5, 50) == 3);
	assert_true(ld_percentile(v, 5, 99) == 5);
	assert_true(ld_percentile(v, 0, 50) == -1);

	res[0] = (struct ld_result){ .sent = true,
				     .ok = true,
				     .start_ns = 1000000000,
				     .end_ns = 1100000000,
				     .ttft_ns = 1010000000,
				     .tokens = 4 };
	res[1] = (struct ld_result){ .sent = true,
				     .ok = false,
				     .start_ns = 1000000000,
				     .end_ns = 2000000000,
				     .tokens = -1 };
	res[2] = (struct ld_result){ .sent = false };
	assert_int_equal(ld_summarize(res, 3, &s), 0);
	assert_int_equal(s.requests, 2);
	assert_int_equal(s.ok, 1);
	assert_int_equal(s.errors, 1);
	assert_int_equal(s.not_sent, 1);
	assert_true(s.duration_s > 0.999 && s.duration_s < 1.001);
	assert_true(s.ttft_p50_ms > 9.99 && s.ttft_p50_ms < 10.01);
	assert_true(s.tokens_per_s > 3.99 && s.tokens_per_s < 4.01);

	/* send_ns is start_ns; connect_ns null on a kept-alive connection */
	tb_buf_init(&b, 4096);
	assert_int_equal(ld_result_json(&res[0], &b), 0);
	assert_non_null(strstr(b.p, "\"send_ns\":1000000000,\"connect_ns\":null,"));
	tb_buf_reset(&b);
	res[0].connect_ns = 999000000;
	assert_int_equal(ld_result_json(&res[0], &b), 0);
	assert_non_null(strstr(b.p, "\"connect_ns\":999000000,"));
	tb_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_ok),
		cmocka_unit_test(test_stream_errors),
		cmocka_unit_test(test_stream_truncated),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_stats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
