// SPDX-License-Identifier: BSD-2-Clause
/*
 * CPU attribution edge cases (src/correlate/cpu.c, docs/spans.md "CPU
 * attribution") on synthetic scheduler and socket records fed to a real
 * correlator:
 *
 * - a stint on a CPU longer than the CPU time the kernel counted for the
 *   task (hypervisor steal, interrupts) is on-CPU only for what the task
 *   ran; the rest is runqueue, and counted in the correlator's stats;
 * - a hand-off survives a lock: a tokenizer handed a request that blocks
 *   again at once (its mutex held by a third thread) still works for that
 *   request when the lock's holder, who hands over nothing, wakes it; a
 *   burst that did work does not pass its hand-off on, and one that
 *   begins another request's claimed work (a backlog) ends it; a wakeup
 *   that races the thread's sleep (recorded while it is still on its CPU,
 *   no second one before it runs again) keeps it too;
 * - a switch-in that never arrived is inferred from the thread's own
 *   records or from the runtime it gained, not left as a long runqueue wait.
 *
 * The generator's fixtures (test_gen) cover the ordinary rules.
 */
#include "corr_harness.h"

#define PID 100
#define ENGINE 101
#define HANDLER 102
#define TOK 103
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

/* prev (0: idle) leaves the CPU for next (0: idle); runtimes 0 = unknown */
static void sw(uint64_t ts, uint32_t prev, uint32_t state, uint64_t prev_rt, uint32_t next,
	       uint64_t next_rt)
{
	rt_test_sched_switch(c, PID, ts, prev, state, next, prev_rt, next_rt);
}

static void wake(uint64_t ts, uint32_t waker, uint32_t target)
{
	rt_test_waking(c, ts, waker ? PID : 0, waker, PID, target);
}

/* I/O of `tid` on fd (the connection from port 40000 + fd) */
static void sock_on(uint16_t kind, uint64_t ts, uint32_t tid, int fd, const char *data)
{
	rt_test_sock_io(c, kind, ts - US, ts, PID, tid, fd, (uint16_t)(40000 + fd), data,
			strlen(data));
}

static void sock(uint16_t kind, uint64_t ts, const char *data)
{
	sock_on(kind, ts, HANDLER, 7, data);
}

/* `tid` accepts fd and reads request `id` on it at ts. */
static void request_on(uint64_t ts, uint32_t tid, int fd, const char *id)
{
	char buf[256];

	rt_test_conn(c, RT_EV_SOCK_ACCEPT, ts - 10 * US, PID, tid, fd, 8000,
		     (uint16_t)(40000 + fd));
	snprintf(buf, sizeof(buf),
		 "POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\n"
		 "Content-Length: 2\r\n\r\n{}",
		 id);
	sock_on(RT_EV_SOCK_RECV, ts, tid, fd, buf);
}

/* The handler accepts and reads request "a" at T0 + 1 ms, then wakes TOK at +2 ms. */
static void request_handed_to_tokenizer(void)
{
	sw(T0 + MS - 5 * US, 0, 0, 0, HANDLER, 1 * MS);
	request_on(T0 + MS, HANDLER, 7, "a");
	wake(T0 + 2 * MS, HANDLER, TOK);
	sw(T0 + 2 * MS + 5 * US, HANDLER, RT_TASK_BLOCKED, 2010 * US, 0, 0);
}

/* The handler answers at `ts` and the span comes out. */
static const struct rt_span *respond(uint64_t ts)
{
	wake(ts - 20 * US, 0, HANDLER);
	sw(ts - 10 * US, 0, 0, 0, HANDLER, 2010 * US);
	sock(RT_EV_SOCK_SEND, ts, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	rt_correlator__finish(c);
	assert_true(n_spans >= 1);
	assert_string_equal(spans[n_spans - 1].request_id, "a");
	return &spans[n_spans - 1];
}

static const struct rt_span_thread *thread_of(const struct rt_span *s, uint32_t tid)
{
	return rt_test_thread_of(s, tid);
}

static void test_steal_is_runqueue(void **state)
{
	const struct rt_span_thread *th;
	struct rt_correlator_stats st;
	const struct rt_span *s;

	(void)state;
	request_handed_to_tokenizer();
	/* on a CPU for 10 ms by the switches, 8.7 ms by the kernel's count */
	sw(T0 + 2 * MS + 10 * US, 0, 0, 0, TOK, 5 * MS);
	sw(T0 + 12 * MS + 10 * US, TOK, RT_TASK_BLOCKED, 5 * MS + 8700 * US, 0, 0);
	rt_correlator__stats(c, &st);
	assert_int_equal(st.not_run_ns, 1300 * US);
	s = respond(T0 + 20 * MS);
	th = thread_of(s, TOK);
	assert_non_null(th);
	assert_int_equal(th->on_cpu_ns, 8700 * US);
	/* 10 us from the wakeup to the switch-in, 1.3 ms not run */
	assert_int_equal(th->runq_ns, 1310 * US);
	assert_false(th->shared);
}

static void test_unknown_runtime_keeps_wall_time(void **state)
{
	const struct rt_span_thread *th;
	struct rt_correlator_stats st;

	(void)state;
	request_handed_to_tokenizer();
	/* a switch-in whose runtime is unknown (0): the stint is all on-CPU */
	sw(T0 + 2 * MS + 10 * US, 0, 0, 0, TOK, 0);
	sw(T0 + 12 * MS + 10 * US, TOK, RT_TASK_BLOCKED, 5 * MS, 0, 0);
	rt_correlator__stats(c, &st);
	assert_int_equal(st.not_run_ns, 0);
	th = thread_of(respond(T0 + 20 * MS), TOK);
	assert_non_null(th);
	assert_int_equal(th->on_cpu_ns, 10 * MS);
}

static void mark_for(uint16_t kind, uint64_t ts, uint32_t tid, uint32_t phase, char id)
{
	struct rt_ev_mark e = { 0 };

	rt_test_hdr(&e.hdr, kind, sizeof(e), ts, PID, tid);
	e.phase = phase;
	e.id_len = 1;
	e.request_id[0] = id;
	rt_correlator__event(c, &e.hdr, false);
}

static void mark(uint16_t kind, uint64_t ts, uint32_t tid, uint32_t phase)
{
	mark_for(kind, ts, tid, phase, 'a');
}

static void test_claim_for_another_ends_the_handoff(void **state)
{
	const struct rt_span_thread *th;
	struct rt_correlator_stats st;
	int i;

	(void)state;
	request_handed_to_tokenizer();
	/* "b" waits in the tokenizer's queue: it works through both without sleeping */
	request_on(T0 + 2500 * US, HANDLER + 10, 8, "b");
	sw(T0 + 2 * MS + 10 * US, 0, 0, 0, TOK, 0);
	mark_for(RT_EV_MARK_BEGIN, T0 + 2100 * US, TOK, RT_PHASE_TOKENIZE, 'a');
	mark_for(RT_EV_MARK_END, T0 + 10100 * US, TOK, RT_PHASE_TOKENIZE, 'a');
	mark_for(RT_EV_MARK_BEGIN, T0 + 10200 * US, TOK, RT_PHASE_TOKENIZE, 'b');
	mark_for(RT_EV_MARK_END, T0 + 18200 * US, TOK, RT_PHASE_TOKENIZE, 'b');
	sw(T0 + 18300 * US, TOK, RT_TASK_BLOCKED, 0, 0, 0);
	sock_on(RT_EV_SOCK_SEND, T0 + 25 * MS, HANDLER + 10, 8,
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	rt_correlator__stats(c, &st);
	/* the 100 us after b's work is neither a's nor b's */
	assert_int_equal(st.unattributed_cpu_ns, 100 * US);
	respond(T0 + 30 * MS);
	assert_int_equal(n_spans, 2);
	for (i = 0; i < n_spans; i++) {
		th = thread_of(&spans[i], TOK);
		assert_non_null(th);
		if (spans[i].request_id[0] == 'a')
			/* 90 us before its claim, 8 ms claimed, 100 us before b's claim */
			assert_int_equal(th->on_cpu_ns, 8190 * US);
		else
			assert_int_equal(th->on_cpu_ns, 8 * MS);
	}
}

/* TOK was seen leaving a CPU once: its runtime then is known. */
static void tokenizer_seen(void)
{
	sw(T0 + 100 * US, 0, 0, 0, TOK, 1 * MS);
	sw(T0 + 200 * US, TOK, RT_TASK_BLOCKED, 1100 * US, 0, 0);
}

static void test_missed_switch_in_by_runtime(void **state)
{
	const struct rt_span_thread *th;
	struct rt_correlator_stats st;

	(void)state;
	tokenizer_seen();
	request_handed_to_tokenizer();
	/* no switch-in; it leaves at +12 ms having run 8 ms: on from +4 ms */
	sw(T0 + 12 * MS, TOK, RT_TASK_BLOCKED, 1100 * US + 8 * MS, 0, 0);
	rt_correlator__stats(c, &st);
	assert_int_equal(st.missed_switch_ins, 1);
	th = thread_of(respond(T0 + 20 * MS), TOK);
	assert_non_null(th);
	assert_int_equal(th->on_cpu_ns, 8 * MS);
	assert_int_equal(th->runq_ns, 2 * MS);
}

static void test_missed_switch_in_by_own_record(void **state)
{
	const struct rt_span_thread *th;
	struct rt_correlator_stats st;

	(void)state;
	request_handed_to_tokenizer();
	/* no switch-in, runtimes unknown: its tokenize marker at +3 ms says it runs */
	mark(RT_EV_MARK_BEGIN, T0 + 3 * MS, TOK, RT_PHASE_TOKENIZE);
	mark(RT_EV_MARK_END, T0 + 11 * MS, TOK, RT_PHASE_TOKENIZE);
	sw(T0 + 11 * MS + 10 * US, TOK, RT_TASK_BLOCKED, 0, 0, 0);
	rt_correlator__stats(c, &st);
	assert_int_equal(st.missed_switch_ins, 1);
	th = thread_of(respond(T0 + 20 * MS), TOK);
	assert_non_null(th);
	assert_int_equal(th->on_cpu_ns, 8 * MS + 10 * US);
	assert_int_equal(th->runq_ns, 1 * MS);
}

/* TOK, handed "a", runs `first` then blocks; ENGINE releases the lock and wakes it. */
static const struct rt_span_thread *lock_between(uint64_t first)
{
	uint64_t t = T0 + 2 * MS + 10 * US;

	/* the engine is a thread we know, owning nothing */
	sw(T0 + 500 * US, 0, 0, 0, ENGINE, 1);
	sw(T0 + 600 * US, ENGINE, RT_TASK_BLOCKED, 1 + 100 * US, 0, 0);
	request_handed_to_tokenizer();
	sw(t, 0, 0, 0, TOK, 0);
	sw(t + first, TOK, RT_TASK_BLOCKED, 0, 0, 0);
	wake(t + first + 100 * US, 0, ENGINE);
	sw(t + first + 110 * US, 0, 0, 0, ENGINE, 0);
	wake(t + first + 120 * US, ENGINE, TOK);
	sw(t + first + 130 * US, ENGINE, RT_TASK_BLOCKED, 0, TOK, 0);
	sw(t + first + 130 * US + 8 * MS, TOK, RT_TASK_BLOCKED, 0, 0, 0);
	return thread_of(respond(T0 + 30 * MS), TOK);
}

static void test_handoff_survives_a_lock(void **state)
{
	const struct rt_span_thread *th;

	(void)state;
	th = lock_between(10 * US);
	assert_non_null(th);
	/* both bursts: 10 us, then the 8 ms of work */
	assert_int_equal(th->on_cpu_ns, 8 * MS + 10 * US);
}

static void test_wakeup_racing_its_sleep(void **state)
{
	const struct rt_span_thread *th;
	uint64_t t = T0 + 2 * MS + 10 * US;

	(void)state;
	request_handed_to_tokenizer();
	sw(t, 0, 0, 0, TOK, 0);
	/* the mutex's holder wakes it while it is still on its CPU going to sleep */
	wake(t + 10 * US, HANDLER, TOK);
	sw(t + 12 * US, TOK, RT_TASK_BLOCKED, 0, 0, 0);
	/* queued by that wakeup: back with no second one, and does the work */
	sw(t + 40 * US, 0, 0, 0, TOK, 0);
	sw(t + 40 * US + 8 * MS, TOK, RT_TASK_BLOCKED, 0, 0, 0);
	th = thread_of(respond(T0 + 30 * MS), TOK);
	assert_non_null(th);
	assert_int_equal(th->on_cpu_ns, 8 * MS + 12 * US);
}

static void test_work_done_ends_the_handoff(void **state)
{
	const struct rt_span_thread *th;
	struct rt_correlator_stats st;

	(void)state;
	th = lock_between(2 * MS);
	assert_non_null(th);
	/* the first burst worked for "a"; who the second works for, nobody says */
	assert_int_equal(th->on_cpu_ns, 2 * MS);
	rt_correlator__stats(c, &st);
	assert_true(st.unattributed_cpu_ns >= 8 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_steal_is_runqueue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_runtime_keeps_wall_time, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_missed_switch_in_by_runtime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missed_switch_in_by_own_record, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_handoff_survives_a_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wakeup_racing_its_sleep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claim_for_another_ends_the_handoff, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_work_done_ends_the_handoff, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
