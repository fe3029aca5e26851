/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Merge: global (ts, arrival) order from sources whose watermarks lag
 * differently, late and forced releases, bounds, flush, regressions, ties.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "merge/merge.h"

#define MS 1000000ULL
#define MAX_OUT 200000

struct out {
	__u64 ts;
	__u32 id; /* carried in hdr.pid */
	__u32 source;
	unsigned int flags;
	__u16 size;
	int payload_ok;
};

struct sink {
	struct out *o;
	size_t n;
	int fail_at; /* return -EIO on this record (1-based), 0: never */
};

static int collect(const struct rt_event_hdr *ev, unsigned int flags, void *ctx)
{
	struct sink *s = ctx;
	const unsigned char *p = (const void *)ev;
	struct out *o;
	size_t i;

	assert_true(s->n < MAX_OUT);
	o = &s->o[s->n++];
	o->ts = ev->ts_ns;
	o->id = ev->pid;
	o->source = ev->source;
	o->flags = flags;
	o->size = ev->size;
	o->payload_ok = 1;
	for (i = sizeof(*ev); i < ev->size; i++)
		if (p[i] != (unsigned char)(ev->pid + i))
			o->payload_ok = 0;
	if (s->fail_at && (int)s->n == s->fail_at)
		return -EIO;
	return 0;
}

static struct sink *sink_new(void)
{
	struct sink *s = calloc(1, sizeof(*s));

	s->o = calloc(MAX_OUT, sizeof(*s->o));
	return s;
}

static void sink_free(struct sink *s)
{
	free(s->o);
	free(s);
}

static _Alignas(8) unsigned char evbuf[RT_EVENT_MAX];

/* A record of `size` bytes whose payload derives from id (checked on release). */
static const struct rt_event_hdr *rec(__u32 source, __u64 ts, __u32 id, size_t size)
{
	struct rt_event_hdr *ev = (void *)evbuf;
	size_t i;

	ev->kind = RT_EV_SCHED_WAKING;
	ev->size = size ? size : 40;
	ev->source = source;
	ev->ts_ns = ts;
	ev->pid = id;
	ev->tid = 0;
	for (i = sizeof(*ev); i < ev->size; i++)
		evbuf[i] = (unsigned char)(id + i);
	return ev;
}

static const struct rt_event_hdr *wm(__u32 source, __u64 ts)
{
	struct rt_event_hdr *ev = (void *)evbuf;

	memset(ev, 0, sizeof(*ev));
	ev->kind = RT_EV_WATERMARK;
	ev->size = sizeof(*ev);
	ev->source = source;
	ev->ts_ns = ts;
	return ev;
}

static __u64 rng = 0x9E3779B97F4A7C15ULL;

static __u64 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * Source 1 (a BPF ring) delivers within 1 ms of "now", slightly out of
 * order; source 2 (CUPTI) hands over 100 ms batches 100 ms late. Both
 * report watermarks. The output must be globally ordered, complete, and
 * every drain must stay below the minimum watermark.
 */
static void test_two_sources_ordered(void **state)
{
	struct rt_merge *m = rt_merge__new(NULL);
	struct sink *s = sink_new();
	struct rt_merge_stats st;
	static unsigned char seen[40000];
	__u64 now, batch_start = 0, horizon = 0, prev_n;
	__u32 id = 0;
	size_t i, k;
	int ret;

	(void)state;
	assert_non_null(m);
	assert_int_equal(rt_merge__add_source(m, 1), 0);
	assert_int_equal(rt_merge__add_source(m, 2), 0);
	assert_int_equal(rt_merge__add_source(m, 2), -EEXIST);
	for (now = 1000 * MS; now < 3000 * MS; now += MS) {
		/* BPF: a few records in the last ms, in ring (per-CPU) order */
		for (k = 0; k < 8; k++)
			assert_int_equal(rt_merge__push(m, rec(1, now - rnd() % MS, id++,
							       24 + 8 * (rnd() % 40))),
					 0);
		assert_int_equal(rt_merge__push(m, wm(1, now - MS)), 0);
		/* CUPTI: every 100 ms, the previous 100 ms at once */
		if (now - batch_start >= 100 * MS) {
			for (k = 0; k < 50; k++)
				assert_int_equal(
					rt_merge__push(m, rec(2, batch_start + rnd() % (100 * MS),
							      id++, 0)),
					0);
			assert_int_equal(rt_merge__push(m, wm(2, now)), 0);
			batch_start = now;
		}
		prev_n = s->n;
		ret = rt_merge__drain(m, collect, s);
		assert_int_equal(ret, (int)(s->n - prev_n));
		/* released: below both watermarks */
		for (i = prev_n; i < s->n; i++)
			assert_true(s->o[i].ts < now - MS && s->o[i].ts < batch_start + 1);
		assert_true(rt_merge__horizon(m) >= horizon);
		horizon = rt_merge__horizon(m);
	}
	assert_true(rt_merge__flush(m, collect, s) > 0);
	assert_int_equal(s->n, id);
	for (i = 0; i < s->n; i++) {
		assert_int_equal(s->o[i].flags, 0);
		assert_true(s->o[i].payload_ok);
		if (i)
			assert_true(s->o[i - 1].ts <= s->o[i].ts);
		assert_true(s->o[i].id < sizeof(seen));
		assert_int_equal(seen[s->o[i].id]++, 0);
	}
	rt_merge__stats(m, &st);
	assert_int_equal(st.pushed, id);
	assert_int_equal(st.released, id);
	assert_int_equal(st.late, 0);
	assert_int_equal(st.forced, 0);
	assert_int_equal(st.pending, 0);
	assert_true(st.pending_max > 50);
	assert_int_equal(st.watermark_regressions, 0);
	assert_int_equal(st.auto_sources, 0);
	assert_int_equal(st.sources, 2);
	sink_free(s);
	rt_merge__free(m);
}

static void test_late(void **state)
{
	struct rt_merge *m = rt_merge__new(NULL);
	struct sink *s = sink_new();
	struct rt_merge_stats st;

	(void)state;
	rt_merge__add_source(m, 1);
	rt_merge__add_source(m, 2);
	rt_merge__push(m, rec(1, 150, 1, 0));
	rt_merge__push(m, rec(2, 120, 2, 0));
	rt_merge__push(m, wm(1, 200));
	rt_merge__push(m, wm(2, 160));
	assert_int_equal(rt_merge__drain(m, collect, s), 2);
	assert_int_equal(rt_merge__horizon(m), 160);
	/* source 2 breaks its promise: older than what was released -> late */
	rt_merge__push(m, rec(2, 100, 3, 0));
	/* older than the horizon but newer than anything released: late too */
	rt_merge__push(m, rec(2, 155, 4, 0));
	rt_merge__push(m, rec(1, 300, 5, 0));
	rt_merge__push(m, rec(2, 170, 6, 0));
	rt_merge__push(m, wm(2, 400));
	rt_merge__push(m, wm(1, 400));
	assert_int_equal(rt_merge__drain(m, collect, s), 4);
	assert_int_equal(s->n, 6);
	/* late ones first, in arrival order, flagged; then the rest in order */
	assert_int_equal(s->o[2].id, 3);
	assert_int_equal(s->o[2].flags, RT_MERGE_LATE);
	assert_int_equal(s->o[3].id, 4);
	assert_int_equal(s->o[3].flags, RT_MERGE_LATE);
	assert_int_equal(s->o[4].id, 6);
	assert_int_equal(s->o[4].flags, 0);
	assert_int_equal(s->o[5].id, 5);
	rt_merge__stats(m, &st);
	assert_int_equal(st.late, 2);
	assert_int_equal(st.released, 6);
	sink_free(s);
	rt_merge__free(m);
}

static void test_forced_at_bound(void **state)
{
	struct rt_merge_opts o = { .max_pending = 4 };
	struct rt_merge *m = rt_merge__new(&o);
	struct sink *s = sink_new();
	struct rt_merge_stats st;

	(void)state;
	rt_merge__add_source(m, 1); /* watermark 0: holds everything */
	assert_int_equal(rt_merge__push(m, rec(1, 40, 1, 0)), 0);
	assert_int_equal(rt_merge__push(m, rec(1, 10, 2, 0)), 0);
	assert_int_equal(rt_merge__push(m, rec(1, 30, 3, 0)), 0);
	assert_int_equal(rt_merge__push(m, rec(1, 20, 4, 0)), 0);
	assert_int_equal(rt_merge__push(m, rec(1, 50, 5, 0)), -ENOBUFS);
	/* nothing below the watermark: the drain forces out the oldest only */
	assert_int_equal(rt_merge__drain(m, collect, s), 1);
	assert_int_equal(s->o[0].id, 2);
	assert_int_equal(s->o[0].flags, RT_MERGE_FORCED);
	assert_int_equal(rt_merge__horizon(m), 10);
	assert_int_equal(rt_merge__push(m, rec(1, 50, 5, 0)), 0);
	/* a drain with room forces nothing */
	assert_int_equal(rt_merge__drain(m, collect, s), 0);
	/* push_release forces by itself */
	assert_int_equal(rt_merge__push_release(m, rec(1, 60, 6, 0), collect, s), 0);
	assert_int_equal(s->n, 2);
	assert_int_equal(s->o[1].id, 4);
	assert_int_equal(s->o[1].flags, RT_MERGE_FORCED);
	/* the forced horizon makes older records late */
	assert_int_equal(rt_merge__horizon(m), 20);
	assert_int_equal(rt_merge__push(m, rec(1, 15, 7, 0)), -ENOBUFS);
	/* refused again inside, forces 30 out, then fits (late: 15 < 30) */
	assert_int_equal(rt_merge__push_release(m, rec(1, 15, 7, 0), collect, s), 0);
	assert_int_equal(s->o[2].id, 3);
	assert_int_equal(s->o[2].flags, RT_MERGE_FORCED);
	assert_int_equal(rt_merge__flush(m, collect, s), 4);
	assert_int_equal(s->o[3].id, 7);
	assert_int_equal(s->o[3].flags, RT_MERGE_LATE);
	assert_int_equal(s->o[4].id, 1);
	assert_int_equal(s->o[5].id, 5);
	assert_int_equal(s->o[6].id, 6);
	rt_merge__stats(m, &st);
	assert_int_equal(st.forced, 3);
	assert_int_equal(st.late, 1);
	assert_int_equal(st.refused, 4);
	assert_int_equal(st.pending_max, 4);
	assert_int_equal(st.pending, 0);
	sink_free(s);
	rt_merge__free(m);
}

/* The byte bound: 16 KiB records fill 1 MiB of slab long before max_pending. */
static void test_byte_bound(void **state)
{
	struct rt_merge_opts o = { .max_bytes = 1 << 20 };
	struct rt_merge *m = rt_merge__new(&o);
	struct sink *s = sink_new();
	struct rt_merge_stats st;
	__u32 i, accepted = 0;
	int err;

	(void)state;
	rt_merge__add_source(m, 1);
	for (i = 0; i < 1000; i++) {
		err = rt_merge__push(m, rec(1, 1000 - i, i, RT_EVENT_MAX));
		if (err) {
			assert_int_equal(err, -ENOBUFS);
			break;
		}
		accepted++;
	}
	assert_true(accepted > 32 && accepted < 64);
	rt_merge__stats(m, &st);
	assert_true(st.pending_bytes <= (1 << 20));
	/* small records fill what is left of the last chunk, then need room made too */
	for (i = 0; i < 4000; i++) {
		err = rt_merge__push(m, rec(1, 2000 + i, 5000 + i, 40));
		if (err)
			break;
		accepted++;
	}
	assert_int_equal(err, -ENOBUFS);
	assert_true(i < 4000);
	assert_int_equal(rt_merge__push(m, rec(1, 5000, 9999, 40)), -ENOBUFS);
	assert_true(rt_merge__drain(m, collect, s) >= 1);
	for (i = 0; i < s->n; i++) {
		assert_int_equal(s->o[i].flags, RT_MERGE_FORCED);
		assert_true(s->o[i].payload_ok);
		if (i)
			assert_true(s->o[i - 1].ts <= s->o[i].ts);
	}
	assert_int_equal(rt_merge__push(m, rec(1, 5000, 9999, 40)), 0);
	/* everything forced out: the memory is reused, no new chunk */
	rt_merge__flush(m, collect, s);
	rt_merge__stats(m, &st);
	assert_int_equal(st.pending_bytes, 0);
	assert_int_equal(st.released, accepted + 1);
	for (i = 0; i < 2000; i++)
		assert_int_equal(rt_merge__push_release(m, rec(1, 6000 + i, i, 24 + 8 * (i % 2000)),
							collect, s),
				 0);
	rt_merge__flush(m, collect, s);
	for (i = 0; i < s->n; i++)
		assert_true(s->o[i].payload_ok);
	sink_free(s);
	rt_merge__free(m);
}

static void test_flush_and_regressions(void **state)
{
	struct rt_merge *m = rt_merge__new(NULL);
	struct sink *s = sink_new();
	struct rt_merge_stats st;
	__u64 w;

	(void)state;
	rt_merge__add_source(m, 1);
	assert_int_equal(rt_merge__source_watermark(m, 1, &w), 0);
	assert_int_equal(w, 0);
	rt_merge__push(m, wm(1, 100));
	rt_merge__push(m, wm(1, 50)); /* goes back: ignored */
	rt_merge__push(m, wm(1, 100)); /* same: no regression */
	assert_int_equal(rt_merge__source_watermark(m, 1, &w), 0);
	assert_int_equal(w, 100);
	rt_merge__push(m, rec(1, 300, 1, 0));
	rt_merge__push(m, rec(1, 200, 2, 0));
	rt_merge__push(m, rec(1, 99, 3, 0));
	assert_int_equal(rt_merge__drain(m, collect, s), 1);
	assert_int_equal(s->o[0].id, 3);
	assert_int_equal(rt_merge__flush(m, collect, s), 2);
	assert_int_equal(s->o[1].id, 2);
	assert_int_equal(s->o[2].id, 1);
	assert_int_equal(s->o[2].flags, 0);
	assert_int_equal(rt_merge__horizon(m), 300);
	rt_merge__stats(m, &st);
	assert_int_equal(st.watermark_regressions, 1);
	assert_int_equal(st.watermarks, 3);
	assert_int_equal(st.pending, 0);
	assert_int_equal(rt_merge__flush(m, collect, s), 0);
	assert_int_equal(rt_merge__source_watermark(m, 7, &w), -ENOENT);
	sink_free(s);
	rt_merge__free(m);
}

static void test_ties_stable(void **state)
{
	struct rt_merge *m = rt_merge__new(NULL);
	struct sink *s = sink_new();
	__u32 i;

	(void)state;
	rt_merge__add_source(m, 1);
	rt_merge__add_source(m, 2);
	for (i = 0; i < 1000; i++)
		rt_merge__push(m, rec(1 + i % 2, 500 + (i % 3 == 0 ? 0 : 1), i, 0));
	rt_merge__push(m, wm(1, 1000));
	rt_merge__push(m, wm(2, 1000));
	assert_int_equal(rt_merge__drain(m, collect, s), 1000);
	for (i = 1; i < 1000; i++) {
		assert_true(s->o[i - 1].ts <= s->o[i].ts);
		if (s->o[i - 1].ts == s->o[i].ts)
			assert_true(s->o[i - 1].id < s->o[i].id);
	}
	sink_free(s);
	rt_merge__free(m);
}

static int key_cmp(const void *a, const void *b)
{
	const struct out *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Times at every scale the calendar distinguishes: ties, one bucket, many,
 * beyond its window (the heap's), after it emptied and moved. Each drain
 * must give exactly the held records below the watermark in (ts, arrival)
 * order, whichever structure held them.
 */
static void test_order_any_spread(void **state)
{
	static const __u64 spread[] = { 1, 1000, 70000, 3 * MS, 200 * MS, 2000 * MS };
	struct rt_merge_opts o = { .max_pending = 100000 };
	struct rt_merge *m = rt_merge__new(&o);
	struct sink *s = sink_new();
	struct out *held = calloc(MAX_OUT, sizeof(*held)), *want = calloc(MAX_OUT, sizeof(*want));
	size_t n_held = 0, n_want, i, j, k, round;
	__u64 base = 5 * MS, w;
	__u32 id = 0;

	(void)state;
	assert_non_null(m);
	rt_merge__add_source(m, 1);
	for (round = 0; round < 400; round++) {
		size_t burst = 1 + rnd() % 300;
		__u64 sp = spread[rnd() % 6];

		for (k = 0; k < burst; k++) {
			__u64 ts = base + (rnd() % 8 == 0 ? 0 : rnd() % sp);

			assert_int_equal(rt_merge__push(m, rec(1, ts, id, 0)), 0);
			held[n_held++] = (struct out){ .ts = ts, .id = id++ };
		}
		w = base + rnd() % (2 * sp + 1);
		s->n = 0;
		assert_int_equal(rt_merge__push(m, wm(1, w)), 0);
		assert_true(rt_merge__drain(m, collect, s) >= 0);
		n_want = 0;
		for (i = j = 0; i < n_held; i++) {
			if (held[i].ts < w)
				want[n_want++] = held[i];
			else
				held[j++] = held[i];
		}
		n_held = j;
		qsort(want, n_want, sizeof(*want), key_cmp);
		assert_int_equal(s->n, n_want);
		for (i = 0; i < n_want; i++) {
			assert_int_equal(s->o[i].ts, want[i].ts);
			assert_int_equal(s->o[i].id, want[i].id);
			assert_int_equal(s->o[i].flags, 0);
		}
		/* the next records start at the horizon, or jump far ahead */
		base = w > base ? w : base;
		if (rnd() % 16 == 0)
			base += 3000 * MS;
	}
	s->n = 0;
	assert_int_equal(rt_merge__flush(m, collect, s), (int)n_held);
	qsort(held, n_held, sizeof(*held), key_cmp);
	for (i = 0; i < n_held; i++)
		assert_int_equal(s->o[i].id, held[i].id);
	free(held);
	free(want);
	sink_free(s);
	rt_merge__free(m);
}

static void test_sources_auto_remove_limit(void **state)
{
	struct rt_merge_opts o = { .max_sources = 2 };
	struct rt_merge *m = rt_merge__new(&o);
	struct sink *s = sink_new();
	struct rt_merge_stats st;
	__u64 w;

	(void)state;
	/* no source yet: an unknown one is added at its first record's time */
	assert_int_equal(rt_merge__push(m, rec(7, 500, 1, 0)), 0);
	assert_int_equal(rt_merge__source_watermark(m, 7, &w), 0);
	assert_int_equal(w, 500);
	assert_int_equal(rt_merge__push(m, rec(7, 600, 2, 0)), 0);
	assert_int_equal(rt_merge__push(m, rec(7, 400, 3, 0)), 0);
	assert_int_equal(rt_merge__drain(m, collect, s), 1); /* 400 < 500 */
	assert_int_equal(s->o[0].id, 3);
	assert_int_equal(rt_merge__add_source(m, 8), 0);
	assert_int_equal(rt_merge__push(m, rec(9, 700, 4, 0)), -ENOSPC);
	assert_int_equal(rt_merge__add_source(m, 9), -ENOSPC);
	rt_merge__push(m, wm(7, 1000));
	assert_int_equal(rt_merge__drain(m, collect, s), 0); /* 8 holds at 0 */
	/* the lagging source ends: it no longer holds anything */
	assert_int_equal(rt_merge__remove_source(m, 8), 0);
	assert_int_equal(rt_merge__remove_source(m, 8), -ENOENT);
	assert_int_equal(rt_merge__drain(m, collect, s), 2);
	assert_int_equal(rt_merge__horizon(m), 1000);
	/* every source gone: nothing is held, the horizon stays */
	assert_int_equal(rt_merge__remove_source(m, 7), 0);
	assert_int_equal(rt_merge__add_source(m, 9), 0);
	assert_int_equal(rt_merge__remove_source(m, 9), 0);
	assert_int_equal(rt_merge__push(m, rec(7, 2000, 5, 0)), 0); /* auto-added again */
	assert_int_equal(rt_merge__remove_source(m, 7), 0);
	assert_int_equal(rt_merge__drain(m, collect, s), 1);
	assert_int_equal(rt_merge__horizon(m), 2000);
	rt_merge__stats(m, &st);
	assert_int_equal(st.auto_sources, 2);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.sources, 0);
	sink_free(s);
	rt_merge__free(m);
}

static void test_callback_error_and_args(void **state)
{
	struct rt_merge_opts bad = { .max_bytes = 1000 };
	struct rt_merge *m = rt_merge__new(NULL);
	struct sink *s = sink_new();
	struct rt_event_hdr *ev;
	__u32 i;

	(void)state;
	assert_null(rt_merge__new(&bad));
	assert_int_equal(errno, EINVAL);
	rt_merge__free(NULL);
	ev = (void *)rec(1, 10, 0, 0);
	ev->size = 16;
	assert_int_equal(rt_merge__push(m, ev), -EINVAL);
	ev->size = RT_EVENT_MAX + 8;
	assert_int_equal(rt_merge__push(m, ev), -EINVAL);
	for (i = 0; i < 10; i++)
		rt_merge__push(m, rec(1, 100 + i, i, 0));
	s->fail_at = 3;
	assert_int_equal(rt_merge__flush(m, collect, s), -EIO);
	assert_int_equal(s->n, 3);
	s->fail_at = 0;
	assert_int_equal(rt_merge__flush(m, collect, s), 7);
	assert_int_equal(s->o[3].id, 3);
	rt_merge__free(m);
	sink_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_sources_ordered),
		cmocka_unit_test(test_late),
		cmocka_unit_test(test_forced_at_bound),
		cmocka_unit_test(test_byte_bound),
		cmocka_unit_test(test_flush_and_regressions),
		cmocka_unit_test(test_ties_stable),
		cmocka_unit_test(test_order_any_spread),
		cmocka_unit_test(test_sources_auto_remove_limit),
		cmocka_unit_test(test_callback_error_and_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
