// SPDX-License-Identifier: BSD-2-Clause
/*
 * The injection library's two host-facing pieces that need no CUDA: the
 * activity buffer pool with its discard buffers, and the lock-free call
 * tracker behind sync records' thread ids and the watermark floor (built
 * into this test from src/cupti/).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bufpool.h"
#include "calltrack.h"

static void test_pool_bounds_and_discard(void **state)
{
	struct rt_cupti_bufpool *p = calloc(1, sizeof(*p));
	void *bufs[RT_CUPTI_BUFS_MIN], *d[RT_CUPTI_DISCARD_BUFS];
	size_t size;
	int i;

	(void)state;
	assert_non_null(p);
	/* sizes are clamped to 1-8 MiB, counts to the pool bounds */
	assert_int_equal(rt_cupti_bufpool_init(p, 1, 1), 0);
	assert_int_equal(p->buf_size, RT_CUPTI_BUF_MIN);
	assert_int_equal(p->max_bufs, RT_CUPTI_BUFS_MIN);
	for (i = 0; i < RT_CUPTI_BUFS_MIN; i++) {
		bufs[i] = rt_cupti_bufpool_get(p, &size);
		assert_non_null(bufs[i]);
		assert_int_equal(size, RT_CUPTI_BUF_MIN);
		assert_false(rt_cupti_bufpool_is_discard(p, bufs[i]));
		assert_int_equal((uintptr_t)bufs[i] % 8, 0);
	}
	/* pool exhausted: CUPTI still gets a buffer, a discard one */
	for (i = 0; i < RT_CUPTI_DISCARD_BUFS; i++) {
		d[i] = rt_cupti_bufpool_get(p, &size);
		assert_non_null(d[i]);
		assert_int_equal(size, RT_CUPTI_DISCARD_SIZE);
		assert_true(rt_cupti_bufpool_is_discard(p, d[i]));
	}
	assert_int_equal(p->discard_handed, RT_CUPTI_DISCARD_BUFS);
	/* all discard buffers out too: NULL, CUPTI counts its drops itself */
	assert_null(rt_cupti_bufpool_get(p, &size));
	assert_int_equal(size, 0);
	assert_int_equal(p->refused, 1);
	/* buffers come back and are reused, never allocated beyond the bound */
	rt_cupti_bufpool_put(p, d[2]);
	assert_ptr_equal(rt_cupti_bufpool_get(p, &size), d[2]);
	rt_cupti_bufpool_put(p, bufs[0]);
	assert_ptr_equal(rt_cupti_bufpool_get(p, &size), bufs[0]);
	assert_int_equal(p->allocated, RT_CUPTI_BUFS_MIN);
	rt_cupti_bufpool_put(p, bufs[0]);
	rt_cupti_bufpool_put(p, bufs[0]); /* twice: ignored, the list stays sane */
	assert_int_equal(p->nfree, 1);
	rt_cupti_bufpool_put(p, bufs[1]);
	rt_cupti_bufpool_put(p, NULL);
	for (i = 0; i < RT_CUPTI_DISCARD_BUFS; i++)
		rt_cupti_bufpool_put(p, d[i]);
	rt_cupti_bufpool_fini(p);
	free(p);
}

struct churn {
	struct rt_cupti_bufpool *p;
	int iters;
};

static void *churn(void *arg)
{
	struct churn *c = arg;
	size_t size;
	void *b;
	int i;

	for (i = 0; i < c->iters; i++) {
		b = rt_cupti_bufpool_get(c->p, &size);
		if (b) {
			memset(b, i, 64);
			rt_cupti_bufpool_put(c->p, b);
		}
	}
	return NULL;
}

static void test_pool_threads(void **state)
{
	struct rt_cupti_bufpool *p = calloc(1, sizeof(*p));
	struct churn c = { .p = p, .iters = 20000 };
	pthread_t t[4];
	int i;

	(void)state;
	assert_int_equal(rt_cupti_bufpool_init(p, RT_CUPTI_BUF_MIN, 3), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, &c), 0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_true(p->allocated <= 3);
	assert_int_equal(p->nfree, p->allocated);
	rt_cupti_bufpool_fini(p);
	free(p);
}

static void test_calltrack_tid(void **state)
{
	static struct rt_cupti_calltrack t;
	__u64 cookie;

	(void)state;
	memset(&t, 0, sizeof(t));
	rt_cupti_calltrack_note_tid(&t, 7, 1234);
	rt_cupti_calltrack_enter(&t, 9, 4321, 100, &cookie);
	assert_int_equal(rt_cupti_calltrack_tid(&t, 7), 1234);
	assert_int_equal(rt_cupti_calltrack_tid(&t, 9), 4321);
	assert_int_equal(rt_cupti_calltrack_tid(&t, 8), 0);
	/* a colliding id replaces the older entry: the old one reads unknown */
	rt_cupti_calltrack_note_tid(&t, 7 + RT_CUPTI_TIDMAP_SIZE, 99);
	assert_int_equal(rt_cupti_calltrack_tid(&t, 7), 0);
	assert_int_equal(rt_cupti_calltrack_tid(&t, 7 + RT_CUPTI_TIDMAP_SIZE), 99);
	rt_cupti_calltrack_exit(&t, cookie);
}

static void test_calltrack_floor(void **state)
{
	static struct rt_cupti_calltrack t;
	__u64 a, b;
	int blind;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 0);
	assert_false(blind);
	rt_cupti_calltrack_enter(&t, 1, 10, 1000, &a);
	rt_cupti_calltrack_enter(&t, 2, 10, 2000, &b);
	/* in progress: the floor is the oldest entry */
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 1000);
	rt_cupti_calltrack_exit(&t, a);
	/* returned, but its records may not have been flushed yet */
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 1000);
	rt_cupti_calltrack_next_epoch(&t); /* flush 1 */
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 1000);
	rt_cupti_calltrack_next_epoch(&t); /* flush 2 */
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 1000);
	rt_cupti_calltrack_next_epoch(&t); /* flush 3: two flushes after its epoch */
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 2000);
	rt_cupti_calltrack_exit(&t, b);
	rt_cupti_calltrack_next_epoch(&t);
	rt_cupti_calltrack_next_epoch(&t);
	rt_cupti_calltrack_next_epoch(&t);
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 0);
}

static void test_calltrack_overflow_blinds(void **state)
{
	static struct rt_cupti_calltrack t;
	__u64 cookies[RT_CUPTI_OPEN_PROBE + 1];
	int i, blind;

	(void)state;
	memset(&t, 0, sizeof(t));
	/* one thread id probes RT_CUPTI_OPEN_PROBE slots; the next call finds none */
	for (i = 0; i <= RT_CUPTI_OPEN_PROBE; i++)
		rt_cupti_calltrack_enter(&t, i, 5, 100 + i, &cookies[i]);
	rt_cupti_calltrack_floor(&t, &blind);
	assert_true(blind);
	assert_int_equal(t.overflows, 1);
	rt_cupti_calltrack_exit(&t, cookies[RT_CUPTI_OPEN_PROBE]);
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 100);
	assert_false(blind);
	for (i = 0; i < RT_CUPTI_OPEN_PROBE; i++)
		rt_cupti_calltrack_exit(&t, cookies[i]);
	for (i = 0; i < RT_CUPTI_EPOCHS; i++)
		rt_cupti_calltrack_next_epoch(&t);
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 0);
}

struct calls {
	struct rt_cupti_calltrack *t;
	__u32 tid;
};

static void *calls_thread(void *arg)
{
	struct calls *c = arg;
	__u64 cookie;
	int i;

	for (i = 0; i < 50000; i++) {
		rt_cupti_calltrack_enter(c->t, c->tid * 100000 + i, c->tid, 1000 + i, &cookie);
		rt_cupti_calltrack_exit(c->t, cookie);
	}
	return NULL;
}

static void test_calltrack_threads(void **state)
{
	static struct rt_cupti_calltrack t;
	struct calls c[3];
	pthread_t th[3];
	int i, blind;
	__u64 floor;

	(void)state;
	memset(&t, 0, sizeof(t));
	for (i = 0; i < 3; i++) {
		c[i].t = &t;
		c[i].tid = i + 1;
		assert_int_equal(pthread_create(&th[i], NULL, calls_thread, &c[i]), 0);
	}
	/* the flushing thread moves epochs and reads the floor meanwhile */
	for (i = 0; i < 1000; i++) {
		rt_cupti_calltrack_next_epoch(&t);
		floor = rt_cupti_calltrack_floor(&t, &blind);
		assert_true(floor == 0 || floor >= 1000);
	}
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < RT_CUPTI_EPOCHS; i++)
		rt_cupti_calltrack_next_epoch(&t);
	assert_int_equal(rt_cupti_calltrack_floor(&t, &blind), 0);
	assert_false(blind);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_bounds_and_discard),
		cmocka_unit_test(test_pool_threads),
		cmocka_unit_test(test_calltrack_tid),
		cmocka_unit_test(test_calltrack_floor),
		cmocka_unit_test(test_calltrack_overflow_blinds),
		cmocka_unit_test(test_calltrack_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
