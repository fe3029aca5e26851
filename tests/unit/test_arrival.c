// SPDX-License-Identifier: BSD-2-Clause
/*
 * The correlator's arrival rules (docs/spans.md, "Arrival"): an ARRIVAL
 * record belongs to the read it precedes; a request that begins at that
 * read's first byte gets its data_ns as arrival_ns and a backlog phase
 * (start - arrival) at the head of the partition; a request pipelined in
 * the middle of a read gets none; RT_ARR_LEFT_UNREAD makes the backlog a
 * lower bound; an arrival after the read, or one for another read, is not
 * used; a recording without ARRIVAL records gives the spans it always did.
 */
#include "corr_harness.h"

#define PID 100
#define HANDLER 102
#define OTHER_TID 103
#define FD 7
#define US 1000ULL
#define MS 1000000ULL
#define T0 (1000 * MS)

#define REQ "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
#define REQ2 "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
#define RESP "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

static struct rt_correlator *c;
static struct rt_span spans[8];
static int n_spans;
static struct rt_test_sink sink = RT_TEST_SINK(spans, n_spans);

static int setup_common(bool accept)
{
	c = rt_test_correlator_for(&sink, T0, PID, "svc");
	if (accept)
		rt_test_accept_bare(c, T0 + 1 * US, PID, HANDLER, FD, 40000);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return setup_common(true);
}

/* The handler's accept call predates tracing: the connection is first seen by a read. */
static int setup_no_accept(void **state)
{
	(void)state;
	return setup_common(false);
}

static int teardown(void **state)
{
	(void)state;
	rt_correlator__free(c);
	c = NULL;
	return 0;
}

static void io(uint16_t kind, uint64_t ts, uint32_t tid, const char *data)
{
	rt_test_sock_io(c, kind, ts - 2 * US, ts, PID, tid, FD, 40000, data, strlen(data));
}

static void arrival_est(uint64_t ts, uint32_t tid, uint64_t data_ns, uint32_t flags,
			uint64_t established_ns)
{
	struct rt_ev_sock_arrival e = { 0 };

	rt_test_hdr(&e.hdr, RT_EV_SOCK_ARRIVAL, sizeof(e), ts, PID, tid);
	e.data_ns = data_ns;
	e.established_ns = established_ns;
	e.fd = FD;
	e.flags = flags;
	rt_correlator__event(c, &e.hdr, false);
}

static void arrival(uint64_t ts, uint32_t tid, uint64_t data_ns, uint32_t flags)
{
	arrival_est(ts, tid, data_ns, flags, T0);
}

static struct rt_correlator_stats stats(void)
{
	struct rt_correlator_stats st;

	rt_correlator__stats(c, &st);
	return st;
}

static int64_t sum_phases(const struct rt_span *s)
{
	int64_t sum = 0;
	int p;

	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (s->phase_ns[p] != RT_NULL_NS)
			sum += s->phase_ns[p];
	return sum;
}

static void test_arrival_applied(void **state)
{
	const uint64_t arr = T0 + 2 * MS, start = T0 + 9 * MS, end = T0 + 20 * MS;
	const struct rt_span *s;
	char *j;

	(void)state;
	arrival(start, HANDLER, arr, 0);
	io(RT_EV_SOCK_RECV, start, HANDLER, REQ);
	io(RT_EV_SOCK_SEND, end, HANDLER, RESP);
	assert_int_equal(n_spans, 1);
	s = &spans[0];
	assert_int_equal(s->arrival_ns, arr);
	assert_int_equal(s->start_ns, start);
	assert_int_equal(s->phase_ns[RT_PHASE_BACKLOG], (int64_t)(start - arr));
	assert_int_equal(s->phase_source[RT_PHASE_BACKLOG], RT_PSRC_PROBE);
	assert_int_equal(rt_span_duration_ns(s), (int64_t)(end - arr));
	/* the partition now starts at the arrival */
	assert_int_equal(sum_phases(s), (int64_t)(end - arr));
	assert_false(s->flags & RT_SPAN_BACKLOG_LOWER_BOUND);
	assert_int_equal(stats().arrivals_applied, 1);
	j = rt_test_span_json(s);
	assert_non_null(strstr(j, "\"arrival_ns\":1002000000,\"start_ns\":1009000000"));
	assert_non_null(strstr(j, "\"duration_ms\":18.000"));
	assert_non_null(strstr(j, "\"phases\":{\"backlog_ms\":7.000,\"receive_ms\":0.000"));
	assert_non_null(strstr(j, "\"phase_source\":{\"backlog\":\"probe\""));
	free(j);
}

/* Two requests in one read: the second may have come later than the read's first byte. */
static void test_pipelined_in_read_gets_null(void **state)
{
	const uint64_t arr = T0 + 2 * MS, start = T0 + 5 * MS;

	(void)state;
	arrival(start, HANDLER, arr, 0);
	io(RT_EV_SOCK_RECV, start, HANDLER, REQ REQ2);
	io(RT_EV_SOCK_SEND, T0 + 8 * MS, HANDLER, RESP);
	io(RT_EV_SOCK_SEND, T0 + 9 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 2);
	assert_string_equal(spans[0].path, "/a");
	assert_int_equal(spans[0].arrival_ns, arr);
	assert_string_equal(spans[1].path, "/b");
	assert_int_equal(spans[1].arrival_ns, 0);
	assert_int_equal(spans[1].phase_ns[RT_PHASE_BACKLOG], RT_NULL_NS);
	assert_true(spans[1].flags & RT_SPAN_PIPELINED);
	assert_int_equal(rt_span_duration_ns(&spans[1]), (int64_t)(T0 + 9 * MS - start));
}

static void test_left_unread_flags_lower_bound(void **state)
{
	const uint64_t arr = T0 + 3 * MS, start = T0 + 5 * MS;
	char *j;

	(void)state;
	arrival(start, HANDLER, arr, RT_ARR_LEFT_UNREAD);
	io(RT_EV_SOCK_RECV, start, HANDLER, REQ);
	io(RT_EV_SOCK_SEND, T0 + 8 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 1);
	/* an upper bound of the arrival, used as is: the backlog is at least this */
	assert_int_equal(spans[0].arrival_ns, arr);
	assert_int_equal(spans[0].phase_ns[RT_PHASE_BACKLOG], (int64_t)(start - arr));
	assert_true(spans[0].flags & RT_SPAN_BACKLOG_LOWER_BOUND);
	j = rt_test_span_json(&spans[0]);
	assert_non_null(strstr(j, "\"flags\":[\"backlog_lower_bound\"]"));
	free(j);
}

static void test_bad_arrival_ignored(void **state)
{
	const uint64_t start = T0 + 5 * MS;

	(void)state;
	/* after the read's exit: impossible, so not used */
	arrival(start, HANDLER, start + 1, 0);
	io(RT_EV_SOCK_RECV, start, HANDLER, REQ);
	io(RT_EV_SOCK_SEND, T0 + 8 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].arrival_ns, 0);
	assert_int_equal(spans[0].phase_ns[RT_PHASE_BACKLOG], RT_NULL_NS);
	assert_int_equal(rt_span_duration_ns(&spans[0]), (int64_t)(3 * MS));
	assert_int_equal(stats().arrivals_refused, 1);
	assert_int_equal(stats().arrivals_applied, 0);

	/* before the previous request on the connection ended: refused too */
	arrival(T0 + 12 * MS, HANDLER, T0 + 7 * MS, 0);
	io(RT_EV_SOCK_RECV, T0 + 12 * MS, HANDLER, REQ2);
	io(RT_EV_SOCK_SEND, T0 + 14 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 2);
	assert_int_equal(spans[1].arrival_ns, 0);
	assert_int_equal(stats().arrivals_refused, 2);

	/* written for another thread's read (or another instant): not this read's */
	arrival(T0 + 20 * MS, OTHER_TID, T0 + 19 * MS, 0);
	io(RT_EV_SOCK_RECV, T0 + 20 * MS, HANDLER, REQ);
	arrival(T0 + 30 * MS, HANDLER, T0 + 29 * MS, 0);
	io(RT_EV_SOCK_SEND, T0 + 31 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 3);
	assert_int_equal(spans[2].arrival_ns, 0);
	assert_int_equal(stats().arrivals_applied, 0);
}

/* A read that ends one request and begins the next: the next began mid-read. */
static void test_begins_mid_read_gets_null(void **state)
{
	const uint64_t arr = T0 + 1 * MS, start = T0 + 2 * MS;

	(void)state;
	io(RT_EV_SOCK_RECV, start, HANDLER, "GET /a HTTP/1.1\r\nHo");
	arrival(T0 + 4 * MS, HANDLER, arr, 0);
	io(RT_EV_SOCK_RECV, T0 + 4 * MS, HANDLER, "st: x\r\n\r\n" REQ2);
	io(RT_EV_SOCK_SEND, T0 + 6 * MS, HANDLER, RESP);
	io(RT_EV_SOCK_SEND, T0 + 7 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 2);
	assert_int_equal(spans[0].arrival_ns, 0);
	assert_string_equal(spans[1].path, "/b");
	assert_int_equal(spans[1].arrival_ns, 0);
	assert_int_equal(spans[1].phase_ns[RT_PHASE_BACKLOG], RT_NULL_NS);
	assert_int_equal(stats().arrivals_unused, 1);
}

/* A read that continues a request began none: its arrival says nothing of the request. */
static void test_continuation_read_unused(void **state)
{
	const uint64_t arr = T0 + 1 * MS, start = T0 + 2 * MS;

	(void)state;
	arrival(start, HANDLER, arr, 0);
	io(RT_EV_SOCK_RECV, start, HANDLER, "GET /a HTTP/1.1\r\nHo");
	arrival(T0 + 4 * MS, HANDLER, T0 + 3 * MS, 0);
	io(RT_EV_SOCK_RECV, T0 + 4 * MS, HANDLER, "st: x\r\n\r\n");
	io(RT_EV_SOCK_SEND, T0 + 6 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].arrival_ns, arr);
	assert_int_equal(spans[0].received_ns, T0 + 4 * MS);
	assert_int_equal(stats().arrivals_applied, 1);
	assert_int_equal(stats().arrivals_unused, 1);
}

/*
 * No ACCEPT record (a handler blocked in accept before tracing began), but
 * the kernel side saw the handshake: the connection began while we watched,
 * so its first read is its first, and the request's arrival stands.
 */
static void test_unseen_accept_handshake_seen(void **state)
{
	const uint64_t arr = T0 + 2 * MS, start = T0 + 9 * MS;

	(void)state;
	arrival_est(start, HANDLER, arr, 0, T0 + 1 * MS);
	io(RT_EV_SOCK_RECV, start, HANDLER, REQ);
	io(RT_EV_SOCK_SEND, T0 + 20 * MS, HANDLER, RESP);
	arrival_est(T0 + 40 * MS, HANDLER, T0 + 30 * MS, 0, T0 + 1 * MS);
	io(RT_EV_SOCK_RECV, T0 + 40 * MS, HANDLER, REQ2);
	io(RT_EV_SOCK_SEND, T0 + 50 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 2);
	assert_int_equal(spans[0].arrival_ns, arr);
	assert_int_equal(spans[0].phase_ns[RT_PHASE_BACKLOG], (int64_t)(start - arr));
	assert_int_equal(spans[1].arrival_ns, T0 + 30 * MS);
	assert_int_equal(stats().arrivals_applied, 2);
}

/* Neither the accept nor the handshake seen: it may be mid-stream, no arrival. */
static void test_unseen_accept_handshake_unseen(void **state)
{
	const uint64_t start = T0 + 9 * MS;

	(void)state;
	arrival_est(start, HANDLER, T0 + 2 * MS, 0, 0);
	io(RT_EV_SOCK_RECV, start, HANDLER, REQ);
	io(RT_EV_SOCK_SEND, T0 + 20 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].arrival_ns, 0);
	assert_int_equal(spans[0].phase_ns[RT_PHASE_BACKLOG], RT_NULL_NS);
	assert_int_equal(stats().arrivals_applied, 0);
	assert_int_equal(stats().arrivals_unused, 1);
}

/* No ARRIVAL records (an old recording): spans exactly as before, the new fields null. */
static void test_old_recording_unchanged(void **state)
{
	const uint64_t start = T0 + 5 * MS, end = T0 + 9 * MS;
	char *j;

	(void)state;
	io(RT_EV_SOCK_RECV, start, HANDLER, REQ);
	io(RT_EV_SOCK_SEND, end, HANDLER, RESP);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].arrival_ns, 0);
	assert_int_equal(spans[0].phase_ns[RT_PHASE_BACKLOG], RT_NULL_NS);
	assert_int_equal(rt_span_duration_ns(&spans[0]), (int64_t)(end - start));
	assert_int_equal(sum_phases(&spans[0]), (int64_t)(end - start));
	j = rt_test_span_json(&spans[0]);
	assert_non_null(strstr(j, "\"arrival_ns\":null,\"start_ns\":1005000000"));
	assert_non_null(strstr(j, "\"duration_ms\":4.000"));
	assert_non_null(strstr(j, "\"phases\":{\"backlog_ms\":null,\"receive_ms\":"));
	assert_null(strstr(j, "\"backlog\":"));
	free(j);
	assert_int_equal(
		stats().arrivals_applied + stats().arrivals_refused + stats().arrivals_unused, 0);
}

/* A marker cannot name backlog: the record is refused, the phase stays the probe's. */
static void test_marker_cannot_mark_backlog(void **state)
{
	struct rt_ev_mark m = { 0 };
	const uint64_t arr = T0 + 2 * MS, start = T0 + 5 * MS;
	uint64_t invalid;

	(void)state;
	arrival(start, HANDLER, arr, 0);
	io(RT_EV_SOCK_RECV, start, HANDLER, "GET /a HTTP/1.1\r\nx-request-id: r1\r\n\r\n");
	invalid = stats().invalid_events;
	rt_test_hdr(&m.hdr, RT_EV_MARK_BEGIN, sizeof(m), start + 1 * MS, PID, HANDLER);
	m.phase = RT_PHASE_BACKLOG;
	m.id_len = 2;
	memcpy(m.request_id, "r1", 2);
	rt_correlator__event(c, &m.hdr, false);
	assert_int_equal(stats().invalid_events, invalid + 1);
	io(RT_EV_SOCK_SEND, T0 + 9 * MS, HANDLER, RESP);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].phase_ns[RT_PHASE_BACKLOG], (int64_t)(start - arr));
	assert_int_equal(spans[0].phase_source[RT_PHASE_BACKLOG], RT_PSRC_PROBE);
}

/* The JSON reader takes back what the writer wrote. */
static void test_json_round_trip(void **state)
{
	struct rt_span s, back;
	char *j;

	(void)state;
	rt_span_init(&s);
	snprintf(s.request_id, sizeof(s.request_id), "r");
	s.arrival_ns = 1000000000123ULL;
	s.start_ns = 1000000500123ULL;
	s.end_ns = 1000002000123ULL;
	s.phase_ns[RT_PHASE_BACKLOG] = 500000;
	s.phase_source[RT_PHASE_BACKLOG] = RT_PSRC_PROBE;
	s.flags = RT_SPAN_BACKLOG_LOWER_BOUND;
	j = rt_test_span_json(&s);
	assert_int_equal(rt_span_from_json(j, &back), 0);
	free(j);
	assert_int_equal(back.arrival_ns, s.arrival_ns);
	assert_int_equal(back.phase_ns[RT_PHASE_BACKLOG], 500000);
	assert_int_equal(back.phase_source[RT_PHASE_BACKLOG], RT_PSRC_PROBE);
	assert_int_equal(back.flags, RT_SPAN_BACKLOG_LOWER_BOUND);
	assert_string_equal(rt_phase_name(RT_PHASE_BACKLOG), "backlog");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_arrival_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_in_read_gets_null, setup, teardown),
		cmocka_unit_test_setup_teardown(test_left_unread_flags_lower_bound, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_arrival_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_begins_mid_read_gets_null, setup, teardown),
		cmocka_unit_test_setup_teardown(test_continuation_read_unused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_recording_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_marker_cannot_mark_backlog, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unseen_accept_handshake_seen, setup_no_accept,
						teardown),
		cmocka_unit_test_setup_teardown(test_unseen_accept_handshake_unseen,
						setup_no_accept, teardown),
		cmocka_unit_test(test_json_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
