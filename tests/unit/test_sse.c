// SPDX-License-Identifier: BSD-2-Clause
/*
 * rt_sse_classify (the span contract's TTFT rule, usage and timings) and
 * the Server-Sent Events line decoder, fed in every possible split.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http.h"
#include "http_int.h"

static struct rt_sse_event classify(const char *s, bool incomplete)
{
	struct rt_sse_event ev;

	rt_sse_classify(s, strlen(s), incomplete, &ev);
	return ev;
}

static const struct rt_http_reported *find(const struct rt_sse_event *ev, const char *name)
{
	for (uint32_t i = 0; i < ev->n_reported; i++) {
		if (strcmp(ev->reported[i].name, name) == 0)
			return &ev->reported[i];
	}
	return NULL;
}

static void assert_reported(const struct rt_sse_event *ev, const char *name, double v)
{
	const struct rt_http_reported *r = find(ev, name);

	if (!r)
		fail_msg("reported %s missing (n_reported %u)", name, ev->n_reported);
	assert_true(r->value > v - 1e-9 && r->value < v + 1e-9);
}

static void test_openai_shapes(void **state)
{
	struct rt_sse_event ev;

	(void)state;
	ev = classify("{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"text\":"
		      "\" Hello\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_CONTENT);
	assert_int_equal(ev.tokens_out, -1);
	assert_false(ev.incomplete);

	ev = classify("{\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"length\"}]}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);

	/* chat: the role-only first delta is not a token */
	ev = classify("{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":"
		      "[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);
	ev = classify("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":"
		      "\"\"}}]}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);
	ev = classify("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_CONTENT);
	assert_int_equal(ev.n_reported, 0);
	ev = classify("{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);

	/* usage-only final chunk (OpenAI include_usage, vLLM) */
	ev = classify("{\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,"
		      "\"completion_tokens\":42,\"total_tokens\":53}}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_USAGE);
	assert_int_equal(ev.tokens_out, 42);
	assert_int_equal(ev.n_reported, 3);
	assert_reported(&ev, "usage.prompt_tokens", 11);
	assert_reported(&ev, "usage.completion_tokens", 42);
	assert_reported(&ev, "usage.total_tokens", 53);

	/* text and usage in one event (vLLM continuous usage stats) */
	ev = classify(
		"{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":"
		"3}}",
		false);
	assert_int_equal(ev.kind, RT_SSE_CONTENT);
	assert_int_equal(ev.tokens_out, 3);
}

static void test_llamacpp_shapes(void **state)
{
	struct rt_sse_event ev;

	(void)state;
	ev = classify("{\"content\":\" world\",\"stop\":false,\"id_slot\":0,\"multimodal\":false}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_CONTENT);
	ev = classify("{\"content\":\"\",\"stop\":false}", false);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);
	ev = classify("{\"content\":\"\",\"id_slot\":0,\"stop\":true,\"model\":\"m.gguf\","
		      "\"tokens_predicted\":16,\"tokens_evaluated\":9,\"timings\":{\"prompt_n\":9,"
		      "\"prompt_ms\":21.5,\"prompt_per_token_ms\":2.38,\"prompt_per_second\":418.6,"
		      "\"predicted_n\":16,\"predicted_ms\":160.25,\"predicted_per_token_ms\":10.0,"
		      "\"predicted_per_second\":99.8}}",
		      false);
	assert_int_equal(ev.kind, RT_SSE_USAGE);
	assert_int_equal(ev.tokens_out, 16);
	assert_reported(&ev, "timings.prompt_ms", 21.5);
	assert_reported(&ev, "timings.predicted_ms", 160.25);
	assert_reported(&ev, "timings.predicted_per_second", 99.8);
	assert_reported(&ev, "tokens_predicted", 16);
	assert_reported(&ev, "tokens_evaluated", 9);
	assert_int_equal(ev.n_reported, 10);

	/* no timings.predicted_n: tokens_predicted */
	ev = classify("{\"content\":\"\",\"stop\":true,\"tokens_predicted\":7}", false);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);
	assert_int_equal(ev.tokens_out, 7);
}

static void test_other_kinds(void **state)
{
	struct rt_sse_event ev;

	(void)state;
	assert_int_equal(classify("[DONE]", false).kind, RT_SSE_DONE);
	assert_int_equal(classify(" [DONE]\n", false).kind, RT_SSE_DONE);
	assert_int_equal(classify("", false).kind, RT_SSE_EMPTY);
	assert_int_equal(classify("  \n", false).kind, RT_SSE_EMPTY);
	assert_int_equal(classify("hello", false).kind, RT_SSE_OTHER);
	assert_int_equal(classify("{\"error\":{\"message\":\"x\"}}", false).kind, RT_SSE_OTHER);
	assert_int_equal(classify("[1,2,3]", false).kind, RT_SSE_OTHER);
	assert_int_equal(classify("{\"choices\":[{\"text\":\"a\"}", false).kind, RT_SSE_OTHER);
	/* content that is not a string does not count */
	assert_int_equal(classify("{\"content\":5}", false).kind, RT_SSE_OTHER);
	rt_sse_classify(NULL, 0, false, &ev);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);
	assert_int_equal(ev.tokens_out, -1);
}

static void test_bounds(void **state)
{
	char buf[4096], *p = buf;
	struct rt_sse_event ev;
	char *deep;
	size_t n = 100000;

	(void)state;
	/* more numbers than fit: the first RT_HTTP_REPORTED_MAX are kept */
	p += sprintf(p, "{\"choices\":[],\"usage\":{");
	for (int i = 0; i < 20; i++)
		p += sprintf(p, "%s\"f%d\":%d", i ? "," : "", i, i);
	sprintf(p, "}}");
	ev = classify(buf, false);
	assert_int_equal(ev.kind, RT_SSE_USAGE);
	assert_int_equal(ev.n_reported, RT_HTTP_REPORTED_MAX);
	assert_reported(&ev, "usage.f0", 0);
	assert_reported(&ev, "usage.f11", 11);

	/* names that do not fit, or that are not plain, are left out */
	ev = classify("{\"usage\":{\"a_name_that_is_far_too_long_to_fit_in_forty\":1,\"we ird\":2,"
		      "\"ok\":3,\"big\":1e999}}",
		      false);
	assert_int_equal(ev.n_reported, 1);
	assert_reported(&ev, "usage.ok", 3);

	/* nesting beyond the bound never reaches cJSON's recursion */
	deep = malloc(2 * n + 1);
	assert_non_null(deep);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	deep[2 * n] = '\0';
	ev = classify(deep, false);
	assert_int_equal(ev.kind, RT_SSE_OTHER);
	ev = classify(deep, true);
	assert_int_equal(ev.kind, RT_SSE_OTHER);
	free(deep);
}

/* A large final llama.cpp event of which only the head and the tail were kept. */
static void test_incomplete_head_tail(void **state)
{
	const char *head = "{\"content\":\"\",\"id_slot\":0,\"stop\":true,\"prompt\":\"<|user|>\\n"
			   "Tell me about \\\"content\\\": \\\"x\\\" and";
	const char *tail = "and so on\",\"tokens_predicted\":128,\"tokens_evaluated\":2048,"
			   "\"timings\":{\"prompt_n\":2048,\"prompt_ms\":812.5,\"predicted_n\":128,"
			   "\"predicted_ms\":2560.0,\"predicted_per_second\":50.0}}";
	char buf[1024];
	struct rt_sse_event ev;

	(void)state;
	snprintf(buf, sizeof(buf), "%s%s", head, tail);
	ev = classify(buf, true);
	assert_true(ev.incomplete);
	assert_int_equal(ev.kind, RT_SSE_USAGE);
	assert_int_equal(ev.tokens_out, 128);
	assert_reported(&ev, "timings.prompt_ms", 812.5);
	assert_reported(&ev, "timings.predicted_per_second", 50.0);
	assert_reported(&ev, "tokens_evaluated", 2048);

	/* a head with generated text: content, even though it does not parse */
	ev = classify("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Once upon a time", true);
	assert_int_equal(ev.kind, RT_SSE_CONTENT);
	ev = classify("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}]} ...", true);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);
	/* OpenAI usage at the end of a cut event */
	ev = classify("...\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9}}", true);
	assert_int_equal(ev.kind, RT_SSE_USAGE);
	assert_int_equal(ev.tokens_out, 9);
	/* an object cut in the middle is not parsed */
	ev = classify("\"timings\":{\"predicted_n\":5,\"predic", true);
	assert_int_equal(ev.tokens_out, -1);
	assert_int_equal(ev.n_reported, 0);
}

/* ---- the line decoder ---------------------------------------------------- */

struct evlog {
	char s[4096];
	size_t len;
};

static void emit(void *ctx, const struct rt_sse_event *ev)
{
	struct evlog *l = ctx;

	l->len += (size_t)snprintf(l->s + l->len, sizeof(l->s) - l->len, "%d%s/%lld;", ev->kind,
				   ev->incomplete ? "i" : "", (long long)ev->tokens_out);
}

static void decode(const char *text, size_t n, size_t split, struct evlog *l)
{
	struct rt_sse_dec d;

	memset(l, 0, sizeof(*l));
	rt_sse_dec_init(&d);
	rt_sse_dec_feed(&d, (const uint8_t *)text, split, emit, l);
	rt_sse_dec_feed(&d, (const uint8_t *)text + split, n - split, emit, l);
	rt_sse_dec_release(&d);
}

static void decode_bytes(const char *text, size_t n, struct evlog *l)
{
	struct rt_sse_dec d;

	memset(l, 0, sizeof(*l));
	rt_sse_dec_init(&d);
	for (size_t i = 0; i < n; i++)
		rt_sse_dec_feed(&d, (const uint8_t *)text + i, 1, emit, l);
	rt_sse_dec_release(&d);
}

static void expect_decoding(const char *text, const char *want)
{
	size_t n = strlen(text);
	struct evlog l;

	for (size_t i = 0; i <= n; i++) {
		decode(text, n, i, &l);
		if (strcmp(l.s, want) != 0)
			fail_msg("split at %zu: got \"%s\", want \"%s\"", i, l.s, want);
	}
	decode_bytes(text, n, &l);
	assert_string_equal(l.s, want);
}

static void test_decoder_line_endings(void **state)
{
	(void)state;
	/* LF, CRLF, CR, and mixed */
	expect_decoding("data: {\"content\":\"a\"}\n\ndata: [DONE]\n\n", "1/-1;4/-1;");
	expect_decoding("data: {\"content\":\"a\"}\r\n\r\ndata: [DONE]\r\n\r\n", "1/-1;4/-1;");
	expect_decoding("data: {\"content\":\"a\"}\r\rdata: [DONE]\r\r", "1/-1;4/-1;");
	expect_decoding("data: {\"content\":\"a\"}\r\n\ndata: [DONE]\n\r\n", "1/-1;4/-1;");
	/* keep-alive comments and other fields, then an unterminated event (dropped) */
	expect_decoding(": ping\n\nevent: message\nid: 7\nretry: 100\n\ndata: [DONE]",
			"2/-1;2/-1;");
	/* several blank lines dispatch nothing more */
	expect_decoding("\n\n\r\n: x\n\n\n\n", "2/-1;");
}

static void test_decoder_fields(void **state)
{
	(void)state;
	/* data lines are joined with LF: JSON split over two lines */
	expect_decoding("data: {\"choices\":[{\"text\":\ndata: \"hi\"}]}\n\n", "1/-1;");
	/* no space after the colon; two spaces keep one (then JSON whitespace) */
	expect_decoding("data:{\"content\":\"a\"}\n\ndata:  {\"content\":\"\"}\n\n", "1/-1;2/-1;");
	/* "data" without a colon is an empty data line */
	expect_decoding("data\n\n", "2/-1;");
	/* a field that only starts with "data" is not data */
	expect_decoding("datax: {\"content\":\"a\"}\n\n", "2/-1;");
	/* a comment line inside an event does not end it */
	expect_decoding("data: {\"usage\":\n: note\ndata: {\"completion_tokens\":4}}\n\n", "3/4;");
}

static void feed_str(struct rt_sse_dec *d, const char *s, struct evlog *l)
{
	rt_sse_dec_feed(d, (const uint8_t *)s, strlen(s), emit, l);
}

static void test_decoder_oversize_and_gap(void **state)
{
	struct rt_sse_dec d;
	struct evlog l;
	char *big;
	size_t n = RT_HTTP_SSE_EVENT_MAX * 3;
	const char *end = "\",\"timings\":{\"predicted_n\":77,\"predicted_ms\":1.5}}\n\n";

	(void)state;
	/* an event larger than the bound: head and tail kept, timings found */
	big = malloc(n + 128);
	assert_non_null(big);
	strcpy(big, "data: {\"content\":\"\",\"prompt\":\"");
	memset(big + strlen(big), 'x', n);
	big[n] = '\0';
	strcat(big, end);
	memset(&l, 0, sizeof(l));
	rt_sse_dec_init(&d);
	rt_sse_dec_feed(&d, (const uint8_t *)big, strlen(big), emit, &l);
	assert_string_equal(l.s, "3i/77;");

	/* a gap in the middle of an event */
	memset(&l, 0, sizeof(l));
	feed_str(&d, "data: {\"content\":\"", &l);
	rt_sse_dec_gap(&d, false);
	feed_str(&d, "\",\"timings\":{\"predicted_n\":3}}\n\n", &l);
	/* the next event is whole again */
	feed_str(&d, "data: [DONE]\n\n", &l);
	assert_string_equal(l.s, "3i/3;4/-1;");

	/* a gap between events: what follows is taken as an event's end */
	memset(&l, 0, sizeof(l));
	rt_sse_dec_gap(&d, true);
	feed_str(&d, "\"usage\":{\"completion_tokens\":8}}\n\n", &l);
	/* framing was lost: later events are guesses too */
	feed_str(&d, "data: [DONE]\n\n", &l);
	assert_string_equal(l.s, "3i/8;4i/-1;");
	rt_sse_dec_release(&d);
	free(big);
}

/* gen_ai.response.id: the top-level "id" only, never a tool call's */
static void test_response_id(void **state)
{
	static const char whole[] =
		"{\"id\":\"chatcmpl-9f\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}";
	static const char nested[] = "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":"
				     "\"call_1\"}]}}]}";
	static const char spaced[] = "{\"id\":\"two words\",\"choices\":[]}";
	static const char head[] = " { \"id\" : \"cmpl-7\", \"choices\":[{\"text\":\"xx";
	static const char inner_head[] = "{\"object\":\"x\",\"id\":\"cmpl-8\",\"choices\":[";
	struct rt_sse_event ev;

	(void)state;
	rt_sse_classify(whole, strlen(whole), false, &ev);
	assert_string_equal(ev.response_id, "chatcmpl-9f");
	rt_sse_classify(nested, strlen(nested), false, &ev);
	assert_string_equal(ev.response_id, "");
	rt_sse_classify(spaced, strlen(spaced), false, &ev);
	assert_string_equal(ev.response_id, "");
	/* a kept head: a leading id is the top-level one */
	rt_sse_classify(head, strlen(head), true, &ev);
	assert_string_equal(ev.response_id, "cmpl-7");
	/* further in, a partial text cannot tell whose it is */
	rt_sse_classify(inner_head, strlen(inner_head), true, &ev);
	assert_string_equal(ev.response_id, "");
}

static void test_keepbuf(void **state)
{
	struct rt_keepbuf kb;
	char in[100], want[16];
	const char *out;
	size_t len;

	(void)state;
	for (int i = 0; i < 100; i++)
		in[i] = (char)('a' + i % 26);
	rt_keepbuf_init(&kb, 16);
	for (int i = 0; i < 100; i += 7)
		rt_keepbuf_append(&kb, in + i, i + 7 > 100 ? (size_t)(100 - i) : 7);
	out = rt_keepbuf_data(&kb, &len);
	memcpy(want, in, 8);
	memcpy(want + 8, in + 92, 8);
	assert_int_equal(len, 16);
	assert_memory_equal(out, want, 16);
	assert_true(rt_keepbuf_partial(&kb));
	assert_int_equal(kb.total, 100);
	/* reading linearises in place; appending afterwards still works */
	rt_keepbuf_append(&kb, "Z", 1);
	out = rt_keepbuf_data(&kb, &len);
	assert_int_equal(out[15], 'Z');
	assert_int_equal(out[8], in[93]);
	rt_keepbuf_reset(&kb);
	assert_false(rt_keepbuf_partial(&kb));
	rt_keepbuf_append(&kb, "abc", 3);
	out = rt_keepbuf_data(&kb, &len);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "abc", 3);
	rt_keepbuf_release(&kb);
	assert_null(kb.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_shapes),
		cmocka_unit_test(test_llamacpp_shapes),
		cmocka_unit_test(test_other_kinds),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_incomplete_head_tail),
		cmocka_unit_test(test_decoder_line_endings),
		cmocka_unit_test(test_decoder_fields),
		cmocka_unit_test(test_decoder_oversize_and_gap),
		cmocka_unit_test(test_response_id),
		cmocka_unit_test(test_keepbuf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
