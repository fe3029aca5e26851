// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verdict's findings on made-up spans: each detector fires on the case
 * it is for and stays quiet on a healthy set; none only alone; the JSON
 * envelope. The testbed scenarios are checked end to end by
 * tests/integration/verdict_fixtures.py and verdict_live.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "verdict/findings.h"
#include "verdict/verdict.h"

#define MS 1000000LL
#define N 10

/* One request a second, 200 ms each: 10 ms prefill, 185 ms decode, 5 ms postprocess. */
static void healthy(struct rt_span *s, int i)
{
	rt_span_init(s);
	snprintf(s->request_id, sizeof(s->request_id), "r%d", i);
	snprintf(s->path, sizeof(s->path), "/v1/completions");
	s->start_ns = 1000000000ULL * (uint64_t)(i + 1);
	s->received_ns = s->start_ns;
	s->first_token_ns = s->start_ns + 10 * MS;
	s->last_token_ns = s->start_ns + 195 * MS;
	s->end_ns = s->start_ns + 200 * MS;
	s->phase_ns[RT_PHASE_RECEIVE] = 0;
	s->phase_ns[RT_PHASE_PRE_FIRST_TOKEN] = 10 * MS;
	s->phase_ns[RT_PHASE_DECODE] = 185 * MS;
	s->phase_ns[RT_PHASE_POSTPROCESS] = 5 * MS;
	s->phase_ns[RT_PHASE_OTHER] = 0;
	s->phase_source[RT_PHASE_PRE_FIRST_TOKEN] = RT_PSRC_PROBE;
	s->phase_source[RT_PHASE_DECODE] = RT_PSRC_PROBE;
}

struct run {
	struct rt_verdict v;
	struct rt_findings fs;
};

static struct run *judge(const struct rt_span *s, size_t n, const struct rt_verdict_extra *x)
{
	struct run *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	assert_int_equal(rt_verdict_compute(s, n, &r->v), 0);
	assert_int_equal(rt_findings_compute(s, n, &r->v, x, &r->fs), 0);
	assert_true(r->fs.n >= 1);
	return r;
}

static void done(struct run *r)
{
	rt_findings_free(&r->fs);
	free(r);
}

static bool has(const struct run *r, enum rt_finding_kind k)
{
	uint32_t i;

	for (i = 0; i < r->fs.n; i++)
		if (r->fs.f[i].kind == k)
			return true;
	return false;
}

static void test_none(void **state)
{
	struct rt_span s[N];
	struct run *r;
	int i;

	(void)state;
	for (i = 0; i < N; i++)
		healthy(&s[i], i);
	r = judge(s, N, NULL);
	assert_int_equal(r->fs.n, 1);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_NONE);
	assert_non_null(strstr(r->fs.f[0].claim, "nothing stands out"));
	assert_int_equal(r->fs.window_start_ns, 1000000000ULL);
	assert_int_equal(r->fs.window_end_ns, 10000000000ULL + 200 * MS);
	done(r);
	r = judge(NULL, 0, NULL);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_NONE);
	done(r);
}

/* Two requests at a time queue for one tokenizer thread (markers). */
static void test_hot_thread(void **state)
{
	struct rt_span s[N];
	struct run *r;
	int i;

	(void)state;
	for (i = 0; i < N; i++) {
		struct rt_span *x = &s[i];
		uint64_t t0;

		healthy(x, 0);
		snprintf(x->request_id, sizeof(x->request_id), "r%d", i);
		/* back to back on the tokenizer: 700 ms each, 300 ms queued */
		x->start_ns = 1000000000ULL + (uint64_t)i * 700 * MS;
		t0 = x->start_ns + 300 * MS;
		x->end_ns = t0 + 800 * MS;
		x->phase_ns[RT_PHASE_PRE_FIRST_TOKEN] = RT_NULL_NS;
		x->phase_ns[RT_PHASE_QUEUE] = 300 * MS;
		x->phase_ns[RT_PHASE_TOKENIZE] = 700 * MS;
		x->phase_ns[RT_PHASE_DECODE] = 100 * MS;
		x->phase_ns[RT_PHASE_POSTPROCESS] = 0;
		x->phase_source[RT_PHASE_TOKENIZE] = RT_PSRC_MARKER;
		x->n_intervals = 1;
		x->intervals[0] = (struct rt_span_interval){ t0, t0 + 700 * MS, RT_PHASE_TOKENIZE,
							     RT_PSRC_MARKER };
		x->cpu.n_threads = 1;
		x->cpu.threads[0].tid = 77;
		snprintf(x->cpu.threads[0].comm, RT_SPAN_COMM_MAX, "tb-tokenizer");
		x->cpu.threads[0].on_cpu_ns = 690 * MS;
		x->cpu.on_cpu_ns = 690 * MS;
		x->cpu.n_slices = 1;
		x->cpu.slices[0] = (struct rt_span_slice){ t0, t0 + 690 * MS, 77, false };
	}
	r = judge(s, N, NULL);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_HOT_THREAD);
	assert_non_null(strstr(r->fs.f[0].claim, "thread 77 'tb-tokenizer'"));
	assert_non_null(strstr(r->fs.f[0].evidence, "\"phase\":\"tokenize\""));
	assert_non_null(strstr(r->fs.f[0].evidence, "\"comm\":\"tb-tokenizer\""));
	/* the phase it explains is listed after it, as a symptom */
	assert_true(has(r, RT_FIND_PHASE_DOMINANT));
	assert_int_equal(r->fs.f[r->fs.n - 1].kind, RT_FIND_PHASE_DOMINANT);
	done(r);
}

static void test_server_slower(void **state)
{
	struct rt_span s[N];
	struct run *r;
	int i;

	(void)state;
	for (i = 0; i < N; i++) {
		healthy(&s[i], i);
		s[i].n_reported = 1;
		snprintf(s[i].reported[0].name, RT_SPAN_REPORTED_NAME_MAX, "openai-processing-ms");
		s[i].reported[0].value = 150; /* of 200 on the wire */
	}
	r = judge(s, N, NULL);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_SERVER_SLOWER);
	assert_non_null(strstr(r->fs.f[0].evidence, "\"gap_p50\":0.250"));
	done(r);
	for (i = 0; i < N; i++)
		s[i].reported[0].value = 190; /* within 10% */
	r = judge(s, N, NULL);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_NONE);
	done(r);
}

/* The GPU works 10 ms a request while requests spend 150 ms in tokenize. */
static void gpu_spans(struct rt_span *s, bool cupti)
{
	int i;

	for (i = 0; i < N; i++) {
		healthy(&s[i], i);
		s[i].phase_ns[RT_PHASE_PRE_FIRST_TOKEN] = RT_NULL_NS;
		s[i].phase_ns[RT_PHASE_TOKENIZE] = 150 * MS;
		s[i].phase_ns[RT_PHASE_PREFILL] = 10 * MS;
		s[i].phase_ns[RT_PHASE_DECODE] = 35 * MS;
		s[i].gpu.present = true;
		s[i].gpu.kernel_ns = cupti ? 40 * MS : RT_NULL_NS;
		s[i].gpu.memcpy_ns = cupti ? 2 * MS : RT_NULL_NS;
		s[i].gpu.sync_wait_ns = 30 * MS;
		s[i].gpu.launches = 100;
		s[i].gpu.h2d_bytes = 4096;
	}
}

static void test_gpu_idle(void **state)
{
	struct rt_verdict_link link = { .device = 0, .link = "pcie", .utilisation = 0.85 };
	struct rt_verdict_extra x = { .have_gpu_busy = true, .gpu_busy = 0.12 };
	struct rt_span s[N];
	struct run *r;

	(void)state;
	gpu_spans(s, true);
	r = judge(s, N, NULL);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_GPU_IDLE_WAITING);
	/* 10 x 42 ms of device time over a 9.2 s window */
	assert_non_null(strstr(r->fs.f[0].evidence, "\"gpu_busy\":0.046"));
	assert_non_null(strstr(r->fs.f[0].evidence, "\"busy_source\":\"cupti\""));
	assert_non_null(strstr(r->fs.f[0].evidence, "\"estimate\":false"));
	done(r);

	gpu_spans(s, false);
	r = judge(s, N, NULL);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_GPU_IDLE_WAITING);
	assert_non_null(strstr(r->fs.f[0].evidence, "\"estimate\":true"));
	assert_non_null(strstr(r->fs.f[0].claim, "estimate"));
	done(r);

	/* the daemon's device busy replaces the spans' sum; a busy link is transfer_bound */
	x.n_links = 1;
	x.links = &link;
	r = judge(s, N, &x);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_GPU_IDLE_WAITING);
	assert_non_null(strstr(r->fs.f[0].evidence, "\"gpu_busy\":0.120"));
	assert_non_null(strstr(r->fs.f[0].evidence, "\"busy_source\":\"device\""));
	assert_true(has(r, RT_FIND_TRANSFER_BOUND));
	done(r);
}

static void test_transfer_bound(void **state)
{
	struct rt_span s[N];
	struct run *r;
	int i;

	(void)state;
	for (i = 0; i < N; i++) {
		healthy(&s[i], i);
		s[i].gpu.present = true;
		s[i].gpu.kernel_ns = 100 * MS;
		s[i].gpu.memcpy_ns = 80 * MS; /* 40% of 200 ms */
		s[i].gpu.h2d_bytes = 64 << 20;
		s[i].gpu.d2h_bytes = 1 << 20;
	}
	r = judge(s, N, NULL);
	assert_int_equal(r->fs.f[0].kind, RT_FIND_TRANSFER_BOUND);
	assert_non_null(strstr(r->fs.f[0].evidence, "\"memcpy_share\":0.400"));
	assert_non_null(strstr(r->fs.f[0].evidence, "\"h2d_bytes\":67108864"));
	assert_non_null(strstr(r->fs.f[0].evidence, "\"links\":null"));
	done(r);
}

static void test_json(void **state)
{
	struct rt_span s[N];
	struct run *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int i;

	(void)state;
	for (i = 0; i < N; i++)
		healthy(&s[i], i);
	r = judge(s, N, NULL);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(rt_findings_json(f, &r->fs), 0);
	fclose(f);
	assert_true(
		strncmp(buf,
			"{\"window\":{\"start_ns\":1000000000,\"end_ns\":10200000000,"
			"\"duration_ms\":9200.000,\"requests\":10},\"findings\":[{\"kind\":"
			"\"none\",\"claim\":\"nothing stands out",
			strlen("{\"window\":{\"start_ns\":1000000000,\"end_ns\":10200000000,"
			       "\"duration_ms\":9200.000,\"requests\":10},\"findings\":[{\"kind\":"
			       "\"none\",\"claim\":\"nothing stands out")) == 0);
	assert_non_null(strstr(buf, "\"evidence\":{\"requests\":10,"));
	assert_true(len > 4);
	assert_string_equal(buf + len - 4, "}]}\n");
	free(buf);
	done(r);
	for (i = 0; i < RT_FIND__COUNT; i++)
		assert_string_not_equal(rt_finding_kind_name((enum rt_finding_kind)i), "?");
	assert_string_equal(rt_finding_kind_name(RT_FIND_SERVER_SLOWER),
			    "server_slower_than_engine");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),	       cmocka_unit_test(test_hot_thread),
		cmocka_unit_test(test_server_slower),  cmocka_unit_test(test_gpu_idle),
		cmocka_unit_test(test_transfer_bound), cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
