// SPDX-License-Identifier: BSD-2-Clause
/*
 * hot_thread: one thread busy most of the window, its CPU inside a phase
 * that weighs in request time: the requests take turns on it (the seed's
 * tokenizer). Thresholds: docs/verdict.md.
 */
#include "find_int.h"

/* on CPU or runnable for half the window: saturated, requests queue for it
 * (runnable counts: on a crowded machine the thread wanted the CPU) */
#define HOT_BUSY 0.5
/* the phase its CPU lies in is a fifth of request time or more */
#define HOT_PHASE_SHARE 0.2

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t s = a0 > b0 ? a0 : b0, e = a1 < b1 ? a1 : b1;

	return e > s ? e - s : 0;
}

/* Which phase the thread's slices fall in, by time; -1 when none do. */
static int phase_of(const struct rt_fctx *c, uint32_t tid, double *in)
{
	double t[RT_PHASE__COUNT] = { 0 };
	size_t i;
	uint32_t a, b;
	int p, best = -1;

	for (i = 0; i < c->n; i++) {
		const struct rt_span *s = &c->spans[i];

		for (a = 0; a < s->cpu.n_slices && a < RT_SPAN_SLICES_MAX; a++) {
			const struct rt_span_slice *sl = &s->cpu.slices[a];

			if (sl->tid != tid)
				continue;
			for (b = 0; b < s->n_intervals && b < RT_SPAN_INTERVALS_MAX; b++) {
				const struct rt_span_interval *iv = &s->intervals[b];

				if (iv->phase < RT_PHASE__COUNT)
					t[iv->phase] += (double)overlap(sl->start_ns, sl->end_ns,
									iv->start_ns, iv->end_ns);
			}
		}
	}
	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (t[p] > 0 && (best < 0 || t[p] > t[best]))
			best = p;
	*in = best >= 0 ? t[best] : 0;
	return best;
}

static bool engine_phase(int p)
{
	/* an engine thread busy in its steps is doing its job */
	return p == RT_PHASE_PREFILL || p == RT_PHASE_DECODE || p == RT_PHASE_COMM_WAIT;
}

int rt_find_hot_thread(struct rt_fctx *c)
{
	const struct rt_verdict *v = c->v;
	const struct rt_verdict_thread *h = &v->hot;
	struct rt_jsonw w;
	double in = 0, sh, qsh, score, each;
	int p, err;

	if (!v->have_hot || c->window_ns <= 0)
		return 0;
	c->hot_busy = (double)(h->on_cpu_ns + h->runq_ns) / c->window_ns;
	p = phase_of(c, h->tid, &in);
	c->hot_phase = p;
	if (p < 0 || engine_phase(p) || c->hot_busy < HOT_BUSY)
		return 0;
	sh = rt_find_share(c, p);
	if (sh < HOT_PHASE_SHARE)
		return 0;
	/* a saturated thread also makes the queue in front of it */
	qsh = p == RT_PHASE_QUEUE ? 0 : rt_find_share(c, RT_PHASE_QUEUE);
	score = sh + qsh;
	each = h->spans ? (double)h->on_cpu_ns / h->spans : 0;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "thread");
	rt_find_ev_thread(&w, h->tid, h->comm);
	rt_jsonw_key(&w, "phase");
	rt_jsonw_str_val(&w, rt_phase_name((enum rt_phase)p));
	rt_jsonw_key(&w, "busy");
	rt_jsonw_num(&w, c->hot_busy, 3);
	rt_jsonw_key(&w, "on_cpu_ms");
	rt_jsonw_ms(&w, h->on_cpu_ns);
	rt_jsonw_key(&w, "runq_ms");
	rt_jsonw_ms(&w, h->runq_ns);
	rt_jsonw_key(&w, "on_cpu_per_request_ms");
	rt_jsonw_num(&w, rt_find_ms(each), 3);
	rt_jsonw_key(&w, "requests");
	rt_jsonw_uint(&w, h->spans);
	rt_jsonw_key(&w, "shared");
	rt_jsonw_bool(&w, h->shared);
	rt_jsonw_key(&w, "share_of_on_cpu");
	rt_jsonw_num(&w, v->hot_share, 3);
	rt_jsonw_key(&w, "phase_share");
	rt_jsonw_num(&w, sh, 3);
	rt_jsonw_key(&w, "queue_share");
	rt_jsonw_num(&w, qsh, 3);
	rt_jsonw_key(&w, "threshold_busy");
	rt_jsonw_num(&w, HOT_BUSY, 2);
	rt_jsonw_key(&w, "threshold_phase_share");
	rt_jsonw_num(&w, HOT_PHASE_SHARE, 2);
	rt_find_ev_paths(&w, c);
	rt_jsonw_obj_close(&w);
	err = rt_find_add(
		c, RT_FIND_HOT_THREAD, 0, score, &w,
		"thread %u '%s' is on CPU or runnable %.0f%% of the window in %s (%.0f ms each for "
		"%u of %zu requests%s), and %s%s takes %.0f%% of request time: one thread "
		"does this stage for the requests, one at a time; parallelise it (more "
		"threads) or make it cheaper",
		h->tid, h->comm, 100 * c->hot_busy, rt_phase_name((enum rt_phase)p),
		rt_find_ms(each), h->spans, c->n, h->shared ? ", shared" : "",
		rt_phase_name((enum rt_phase)p), qsh > 0.05 ? " with the queue before it" : "",
		100 * score);
	if (!err)
		c->hot_fired = true;
	rt_jsonw_fini(&w);
	return err;
}
