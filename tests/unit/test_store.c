// SPDX-License-Identifier: BSD-2-Clause
/* The span store keeps spans packed: what comes out is byte for byte what went in. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/store.h"

/* A span with every byte set (padding included), and some runs of zeros. */
static void fill(struct rt_span *s, unsigned seed, int i)
{
	unsigned char *p = (unsigned char *)s;
	size_t k;

	srand(seed);
	for (k = 0; k < sizeof(*s); k++)
		p[k] = (rand() % 3) ? (unsigned char)rand() : 0;
	snprintf(s->request_id, sizeof(s->request_id), "req-%d", i);
	s->start_ns = 1000 + (uint64_t)i;
}

struct walk {
	const struct rt_span *want;
	int n;
	int first;
};

static int check_fn(const struct rt_span *s, void *ctx)
{
	struct walk *w = ctx;
	struct rt_span e;

	fill(&e, 7u + (unsigned)(w->first + w->n), w->first + w->n);
	assert_memory_equal(s, &e, sizeof(e));
	w->n++;
	return 0;
}

static void test_roundtrip(void **state)
{
	struct rt_store_opts o = { .max_spans = 8 };
	struct rt_store *st = rt_store__new(&o);
	struct rt_store_stats ss;
	struct rt_span s, e;
	struct walk w = { 0 };
	const struct rt_span *got;
	int i;

	(void)state;
	assert_non_null(st);
	for (i = 0; i < 13; i++) {
		fill(&s, 7u + (unsigned)i, i);
		assert_int_equal(rt_store__add(st, &s), 0);
	}
	rt_store__stats(st, &ss);
	assert_int_equal(ss.size, 8);
	assert_int_equal(ss.evicted, 5);
	assert_true(ss.bytes > 0);
	/* oldest first, each exactly as added */
	w.first = 5;
	rt_store__foreach(st, check_fn, &w);
	assert_int_equal(w.n, 8);
	for (i = 0; i < 8; i++) {
		fill(&e, 7u + (unsigned)(5 + i), 5 + i);
		got = rt_store__at(st, (uint32_t)i);
		assert_non_null(got);
		assert_memory_equal(got, &e, sizeof(e));
	}
	assert_null(rt_store__at(st, 8));
	assert_null(rt_store__find(st, "req-4"));
	fill(&e, 7u + 9u, 9);
	got = rt_store__find(st, "req-9");
	assert_non_null(got);
	assert_memory_equal(got, &e, sizeof(e));
	rt_store__free(st);
}

static void test_zero_and_amend(void **state)
{
	struct rt_store_opts o = { .max_spans = 2 };
	struct rt_store *st = rt_store__new(&o);
	struct rt_store_stats ss;
	struct rt_span s;
	uint64_t before;

	(void)state;
	memset(&s, 0, sizeof(s));
	strcpy(s.request_id, "a");
	assert_int_equal(rt_store__add(st, &s), 0);
	rt_store__stats(st, &ss);
	before = ss.bytes;
	/* zeros take no room: the point of packing */
	assert_true(before < sizeof(s) / 8);
	/* an amendment of the same (id, start) replaces it; its size is accounted */
	memset(s.path, 'x', sizeof(s.path) - 1);
	s.revision = 1;
	assert_int_equal(rt_store__add(st, &s), 0);
	rt_store__stats(st, &ss);
	assert_int_equal(ss.size, 1);
	assert_int_equal(ss.amended, 1);
	assert_true(ss.bytes > before);
	assert_memory_equal(rt_store__find(st, "a"), &s, sizeof(s));
	rt_store__free(st);
}

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

/* Resizing moves packed slots: the bytes count follows what is kept. */
static void test_resize_bytes(void **state)
{
	struct rt_store_opts o = { .max_spans = 4 };
	struct rt_store *st = rt_store__new(&o);
	struct rt_store_stats ss;
	struct rt_span s;
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		fill(&s, 7u + (unsigned)i, i);
		assert_int_equal(rt_store__add(st, &s), 0);
	}
	assert_int_equal(rt_store__set_max(st, 2), 0);
	rt_store__stats(st, &ss);
	assert_int_equal(ss.size, 2);
	{
		/* the same two spans added to a fresh store take the same bytes */
		struct rt_store *two = rt_store__new(&o);
		struct rt_store_stats s2;

		for (i = 2; i < 4; i++) {
			fill(&s, 7u + (unsigned)i, i);
			assert_int_equal(rt_store__add(two, &s), 0);
		}
		rt_store__stats(two, &s2);
		assert_int_equal(ss.bytes, s2.bytes);
		rt_store__free(two);
	}
	{
		struct walk w = { .first = 2 };

		rt_store__foreach(st, check_fn, &w);
		assert_int_equal(w.n, 2);
	}
	assert_int_equal(rt_store__set_max(st, 8), 0);
	rt_store__free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_zero_and_amend),
		cmocka_unit_test(test_grow_keeps_order_and_amends),
		cmocka_unit_test(test_shrink_evicts_oldest),
		cmocka_unit_test(test_resize_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
