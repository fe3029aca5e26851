// SPDX-License-Identifier: BSD-2-Clause
/*
 * Recording redactor (src/export/redact.h). Two promises:
 *
 *   - nothing secret survives: Authorization, Cookie, API keys, prompt and
 *     completion words are gone from every redacted record;
 *   - nothing the parsers need is lost: the redacted bytes give the same
 *     parser callbacks (infos, SSE kinds, usage numbers) as the original
 *     ones, for streams in the shapes real clients and servers write, split
 *     at every byte boundary, at random, and captured with gaps (head and
 *     tail), and every committed fixture replays into the same spans. The
 *     one allowed difference is a value the original parse spliced across a
 *     gap (spliced(), docs/privacy.md "Known limits").
 *
 * Then the body masker's own rules, the recovery after a gap, the bounds,
 * and what a redaction costs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common/jsonw.h"
#include "proto/http.h"
#include "proto/stream.h"
#include "export/redact.h"
#include "redact_int.h"
#include "export/span_json.h"
#include "merge/pipeline.h"
#include "sources/rtrace_read.h"

/* ---- records ---------------------------------------------------------------- */

#define PID 4242
#define FD 7
#define REC_MAX 256

struct recs {
	struct rt_event_hdr *r[REC_MAX];
	int n;
	uint64_t ts;
};

static struct rt_event_hdr *rec_alloc(size_t size)
{
	struct rt_event_hdr *ev = aligned_alloc(8, (size + 7) & ~(size_t)7);

	assert_non_null(ev);
	memset(ev, 0, (size + 7) & ~(size_t)7);
	ev->size = (uint16_t)((size + 7) & ~(size_t)7);
	return ev;
}

static void recs_add(struct recs *rs, struct rt_event_hdr *ev)
{
	assert_true(rs->n < REC_MAX);
	ev->ts_ns = rs->ts += 1000;
	ev->pid = PID;
	ev->tid = PID + 1;
	rs->r[rs->n++] = ev;
}

static void recs_free(struct recs *rs)
{
	for (int i = 0; i < rs->n; i++)
		free(rs->r[i]);
	rs->n = 0;
}

static void add_accept(struct recs *rs)
{
	struct rt_ev_sock_conn *c = (void *)rec_alloc(sizeof(*c));

	c->hdr.kind = RT_EV_SOCK_ACCEPT;
	c->fd = FD;
	c->ret = FD;
	c->listen_fd = 3;
	c->local.family = c->peer.family = RT_AF_INET;
	c->local.port = 8000;
	c->peer.port = 50000;
	recs_add(rs, &c->hdr);
}

/* One syscall moving p[0..n); only head + tail of it captured when it is longer. */
static void add_io(struct recs *rs, bool recv, const char *p, size_t n, size_t head, size_t tail)
{
	size_t hl = n, tl = 0;
	struct rt_ev_sock_io *io;

	if (n > head + tail) {
		hl = head;
		tl = tail;
	}
	io = (void *)rec_alloc(sizeof(*io) + hl + tl);
	io->hdr.kind = recv ? RT_EV_SOCK_RECV : RT_EV_SOCK_SEND;
	io->fd = FD;
	io->ret = (int64_t)n;
	io->syscall = recv ? RT_SYS_READ : RT_SYS_WRITE;
	io->head_len = (uint16_t)hl;
	io->tail_len = (uint16_t)tl;
	io->local.family = io->peer.family = RT_AF_INET;
	io->local.port = 8000;
	io->peer.port = 50000;
	memcpy(io->data, p, hl);
	memcpy(io->data + hl, p + n - tl, tl);
	recs_add(rs, &io->hdr);
}

static struct rt_event_hdr *rec_dup(const struct rt_event_hdr *ev)
{
	struct rt_event_hdr *c = rec_alloc(ev->size);

	memcpy(c, ev, ev->size);
	return c;
}

static bool has(const void *hay, size_t n, const char *needle)
{
	return memmem(hay, n, needle, strlen(needle)) != NULL;
}

/* ---- what the parsers make of records, fed through the stream driver as conn.c does -- */

struct drv {
	struct rt_stream stream;
	char log[32768];
	size_t len;
};

static void logf_(struct drv *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct drv *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	d->len += (size_t)vsnprintf(d->log + d->len, sizeof(d->log) - d->len, fmt, ap);
	va_end(ap);
	assert_true(d->len < sizeof(d->log));
}

static void log_rep(struct drv *d, uint32_t n, const struct rt_http_reported *rep)
{
	for (uint32_t i = 0; i < n; i++)
		logf_(d, " %s=%g", rep[i].name, rep[i].value);
	logf_(d, "\n");
}

static void log_req(struct drv *d, const char *what, const struct rt_http_req_info *i)
{
	logf_(d, "req %s %s %s id=%s tp=%s/%s ct=%s ua=%s cl=%llu ch=%d ka=%d ec=%d inc=%d g=%d\n",
	      what, i->method, i->path, i->request_id, i->trace_id, i->parent_span_id,
	      i->content_type, i->user_agent, (unsigned long long)i->content_length, i->chunked,
	      i->keep_alive, i->expect_continue, i->incomplete, i->guessed);
}

static void d_req_begin(void *ctx)
{
	logf_(ctx, "req begin\n");
}

static void d_req_headers(void *ctx, const struct rt_http_req_info *i)
{
	log_req(ctx, "headers", i);
}

static void d_req_complete(void *ctx, const struct rt_http_req_info *i)
{
	log_req(ctx, "complete", i);
}

static void d_error(void *ctx, enum rt_http_error err)
{
	logf_(ctx, "error %d\n", err);
}

static void d_resp_begin(void *ctx)
{
	logf_(ctx, "resp begin\n");
}

static void d_resp_headers(void *ctx, const struct rt_http_resp_info *i)
{
	struct drv *d = ctx;

	logf_(d, "resp headers %d ch=%d sse=%d json=%d close=%d nobody=%d cl=%llu", i->status,
	      i->chunked, i->sse, i->json, i->close_delimited, i->no_body,
	      (unsigned long long)i->content_length);
	log_rep(d, i->n_reported, i->reported);
}

static void d_sse(void *ctx, const struct rt_sse_event *ev)
{
	struct drv *d = ctx;

	logf_(d, "sse kind=%d inc=%d tokens=%lld", ev->kind, ev->incomplete,
	      (long long)ev->tokens_out);
	log_rep(d, ev->n_reported, ev->reported);
}

static void d_resp_complete(void *ctx, const struct rt_http_resp_done *done)
{
	struct drv *d = ctx;

	logf_(d, "resp complete tokens=%lld inc=%d g=%d", (long long)done->tokens_out,
	      done->incomplete, done->guessed);
	log_rep(d, done->n_reported, done->reported);
}

static const struct rt_http_req_cb drv_req_cb = {
	.on_begin = d_req_begin,
	.on_headers = d_req_headers,
	.on_complete = d_req_complete,
	.on_error = d_error,
};

static const struct rt_http_resp_cb drv_resp_cb = {
	.on_begin = d_resp_begin,
	.on_headers = d_resp_headers,
	.on_sse_event = d_sse,
	.on_complete = d_resp_complete,
	.on_error = d_error,
};

static const struct rt_stream_ops drv_ops = {
	.req = &drv_req_cb,
	.resp = &drv_resp_cb,
};

static void drive(struct drv *d, const struct recs *rs)
{
	memset(d, 0, sizeof(*d));
	rt_stream_init(&d->stream, NULL);
	for (int k = 0; k < rs->n; k++) {
		const struct rt_ev_sock_io *io = (const void *)rs->r[k];
		bool recv = io->hdr.kind == RT_EV_SOCK_RECV;

		if (io->hdr.kind != RT_EV_SOCK_RECV && io->hdr.kind != RT_EV_SOCK_SEND)
			continue;
		if (io->ret <= 0)
			continue;
		rt_stream_feed(&d->stream, recv ? RT_STREAM_REQ : RT_STREAM_RESP, io, &drv_ops, d);
	}
	rt_stream_fini(&d->stream);
}

/* ---- conversations ------------------------------------------------------- */

static const char *const secrets[] = {
	"sk-SECRETKEY123", "COOKIESECRET",   "APIKEYSECRET",   "SETCOOKIESECRET", "PROMPTWORD",
	"promptword",	   "COMPLETIONWORD", "completionword", "67,79,77,80",	  "PROXYSECRET",
};

struct write {
	bool recv;
	const char *p;
};

#define W_MAX 16
#define N_CONVS 5

struct conv {
	const char *name;
	struct write w[W_MAX];
	int n;
};

static struct conv convs[N_CONVS];
static char conv_text[N_CONVS][W_MAX][2048];

static void add_w(struct conv *c, bool recv, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_w(struct conv *c, bool recv, const char *fmt, ...)
{
	char *buf = conv_text[c - convs][c->n];
	va_list ap;
	int len;

	assert_true(c->n < W_MAX);
	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(conv_text[0][0]), fmt, ap);
	va_end(ap);
	assert_true(len > 0 && (size_t)len < sizeof(conv_text[0][0]));
	c->w[c->n].recv = recv;
	c->w[c->n++].p = buf;
}

/* A request or response head with Content-Length, then the body. */
static void add_msg(struct conv *c, bool recv, const char *head, const char *body)
{
	add_w(c, recv, "%sContent-Length: %zu\r\n\r\n%s", head, strlen(body), body);
}

/* One chunk of a chunked body (more: "0\r\n\r\n" and what follows). */
static void add_chunk(struct conv *c, bool recv, const char *data, const char *more)
{
	add_w(c, recv, "%zx\r\n%s\r\n%s", strlen(data), data, more);
}

static const char llama_final[] =
	"data: {\"content\":\"\",\"stop\":true,\"model\":\"m\",\"tokens_predicted\":2,"
	"\"tokens_evaluated\":5,\"generation_settings\":{\"n_ctx\":4096,\"temperature\":0.8,"
	"\"stop\":[\"PROMPTWORD\"]},\"prompt\":\"PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD "
	"PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD "
	"PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD PROMPTWORD\",\"truncated\":false,"
	"\"timings\":{\"prompt_n\":5,\"prompt_ms\":7.43,\"predicted_n\":2,\"predicted_ms\":24.707,"
	"\"predicted_per_second\":80.9}}\n\n";

static int setup_convs(void **state)
{
	struct conv *c = convs;

	(void)state;
	memset(convs, 0, sizeof(convs));
	c->name = "curl completions, SSE";
	add_msg(c, true,
		"POST /v1/completions HTTP/1.1\r\nHost: localhost:8000\r\nUser-Agent: "
		"curl/8.1.2\r\n"
		"Accept: */*\r\nAuthorization: Bearer sk-SECRETKEY123\r\n"
		"Content-Type: application/json\r\nx-request-id: req-1\r\n"
		"traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n",
		"{\"model\":\"m\",\"prompt\":\"PROMPTWORD tell me\",\"stream\":true,\"n\":1}");
	add_w(c, false,
	      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
	      "Server-Timing: queue;dur=12.5, infer;dur=40\r\nx-process-time: 0.25\r\n\r\n");
	add_chunk(c, false,
		  "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1700000000,"
		  "\"choices\":[{\"index\":0,\"text\":\" COMPLETIONWORD\"}]}\n\n",
		  "");
	add_chunk(
		c, false,
		"data: "
		"{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"\"}],\"usage\":null}\n\n",
		"");
	add_chunk(c, false,
		  "data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
		  "\"completion_tokens\":2,\"total_tokens\":7}}\n\ndata: [DONE]\n\n",
		  "0\r\n\r\n");

	c++;
	c->name = "python-requests chat, cookies, logprobs";
	add_msg(c, true,
		"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
		"User-Agent: python-requests/2.31.0\r\nAccept-Encoding: gzip, deflate\r\n"
		"Accept: */*\r\nConnection: keep-alive\r\nCookie: session=COOKIESECRET; "
		"theme=dark\r\n"
		"x-api-key: APIKEYSECRET\r\nProxy-Authorization: Basic PROXYSECRET\r\n"
		"Content-Type: application/json\r\n",
		"{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"promptword "
		"please\"}], \"stream\": true}");
	add_w(c, false,
	      "HTTP/1.1 200 OK\r\ndate: Mon, 01 Jan 2024 00:00:00 GMT\r\n"
	      "content-type: text/event-stream; charset=utf-8\r\n"
	      "set-cookie: sid=SETCOOKIESECRET; Path=/\r\ntransfer-encoding: chunked\r\n"
	      "openai-processing-ms: 321\r\n\r\n");
	add_chunk(c, false,
		  "data: "
		  "{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
		  "\"delta\":{\"role\":\"assistant\"}}]}\n\n",
		  "");
	add_chunk(c, false,
		  "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
		  "\"COMPLETIONWORD\"},\"logprobs\":{\"content\":[{\"token\":\"COMPLETIONWORD\","
		  "\"logprob\":-0.25,\"bytes\":[67,79,77,80],\"top_logprobs\":[{\"completionword\":"
		  "-0.5}]}]}}]}\n\n",
		  "");
	add_chunk(c, false, ": keep-alive PROMPTWORD\n\n", "");
	add_chunk(c, false,
		  "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
		  "\"stop\"}]}\n\n",
		  "");
	add_chunk(
		c, false,
		"event: usage\ndata: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,"
		"\"completion_tokens\":3,\"total_tokens\":12}}\n\ndata: [DONE]\n\n",
		"0\r\n\r\n");

	c++;
	c->name = "chunked request, JSON response";
	add_w(c, true,
	      "POST /v1/completions HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
	      "Content-Type: application/json\r\nExpect: 100-continue\r\n\r\n");
	add_w(c, false, "HTTP/1.1 100 Continue\r\n\r\n");
	add_w(c, true,
	      "1c;ext=PROMPTWORD\r\n{\"prompt\":\"PROMPTWORD again\"\r\n7\r\n,\"a\":1}\r\n"
	      "0\r\nx-trailer: PROMPTWORD\r\n\r\n");
	add_msg(c, false,
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		"x-envoy-upstream-service-time: 17\r\n",
		"{\"id\":\"cmpl-2\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
		"\"text\":\"COMPLETIONWORD and \\\"more\\\" "
		"\\u00e9\",\"finish_reason\":\"length\"}],"
		"\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":16,\"total_tokens\":19}}  ");

	c++;
	c->name = "llama.cpp, large final event";
	add_msg(c, true, "POST /completion HTTP/1.1\r\nHost: h\r\n",
		"{\"prompt\":\"PROMPTWORD\",\"n_predict\":2}");
	add_w(c, false,
	      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
	      "\r\n");
	add_chunk(c, false, "data: {\"content\":\"COMPLETIONWORD\",\"stop\":false}\n\n", "");
	add_chunk(c, false, llama_final, "");
	add_w(c, false, "0\r\n\r\n");

	c++;
	c->name = "pipelined GETs, HEAD, close";
	add_w(c, true,
	      "GET /health HTTP/1.1\r\nHost: h\r\nCookie: a=COOKIESECRET\r\n\r\n"
	      "HEAD /v1/models HTTP/1.1\r\nHost: h\r\n\r\n"
	      "GET /v1/models?x=1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer sk-SECRETKEY123\r\n"
	      "\r\n");
	add_w(c, false,
	      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n");
	add_msg(c, false, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
		"{\"data\":[{\"id\":\"PROMPTWORD\"}]}");
	add_msg(c, true, "POST /x HTTP/1.1\r\nConnection: close\r\n", "PROMPTWORD");
	add_w(c, false,
	      "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
	      "Connection: close\r\n\r\nCOMPLETIONWORD failed");
	return 0;
}

/* The records of conversation c, write w split at byte k (0: not split), captured with (head, tail). */
static void build(struct recs *rs, const struct conv *c, int w, size_t k, size_t head, size_t tail)
{
	rs->n = 0;
	rs->ts = 1000000;
	add_accept(rs);
	for (int i = 0; i < c->n; i++) {
		const char *p = c->w[i].p;
		size_t n = strlen(p);

		if (i == w && k > 0 && k < n) {
			add_io(rs, c->w[i].recv, p, k, head, tail);
			add_io(rs, c->w[i].recv, p + k, n - k, head, tail);
		} else {
			add_io(rs, c->w[i].recv, p, n, head, tail);
		}
	}
}

static bool secret_left(const struct recs *rs, const char **which)
{
	for (int i = 0; i < rs->n; i++)
		for (size_t s = 0; s < sizeof(secrets) / sizeof(secrets[0]); s++)
			if (has(rs->r[i], rs->r[i]->size, secrets[s])) {
				*which = secrets[s];
				return true;
			}
	return false;
}

static void dump_bytes(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf(p[i] >= 0x20 && p[i] < 0x7f ? "%c" : "\\x%02x", p[i]);
}

/* What a failing case was made of: each record's captured bytes, then redacted. */
static void dump(const struct recs *a, const struct recs *b)
{
	for (int i = 0; i < a->n; i++) {
		const struct rt_ev_sock_io *x = (const void *)a->r[i], *y = (const void *)b->r[i];

		if (x->hdr.kind != RT_EV_SOCK_RECV && x->hdr.kind != RT_EV_SOCK_SEND)
			continue;
		printf("#%d %s ret=%lld head=%u tail=%u\n  ", i,
		       x->hdr.kind == RT_EV_SOCK_RECV ? "recv" : "send", (long long)x->ret,
		       x->head_len, x->tail_len);
		dump_bytes(x->data, (size_t)x->head_len + x->tail_len);
		printf("\n  ");
		dump_bytes(y->data, (size_t)y->head_len + y->tail_len);
		printf("\n");
	}
}

/*
 * Where a gap falls inside a usage or timings object, the original parse can
 * splice what precedes and follows it into a name or number the server never
 * sent ("promp" + gap + "total_tokens":7 reports "promptotal_tokens"=7;
 * "tokens_predicted": + gap + 5 reports 5). The redactor masks a key or
 * number cut at its start by a gap (it could be token text or token bytes),
 * so the redacted parse lacks the spliced value: that, and only that, is not
 * a difference. A value is spliced when the conversation never spells it.
 */
static bool spliced(const char *log, const struct conv *c)
{
	const char *p = log;

	if (!c)
		return false;
	while ((p = strchr(p, '=')) != NULL) {
		const char *start = p, *dot, *vend = p + 1 + strcspn(p + 1, " \n");
		char name[64], pair[128];
		bool found = false, json;

		while (start > log && start[-1] != ' ')
			start--;
		snprintf(name, sizeof(name), " %.*s ", (int)(p - start), start);
		/* the log's own fields (drive()) are not reported values */
		if (strstr(" id tp ct ua cl ch ka ec inc g sse json close nobody kind tokens ",
			   name)) {
			p++;
			continue;
		}
		dot = memchr(start, '.', (size_t)(p - start));
		if (dot && strncmp(start, "server-timing.", 14))
			start = dot + 1; /* usage.x, timings.x: the key is x */
		snprintf(name, sizeof(name), "%.*s", (int)(p - start), start);
		snprintf(pair, sizeof(pair), "\"%s\":%.*s", name, (int)(vend - p - 1), p + 1);
		/* a number from JSON is checked with its key, a header's by its name */
		json = dot || !strncmp(name, "tokens_", 7);
		for (int i = 0; i < c->n && !found; i++)
			found = strstr(c->w[i].p, json ? pair : name) != NULL;
		if (!found)
			return true;
		p++;
	}
	return false;
}

/* Redacts a copy of rs; the parse of both must be the same, and no secret may be left. */
static void check_same(const struct recs *rs, const char *what, const struct conv *c)
{
	static struct drv a, b;
	struct recs red = { 0 };
	struct rt_redactor *r = rt_redactor__new(NULL);
	const char *s = NULL;

	assert_non_null(r);
	for (int i = 0; i < rs->n; i++) {
		red.r[i] = rec_dup(rs->r[i]);
		assert_int_equal(rt_redactor__apply(r, red.r[i]), 0);
		assert_int_equal(red.r[i]->size, rs->r[i]->size);
	}
	red.n = rs->n;
	rt_redactor__free(r);
	drive(&a, rs);
	drive(&b, &red);
	if ((a.len != b.len || memcmp(a.log, b.log, a.len)) && !spliced(a.log, c)) {
		dump(rs, &red);
		fail_msg("%s: parse differs\noriginal:\n%s\nredacted:\n%s", what, a.log, b.log);
	}
	if (secret_left(&red, &s))
		fail_msg("%s: '%s' left in the redacted records", what, s);
	recs_free(&red);
}

static void test_conversations_whole(void **state)
{
	struct recs rs = { 0 };
	struct drv d;

	(void)state;
	for (size_t c = 0; c < N_CONVS; c++) {
		build(&rs, &convs[c], -1, 0, RT_SOCK_HEAD_MAX, RT_SOCK_TAIL_MAX);
		/* the test can see what it looks for */
		drive(&d, &rs);
		assert_non_null(strstr(d.log, "req complete"));
		assert_non_null(strstr(d.log, "resp complete"));
		check_same(&rs, convs[c].name, NULL);
		recs_free(&rs);
	}
}

static void test_conversations_every_split(void **state)
{
	struct recs rs = { 0 };
	char what[128];

	(void)state;
	for (size_t c = 0; c < N_CONVS; c++) {
		for (int w = 0; w < convs[c].n; w++) {
			size_t n = strlen(convs[c].w[w].p);

			for (size_t k = 1; k < n; k++) {
				build(&rs, &convs[c], w, k, RT_SOCK_HEAD_MAX, RT_SOCK_TAIL_MAX);
				snprintf(what, sizeof(what), "%s, write %d split at %zu",
					 convs[c].name, w, k);
				check_same(&rs, what, NULL);
				recs_free(&rs);
			}
		}
	}
}

static void test_conversations_gaps(void **state)
{
	static const size_t caps[][2] = { { 512, 1024 }, { 96, 200 }, { 64, 64 }, { 40, 120 },
					  { 16, 48 },	 { 8, 8 },    { 0, 32 } };
	struct recs rs = { 0 };
	char what[128];

	(void)state;
	for (size_t c = 0; c < N_CONVS; c++) {
		for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
			for (int w = -1; w < convs[c].n; w++) {
				for (size_t at = 0; at < (w < 0 ? 1 : 200); at += 7) {
					build(&rs, &convs[c], w, at, caps[k][0], caps[k][1]);
					snprintf(what, sizeof(what),
						 "%s, capture %zu+%zu, write %d split at %zu",
						 convs[c].name, caps[k][0], caps[k][1], w, at);
					check_same(&rs, what, &convs[c]);
					recs_free(&rs);
				}
			}
		}
	}
}

/* Random syscall boundaries and captures, down to 8 + 16 bytes (seeded: a failure
 * names its case and dumps its records). */
static void test_conversations_random(void **state)
{
	static const size_t caps[][2] = {
		{ 4096, 4096 }, { 512, 1024 }, { 64, 128 }, { 24, 40 }, { 8, 16 }
	};
	struct recs rs = { 0 };
	char what[160];
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	(void)state;
	for (int iter = 0; iter < 60000; iter++) {
		const struct conv *c = &convs[iter % N_CONVS];
		size_t cap = (size_t)(iter / N_CONVS) % (sizeof(caps) / sizeof(caps[0]));

		rs.n = 0;
		rs.ts = 1000000;
		add_accept(&rs);
		for (int i = 0; i < c->n; i++) {
			const char *p = c->w[i].p;
			size_t n = strlen(p), at = 0;

			while (at < n) {
				size_t k;

				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				k = 1 + (size_t)(x % (x & 1 ? 9 : 300));
				if (k > n - at)
					k = n - at;
				add_io(&rs, c->w[i].recv, p + at, k, caps[cap][0], caps[cap][1]);
				at += k;
			}
		}
		snprintf(what, sizeof(what), "%s, random split %d, capture %zu+%zu", c->name, iter,
			 caps[cap][0], caps[cap][1]);
		check_same(&rs, what, c);
		recs_free(&rs);
	}
}

/* ---- fixtures: replay of a redacted recording gives the same spans ------------- */

struct spans {
	char *lines[64];
	int n;
	struct rt_jsonw w;
};

static void on_span(const struct rt_span *s, void *ctx)
{
	struct spans *sp = ctx;

	assert_true(sp->n < 64);
	rt_jsonw_reset(&sp->w);
	rt_span_to_json(&sp->w, s);
	sp->lines[sp->n++] = strdup(rt_jsonw_str(&sp->w));
}

static void replay(struct rt_event_hdr **recs, size_t n, struct spans *sp)
{
	struct rt_pipeline_opts po = { 0 };
	struct rt_pipeline *pl;

	memset(sp, 0, sizeof(*sp));
	rt_jsonw_init(&sp->w, 0);
	po.corr.on_span = on_span;
	po.corr.ctx = sp;
	pl = rt_pipeline__new(&po);
	assert_non_null(pl);
	for (size_t i = 0; i < n; i++)
		rt_pipeline__push(pl, recs[i]);
	rt_pipeline__flush(pl);
	rt_pipeline__free(pl);
	rt_jsonw_fini(&sp->w);
}

static int by_ts(const void *a, const void *b)
{
	const struct rt_event_hdr *x = *(struct rt_event_hdr *const *)a;
	const struct rt_event_hdr *y = *(struct rt_event_hdr *const *)b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x < y ? -1 : x > y; /* stable: records are allocated in file order */
}

static size_t load(const char *path, struct rt_event_hdr ***out)
{
	struct rt_trace_reader *rd = rt_trace_reader__open(path, NULL);
	const struct rt_event_hdr *ev;
	size_t n = 0, cap = 0;
	struct rt_event_hdr **v = NULL;

	if (!rd)
		fail_msg("%s: %s", path, strerror(errno));
	while (rt_trace_reader__next(rd, &ev) == 1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			v = realloc(v, cap * sizeof(*v));
			assert_non_null(v);
		}
		v[n++] = rec_dup(ev);
	}
	rt_trace_reader__free(rd);
	*out = v;
	return n;
}

static void check_fixture(const char *name, bool time_order)
{
	static const char *const fixture_secrets[] = { "sk-rtgen", "Tell me", "short story",
						       "Once",	   "upon",    "helpful assistant" };
	struct rt_redactor *r = rt_redactor__new(NULL);
	struct rt_event_hdr **orig, **red, **order;
	struct spans a, b;
	char path[4096];
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/%s.rtrace", RT_SOURCE_DIR, name);
	n = load(path, &orig);
	red = calloc(n, sizeof(*red));
	order = calloc(n, sizeof(*order));
	assert_non_null(red);
	assert_non_null(order);
	for (size_t i = 0; i < n; i++)
		red[i] = order[i] = rec_dup(orig[i]);
	/* the daemon redacts in ring order, which for one thread is syscall order;
	 * the generator delivers CPU by CPU, so redact in time order too */
	if (time_order)
		qsort(order, n, sizeof(*order), by_ts);
	for (size_t i = 0; i < n; i++)
		rt_redactor__apply(r, order[i]);
	rt_redactor__free(r);
	for (size_t i = 0; i < n; i++)
		for (size_t s = 0; s < sizeof(fixture_secrets) / sizeof(fixture_secrets[0]); s++)
			if (has(red[i], red[i]->size, fixture_secrets[s]))
				fail_msg("%s: '%s' left in record %zu", name, fixture_secrets[s],
					 i);
	replay(orig, n, &a);
	replay(red, n, &b);
	assert_true(a.n > 0);
	assert_int_equal(a.n, b.n);
	for (int i = 0; i < a.n; i++) {
		if (strcmp(a.lines[i], b.lines[i]))
			fail_msg("%s: span %d differs\n%s\n%s", name, i, a.lines[i], b.lines[i]);
		free(a.lines[i]);
		free(b.lines[i]);
	}
	for (size_t i = 0; i < n; i++) {
		free(orig[i]);
		free(red[i]);
	}
	free(orig);
	free(red);
	free(order);
}

static const char *const fixtures[] = {
	"basic-zero",
	"basic-markers",
	"two-conn-shared-zero",
	"two-conn-shared-markers",
	"aborted-zero",
	"aborted-markers",
	"nonstream-zero",
	"nonstream-markers",
	"pipelined-zero",
	"pipelined-markers",
	"large-final-event-zero",
	"large-final-event-markers",
	"comm-zero",
	"comm-markers",
	"split-reads-zero",
	"split-reads-markers",
	/* vLLM two-process server: ZeroMQ frames redacted by structure, same joins and phases */
	"vllm/vllm-zero",
};

static void test_fixtures_replay_same(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		check_fixture(fixtures[i], true);
		check_fixture(fixtures[i], false);
	}
}

/* ---- the body masker's rules ---------------------------------------------- */

static void json_mask(const char *in, char *out)
{
	struct rt_json_mask j;
	size_t n = strlen(in);

	rt_json_mask_init(&j);
	for (size_t i = 0; i < n; i++)
		out[i] = (char)rt_json_mask_byte(&j, (const uint8_t *)in + i, n - i);
	out[n] = '\0';
}

static void test_json_rules(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		/* values masked byte for byte, known keys kept, others masked whole */
		{ "{\"text\":\"hi there\",\"secret\":\"x\",\"index\":12,\"ok\":true,\"z\":null}",
		  "{\"text\":\"xxxxxxxx\",\"XXXXXX\":\"x\",\"index\":11,\"XX\":true,\"X\":null}" },
		/* escapes become as many x's: text stays non-empty */
		{ "{\"content\":\"a\\\"b\\n\\u00e9\"}", "{\"content\":\"xxxxxxxxxxxx\"}" },
		/* usage and timings members and token counts are reported: kept */
		{ "{\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":345,\"extra\":\"s\"},"
		  "\"tokens_predicted\":9}",
		  "{\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":345,\"extra\":\"x\"},"
		  "\"tokens_predicted\":9}" },
		/* logprobs: token bytes as numbers, token text as keys */
		{ "{\"logprobs\":{\"content\":[{\"bytes\":[72,105,0],\"top_logprobs\":[{\"Hi\":-0."
		  "5}]}]}}",
		  "{\"XXXXXXXX\":{\"content\":[{\"XXXXX\":[11,101,0],\"XXXXXXXXXXXX\":[{\"XX\":-0."
		  "1}]}]}}" },
		{ "[DONE]", "[DONE]" },
		/* not JSON: the rest turns into x's, still not JSON */
		{ "hello world", "xxxxxxxxxxx" },
		{ "{\"a\":tree}", "{\"X\":trxxx" },
		/* an invalid escape stays invalid */
		{ "{\"text\":\"a\\qb\"}", "{\"text\":\"xx\"x\"}" },
	};
	char out[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_mask(cases[i].in, out);
		assert_string_equal(out, cases[i].want);
	}
}

/* A masked JSON text is as valid as the original, its text as (non-)empty. */
static void test_json_validity(void **state)
{
	static const char *const texts[] = {
		"{\"choices\":[{\"text\":\"\"}]}",
		"{\"choices\":[{\"text\":\" a\"}],\"n\":-0.5e+3}",
		"{\"a\":01}",
		"{\"a\":\"x\\q\"}",
		"{\"a\" \"b\"}",
		"[1,2,{\"k\":[true,false,null]}]",
		"{\"content\":\"\\ud83d\\ude00\"}",
	};
	char out[256];

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		cJSON *a = cJSON_Parse(texts[i]), *b;

		json_mask(texts[i], out);
		b = cJSON_Parse(out);
		assert_int_equal(a != NULL, b != NULL);
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
}

static void test_sse_rules(void **state)
{
	static const char in[] =
		"event: PROMPTWORD\ndata: {\"text\":\"abc\"}\n: comment PROMPTWORD\n"
		"dangerous: x\nid: 7\n\ndata:[DONE]\n\n";
	static const char want[] =
		"event:xxxxxxxxxxx\ndata: {\"text\":\"xxx\"}\n:xxxxxxxxxxxxxxxxxxx\n"
		"daxxxxxxx:xx\nid:xx\n\ndata:[DONE]\n\n";
	struct rt_body_mask b;
	char out[sizeof(in)];

	(void)state;
	rt_body_mask_start(&b);
	rt_body_mask_run(&b, RT_HTTP_TAP_BODY_SSE, (const uint8_t *)in, (uint8_t *)out,
			 sizeof(in) - 1);
	out[sizeof(in) - 1] = '\0';
	assert_string_equal(out, want);
}

static void test_recover(void **state)
{
	/* the tail of a large final event, its start lost in a gap */
	static const char tail[] =
		"PWORD PROMPTWORD\",\"truncated\":false,\"timings\":{\"prompt_n\":5,"
		"\"predicted_ms\":24.7}}";
	static const char want[] =
		"xxxxxxxxxxxxxxxx\",\"XXXXXXXXX\":false,\"timings\":{\"prompt_n\":5,"
		"\"predicted_ms\":24.7}}";
	/* the tail of a key: kept when it ends a keep-list key */
	static const char key_tail[] = "ices\":[{\"text\":\"ab\"}]}";
	static const char cut[] = "ices\":[],\"usage\":nu", open[] = "\"usage\":{\"prompt_tok";
	char out[256];

	(void)state;
	assert_true(rt_json_recover((const uint8_t *)tail, (uint8_t *)out, strlen(tail), 0, NULL));
	out[strlen(tail)] = '\0';
	assert_string_equal(out, want);
	assert_true(rt_json_recover((const uint8_t *)key_tail, (uint8_t *)out, strlen(key_tail), 0,
				    NULL));
	out[strlen(key_tail)] = '\0';
	assert_string_equal(out, "ices\":[{\"text\":\"xx\"}]}");
	/* prose where structure should be: parity is wrong, nothing is trusted */
	assert_false(rt_json_recover((const uint8_t *)"ng \"quoted\" words", (uint8_t *)out, 17, 0,
				     NULL));
	/* cut by the end of a syscall: a literal may stop half-way, inside or outside a string */
	assert_true(rt_json_recover((const uint8_t *)cut, (uint8_t *)out, strlen(cut), RT_JSON_CUT,
				    NULL));
	assert_false(rt_json_recover((const uint8_t *)cut, (uint8_t *)out, strlen(cut), 0, NULL));
	assert_true(rt_json_recover((const uint8_t *)open, (uint8_t *)out, strlen(open),
				    RT_JSON_OPEN, NULL));
	out[strlen(open)] = '\0';
	assert_string_equal(out, open);
	/* backslashes that reach back to the gap: the quote after them may be escaped or
	 * not; here only "escaped" reads as JSON (else a backslash is outside a string) */
	assert_true(rt_json_recover((const uint8_t *)"\\\"a\":1}", (uint8_t *)out, 7, 0, NULL));
	out[7] = '\0';
	assert_string_equal(out, "XXX\":1}");
}

/* ---- the table, unknown streams, bad records -------------------------------- */

static struct rt_ev_sock_io *io_rec(bool recv, int fd, const char *p)
{
	size_t n = strlen(p);
	struct rt_ev_sock_io *io = (void *)rec_alloc(sizeof(*io) + n);

	io->hdr.kind = recv ? RT_EV_SOCK_RECV : RT_EV_SOCK_SEND;
	io->hdr.pid = PID;
	io->hdr.ts_ns = 1000;
	io->fd = fd;
	io->ret = (int64_t)n;
	io->syscall = RT_SYS_READ;
	io->head_len = (uint16_t)n;
	memcpy(io->data, p, n);
	return io;
}

static bool all_masked(const struct rt_ev_sock_io *io)
{
	for (size_t i = 0; i < (size_t)io->head_len + io->tail_len; i++)
		if (io->data[i] != RT_REDACT_MASK && io->data[i] != '\r' && io->data[i] != '\n')
			return false;
	return true;
}

static void test_table_bound(void **state)
{
	struct rt_redactor_opts o = { .max_conns = 1 };
	struct rt_redactor *r = rt_redactor__new(&o);
	static const char req[] = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
	struct rt_ev_sock_io *a = io_rec(true, 5, req), *b = io_rec(true, 6, req), *c;
	struct rt_ev_sock_close cl = { .hdr = { .kind = RT_EV_SOCK_CLOSE, .size = sizeof(cl) } };
	struct rt_redactor_stats st;

	(void)state;
	assert_non_null(r);
	assert_int_equal(rt_redactor__apply(r, &a->hdr), 0);
	assert_memory_equal(a->data, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", sizeof(req) - 1);
	assert_int_equal(rt_redactor__apply(r, &b->hdr), 0);
	assert_true(all_masked(b)); /* no slot: masked whole */
	rt_redactor__stats(r, &st);
	assert_int_equal(st.no_slot, 1);
	assert_int_equal(st.conns, 1);
	/* a close frees the slot */
	cl.hdr.pid = PID;
	cl.fd = 5;
	assert_int_equal(rt_redactor__apply(r, &cl.hdr), 0);
	c = io_rec(true, 6, req);
	assert_int_equal(rt_redactor__apply(r, &c->hdr), 0);
	assert_false(all_masked(c));
	rt_redactor__free(r);
	free(a);
	free(b);
	free(c);
}

static void test_unknown_streams(void **state)
{
	struct rt_redactor *r = rt_redactor__new(NULL);
	/* joined mid-body: nothing is known until a message starts */
	struct rt_ev_sock_io *mid = io_rec(true, 5, "PROMPTWORD\"}POST /a HTTP/1.1\r\n\r\n");
	struct rt_ev_sock_io *next =
		io_rec(true, 5, "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
	/* TLS: its record header stays (the parsers count it unreadable), the rest goes */
	struct rt_ev_sock_io *tls = io_rec(true, 6, "\x16\x03\x01\x02\x05PROMPTWORD");
	struct rt_ev_sock_io *tls2 = io_rec(true, 6, "PROMPTWORD");
	/* HTTP/2 joined mid-stream: the preface stays (the correlator's verdict on replay) */
	struct rt_ev_sock_io *h2 = io_rec(true, 7, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nPROMPTWORD");
	struct rt_ev_proc_exit ex = { .hdr = { .kind = RT_EV_PROC_EXIT, .size = sizeof(ex) } };
	struct rt_redactor_stats st;

	(void)state;
	assert_int_equal(rt_redactor__apply(r, &mid->hdr), 0);
	assert_true(all_masked(mid));
	assert_int_equal(rt_redactor__apply(r, &next->hdr), 0);
	assert_memory_equal(next->data, "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxxx", 42);
	assert_int_equal(rt_redactor__apply(r, &tls->hdr), 0);
	assert_memory_equal(tls->data, "\x16\x03\x01xxxxxxxxxxxx", 15);
	assert_int_equal(rt_redactor__apply(r, &tls2->hdr), 0);
	assert_true(all_masked(tls2));
	assert_int_equal(rt_redactor__apply(r, &h2->hdr), 0);
	assert_memory_equal(h2->data, "PRI * HTTP/2.0\r\n\r\nxx\r\n\r\nxxxxxxxxxx", 34);
	rt_redactor__stats(r, &st);
	assert_int_equal(st.unreadable, 1);
	assert_int_equal(st.conns, 3);
	/* the process is gone: so are its connections */
	ex.hdr.pid = PID;
	ex.group_dead = 1;
	assert_int_equal(rt_redactor__apply(r, &ex.hdr), 0);
	rt_redactor__stats(r, &st);
	assert_int_equal(st.conns, 0);
	rt_redactor__free(r);
	free(mid);
	free(next);
	free(tls);
	free(tls2);
	free(h2);
}

static void test_bad_records(void **state)
{
	struct rt_redactor *r = rt_redactor__new(NULL);
	struct rt_ev_sock_io *io =
		io_rec(true, 5, "GET / HTTP/1.1\r\nCookie: COOKIESECRET\r\n\r\n");
	const struct rt_event_hdr *out;
	struct rt_redactor_stats st;

	(void)state;
	/* lengths that do not fit the record: nothing of it may be trusted or written */
	io->head_len = 4000;
	out = rt_redactor__redact(r, &io->hdr);
	assert_null(out);
	assert_int_equal(rt_redactor__apply(r, &io->hdr), -EINVAL);
	assert_false(has(io, io->hdr.size, "COOKIESECRET"));
	rt_redactor__stats(r, &st);
	assert_int_equal(st.invalid, 2);
	/* records without payload pass as they are */
	io->hdr.kind = RT_EV_WATERMARK;
	io->hdr.size = sizeof(struct rt_ev_watermark);
	assert_ptr_equal(rt_redactor__redact(r, &io->hdr), &io->hdr);
	rt_redactor__free(NULL);
	rt_redactor__free(r);
	free(io);
}

/* A ZeroMQ frame that is no vLLM message is masked whole, its length and fields kept
 * (test_redact_zmq.c has the vLLM messages). */
static void test_zmq_masked(void **state)
{
	static const char secret[] = "PROMPTSECRET engine request";
	size_t n = sizeof(secret) - 1, size = RT_EVENT_SIZE_ALIGN(sizeof(struct rt_ev_zmq_msg) + n);
	struct rt_ev_zmq_msg *z = (void *)rec_alloc(size);
	struct rt_redactor *r = rt_redactor__new(NULL);
	const struct rt_ev_zmq_msg *out;
	struct rt_redactor_stats st;
	size_t i;

	(void)state;
	z->hdr.kind = RT_EV_ZMQ_MSG;
	z->hdr.size = (uint16_t)size;
	z->hdr.ts_ns = 2000;
	z->enter_ns = 1000;
	z->dir = RT_ZMQ_SEND;
	z->frame_len = z->len = (uint16_t)n;
	memcpy(z->data, secret, n);
	out = (const void *)rt_redactor__redact(r, &z->hdr);
	assert_non_null(out);
	assert_ptr_not_equal(out, z); /* a copy: the caller's record is untouched */
	assert_int_equal(out->len, n);
	assert_int_equal(out->frame_len, n);
	/* walked as an EngineCoreOutputs: 'P' reads as a fixint, no array; masked to 0 */
	assert_int_equal(out->data[0], 0);
	for (i = 1; i < n; i++)
		assert_int_equal(out->data[i], RT_REDACT_MASK);
	assert_memory_equal(z->data, secret, n);
	rt_redactor__stats(r, &st);
	assert_int_equal(st.records, 1);
	assert_int_equal(st.bytes, n);
	/* a length past the record: nothing of it is written */
	z->len = 4000;
	assert_null(rt_redactor__redact(r, &z->hdr));
	assert_int_equal(rt_redactor__apply(r, &z->hdr), -EINVAL);
	assert_false(has((void *)z, size, "PROMPTSECRET"));
	rt_redactor__free(r);
	free(z);
}

/* What a redaction costs per record: the chat stream, 200 times on one connection. */
static void test_cost(void **state)
{
	struct recs rs = { 0 };
	struct rt_event_hdr *copy = rec_alloc(RT_EVENT_MAX);
	struct rt_redactor *r = rt_redactor__new(NULL);
	struct timespec t0, t1;
	size_t io = 0, bytes = 0;
	double ns, best = 1e18;

	(void)state;
	build(&rs, &convs[1], -1, 0, RT_SOCK_HEAD_MAX, RT_SOCK_TAIL_MAX);
	assert_int_equal(rt_redactor__apply(r, rs.r[0]), 0); /* the accept */
	for (int round = 0; round < 5; round++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int k = 0; k < 200; k++) {
			for (int i = 1; i < rs.n; i++) {
				memcpy(copy, rs.r[i], rs.r[i]->size);
				assert_int_equal(rt_redactor__apply(r, copy), 0);
				if (!round && !k) {
					io++;
					bytes += ((struct rt_ev_sock_io *)copy)->head_len;
				}
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		     (200.0 * (double)io);
		best = ns < best ? ns : best;
	}
	printf("redaction: %.0f ns per socket record, %.1f ns per payload byte (%zu bytes on "
	       "average, copy included)\n",
	       best, best * (double)io / (double)bytes, bytes / io);
	/* every request and response of the 200 went through the parsers: still in step */
	assert_false(all_masked((struct rt_ev_sock_io *)copy));
	/* generous: sanitizer builds are slow; a runaway would take far longer */
	assert_true(best < 1e6);
	rt_redactor__free(r);
	recs_free(&rs);
	free(copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_rules),
		cmocka_unit_test(test_json_validity),
		cmocka_unit_test(test_sse_rules),
		cmocka_unit_test(test_recover),
		cmocka_unit_test(test_table_bound),
		cmocka_unit_test(test_unknown_streams),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_zmq_masked),
		cmocka_unit_test(test_conversations_whole),
		cmocka_unit_test(test_conversations_every_split),
		cmocka_unit_test(test_conversations_gaps),
		cmocka_unit_test(test_conversations_random),
		cmocka_unit_test(test_fixtures_replay_same),
		cmocka_unit_test(test_cost),
	};

	return cmocka_run_group_tests(tests, setup_convs, NULL);
}
