// SPDX-License-Identifier: BSD-2-Clause
/*
 * CPU attribution truth: docs/spans.md's rules, as tests/fixtures/README.md
 * ("CPU attribution") states them precisely, applied to the simulation's own
 * facts (which thread moved which request's bytes when, who woke whom,
 * which marker calls ran where). tests/gen/check_truth.py derives the same
 * values from the records alone.
 *
 * Ownership by R ends at R's end_ns, whatever the rule gave it, so every
 * time line below is also cut at the end_ns of each request.
 */
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NEVER UINT64_MAX
#define MAX_IV 512 /* rule 1 intervals per thread */
#define BRIEF_NS 100000 /* a handed burst shorter on CPU took a lock (RT_HANDOFF_BRIEF_NS) */

/* Rule 1 on one thread: a claim (one request) or an engine step (its members). */
struct claim {
	uint64_t t0, t1; /* t1 NEVER: not ended in the recording */
	uint32_t mask;
	bool step;
	uint64_t step_id; /* a step's */
};

/* Rules 2-4 of one burst: when it gained each owner, NEVER: not an owner. */
struct burst_own {
	uint64_t gain[GEN_MAX_REQS]; /* rules 2 and 4 */
	int handoff; /* rule 3's request, -1: none; owned from the burst's start */
	uint64_t handoff_until; /* a claim for another request on the thread, or NEVER */
};

/* Rule 3's request owns the burst's unmarked time over [a, b]. */
static bool handoff_owns(const struct burst_own *bo, uint64_t a)
{
	return bo->handoff >= 0 && bo->handoff_until > a;
}

/* A parallel region of the engine (PACK_CALL REGION entry to return). */
struct region {
	uint64_t t0, t1;
};

struct cpu_ctx {
	struct gen_world *w;
	/* compute pools (docs/spans.md "Compute pools"): the engine's regions,
	 * each request's QUEUE intervals (out of the engine set), pool bursts */
	struct region reg[GEN_MAX_STEPS * 2];
	int n_reg;
	struct claim queue[GEN_MAX_REQS * 4];
	int n_queue;
	bool *pool_burst[SIM_MAX_THREADS];
	int n_reqs;
	uint64_t end[GEN_MAX_REQS];
	uint64_t first_io[SIM_MAX_THREADS][GEN_MAX_REQS]; /* NEVER: no I/O */
	struct burst_own *own[SIM_MAX_THREADS];
	struct claim iv[SIM_MAX_THREADS][MAX_IV];
	int n_iv[SIM_MAX_THREADS];
	/* an engine pack's first call by each thread and by the process, NEVER: none */
	uint64_t first_pack[SIM_MAX_THREADS];
	uint64_t proc_first_pack;
};

static bool one(uint32_t m)
{
	return m && !(m & (m - 1));
}

static uint32_t live_at(const struct cpu_ctx *x, uint64_t t)
{
	uint32_t m = 0;
	int i;

	for (i = 0; i < x->n_reqs; i++)
		if (x->end[i] > t)
			m |= 1u << i;
	return m;
}

/* Rule 2 at instant t: requests whose bytes the thread moved at or before t, not ended. */
static uint32_t io_owners(const struct cpu_ctx *x, int th, uint64_t t)
{
	uint32_t m = 0;
	int i;

	for (i = 0; i < x->n_reqs; i++)
		if (x->first_io[th][i] <= t && x->end[i] > t)
			m |= 1u << i;
	return m;
}

static int burst_at(const struct sim_thread *t, uint64_t ts)
{
	size_t i;

	for (i = 0; i < t->n_bursts; i++)
		if (t->bursts[i].start <= ts && ts <= t->bursts[i].end)
			return (int)i;
	return -1;
}

static void gain(struct burst_own *bo, int req, uint64_t ts)
{
	if (ts < bo->gain[req])
		bo->gain[req] = ts;
}

struct burst_ref {
	uint64_t start;
	int th, b;
};

static int cmp_burst(const void *a, const void *b)
{
	const struct burst_ref *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->th != y->th ? x->th - y->th : x->b - y->b;
}

/* On-CPU time of burst k of t. */
static uint64_t on_cpu_of(const struct sim_thread *t, uint32_t k)
{
	uint64_t ns = 0;
	size_t i;

	for (i = 0; i < t->n_segs; i++)
		if (t->segs[i].burst == k && t->segs[i].type == SIM_SEG_ONCPU)
			ns += t->segs[i].t1 - t->segs[i].t0;
	return ns;
}

static bool engine_busy(const struct cpu_ctx *x, uint64_t t);

/*
 * Rules 3 and 4 in a process whose engine a pack reads (docs/spans.md): a
 * thread that has not made the pack's calls by time t and owns no request
 * by I/O is the runtime's, handed nothing and serving nobody.
 */
static bool runtime_thread(const struct cpu_ctx *x, int th, uint64_t t)
{
	return x->proc_first_pack < t && x->first_pack[th] >= t && !io_owners(x, th, t);
}

/* Rules 2-4 for one burst; the waker's bursts (rule 3) are done already. */
static void owners_of(struct cpu_ctx *x, int th, int k)
{
	const struct sim *s = &x->w->sim;
	const struct sim_burst *b = &s->threads[th]->bursts[k];
	struct burst_own *bo = &x->own[th][k];
	uint32_t m;
	size_t i;
	int r, wb, h;

	bo->handoff = -1;
	bo->handoff_until = NEVER;
	for (r = 0; r < GEN_MAX_REQS; r++)
		bo->gain[r] = NEVER;
	/* rule 2: held from before the burst, or from the I/O inside it */
	for (r = 0; r < x->n_reqs; r++)
		if (x->first_io[th][r] <= b->end && x->end[r] > b->start)
			gain(bo, r, x->first_io[th][r] > b->start ? x->first_io[th][r] : b->start);
	/* rule 3: the waker's single owner at the instant of the wakeup (rules 2 and 3),
	 * for a thread that owns no request by I/O then (not a handler woken by
	 * another handler releasing a lock) */
	if (b->waker >= 0 && !io_owners(x, th, b->start) && !runtime_thread(x, th, b->start) &&
	    (wb = burst_at(s->threads[b->waker], b->start)) >= 0) {
		m = io_owners(x, b->waker, b->start);
		h = x->own[b->waker][wb].handoff;
		if (h >= 0 && x->end[h] > b->start && handoff_owns(&x->own[b->waker][wb], b->start))
			m |= 1u << h;
		/* an engine doing engine work (a step, a region) hands over nothing */
		if (b->waker == x->w->th_eng && engine_busy(x, b->start))
			m = 0;
		if (one(m)) {
			bo->handoff = __builtin_ctz(m);
		} else if (k > 0 && (h = x->own[th][k - 1].handoff) >= 0 && x->end[h] > b->start &&
			   x->own[th][k - 1].handoff_until == NEVER &&
			   on_cpu_of(s->threads[th], (uint32_t)(k - 1)) < BRIEF_NS) {
			/* a brief handed burst (a lock taken) passes its hand-off on */
			bo->handoff = h;
		}
	}
	/* it ends where the thread is claimed for another request (rule 1) */
	for (i = 0; bo->handoff >= 0 && i < (size_t)x->n_iv[th]; i++) {
		const struct claim *cl = &x->iv[th][i];

		if (!cl->step && cl->mask != 1u << bo->handoff && cl->t0 >= b->start &&
		    cl->t0 <= b->end && (cl->mask & live_at(x, cl->t0)) &&
		    cl->t0 < bo->handoff_until)
			bo->handoff_until = cl->t0;
	}
	/* rule 4: it wakes a thread whose rule-2 owners are exactly {R} then */
	for (i = 0; i < s->n_wakes; i++) {
		const struct sim_wake_log *wk = &s->wakes[i];

		if (wk->waker != th || wk->ts < b->start || wk->ts > b->end ||
		    runtime_thread(x, th, wk->ts))
			continue;
		m = io_owners(x, wk->target, wk->ts);
		if (one(m))
			gain(bo, __builtin_ctz(m), wk->ts);
	}
}

static int burst_owners(struct cpu_ctx *x)
{
	struct sim *s = &x->w->sim;
	struct burst_ref *refs;
	size_t n = 0, i, k;
	int th;

	for (th = 0; th < s->n_threads; th++) {
		x->own[th] = calloc(s->threads[th]->n_bursts + 1, sizeof(*x->own[th]));
		if (!x->own[th])
			return -ENOMEM;
		n += s->threads[th]->n_bursts;
	}
	refs = calloc(n + 1, sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	n = 0;
	for (th = 0; th < s->n_threads; th++)
		for (i = 0; i < s->threads[th]->n_bursts; i++)
			refs[n++] =
				(struct burst_ref){ s->threads[th]->bursts[i].start, th, (int)i };
	/* a waker is on CPU when it wakes: its burst started earlier */
	qsort(refs, n, sizeof(*refs), cmp_burst);
	for (k = 0; k < n; k++)
		owners_of(x, refs[k].th, refs[k].b);
	free(refs);
	return 0;
}

static bool claims_thread(uint16_t phase)
{
	/* QUEUE, COMM_WAIT are waiting; PREFILL, DECODE engine work that steps attribute */
	return phase == RT_PHASE_RECEIVE || phase == RT_PHASE_TOKENIZE ||
	       phase == RT_PHASE_PRE_FIRST_TOKEN || phase == RT_PHASE_POSTPROCESS ||
	       phase == RT_PHASE_OTHER;
}

/*
 * Rule 1: a claiming MARK_BEGIN holds its thread until the next MARK_END of
 * the same request and phase, on whatever thread that END runs; a step
 * holds the thread of its STEP_BEGIN until its STEP_END there.
 */
static int marker_intervals(struct cpu_ctx *x)
{
	const struct sim *s = &x->w->sim;
	size_t i, j;

	for (i = 0; i < s->n_marks; i++) {
		const struct sim_mark_log *m = &s->marks[i];
		struct claim c = { .t0 = m->ts,
				   .t1 = NEVER,
				   .step = true,
				   .mask = m->mask,
				   .step_id = m->step_id };

		if (m->kind == RT_EV_MARK_BEGIN) {
			if (!claims_thread(m->phase))
				continue;
			c.step = false;
			c.mask = 1u << m->req;
		} else if (m->kind != RT_EV_MARK_STEP_BEGIN) {
			continue;
		}
		for (j = i + 1; j < s->n_marks && c.t1 == NEVER; j++) {
			const struct sim_mark_log *e = &s->marks[j];

			if ((!c.step && e->kind == RT_EV_MARK_END && e->req == m->req &&
			     e->phase == m->phase) ||
			    (c.step && e->kind == RT_EV_MARK_STEP_END && e->step_id == m->step_id &&
			     e->thread == m->thread))
				c.t1 = e->ts;
		}
		if (x->n_iv[m->thread] == MAX_IV)
			return -E2BIG;
		x->iv[m->thread][x->n_iv[m->thread]++] = c;
	}
	return 0;
}

/* Rule 1 over [a, b): the live requests of the intervals covering it; *step: a step does. */
static uint32_t cover(const struct cpu_ctx *x, int th, uint64_t a, uint64_t b, bool *step)
{
	uint32_t m = 0, live = live_at(x, a), c;
	int i;

	*step = false;
	for (i = 0; i < x->n_iv[th]; i++) {
		if (x->iv[th][i].t0 > a || x->iv[th][i].t1 < b)
			continue;
		c = x->iv[th][i].mask & live;
		m |= c;
		if (c && x->iv[th][i].step)
			*step = true;
	}
	return m;
}

static uint64_t sooner(uint64_t b, uint64_t a, uint64_t v)
{
	return v > a && v < b ? v : b;
}

/* The first instant in (a, lim) where rule 1's cover or some ownership can change. */
static uint64_t next_cut(const struct cpu_ctx *x, int th, uint64_t a, uint64_t lim)
{
	uint64_t b = lim;
	int i;

	for (i = 0; i < x->n_iv[th]; i++) {
		b = sooner(b, a, x->iv[th][i].t0);
		b = sooner(b, a, x->iv[th][i].t1);
	}
	for (i = 0; i < x->n_reqs; i++)
		b = sooner(b, a, x->end[i]);
	return b;
}

/* ---- compute pools (docs/spans.md "Compute pools") ---- */

static bool in_region(const struct cpu_ctx *x, uint64_t t)
{
	int i;

	for (i = 0; i < x->n_reg; i++)
		if (x->reg[i].t0 <= t && t < x->reg[i].t1)
			return true;
	return false;
}

/* The engine's open step at t: its live members (0: none, or not in a step). */
static uint32_t engine_step_at(const struct cpu_ctx *x, uint64_t t, bool *in_step)
{
	int e = x->w->th_eng, i;

	*in_step = false;
	for (i = 0; i < x->n_iv[e]; i++) {
		const struct claim *c = &x->iv[e][i];

		if (c->step && c->t0 <= t && t < c->t1) {
			*in_step = true;
			return c->mask & live_at(x, t);
		}
	}
	return 0;
}

/*
 * Pack mode: the tokens request i fed in the engine's step open at t (an
 * engine pack's step splits pool time by its batch's tokens); 1 otherwise.
 */
static uint64_t step_weight(const struct cpu_ctx *x, uint64_t t, int req)
{
	const struct gen_world *w = x->w;
	int e = w->th_eng, i, j;

	if (w->mode != RT_GEN_PACK)
		return 1;
	for (i = 0; i < x->n_iv[e]; i++) {
		const struct claim *c = &x->iv[e][i];
		const struct gen_pk_step *st;

		if (!c->step || c->t0 > t || t >= c->t1 || c->step_id >= w->n_pk_steps)
			continue;
		st = &w->pk_steps[c->step_id];
		for (j = 0; j < st->n; j++)
			if (st->req[j] == req)
				return st->seqs[j].n_tokens;
	}
	return 1; /* the engine set, equally */
}

/* Who the engine works for at t: its step's live members, else the engine set. */
static uint32_t working_for(const struct cpu_ctx *x, uint64_t t)
{
	uint32_t m = 0;
	bool in_step;
	int i;

	m = engine_step_at(x, t, &in_step);
	if (m)
		return m;
	for (i = 0; i < x->n_reqs; i++)
		if (x->w->reqs[i].received && x->w->reqs[i].received <= t && x->end[i] > t)
			m |= 1u << i;
	for (i = 0; i < x->n_queue; i++)
		if (x->queue[i].t0 <= t && t < x->queue[i].t1)
			m &= ~x->queue[i].mask;
	return m;
}

/* The engine is doing engine work at t: inside a step with live members, or a region. */
static bool engine_busy(const struct cpu_ctx *x, uint64_t t)
{
	bool in_step;

	return engine_step_at(x, t, &in_step) || in_region(x, t);
}

/* The first instant in (a, lim) where what the engine works for can change. */
static uint64_t pool_cut(const struct cpu_ctx *x, uint64_t a, uint64_t lim)
{
	int e = x->w->th_eng, i;
	uint64_t b = lim;

	for (i = 0; i < x->n_iv[e]; i++) {
		b = sooner(b, a, x->iv[e][i].t0);
		b = sooner(b, a, x->iv[e][i].t1);
	}
	for (i = 0; i < x->n_queue; i++) {
		b = sooner(b, a, x->queue[i].t0);
		b = sooner(b, a, x->queue[i].t1);
	}
	for (i = 0; i < x->n_reqs; i++) {
		b = sooner(b, a, x->w->reqs[i].received);
		b = sooner(b, a, x->end[i]);
	}
	return b;
}

/*
 * Pool bursts: the spinning worker, born of the engine's first region,
 * and the disposable one, born of each, for their lives; a burst woken by the engine while it does engine work.
 * Either only where the burst has no owner of its own (rules 2-4).
 */
static int pool_bursts(struct cpu_ctx *x)
{
	const struct sim *s = &x->w->sim;
	int th;
	size_t k;

	for (th = 0; th < s->n_threads; th++) {
		const struct sim_thread *t = s->threads[th];

		x->pool_burst[th] = calloc(t->n_bursts + 1, sizeof(bool));
		if (!x->pool_burst[th])
			return -ENOMEM;
		if (!x->w->sc->pool || !t->traced || th == x->w->th_eng)
			continue;
		for (k = 0; k < t->n_bursts; k++) {
			const struct burst_own *bo = &x->own[th][k];
			bool owned = bo->handoff >= 0;
			int r;

			for (r = 0; r < x->n_reqs; r++)
				owned |= bo->gain[r] != NEVER;
			if (owned)
				continue;
			x->pool_burst[th][k] = th == x->w->th_spinner || th == x->w->th_disp ||
					       (t->bursts[k].waker == x->w->th_eng &&
						engine_busy(x, t->bursts[k].start));
		}
	}
	return 0;
}

static void pool_marks(struct cpu_ctx *x)
{
	const struct sim *s = &x->w->sim;
	size_t i, j;

	for (i = 0; i < s->n_marks; i++) {
		const struct sim_mark_log *m = &s->marks[i];

		if (m->kind == RT_EV_PACK_CALL && (!m->role || m->role == RT_PACK_REGION) &&
		    m->phase == 0 && x->n_reg < GEN_MAX_STEPS * 2) {
			x->reg[x->n_reg].t0 = m->ts;
			x->reg[x->n_reg].t1 = NEVER;
			for (j = i + 1; j < s->n_marks; j++)
				if (s->marks[j].kind == RT_EV_PACK_CALL &&
				    (!s->marks[j].role || s->marks[j].role == RT_PACK_REGION) &&
				    s->marks[j].thread == m->thread && s->marks[j].phase == 1) {
					x->reg[x->n_reg].t1 = s->marks[j].ts;
					break;
				}
			x->n_reg++;
		}
		if (m->kind == RT_EV_MARK_BEGIN && m->phase == RT_PHASE_QUEUE &&
		    x->n_queue < GEN_MAX_REQS * 4) {
			struct claim *q = &x->queue[x->n_queue++];

			q->t0 = m->ts;
			q->t1 = NEVER;
			q->mask = 1u << m->req;
			for (j = i + 1; j < s->n_marks; j++)
				if (s->marks[j].kind == RT_EV_MARK_END &&
				    s->marks[j].req == m->req &&
				    s->marks[j].phase == RT_PHASE_QUEUE) {
					q->t1 = s->marks[j].ts;
					break;
				}
		}
	}
}

static void charge(struct gen_cpu_truth *ct, int th, uint8_t type, uint64_t ns, uint32_t owners)
{
	int n = __builtin_popcount(owners), i;

	if (!n || !ns)
		return;
	for (i = 0; i < GEN_MAX_REQS; i++) {
		if (!(owners & (1u << i)))
			continue;
		if (type == SIM_SEG_ONCPU)
			ct->on[i][th] += (int64_t)ns / n;
		else
			ct->runq[i][th] += (int64_t)ns / n;
		ct->charged[i][th] = true;
		if (n > 1)
			ct->shared[i][th] = true;
	}
}

/* A pool burst's piece [a, b): to what the engine works for, cut where that changes. */
static void pool_charge(const struct cpu_ctx *x, struct gen_cpu_truth *ct, int th, uint8_t type,
			uint64_t a, uint64_t b)
{
	uint64_t c;
	uint32_t m;
	int n, i;

	for (; a < b; a = c) {
		uint64_t wt[GEN_MAX_REQS], wsum = 0;

		c = pool_cut(x, a, b);
		m = working_for(x, a);
		n = __builtin_popcount(m);
		if (!n)
			continue; /* the engine works for nobody: unattributed */
		for (i = 0; i < GEN_MAX_REQS; i++) {
			wt[i] = m & (1u << i) ? step_weight(x, a, i) : 0;
			wsum += wt[i];
		}
		for (i = 0; i < GEN_MAX_REQS; i++) {
			/* weighted shares rounded down, as the correlator's */
			int64_t share = (int64_t)((unsigned __int128)(c - a) * wt[i] / wsum);

			if (!(m & (1u << i)))
				continue;
			if (type == SIM_SEG_ONCPU) {
				ct->on[i][th] += share;
				ct->pool_on[i] += share;
			} else {
				ct->runq[i][th] += share;
			}
			ct->charged[i][th] = ct->shared[i][th] = ct->pool[i][th] = true;
		}
	}
}

/*
 * A burst's unmarked time, by segment: the burst is cut at the end_ns of
 * each of its owners, and a segment goes to the owners the burst has at
 * the segment's end (gained by then, not ended at its start).
 */
struct residual {
	uint64_t cut[GEN_MAX_REQS + 3];
	int n_cut;
	uint64_t ns[GEN_MAX_REQS + 2][2]; /* [segment][on, runq] */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void residual_open(struct residual *rs, const struct cpu_ctx *x, const struct sim_burst *b,
			  const struct burst_own *bo)
{
	int r;

	memset(rs, 0, sizeof(*rs));
	rs->cut[rs->n_cut++] = b->start;
	for (r = 0; r < x->n_reqs; r++)
		if ((bo->gain[r] != NEVER || r == bo->handoff) && x->end[r] > b->start &&
		    x->end[r] < b->end)
			rs->cut[rs->n_cut++] = x->end[r];
	if (bo->handoff >= 0 && bo->handoff_until > b->start && bo->handoff_until < b->end)
		rs->cut[rs->n_cut++] = bo->handoff_until;
	rs->cut[rs->n_cut++] = b->end;
	qsort(rs->cut, (size_t)rs->n_cut, sizeof(rs->cut[0]), cmp_u64);
}

static void residual_add(struct residual *rs, uint8_t type, uint64_t a, uint64_t ns)
{
	int j = 0;

	while (j + 2 < rs->n_cut && rs->cut[j + 1] <= a)
		j++;
	rs->ns[j][type == SIM_SEG_ONCPU ? 0 : 1] += ns;
}

static void residual_charge(const struct residual *rs, const struct cpu_ctx *x,
			    const struct burst_own *bo, struct gen_cpu_truth *ct, int th)
{
	uint32_t owners;
	int j, r;

	for (j = 0; j + 1 < rs->n_cut; j++) {
		owners = 0;
		for (r = 0; r < x->n_reqs; r++)
			if ((bo->gain[r] <= rs->cut[j + 1] ||
			     (r == bo->handoff && handoff_owns(bo, rs->cut[j]))) &&
			    x->end[r] > rs->cut[j])
				owners |= 1u << r;
		charge(ct, th, SIM_SEG_ONCPU, rs->ns[j][0], owners);
		charge(ct, th, SIM_SEG_RUNQ, rs->ns[j][1], owners);
	}
}

/* An on-CPU or runqueue segment: marker-covered pieces now, the rest to the residual. */
static void busy(const struct cpu_ctx *x, struct gen_cpu_truth *ct, int th, const struct sim_seg *g,
		 struct residual *rs)
{
	uint64_t a, b;
	uint32_t m;
	bool step;

	for (a = g->t0; a < g->t1; a = b) {
		b = next_cut(x, th, a, g->t1);
		m = cover(x, th, a, b, &step);
		if (m)
			charge(ct, th, g->type, b - a, m);
		else if (x->pool_burst[th][g->burst])
			pool_charge(x, ct, th, g->type, a, b);
		else
			residual_add(rs, g->type, a, b - a);
	}
}

/*
 * Off-CPU: a single claim's request, or (no live claim or step) the single
 * rule-2 owner, at each instant.
 */
static void sleeping(const struct cpu_ctx *x, struct gen_cpu_truth *ct, int th,
		     const struct sim_seg *g)
{
	uint64_t a, b;
	uint32_t m;
	bool step;

	for (a = g->t0; a < g->t1; a = b) {
		b = next_cut(x, th, a, g->t1);
		m = cover(x, th, a, b, &step);
		if (!m)
			m = io_owners(x, th, a);
		else if (step)
			m = 0;
		if (one(m))
			ct->off[__builtin_ctz(m)] += (int64_t)(b - a);
	}
}

static void thread_truth(const struct cpu_ctx *x, struct gen_cpu_truth *ct, int th)
{
	const struct sim_thread *t = x->w->sim.threads[th];
	struct residual rs;
	uint32_t cur = UINT32_MAX;
	size_t i;

	for (i = 0; i < t->n_segs; i++) {
		const struct sim_seg *g = &t->segs[i];

		if (g->type == SIM_SEG_SLEEP) {
			sleeping(x, ct, th, g);
			continue;
		}
		if ((g->type != SIM_SEG_ONCPU && g->type != SIM_SEG_RUNQ) ||
		    g->burst >= t->n_bursts)
			continue;
		/* a burst's segments are contiguous */
		if (g->burst != cur) {
			if (cur != UINT32_MAX)
				residual_charge(&rs, x, &x->own[th][cur], ct, th);
			cur = g->burst;
			residual_open(&rs, x, &t->bursts[cur], &x->own[th][cur]);
		}
		busy(x, ct, th, g, &rs);
	}
	if (cur != UINT32_MAX)
		residual_charge(&rs, x, &x->own[th][cur], ct, th);
}

int gen_cpu_truth(struct gen_world *w, struct gen_cpu_truth *ct)
{
	struct sim *s = &w->sim;
	struct cpu_ctx *x;
	size_t i;
	int th, err;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->w = w;
	x->n_reqs = w->n_reqs;
	for (i = 0; i < (size_t)w->n_reqs; i++)
		x->end[i] = w->reqs[i].end;
	memset(x->first_io, 0xff, sizeof(x->first_io));
	for (i = 0; i < s->n_ios; i++) {
		const struct sim_io_log *io = &s->ios[i];

		if (io->ts < x->first_io[io->thread][io->req])
			x->first_io[io->thread][io->req] = io->ts;
	}
	/* what the correlator counts as an engine pack's calls: PACK_CALLs but a
	 * compute pool's regions, and in pack mode the steps (emitted as
	 * PACK_BATCH + PACK_CALL DECODE) */
	memset(x->first_pack, 0xff, sizeof(x->first_pack));
	x->proc_first_pack = NEVER;
	for (i = 0; i < s->n_marks; i++) {
		const struct sim_mark_log *m = &s->marks[i];
		bool call =
			(m->kind == RT_EV_PACK_CALL && m->role != 0 && m->role != RT_PACK_REGION) ||
			(w->mode == RT_GEN_PACK &&
			 (m->kind == RT_EV_MARK_STEP_BEGIN || m->kind == RT_EV_MARK_STEP_END));

		if (!call || m->thread < 0)
			continue;
		if (m->ts < x->first_pack[m->thread])
			x->first_pack[m->thread] = m->ts;
		if (m->ts < x->proc_first_pack)
			x->proc_first_pack = m->ts;
	}
	err = marker_intervals(x);
	/* regions first: rule 3 asks whether the engine is busy */
	pool_marks(x);
	if (!err)
		err = burst_owners(x);
	if (!err)
		err = pool_bursts(x);
	for (th = 0; th < s->n_threads && !err; th++)
		if (s->threads[th]->traced)
			thread_truth(x, ct, th);
	for (th = 0; th < SIM_MAX_THREADS; th++) {
		free(x->own[th]);
		free(x->pool_burst[th]);
	}
	free(x);
	return err;
}
