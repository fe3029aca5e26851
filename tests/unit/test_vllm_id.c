// SPDX-License-Identifier: BSD-2-Clause
/*
 * vLLM's request-id rules (proto/vllm_id.h), one case per rule of
 * docs/packs.md ("vLLM V1")'s join table, and the near misses that must not join.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "proto/vllm_id.h"

static struct rt_vllm_str str(const char *s)
{
	return (struct rt_vllm_str){ .ptr = s, .len = s ? (uint32_t)strlen(s) : 0 };
}

static enum rt_vllm_id_rule hdr(const char *ext, const char *h, int64_t *i)
{
	return rt_vllm_id_match_header(str(ext), h, strlen(h), i);
}

static enum rt_vllm_id_rule resp(const char *ext, const char *r, int64_t *i)
{
	return rt_vllm_id_match_response(str(ext), r, strlen(r), i);
}

static void test_header(void **state)
{
	int64_t i = 99;

	(void)state;
	/* chat, one prompt: chatcmpl-{H} */
	assert_int_equal(hdr("chatcmpl-abc", "abc", &i), RT_VLLM_ID_EXACT);
	assert_int_equal(i, -1);
	/* chat, several prompts: chatcmpl-{H}_{i} */
	assert_int_equal(hdr("chatcmpl-abc_2", "abc", &i), RT_VLLM_ID_PROMPT);
	assert_int_equal(i, 2);
	/* completions: cmpl-{H}-{i}, the index always there */
	assert_int_equal(hdr("cmpl-abc-0", "abc", &i), RT_VLLM_ID_PROMPT);
	assert_int_equal(i, 0);
	assert_int_equal(hdr("cmpl-abc-12", "abc", &i), RT_VLLM_ID_PROMPT);
	assert_int_equal(i, 12);
	assert_int_equal(hdr("cmpl-abc", "abc", &i), RT_VLLM_ID_NO_MATCH);
	/* a header that ends like an index: the exact reading */
	assert_int_equal(hdr("chatcmpl-abc_2", "abc_2", &i), RT_VLLM_ID_EXACT);
	/* near misses */
	assert_int_equal(hdr("chatcmpl-abcd", "abc", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(hdr("chatcmpl-abc_", "abc", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(hdr("chatcmpl-abc_02", "abc", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(hdr("chatcmpl-abc_x", "abc", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(hdr("chatcmpl-abc-1", "abc", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(hdr("cmpl-abc_1", "abc", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(hdr("abc", "abc", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(hdr("chatcmpl-abc", "", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(rt_vllm_id_match_header(str(NULL), "abc", 3, &i), RT_VLLM_ID_NO_MATCH);
	/* an index too long for int64_t */
	assert_int_equal(hdr("cmpl-a-1234567890123456789", "a", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(hdr("cmpl-a-123456789012345678", "a", NULL), RT_VLLM_ID_PROMPT);
}

static void test_response(void **state)
{
	int64_t i = 99;

	(void)state;
	/* the SSE chunks' id is the handler's id */
	assert_int_equal(resp("chatcmpl-3f2a", "chatcmpl-3f2a", &i), RT_VLLM_ID_EXACT);
	assert_int_equal(i, -1);
	assert_int_equal(resp("chatcmpl-3f2a_1", "chatcmpl-3f2a", &i), RT_VLLM_ID_PROMPT);
	assert_int_equal(i, 1);
	assert_int_equal(resp("cmpl-3f2a-0", "cmpl-3f2a", &i), RT_VLLM_ID_PROMPT);
	assert_int_equal(i, 0);
	assert_int_equal(resp("cmpl-3f2a-0", "cmpl-3f2", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(resp("cmpl-3f2a", "cmpl-3f2a-0", &i), RT_VLLM_ID_NO_MATCH);
	assert_int_equal(resp("cmpl-3f2a-", "cmpl-3f2a", &i), RT_VLLM_ID_NO_MATCH);
}

static void test_internal(void **state)
{
	int64_t k = 99;
	bool sfx = false;

	(void)state;
	assert_true(rt_vllm_id_internal(str("chatcmpl-r1-0a1b2c3d"), str("chatcmpl-r1"), &k, &sfx));
	assert_int_equal(k, -1);
	assert_true(sfx);
	/* randomisation disabled */
	assert_true(rt_vllm_id_internal(str("cmpl-x-77"), str("cmpl-x-77"), &k, &sfx));
	assert_int_equal(k, -1);
	assert_false(sfx);
	/* child 0 of n>1 */
	assert_true(rt_vllm_id_internal(str("0_cmpl-abc-0-1a2b3c4d"), str("cmpl-abc-0"), &k, &sfx));
	assert_int_equal(k, 0);
	assert_true(sfx);
	assert_true(rt_vllm_id_internal(str("13_chatcmpl-q"), str("chatcmpl-q"), &k, &sfx));
	assert_int_equal(k, 13);
	assert_false(sfx);
	/* near misses: a suffix of the wrong length or case, a foreign id */
	assert_false(rt_vllm_id_internal(str("chatcmpl-r1-0a1b2c3"), str("chatcmpl-r1"), &k, &sfx));
	assert_false(
		rt_vllm_id_internal(str("chatcmpl-r1-0A1B2C3D"), str("chatcmpl-r1"), &k, &sfx));
	assert_false(
		rt_vllm_id_internal(str("chatcmpl-r2-0a1b2c3d"), str("chatcmpl-r1"), &k, &sfx));
	assert_false(rt_vllm_id_internal(str("x_chatcmpl-r1"), str("chatcmpl-r1"), &k, &sfx));
	assert_false(rt_vllm_id_internal(str("_chatcmpl-r1"), str("chatcmpl-r1"), &k, &sfx));
	assert_false(rt_vllm_id_internal(str("chatcmpl-r1"), str(NULL), &k, &sfx));
	assert_false(rt_vllm_id_internal(str("chatcmpl-r1"), str(""), NULL, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_internal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
