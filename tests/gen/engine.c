// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tokenizer (one request at a time, woken by a handler) and the engine
 * loop (continuous batching: steps of launch, optional peer exchange,
 * device time asleep, sampling; then it wakes the batch's handlers).
 * Marker calls sit where an instrumented engine would make them.
 */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define US 1000ULL
#define MS 1000000ULL

/* ---- tokenizer ---- */

static bool cond_tok_inbox(struct sim *s, struct sim_thread *t)
{
	(void)t;
	return gen_world_of(s)->tok_n > 0;
}

static void tok_done(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);

	(void)t;
	w->reqs[a->req].tokenized = true;
	w->eng_inbox[w->eng_in_n++] = a->req;
}

void gen_tok_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);
	int r;

	if (!w->tok_n) {
		gen_wait(w, t, SIM_W_INBOX, -1, cond_tok_inbox);
		return;
	}
	r = w->tok_inbox[0];
	memmove(w->tok_inbox, w->tok_inbox + 1, --w->tok_n * sizeof(w->tok_inbox[0]));
	/* QUEUE intervals begin on one thread and end on the next one in the chain */
	gen_mark(w, t, RT_EV_MARK_END, RT_PHASE_QUEUE, r);
	gen_mark(w, t, RT_EV_MARK_BEGIN, RT_PHASE_TOKENIZE, r);
	gen_pack_call(w, t, RT_PACK_TOKENIZE, 0, r);
	gen_burn(w, t, 700 * US + w->reqs[r].cfg->prompt_len * 2 * US,
		 1200 * US + w->reqs[r].cfg->prompt_len * 2 * US);
	gen_pack_call(w, t, RT_PACK_TOKENIZE, 1, r);
	gen_mark(w, t, RT_EV_MARK_END, RT_PHASE_TOKENIZE, r);
	gen_mark(w, t, RT_EV_MARK_BEGIN, RT_PHASE_QUEUE, r);
	gen_call(w, t, tok_done, r, 0);
	/* only an engine idle on its inbox is woken; one in a step finds the request later */
	gen_wake(w, t, w->th_eng, SIM_W_INBOX);
}

/* ---- engine -------------------------------------------------------------------------------------- */

static bool cond_eng_inbox(struct sim *s, struct sim_thread *t)
{
	(void)t;
	return gen_world_of(s)->eng_in_n > 0;
}

static void peer_reply(struct sim *s, uint64_t unused, uint64_t step)
{
	char msg[64];

	(void)unused;
	memset(msg, 0, sizeof(msg));
	snprintf(msg, sizeof(msg), "ALLREDUCE-DONE step=%llu", (unsigned long long)step);
	sim_sock_arrive(s, GEN_PEER_FD, msg, sizeof(msg));
}

static void eng_on_peer_send(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);

	(void)t;
	(void)a;
	sim_timer(s, s->now + sim_range(s, w->sc->comm_lo, w->sc->comm_hi), peer_reply, 0, w->step);
}

/* The blocked peer read of a step counts for every request of the batch. */
static void eng_on_comm(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);
	uint32_t mask = (uint32_t)a->arg;
	int i;

	(void)t;
	for (i = 0; i < w->n_reqs; i++) {
		struct gen_req *r = &w->reqs[i];

		if (!(mask & (1u << i)) || r->n_comm == GEN_MAX_STEPS)
			continue;
		r->comm[r->n_comm++] = (struct gen_interval){ a->enter_ns, s->now };
	}
}

static void eng_step_start(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	(void)t;
	(void)a;
	gen_world_of(s)->step_t0 = s->now;
}

static void eng_token(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);
	struct gen_req *r = &w->reqs[a->req];

	(void)t;
	if (!r->produced) {
		r->first_prod_ns = s->now;
		r->prefill_ns = s->now - w->step_t0;
	}
	r->produced += (int)a->arg;
	if (r->produced == r->cfg->n_tokens) {
		r->finished = true;
		r->last_prod_ns = s->now;
	}
}

/* ---- compute pools (gen_scenario.pool) ---- */

#define RT_PACK_CALL_ENTRY 0
#define RT_PACK_CALL_RETURN 1

static void disp_spawn(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	(void)t;
	(void)a;
	gen_world_of(s)->disp_alive = true;
}

static void disp_exits(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);

	(void)t;
	(void)a;
	w->disp_alive = false;
}

static void pool_kick(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	(void)t;
	(void)a;
	gen_world_of(s)->pool_kicks++;
}

/*
 * A parallel region (GOMP_parallel under a pack's uprobe, in both modes):
 * its entry creates the spinning worker the first time and wakes the
 * sleeping one; the step's compute burn runs inside it.
 */
static void pool_region(struct gen_world *w, struct sim_thread *t, uint32_t ret)
{
	struct sim_act *a = sim_push(&w->sim, t, SIM_ACT_MARK);

	a->mark_kind = RT_EV_PACK_CALL;
	a->phase = ret;
	if (ret != RT_PACK_CALL_ENTRY)
		return;
	if (!w->spinner_born) {
		w->spinner_born = true;
		sim_push(&w->sim, t, SIM_ACT_TASK_NEW)->target = w->th_spinner;
	}
	/* ggml without a threadpool: a thread per region, joined at its end */
	gen_call(w, t, disp_spawn, -1, 0);
	sim_push(&w->sim, t, SIM_ACT_TASK_NEW)->target = w->th_disp;
	gen_call(w, t, pool_kick, -1, 0);
	gen_wake(w, t, w->th_sleeper, SIM_W_INBOX);
}

static bool cond_disp_joined(struct sim *s, struct sim_thread *t)
{
	(void)t;
	return !gen_world_of(s)->disp_alive;
}

/* The region's end: the disposable worker is joined first. */
static void pool_region_end(struct gen_world *w, struct sim_thread *t)
{
	gen_wait(w, t, SIM_W_JOIN, -1, cond_disp_joined);
	pool_region(w, t, RT_PACK_CALL_RETURN);
}

static bool cond_pool_work(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);

	(void)t;
	return w->pool_kicks != w->pool_taken;
}

static bool pool_over(const struct gen_world *w)
{
	return w->conns_closed == w->n_conns;
}

/* ggml's threadpool, PyTorch intra-op: asleep until the engine's region wakes it. */
void gen_sleeper_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);

	if (w->pool_kicks == w->pool_taken) {
		gen_wait(w, t, SIM_W_INBOX, -1, cond_pool_work);
		return;
	}
	w->pool_taken = w->pool_kicks;
	gen_burn(w, t, 150 * US, 350 * US);
}

/*
 * libgomp with an active wait policy: computes and spins without sleeping
 * on anything the engine does; the timer interrupts between its chunks
 * stand for preemptions. It stops once every client is gone.
 */
void gen_spinner_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);

	if (pool_over(w)) {
		gen_wait(w, t, 0, -1, gen_never);
		return;
	}
	gen_burn(w, t, 400 * US, 900 * US);
	sim_push(s, t, SIM_ACT_SLEEP)->ns = sim_range(s, 300 * US, 1500 * US);
}

/* A disposable worker: created by the region, computes, wakes its joiner and exits. */
void gen_disp_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);

	gen_burn(w, t, 100 * US, 250 * US);
	gen_call(w, t, disp_exits, -1, 0);
	gen_wake(w, t, w->th_eng, SIM_W_JOIN);
	sim_push(s, t, SIM_ACT_EXIT);
}

/* A runtime's GC or I/O thread: woken by its timers, never engine work. */
void gen_runtime_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);

	if (pool_over(w)) {
		gen_wait(w, t, 0, -1, gen_never);
		return;
	}
	gen_burn(w, t, 100 * US, 300 * US);
	sim_push(s, t, SIM_ACT_SLEEP)->ns = sim_range(s, 1500 * US, 3000 * US);
}

/* ---- engine pack mode ---- */

/* Taken from the inbox (FIFO): the lowest free sequence id, freed ones reused. */
static void pk_take(struct gen_world *w, struct gen_req *r)
{
	int q = 0;

	while (w->pk_seq_used & (1u << q))
		q++;
	w->pk_seq_used |= 1u << q;
	r->pk_seq = q;
	r->pk_pos = 0;
	w->pk_fresh[w->n_pk_fresh++] = r->idx;
}

static void pk_entry(struct gen_pk_step *st, struct gen_req *r, int k)
{
	struct rt_pack_seq *e = &st->seqs[st->n];

	st->req[st->n++] = r->idx;
	e->seq_id = r->pk_seq;
	e->pos_min = r->pk_pos;
	if (!r->steps_fed) {
		/* the whole prompt in one chunk: logits on its last token only */
		e->n_tokens = (uint32_t)r->prompt_tokens;
		e->n_logits = 1;
	} else {
		/* the token(s) sampled last, each with an output (a draft's several) */
		e->n_tokens = (uint32_t)k;
		e->n_logits = (uint32_t)k;
	}
	e->pos_max = e->pos_min + (int32_t)e->n_tokens - 1;
	r->pk_pos += (int)e->n_tokens;
	r->steps_fed++;
}

/*
 * The batch of step w->step: running members by index, then the new ones
 * in the order they were taken (hand-off order, as the correlator joins).
 */
static int pk_batch(struct gen_world *w, uint32_t batch, uint32_t fresh, const int *ntok)
{
	struct gen_pk_step *st;
	size_t cap;
	void *p;
	int i, j;

	if (w->step >= w->cap_pk_steps) {
		cap = w->cap_pk_steps ? w->cap_pk_steps * 2 : 64;
		while (cap <= w->step)
			cap *= 2;
		p = realloc(w->pk_steps, cap * sizeof(*w->pk_steps));
		if (!p) {
			w->sim.err = -ENOMEM;
			return -ENOMEM;
		}
		w->pk_steps = p;
		memset(w->pk_steps + w->cap_pk_steps, 0,
		       (cap - w->cap_pk_steps) * sizeof(*w->pk_steps));
		w->cap_pk_steps = cap;
	}
	st = &w->pk_steps[w->step];
	w->n_pk_steps = w->step + 1;
	for (i = 0; i < w->n_reqs; i++)
		if ((batch & ~fresh) & (1u << i))
			pk_entry(st, &w->reqs[i], ntok[i]);
	for (j = 0; j < w->n_pk_fresh; j++)
		pk_entry(st, &w->reqs[w->pk_fresh[j]], ntok[w->pk_fresh[j]]);
	w->n_pk_fresh = 0;
	return 0;
}

/* One engine loop iteration: drop aborted, take new requests, run one step. */
void gen_eng_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);
	uint32_t fresh, batch;
	struct sim_act *a;
	int i, nb, ntok[GEN_MAX_REQS];

	if (!w->eng_ready) {
		w->eng_ready = true;
		gen_burn(w, t, 100 * US, 200 * US);
		if (w->sc->comm) {
			a = sim_push(s, t, SIM_ACT_CONNECT);
			a->fd = GEN_PEER_FD;
		}
		return;
	}
	for (i = 0; i < w->n_reqs; i++) {
		struct gen_req *r = &w->reqs[i];

		if (!(w->eng_running & (1u << i)))
			continue;
		if (r->eng_abort && r->open_phase >= 0)
			gen_mark(w, t, RT_EV_MARK_END, (uint32_t)r->open_phase, i);
		if (r->eng_abort || r->planned == r->cfg->n_tokens) {
			r->open_phase = -1;
			w->eng_running &= ~(1u << i);
			/* the slot is released: its whole sequence is cleared */
			if (w->mode == RT_GEN_PACK && r->pk_seq >= 0) {
				gen_pack_call(w, t, RT_PACK_SEQ_RM, 0, i);
				w->pk_seq_used &= ~(1u << r->pk_seq);
			}
		}
	}
	while (w->eng_in_n) {
		i = w->eng_inbox[0];
		memmove(w->eng_inbox, w->eng_inbox + 1, --w->eng_in_n * sizeof(w->eng_inbox[0]));
		w->eng_waiting |= 1u << i;
		if (w->mode == RT_GEN_PACK)
			pk_take(w, &w->reqs[i]);
		gen_burn(w, t, 8 * US, 15 * US);
	}
	if (!w->eng_running && !w->eng_waiting) {
		gen_wait(w, t, SIM_W_INBOX, -1, cond_eng_inbox);
		return;
	}
	/* continuous batching: everything waiting joins at this step boundary */
	fresh = w->eng_waiting;
	w->eng_waiting = 0;
	for (i = 0; i < w->n_reqs; i++) {
		if (fresh & (1u << i)) {
			gen_mark(w, t, RT_EV_MARK_END, RT_PHASE_QUEUE, i);
			gen_burn(w, t, 4 * US, 8 * US);
		}
	}
	w->eng_running |= fresh;
	batch = w->eng_running;
	nb = __builtin_popcount(batch);
	w->step++;
	gen_call(w, t, eng_step_start, -1, 0);
	gen_mark_step(w, t, RT_EV_MARK_STEP_BEGIN, w->step, batch);
	for (i = 0; i < w->n_reqs; i++) {
		if (fresh & (1u << i)) {
			gen_mark(w, t, RT_EV_MARK_BEGIN, RT_PHASE_PREFILL, i);
			w->reqs[i].open_phase = RT_PHASE_PREFILL;
		}
	}
	if (w->sc->pool)
		pool_region(w, t, RT_PACK_CALL_ENTRY);
	gen_burn(w, t, 100 * US + nb * 25 * US + (fresh ? 150 * US : 0),
		 160 * US + nb * 25 * US + (fresh ? 150 * US : 0));
	if (w->sc->pool)
		pool_region_end(w, t);
	if (w->sc->comm) {
		struct gen_str msg = { 0 };

		for (i = 0; i < w->n_reqs; i++) {
			if (batch & (1u << i)) {
				gen_mark(w, t, RT_EV_MARK_END, (uint32_t)w->reqs[i].open_phase, i);
				gen_mark(w, t, RT_EV_MARK_BEGIN, RT_PHASE_COMM_WAIT, i);
			}
		}
		gs_printf(&msg, "ALLREDUCE step=%-40llu", (unsigned long long)w->step);
		gs_put(&msg, "\n", 1);
		gen_send(w, t, GEN_PEER_FD, RT_SYS_SENDMSG, &msg, -1, eng_on_peer_send);
		gen_recv(w, t, GEN_PEER_FD, RT_SYS_RECVMSG, eng_on_comm)->arg = (long)batch;
		for (i = 0; i < w->n_reqs; i++) {
			if (batch & (1u << i)) {
				gen_mark(w, t, RT_EV_MARK_END, RT_PHASE_COMM_WAIT, i);
				gen_mark(w, t, RT_EV_MARK_BEGIN, (uint32_t)w->reqs[i].open_phase,
					 i);
			}
		}
	}
	/* device time: the engine sleeps in a sync until the GPU interrupt */
	a = sim_push(s, t, SIM_ACT_SLEEP);
	if (fresh)
		a->ns = sim_range(s, 5 * MS, 9 * MS) + __builtin_popcount(fresh) * MS;
	else
		a->ns = sim_range(s, 2500 * US, 4500 * US) + (nb - 1) * 400 * US;
	gen_burn(w, t, 40 * US + nb * 10 * US, 70 * US + nb * 10 * US);
	for (i = 0; i < w->n_reqs; i++) {
		struct gen_req *r = &w->reqs[i];
		bool first, last;
		int k = 1;

		if (!(batch & (1u << i)))
			continue;
		r->steps++;
		if (r->cfg->spec_every && r->steps % r->cfg->spec_every == 0 &&
		    r->planned + 2 <= r->cfg->n_tokens)
			k = 2; /* a speculated token was accepted */
		first = r->planned == 0;
		r->planned += k;
		last = r->planned == r->cfg->n_tokens;
		ntok[i] = k;
		if (first) {
			gen_mark(w, t, RT_EV_MARK_END, RT_PHASE_PREFILL, i);
			r->open_phase = -1;
			if (!last) {
				gen_mark(w, t, RT_EV_MARK_BEGIN, RT_PHASE_DECODE, i);
				r->open_phase = RT_PHASE_DECODE;
			}
		} else if (last) {
			gen_mark(w, t, RT_EV_MARK_END, RT_PHASE_DECODE, i);
			r->open_phase = -1;
		}
	}
	if (w->mode == RT_GEN_PACK && pk_batch(w, batch, fresh, ntok))
		return;
	for (i = 0; i < w->n_reqs; i++) {
		if (batch & (1u << i)) {
			gen_call(w, t, eng_token, i, ntok[i]);
			gen_wake(w, t, w->conns[w->reqs[i].conn].handler, SIM_W_TOKENS);
		}
	}
	gen_mark_step(w, t, RT_EV_MARK_STEP_END, w->step, 0);
}
