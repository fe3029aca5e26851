// SPDX-License-Identifier: BSD-2-Clause
/*
 * A span's timeline (docs/spans.md, "Timeline") from synthetic scheduler,
 * socket and marker records fed to a real correlator:
 *
 * - on-CPU pieces cut by marker records are one slice, clipped to the span;
 * - beyond RT_SPAN_SLICES_MAX the shortest slices go and are counted;
 * - marker intervals become the phase's intervals, probe phases are kept
 *   first, and what the bound leaves out is counted;
 * - a probe comm wait piece lies inside pre_first_token, whose total is
 *   its interval less that piece.
 *
 * The generator's sweep (replay_sweep, compare_replay.py) checks the same
 * invariants on every scenario.
 */
#include "corr_harness.h"

#define PID 100
#define ENGINE 101
#define HANDLER 102
#define ENGINE2 103
#define US 1000ULL
#define MS 1000000ULL
#define T0 (1000 * MS)

static struct rt_correlator *c;
static struct rt_span span;
static int n_spans;

static void on_span(const struct rt_span *s, void *ctx)
{
	(void)ctx;
	span = *s;
	n_spans++;
}

static void hdr(struct rt_event_hdr *h, uint16_t kind, uint16_t size, uint64_t ts, uint32_t tid)
{
	rt_test_hdr(h, kind, size, ts, PID, tid);
}

static int setup(void **state)
{
	(void)state;
	n_spans = 0;
	c = rt_test_correlator(on_span, NULL);
	rt_test_target(c, T0, PID, "svc");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rt_correlator__free(c);
	c = NULL;
	return 0;
}

/* prev (0: idle) leaves the CPU (blocked or preempted) for next (0: idle) */
static void sw(uint64_t ts, uint32_t prev, uint32_t state, uint32_t next)
{
	const struct rt_test_sw s = { .ts = ts,
				      .prev = prev,
				      .next = next,
				      .state = state,
				      .prev_comm = "",
				      .next_comm = "" };

	rt_test_switch(c, PID, &s);
}

static void wake(uint64_t ts, uint32_t waker, uint32_t target)
{
	rt_test_waking(c, ts, PID, waker, PID, target);
}

/* I/O of tid on fd, blocked from enter to ts */
static void io_n(uint16_t kind, uint64_t enter, uint64_t ts, uint32_t tid, int fd, const char *data,
		 size_t len)
{
	rt_test_sock_io(c, kind, enter, ts, PID, tid, fd, (uint16_t)(40000 + fd), data, len);
}

static void io(uint16_t kind, uint64_t enter, uint64_t ts, uint32_t tid, int fd, const char *data)
{
	io_n(kind, enter, ts, tid, fd, data, strlen(data));
}

static void conn(uint16_t kind, uint64_t ts, uint32_t tid, int fd)
{
	bool acc = kind == RT_EV_SOCK_ACCEPT;

	rt_test_conn(c, kind, ts, PID, tid, fd, acc ? 8000 : 50000,
		     acc ? (uint16_t)(40000 + fd) : 9000);
}

/* The handler accepts and reads request "a" at ts (on a CPU already). */
static void request(uint64_t ts)
{
	conn(RT_EV_SOCK_ACCEPT, ts - 10 * US, HANDLER, 7);
	io(RT_EV_SOCK_RECV, ts - US, ts, HANDLER, 7,
	   "POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: a\r\n"
	   "Content-Length: 2\r\n\r\n{}");
}

/* The handler wakes, answers with a write [ts - 1 us, ts], and the span comes out. */
static void respond(uint64_t ts)
{
	wake(ts - 20 * US, 0, HANDLER);
	sw(ts - 10 * US, 0, 0, HANDLER);
	io(RT_EV_SOCK_SEND, ts - US, ts, HANDLER, 7,
	   "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	rt_correlator__finish(c);
	assert_int_equal(n_spans, 1);
	assert_string_equal(span.request_id, "a");
}

static void mark(uint16_t kind, uint64_t ts, uint32_t phase)
{
	struct rt_ev_mark e = { 0 };

	hdr(&e.hdr, kind, sizeof(e), ts, HANDLER);
	e.phase = phase;
	e.id_len = 1;
	e.request_id[0] = 'a';
	rt_correlator__event(c, &e.hdr, false);
}

static uint32_t count_phase(enum rt_phase p)
{
	uint32_t i, n = 0;

	for (i = 0; i < span.n_intervals; i++)
		n += span.intervals[i].phase == p;
	return n;
}

static void assert_in_order(void)
{
	uint32_t i;

	for (i = 0; i < span.n_intervals; i++) {
		assert_true(span.intervals[i].start_ns < span.intervals[i].end_ns);
		assert_true(span.intervals[i].start_ns >= span.start_ns);
		assert_true(span.intervals[i].end_ns <= span.end_ns);
		if (i)
			assert_true(span.intervals[i - 1].start_ns <= span.intervals[i].start_ns);
	}
	for (i = 0; i < span.cpu.n_slices; i++) {
		assert_true(span.cpu.slices[i].start_ns < span.cpu.slices[i].end_ns);
		assert_true(span.cpu.slices[i].start_ns >= span.start_ns);
		assert_true(span.cpu.slices[i].end_ns <= span.end_ns);
		if (i)
			assert_true(span.cpu.slices[i - 1].start_ns <= span.cpu.slices[i].start_ns);
	}
}

static void test_pieces_are_one_slice(void **state)
{
	const struct rt_span_interval *iv;

	(void)state;
	sw(T0 + MS - 20 * US, 0, 0, HANDLER);
	request(T0 + MS);
	/* two claims cut the stint into five pieces: residual and claimed alternate */
	mark(RT_EV_MARK_BEGIN, T0 + 1200 * US, RT_PHASE_TOKENIZE);
	mark(RT_EV_MARK_END, T0 + 1500 * US, RT_PHASE_TOKENIZE);
	mark(RT_EV_MARK_BEGIN, T0 + 1600 * US, RT_PHASE_TOKENIZE);
	mark(RT_EV_MARK_END, T0 + 1800 * US, RT_PHASE_TOKENIZE);
	sw(T0 + 2005 * US, HANDLER, RT_TASK_BLOCKED, 0);
	respond(T0 + 20 * MS);
	assert_in_order();

	assert_int_equal(span.cpu.n_threads, 1);
	/* the stint from 20 us before the read, and the answer's 10 us */
	assert_int_equal(span.cpu.threads[0].on_cpu_ns, 1025 * US + 10 * US);
	assert_int_equal(span.cpu.n_slices, 2);
	assert_int_equal(span.cpu.slices_dropped, 0);
	/* drawn from the span's start: the 20 us before it stay in on_cpu_ns only */
	assert_int_equal(span.cpu.slices[0].start_ns, span.start_ns);
	assert_int_equal(span.cpu.slices[0].end_ns, T0 + 2005 * US);
	assert_int_equal(span.cpu.slices[0].tid, HANDLER);
	assert_false(span.cpu.slices[0].shared);
	assert_int_equal(span.cpu.slices[1].start_ns, T0 + 20 * MS - 10 * US);
	assert_int_equal(span.cpu.slices[1].end_ns, span.end_ns);

	/* tokenize: its two marker intervals; pre_first_token gave way to it */
	assert_int_equal(span.phase_ns[RT_PHASE_TOKENIZE], 500 * US);
	assert_int_equal(span.phase_ns[RT_PHASE_PRE_FIRST_TOKEN], RT_NULL_NS);
	assert_int_equal(count_phase(RT_PHASE_TOKENIZE), 2);
	assert_int_equal(count_phase(RT_PHASE_PRE_FIRST_TOKEN), 0);
	assert_int_equal(count_phase(RT_PHASE_OTHER), 0);
	/* receive took one read: 0 ms, nothing drawn */
	assert_int_equal(span.phase_ns[RT_PHASE_RECEIVE], 0);
	assert_int_equal(count_phase(RT_PHASE_RECEIVE), 0);
	assert_int_equal(span.n_intervals, 3);
	assert_int_equal(span.intervals_dropped, 0);
	iv = &span.intervals[0];
	assert_int_equal(iv->phase, RT_PHASE_TOKENIZE);
	assert_int_equal(iv->source, RT_PSRC_MARKER);
	assert_int_equal(iv->start_ns, T0 + 1200 * US);
	assert_int_equal(iv->end_ns, T0 + 1500 * US);
	assert_int_equal(span.intervals[1].start_ns, T0 + 1600 * US);
	iv = &span.intervals[2];
	assert_int_equal(iv->phase, RT_PHASE_POSTPROCESS);
	assert_int_equal(iv->source, RT_PSRC_PROBE);
	assert_int_equal(iv->start_ns, span.end_ns - US); /* the answer's write entry */
	assert_int_equal(iv->end_ns, span.end_ns);
	assert_int_equal(span.phase_ns[RT_PHASE_POSTPROCESS], US);
}

#define STINTS 40

static void test_slices_bounded_shortest_go(void **state)
{
	uint64_t ts = T0 + 1500 * US;
	uint32_t i;

	(void)state;
	sw(T0 + MS - 20 * US, 0, 0, HANDLER);
	request(T0 + MS);
	mark(RT_EV_MARK_BEGIN, T0 + MS + 10 * US, RT_PHASE_TOKENIZE);
	/* a long stint, then preempted again and again: 10 us on, 5 us waiting */
	sw(ts, HANDLER, RT_TASK_RUNNING, 0);
	for (i = 0; i < STINTS; i++) {
		sw(ts + 5 * US, 0, 0, HANDLER);
		if (i == STINTS - 1) /* the last stint is the burst's residual */
			mark(RT_EV_MARK_END, ts + 5 * US, RT_PHASE_TOKENIZE);
		ts += 15 * US;
		sw(ts, HANDLER, i == STINTS - 1 ? RT_TASK_BLOCKED : RT_TASK_RUNNING, 0);
	}
	/* when full, a longer slice takes the place of a shorter one */
	wake(T0 + 10 * MS, 0, HANDLER);
	sw(T0 + 10 * MS, 0, 0, HANDLER);
	sw(T0 + 10 * MS + 100 * US, HANDLER, RT_TASK_BLOCKED, 0);
	respond(T0 + 20 * MS);
	assert_in_order();

	/* 1 long + STINTS short + 100 us + the answer's: the bound keeps 32 */
	assert_int_equal(span.cpu.n_slices, RT_SPAN_SLICES_MAX);
	assert_int_equal(span.cpu.slices_dropped, STINTS + 3 - RT_SPAN_SLICES_MAX);
	/* the long one stays, merged across the claim's start, clipped at the start */
	assert_int_equal(span.cpu.slices[0].start_ns, span.start_ns);
	assert_int_equal(span.cpu.slices[0].end_ns, T0 + 1500 * US);
	for (i = 1; i < span.cpu.n_slices - 1; i++)
		assert_int_equal(span.cpu.slices[i].end_ns - span.cpu.slices[i].start_ns, 10 * US);
	assert_int_equal(span.cpu.slices[i].start_ns, T0 + 10 * MS);
	assert_int_equal(span.cpu.slices[i].end_ns, T0 + 10 * MS + 100 * US);
	/* on_cpu_ns counts them all */
	assert_int_equal(span.cpu.threads[0].on_cpu_ns,
			 520 * US + STINTS * 10 * US + 100 * US + 10 * US);
}

#define PAIRS 40

static void test_intervals_bounded(void **state)
{
	uint64_t sum = 0;
	uint32_t i;

	(void)state;
	sw(T0 + MS - 20 * US, 0, 0, HANDLER);
	request(T0 + MS);
	/* queue marked 40 times (it claims no thread) */
	for (i = 0; i < PAIRS; i++) {
		mark(RT_EV_MARK_BEGIN, T0 + 2 * MS + i * 100 * US, RT_PHASE_QUEUE);
		mark(RT_EV_MARK_END, T0 + 2 * MS + i * 100 * US + 50 * US, RT_PHASE_QUEUE);
	}
	sw(T0 + 7 * MS, HANDLER, RT_TASK_BLOCKED, 0);
	respond(T0 + 20 * MS);
	assert_in_order();

	assert_int_equal(span.phase_ns[RT_PHASE_QUEUE], PAIRS * 50 * US);
	assert_int_equal(span.n_intervals, RT_SPAN_INTERVALS_MAX);
	/* the probe phase first, then as many marker intervals as fit */
	assert_int_equal(count_phase(RT_PHASE_POSTPROCESS), 1);
	assert_int_equal(count_phase(RT_PHASE_QUEUE), RT_SPAN_INTERVALS_MAX - 1);
	assert_int_equal(span.intervals_dropped, PAIRS - (RT_SPAN_INTERVALS_MAX - 1));
	for (i = 0; i < span.n_intervals; i++)
		if (span.intervals[i].phase == RT_PHASE_QUEUE)
			sum += span.intervals[i].end_ns - span.intervals[i].start_ns;
	/* what is drawn is less than the total by what was dropped */
	assert_int_equal(sum + span.intervals_dropped * 50 * US, span.phase_ns[RT_PHASE_QUEUE]);
}

static void test_comm_wait_inside(void **state)
{
	const uint64_t received = T0 + MS, blocked = T0 + 3 * MS, answer = T0 + 20 * MS;
	uint32_t i, n_comm = 0, n_pre = 0;

	(void)state;
	/* the engine talks to a peer rank over a connection it made */
	sw(T0, 0, 0, ENGINE);
	conn(RT_EV_SOCK_CONNECT, T0 + 10 * US, ENGINE, 9);
	io(RT_EV_SOCK_SEND, T0 + 19 * US, T0 + 20 * US, ENGINE, 9, "\x01\x02peer");
	sw(T0 + 30 * US, ENGINE, RT_TASK_BLOCKED, 0);

	sw(received - 20 * US, 0, 0, HANDLER);
	request(received);
	wake(received + 10 * US, HANDLER, ENGINE);
	sw(received + 20 * US, HANDLER, RT_TASK_BLOCKED, ENGINE);
	/* blocked 2 ms on the peer's reply, then it wakes the handler: served */
	io(RT_EV_SOCK_RECV, blocked, blocked + 2 * MS, ENGINE, 9, "\x03reply");
	wake(blocked + 2 * MS + 10 * US, ENGINE, HANDLER);
	sw(blocked + 2 * MS + 20 * US, ENGINE, RT_TASK_BLOCKED, 0);
	respond(answer);
	assert_in_order();

	assert_int_equal(span.phase_source[RT_PHASE_COMM_WAIT], RT_PSRC_PROBE);
	assert_int_equal(span.phase_ns[RT_PHASE_COMM_WAIT], 2 * MS);
	for (i = 0; i < span.n_intervals; i++) {
		const struct rt_span_interval *iv = &span.intervals[i];

		if (iv->phase == RT_PHASE_COMM_WAIT) {
			n_comm++;
			assert_int_equal(iv->start_ns, blocked);
			assert_int_equal(iv->end_ns, blocked + 2 * MS);
		} else if (iv->phase == RT_PHASE_PRE_FIRST_TOKEN) {
			n_pre++;
			assert_int_equal(iv->start_ns, received);
			assert_int_equal(iv->end_ns, answer - US);
		}
	}
	assert_int_equal(n_comm, 1);
	assert_int_equal(n_pre, 1);
	/* containment: the drawn interval less the comm wait inside it */
	assert_int_equal(span.phase_ns[RT_PHASE_PRE_FIRST_TOKEN],
			 (answer - US - received) - 2 * MS);
	/* the engine ran for the request: handed over, then serving it */
	assert_true(span.cpu.n_slices >= 2);
}

/* Two engine threads wait on their peers at once: the request waited once. */
static void test_overlapping_waits_count_once(void **state)
{
	const uint64_t received = T0 + MS, blocked = T0 + 3 * MS;
	uint32_t i, n_comm = 0;

	(void)state;
	sw(T0, 0, 0, ENGINE);
	conn(RT_EV_SOCK_CONNECT, T0 + 10 * US, ENGINE, 9);
	io(RT_EV_SOCK_SEND, T0 + 19 * US, T0 + 20 * US, ENGINE, 9, "\x01\x02peer");
	sw(T0 + 30 * US, ENGINE, RT_TASK_BLOCKED, ENGINE2);
	conn(RT_EV_SOCK_CONNECT, T0 + 40 * US, ENGINE2, 10);
	io(RT_EV_SOCK_SEND, T0 + 49 * US, T0 + 50 * US, ENGINE2, 10, "\x01\x02peer");
	sw(T0 + 60 * US, ENGINE2, RT_TASK_BLOCKED, 0);

	sw(received - 20 * US, 0, 0, HANDLER);
	request(received);
	sw(received + 20 * US, HANDLER, RT_TASK_BLOCKED, 0);
	/* [3, 5] ms and [4, 6] ms: 3 ms of waiting, not 4 */
	io(RT_EV_SOCK_RECV, blocked, blocked + 2 * MS, ENGINE, 9, "\x03reply");
	wake(blocked + 2 * MS + 10 * US, ENGINE, HANDLER);
	sw(blocked + 2 * MS + 20 * US, ENGINE, RT_TASK_BLOCKED, 0);
	io(RT_EV_SOCK_RECV, blocked + MS, blocked + 3 * MS, ENGINE2, 10, "\x03reply");
	wake(blocked + 3 * MS + 10 * US, ENGINE2, HANDLER);
	sw(blocked + 3 * MS + 20 * US, ENGINE2, RT_TASK_BLOCKED, 0);
	respond(T0 + 20 * MS);
	assert_in_order();

	assert_int_equal(span.phase_ns[RT_PHASE_COMM_WAIT], 3 * MS);
	for (i = 0; i < span.n_intervals; i++) {
		if (span.intervals[i].phase != RT_PHASE_COMM_WAIT)
			continue;
		n_comm++;
		assert_int_equal(span.intervals[i].start_ns, blocked);
		assert_int_equal(span.intervals[i].end_ns, blocked + 3 * MS);
	}
	assert_int_equal(n_comm, 1);
	assert_int_equal(span.phase_ns[RT_PHASE_PRE_FIRST_TOKEN],
			 (T0 + 20 * MS - US - received) - 3 * MS);
}

/* libzmq's first write on a connection: the 10-byte ZMTP signature alone */
static const char zmtp_sig[10] = { '\xff', 0, 0, 0, 0, 0, 0, 0, 1, '\x7f' };

/*
 * A ZeroMQ connection (vLLM's engine to its API server) is plumbing, not a
 * peer: a blocked read on it is no comm wait, whichever side's greeting
 * the probes saw first. `recv_first`: the peer's greeting is read before
 * ours is written.
 */
static void zmtp_case(bool recv_first)
{
	const uint64_t received = T0 + MS, blocked = T0 + 3 * MS, answer = T0 + 20 * MS;
	struct rt_correlator_stats st;
	char greet[11];

	memcpy(greet, zmtp_sig, sizeof(zmtp_sig));
	greet[10] = 3; /* major version, written once the peer's signature came */
	sw(T0, 0, 0, ENGINE);
	conn(RT_EV_SOCK_CONNECT, T0 + 10 * US, ENGINE, 9);
	if (recv_first) {
		io_n(RT_EV_SOCK_RECV, T0 + 12 * US, T0 + 13 * US, ENGINE, 9, greet, sizeof(greet));
		io(RT_EV_SOCK_SEND, T0 + 19 * US, T0 + 20 * US, ENGINE, 9, "\x01\x02peer");
	} else {
		io_n(RT_EV_SOCK_SEND, T0 + 19 * US, T0 + 20 * US, ENGINE, 9, zmtp_sig,
		     sizeof(zmtp_sig));
	}
	sw(T0 + 30 * US, ENGINE, RT_TASK_BLOCKED, 0);

	sw(received - 20 * US, 0, 0, HANDLER);
	request(received);
	wake(received + 10 * US, HANDLER, ENGINE);
	sw(received + 20 * US, HANDLER, RT_TASK_BLOCKED, ENGINE);
	io(RT_EV_SOCK_RECV, blocked, blocked + 2 * MS, ENGINE, 9, "\x03reply");
	wake(blocked + 2 * MS + 10 * US, ENGINE, HANDLER);
	sw(blocked + 2 * MS + 20 * US, ENGINE, RT_TASK_BLOCKED, 0);
	respond(answer);

	/* no comm wait at all (null), where a peer would have given 2 ms */
	assert_true(span.phase_ns[RT_PHASE_COMM_WAIT] == RT_NULL_NS);
	assert_int_equal(span.phase_source[RT_PHASE_COMM_WAIT], RT_PSRC_NONE);
	/* the engine's 2 ms blocked on it stay inside pre_first_token */
	assert_int_equal(span.phase_ns[RT_PHASE_PRE_FIRST_TOKEN], answer - US - received);
	rt_correlator__stats(c, &st);
	assert_int_equal(st.zmtp_conns, 1);
	assert_int_equal(st.peer_conns, 0);
}

static void test_zmtp_not_a_peer(void **state)
{
	(void)state;
	zmtp_case(false);
}

static void test_zmtp_read_first(void **state)
{
	(void)state;
	zmtp_case(true);
}

/* The same bytes without the 0x7F that ends the signature: a peer as before. */
static void test_not_zmtp_is_peer(void **state)
{
	struct rt_correlator_stats st;
	char almost[10];

	(void)state;
	memcpy(almost, zmtp_sig, sizeof(almost));
	almost[9] = 0x7e;
	sw(T0, 0, 0, ENGINE);
	conn(RT_EV_SOCK_CONNECT, T0 + 10 * US, ENGINE, 9);
	io_n(RT_EV_SOCK_SEND, T0 + 19 * US, T0 + 20 * US, ENGINE, 9, almost, sizeof(almost));
	rt_correlator__stats(c, &st);
	assert_int_equal(st.zmtp_conns, 0);
	assert_int_equal(st.peer_conns, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pieces_are_one_slice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slices_bounded_shortest_go, setup, teardown),
		cmocka_unit_test_setup_teardown(test_intervals_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_comm_wait_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlapping_waits_count_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zmtp_not_a_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zmtp_read_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_zmtp_is_peer, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
