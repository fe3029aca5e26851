// SPDX-License-Identifier: BSD-2-Clause
/* The truth line: exactly the documented keys, integers, nulls, escaping. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "truth.h"

static const char *const keys[] = {
	"request_id",	   "accept_ns",
	"arrival_ns",	   "first_read_ns",
	"received_ns",	   "tokenize_start_ns",
	"tokenize_end_ns", "enqueue_ns",
	"admitted_ns",	   "first_token_write_ns",
	"token_write_ns",  "last_token_write_ns",
	"end_ns",	   "comm_wait_ns",
	"tokenizer_tid",   "step_tids",
	"outcome",
};

static void test_format(void **state)
{
	struct tb_req *r = tb_req__new("id \"q\" \\ x", 3);
	const cJSON *it;
	struct tb_buf b;
	cJSON *root;
	size_t i;

	(void)state;
	assert_non_null(r);
	/* beyond 2^53: a double would round it */
	r->arrival_ns = 9007199254740993ull;
	r->received_ns = 9007199254740995ull;
	r->tokenize_start_ns = 10;
	r->tokenizer_tid = 1234;
	r->token_write_ns[0] = 20;
	r->token_write_ns[1] = 21;
	r->n_token_writes = 2;
	r->first_token_write_ns = 20;
	tb_req_add_step_tid(r, 55);
	tb_req_add_step_tid(r, 55);
	tb_req_add_step_tid(r, 56);
	r->aborted = true;

	tb_buf_init(&b, 1 << 16);
	assert_int_equal(tb_truth_format(r, &b), 0);
	assert_true(b.len > 0 && b.p[b.len - 1] == '\n');
	assert_null(memchr(b.p, '\n', b.len - 1));
	assert_non_null(strstr(b.p, "\"arrival_ns\":9007199254740993,"));
	/* the same instant under its second name; no accept on this request */
	assert_non_null(strstr(b.p, "\"first_read_ns\":9007199254740993,"));
	assert_non_null(strstr(b.p, "\"accept_ns\":null,"));

	root = cJSON_Parse(b.p);
	assert_non_null(root);
	assert_int_equal(cJSON_GetArraySize(root), sizeof(keys) / sizeof(keys[0]));
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(cJSON_GetObjectItemCaseSensitive(root, keys[i]));
	assert_string_equal(cJSON_GetObjectItem(root, "request_id")->valuestring, "id \"q\" \\ x");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(root, "tokenize_end_ns")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(root, "end_ns")));
	assert_int_equal(cJSON_GetObjectItem(root, "comm_wait_ns")->valueint, 0);
	it = cJSON_GetObjectItem(root, "token_write_ns");
	assert_int_equal(cJSON_GetArraySize(it), 2);
	assert_int_equal(cJSON_GetArrayItem(it, 1)->valueint, 21);
	it = cJSON_GetObjectItem(root, "step_tids");
	assert_int_equal(cJSON_GetArraySize(it), 2);
	assert_string_equal(cJSON_GetObjectItem(root, "outcome")->valuestring, "aborted");
	cJSON_Delete(root);

	/* a bounded buffer too small for the line is an error, not a cut line */
	tb_buf_free(&b);
	tb_buf_init(&b, 64);
	assert_int_equal(tb_truth_format(r, &b), -ENOBUFS);
	tb_buf_free(&b);
	tb_req_release(r, false);
	tb_req__free(r);
}

static void test_json_escape(void **state)
{
	struct tb_buf b;

	(void)state;
	tb_buf_init(&b, 256);
	assert_int_equal(tb_buf_json_strn(&b, "a\"b\\c\n\x01\x7f", 8), 0);
	assert_string_equal(b.p, "\"a\\\"b\\\\c\\n\\u0001\\u007f\"");
	tb_buf_reset(&b);
	assert_int_equal(tb_buf_json_u64(&b, TB_NULL_U64), 0);
	assert_string_equal(b.p, "null");
	tb_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_json_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
