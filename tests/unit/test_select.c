// SPDX-License-Identifier: BSD-2-Clause
/*
 * rt_select_k_i64 against sorting: for every rank of arrays that are
 * random (few or many distinct values), sorted, reversed, all equal or
 * organ-pipe shaped, the selected value is the sorted array's, nothing
 * larger lies before it, nothing smaller after, and the values are the
 * same multiset.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/select.h"
#include "rt_rnd.h"

static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	return rt_rnd(&rnd_state);
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void fill(int64_t *v, uint32_t n, int shape)
{
	for (uint32_t i = 0; i < n; i++) {
		switch (shape) {
		case 0:
			v[i] = (int64_t)(rnd() % 1000000) - 500000;
			break;
		case 1:
			v[i] = (int64_t)(rnd() % 4); /* many equal */
			break;
		case 2:
			v[i] = i;
			break;
		case 3:
			v[i] = (int64_t)n - i;
			break;
		case 4:
			v[i] = 7;
			break;
		default:
			v[i] = i < n / 2 ? i : n - i; /* organ pipe */
			break;
		}
	}
}

static void check(uint32_t n, int shape)
{
	int64_t *v = malloc(n * sizeof(*v)), *s = malloc(n * sizeof(*s)),
		*w = malloc(n * sizeof(*w));

	assert_non_null(v);
	assert_non_null(s);
	assert_non_null(w);
	fill(v, n, shape);
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp);
	for (uint32_t k = 0; k < n; k++) {
		memcpy(w, v, n * sizeof(*v));
		rt_select_k_i64(w, n, k);
		assert_int_equal(w[k], s[k]);
		for (uint32_t i = 0; i < k; i++)
			assert_true(w[i] <= w[k]);
		for (uint32_t i = k + 1; i < n; i++)
			assert_true(w[i] >= w[k]);
		qsort(w, n, sizeof(*w), cmp);
		assert_memory_equal(w, s, n * sizeof(*w));
	}
	free(v);
	free(s);
	free(w);
}

static void test_small(void **state)
{
	(void)state;
	for (uint32_t n = 1; n <= 130; n++)
		for (int shape = 0; shape < 6; shape++)
			check(n, shape);
}

static void test_random_sizes(void **state)
{
	(void)state;
	for (int r = 0; r < 40; r++)
		check(131 + (uint32_t)(rnd() % 400), (int)(rnd() % 6));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small),
		cmocka_unit_test(test_random_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
