// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU attribution (src/correlate/gpu.c, docs/gpu.md "Attribution") on
 * synthetic record streams fed to a real correlator: requests arrive and
 * end over sockets, an engine thread makes CUDA and NCCL calls, and each
 * span's gpu object and comm wait are checked against the rules: enqueues
 * count, waits are wall time for every waiter, counts and bytes are split
 * with the remainder to the oldest, a wait after collectives on its stream
 * is comm wait, markers and I/O ownership come before the engine set, and
 * records that are not ours (CUPTI DRIVER, malformed) change nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <reqtrace/span.h>

#include "correlate/correlator.h"
#include "correlate/gpu.h"
#include "gpu_state.h" /* white-box: the table bounds */
#include "probes/gpu_probes.h"

#define PID 100
#define OTHER_PID 200
#define ENGINE 101
#define HANDLER 102
#define MS 1000000ULL
#define T0 (1000 * MS)
#define STREAM 0x5000
#define STREAM2 0x6000

static struct rt_correlator *c;
static struct rt_span spans[16];
static int n_spans;

static void on_span(const struct rt_span *s, void *ctx)
{
	(void)ctx;
	assert_true(n_spans < 16);
	spans[n_spans++] = *s;
}

static const struct rt_span *span_of(const char *id)
{
	int i;

	for (i = n_spans - 1; i >= 0; i--)
		if (!strcmp(spans[i].request_id, id))
			return &spans[i];
	fail_msg("no span for %s", id);
	return NULL;
}

static int setup(void **state)
{
	struct rt_correlator_opts o = { .on_span = on_span };
	struct rt_ev_target t = { 0 };

	(void)state;
	n_spans = 0;
	c = rt_correlator__new(&o);
	assert_non_null(c);
	t.hdr.kind = RT_EV_TARGET;
	t.hdr.size = sizeof(t);
	t.hdr.ts_ns = T0;
	t.hdr.pid = PID;
	t.group_id = 1;
	snprintf(t.group, sizeof(t.group), "svc");
	rt_correlator__event(c, &t.hdr, false);
	t.hdr.pid = OTHER_PID;
	t.group_id = 2;
	snprintf(t.group, sizeof(t.group), "other");
	rt_correlator__event(c, &t.hdr, false);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rt_correlator__free(c);
	c = NULL;
	return 0;
}

static void hdr(struct rt_event_hdr *h, uint16_t kind, uint16_t size, uint64_t ts, uint32_t pid,
		uint32_t tid)
{
	h->kind = kind;
	h->size = size;
	h->ts_ns = ts;
	h->pid = pid;
	h->tid = tid;
}

static void accept_conn(uint64_t ts, uint32_t pid, int fd)
{
	struct rt_ev_sock_conn e = { 0 };

	hdr(&e.hdr, RT_EV_SOCK_ACCEPT, sizeof(e), ts, pid, HANDLER);
	e.enter_ns = ts;
	e.fd = fd;
	e.ret = fd;
	e.listen_fd = 3;
	e.local.family = e.peer.family = RT_AF_INET;
	e.local.port = 8000;
	e.peer.port = (uint16_t)(40000 + fd);
	rt_correlator__event(c, &e.hdr, false);
}

static void sock_io(uint16_t kind, uint64_t ts, uint32_t pid, int fd, const char *data)
{
	size_t len = strlen(data), size = RT_EVENT_SIZE_ALIGN(sizeof(struct rt_ev_sock_io) + len);
	struct rt_ev_sock_io *e = calloc(1, size);

	assert_non_null(e);
	hdr(&e->hdr, kind, (uint16_t)size, ts, pid, HANDLER);
	e->enter_ns = ts - 1000;
	e->ret = (int64_t)len;
	e->fd = fd;
	e->syscall = kind == RT_EV_SOCK_RECV ? RT_SYS_READ : RT_SYS_WRITE;
	e->head_len = (uint16_t)len;
	e->local.family = e->peer.family = RT_AF_INET;
	memcpy(e->data, data, len);
	rt_correlator__event(c, &e->hdr, false);
	free(e);
}

/* A request `id` read in full on fd at ts. */
static void request(uint64_t ts, uint32_t pid, int fd, const char *id)
{
	char buf[256];

	accept_conn(ts - 10, pid, fd);
	snprintf(buf, sizeof(buf),
		 "POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\n"
		 "Content-Length: 2\r\n\r\n{}",
		 id);
	sock_io(RT_EV_SOCK_RECV, ts, pid, fd, buf);
}

static void respond(uint64_t ts, uint32_t pid, int fd)
{
	sock_io(RT_EV_SOCK_SEND, ts, pid, fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
}

static void cuda_call(uint64_t enter, uint64_t ts, uint32_t tid, const char *fn, uint64_t stream,
		      uint64_t bytes)
{
	int api = rt_gpu_probe_find(fn);
	const struct rt_gpu_probe *p;
	struct rt_ev_cuda_api e = { 0 };

	assert_true(api >= 0);
	p = &rt_gpu_probes[api];
	hdr(&e.hdr, p->rec == RT_GPU_REC_EXIT ? RT_EV_CUDA_API_EXIT : RT_EV_CUDA_API_ENTER,
	    sizeof(e), p->rec == RT_GPU_REC_EXIT ? ts : enter, PID, tid);
	e.enter_ns = enter;
	e.stream = stream;
	e.bytes = bytes;
	e.api = (uint32_t)api;
	e.api_class = p->api_class;
	e.copy_kind = p->copy_kind;
	rt_correlator__event(c, &e.hdr, false);
}

static void launch(uint64_t ts, uint32_t tid)
{
	cuda_call(ts, ts, tid, "cuLaunchKernel", STREAM, 0);
}

static void nccl_call(uint64_t ts, uint32_t op, uint64_t stream)
{
	struct rt_ev_nccl e = { 0 };

	hdr(&e.hdr, RT_EV_NCCL_ENTER, sizeof(e), ts, PID, ENGINE);
	e.enter_ns = ts;
	e.op = op;
	e.stream = stream;
	e.count = 1024;
	e.peer = -1;
	rt_correlator__event(c, &e.hdr, false);
}

static void step(uint16_t kind, uint64_t ts, uint64_t id, uint32_t idx, const char *member)
{
	struct rt_ev_mark_step e = { 0 };

	hdr(&e.hdr, kind, sizeof(e), ts, PID, ENGINE);
	e.step_id = id;
	e.n_requests = 1;
	e.index = idx;
	if (member)
		snprintf(e.request_id, sizeof(e.request_id), "%s", member);
	rt_correlator__event(c, &e.hdr, false);
}

static void test_share(void **state)
{
	(void)state;
	assert_int_equal(rt_gpu_share(7, 3, 0, 0), 3);
	assert_int_equal(rt_gpu_share(7, 3, 1, 0), 2);
	assert_int_equal(rt_gpu_share(7, 3, 2, 0), 2);
	assert_int_equal(rt_gpu_share(7, 3, 2, 2), 3);
	assert_int_equal(rt_gpu_share(1, 4, 0, 3), 0);
	assert_int_equal(rt_gpu_share(1, 4, 3, 3), 1);
	assert_int_equal(rt_gpu_share(5, 0, 0, 0), 0);
}

/* One request, zero-code: every kind of call lands on it, as it is alone in the engine. */
static void test_one_request(void **state)
{
	const struct rt_span *s;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	launch(t + 1 * MS, ENGINE);
	cuda_call(t + 2 * MS, 0, ENGINE, "cuMemcpyHtoDAsync_v2", STREAM, 1000);
	launch(t + 3 * MS, ENGINE);
	cuda_call(t + 4 * MS, t + 9 * MS, ENGINE, "cuStreamSynchronize", STREAM, 0);
	cuda_call(t + 10 * MS, t + 12 * MS, ENGINE, "cuMemcpyDtoH_v2", 0, 40);
	/* unified copies carry no direction: not in h2d/d2h */
	cuda_call(t + 13 * MS, t + 14 * MS, ENGINE, "cuMemcpy", 0, 777);
	cuda_call(t + 14 * MS, 0, ENGINE, "cuGraphLaunch", STREAM, 0);
	cuda_call(t + 15 * MS, t + 15 * MS, ENGINE, "cuMemcpyPeer", 0, 64);
	respond(t + 20 * MS, PID, 7);
	assert_int_equal(n_spans, 1);
	s = span_of("A");
	assert_true(s->gpu.present);
	assert_int_equal(s->gpu.launches, 3);
	assert_int_equal(s->gpu.h2d_bytes, 1000);
	assert_int_equal(s->gpu.d2h_bytes, 40);
	assert_int_equal(s->gpu.p2p_bytes, 64);
	assert_int_equal(s->gpu.sync_wait_ns, 5 * MS + 2 * MS + 1 * MS);
	/* device time is CUPTI's: null without it */
	assert_int_equal(s->gpu.kernel_ns, RT_NULL_NS);
	assert_int_equal(s->gpu.memcpy_ns, RT_NULL_NS);
	/* no collective: no comm wait */
	assert_int_equal(s->phase_ns[RT_PHASE_COMM_WAIT], RT_NULL_NS);
}

/* No GPU record: gpu stays null (nothing is guessed). */
static void test_no_gpu(void **state)
{
	(void)state;
	request(T0 + MS, PID, 7, "A");
	respond(T0 + 2 * MS, PID, 7);
	assert_int_equal(n_spans, 1);
	assert_false(span_of("A")->gpu.present);
	assert_int_equal(span_of("A")->gpu.sync_wait_ns, RT_NULL_NS);
}

/* A wait that follows collectives on its stream is comm wait; on another stream it is not. */
static void test_comm_wait(void **state)
{
	const struct rt_span *s;
	uint64_t t = T0 + 10 * MS;
	struct rt_gpu_stats st;

	(void)state;
	request(t, PID, 7, "A");
	nccl_call(t + 1 * MS, RT_NCCL_GROUP_START, 0);
	nccl_call(t + 1 * MS, RT_NCCL_ALL_REDUCE, STREAM);
	nccl_call(t + 1 * MS, RT_NCCL_GROUP_END, 0);
	/* another stream: plain sync wait */
	cuda_call(t + 2 * MS, t + 5 * MS, ENGINE, "cuStreamSynchronize", STREAM2, 0);
	/* the collective's stream: comm wait, 4 ms */
	cuda_call(t + 5 * MS, t + 9 * MS, ENGINE, "cuStreamSynchronize", STREAM, 0);
	/* waited for already: the next sync there is not comm wait */
	cuda_call(t + 9 * MS, t + 10 * MS, ENGINE, "cuStreamSynchronize", STREAM, 0);
	/* a context sync waits for every stream: comm wait again after a collective */
	nccl_call(t + 11 * MS, RT_NCCL_SEND, STREAM2);
	cuda_call(t + 11 * MS, t + 13 * MS, ENGINE, "cuCtxSynchronize", 0, 0);
	/* a blocking copy too (the legacy stream waits for the others) */
	nccl_call(t + 14 * MS, RT_NCCL_ALL_GATHER, STREAM);
	cuda_call(t + 14 * MS, t + 15 * MS, ENGINE, "cuMemcpyDtoH_v2", 0, 8);
	/* a stream waiting for an event is not the CPU waiting: not comm */
	nccl_call(t + 16 * MS, RT_NCCL_ALL_REDUCE, STREAM);
	cuda_call(t + 16 * MS, t + 16 * MS + 10000, ENGINE, "cuStreamWaitEvent", STREAM, 0);
	respond(t + 20 * MS, PID, 7);
	s = span_of("A");
	assert_int_equal(s->gpu.sync_wait_ns, 3 * MS + 4 * MS + 1 * MS + 2 * MS + 1 * MS + 10000);
	assert_int_equal(s->phase_ns[RT_PHASE_COMM_WAIT], 4 * MS + 2 * MS + 1 * MS);
	assert_int_equal(s->phase_source[RT_PHASE_COMM_WAIT], RT_PSRC_PROBE);
	/* four collectives of 1024 int8 each; group start and end move nothing */
	assert_int_equal(s->gpu.nccl_bytes, 4 * 1024);
	assert_int_equal(s->gpu.split, RT_GPU_SPLIT_ENGINE_SET);
	rt_gpu_stats(c, &st);
	assert_int_equal(st.attributed, st.records);
	assert_int_equal(st.invalid, 0);
}

/* Two requests in the engine: counts split (remainders in turn), waits in full to both. */
static void test_split(void **state)
{
	const struct rt_span *a, *b;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	request(t + 1 * MS, PID, 8, "B");
	/* C is still arriving: not in the engine */
	accept_conn(t + 2 * MS, PID, 9);
	sock_io(RT_EV_SOCK_RECV, t + 2 * MS, PID, 9, "POST /v1/completions HTTP/1.1\r\nHost");
	launch(t + 3 * MS, ENGINE);
	launch(t + 3 * MS, ENGINE);
	launch(t + 3 * MS, ENGINE);
	cuda_call(t + 4 * MS, 0, ENGINE, "cuMemcpyHtoDAsync_v2", STREAM, 1001);
	cuda_call(t + 4 * MS, t + 10 * MS, ENGINE, "cuStreamSynchronize", STREAM, 0);
	respond(t + 11 * MS, PID, 7);
	/* B alone now */
	launch(t + 12 * MS, ENGINE);
	cuda_call(t + 12 * MS, t + 13 * MS, ENGINE, "cuStreamSynchronize", STREAM, 0);
	respond(t + 14 * MS, PID, 8);
	a = span_of("A");
	b = span_of("B");
	/* three launches between A and B: A, B, A in turn; then B's own */
	assert_int_equal(a->gpu.launches, 2);
	assert_int_equal(b->gpu.launches, 1 + 1);
	/* 1001 bytes: 500 each, the odd byte to B (its turn) */
	assert_int_equal(a->gpu.h2d_bytes, 500);
	assert_int_equal(b->gpu.h2d_bytes, 501);
	assert_int_equal(a->gpu.h2d_bytes + b->gpu.h2d_bytes, 1001);
	assert_int_equal(a->gpu.sync_wait_ns, 6 * MS);
	assert_int_equal(b->gpu.sync_wait_ns, 6 * MS + 1 * MS);
}

/* With markers, a step's calls go to its members only. */
static void test_markers(void **state)
{
	const struct rt_span *a, *b;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	request(t + 1 * MS, PID, 8, "B");
	step(RT_EV_MARK_STEP_BEGIN, t + 2 * MS, 1, 0, NULL);
	step(RT_EV_MARK_STEP_MEMBER, t + 2 * MS, 1, 0, "B");
	launch(t + 3 * MS, ENGINE);
	nccl_call(t + 3 * MS, RT_NCCL_ALL_REDUCE, STREAM);
	cuda_call(t + 3 * MS, t + 8 * MS, ENGINE, "cuStreamSynchronize", STREAM, 0);
	step(RT_EV_MARK_STEP_END, t + 9 * MS, 1, 0, NULL);
	respond(t + 10 * MS, PID, 7);
	respond(t + 11 * MS, PID, 8);
	a = span_of("A");
	b = span_of("B");
	assert_false(a->gpu.present);
	assert_true(b->gpu.present);
	assert_int_equal(b->gpu.launches, 1);
	assert_int_equal(b->gpu.sync_wait_ns, 5 * MS);
	assert_int_equal(a->phase_ns[RT_PHASE_COMM_WAIT], RT_NULL_NS);
}

/* A thread that does a request's I/O owns its GPU calls; other groups never share. */
static void test_io_owner_and_groups(void **state)
{
	const struct rt_span *a, *b, *x;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A"); /* read by HANDLER */
	request(t + 1 * MS, OTHER_PID, 8, "X");
	launch(t + 2 * MS, HANDLER);
	cuda_call(t + 2 * MS, t + 4 * MS, HANDLER, "cuStreamSynchronize", STREAM, 0);
	respond(t + 5 * MS, PID, 7);
	/* B arrives on another handler thread... */
	request(t + 6 * MS, PID, 9, "B");
	/* ...and the engine (no I/O) calls: B, not X of the other group */
	launch(t + 7 * MS, ENGINE);
	respond(t + 8 * MS, PID, 9);
	respond(t + 9 * MS, OTHER_PID, 8);
	a = span_of("A");
	b = span_of("B");
	x = span_of("X");
	assert_int_equal(a->gpu.launches, 1);
	assert_int_equal(a->gpu.sync_wait_ns, 2 * MS);
	assert_true(b->gpu.present);
	assert_int_equal(b->gpu.launches, 1);
	assert_false(x->gpu.present);
}

/* Records that are not ours, or not well formed, change nothing. */
static void test_ignored(void **state)
{
	struct rt_ev_cuda_api e = { 0 };
	struct rt_correlator_stats cs;
	struct rt_gpu_stats st;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	/* a CUPTI DRIVER record: the uprobes already counted this call */
	hdr(&e.hdr, RT_EV_CUDA_API_EXIT, sizeof(e), t + 3 * MS, PID, ENGINE);
	e.enter_ns = t + MS;
	e.corr_id = 42;
	e.api_class = RT_CUDA_SYNC;
	rt_correlator__event(c, &e.hdr, false);
	/* exit before entry, a class out of range, a short record */
	e.corr_id = 0;
	e.enter_ns = t + 4 * MS;
	rt_correlator__event(c, &e.hdr, false);
	e.enter_ns = t + MS;
	e.api_class = 99;
	rt_correlator__event(c, &e.hdr, false);
	e.api_class = RT_CUDA_SYNC;
	e.hdr.size = sizeof(struct rt_event_hdr) + 8;
	rt_correlator__event(c, &e.hdr, false);
	/* an api id beyond the table: counted like any sync (the class says what it is) */
	e.hdr.size = sizeof(e);
	e.api = 60000;
	rt_correlator__event(c, &e.hdr, false);
	respond(t + 5 * MS, PID, 7);
	rt_gpu_stats(c, &st);
	rt_correlator__stats(c, &cs);
	assert_int_equal(st.cupti_driver, 1);
	/* the short record is refused by whichever size check comes first */
	assert_int_equal(st.invalid + cs.invalid_events, 3);
	assert_int_equal(span_of("A")->gpu.sync_wait_ns, 2 * MS);
}

/* Nobody to charge: counted, not lost silently. */
static void test_unattributed(void **state)
{
	struct rt_gpu_stats st;

	(void)state;
	launch(T0 + MS, ENGINE);
	cuda_call(T0 + MS, T0 + 3 * MS, ENGINE, "cuStreamSynchronize", STREAM, 0);
	rt_gpu_stats(c, &st);
	assert_int_equal(st.records, 2);
	assert_int_equal(st.unattributed, 2);
	assert_int_equal(st.unattributed_wait_ns, 2 * MS);
}

/* The table of streams awaiting a sync is bounded; the oldest entry goes first. */
static void test_streams_bounded(void **state)
{
	struct rt_gpu_stats st;
	uint64_t t = T0 + 10 * MS, i;

	(void)state;
	request(t, PID, 7, "A");
	for (i = 0; i < RT_GPU_STREAMS_MAX + 10; i++)
		nccl_call(t + MS + i, RT_NCCL_ALL_REDUCE, 0x10000 + i);
	/* the first stream was evicted: its sync is not comm wait; the last one's is */
	cuda_call(t + 2 * MS, t + 3 * MS, ENGINE, "cuStreamSynchronize", 0x10000, 0);
	cuda_call(t + 3 * MS, t + 5 * MS, ENGINE, "cuStreamSynchronize",
		  0x10000 + RT_GPU_STREAMS_MAX + 9, 0);
	respond(t + 6 * MS, PID, 7);
	rt_gpu_stats(c, &st);
	assert_int_equal(st.streams_evicted, 10);
	assert_int_equal(span_of("A")->phase_ns[RT_PHASE_COMM_WAIT], 2 * MS);
	assert_int_equal(span_of("A")->gpu.sync_wait_ns, 3 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share),
		cmocka_unit_test_setup_teardown(test_one_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_gpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_comm_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_markers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_io_owner_and_groups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unattributed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streams_bounded, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
