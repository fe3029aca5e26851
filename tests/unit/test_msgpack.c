// SPDX-License-Identifier: BSD-2-Clause
/*
 * The bounded msgpack reader (proto/msgpack.h): every format of the msgpack
 * spec, byte by byte from the spec's format table, the truncation of each,
 * hostile lengths and the nesting limit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "proto/msgpack.h"

#define S(lit) ((const uint8_t *)(lit)), (sizeof(lit) - 1)

static struct rt_mp_value one(const uint8_t *p, size_t n, int want, size_t want_pos)
{
	struct rt_mp_reader r;
	struct rt_mp_value v;

	memset(&v, 0, sizeof(v));
	rt_mp_init(&r, p, n);
	assert_int_equal(rt_mp_read(&r, &v), want);
	assert_int_equal(r.pos, want_pos);
	return v;
}

/* every proper prefix of a whole value is -ENODATA, position unchanged */
static void prefixes(const uint8_t *p, size_t n)
{
	for (size_t len = 0; len < n; len++) {
		struct rt_mp_reader r;
		struct rt_mp_value v;

		rt_mp_init(&r, p, len);
		assert_int_equal(rt_mp_read(&r, &v), -ENODATA);
		assert_int_equal(r.pos, 0);
		rt_mp_init(&r, p, len);
		assert_int_equal(rt_mp_skip(&r, RT_MP_DEPTH_MAX), -ENODATA);
	}
}

static void test_scalars(void **state)
{
	struct rt_mp_value v;

	(void)state;
	v = one(S("\xc0"), 0, 1);
	assert_int_equal(v.type, RT_MP_NIL);
	v = one(S("\xc3"), 0, 1);
	assert_true(v.type == RT_MP_BOOL && v.b);
	v = one(S("\xc2"), 0, 1);
	assert_true(v.type == RT_MP_BOOL && !v.b);
	v = one(S("\x7f"), 0, 1); /* positive fixint */
	assert_true(v.type == RT_MP_UINT && v.u == 127);
	v = one(S("\xe0"), 0, 1); /* negative fixint -32 */
	assert_true(v.type == RT_MP_INT && v.i == -32);
	v = one(S("\xff"), 0, 1);
	assert_true(v.type == RT_MP_INT && v.i == -1);
	v = one(S("\xcc\xff"), 0, 2);
	assert_true(v.type == RT_MP_UINT && v.u == 255);
	v = one(S("\xcd\x01\x00"), 0, 3);
	assert_true(v.type == RT_MP_UINT && v.u == 256);
	v = one(S("\xce\x00\x01\x86\xa0"), 0, 5);
	assert_true(v.type == RT_MP_UINT && v.u == 100000);
	v = one(S("\xcf\xff\xff\xff\xff\xff\xff\xff\xff"), 0, 9);
	assert_true(v.type == RT_MP_UINT && v.u == UINT64_MAX);
	v = one(S("\xd0\x80"), 0, 2);
	assert_true(v.type == RT_MP_INT && v.i == -128);
	v = one(S("\xd0\x05"), 0, 2); /* a non-negative int 8 reads as UINT */
	assert_true(v.type == RT_MP_UINT && v.u == 5);
	v = one(S("\xd1\xff\x00"), 0, 3);
	assert_true(v.type == RT_MP_INT && v.i == -256);
	v = one(S("\xd2\x80\x00\x00\x00"), 0, 5);
	assert_true(v.type == RT_MP_INT && v.i == INT32_MIN);
	v = one(S("\xd3\x80\x00\x00\x00\x00\x00\x00\x00"), 0, 9);
	assert_true(v.type == RT_MP_INT && v.i == INT64_MIN);
	v = one(S("\xca\x3f\xc0\x00\x00"), 0, 5); /* float32 1.5 */
	assert_true(v.type == RT_MP_FLOAT && v.f == 1.5);
	v = one(S("\xcb\x40\xc8\x1c\xc0\x00\x00\x00\x00"), 0, 9); /* float64 12345.5 */
	assert_true(v.type == RT_MP_FLOAT && v.f == 12345.5);
	one(S("\xc1"), -EBADMSG, 0); /* never used */
	prefixes(S("\xcf\xff\xff\xff\xff\xff\xff\xff\xff"));
	prefixes(S("\xd3\x80\x00\x00\x00\x00\x00\x00\x00"));
	prefixes(S("\xcb\x40\xc8\x1c\xc0\x00\x00\x00\x00"));
	prefixes(S("\xca\x3f\xc0\x00\x00"));
}

static void test_str_bin(void **state)
{
	struct rt_mp_value v;
	uint8_t buf[70000];

	(void)state;
	v = one(S("\xa3"
		  "abc"),
		0, 4);
	assert_true(v.type == RT_MP_STR && v.s.len == 3 && memcmp(v.s.ptr, "abc", 3) == 0);
	v = one(S("\xa0"), 0, 1);
	assert_true(v.type == RT_MP_STR && v.s.len == 0);
	v = one(S("\xd9\x02xy"), 0, 4);
	assert_true(v.type == RT_MP_STR && v.s.len == 2);
	v = one(S("\xc4\x01\x00"), 0, 3);
	assert_true(v.type == RT_MP_BIN && v.s.len == 1 && v.s.ptr[0] == 0);
	/* str16, bin16, str32, bin32 with a real payload */
	memset(buf, 'z', sizeof(buf));
	memcpy(buf, "\xda\x01\x00", 3);
	v = one(buf, 3 + 256, 0, 259);
	assert_true(v.type == RT_MP_STR && v.s.len == 256);
	memcpy(buf, "\xc5\x01\x00", 3);
	v = one(buf, 3 + 256, 0, 259);
	assert_true(v.type == RT_MP_BIN && v.s.len == 256);
	memcpy(buf, "\xdb\x00\x01\x00\x00", 5);
	v = one(buf, 5 + 65536, 0, 5 + 65536);
	assert_true(v.type == RT_MP_STR && v.s.len == 65536);
	memcpy(buf, "\xc6\x00\x01\x00\x00", 5);
	v = one(buf, 5 + 65536, 0, 5 + 65536);
	assert_true(v.type == RT_MP_BIN && v.s.len == 65536);
	prefixes(buf, 600); /* prefixes of a str32: header, then payload */
	/* a length of 4 GiB - 1 must not wrap the position */
	one(S("\xdb\xff\xff\xff\xff"
	      "abc"),
	    -ENODATA, 0);
	one(S("\xc6\xff\xff\xff\xff"), -ENODATA, 0);
	prefixes(S("\xd9\x02xy"));
}

static void test_ext(void **state)
{
	struct rt_mp_value v;
	uint8_t buf[300];

	(void)state;
	/* fixext 1, 2, 4, 8, 16: d4..d8, then the type, then 2^k bytes */
	for (unsigned k = 0; k < 5; k++) {
		size_t n = 1u << k;

		memset(buf, 0xab, sizeof(buf));
		buf[0] = (uint8_t)(0xd4 + k);
		buf[1] = 3; /* vLLM's raw-view ext type */
		v = one(buf, 2 + n, 0, 2 + n);
		assert_true(v.type == RT_MP_EXT && v.ext_type == 3 && v.s.len == n);
		assert_ptr_equal(v.s.ptr, buf + 2);
		prefixes(buf, 2 + n);
	}
	/* ext 8, 16, 32 with types 1..5 and a negative one (msgpack's timestamp) */
	v = one(S("\xc7\x02\x01xy"), 0, 5);
	assert_true(v.type == RT_MP_EXT && v.ext_type == 1 && v.s.len == 2);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "\xc8\x01\x00\x05", 4);
	v = one(buf, 4 + 256, 0, 260);
	assert_true(v.type == RT_MP_EXT && v.ext_type == 5 && v.s.len == 256);
	v = one(S("\xc9\x00\x00\x00\x01\x02z"), 0, 7);
	assert_true(v.type == RT_MP_EXT && v.ext_type == 2 && v.s.len == 1);
	v = one(S("\xd6\xff\x00\x00\x00\x01"), 0, 6);
	assert_true(v.type == RT_MP_EXT && v.ext_type == -1);
	one(S("\xc9\xff\xff\xff\xff\x03"), -ENODATA, 0);
	prefixes(S("\xc7\x02\x01xy"));
	prefixes(S("\xc9\x00\x00\x00\x01\x02z"));
}

static void test_containers(void **state)
{
	struct rt_mp_value v;
	struct rt_mp_reader r;

	(void)state;
	v = one(S("\x92\x01\x02"), 0, 1); /* the header only */
	assert_true(v.type == RT_MP_ARRAY && v.n == 2);
	v = one(S("\x81\xa1k\xc0"), 0, 1);
	assert_true(v.type == RT_MP_MAP && v.n == 1);
	v = one(S("\xdc\x00\x02\x01\x02"), 0, 3);
	assert_true(v.type == RT_MP_ARRAY && v.n == 2);
	v = one(S("\xdd\x00\x00\x00\x01\xc0"), 0, 5);
	assert_true(v.type == RT_MP_ARRAY && v.n == 1);
	v = one(S("\xde\x00\x01\x01\x02"), 0, 3);
	assert_true(v.type == RT_MP_MAP && v.n == 1);
	v = one(S("\xdf\x00\x00\x00\x01\x01\x02"), 0, 5);
	assert_true(v.type == RT_MP_MAP && v.n == 1);
	/* counts that cannot fit the bytes left: refused before any loop */
	one(S("\xdd\xff\xff\xff\xff\xc0"), -ENODATA, 0);
	one(S("\xdf\x80\x00\x00\x00\xc0\xc0"), -ENODATA, 0);
	one(S("\x82\x01\x02\x03"), -ENODATA, 0); /* a map of 2 needs 4 values */
	/* ... unless the capture was cut: counts are checked against the whole size */
	rt_mp_init_cut(&r, "\xdd\x00\x01\x00\x00", 5, 70000);
	assert_int_equal(rt_mp_read(&r, &v), 0);
	assert_true(v.type == RT_MP_ARRAY && v.n == 65536);
	assert_int_equal(rt_mp_skip(&r, 1), -ENODATA);

	/* skip: a nested value, then the next one */
	rt_mp_init(&r, S("\x93\x01\x82\xa1k\x91\xc0\xa1j\xcb\x40\x59\x00\x00\x00\x00\x00\x00"
			 "\xc4\x01\x00"
			 "\x07"));
	assert_int_equal(rt_mp_skip(&r, RT_MP_DEPTH_MAX), 0);
	assert_int_equal(r.pos, sizeof("\x93\x01\x82\xa1k\x91\xc0\xa1j\xcb\x40\x59\x00\x00\x00"
				       "\x00\x00\x00"
				       "\xc4\x01\x00") -
					1);
	assert_int_equal(rt_mp_skip(&r, 0), 0); /* a scalar at depth 0 */
	assert_int_equal(rt_mp_left(&r), 0);
	assert_int_equal(rt_mp_skip(&r, 0), -ENODATA);
}

static void test_depth(void **state)
{
	uint8_t buf[100];
	struct rt_mp_reader r;

	(void)state;
	memset(buf, 0x91, sizeof(buf));
	/* [[...[0]...]] n deep: depth n */
	for (unsigned n = 1; n < 40; n++) {
		buf[n] = 0x00;
		rt_mp_init(&r, buf, n + 1);
		assert_int_equal(rt_mp_skip(&r, RT_MP_DEPTH_MAX),
				 n <= RT_MP_DEPTH_MAX ? 0 : -ELOOP);
		rt_mp_init(&r, buf, n + 1);
		assert_int_equal(rt_mp_skip(&r, 5), n <= 5 ? 0 : -ELOOP);
		buf[n] = 0x91;
	}
	/* an empty container is a level too */
	rt_mp_init(&r, S("\x90"));
	assert_int_equal(rt_mp_skip(&r, 0), -ELOOP);
	rt_mp_init(&r, S("\x90"));
	assert_int_equal(rt_mp_skip(&r, 1), 0);
	/* maps nest like arrays: {k: {k: 0}} is depth 2 */
	rt_mp_init(&r, S("\x81\xa1k\x81\xa1k\x00"));
	assert_int_equal(rt_mp_skip(&r, 1), -ELOOP);
	rt_mp_init(&r, S("\x81\xa1k\x81\xa1k\x00"));
	assert_int_equal(rt_mp_skip(&r, 2), 0);
	/* a limit above the maximum is the maximum */
	memset(buf, 0x91, sizeof(buf));
	buf[60] = 0;
	rt_mp_init(&r, buf, 61);
	assert_int_equal(rt_mp_skip(&r, 1000), -ELOOP);
}

static void test_typed(void **state)
{
	struct rt_mp_reader r;
	uint64_t u;
	int64_t i;
	double f;

	(void)state;
	rt_mp_init(&r, S("\xcf\xff\xff\xff\xff\xff\xff\xff\xff"));
	assert_int_equal(rt_mp_read_int(&r, &i), -EPROTO); /* above INT64_MAX */
	assert_int_equal(r.pos, 0);
	assert_int_equal(rt_mp_read_uint(&r, &u), 0);
	assert_true(u == UINT64_MAX);
	rt_mp_init(&r, S("\xff"));
	assert_int_equal(rt_mp_read_uint(&r, &u), -EPROTO);
	assert_int_equal(rt_mp_read_int(&r, &i), 0);
	assert_int_equal(i, -1);
	rt_mp_init(&r, S("\x05\xa1x"));
	assert_int_equal(rt_mp_read_float(&r, &f), 0); /* an int where a float goes */
	assert_true(f == 5.0);
	assert_int_equal(rt_mp_read_float(&r, &f), -EPROTO);
	assert_false(rt_mp_next_nil(&r));
	rt_mp_init(&r, S("\xc0"));
	assert_true(rt_mp_next_nil(&r));
	assert_false(rt_mp_next_nil(&r));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars), cmocka_unit_test(test_str_bin),
		cmocka_unit_test(test_ext),	cmocka_unit_test(test_containers),
		cmocka_unit_test(test_depth),	cmocka_unit_test(test_typed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
