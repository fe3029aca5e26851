// SPDX-License-Identifier: BSD-2-Clause
/*
 * The bytes on the wire: requests as a client sends them and the pieces of
 * OpenAI-style (chunked SSE, or JSON with Content-Length) and llama.cpp
 * style responses. The numbers a response reports (usage, timings) are
 * recorded in the request's truth exactly as they are written.
 */
#include "model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs_free(struct gen_str *g)
{
	free(g->p);
	memset(g, 0, sizeof(*g));
}

static int gs_reserve(struct gen_str *g, size_t n)
{
	size_t cap;
	char *p;

	if (g->err)
		return g->err;
	if (g->len + n + 1 <= g->cap)
		return 0;
	cap = g->cap ? g->cap : 256;
	while (cap < g->len + n + 1)
		cap *= 2;
	p = realloc(g->p, cap);
	if (!p)
		return g->err = -ENOMEM;
	g->p = p;
	g->cap = cap;
	return 0;
}

void gs_put(struct gen_str *g, const char *s, size_t n)
{
	if (gs_reserve(g, n))
		return;
	memcpy(g->p + g->len, s, n);
	g->len += n;
	g->p[g->len] = 0;
}

void gs_printf(struct gen_str *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || gs_reserve(g, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(g->p + g->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	g->len += (size_t)n;
}

/* JSON-escaped token texts: an escaped quote, a \u escape and a newline keep parsers honest. */
static const char *const words[] = {
	" Once", " upon",	  " a",	    " time",	   ",",	   " there", " was",
	" a",	 " \\\"tiny\\\"", " model", " caf\\u00e9", "\\n",  " that",  " streamed",
	" its",	 " tokens",	  " one",   " by",	   " one", ".",
};
#define N_WORDS (sizeof(words) / sizeof(words[0]))

const char *gen_token_text(const struct gen_req *r, int i)
{
	return words[((size_t)r->idx * 7 + (size_t)i) % N_WORDS];
}

static void prompt(struct gen_str *g, int len)
{
	static const char text[] = "Tell me a short story about a model that streams tokens. ";
	int i;

	for (i = 0; i < len; i++)
		gs_put(g, &text[i % (sizeof(text) - 1)], 1);
}

static void body(const struct gen_req *r, struct gen_str *b)
{
	const struct gen_req_cfg *c = r->cfg;
	const char *stream = c->stream ? "true" : "false";

	switch (c->fmt) {
	case GEN_FMT_CHAT:
		gs_printf(
			b,
			"{\"model\":\"tiny-llm\",\"messages\":[{\"role\":\"user\",\"content\":\"");
		prompt(b, c->prompt_len);
		gs_printf(b, "\"}],\"max_tokens\":%d,\"stream\":%s}", c->n_tokens, stream);
		break;
	case GEN_FMT_LLAMA:
		gs_printf(b, "{\"prompt\":\"");
		prompt(b, c->prompt_len);
		gs_printf(b, "\",\"n_predict\":%d,\"stream\":%s}", c->n_tokens, stream);
		break;
	default:
		gs_printf(b, "{\"model\":\"tiny-llm\",\"prompt\":\"");
		prompt(b, c->prompt_len);
		gs_printf(b, "\",\"max_tokens\":%d,\"stream\":%s}", c->n_tokens, stream);
		break;
	}
}

int gen_http_request(const struct gen_world *w, const struct gen_req *r, struct gen_str *out,
		     size_t *head_len)
{
	const struct gen_req_cfg *c = r->cfg;
	struct gen_str b = { 0 };
	size_t n, part, off;
	int err;

	body(r, &b);
	gs_printf(out, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: rt-gen-client/1.0\r\n",
		  r->method, r->path, GEN_SERVER_PORT);
	if (c->auth)
		gs_printf(out, "Authorization: Bearer sk-rtgen-not-a-secret-0000\r\n");
	gs_printf(out, "Accept: %s\r\nContent-Type: application/json\r\n",
		  c->stream ? "text/event-stream" : "application/json");
	if (c->with_id || w->mode == RT_GEN_MARKERS)
		gs_printf(out, "x-request-id: %s\r\n", r->id);
	if (c->chunked_body)
		gs_printf(out, "Transfer-Encoding: chunked\r\n\r\n");
	else
		gs_printf(out, "Content-Length: %zu\r\n\r\n", b.len);
	*head_len = out->len;
	if (!c->chunked_body) {
		gs_put(out, b.p, b.len);
	} else {
		/* three chunks of uneven size */
		for (off = 0; off < b.len; off += n) {
			part = b.len / 3 + 1;
			n = b.len - off < part ? b.len - off : part;
			gs_printf(out, "%zx\r\n", n);
			gs_put(out, b.p + off, n);
			gs_printf(out, "\r\n");
		}
		gs_printf(out, "0\r\n\r\n");
	}
	err = b.err ? b.err : out->err;
	gs_free(&b);
	return err;
}

void gen_http_stream_head(struct gen_str *out)
{
	gs_printf(
		out,
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
		"Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n");
}

static void chunk(struct gen_str *out, const struct gen_str *ev)
{
	gs_printf(out, "%zx\r\n", ev->len);
	gs_put(out, ev->p, ev->len);
	gs_printf(out, "\r\n");
}

void gen_sse_chunk(struct gen_str *out, enum gen_fmt fmt, const char *text)
{
	struct gen_str ev = { 0 };

	switch (fmt) {
	case GEN_FMT_CHAT:
		if (text)
			gs_printf(&ev,
				  "data: "
				  "{\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
				  "\"delta\":{\"content\":\"%s\"},\"finish_reason\":null}]}\n\n",
				  text);
		else
			gs_printf(
				&ev,
				"data: "
				"{\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
				"\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n");
		break;
	case GEN_FMT_LLAMA:
		gs_printf(&ev, "data: {\"content\":\"%s\",\"stop\":false}\n\n", text ? text : "");
		break;
	default:
		gs_printf(
			&ev,
			"data: "
			"{\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"%s\","
			"\"finish_reason\":null}]}\n\n",
			text ? text : "");
		break;
	}
	chunk(out, &ev);
	if (ev.err)
		out->err = ev.err;
	gs_free(&ev);
}

static void report(struct gen_req *r, const char *name, const char *fmt, ...)
{
	struct gen_reported *p;
	va_list ap;

	if (r->n_reported == GEN_MAX_REPORTED)
		return;
	p = &r->reported[r->n_reported++];
	snprintf(p->name, sizeof(p->name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(p->value, sizeof(p->value), fmt, ap);
	va_end(ap);
}

/* usage the way OpenAI-compatible servers report it */
static void usage(struct gen_str *ev, struct gen_req *r)
{
	int n = r->cfg->n_tokens, p = r->prompt_tokens;

	gs_printf(ev,
		  "\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}",
		  p, n, p + n);
	r->n_reported = 0;
	report(r, "usage.prompt_tokens", "%d", p);
	report(r, "usage.completion_tokens", "%d", n);
	report(r, "usage.total_tokens", "%d", p + n);
	r->tokens_out = n;
}

void gen_chunk_end(struct gen_str *out)
{
	gs_printf(out, "0\r\n\r\n");
}

void gen_stream_final(struct gen_str *out, struct gen_req *r)
{
	struct gen_str ev = { 0 };

	gs_printf(&ev, "data: {\"object\":\"%s\",\"choices\":[],",
		  r->cfg->fmt == GEN_FMT_CHAT ? "chat.completion.chunk" : "text_completion");
	usage(&ev, r);
	gs_printf(&ev, "}\n\n");
	chunk(out, &ev);
	ev.len = 0;
	gs_printf(&ev, "data: [DONE]\n\n");
	chunk(out, &ev);
	gen_chunk_end(out);
	if (ev.err)
		out->err = ev.err;
	gs_free(&ev);
}

/* ms with three decimals from ns, without going through a double */
static void ms3(char *buf, size_t n, uint64_t ns)
{
	snprintf(buf, n, "%llu.%03llu", (unsigned long long)(ns / 1000000),
		 (unsigned long long)(ns / 1000 % 1000));
}

void gen_llama_final_event(struct gen_str *out, struct gen_req *r)
{
	static const char pad[] = "You are a helpful assistant that answers in short sentences. ";
	struct gen_str ev = { 0 };
	char pms[32], dms[32];
	int n = r->cfg->n_tokens, i;

	ms3(pms, sizeof(pms), r->prefill_ns);
	ms3(dms, sizeof(dms), r->last_prod_ns - r->first_prod_ns);
	/* llama-server's slot is its sequence (the pack's exact join); 0 outside pack mode */
	gs_printf(&ev,
		  "data: {\"content\":\"\",\"stop\":true,\"id_slot\":%d,\"model\":\"tiny-llm\","
		  "\"tokens_predicted\":%d,\"tokens_evaluated\":%d,\"generation_settings\":{"
		  "\"n_ctx\":4096,\"n_predict\":%d,\"temperature\":0.8,\"top_k\":40,\"top_p\":0.95,"
		  "\"min_p\":0.05,\"samplers\":[\"top_k\",\"typ_p\",\"top_p\",\"min_p\","
		  "\"temperature\"],"
		  "\"system_prompt\":\"",
		  r->pk_seq > 0 ? r->pk_seq : 0, n, r->prompt_tokens, n);
	/* big enough that only the probe's head and tail are captured */
	for (i = 0; i < 40; i++)
		gs_put(&ev, pad, sizeof(pad) - 1);
	gs_printf(&ev,
		  "\"},\"stopped_eos\":true,\"stopped_word\":false,\"stopped_limit\":false,"
		  "\"timings\":{\"prompt_n\":%d,\"prompt_ms\":%s,\"predicted_n\":%d,"
		  "\"predicted_ms\":%s}}\n\n",
		  r->prompt_tokens, pms, n, dms);
	chunk(out, &ev);
	if (ev.err)
		out->err = ev.err;
	gs_free(&ev);
	/* llama.cpp's top-level counts are reported by their own names, no prefix */
	r->n_reported = 0;
	report(r, "tokens_predicted", "%d", n);
	report(r, "tokens_evaluated", "%d", r->prompt_tokens);
	report(r, "timings.prompt_n", "%d", r->prompt_tokens);
	report(r, "timings.prompt_ms", "%s", pms);
	report(r, "timings.predicted_n", "%d", n);
	report(r, "timings.predicted_ms", "%s", dms);
	r->tokens_out = n;
}

void gen_nonstream_head(struct gen_str *out, size_t body_len)
{
	gs_printf(out,
		  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		  "Connection: keep-alive\r\n\r\n",
		  body_len);
}

void gen_nonstream_body(struct gen_str *out, struct gen_req *r)
{
	int i;

	gs_printf(out,
		  "{\"id\":\"cmpl-%d\",\"object\":\"text_completion\",\"model\":\"tiny-llm\","
		  "\"choices\":[{\"index\":0,\"text\":\"",
		  r->idx + 1);
	for (i = 0; i < r->cfg->n_tokens; i++)
		gs_printf(out, "%s", gen_token_text(r, i));
	gs_printf(out, "\",\"finish_reason\":\"length\"}],");
	usage(out, r);
	gs_printf(out, "}");
}
