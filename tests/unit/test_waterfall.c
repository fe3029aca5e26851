// SPDX-License-Identifier: BSD-2-Clause
/* The text waterfall of `reqtrace show`: layout, widths, nulls, plain vs colour. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "export/waterfall.h"

#define MS 1000000LL
#define T0 5000000000ULL

static void phase(struct rt_span *s, enum rt_phase p, int64_t ms, enum rt_phase_source src)
{
	s->phase_ns[p] = ms * MS;
	s->phase_source[p] = src;
}

/* A zero-code span of 1000 ms: receive 10, pre_first_token 600, decode 300, post 80, other 10. */
static void zero_code(struct rt_span *s)
{
	rt_span_init(s);
	strcpy(s->request_id, "req-1");
	strcpy(s->method, "POST");
	strcpy(s->path, "/v1/completions");
	strcpy(s->group, "port:8000");
	strcpy(s->comm, "server");
	strcpy(s->conn, "127.0.0.1:40000->127.0.0.1:8000");
	s->pid = 4242;
	s->status = 200;
	s->start_ns = T0;
	s->received_ns = T0 + 10 * MS;
	s->first_token_ns = T0 + 610 * MS;
	s->last_token_ns = T0 + 910 * MS;
	s->end_ns = T0 + 1000 * MS;
	s->events_out = 16;
	s->tokens_out = 16;
	s->streamed = true;
	s->itl_present = true;
	s->itl_p50_ns = 20 * MS;
	s->itl_p99_ns = 25 * MS;
	s->itl_max_ns = 26 * MS;
	phase(s, RT_PHASE_RECEIVE, 10, RT_PSRC_PROBE);
	phase(s, RT_PHASE_PRE_FIRST_TOKEN, 600, RT_PSRC_PROBE);
	phase(s, RT_PHASE_DECODE, 300, RT_PSRC_PROBE);
	phase(s, RT_PHASE_POSTPROCESS, 80, RT_PSRC_PROBE);
	phase(s, RT_PHASE_OTHER, 10, RT_PSRC_PROBE);
	s->cpu.n_threads = 2;
	s->cpu.threads[0].tid = 1234;
	strcpy(s->cpu.threads[0].comm, "tokenizer");
	s->cpu.threads[0].on_cpu_ns = 300 * MS;
	s->cpu.threads[0].runq_ns = 100 * MS;
	s->cpu.threads[1].tid = 1240;
	strcpy(s->cpu.threads[1].comm, "engine");
	s->cpu.threads[1].on_cpu_ns = 50 * MS;
	s->cpu.threads[1].shared = true;
	s->cpu.on_cpu_ns = 350 * MS;
	s->cpu.runq_ns = 100 * MS;
	s->cpu.off_cpu_ns = 500 * MS;
}

/* Render into a string the caller frees. */
static char *render(const struct rt_span *s, int width, bool color, int *ret)
{
	struct rt_waterfall_opts o = { .width = width, .color = color };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*ret = rt_waterfall_print(f, s, &o);
	fclose(f);
	return buf;
}

static int longest_line(const char *text)
{
	int best = 0, cur = 0;

	for (; *text; text++) {
		if (*text == '\n') {
			best = cur > best ? cur : best;
			cur = 0;
		} else {
			cur++;
		}
	}
	return cur > best ? cur : best;
}

/* The line that starts with prefix, copied into out (without newline). */
static bool find_line(const char *text, const char *prefix, char *out, size_t len)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (!strncmp(p, prefix, strlen(prefix))) {
			snprintf(out, len, "%.*s", (int)n, p);
			return true;
		}
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

/* Cells of a bar row: the text between the first '|' and the last one. */
static void bar_of(const char *row, char *out, size_t len)
{
	const char *a = strchr(row, '|'), *b = strrchr(row, '|');

	assert_non_null(a);
	assert_true(b > a);
	snprintf(out, len, "%.*s", (int)(b - a - 1), a + 1);
}

static int count(const char *s, char c)
{
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static void test_plain_layout(void **state)
{
	char row[512], bar[512];
	struct rt_span s;
	int ret, bar_w = 80 - 42 - 2;
	char *out;

	(void)state;
	zero_code(&s);
	out = render(&s, 80, false, &ret);
	assert_int_equal(ret, 0);
	assert_null(strchr(out, '\033'));
	assert_true(longest_line(out) <= 80);
	assert_true(find_line(out, "request  req-1", row, sizeof(row)));
	assert_non_null(strstr(out, "POST /v1/completions -> 200 ok"));
	assert_non_null(strstr(out, "duration 1000.0 ms   TTFT 610.0 ms   events 16   tokens 16"));
	assert_non_null(strstr(out, "ITL p50 20.0 p99 25.0 max 26.0 ms"));
	/* one row per non-null phase, with its value and source */
	assert_true(find_line(out, "pre_first_token", row, sizeof(row)));
	assert_non_null(strstr(row, " 600.0  probe"));
	bar_of(row, bar, sizeof(bar));
	assert_int_equal((int)strlen(bar), bar_w);
	/* 600 of 1000 ms on 36 cells: 21.6 -> 22, after receive's 10 ms (0.36 -> 1 cell) */
	assert_int_equal(count(bar, '#'), 22);
	assert_int_equal(strspn(bar, " "), 0);
	assert_false(find_line(out, "queue", row, sizeof(row)));
	assert_false(find_line(out, "tokenize", row, sizeof(row)));
	assert_non_null(
		strstr(out, "no value (not observed): queue, tokenize, prefill, comm_wait"));
	assert_non_null(strstr(out, "pre_first_token = queue+tokenize+prefill"));
	/* decode follows pre_first_token: 610 ms -> cell 22 */
	assert_true(find_line(out, "decode", row, sizeof(row)));
	bar_of(row, bar, sizeof(bar));
	assert_int_equal((int)strspn(bar, " "), 22);
	assert_int_equal(count(bar, '#'), 11);
	/* the axis ends with the duration */
	assert_true(find_line(out, "PHASE", row, sizeof(row)));
	assert_non_null(strstr(row, "1000 ms"));
	free(out);
}

static void test_threads_gpu_reported(void **state)
{
	char row[512], bar[512];
	struct rt_span s;
	int ret;
	char *out;

	(void)state;
	zero_code(&s);
	s.gpu.present = true;
	s.gpu.kernel_ns = 120 * MS;
	s.gpu.launches = 12;
	s.gpu.h2d_bytes = 3 << 20;
	s.n_reported = 2;
	strcpy(s.reported[0].name, "usage.completion_tokens");
	s.reported[0].value = 16;
	strcpy(s.reported[1].name, "timings.predicted_ms");
	s.reported[1].value = 301.5;
	out = render(&s, 80, false, &ret);
	assert_int_equal(ret, 0);
	/* 300 ms on CPU then 100 ms runnable, of 1000 ms on 36 cells: ends at 14.4 -> 14 */
	assert_true(find_line(out, "   1234 tokenizer", row, sizeof(row)));
	assert_non_null(strstr(row, "300.0   100.0"));
	bar_of(row, bar, sizeof(bar));
	assert_int_equal(count(bar, '#'), 11);
	assert_int_equal(count(bar, '-'), 3);
	assert_int_equal((int)strspn(bar, "#"), 11);
	assert_true(find_line(out, "   1240 engine", row, sizeof(row)));
	assert_non_null(strstr(row, " S |"));
	assert_non_null(strstr(out, "cpu: on 350.0 ms, runqueue 100.0 ms, off-CPU 500.0 ms"));
	assert_true(find_line(out, "kernel", row, sizeof(row)));
	assert_non_null(strstr(row, "120.0"));
	assert_true(find_line(out, "memcpy", row, sizeof(row)));
	assert_null(strchr(row, '|')); /* null without CUPTI: no bar */
	assert_non_null(strstr(out, "launches 12   h2d 3.0 MiB   d2h 0 B"));
	assert_non_null(strstr(out, "usage.completion_tokens 16"));
	assert_non_null(strstr(out, "timings.predicted_ms 301.5"));
	/* the server's figure beside the observed decode (300 ms), and no prompt_ms */
	assert_non_null(strstr(out, "server vs observed"));
	assert_non_null(strstr(out, "prompt_ms: not reported"));
	assert_non_null(strstr(out, "predicted_ms 301.500 ms, decode 300.000 ms, diff -1.500 ms"));
	assert_null(strstr(out, "engine steps (pack)"));
	free(out);

	s.gpu.present = false;
	s.n_reported = 0;
	s.cpu.n_threads = 0;
	out = render(&s, 80, false, &ret);
	assert_null(strstr(out, "GPU"));
	assert_null(strstr(out, "server reported"));
	assert_null(strstr(out, "server vs observed"));
	assert_non_null(strstr(out, "threads: none charged"));
	free(out);
}

static void test_markers_consecutive_and_comm(void **state)
{
	char row[512], bar[512];
	struct rt_span s;
	int ret, q_end;
	char *out;

	(void)state;
	zero_code(&s);
	s.phase_ns[RT_PHASE_PRE_FIRST_TOKEN] = RT_NULL_NS;
	phase(&s, RT_PHASE_QUEUE, 100, RT_PSRC_MARKER);
	phase(&s, RT_PHASE_TOKENIZE, 400, RT_PSRC_MARKER);
	phase(&s, RT_PHASE_PREFILL, 50, RT_PSRC_MARKER);
	phase(&s, RT_PHASE_DECODE, 250, RT_PSRC_MARKER);
	phase(&s, RT_PHASE_COMM_WAIT, 100, RT_PSRC_MARKER);
	phase(&s, RT_PHASE_POSTPROCESS, 80, RT_PSRC_MARKER);
	phase(&s, RT_PHASE_OTHER, 10, RT_PSRC_PROBE);
	out = render(&s, 120, false, &ret);
	assert_int_equal(ret, 0);
	assert_true(longest_line(out) <= 120);
	assert_true(find_line(out, "queue", row, sizeof(row)));
	assert_non_null(strstr(row, "marker"));
	bar_of(row, bar, sizeof(bar));
	q_end = (int)strspn(bar, " ") + count(bar, '#');
	/* tokenize starts where queue ended */
	assert_true(find_line(out, "tokenize", row, sizeof(row)));
	bar_of(row, bar, sizeof(bar));
	assert_int_equal((int)strspn(bar, " "), q_end);
	/* comm wait: its own row with its total, drawn with '~' */
	assert_true(find_line(out, "comm_wait", row, sizeof(row)));
	assert_non_null(strstr(row, " 100.0  marker"));
	bar_of(row, bar, sizeof(bar));
	/* after decode: 810..910 ms of 1000 on 76 cells, 61.6..69.2 -> 62..69 */
	assert_int_equal((int)strspn(bar, " "), 62);
	assert_int_equal(count(bar, '~'), 7);
	assert_non_null(strstr(out, "comm_wait: summed waits inside prefill/decode"));
	assert_non_null(strstr(out, "no value (not observed): pre_first_token\n"));
	free(out);
}

static void test_color(void **state)
{
	struct rt_span s;
	int ret;
	char *out;

	(void)state;
	zero_code(&s);
	out = render(&s, 80, true, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(out, "\033[1mrequest  req-1\033[0m"));
	assert_non_null(strstr(out, "\033[44m \033[0m")); /* pre_first_token's colour */
	assert_null(strstr(out, "#####")); /* bars are coloured cells, not '#' */
	free(out);
}

static void test_long_and_hostile_strings(void **state)
{
	char id[RT_SPAN_ID_MAX], row[512];
	struct rt_span s;
	int ret, i;
	char *out;

	(void)state;
	zero_code(&s);
	for (i = 0; i < RT_SPAN_ID_MAX - 1; i++)
		id[i] = (char)('a' + i % 26);
	id[RT_SPAN_ID_MAX - 1] = '\0';
	strcpy(s.request_id, id);
	memset(s.path, 'p', RT_SPAN_PATH_MAX - 1);
	s.path[RT_SPAN_PATH_MAX - 1] = '\0';
	strcpy(s.cpu.threads[0].comm, "a-very-long-com");
	out = render(&s, 60, false, &ret);
	assert_int_equal(ret, 0);
	assert_true(longest_line(out) <= 60);
	/* the id keeps its end: that is what tells ids apart */
	assert_true(find_line(out, "request  ~", row, sizeof(row)));
	assert_int_equal((int)strlen(row), 60);
	assert_string_equal(row + strlen(row) - 10, id + strlen(id) - 10);
	free(out);

	/* an id with escape sequences must not reach the terminal */
	strcpy(s.request_id, "x\033[2J\033]0;pwned\007y");
	strcpy(s.cpu.threads[0].comm, "t\033[31m");
	strcpy(s.reported[0].name, "evil\033[H");
	s.n_reported = 1;
	out = render(&s, 80, false, &ret);
	assert_null(strchr(out, '\033'));
	assert_null(strchr(out, '\007'));
	assert_non_null(strstr(out, "request  x?[2J?]0;pwned?y"));
	free(out);
}

static void test_zero_and_bad_durations(void **state)
{
	struct rt_span s;
	int ret, p;
	char *out;

	(void)state;
	zero_code(&s);
	s.end_ns = s.start_ns;
	s.first_token_ns = s.start_ns;
	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (s.phase_ns[p] != RT_NULL_NS)
			s.phase_ns[p] = 0;
	s.cpu.threads[0].on_cpu_ns = 0;
	s.cpu.threads[0].runq_ns = 0;
	s.cpu.threads[1].on_cpu_ns = 0;
	out = render(&s, 80, false, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(out, "duration 0.0 ms   TTFT 0.0 ms"));
	assert_non_null(strstr(out, "0.0 ms\n")); /* the axis */
	assert_null(strstr(out, "|#")); /* no bar has a cell */
	assert_null(strstr(out, "# |"));
	assert_true(longest_line(out) <= 80);
	free(out);

	/* untrusted: end before start, absurd values, width out of range */
	zero_code(&s);
	s.end_ns = s.start_ns - 1;
	s.first_token_ns = 0;
	s.tokens_out = -1;
	s.itl_present = false;
	s.phase_ns[RT_PHASE_DECODE] = INT64_MAX / 2;
	s.phase_ns[RT_PHASE_OTHER] = -5 * MS;
	s.cpu.threads[0].on_cpu_ns = INT64_MAX / 4;
	s.cpu.threads[0].tid = UINT32_MAX;
	out = render(&s, 10, false, &ret);
	assert_int_equal(ret, 0);
	assert_true(longest_line(out) <= RT_WATERFALL_WIDTH_MIN);
	assert_non_null(strstr(out, "TTFT - (not streamed)"));
	assert_non_null(strstr(out, "tokens -"));
	assert_non_null(strstr(out, "ITL -"));
	free(out);
}

static void test_errors(void **state)
{
	struct rt_span s;

	(void)state;
	zero_code(&s);
	assert_int_equal(rt_waterfall_print(NULL, &s, NULL), -EINVAL);
	assert_int_equal(rt_waterfall_print(stdout, NULL, NULL), -EINVAL);
}

static void timeline_iv(struct rt_span *s, enum rt_phase p, int64_t from_ms, int64_t to_ms)
{
	struct rt_span_interval *iv = &s->intervals[s->n_intervals++];

	iv->start_ns = T0 + (uint64_t)(from_ms * MS);
	iv->end_ns = T0 + (uint64_t)(to_ms * MS);
	iv->phase = (uint8_t)p;
	iv->source = s->phase_source[p];
}

static void expect_bar(const char *out, const char *prefix, int spaces, char ch, int n, int rest)
{
	char row[512], bar[512], want[512];
	int o = 0, i;

	assert_true(find_line(out, prefix, row, sizeof(row)));
	bar_of(row, bar, sizeof(bar));
	for (i = 0; i < spaces; i++)
		want[o++] = ' ';
	for (i = 0; i < n; i++)
		want[o++] = ch;
	for (i = 0; i < rest; i++)
		want[o++] = ' ';
	want[o] = '\0';
	assert_string_equal(bar, want);
}

/* With a timeline, phases and threads are drawn where they happened (50 cells: 20 ms each). */
static void test_timeline_drawn(void **state)
{
	struct rt_span s;
	char *out;
	int ret;

	(void)state;
	zero_code(&s);
	phase(&s, RT_PHASE_COMM_WAIT, 100, RT_PSRC_PROBE);
	timeline_iv(&s, RT_PHASE_PRE_FIRST_TOKEN, 100, 600);
	timeline_iv(&s, RT_PHASE_DECODE, 600, 900);
	timeline_iv(&s, RT_PHASE_COMM_WAIT, 700, 800);
	timeline_iv(&s, RT_PHASE_POSTPROCESS, 900, 1000);
	s.cpu.n_slices = 1;
	s.cpu.slices[0].tid = 1234;
	s.cpu.slices[0].start_ns = T0 + 200 * MS;
	s.cpu.slices[0].end_ns = T0 + 400 * MS;
	out = render(&s, 94, false, &ret);
	assert_int_equal(ret, 0);
	expect_bar(out, "pre_first_token", 5, '#', 25, 20);
	expect_bar(out, "decode", 30, '#', 15, 5);
	expect_bar(out, "comm_wait", 35, '~', 5, 10);
	expect_bar(out, "postprocess", 45, '#', 5, 0);
	/* receive has no interval: not drawn; other fills what no interval covers */
	expect_bar(out, "receive", 0, '#', 0, 50);
	expect_bar(out, "other", 0, '#', 5, 45);
	expect_bar(out, "   1234", 10, '#', 10, 30);
	expect_bar(out, "   1240", 0, '#', 0, 50); /* no slice: when it ran is not known */
	assert_non_null(strstr(out, "# on CPU, when (S: shared)"));
	assert_null(strstr(out, "more intervals"));
	free(out);

	/* dropped intervals: other is not drawn, and the drop is said */
	s.intervals_dropped = 2;
	s.cpu.slices_dropped = 3;
	out = render(&s, 94, false, &ret);
	expect_bar(out, "other", 0, '#', 0, 50);
	assert_non_null(strstr(out, "timeline: 2 more intervals, not drawn"));
	assert_non_null(strstr(out, "cpu: 3 more on-CPU slices, not drawn"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_layout),
		cmocka_unit_test(test_threads_gpu_reported),
		cmocka_unit_test(test_markers_consecutive_and_comm),
		cmocka_unit_test(test_color),
		cmocka_unit_test(test_long_and_hostile_strings),
		cmocka_unit_test(test_zero_and_bad_durations),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_timeline_drawn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
