// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Chrome Trace Event writer: valid JSON, the fields each event type
 * requires, microseconds exact to the nanosecond, tracks that nest, and
 * request tracks that hold exactly the span's intervals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "export/chrome.h"

#define MS 1000000ULL
#define T0 5000000000ULL

struct trace {
	char *text;
	size_t len;
	cJSON *root;
	cJSON *events;
	struct rt_chrome_stats st;
};

static void write_trace(struct trace *t, const struct rt_span *s, size_t n, struct rt_chrome_gpu *g,
			size_t ng)
{
	FILE *f = open_memstream(&t->text, &t->len);

	assert_non_null(f);
	assert_int_equal(rt_chrome_write(f, s, n, g, ng, &t->st), 0);
	fclose(f);
	t->root = cJSON_Parse(t->text);
	if (!t->root)
		fail_msg("not JSON: %s", t->text);
	t->events = cJSON_GetObjectItem(t->root, "traceEvents");
	assert_true(cJSON_IsArray(t->events));
	assert_string_equal(cJSON_GetObjectItem(t->root, "displayTimeUnit")->valuestring, "ns");
}

static void trace_free(struct trace *t)
{
	cJSON_Delete(t->root);
	free(t->text);
}

static const char *str(const cJSON *e, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(e, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *e, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(e, k);

	if (!cJSON_IsNumber(v))
		fail_msg("event lacks number '%s'", k);
	return v->valuedouble;
}

/* ts in microseconds against an instant in nanoseconds */
static void assert_us(double us, uint64_t ns)
{
	if (fabs(us * 1000.0 - (double)ns) > 0.5)
		fail_msg("%.3f us is not %" PRIu64 " ns", us, ns);
}

/*
 * The Trace Event Format's required fields by phase, and that the X events
 * of each track nest (a slice either holds the next or ends before it).
 */
static void assert_valid(const struct trace *t)
{
	const cJSON *e, *f;
	int n = cJSON_GetArraySize(t->events), i, j;

	for (i = 0; i < n; i++) {
		const char *ph;

		e = cJSON_GetArrayItem(t->events, i);
		ph = str(e, "ph");
		assert_non_null(ph);
		assert_non_null(str(e, "name"));
		num(e, "pid");
		num(e, "tid");
		num(e, "ts");
		if (!strcmp(ph, "X")) {
			assert_true(num(e, "dur") >= 0);
		} else if (!strcmp(ph, "M")) {
			assert_true(cJSON_IsObject(cJSON_GetObjectItem(e, "args")));
		} else {
			fail_msg("unexpected ph %s", ph);
		}
	}
	for (i = 0; i < n; i++) {
		double a0, a1;

		e = cJSON_GetArrayItem(t->events, i);
		if (strcmp(str(e, "ph"), "X"))
			continue;
		a0 = num(e, "ts");
		a1 = a0 + num(e, "dur");
		for (j = 0; j < n; j++) {
			double b0, b1;

			f = cJSON_GetArrayItem(t->events, j);
			if (j == i || strcmp(str(f, "ph"), "X") || num(f, "pid") != num(e, "pid") ||
			    num(f, "tid") != num(e, "tid"))
				continue;
			b0 = num(f, "ts");
			b1 = b0 + num(f, "dur");
			/* disjoint, or one inside the other */
			if (!(a1 <= b0 || b1 <= a0 || (a0 <= b0 && b1 <= a1) ||
			      (b0 <= a0 && a1 <= b1)))
				fail_msg("%s and %s overlap on one track", str(e, "name"),
					 str(f, "name"));
		}
	}
}

/* The tid a thread_name metadata event gives name, or -1. */
static double tid_named(const struct trace *t, double pid, const char *name)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, t->events)
	{
		const cJSON *a = cJSON_GetObjectItem(e, "args");

		if (!strcmp(str(e, "ph"), "M") && !strcmp(str(e, "name"), "thread_name") &&
		    num(e, "pid") == pid && !strcmp(str(a, "name"), name))
			return num(e, "tid");
	}
	return -1;
}

static int count_cat(const struct trace *t, const char *cat)
{
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, t->events)
	{
		const char *c = str(e, "cat");

		n += c && !strcmp(c, cat);
	}
	return n;
}

static void span(struct rt_span *s, const char *id, uint64_t t0)
{
	rt_span_init(s);
	snprintf(s->request_id, sizeof(s->request_id), "%s", id);
	strcpy(s->method, "POST");
	strcpy(s->path, "/v1/completions");
	strcpy(s->comm, "server");
	s->pid = 4242;
	s->status = 200;
	s->start_ns = t0;
	s->received_ns = t0 + 1 * MS;
	s->end_ns = t0 + 100 * MS;
}

static void interval(struct rt_span *s, enum rt_phase p, uint64_t from, uint64_t to,
		     enum rt_phase_source src)
{
	struct rt_span_interval *iv = &s->intervals[s->n_intervals++];

	iv->phase = p;
	iv->source = src;
	iv->start_ns = from;
	iv->end_ns = to;
}

static void slice(struct rt_span *s, uint32_t tid, uint64_t from, uint64_t to, bool shared)
{
	struct rt_span_slice *sl = &s->cpu.slices[s->cpu.n_slices++];

	sl->tid = tid;
	sl->start_ns = from;
	sl->end_ns = to;
	sl->shared = shared;
}

/*
 * Every phase event (cat "phase") on the request's lanes, in any lane, is one
 * of the span's intervals, and each interval is drawn exactly once.
 */
static void assert_intervals_equal(const struct trace *t, const struct rt_span *s)
{
	bool seen[RT_SPAN_INTERVALS_MAX] = { 0 };
	const cJSON *e;
	uint32_t i, drawn = 0;

	cJSON_ArrayForEach(e, t->events)
	{
		const char *c = str(e, "cat");
		const cJSON *a = cJSON_GetObjectItem(e, "args");

		if (!c || strcmp(c, "phase") || strcmp(str(a, "request_id"), s->request_id))
			continue;
		assert_true(num(e, "pid") == RT_CHROME_PID_REQUESTS);
		for (i = 0; i < s->n_intervals; i++) {
			const struct rt_span_interval *iv = &s->intervals[i];

			if (seen[i] || strcmp(str(e, "name"), rt_phase_name(iv->phase)) ||
			    fabs(num(e, "ts") * 1000.0 - (double)iv->start_ns) > 0.5 ||
			    fabs(num(e, "dur") * 1000.0 - (double)(iv->end_ns - iv->start_ns)) >
				    0.5)
				continue;
			assert_string_equal(str(a, "source"), rt_phase_source_name(iv->source));
			seen[i] = true;
			break;
		}
		if (i == s->n_intervals)
			fail_msg("%s: phase event %s at %.3f is no interval of the span",
				 s->request_id, str(e, "name"), num(e, "ts"));
		drawn++;
	}
	assert_int_equal(drawn, s->n_intervals);
}

static void test_empty(void **state)
{
	struct trace t = { 0 };

	(void)state;
	write_trace(&t, NULL, 0, NULL, 0);
	assert_int_equal(cJSON_GetArraySize(t.events), 0);
	trace_free(&t);
}

static void test_request_track(void **state)
{
	struct rt_span s[2];
	struct trace t = { 0 };
	const cJSON *e;
	double tid;
	int whole = 0;

	(void)state;
	span(&s[0], "req-\"a\"\\", T0 + 1);
	s[0].arrival_ns = T0;
	interval(&s[0], RT_PHASE_RECEIVE, T0, T0 + 1 * MS, RT_PSRC_PROBE);
	interval(&s[0], RT_PHASE_QUEUE, T0 + 1 * MS, T0 + 10 * MS + 7, RT_PSRC_MARKER);
	interval(&s[0], RT_PHASE_PREFILL, T0 + 10 * MS + 7, T0 + 30 * MS, RT_PSRC_MARKER);
	interval(&s[0], RT_PHASE_DECODE, T0 + 30 * MS, T0 + 100 * MS, RT_PSRC_MARKER);
	span(&s[1], "req-b", T0 + 50 * MS);
	write_trace(&t, s, 2, NULL, 0);
	assert_valid(&t);
	assert_intervals_equal(&t, &s[0]);
	assert_intervals_equal(&t, &s[1]); /* none: no phase is drawn */
	assert_int_equal(t.st.intervals, 4);
	assert_int_equal(t.st.request_tracks, 2);
	/* one lane each, named by the id; the request slice from arrival to end */
	tid = tid_named(&t, RT_CHROME_PID_REQUESTS, "req-\"a\"\\");
	assert_true(tid > 0);
	assert_true(tid_named(&t, RT_CHROME_PID_REQUESTS, "req-b") > 0);
	cJSON_ArrayForEach(e, t.events)
	{
		const char *c = str(e, "cat");

		if (!c || strcmp(c, "request") || num(e, "tid") != tid)
			continue;
		whole++;
		assert_us(num(e, "ts"), T0);
		assert_us(num(e, "dur"), 100 * MS + 1); /* arrival to end */
		assert_string_equal(str(e, "name"), "POST /v1/completions");
	}
	assert_int_equal(whole, 1);
	/* microseconds, three decimals, from the integer */
	assert_non_null(strstr(t.text, "\"ts\":5010000.007,\"dur\":19999.993"));
	trace_free(&t);
}

/* Overlapping and out-of-span intervals go to further lanes; none is lost. */
static void test_overlap_lanes(void **state)
{
	struct rt_span s;
	struct trace t = { 0 };

	(void)state;
	span(&s, "req-o", T0);
	interval(&s, RT_PHASE_PREFILL, T0 + 10 * MS, T0 + 40 * MS, RT_PSRC_MARKER);
	interval(&s, RT_PHASE_COMM_WAIT, T0 + 20 * MS, T0 + 50 * MS, RT_PSRC_PROBE);
	interval(&s, RT_PHASE_DECODE, T0 + 45 * MS, T0 + 120 * MS, RT_PSRC_MARKER);
	interval(&s, RT_PHASE_QUEUE, T0 + 5 * MS, T0 + 4 * MS, RT_PSRC_MARKER); /* bad */
	write_trace(&t, &s, 1, NULL, 0);
	assert_valid(&t);
	assert_int_equal(t.st.intervals, 3);
	assert_int_equal(t.st.intervals_bad, 1);
	s.n_intervals = 3; /* the bad one is left out */
	assert_intervals_equal(&t, &s);
	assert_true(t.st.request_tracks >= 2);
	assert_true(tid_named(&t, RT_CHROME_PID_REQUESTS, "req-o (2)") > 0);
	trace_free(&t);
}

/* A huge instant stays exact: no trip through a double. */
static void test_exact_microseconds(void **state)
{
	struct rt_span s;
	struct trace t = { 0 };
	uint64_t t0 = 31536000123456789ULL; /* a year of uptime */

	(void)state;
	span(&s, "req-y", t0);
	interval(&s, RT_PHASE_DECODE, t0, t0 + 1, RT_PSRC_MARKER);
	write_trace(&t, &s, 1, NULL, 0);
	assert_non_null(strstr(t.text, "\"ts\":31536000123456.789,\"dur\":0.001"));
	trace_free(&t);
}

static const cJSON *cpu_event_at(const struct trace *t, double tid, uint64_t ns)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, t->events)
	{
		const char *c = str(e, "cat");

		if (c && !strcmp(c, "cpu") && num(e, "tid") == tid &&
		    fabs(num(e, "ts") * 1000.0 - (double)ns) < 0.5)
			return e;
	}
	return NULL;
}

static void test_thread_tracks(void **state)
{
	struct rt_span s[2];
	struct trace t = { 0 };
	const cJSON *e, *req;

	(void)state;
	span(&s[0], "req-a", T0);
	span(&s[1], "req-b", T0 + 5 * MS);
	s[0].cpu.n_threads = 1;
	s[0].cpu.threads[0].tid = 100;
	strcpy(s[0].cpu.threads[0].comm, "handler");
	slice(&s[0], 100, T0 + 1 * MS, T0 + 2 * MS, false);
	/* the engine thread 7 served both: the same stretch in each span */
	slice(&s[0], 7, T0 + 10 * MS, T0 + 20 * MS, true);
	slice(&s[1], 7, T0 + 10 * MS, T0 + 20 * MS, true);
	/* and a stretch only partly shared */
	slice(&s[0], 7, T0 + 30 * MS, T0 + 40 * MS, true);
	slice(&s[1], 7, T0 + 35 * MS, T0 + 40 * MS, true);
	write_trace(&t, s, 2, NULL, 0);
	assert_valid(&t);
	assert_int_equal(t.st.thread_tracks, 2);
	assert_int_equal(tid_named(&t, 4242, "handler"), 100);
	assert_int_equal(tid_named(&t, 4242, "tid 7"), 7);
	assert_int_equal(count_cat(&t, "cpu"), 4);

	e = cpu_event_at(&t, 100, T0 + 1 * MS);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "req-a");
	assert_us(num(e, "dur"), 1 * MS);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "shared")));

	e = cpu_event_at(&t, 7, T0 + 10 * MS);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "req-a +1");
	assert_us(num(e, "dur"), 10 * MS);
	req = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "requests");
	assert_int_equal(cJSON_GetArraySize(req), 2);
	assert_string_equal(cJSON_GetArrayItem(req, 0)->valuestring, "req-a");
	assert_string_equal(cJSON_GetArrayItem(req, 1)->valuestring, "req-b");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "shared")));

	/* cut where req-b joins */
	e = cpu_event_at(&t, 7, T0 + 30 * MS);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "req-a");
	assert_us(num(e, "dur"), 5 * MS);
	e = cpu_event_at(&t, 7, T0 + 35 * MS);
	assert_non_null(e);
	assert_string_equal(str(e, "name"), "req-a +1");
	assert_us(num(e, "dur"), 5 * MS);
	/* the server process is named */
	assert_non_null(strstr(t.text, "\"name\":\"process_name\",\"pid\":4242"));
	trace_free(&t);
}

static void kernel(struct rt_ev_gpu_kernel *k, uint32_t stream, uint64_t from, uint64_t to,
		   const char *name)
{
	memset(k, 0, sizeof(*k));
	k->hdr.kind = RT_EV_GPU_KERNEL;
	k->hdr.size = sizeof(*k);
	k->hdr.pid = 4242;
	k->hdr.ts_ns = from;
	k->end_ns = to;
	k->corr_id = 9;
	k->device = 0;
	k->stream = stream;
	snprintf(k->name, sizeof(k->name), "%s", name);
}

static void test_gpu_from_event(void **state)
{
	struct rt_ev_gpu_kernel k;
	struct rt_ev_gpu_memcpy m = { 0 };
	struct rt_ev_gpu_sync y = { 0 };
	struct rt_chrome_gpu g;

	(void)state;
	kernel(&k, 7, T0, T0 + 3 * MS, "gemm");
	assert_int_equal(rt_chrome_gpu_from_event(&k.hdr, &g), 1);
	assert_int_equal(g.start_ns, T0);
	assert_int_equal(g.end_ns, T0 + 3 * MS);
	assert_int_equal(g.stream, 7);
	assert_int_equal(g.pid, 4242);
	assert_string_equal(g.name, "gemm");
	/* ends before it starts: the correlator rejects it, so do we */
	k.end_ns = T0 - 1;
	assert_int_equal(rt_chrome_gpu_from_event(&k.hdr, &g), -EINVAL);
	/* past an hour: clamped as the correlator clamps */
	k.end_ns = T0 + 7200ULL * 1000 * MS;
	assert_int_equal(rt_chrome_gpu_from_event(&k.hdr, &g), 1);
	assert_int_equal(g.end_ns - g.start_ns, 3600ULL * 1000 * MS);
	k.hdr.size = sizeof(k) - 8;
	assert_int_equal(rt_chrome_gpu_from_event(&k.hdr, &g), -EINVAL);

	m.hdr.kind = RT_EV_GPU_MEMCPY;
	m.hdr.size = sizeof(m);
	m.hdr.ts_ns = T0;
	m.end_ns = T0 + 10;
	m.bytes = 4096;
	m.copy_kind = RT_COPY_H2D;
	assert_int_equal(rt_chrome_gpu_from_event(&m.hdr, &g), 1);
	assert_int_equal(g.bytes, 4096);
	m.copy_kind = 99;
	assert_int_equal(rt_chrome_gpu_from_event(&m.hdr, &g), -EINVAL);

	y.hdr.kind = RT_EV_GPU_SYNC;
	y.hdr.size = sizeof(y);
	assert_int_equal(rt_chrome_gpu_from_event(&y.hdr, &g), 0);
}

static void test_gpu_tracks(void **state)
{
	struct rt_ev_gpu_kernel k;
	struct rt_ev_gpu_memcpy m = { 0 };
	struct rt_chrome_gpu g[5];
	struct trace t = { 0 };
	const cJSON *e;
	double s7, s8;
	int on7 = 0, on8 = 0;

	(void)state;
	/* given out of order: the writer sorts */
	kernel(&k, 7, T0 + 5 * MS, T0 + 6 * MS, "decode_kernel");
	assert_int_equal(rt_chrome_gpu_from_event(&k.hdr, &g[0]), 1);
	kernel(&k, 7, T0, T0 + 2 * MS, "prefill_kernel");
	assert_int_equal(rt_chrome_gpu_from_event(&k.hdr, &g[1]), 1);
	kernel(&k, 8, T0 + 1 * MS, T0 + 4 * MS, "other_stream");
	assert_int_equal(rt_chrome_gpu_from_event(&k.hdr, &g[2]), 1);
	m.hdr.kind = RT_EV_GPU_MEMCPY;
	m.hdr.size = sizeof(m);
	m.hdr.pid = 4242;
	m.hdr.ts_ns = T0 + 2 * MS;
	m.end_ns = T0 + 3 * MS;
	m.bytes = 1 << 20;
	m.copy_kind = RT_COPY_D2H;
	m.stream = 7;
	assert_int_equal(rt_chrome_gpu_from_event(&m.hdr, &g[3]), 1);
	/* overlapping work on one stream (should not happen): a second lane */
	kernel(&k, 8, T0 + 2 * MS, T0 + 3 * MS, "overlap");
	assert_int_equal(rt_chrome_gpu_from_event(&k.hdr, &g[4]), 1);
	write_trace(&t, NULL, 0, g, 5);
	assert_valid(&t);
	assert_int_equal(t.st.gpu_slices, 5);
	assert_int_equal(t.st.gpu_tracks, 3);
	assert_non_null(strstr(t.text, "\"args\":{\"name\":\"GPU 0 (pid 4242)\"}"));
	s7 = tid_named(&t, RT_CHROME_PID_GPU_BASE + 1, "stream 7");
	s8 = tid_named(&t, RT_CHROME_PID_GPU_BASE + 1, "stream 8");
	assert_true(s7 > 0 && s8 > 0 && s7 != s8);
	assert_true(tid_named(&t, RT_CHROME_PID_GPU_BASE + 1, "stream 8 (2)") > 0);
	cJSON_ArrayForEach(e, t.events)
	{
		if (strcmp(str(e, "ph"), "X"))
			continue;
		on7 += num(e, "tid") == s7;
		on8 += num(e, "tid") == s8;
		if (!strcmp(str(e, "name"), "memcpy d2h")) {
			assert_string_equal(str(e, "cat"), "memcpy");
			assert_us(num(e, "ts"), T0 + 2 * MS);
			assert_us(num(e, "dur"), 1 * MS);
			assert_int_equal(num(cJSON_GetObjectItem(e, "args"), "bytes"), 1 << 20);
		}
	}
	assert_int_equal(on7, 3);
	assert_int_equal(on8, 1);
	assert_int_equal(count_cat(&t, "kernel"), 4);
	trace_free(&t);
}

static void test_write_error(void **state)
{
	struct rt_span s;
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	if (!f)
		fail_msg("/dev/full: %s", strerror(errno));
	span(&s, "req-x", T0);
	assert_int_equal(rt_chrome_write(f, &s, 1, NULL, 0, NULL), -EIO);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),	      cmocka_unit_test(test_request_track),
		cmocka_unit_test(test_overlap_lanes), cmocka_unit_test(test_exact_microseconds),
		cmocka_unit_test(test_thread_tracks), cmocka_unit_test(test_gpu_from_event),
		cmocka_unit_test(test_gpu_tracks),    cmocka_unit_test(test_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
