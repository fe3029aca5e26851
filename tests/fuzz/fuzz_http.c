// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz harness for the HTTP/1.x parsers (src/proto/http.h), one build
 * per direction: RT_FUZZ_HTTP_REQ or RT_FUZZ_HTTP_RESP.
 *
 * Input: byte 0 holds flags, bytes 1-2 seed the split and gap choices, the
 * rest is the byte stream. The stream is fed in random pieces with random
 * uncaptured stretches (the way head+tail captures arrive), then eof; the
 * callbacks check the API's promises and abort() when one is broken.
 *
 * With RT_LIBFUZZER it is a libFuzzer target; without, replay.c's main()
 * replays the files and folders named on the command line (the corpus, as
 * a unit test).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http.h"

#if !defined(RT_FUZZ_HTTP_REQ) && !defined(RT_FUZZ_HTTP_RESP)
#error "define RT_FUZZ_HTTP_REQ or RT_FUZZ_HTTP_RESP"
#endif

enum {
	F_PIECES = 1 << 0, /* feed in random pieces, not whole */
	F_GAPS = 1 << 1, /* drop random stretches and report them as gaps */
	F_PARTIAL = 1 << 2, /* classify the stream as an incomplete SSE event */
	F_RESYNC = 1 << 3, /* start as if joined mid-stream */
	F_HEAD = 1 << 4, /* (responses) the first answers a HEAD request */
};

struct state {
	int begun, headers, completed, errors;
};

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_http: broken promise: %s (line %d)\n", #cond,        \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_str(const char *s, size_t size)
{
	CHECK(memchr(s, '\0', size) != NULL);
}

static void check_reported(uint32_t n, const struct rt_http_reported *rep)
{
	CHECK(n <= RT_HTTP_REPORTED_MAX);
	for (uint32_t i = 0; i < n; i++) {
		check_str(rep[i].name, sizeof(rep[i].name));
		CHECK(rep[i].name[0] != '\0');
	}
}

static void on_begin(void *ctx)
{
	struct state *s = ctx;

	CHECK(s->errors == 0);
	CHECK(s->begun == s->completed);
	s->begun++;
}

static void on_error(void *ctx, enum rt_http_error err)
{
	struct state *s = ctx;

	CHECK(s->errors == 0);
	CHECK(err >= RT_HTTP_ERR_TLS && err <= RT_HTTP_ERR_TOO_LARGE);
	s->errors++;
}

#ifdef RT_FUZZ_HTTP_REQ
static void check_req(struct state *s, const struct rt_http_req_info *i)
{
	CHECK(s->errors == 0);
	check_str(i->method, sizeof(i->method));
	check_str(i->path, sizeof(i->path));
	check_str(i->request_id, sizeof(i->request_id));
	check_str(i->trace_id, sizeof(i->trace_id));
	check_str(i->parent_span_id, sizeof(i->parent_span_id));
	check_str(i->content_type, sizeof(i->content_type));
	check_str(i->user_agent, sizeof(i->user_agent));
	CHECK(i->trace_id[0] == '\0' || strlen(i->trace_id) == 32);
}

static void on_req_headers(void *ctx, const struct rt_http_req_info *i)
{
	struct state *s = ctx;

	check_req(s, i);
	CHECK(s->headers == s->completed && s->begun == s->completed + 1);
	s->headers++;
}

static void on_req_complete(void *ctx, const struct rt_http_req_info *i)
{
	struct state *s = ctx;

	check_req(s, i);
	CHECK(s->headers == s->completed + 1);
	s->completed++;
}

static const struct rt_http_req_cb cb = {
	.on_begin = on_begin,
	.on_headers = on_req_headers,
	.on_complete = on_req_complete,
	.on_error = on_error,
};

#define parser rt_http_req_parser
#define parser_new rt_http_req__new
#define parser_free rt_http_req__free
#define parser_feed rt_http_req_feed
#define parser_gap rt_http_req_gap
#define parser_resync rt_http_req_resync
#else
static void on_resp_headers(void *ctx, const struct rt_http_resp_info *i)
{
	struct state *s = ctx;

	CHECK(s->errors == 0);
	CHECK(s->headers == s->completed && s->begun == s->completed + 1);
	CHECK(i->status >= 200 && i->status <= 999);
	check_reported(i->n_reported, i->reported);
	s->headers++;
}

static void on_sse_event(void *ctx, const struct rt_sse_event *ev)
{
	struct state *s = ctx;

	CHECK(s->errors == 0);
	CHECK(s->headers == s->completed + 1);
	CHECK(ev->kind >= RT_SSE_CONTENT && ev->kind <= RT_SSE_OTHER);
	CHECK(ev->tokens_out >= -1);
	check_reported(ev->n_reported, ev->reported);
}

static void on_resp_complete(void *ctx, const struct rt_http_resp_done *d)
{
	struct state *s = ctx;

	CHECK(s->errors == 0);
	CHECK(s->headers == s->completed + 1);
	CHECK(d->tokens_out >= -1);
	check_reported(d->n_reported, d->reported);
	s->completed++;
}

static const struct rt_http_resp_cb cb = {
	.on_begin = on_begin,
	.on_headers = on_resp_headers,
	.on_sse_event = on_sse_event,
	.on_complete = on_resp_complete,
	.on_error = on_error,
};

#define parser rt_http_resp_parser
#define parser_new rt_http_resp__new
#define parser_free rt_http_resp__free
#define parser_feed rt_http_resp_feed
#define parser_gap rt_http_resp_gap
#define parser_resync rt_http_resp_resync
#endif

static uint32_t next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state st = { 0 };
	struct rt_sse_event ev;
	struct parser *p;
	uint32_t x;
	uint8_t flags;
	size_t pos = 0;
	int ret;

	if (size < 3)
		return 0;
	flags = data[0];
	x = 0x9e3779b9u ^ (uint32_t)data[1] << 8 ^ data[2];
	data += 3;
	size -= 3;

	rt_sse_classify((const char *)data, size, flags & F_PARTIAL, &ev);
	CHECK(ev.kind >= RT_SSE_CONTENT && ev.kind <= RT_SSE_OTHER);
	check_reported(ev.n_reported, ev.reported);

	p = parser_new();
	if (!p)
		return 0;
	if (flags & F_RESYNC)
		parser_resync(p, &cb, &st);
#ifdef RT_FUZZ_HTTP_RESP
	rt_http_resp_expect_head(p, flags & F_HEAD);
#endif
	while (pos < size) {
		size_t n = size - pos;

		if (flags & F_PIECES)
			n = 1 + next(&x) % (n < 300 ? n : 300);
		ret = parser_feed(p, data + pos, n, &cb, &st);
		CHECK(ret == 0 || (ret == -EPROTO && st.errors == 1));
		pos += n;
		if ((flags & F_GAPS) && (next(&x) & 3) == 0) {
			uint64_t g = next(&x) % 2048;

			ret = parser_gap(p, g, &cb, &st);
			CHECK(ret == 0 || (ret == -EPROTO && st.errors == 1));
			pos += g < size - pos ? g : size - pos;
		}
	}
#ifdef RT_FUZZ_HTTP_RESP
	rt_http_resp_eof(p, &cb, &st);
#endif
	CHECK(st.completed <= st.begun && st.begun <= st.completed + 1);
	parser_free(p);
	return 0;
}
