// SPDX-License-Identifier: BSD-2-Clause
/*
 * Requests whose start the trace did not see (docs/spans.md,
 * "started_before_trace"): a daemon restarted under load joins connections
 * older than itself in the middle of a response. The response's bytes
 * make a span flagged started_before_trace whose start, duration, TTFT and
 * phases are null; what was seen (the response id, the events and gaps
 * written since, the usage, the end) is kept. Only on a connection first
 * seen by its I/O and before any request seen on it: a response without its
 * request on a connection the trace saw open makes nothing, and bytes that
 * do not hold up as a chunked event stream make nothing either.
 */
#include "corr_harness.h"

#define PID 100
#define HANDLER 102
#define FD 7
#define US 1000ULL
#define MS 1000000ULL
#define T0 (1000 * MS)

#define EV(text) "data: {\"id\":\"cmpl-abc\",\"choices\":[{\"index\":0,\"text\":\"" text "\"}]}\n\n"
#define USAGE                                                                                      \
	"data: {\"id\":\"cmpl-abc\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,"                \
	"\"completion_tokens\":8,\"total_tokens\":11}}\n\n"
#define DONE "data: [DONE]\n\n"
#define SSE_HEAD                                                                                   \
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: "                \
	"chunked\r\n\r\n"
#define REQ "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
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

/* The connection was accepted before the trace began: first seen by its I/O. */
static int setup(void **state)
{
	(void)state;
	return setup_common(false);
}

/* The trace saw the accept. */
static int setup_accepted(void **state)
{
	(void)state;
	return setup_common(true);
}

static int teardown(void **state)
{
	(void)state;
	rt_correlator__free(c);
	c = NULL;
	return 0;
}

static void io(uint16_t kind, uint64_t ts, const char *data)
{
	rt_test_sock_io(c, kind, ts - 2 * US, ts, PID, HANDLER, FD, 40000, data, strlen(data));
}

/* One write of one chunk (size line, data, CRLF), as servers stream events. */
static void chunk(uint64_t ts, const char *data)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%zx\r\n%s\r\n", strlen(data), data);
	io(RT_EV_SOCK_SEND, ts, buf);
}

/* The last write: usage, [DONE] and the terminating chunk. */
static void last_chunks(uint64_t ts)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%zx\r\n%s\r\n%zx\r\n%s\r\n0\r\n\r\n", strlen(USAGE), USAGE,
		 strlen(DONE), DONE);
	io(RT_EV_SOCK_SEND, ts, buf);
}

static void closed(uint64_t ts)
{
	struct rt_ev_sock_close e = { 0 };

	rt_test_hdr(&e.hdr, RT_EV_SOCK_CLOSE, sizeof(e), ts, PID, HANDLER);
	e.fd = FD;
	rt_correlator__event(c, &e.hdr, false);
}

static void assert_no_phase(const struct rt_span *s)
{
	int p;

	for (p = 0; p < RT_PHASE__COUNT; p++)
		assert_true(s->phase_ns[p] == RT_NULL_NS);
	assert_int_equal(s->n_intervals, 0);
}

/* Joined mid-body: the events written since, the usage and the end are known. */
static void test_mid_body(void **state)
{
	const struct rt_span *s;
	char *j;

	(void)state;
	chunk(T0 + 10 * MS, EV("b"));
	chunk(T0 + 20 * MS, EV("c"));
	chunk(T0 + 35 * MS, EV("d"));
	assert_int_equal(n_spans, 0);
	last_chunks(T0 + 40 * MS);
	assert_int_equal(n_spans, 1);
	s = &spans[0];
	assert_true(s->flags & RT_SPAN_STARTED_BEFORE_TRACE);
	assert_false(s->flags & RT_SPAN_INCOMPLETE);
	assert_int_equal(s->pid, PID);
	assert_string_equal(s->request_id, "100:7:1");
	assert_string_equal(s->response_id, "cmpl-abc");
	assert_string_equal(s->conn, "0.0.0.0:40000->0.0.0.0:8000");
	assert_int_equal(s->start_ns, 0);
	assert_int_equal(s->received_ns, 0);
	assert_int_equal(s->arrival_ns, 0);
	assert_int_equal(s->first_token_ns, 0); /* the first event seen is not the first token */
	assert_int_equal(s->status, 0); /* its status line went by before the trace */
	assert_int_equal(s->end_ns, T0 + 40 * MS);
	assert_int_equal(s->events_out, 3);
	assert_int_equal(s->tokens_out, 8);
	assert_int_equal(s->outcome, RT_OUTCOME_OK);
	assert_true(rt_span_duration_ns(s) == RT_NULL_NS);
	assert_true(rt_span_ttft_ns(s) == RT_NULL_NS);
	/* gaps between the events seen are real gaps */
	assert_true(s->itl_present);
	assert_int_equal(s->itl_max_ns, 15 * MS);
	assert_int_equal(s->itl_p50_ns, 10 * MS);
	assert_no_phase(s);
	j = rt_test_span_json(s);
	assert_non_null(strstr(j,
			       "\"method\":null,\"path\":null,\"status\":null,\"arrival_ns\":null,"
			       "\"start_ns\":null,\"received_ns\":null,\"first_token_ns\":null,"
			       "\"end_ns\":1040000000,\"duration_ms\":null,\"ttft_ms\":null,"
			       "\"events_out\":3,\"tokens_out\":8,\"response_id\":\"cmpl-abc\""));
	assert_non_null(strstr(j, "\"other_ms\":null}"));
	assert_non_null(strstr(j, "\"intervals\":[]"));
	assert_non_null(strstr(j, "\"outcome\":\"ok\",\"flags\":[\"started_before_trace\"]"));
	free(j);

	/* the next request on the connection is whole, and named as the second seen */
	io(RT_EV_SOCK_RECV, T0 + 50 * MS, REQ);
	io(RT_EV_SOCK_SEND, T0 + 60 * MS, RESP);
	assert_int_equal(n_spans, 2);
	s = &spans[1];
	assert_int_equal(s->flags, 0);
	assert_string_equal(s->request_id, "100:7:2");
	assert_int_equal(s->start_ns, T0 + 50 * MS);
	assert_int_equal(s->status, 200);
	assert_int_equal(rt_span_duration_ns(s), 10 * MS);
}

/* A response seen from its status line, its request not: status and first token known. */
static void test_whole_response(void **state)
{
	const struct rt_span *s;
	char buf[512];

	(void)state;
	io(RT_EV_SOCK_SEND, T0 + 5 * MS, SSE_HEAD);
	snprintf(buf, sizeof(buf), "%zx\r\n%s\r\n", strlen(EV("a")), EV("a"));
	io(RT_EV_SOCK_SEND, T0 + 10 * MS, buf);
	chunk(T0 + 20 * MS, EV("b"));
	last_chunks(T0 + 30 * MS);
	assert_int_equal(n_spans, 1);
	s = &spans[0];
	assert_int_equal(s->flags, RT_SPAN_STARTED_BEFORE_TRACE);
	assert_int_equal(s->status, 200);
	assert_int_equal(s->start_ns, 0);
	/* the whole response was seen: its first content event is the first token */
	assert_int_equal(s->first_token_ns, T0 + 10 * MS - 2 * US);
	assert_int_equal(s->events_out, 2);
	assert_int_equal(s->end_ns, T0 + 30 * MS);
	assert_true(rt_span_ttft_ns(s) == RT_NULL_NS);
	assert_true(rt_span_duration_ns(s) == RT_NULL_NS);
	assert_no_phase(s);
}

/* The tail of the request's body read first: still not its start, nor known as its end. */
static void test_request_tail_seen(void **state)
{
	const struct rt_span *s;

	(void)state;
	io(RT_EV_SOCK_RECV, T0 + 2 * MS, "lo\",\"max_tokens\":8,\"stream\":true}");
	io(RT_EV_SOCK_SEND, T0 + 5 * MS, SSE_HEAD);
	chunk(T0 + 10 * MS, EV("a"));
	last_chunks(T0 + 30 * MS);
	assert_int_equal(n_spans, 1);
	s = &spans[0];
	assert_int_equal(s->flags, RT_SPAN_STARTED_BEFORE_TRACE);
	assert_int_equal(s->start_ns, 0);
	assert_int_equal(s->received_ns, 0);
	assert_int_equal(s->status, 200);
	assert_int_equal(s->events_out, 1);
	assert_int_equal(s->end_ns, T0 + 30 * MS);
	assert_no_phase(s);
}

/* The end went unseen, then the client asks again: the response ended before. */
static void test_end_unseen(void **state)
{
	const struct rt_span *s;

	(void)state;
	chunk(T0 + 10 * MS, EV("b"));
	chunk(T0 + 20 * MS, EV("c"));
	io(RT_EV_SOCK_RECV, T0 + 50 * MS, REQ);
	assert_int_equal(n_spans, 1);
	s = &spans[0];
	assert_int_equal(s->flags, RT_SPAN_STARTED_BEFORE_TRACE | RT_SPAN_INCOMPLETE);
	assert_int_equal(s->end_ns, T0 + 20 * MS); /* the last write seen */
	assert_int_equal(s->events_out, 2);
	io(RT_EV_SOCK_SEND, T0 + 60 * MS, RESP);
	assert_int_equal(n_spans, 2);
	assert_int_equal(spans[1].flags, 0);
	assert_int_equal(spans[1].start_ns, T0 + 50 * MS);
}

/* The connection closes mid-response: aborted there, as any request. */
static void test_closed_mid_body(void **state)
{
	(void)state;
	chunk(T0 + 10 * MS, EV("b"));
	closed(T0 + 15 * MS);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].flags, RT_SPAN_STARTED_BEFORE_TRACE);
	assert_int_equal(spans[0].outcome, RT_OUTCOME_ABORTED);
	assert_int_equal(spans[0].end_ns, T0 + 15 * MS);
}

/* The trace saw the connection open: a response without its request is nobody's. */
static void test_accepted_no_span(void **state)
{
	(void)state;
	io(RT_EV_SOCK_SEND, T0 + 5 * MS, SSE_HEAD);
	chunk(T0 + 10 * MS, EV("b"));
	last_chunks(T0 + 20 * MS);
	io(RT_EV_SOCK_SEND, T0 + 30 * MS, RESP);
	assert_int_equal(n_spans, 0);
	io(RT_EV_SOCK_RECV, T0 + 50 * MS, REQ);
	io(RT_EV_SOCK_SEND, T0 + 60 * MS, RESP);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].flags, 0);
}

/* ... nor is the middle of one. */
static void test_accepted_mid_body(void **state)
{
	(void)state;
	chunk(T0 + 10 * MS, EV("b"));
	last_chunks(T0 + 20 * MS);
	closed(T0 + 30 * MS);
	assert_int_equal(n_spans, 0);
}

/* Bytes that are not a chunked event stream make no span, and spoil nothing. */
static void test_not_chunks(void **state)
{
	(void)state;
	/* the tail of a JSON body */
	io(RT_EV_SOCK_SEND, T0 + 10 * MS, "\"usage\":{\"completion_tokens\":8}}");
	/* shaped like a chunk-size line, but the chunk does not hold */
	io(RT_EV_SOCK_SEND, T0 + 12 * MS, "5\r\nnot a five byte chunk\r\n");
	io(RT_EV_SOCK_SEND, T0 + 14 * MS, "0\r\n\r\n");
	assert_int_equal(n_spans, 0);
	io(RT_EV_SOCK_RECV, T0 + 50 * MS, REQ);
	io(RT_EV_SOCK_SEND, T0 + 60 * MS, RESP);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].flags, 0);
	assert_string_equal(spans[0].request_id, "100:7:1");
	assert_int_equal(spans[0].status, 200);
}

/* A request seen whole first: a later response is its, nothing is cut. */
static void test_request_seen_first(void **state)
{
	(void)state;
	io(RT_EV_SOCK_RECV, T0 + 5 * MS, REQ);
	io(RT_EV_SOCK_SEND, T0 + 6 * MS, SSE_HEAD);
	chunk(T0 + 10 * MS, EV("b"));
	last_chunks(T0 + 20 * MS);
	assert_int_equal(n_spans, 1);
	assert_int_equal(spans[0].flags, 0);
	assert_int_equal(spans[0].start_ns, T0 + 5 * MS);
	assert_int_equal(spans[0].events_out, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mid_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whole_response, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_tail_seen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_end_unseen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_mid_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accepted_no_span, setup_accepted, teardown),
		cmocka_unit_test_setup_teardown(test_accepted_mid_body, setup_accepted, teardown),
		cmocka_unit_test_setup_teardown(test_not_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_seen_first, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
