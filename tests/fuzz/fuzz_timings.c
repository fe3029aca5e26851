// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz harness for the parsers of server-reported timings and counts
 * (src/proto): llama.cpp "timings" and OpenAI "usage" objects in JSON
 * bodies and SSE events (http_json.c, whole and head+tail-scanned), the
 * Server-Timing header and numeric headers (http_resp.c).
 *
 * Input: byte 0 holds flags (bit 0: scan as a partial text, bit 1: feed
 * the responses byte by byte), the rest is the text. It is fed to
 * rt_http_json_facts() directly, then as a Server-Timing header value, as
 * the data of an SSE event and as a JSON body; every report must keep the
 * promises of http.h (bounded, named, finite). Broken promises abort().
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "proto/http.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_timings: broken promise: %s (line %d)\n", #cond,     \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_reported(uint32_t n, const struct rt_http_reported *rep)
{
	CHECK(n <= RT_HTTP_REPORTED_MAX);
	for (uint32_t i = 0; i < n; i++) {
		CHECK(memchr(rep[i].name, '\0', sizeof(rep[i].name)) != NULL);
		CHECK(rep[i].name[0] != '\0');
		CHECK(isfinite(rep[i].value));
		for (uint32_t j = 0; j < i; j++)
			CHECK(strcmp(rep[i].name, rep[j].name) != 0);
	}
}

struct state {
	int headers, events, completed;
};

static void on_headers(void *ctx, const struct rt_http_resp_info *i)
{
	((struct state *)ctx)->headers++;
	check_reported(i->n_reported, i->reported);
}

static void on_sse_event(void *ctx, const struct rt_sse_event *ev)
{
	((struct state *)ctx)->events++;
	CHECK(ev->tokens_out >= -1);
	check_reported(ev->n_reported, ev->reported);
}

static void on_complete(void *ctx, const struct rt_http_resp_done *d)
{
	((struct state *)ctx)->completed++;
	CHECK(d->tokens_out >= -1);
	check_reported(d->n_reported, d->reported);
}

static const struct rt_http_resp_cb cb = {
	.on_headers = on_headers,
	.on_sse_event = on_sse_event,
	.on_complete = on_complete,
};

static void response(const char *head, const uint8_t *text, size_t n, const char *tail,
		     bool bytewise)
{
	size_t hl = strlen(head), tl = strlen(tail), len = hl + n + tl;
	struct rt_http_resp_parser *p;
	struct state st = { 0 };
	uint8_t *msg = malloc(len);

	p = rt_http_resp__new();
	if (!msg || !p)
		goto cleanup;
	memcpy(msg, head, hl);
	memcpy(msg + hl, text, n);
	memcpy(msg + hl + n, tail, tl);
	if (bytewise) {
		for (size_t i = 0; i < len; i++)
			rt_http_resp_feed(p, msg + i, 1, &cb, &st);
	} else {
		rt_http_resp_feed(p, msg, len, &cb, &st);
	}
	rt_http_resp_eof(p, &cb, &st);
	CHECK(st.completed <= st.headers);
cleanup:
	rt_http_resp__free(p);
	free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rt_http_json_facts f;
	char head[160];
	bool bytewise;

	if (size < 1)
		return 0;
	bytewise = data[0] & 2;
	rt_http_json_facts((const char *)data + 1, size - 1, data[0] & 1, &f);
	CHECK(f.tokens_out >= -1);
	check_reported(f.n_reported, f.reported);
	if (size > 4096)
		return 0; /* the framed shapes below are about short texts */

	response("HTTP/1.1 200 OK\r\nServer-Timing: ", data + 1, size - 1,
		 "\r\nContent-Length: 0\r\n\r\n", bytewise);
	response("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ", data + 1,
		 size - 1, "\n\ndata: [DONE]\n\n", bytewise);
	snprintf(head, sizeof(head),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
		 size - 1);
	response(head, data + 1, size - 1, "", bytewise);
	return 0;
}
