// SPDX-License-Identifier: BSD-2-Clause
/*
 * CPU attribution (docs/spans.md, "CPU attribution").
 *
 * A thread's time is cut into pieces at every scheduler event. Pieces
 * under a marker claim or an engine step go at once to those owners.
 * Other on-CPU and runqueue pieces accumulate in the burst's residual,
 * charged when the burst ends to the burst's owners (rules 2-4), which may
 * have grown during the burst: an engine burst is charged to the requests
 * whose handlers it wakes at its end. When a request ends, every thread
 * holding time for it is settled first, so nothing after its end_ns is
 * charged to it.
 *
 * Comm wait seen by probes (a blocked read on an outbound connection) is
 * held by the reading thread until it next serves requests (wakes their
 * handlers): a step's exchange with a peer belongs to the step's requests,
 * which only show when the step ends.
 *
 * Every on-CPU piece charged to a request is also a slice of its timeline
 * (when the thread ran for it); a burst's residual keeps its stretches for
 * that until it is charged.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define OWNERS_MAX                                                                                 \
	(RT_THREAD_OWNERS_MAX + RT_THREAD_SERVED_MAX + RT_THREAD_MARK_MAX + RT_STEP_MEMBERS_MAX + 1)

enum piece { PIECE_ON, PIECE_RUNQ, PIECE_OFF };

/* the hot head of a thread: what a scheduler record touches, in three lines */
_Static_assert(offsetof(struct rt_thread, resid_runq) == 64, "rt_thread's first line");
_Static_assert(offsetof(struct rt_thread, proc) == 128, "rt_thread's second line");
_Static_assert(offsetof(struct rt_thread, comm_pending) == 192, "rt_thread's third line");

struct rt_thread *rt_thread_get(struct rt_correlator *c, uint32_t tid, uint32_t pid, bool create)
{
	struct rt_thread *t = rt_hmap_get(&c->threads, tid);
	void *mem;

	if (t) {
		if (pid && t->pid != pid) {
			/* tid reused by another process: start over */
			rt_hmap_del(&c->threads, tid);
			rt_thread_free(c, t);
			t = NULL;
		} else {
			return t;
		}
	}
	if (!create || !tid)
		return NULL;
	/*
	 * Line-aligned: the hot fields at its head are the lines a record
	 * touches. By hand from calloc(): aligned_alloc() and a memset cost
	 * twice as much, with threads made and dropped as tids are reused.
	 */
	mem = calloc(1, sizeof(*t) + 63);
	if (!mem)
		return NULL;
	t = (struct rt_thread *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
	t->mem = mem;
	t->tid = tid;
	t->pid = pid;
	if (rt_hmap_put(&c->threads, tid, t)) {
		c->st.dropped_threads++;
		free(mem);
		return NULL;
	}
	return t;
}

static void proc_unlink(struct rt_thread *t)
{
	if (!t->proc)
		return;
	if (t->tprev)
		t->tprev->tnext = t->tnext;
	else
		t->proc->threads = t->tnext;
	if (t->tnext)
		t->tnext->tprev = t->tprev;
	t->proc = NULL;
	t->proc_pack = false;
	t->tnext = t->tprev = NULL;
}

struct rt_proc *rt_thread_proc(struct rt_correlator *c, struct rt_thread *t)
{
	struct rt_proc *p;

	if (t->proc)
		return t->proc;
	p = t->pid ? rt_hmap_get(&c->procs, t->pid) : NULL;
	if (!p)
		return NULL;
	t->proc = p;
	t->proc_pack = p->engine_pack;
	t->tprev = NULL;
	t->tnext = p->threads;
	if (p->threads)
		p->threads->tprev = t;
	p->threads = t;
	return p;
}

void rt_proc_threads_drop(struct rt_proc *p)
{
	while (p->threads)
		proc_unlink(p->threads);
}

/*
 * A record names two threads: load both (their slots, then the head lines
 * every record touches) before working on either, so that their misses
 * overlap rather than follow each other.
 */
static void prefetch_two(struct rt_correlator *c, uint32_t a, uint32_t b, struct rt_thread **pa,
			 struct rt_thread **pb)
{
	struct rt_thread *ta, *tb;

	rt_hmap_prefetch(&c->threads, a);
	rt_hmap_prefetch(&c->threads, b);
	ta = a ? rt_hmap_get(&c->threads, a) : NULL;
	tb = b ? rt_hmap_get(&c->threads, b) : NULL;
	if (ta) {
		__builtin_prefetch(ta, 1);
		__builtin_prefetch((const char *)ta + 64, 1);
		__builtin_prefetch((const char *)ta + 128, 1);
	}
	if (tb) {
		__builtin_prefetch(tb, 1);
		__builtin_prefetch((const char *)tb + 64, 1);
		__builtin_prefetch((const char *)tb + 128, 1);
	}
	*pa = ta;
	*pb = tb;
}

/* rt_thread_known() of a thread already looked up (t: c->threads' entry for its tid, or NULL). */
static struct rt_thread *known(struct rt_correlator *c, struct rt_thread *t, uint32_t pid)
{
	if (!t || t->pid != pid)
		return NULL;
	return rt_thread_proc(c, t) ? t : NULL;
}

/*
 * What `rt_proc_get(c, pid, false) ? rt_thread_get(c, tid, pid, create) :
 * NULL` finds for a thread that exists, without the process lookup once
 * the thread holds its process (a scheduler record names two threads,
 * each with its process: four lookups a record before).
 */
struct rt_thread *rt_thread_known(struct rt_correlator *c, uint32_t tid, uint32_t pid)
{
	return known(c, tid ? rt_hmap_get(&c->threads, tid) : NULL, pid);
}

void rt_thread_free(struct rt_correlator *c, struct rt_thread *t)
{
	(void)c;
	if (!t)
		return;
	proc_unlink(t);
	free(t->step);
	free(t->step_tok);
	free(t->served);
	free(t->grp);
	free(t->pool_runq);
	free(t->mem);
}

void rt_req_touch(struct rt_req *r, uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < r->n_touched; i++)
		if (r->touched[i] == tid)
			return;
	if (r->n_touched < RT_REQ_TOUCHED_MAX)
		r->touched[r->n_touched++] = tid;
	else
		r->span.flags |= RT_SPAN_INCOMPLETE; /* more threads than we can settle */
}

static bool has(const uint64_t *set, uint32_t n, uint64_t v)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (set[i] == v)
			return true;
	return false;
}

static void add_unique(uint64_t *set, uint32_t *n, uint32_t max, uint64_t v)
{
	if (v && !has(set, *n, v) && *n < max)
		set[(*n)++] = v;
}

static bool remove_one(uint64_t *set, uint32_t *n, uint64_t v)
{
	uint32_t i;

	for (i = 0; i < *n; i++) {
		if (set[i] == v) {
			set[i] = set[--(*n)];
			return true;
		}
	}
	return false;
}

/* Rule 1: marker claims and the open step. */
static uint32_t marker_owners(const struct rt_thread *t, uint64_t *out)
{
	uint32_t n = 0, claims, i;

	for (i = 0; i < t->n_mark; i++)
		add_unique(out, &n, OWNERS_MAX, t->mark[i]);
	claims = n;
	/*
	 * A step's members are distinct and never 0 (markers.c and pack.c
	 * add each once): only a claim can repeat one. Checking each against
	 * all before it made an engine thread's every piece quadratic in its
	 * batch. n stays under OWNERS_MAX: 8 claims, 256 members.
	 */
	if (t->in_step)
		for (i = 0; i < t->n_step; i++)
			if (!has(out, claims, t->step[i]))
				out[n++] = t->step[i];
	return n;
}

/* Rules 2-4: I/O owners, the hand-off, requests served in this burst. */
static uint32_t burst_owners(const struct rt_thread *t, uint64_t *out)
{
	uint32_t n = 0, before, i;

	/*
	 * served[] and io[] each hold distinct serials, never 0 (served_add(),
	 * rt_cpu_io_owner()): only across the lists can one repeat.
	 */
	/* an engine-message event loop: the requests this burst handled, when it handled any */
	if (t->msg_loop && t->n_served) {
		memcpy(out, t->served, t->n_served * sizeof(*out));
		return t->n_served;
	}
	memcpy(out, t->io, t->n_io * sizeof(*out));
	n = t->n_io;
	add_unique(out, &n, OWNERS_MAX, t->handoff);
	before = n;
	for (i = 0; i < t->n_served; i++)
		if (!has(out, before, t->served[i]))
			out[n++] = t->served[i];
	return n;
}

struct rt_span_thread *rt_cpu_span_thread(struct rt_req *r, const struct rt_thread *t)
{
	struct rt_span_cpu *cpu = &r->span.cpu;
	uint32_t i = r->span_thread_hint;

	/*
	 * A request's pieces come in runs from one thread: the last one found
	 * is first tried, one line instead of the array's twelve. tids are
	 * unique in the array, so it finds what the scan would.
	 */
	if (i < cpu->n_threads && cpu->threads[i].tid == t->tid)
		return &cpu->threads[i];
	for (i = 0; i < cpu->n_threads; i++)
		if (cpu->threads[i].tid == t->tid) {
			r->span_thread_hint = i;
			return &cpu->threads[i];
		}
	if (cpu->n_threads >= RT_SPAN_THREADS_MAX) {
		cpu->threads_dropped++;
		return NULL;
	}
	r->span_thread_hint = cpu->n_threads;
	cpu->threads[cpu->n_threads].tid = t->tid;
	memcpy(cpu->threads[cpu->n_threads].comm, t->comm, RT_SPAN_COMM_MAX);
	cpu->threads[cpu->n_threads].comm[RT_SPAN_COMM_MAX - 1] = '\0';
	return &cpu->threads[cpu->n_threads++];
}

_Static_assert(RT_SPAN_SLICES_MAX == 32, "the slice tree's layout");

static inline uint64_t slice_len(const struct rt_span_cpu *cpu, uint32_t k)
{
	return cpu->slices[k].end_ns - cpu->slices[k].start_ns;
}

/* The shorter slice of the winners of node v's children; the left (lower index) on a tie. */
static inline uint8_t tt_node(const struct rt_req *r, uint32_t v)
{
	uint32_t a = 2 * v, b = a + 1;
	uint8_t wa = a >= RT_SPAN_SLICES_MAX ? (uint8_t)(a - RT_SPAN_SLICES_MAX) : r->slices_tt[a];
	uint8_t wb = b >= RT_SPAN_SLICES_MAX ? (uint8_t)(b - RT_SPAN_SLICES_MAX) : r->slices_tt[b];

	return slice_len(&r->span.cpu, wb) < slice_len(&r->span.cpu, wa) ? wb : wa;
}

static void tt_build(struct rt_req *r)
{
	for (uint32_t v = RT_SPAN_SLICES_MAX - 1; v >= 1; v--)
		r->slices_tt[v] = tt_node(r, v);
	r->slices_tt_ok = true;
}

/* Slice k changed length: the nodes above it again. */
static void tt_update(struct rt_req *r, uint32_t k)
{
	for (uint32_t v = (k + RT_SPAN_SLICES_MAX) / 2; v >= 1; v /= 2)
		r->slices_tt[v] = tt_node(r, v);
}

void rt_span_slice_add(struct rt_req *r, uint32_t tid, uint64_t from, uint64_t to, bool shared)
{
	struct rt_span_cpu *cpu = &r->span.cpu;
	struct rt_span_slice *sl;
	uint32_t i, k;

	if (to <= from)
		return;
	/*
	 * Two shortcuts that leave the array as the scan below would, from
	 * what it keeps true: slices of one tid and kind never touch, and
	 * r->slices_end is at or after every slice's end. A piece starting
	 * after it touches none. A piece starting inside the last slice, when
	 * that one ends at slices_end, touches only it (another of its kind
	 * ending at or after the piece's start would touch it too): the scan
	 * would take it out and put the union back in its place.
	 */
	if (cpu->n_slices) {
		sl = &cpu->slices[cpu->n_slices - 1];
		if (sl->tid == tid && sl->shared == shared && sl->end_ns == r->slices_end &&
		    from >= sl->start_ns && from <= sl->end_ns) {
			if (to > sl->end_ns) {
				sl->end_ns = r->slices_end = to;
				if (r->slices_tt_ok)
					tt_update(r, cpu->n_slices - 1);
			}
			return;
		}
	}
	if (from > r->slices_end)
		goto place;
	/*
	 * Pieces are cut at every scheduler record: one stretch is one slice.
	 * The piece absorbs every slice it touches (it may join two).
	 */
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
		r->slices_tt_ok = false;
	}
place:
	if (cpu->n_slices >= RT_SPAN_SLICES_MAX) {
		/*
		 * Full: the shortest goes, so scheduler noise cannot crowd out the
		 * work. With a long stream of pieces on a batching engine this
		 * runs for every piece of every member: the tree finds the
		 * shortest (the first of equals, as a scan would) in 5 steps.
		 */
		cpu->slices_dropped++;
		if (!r->slices_tt_ok)
			tt_build(r);
		k = r->slices_tt[1];
		if (to - from <= slice_len(cpu, k))
			return;
		sl = &cpu->slices[k];
	} else {
		k = UINT32_MAX;
		sl = &cpu->slices[cpu->n_slices++];
	}
	sl->start_ns = from;
	sl->end_ns = to;
	sl->tid = tid;
	sl->shared = shared;
	if (k != UINT32_MAX)
		tt_update(r, k);
	if (to > r->slices_end)
		r->slices_end = to;
}

/* The on-CPU stretches of a piece: when it ran (slices), n of them, dropped more. */
struct stretches {
	const struct rt_iv *iv;
	uint32_t n, dropped;
};

/* The live requests of owners[0..n) into reqs (whose clients have not left); their count. */
static uint32_t live_owners(struct rt_correlator *c, const uint64_t *owners, uint32_t n,
			    struct rt_req **reqs)
{
	uint32_t i, live = 0;

	rt_reqs_get(c, owners, n, reqs, true);
	for (i = 0; i < n; i++)
		if (reqs[i] && !reqs[i]->frozen_ns)
			reqs[live++] = reqs[i];
	return live;
}

/* A piece to the live requests reqs[0..live) (live_owners()), split equally. */
static void charge_live(struct rt_correlator *c, struct rt_thread *t, struct rt_req *const *reqs,
			uint32_t live, enum piece kind, int64_t ns, const struct stretches *when)
{
	uint32_t i;

	if (ns <= 0)
		return;
	if (!live) {
		if (kind != PIECE_OFF)
			rt_cpu_unattributed(c, kind == PIECE_ON, ns);
		return;
	}
	for (i = 0; i < live; i++) {
		struct rt_req *r = reqs[i];
		/* an equal split, rounded down: what a piece cannot split evenly is lost */
		int64_t share = ns / live;
		struct rt_span_thread *st = rt_cpu_span_thread(r, t);

		rt_req_touch(r, t->tid);
		switch (kind) {
		case PIECE_ON:
			r->span.cpu.on_cpu_ns += share;
			if (st)
				st->on_cpu_ns += share;
			for (uint32_t k = 0; when && k < when->n; k++)
				rt_span_slice_add(r, t->tid, when->iv[k].from, when->iv[k].to,
						  live > 1);
			if (when)
				r->span.cpu.slices_dropped += when->dropped;
			break;
		case PIECE_RUNQ:
			r->span.cpu.runq_ns += share;
			if (st)
				st->runq_ns += share;
			break;
		case PIECE_OFF:
			r->span.cpu.off_cpu_ns += share;
			break;
		}
		if (st && live > 1)
			st->shared = true;
	}
}

static void charge(struct rt_correlator *c, struct rt_thread *t, const uint64_t *owners, uint32_t n,
		   enum piece kind, int64_t ns, const struct stretches *when)
{
	struct rt_req *reqs[OWNERS_MAX];

	if (ns <= 0)
		return;
	charge_live(c, t, reqs, live_owners(c, owners, n, reqs), kind, ns, when);
}

void rt_cpu_unattributed(struct rt_correlator *c, bool on_cpu, int64_t ns)
{
	if (ns <= 0)
		return;
	c->st.unattributed_cpu_ns += (uint64_t)ns;
	if (on_cpu)
		c->st.unattributed_on_cpu_ns += (uint64_t)ns;
	else
		c->st.unattributed_runq_ns += (uint64_t)ns;
}

/* The on-CPU residual so far, taken (for a message loop's group), with where it ran. */
static struct stretches take_resid(struct rt_thread *t, int64_t *ns, struct rt_iv *span)
{
	struct stretches when = { .iv = t->rslice, .n = t->n_rslice, .dropped = t->rslice_dropped };

	*ns = t->resid_on;
	span->from = t->n_rslice ? t->rslice[0].from : 0;
	span->to = t->n_rslice ? t->rslice[t->n_rslice - 1].to : 0;
	t->resid_on = 0;
	t->n_rslice = t->rslice_dropped = 0;
	return when;
}

/* The carry of t's event group goes to the group's requests. */
static void charge_carry(struct rt_correlator *c, struct rt_thread *t)
{
	struct rt_iv iv = { .from = t->carry_from, .to = t->carry_to };
	struct stretches when = { .iv = &iv, .n = iv.to > iv.from };

	charge(c, t, t->grp, t->n_grp, PIECE_ON, t->grp_carry, &when);
	t->grp_carry = 0;
	t->carry_from = t->carry_to = 0;
}

static void carry_add(struct rt_thread *t, int64_t ns, const struct rt_iv *span)
{
	if (!ns)
		return;
	t->grp_carry += ns;
	if (!t->carry_from || (span->from && span->from < t->carry_from))
		t->carry_from = span->from;
	if (span->to > t->carry_to)
		t->carry_to = span->to;
}

/*
 * The group ends with the burst (or a member's end): what it holds is
 * charged. After a receipt the rest of the burst is its work; after a send
 * it is the loop's own (its next poll), left to the burst's equal split.
 */
static void close_group(struct rt_correlator *c, struct rt_thread *t)
{
	struct rt_iv span;
	struct stretches when;
	int64_t ns;

	if (!t->n_grp)
		return;
	charge_carry(c, t);
	if (t->grp_reads) {
		when = take_resid(t, &ns, &span);
		charge(c, t, t->grp, t->n_grp, PIECE_ON, ns, &when);
	}
	t->n_grp = 0;
}

/* Charge the burst's residual to the burst's owners as they are now. */
static void flush(struct rt_correlator *c, struct rt_thread *t)
{
	uint64_t owners[OWNERS_MAX];
	struct rt_req *reqs[OWNERS_MAX];
	struct stretches when;
	uint32_t n, live;

	close_group(c, t);
	if (!t->resid_on && !t->resid_runq)
		return;
	n = burst_owners(t, owners);
	/* no owner, or only the hand-off: a vLLM API server's executor may hold it */
	if ((!n || (!t->n_io && !t->n_served)) &&
	    rt_vllm_hold(c, t, t->resid_on, t->resid_runq,
			 t->n_rslice ? t->rslice[0].from : t->since - (uint64_t)t->resid_on,
			 t->since)) {
		t->resid_on = t->resid_runq = 0;
		t->n_rslice = t->rslice_dropped = 0;
		return;
	}
	when.iv = t->rslice;
	when.n = t->n_rslice;
	when.dropped = t->rslice_dropped;
	/* both pieces go to the same owners: looked up once */
	live = t->resid_on > 0 || t->resid_runq > 0 ? live_owners(c, owners, n, reqs) : 0;
	charge_live(c, t, reqs, live, PIECE_ON, t->resid_on, &when);
	charge_live(c, t, reqs, live, PIECE_RUNQ, t->resid_runq, NULL);
	t->resid_on = t->resid_runq = 0;
	t->n_rslice = t->rslice_dropped = 0;
}

/* An on-CPU piece goes to the residual: remember when it ran. */
static void resid_slice(struct rt_thread *t, uint64_t from, uint64_t to)
{
	struct rt_iv *last = t->n_rslice ? &t->rslice[t->n_rslice - 1] : NULL;

	if (last && from <= last->to) {
		if (to > last->to)
			last->to = to;
		return;
	}
	if (t->n_rslice >= RT_THREAD_SLICES_MAX) {
		t->rslice_dropped++;
		return;
	}
	t->rslice[t->n_rslice].from = from;
	t->rslice[t->n_rslice].to = to;
	t->n_rslice++;
}

void rt_cpu_account(struct rt_correlator *c, struct rt_thread *t, uint64_t ts)
{
	uint64_t owners[OWNERS_MAX];
	struct rt_iv piece;
	struct stretches when = { .iv = &piece, .n = 1 };
	uint32_t n;
	int64_t d;

	if (t->run == RT_RUN_UNKNOWN || ts <= t->since) {
		if (ts > t->since)
			t->since = ts;
		return;
	}
	d = (int64_t)(ts - t->since);
	piece.from = t->since;
	piece.to = ts;
	t->since = ts;
	n = marker_owners(t, owners);
	switch (t->run) {
	case RT_RUN_ONCPU:
		t->burst_on += d;
		if (n) {
			charge(c, t, owners, n, PIECE_ON, d, &when);
		} else if (rt_pool_charge(c, t, true, d, piece.from, piece.to)) {
			/* a compute pool's thread: charged as it runs (pool.c) */
		} else {
			t->resid_on += d;
			resid_slice(t, piece.from, piece.to);
		}
		break;
	case RT_RUN_RUNNABLE:
		if (n)
			charge(c, t, owners, n, PIECE_RUNQ, d, NULL);
		else if (!rt_pool_charge(c, t, false, d, piece.from, piece.to))
			t->resid_runq += d;
		break;
	case RT_RUN_BLOCKED:
		/* sleeping counts for a thread bound to one request alone */
		if (n == 1 && !t->in_step)
			charge(c, t, owners, 1, PIECE_OFF, d, NULL);
		else if (!n && t->n_io == 1)
			charge(c, t, t->io, 1, PIECE_OFF, d, NULL);
		break;
	case RT_RUN_UNKNOWN:
		break;
	}
}

static void end_burst(struct rt_correlator *c, struct rt_thread *t)
{
	flush(c, t);
	rt_pool_end_burst(t);
	if (t->in_burst)
		t->brief_handoff =
			t->handoff && t->burst_on < (int64_t)RT_HANDOFF_BRIEF_NS ? t->handoff : 0;
	t->burst_on = 0;
	t->in_burst = false;
	t->handoff = 0;
	t->n_served = 0;
}

/*
 * t leaves the CPU at ts having run `runtime` ns in all by the kernel's
 * count. A stint on a CPU can be longer than the CPU time the kernel gave
 * the task: a hypervisor stole the virtual CPU, or (IRQ time accounting)
 * interrupts ran on it. Seen here: 1.3 ms in a 9.5 ms burn. The task
 * waited, runnable, for its CPU back: that time is runqueue, not on-CPU,
 * taken from the stint's last piece and at most that piece (where in the
 * stint it fell is not known, and earlier pieces are charged already: a
 * loss inside a long marker claim stays on-CPU there). The two clocks disagree by tens of
 * microseconds either way on any stint (steal is charged to the runtime
 * clock lazily): below RT_NOT_RUN_MIN_NS that is noise, not a finding.
 */
static void not_run(struct rt_correlator *c, struct rt_thread *t, uint64_t ts, uint64_t runtime)
{
	uint64_t wall, ran, lost;

	if (t->run != RT_RUN_ONCPU || !t->runtime_in || !runtime || runtime < t->runtime_in ||
	    ts <= t->oncpu_ns || ts <= t->since)
		return;
	wall = ts - t->oncpu_ns;
	ran = runtime - t->runtime_in;
	if (ran + RT_NOT_RUN_MIN_NS >= wall)
		return;
	lost = wall - ran;
	if (lost > ts - t->since)
		lost = ts - t->since;
	c->st.not_run_ns += lost;
	rt_cpu_account(c, t, ts - lost);
	t->run = RT_RUN_RUNNABLE;
}

/* Rule 3: t's burst works for request `serial`, if that is still live. */
static void hand_over(struct rt_correlator *c, struct rt_thread *t, uint64_t serial)
{
	struct rt_req *req = serial ? rt_req_get(c, serial) : NULL;

	if (!req || req->frozen_ns)
		return;
	t->handoff = serial;
	rt_req_touch(req, t->tid);
}

/* A switch-in went unrecorded: t is on a CPU from ts, its runtime then unknown. */
static void on_cpu_unseen(struct rt_correlator *c, struct rt_thread *t, uint64_t ts)
{
	c->st.missed_switch_ins++;
	t->run = RT_RUN_ONCPU;
	t->in_burst = true;
	t->oncpu_ns = ts;
	t->runtime_in = 0;
}

/*
 * t comes back on a CPU with no wakeup recorded since it blocked. Seen: a
 * tokenizer's mutex wait, where the holder's wakeup (sched_waking) came
 * while the tokenizer was still on its CPU on its way to sleep; it then
 * switched out "blocked" and was queued by that same wakeup, with no
 * second one. Nothing new was handed over: the brief burst's hand-off
 * goes on, as after a wakeup that hands over nothing (rule 3).
 */
static void resume_unwoken(struct rt_correlator *c, struct rt_thread *t)
{
	uint64_t brief = t->brief_handoff;

	t->brief_handoff = 0;
	if (!t->n_io)
		hand_over(c, t, brief);
	rt_pool_resume_unwoken(c, t);
}

void rt_cpu_on_switch(struct rt_correlator *c, const struct rt_ev_sched_switch *ev)
{
	uint64_t ts = ev->hdr.ts_ns;
	struct rt_thread *t, *t_prev, *t_next;

	uint64_t cpu_last = ev->cpu < RT_CORR_CPUS_MAX ? c->cpu_last_switch[ev->cpu] : 0;

	if (ev->cpu < RT_CORR_CPUS_MAX)
		c->cpu_last_switch[ev->cpu] = ts;
	prefetch_two(c, ev->prev_tid, ev->next_tid, &t_prev, &t_next);
	t = known(c, t_prev, ev->prev_pid);
	if (!t && ev->prev_tid && rt_proc_get(c, ev->prev_pid, false))
		t = rt_thread_get(c, ev->prev_tid, ev->prev_pid, true);
	if (t) {
		memcpy(t->comm, ev->prev_comm, RT_COMM_LEN);
		t->comm[RT_COMM_LEN - 1] = '\0';
		if (t->run == RT_RUN_RUNNABLE || t->run == RT_RUN_BLOCKED) {
			/*
			 * It leaves a CPU we never saw it take: a switch-in went
			 * unrecorded (seen here: the sandbox's pid 1 threads'
			 * switch-outs never reach the tracepoint, and now and
			 * then a switch-in from idle). The kernel's count says
			 * how long it ran since it last left a CPU: the end of
			 * the gap. Without it, it can only have come on after
			 * this CPU's last recorded switch; count it on CPU from
			 * then, the least runqueue we can.
			 */
			uint64_t on = cpu_last, ran;

			if (t->runtime_out && ev->prev_runtime_ns >= t->runtime_out) {
				ran = ev->prev_runtime_ns - t->runtime_out;
				on = ran < ts - t->since ? ts - ran : t->since;
				/* a pool's time is cut as it runs: what was cut as
				 * runqueue after it came on is put right (pool.c) */
				if (ran < ts && ts - ran < t->since)
					rt_pool_runq_was_on(c, t, ts - ran, t->since);
			}
			if (on > t->since && on < ts)
				rt_cpu_account(c, t, on);
			on_cpu_unseen(c, t, t->since);
		}
		not_run(c, t, ts, ev->prev_runtime_ns);
		rt_cpu_account(c, t, ts);
		t->runtime_out = ev->prev_runtime_ns;
		rt_pool_runq_reset(t);
		if (ev->prev_state == RT_TASK_RUNNING) {
			t->run = RT_RUN_RUNNABLE; /* preempted: the burst goes on */
		} else {
			end_burst(c, t);
			t->run = RT_RUN_BLOCKED;
		}
	}
	/* the prev side may have dropped a reused tid's thread: look again then */
	t = t_next && t_next != t_prev ? known(c, t_next, ev->next_pid) :
					 rt_thread_known(c, ev->next_tid, ev->next_pid);
	if (!t && ev->next_tid && rt_proc_get(c, ev->next_pid, false))
		t = rt_thread_get(c, ev->next_tid, ev->next_pid, true);
	if (t) {
		memcpy(t->comm, ev->next_comm, RT_COMM_LEN);
		t->comm[RT_COMM_LEN - 1] = '\0';
		rt_cpu_account(c, t, ts);
		rt_pool_runq_reset(t);
		if (t->run == RT_RUN_BLOCKED)
			resume_unwoken(c, t);
		t->run = RT_RUN_ONCPU;
		t->in_burst = true;
		t->oncpu_ns = ts;
		t->runtime_in = ev->next_runtime_ns;
	}
}

/* Rule 3's view of the waker: its single owner by rules 2 and 3, or 0. */
static uint64_t handoff_owner(const struct rt_thread *w)
{
	uint64_t one = 0;
	uint32_t i;

	if (w->msg_loop && w->n_served) { /* the requests this burst handled (burst_owners) */
		for (i = 0; i < w->n_served; i++) {
			if (one && one != w->served[i])
				return 0;
			one = w->served[i];
		}
		return one;
	}
	for (i = 0; i < w->n_io; i++) {
		if (one && one != w->io[i])
			return 0;
		one = w->io[i];
	}
	if (w->handoff) {
		if (one && one != w->handoff)
			return 0;
		one = w->handoff;
	}
	return one;
}

/* Grown by doubling: a thread-per-connection server has thousands of
 * threads that each serve one request a burst, an engine a few that serve many. */
static int served_add(struct rt_thread *t, uint64_t serial)
{
	if (t->n_served == t->served_cap && t->served_cap < RT_THREAD_SERVED_MAX) {
		uint32_t cap = t->served_cap ? t->served_cap * 2 : 4;
		uint64_t *p;

		if (cap > RT_THREAD_SERVED_MAX)
			cap = RT_THREAD_SERVED_MAX;
		p = realloc(t->served, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->served = p;
		t->served_cap = cap;
	}
	add_unique(t->served, &t->n_served, t->served_cap, serial);
	return 0;
}

/* w serves r: r gets the comm wait w holds (once per exchange group). */
static void serve_comm(struct rt_thread *w, struct rt_req *r)
{
	if (!w->comm_pending || r->comm_group == w->comm_group)
		return;
	r->comm_group = w->comm_group;
	if (r->span.first_token_ns)
		r->comm_after_ft += w->comm_pending;
	else
		r->comm_before_ft += w->comm_pending;
	r->comm_seen = true;
	for (uint32_t i = 0; i < w->n_comm_iv; i++)
		rt_req_comm_piece(r, w->comm_iv[i].from, w->comm_iv[i].to);
	r->comm_iv_dropped += w->comm_iv_dropped;
	w->comm_served = true;
}

/*
 * In a process whose engine a pack reads, its calls name the engine's
 * threads: one that never made them (and does no I/O of its own) is the
 * runtime's, and neither rule 3 nor rule 4 gives it a request.
 */
static bool runtime_thread(struct rt_correlator *c, const struct rt_thread *t)
{
	const struct rt_proc *p;

	if (t->engine_calls || t->n_io)
		return false;
	p = rt_thread_proc(c, (struct rt_thread *)t);
	return p && t->proc_pack;
}

void rt_cpu_on_waking(struct rt_correlator *c, const struct rt_ev_sched_waking *ev)
{
	uint64_t ts = ev->hdr.ts_ns, r_w, brief;
	struct rt_thread *t, *w = NULL;
	struct rt_req *req;

	prefetch_two(c, ev->target_tid, ev->hdr.tid, &t, &w);
	t = known(c, t, ev->target_pid);
	if (!t) {
		if (!ev->target_tid || !rt_proc_get(c, ev->target_pid, true))
			return;
		t = rt_thread_get(c, ev->target_tid, ev->target_pid, true);
		if (!t)
			return;
	}
	rt_cpu_account(c, t, ts);
	/*
	 * The kernel emits sched_waking only for a task in a sleeping state; one
	 * we still see on CPU had decided to sleep and had not switched out yet:
	 * its burst ended there.
	 */
	end_burst(c, t);
	brief = t->brief_handoff;
	t->brief_handoff = 0;
	if (t->run != RT_RUN_ONCPU)
		t->run = RT_RUN_RUNNABLE;
	t->in_burst = true;

	if (ev->hdr.tid && ev->hdr.tid != ev->target_tid) {
		/* looked up before the target's side, which may have dropped
		 * only the target's tid: w stands */
		w = known(c, w, ev->hdr.pid);
		/* not known as this pid's: a reused tid's stale thread goes */
		if (!w && rt_proc_get(c, ev->hdr.pid, false))
			w = rt_thread_get(c, ev->hdr.tid, ev->hdr.pid, false);
	} else {
		w = NULL; /* woken by itself or by nobody known: no waker */
	}
	if (!w) {
		rt_pool_on_wake(c, t, NULL);
		return;
	}
	/* rule 4: w wakes a thread that works for one request alone: w serves it */
	if (t->n_io == 1 && (req = rt_req_get(c, t->io[0])) && !req->frozen_ns &&
	    !runtime_thread(c, w)) {
		if (!served_add(w, req->serial))
			rt_req_touch(req, w->tid);
		serve_comm(w, req);
	}
	/*
	 * rule 3: the woken burst belongs to the waker's single owner, unless
	 * the woken thread works for requests of its own by I/O: a handler
	 * woken by another handler releasing a lock is not handed its request
	 */
	r_w = t->n_io ? 0 : handoff_owner(w);
	/*
	 * A waker inside a step or a parallel region works for the step's
	 * requests (rule 1), whatever burst it is in: the request that woke
	 * the engine before a run of steps (its rule-3 owner) is not what it
	 * hands to the pool worker it wakes for each region. Seen: a passive
	 * OpenMP worker charged, step after step, to the request whose
	 * enqueue had woken the engine 15 ms earlier, not to the three
	 * requests in those steps.
	 */
	if (r_w && rt_pool_engine_busy(w))
		r_w = 0;
	/*
	 * A thread handed R that blocked again before doing R's work (a
	 * condition variable's wakeup, then its mutex, held by a third thread):
	 * the lock's holder hands over nothing, and the thread still works for R.
	 */
	if (!r_w && !t->n_io)
		r_w = brief;
	/*
	 * The runtime's thread is handed nothing (unattributed, unless the pool
	 * rule takes it). Seen: V8's GC workers, woken by node's JS thread as
	 * it allocates while it works for one request, charged 21-368 ms a
	 * run; and by rule 4, waking the JS thread back, 32 ms more.
	 */
	if (r_w && !t->n_io && runtime_thread(c, t))
		r_w = 0;
	hand_over(c, t, r_w);
	/* after rule 3: a burst handed a request is that request's, not the pool's */
	rt_pool_on_wake(c, t, w);
}

void rt_cpu_on_own_record(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	struct rt_thread *t;

	switch (ev->kind) {
	case RT_EV_SOCK_ACCEPT:
	case RT_EV_SOCK_CONNECT:
	case RT_EV_SOCK_RECV:
	case RT_EV_SOCK_SEND:
	case RT_EV_SOCK_CLOSE:
	case RT_EV_SOCK_SHUTDOWN:
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END:
	case RT_EV_MARK_STEP_BEGIN:
	case RT_EV_MARK_STEP_END:
	case RT_EV_CUDA_API_ENTER:
	case RT_EV_CUDA_API_EXIT:
	case RT_EV_NCCL_ENTER:
	case RT_EV_NCCL_EXIT:
	case RT_EV_PACK_CALL:
	case RT_EV_PACK_BATCH:
		break;
	default:
		return;
	}
	t = ev->tid ? rt_hmap_get(&c->threads, ev->tid) : NULL;
	if (!t || t->pid != ev->pid || (t->run != RT_RUN_RUNNABLE && t->run != RT_RUN_BLOCKED) ||
	    ev->ts_ns < t->since)
		return;
	/*
	 * Its switch-in went unrecorded (seen: a tokenizer woken, then marking
	 * its tokenize phase, with no switch-in between). Charging its work to
	 * the runqueue until its switch-out would turn a whole burn into a
	 * wait: it is on CPU from its first record on.
	 */
	rt_cpu_account(c, t, ev->ts_ns);
	on_cpu_unseen(c, t, ev->ts_ns);
}

void rt_cpu_on_exit(struct rt_correlator *c, uint32_t tid, uint64_t ts)
{
	struct rt_thread *t = rt_hmap_get(&c->threads, tid);

	if (!t)
		return;
	rt_cpu_account(c, t, ts);
	end_burst(c, t);
	rt_hmap_del(&c->threads, tid);
	rt_thread_free(c, t);
}

void rt_cpu_forget(struct rt_thread *t, uint64_t serial)
{
	uint32_t i;

	remove_one(t->io, &t->n_io, serial);
	if (t->served)
		remove_one(t->served, &t->n_served, serial);
	if (t->grp)
		remove_one(t->grp, &t->n_grp, serial);
	if (t->handoff == serial)
		t->handoff = 0;
	if (t->brief_handoff == serial)
		t->brief_handoff = 0;
	if (t->in_step)
		remove_one(t->step, &t->n_step, serial);
	for (i = 0; i < t->n_mark; i++) {
		if (t->mark[i] == serial) {
			t->mark[i] = t->mark[t->n_mark - 1];
			t->mark_phase[i] = t->mark_phase[t->n_mark - 1];
			t->n_mark--;
			i--;
		}
	}
}

void rt_cpu_claim_begins(struct rt_correlator *c, struct rt_thread *t, uint64_t serial)
{
	/*
	 * The thread has moved on to another request's work (a tokenizer
	 * working through a backlog): the request that woke it no longer owns
	 * what it does between claims. Seen: 0.5 ms of such gaps charged to the
	 * first request of a backlog.
	 */
	if (!t->handoff || t->handoff == serial)
		return;
	flush(c, t);
	t->handoff = 0;
}

void rt_cpu_flush_for(struct rt_correlator *c, struct rt_req *r, uint64_t ts)
{
	uint32_t i;

	for (i = 0; i < r->n_touched; i++) {
		struct rt_thread *t = rt_hmap_get(&c->threads, r->touched[i]);

		if (!t)
			continue;
		rt_cpu_account(c, t, ts);
		flush(c, t); /* the residual so far, r still among the owners */
		rt_cpu_forget(t, r->serial);
	}
}

void rt_cpu_io_owner(struct rt_correlator *c, struct rt_thread *t, struct rt_req *r, uint64_t ts)
{
	/*
	 * Its bytes were handled in this burst. A read counts as a send: what
	 * follows the read callback is other tasks' steps as often as this
	 * request's (the last of a wave of 16 got the wave's batching, +70%).
	 */
	if (t->msg_loop)
		rt_cpu_loop_serves(c, t, r, ts, false);
	if (r->frozen_ns || has(t->io, t->n_io, r->serial))
		return;
	if (t->n_io >= RT_THREAD_OWNERS_MAX) {
		r->span.flags |= RT_SPAN_INCOMPLETE;
		return;
	}
	t->io[t->n_io++] = r->serial;
	rt_req_touch(r, t->tid);
}

/*
 * A message loop's burst is cut at the events that name requests, and each
 * piece goes to the requests whose work it was (docs/spans.md, "vLLM"):
 * the piece after an engine output message to the requests it carried,
 * since the loop detokenizes them next; the piece before any other event
 * (an ADD sent, a request's bytes read or written) to its request, since
 * the loop built it first; the rest of a burst after a send, the loop's
 * own, to the burst's equal split. The equal split over the whole burst
 * gave single requests errors of -38% to +67% at concurrency 16.
 */
void rt_cpu_loop_serves(struct rt_correlator *c, struct rt_thread *t, struct rt_req *r, uint64_t ts,
			bool reads)
{
	struct rt_iv span;
	int64_t ns;

	if (r->frozen_ns)
		return;
	t->msg_loop = true;
	if (!served_add(t, r->serial))
		rt_req_touch(r, t->tid);
	if (!t->grp && !(t->grp = calloc(RT_THREAD_SERVED_MAX, sizeof(*t->grp))))
		return; /* the burst's residual is split over what it served, at its end */
	if (t->n_grp && ts == t->grp_ts && reads == t->grp_reads) {
		add_unique(t->grp, &t->n_grp, RT_THREAD_SERVED_MAX, r->serial);
		return;
	}
	rt_cpu_account(c, t, ts);
	take_resid(t, &ns, &span);
	if (t->n_grp && t->grp_reads) {
		/* what the receipt's requests were worked on, up to this event */
		carry_add(t, ns, &span);
		charge_carry(c, t);
	} else {
		/* a send's group keeps what led up to it; what follows leads to the next */
		charge_carry(c, t);
		carry_add(t, ns, &span);
	}
	t->n_grp = 0;
	add_unique(t->grp, &t->n_grp, RT_THREAD_SERVED_MAX, r->serial);
	t->grp_ts = ts;
	t->grp_reads = reads;
}

void rt_cpu_comm_wait(struct rt_correlator *c, struct rt_thread *t, uint64_t enter, uint64_t exit)
{
	(void)c;
	if (exit <= enter)
		return;
	/* a new exchange after the last one was handed out starts a new group */
	if (t->comm_served || !t->comm_pending) {
		t->comm_pending = 0;
		t->comm_served = false;
		t->comm_group = ++c->next_serial;
		t->n_comm_iv = t->comm_iv_dropped = 0;
	}
	t->comm_pending += (int64_t)(exit - enter);
	if (t->n_comm_iv < RT_THREAD_COMM_IV_MAX) {
		t->comm_iv[t->n_comm_iv].from = enter;
		t->comm_iv[t->n_comm_iv].to = exit;
		t->n_comm_iv++;
	} else {
		t->comm_iv_dropped++;
	}
}

static int cmp_tid(const void *a, const void *b)
{
	const struct rt_span_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

void rt_cpu_sort_threads(struct rt_span_cpu *cpu)
{
	uint32_t i, j;

	/* at most RT_SPAN_THREADS_MAX, tids unique: the order qsort gives, without its calls */
	for (i = 1; i < cpu->n_threads; i++) {
		struct rt_span_thread x = cpu->threads[i];

		for (j = i; j > 0 && cmp_tid(&cpu->threads[j - 1], &x) > 0; j--)
			cpu->threads[j] = cpu->threads[j - 1];
		cpu->threads[j] = x;
	}
}

uint32_t rt_cpu_owners(const struct rt_thread *t, uint64_t *out, uint32_t max)
{
	uint64_t all[OWNERS_MAX];
	uint32_t n = marker_owners(t, all), i;

	if (!n)
		n = burst_owners(t, all);
	for (i = 0; i < n && i < max; i++)
		out[i] = all[i];
	return i;
}
