// SPDX-License-Identifier: BSD-2-Clause
/* Prometheus text exposition 0.0.4: line format, HELP/TYPE, cumulative
 * buckets, +Inf == _count, label escaping and bounds (export/prom.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "export/prom.h"

#define MS 1000000LL
#define T0 5000000000ULL

static void span(struct rt_span *s, const char *group, const char *path, bool streamed,
		 int64_t ttft_ms, int64_t dur_ms, int64_t tokens)
{
	size_t n = strlen(group);

	rt_span_init(s);
	assert_true(n < sizeof(s->group));
	memcpy(s->group, group, n + 1);
	snprintf(s->path, sizeof(s->path), "%s", path);
	strcpy(s->method, "POST");
	s->status = 200;
	s->start_ns = T0;
	s->received_ns = T0 + 1 * MS;
	s->end_ns = T0 + (uint64_t)dur_ms * MS;
	s->streamed = streamed;
	if (streamed) {
		s->first_token_ns = T0 + (uint64_t)ttft_ms * MS;
		s->last_token_ns = s->end_ns;
	}
	s->tokens_out = tokens;
	s->phase_ns[RT_PHASE_RECEIVE] = 1 * MS;
	s->phase_ns[RT_PHASE_DECODE] = (dur_ms - ttft_ms) * MS;
}

static char *render(struct rt_prom *p, const struct rt_prom_extra *x)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(rt_prom__write(p, x, f), 0);
	fclose(f);
	return buf;
}

/* The value of the one line starting with prefix (name{labels}), -1 if none. */
static double value_of(const char *text, const char *prefix)
{
	const char *l = text;
	size_t n = strlen(prefix);

	while (l && *l) {
		if (!strncmp(l, prefix, n) && l[n] == ' ')
			return strtod(l + n + 1, NULL);
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return -1;
}

static int count_lines(const char *text, const char *needle)
{
	int n = 0;
	const char *l = text;

	while ((l = strstr(l, needle))) {
		n++;
		l++;
	}
	return n;
}

/*
 * Every line: "# HELP name text", "# TYPE name type", or a sample
 * "name{...} value" whose family was TYPEd before; buckets of one series
 * never decrease and end with +Inf equal to _count.
 */
static void check_format(const char *text)
{
	char typed[64][96];
	int n_typed = 0, i;
	char *copy = strdup(text), *save = NULL, *line;
	double prev = -1;
	char series[512] = "";

	assert_non_null(copy);
	assert_true(text[0] && text[strlen(text) - 1] == '\n');
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[96], type[32];
		const char *brace, *sp;
		size_t nl;

		if (!strncmp(line, "# HELP ", 7)) {
			assert_true(strchr(line + 7, ' ') != NULL);
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			assert_int_equal(sscanf(line + 7, "%95s %31s", name, type), 2);
			assert_true(!strcmp(type, "histogram") || !strcmp(type, "counter"));
			assert_true(n_typed < 64);
			strcpy(typed[n_typed++], name);
			continue;
		}
		assert_true(line[0] != '#');
		brace = strchr(line, '{');
		assert_non_null(brace);
		sp = strrchr(line, ' ');
		assert_non_null(sp);
		assert_true(sp[-1] == '}');
		nl = (size_t)(brace - line);
		/* the family is the last TYPE line, the sample name it or its suffixes */
		assert_true(n_typed > 0);
		assert_memory_equal(line, typed[n_typed - 1], strlen(typed[n_typed - 1]));
		assert_true(nl == strlen(typed[n_typed - 1]) ||
			    !strcmp(line + strlen(typed[n_typed - 1]), "_bucket") ||
			    !strncmp(line + strlen(typed[n_typed - 1]), "_bucket{", 8) ||
			    !strncmp(line + strlen(typed[n_typed - 1]), "_sum{", 5) ||
			    !strncmp(line + strlen(typed[n_typed - 1]), "_count{", 7));
		if (strstr(line, "_bucket{")) {
			const char *le = strstr(line, ",le=\"");
			char key[512];
			double v = strtod(sp + 1, NULL);

			assert_non_null(le);
			snprintf(key, sizeof(key), "%.*s", (int)(le - line), line);
			if (strcmp(key, series))
				prev = -1;
			assert_true(v >= prev); /* cumulative */
			prev = v;
			snprintf(series, sizeof(series), "%s", key);
			if (!strncmp(le, ",le=\"+Inf\"}", 11)) {
				char count[600];
				const char *b = strstr(line, "_bucket{");

				/* name_bucket{labels,le="+Inf"} == name_count{labels} */
				snprintf(count, sizeof(count), "%.*s_count{%.*s}", (int)(b - line),
					 line, (int)(le - b - 8), b + 8);
				assert_true(value_of(text, count) == v);
			}
		}
	}
	for (i = 0; i < n_typed; i++)
		assert_int_equal(count_lines(text, typed[i]) > 0, 1);
	free(copy);
}

static void test_histograms(void **state)
{
	struct rt_prom *p = rt_prom__new();
	struct rt_span s;
	char *t;
	int i;

	(void)state;
	assert_non_null(p);
	for (i = 0; i < 3; i++) {
		span(&s, "vllm", "/v1/chat/completions", true, 30, 500, 48);
		rt_prom__observe(p, &s);
	}
	span(&s, "vllm", "/v1/completions", true, 3, 50, -1); /* no token count: no TPOT */
	rt_prom__observe(p, &s);
	span(&s, "vllm", "/v1/embeddings", false, 0, 20, -1); /* not streamed: no TTFT */
	rt_prom__observe(p, &s);
	s.revision = 1; /* an amended re-emission counts nowhere */
	rt_prom__observe(p, &s);

	t = render(p, NULL);
	check_format(t);
	assert_non_null(strstr(t, "# TYPE gen_ai_server_time_to_first_token_seconds histogram\n"));
	assert_non_null(strstr(t, "# HELP gen_ai_server_request_duration_seconds "));
	assert_true(value_of(t, "gen_ai_server_time_to_first_token_seconds_count{"
				"gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"unknown\","
				"reqtrace_group=\"vllm\"}") == 3);
	/* 30 ms: in le=0.04, not in le=0.02 */
	assert_true(value_of(t, "gen_ai_server_time_to_first_token_seconds_bucket{"
				"gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"unknown\","
				"reqtrace_group=\"vllm\",le=\"0.02\"}") == 0);
	assert_true(value_of(t, "gen_ai_server_time_to_first_token_seconds_bucket{"
				"gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"unknown\","
				"reqtrace_group=\"vllm\",le=\"0.04\"}") == 3);
	assert_true(value_of(t, "gen_ai_server_time_to_first_token_seconds_count{"
				"gen_ai_operation_name=\"text_completion\",gen_ai_provider_name="
				"\"unknown\",reqtrace_group=\"vllm\"}") == 1);
	assert_true(value_of(t, "gen_ai_server_time_to_first_token_seconds_count{"
				"gen_ai_operation_name=\"embeddings\",gen_ai_provider_name="
				"\"unknown\",reqtrace_group=\"vllm\"}") == -1);
	assert_true(value_of(t, "gen_ai_server_request_duration_seconds_count{"
				"gen_ai_operation_name=\"embeddings\",gen_ai_provider_name="
				"\"unknown\",reqtrace_group=\"vllm\"}") == 1);
	/* (500 - 30) ms / 47 tokens = 10 ms: le=0.01 holds it */
	assert_true(value_of(t, "gen_ai_server_time_per_output_token_seconds_bucket{"
				"gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"unknown\","
				"reqtrace_group=\"vllm\",le=\"0.01\"}") == 3);
	assert_int_equal(count_lines(t, "gen_ai_server_time_per_output_token_seconds_count{"), 1);
	assert_true(value_of(t, "reqtrace_phase_seconds_count{phase=\"receive\","
				"reqtrace_group=\"vllm\"}") == 5);
	/* a null phase is not observed as 0 */
	assert_int_equal(count_lines(t, "phase=\"queue\""), 0);
	assert_true(value_of(t, "reqtrace_requests_total{outcome=\"ok\","
				"path=\"/v1/chat/completions\",reqtrace_group=\"vllm\"}") == 3);
	free(t);
	rt_prom__free(p);
}

static void test_labels_bounded_and_escaped(void **state)
{
	struct rt_prom *p = rt_prom__new();
	struct rt_span s;
	char path[64], *t;
	int i;

	(void)state;
	for (i = 0; i < RT_PROM_PATHS_MAX + 8; i++) {
		snprintf(path, sizeof(path), "/p%d?id=%d", i, i);
		span(&s, "g", path, false, 0, 10, -1);
		rt_prom__observe(p, &s);
	}
	span(&s, "g", "/scan", false, 0, 10, -1);
	s.status = 404; /* a failed path takes no slot */
	rt_prom__observe(p, &s);
	for (i = 0; i < RT_PROM_GROUPS_MAX + 3; i++) {
		snprintf(path, sizeof(path), "grp%d", i);
		span(&s, path, "/v1/completions", false, 0, 10, -1);
		rt_prom__observe(p, &s);
	}
	span(&s, "a\"b\\c\nd", "/v1/completions", false, 0, 10, -1);
	rt_prom__observe(p, &s);
	t = render(p, NULL);
	check_format(t);
	assert_non_null(strstr(t, "path=\"/p0\""));
	assert_null(strstr(t, "?id="));
	assert_null(strstr(t, "path=\"/p32\""));
	assert_null(strstr(t, "path=\"/scan\""));
	assert_true(value_of(t, "reqtrace_requests_total{outcome=\"ok\",path=\"other\","
				"reqtrace_group=\"g\"}") == 9);
	assert_null(strstr(t, "grp16"));
	assert_non_null(strstr(t, "reqtrace_group=\"other\""));
	free(t);

	/* a fresh table: the odd group gets a slot and must be escaped */
	rt_prom__free(p);
	p = rt_prom__new();
	span(&s, "a\"b\\c\nd", "/v1/completions", false, 0, 10, -1);
	rt_prom__observe(p, &s);
	t = render(p, NULL);
	check_format(t);
	assert_non_null(strstr(t, "reqtrace_group=\"a\\\"b\\\\c\\nd\""));
	free(t);
	rt_prom__free(p);
}

static void test_counters(void **state)
{
	struct rt_prom *p = rt_prom__new();
	struct rt_prom_kv ev[] = { { "bpf", 10 }, { "daemon", 2 } };
	struct rt_prom_kv dr[] = { { "bpf_ring", 0 }, { "store_evicted", 7 } };
	struct rt_prom_gpu gpu[] = { { .pid = 42, .device = 1, .busy_ns = 1500000000 } };
	struct rt_prom_link links[] = { { 0, "pcie", 4096, 512 }, { 0, "nvlink", 0, 1048576 } };
	struct rt_prom_extra x = { .events = ev, .n_events = 2, .drops = dr, .n_drops = 2 };
	char *t;

	(void)state;
	t = render(p, &x);
	check_format(t);
	assert_true(value_of(t, "reqtrace_events_total{source=\"bpf\"}") == 10);
	assert_true(value_of(t, "reqtrace_dropped_total{stage=\"bpf_ring\"}") == 0);
	assert_true(value_of(t, "reqtrace_dropped_total{stage=\"store_evicted\"}") == 7);
	assert_null(strstr(t, "reqtrace_gpu_busy_seconds_total"));
	free(t);
	x.gpu = gpu;
	x.n_gpu = 1;
	x.gpu_known = 1;
	t = render(p, &x);
	check_format(t);
	assert_true(value_of(t, "reqtrace_gpu_busy_seconds_total{device=\"1\"}") == 1.5);
	assert_null(strstr(t, "reqtrace_gpu_link_bytes_total"));
	free(t);
	x.links = links;
	x.n_links = 2;
	t = render(p, &x);
	check_format(t);
	assert_true(value_of(t, "reqtrace_gpu_link_bytes_total{device=\"0\",link=\"pcie\","
				"direction=\"tx\"}") == 4096);
	assert_true(value_of(t, "reqtrace_gpu_link_bytes_total{device=\"0\",link=\"nvlink\","
				"direction=\"rx\"}") == 1048576);
	free(t);
	rt_prom__free(p);
}

static void test_operation(void **state)
{
	(void)state;
	assert_string_equal(rt_prom_operation("/v1/chat/completions"), "chat");
	assert_string_equal(rt_prom_operation("/v1/chat/completions?x=1"), "chat");
	assert_string_equal(rt_prom_operation("/api/chat"), "chat");
	assert_string_equal(rt_prom_operation("/v1/completions"), "text_completion");
	assert_string_equal(rt_prom_operation("/generate_stream"), "text_completion");
	assert_string_equal(rt_prom_operation("/v1/embeddings"), "embeddings");
	assert_string_equal(rt_prom_operation("/health"), "unknown");
	assert_string_equal(rt_prom_operation(""), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_histograms),
		cmocka_unit_test(test_labels_bounded_and_escaped),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_operation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
