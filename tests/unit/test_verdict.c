// SPDX-License-Identifier: BSD-2-Clause
/* Percentiles over spans and the first verdict: dominant phase, hot thread, nulls. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "verdict/stats.h"
#include "verdict/verdict.h"

#define MS 1000000LL
#define N 5

static void add_thread(struct rt_span *s, uint32_t tid, const char *comm, int64_t on_ms,
		       int64_t runq_ms, bool shared)
{
	struct rt_span_thread *t = &s->cpu.threads[s->cpu.n_threads++];

	t->tid = tid;
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	t->on_cpu_ns = on_ms * MS;
	t->runq_ns = runq_ms * MS;
	t->shared = shared;
	s->cpu.on_cpu_ns += on_ms * MS;
	s->cpu.runq_ns += runq_ms * MS;
}

/*
 * The seed with markers: read 80 ms, tokenize 680 ms on one tokenizer thread
 * (tid 1234), inference 42, postprocess 58: 860 ms. Each request has its own
 * handler thread.
 */
static void seed(struct rt_span *s, int i)
{
	rt_span_init(s);
	snprintf(s->request_id, sizeof(s->request_id), "r%d", i);
	s->start_ns = 1000000000ULL * (uint64_t)(i + 1);
	s->end_ns = s->start_ns + 860 * MS;
	s->first_token_ns = s->start_ns + 780 * MS;
	s->tokens_out = 8;
	s->phase_ns[RT_PHASE_RECEIVE] = 0;
	s->phase_ns[RT_PHASE_QUEUE] = 0;
	s->phase_ns[RT_PHASE_TOKENIZE] = 680 * MS;
	s->phase_ns[RT_PHASE_PREFILL] = 7 * MS;
	s->phase_ns[RT_PHASE_DECODE] = 35 * MS;
	s->phase_ns[RT_PHASE_POSTPROCESS] = 58 * MS;
	s->phase_ns[RT_PHASE_OTHER] = 80 * MS;
	add_thread(s, 1234, "tokenizer", 660, 20, false);
	add_thread(s, (uint32_t)(2000 + i), "handler", 100, 5, false);
	add_thread(s, 1240, "engine", 2, 0, true);
}

static void seeds(struct rt_span *s)
{
	int i;

	for (i = 0; i < N; i++)
		seed(&s[i], i);
}

static bool has_line(const struct rt_verdict *v, const char *needle)
{
	uint32_t i;

	for (i = 0; i < v->n_lines; i++)
		if (strstr(v->lines[i], needle))
			return true;
	return false;
}

static void test_nearest_rank(void **state)
{
	int64_t v[100];
	int i;

	(void)state;
	for (i = 0; i < 100; i++)
		v[i] = i + 1;
	assert_true(rt_pct_sorted(v, 0, 50) == RT_NULL_NS);
	assert_int_equal(rt_pct_sorted(v, 100, 50), 50);
	assert_int_equal(rt_pct_sorted(v, 100, 99), 99);
	assert_int_equal(rt_pct_sorted(v, 100, 100), 100);
	assert_int_equal(rt_pct_sorted(v, 1, 99), 1);
	assert_int_equal(rt_pct_sorted(v, 3, 50), 2); /* ceil(1.5) = 2nd */
	assert_int_equal(rt_pct_sorted(v, 3, 99), 3);
	assert_int_equal(rt_pct_sorted(v, 4, 50), 2); /* ceil(2.0) = 2nd */
	assert_int_equal(rt_pct_sorted(v, 10, 0), 1); /* clamped to p1 */
}

static void test_stats(void **state)
{
	struct rt_span s[N];
	struct rt_span_stats st;

	(void)state;
	seeds(s);
	s[0].end_ns = s[0].start_ns + 2000 * MS; /* the slow one */
	s[3].first_token_ns = 0; /* not streamed */
	s[2].phase_ns[RT_PHASE_TOKENIZE] = RT_NULL_NS;
	s[1].itl_present = true;
	s[1].itl_p50_ns = 5 * MS;
	s[1].itl_p99_ns = 9 * MS;
	s[4].outcome = RT_OUTCOME_ABORTED;
	s[4].flags = RT_SPAN_INCOMPLETE;
	s[4].tokens_out = -1;
	assert_int_equal(rt_span_stats_compute(s, N, &st), 0);
	assert_int_equal(st.n_spans, N);
	assert_int_equal(st.duration.n, N);
	assert_true(st.duration.p50_ns == 860 * MS);
	assert_true(st.duration.p99_ns == 2000 * MS);
	assert_int_equal(st.ttft.n, N - 1);
	assert_int_equal(st.phase[RT_PHASE_TOKENIZE].n, N - 1);
	assert_int_equal(st.phase[RT_PHASE_PRE_FIRST_TOKEN].n, 0);
	assert_true(st.phase[RT_PHASE_PRE_FIRST_TOKEN].p50_ns == RT_NULL_NS);
	assert_int_equal(st.itl_p50.n, 1);
	assert_true(st.itl_p99.p99_ns == 9 * MS);
	assert_int_equal(st.outcomes[RT_OUTCOME_OK], N - 1);
	assert_int_equal(st.outcomes[RT_OUTCOME_ABORTED], 1);
	assert_int_equal(st.incomplete, 1);
	assert_int_equal(st.tokens, 8 * (N - 1));
	assert_int_equal(st.n_tokens, N - 1);
	assert_int_equal(st.first_start_ns, s[0].start_ns);
	assert_int_equal(st.last_end_ns, s[4].end_ns);
	assert_int_equal(rt_span_stats_compute(NULL, 1, &st), -EINVAL);
	assert_int_equal(rt_span_stats_compute(NULL, 0, &st), 0);
	assert_int_equal(st.duration.n, 0);
}

static void test_tokenize_dominates_hot_tokenizer(void **state)
{
	struct rt_span s[N];
	struct rt_verdict v;

	(void)state;
	seeds(s);
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_int_equal(v.dominant_p50, RT_PHASE_TOKENIZE);
	assert_int_equal(v.dominant_p99, RT_PHASE_TOKENIZE);
	assert_true(v.share_p50 > 0.79 && v.share_p50 < 0.80);
	assert_true(v.have_hot);
	assert_int_equal(v.hot.tid, 1234);
	assert_string_equal(v.hot.comm, "tokenizer");
	assert_int_equal(v.hot.spans, N);
	assert_true(v.hot.on_cpu_ns == N * 660 * MS);
	assert_false(v.hot.shared);
	assert_int_equal(v.threads, 1 + N + 1);
	/* the tokenizer's share of all on-CPU time, shared engine included */
	assert_true(v.total_on_cpu_ns == N * 762 * MS);
	assert_true(v.hot_share > 0.866 && v.hot_share < 0.867);
	assert_string_equal(v.lines[0],
			    "tokenize is 79% of p50 latency (680 ms of 860 ms), and 79% "
			    "of p99 latency (680 ms of 860 ms)");
	assert_true(has_line(&v, "hottest thread: 1234 'tokenizer', 3300 ms on CPU over 5 "
				 "request(s), 87% of their on-CPU time; on CPU 97% of the time"));
	assert_true(has_line(&v,
			     "thread 1234 did the tokenize work of 5 of 5 requests "
			     "(660 ms on CPU each, tokenize p50 680 ms), one request at a time: "
			     "parallelise the tokenizer"));
	assert_true(has_line(&v, "null in every span (not observed): pre_first_token, comm_wait"));
	assert_false(has_line(&v, "did not end ok"));
	assert_false(has_line(&v, "oversubscribed"));
}

/*
 * Issue 13's server: a main loop (1.84 s) and an OpenMP worker (1.72 s) that
 * a compute pool's rule now lists (pool, shared): the worker counts in the
 * CPU shares, so the main loop is under half of it, not 91%.
 */
static void test_pool_thread_counts(void **state)
{
	struct rt_span s[N];
	struct rt_verdict v;
	int i;

	(void)state;
	for (i = 0; i < N; i++) {
		rt_span_init(&s[i]);
		snprintf(s[i].request_id, sizeof(s[i].request_id), "r%d", i);
		s[i].start_ns = 1000000000ULL * (uint64_t)(i + 1);
		s[i].end_ns = s[i].start_ns + 500 * MS;
		add_thread(&s[i], 100, "llama-server", 368, 0, true);
		add_thread(&s[i], 101, "llama-server", 344, 0, true);
		s[i].cpu.threads[1].pool = true;
		s[i].cpu.pool_ns = 344 * MS;
		add_thread(&s[i], (uint32_t)(200 + i), "httpd", 20, 0, false);
	}
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_true(v.have_hot);
	assert_int_equal(v.hot.tid, 100);
	assert_true(v.total_on_cpu_ns == N * 732 * MS);
	assert_int_equal(v.threads, 2 + N);
	assert_true(v.hot_share > 0.502 && v.hot_share < 0.503);
}

static void test_zero_code_nulls(void **state)
{
	struct rt_span s[N];
	struct rt_verdict v;
	int i;

	(void)state;
	seeds(s);
	for (i = 0; i < N; i++) {
		s[i].phase_ns[RT_PHASE_QUEUE] = RT_NULL_NS;
		s[i].phase_ns[RT_PHASE_TOKENIZE] = RT_NULL_NS;
		s[i].phase_ns[RT_PHASE_PREFILL] = RT_NULL_NS;
		s[i].phase_ns[RT_PHASE_PRE_FIRST_TOKEN] = 687 * MS;
	}
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_int_equal(v.dominant_p50, RT_PHASE_PRE_FIRST_TOKEN);
	assert_true(has_line(&v, "pre_first_token is 80% of p50 latency"));
	assert_true(has_line(&v, "pre_first_token dominates and cannot be split without markers: "
				 "add rt_mark_* calls or a probe pack"));
	assert_true(has_line(&v, "null in every span (not observed): queue, tokenize, prefill, "
				 "comm_wait"));
	/* no tokenize phase to compare with: no claim about a tokenizer */
	assert_false(has_line(&v, "tokenize work"));

	/* tokenize null in some spans only: said, and percentiles over the others */
	seeds(s);
	s[1].phase_ns[RT_PHASE_TOKENIZE] = RT_NULL_NS;
	s[3].phase_ns[RT_PHASE_TOKENIZE] = RT_NULL_NS;
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_int_equal(v.stats.phase[RT_PHASE_TOKENIZE].n, 3);
	assert_true(has_line(&v, "tokenize is null in 2 of 5 spans: its percentiles are over the "
				 "other 3"));
}

static void test_queue_behind_one_thread(void **state)
{
	struct rt_span s[N];
	struct rt_verdict v;
	int i;

	(void)state;
	seeds(s);
	for (i = 0; i < N; i++) {
		s[i].phase_ns[RT_PHASE_QUEUE] = (int64_t)i * 680 * MS;
		s[i].end_ns += (uint64_t)i * 680 * MS;
	}
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_int_equal(v.dominant_p50, RT_PHASE_QUEUE);
	assert_true(has_line(&v, "queue is 61% of p50 latency (1360 ms of 2220 ms), and 76% of p99 "
				 "latency (2720 ms of 3580 ms)"));
	assert_true(has_line(&v, "requests queue behind one thread: thread 1234 did the tokenize "
				 "work of 5 of 5 requests"));

	/* the same thread, shared: no claim that requests took turns on it */
	for (i = 0; i < N; i++)
		s[i].cpu.threads[0].shared = true;
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_true(v.hot.shared);
	assert_true(has_line(&v, "(shared: its time is split among the requests it served)"));
	assert_false(has_line(&v, "behind one thread"));
	assert_true(has_line(&v, "stage after the queue"));
}

/*
 * Requests waited in the kernel (backlog): the HTTP threads were busy. The
 * verdict says so, apart from the engine's queue, and durations count from
 * the arrival.
 */
static void test_backlog_dominates(void **state)
{
	struct rt_span s[N];
	struct rt_verdict v;
	int i;

	(void)state;
	seeds(s);
	for (i = 0; i < N; i++) {
		s[i].arrival_ns = s[i].start_ns - 900 * MS;
		s[i].phase_ns[RT_PHASE_BACKLOG] = 900 * MS;
		s[i].phase_source[RT_PHASE_BACKLOG] = RT_PSRC_PROBE;
	}
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_int_equal(v.dominant_p50, RT_PHASE_BACKLOG);
	assert_int_equal(v.stats.duration.p50_ns, 1760 * MS);
	assert_int_equal(v.stats.ttft.p50_ns, 1680 * MS);
	assert_true(has_line(&v, "requests wait 900 ms (p50; p99 900 ms) in the kernel before the "
				 "server reads them: the server's HTTP threads are all busy"));
	assert_true(has_line(&v, "not the engine's queue (queue_ms)"));
	assert_false(has_line(&v, "requests also wait"));
}

/* Backlog that weighs without dominating still gets its own finding. */
static void test_backlog_beside_queue(void **state)
{
	struct rt_span s[N];
	struct rt_verdict v;
	int i;

	(void)state;
	seeds(s);
	for (i = 0; i < N; i++) {
		s[i].arrival_ns = s[i].start_ns - 200 * MS;
		s[i].phase_ns[RT_PHASE_BACKLOG] = 200 * MS;
		s[i].phase_source[RT_PHASE_BACKLOG] = RT_PSRC_PROBE;
		s[i].phase_ns[RT_PHASE_QUEUE] = s[i].phase_ns[RT_PHASE_TOKENIZE];
		s[i].phase_ns[RT_PHASE_TOKENIZE] = 0;
		s[i].cpu.n_threads = 0; /* no hot thread: an engine queue */
		s[i].cpu.on_cpu_ns = s[i].cpu.runq_ns = 0;
	}
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_int_equal(v.dominant_p50, RT_PHASE_QUEUE);
	assert_true(has_line(&v, "more HTTP threads will not help"));
	assert_true(
		has_line(&v, "requests also wait up to 200 ms (p99; p50 200 ms) in the kernel"));
	/* below a tenth of p99 latency: no finding */
	for (i = 0; i < N; i++)
		s[i].phase_ns[RT_PHASE_BACKLOG] = 50 * MS;
	for (i = 0; i < N; i++)
		s[i].arrival_ns = s[i].start_ns - 50 * MS;
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_false(has_line(&v, "in the kernel"));
	assert_false(has_line(&v, "backlog"));
}

static void test_outcomes_runq_other(void **state)
{
	struct rt_span s[N];
	struct rt_verdict v;
	int i;

	(void)state;
	seeds(s);
	s[2].outcome = RT_OUTCOME_ABORTED;
	s[3].outcome = RT_OUTCOME_ERROR;
	s[4].flags = RT_SPAN_INCOMPLETE;
	for (i = 0; i < N; i++) {
		s[i].cpu.threads[0].runq_ns = 900 * MS;
		s[i].cpu.runq_ns = 905 * MS;
		s[i].phase_ns[RT_PHASE_OTHER] = 800 * MS;
		s[i].phase_ns[RT_PHASE_TOKENIZE] = 100 * MS;
	}
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	assert_int_equal(v.dominant_p50, RT_PHASE_OTHER);
	assert_true(has_line(&v, "most time is in no known phase (other)"));
	assert_true(has_line(&v, "2 of 5 requests did not end ok (aborted 1, error 1, "
				 "server_exit 0, timeout 0)"));
	assert_true(has_line(&v, "1 span(s) are incomplete"));
	assert_true(has_line(&v, "waited 4525 ms in the runqueue against 3810 ms on CPU: the CPUs "
				 "are oversubscribed"));
	assert_true(has_line(&v, "on CPU 42% of the time it was runnable"));
}

static void test_empty_and_errors(void **state)
{
	struct rt_verdict v;
	struct rt_span s;

	(void)state;
	assert_int_equal(rt_verdict_compute(NULL, 0, &v), 0);
	assert_int_equal(v.dominant_p50, -1);
	assert_int_equal(v.dominant_p99, -1);
	assert_false(v.have_hot);
	assert_int_equal(v.n_lines, 1);
	assert_string_equal(v.lines[0], "no finished requests to judge");
	assert_int_equal(rt_verdict_compute(NULL, 1, &v), -EINVAL);
	assert_int_equal(rt_verdict_compute(&s, 1, NULL), -EINVAL);

	/* a span with no CPU charged and every phase null but other */
	rt_span_init(&s);
	s.start_ns = 1;
	s.end_ns = 1 + 10 * MS;
	s.phase_ns[RT_PHASE_OTHER] = 10 * MS;
	s.cpu.threads[0].comm[0] = '\0';
	assert_int_equal(rt_verdict_compute(&s, 1, &v), 0);
	assert_false(v.have_hot);
	assert_true(has_line(&v, "no thread was charged CPU time"));
	assert_int_equal(v.dominant_p50, RT_PHASE_OTHER);
	assert_true(v.n_lines <= RT_VERDICT_LINES_MAX);
}

static void test_print(void **state)
{
	struct rt_span s[N];
	struct rt_verdict v;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	seeds(s);
	strcpy(s[0].cpu.threads[0].comm, "tok\033[2J"); /* a hostile comm is not echoed raw */
	assert_int_equal(rt_verdict_compute(s, N, &v), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	rt_verdict_print(f, &v);
	fclose(f);
	assert_non_null(strstr(buf,
			       "verdict over 5 request(s): latency p50 860.0 ms, p99 860.0 ms; "
			       "TTFT p50 780.0 ms, p99 780.0 ms\n"));
	assert_non_null(strstr(buf, "tokenize              680.0      680.0    79%    79%  5  "
				    "<- dominates p50 and p99\n"));
	assert_non_null(strstr(buf, "pre_first_token           -          -      -      -  0\n"));
	assert_non_null(strstr(buf, "\n- tokenize is 79% of p50 latency"));
	assert_null(strchr(buf, '\033'));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nearest_rank),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_tokenize_dominates_hot_tokenizer),
		cmocka_unit_test(test_pool_thread_counts),
		cmocka_unit_test(test_zero_code_nulls),
		cmocka_unit_test(test_queue_behind_one_thread),
		cmocka_unit_test(test_backlog_dominates),
		cmocka_unit_test(test_backlog_beside_queue),
		cmocka_unit_test(test_outcomes_runq_other),
		cmocka_unit_test(test_empty_and_errors),
		cmocka_unit_test(test_print),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
