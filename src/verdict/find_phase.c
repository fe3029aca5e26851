// SPDX-License-Identifier: BSD-2-Clause
/*
 * Where the time went: a phase that is not the engine's own work takes most
 * of it (phase_dominant), the engine waits on its peers (comm_wait), or the
 * request's threads wait for a CPU (cpu_starved). Thresholds: docs/verdict.md.
 */
#include <errno.h>
#include <stdlib.h>

#include "find_int.h"

/* phase_dominant: half of all request time in one phase */
#define PHASE_DOMINANT_SHARE 0.5
/* comm_wait: a quarter of request time blocked on peers */
#define COMM_WAIT_SHARE 0.25
/* cpu_starved: runnable half as long as running, and a tenth of request time */
#define STARVED_RUNQ_PER_CPU 0.5
#define STARVED_SHARE 0.10

static bool engine_phase(int p)
{
	/* the work the server exists for, or a wait with its own finding */
	return p == RT_PHASE_PREFILL || p == RT_PHASE_DECODE || p == RT_PHASE_COMM_WAIT;
}

static const char *source_of(const struct rt_fctx *c, int p)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->spans[i].phase_ns[p] != RT_NULL_NS)
			return rt_phase_source_name(c->spans[i].phase_source[p]);
	return "none";
}

static void ev_phase(struct rt_jsonw *w, const struct rt_fctx *c, int p)
{
	const struct rt_span_stats *st = &c->v->stats;

	rt_jsonw_key(w, "phase");
	rt_jsonw_str_val(w, rt_phase_name((enum rt_phase)p));
	rt_jsonw_key(w, "source");
	rt_jsonw_str_val(w, source_of(c, p));
	rt_jsonw_key(w, "share");
	rt_jsonw_num(w, rt_find_share(c, p), 3);
	rt_jsonw_key(w, "p50_ms");
	if (st->phase[p].n)
		rt_jsonw_ms(w, st->phase[p].p50_ns);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "p99_ms");
	if (st->phase[p].n)
		rt_jsonw_ms(w, st->phase[p].p99_ns);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "latency_p50_ms");
	rt_jsonw_ms(w, st->duration.p50_ns);
	rt_jsonw_key(w, "latency_p99_ms");
	rt_jsonw_ms(w, st->duration.p99_ns);
	rt_jsonw_key(w, "requests");
	rt_jsonw_uint(w, st->phase[p].n);
	rt_find_ev_paths(w, c);
}

static int phase_dominant(struct rt_fctx *c)
{
	const struct rt_span_stats *st = &c->v->stats;
	struct rt_jsonw w;
	int p, err = 0;

	for (p = 0; p < RT_PHASE__COUNT && !err; p++) {
		double sh = rt_find_share(c, p);

		if (engine_phase(p) || sh < PHASE_DOMINANT_SHARE)
			continue;
		rt_jsonw_init(&w, 0);
		rt_jsonw_obj_open(&w);
		ev_phase(&w, c, p);
		rt_jsonw_key(&w, "threshold_share");
		rt_jsonw_num(&w, PHASE_DOMINANT_SHARE, 2);
		rt_jsonw_obj_close(&w);
		err = rt_find_add(
			c, RT_FIND_PHASE_DOMINANT, 1, sh, &w,
			"%s takes %.0f%% of request time (p50 %.1f ms of %.1f ms latency, "
			"p99 %.1f ms of %.1f ms)%s",
			rt_phase_name((enum rt_phase)p), 100 * sh,
			rt_find_ms((double)st->phase[p].p50_ns),
			rt_find_ms((double)st->duration.p50_ns),
			rt_find_ms((double)st->phase[p].p99_ns),
			rt_find_ms((double)st->duration.p99_ns),
			p == RT_PHASE_PRE_FIRST_TOKEN ?
				": queue, tokenize and prefill together; markers would "
				"split them" :
				"");
		rt_jsonw_fini(&w);
	}
	return err;
}

static int comm_wait(struct rt_fctx *c)
{
	const struct rt_span_stats *st = &c->v->stats;
	double sh = rt_find_share(c, RT_PHASE_COMM_WAIT);
	struct rt_jsonw w;
	int err;

	if (sh < COMM_WAIT_SHARE)
		return 0;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	ev_phase(&w, c, RT_PHASE_COMM_WAIT);
	rt_jsonw_key(&w, "engine_share");
	rt_jsonw_num(&w,
		     rt_find_share(c, RT_PHASE_PREFILL) + rt_find_share(c, RT_PHASE_DECODE) +
			     rt_find_share(c, RT_PHASE_PRE_FIRST_TOKEN),
		     3);
	rt_jsonw_key(&w, "threshold_share");
	rt_jsonw_num(&w, COMM_WAIT_SHARE, 2);
	rt_jsonw_obj_close(&w);
	err = rt_find_add(c, RT_FIND_COMM_WAIT, 0, sh, &w,
			  "the engine waits on its peers (collectives, other ranks, shards) for "
			  "%.0f%% of request time (comm_wait p50 %.1f ms of %.1f ms latency): the "
			  "interconnect or a slower rank sets the pace, not this process's compute",
			  100 * sh, rt_find_ms((double)st->phase[RT_PHASE_COMM_WAIT].p50_ns),
			  rt_find_ms((double)st->duration.p50_ns));
	rt_jsonw_fini(&w);
	return err;
}

struct runq_thread {
	uint32_t tid;
	const char *comm;
	int64_t runq_ns, on_cpu_ns;
};

static int cmp_runq(const void *a, const void *b)
{
	const struct runq_thread *x = a, *y = b;

	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	return 0;
}

static int cmp_runq_desc(const void *a, const void *b)
{
	const struct runq_thread *x = a, *y = b;

	return (x->runq_ns < y->runq_ns) - (x->runq_ns > y->runq_ns);
}

/* The threads that waited longest for a CPU, summed over the spans. */
static int worst_waiters(const struct rt_fctx *c, struct rt_jsonw *w)
{
	struct runq_thread *t;
	size_t i, k = 0, j, m = 0;
	uint32_t x;

	t = calloc(c->n * RT_SPAN_THREADS_MAX + 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (i = 0; i < c->n; i++) {
		const struct rt_span_cpu *cpu = &c->spans[i].cpu;

		for (x = 0; x < cpu->n_threads && x < RT_SPAN_THREADS_MAX; x++) {
			const struct rt_span_thread *th = &cpu->threads[x];

			t[k].tid = th->tid;
			t[k].comm = th->comm;
			t[k].runq_ns = th->runq_ns > 0 ? th->runq_ns : 0;
			t[k].on_cpu_ns = th->on_cpu_ns > 0 ? th->on_cpu_ns : 0;
			k++;
		}
	}
	qsort(t, k, sizeof(*t), cmp_runq);
	for (i = 0; i < k; i = j) {
		struct runq_thread s = t[i];

		s.runq_ns = s.on_cpu_ns = 0;
		for (j = i; j < k && t[j].tid == t[i].tid; j++) {
			s.runq_ns += t[j].runq_ns;
			s.on_cpu_ns += t[j].on_cpu_ns;
		}
		t[m++] = s;
	}
	qsort(t, m, sizeof(*t), cmp_runq_desc);
	rt_jsonw_key(w, "threads");
	rt_jsonw_arr_open(w);
	for (i = 0; i < m && i < 3; i++) {
		rt_jsonw_obj_open(w);
		rt_jsonw_key(w, "tid");
		rt_jsonw_uint(w, t[i].tid);
		rt_jsonw_key(w, "comm");
		rt_jsonw_str_val(w, t[i].comm);
		rt_jsonw_key(w, "runq_ms");
		rt_jsonw_ms(w, t[i].runq_ns);
		rt_jsonw_key(w, "on_cpu_ms");
		rt_jsonw_ms(w, t[i].on_cpu_ns);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	free(t);
	return 0;
}

static int cpu_starved(struct rt_fctx *c)
{
	const struct rt_verdict *v = c->v;
	double runq = (double)v->total_runq_ns, on = (double)v->total_on_cpu_ns;
	double sh = c->sum_dur_ns > 0 ? runq / c->sum_dur_ns : 0;
	struct rt_jsonw w;
	int err;

	if (runq <= 0 || runq < STARVED_RUNQ_PER_CPU * on || sh < STARVED_SHARE)
		return 0;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "runq_ms");
	rt_jsonw_ms(&w, v->total_runq_ns);
	rt_jsonw_key(&w, "on_cpu_ms");
	rt_jsonw_ms(&w, v->total_on_cpu_ns);
	rt_jsonw_key(&w, "share");
	rt_jsonw_num(&w, sh, 3);
	err = worst_waiters(c, &w);
	rt_jsonw_key(&w, "threshold_runq_per_on_cpu");
	rt_jsonw_num(&w, STARVED_RUNQ_PER_CPU, 2);
	rt_jsonw_key(&w, "threshold_share");
	rt_jsonw_num(&w, STARVED_SHARE, 2);
	rt_jsonw_obj_close(&w);
	if (!err)
		err = rt_find_add(
			c, RT_FIND_CPU_STARVED, 0, sh, &w,
			"the requests' threads waited %.0f ms for a CPU against %.0f ms on "
			"one (%.0f%% of request time runnable but not running): the CPUs "
			"are oversubscribed (other load, or more busy threads than cores)",
			rt_find_ms(runq), rt_find_ms(on), 100 * sh);
	rt_jsonw_fini(&w);
	return err;
}

int rt_find_phases(struct rt_fctx *c)
{
	int err = phase_dominant(c);

	if (!err)
		err = comm_wait(c);
	if (!err)
		err = cpu_starved(c);
	return err;
}
