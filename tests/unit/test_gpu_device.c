// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device time per request (src/correlate/gpu_device.c, docs/gpu.md "Device
 * time (CUPTI)") on synthetic record streams fed to a real correlator:
 * requests arrive and end over sockets, an engine thread's CUPTI DRIVER
 * records name the calls, and device records with their correlation ids
 * must land, split, in the right spans' kernel_ns and memcpy_ns; device
 * records before their DRIVER record are held; the tables are bounded and
 * every refusal is counted; the GPU busy fraction is the union of kernel
 * intervals per device.
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

#define PID 100
#define PID2 300
#define ENGINE 101
#define HANDLER 102
#define ENGINE2 301
#define SRC 7 /* the CUPTI source of PID */
#define SRC2 8 /* the CUPTI source of PID2 */
#define US 1000ULL
#define MS 1000000ULL
#define S 1000000000ULL
#define T0 (1000 * MS)
#define SPANS_MAX 512

static struct rt_correlator *c;
static struct rt_span *spans;
static int n_spans;

static void on_span(const struct rt_span *s, void *ctx)
{
	(void)ctx;
	assert_true(n_spans < SPANS_MAX);
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

static struct rt_gpu_stats *stats(void)
{
	static struct rt_gpu_stats st;

	rt_gpu_stats(c, &st);
	return &st;
}

static void target(uint32_t pid, uint32_t group)
{
	struct rt_ev_target t = { 0 };

	t.hdr.kind = RT_EV_TARGET;
	t.hdr.size = sizeof(t);
	t.hdr.ts_ns = T0;
	t.hdr.pid = pid;
	t.group_id = group;
	snprintf(t.group, sizeof(t.group), "g%u", group);
	rt_correlator__event(c, &t.hdr, false);
}

static int setup(void **state)
{
	struct rt_correlator_opts o = { .on_span = on_span };

	(void)state;
	n_spans = 0;
	spans = calloc(SPANS_MAX, sizeof(*spans));
	assert_non_null(spans);
	c = rt_correlator__new(&o);
	assert_non_null(c);
	target(PID, 1);
	target(PID2, 2);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rt_correlator__free(c);
	c = NULL;
	free(spans);
	return 0;
}

static void hdr(struct rt_event_hdr *h, uint16_t kind, uint16_t size, uint64_t ts, uint32_t pid,
		uint32_t tid, uint32_t source)
{
	h->kind = kind;
	h->size = size;
	h->ts_ns = ts;
	h->pid = pid;
	h->tid = tid;
	h->source = source;
}

static void sock_io(uint16_t kind, uint64_t ts, uint32_t pid, int fd, const char *data)
{
	size_t len = strlen(data), size = RT_EVENT_SIZE_ALIGN(sizeof(struct rt_ev_sock_io) + len);
	struct rt_ev_sock_io *e = calloc(1, size);

	assert_non_null(e);
	hdr(&e->hdr, kind, (uint16_t)size, ts, pid, HANDLER, 1);
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

/* A request `id` accepted and read in full on fd at ts (received_ns = ts). */
static void request(uint64_t ts, uint32_t pid, int fd, const char *id)
{
	struct rt_ev_sock_conn a = { 0 };
	char buf[256];

	hdr(&a.hdr, RT_EV_SOCK_ACCEPT, sizeof(a), ts - 10, pid, HANDLER, 1);
	a.enter_ns = ts - 10;
	a.fd = fd;
	a.ret = fd;
	a.listen_fd = 3;
	a.local.family = a.peer.family = RT_AF_INET;
	a.local.port = 8000;
	a.peer.port = (uint16_t)(20000 + fd);
	rt_correlator__event(c, &a.hdr, false);
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

/* A CUPTI DRIVER record: the call [enter, ret] on tid, correlation id corr. */
static void driver_src(uint64_t enter, uint64_t ret, uint32_t pid, uint32_t tid, uint32_t source,
		       uint16_t cls, uint64_t corr)
{
	struct rt_ev_cuda_api e = { 0 };

	hdr(&e.hdr, RT_EV_CUDA_API_EXIT, sizeof(e), ret, pid, tid, source);
	e.enter_ns = enter;
	e.corr_id = corr;
	e.api = 1;
	e.api_class = cls;
	rt_correlator__event(c, &e.hdr, false);
}

static void driver(uint64_t enter, uint64_t ret, uint16_t cls, uint64_t corr)
{
	driver_src(enter, ret, PID, ENGINE, SRC, cls, corr);
}

static void kernel_src(uint64_t start, uint64_t end, uint32_t pid, uint32_t source, uint64_t corr,
		       uint32_t device)
{
	struct rt_ev_gpu_kernel k = { 0 };

	hdr(&k.hdr, RT_EV_GPU_KERNEL, sizeof(k), start, pid, 0, source);
	k.end_ns = end;
	k.corr_id = corr;
	k.device = device;
	rt_correlator__event(c, &k.hdr, false);
}

static void kernel(uint64_t start, uint64_t end, uint64_t corr)
{
	kernel_src(start, end, PID, SRC, corr, 0);
}

static void copy(uint64_t start, uint64_t end, uint64_t corr, uint8_t kind)
{
	struct rt_ev_gpu_memcpy m = { 0 };

	hdr(&m.hdr, RT_EV_GPU_MEMCPY, sizeof(m), start, PID, 0, SRC);
	m.end_ns = end;
	m.corr_id = corr;
	m.bytes = 4096;
	m.copy_kind = kind;
	rt_correlator__event(c, &m.hdr, false);
}

static void memset_rec(uint64_t start, uint64_t end, uint64_t corr)
{
	struct rt_ev_gpu_memset m = { 0 };

	hdr(&m.hdr, RT_EV_GPU_MEMSET, sizeof(m), start, PID, 0, SRC);
	m.end_ns = end;
	m.corr_id = corr;
	rt_correlator__event(c, &m.hdr, false);
}

static void step(uint16_t kind, uint64_t ts, uint64_t id, uint32_t n, uint32_t idx,
		 const char *member)
{
	struct rt_ev_mark_step e = { 0 };

	hdr(&e.hdr, kind, sizeof(e), ts, PID, ENGINE, 1);
	e.step_id = id;
	e.n_requests = n;
	e.index = idx;
	if (member)
		snprintf(e.request_id, sizeof(e.request_id), "%s", member);
	rt_correlator__event(c, &e.hdr, false);
}

/* A uprobe record of the engine thread (an enqueue at its entry). */
static void uprobe(uint16_t kind, uint64_t ts, uint16_t cls, uint64_t bytes, uint8_t copy_kind)
{
	struct rt_ev_cuda_api e = { 0 };

	hdr(&e.hdr, kind, sizeof(e), ts, PID, ENGINE, 1);
	e.enter_ns = ts;
	e.api_class = cls;
	e.bytes = bytes;
	e.copy_kind = copy_kind;
	rt_correlator__event(c, &e.hdr, false);
}

/* The token count of the member just listed (rt_mark_step_begin_tokens). */
static void step_tokens(uint64_t ts, uint64_t id, uint32_t idx, uint32_t tokens)
{
	struct rt_ev_mark_step_tokens e = { 0 };

	hdr(&e.hdr, RT_EV_MARK_STEP_TOKENS, sizeof(e), ts, PID, ENGINE, 1);
	e.step_id = id;
	e.index = idx;
	e.tokens = tokens;
	rt_correlator__event(c, &e.hdr, false);
}

/* rt_mark_begin/end(id, phase) on the handler thread. */
static void mark(uint16_t kind, uint64_t ts, const char *id, uint32_t phase)
{
	struct rt_ev_mark e = { 0 };

	hdr(&e.hdr, kind, sizeof(e), ts, PID, HANDLER, 1);
	e.phase = phase;
	e.id_len = (uint32_t)strlen(id);
	snprintf(e.request_id, sizeof(e.request_id), "%s", id);
	rt_correlator__event(c, &e.hdr, false);
}

/* A plain record that moves the correlator's clock (nothing of ours). */
static void tick(uint64_t ts)
{
	struct rt_ev_watermark w = { 0 };

	hdr(&w.hdr, RT_EV_WATERMARK, sizeof(w), ts, 0, 0, 1);
	rt_correlator__event(c, &w.hdr, false);
}

/* One request, zero-code: kernels into kernel_ns; copies and memsets into memcpy_ns. */
static void test_one_request(void **state)
{
	const struct rt_span *s;
	struct rt_gpu_stats *st;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	driver(t + 1 * MS, t + 1 * MS + 5 * US, RT_CUDA_MEMCPY_ASYNC, 1);
	driver(t + 2 * MS, t + 2 * MS + 5 * US, RT_CUDA_LAUNCH, 2);
	copy(t + 2 * MS + 10 * US, t + 2 * MS + 60 * US, 1, RT_COPY_H2D);
	kernel(t + 2 * MS + 60 * US, t + 7 * MS, 2);
	driver(t + 7 * MS + 10 * US, t + 7 * MS + 20 * US, RT_CUDA_MEMSET, 3);
	memset_rec(t + 7 * MS + 30 * US, t + 7 * MS + 32 * US, 3);
	/* a sync's DRIVER record queues nothing */
	driver(t + 7 * MS + 40 * US, t + 8 * MS, RT_CUDA_SYNC, 4);
	respond(t + 9 * MS, PID, 7);
	s = span_of("A");
	assert_true(s->gpu.present);
	assert_int_equal(s->gpu.kernel_ns, 5 * MS - 60 * US);
	assert_int_equal(s->gpu.memcpy_ns, 50 * US + 2 * US);
	st = stats();
	assert_int_equal(st->dev_calls, 3);
	assert_int_equal(st->dev_records, 3);
	assert_int_equal(st->dev_joined, 3);
	assert_int_equal(st->dev_held, 0);
	assert_int_equal(st->cupti_driver, 4);
	assert_int_equal(st->dev_unattributed_ns, 0);
	assert_int_equal(st->dev_orphan_ns, 0);
}

/* The device began before the call returned: the record waits for its DRIVER record. */
static void test_held(void **state)
{
	struct rt_gpu_stats *st;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	kernel(t + 1 * MS + 2 * US, t + 3 * MS, 11);
	/* a graph launch: several kernels carry its id, before and after it returns */
	kernel(t + 1 * MS + 3 * US, t + 2 * MS, 11);
	st = stats();
	assert_int_equal(st->dev_held, 2);
	assert_int_equal(st->dev_joined, 0);
	driver(t + 1 * MS, t + 1 * MS + 5 * US, RT_CUDA_GRAPH_LAUNCH, 11);
	kernel(t + 3 * MS, t + 4 * MS, 11);
	/* a blocking copy: the transfer lies inside the call */
	copy(t + 5 * MS, t + 6 * MS, 12, RT_COPY_D2H);
	driver(t + 5 * MS - 1 * US, t + 6 * MS + 1 * US, RT_CUDA_MEMCPY, 12);
	respond(t + 7 * MS, PID, 7);
	assert_int_equal(span_of("A")->gpu.kernel_ns,
			 (2 * MS - 2 * US) + (1 * MS - 3 * US) + 1 * MS);
	assert_int_equal(span_of("A")->gpu.memcpy_ns, 1 * MS);
	st = stats();
	assert_int_equal(st->dev_held, 3);
	assert_int_equal(st->dev_joined, 4);
	assert_int_equal(st->dev_unmatched, 0);
}

/* null means no device evidence; 0 is a measurement. */
static void test_null_and_zero(void **state)
{
	const struct rt_span *a, *b, *x;
	uint64_t t = T0 + 10 * MS;
	struct rt_ev_cuda_api up = { 0 };

	(void)state;
	/* A: copies only (kernel_ns 0) */
	request(t, PID, 7, "A");
	driver(t + 1 * MS, t + 1 * MS + 5 * US, RT_CUDA_MEMCPY_ASYNC, 1);
	copy(t + 2 * MS, t + 3 * MS, 1, RT_COPY_H2D);
	respond(t + 4 * MS, PID, 7);
	/* B: a launch whose kernel never came, and an uprobe record */
	request(t + 5 * MS, PID, 8, "B");
	driver(t + 6 * MS, t + 6 * MS + 5 * US, RT_CUDA_LAUNCH, 2);
	hdr(&up.hdr, RT_EV_CUDA_API_ENTER, sizeof(up), t + 6 * MS, PID, ENGINE, 1);
	up.enter_ns = t + 6 * MS;
	up.api_class = RT_CUDA_LAUNCH;
	rt_correlator__event(c, &up.hdr, false);
	respond(t + 7 * MS, PID, 8);
	/* X: no GPU at all */
	request(t + 8 * MS, PID, 9, "X");
	respond(t + 9 * MS, PID, 9);
	a = span_of("A");
	b = span_of("B");
	x = span_of("X");
	assert_int_equal(a->gpu.kernel_ns, 0);
	assert_int_equal(a->gpu.memcpy_ns, 1 * MS);
	assert_true(b->gpu.present);
	assert_int_equal(b->gpu.launches, 1);
	assert_int_equal(b->gpu.kernel_ns, RT_NULL_NS);
	assert_int_equal(b->gpu.memcpy_ns, RT_NULL_NS);
	assert_false(x->gpu.present);
	assert_int_equal(x->gpu.kernel_ns, RT_NULL_NS);
}

/* With markers, a step's device time is split equally among its members, exactly. */
static void test_step_split(void **state)
{
	const struct rt_span *a, *b, *cc, *d;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	request(t + 1 * US, PID, 8, "B");
	request(t + 2 * US, PID, 9, "C");
	request(t + 3 * US, PID, 10, "D"); /* in no step */
	step(RT_EV_MARK_STEP_BEGIN, t + 1 * MS, 1, 3, 0, NULL);
	step(RT_EV_MARK_STEP_MEMBER, t + 1 * MS, 1, 3, 0, "A");
	step(RT_EV_MARK_STEP_MEMBER, t + 1 * MS, 1, 3, 1, "B");
	step(RT_EV_MARK_STEP_MEMBER, t + 1 * MS, 1, 3, 2, "C");
	driver(t + 2 * MS, t + 2 * MS + 5 * US, RT_CUDA_LAUNCH, 1);
	driver(t + 2 * MS + 6 * US, t + 2 * MS + 9 * US, RT_CUDA_LAUNCH, 2);
	kernel(t + 3 * MS, t + 3 * MS + 10, 1); /* 10 ns: 4, 3, 3 */
	kernel(t + 4 * MS, t + 4 * MS + 10, 2); /* the next remainder goes to the next */
	step(RT_EV_MARK_STEP_END, t + 5 * MS, 1, 3, 0, NULL);
	respond(t + 6 * MS, PID, 7);
	respond(t + 6 * MS, PID, 8);
	respond(t + 6 * MS, PID, 9);
	respond(t + 6 * MS, PID, 10);
	a = span_of("A");
	b = span_of("B");
	cc = span_of("C");
	d = span_of("D");
	assert_int_equal(a->gpu.kernel_ns + b->gpu.kernel_ns + cc->gpu.kernel_ns, 20);
	assert_in_range(a->gpu.kernel_ns, 6, 8);
	assert_in_range(b->gpu.kernel_ns, 6, 8);
	assert_in_range(cc->gpu.kernel_ns, 6, 8);
	assert_false(d->gpu.present);
}

/* A request fully received after the call entered was not what the call queued work for. */
static void test_owners_at_entry(void **state)
{
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	/* a blocking copy from t+1 ms to t+3 ms; B arrives meanwhile */
	request(t + 2 * MS, PID, 8, "B");
	copy(t + 1 * MS + 10 * US, t + 3 * MS, 1, RT_COPY_D2H);
	driver(t + 1 * MS, t + 3 * MS, RT_CUDA_MEMCPY, 1);
	/* then a launch for both */
	driver(t + 4 * MS, t + 4 * MS + 5 * US, RT_CUDA_LAUNCH, 2);
	kernel(t + 5 * MS, t + 7 * MS, 2);
	respond(t + 8 * MS, PID, 7);
	respond(t + 8 * MS, PID, 8);
	assert_int_equal(span_of("A")->gpu.memcpy_ns, 2 * MS - 10 * US);
	assert_int_equal(span_of("A")->gpu.kernel_ns, 1 * MS);
	assert_int_equal(span_of("B")->gpu.memcpy_ns, 0);
	assert_int_equal(span_of("B")->gpu.kernel_ns, 1 * MS);
}

/* Correlation ids are per process: two sources' id 1 are different calls. */
static void test_sources(void **state)
{
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	request(t, PID2, 8, "X");
	driver(t + 1 * MS, t + 1 * MS + 5 * US, RT_CUDA_LAUNCH, 1);
	driver_src(t + 1 * MS, t + 1 * MS + 6 * US, PID2, ENGINE2, SRC2, RT_CUDA_LAUNCH, 1);
	kernel_src(t + 2 * MS, t + 3 * MS, PID, SRC, 1, 0);
	kernel_src(t + 2 * MS, t + 5 * MS, PID2, SRC2, 1, 0);
	respond(t + 6 * MS, PID, 7);
	respond(t + 6 * MS, PID2, 8);
	assert_int_equal(span_of("A")->gpu.kernel_ns, 1 * MS);
	assert_int_equal(span_of("X")->gpu.kernel_ns, 3 * MS);
	/* both processes' kernels ran on device 0: one union, [2, 5) ms */
	assert_int_equal(stats()->n_busy, 1);
	assert_int_equal(stats()->busy[0].processes, 2);
	assert_int_equal(stats()->busy[0].busy_total_ns, 3 * MS);
}

/* Nobody to charge, requests gone, malformed records: counted, never charged. */
static void test_refusals(void **state)
{
	struct rt_gpu_stats *st;
	uint64_t t = T0 + 10 * MS;
	struct rt_ev_gpu_memcpy m = { 0 };

	(void)state;
	/* no request yet: the call has nobody */
	driver(t, t + 5 * US, RT_CUDA_LAUNCH, 1);
	kernel(t + 1 * MS, t + 2 * MS, 1);
	st = stats();
	assert_int_equal(st->dev_unattributed, 1);
	assert_int_equal(st->dev_unattributed_ns, 1 * MS);
	/* A ends before its kernel's record is applied: its share is an orphan */
	request(t + 3 * MS, PID, 7, "A");
	driver(t + 4 * MS, t + 4 * MS + 5 * US, RT_CUDA_LAUNCH, 2);
	respond(t + 5 * MS, PID, 7);
	kernel(t + 6 * MS, t + 8 * MS, 2);
	st = stats();
	assert_int_equal(st->dev_orphan_ns, 2 * MS);
	assert_int_equal(span_of("A")->gpu.kernel_ns, RT_NULL_NS);
	/* malformed: end before start, a 33-bit id, a bad copy kind, a DRIVER record
	 * ending before it began; id 0 is counted apart */
	kernel(t + 9 * MS, t + 8 * MS, 3);
	kernel(t + 9 * MS, t + 10 * MS, 1ULL << 32);
	hdr(&m.hdr, RT_EV_GPU_MEMCPY, sizeof(m), t + 9 * MS, PID, 0, SRC);
	m.end_ns = t + 10 * MS;
	m.corr_id = 4;
	m.copy_kind = 99;
	rt_correlator__event(c, &m.hdr, false);
	driver(t + 10 * MS, t + 9 * MS, RT_CUDA_LAUNCH, 5);
	driver(t + 10 * MS, t + 10 * MS, RT_CUDA_LAUNCH, 1ULL << 40);
	kernel(t + 11 * MS, t + 12 * MS, 0);
	st = stats();
	assert_int_equal(st->dev_invalid, 5);
	assert_int_equal(st->dev_no_corr, 1);
	assert_int_equal(st->dev_unattributed_ns, 1 * MS + 1 * MS);
	/* an absurd duration is clamped */
	driver(t + 13 * MS, t + 13 * MS + 5 * US, RT_CUDA_LAUNCH, 6);
	kernel(t + 14 * MS, t + 14 * MS + 2 * RT_GPU_WAIT_MAX_NS, 6);
	assert_int_equal(stats()->dev_clamped, 1);
}

/* Held records whose DRIVER record never comes, and calls whose work never comes, expire. */
static void test_expiry(void **state)
{
	struct rt_gpu_stats *st;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	kernel(t + 1 * MS, t + 2 * MS, 21); /* its DRIVER record was lost */
	driver(t + 3 * MS, t + 3 * MS + 5 * US, RT_CUDA_LAUNCH, 22); /* its kernel was lost */
	tick(t + RT_GPU_DEV_HELD_TTL_NS + 10 * MS);
	kernel(t + RT_GPU_DEV_HELD_TTL_NS + 10 * MS, t + RT_GPU_DEV_HELD_TTL_NS + 11 * MS, 23);
	st = stats();
	assert_int_equal(st->dev_unmatched, 1);
	assert_int_equal(st->dev_calls_unmatched, 1);
	/* the late DRIVER record of 21 finds nothing held: its kernel is not charged twice */
	driver(t + RT_GPU_DEV_HELD_TTL_NS + 12 * MS, t + RT_GPU_DEV_HELD_TTL_NS + 12 * MS,
	       RT_CUDA_LAUNCH, 21);
	respond(t + RT_GPU_DEV_HELD_TTL_NS + 13 * MS, PID, 7);
	assert_int_equal(span_of("A")->gpu.kernel_ns, RT_NULL_NS);
}

/* Both tables are bounded: the oldest entry goes, counted. */
static void test_bounded(void **state)
{
	struct rt_gpu_stats *st;
	uint64_t t = T0 + 10 * MS, i;

	(void)state;
	request(t, PID, 7, "A");
	for (i = 0; i < RT_GPU_DEV_HELD_MAX + 5; i++)
		kernel(t + 1 * MS + i, t + 1 * MS + i + 1, 1000 + i);
	st = stats();
	assert_int_equal(st->dev_held, RT_GPU_DEV_HELD_MAX + 5);
	assert_int_equal(st->dev_held_dropped, 5);
	/* the newest are still held: their DRIVER records find them */
	driver(t + 2 * MS, t + 2 * MS, RT_CUDA_LAUNCH, 1000 + RT_GPU_DEV_HELD_MAX + 4);
	driver(t + 2 * MS, t + 2 * MS, RT_CUDA_LAUNCH, 1000);
	st = stats();
	assert_int_equal(st->dev_joined, 1);
	for (i = 0; i < RT_GPU_DEV_CALLS_MAX + 7; i++)
		driver(t + 3 * MS + i, t + 3 * MS + i, RT_CUDA_LAUNCH, 100000 + i);
	st = stats();
	/* pushed out: the first loop's two (one had its kernel) and 7 of these */
	assert_int_equal(st->dev_calls_evicted, 1 + 7);
	kernel(t + 4 * MS, t + 4 * MS + 10, 100000 + RT_GPU_DEV_CALLS_MAX + 6);
	kernel(t + 4 * MS, t + 4 * MS + 10, 100000);
	st = stats();
	assert_int_equal(st->dev_joined, 2);
	assert_int_equal(st->dev_held, RT_GPU_DEV_HELD_MAX + 5 + 1);
	respond(t + 5 * MS, PID, 7);
	assert_int_equal(span_of("A")->gpu.kernel_ns, 1 + 10);
}

/* More distinct owner sets than slots while their calls wait: the oldest lose their owners. */
static void test_owner_sets_bounded(void **state)
{
	struct rt_gpu_stats *st;
	uint64_t t = T0 + 10 * MS, ti;
	const int n = RT_GPU_DEV_SNAPS_MAX + 2;
	char id[16];
	int i;

	(void)state;
	/* one request at a time in the engine: each launch has a set of its own */
	for (i = 0; i < n; i++) {
		ti = t + (uint64_t)i * 10 * US;
		snprintf(id, sizeof(id), "R%d", i);
		request(ti, PID, 10 + i, id);
		driver(ti + 1 * US, ti + 2 * US, RT_CUDA_LAUNCH, 1 + (uint64_t)i);
		if (i < n - 1)
			respond(ti + 3 * US, PID, 10 + i);
	}
	st = stats();
	assert_int_equal(st->dev_snaps_overwritten, 2);
	kernel(t + 10 * MS, t + 11 * MS, 1); /* its set was reused: nobody */
	kernel(t + 10 * MS, t + 10 * MS + 1000, (uint64_t)n);
	st = stats();
	assert_int_equal(st->dev_unattributed, 1);
	assert_int_equal(st->dev_unattributed_ns, 1 * MS);
	snprintf(id, sizeof(id), "R%d", n - 1);
	respond(t + 20 * MS, PID, 10 + n - 1);
	assert_int_equal(span_of(id)->gpu.kernel_ns, 1000);
}

/*
 * Continuous batching: one step, A prefilling 300 tokens and B decoding 1.
 * The step's kernels and copies are split 300:1, each keeps the whole step
 * time beside its share; C, waiting in the queue, gets none.
 */
static void test_step_tokens(void **state)
{
	const struct rt_span *a, *b, *cc;
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	request(t + 1 * US, PID, 8, "B");
	request(t + 2 * US, PID, 9, "C");
	mark(RT_EV_MARK_BEGIN, t + 3 * US, "C", RT_PHASE_QUEUE);
	step(RT_EV_MARK_STEP_BEGIN, t + 1 * MS, 1, 2, 0, NULL);
	step(RT_EV_MARK_STEP_MEMBER, t + 1 * MS, 1, 2, 0, "A");
	step_tokens(t + 1 * MS, 1, 0, 300);
	step(RT_EV_MARK_STEP_MEMBER, t + 1 * MS, 1, 2, 1, "B");
	step_tokens(t + 1 * MS, 1, 1, 1);
	uprobe(RT_EV_CUDA_API_ENTER, t + 2 * MS, RT_CUDA_MEMCPY_ASYNC, 301 * 4, RT_COPY_H2D);
	uprobe(RT_EV_CUDA_API_ENTER, t + 2 * MS + 6 * US, RT_CUDA_LAUNCH, 0, 0);
	driver(t + 2 * MS, t + 2 * MS + 5 * US, RT_CUDA_MEMCPY_ASYNC, 1);
	driver(t + 2 * MS + 6 * US, t + 2 * MS + 9 * US, RT_CUDA_LAUNCH, 2);
	copy(t + 2 * MS + 10 * US, t + 2 * MS + 10 * US + 301 * US, 1, RT_COPY_H2D);
	kernel(t + 3 * MS, t + 3 * MS + 3010 * US, 2); /* 3.01 ms: 3.0 and 0.01 */
	step(RT_EV_MARK_STEP_END, t + 7 * MS, 1, 2, 0, NULL);
	respond(t + 8 * MS, PID, 7);
	respond(t + 8 * MS, PID, 8);
	mark(RT_EV_MARK_END, t + 8 * MS, "C", RT_PHASE_QUEUE);
	respond(t + 9 * MS, PID, 9);
	a = span_of("A");
	b = span_of("B");
	cc = span_of("C");
	assert_int_equal(a->gpu.kernel_ns, 3000 * US);
	assert_int_equal(b->gpu.kernel_ns, 10 * US);
	assert_int_equal(a->gpu.memcpy_ns, 300 * US);
	assert_int_equal(b->gpu.memcpy_ns, 1 * US);
	assert_int_equal(a->gpu.split, RT_GPU_SPLIT_TOKENS);
	assert_int_equal(b->gpu.split, RT_GPU_SPLIT_TOKENS);
	assert_int_equal(a->gpu.step_ns, 3010 * US + 301 * US);
	assert_int_equal(b->gpu.step_ns, 3010 * US + 301 * US);
	/* the uprobe view of the same step: token ids copied, 4 bytes a token */
	assert_int_equal(a->gpu.h2d_bytes, 1200);
	assert_int_equal(b->gpu.h2d_bytes, 4);
	assert_int_equal(a->gpu.launches + b->gpu.launches, 1);
	assert_false(cc->gpu.present);
	assert_int_equal(stats()->dev_orphan_ns, 0);
	assert_int_equal(stats()->dev_unattributed_ns, 0);
}

/* A step without token counts (rt_mark_step_begin) splits equally: "members". */
static void test_step_members(void **state)
{
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	request(t + 1 * US, PID, 8, "B");
	step(RT_EV_MARK_STEP_BEGIN, t + 1 * MS, 1, 2, 0, NULL);
	step(RT_EV_MARK_STEP_MEMBER, t + 1 * MS, 1, 2, 0, "A");
	step_tokens(t + 1 * MS, 1, 0, 300);
	step(RT_EV_MARK_STEP_MEMBER, t + 1 * MS, 1, 2, 1, "B");
	/* B's count never came: the counts are not whole, equal split */
	driver(t + 2 * MS, t + 2 * MS + 5 * US, RT_CUDA_LAUNCH, 1);
	kernel(t + 3 * MS, t + 5 * MS, 1);
	step(RT_EV_MARK_STEP_END, t + 6 * MS, 1, 2, 0, NULL);
	respond(t + 7 * MS, PID, 7);
	respond(t + 7 * MS, PID, 8);
	assert_int_equal(span_of("A")->gpu.kernel_ns, 1 * MS);
	assert_int_equal(span_of("B")->gpu.kernel_ns, 1 * MS);
	assert_int_equal(span_of("A")->gpu.split, RT_GPU_SPLIT_MEMBERS);
	assert_int_equal(span_of("A")->gpu.step_ns, 2 * MS);
}

/*
 * Zero-code, the engine set: every received, unfinished request of the
 * group, but a request known to be queued (an open QUEUE marker) gets none.
 */
static void test_engine_set_queued(void **state)
{
	uint64_t t = T0 + 10 * MS;

	(void)state;
	request(t, PID, 7, "A");
	request(t + 1 * US, PID, 8, "B");
	request(t + 2 * US, PID, 9, "Q");
	mark(RT_EV_MARK_BEGIN, t + 3 * US, "Q", RT_PHASE_QUEUE);
	driver(t + 2 * MS, t + 2 * MS + 5 * US, RT_CUDA_LAUNCH, 1);
	kernel(t + 3 * MS, t + 5 * MS, 1);
	mark(RT_EV_MARK_END, t + 6 * MS, "Q", RT_PHASE_QUEUE);
	respond(t + 7 * MS, PID, 7);
	respond(t + 7 * MS, PID, 8);
	respond(t + 7 * MS, PID, 9);
	assert_int_equal(span_of("A")->gpu.kernel_ns, 1 * MS);
	assert_int_equal(span_of("B")->gpu.kernel_ns, 1 * MS);
	assert_int_equal(span_of("A")->gpu.split, RT_GPU_SPLIT_ENGINE_SET);
	assert_int_equal(span_of("A")->gpu.step_ns, 2 * MS);
	assert_false(span_of("Q")->gpu.present);
}

/*
 * GPU busy is per device, the union over streams and processes: two
 * overlapping streams of one process, and a second process on the same
 * device, count once; the other device apart.
 */
static void test_busy_union(void **state)
{
	struct rt_gpu_stats *st;
	uint64_t base = 100 * S;
	struct rt_ev_gpu_kernel k = { 0 };

	(void)state;
	/* PID, streams 7 and 13: [0, 400) and [300, 600) ms: 600 ms */
	hdr(&k.hdr, RT_EV_GPU_KERNEL, sizeof(k), base, PID, 0, SRC);
	k.end_ns = base + 400 * MS;
	k.stream = 7;
	rt_correlator__event(c, &k.hdr, false);
	k.hdr.ts_ns = base + 300 * MS;
	k.end_ns = base + 600 * MS;
	k.stream = 13;
	rt_correlator__event(c, &k.hdr, false);
	/* PID2 on device 0 too: [500, 800) ms overlaps: the union grows to 800 ms;
	 * then [900, 1000) alone: 100 ms more */
	kernel_src(base + 500 * MS, base + 800 * MS, PID2, SRC2, 0, 0);
	kernel_src(base + 900 * MS, base + 1000 * MS, PID2, SRC2, 0, 0);
	/* PID on device 1 at the same time: its own 200 ms */
	kernel_src(base + 100 * MS, base + 300 * MS, PID, SRC, 0, 1);
	tick(base + 2 * S - 1);
	st = stats();
	assert_int_equal(st->n_busy, 2);
	assert_int_equal(st->busy[0].device, 0);
	assert_int_equal(st->busy[0].processes, 2);
	assert_int_equal(st->busy[0].pid, PID);
	assert_int_equal(st->busy[0].kernels, 4);
	assert_int_equal(st->busy[0].busy_ns, 900 * MS);
	assert_int_equal(st->busy[0].busy_total_ns, 900 * MS);
	assert_int_equal(st->busy[1].device, 1);
	assert_int_equal(st->busy[1].processes, 1);
	assert_int_equal(st->busy[1].busy_ns, 200 * MS);
	assert_int_equal(st->busy_late, 0);
}

/* Busy time is the union of kernel intervals per device, per second, over the window. */
static void test_busy(void **state)
{
	struct rt_gpu_stats *st;
	uint64_t series[4], first = 0, base = 100 * S;
	uint32_t n;

	(void)state;
	/* device 0: [0, 300) and [100, 500) ms overlap (on two streams): 500 ms busy;
	 * then idle; [1200, 1400) in the next second: 200 ms */
	kernel_src(base, base + 300 * MS, PID, SRC, 0, 0);
	kernel_src(base + 100 * MS, base + 500 * MS, PID, SRC, 0, 0);
	kernel_src(base + 1200 * MS, base + 1400 * MS, PID, SRC, 0, 0);
	/* device 1 at the same time: 100 ms */
	kernel_src(base + 1300 * MS, base + 1400 * MS, PID, SRC, 0, 1);
	/* a late record inside what is already counted adds nothing */
	kernel_src(base + 200 * MS, base + 450 * MS, PID, SRC, 0, 0);
	tick(base + 2 * S - 1);
	st = stats();
	assert_int_equal(st->n_busy, 2);
	assert_int_equal(st->busy[0].device, 0);
	assert_int_equal(st->busy[0].pid, PID);
	assert_int_equal(st->busy[0].kernels, 4);
	assert_int_equal(st->busy[0].busy_ns, 700 * MS);
	assert_int_equal(st->busy[0].window_ns, 2 * S - 1);
	assert_true(st->busy[0].fraction > 0.349 && st->busy[0].fraction < 0.351);
	assert_int_equal(st->busy[1].busy_ns, 100 * MS);
	assert_int_equal(st->busy_late, 1);
	n = rt_gpu_busy_series(c, PID, 0, series, 4, &first);
	assert_int_equal(n, 4);
	assert_int_equal(first, 98);
	assert_int_equal(series[0], 0);
	assert_int_equal(series[1], 0);
	assert_int_equal(series[2], 500 * MS);
	assert_int_equal(series[3], 200 * MS);
	assert_int_equal(rt_gpu_busy_series(c, PID, 9, series, 4, NULL), 0);
	/* a minute later the window has moved past all of it */
	tick(base + 70 * S);
	kernel_src(base + 70 * S, base + 70 * S + 10 * MS, PID, SRC, 0, 0);
	tick(base + 70 * S + 500 * MS);
	st = stats();
	assert_int_equal(st->busy[0].busy_ns, 10 * MS);
	assert_int_equal(st->busy[0].window_ns, (uint64_t)RT_GPU_BUSY_WINDOW_S * S - 500 * MS);
	assert_int_equal(st->busy[0].busy_total_ns, 710 * MS);
}

/* The busy table is bounded too. */
static void test_busy_bounded(void **state)
{
	uint32_t dev;

	(void)state;
	for (dev = 0; dev < RT_GPU_BUSY_DEVICES_MAX + 3; dev++)
		kernel_src(T0 + dev * MS, T0 + dev * MS + 10, PID, SRC, 0, dev);
	assert_int_equal(stats()->n_busy, RT_GPU_BUSY_DEVICES_MAX);
	assert_int_equal(stats()->busy_devices_full, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_and_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owners_at_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sources, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_sets_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_tokens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_members, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_set_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_union, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
