// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CPU of compute pools (docs/spans.md, "Compute pools").
 *
 * A thread that is never handed a request (no I/O, no wakeup chain, no
 * marker) is nobody's by rules 1-4. A compute pool's threads are such
 * threads, yet all they do is the engine's work. A thread is taken for a
 * pool thread only when a link to engine work is seen, never for being
 * unowned: a runtime's I/O, GC or JIT threads are unowned too, and
 * spreading every unowned thread over the engine set would charge them.
 * The links:
 *
 *   - born of engine work: created (TASK_NEW, same process) by a thread
 *     doing a step or inside a parallel region: linked for its life
 *     (ggml's per-step threads; an OpenMP team made by its first region);
 *   - woken by engine work: its burst began with a wakeup from a thread
 *     doing a step or inside a region, or from a pool thread doing pool
 *     work (a condition variable's broadcast passes from worker to worker):
 *     linked for that burst (ggml's threadpool, PyTorch intra-op);
 *     a brief burst (a lock, < RT_HANDOFF_BRIEF_NS on CPU) passes its link
 *     to the next one as rule 3 passes a hand-off.
 *
 * A pool thread's pieces with no owner of its own go, as they happen, to
 * what its engine thread works for then (working.c): that thread's open
 * step, else the engine set of the process. Every change of that (a step
 * begins or ends, a request enters or leaves the set, a region opens or
 * closes) first cuts every pool thread's time (rt_pool_cut()), so a pool
 * thread that spins for seconds without a scheduler record is charged
 * piece by piece. Nobody in the set: the time stays unattributed.
 *
 * With parallel-region records (RT_PACK_REGION on the engine thread) a
 * pool thread's time outside its engine's regions is spin: charged the
 * same, and reported apart (cpu.pool_spin_ms).
 */
#include <stdlib.h>

#include "internal.h"

static void list_add(struct rt_correlator *c, struct rt_thread *t)
{
	if (t->pool_listed || c->n_pool >= RT_POOL_THREADS_MAX)
		return;
	c->pool_tids[c->n_pool++] = t->tid;
	t->pool_listed = true;
}

static bool pool_now(const struct rt_thread *t)
{
	return t->pool_life || t->pool_burst;
}

static bool busy(const struct rt_thread *e)
{
	return (e->in_step && e->n_step) || e->region_depth;
}

bool rt_pool_engine_busy(const struct rt_thread *w)
{
	return busy(w);
}

static struct rt_thread *thread_of(struct rt_correlator *c, uint32_t tid, uint32_t pid)
{
	struct rt_thread *t = tid ? rt_hmap_get(&c->threads, tid) : NULL;

	return t && t->pid == pid ? t : NULL;
}

/* The engine thread w is doing engine work for now, or NULL. */
static struct rt_thread *engine_of(struct rt_correlator *c, struct rt_thread *w)
{
	struct rt_thread *e;

	if (busy(w))
		return w;
	if (!pool_now(w))
		return NULL;
	e = thread_of(c, w->pool_link, w->pid);
	return e && busy(e) ? e : NULL;
}

void rt_pool_cut(struct rt_correlator *c, uint64_t ts)
{
	uint32_t i = 0;

	while (i < c->n_pool) {
		struct rt_thread *t = rt_hmap_get(&c->threads, c->pool_tids[i]);

		if (!t || (!pool_now(t) && !t->brief_pool)) {
			if (t)
				t->pool_listed = false;
			c->pool_tids[i] = c->pool_tids[--c->n_pool];
			continue;
		}
		rt_cpu_account(c, t, ts);
		i++;
	}
}

void rt_pool_on_task_new(struct rt_correlator *c, const struct rt_ev_task_new *ev)
{
	struct rt_thread *parent, *e, *t;

	if (ev->child_pid != ev->hdr.pid)
		return; /* a process of its own (no CLONE_THREAD): not a pool of this one */
	parent = thread_of(c, ev->hdr.tid, ev->hdr.pid);
	e = parent ? engine_of(c, parent) : NULL;
	if (!e)
		return;
	t = rt_thread_get(c, ev->child_tid, ev->child_pid, true);
	if (!t || t == e)
		return;
	t->pool_life = true;
	t->pool_link = e->tid;
	list_add(c, t);
}

void rt_pool_on_wake(struct rt_correlator *c, struct rt_thread *t, struct rt_thread *w)
{
	struct rt_thread *e = w ? engine_of(c, w) : NULL;
	uint32_t brief = t->brief_pool;

	t->brief_pool = 0;
	/* a thread that has owners of its own (a handler, a handed-over burst) is no pool's */
	if (t->n_io || t->handoff)
		return;
	if (e && e != t) {
		t->pool_burst = true;
		t->pool_link = e->tid;
	} else if (brief) {
		/* the lock's holder hands over nothing: still the pool's work */
		t->pool_burst = true;
		t->pool_link = brief;
	} else {
		return;
	}
	list_add(c, t);
}

void rt_pool_resume_unwoken(struct rt_correlator *c, struct rt_thread *t)
{
	uint32_t brief = t->brief_pool;

	t->brief_pool = 0;
	if (!brief || t->n_io || t->handoff)
		return;
	t->pool_burst = true;
	t->pool_link = brief;
	list_add(c, t);
}

void rt_pool_end_burst(struct rt_thread *t)
{
	if (t->in_burst)
		t->brief_pool = t->pool_burst && t->burst_on < (int64_t)RT_HANDOFF_BRIEF_NS ?
					t->pool_link :
					0;
	t->pool_burst = false;
}

void rt_pool_on_region(struct rt_correlator *c, const struct rt_ev_pack_call *ev)
{
	struct rt_thread *t;

	if (!rt_proc_get(c, ev->hdr.pid, false))
		return;
	t = rt_thread_get(c, ev->hdr.tid, ev->hdr.pid, true);
	if (!t)
		return;
	/* the pool's time so far was spin (or region): charge it as such first */
	rt_pool_cut(c, ev->hdr.ts_ns);
	t->region_seen = true;
	if (!ev->ret)
		t->region_depth++;
	else if (t->region_depth)
		t->region_depth--;
}

/*
 * A runqueue piece, kept until t's next switch record: a switch-out with
 * no switch-in before it shows that t was on a CPU for part of what was
 * charged as runqueue (seen: a spinning OpenMP worker's switch-ins
 * unrecorded now and then, 36 ms of its work charged as waiting to the
 * requests of that time). A piece of more requests than can be kept, or
 * past the last kept, is not put right.
 */
static void keep_runq(struct rt_thread *t, const struct rt_gpu_who *who, uint32_t live,
		      uint64_t wsum, int64_t ns, uint64_t from, uint64_t to, bool spin_known,
		      bool spin)
{
	struct rt_pool_runq *q;
	uint32_t i, cap;

	if (live > RT_POOL_RUNQ_REQS || t->n_pool_runq >= RT_POOL_RUNQ_MAX)
		return;
	/* grown on use: most switch records come after a few pieces, and a
	 * zeroed array of the bound cost more than the pieces (10,000
	 * instructions a pool thread in bench_pipeline); every field of a
	 * piece is written below before it is read */
	if (t->n_pool_runq == t->cap_pool_runq) {
		cap = t->cap_pool_runq ? 2 * t->cap_pool_runq : 4;
		q = realloc(t->pool_runq, cap * sizeof(*q));
		if (!q)
			return;
		t->pool_runq = q;
		t->cap_pool_runq = cap;
	}
	q = &t->pool_runq[t->n_pool_runq++];
	q->from = from;
	q->to = to;
	q->n = live;
	q->source = (uint8_t)who->source;
	q->spin_known = spin_known;
	q->spin = spin;
	for (i = 0; i < live; i++) {
		q->serial[i] = who->req[i]->serial;
		q->share[i] = (int64_t)((unsigned __int128)ns * who->w[i] / wsum);
	}
}

void rt_pool_runq_reset(struct rt_thread *t)
{
	t->n_pool_runq = 0;
}

void rt_pool_runq_was_on(struct rt_correlator *c, struct rt_thread *t, uint64_t from, uint64_t to)
{
	uint32_t k, i;

	for (k = 0; k < t->n_pool_runq; k++) {
		const struct rt_pool_runq *q = &t->pool_runq[k];
		uint64_t a = q->from > from ? q->from : from, b = q->to < to ? q->to : to;

		if (b <= a || q->to <= q->from)
			continue;
		for (i = 0; i < q->n; i++) {
			struct rt_req *r = rt_req_get(c, q->serial[i]);
			/* the overlap's part of this request's share */
			int64_t x = (int64_t)((unsigned __int128)q->share[i] * (b - a) /
					      (q->to - q->from));
			struct rt_span_cpu *cpu;
			struct rt_span_thread *st;

			if (!r || r->ended || x <= 0)
				continue; /* emitted already: the span stands */
			cpu = &r->span.cpu;
			st = rt_cpu_span_thread(r, t);
			cpu->runq_ns -= x;
			cpu->on_cpu_ns += x;
			if (st) {
				st->runq_ns -= x;
				st->on_cpu_ns += x;
			}
			rt_span_slice_add(r, t->tid, a, b, true);
			if (cpu->pool_ns == RT_NULL_NS)
				cpu->pool_ns = 0;
			cpu->pool_ns += x;
			if (q->spin_known) {
				if (cpu->pool_spin_ns == RT_NULL_NS)
					cpu->pool_spin_ns = 0;
				if (q->spin)
					cpu->pool_spin_ns += x;
			}
			if (q->source < RT_WORK__COUNT)
				cpu->pool_by_ns[q->source] += x;
		}
	}
}

bool rt_pool_charge(struct rt_correlator *c, struct rt_thread *t, bool on_cpu, int64_t ns,
		    uint64_t from, uint64_t to)
{
	struct rt_thread *e;
	struct rt_gpu_who who;
	uint64_t wsum = 0;
	uint32_t i, live = 0;
	bool spin;

	if (!pool_now(t) || t->n_io || t->handoff || t->n_served)
		return false;
	if (ns <= 0)
		return true;
	e = thread_of(c, t->pool_link, t->pid);
	rt_working_for(c, e, t->pid, &who);
	/* a request whose client left gets nothing more, as in every rule */
	for (i = 0; i < who.n; i++) {
		if (who.req[i]->frozen_ns)
			continue;
		who.req[live] = who.req[i];
		who.w[live] = who.w[i];
		wsum += who.w[i];
		live++;
	}
	if (!live || !wsum) {
		rt_cpu_unattributed(c, on_cpu, ns);
		return true;
	}
	spin = e && e->region_seen && !e->region_depth;
	if (!on_cpu)
		keep_runq(t, &who, live, wsum, ns, from, to, e && e->region_seen, spin);
	for (i = 0; i < live; i++) {
		struct rt_req *r = who.req[i];
		struct rt_span_cpu *cpu = &r->span.cpu;
		/* weighted shares, rounded down: what does not divide is lost, as in cpu.c */
		int64_t share = (int64_t)((unsigned __int128)ns * who.w[i] / wsum);
		struct rt_span_thread *st = rt_cpu_span_thread(r, t);
		uint32_t k, best = 0;

		rt_req_touch(r, t->tid);
		if (st) {
			st->shared = true;
			st->pool = true;
		}
		if (!on_cpu) {
			cpu->runq_ns += share;
			if (st)
				st->runq_ns += share;
			continue;
		}
		cpu->on_cpu_ns += share;
		if (st)
			st->on_cpu_ns += share;
		rt_span_slice_add(r, t->tid, from, to, true);
		if (cpu->pool_ns == RT_NULL_NS)
			cpu->pool_ns = 0;
		cpu->pool_ns += share;
		if (e && e->region_seen) {
			if (cpu->pool_spin_ns == RT_NULL_NS)
				cpu->pool_spin_ns = 0;
			if (spin)
				cpu->pool_spin_ns += share;
		}
		if (who.source < RT_WORK__COUNT)
			cpu->pool_by_ns[who.source] += share;
		for (k = 1; k < RT_WORK__COUNT; k++)
			if (cpu->pool_by_ns[k] > cpu->pool_by_ns[best])
				best = k;
		cpu->pool_by = (uint8_t)best;
	}
	return true;
}
