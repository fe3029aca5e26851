// SPDX-License-Identifier: BSD-2-Clause
/* The span store's bound changed while running (SIGHUP): grow and shrink. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "store/store.h"

static void add(struct rt_store *st, int i, uint32_t revision)
{
	struct rt_span s;

	rt_span_init(&s);
	snprintf(s.request_id, sizeof(s.request_id), "r%d", i);
	s.start_ns = 100 + (uint64_t)i;
	s.revision = revision;
	assert_int_equal(rt_store__add(st, &s), 0);
}

struct ids {
	int n;
	char id[16][RT_SPAN_ID_MAX];
};

static int collect(const struct rt_span *s, void *ctx)
{
	struct ids *x = ctx;

	snprintf(x->id[x->n++], sizeof(x->id[0]), "%s", s->request_id);
	return 0;
}

static void test_grow_keeps_order_and_amends(void **state)
{
	struct rt_store_opts o = { .max_spans = 3 };
	struct rt_store *st = rt_store__new(&o);
	struct rt_store_stats ss;
	struct ids x = { 0 };
	int i;

	(void)state;
	assert_non_null(st);
	for (i = 0; i < 5; i++) /* r2 r3 r4 stay; head is mid-ring */
		add(st, i, 0);
	assert_int_equal(rt_store__set_max(st, 6), 0);
	rt_store__stats(st, &ss);
	assert_int_equal(ss.capacity, 6);
	assert_int_equal(ss.size, 3);
	assert_int_equal(ss.evicted, 2);
	for (i = 5; i < 8; i++)
		add(st, i, 0);
	rt_store__stats(st, &ss);
	assert_int_equal(ss.size, 6);
	assert_int_equal(ss.evicted, 2); /* the larger bound holds them all */
	/* the index moved too: an amendment of an old span replaces it in place */
	add(st, 3, 1);
	rt_store__stats(st, &ss);
	assert_int_equal(ss.amended, 1);
	assert_int_equal(ss.size, 6);
	assert_int_equal(rt_store__find(st, "r3")->revision, 1);
	rt_store__foreach(st, collect, &x);
	assert_int_equal(x.n, 6);
	assert_string_equal(x.id[0], "r2");
	assert_string_equal(x.id[5], "r7");
	rt_store__free(st);
}

static void test_shrink_evicts_oldest(void **state)
{
	struct rt_store_opts o = { .max_spans = 5 };
	struct rt_store *st = rt_store__new(&o);
	struct rt_store_stats ss;
	struct ids x = { 0 };
	int i;

	(void)state;
	assert_non_null(st);
	for (i = 0; i < 5; i++)
		add(st, i, 0);
	assert_int_equal(rt_store__set_max(st, 2), 0);
	rt_store__stats(st, &ss);
	assert_int_equal(ss.capacity, 2);
	assert_int_equal(ss.size, 2);
	assert_int_equal(ss.evicted, 3);
	assert_null(rt_store__find(st, "r2"));
	add(st, 5, 0);
	rt_store__foreach(st, collect, &x);
	assert_int_equal(x.n, 2);
	assert_string_equal(x.id[0], "r4");
	assert_string_equal(x.id[1], "r5");
	assert_int_equal(rt_store__set_max(st, 0), -EINVAL);
	rt_store__free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_keeps_order_and_amends),
		cmocka_unit_test(test_shrink_evicts_oldest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
