// SPDX-License-Identifier: BSD-2-Clause
/* The testbed's own request-head parser (src/testbed/http.c). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http.h"

static int parse(const char *s, struct tb_http_req *r)
{
	return tb_http_parse_head(s, strlen(s), r);
}

static void test_post(void **state)
{
	const char *s = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\n"
			"content-LENGTH:  12 \r\nX-Request-Id: req-7\r\n\r\n{\"prompt\":1}";
	struct tb_http_req r;

	(void)state;
	assert_int_equal(parse(s, &r), 1);
	assert_string_equal(r.method, "POST");
	assert_string_equal(r.path, "/v1/completions");
	assert_int_equal(r.minor, 1);
	assert_true(r.keep_alive);
	assert_true(r.has_content_length);
	assert_int_equal(r.content_length, 12);
	assert_true(r.has_request_id);
	assert_string_equal(r.request_id, "req-7");
	assert_int_equal(r.head_len, strstr(s, "{") - s);
	assert_false(r.has_transfer_encoding);
}

static void test_incomplete(void **state)
{
	const char *s = "GET /health HTTP/1.1\r\nHost: a\r\n\r\n";
	struct tb_http_req r;
	size_t i;

	(void)state;
	for (i = 0; i < strlen(s); i++)
		assert_int_equal(tb_http_parse_head(s, i, &r), 0);
	assert_int_equal(parse(s, &r), 1);
	assert_false(r.has_content_length);
}

static void test_connection(void **state)
{
	struct tb_http_req r;

	(void)state;
	assert_int_equal(parse("GET / HTTP/1.0\r\n\r\n", &r), 1);
	assert_false(r.keep_alive);
	assert_int_equal(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r), 1);
	assert_true(r.keep_alive);
	assert_int_equal(parse("GET / HTTP/1.1\r\nConnection: upgrade, close\r\n\r\n", &r), 1);
	assert_false(r.keep_alive);
	assert_int_equal(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &r), 1);
	assert_true(r.has_transfer_encoding);
	/* equal duplicates are fine */
	assert_int_equal(
		parse("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", &r), 1);
}

static void test_malformed(void **state)
{
	const char *bad[] = {
		"GARBAGE\r\n\r\n",
		"GET  / HTTP/1.1\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"GET / HTTP/1.1x\r\n\r\n",
		"G(T / HTTP/1.1\r\n\r\n",
		"GET /a\x01 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nno colon\r\n\r\n",
		"GET / HTTP/1.1\r\n: empty name\r\n\r\n",
		"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\n\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: \r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 9999999999999999\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
		"GET / HTTP/1.1\r\nx-request-id: a b\r\n\r\n",
		"GET / HTTP/1.1\r\nx-request-id: \r\n\r\n",
		"GET / HTTP/1.1\r\nx-request-id: caf\xc3\xa9\r\n\r\n",
	};
	struct tb_http_req r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &r) != -EBADMSG)
			fail_msg("case %zu accepted: %s", i, bad[i]);
	}
}

static void test_limits(void **state)
{
	char *big = malloc(TB_HTTP_HEAD_MAX + 64), id[TB_REQUEST_ID_MAX + 64];
	struct tb_http_req r;
	char head[512];

	(void)state;
	assert_non_null(big);
	memset(big, 'a', TB_HTTP_HEAD_MAX + 64);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	assert_int_equal(tb_http_parse_head(big, TB_HTTP_HEAD_MAX - 1, &r), 0);
	assert_int_equal(tb_http_parse_head(big, TB_HTTP_HEAD_MAX + 64, &r), -E2BIG);
	free(big);

	memset(id, 'i', sizeof(id));
	id[TB_REQUEST_ID_MAX] = '\0';
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nx-request-id: %s\r\n\r\n", id);
	assert_int_equal(parse(head, &r), 1);
	assert_int_equal(strlen(r.request_id), TB_REQUEST_ID_MAX);
	id[TB_REQUEST_ID_MAX] = 'i';
	id[TB_REQUEST_ID_MAX + 1] = '\0';
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nx-request-id: %s\r\n\r\n", id);
	assert_int_equal(parse(head, &r), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post),	   cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_connection), cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
