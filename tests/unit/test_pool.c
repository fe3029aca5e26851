// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CPU of compute pools (src/correlate/pool.c, docs/spans.md "Compute
 * pools") on hand-built records fed to a real correlator:
 *
 * - a sleeping pool (a worker woken by the engine during a step), threads
 *   born during a step (disposable), and a spinning pool made by the
 *   engine's first parallel region, with region time and spin told apart:
 *   their time goes to what the engine works for, marked shared and pool;
 * - a runtime thread that is never linked to engine work (woken by nobody,
 *   or by the engine outside any step or region) stays unattributed, even
 *   while requests are in flight;
 * - pool time while no request is in flight stays unattributed;
 * - span CPU plus unattributed equals the threads' CPU;
 * - a step's token counts weight the pool's shares;
 * - a worker's link survives a lock (a brief burst), as rule 3's hand-off;
 * - an engine doing engine work hands its rule-3 owner to no worker;
 * - a worker's unrecorded switch-in: what was cut as runqueue while it ran
 *   is put right at its switch-out.
 */
#include "corr_harness.h"

#define PID 100
#define ENGINE 101
#define HANDLER 102
#define HANDLER2 104
#define POOL 110
#define RUNTIME 113
#define US 1000ULL
#define MS 1000000ULL
#define T0 (1000 * MS)

static struct rt_correlator *c;
static struct rt_span spans[8];
static int n_spans;
static struct rt_test_sink sink = RT_TEST_SINK(spans, n_spans);

static int setup(void **state)
{
	(void)state;
	c = rt_test_correlator_for(&sink, T0, PID, "svc");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rt_correlator__free(c);
	c = NULL;
	return 0;
}

/* prev (0: idle) leaves the CPU for next (0: idle), with the kernel's runtime counts */
static void sw_rt(uint64_t ts, uint32_t prev, uint32_t state, uint32_t next, uint64_t prev_rt,
		  uint64_t next_rt)
{
	rt_test_sched_switch(c, PID, ts, prev, state, next, prev_rt, next_rt);
}

/* the same, runtimes unknown */
static void sw(uint64_t ts, uint32_t prev, uint32_t state, uint32_t next)
{
	sw_rt(ts, prev, state, next, 0, 0);
}

/* `tid` runs on a CPU of its own over [a, b), then blocks */
static void run(uint32_t tid, uint64_t a, uint64_t b)
{
	sw(a, 0, 0, tid);
	sw(b, tid, RT_TASK_BLOCKED, 0);
}

static void wake(uint64_t ts, uint32_t waker, uint32_t target)
{
	rt_test_waking(c, ts, waker ? PID : 0, waker, PID, target);
}

static void task_new(uint64_t ts, uint32_t parent, uint32_t child)
{
	struct rt_ev_task_new e = { 0 };

	rt_test_hdr(&e.hdr, RT_EV_TASK_NEW, sizeof(e), ts, PID, parent);
	e.child_pid = PID;
	e.child_tid = child;
	e.clone_flags = 0x00010000; /* CLONE_THREAD */
	snprintf(e.comm, sizeof(e.comm), "worker");
	rt_correlator__event(c, &e.hdr, false);
}

static void thread_exit(uint64_t ts, uint32_t tid)
{
	struct rt_ev_proc_exit e = { 0 };

	rt_test_hdr(&e.hdr, RT_EV_PROC_EXIT, sizeof(e), ts, PID, tid);
	rt_correlator__event(c, &e.hdr, false);
}

static void region(uint64_t ts, uint32_t tid, bool ret)
{
	struct rt_ev_pack_call e = { 0 };

	rt_test_hdr(&e.hdr, RT_EV_PACK_CALL, sizeof(e), ts, PID, tid);
	e.role = RT_PACK_REGION;
	e.ret = ret;
	rt_correlator__event(c, &e.hdr, false);
}

/* STEP_BEGIN with members ids (one char each), tokens[i] when tokens != NULL */
static void step_begin(uint64_t ts, uint64_t id, const char *ids, const uint32_t *tokens)
{
	struct rt_ev_mark_step e = { 0 };
	uint32_t i, n = (uint32_t)strlen(ids);

	rt_test_hdr(&e.hdr, RT_EV_MARK_STEP_BEGIN, sizeof(e), ts, PID, ENGINE);
	e.step_id = id;
	e.n_requests = n;
	rt_correlator__event(c, &e.hdr, false);
	for (i = 0; i < n; i++) {
		memset(&e, 0, sizeof(e));
		rt_test_hdr(&e.hdr, RT_EV_MARK_STEP_MEMBER, sizeof(e), ts, PID, ENGINE);
		e.step_id = id;
		e.n_requests = n;
		e.index = i;
		e.request_id[0] = ids[i];
		rt_correlator__event(c, &e.hdr, false);
		if (tokens) {
			struct rt_ev_mark_step_tokens k = { 0 };

			rt_test_hdr(&k.hdr, RT_EV_MARK_STEP_TOKENS, sizeof(k), ts, PID, ENGINE);
			k.step_id = id;
			k.index = i;
			k.tokens = tokens[i];
			rt_correlator__event(c, &k.hdr, false);
		}
	}
}

static void step_end(uint64_t ts, uint64_t id)
{
	struct rt_ev_mark_step e = { 0 };

	rt_test_hdr(&e.hdr, RT_EV_MARK_STEP_END, sizeof(e), ts, PID, ENGINE);
	e.step_id = id;
	rt_correlator__event(c, &e.hdr, false);
}

/* I/O of `tid` on fd (the connection from port 40000 + fd) */
static void sock_on(uint16_t kind, uint64_t ts, uint32_t tid, int fd, const char *data)
{
	rt_test_sock_io(c, kind, ts - US, ts, PID, tid, fd, (uint16_t)(40000 + fd), data,
			strlen(data));
}

/* `tid` accepts fd and reads request `id` on it at ts, on a CPU over [ts - 10 us, ts + 10 us) */
static void request_on(uint64_t ts, uint32_t tid, int fd, const char *id)
{
	char buf[256];

	sw(ts - 10 * US, 0, 0, tid);
	rt_test_conn(c, RT_EV_SOCK_ACCEPT, ts - 5 * US, PID, tid, fd, 8000, (uint16_t)(40000 + fd));
	snprintf(buf, sizeof(buf),
		 "POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\n"
		 "Content-Length: 2\r\n\r\n{}",
		 id);
	sock_on(RT_EV_SOCK_RECV, ts, tid, fd, buf);
	sw(ts + 10 * US, tid, RT_TASK_BLOCKED, 0);
}

/* `tid` answers on fd at ts (on a CPU over [ts - 10 us, ts + 10 us)): the request ends */
static void respond_on(uint64_t ts, uint32_t tid, int fd)
{
	sw(ts - 10 * US, 0, 0, tid);
	sock_on(RT_EV_SOCK_SEND, ts, tid, fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	sw(ts + 10 * US, tid, RT_TASK_BLOCKED, 0);
}

static const struct rt_span *span_of(const char *id)
{
	int i;

	for (i = 0; i < n_spans; i++)
		if (!strcmp(spans[i].request_id, id))
			return &spans[i];
	fail_msg("no span %s", id);
	return NULL;
}

static const struct rt_span_thread *thread_of(const struct rt_span *s, uint32_t tid)
{
	return rt_test_thread_of(s, tid);
}

static uint64_t unattributed(void)
{
	struct rt_correlator_stats st;

	rt_correlator__stats(c, &st);
	return st.unattributed_cpu_ns;
}

/* the same, on CPU alone (1) or runqueue alone (0) */
static uint64_t unattributed_kind(int on_cpu)
{
	struct rt_correlator_stats st;

	rt_correlator__stats(c, &st);
	return on_cpu ? st.unattributed_on_cpu_ns : st.unattributed_runq_ns;
}

/*
 * A sleeping pool: the engine wakes the worker at the start of each step;
 * the worker runs 2 ms and sleeps. A runtime thread runs 1 ms during the
 * step, woken by nobody, and 1 ms woken by the engine between steps: it
 * stays unattributed. Span CPU + unattributed = what every thread ran.
 */
static void test_sleeping_pool(void **state)
{
	const struct rt_span_thread *th;
	const struct rt_span *s;
	uint64_t un0, on0, rq0;

	(void)state;
	request_on(T0 + 1 * MS, HANDLER, 7, "a");
	un0 = unattributed();
	on0 = unattributed_kind(1);
	rq0 = unattributed_kind(0);
	sw(T0 + 2 * MS, 0, 0, ENGINE);
	step_begin(T0 + 2 * MS, 1, "a", NULL);
	wake(T0 + 2100 * US, ENGINE, POOL);
	run(POOL, T0 + 2200 * US, T0 + 4200 * US);
	wake(T0 + 2500 * US, 0, RUNTIME);
	run(RUNTIME, T0 + 2600 * US, T0 + 3600 * US);
	step_end(T0 + 5 * MS, 1);
	/* between steps, the engine (owning nothing) wakes the runtime thread */
	wake(T0 + 5100 * US, ENGINE, RUNTIME);
	sw(T0 + 5200 * US, ENGINE, RT_TASK_BLOCKED, RUNTIME);
	sw(T0 + 6200 * US, RUNTIME, RT_TASK_BLOCKED, 0);
	/* the engine's own 3.2 ms: no owner of its own outside the step's 3 ms */
	respond_on(T0 + 20 * MS, HANDLER, 7);
	rt_correlator__finish(c);
	s = span_of("a");
	th = thread_of(s, POOL);
	assert_non_null(th);
	assert_int_equal(th->on_cpu_ns, 2 * MS);
	/* woken at 2.1 ms, on a CPU at 2.2 ms */
	assert_int_equal(th->runq_ns, 100 * US);
	assert_true(th->pool);
	assert_true(th->shared);
	assert_int_equal(s->cpu.pool_ns, 2 * MS);
	assert_int_equal(s->cpu.pool_spin_ns, RT_NULL_NS); /* no regions: not told apart */
	assert_int_equal(s->cpu.pool_by, RT_WORK_MARKER);
	assert_null(thread_of(s, RUNTIME));
	th = thread_of(s, ENGINE);
	assert_non_null(th);
	assert_int_equal(th->on_cpu_ns, 3 * MS);
	assert_false(th->pool);
	/*
	 * nobody's: the runtime's 2 ms and its 2 x 100 us in the runqueue, the
	 * engine's 200 us after its step, the handler's 10 us after the end
	 */
	assert_int_equal(unattributed() - un0, 2 * MS + 200 * US + 200 * US + 10 * US);
	/*
	 * span CPU + unattributed = every thread's on-CPU and runqueue time:
	 * handler 20 + 20 us, engine 3.2 ms, pool 2 ms + 100 us, runtime 2.2 ms
	 */
	assert_int_equal(s->cpu.on_cpu_ns + s->cpu.runq_ns + (int64_t)(unattributed() - un0),
			 40 * US + 3200 * US + 2100 * US + 2200 * US);
	/* the same split by kind: the runtime's 2 x 100 us are the runqueue part */
	assert_int_equal(unattributed_kind(0) - rq0, 200 * US);
	assert_int_equal(unattributed_kind(1) - on0, 2 * MS + 200 * US + 10 * US);
	assert_int_equal(unattributed_kind(1) - on0 + unattributed_kind(0) - rq0,
			 unattributed() - un0);
	/* on CPU alone: handler 40 us, engine 3.2 ms, pool 2 ms, runtime 2 ms */
	assert_int_equal(s->cpu.on_cpu_ns + (int64_t)(unattributed_kind(1) - on0),
			 40 * US + 3200 * US + 2 * MS + 2 * MS);
}

/*
 * Disposable threads: created by the engine during each step, they run
 * and exit before it ends; a thread the engine creates outside any step
 * (a runtime's helper) is nobody's.
 */
static void test_disposable_threads(void **state)
{
	const struct rt_span_thread *th;
	const struct rt_span *s;
	uint64_t un0;
	int k;

	(void)state;
	request_on(T0 + 1 * MS, HANDLER, 7, "a");
	un0 = unattributed();
	for (k = 0; k < 3; k++) {
		uint64_t t = T0 + (2 + 4 * (uint64_t)k) * MS;

		wake(t, 0, ENGINE);
		sw(t + 10 * US, 0, 0, ENGINE);
		step_begin(t + 20 * US, 10 + (uint64_t)k, "a", NULL);
		task_new(t + 30 * US, ENGINE, POOL + (uint32_t)k);
		sw(t + 40 * US, 0, 0, POOL + (uint32_t)k);
		sw(t + 1040 * US, POOL + (uint32_t)k, RT_TASK_DEAD, 0);
		thread_exit(t + 1040 * US, POOL + (uint32_t)k);
		step_end(t + 1100 * US, 10 + (uint64_t)k);
		sw(t + 1100 * US, ENGINE, RT_TASK_BLOCKED, 0);
	}
	/* created outside a step: a runtime helper */
	wake(T0 + 15 * MS, 0, ENGINE);
	sw(T0 + 15 * MS + 10 * US, 0, 0, ENGINE);
	task_new(T0 + 15 * MS + 20 * US, ENGINE, RUNTIME);
	sw(T0 + 15 * MS + 30 * US, ENGINE, RT_TASK_BLOCKED, RUNTIME);
	sw(T0 + 16 * MS + 30 * US, RUNTIME, RT_TASK_BLOCKED, 0);
	respond_on(T0 + 20 * MS, HANDLER, 7);
	rt_correlator__finish(c);
	s = span_of("a");
	for (k = 0; k < 3; k++) {
		th = thread_of(s, POOL + (uint32_t)k);
		assert_non_null(th);
		assert_int_equal(th->on_cpu_ns, 1 * MS);
		assert_true(th->pool);
	}
	assert_int_equal(s->cpu.pool_ns, 3 * MS);
	assert_null(thread_of(s, RUNTIME));
	/*
	 * nobody's: the runtime's 1 ms; the engine's 10 us in the runqueue and
	 * 10 us on a CPU before each step, 10 + 20 us after the last; the
	 * handler's 10 us after the end
	 */
	assert_int_equal(unattributed() - un0, 1 * MS + 3 * 20 * US + 30 * US + 10 * US);
}

/*
 * A spinning pool: the engine (zero-code: no markers) opens a parallel
 * region, creating its worker, which then spins on a CPU without a
 * scheduler record between regions. Region time and spin both go to the
 * engine set, spin also into pool_spin_ms; once no request is in flight
 * the spin is nobody's.
 */
static void test_spinning_pool(void **state)
{
	const struct rt_span_thread *th;
	const struct rt_span *s;
	uint64_t un0;

	(void)state;
	request_on(T0 + 1 * MS, HANDLER, 7, "a");
	un0 = unattributed();
	region(T0 + 2 * MS, ENGINE, false);
	task_new(T0 + 2 * MS + 1 * US, ENGINE, POOL);
	sw(T0 + 2100 * US, 0, 0, POOL);
	region(T0 + 4 * MS, ENGINE, true);
	region(T0 + 6 * MS, ENGINE, false);
	region(T0 + 7 * MS, ENGINE, true);
	respond_on(T0 + 10 * MS, HANDLER, 7);
	/* still spinning, nobody in flight */
	sw(T0 + 15 * MS, POOL, RT_TASK_BLOCKED, 0);
	rt_correlator__finish(c);
	s = span_of("a");
	th = thread_of(s, POOL);
	assert_non_null(th);
	/* on a CPU from 2.1 ms; the request ends at 10 ms */
	assert_int_equal(th->on_cpu_ns, 10 * MS - 2100 * US);
	assert_true(th->pool);
	assert_int_equal(s->cpu.pool_ns, 10 * MS - 2100 * US);
	/* regions [2.1, 4) and [6, 7): the rest is spin */
	assert_int_equal(s->cpu.pool_spin_ns, 10 * MS - 2100 * US - 1900 * US - 1 * MS);
	assert_int_equal(s->cpu.pool_by, RT_WORK_ENGINE_SET);
	/* after the request: 5 ms of spin and the handler's last 10 us, unattributed */
	assert_int_equal(unattributed() - un0, 5 * MS + 10 * US);
	/* the worker's CPU, all of it: the span's share + unattributed */
	assert_int_equal(th->on_cpu_ns + (int64_t)(unattributed() - un0) - 10 * US,
			 15 * MS - 2100 * US);
}

/*
 * The engine is woken by a's handler (rule 3: its burst is a's), then runs
 * two steps of a and b without sleeping, waking the sleeping worker in
 * each. The worker works for the steps, not for the request that woke the
 * engine: a waker doing engine work hands over nothing, and the worker's
 * 2 ms go to a and b alike, as the pool's.
 */
static void test_busy_engine_hands_over_nothing(void **state)
{
	const struct rt_span_thread *ta, *tb;
	int k;

	(void)state;
	request_on(T0 + 1 * MS, HANDLER, 7, "a");
	request_on(T0 + 1 * MS + 100 * US, HANDLER2, 8, "b");
	sw(T0 + 1200 * US, 0, 0, HANDLER);
	wake(T0 + 1210 * US, HANDLER, ENGINE);
	sw(T0 + 1220 * US, HANDLER, RT_TASK_BLOCKED, 0);
	sw(T0 + 2 * MS, 0, 0, ENGINE);
	for (k = 0; k < 2; k++) {
		uint64_t t = T0 + (2 + 2 * (uint64_t)k) * MS;

		step_begin(t, 1 + (uint64_t)k, "ab", NULL);
		wake(t + 10 * US, ENGINE, POOL);
		run(POOL, t + 10 * US, t + 1010 * US);
		step_end(t + 1500 * US, 1 + (uint64_t)k);
	}
	sw(T0 + 6 * MS, ENGINE, RT_TASK_BLOCKED, 0);
	respond_on(T0 + 20 * MS, HANDLER, 7);
	respond_on(T0 + 21 * MS, HANDLER2, 8);
	rt_correlator__finish(c);
	ta = thread_of(span_of("a"), POOL);
	tb = thread_of(span_of("b"), POOL);
	assert_non_null(ta);
	assert_non_null(tb);
	assert_int_equal(ta->on_cpu_ns, 1 * MS);
	assert_int_equal(tb->on_cpu_ns, 1 * MS);
	assert_true(ta->pool);
	assert_true(tb->pool);
	assert_int_equal(span_of("a")->cpu.pool_ns, 1 * MS);
}

/*
 * The worker's switch-in goes unrecorded: woken by the engine in its step
 * at 2.1 ms, it runs from 2.2 ms to 4.2 ms, but the correlator sees it
 * runnable until its switch-out, and the step's end at 3 ms cuts it (as
 * runqueue, to a). The switch-out's runtime count (2 ms since it last
 * left a CPU) shows it on a CPU from 2.2 ms: what was cut as runqueue
 * from then is a's on-CPU time after all.
 */
static void test_unseen_switch_in(void **state)
{
	const struct rt_span_thread *th;
	const struct rt_span *s;

	(void)state;
	request_on(T0 + 1 * MS, HANDLER, 7, "a");
	/* the worker's first stint, recorded: 5 ms of runtime so far */
	sw_rt(T0 + 1100 * US, 0, 0, POOL, 0, 5 * MS);
	sw_rt(T0 + 1200 * US, POOL, RT_TASK_BLOCKED, 0, 5 * MS + 100 * US, 0);
	sw(T0 + 2 * MS, 0, 0, ENGINE);
	step_begin(T0 + 2 * MS, 1, "a", NULL);
	wake(T0 + 2100 * US, ENGINE, POOL);
	/* no switch-in of POOL at 2.2 ms */
	step_end(T0 + 3 * MS, 1);
	sw_rt(T0 + 4200 * US, POOL, RT_TASK_BLOCKED, 0, 7 * MS + 100 * US, 0);
	sw(T0 + 5 * MS, ENGINE, RT_TASK_BLOCKED, 0);
	respond_on(T0 + 20 * MS, HANDLER, 7);
	rt_correlator__finish(c);
	s = span_of("a");
	th = thread_of(s, POOL);
	assert_non_null(th);
	assert_true(th->pool);
	/* on a CPU 2.2-4.2 ms: 2 ms; in the runqueue 2.1-2.2 ms */
	assert_int_equal(th->on_cpu_ns, 2 * MS);
	assert_int_equal(th->runq_ns, 100 * US);
	assert_int_equal(s->cpu.pool_ns, 2 * MS);
}

/*
 * The engine's step lists a (3 tokens) and b (1 token): the sleeping
 * worker's 4 ms go 3:1. Between steps a spinning worker of the same
 * engine goes to the engine set, equally.
 */
static void test_tokens_weight_pool(void **state)
{
	static const uint32_t tok[2] = { 3, 1 };
	const struct rt_span_thread *ta, *tb;

	(void)state;
	request_on(T0 + 1 * MS, HANDLER, 7, "a");
	request_on(T0 + 1 * MS + 100 * US, HANDLER2, 8, "b");
	sw(T0 + 2 * MS, 0, 0, ENGINE);
	step_begin(T0 + 2 * MS, 1, "ab", tok);
	wake(T0 + 2 * MS + 10 * US, ENGINE, POOL);
	run(POOL, T0 + 2 * MS + 10 * US, T0 + 6 * MS + 10 * US);
	step_end(T0 + 7 * MS, 1);
	sw(T0 + 7 * MS, ENGINE, RT_TASK_BLOCKED, 0);
	respond_on(T0 + 20 * MS, HANDLER, 7);
	respond_on(T0 + 21 * MS, HANDLER2, 8);
	rt_correlator__finish(c);
	ta = thread_of(span_of("a"), POOL);
	tb = thread_of(span_of("b"), POOL);
	assert_non_null(ta);
	assert_non_null(tb);
	assert_int_equal(ta->on_cpu_ns, 3 * MS);
	assert_int_equal(tb->on_cpu_ns, 1 * MS);
	assert_int_equal(span_of("a")->cpu.pool_by, RT_WORK_MARKER);
}

/*
 * A worker of a sleeping pool woken by another worker (a condition
 * variable's broadcast passed on through its mutex) is the pool's too; a
 * runtime thread woken by a worker after the step is not.
 */
static void test_pool_wakes_pool(void **state)
{
	const struct rt_span *s;
	uint64_t un0;

	(void)state;
	request_on(T0 + 1 * MS, HANDLER, 7, "a");
	un0 = unattributed();
	sw(T0 + 2 * MS, 0, 0, ENGINE);
	step_begin(T0 + 2 * MS, 1, "a", NULL);
	wake(T0 + 2 * MS + 10 * US, ENGINE, POOL);
	sw(T0 + 2 * MS + 10 * US, 0, 0, POOL);
	wake(T0 + 2 * MS + 20 * US, POOL, POOL + 1);
	run(POOL + 1, T0 + 2 * MS + 20 * US, T0 + 3 * MS + 20 * US);
	sw(T0 + 3 * MS + 10 * US, POOL, RT_TASK_BLOCKED, 0);
	step_end(T0 + 4 * MS, 1);
	sw(T0 + 4 * MS, ENGINE, RT_TASK_BLOCKED, 0);
	/* the step is over: a worker's wakeup links nothing any more */
	wake(T0 + 5 * MS, 0, POOL);
	sw(T0 + 5 * MS, 0, 0, POOL);
	wake(T0 + 5 * MS + 10 * US, POOL, RUNTIME);
	run(RUNTIME, T0 + 5 * MS + 10 * US, T0 + 6 * MS + 10 * US);
	sw(T0 + 5 * MS + 20 * US, POOL, RT_TASK_BLOCKED, 0);
	respond_on(T0 + 20 * MS, HANDLER, 7);
	rt_correlator__finish(c);
	s = span_of("a");
	assert_non_null(thread_of(s, POOL));
	assert_int_equal(thread_of(s, POOL)->on_cpu_ns, 1 * MS);
	assert_non_null(thread_of(s, POOL + 1));
	assert_int_equal(thread_of(s, POOL + 1)->on_cpu_ns, 1 * MS);
	assert_null(thread_of(s, RUNTIME));
	/* the runtime's 1 ms, the worker's 20 us after the step, the handler's 10 us after the end */
	assert_int_equal(unattributed() - un0, 1 * MS + 20 * US + 10 * US);
}

/*
 * A worker woken by the engine takes a mutex held by a runtime thread: it
 * blocks after 20 us (brief), and the holder's wakeup links nothing; the
 * worker's next burst is still the pool's. A burst that did work (over
 * 100 us) passes nothing on.
 */
static void test_pool_survives_a_lock(void **state)
{
	const struct rt_span *s;
	uint64_t un0;

	(void)state;
	request_on(T0 + 1 * MS, HANDLER, 7, "a");
	un0 = unattributed();
	sw(T0 + 2 * MS, 0, 0, ENGINE);
	step_begin(T0 + 2 * MS, 1, "a", NULL);
	wake(T0 + 2 * MS + 10 * US, ENGINE, POOL);
	run(POOL, T0 + 2 * MS + 10 * US, T0 + 2 * MS + 30 * US);
	wake(T0 + 2 * MS + 100 * US, RUNTIME, POOL);
	run(POOL, T0 + 2 * MS + 100 * US, T0 + 3 * MS + 100 * US);
	/* after a burst that did work, the holder's wakeup hands over nothing */
	wake(T0 + 3500 * US, RUNTIME, POOL);
	run(POOL, T0 + 3500 * US, T0 + 4 * MS);
	step_end(T0 + 5 * MS, 1);
	sw(T0 + 5 * MS, ENGINE, RT_TASK_BLOCKED, 0);
	respond_on(T0 + 20 * MS, HANDLER, 7);
	rt_correlator__finish(c);
	s = span_of("a");
	assert_non_null(thread_of(s, POOL));
	assert_int_equal(thread_of(s, POOL)->on_cpu_ns, 20 * US + 1 * MS);
	/* the last 500 us, and the handler's 10 us after the end */
	assert_int_equal(unattributed() - un0, 500 * US + 10 * US);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sleeping_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disposable_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spinning_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tokens_weight_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_engine_hands_over_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pool_wakes_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_survives_a_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unseen_switch_in, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
