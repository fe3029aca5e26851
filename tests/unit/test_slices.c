// SPDX-License-Identifier: BSD-2-Clause
/*
 * A span's CPU slice list (rt_span_slice_add, src/correlate/cpu.c) against
 * the plain rule it implements, kept below as the oracle: a piece absorbs
 * every slice of its thread and kind it touches; when 32 are held, the
 * shortest goes (the first of equals) unless the piece is no longer. The
 * shortcuts and the tournament tree must leave the same array, slice for
 * slice, after every piece of seeded random streams: engine loops, merges,
 * extensions, ties, several threads, shared and not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rt_rnd.h"

static void oracle_add(struct rt_span_cpu *cpu, uint32_t tid, uint64_t from, uint64_t to,
		       bool shared)
{
	struct rt_span_slice *sl;
	uint32_t i, k = 0;

	if (to <= from)
		return;
	for (i = cpu->n_slices; i-- > 0;) {
		sl = &cpu->slices[i];
		if (sl->tid != tid || sl->shared != shared || from > sl->end_ns ||
		    to < sl->start_ns)
			continue;
		if (sl->start_ns < from)
			from = sl->start_ns;
		if (sl->end_ns > to)
			to = sl->end_ns;
		*sl = cpu->slices[--cpu->n_slices];
	}
	if (cpu->n_slices >= RT_SPAN_SLICES_MAX) {
		cpu->slices_dropped++;
		for (i = 1; i < cpu->n_slices; i++)
			if (cpu->slices[i].end_ns - cpu->slices[i].start_ns <
			    cpu->slices[k].end_ns - cpu->slices[k].start_ns)
				k = i;
		if (to - from <= cpu->slices[k].end_ns - cpu->slices[k].start_ns)
			return;
		sl = &cpu->slices[k];
	} else {
		sl = &cpu->slices[cpu->n_slices++];
	}
	sl->start_ns = from;
	sl->end_ns = to;
	sl->tid = tid;
	sl->shared = shared;
}

static uint64_t rnd_state = 0xD1B54A32D192ED03ull;

static uint64_t rnd(void)
{
	return rt_rnd(&rnd_state);
}

static void same(const struct rt_span_cpu *a, const struct rt_span_cpu *b)
{
	assert_int_equal(a->n_slices, b->n_slices);
	assert_int_equal(a->slices_dropped, b->slices_dropped);
	for (uint32_t i = 0; i < a->n_slices; i++) {
		assert_int_equal(a->slices[i].start_ns, b->slices[i].start_ns);
		assert_int_equal(a->slices[i].end_ns, b->slices[i].end_ns);
		assert_int_equal(a->slices[i].tid, b->slices[i].tid);
		assert_int_equal(a->slices[i].shared, b->slices[i].shared);
	}
}

/*
 * One request's stream: time mostly moves on (a thread's next stretch),
 * now and then a piece reaches back (another thread's piece charged late,
 * a stretch that joins two). Lengths come from a few values, so ties are
 * common.
 */
static uint64_t stream(unsigned int pieces, unsigned int tids, unsigned int back_pct)
{
	struct rt_req *r = calloc(1, sizeof(*r));
	struct rt_span_cpu want = { 0 };
	uint64_t now = 1000, dropped = 0, last_from = 0;
	uint32_t last_tid = 100;
	bool last_shared = false;
	static const uint64_t lens[] = { 1, 2, 3, 5, 8, 100, 100, 250, 1000, 4000 };

	assert_non_null(r);
	for (unsigned int p = 0; p < pieces; p++) {
		uint32_t tid = 100 + (uint32_t)(rnd() % tids);
		bool shared = rnd() % 3 == 0;
		uint64_t len = lens[rnd() % (sizeof(lens) / sizeof(lens[0]))], from;

		if (rnd() % 5 == 0 && now > last_from) {
			/* the same stretch goes on: starts inside the last piece */
			tid = last_tid;
			shared = last_shared;
			from = now - rnd() % (now - last_from);
		} else if (rnd() % 100 < back_pct && now > 5000)
			from = now - (rnd() % 5000); /* reaches back: may touch, join, extend */
		else
			from = now + rnd() % 50; /* on: may start where the last ended */
		if (rnd() % 50 == 0)
			len = 0; /* empty: ignored */
		rt_span_slice_add(r, tid, from, from + len, shared);
		oracle_add(&want, tid, from, from + len, shared);
		same(&r->span.cpu, &want);
		if (from + len > now)
			now = from + len;
		if (len) {
			last_from = from;
			last_tid = tid;
			last_shared = shared;
		}
	}
	dropped = want.slices_dropped;
	free(r);
	return dropped;
}

static void test_engine_loop(void **state)
{
	uint64_t dropped = 0;

	(void)state;
	/* one engine thread, pieces on and on: the list fills and the tree works */
	for (int s = 0; s < 300; s++)
		dropped += stream(400, 1, 0);
	assert_true(dropped > 10000);
}

static void test_mixed(void **state)
{
	uint64_t dropped = 0;

	(void)state;
	for (int s = 0; s < 2000; s++)
		dropped += stream(200, 1 + (unsigned int)(s % 4), (unsigned int)(s % 40));
	assert_true(dropped > 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_loop),
		cmocka_unit_test(test_mixed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
