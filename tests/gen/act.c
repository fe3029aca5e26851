// SPDX-License-Identifier: BSD-2-Clause
/* Small helpers that queue actions on a simulated thread (model.h). */
#include "model.h"

#define RECV_BUF 4096 /* a server's read buffer */

void gen_mark(struct gen_world *w, struct sim_thread *t, uint16_t kind, uint32_t phase, int req)
{
	struct sim_act *a;

	if (w->mode != RT_GEN_MARKERS)
		return;
	a = sim_push(&w->sim, t, SIM_ACT_MARK);
	a->mark_kind = kind;
	a->phase = phase;
	a->req = req;
}

void gen_mark_step(struct gen_world *w, struct sim_thread *t, uint16_t kind, uint64_t step,
		   uint32_t mask)
{
	struct sim_act *a;

	/* pack mode: logged as a step (the CPU truth's step claim), emitted as llama_decode */
	if (w->mode == RT_GEN_ZERO)
		return;
	a = sim_push(&w->sim, t, SIM_ACT_MARK);
	a->mark_kind = kind;
	a->step_id = step;
	a->mask = mask;
}

void gen_pack_call(struct gen_world *w, struct sim_thread *t, uint16_t role, uint32_t ret, int req)
{
	struct sim_act *a;

	if (w->mode != RT_GEN_PACK)
		return;
	a = sim_push(&w->sim, t, SIM_ACT_MARK);
	a->mark_kind = RT_EV_PACK_CALL;
	a->role = role;
	a->phase = ret;
	a->req = req;
}

void gen_burn(struct gen_world *w, struct sim_thread *t, uint64_t lo, uint64_t hi)
{
	sim_push(&w->sim, t, SIM_ACT_BURN)->ns = sim_range(&w->sim, lo, hi);
}

void gen_call(struct gen_world *w, struct sim_thread *t, sim_cb fn, int req, long arg)
{
	struct sim_act *a = sim_push(&w->sim, t, SIM_ACT_CALL);

	a->done = fn;
	a->req = req;
	a->arg = arg;
}

void gen_wake(struct gen_world *w, struct sim_thread *t, int target, uint32_t reason)
{
	struct sim_act *a = sim_push(&w->sim, t, SIM_ACT_WAKE);

	a->target = target;
	a->reason = reason;
}

void gen_wait(struct gen_world *w, struct sim_thread *t, uint32_t reason, int fd, sim_cond cond)
{
	struct sim_act *a = sim_push(&w->sim, t, SIM_ACT_WAIT);

	a->reason = reason;
	a->fd = fd;
	a->cond = cond;
}

struct sim_act *gen_send(struct gen_world *w, struct sim_thread *t, int fd, uint16_t syscall,
			 struct gen_str *b, int req, sim_cb done)
{
	struct sim_act *a = sim_push(&w->sim, t, SIM_ACT_SEND);

	if (b->err && !w->sim.err)
		w->sim.err = b->err;
	a->fd = fd;
	a->syscall = syscall;
	a->req = req;
	a->done = done;
	a->data_len = (uint32_t)b->len;
	sim_tx_append(&w->sim, b->p, b->len, &a->data_off);
	gs_free(b);
	return a;
}

struct sim_act *gen_recv(struct gen_world *w, struct sim_thread *t, int fd, uint16_t syscall,
			 sim_cb done)
{
	struct sim_act *a = sim_push(&w->sim, t, SIM_ACT_RECV);

	a->fd = fd;
	a->syscall = syscall;
	a->data_len = RECV_BUF;
	a->done = done;
	return a;
}

bool gen_never(struct sim *s, struct sim_thread *t)
{
	(void)s;
	(void)t;
	return false;
}
