// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/1.x response parser with Server-Sent Events. Streams in the shapes
 * real servers write (OpenAI completions and chat, vLLM, llama.cpp) are fed
 * whole, at every split point and byte by byte: callbacks and their
 * contents must not change, and each must come in the feed holding the
 * byte that triggers it. Then gaps (head and tail captures), malformed
 * input, and the privacy promise.
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

#define MAX_CALLS 128
#define MAX_EVENTS 128
#define MAX_MSGS 8

struct rec {
	char log[16384];
	size_t len;
	int feed;
	int n_calls;
	int call_feed[MAX_CALLS];
	int n_begin, n_headers, n_events, n_complete, n_error;
	enum rt_http_error err;
	struct rt_http_resp_info info[MAX_MSGS];
	struct rt_sse_event ev[MAX_EVENTS];
	struct rt_http_resp_done done[MAX_MSGS];
};

static void logf_(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct rec *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r->len += (size_t)vsnprintf(r->log + r->len, sizeof(r->log) - r->len, fmt, ap);
	va_end(ap);
	assert_true(r->len < sizeof(r->log));
}

static void log_call(struct rec *r)
{
	assert_true(r->n_calls < MAX_CALLS);
	r->call_feed[r->n_calls++] = r->feed;
}

static void log_reported(struct rec *r, uint32_t n, const struct rt_http_reported *rep)
{
	assert_true(n <= RT_HTTP_REPORTED_MAX);
	for (uint32_t i = 0; i < n; i++)
		logf_(r, " %s=%g", rep[i].name, rep[i].value);
	logf_(r, "\n");
}

static void on_begin(void *ctx)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_begin, r->n_complete);
	r->n_begin++;
	logf_(r, "B\n");
	log_call(r);
}

static void on_headers(void *ctx, const struct rt_http_resp_info *i)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_begin, r->n_complete + 1);
	if (r->n_headers < MAX_MSGS)
		r->info[r->n_headers] = *i;
	r->n_headers++;
	logf_(r, "H %d ch%d sse%d json%d close%d nobody%d cl%llu", i->status, i->chunked, i->sse,
	      i->json, i->close_delimited, i->no_body, (unsigned long long)i->content_length);
	log_reported(r, i->n_reported, i->reported);
	log_call(r);
}

static void on_sse_event(void *ctx, const struct rt_sse_event *ev)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_headers, r->n_complete + 1);
	if (r->n_events < MAX_EVENTS)
		r->ev[r->n_events] = *ev;
	r->n_events++;
	logf_(r, "S %d%s tok%lld", ev->kind, ev->incomplete ? " inc" : "",
	      (long long)ev->tokens_out);
	log_reported(r, ev->n_reported, ev->reported);
	log_call(r);
}

static void on_complete(void *ctx, const struct rt_http_resp_done *d)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_headers, r->n_complete + 1);
	if (r->n_complete < MAX_MSGS)
		r->done[r->n_complete] = *d;
	r->n_complete++;
	logf_(r, "C%s tok%lld", d->incomplete ? " inc" : "", (long long)d->tokens_out);
	log_reported(r, d->n_reported, d->reported);
	log_call(r);
}

static void on_error(void *ctx, enum rt_http_error err)
{
	struct rec *r = ctx;

	assert_int_equal(r->n_error, 0);
	r->n_error++;
	r->err = err;
	logf_(r, "E %s\n", rt_http_error_name(err));
	log_call(r);
}

static const struct rt_http_resp_cb cb = {
	.on_begin = on_begin,
	.on_headers = on_headers,
	.on_sse_event = on_sse_event,
	.on_complete = on_complete,
	.on_error = on_error,
};

static struct rec *rec_new(void)
{
	struct rec *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	return r;
}

static int feed(struct rt_http_resp_parser *p, struct rec *r, const void *buf, size_t n)
{
	int err = rt_http_resp_feed(p, buf, n, &cb, r);

	r->feed++;
	return err;
}

static int feed_str(struct rt_http_resp_parser *p, struct rec *r, const char *s)
{
	return feed(p, r, s, strlen(s));
}

/* Feeds [0, split) then [split, n), or byte by byte when split < 0; then eof. */
static struct rec *run(const char *in, size_t n, long split)
{
	struct rt_http_resp_parser *p = rt_http_resp__new();
	struct rec *r = rec_new();

	assert_non_null(p);
	if (split < 0) {
		for (size_t i = 0; i < n; i++)
			feed(p, r, in + i, 1);
	} else {
		feed(p, r, in, (size_t)split);
		feed(p, r, in + split, n - (size_t)split);
	}
	rt_http_resp_eof(p, &cb, r);
	rt_http_resp__free(p);
	return r;
}

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
			/* byte-by-byte feed index b: the byte that triggered it, or
			 * n for eof (feed 2 of a split run) */
			int b = bytes->call_feed[k];
			int want = b == (int)n ? 2 : (size_t)b < i ? 0 : 1;

			if (s->call_feed[k] != want)
				fail_msg("split at %zu: callback %d in feed %d, byte %d\n%s", i, k,
					 s->call_feed[k], b, s->log);
		}
		free(s);
	}
	free(bytes);
	return whole;
}

#define CHECK(s) check_splits((s), strlen(s), 1)

/* Appends text as chunks of the given sizes (cycled), then the last chunk. */
static void chunked(char *out, size_t cap, const char *text, const size_t *sizes, size_t n_sizes)
{
	size_t len = strlen(out), n = strlen(text), k = 0;

	while (n) {
		size_t c = sizes[k++ % n_sizes];

		if (c > n)
			c = n;
		len += (size_t)snprintf(out + len, cap - len, "%zx%s\r\n%.*s\r\n", c,
					k % 3 == 0 ? ";ext=1" : "", (int)c, text);
		text += c;
		n -= c;
	}
	snprintf(out + len, cap - len, "0\r\n\r\n");
}

static const char sse_head[] = "HTTP/1.1 200 OK\r\n"
			       "Content-Type: text/event-stream; charset=utf-8\r\n"
			       "Transfer-Encoding: chunked\r\n"
			       "Cache-Control: no-cache\r\n"
			       "Server-Timing: queue;dur=1.5, prefill;desc=\"a;b\";dur=12.25, x\r\n"
			       "openai-processing-ms: 321\r\n"
			       "\r\n";

static const char completions[] =
	"data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\","
	"\"choices\":[{\"text\":\"Hello\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}"
	"\n\n"
	": ping\n\n"
	"data: {\"id\":\"cmpl-1\",\"choices\":[{\"text\":\" world\",\"index\":0}]}\n\n"
	"data: {\"id\":\"cmpl-1\",\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":"
	"\"length\"}]}\n\n"
	"data: [DONE]\n\n";

static void test_openai_completions(void **state)
{
	static const size_t sizes[] = { 7, 60, 1, 33, 200 };
	char in[4096] = "";
	struct rec *r;

	(void)state;
	strcpy(in, sse_head);
	chunked(in, sizeof(in), completions, sizes, 5);
	r = CHECK(in);
	assert_int_equal(r->n_complete, 1);
	assert_int_equal(r->n_error, 0);
	assert_int_equal(r->info[0].status, 200);
	assert_true(r->info[0].sse);
	assert_true(r->info[0].chunked);
	assert_false(r->info[0].close_delimited);
	assert_int_equal(r->info[0].n_reported, 3);
	assert_string_equal(r->info[0].reported[0].name, "server-timing.queue");
	assert_true(r->info[0].reported[0].value == 1.5);
	assert_string_equal(r->info[0].reported[1].name, "server-timing.prefill");
	assert_true(r->info[0].reported[1].value == 12.25);
	assert_string_equal(r->info[0].reported[2].name, "openai-processing-ms");
	assert_int_equal(r->n_events, 5);
	assert_int_equal(r->ev[0].kind, RT_SSE_CONTENT);
	assert_int_equal(r->ev[1].kind, RT_SSE_EMPTY); /* keep-alive comment */
	assert_int_equal(r->ev[2].kind, RT_SSE_CONTENT);
	assert_int_equal(r->ev[3].kind, RT_SSE_EMPTY);
	assert_int_equal(r->ev[4].kind, RT_SSE_DONE);
	assert_false(r->done[0].incomplete);
	free(r);
}

/* vLLM / OpenAI chat with include_usage, CRLF line endings (sse-starlette). */
static const char chat[] =
	"data: "
	"{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
	"\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":"
	"null}"
	"\r\n\r\n"
	"data: {\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}],"
	"\"usage\":null}\r\n\r\n"
	"data: {\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"}}],"
	"\"usage\":null}\r\n\r\n"
	"data: {\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
	"\"stop\"}],\"usage\":null}\r\n\r\n"
	"data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[],"
	"\"usage\":{\"prompt_tokens\":12,\"total_tokens\":14,\"completion_tokens\":2}}\r\n\r\n"
	"data: [DONE]\r\n\r\n";

static void test_chat_vllm(void **state)
{
	static const size_t sizes[] = { 100, 3, 250 };
	char in[4096] = "HTTP/1.1 200 OK\r\ndate: Mon, 01 Jan 2024 00:00:00 GMT\r\n"
			"server: uvicorn\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
			"transfer-encoding: chunked\r\n\r\n";
	struct rec *r;

	(void)state;
	chunked(in, sizeof(in), chat, sizes, 3);
	r = CHECK(in);
	assert_int_equal(r->n_events, 6);
	assert_int_equal(r->ev[0].kind, RT_SSE_EMPTY); /* role-only first delta */
	assert_int_equal(r->ev[1].kind, RT_SSE_CONTENT);
	assert_int_equal(r->ev[2].kind, RT_SSE_CONTENT);
	assert_int_equal(r->ev[3].kind, RT_SSE_EMPTY);
	assert_int_equal(r->ev[4].kind, RT_SSE_USAGE);
	assert_int_equal(r->ev[4].tokens_out, 2);
	assert_int_equal(r->ev[4].n_reported, 3);
	assert_int_equal(r->ev[5].kind, RT_SSE_DONE);
	assert_int_equal(r->n_complete, 1);
	free(r);
}

static const char llama_final[] =
	"data: {\"content\":\"\",\"id_slot\":0,\"stop\":true,\"model\":\"qwen.gguf\","
	"\"tokens_predicted\":3,\"tokens_evaluated\":5,\"stop_type\":\"eos\",\"timings\":"
	"{\"prompt_n\":5,\"prompt_ms\":12.5,\"prompt_per_token_ms\":2.5,\"prompt_per_second\":400,"
	"\"predicted_n\":3,\"predicted_ms\":30.5,\"predicted_per_token_ms\":10.1,"
	"\"predicted_per_second\":98.4}}\n\n";

/* llama.cpp's native /completion: one chunk per event, timings in the last one. */
static void test_llamacpp(void **state)
{
	static const char *const events[] = {
		"data: {\"content\":\"Hel\",\"stop\":false,\"id_slot\":0}\n\n",
		"data: {\"content\":\"lo\",\"stop\":false,\"id_slot\":0}\n\n",
		"data: {\"content\":\"\",\"stop\":false,\"id_slot\":0}\n\n",
		llama_final,
	};
	char in[4096] = "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\n"
			"Content-Type: text/event-stream\r\nServer: llama.cpp\r\n"
			"Transfer-Encoding: chunked\r\n\r\n";
	size_t len = strlen(in);
	struct rec *r;

	(void)state;
	for (int i = 0; i < 4; i++)
		len += (size_t)snprintf(in + len, sizeof(in) - len, "%zx\r\n%s\r\n",
					strlen(events[i]), events[i]);
	snprintf(in + len, sizeof(in) - len, "0\r\n\r\n");
	r = CHECK(in);
	assert_int_equal(r->n_events, 4);
	assert_int_equal(r->ev[0].kind, RT_SSE_CONTENT);
	assert_int_equal(r->ev[1].kind, RT_SSE_CONTENT);
	assert_int_equal(r->ev[2].kind, RT_SSE_EMPTY);
	assert_int_equal(r->ev[3].kind, RT_SSE_USAGE);
	assert_int_equal(r->ev[3].tokens_out, 3);
	assert_int_equal(r->ev[3].n_reported, 10);
	assert_string_equal(r->ev[3].reported[1].name, "timings.prompt_ms");
	assert_true(r->ev[3].reported[1].value == 12.5);
	free(r);
}

static void test_close_delimited(void **state)
{
	char in[2048];
	struct rec *r;

	(void)state;
	snprintf(in, sizeof(in),
		 "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
		 "data: {\"content\":\"a\"}\r\rdata: {\"content\":\"b\"}\r\r%s"
		 "data: unterminated",
		 llama_final);
	r = CHECK(in);
	assert_true(r->info[0].close_delimited);
	assert_int_equal(r->n_events, 3);
	assert_int_equal(r->ev[2].tokens_out, 3);
	assert_int_equal(r->n_complete, 1);
	assert_false(r->done[0].incomplete);
	free(r);
}

static void test_json_body(void **state)
{
	static const char body[] =
		"{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
		"\"message\":{\"role\":\"assistant\",\"content\":\"Hello there\"},"
		"\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":"
		"12,"
		"\"total_tokens\":21}}";
	static const size_t sizes[] = { 4, 9 };
	char in[2048];
	struct rec *r;

	(void)state;
	snprintf(
		in, sizeof(in),
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s"
		"HTTP/1.1 200 OK\r\nContent-Type: application/problem+json\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		strlen(body), body);
	chunked(in, sizeof(in), "{\"timings\":{\"predicted_n\":4}}", sizes, 2);
	r = CHECK(in);
	assert_int_equal(r->n_complete, 2);
	assert_true(r->info[0].json);
	assert_int_equal(r->info[0].content_length, strlen(body));
	assert_int_equal(r->n_events, 0);
	assert_int_equal(r->done[0].tokens_out, 12);
	assert_int_equal(r->done[0].n_reported, 3);
	assert_true(r->info[1].json);
	assert_int_equal(r->done[1].tokens_out, 4);
	free(r);
}

static void test_no_body_statuses(void **state)
{
	struct rec *r;

	(void)state;
	/* 100 Continue is skipped: one response, status 200 */
	r = CHECK("HTTP/1.1 100 Continue\r\n\r\n"
		  "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
		  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
		  "HTTP/1.1 204 No Content\r\nContent-Length: 99\r\n\r\n"
		  "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"
		  "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r->n_begin, 4);
	assert_int_equal(r->n_complete, 4);
	assert_int_equal(r->info[0].status, 200);
	assert_false(r->info[0].no_body);
	assert_int_equal(r->info[1].status, 204);
	assert_true(r->info[1].no_body);
	assert_int_equal(r->info[2].status, 304);
	assert_true(r->info[2].no_body);
	assert_int_equal(r->info[3].status, 200);
	assert_int_equal(r->n_error, 0);
	free(r);
}

static void test_head(void **state)
{
	struct rt_http_resp_parser *p = rt_http_resp__new();
	struct rec *r = rec_new();

	(void)state;
	rt_http_resp_expect_head(p, true);
	feed_str(p, r,
		 "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nContent-Type: application/json"
		 "\r\n\r\n");
	assert_int_equal(r->n_complete, 1);
	assert_true(r->info[0].no_body);
	assert_int_equal(r->info[0].content_length, 1234);
	/* the flag was used up: the next response has its body */
	feed_str(p, r, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
	assert_int_equal(r->n_complete, 2);
	assert_false(r->info[1].no_body);
	/* an interim response does not use it up */
	rt_http_resp_expect_head(p, true);
	feed_str(p, r, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
	assert_int_equal(r->n_complete, 3);
	assert_true(r->info[2].no_body);
	rt_http_resp__free(p);
	free(r);
}

static void test_encoded_and_other(void **state)
{
	struct rec *r;

	(void)state;
	/* a compressed stream is framed, not decoded */
	r = CHECK("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
		  "Content-Length: 20\r\n\r\ndata: [DONE]\n\n......"
		  "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops!");
	assert_int_equal(r->n_events, 0);
	assert_int_equal(r->n_complete, 2);
	assert_int_equal(r->info[1].status, 500);
	assert_int_equal(r->done[0].tokens_out, -1);
	free(r);
}

/* ---- gaps ------------------------------------------------------------------ */

static void test_gap_json_body(void **state)
{
	char *in = malloc(16384), *body;
	struct rt_http_resp_parser *p = rt_http_resp__new();
	struct rec *r = rec_new();
	size_t n, head, blen = 6000;
	const char *usage = "\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1500,"
			    "\"total_tokens\":1505}}";

	(void)state;
	assert_non_null(in);
	head = (size_t)snprintf(in, 16384,
				"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				"Content-Length: %zu\r\n\r\n",
				blen);
	body = in + head;
	strcpy(body, "{\"choices\":[{\"message\":{\"content\":\"");
	memset(body + strlen(body), 'z', blen);
	strcpy(body + blen - strlen(usage), usage);
	assert_int_equal(strlen(body), blen);
	n = head + blen;
	feed(p, r, in, 512);
	rt_http_resp_gap(p, n - 512 - 1024, &cb, r);
	feed(p, r, in + n - 1024, 1024);
	assert_int_equal(r->n_complete, 1);
	assert_true(r->done[0].incomplete);
	assert_int_equal(r->done[0].tokens_out, 1500);
	assert_int_equal(r->call_feed[r->n_calls - 1], 1);
	feed_str(p, r, "HTTP/1.1 204 No Content\r\n\r\n");
	assert_int_equal(r->n_complete, 2);
	rt_http_resp__free(p);
	free(r);
	free(in);
}

/* One write per chunk; the last event is 20 KB (the prompt echoed) with timings at its end. */
static void test_gap_large_final_event(void **state)
{
	size_t plen = 20000, cap = plen + 4096, n, ev_len;
	char *ev = malloc(cap), *w = malloc(cap);
	struct rt_http_resp_parser *p = rt_http_resp__new();
	struct rec *r = rec_new();
	const struct rt_sse_event *last;
	const char *first = "data: {\"content\":\"Hi\",\"stop\":false,\"id_slot\":0}\n\n";

	(void)state;
	assert_non_null(ev);
	assert_non_null(w);
	feed_str(p, r,
		 "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n");
	n = (size_t)snprintf(w, cap, "%zx\r\n%s\r\n", strlen(first), first);
	feed(p, r, w, n);
	assert_int_equal(r->n_events, 1);
	n = (size_t)snprintf(ev, cap, "data: {\"content\":\"\",\"stop\":true,\"prompt\":\"");
	memset(ev + n, 'q', plen);
	n += plen;
	n += (size_t)snprintf(ev + n, cap - n,
			      "\",\"tokens_predicted\":128,\"timings\":{\"prompt_n\":2000,"
			      "\"prompt_ms\":812.5,\"predicted_n\":128,\"predicted_ms\":2560.0,"
			      "\"predicted_per_second\":50.0}}\n\n");
	ev_len = n;
	n = (size_t)snprintf(w, cap, "%zx\r\n%s\r\n", ev_len, ev);
	/* the probe keeps 512 bytes of head and 1024 of tail */
	feed(p, r, w, 512);
	rt_http_resp_gap(p, n - 512 - 1024, &cb, r);
	feed(p, r, w + n - 1024, 1024);
	assert_int_equal(r->n_events, 2);
	last = &r->ev[1];
	assert_true(last->incomplete);
	assert_int_equal(last->kind, RT_SSE_USAGE);
	assert_int_equal(last->tokens_out, 128);
	assert_string_equal(last->reported[1].name, "timings.prompt_ms");
	assert_true(last->reported[1].value == 812.5);
	assert_int_equal(r->n_complete, 0);
	/* framing was kept: the last chunk ends the response */
	feed_str(p, r, "0\r\n\r\n");
	assert_int_equal(r->n_complete, 1);
	assert_true(r->done[0].incomplete);
	assert_int_equal(r->n_error, 0);
	rt_http_resp__free(p);
	free(r);
	free(ev);
	free(w);
}

static void test_gap_chunk_framing_lost(void **state)
{
	char *in = malloc(65536);
	struct rt_http_resp_parser *p = rt_http_resp__new();
	struct rec *r = rec_new();
	size_t n, start;

	(void)state;
	assert_non_null(in);
	feed_str(p, r, sse_head);
	/* a server that buffers: many chunks in one write, then the last chunk */
	n = 0;
	for (int i = 0; i < 60; i++) {
		char e[128];
		int el =
			snprintf(e, sizeof(e), "data: {\"choices\":[{\"text\":\"t%02d\"}]}\n\n", i);

		n += (size_t)snprintf(in + n, 65536 - n, "%x\r\n%s\r\n", el, e);
	}
	n += (size_t)snprintf(
		in + n, 65536 - n,
		"3c\r\ndata: {\"choices\":[],\"usage\":{\"completion_tokens\":60}}\n\n\r\n"
		"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
	start = n;
	n += (size_t)snprintf(in + n, 65536 - n, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	feed(p, r, in, 512);
	rt_http_resp_gap(p, start - 512 - 1024, &cb, r);
	feed(p, r, in + start - 1024, 1024);
	assert_int_equal(r->n_complete, 1);
	assert_true(r->done[0].incomplete);
	/* events in the head and tail are still seen; the usage event is among them */
	assert_true(r->n_events > 10);
	assert_int_equal(r->ev[0].kind, RT_SSE_CONTENT);
	assert_false(r->ev[0].incomplete);
	assert_int_equal(r->ev[r->n_events - 1].kind, RT_SSE_DONE);
	assert_true(r->ev[r->n_events - 1].incomplete);
	assert_int_equal(r->ev[r->n_events - 2].tokens_out, 60);
	feed(p, r, in + start, n - start);
	assert_int_equal(r->n_complete, 2);
	assert_int_equal(r->n_error, 0);
	rt_http_resp__free(p);
	free(r);
	free(in);
}

static void test_gap_close_delimited_and_eof(void **state)
{
	struct rt_http_resp_parser *p = rt_http_resp__new();
	struct rec *r = rec_new();

	(void)state;
	feed_str(p, r, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"cont");
	rt_http_resp_gap(p, 5000, &cb, r);
	feed_str(p, r, "\"timings\":{\"predicted_n\":9}}\n\n");
	assert_int_equal(r->n_events, 1);
	assert_int_equal(r->ev[0].tokens_out, 9);
	rt_http_resp_eof(p, &cb, r);
	assert_int_equal(r->n_complete, 1);
	assert_true(r->done[0].incomplete);
	/* cut short: a length-framed response at eof completes as incomplete */
	feed_str(p, r, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
	rt_http_resp_eof(p, &cb, r);
	assert_int_equal(r->n_complete, 2);
	assert_true(r->done[1].incomplete);
	/* eof inside the head: on_headers then on_complete */
	feed_str(p, r, "HTTP/1.1 502 Bad Gateway\r\nContent-Le");
	rt_http_resp_eof(p, &cb, r);
	assert_int_equal(r->n_complete, 3);
	assert_int_equal(r->info[2].status, 502);
	/* eof with nothing started does nothing */
	rt_http_resp_eof(p, &cb, r);
	assert_int_equal(r->n_complete, 3);
	rt_http_resp__free(p);
	free(r);
}

static void test_resync(void **state)
{
	struct rt_http_resp_parser *p = rt_http_resp__new();
	struct rec *r = rec_new();

	(void)state;
	rt_http_resp_resync(p, &cb, r);
	feed_str(p, r, "d\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
	assert_int_equal(r->n_begin, 0);
	feed_str(p, r, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(r->n_complete, 1);
	assert_int_equal(r->n_error, 0);
	rt_http_resp__free(p);
	free(r);
}

/* ---- malformed ------------------------------------------------------------- */

static void expect_error(const void *in, size_t n, enum rt_http_error want)
{
	struct rec *r = check_splits(in, n, 1);
	struct rt_http_resp_parser *p = rt_http_resp__new();
	struct rec *after = rec_new();

	if (r->n_error != 1 || r->err != want)
		fail_msg("want %s, got %d errors (%s):\n%s", rt_http_error_name(want), r->n_error,
			 rt_http_error_name(r->err), r->log);
	assert_int_equal(r->n_complete, 0);
	feed(p, after, in, n);
	assert_int_equal(feed_str(p, after, "HTTP/1.1 200 OK\r\n\r\n"), -EPROTO);
	assert_int_equal(rt_http_resp_gap(p, 1, &cb, after), -EPROTO);
	rt_http_resp_eof(p, &cb, after);
	assert_int_equal(after->n_complete, 0);
	rt_http_resp__free(p);
	free(after);
	free(r);
}

static void test_malformed(void **state)
{
	static const uint8_t server_hello[] = { 0x16, 0x03, 0x03, 0x00, 0x7a, 0x02, 0x00, 0x00 };
	static const uint8_t settings[] = { 0x00, 0x00, 0x12, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00 };
	static const char *const cases[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcdefg",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
		"HTTP/1.1 200 OK\r\nServer nginx\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 099 Low\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1  200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: b\r\n\tfolded\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		"http/1.1 200 OK\r\n\r\n",
		"<html>error</html>",
		"\x00\x00\x12\x05",
	};
	static const char nul[] = "HTTP/1.1 200 OK\r\nX-A: \0\r\n\r\n";
	uint8_t buf[256];
	uint32_t x = 99;

	(void)state;
	expect_error(server_hello, sizeof(server_hello), RT_HTTP_ERR_TLS);
	expect_error(settings, sizeof(settings), RT_HTTP_ERR_HTTP2);
	expect_error("HTTP/2 200\r\n\r\n", 14, RT_HTTP_ERR_HTTP2);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_error(cases[i],
			     i + 1 == sizeof(cases) / sizeof(cases[0]) ? 4 : strlen(cases[i]),
			     RT_HTTP_ERR_MALFORMED);
	expect_error(nul, sizeof(nul) - 1, RT_HTTP_ERR_MALFORMED);
	for (int t = 0; t < 100; t++) {
		struct rt_http_resp_parser *p = rt_http_resp__new();
		struct rec *r = rec_new();

		for (size_t i = 0; i < sizeof(buf); i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (uint8_t)(x >> 16);
		}
		if (buf[0] == 'H' || buf[0] == 0x16 || buf[0] == 0x00 || buf[0] == '\r' ||
		    buf[0] == '\n')
			buf[0] = 0xff;
		assert_int_equal(feed(p, r, buf, sizeof(buf)), -EPROTO);
		assert_int_equal(r->err, RT_HTTP_ERR_MALFORMED);
		assert_int_equal(r->n_begin, 0);
		rt_http_resp__free(p);
		free(r);
	}
}

/* ---- privacy ------------------------------------------------------------- */

__attribute__((noinline)) static bool contains(const void *hay, size_t n, const char *secret)
{
	return memmem(hay, n, secret, 8) != NULL;
}

static void test_privacy(void **state)
{
	static const char *const secrets[] = { "SECRETCOOKIE-91x", "The launch code is",
					       "Nightingale-77", "sk-proj-ABCDEFGH" };
	char in[4096], body[512], sse[1024];
	struct rec *r;

	(void)state;
	snprintf(body, sizeof(body),
		 "{\"choices\":[{\"message\":{\"content\":\"%s 0000 (%s)\"}}],\"usage\":"
		 "{\"completion_tokens\":7},\"key\":\"%s\"}",
		 secrets[1], secrets[2], secrets[3]);
	snprintf(sse, sizeof(sse), "data: {\"content\":\"%s\"}\n\ndata: %s\n\n", secrets[1], body);
	snprintf(in, sizeof(in),
		 "HTTP/1.1 200 OK\r\nSet-Cookie: sid=%s\r\nContent-Type: text/event-stream\r\n"
		 "Content-Length: %zu\r\n\r\n%s"
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
		 "%zu\r\n\r\n%s",
		 secrets[0], strlen(sse), sse, strlen(body), body);
	r = CHECK(in);
	assert_int_equal(r->n_complete, 2);
	assert_int_equal(r->n_events, 2);
	assert_int_equal(r->ev[0].kind, RT_SSE_CONTENT);
	assert_int_equal(r->done[1].tokens_out, 7);
	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
		assert_false(contains(r->info, sizeof(r->info), secrets[i]));
		assert_false(contains(r->ev, sizeof(r->ev), secrets[i]));
		assert_false(contains(r->done, sizeof(r->done), secrets[i]));
		assert_false(contains(r->log, r->len, secrets[i]));
	}
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_completions),
		cmocka_unit_test(test_chat_vllm),
		cmocka_unit_test(test_llamacpp),
		cmocka_unit_test(test_close_delimited),
		cmocka_unit_test(test_json_body),
		cmocka_unit_test(test_no_body_statuses),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_encoded_and_other),
		cmocka_unit_test(test_gap_json_body),
		cmocka_unit_test(test_gap_large_final_event),
		cmocka_unit_test(test_gap_chunk_framing_lost),
		cmocka_unit_test(test_gap_close_delimited_and_eof),
		cmocka_unit_test(test_resync),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_privacy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
