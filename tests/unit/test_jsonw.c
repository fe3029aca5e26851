// SPDX-License-Identifier: BSD-2-Clause
/*
 * The JSON writer's numbers against printf's formats (hand-rolled for
 * speed, they must print the same), and its strings: escapes, control
 * bytes, UTF-8 kept, invalid bytes replaced, plain runs copied whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonw.h"
#include "rt_rnd.h"

static uint64_t rnd_state = 0x853C49E6748FEA9Bull;

static uint64_t rnd(void)
{
	return rt_rnd(&rnd_state);
}

static void one_int(int64_t v)
{
	struct rt_jsonw w;
	char want[64];

	rt_jsonw_init(&w, 0);
	rt_jsonw_int(&w, v);
	snprintf(want, sizeof(want), "%" PRId64, v);
	assert_string_equal(rt_jsonw_str(&w), want);
	rt_jsonw_reset(&w);
	rt_jsonw_uint(&w, (uint64_t)v);
	snprintf(want, sizeof(want), "%" PRIu64, (uint64_t)v);
	assert_string_equal(rt_jsonw_str(&w), want);
	rt_jsonw_reset(&w);
	rt_jsonw_ms(&w, v);
	{
		uint64_t a = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
		uint64_t us = (a + 500) / 1000;

		snprintf(want, sizeof(want), "%s%" PRIu64 ".%03" PRIu64, v < 0 ? "-" : "",
			 us / 1000, us % 1000);
	}
	assert_string_equal(rt_jsonw_str(&w), want);
	rt_jsonw_fini(&w);
}

static void test_numbers(void **state)
{
	static const int64_t edge[] = { 0,
					1,
					-1,
					9,
					10,
					-10,
					499,
					500,
					-500,
					999,
					1000,
					1499500,
					-1499500,
					99999,
					INT64_MAX,
					INT64_MIN,
					INT64_MAX - 499 };

	(void)state;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		one_int(edge[i]);
	for (int i = 0; i < 200000; i++) {
		int64_t v = (int64_t)rnd();

		one_int(v >> (rnd() % 64));
	}
}

static void str_is(const char *in, const char *want)
{
	struct rt_jsonw w;

	rt_jsonw_init(&w, 0);
	rt_jsonw_str_val(&w, in);
	assert_string_equal(rt_jsonw_str(&w), want);
	rt_jsonw_fini(&w);
}

static void test_strings(void **state)
{
	(void)state;
	str_is("", "\"\"");
	str_is("plain text, 1.5 ms", "\"plain text, 1.5 ms\"");
	str_is("a\"b\\c", "\"a\\\"b\\\\c\"");
	str_is("l1\nl2\r\t", "\"l1\\nl2\\r\\t\"");
	str_is("\x01x\x1f\x7f", "\"\\u0001x\\u001f\\u007f\"");
	str_is("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	       "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	str_is("bad \xc3 end \xff", "\"bad \\ufffd end \\ufffd\"");
	str_is("\xe2\x82", "\"\\ufffd\\ufffd\"");
}

static void test_object(void **state)
{
	struct rt_jsonw w;

	(void)state;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "a");
	rt_jsonw_int(&w, -5);
	rt_jsonw_key(&w, "k\"ey");
	rt_jsonw_arr_open(&w);
	rt_jsonw_uint(&w, 7);
	rt_jsonw_ms(&w, 1234567);
	rt_jsonw_null(&w);
	rt_jsonw_arr_close(&w);
	rt_jsonw_obj_close(&w);
	assert_true(rt_jsonw_ok(&w));
	assert_string_equal(rt_jsonw_str(&w), "{\"a\":-5,\"k\\\"ey\":[7,1.235,null]}");
	rt_jsonw_fini(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
