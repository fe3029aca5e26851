// SPDX-License-Identifier: BSD-2-Clause
/*
 * Marker records → exact phase intervals and thread ownership
 * (docs/spans.md: "Markers" and CPU attribution rule 1).
 *
 * Request phases are intervals of the request, whichever threads begin and
 * end them (QUEUE begins on the handler and ends on the tokenizer). Only
 * RECEIVE, TOKENIZE, PRE_FIRST_TOKEN, POSTPROCESS and OTHER claim the
 * calling thread: work one thread does for one request. QUEUE and COMM_WAIT
 * are waiting; PREFILL and DECODE are engine work for a whole batch, whose
 * thread time reaches requests through step markers.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool claims_thread(uint32_t phase)
{
	return phase == RT_PHASE_RECEIVE || phase == RT_PHASE_TOKENIZE ||
	       phase == RT_PHASE_POSTPROCESS || phase == RT_PHASE_OTHER ||
	       phase == RT_PHASE_PRE_FIRST_TOKEN;
}

static void keep_interval(struct rt_req *r, uint32_t phase, uint64_t from, uint64_t to)
{
	struct rt_req_iv *iv = r->n_mark_iv < RT_REQ_MARK_IV_MAX ? rt_req_iv_get(r) : NULL;

	if (iv) {
		iv->mark_iv[r->n_mark_iv].from = from;
		iv->mark_iv[r->n_mark_iv].to = to;
		iv->mark_iv_phase[r->n_mark_iv] = (uint8_t)phase;
		r->n_mark_iv++;
		return;
	}
	/* beyond the array only the extent is kept: overlap tests get coarser,
	 * and the timeline counts the interval as dropped */
	r->mark_iv_dropped[phase]++;
	if (!r->mark_iv_min || from < r->mark_iv_min)
		r->mark_iv_min = from;
	if (to > r->mark_iv_max)
		r->mark_iv_max = to;
}

/* Copy a marker id out of a record: the producer is untrusted. */
static void id_of(char *out, const char *in)
{
	memcpy(out, in, RT_ID_LEN);
	out[RT_ID_LEN - 1] = '\0';
}

static struct rt_req *resolve(struct rt_correlator *c, const char *raw)
{
	char id[RT_ID_LEN];
	struct rt_req *r;
	void *serial;

	id_of(id, raw);
	if (!id[0])
		return NULL;
	r = rt_req_by_id(c, id);
	if (r)
		return r;
	serial = rt_hmap_get(&c->binds, rt_hash_str(id));
	return serial ? rt_req_get(c, (uint64_t)(uintptr_t)serial) : NULL;
}

static void thread_claim(struct rt_correlator *c, struct rt_req *r, uint32_t phase, uint32_t tid,
			 uint32_t pid, uint64_t ts)
{
	struct rt_thread *t = rt_thread_get(c, tid, pid, true);

	if (!t || r->frozen_ns)
		return;
	rt_cpu_account(c, t, ts);
	rt_cpu_claim_begins(c, t, r->serial);
	if (t->n_mark >= RT_THREAD_MARK_MAX) {
		r->span.flags |= RT_SPAN_INCOMPLETE;
		return;
	}
	t->mark[t->n_mark] = r->serial;
	t->mark_phase[t->n_mark] = (uint8_t)phase;
	t->n_mark++;
	r->mark_tid[phase] = tid;
	rt_req_touch(r, tid);
}

static void thread_release(struct rt_correlator *c, struct rt_req *r, uint32_t phase, uint64_t ts)
{
	struct rt_thread *t;
	uint32_t i;

	if (!r->mark_tid[phase])
		return;
	t = rt_hmap_get(&c->threads, r->mark_tid[phase]);
	r->mark_tid[phase] = 0;
	if (!t)
		return;
	rt_cpu_account(c, t, ts);
	for (i = 0; i < t->n_mark; i++) {
		if (t->mark[i] == r->serial && t->mark_phase[i] == phase) {
			t->n_mark--;
			t->mark[i] = t->mark[t->n_mark];
			t->mark_phase[i] = t->mark_phase[t->n_mark];
			return;
		}
	}
}

static void close_interval(struct rt_req *r, uint32_t phase, uint64_t ts)
{
	uint64_t from = r->mark_open[phase];
	uint32_t p;

	if (!from)
		return;
	r->mark_open[phase] = 0;
	if (from < r->span.start_ns)
		from = r->span.start_ns;
	if (ts <= from)
		return;
	r->mark_total[phase] += (int64_t)(ts - from);
	keep_interval(r, phase, from, ts);
	if (phase != RT_PHASE_COMM_WAIT)
		return;
	/* comm wait inside prefill/decode is taken out of them (design) */
	for (p = 0; p < RT_PHASE__COUNT; p++) {
		uint64_t pf = r->mark_open[p];

		if (p == RT_PHASE_COMM_WAIT || !pf)
			continue;
		if (p != RT_PHASE_PREFILL && p != RT_PHASE_DECODE && p != RT_PHASE_PRE_FIRST_TOKEN)
			continue;
		r->mark_comm_in[p] += (int64_t)(ts - (pf > from ? pf : from));
	}
}

void rt_marker_close_all(struct rt_req *r, uint64_t ts)
{
	uint32_t p;

	/* comm wait first, so that it is taken out of the phases it sat in */
	close_interval(r, RT_PHASE_COMM_WAIT, ts);
	for (p = 0; p < RT_PHASE__COUNT; p++)
		close_interval(r, p, ts);
}

static void on_mark(struct rt_correlator *c, const struct rt_ev_mark *ev)
{
	struct rt_req *r = resolve(c, ev->request_id);
	uint64_t ts = ev->hdr.ts_ns;
	uint32_t phase = ev->phase;

	/* backlog is before the server read the request: no marker can know it */
	if (phase >= RT_PHASE__COUNT || phase == RT_PHASE_BACKLOG) {
		c->st.invalid_events++;
		return;
	}
	if (!r) {
		if (ev->hdr.kind == RT_EV_MARK_BEGIN)
			c->st.orphan_markers++;
		return;
	}
	r->last_activity = ts;
	if (ev->hdr.kind == RT_EV_MARK_BEGIN) {
		r->mark_seen |= 1u << phase;
		if (!r->mark_open[phase])
			r->mark_open[phase] = ts;
		if (claims_thread(phase) && !r->mark_tid[phase])
			thread_claim(c, r, phase, ev->hdr.tid, ev->hdr.pid, ts);
	} else {
		close_interval(r, phase, ts);
		thread_release(c, r, phase, ts);
	}
}

static void on_step(struct rt_correlator *c, const struct rt_ev_mark_step *ev)
{
	struct rt_thread *t = rt_thread_get(c, ev->hdr.tid, ev->hdr.pid, true);
	uint64_t ts = ev->hdr.ts_ns;
	struct rt_req *r;
	uint32_t i;

	if (!t)
		return;
	switch (ev->hdr.kind) {
	case RT_EV_MARK_STEP_BEGIN:
		rt_cpu_account(c, t, ts);
		if (!t->step && !(t->step = calloc(RT_STEP_MEMBERS_MAX, sizeof(*t->step))))
			return;
		t->in_step = true;
		t->step_src = RT_STEP_MARKER;
		t->step_id = ev->step_id;
		t->n_step = 0;
		t->n_step_tok = 0;
		t->step_last_slot = -1;
		break;
	case RT_EV_MARK_STEP_MEMBER:
		if (!t->in_step || t->step_id != ev->step_id) {
			c->st.orphan_markers++;
			return;
		}
		/* a STEP_TOKENS record of this index may follow: it finds the slot here */
		t->step_last_index = ev->index;
		t->step_last_slot = -1;
		r = resolve(c, ev->request_id);
		if (!r) {
			c->st.orphan_markers++;
			return;
		}
		if (r->frozen_ns)
			return; /* its client left: the engine's work is not its any more */
		/* members share the step's timestamp: no time passes here */
		for (i = 0; i < t->n_step; i++)
			if (t->step[i] == r->serial)
				return;
		if (t->n_step < RT_STEP_MEMBERS_MAX) {
			t->step_last_slot = (int32_t)t->n_step;
			t->step[t->n_step++] = r->serial;
			r->span.steps_source = RT_PSRC_MARKER;
			rt_req_touch(r, t->tid);
			r->last_activity = ts;
		}
		break;
	case RT_EV_MARK_STEP_END:
		if (!t->in_step || t->step_id != ev->step_id)
			return;
		rt_cpu_account(c, t, ts);
		t->in_step = false;
		t->n_step = 0;
		break;
	}
}

/*
 * The tokens the member just listed advances in the step: weights for the
 * step's GPU work (gpu.c). A count for a member that was not kept (unknown
 * id, listed twice, beyond the bound) is ignored.
 */
static void on_step_tokens(struct rt_correlator *c, const struct rt_ev_mark_step_tokens *ev)
{
	struct rt_thread *t = rt_hmap_get(&c->threads, ev->hdr.tid);

	if (!t || t->pid != ev->hdr.pid || !t->in_step || t->step_id != ev->step_id ||
	    t->step_last_index != ev->index || t->step_last_slot < 0)
		return;
	if (!t->step_tok && !(t->step_tok = calloc(RT_STEP_MEMBERS_MAX, sizeof(*t->step_tok))))
		return;
	t->step_tok[t->step_last_slot] = ev->tokens;
	t->step_last_slot = -1;
	t->n_step_tok++;
}

static void on_bind(struct rt_correlator *c, const struct rt_ev_mark_bind *ev)
{
	char engine[RT_ID_LEN];
	struct rt_req *r = resolve(c, ev->request_id);
	uint64_t key;

	id_of(engine, ev->engine_id);
	if (!r || !engine[0]) {
		c->st.orphan_markers++;
		return;
	}
	key = rt_hash_str(engine);
	if (r->bind_key && r->bind_key != key)
		rt_hmap_del(&c->binds, r->bind_key);
	if (rt_hmap_put(&c->binds, key, (void *)(uintptr_t)r->serial) == 0)
		r->bind_key = key;
}

void rt_marker_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	/* a step or a queue changes what the engine works for: pools first (pool.c) */
	rt_pool_cut(c, ev->ts_ns);
	switch (ev->kind) {
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END:
		on_mark(c, (const struct rt_ev_mark *)ev);
		break;
	case RT_EV_MARK_STEP_BEGIN:
	case RT_EV_MARK_STEP_MEMBER:
	case RT_EV_MARK_STEP_END:
		on_step(c, (const struct rt_ev_mark_step *)ev);
		break;
	case RT_EV_MARK_BIND:
		on_bind(c, (const struct rt_ev_mark_bind *)ev);
		break;
	case RT_EV_MARK_STEP_TOKENS:
		on_step_tokens(c, (const struct rt_ev_mark_step_tokens *)ev);
		break;
	}
}
