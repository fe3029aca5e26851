// SPDX-License-Identifier: BSD-2-Clause
/*
 * The message engine reads an untapped head, chunk framing and SSE data a
 * run at a time, and a tapped one a byte at a time (the tap needs every
 * byte's class). Both must report the same: over the fuzz corpora of both
 * directions, fed in the same random pieces and gaps, a tapped and an
 * untapped parser make the same calls with the same values. And without
 * gaps, how the bytes are split changes nothing at all (SSE events and
 * JSON facts included), whole feeds and single bytes alike.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http.h"
#include "http_int.h"

struct log {
	char *buf;
	size_t len, cap;
};

static void logf_(struct log *l, const char *fmt, ...)
{
	va_list ap;
	char tmp[1024];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	if ((size_t)n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	if (l->len + (size_t)n + 1 > l->cap) {
		l->cap = (l->len + (size_t)n + 1) * 2;
		l->buf = realloc(l->buf, l->cap);
		assert_non_null(l->buf);
	}
	memcpy(l->buf + l->len, tmp, (size_t)n + 1);
	l->len += (size_t)n;
}

static void log_reported(struct log *l, uint32_t n, const struct rt_http_reported *r)
{
	for (uint32_t i = 0; i < n; i++)
		logf_(l, " %s=%.17g", r[i].name, r[i].value);
}

/* ---- requests ------------------------------------------------------------ */

static void log_req(struct log *l, const char *what, const struct rt_http_req_info *i)
{
	logf_(l,
	      "%s %s %s rid=%s tid=%s psid=%s ct=%s ua=%s cl=%llu ch=%d ka=%d ec=%d inc=%d g=%d\n",
	      what, i->method, i->path, i->request_id, i->trace_id, i->parent_span_id,
	      i->content_type, i->user_agent, (unsigned long long)i->content_length, i->chunked,
	      i->keep_alive, i->expect_continue, i->incomplete, i->guessed);
}

static void req_begin(void *ctx)
{
	logf_(ctx, "begin\n");
}

static void req_headers(void *ctx, const struct rt_http_req_info *i)
{
	log_req(ctx, "headers", i);
}

static void req_complete(void *ctx, const struct rt_http_req_info *i)
{
	log_req(ctx, "complete", i);
}

static void any_error(void *ctx, enum rt_http_error err)
{
	logf_(ctx, "error %d\n", (int)err);
}

static const struct rt_http_req_cb req_cb = {
	.on_begin = req_begin,
	.on_headers = req_headers,
	.on_complete = req_complete,
	.on_error = any_error,
};

/* ---- responses ----------------------------------------------------------- */

static bool log_bodies; /* SSE events and JSON facts: not read by a tapped parser */

static void resp_begin(void *ctx)
{
	logf_(ctx, "begin\n");
}

static void resp_headers(void *ctx, const struct rt_http_resp_info *i)
{
	logf_(ctx, "headers %d ch=%d sse=%d json=%d close=%d nb=%d cl=%llu", i->status, i->chunked,
	      i->sse, i->json, i->close_delimited, i->no_body,
	      (unsigned long long)i->content_length);
	log_reported(ctx, i->n_reported, i->reported);
	logf_(ctx, "\n");
}

static void resp_event(void *ctx, const struct rt_sse_event *ev)
{
	if (!log_bodies)
		return;
	logf_(ctx, "event %d inc=%d tok=%lld id=%s slot=%d", (int)ev->kind, ev->incomplete,
	      (long long)ev->tokens_out, ev->response_id, ev->id_slot);
	log_reported(ctx, ev->n_reported, ev->reported);
	logf_(ctx, "\n");
}

static void resp_complete(void *ctx, const struct rt_http_resp_done *d)
{
	logf_(ctx, "complete inc=%d g=%d", d->incomplete, d->guessed);
	if (log_bodies) {
		logf_(ctx, " tok=%lld id=%s slot=%d", (long long)d->tokens_out, d->response_id,
		      d->id_slot);
		log_reported(ctx, d->n_reported, d->reported);
	}
	logf_(ctx, "\n");
}

static const struct rt_http_resp_cb resp_cb = {
	.on_begin = resp_begin,
	.on_headers = resp_headers,
	.on_sse_event = resp_event,
	.on_complete = resp_complete,
	.on_error = any_error,
};

/* ---- feeding ------------------------------------------------------------- */

static void no_tap(void *ctx, const uint8_t *p, size_t n, unsigned int cls)
{
	(void)ctx;
	(void)p;
	(void)n;
	(void)cls;
}

static uint32_t next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

enum { PIECES_RANDOM, PIECES_WHOLE, PIECES_BYTES };

/* The stream in pieces (and, with gaps, uncaptured stretches) into one parser. */
static void run(bool resp, bool tapped, const uint8_t *data, size_t size, uint32_t seed, int pieces,
		bool gaps, struct log *l)
{
	struct rt_http_req_parser *rq = NULL;
	struct rt_http_resp_parser *rs = NULL;
	uint32_t x = seed | 1;
	size_t pos = 0;
	int ret;

	if (resp) {
		rs = rt_http_resp__new();
		assert_non_null(rs);
		if (tapped)
			rt_http_resp_set_tap(rs, no_tap, NULL);
	} else {
		rq = rt_http_req__new();
		assert_non_null(rq);
		if (tapped)
			rt_http_req_set_tap(rq, no_tap, NULL);
	}
	while (pos < size) {
		size_t n = size - pos;

		if (pieces == PIECES_RANDOM)
			n = 1 + next(&x) % (n < 300 ? n : 300);
		else if (pieces == PIECES_BYTES)
			n = 1;
		ret = resp ? rt_http_resp_feed(rs, data + pos, n, &resp_cb, l) :
			     rt_http_req_feed(rq, data + pos, n, &req_cb, l);
		logf_(l, "feed %d\n", ret);
		pos += n;
		if (gaps && (next(&x) & 3) == 0) {
			uint64_t g = next(&x) % 2048;

			ret = resp ? rt_http_resp_gap(rs, g, &resp_cb, l) :
				     rt_http_req_gap(rq, g, &req_cb, l);
			logf_(l, "gap %d\n", ret);
			pos += g < size - pos ? g : size - pos;
		}
	}
	if (resp) {
		rt_http_resp_eof(rs, &resp_cb, l);
		rt_http_resp__free(rs);
	} else {
		rt_http_req__free(rq);
	}
}

static void same(const char *what, const char *name, const struct log *a, const struct log *b)
{
	if (a->len == b->len && (!a->len || !memcmp(a->buf, b->buf, a->len)))
		return;
	fprintf(stderr, "%s differ on %s:\n--- a\n%.*s--- b\n%.*s", what, name, (int)a->len,
		a->buf ? a->buf : "", (int)b->len, b->buf ? b->buf : "");
	fail();
}

static size_t check_input(bool resp, const char *name, const uint8_t *data, size_t size)
{
	struct log a = { 0 }, b = { 0 };
	size_t runs = 0;

	for (uint32_t seed = 1; seed <= 8; seed++) {
		for (int gaps = 0; gaps <= 1; gaps++) {
			log_bodies = false;
			a.len = b.len = 0;
			run(resp, true, data, size, seed * 2654435761u, PIECES_RANDOM, gaps, &a);
			run(resp, false, data, size, seed * 2654435761u, PIECES_RANDOM, gaps, &b);
			same("tapped and untapped", name, &a, &b);
			runs++;
		}
	}
	/* no gaps: the split changes nothing, bodies included ("feed" lines differ in number) */
	log_bodies = true;
	for (int k = 0; k < 3; k++) {
		struct log *pair[2] = { &a, &b };

		a.len = b.len = 0;
		run(resp, false, data, size, 7 + (uint32_t)k, PIECES_WHOLE, false, pair[0]);
		run(resp, false, data, size, 7 + (uint32_t)k, k ? PIECES_RANDOM : PIECES_BYTES,
		    false, pair[1]);
		/* drop the feed lines: their count depends on the split */
		for (int j = 0; j < 2; j++) {
			struct log *l = pair[j];
			size_t w = 0;

			for (size_t r = 0; r < l->len;) {
				const char *nl = memchr(l->buf + r, '\n', l->len - r);
				size_t ll = (size_t)(nl - (l->buf + r)) + 1;

				if (strncmp(l->buf + r, "feed ", 5)) {
					memmove(l->buf + w, l->buf + r, ll);
					w += ll;
				}
				r += ll;
			}
			l->len = w;
		}
		same("split and whole", name, &a, &b);
		runs++;
	}
	free(a.buf);
	free(b.buf);
	return runs;
}

static size_t corpus(bool resp, const char *sub)
{
	char dir[4096], path[8192];
	struct dirent *de;
	size_t files = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", RT_SOURCE_DIR, sub);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		static uint8_t buf[1 << 20];
		size_t n;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		/* the fuzz harness's 3 leading bytes are its flags and seeds */
		if (n > 3)
			check_input(resp, de->d_name, buf + 3, n - 3);
		files++;
	}
	closedir(d);
	return files;
}

static void test_requests(void **state)
{
	(void)state;
	assert_true(corpus(false, "http_req") > 10);
}

static void test_responses(void **state)
{
	(void)state;
	assert_true(corpus(true, "http_resp") > 10);
	assert_true(corpus(true, "timings") > 0);
}

/* The usual shapes, spelled out: a streamed chat response and a request with long values. */
static void test_shapes(void **state)
{
	static const char *const events[] = {
		"data: {\"content\":\"hi\",\"x\":1}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\\\"b\"}}]}\r\n\r\n",
		": keep-alive\n\nevent: x\ndata: {\"id\":\"c-1\",\n",
		"data: \"usage\":{\"completion_tokens\":7}}\n\n",
		"data: {\"choices\":[],\"usage\":{\"completion_tokens\":-12,\"t\":1.5e3}}\n\n",
		"data: [DONE]\n\n",
	};
	static char req[40000], resp[4096];
	int n;

	(void)state;
	n = snprintf(resp, sizeof(resp),
		     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nServer-Timing: "
		     "a;dur=1.5, b;desc=x;dur=2\r\nX-Process-Time: 0.25\r\n"
		     "Transfer-Encoding: chunked\r\n\r\n");
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		n += snprintf(resp + n, sizeof(resp) - (size_t)n, "%zx\r\n%s\r\n",
			      strlen(events[i]), events[i]);
	n += snprintf(resp + n, sizeof(resp) - (size_t)n, "0\r\n\r\n");
	check_input(true, "shape-sse", (const uint8_t *)resp, (size_t)n);
	n = snprintf(req, sizeof(req),
		     "POST /v1/chat/completions?x=%0300d HTTP/1.1\r\nHost: h\r\n"
		     "User-Agent:   %0600d  \r\nX-Request-Id: \t abc \t\r\n"
		     "Content-Length: 5\r\nX-Other: %01000d\r\n\r\nhello",
		     1, 2, 3);
	assert_true(n > 0);
	check_input(false, "shape-req", (const uint8_t *)req, (size_t)n);
	/* a head past RT_HTTP_HEAD_MAX fails at the same byte either way */
	n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nX-Big: %020000d\r\n\r\n", 4);
	assert_true(n > 0);
	check_input(false, "shape-big", (const uint8_t *)req, (size_t)n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_responses),
		cmocka_unit_test(test_shapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
