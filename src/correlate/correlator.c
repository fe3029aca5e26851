// SPDX-License-Identifier: BSD-2-Clause
/*
 * The correlator's front: event dispatch, processes and target groups,
 * the request table, span emission and late amendment.
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/event_check.h"
#include "internal.h"
#include "pack.h"
#include "vllm.h"

#define DEFAULT_IDLE_NS (300ULL * 1000000000ULL)
#define TIMEOUT_SCAN_NS 1000000000ULL

/* snprintf(dst, size, "%s", src) without its ~600 instructions: per request */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t l = strnlen(src, size - 1);

	memcpy(dst, src, l);
	dst[l] = '\0';
}

/* Decimal digits of v at the end of buf[..end): where they start. */
static char *put_u32(char *end, uint32_t v)
{
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

/* "pid:fd:0" as snprintf("%u:%d:0") writes it, truncated to size like it */
static void default_id(char *dst, size_t size, uint32_t pid, int32_t fd)
{
	char buf[32], *end = buf + sizeof(buf), *q;

	*--end = '\0';
	q = end;
	*--q = '0';
	*--q = ':';
	q = put_u32(q, fd < 0 ? 0U - (uint32_t)fd : (uint32_t)fd);
	if (fd < 0)
		*--q = '-';
	*--q = ':';
	q = put_u32(q, pid);
	copy_str(dst, size, q);
}

struct rt_proc *rt_proc_get(struct rt_correlator *c, uint32_t pid, bool create)
{
	struct rt_proc *p;

	if (!pid)
		return NULL;
	p = rt_hmap_get(&c->procs, pid);
	if (p || !create)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	snprintf(p->group, sizeof(p->group), "pid:%u", pid);
	if (rt_hmap_put(&c->procs, pid, p)) {
		c->st.dropped_procs++;
		free(p);
		return NULL;
	}
	/* in group 0 until told otherwise: no engine set changes */
	return p;
}

static void group_link(struct rt_correlator *c, struct rt_proc *p)
{
	struct rt_proc *head;

	if (!p->group_id)
		return;
	head = rt_hmap_get(&c->groups, p->group_id);
	if (rt_hmap_put(&c->groups, p->group_id, p)) {
		c->groups_lost = true; /* the engine set falls back to the table scan */
		return;
	}
	p->gprev = NULL;
	p->gnext = head;
	if (head)
		head->gprev = p;
	p->glinked = true;
}

static void group_unlink(struct rt_correlator *c, struct rt_proc *p)
{
	if (!p->glinked)
		return;
	if (p->gprev)
		p->gprev->gnext = p->gnext;
	else if (p->gnext)
		rt_hmap_put(&c->groups, p->group_id, p->gnext); /* replaces: cannot fail */
	else
		rt_hmap_del(&c->groups, p->group_id);
	if (p->gnext)
		p->gnext->gprev = p->gprev;
	p->gnext = p->gprev = NULL;
	p->glinked = false;
}

void rt_proc_drop(struct rt_correlator *c, struct rt_proc *p)
{
	struct rt_req *r;

	if (!p)
		return;
	group_unlink(c, p);
	rt_proc_threads_drop(p);
	while ((r = p->reqs) != NULL) {
		p->reqs = r->pnext;
		r->proc = NULL;
		r->pnext = r->pprev = NULL;
		c->orphan_reqs++;
	}
}

/* Requests of p may have joined or left the engine sets of its group. */
static void group_changed(struct rt_correlator *c, struct rt_proc *p)
{
	if (p->group_id)
		c->group_ver[p->group_id % RT_GROUP_VER_SLOTS]++;
	else
		p->set_ver++; /* without a group, only its own set holds them */
}

void rt_proc_free(struct rt_proc *p)
{
	if (!p)
		return;
	rt_engine_set_free(p->eset);
	free(p);
}

void rt_req_set_changed(struct rt_correlator *c, const struct rt_req *r)
{
	struct rt_proc *p = rt_proc_get(c, r->pid, false);

	if (p)
		group_changed(c, p);
	else
		c->procs_ver++;
}

void rt_reqs_get(struct rt_correlator *c, const uint64_t *serials, uint32_t n, struct rt_req **out,
		 bool cpu)
{
	uint32_t i;

	if (n == 1) {
		out[0] = rt_req_get(c, serials[0]);
		return;
	}
	for (i = 0; i < n; i++)
		rt_hmap_prefetch(&c->reqs, serials[i]);
	for (i = 0; i < n; i++) {
		struct rt_req *r = rt_req_get(c, serials[i]);

		out[i] = r;
		if (!r)
			continue;
		__builtin_prefetch(r, 1);
		if (cpu) {
			__builtin_prefetch(&r->span.cpu.on_cpu_ns, 1);
			__builtin_prefetch(&r->span.cpu.n_threads, 1);
			__builtin_prefetch(&r->span.cpu.n_slices, 1);
		}
	}
}

struct rt_req *rt_req_by_id(struct rt_correlator *c, const char *id)
{
	struct rt_req *r = rt_hmap_get(&c->req_ids, rt_hash_str(id));

	/* the key is a hash of untrusted text: check it is really this id */
	return r && !strcmp(r->span.request_id, id) ? r : NULL;
}

void rt_req_set_id(struct rt_correlator *c, struct rt_req *r, const char *id)
{
	copy_str(r->span.request_id, sizeof(r->span.request_id), id);
	if (rt_hmap_put(&c->req_ids, rt_hash_str(r->span.request_id), r))
		c->st.dropped_requests++; /* still traced, only markers cannot find it */
}

struct rt_req_iv *rt_req_iv_get(struct rt_req *r)
{
	if (!r->iv)
		r->iv = malloc(sizeof(*r->iv));
	return r->iv;
}

struct rt_req *rt_req_new(struct rt_correlator *c, struct rt_conn *conn, uint64_t start_ns)
{
	struct rt_proc *p = rt_proc_get(c, conn->pid, false);
	/* the span is set by rt_span_init: zeroing it twice was ~6 KB per request */
	struct rt_req *r = malloc(sizeof(*r));

	if (!r)
		return NULL;
	memset(r, 0, offsetof(struct rt_req, span));
	r->serial = ++c->next_serial;
	if (rt_hmap_put(&c->reqs, r->serial, r)) {
		c->st.dropped_requests++;
		free(r);
		return NULL;
	}
	rt_span_init(&r->span);
	if (p) {
		r->proc = p;
		r->pnext = p->reqs;
		if (p->reqs)
			p->reqs->pprev = r;
		p->reqs = r;
	} else {
		c->orphan_reqs++;
	}
	r->conn_serial = conn->serial;
	r->pid = conn->pid;
	r->fd = conn->fd;
	r->last_activity = start_ns;
	r->id_slot = -1;
	r->span.start_ns = start_ns;
	r->span.pid = conn->pid;
	copy_str(r->span.conn, sizeof(r->span.conn), conn->desc);
	if (p) {
		copy_str(r->span.group, sizeof(r->span.group), p->group);
		copy_str(r->span.comm, sizeof(r->span.comm), p->comm);
	}
	conn->seq++;
	return r;
}

static void release(struct rt_correlator *c, struct rt_req *r)
{
	uint64_t id_key = rt_hash_str(r->span.request_id);

	rt_req_set_changed(c, r);
	if (!r->proc) {
		c->orphan_reqs--;
	} else {
		if (r->pprev)
			r->pprev->pnext = r->pnext;
		else
			r->proc->reqs = r->pnext;
		if (r->pnext)
			r->pnext->pprev = r->pprev;
	}
	if (rt_hmap_get(&c->req_ids, id_key) == r)
		rt_hmap_del(&c->req_ids, id_key);
	if (r->bind_key && (uint64_t)(uintptr_t)rt_hmap_get(&c->binds, r->bind_key) == r->serial)
		rt_hmap_del(&c->binds, r->bind_key);
	rt_hmap_del(&c->reqs, r->serial);
	rt_gpu_release(r);
	free(r->pack);
	free(r->vllm);
	free(r->gaps);
	free(r->iv);
	free(r);
}

void rt_req_discard(struct rt_correlator *c, struct rt_req *r, uint64_t ts)
{
	uint32_t i;

	for (i = 0; i < r->n_touched; i++) {
		struct rt_thread *t = rt_hmap_get(&c->threads, r->touched[i]);

		if (t) {
			rt_cpu_account(c, t, ts);
			rt_cpu_forget(t, r->serial);
		}
	}
	release(c, r);
}

static void emit(struct rt_correlator *c, const struct rt_span *s, bool amended)
{
	if (amended)
		c->st.spans_amended++;
	else
		c->st.spans++;
	if (c->o.on_span)
		c->o.on_span(s, c->o.ctx);
}

static void remember(struct rt_correlator *c, const struct rt_span *s)
{
	struct rt_recent *slot = &c->recent[c->recent_head];

	slot->used = true;
	slot->span = *s;
	c->recent_head = (c->recent_head + 1) % c->o.recent_spans;
}

void rt_req_end(struct rt_correlator *c, struct rt_req *r, uint64_t end_ns, enum rt_outcome outcome)
{
	struct rt_proc *p;

	if (r->ended)
		return;
	/* compute pools worked for r until now: their time so far is charged with r in */
	rt_pool_cut(c, end_ns < r->span.start_ns ? r->span.start_ns : end_ns);
	r->ended = true;
	rt_req_set_changed(c, r);
	if (end_ns < r->span.start_ns)
		end_ns = r->span.start_ns;
	r->span.end_ns = end_ns;
	rt_cpu_flush_for(c, r, end_ns);
	rt_marker_close_all(r, end_ns);
	rt_gpu_finish(c, r);
	rt_vllm_end(c, r);
	r->span.outcome = outcome;
	p = rt_proc_get(c, r->pid, false);
	if (p) {
		copy_str(r->span.group, sizeof(r->span.group), p->group);
		if (p->comm[0])
			copy_str(r->span.comm, sizeof(r->span.comm), p->comm);
	}
	if (!r->span.request_id[0])
		default_id(r->span.request_id, sizeof(r->span.request_id), r->pid, r->fd);
	rt_span_finalize(r);
	remember(c, &r->span);
	emit(c, &r->span, false);
	release(c, r);
}

/* ---- process and target bookkeeping ---------------------------------------- */

static void on_target(struct rt_correlator *c, const struct rt_ev_target *ev)
{
	struct rt_proc *p;

	if (ev->leave) {
		p = rt_hmap_get(&c->procs, ev->hdr.pid);
		if (!p)
			return;
		/* no longer traced: what is in flight cannot be finished */
		rt_conns_proc_exit(c, ev->hdr.pid, ev->hdr.ts_ns);
		rt_zmq_asm__drop_pid(c->zmq, ev->hdr.pid);
		rt_vllm_drop_pid(c, ev->hdr.pid);
		rt_hmap_del(&c->procs, ev->hdr.pid);
		group_changed(c, p);
		rt_proc_drop(c, p);
		rt_proc_free(p);
		return;
	}
	p = rt_proc_get(c, ev->hdr.pid, true);
	if (!p)
		return;
	group_changed(c, p);
	group_unlink(c, p);
	p->group_id = ev->group_id;
	group_link(c, p);
	group_changed(c, p);
	memcpy(p->group, ev->group, RT_NAME_LEN);
	p->group[RT_NAME_LEN - 1] = '\0';
	if (ev->comm[0]) {
		memcpy(p->comm, ev->comm, RT_COMM_LEN);
		p->comm[RT_COMM_LEN - 1] = '\0';
	}
}

static void on_task_new(struct rt_correlator *c, const struct rt_ev_task_new *ev)
{
	struct rt_proc *parent = rt_proc_get(c, ev->hdr.pid, true), *child;
	struct rt_thread *t;

	if (!parent)
		return;
	if (!(ev->clone_flags & CLONE_THREAD) && ev->child_pid != ev->hdr.pid) {
		child = rt_proc_get(c, ev->child_pid, true);
		if (child) {
			group_changed(c, child);
			group_unlink(c, child);
			child->group_id = parent->group_id;
			group_link(c, child);
			group_changed(c, child);
			memcpy(child->group, parent->group, sizeof(child->group));
			memcpy(child->comm, parent->comm, sizeof(child->comm));
		}
	}
	t = rt_thread_get(c, ev->child_tid, ev->child_pid, true);
	if (t) {
		memcpy(t->comm, ev->comm, RT_COMM_LEN);
		t->comm[RT_COMM_LEN - 1] = '\0';
	}
	rt_pool_on_task_new(c, ev); /* born of engine work: a pool thread */
}

static void on_exit_ev(struct rt_correlator *c, const struct rt_ev_proc_exit *ev)
{
	struct rt_proc *p;

	rt_cpu_on_exit(c, ev->hdr.tid, ev->hdr.ts_ns);
	rt_pack_on_exit(c, ev->hdr.pid, ev->hdr.tid, ev->group_dead);
	if (!ev->group_dead)
		return;
	rt_conns_proc_exit(c, ev->hdr.pid, ev->hdr.ts_ns);
	p = rt_hmap_del(&c->procs, ev->hdr.pid);
	if (p) {
		group_changed(c, p);
		rt_proc_drop(c, p);
	}
	rt_proc_free(p);
}

/* ---- loss and late records ------------------------------------------------- */

static void amend_recent(struct rt_correlator *c, uint32_t pid, uint64_t from, uint64_t to,
			 uint32_t flags)
{
	uint32_t i;

	for (i = 0; i < c->o.recent_spans; i++) {
		struct rt_span *s = &c->recent[i].span;

		if (!c->recent[i].used || (pid && s->pid != pid))
			continue;
		if (s->end_ns < from || s->start_ns > to)
			continue;
		if ((s->flags & flags) == flags && (flags & RT_SPAN_INCOMPLETE) &&
		    !(flags & RT_SPAN_LATE_AMENDED))
			continue; /* already says so */
		s->flags |= flags;
		s->revision++;
		emit(c, s, true);
	}
}

static uint64_t zmq_desyncs(const struct rt_correlator *c)
{
	struct rt_zmq_asm_stats zs;

	rt_zmq_asm__stats(c->zmq, &zs);
	return zs.desyncs;
}

/* A stream of pid that lost its place: the engine requests in flight there go incomplete. */
static void zmq_loss(struct rt_correlator *c, uint32_t pid)
{
	uint64_t before = zmq_desyncs(c);

	rt_zmq_asm__loss(c->zmq, pid);
	if (zmq_desyncs(c) != before)
		rt_vllm_desync(c, pid);
}

static void zmq_record(struct rt_correlator *c, const struct rt_ev_zmq_msg *ev)
{
	uint64_t before = zmq_desyncs(c);

	rt_zmq_asm__record(c->zmq, ev);
	if (zmq_desyncs(c) != before)
		rt_vllm_desync(c, ev->hdr.pid);
}

/*
 * The process's engine threads are the ones that make its engine pack's
 * calls (cpu.c, rule 3); a compute pool's regions (libgomp) name only the
 * thread that opens them, not the engine's others. Both flags are set
 * together and never cleared, so a thread already marked is done.
 */
static void engine_call(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	struct rt_thread *t = ev->tid ? rt_thread_get(c, ev->tid, ev->pid, true) : NULL;
	struct rt_proc *p;

	if (!t || t->engine_calls)
		return;
	p = rt_proc_get(c, ev->pid, true);
	if (!p)
		return;
	if (!p->engine_pack) {
		struct rt_thread *o;

		p->engine_pack = true;
		for (o = p->threads; o; o = o->tnext)
			o->proc_pack = true; /* cpu.c reads it there */
	}
	t->engine_calls = true;
}

static void on_loss(struct rt_correlator *c, const struct rt_ev_loss *ev)
{
	size_t pos = 0;
	void *val;

	c->st.lost_records += ev->count;
	/* frames may be among what was lost: the process's ZeroMQ streams wait for a boundary */
	if (!ev->lost_kind || ev->lost_kind == RT_EV_ZMQ_MSG)
		zmq_loss(c, ev->hdr.pid);
	while ((pos = rt_hmap_next(&c->reqs, pos, NULL, &val)) != 0) {
		struct rt_req *r = val;

		if (!ev->hdr.pid || r->pid == ev->hdr.pid)
			r->span.flags |= RT_SPAN_INCOMPLETE;
	}
	amend_recent(c, ev->hdr.pid, ev->since_ns, ev->hdr.ts_ns, RT_SPAN_INCOMPLETE);
}

static bool may_change_spans(uint16_t kind)
{
	return kind < RT_EV_LOSS;
}

/* ---- dispatch ---------------------------------------------------------------- */

static void prefetch_lines(const void *p, unsigned int lines)
{
	for (unsigned int i = 0; p && i < lines; i++)
		__builtin_prefetch((const char *)p + 64 * i, 1);
}

/*
 * With thousands of requests in flight each table a record looks up is a
 * cache miss, and the handlers take them one after another: the process,
 * the connection, the thread. Loading them all first overlaps the misses
 * (the switch and wakeup records, which name two threads, do the same in
 * cpu.c). Only loads: nothing changes here.
 */
/*
 * What a record's handler looks up first: its thread(s), process and, for
 * socket I/O, connection. The switch and wakeup records name two threads;
 * with two_threads false they are left out (cpu.c loads those itself).
 * false: a kind whose handler makes none of these lookups.
 */
static bool state_keys(const struct rt_event_hdr *ev, bool two_threads, uint32_t *a, uint32_t *b,
		       uint64_t *conn_key)
{
	*a = ev->tid;
	*b = 0;
	*conn_key = 0;
	switch (ev->kind) {
	case RT_EV_SCHED_SWITCH:
		*a = ((const struct rt_ev_sched_switch *)ev)->prev_tid;
		*b = ((const struct rt_ev_sched_switch *)ev)->next_tid;
		return two_threads;
	case RT_EV_SCHED_WAKING:
		*b = ((const struct rt_ev_sched_waking *)ev)->target_tid;
		return two_threads;
	case RT_EV_SOCK_RECV:
	case RT_EV_SOCK_SEND:
		*conn_key = ((uint64_t)ev->pid << 32) |
			    (uint32_t)((const struct rt_ev_sock_io *)ev)->fd;
		return true;
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END:
	case RT_EV_MARK_STEP_BEGIN:
	case RT_EV_MARK_STEP_MEMBER:
	case RT_EV_MARK_STEP_END:
	case RT_EV_CUDA_API_ENTER:
	case RT_EV_CUDA_API_EXIT:
		return true;
	default:
		return false;
	}
}

/* !deep: start loading the hash slots; deep: the entries they point to. */
static void prefetch_state(const struct rt_correlator *c, uint32_t a, uint32_t b, uint32_t pid,
			   uint64_t conn_key, bool deep)
{
	if (!deep) {
		if (a)
			rt_hmap_prefetch(&c->threads, a);
		if (b)
			rt_hmap_prefetch(&c->threads, b);
		rt_hmap_prefetch(&c->procs, pid);
		if (conn_key)
			rt_hmap_prefetch(&c->conns, conn_key);
		return;
	}
	if (conn_key)
		prefetch_lines(rt_hmap_get(&c->conns, conn_key), 2);
	prefetch_lines(a ? rt_hmap_get(&c->threads, a) : NULL, 3);
	prefetch_lines(b ? rt_hmap_get(&c->threads, b) : NULL, 3);
}

static void prefetch_for(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	uint32_t a, b;
	uint64_t conn_key;

	if (!state_keys(ev, false, &a, &b, &conn_key))
		return;
	prefetch_state(c, a, b, ev->pid, conn_key, false);
	prefetch_state(c, a, b, ev->pid, conn_key, true);
}

#define PREFETCH_MIN_THREADS 2048

void rt_correlator__prefetch(const struct rt_correlator *c, const struct rt_event_hdr *ev,
			     bool deep)
{
	uint32_t a, b;
	uint64_t conn_key;

	/*
	 * A few hundred threads' state stays in cache by itself: the hashing
	 * here would be pure cost (measured: 4% of the pipeline with tens of
	 * requests in flight).
	 */
	if (c->threads.len < PREFETCH_MIN_THREADS || ev->size < rt_event_min_size(ev->kind) ||
	    !state_keys(ev, true, &a, &b, &conn_key))
		return;
	if (deep)
		prefetch_lines(rt_hmap_get(&c->procs, ev->pid), 1);
	prefetch_state(c, a, b, ev->pid, conn_key, deep);
}

void rt_correlator__event(struct rt_correlator *c, const struct rt_event_hdr *ev, bool late)
{
	/* a record shorter than its kind's body is refused (unknown kinds: header) */
	if (!ev || ev->size < sizeof(*ev) || ev->size < rt_event_min_size(ev->kind)) {
		c->st.invalid_events++;
		return;
	}
	c->st.events++;
	if (late) {
		c->st.late_events++;
		/* a finished span this record falls in may be wrong now: say so */
		if (may_change_spans(ev->kind))
			amend_recent(c, ev->pid, ev->ts_ns, ev->ts_ns,
				     RT_SPAN_LATE_AMENDED | RT_SPAN_INCOMPLETE);
	} else if (ev->ts_ns > c->now) {
		c->now = ev->ts_ns;
	}
	prefetch_for(c, ev);
	if (!late)
		rt_cpu_on_own_record(c, ev);

	switch (ev->kind) {
	case RT_EV_SCHED_SWITCH:
		rt_cpu_on_switch(c, (const struct rt_ev_sched_switch *)ev);
		break;
	case RT_EV_SCHED_WAKING:
		rt_cpu_on_waking(c, (const struct rt_ev_sched_waking *)ev);
		break;
	case RT_EV_TASK_NEW:
		on_task_new(c, (const struct rt_ev_task_new *)ev);
		break;
	case RT_EV_PROC_EXEC: {
		const struct rt_ev_proc_exec *x = (const void *)ev;
		struct rt_proc *p = rt_proc_get(c, ev->pid, true);

		if (p) {
			memcpy(p->comm, x->comm, RT_COMM_LEN);
			p->comm[RT_COMM_LEN - 1] = '\0';
		}
		break;
	}
	case RT_EV_PROC_EXIT:
		on_exit_ev(c, (const struct rt_ev_proc_exit *)ev);
		break;
	case RT_EV_SOCK_ACCEPT:
	case RT_EV_SOCK_CONNECT:
		rt_conn_on_accept(c, (const struct rt_ev_sock_conn *)ev,
				  ev->kind == RT_EV_SOCK_CONNECT);
		break;
	case RT_EV_SOCK_RECV:
	case RT_EV_SOCK_SEND: {
		const struct rt_ev_sock_io *io = (const void *)ev;

		if (sizeof(*io) + (uint32_t)io->head_len + io->tail_len > ev->size) {
			c->st.invalid_events++;
			return;
		}
		rt_conn_on_io(c, io);
		break;
	}
	case RT_EV_SOCK_ARRIVAL:
		rt_conn_on_arrival(c, (const struct rt_ev_sock_arrival *)ev);
		break;
	case RT_EV_SOCK_CLOSE:
	case RT_EV_SOCK_SHUTDOWN:
		rt_conn_on_close(c, (const struct rt_ev_sock_close *)ev);
		break;
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END:
	case RT_EV_MARK_STEP_BEGIN:
	case RT_EV_MARK_STEP_MEMBER:
	case RT_EV_MARK_STEP_END:
	case RT_EV_MARK_BIND:
	case RT_EV_MARK_STEP_TOKENS:
		if (rt_proc_get(c, ev->pid, true))
			rt_marker_on_event(c, ev);
		break;
	case RT_EV_PACK_CALL:
	case RT_EV_PACK_BATCH:
		/* parallel regions of a compute pool (pool.c); other roles: pack.c */
		if (ev->kind == RT_EV_PACK_CALL &&
		    ((const struct rt_ev_pack_call *)ev)->role == RT_PACK_REGION) {
			rt_pool_on_region(c, (const struct rt_ev_pack_call *)ev);
			break;
		}
		engine_call(c, ev);
		if (rt_proc_get(c, ev->pid, true))
			rt_pack_on_event(c, ev);
		break;
	case RT_EV_LOSS:
		on_loss(c, (const struct rt_ev_loss *)ev);
		break;
	case RT_EV_ZMQ_MSG:
		/* its offsets and lengths are trusted below: a bad one is refused here */
		if (rt_event_check(ev, ev->size, NULL))
			c->st.invalid_events++;
		else
			zmq_record(c, (const struct rt_ev_zmq_msg *)ev);
		break;
	case RT_EV_TARGET:
		on_target(c, (const struct rt_ev_target *)ev);
		break;
	case RT_EV_CUDA_API_ENTER:
	case RT_EV_CUDA_API_EXIT:
	case RT_EV_NCCL_ENTER:
	case RT_EV_NCCL_EXIT:
	case RT_EV_GPU_KERNEL:
	case RT_EV_GPU_MEMCPY:
	case RT_EV_GPU_MEMSET:
	case RT_EV_GPU_SYNC:
	case RT_EV_GPU_EXT_CORR:
	case RT_EV_LINK_SAMPLE:
		rt_gpu_on_event(c, ev);
		break;
	default:
		/* bookkeeping (watermarks, clocks, source names) needs nothing here */
		break;
	}
}

static void detach(struct rt_correlator *c, struct rt_req *r)
{
	size_t pos = 0;
	void *val;

	/* so that its connection does not end it a second time */
	while ((pos = rt_hmap_next(&c->conns, pos, NULL, &val)) != 0) {
		struct rt_conn *conn = val;
		uint32_t j;

		if (conn->serial != r->conn_serial)
			continue;
		if (conn->receiving == r->serial)
			conn->receiving = 0;
		if (conn->responding == r->serial)
			conn->responding = 0;
		for (j = 0; j < conn->n_fifo; j++) {
			if (conn->fifo[j] == r->serial) {
				memmove(conn->fifo + j, conn->fifo + j + 1,
					(conn->n_fifo - j - 1) * sizeof(conn->fifo[0]));
				conn->n_fifo--;
				break;
			}
		}
		return;
	}
}

void rt_correlator__advance(struct rt_correlator *c, uint64_t horizon_ns)
{
	enum { BATCH = 64 };
	void *victims[BATCH];
	size_t pos, n, i;
	void *val;

	if (horizon_ns > c->now)
		c->now = horizon_ns;
	/* idle requests and connections: scanned at most once a second */
	if (horizon_ns < c->last_scan + TIMEOUT_SCAN_NS || horizon_ns < c->o.idle_timeout_ns)
		return;
	c->last_scan = horizon_ns;
	do {
		n = 0;
		pos = 0;
		while (n < BATCH && (pos = rt_hmap_next(&c->reqs, pos, NULL, &val)) != 0)
			if (((struct rt_req *)val)->last_activity + c->o.idle_timeout_ns <
			    horizon_ns)
				victims[n++] = val;
		for (i = 0; i < n; i++) {
			struct rt_req *r = victims[i];

			detach(c, r);
			rt_req_end(c, r, r->last_activity, RT_OUTCOME_TIMEOUT);
		}
	} while (n == BATCH);
	do {
		n = 0;
		pos = 0;
		while (n < BATCH && (pos = rt_hmap_next(&c->conns, pos, NULL, &val)) != 0) {
			struct rt_conn *conn = val;

			if (!conn->receiving && !conn->responding && !conn->n_fifo &&
			    conn->last_activity + c->o.idle_timeout_ns < horizon_ns)
				victims[n++] = val;
		}
		for (i = 0; i < n; i++) {
			struct rt_conn *conn = victims[i];

			rt_hmap_del(&c->conns, ((uint64_t)conn->pid << 32) | (uint32_t)conn->fd);
			rt_conn_free(c, conn);
		}
	} while (n == BATCH);
}

uint64_t rt_correlator__finish(struct rt_correlator *c)
{
	return c->reqs.len;
}

void rt_correlator__stats(const struct rt_correlator *c, struct rt_correlator_stats *st)
{
	*st = c->st;
	st->requests_inflight = c->reqs.len;
	st->conns = c->conns.len;
	st->threads = c->threads.len;
	st->procs = c->procs.len;
	if (c->zmq) {
		struct rt_zmq_asm_stats zs;

		rt_zmq_asm__stats(c->zmq, &zs);
		st->zmq_messages = zs.messages;
		st->zmq_desyncs = zs.desyncs;
		st->zmq_frames_discarded = zs.frames_discarded;
	}
}

void rt_correlator__unreadable(const struct rt_correlator *c, uint32_t group_id, uint64_t *out)
{
	uint32_t g = group_id < RT_CORR_GROUPS_MAX ? group_id : RT_CORR_GROUPS_MAX - 1;

	memcpy(out, c->unreadable[g], sizeof(c->unreadable[g]));
}

static enum rt_phase current_phase(const struct rt_req *r)
{
	int p;

	for (p = RT_PHASE__COUNT - 1; p >= 0; p--)
		if (r->mark_open[p] && p != RT_PHASE_COMM_WAIT)
			return (enum rt_phase)p;
	switch (r->state) {
	case RT_REQ_RECEIVING:
		return RT_PHASE_RECEIVE;
	case RT_REQ_WAITING:
		return RT_PHASE_PRE_FIRST_TOKEN;
	case RT_REQ_RESPONDING:
		/* events seen without a first token: joined mid-body, decoding */
		return r->span.first_token_ns || r->span.events_out ? RT_PHASE_DECODE :
								      RT_PHASE_PRE_FIRST_TOKEN;
	}
	return RT_PHASE_OTHER;
}

void rt_correlator__inflight(const struct rt_correlator *c, rt_inflight_fn fn, void *ctx)
{
	size_t pos = 0;
	void *val;

	while ((pos = rt_hmap_next(&c->reqs, pos, NULL, &val)) != 0) {
		const struct rt_req *r = val;
		struct rt_inflight v = {
			.request_id = r->span.request_id,
			.path = r->span.path,
			.group = r->span.group,
			.pid = r->pid,
			.start_ns = r->span.start_ns,
			.last_activity_ns = r->last_activity,
			.events_out = r->span.events_out,
			.phase = current_phase(r),
		};

		fn(&v, ctx);
	}
}

/* ---- lifetime ---------------------------------------------------------------- */

/* A whole ZeroMQ message: the engine message decoders (vLLM: proto/vllm.h) hook here. */
static void on_zmq_msg(void *ctx, const struct rt_zmq_asm_msg *m)
{
	rt_vllm_on_msg(ctx, m);
}

struct rt_correlator *rt_correlator__new(const struct rt_correlator_opts *opts)
{
	struct rt_correlator *c = calloc(1, sizeof(*c));
	int err = -ENOMEM;

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		c->o = *opts;
	if (!c->o.idle_timeout_ns)
		c->o.idle_timeout_ns = DEFAULT_IDLE_NS;
	if (!c->o.max_procs)
		c->o.max_procs = 4096;
	if (!c->o.max_conns)
		c->o.max_conns = 65536;
	if (!c->o.max_requests)
		c->o.max_requests = 8192;
	if (!c->o.max_threads)
		c->o.max_threads = 65536;
	if (!c->o.recent_spans)
		c->o.recent_spans = 1024;
	if (rt_hmap_init(&c->procs, c->o.max_procs) ||
	    rt_hmap_init(&c->threads, c->o.max_threads) ||
	    rt_hmap_init(&c->conns, c->o.max_conns) || rt_hmap_init(&c->reqs, c->o.max_requests) ||
	    rt_hmap_init(&c->req_ids, c->o.max_requests) ||
	    rt_hmap_init(&c->binds, c->o.max_requests) || rt_hmap_init(&c->ends, c->o.max_conns) ||
	    rt_hmap_init(&c->groups, c->o.max_procs) || rt_hmap_init(&c->conns_of, c->o.max_conns))
		goto cleanup;
	c->recent = calloc(c->o.recent_spans, sizeof(*c->recent));
	if (!c->recent)
		goto cleanup;
	c->zmq = rt_zmq_asm__new(0, on_zmq_msg, c);
	if (!c->zmq)
		goto cleanup;
	return c;
cleanup:
	rt_correlator__free(c);
	errno = -err;
	return NULL;
}

static void free_all(struct rt_hmap *m, void (*fn)(struct rt_correlator *, void *),
		     struct rt_correlator *c)
{
	size_t pos = 0;
	void *val;

	while ((pos = rt_hmap_next(m, pos, NULL, &val)) != 0)
		fn(c, val);
	rt_hmap_fini(m);
}

static void free_proc(struct rt_correlator *c, void *p)
{
	(void)c;
	rt_proc_free(p);
}

static void free_req(struct rt_correlator *c, void *p)
{
	struct rt_req *r = p;

	(void)c;
	rt_gpu_release(r);
	free(r->pack);
	free(r->vllm);
	free(r->gaps);
	free(r->iv);
	free(r);
}

static void free_thread(struct rt_correlator *c, void *p)
{
	rt_thread_free(c, p);
}

static void free_conn(struct rt_correlator *c, void *p)
{
	rt_conn_free(c, p);
}

void rt_correlator__free(struct rt_correlator *c)
{
	if (!c)
		return;
	if (c->reqs.slots)
		free_all(&c->reqs, free_req, c);
	if (c->conns.slots)
		free_all(&c->conns, free_conn, c);
	if (c->threads.slots)
		free_all(&c->threads, free_thread, c);
	if (c->procs.slots)
		free_all(&c->procs, free_proc, c);
	rt_hmap_fini(&c->req_ids);
	rt_hmap_fini(&c->binds);
	rt_hmap_fini(&c->ends);
	rt_gpu_device_free(c);
	rt_pack_free(c);
	rt_hmap_fini(&c->groups);
	rt_hmap_fini(&c->conns_of);
	rt_zmq_asm__free(c->zmq);
	rt_vllm_free(c);
	free(c->recent);
	free(c);
}
