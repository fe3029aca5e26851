// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the correlator's unit tests feed a real correlator, written once: a
 * span sink, the record header, and one builder per record kind the tests
 * share (target, accept/connect, socket I/O, sched switch and waking).
 * Every field a test varies is a parameter, so that each test file keeps
 * its own constants (pid, tids, fds, ports) and its own helpers become
 * one-line wrappers. Header-only: each unit test is an executable of its
 * own, and static inline keeps unused builders from warning.
 */
#ifndef RT_TESTS_UNIT_CORR_HARNESS_H
#define RT_TESTS_UNIT_CORR_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <reqtrace/event.h>
#include <reqtrace/span.h>

#include "common/jsonw.h"
#include "correlate/correlator.h"
#include "export/span_json.h"

/* Where spans go: the test's own array and count, which its assertions read. */
struct rt_test_sink {
	struct rt_span *spans;
	int *n;
	int cap;
};

/* A sink over a test's array and count: RT_TEST_SINK(spans, n_spans). */
#define RT_TEST_SINK(arr, n)                                                                       \
	{                                                                                          \
		(arr), &(n), (int)(sizeof(arr) / sizeof((arr)[0]))                                 \
	}

/* on_span for a sink (ctx): a span past its capacity fails the test. */
static inline void rt_test_on_span(const struct rt_span *s, void *ctx)
{
	struct rt_test_sink *k = ctx;

	assert_true(*k->n < k->cap);
	k->spans[(*k->n)++] = *s;
}

/* A correlator with default bounds that hands its spans to on_span(ctx). */
static inline struct rt_correlator *rt_test_correlator(rt_span_fn on_span, void *ctx)
{
	struct rt_correlator_opts o = { .on_span = on_span, .ctx = ctx };
	struct rt_correlator *c = rt_correlator__new(&o);

	assert_non_null(c);
	return c;
}

/* The same, collecting into an emptied sink. */
static inline struct rt_correlator *rt_test_correlator_sink(struct rt_test_sink *sink)
{
	*sink->n = 0;
	return rt_test_correlator(rt_test_on_span, sink);
}

/* The whole header: source 0, as no test names a producer. */
static inline void rt_test_hdr(struct rt_event_hdr *h, uint16_t kind, uint16_t size, uint64_t ts,
			       uint32_t pid, uint32_t tid)
{
	*h = (struct rt_event_hdr){
		.kind = kind, .size = size, .ts_ns = ts, .pid = pid, .tid = tid
	};
}

/* pid becomes a target at ts, in group 1 named `group`. */
static inline void rt_test_target(struct rt_correlator *c, uint64_t ts, uint32_t pid,
				  const char *group)
{
	struct rt_ev_target t = { 0 };

	rt_test_hdr(&t.hdr, RT_EV_TARGET, sizeof(t), ts, pid, 0);
	t.group_id = 1;
	snprintf(t.group, sizeof(t.group), "%s", group);
	rt_correlator__event(c, &t.hdr, false);
}

/* A fresh correlator collecting into sink, with pid a target of group from ts. */
static inline struct rt_correlator *rt_test_correlator_for(struct rt_test_sink *sink, uint64_t ts,
							   uint32_t pid, const char *group)
{
	struct rt_correlator *c = rt_test_correlator_sink(sink);

	rt_test_target(c, ts, pid, group);
	return c;
}

/*
 * An accept (kind RT_EV_SOCK_ACCEPT, on listening fd 3) or connect that
 * returned fd to pid/tid at ts, entered at ts; IPv4 with the given ports.
 * Filled, not fed, for the tests that feed it with fields of their own.
 */
static inline void rt_test_conn_fill(struct rt_ev_sock_conn *a, uint16_t kind, uint64_t ts,
				     uint32_t pid, uint32_t tid, int fd, uint16_t local_port,
				     uint16_t peer_port)
{
	memset(a, 0, sizeof(*a));
	rt_test_hdr(&a->hdr, kind, sizeof(*a), ts, pid, tid);
	a->enter_ns = ts;
	a->fd = a->ret = fd;
	a->listen_fd = kind == RT_EV_SOCK_ACCEPT ? 3 : -1;
	a->local.family = a->peer.family = RT_AF_INET;
	a->local.port = local_port;
	a->peer.port = peer_port;
}

static inline void rt_test_conn(struct rt_correlator *c, uint16_t kind, uint64_t ts, uint32_t pid,
				uint32_t tid, int fd, uint16_t local_port, uint16_t peer_port)
{
	struct rt_ev_sock_conn a;

	rt_test_conn_fill(&a, kind, ts, pid, tid, fd, local_port, peer_port);
	rt_correlator__event(c, &a.hdr, false);
}

/* An accept of fd on port 8000 seen by its return alone: no entry time, no result. */
static inline void rt_test_accept_bare(struct rt_correlator *c, uint64_t ts, uint32_t pid,
				       uint32_t tid, int fd, uint16_t peer_port)
{
	struct rt_ev_sock_conn a;

	rt_test_conn_fill(&a, RT_EV_SOCK_ACCEPT, ts, pid, tid, fd, 8000, peer_port);
	a.enter_ns = 0;
	a.ret = 0;
	rt_correlator__event(c, &a.hdr, false);
}

/*
 * A read (kind RT_EV_SOCK_RECV: read(2)) or write (write(2)) by pid/tid of
 * len bytes of data on fd, blocked from enter to ts, all of it captured;
 * the connection is from peer_port to local port 8000.
 */
static inline void rt_test_sock_io(struct rt_correlator *c, uint16_t kind, uint64_t enter,
				   uint64_t ts, uint32_t pid, uint32_t tid, int fd,
				   uint16_t peer_port, const void *data, size_t len)
{
	size_t size = RT_EVENT_SIZE_ALIGN(sizeof(struct rt_ev_sock_io) + len);
	struct rt_ev_sock_io *e = calloc(1, size);

	assert_non_null(e);
	rt_test_hdr(&e->hdr, kind, (uint16_t)size, ts, pid, tid);
	e->enter_ns = enter;
	e->ret = (int64_t)len;
	e->fd = fd;
	e->syscall = kind == RT_EV_SOCK_RECV ? RT_SYS_READ : RT_SYS_WRITE;
	e->head_len = (uint16_t)len;
	e->local.family = e->peer.family = RT_AF_INET;
	e->local.port = 8000;
	e->peer.port = peer_port;
	memcpy(e->data, data, len);
	rt_correlator__event(c, &e->hdr, false);
	free(e);
}

/* One sched_switch; fields left out are 0 (CPU 0, runtimes unknown, TASK_RUNNING). */
struct rt_test_sw {
	uint64_t ts;
	uint32_t cpu;
	uint32_t prev, next; /* tids of the target pid, 0: idle */
	uint32_t state; /* prev's RT_TASK_* */
	uint64_t prev_rt, next_rt; /* the kernel's runtime counts, 0: unknown */
	const char *prev_comm, *next_comm; /* NULL: "t<tid>" */
};

/* prev leaves the CPU for next, both threads of pid (idle: of pid 0). */
static inline void rt_test_switch(struct rt_correlator *c, uint32_t pid, const struct rt_test_sw *s)
{
	struct rt_ev_sched_switch e = { 0 };

	rt_test_hdr(&e.hdr, RT_EV_SCHED_SWITCH, sizeof(e), s->ts, s->prev ? pid : 0, s->prev);
	e.cpu = s->cpu;
	e.prev_pid = s->prev ? pid : 0;
	e.prev_tid = s->prev;
	e.next_pid = s->next ? pid : 0;
	e.next_tid = s->next;
	e.prev_state = s->state;
	e.prev_runtime_ns = s->prev_rt;
	e.next_runtime_ns = s->next_rt;
	if (s->prev_comm)
		snprintf(e.prev_comm, sizeof(e.prev_comm), "%s", s->prev_comm);
	else
		snprintf(e.prev_comm, sizeof(e.prev_comm), "t%u", s->prev);
	if (s->next_comm)
		snprintf(e.next_comm, sizeof(e.next_comm), "%s", s->next_comm);
	else
		snprintf(e.next_comm, sizeof(e.next_comm), "t%u", s->next);
	rt_correlator__event(c, &e.hdr, false);
}

/* The same with comms "t<tid>" on CPU 0: prev, in state, for next; runtimes 0: unknown. */
static inline void rt_test_sched_switch(struct rt_correlator *c, uint32_t pid, uint64_t ts,
					uint32_t prev, uint32_t state, uint32_t next,
					uint64_t prev_rt, uint64_t next_rt)
{
	struct rt_test_sw s = { .ts = ts, .prev = prev, .next = next, .state = state };

	s.prev_rt = prev_rt;
	s.next_rt = next_rt;
	rt_test_switch(c, pid, &s);
}

/* waker_pid/waker wakes target_pid/target at ts. */
static inline void rt_test_waking(struct rt_correlator *c, uint64_t ts, uint32_t waker_pid,
				  uint32_t waker, uint32_t target_pid, uint32_t target)
{
	struct rt_ev_sched_waking e = { 0 };

	rt_test_hdr(&e.hdr, RT_EV_SCHED_WAKING, sizeof(e), ts, waker_pid, waker);
	e.target_pid = target_pid;
	e.target_tid = target;
	rt_correlator__event(c, &e.hdr, false);
}

/* s's CPU account of thread tid, NULL when it has none. */
static inline const struct rt_span_thread *rt_test_thread_of(const struct rt_span *s, uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < s->cpu.n_threads; i++)
		if (s->cpu.threads[i].tid == tid)
			return &s->cpu.threads[i];
	return NULL;
}

/* s as span JSON, for key order and values as a reader sees them; the caller frees it. */
static inline char *rt_test_span_json(const struct rt_span *s)
{
	struct rt_jsonw w;
	char *out;

	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, s);
	out = strdup(rt_jsonw_str(&w));
	rt_jsonw_fini(&w);
	assert_non_null(out);
	return out;
}

#endif
