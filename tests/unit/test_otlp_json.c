// SPDX-License-Identifier: BSD-2-Clause
/* The OTLP/JSON encoder: the OTLP/JSON rules (hex ids, integer enums, string
 * 64-bit integers), attributes, parent links, epoch conversion, ids. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "common/jsonw.h"
#include "export/otlp_json.h"

#define OFF 1700000000000000000LL /* a fixed epoch offset */

static void sample(struct rt_span *s, const char *id, uint32_t pid)
{
	rt_span_init(s);
	snprintf(s->request_id, sizeof(s->request_id), "%s", id);
	strcpy(s->path, "/v1/chat/completions?stream=1");
	strcpy(s->method, "POST");
	strcpy(s->comm, "vllm");
	strcpy(s->conn, "10.0.0.2:40000->[::1]:8000");
	s->pid = pid;
	s->status = 200;
	s->start_ns = 9007199254740993ULL; /* beyond 2^53 */
	s->received_ns = s->start_ns + 1000;
	s->first_token_ns = s->start_ns + 25000000;
	s->end_ns = s->start_ns + 125000000;
	s->streamed = true;
	s->phase_ns[RT_PHASE_QUEUE] = 2000000;
	s->phase_source[RT_PHASE_QUEUE] = RT_PSRC_MARKER;
	s->phase_ns[RT_PHASE_PREFILL] = 20000000;
	s->phase_source[RT_PHASE_PREFILL] = RT_PSRC_MARKER;
	s->n_reported = 2;
	strcpy(s->reported[0].name, "usage.prompt_tokens");
	s->reported[0].value = 17;
	strcpy(s->reported[1].name, "usage.completion_tokens");
	s->reported[1].value = 42;
	s->n_intervals = 2;
	s->intervals[0] = (struct rt_span_interval){ s->start_ns + 1000, s->start_ns + 3000000,
						     RT_PHASE_QUEUE, RT_PSRC_MARKER };
	s->intervals[1] = (struct rt_span_interval){ s->start_ns + 3000000, s->start_ns + 23000000,
						     RT_PHASE_PREFILL, RT_PSRC_MARKER };
	s->cpu.n_threads = 1;
	s->cpu.threads[0].tid = 77;
	strcpy(s->cpu.threads[0].comm, "worker");
	s->cpu.threads[0].on_cpu_ns = 5000000;
	s->cpu.n_slices = 2;
	s->cpu.slices[0] =
		(struct rt_span_slice){ s->start_ns + 10, s->start_ns + 2000000, 77, false };
	s->cpu.slices[1] =
		(struct rt_span_slice){ s->start_ns + 5000000, s->start_ns + 8000000, 77, false };
}

static cJSON *encode(const struct rt_span *s, size_t n, const struct rt_otlp_resource *res)
{
	struct rt_jsonw w;
	cJSON *root;

	rt_jsonw_init(&w, 0);
	assert_int_equal(rt_otlp_json_encode(&w, s, n, res), 0);
	root = cJSON_Parse(rt_jsonw_str(&w));
	assert_non_null(root);
	rt_jsonw_fini(&w);
	return root;
}

static cJSON *get(const cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!v)
		fail_msg("no key %s", k);
	return v;
}

/* The value object of attribute key in attrs, or NULL. */
static cJSON *attr(const cJSON *attrs, const char *key)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, attrs)
	{
		if (!strcmp(get(a, "key")->valuestring, key))
			return get(a, "value");
	}
	return NULL;
}

static const char *attr_s(const cJSON *attrs, const char *key, const char *type)
{
	cJSON *v = attr(attrs, key);

	if (!v)
		fail_msg("no attribute %s", key);
	v = cJSON_GetObjectItemCaseSensitive(v, type);
	if (!v || !cJSON_IsString(v))
		fail_msg("attribute %s: no string %s", key, type);
	return v->valuestring;
}

static double attr_d(const cJSON *attrs, const char *key)
{
	cJSON *v = attr(attrs, key);

	if (!v)
		fail_msg("no attribute %s", key);
	v = get(v, "doubleValue");
	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

static bool is_hex(const char *s, size_t n)
{
	size_t i;

	if (strlen(s) != n)
		return false;
	for (i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

static cJSON *spans_of(cJSON *root, int rs)
{
	cJSON *r = cJSON_GetArrayItem(get(root, "resourceSpans"), rs);

	return get(cJSON_GetArrayItem(get(r, "scopeSpans"), 0), "spans");
}

static void test_shape_and_rules(void **state)
{
	struct rt_otlp_resource res = { .service_name = "svc",
					.host_name = "h1",
					.id_seed = 42,
					.have_offset = true,
					.epoch_offset_ns = OFF };
	struct rt_span s;
	cJSON *root, *spans, *sp, *attrs, *req = NULL;
	char want[32];
	int n_server = 0, n = 0;

	(void)state;
	sample(&s, "r1", 1234);
	root = encode(&s, 1, &res);
	attrs = get(get(cJSON_GetArrayItem(get(root, "resourceSpans"), 0), "resource"),
		    "attributes");
	assert_string_equal(attr_s(attrs, "service.name", "stringValue"), "svc");
	assert_string_equal(attr_s(attrs, "host.name", "stringValue"), "h1");
	assert_string_equal(attr_s(attrs, "process.pid", "intValue"), "1234");
	assert_string_equal(attr_s(attrs, "process.executable.name", "stringValue"), "vllm");
	spans = spans_of(root, 0);
	/* the request, 2 intervals, 1 thread, 2 slices */
	assert_int_equal(cJSON_GetArraySize(spans), 6);
	cJSON_ArrayForEach(sp, spans)
	{
		n++;
		assert_true(is_hex(get(sp, "traceId")->valuestring, 32));
		assert_true(is_hex(get(sp, "spanId")->valuestring, 16));
		assert_true(cJSON_IsNumber(get(sp, "kind"))); /* enums as integers */
		assert_true(cJSON_IsString(get(sp, "startTimeUnixNano")));
		assert_true(cJSON_IsString(get(sp, "endTimeUnixNano")));
		assert_true(strtoull(get(sp, "startTimeUnixNano")->valuestring, NULL, 10) <=
			    strtoull(get(sp, "endTimeUnixNano")->valuestring, NULL, 10));
		if (get(sp, "kind")->valueint == 2) {
			n_server++;
			req = sp;
		}
	}
	assert_int_equal(n, 6);
	assert_int_equal(n_server, 1);
	assert_null(cJSON_GetObjectItemCaseSensitive(req, "parentSpanId")); /* no traceparent */
	assert_string_equal(get(req, "name")->valuestring, "POST /v1/chat/completions");
	/* monotonic + offset, exactly (all 64 bits) */
	snprintf(want, sizeof(want), "%llu", (unsigned long long)(s.start_ns + OFF));
	assert_string_equal(get(req, "startTimeUnixNano")->valuestring, want);
	snprintf(want, sizeof(want), "%llu", (unsigned long long)(s.end_ns + OFF));
	assert_string_equal(get(req, "endTimeUnixNano")->valuestring, want);

	attrs = get(req, "attributes");
	assert_string_equal(attr_s(attrs, "http.request.method", "stringValue"), "POST");
	assert_string_equal(attr_s(attrs, "url.path", "stringValue"), "/v1/chat/completions");
	assert_string_equal(attr_s(attrs, "url.query", "stringValue"), "stream=1");
	assert_string_equal(attr_s(attrs, "http.response.status_code", "intValue"), "200");
	assert_string_equal(attr_s(attrs, "server.address", "stringValue"), "::1");
	assert_string_equal(attr_s(attrs, "client.port", "intValue"), "40000");
	assert_string_equal(attr_s(attrs, "gen_ai.operation.name", "stringValue"), "chat");
	assert_string_equal(attr_s(attrs, "gen_ai.usage.input_tokens", "intValue"), "17");
	assert_string_equal(attr_s(attrs, "gen_ai.usage.output_tokens", "intValue"), "42");
	assert_float_equal(attr_d(attrs, "gen_ai.latency.time_in_queue"), 0.002, 1e-12);
	assert_float_equal(attr_d(attrs, "gen_ai.latency.time_to_first_token"), 0.025, 1e-12);
	assert_float_equal(attr_d(attrs, "gen_ai.latency.e2e"), 0.125, 1e-12);
	assert_float_equal(attr_d(attrs, "gen_ai.latency.time_in_model_prefill"), 0.02, 1e-12);
	assert_null(attr(attrs, "gen_ai.latency.time_in_model_decode")); /* not observed */
	assert_string_equal(attr_s(attrs, "reqtrace.request_id", "stringValue"), "r1");
	assert_string_equal(attr_s(attrs, "reqtrace.phase.prefill.source", "stringValue"),
			    "marker");
	assert_null(cJSON_GetObjectItemCaseSensitive(req, "status")); /* 200: unset */

	/* children: parent links to spans of the same trace */
	cJSON_ArrayForEach(sp, spans)
	{
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(sp, "parentSpanId");
		const cJSON *o;
		bool found = false;

		if (sp == req)
			continue;
		assert_non_null(p);
		assert_string_equal(get(sp, "traceId")->valuestring,
				    get(req, "traceId")->valuestring);
		assert_int_equal(get(sp, "kind")->valueint, 1);
		cJSON_ArrayForEach(o, spans)
		{
			if (o != sp && !strcmp(get(o, "spanId")->valuestring, p->valuestring))
				found = true;
		}
		assert_true(found);
	}
	sp = cJSON_GetArrayItem(spans, 2); /* the prefill interval */
	assert_string_equal(get(sp, "name")->valuestring, "prefill");
	assert_string_equal(get(sp, "parentSpanId")->valuestring, get(req, "spanId")->valuestring);
	snprintf(want, sizeof(want), "%llu", (unsigned long long)(s.start_ns + 3000000 + OFF));
	assert_string_equal(get(sp, "startTimeUnixNano")->valuestring, want);
	sp = cJSON_GetArrayItem(spans, 3); /* the thread, over both slices */
	assert_string_equal(get(sp, "name")->valuestring, "thread worker");
	snprintf(want, sizeof(want), "%llu", (unsigned long long)(s.start_ns + 8000000 + OFF));
	assert_string_equal(get(sp, "endTimeUnixNano")->valuestring, want);
	assert_string_equal(get(cJSON_GetArrayItem(spans, 4), "parentSpanId")->valuestring,
			    get(sp, "spanId")->valuestring);
	cJSON_Delete(root);
}

static void test_traceparent_and_ids(void **state)
{
	struct rt_otlp_resource res = { .id_seed = 7, .have_offset = true, .epoch_offset_ns = OFF };
	struct rt_span s[3];
	char t1[33], i1[17], t2[33], i2[17];
	cJSON *root, *spans, *req;

	(void)state;
	sample(&s[0], "a", 1);
	sample(&s[1], "b", 1);
	sample(&s[2], "a", 1);
	/* the same request encodes to the same ids; another one to others */
	rt_otlp_span_ids(&s[0], 7, t1, i1);
	rt_otlp_span_ids(&s[2], 7, t2, i2);
	assert_string_equal(t1, t2);
	assert_string_equal(i1, i2);
	rt_otlp_span_ids(&s[1], 7, t2, i2);
	assert_string_not_equal(t1, t2);
	assert_string_not_equal(i1, i2);
	rt_otlp_span_ids(&s[0], 8, t2, i2);
	assert_string_not_equal(t1, t2);

	strcpy(s[1].trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	strcpy(s[1].parent_span_id, "00f067aa0ba902b7");
	root = encode(&s[1], 1, &res);
	spans = spans_of(root, 0);
	req = cJSON_GetArrayItem(spans, 0);
	assert_int_equal(get(req, "kind")->valueint, 2);
	assert_string_equal(get(req, "traceId")->valuestring, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(get(req, "parentSpanId")->valuestring, "00f067aa0ba902b7");
	assert_string_equal(get(cJSON_GetArrayItem(spans, 1), "traceId")->valuestring,
			    "4bf92f3577b34da6a3ce929d0e0e4736");
	cJSON_Delete(root);

	/* an all-zero trace id is invalid: ignored, the request starts a trace */
	strcpy(s[1].trace_id, "00000000000000000000000000000000");
	root = encode(&s[1], 1, &res);
	req = cJSON_GetArrayItem(spans_of(root, 0), 0);
	assert_string_not_equal(get(req, "traceId")->valuestring,
				"00000000000000000000000000000000");
	assert_null(cJSON_GetObjectItemCaseSensitive(req, "parentSpanId"));
	cJSON_Delete(root);
}

static void test_resources_and_status(void **state)
{
	struct rt_otlp_resource res = { .have_offset = true, .epoch_offset_ns = OFF };
	struct rt_span s[3];
	cJSON *root, *rs, *req;

	(void)state;
	sample(&s[0], "a", 10);
	sample(&s[1], "b", 20);
	sample(&s[2], "c", 10);
	s[1].status = 503;
	s[2].outcome = RT_OUTCOME_TIMEOUT;
	s[2].n_intervals = 0;
	s[2].cpu.n_slices = 0;
	root = encode(s, 3, &res);
	rs = get(root, "resourceSpans");
	assert_int_equal(cJSON_GetArraySize(rs), 2); /* one per process */
	assert_string_equal(attr_s(get(get(cJSON_GetArrayItem(rs, 1), "resource"), "attributes"),
				   "process.pid", "intValue"),
			    "20");
	/* without a configured name, the process names the service */
	assert_string_equal(attr_s(get(get(cJSON_GetArrayItem(rs, 0), "resource"), "attributes"),
				   "service.name", "stringValue"),
			    "vllm");
	assert_int_equal(cJSON_GetArraySize(spans_of(root, 0)), 6 + 1);
	req = cJSON_GetArrayItem(spans_of(root, 1), 0);
	assert_int_equal(get(get(req, "status"), "code")->valueint, 2);
	req = cJSON_GetArrayItem(spans_of(root, 0), 6);
	assert_string_equal(get(req, "name")->valuestring, "POST /v1/chat/completions");
	assert_string_equal(get(get(req, "status"), "message")->valuestring, "timeout");
	cJSON_Delete(root);
}

static void test_epoch_offset(void **state)
{
	struct timespec r, m;
	int64_t off = rt_otlp_epoch_offset_ns(), now;

	(void)state;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	now = (int64_t)r.tv_sec * 1000000000 + r.tv_nsec;
	/* monotonic + offset is the wall clock (to a generous 50 ms) */
	assert_true(llabs(((int64_t)m.tv_sec * 1000000000 + m.tv_nsec + off) - now) < 50000000);
}

static void test_cgroup(void **state)
{
	struct rt_otlp_proc p;

	(void)state;
	assert_int_equal(
		rt_otlp_proc_from_cgroup(
			"0::/kubepods.slice/kubepods-burstable.slice/"
			"kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_9c0d_0e1f2a3b4c5d.slice/"
			"cri-containerd-"
			"ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope\n",
			&p),
		0);
	assert_string_equal(p.container_id,
			    "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
	assert_string_equal(p.pod_uid, "1a2b3c4d-5e6f-7a8b-9c0d-0e1f2a3b4c5d");
	assert_int_equal(
		rt_otlp_proc_from_cgroup("0::/user.slice/user-0.slice/session-1.scope\n", &p),
		-ENOENT);
	assert_string_equal(p.container_id, "");
}

static void test_write_line(void **state)
{
	struct rt_span s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cJSON *root;

	(void)state;
	sample(&s, "w", 5);
	assert_int_equal(rt_otlp_json_write(f, &s, 1, NULL), 0);
	fclose(f);
	assert_true(len > 2 && buf[len - 1] == '\n');
	root = cJSON_Parse(buf);
	assert_non_null(root);
	assert_int_equal(cJSON_GetArraySize(spans_of(root, 0)), 6);
	cJSON_Delete(root);
	free(buf);
}

/* A file for tests/integration/otlp_validate.py (ctest otlp_validate): the
 * encoder's output with children of every kind, checked by the Python
 * validator written from the OTLP/JSON rules. */
static void test_write_sample(void **state)
{
	struct rt_otlp_resource res = { .service_name = "sample", .host_name = "h" };
	struct rt_span s[3];
	char path[4096];
	FILE *f;

	(void)state;
	sample(&s[0], "plain", 1);
	sample(&s[1], "traced", 1);
	strcpy(s[1].trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	strcpy(s[1].parent_span_id, "00f067aa0ba902b7");
	sample(&s[2], "other-process", 2);
	s[2].status = 500;
	s[2].gpu.present = true;
	s[2].gpu.launches = 3;
	snprintf(path, sizeof(path), "%s/otlp_sample.jsonl", RT_BINARY_DIR);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(rt_otlp_json_write(f, s, 3, &res), 0);
	assert_int_equal(rt_otlp_json_write(f, s, 1, NULL), 0);
	assert_int_equal(fclose(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shape_and_rules),
		cmocka_unit_test(test_traceparent_and_ids),
		cmocka_unit_test(test_resources_and_status),
		cmocka_unit_test(test_epoch_offset),
		cmocka_unit_test(test_cgroup),
		cmocka_unit_test(test_write_line),
		cmocka_unit_test(test_write_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
