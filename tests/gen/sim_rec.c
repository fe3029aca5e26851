// SPDX-License-Identifier: BSD-2-Clause
/*
 * Builds the records BPF would emit for the simulated events (the
 * timestamps and fields of docs/events.md). Every record is zero-filled
 * first: padding bytes end up in fixtures that must be byte-identical.
 */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_emit(struct sim *s, const void *rec, size_t len, uint8_t src, int cpu)
{
	struct rt_event_hdr *h;
	struct sim_rec *r;
	size_t cap;
	void *p;

	if (s->n_recs == s->cap_recs) {
		cap = s->cap_recs ? s->cap_recs * 2 : 1024;
		p = realloc(s->recs, cap * sizeof(*s->recs));
		if (!p)
			goto nomem;
		s->recs = p;
		s->cap_recs = cap;
	}
	if (s->recs_len + len > s->recs_cap) {
		cap = s->recs_cap ? s->recs_cap : 65536;
		while (cap < s->recs_len + len)
			cap *= 2;
		p = realloc(s->recs_bytes, cap);
		if (!p)
			goto nomem;
		s->recs_bytes = p;
		s->recs_cap = cap;
	}
	memcpy(s->recs_bytes + s->recs_len, rec, len);
	h = (struct rt_event_hdr *)(s->recs_bytes + s->recs_len);
	h->source = src;
	r = &s->recs[s->n_recs];
	r->ts = h->ts_ns;
	r->off = s->recs_len;
	r->len = (uint16_t)len;
	r->seq = (uint32_t)s->n_recs;
	r->src = src;
	r->cpu = (uint8_t)(cpu >= 0 ? cpu : 0);
	s->n_recs++;
	s->recs_len += len;
	return 0;
nomem:
	if (!s->err)
		s->err = -ENOMEM;
	return -ENOMEM;
}

void sim_hdr(struct rt_event_hdr *h, uint16_t kind, size_t size, uint64_t ts, uint32_t pid,
	     uint32_t tid)
{
	h->kind = kind;
	h->size = (uint16_t)size;
	h->ts_ns = ts;
	h->pid = pid;
	h->tid = tid;
}

static void comm_of(const struct sim *s, int idx, int cpu, char *out)
{
	if (idx < 0)
		snprintf(out, RT_COMM_LEN, "swapper/%d", cpu);
	else
		memcpy(out, s->threads[idx]->comm, RT_COMM_LEN);
}

int sim_emit_switch(struct sim *s, int cpu, int prev, uint32_t prev_state, int next)
{
	const struct sim_thread *p = prev >= 0 ? s->threads[prev] : NULL;
	const struct sim_thread *n = next >= 0 ? s->threads[next] : NULL;
	struct rt_ev_sched_switch r;

	if (!(p && p->traced) && !(n && n->traced))
		return 0;
	memset(&r, 0, sizeof(r));
	sim_hdr(&r.hdr, RT_EV_SCHED_SWITCH, sizeof(r), s->now, p ? p->pid : 0, p ? p->tid : 0);
	r.prev_pid = p ? p->pid : 0;
	r.prev_tid = p ? p->tid : 0;
	r.next_pid = n ? n->pid : 0;
	r.next_tid = n ? n->tid : 0;
	r.prev_state = prev_state;
	r.cpu = cpu;
	comm_of(s, prev, cpu, r.prev_comm);
	comm_of(s, next, cpu, r.next_comm);
	return sim_emit(s, &r, sizeof(r), SIM_SRC_BPF, cpu);
}

int sim_emit_waking(struct sim *s, int waker, int target, int cpu)
{
	const struct sim_thread *w = waker >= 0 ? s->threads[waker] : NULL;
	const struct sim_thread *t = s->threads[target];
	struct rt_ev_sched_waking r;

	if (!t->traced)
		return 0;
	memset(&r, 0, sizeof(r));
	sim_hdr(&r.hdr, RT_EV_SCHED_WAKING, sizeof(r), s->now, w ? w->pid : 0, w ? w->tid : 0);
	r.target_pid = t->pid;
	r.target_tid = t->tid;
	r.target_cpu = cpu;
	return sim_emit(s, &r, sizeof(r), s->src_waking, w ? w->cpu : cpu);
}

int sim_emit_task_new(struct sim *s, struct sim_thread *parent, struct sim_thread *child)
{
	struct rt_ev_task_new r;

	memset(&r, 0, sizeof(r));
	sim_hdr(&r.hdr, RT_EV_TASK_NEW, sizeof(r), s->now, parent->pid, parent->tid);
	r.child_pid = child->pid;
	r.child_tid = child->tid;
	/* pthread_create: CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID */
	r.clone_flags = 0x3d0f00;
	/* a new thread carries its parent's name until it calls prctl(PR_SET_NAME) */
	memcpy(r.comm, parent->comm, RT_COMM_LEN);
	return sim_emit(s, &r, sizeof(r), SIM_SRC_BPF, parent->cpu);
}

int sim_emit_exit(struct sim *s, struct sim_thread *t)
{
	struct rt_ev_proc_exit r;

	memset(&r, 0, sizeof(r));
	sim_hdr(&r.hdr, RT_EV_PROC_EXIT, sizeof(r), s->now, t->pid, t->tid);
	memcpy(r.comm, t->comm, RT_COMM_LEN);
	return sim_emit(s, &r, sizeof(r), SIM_SRC_BPF, t->cpu);
}

int sim_emit_conn(struct sim *s, struct sim_thread *t, uint16_t kind, const struct sim_sock *so,
		  uint64_t enter, int listen_fd)
{
	struct rt_ev_sock_conn r;

	memset(&r, 0, sizeof(r));
	sim_hdr(&r.hdr, kind, sizeof(r), s->now, t->pid, t->tid);
	r.enter_ns = enter;
	r.ret = kind == RT_EV_SOCK_ACCEPT ? so->fd : 0;
	r.fd = so->fd;
	r.listen_fd = listen_fd;
	r.local = so->local;
	r.peer = so->peer;
	return sim_emit(s, &r, sizeof(r), SIM_SRC_BPF, t->cpu);
}

int sim_emit_close(struct sim *s, struct sim_thread *t, uint64_t enter, int fd)
{
	struct rt_ev_sock_close r;

	memset(&r, 0, sizeof(r));
	sim_hdr(&r.hdr, RT_EV_SOCK_CLOSE, sizeof(r), s->now, t->pid, t->tid);
	r.enter_ns = enter;
	r.ret = 0;
	r.fd = fd;
	return sim_emit(s, &r, sizeof(r), SIM_SRC_BPF, t->cpu);
}

/* The probe's capture: all of a transfer that fits in head + tail, else its head and its tail. */
int sim_emit_io(struct sim *s, struct sim_thread *t, uint16_t kind, const struct sim_sock *so,
		uint16_t syscall, uint64_t enter, int64_t ret, const uint8_t *data)
{
	_Alignas(8) uint8_t
		buf[sizeof(struct rt_ev_sock_io) + RT_SOCK_HEAD_DEFAULT + RT_SOCK_TAIL_DEFAULT + 8];
	struct rt_ev_sock_io *r = (void *)buf;
	size_t head = 0, tail = 0, size;

	if (ret > 0 && ret <= RT_SOCK_HEAD_DEFAULT + RT_SOCK_TAIL_DEFAULT) {
		head = (size_t)ret;
	} else if (ret > 0) {
		head = RT_SOCK_HEAD_DEFAULT;
		tail = RT_SOCK_TAIL_DEFAULT;
	}
	size = RT_EVENT_SIZE_ALIGN(sizeof(*r) + head + tail);
	memset(buf, 0, size);
	sim_hdr(&r->hdr, kind, size, s->now, t->pid, t->tid);
	r->enter_ns = enter;
	r->ret = ret;
	r->fd = so->fd;
	r->syscall = syscall;
	r->head_len = (uint16_t)head;
	r->tail_len = (uint16_t)tail;
	r->local = so->local;
	r->peer = so->peer;
	if (head)
		memcpy(r->data, data, head);
	if (tail)
		memcpy(r->data + head, data + ret - (int64_t)tail, tail);
	return sim_emit(s, buf, size, SIM_SRC_BPF, t->cpu);
}

int sim_emit_arrival(struct sim *s, struct sim_thread *t, const struct sim_sock *so,
		     uint64_t data_ns, uint32_t flags)
{
	struct rt_ev_sock_arrival r;

	memset(&r, 0, sizeof(r));
	sim_hdr(&r.hdr, RT_EV_SOCK_ARRIVAL, sizeof(r), s->now, t->pid, t->tid);
	r.data_ns = data_ns;
	r.established_ns = so->established_ns;
	r.fd = so->fd;
	r.flags = flags;
	return sim_emit(s, &r, sizeof(r), SIM_SRC_BPF, t->cpu);
}

static int log_mark(struct sim *s, struct sim_thread *t, const struct sim_act *a)
{
	struct sim_mark_log *m;
	size_t cap;
	void *p;

	if (s->n_marks == s->cap_marks) {
		cap = s->cap_marks ? s->cap_marks * 2 : 256;
		p = realloc(s->marks, cap * sizeof(*s->marks));
		if (!p)
			return -ENOMEM;
		s->marks = p;
		s->cap_marks = cap;
	}
	m = &s->marks[s->n_marks++];
	m->ts = s->now;
	m->thread = t->idx;
	m->kind = a->mark_kind;
	m->phase = (uint16_t)a->phase;
	m->role = a->role;
	m->req = a->req;
	m->mask = a->mask;
	m->step_id = a->step_id;
	return 0;
}

static void copy_id(struct sim *s, int req, char *out, uint32_t *len)
{
	const char *id = s->req_id(s->req_ctx, req);
	size_t n = strlen(id);

	if (n > RT_ID_LEN - 1)
		n = RT_ID_LEN - 1;
	memcpy(out, id, n);
	if (len)
		*len = (uint32_t)n;
}

/* An engine context pointer (llama_context *): one context, a plausible heap address. */
#define SIM_PACK_CTX 0x55d0c0a1f2e0LL

/* A step in pack mode: llama_decode's batch and entry, or its return (retval 0). */
static int emit_pack_step(struct sim *s, struct sim_thread *t, const struct sim_act *a)
{
	struct rt_ev_pack_batch b;
	struct rt_ev_pack_call pc;
	int err;

	memset(&pc, 0, sizeof(pc));
	sim_hdr(&pc.hdr, RT_EV_PACK_CALL, sizeof(pc), s->now, t->pid, t->tid);
	pc.role = RT_PACK_DECODE;
	pc.args[0] = SIM_PACK_CTX;
	if (a->mark_kind == RT_EV_MARK_STEP_END) {
		pc.ret = 1;
		return sim_emit(s, &pc, sizeof(pc), SIM_SRC_BPF, t->cpu);
	}
	memset(&b, 0, sizeof(b));
	sim_hdr(&b.hdr, RT_EV_PACK_BATCH, sizeof(b), s->now, t->pid, t->tid);
	s->pack_batch(s->req_ctx, a->step_id, &b);
	err = sim_emit(s, &b, sizeof(b), SIM_SRC_BPF, t->cpu);
	if (!err)
		err = sim_emit(s, &pc, sizeof(pc), SIM_SRC_BPF, t->cpu);
	return err;
}

int sim_emit_mark(struct sim *s, struct sim_thread *t, const struct sim_act *a)
{
	struct rt_ev_mark m;
	struct rt_ev_mark_step st;
	uint32_t n = (uint32_t)__builtin_popcount(a->mask), idx = 0;
	int err, i;

	err = log_mark(s, t, a);
	if (err)
		goto out;
	if (a->mark_kind == RT_EV_PACK_CALL) {
		/* a pack's uprobe: a parallel region (GOMP_parallel), or in pack
		 * mode llama_tokenize or llama_memory_seq_rm; phase = entry 0 / return 1 */
		struct rt_ev_pack_call pc;

		memset(&pc, 0, sizeof(pc));
		sim_hdr(&pc.hdr, RT_EV_PACK_CALL, sizeof(pc), s->now, t->pid, t->tid);
		pc.role = a->role ? a->role : RT_PACK_REGION;
		pc.ret = (uint16_t)a->phase;
		if (a->role == RT_PACK_SEQ_RM) {
			/* the whole sequence: llama_memory_seq_rm(mem, seq, -1, -1) */
			pc.args[0] = s->pack_seq(s->req_ctx, a->req);
			pc.args[1] = -1;
			pc.args[2] = -1;
		}
		return sim_emit(s, &pc, sizeof(pc), SIM_SRC_BPF, t->cpu);
	}
	if (s->pack &&
	    (a->mark_kind == RT_EV_MARK_STEP_BEGIN || a->mark_kind == RT_EV_MARK_STEP_END))
		return emit_pack_step(s, t, a);
	if (a->mark_kind == RT_EV_MARK_BEGIN || a->mark_kind == RT_EV_MARK_END) {
		memset(&m, 0, sizeof(m));
		sim_hdr(&m.hdr, a->mark_kind, sizeof(m), s->now, t->pid, t->tid);
		m.phase = a->phase;
		copy_id(s, a->req, m.request_id, &m.id_len);
		return sim_emit(s, &m, sizeof(m), s->src_mark, t->cpu);
	}
	memset(&st, 0, sizeof(st));
	sim_hdr(&st.hdr, a->mark_kind, sizeof(st), s->now, t->pid, t->tid);
	st.step_id = a->step_id;
	if (a->mark_kind == RT_EV_MARK_STEP_END)
		return sim_emit(s, &st, sizeof(st), s->src_mark, t->cpu);
	st.n_requests = n;
	err = sim_emit(s, &st, sizeof(st), s->src_mark, t->cpu);
	/* one MEMBER per listed id, same ts, in list order */
	for (i = 0; i < 32 && !err; i++) {
		if (!(a->mask & (1u << i)))
			continue;
		memset(&st, 0, sizeof(st));
		sim_hdr(&st.hdr, RT_EV_MARK_STEP_MEMBER, sizeof(st), s->now, t->pid, t->tid);
		st.step_id = a->step_id;
		st.n_requests = n;
		st.index = idx++;
		copy_id(s, i, st.request_id, NULL);
		err = sim_emit(s, &st, sizeof(st), s->src_mark, t->cpu);
	}
out:
	if (err && !s->err)
		s->err = err;
	return err;
}
