// SPDX-License-Identifier: BSD-2-Clause
/*
 * Engine pack records through a real correlator (src/correlate/pack.c,
 * docs/spans.md "Packs"): synthetic PACK_CALL / PACK_BATCH sequences as a
 * llama.cpp server would make them, and the phases, step counts and joins
 * the spans get.
 *
 * - two concurrent requests batched together: each its own tokenize, queue,
 *   prefill (two prompt chunks for one) and exact decode step count, a
 *   speculative step (draft tokens with logits) counted as decode, the
 *   worker's CPU shared by the step members;
 * - llama_batch_get_one (no seq_id, pos, logits arrays);
 * - a sequence reused by a later request after SEQ_RM, whole or partial
 *   (the old request still writing its response);
 * - a span with marker phases keeps them;
 * - a GPU build: the first SYNC return after a decode ends the step;
 * - the server's own timings beside the observed phases.
 */
#include "corr_harness.h"

#define PID 100
#define MAIN 102 /* reads, tokenizes (node's JS thread) */
#define WORKER 105 /* decodes (a libuv pool thread) */
#define TOK 106 /* a tokenizer thread woken by the handler */
#define CTX 0x7f0000001000LL
#define US 1000ULL
#define MS 1000000ULL
#define T0 (1000 * MS)
#define AT(ms) (T0 + (uint64_t)((ms) * (double)MS))

static struct rt_correlator *c;
static struct rt_span spans[8];
static int n_spans;
static struct rt_test_sink sink = RT_TEST_SINK(spans, n_spans);

static void hdr(struct rt_event_hdr *h, uint16_t kind, uint16_t size, uint64_t ts, uint32_t tid)
{
	rt_test_hdr(h, kind, size, ts, PID, tid);
}

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

static void sw(uint64_t ts, uint32_t prev, uint32_t next)
{
	rt_test_sched_switch(c, PID, ts, prev, RT_TASK_BLOCKED, next, 0, 0);
}

static void sock(uint16_t kind, uint64_t ts, uint32_t tid, int fd, const char *data)
{
	rt_test_sock_io(c, kind, ts - US, ts, PID, tid, fd, (uint16_t)(40000 + fd), data,
			strlen(data));
}

/* MAIN accepts fd and reads request `id` on it, whole, at ts. */
static void request(uint64_t ts, int fd, const char *id)
{
	char buf[256];

	rt_test_conn(c, RT_EV_SOCK_ACCEPT, ts - 10 * US, PID, MAIN, fd, 8000,
		     (uint16_t)(40000 + fd));
	snprintf(buf, sizeof(buf),
		 "POST /completion HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\n"
		 "Content-Length: 2\r\n\r\n{}",
		 id);
	sock(RT_EV_SOCK_RECV, ts, MAIN, fd, buf);
}

/* MAIN writes the whole response to fd at ts (the span ends there). */
static void respond(uint64_t ts, int fd, const char *body)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
		 "%zu\r\n\r\n%s",
		 strlen(body), body);
	sock(RT_EV_SOCK_SEND, ts, MAIN, fd, buf);
}

static void call(uint64_t ts, uint32_t tid, uint16_t role, bool ret, int64_t a0, int64_t a1,
		 int64_t a2, int64_t retval)
{
	struct rt_ev_pack_call e = { 0 };

	hdr(&e.hdr, RT_EV_PACK_CALL, sizeof(e), ts, tid);
	e.role = role;
	e.ret = ret;
	e.args[0] = a0;
	e.args[1] = a1;
	e.args[2] = a2;
	e.retval = retval;
	rt_correlator__event(c, &e.hdr, false);
}

static void tokenize(double from_ms, double to_ms)
{
	call(AT(from_ms), MAIN, RT_PACK_TOKENIZE, false, 0, 0, 0, 0);
	call(AT(to_ms), MAIN, RT_PACK_TOKENIZE, true, 0, 0, 0, 12);
}

struct seq {
	int32_t id;
	uint32_t n, logits;
	int32_t pos;
};

/* A llama_decode's batch and entry on WORKER at from. */
static void step_begin(double from_ms, uint32_t flags, const struct seq *s, uint32_t n)
{
	struct rt_ev_pack_batch b;
	uint32_t i, tokens = 0;

	memset(&b, 0, sizeof(b));
	hdr(&b.hdr, RT_EV_PACK_BATCH, sizeof(b), AT(from_ms), WORKER);
	for (i = 0; i < n; i++) {
		b.seqs[i].seq_id = s[i].id;
		b.seqs[i].n_tokens = s[i].n;
		b.seqs[i].pos_min = s[i].pos;
		b.seqs[i].pos_max = s[i].pos + (int32_t)s[i].n - 1;
		b.seqs[i].n_logits = s[i].logits;
		tokens += s[i].n;
	}
	b.n_tokens = b.n_read = tokens;
	b.n_seqs = n;
	b.flags = flags;
	rt_correlator__event(c, &b.hdr, false);
	call(AT(from_ms), WORKER, RT_PACK_DECODE, false, CTX, 0, 0, 0);
}

static void step_end(double to_ms)
{
	call(AT(to_ms), WORKER, RT_PACK_DECODE, true, CTX, 0, 0, 0);
}

/* One llama_decode on WORKER over [from, to]: its batch, entry, return. */
static void step_flags(double from_ms, double to_ms, uint32_t flags, const struct seq *s,
		       uint32_t n)
{
	step_begin(from_ms, flags, s, n);
	step_end(to_ms);
}

#define STEP(from, to, ...)                                                                        \
	do {                                                                                       \
		const struct seq s_[] = { __VA_ARGS__ };                                           \
		step_flags(from, to, 0, s_, sizeof(s_) / sizeof(s_[0]));                           \
	} while (0)

static const struct rt_span *span_of(const char *id)
{
	int i;

	for (i = 0; i < n_spans; i++)
		if (!strcmp(spans[i].request_id, id))
			return &spans[i];
	fail_msg("no span %s", id);
	return NULL;
}

static void assert_phase(const struct rt_span *s, enum rt_phase p, double ms, uint8_t src)
{
	assert_int_equal(s->phase_source[p], src);
	assert_int_equal(s->phase_ns[p], (int64_t)(ms * (double)MS));
}

static const struct rt_span_thread *thread_in(const struct rt_span *s, uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < s->cpu.n_threads; i++)
		if (s->cpu.threads[i].tid == tid)
			return &s->cpu.threads[i];
	return NULL;
}

static uint32_t intervals_of(const struct rt_span *s, enum rt_phase p, uint8_t src)
{
	uint32_t i, n = 0;

	for (i = 0; i < s->n_intervals; i++)
		if (s->intervals[i].phase == p && s->intervals[i].source == src)
			n++;
	return n;
}

static void test_two_concurrent_requests(void **state)
{
	const struct rt_span *a, *b;
	const struct rt_span_thread *wa, *wb;
	struct rt_span_server_cmp x;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.1, 1.3);
	tokenize(1.4, 1.5); /* the chat template's second piece */
	request(AT(2), 8, "b");
	tokenize(2.1, 2.4);
	sw(AT(3) - 5 * US, 0, WORKER);
	/* a's prompt in two chunks (output on the last token only), b's in one */
	STEP(3, 5, { 0, 8, 0, 0 }, { 1, 5, 1, 0 });
	STEP(6, 8, { 0, 2, 1, 8 }, { 1, 1, 1, 5 });
	STEP(9, 10, { 0, 1, 1, 10 }, { 1, 1, 1, 6 });
	/* b's step with two draft tokens: speculative decoding, still one decode step */
	STEP(11, 12, { 0, 1, 1, 11 }, { 1, 3, 3, 7 });
	STEP(13, 14, { 0, 1, 1, 12 });
	sw(AT(14) + 5 * US, WORKER, 0);
	respond(AT(15), 8, "{\"id_slot\":5,\"timings\":{\"prompt_ms\":1.5,\"predicted_ms\":6.5}}");
	respond(AT(16), 7, "{\"id_slot\":0,\"timings\":{\"prompt_ms\":4.5,\"predicted_ms\":6.25}}");
	rt_correlator__finish(c);
	assert_int_equal(n_spans, 2);
	a = span_of("a");
	b = span_of("b");

	assert_phase(a, RT_PHASE_TOKENIZE, 0.4, RT_PSRC_PACK);
	assert_phase(a, RT_PHASE_QUEUE, 1.5, RT_PSRC_PACK);
	assert_phase(a, RT_PHASE_PREFILL, 5, RT_PSRC_PACK);
	assert_phase(a, RT_PHASE_DECODE, 6, RT_PSRC_PACK);
	assert_int_equal(a->phase_ns[RT_PHASE_PRE_FIRST_TOKEN], RT_NULL_NS);
	assert_true(a->pack.present);
	assert_int_equal(a->pack.seq, 0);
	assert_int_equal(a->pack.tokenize_calls, 2);
	assert_int_equal(a->pack.prefill_steps, 2);
	assert_int_equal(a->pack.decode_steps, 3);
	assert_int_equal(a->pack.prompt_tokens, 10);
	/* a's response (fd 7) names slot 0, its sequence: the join is exact */
	assert_int_equal(a->pack.join, RT_PACK_JOIN_ID_SLOT);
	assert_int_equal(a->steps_source, RT_PSRC_PACK);
	assert_int_equal(intervals_of(a, RT_PHASE_PREFILL, RT_PSRC_PACK), 1);
	assert_int_equal(intervals_of(a, RT_PHASE_DECODE, RT_PSRC_PACK), 1);

	assert_phase(b, RT_PHASE_TOKENIZE, 0.3, RT_PSRC_PACK);
	assert_phase(b, RT_PHASE_QUEUE, 0.6, RT_PSRC_PACK);
	assert_phase(b, RT_PHASE_PREFILL, 2, RT_PSRC_PACK);
	assert_phase(b, RT_PHASE_DECODE, 7, RT_PSRC_PACK);
	assert_int_equal(b->pack.seq, 1);
	assert_int_equal(b->pack.tokenize_calls, 1);
	assert_int_equal(b->pack.prefill_steps, 1);
	assert_int_equal(b->pack.decode_steps, 3);
	assert_int_equal(b->pack.prompt_tokens, 5);
	/* b's (fd 8) names slot 5, neither its sequence 1 nor 1 - 1: the join is doubted */
	assert_int_equal(b->pack.join, RT_PACK_JOIN_MISMATCH);

	/* the worker's time in shared steps is split; the last step is a's alone */
	wa = thread_in(a, WORKER);
	wb = thread_in(b, WORKER);
	assert_non_null(wa);
	assert_non_null(wb);
	assert_true(wa->shared);
	assert_int_equal(wa->on_cpu_ns, 4 * MS);
	assert_int_equal(wb->on_cpu_ns, 3 * MS);

	/* the server's own figures beside the observed phases */
	assert_true(rt_span_server_cmp(a, &x));
	assert_int_equal(x.prefill_phase, RT_PHASE_PREFILL);
	assert_int_equal(x.prompt_ns, 4500 * US);
	assert_int_equal(x.prefill_diff_ns, 500 * US);
	assert_int_equal(x.decode_diff_ns, -250 * US);
}

static void test_batch_get_one(void **state)
{
	const struct seq prompt1[] = { { 0, 8, 0, 0 } }, prompt2[] = { { 0, 4, 0, 0 } },
			 tok[] = { { 0, 1, 0, 0 } };
	const uint32_t flags =
		RT_PACK_BATCH_NO_POS | RT_PACK_BATCH_NO_SEQ | RT_PACK_BATCH_NO_LOGITS;
	const struct rt_span *s;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.2, 1.5);
	step_flags(2, 4, flags, prompt1, 1);
	step_flags(4.5, 6, flags, prompt2, 1);
	step_flags(7, 8, flags, tok, 1);
	step_flags(9, 10, flags, tok, 1);
	step_flags(11, 12, flags, tok, 1);
	respond(AT(13), 7, "{}");
	rt_correlator__finish(c);
	s = span_of("a");
	assert_int_equal(s->pack.prefill_steps, 2);
	assert_int_equal(s->pack.decode_steps, 3);
	assert_int_equal(s->pack.prompt_tokens, 12);
	assert_int_equal(s->pack.join, RT_PACK_JOIN_HANDOFF);
	assert_phase(s, RT_PHASE_QUEUE, 0.5, RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_PREFILL, 4, RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_DECODE, 6, RT_PSRC_PACK);
}

/* a request on seq 0, then b on seq 0 after a whole SEQ_RM */
static void test_seq_reuse_after_rm(void **state)
{
	const struct rt_span *a, *b;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.1, 1.2);
	STEP(2, 3, { 0, 6, 1, 0 });
	STEP(4, 5, { 0, 1, 1, 6 });
	STEP(6, 7, { 0, 1, 1, 7 });
	call(AT(7.5), MAIN, RT_PACK_SEQ_RM, false, 0, -1, -1, 0);
	respond(AT(8), 7, "{}");
	/* the decoding thread exits; its tid comes back for b (pack state per thread goes) */
	{
		struct rt_ev_proc_exit x = { 0 };

		hdr(&x.hdr, RT_EV_PROC_EXIT, sizeof(x), AT(8.5), WORKER);
		rt_correlator__event(c, &x.hdr, false);
	}
	request(AT(9), 8, "b");
	tokenize(9.1, 9.2);
	STEP(10, 11, { 0, 4, 1, 0 });
	STEP(12, 13, { 0, 1, 1, 4 });
	respond(AT(14), 8, "{}");
	rt_correlator__finish(c);
	a = span_of("a");
	b = span_of("b");
	assert_int_equal(a->pack.decode_steps, 2);
	assert_int_equal(b->pack.seq, 0);
	assert_int_equal(b->pack.prefill_steps, 1);
	assert_int_equal(b->pack.decode_steps, 1);
	assert_phase(b, RT_PHASE_QUEUE, 0.8, RT_PSRC_PACK);
	assert_phase(b, RT_PHASE_PREFILL, 1, RT_PSRC_PACK);
	assert_phase(b, RT_PHASE_DECODE, 2, RT_PSRC_PACK);
}

/*
 * llama-server's slot reuse: the slot is given to b (a partial SEQ_RM keeps
 * the cached prefix) while a's response is still being written.
 */
static void test_seq_reuse_before_response(void **state)
{
	const struct rt_span *a, *b;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.1, 1.2);
	request(AT(1.5), 8, "b");
	tokenize(1.6, 1.7);
	STEP(2, 3, { 0, 6, 1, 0 });
	STEP(4, 5, { 0, 1, 1, 6 });
	call(AT(5.5), WORKER, RT_PACK_SEQ_RM, false, 0, 3, -1, 0);
	STEP(6, 7, { 0, 5, 1, 3 });
	STEP(8, 9, { 0, 1, 1, 8 });
	respond(AT(9.5), 7, "{}");
	respond(AT(10), 8, "{}");
	rt_correlator__finish(c);
	a = span_of("a");
	b = span_of("b");
	assert_int_equal(a->pack.prefill_steps, 1);
	assert_int_equal(a->pack.decode_steps, 1);
	assert_int_equal(b->pack.seq, 0);
	assert_int_equal(b->pack.prefill_steps, 1);
	assert_int_equal(b->pack.decode_steps, 1);
	assert_int_equal(b->pack.prompt_tokens, 5);
	assert_phase(b, RT_PHASE_QUEUE, 6 - 1.7, RT_PSRC_PACK);
}

static void mark(uint16_t kind, uint64_t ts, uint32_t phase, const char *id)
{
	struct rt_ev_mark e = { 0 };

	hdr(&e.hdr, kind, sizeof(e), ts, WORKER);
	e.phase = phase;
	e.id_len = (uint32_t)strlen(id);
	snprintf(e.request_id, sizeof(e.request_id), "%s", id);
	rt_correlator__event(c, &e.hdr, false);
}

static void test_marker_phases_win(void **state)
{
	const struct rt_span *s;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.1, 1.2);
	mark(RT_EV_MARK_BEGIN, AT(2), RT_PHASE_PREFILL, "a");
	STEP(2, 3, { 0, 6, 1, 0 });
	mark(RT_EV_MARK_END, AT(3.5), RT_PHASE_PREFILL, "a");
	STEP(4, 5, { 0, 1, 1, 6 });
	respond(AT(6), 7, "{}");
	rt_correlator__finish(c);
	s = span_of("a");
	assert_phase(s, RT_PHASE_PREFILL, 1.5, RT_PSRC_MARKER);
	assert_int_equal(s->phase_ns[RT_PHASE_TOKENIZE], RT_NULL_NS);
	assert_int_equal(s->phase_ns[RT_PHASE_DECODE], RT_NULL_NS);
	assert_int_equal(intervals_of(s, RT_PHASE_PREFILL, RT_PSRC_PACK), 0);
	/* the pack still counts its steps */
	assert_true(s->pack.present);
	assert_int_equal(s->pack.prefill_steps, 1);
	assert_int_equal(s->pack.decode_steps, 1);
}

/* GPU build: llama_decode returns with the work queued; llama_synchronize ends the step */
static void test_gpu_sync_ends_step(void **state)
{
	const struct seq prompt[] = { { 0, 6, 1, 0 } }, t1[] = { { 0, 1, 1, 6 } },
			 t2[] = { { 0, 1, 1, 7 } };
	const struct rt_span *s;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.1, 1.2);
	step_flags(2, 2.2, 0, prompt, 1);
	call(AT(2.2), WORKER, RT_PACK_SYNC, false, CTX, 0, 0, 0);
	call(AT(5), WORKER, RT_PACK_SYNC, true, CTX, 0, 0, 0);
	/* a second logits read after the sync does not move the end */
	call(AT(5.1), WORKER, RT_PACK_SYNC, false, CTX, 0, 0, 0);
	call(AT(5.2), WORKER, RT_PACK_SYNC, true, CTX, 0, 0, 0);
	step_flags(6, 6.1, 0, t1, 1);
	call(AT(6.1), WORKER, RT_PACK_SYNC, false, CTX, 0, 0, 0);
	call(AT(7), WORKER, RT_PACK_SYNC, true, CTX, 0, 0, 0);
	step_flags(8, 8.1, 0, t2, 1);
	call(AT(8.1), WORKER, RT_PACK_SYNC, false, CTX, 0, 0, 0);
	call(AT(9), WORKER, RT_PACK_SYNC, true, CTX, 0, 0, 0);
	respond(AT(10), 7, "{}");
	rt_correlator__finish(c);
	s = span_of("a");
	assert_phase(s, RT_PHASE_PREFILL, 3, RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_DECODE, 4, RT_PSRC_PACK);
	assert_int_equal(s->pack.decode_steps, 2);
}

/* a decode that failed (no KV slot) advanced nobody */
static void test_failed_decode_not_counted(void **state)
{
	struct rt_ev_pack_batch b;
	const struct rt_span *s;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.1, 1.2);
	memset(&b, 0, sizeof(b));
	hdr(&b.hdr, RT_EV_PACK_BATCH, sizeof(b), AT(1.5), WORKER);
	b.n_seqs = 1;
	b.n_tokens = b.n_read = 6;
	b.seqs[0] = (struct rt_pack_seq){ .seq_id = 0, .n_tokens = 6, .pos_max = 5, .n_logits = 1 };
	rt_correlator__event(c, &b.hdr, false);
	call(AT(1.5), WORKER, RT_PACK_DECODE, false, CTX, 0, 0, 0);
	call(AT(1.6), WORKER, RT_PACK_DECODE, true, CTX, 0, 0, 1);
	STEP(2, 3, { 0, 6, 1, 0 });
	STEP(4, 5, { 0, 1, 1, 6 });
	respond(AT(6), 7, "{}");
	rt_correlator__finish(c);
	s = span_of("a");
	assert_int_equal(s->pack.prefill_steps, 1);
	assert_int_equal(s->pack.decode_steps, 1);
	assert_phase(s, RT_PHASE_QUEUE, 0.8, RT_PSRC_PACK);
}

static void wake(uint64_t ts, uint32_t waker, uint32_t target)
{
	rt_test_waking(c, ts, PID, waker, PID, target);
}

/* a tokenizer thread woken by the handler tokenizes the request it was handed */
static void test_tokenizer_thread_by_handoff(void **state)
{
	const struct rt_span *a, *b;

	(void)state;
	sw(AT(0.9), 0, MAIN);
	request(AT(1), 7, "a");
	wake(AT(1.1), MAIN, TOK);
	sw(AT(1.15), MAIN, 0);
	sw(AT(1.2), 0, TOK);
	call(AT(1.3), TOK, RT_PACK_TOKENIZE, false, 0, 0, 0, 0);
	call(AT(1.6), TOK, RT_PACK_TOKENIZE, true, 0, 0, 0, 9);
	sw(AT(1.7), TOK, 0);
	/* a request the tokenizer was never handed gets none of its calls */
	sw(AT(1.75), 0, MAIN);
	request(AT(1.8), 8, "b");
	sw(AT(1.85), MAIN, 0);
	STEP(2, 3, { 0, 6, 1, 0 });
	STEP(4, 5, { 0, 1, 1, 6 });
	sw(AT(5.9), 0, MAIN);
	respond(AT(6), 7, "{}");
	respond(AT(6.5), 8, "{}");
	rt_correlator__finish(c);
	a = span_of("a");
	b = span_of("b");
	assert_phase(a, RT_PHASE_TOKENIZE, 0.3, RT_PSRC_PACK);
	assert_phase(a, RT_PHASE_QUEUE, 0.4, RT_PSRC_PACK);
	assert_int_equal(a->pack.seq, 0);
	/* the tokenize probe works in this process: b, never tokenized, is not joined */
	assert_false(b->pack.present);
	assert_int_equal(b->phase_source[RT_PHASE_PRE_FIRST_TOKEN], RT_PSRC_PROBE);
}

/* tracing began while a sequence was decoding: its steps are nobody's */
static void test_sequence_met_mid_decode(void **state)
{
	const struct rt_span *s;

	(void)state;
	STEP(0.5, 0.6, { 3, 1, 1, 40 });
	request(AT(1), 7, "a");
	tokenize(1.1, 1.2);
	STEP(2, 2.5, { 3, 1, 1, 41 });
	STEP(3, 4, { 0, 6, 1, 0 }, { 3, 1, 1, 42 });
	STEP(5, 6, { 0, 1, 1, 6 });
	respond(AT(7), 7, "{}");
	rt_correlator__finish(c);
	s = span_of("a");
	assert_int_equal(s->pack.seq, 0);
	assert_int_equal(s->pack.prefill_steps, 1);
	assert_int_equal(s->pack.decode_steps, 1);
	assert_phase(s, RT_PHASE_QUEUE, 1.8, RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_PREFILL, 1, RT_PSRC_PACK);
}

/* one chunk of a chunked SSE response, written by MAIN on fd at ts */
static void sse_chunk(uint64_t ts, int fd, const char *event)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%zx\r\n%s\r\n", strlen(event), event);
	sock(RT_EV_SOCK_SEND, ts, MAIN, fd, buf);
}

/* a streamed response: pack phases beside the probe receive and postprocess */
static void test_streamed(void **state)
{
	const struct rt_span *s;
	uint64_t sum = 0;
	uint32_t p;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.1, 1.4);
	STEP(2, 3, { 0, 6, 1, 0 });
	sock(RT_EV_SOCK_SEND, AT(3.1), MAIN, 7,
	     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	     "Transfer-Encoding: chunked\r\n\r\n");
	sse_chunk(AT(3.2), 7, "data: {\"content\":\"Hi\",\"stop\":false}\n\n");
	STEP(4, 5, { 0, 1, 1, 6 });
	sse_chunk(AT(5.2), 7, "data: {\"content\":\" there\",\"stop\":false}\n\n");
	STEP(6, 7, { 0, 1, 1, 7 });
	sse_chunk(AT(7.2), 7, "data: {\"content\":\"!\",\"stop\":false}\n\n");
	sse_chunk(AT(7.4), 7,
		  "data: {\"content\":\"\",\"stop\":true,"
		  "\"timings\":{\"prompt_ms\":0.9,\"predicted_ms\":4.1}}\n\n");
	sock(RT_EV_SOCK_SEND, AT(7.5), MAIN, 7, "0\r\n\r\n");
	rt_correlator__finish(c);
	s = span_of("a");
	assert_true(s->streamed);
	assert_int_equal(s->first_token_ns, AT(3.2) - US);
	assert_phase(s, RT_PHASE_TOKENIZE, 0.3, RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_QUEUE, 0.6, RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_PREFILL, 1, RT_PSRC_PACK);
	assert_phase(s, RT_PHASE_DECODE, 4, RT_PSRC_PACK);
	assert_int_equal(s->phase_ns[RT_PHASE_PRE_FIRST_TOKEN], RT_NULL_NS);
	assert_int_equal(s->phase_source[RT_PHASE_RECEIVE], RT_PSRC_PROBE);
	/* postprocess: from the last content event's write, after the last step */
	assert_int_equal(s->phase_source[RT_PHASE_POSTPROCESS], RT_PSRC_PROBE);
	assert_int_equal(s->phase_ns[RT_PHASE_POSTPROCESS], AT(7.5) - (AT(7.2) - US));
	assert_int_equal(s->pack.decode_steps, 2);
	/* the phases partition the span: what they leave is other */
	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (p != RT_PHASE_OTHER && s->phase_ns[p] != RT_NULL_NS)
			sum += (uint64_t)s->phase_ns[p];
	assert_int_equal(sum + (uint64_t)s->phase_ns[RT_PHASE_OTHER],
			 (uint64_t)rt_span_duration_ns(s));
	assert_int_equal(intervals_of(s, RT_PHASE_DECODE, RT_PSRC_PROBE), 0);
	assert_int_equal(intervals_of(s, RT_PHASE_DECODE, RT_PSRC_PACK), 1);
}

/* the batch's token counts weight the step's GPU work, as a marker step's STEP_TOKENS do */
static void test_gpu_work_by_tokens(void **state)
{
	const struct seq both[] = { { 0, 300, 1, 0 }, { 1, 1, 1, 0 } };
	struct rt_ev_cuda_api e = { 0 };
	const struct rt_span *a, *b;

	(void)state;
	request(AT(1), 7, "a");
	tokenize(1.1, 1.2);
	request(AT(1.3), 8, "b");
	tokenize(1.4, 1.5);
	step_begin(2, 0, both, 2);
	/* the token ids copied to the device, 4 bytes a token */
	hdr(&e.hdr, RT_EV_CUDA_API_ENTER, sizeof(e), AT(2.5), WORKER);
	e.enter_ns = e.hdr.ts_ns;
	e.api_class = RT_CUDA_MEMCPY_ASYNC;
	e.copy_kind = RT_COPY_H2D;
	e.bytes = 301 * 4;
	rt_correlator__event(c, &e.hdr, false);
	step_end(4);
	respond(AT(5), 7, "{}");
	respond(AT(5.5), 8, "{}");
	rt_correlator__finish(c);
	a = span_of("a");
	b = span_of("b");
	assert_int_equal(a->gpu.split, RT_GPU_SPLIT_TOKENS);
	assert_int_equal(b->gpu.split, RT_GPU_SPLIT_TOKENS);
	assert_int_equal(a->gpu.h2d_bytes, 1200);
	assert_int_equal(b->gpu.h2d_bytes, 4);
	assert_int_equal(a->steps_source, RT_PSRC_PACK);
	/* b's one-token prompt (cached) is a one-step prefill, not a decode step */
	assert_int_equal(b->pack.prefill_steps, 1);
	assert_int_equal(b->pack.decode_steps, 0);
	assert_phase(b, RT_PHASE_DECODE, 0, RT_PSRC_PACK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_concurrent_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_get_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seq_reuse_after_rm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seq_reuse_before_response, setup, teardown),
		cmocka_unit_test_setup_teardown(test_marker_phases_win, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_sync_ends_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_decode_not_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tokenizer_thread_by_handoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sequence_met_mid_decode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_work_by_tokens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streamed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
