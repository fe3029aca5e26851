// SPDX-License-Identifier: BSD-2-Clause
/*
 * vLLM engine messages through a real correlator (src/correlate/vllm.c,
 * docs/spans.md "vLLM"): synthetic ZMQ_MSG frames as the two processes of
 * a vLLM V1 server make them (the API server's event loop sends ADD on its
 * ROUTER and receives EngineCoreOutputs on its PULL; the engine's input
 * thread receives, its output thread sends), beside the HTTP request and
 * its SSE response, and the span that comes out.
 *
 * The msgpack is written here field by field after the layouts that
 * tests/unit/test_vllm_decode.c derives by hand from vLLM 364631ab
 * (EngineCoreRequest: 16 fields, external_req_id last; EngineCoreOutputs:
 * 8; EngineCoreOutput: 13; events as maps).
 *
 * - join by the response id of the SSE chunks (no X-Request-Id): tokenize,
 *   engine queue, prefill, decode from pack, outputs counted, stream cost;
 * - join by X-Request-Id, completions (`-0` per prompt), events off,
 *   response not streamed and without an id;
 * - a stream that loses its place in the middle of a request: incomplete;
 *   a request of another stream is not;
 * - a completions request with two prompts: both engine requests join it;
 * - the table's bound: the oldest unjoined entry goes, counted;
 * - an unknown message shape is counted and ignored;
 * - the tokenizer executor's burst, woken by an event loop that owns two
 *   requests, goes to the ADDs sent after it by prompt tokens; a libzmq
 *   I/O thread's is not held; a hold no ADD follows in time is dropped;
 * - the event loop's burst that sent one request's ADD is that request's
 *   alone, not split among every request the loop holds I/O for.
 */
#include "corr_harness.h"

#define API 100
#define LOOP 100 /* the API server's event-loop thread */
#define EXEC 101 /* the API server's tokenizer executor */
#define ZMQIO 102 /* the API server's libzmq I/O thread */
#define ENG 200
#define ENG_IN 202
#define ENG_OUT 203
#define SOCK_ROUTER 0x1000
#define SOCK_PULL 0x2000
#define SOCK_DEALER 0x3000
#define SOCK_PUSH 0x4000
#define US 1000ULL
#define MS 1000000ULL
#define T0 (1000 * MS)
#define AT(ms) (T0 + (uint64_t)((ms) * (double)MS + 0.5))

static struct rt_correlator *c;
static uint8_t n_prompt = 3; /* prompt tokens of the next ADD (< 16) */
static struct rt_span spans[8];
static int n_spans;
static struct rt_test_sink sink = RT_TEST_SINK(spans, n_spans);

static void target(uint32_t pid)
{
	rt_test_target(c, T0, pid, "vllm");
}

static int setup(void **state)
{
	(void)state;
	n_prompt = 3;
	c = rt_test_correlator_sink(&sink);
	target(API);
	target(ENG);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rt_correlator__free(c);
	c = NULL;
	return 0;
}

/* ---- HTTP on the API server's event loop ---- */

static void sock(uint16_t kind, uint64_t ts, int fd, const char *data)
{
	rt_test_sock_io(c, kind, ts - US, ts, API, LOOP, fd, (uint16_t)(40000 + fd), data,
			strlen(data));
}

/* the request, whole, read at ts; hdr_id: its X-Request-Id or NULL */
static void request(uint64_t ts, int fd, const char *path, const char *hdr_id)
{
	char buf[256], h[96] = "";

	rt_test_conn(c, RT_EV_SOCK_ACCEPT, ts - 10 * US, API, LOOP, fd, 8000,
		     (uint16_t)(40000 + fd));
	if (hdr_id)
		snprintf(h, sizeof(h), "X-Request-Id: %s\r\n", hdr_id);
	snprintf(buf, sizeof(buf), "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: 2\r\n\r\n{}",
		 path, h);
	sock(RT_EV_SOCK_RECV, ts, fd, buf);
}

static void sse_head(uint64_t ts, int fd)
{
	sock(RT_EV_SOCK_SEND, ts, fd,
	     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	     "Transfer-Encoding: chunked\r\n\r\n");
}

static void sse(uint64_t ts, int fd, const char *event)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%zx\r\n%s\r\n", strlen(event), event);
	sock(RT_EV_SOCK_SEND, ts, fd, buf);
}

/* ---- msgpack, by hand ---- */

struct mp {
	uint8_t b[1024];
	size_t n;
};

static void mp_byte(struct mp *m, uint8_t v)
{
	assert_true(m->n < sizeof(m->b));
	m->b[m->n++] = v;
}

static void mp_str(struct mp *m, const char *s)
{
	size_t len = strlen(s);

	assert_true(len < 32);
	mp_byte(m, (uint8_t)(0xa0 | len));
	memcpy(m->b + m->n, s, len);
	m->n += len;
}

static void mp_f64(struct mp *m, double v)
{
	uint64_t u;
	int i;

	memcpy(&u, &v, sizeof(u));
	mp_byte(m, 0xcb);
	for (i = 7; i >= 0; i--)
		mp_byte(m, (uint8_t)(u >> (i * 8)));
}

/* EngineCoreRequest with every field (msgspec's array_like form) */
static void mp_add(struct mp *m, const char *id, const char *ext)
{
	uint8_t i;

	mp_byte(m, 0xdc); /* array 16 */
	mp_byte(m, 0);
	mp_byte(m, 16);
	mp_str(m, id); /* 0 request_id */
	mp_byte(m, (uint8_t)(0x90 | n_prompt)); /* 1 prompt_token_ids [1, 2, 3…] */
	for (i = 1; i <= n_prompt; i++)
		mp_byte(m, i);
	mp_byte(m, 0xc0); /* 2 mm_features */
	mp_byte(m, 0x80); /* 3 sampling_params {} */
	mp_byte(m, 0xc0); /* 4 pooling_params */
	mp_byte(m, 2); /* 5 eos_token_id */
	mp_f64(m, 1700000000.25); /* 6 arrival_time (wall clock) */
	mp_byte(m, 0xc0); /* 7 lora_request */
	mp_byte(m, 0xc0); /* 8 cache_salt */
	mp_byte(m, 0xc0); /* 9 data_parallel_rank */
	mp_byte(m, 0xc0); /* 10 prompt_embeds */
	mp_byte(m, 0); /* 11 client_index */
	mp_byte(m, 0); /* 12 current_wave */
	mp_byte(m, 0); /* 13 priority */
	mp_byte(m, 0xc0); /* 14 trace_headers */
	mp_str(m, ext); /* 15 external_req_id */
}

/* EngineCoreOutputs with one EngineCoreOutput; finish -1: none; sched 0: no events */
static void mp_outputs(struct mp *m, const char *id, uint32_t tokens, int finish, uint64_t queued,
		       uint64_t sched)
{
	uint32_t i;

	mp_byte(m, 0x98);
	mp_byte(m, 0); /* 0 engine_index */
	mp_byte(m, 0x91); /* 1 outputs: 1 */
	mp_byte(m, 0x9d);
	mp_str(m, id);
	mp_byte(m, (uint8_t)(0x90 | tokens));
	for (i = 0; i < tokens; i++)
		mp_byte(m, (uint8_t)(10 + i));
	mp_byte(m, 0xc0);
	mp_byte(m, 0xc0);
	mp_byte(m, 0xc0);
	mp_byte(m, finish < 0 ? 0xc0 : (uint8_t)finish); /* 5 finish_reason */
	mp_byte(m, 0xc0); /* 6 stop_reason */
	if (sched) { /* 7 events */
		mp_byte(m, 0x92);
		mp_byte(m, 0x82);
		mp_str(m, "type");
		mp_byte(m, 1);
		mp_str(m, "timestamp");
		mp_f64(m, (double)queued / 1e9);
		mp_byte(m, 0x82);
		mp_str(m, "type");
		mp_byte(m, 2);
		mp_str(m, "timestamp");
		mp_f64(m, (double)sched / 1e9);
	} else {
		mp_byte(m, 0xc0);
	}
	mp_byte(m, 0xc0);
	mp_byte(m, 0xc0);
	mp_byte(m, 0); /* 10 num_cached_tokens */
	mp_byte(m, 0xc0);
	mp_byte(m, 0); /* 12 num_nans_in_logits */
	mp_byte(m, 0xc0); /* 2 scheduler_stats */
	mp_f64(m, 12345.5); /* 3 timestamp */
	mp_byte(m, 0xc0);
	mp_byte(m, 0xc0);
	mp_byte(m, 0xc0);
	mp_byte(m, 0xc0);
}

/* ---- ZeroMQ frames ---- */

static void zframe(uint64_t ts, uint32_t pid, uint32_t tid, uint64_t socket, uint8_t dir,
		   const uint8_t *data, size_t len, bool more)
{
	size_t size = RT_EVENT_SIZE_ALIGN(sizeof(struct rt_ev_zmq_msg) + len);
	struct rt_ev_zmq_msg *e = calloc(1, size);

	assert_non_null(e);
	rt_test_hdr(&e->hdr, RT_EV_ZMQ_MSG, (uint16_t)size, ts, pid, tid);
	e->enter_ns = ts - 2 * US;
	e->msg = 0x7000;
	e->socket = socket;
	e->frame_len = (uint32_t)len;
	e->len = (uint16_t)len;
	e->dir = dir;
	e->flags = more ? RT_ZMQ_MORE : 0;
	memcpy(e->data, data, len);
	rt_correlator__event(c, &e->hdr, false);
	free(e);
}

/* The API event loop hands the ADD over at ts (its send's entry), the engine's input thread has it at rx. */
static void add(uint64_t ts, uint64_t rx, const char *id, const char *ext)
{
	static const uint8_t ident[2] = { 0, 0 }, type = 0;
	struct mp m = { .n = 0 };

	mp_add(&m, id, ext);
	zframe(ts + 2 * US, API, LOOP, SOCK_ROUTER, RT_ZMQ_SEND, ident, 2, true);
	zframe(ts + 3 * US, API, LOOP, SOCK_ROUTER, RT_ZMQ_SEND, &type, 1, true);
	zframe(ts + 4 * US, API, LOOP, SOCK_ROUTER, RT_ZMQ_SEND, m.b, m.n, false);
	zframe(rx - 1 * US, ENG, ENG_IN, SOCK_DEALER, RT_ZMQ_RECV, &type, 1, true);
	zframe(rx, ENG, ENG_IN, SOCK_DEALER, RT_ZMQ_RECV, m.b, m.n, false);
}

/* The engine's output thread sends at tx, the API event loop has it at rx (its receive's return). */
static void output(uint64_t tx, uint64_t rx, const char *id, uint32_t tokens, int finish,
		   uint64_t queued, uint64_t sched)
{
	struct mp m = { .n = 0 };

	mp_outputs(&m, id, tokens, finish, queued, sched);
	zframe(tx + 2 * US, ENG, ENG_OUT, SOCK_PUSH, RT_ZMQ_SEND, m.b, m.n, false);
	zframe(rx, API, LOOP, SOCK_PULL, RT_ZMQ_RECV, m.b, m.n, false);
}

static const struct rt_span *span_of(const char *path)
{
	int i;

	for (i = 0; i < n_spans; i++)
		if (!strcmp(spans[i].path, path))
			return &spans[i];
	fail_msg("no span %s", path);
	return NULL;
}

static void assert_phase(const struct rt_span *s, enum rt_phase p, uint64_t ns, uint8_t src)
{
	assert_int_equal(s->phase_source[p], src);
	assert_int_equal(s->phase_ns[p], (int64_t)ns);
}

#define CHUNK(content)                                                                             \
	"data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"choices\":[{"       \
	"\"index\":0,\"delta\":{\"content\":\"" content "\"}}]}\n\n"

/* Chat, streamed, no X-Request-Id: the SSE chunks' id joins it. */
static void test_join_response_id(void **state)
{
	const struct rt_span *s;
	uint64_t sum = 0;
	uint32_t p;

	(void)state;
	request(AT(1), 7, "/v1/chat/completions", NULL);
	sse_head(AT(1.5), 7);
	/* the role chunk comes before any output: no tokens */
	sse(AT(1.6), 7,
	    "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"choices\":[{"
	    "\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n");
	add(AT(3), AT(3.2), "chatcmpl-abc-0a1b2c3d", "chatcmpl-abc");
	output(AT(6), AT(6.2), "chatcmpl-abc-0a1b2c3d", 1, -1, AT(3.3), AT(4));
	sse(AT(6.5), 7, CHUNK("Hi"));
	output(AT(8), AT(8.2), "chatcmpl-abc-0a1b2c3d", 2, -1, 0, 0);
	sse(AT(8.6), 7, CHUNK(" there"));
	output(AT(10), AT(10.2), "chatcmpl-abc-0a1b2c3d", 1, 0, 0, 0);
	sse(AT(10.4), 7, CHUNK("!"));
	sse(AT(10.6), 7, "data: [DONE]\n\n");
	sock(RT_EV_SOCK_SEND, AT(10.7), 7, "0\r\n\r\n");
	rt_correlator__finish(c);
	assert_int_equal(n_spans, 1);
	s = span_of("/v1/chat/completions");
	assert_string_equal(s->response_id, "chatcmpl-abc");
	assert_true(s->engine.present);
	assert_string_equal(s->engine.id, "chatcmpl-abc-0a1b2c3d");
	assert_int_equal(s->engine.join, RT_ENGINE_JOIN_RESPONSE_ID);
	assert_int_equal(s->engine.requests, 1);
	assert_int_equal(s->engine.outputs, 3);
	assert_int_equal(s->engine.tokens, 4);
	assert_int_equal(s->engine.prompt_tokens, 3);
	assert_true(s->engine.events_present);
	assert_int_equal(s->engine.finish_reason, 0);
	/* tokenize: request read (received_ns) → the ADD send's entry */
	assert_phase(s, RT_PHASE_TOKENIZE, AT(3) - AT(1), RT_PSRC_PACK);
	/* engine queue: the input thread's receive → SCHEDULED */
	assert_phase(s, RT_PHASE_QUEUE, AT(4) - AT(3.2), RT_PSRC_PACK);
	/* prefill: SCHEDULED → the API's receipt of the first output */
	assert_phase(s, RT_PHASE_PREFILL, AT(6.2) - AT(4), RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_DECODE, AT(10.2) - AT(6.2), RT_PSRC_PACK);
	assert_int_equal(s->phase_ns[RT_PHASE_PRE_FIRST_TOKEN], RT_NULL_NS);
	/* each output's receipt → the entry of the write of its chunk (1 µs before ts) */
	assert_int_equal(s->engine.stream_outputs, 3);
	assert_int_equal(s->engine.stream_ns,
			 (int64_t)((AT(6.5) - US - AT(6.2)) + (AT(8.6) - US - AT(8.2)) +
				   (AT(10.4) - US - AT(10.2))));
	assert_false(s->flags & RT_SPAN_INCOMPLETE);
	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (s->phase_ns[p] != RT_NULL_NS)
			sum += (uint64_t)s->phase_ns[p];
	assert_int_equal(sum, s->end_ns - s->start_ns);
}

/* Completions, not streamed, X-Request-Id sent and no id in the body: the header joins it. */
static void test_join_header(void **state)
{
	const struct rt_span *s;
	const char *body = "{\"object\":\"text_completion\",\"choices\":[{\"text\":\"hi\"}]}";
	char buf[256];

	(void)state;
	request(AT(1), 8, "/v1/completions", "client-7");
	add(AT(2), AT(2.1), "cmpl-client-7-0-deadbeef", "cmpl-client-7-0");
	output(AT(4), AT(4.1), "cmpl-client-7-0-deadbeef", 1, -1, 0, 0);
	output(AT(5), AT(5.1), "cmpl-client-7-0-deadbeef", 1, 1, 0, 0);
	snprintf(buf, sizeof(buf),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
		 "%zu\r\n\r\n%s",
		 strlen(body), body);
	sock(RT_EV_SOCK_SEND, AT(5.5), 8, buf);
	rt_correlator__finish(c);
	s = span_of("/v1/completions");
	assert_string_equal(s->request_id, "client-7");
	assert_true(s->engine.present);
	assert_int_equal(s->engine.join, RT_ENGINE_JOIN_HEADER);
	assert_int_equal(s->engine.outputs, 2);
	assert_false(s->engine.events_present);
	assert_int_equal(s->engine.finish_reason, 1);
	assert_phase(s, RT_PHASE_TOKENIZE, AT(2) - AT(1), RT_PSRC_PACK);
	/* no events on the wire: no engine queue; prefill from the engine's receipt */
	assert_int_equal(s->phase_ns[RT_PHASE_QUEUE], RT_NULL_NS);
	assert_phase(s, RT_PHASE_PREFILL, AT(4.1) - AT(2.1), RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_DECODE, AT(5.1) - AT(4.1), RT_PSRC_PACK);
	/* not streamed: the last output's receipt → the response's write */
	assert_int_equal(s->engine.stream_outputs, 1);
	assert_int_equal(s->engine.stream_ns, (int64_t)(AT(5.5) - US - AT(5.1)));
	assert_false(s->flags & RT_SPAN_INCOMPLETE);
}

/* The engine's output stream loses its place while a request is in flight. */
static void test_desync_incomplete(void **state)
{
	struct rt_correlator_stats st;
	uint8_t junk[16] = { 0 };

	(void)state;
	request(AT(1), 7, "/v1/chat/completions", "a");
	request(AT(1.1), 8, "/v1/completions", "b");
	add(AT(2), AT(2.1), "chatcmpl-a-11111111", "chatcmpl-a");
	add(AT(2.2), AT(2.3), "cmpl-b-0-22222222", "cmpl-b-0");
	/* b finishes before the gap: all of its messages were seen */
	output(AT(3), AT(3.1), "cmpl-b-0-22222222", 1, 0, 0, 0);
	/* a chunk whose frame's start was never seen: the engine's PUSH stream desyncs */
	{
		size_t size = RT_EVENT_SIZE_ALIGN(sizeof(struct rt_ev_zmq_msg) + sizeof(junk));
		struct rt_ev_zmq_msg *e = calloc(1, size);

		assert_non_null(e);
		rt_test_hdr(&e->hdr, RT_EV_ZMQ_MSG, (uint16_t)size, AT(3.5), ENG, ENG_OUT);
		e->enter_ns = AT(3.5) - US;
		e->socket = SOCK_PUSH;
		e->frame_len = 4096 + sizeof(junk);
		e->offset = 4096;
		e->len = sizeof(junk);
		e->dir = RT_ZMQ_SEND;
		memcpy(e->data, junk, sizeof(junk));
		rt_correlator__event(c, &e->hdr, false);
		free(e);
	}
	output(AT(4), AT(4.1), "chatcmpl-a-11111111", 1, 0, 0, 0);
	sock(RT_EV_SOCK_SEND, AT(5), 7,
	     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
	sock(RT_EV_SOCK_SEND, AT(5.1), 8,
	     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
	rt_correlator__finish(c);
	rt_correlator__stats(c, &st);
	assert_int_equal(st.zmq_desyncs, 1);
	assert_int_equal(st.vllm_requests, 2);
	assert_int_equal(st.vllm_joined, 2);
	assert_true(span_of("/v1/chat/completions")->engine.present);
	assert_true(span_of("/v1/chat/completions")->flags & RT_SPAN_INCOMPLETE);
	assert_true(span_of("/v1/completions")->engine.present);
	assert_false(span_of("/v1/completions")->flags & RT_SPAN_INCOMPLETE);
}

/* Two prompts in one completions request: "-0" and "-1" both join it, by the response id. */
static void test_two_prompts(void **state)
{
	const struct rt_span *s;

	(void)state;
	request(AT(1), 7, "/v1/completions", NULL);
	add(AT(2), AT(2.1), "cmpl-p2-0-aaaaaaaa", "cmpl-p2-0");
	add(AT(2.5), AT(2.6), "cmpl-p2-1-bbbbbbbb", "cmpl-p2-1");
	/* another request's engine request with a longer id: not joined */
	add(AT(2.7), AT(2.8), "cmpl-p2x-0-cccccccc", "cmpl-p2x-0");
	sse_head(AT(3), 7);
	output(AT(4), AT(4.1), "cmpl-p2-0-aaaaaaaa", 1, 0, 0, 0);
	sse(AT(4.3), 7,
	    "data: {\"id\":\"cmpl-p2\",\"object\":\"text_completion\",\"choices\":[{"
	    "\"index\":0,\"text\":\"a\"}]}\n\n");
	output(AT(5), AT(5.1), "cmpl-p2-1-bbbbbbbb", 1, 0, 0, 0);
	sse(AT(5.4), 7,
	    "data: {\"id\":\"cmpl-p2\",\"object\":\"text_completion\",\"choices\":[{"
	    "\"index\":1,\"text\":\"b\"}]}\n\n");
	sse(AT(5.6), 7, "data: [DONE]\n\n");
	sock(RT_EV_SOCK_SEND, AT(5.7), 7, "0\r\n\r\n");
	rt_correlator__finish(c);
	s = span_of("/v1/completions");
	assert_true(s->engine.present);
	assert_int_equal(s->engine.requests, 2);
	assert_int_equal(s->engine.outputs, 2);
	assert_int_equal(s->engine.prompt_tokens, 6);
	/* tokenize to the first ADD; prefill from the first receipt to the first output */
	assert_phase(s, RT_PHASE_TOKENIZE, AT(2) - AT(1), RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_PREFILL, AT(4.1) - AT(2.1), RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_DECODE, AT(5.1) - AT(4.1), RT_PSRC_PACK);
	assert_int_equal(s->engine.stream_outputs, 2);
	assert_int_equal(s->engine.stream_ns,
			 (int64_t)((AT(4.3) - US - AT(4.1)) + (AT(5.4) - US - AT(5.1))));
}

/* A bound of 2 engine requests: a third ADD drops the oldest unjoined one, counted. */
static void test_bound(void **state)
{
	struct rt_correlator_opts o = { .on_span = rt_test_on_span,
					.ctx = &sink,
					.max_vllm_requests = 2 };
	struct rt_correlator_stats st;

	(void)state;
	rt_correlator__free(c);
	c = rt_correlator__new(&o);
	assert_non_null(c);
	target(API);
	target(ENG);
	add(AT(1), AT(1.1), "cmpl-a-0-11111111", "cmpl-a-0");
	add(AT(2), AT(2.1), "cmpl-b-0-22222222", "cmpl-b-0");
	add(AT(3), AT(3.1), "cmpl-c-0-33333333", "cmpl-c-0");
	rt_correlator__stats(c, &st);
	assert_int_equal(st.vllm_requests, 3);
	assert_int_equal(st.vllm_dropped, 1);
	/* the dropped one was the oldest: a request naming it finds nothing */
	request(AT(4), 7, "/v1/completions", "a");
	sock(RT_EV_SOCK_SEND, AT(5), 7,
	     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
	request(AT(6), 8, "/v1/chat/completions", "c");
	sock(RT_EV_SOCK_SEND, AT(7), 8,
	     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
	rt_correlator__finish(c);
	assert_false(span_of("/v1/completions")->engine.present);
	assert_true(span_of("/v1/chat/completions")->engine.present);
}

/* Valid msgpack of a shape that is no vLLM message: counted, nothing joined. */
static void test_unknown_shape(void **state)
{
	static const uint8_t odd[] = { 0x92, 0x01, 0x02 };
	struct rt_correlator_stats st;

	(void)state;
	zframe(AT(1), API, LOOP, SOCK_PULL, RT_ZMQ_RECV, odd, sizeof(odd), false);
	rt_correlator__stats(c, &st);
	assert_int_equal(st.vllm_unknown, 1);
	assert_int_equal(st.vllm_requests, 0);
}

/* ---- the scheduler ---- */

static void sw(uint64_t ts, uint32_t cpu, uint32_t prev, const char *prev_comm, uint32_t next,
	       const char *next_comm)
{
	const struct rt_test_sw s = { .ts = ts,
				      .cpu = cpu,
				      .prev = prev,
				      .next = next,
				      .state = RT_TASK_BLOCKED,
				      .prev_comm = prev_comm,
				      .next_comm = next_comm };

	rt_test_switch(c, API, &s);
}

static void wake(uint64_t ts, uint32_t waker, uint32_t target)
{
	rt_test_waking(c, ts, API, waker, API, target);
}

/* A thread of the API server woken by the event loop runs [from, to] on CPU 1. */
static void burst(uint32_t tid, const char *comm, uint64_t from, uint64_t to)
{
	wake(from - 10 * US, LOOP, tid);
	sw(from, 1, 0, "", tid, comm);
	sw(to, 1, tid, comm, 0, "");
}

static const struct rt_span_thread *thread_of(const struct rt_span *s, uint32_t tid)
{
	return rt_test_thread_of(s, tid);
}

static void json_response(uint64_t ts, int fd)
{
	const char *body = "{\"choices\":[]}";
	char buf[256];

	snprintf(buf, sizeof(buf),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
		 "%zu\r\n\r\n%s",
		 strlen(body), body);
	sock(RT_EV_SOCK_SEND, ts, fd, buf);
}

/* Two requests tokenized in one micro-batch after the loop read both. */
static void test_exec_split(void **state)
{
	const struct rt_span_thread *a, *b;
	struct rt_correlator_stats st;

	(void)state;
	/* an earlier ADD made the process an API server (the first batch's is not known) */
	add(AT(0.2), AT(0.3), "cmpl-warm-0-33333333", "cmpl-warm-0");
	sw(AT(0.5), 0, 0, "", LOOP, "python3");
	request(AT(1), 7, "/v1/chat/completions", "a");
	request(AT(1.1), 8, "/v1/completions", "b");
	/* the loop owns two requests: rule 3 hands the executor neither */
	burst(EXEC, "python3", AT(1.3), AT(5.3));
	/* libzmq's I/O thread, woken by the loop too: not the executor */
	burst(ZMQIO, "ZMQbg/IO/0", AT(5.4), AT(5.9));
	n_prompt = 1;
	add(AT(6), AT(6.2), "chatcmpl-a-11111111", "chatcmpl-a");
	n_prompt = 3;
	add(AT(6.1), AT(6.3), "cmpl-b-0-22222222", "cmpl-b-0");
	output(AT(8), AT(8.1), "chatcmpl-a-11111111", 1, 1, 0, 0);
	output(AT(8), AT(8.2), "cmpl-b-0-22222222", 1, 1, 0, 0);
	json_response(AT(9), 7);
	json_response(AT(9.1), 8);
	rt_correlator__finish(c);
	assert_int_equal(n_spans, 2);
	a = thread_of(span_of("/v1/chat/completions"), EXEC);
	b = thread_of(span_of("/v1/completions"), EXEC);
	assert_non_null(a);
	assert_non_null(b);
	/* 4 ms split 1:3 by prompt tokens */
	assert_int_equal(a->on_cpu_ns, 1 * MS);
	assert_int_equal(b->on_cpu_ns, 3 * MS);
	assert_true(a->shared && b->shared);
	assert_null(thread_of(span_of("/v1/chat/completions"), ZMQIO));
	assert_null(thread_of(span_of("/v1/completions"), ZMQIO));
	rt_correlator__stats(c, &st);
	assert_int_equal(st.vllm_exec_dropped, 0);
}

/* An executor burst no ADD follows within 100 ms is nobody's, counted. */
static void test_exec_stale(void **state)
{
	struct rt_correlator_stats st;

	(void)state;
	/* an earlier ADD made the process an API server (the first batch's is not known) */
	add(AT(0.2), AT(0.3), "cmpl-warm-0-33333333", "cmpl-warm-0");
	sw(AT(0.5), 0, 0, "", LOOP, "python3");
	request(AT(1), 7, "/v1/chat/completions", "a");
	request(AT(1.1), 8, "/v1/completions", "b");
	burst(EXEC, "python3", AT(1.3), AT(2.3));
	add(AT(200), AT(200.2), "chatcmpl-a-11111111", "chatcmpl-a");
	output(AT(208), AT(208.1), "chatcmpl-a-11111111", 1, 1, 0, 0);
	json_response(AT(209), 7);
	rt_correlator__finish(c);
	assert_null(thread_of(span_of("/v1/chat/completions"), EXEC));
	rt_correlator__stats(c, &st);
	assert_int_equal(st.vllm_exec_dropped, 1);
}

/*
 * The executor's run [1.3, 6.5] is still on a CPU when the loop sends its
 * two ADDs (6, 6.1): it is theirs, not the next batch's (the first version
 * gave it to c). Its next run [20, 22] begins after them and goes to the
 * ADD that follows it (c).
 */
static void test_exec_tail(void **state)
{
	const struct rt_span_thread *a, *b, *x;

	(void)state;
	add(AT(0.2), AT(0.3), "cmpl-warm-0-33333333", "cmpl-warm-0");
	sw(AT(0.5), 0, 0, "", LOOP, "python3");
	request(AT(1), 7, "/v1/chat/completions", "a");
	request(AT(1.1), 8, "/v1/completions", "b");
	request(AT(1.2), 9, "/v1/embeddings", "c");
	/* the executor's wake-up before its run (its hold exists from then on) */
	burst(EXEC, "python3", AT(1.25), AT(1.27));
	wake(AT(1.3) - 10 * US, LOOP, EXEC);
	sw(AT(1.3), 1, 0, "", EXEC, "python3");
	add(AT(6), AT(6.2), "chatcmpl-a-11111111", "chatcmpl-a");
	add(AT(6.1), AT(6.3), "cmpl-b-0-22222222", "cmpl-b-0");
	sw(AT(6.5), 1, EXEC, "python3", 0, "");
	burst(EXEC, "python3", AT(20), AT(22));
	add(AT(23), AT(23.2), "cmpl-c-0-44444444", "cmpl-c-0");
	output(AT(30), AT(30.1), "chatcmpl-a-11111111", 1, 1, 0, 0);
	output(AT(30), AT(30.2), "cmpl-b-0-22222222", 1, 1, 0, 0);
	output(AT(30), AT(30.3), "cmpl-c-0-44444444", 1, 1, 0, 0);
	json_response(AT(31), 7);
	json_response(AT(31.1), 8);
	json_response(AT(31.2), 9);
	rt_correlator__finish(c);
	assert_int_equal(n_spans, 3);
	a = thread_of(span_of("/v1/chat/completions"), EXEC);
	b = thread_of(span_of("/v1/completions"), EXEC);
	x = thread_of(span_of("/v1/embeddings"), EXEC);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(x);
	/* 0.02 + 5.2 ms split 1:1 (n_prompt 3 each), the next run's 2 ms c's */
	assert_int_equal(a->on_cpu_ns, 2610 * US);
	assert_int_equal(b->on_cpu_ns, 2610 * US);
	assert_int_equal(x->on_cpu_ns, 2 * MS);
}

/* t leaves CPU 1 at ts preempted: still runnable, its burst goes on */
static void sw_preempted(uint64_t ts, uint32_t t, const char *comm)
{
	const struct rt_test_sw s = { .ts = ts,
				      .cpu = 1,
				      .prev = t,
				      .next = 0,
				      .state = RT_TASK_RUNNING,
				      .prev_comm = comm,
				      .next_comm = "" };

	rt_test_switch(c, API, &s);
}

/*
 * Seen under CPU load: the executor is preempted in the tail of its run
 * [5, 9.5] (out 8 to 9) and the loop sends that batch's ADD (b, 8.5)
 * meanwhile. The run is b's: counting only an executor on a CPU, b joined
 * no hold and the run went to the next batch's c (with a_ends_early), or
 * was shared with the earlier batch's a (else: b's ADD joined a's hold,
 * and the run, begun after a's ADD, was added to it). Each run is its
 * batch's: a 2 ms, b 3.5 ms, c 2 ms.
 */
static void exec_preempted(bool a_ends_early)
{
	const struct rt_span_thread *a, *b, *x;

	add(AT(0.2), AT(0.3), "cmpl-warm-0-33333333", "cmpl-warm-0");
	sw(AT(0.5), 0, 0, "", LOOP, "python3");
	request(AT(1), 7, "/v1/chat/completions", "a");
	request(AT(1.1), 8, "/v1/completions", "b");
	request(AT(1.2), 9, "/v1/embeddings", "c");
	burst(EXEC, "python3", AT(1.3), AT(3.3));
	add(AT(4), AT(4.2), "chatcmpl-a-11111111", "chatcmpl-a");
	if (a_ends_early) { /* a's hold is settled before the next run */
		output(AT(4.3), AT(4.4), "chatcmpl-a-11111111", 1, 1, 0, 0);
		json_response(AT(4.6), 7);
	}
	wake(AT(5) - 10 * US, LOOP, EXEC);
	sw(AT(5), 1, 0, "", EXEC, "python3");
	sw_preempted(AT(8), EXEC, "python3");
	add(AT(8.5), AT(8.7), "cmpl-b-0-22222222", "cmpl-b-0");
	sw(AT(9), 1, 0, "", EXEC, "python3");
	sw(AT(9.5), 1, EXEC, "python3", 0, "");
	burst(EXEC, "python3", AT(20), AT(22));
	add(AT(23), AT(23.2), "cmpl-c-0-44444444", "cmpl-c-0");
	if (!a_ends_early)
		output(AT(30), AT(30.1), "chatcmpl-a-11111111", 1, 1, 0, 0);
	output(AT(30), AT(30.2), "cmpl-b-0-22222222", 1, 1, 0, 0);
	output(AT(30), AT(30.3), "cmpl-c-0-44444444", 1, 1, 0, 0);
	if (!a_ends_early)
		json_response(AT(31), 7);
	json_response(AT(31.1), 8);
	json_response(AT(31.2), 9);
	rt_correlator__finish(c);
	assert_int_equal(n_spans, 3);
	a = thread_of(span_of("/v1/chat/completions"), EXEC);
	b = thread_of(span_of("/v1/completions"), EXEC);
	x = thread_of(span_of("/v1/embeddings"), EXEC);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(x);
	assert_int_equal(a->on_cpu_ns, 2 * MS);
	assert_int_equal(b->on_cpu_ns, 3500 * US);
	assert_int_equal(x->on_cpu_ns, 2 * MS);
}

static void test_exec_preempted(void **state)
{
	(void)state;
	exec_preempted(true);
}

static void test_exec_preempted_held(void **state)
{
	(void)state;
	exec_preempted(false);
}

/* The loop reads a and b in one burst, sends a's ADD alone in the next. */
static void test_loop_burst_owned(void **state)
{
	const struct rt_span_thread *a, *b;

	(void)state;
	sw(AT(0.5), 0, 0, "", LOOP, "python3");
	request(AT(1), 7, "/v1/chat/completions", "a");
	request(AT(1.1), 8, "/v1/completions", "b");
	sw(AT(1.5), 0, LOOP, "python3", 0, ""); /* 1 ms, rule 2: a and b */
	sw(AT(2), 0, 0, "", LOOP, "python3");
	add(AT(2.2), AT(2.4), "chatcmpl-a-11111111", "chatcmpl-a");
	sw(AT(3), 0, LOOP, "python3", 0, ""); /* 1 ms: a's ADD, a's alone */
	output(AT(8), AT(8.1), "chatcmpl-a-11111111", 1, 1, 0, 0);
	sw(AT(8.9), 0, 0, "", LOOP, "python3");
	json_response(AT(9), 7);
	add(AT(9.05), AT(9.2), "cmpl-b-0-22222222", "cmpl-b-0");
	json_response(AT(9.1), 8);
	/* a's write ends a at 9 (the 0.1 ms before, a's alone), b's at 9.1 (b's) */
	sw(AT(9.5), 0, LOOP, "python3", 0, "");
	rt_correlator__finish(c);
	assert_int_equal(n_spans, 2);
	a = thread_of(span_of("/v1/chat/completions"), LOOP);
	b = thread_of(span_of("/v1/completions"), LOOP);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->on_cpu_ns, 500 * US + 1 * MS + 100 * US);
	assert_int_equal(b->on_cpu_ns, 500 * US + 100 * US);
}

#define CHUNK_B(content)                                                                           \
	"data: {\"id\":\"cmpl-b-0\",\"object\":\"text_completion\",\"choices\":[{"                 \
	"\"index\":0,\"text\":\"" content "\"}]}\n\n"

/*
 * One loop burst [10, 14] ms: an output message for a and b received at
 * 10.5, b's chunk written at 11, a's at 13. The piece before the receipt
 * and after it up to the next event is the receipt's (a and b: the loop
 * detokenizes both), the piece before a write is the write's, the rest
 * after the last write the burst's equal split. An equal split would give
 * each 2 ms.
 */
static void test_loop_pieces(void **state)
{
	const struct rt_span_thread *a, *b;

	(void)state;
	/* the loop's state is not known before 10 ms: nothing before is charged */
	request(AT(1), 7, "/v1/chat/completions", "a");
	request(AT(1.1), 8, "/v1/completions", "b");
	add(AT(2), AT(2.2), "chatcmpl-a-11111111", "chatcmpl-a");
	add(AT(2.3), AT(2.4), "cmpl-b-0-22222222", "cmpl-b-0");
	sse_head(AT(2.5), 7);
	sse_head(AT(2.6), 8);
	sw(AT(10), 0, 0, "", LOOP, "python3");
	output(AT(9), AT(10.5), "chatcmpl-a-11111111", 1, -1, 0, 0);
	output(AT(9), AT(10.5), "cmpl-b-0-22222222", 1, -1, 0, 0);
	sse(AT(11), 8, CHUNK_B("x"));
	sse(AT(13), 7, CHUNK("y"));
	sw(AT(14), 0, LOOP, "python3", 0, "");
	/* each ends in a later burst of its own, [20, 21] and [30, 31] */
	sw(AT(20), 0, 0, "", LOOP, "python3");
	sse(AT(20.5), 7, "data: [DONE]\n\n");
	sock(RT_EV_SOCK_SEND, AT(21), 7, "0\r\n\r\n");
	sw(AT(21), 0, LOOP, "python3", 0, "");
	sw(AT(30), 0, 0, "", LOOP, "python3");
	sse(AT(30.5), 8, "data: [DONE]\n\n");
	sock(RT_EV_SOCK_SEND, AT(31), 8, "0\r\n\r\n");
	sw(AT(31), 0, LOOP, "python3", 0, "");
	rt_correlator__finish(c);
	assert_int_equal(n_spans, 2);
	a = thread_of(span_of("/v1/chat/completions"), LOOP);
	b = thread_of(span_of("/v1/completions"), LOOP);
	assert_non_null(a);
	assert_non_null(b);
	/* [10, 11] 0.5 ms each, [11, 13] a's, [13, 14] 0.5 ms each; then 1 ms each */
	assert_int_equal(a->on_cpu_ns, 500 * US + 2 * MS + 500 * US + 1 * MS);
	assert_int_equal(b->on_cpu_ns, 500 * US + 500 * US + 1 * MS);
	assert_true(a->shared && b->shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_join_response_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_desync_incomplete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_prompts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_shape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_preempted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_preempted_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_burst_owned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_pieces, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
