// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SSE memo (sse.c) against classifying every event afresh: after any
 * event, the next one's facts through the memo must be the facts
 * rt_sse_classify() gives it alone. Pairs come from hand-made stream
 * shapes (OpenAI completions and chat, llama-server, vLLM, escapes, several
 * choices, usage), the timings fuzz corpus, and seeded edits both inside
 * the token's text (where the memo may answer) and anywhere else (where
 * it must not answer wrongly). The memo must also answer: a stream whose
 * events differ only in plain token text is classified once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http.h"
#include "http_int.h"
#include "rt_rnd.h"

static const char *const shapes[] = {
	"{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1700000000,"
	"\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" tok\",\"logprobs\":null,"
	"\"finish_reason\":null}]}",
	"{\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1,"
	"\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},"
	"\"finish_reason\":null}],\"usage\":null}",
	"{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"x\"}}],"
	"\"created\":1700000001,\"id\":\"chatcmpl-3\",\"model\":\"g\","
	"\"system_fingerprint\":\"b1-abc\",\"object\":\"chat.completion.chunk\"}",
	"{\"content\":\" the\",\"stop\":false,\"id_slot\":0,\"multimodal\":false,\"index\":0}",
	"{\"content\":\"\",\"stop\":true,\"id_slot\":3,\"tokens_predicted\":12,"
	"\"tokens_evaluated\":5,\"timings\":{\"predicted_n\":12,\"prompt_ms\":1.5}}",
	"{\"id\":\"cmpl-4\",\"choices\":[{\"index\":0,\"text\":\"a\\\"b\"}]}",
	"{\"id\":\"cmpl-5\",\"choices\":[{\"index\":0,\"text\":\"\\u0000x\"}]}",
	"{\"id\":\"cmpl-6\",\"choices\":[{\"index\":0,\"text\":\"\"},{\"index\":1,\"text\":\"b\"}]"
	"}",
	"{\"id\":\"cmpl-7\",\"choices\":[{\"index\":0,\"text\":\"t\"}],"
	"\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9,\"total_tokens\":12}}",
	"  {\"id\":\"c 8\",\"choices\":[{\"text\":\"q\",\"text\":\"\"}]}  ",
	"\xef\xbb\xbf{\"choices\":[{\"message\":{\"content\":\"m\"}}],\"id\":\"cmpl-9\"}",
	"{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}",
	"{\"choices\":[{\"text\":\"ok\"}]} trailing [[[",
	"{\"choices\":[{\"text\":\"unterminated}]}",
	"[DONE]",
	"",
};

static uint64_t rnd_state = 0x2545F4914F6CDD1Dull;

static uint64_t rnd(void)
{
	return rt_rnd(&rnd_state);
}

static uint64_t pairs, hits;

static void same_event(const struct rt_sse_event *a, const struct rt_sse_event *b)
{
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->incomplete, b->incomplete);
	assert_int_equal(a->tokens_out, b->tokens_out);
	assert_int_equal(a->id_slot, b->id_slot);
	assert_string_equal(a->response_id, b->response_id);
	assert_int_equal(a->n_reported, b->n_reported);
	for (uint32_t i = 0; i < a->n_reported; i++) {
		assert_string_equal(a->reported[i].name, b->reported[i].name);
		assert_memory_equal(&a->reported[i].value, &b->reported[i].value,
				    sizeof(a->reported[i].value));
	}
}

/* next's facts through a memo that has seen prev, and alone */
static void check_pair(struct rt_sse_memo **m, const char *next, size_t n)
{
	struct rt_sse_event via, alone;

	rt_sse_classify_memo(m, next, n, false, &via);
	rt_sse_classify(next, n, false, &alone);
	same_event(&via, &alone);
	pairs++;
}

/* bytes that matter inside a string: a NUL empties it when first */
static const char special[] = { '"', '\\', '\0', '\x01', '\n', 'u' };

static const char dict[] = "\"\\\\u0000{}[],: \t\nabc0123456789eE.-+\x01\xef";

/*
 * One edit. Mostly a new token: the first "text"/"content" string's bytes
 * up to the next quote replaced by 0-8 bytes, now and then holding a byte
 * that matters (a quote, a backslash, a NUL, a control byte). Otherwise a
 * byte replaced, inserted or deleted anywhere.
 */
static size_t edit(char *buf, size_t n, size_t cap)
{
	const char *v = strstr(buf, "\"text\":\"");
	size_t at;
	char c = dict[rnd() % (sizeof(dict) - 1)];

	if (!v)
		v = strstr(buf, "\"content\":\"");
	if (v && rnd() % 8 < 7) {
		size_t from = (size_t)(strchr(v + 1, ':') - buf) + 2, to = from, k, len;
		char tok[8];

		while (to < n && buf[to] != '"')
			to++;
		len = (size_t)(rnd() % 9);
		for (k = 0; k < len; k++)
			tok[k] = rnd() % 12 ? "abcdefghij XYZ_.,019"[rnd() % 20] :
					      special[rnd() % sizeof(special)];
		if (n - (to - from) + len >= cap)
			return n;
		memmove(buf + from + len, buf + to, n - to);
		memcpy(buf + from, tok, len);
		n = n - (to - from) + len;
		buf[n] = '\0';
		return n;
	}
	/* the memo compares bytes, a NUL among them included: strstr above stops at one */
	at = n ? (size_t)(rnd() % n) : 0;
	switch (rnd() % 3) {
	case 0:
		if (at < n)
			buf[at] = c;
		break;
	case 1:
		if (n + 1 < cap) {
			memmove(buf + at + 1, buf + at, n - at);
			buf[at] = c;
			n++;
		}
		break;
	default:
		if (at < n) {
			memmove(buf + at, buf + at + 1, n - at - 1);
			n--;
		}
		break;
	}
	buf[n] = '\0';
	return n;
}

/* A stream: each event an edit or two of the one before, all through one memo. */
static void stream_from(const char *base, size_t len, unsigned int events)
{
	struct rt_sse_memo *m = NULL;
	char buf[1200];
	size_t n = len < 1000 ? len : 1000;

	memcpy(buf, base, n);
	buf[n] = '\0';
	check_pair(&m, buf, n);
	for (unsigned int e = 0; e < events; e++) {
		unsigned int k = 1 + (rnd() % 4 == 0);

		/* now and then back to the base: most streams' events are alike */
		if (rnd() % 4 == 0) {
			n = len < 1000 ? len : 1000;
			memcpy(buf, base, n);
			buf[n] = '\0';
		}
		while (k--)
			n = edit(buf, n, sizeof(buf) - 1);
		check_pair(&m, buf, n);
	}
	hits += rt_sse_memo_hits(m);
	rt_sse_memo_free(&m);
	assert_null(m);
}

static void test_shapes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		for (int s = 0; s < 200; s++)
			stream_from(shapes[i], strlen(shapes[i]), 100);
}

static void test_corpus(void **state)
{
	char path[4096], buf[8192];
	const char *dir = RT_SOURCE_DIR "/tests/fuzz/corpus/timings";
	struct dirent *de;
	DIR *d = opendir(dir);
	unsigned int files = 0;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d))) {
		FILE *fp;
		size_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fp = fopen(path, "rb");
		if (!fp)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
		files++;
		if (n > 1) /* the harness's first byte is a mode */
			for (int s = 0; s < 3; s++)
				stream_from(buf + 1, n - 1, 50);
	}
	closedir(d);
	assert_true(files >= 50);
}

/* The memo answers for a stream of plain tokens, and only once the facts agree. */
static void test_hits(void **state)
{
	struct rt_sse_memo *m = NULL;
	struct rt_sse_event ev;
	char buf[256];
	int n;

	(void)state;
	for (int i = 0; i < 100; i++) {
		n = snprintf(buf, sizeof(buf),
			     "{\"id\":\"cmpl-h\",\"choices\":[{\"index\":0,\"text\":\"%.*s\"}]}",
			     1 + i % 7, "tokensss");
		rt_sse_classify_memo(&m, buf, (size_t)n, false, &ev);
		assert_int_equal(ev.kind, RT_SSE_CONTENT);
		assert_string_equal(ev.response_id, "cmpl-h");
	}
	assert_int_equal(rt_sse_memo_hits(m), 99);
	/* empty now: not the memo's facts */
	n = snprintf(buf, sizeof(buf),
		     "{\"id\":\"cmpl-h\",\"choices\":[{\"index\":0,\"text\":\"\"}]}");
	rt_sse_classify_memo(&m, buf, (size_t)n, false, &ev);
	assert_int_equal(ev.kind, RT_SSE_EMPTY);
	assert_int_equal(rt_sse_memo_hits(m), 99);
	/* an incomplete event never uses it */
	n = snprintf(buf, sizeof(buf),
		     "{\"id\":\"cmpl-h\",\"choices\":[{\"index\":0,\"text\":\"\"}]}");
	rt_sse_classify_memo(&m, buf, (size_t)n, true, &ev);
	assert_true(ev.incomplete);
	assert_int_equal(rt_sse_memo_hits(m), 99);
	rt_sse_memo_free(&m);
}

static void test_counted(void **state)
{
	(void)state;
	/* enough pairs that the edits above reached every path */
	assert_true(pairs > 100000);
	/* ... and the memo answered for many of them: its own path was tested */
	assert_true(hits > pairs / 10);
	printf("test_sse_memo: %llu event pairs compared, the memo answered %llu\n",
	       (unsigned long long)pairs, (unsigned long long)hits);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hits),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
