// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <cmocka.h>

#include "common/hmap.h"
#include "common/dur.h"

static void test_put_get_del(void **state)
{
	struct rt_hmap m;
	uintptr_t i;

	(void)state;
	assert_int_equal(rt_hmap_init(&m, 100000), 0);
	for (i = 1; i <= 5000; i++)
		assert_int_equal(rt_hmap_put(&m, i * 7, (void *)i), 0);
	assert_int_equal(m.len, 5000);
	for (i = 1; i <= 5000; i++)
		assert_ptr_equal(rt_hmap_get(&m, i * 7), (void *)i);
	assert_null(rt_hmap_get(&m, 3));
	/* delete every other key; the rest must stay reachable (backward shift) */
	for (i = 1; i <= 5000; i += 2)
		assert_ptr_equal(rt_hmap_del(&m, i * 7), (void *)i);
	for (i = 1; i <= 5000; i++) {
		if (i % 2)
			assert_null(rt_hmap_get(&m, i * 7));
		else
			assert_ptr_equal(rt_hmap_get(&m, i * 7), (void *)i);
	}
	assert_int_equal(m.len, 2500);
	rt_hmap_fini(&m);
}

static void test_bound_and_iterate(void **state)
{
	struct rt_hmap m;
	uint64_t k, sum = 0;
	void *v;
	size_t pos = 0;
	int n = 0;

	(void)state;
	assert_int_equal(rt_hmap_init(&m, 3), 0);
	assert_int_equal(rt_hmap_put(&m, 1, (void *)1), 0);
	assert_int_equal(rt_hmap_put(&m, 2, (void *)2), 0);
	assert_int_equal(rt_hmap_put(&m, 3, (void *)3), 0);
	assert_int_equal(rt_hmap_put(&m, 4, (void *)4), -ENOSPC);
	/* replacing an existing key is allowed at the bound */
	assert_int_equal(rt_hmap_put(&m, 3, (void *)33), 0);
	while ((pos = rt_hmap_next(&m, pos, &k, &v)) != 0) {
		sum += k;
		n++;
	}
	assert_int_equal(n, 3);
	assert_int_equal(sum, 6);
	assert_int_equal(rt_hmap_put(&m, 9, NULL), -EINVAL);
	rt_hmap_fini(&m);
}

static void test_random_against_array(void **state)
{
	enum { N = 4096 };
	static uintptr_t shadow[N];
	struct rt_hmap m;
	unsigned seed = 7;
	int it;

	(void)state;
	assert_int_equal(rt_hmap_init(&m, N), 0);
	for (it = 0; it < 200000; it++) {
		unsigned k = rand_r(&seed) % N;

		if (rand_r(&seed) % 3 == 0) {
			assert_ptr_equal(rt_hmap_del(&m, k), shadow[k] ? (void *)shadow[k] : NULL);
			shadow[k] = 0;
		} else {
			shadow[k] = (uintptr_t)it + 1;
			assert_int_equal(rt_hmap_put(&m, k, (void *)shadow[k]), 0);
		}
		k = rand_r(&seed) % N;
		assert_ptr_equal(rt_hmap_get(&m, k), shadow[k] ? (void *)shadow[k] : NULL);
	}
	rt_hmap_fini(&m);
}

static void test_durations(void **state)
{
	uint64_t ns;

	(void)state;
	assert_int_equal(rt_dur_parse("250ms", &ns), 0);
	assert_int_equal(ns, 250000000ULL);
	assert_int_equal(rt_dur_parse("10s", &ns), 0);
	assert_int_equal(ns, 10000000000ULL);
	assert_int_equal(rt_dur_parse("5m", &ns), 0);
	assert_int_equal(ns, 300000000000ULL);
	assert_int_equal(rt_dur_parse("1.5us", &ns), 0);
	assert_int_equal(ns, 1500);
	assert_int_equal(rt_dur_parse("10", &ns), -EINVAL);
	assert_int_equal(rt_dur_parse("-1s", &ns), -EINVAL);
	assert_int_equal(rt_dur_parse("1x", &ns), -EINVAL);
	assert_int_equal(rt_dur_parse("", &ns), -EINVAL);
	assert_int_equal(rt_dur_parse("1e30h", &ns), -ERANGE);
}

static bool is_odd(const void *val, void *ctx)
{
	(void)ctx;
	return (uintptr_t)val & 1;
}

/* rt_hmap_pos() orders entries as rt_hmap_next() walks them */
static void test_pos_is_walk_order(void **state)
{
	struct rt_hmap m;
	size_t pos = 0, last = 0;
	uintptr_t i;
	uint64_t key;
	bool first = true;

	(void)state;
	assert_int_equal(rt_hmap_init(&m, 1000), 0);
	for (i = 1; i <= 300; i++)
		assert_int_equal(rt_hmap_put(&m, i * 13, (void *)i), 0);
	for (i = 1; i <= 300; i += 3)
		assert_non_null(rt_hmap_del(&m, i * 13));
	while ((pos = rt_hmap_next(&m, pos, &key, NULL)) != 0) {
		size_t p = rt_hmap_pos(&m, key);

		assert_int_equal(p, pos - 1);
		assert_true(first || p > last);
		last = p;
		first = false;
	}
	assert_int_equal(rt_hmap_pos(&m, 13), m.cap); /* deleted */
	assert_int_equal(rt_hmap_pos(&m, 7), m.cap); /* never there */
	rt_hmap_fini(&m);
}

static void count_gone(void *val, void *ctx)
{
	(void)val;
	(*(size_t *)ctx)++;
}

/* More matches than one batch (64): every one goes, the rest stay. */
static void test_del_if(void **state)
{
	struct rt_hmap m;
	size_t gone = 0, pos = 0;
	uint64_t k;
	void *v;

	(void)state;
	assert_int_equal(rt_hmap_init(&m, 1000), 0);
	for (k = 1; k <= 300; k++)
		assert_int_equal(rt_hmap_put(&m, k, (void *)(uintptr_t)k), 0);
	assert_int_equal(rt_hmap_del_if(&m, is_odd, count_gone, &gone), 150);
	assert_int_equal(gone, 150);
	assert_int_equal(m.len, 150);
	while ((pos = rt_hmap_next(&m, pos, &k, &v)) != 0)
		assert_int_equal((uintptr_t)v % 2, 0);
	for (k = 2; k <= 300; k += 2)
		assert_ptr_equal(rt_hmap_get(&m, k), (void *)(uintptr_t)k);
	assert_int_equal(rt_hmap_del_if(&m, is_odd, NULL, NULL), 0);
	rt_hmap_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_del),
		cmocka_unit_test(test_bound_and_iterate),
		cmocka_unit_test(test_random_against_array),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_del_if),
		cmocka_unit_test(test_pos_is_walk_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
