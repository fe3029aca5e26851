// SPDX-License-Identifier: BSD-2-Clause
/*
 * Self-checks of the synthetic generator (tests/gen): what it writes reads
 * back cleanly, its watermarks never lie, its truth is internally
 * consistent, and the committed fixtures are exactly what it generates.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <reqtrace/event.h>

#include "gen.h"
#include "sources/rtrace_read.h"

/* tests/fixtures/regen.sh uses the same seed */
#define FIXTURE_SEED 1

struct tmp {
	char dir[64];
	char rtrace[128];
	char truth[128];
};

static void tmp_make(struct tmp *t)
{
	strcpy(t->dir, "/tmp/rt-gen-test-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->rtrace, sizeof(t->rtrace), "%s/out.rtrace", t->dir);
	snprintf(t->truth, sizeof(t->truth), "%s/out.truth.jsonl", t->dir);
}

static void tmp_remove(struct tmp *t)
{
	unlink(t->rtrace);
	unlink(t->truth);
	rmdir(t->dir);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		p = malloc((size_t)n + 1);
		if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
			free(p);
			p = NULL;
		} else if (p) {
			p[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return p;
}

static void generate(const char *scenario, enum rt_gen_mode mode, uint64_t seed, struct tmp *t)
{
	struct rt_gen_opts o = {
		.scenario = scenario,
		.mode = mode,
		.seed = seed,
		.rtrace_path = t->rtrace,
		.truth_path = t->truth,
	};

	assert_int_equal(rt_gen_run(&o), 0);
}

/* ---- the recording ---------------------------------------------------------------------------- */

struct rec_stats {
	unsigned long kinds[RT_EV__MAX];
	unsigned long records;
	unsigned long out_of_order; /* a source's record older than one before it */
	unsigned long lies; /* records below a watermark of their source */
	unsigned long wm_regressions;
	unsigned long unnamed; /* records of a source before its SOURCE_INFO */
	int reader_ret; /* 0: clean end */
};

static void scan(const char *path, struct rec_stats *st)
{
	struct rt_trace_reader *r = rt_trace_reader__open(path, NULL);
	const struct rt_event_hdr *ev;
	__u64 wm[3] = { 0 }, last[3] = { 0 };
	bool named[3] = { false };

	memset(st, 0, sizeof(*st));
	assert_non_null(r);
	assert_non_null(rt_trace_reader__header(r));
	while ((st->reader_ret = rt_trace_reader__next(r, &ev)) == 1) {
		assert_true(ev->kind < RT_EV__MAX);
		st->kinds[ev->kind]++;
		st->records++;
		if (ev->kind == RT_EV_SOURCE_INFO) {
			const struct rt_ev_source_info *si = (const void *)ev;

			assert_in_range(si->id, 1, 2);
			named[si->id] = true;
			continue;
		}
		/* the writer's own records (clock pairs, end) belong to source 0 */
		if (ev->source == 0)
			continue;
		assert_in_range(ev->source, 1, 2);
		if (!named[ev->source])
			st->unnamed++;
		if (ev->kind == RT_EV_WATERMARK) {
			if (ev->ts_ns < wm[ev->source])
				st->wm_regressions++;
			else
				wm[ev->source] = ev->ts_ns;
			continue;
		}
		/* a watermark W promised nothing older than W from its source */
		if (ev->ts_ns < wm[ev->source])
			st->lies++;
		if (ev->ts_ns < last[ev->source])
			st->out_of_order++;
		else
			last[ev->source] = ev->ts_ns;
	}
	if (st->reader_ret)
		print_message("%s: %s\n", path, rt_trace_reader__error(r));
	rt_trace_reader__free(r);
}

static void check_recording(const char *path, enum rt_gen_mode mode, struct rec_stats *st)
{
	scan(path, st);
	assert_int_equal(st->reader_ret, 0);
	assert_int_equal(st->lies, 0);
	assert_int_equal(st->wm_regressions, 0);
	assert_int_equal(st->unnamed, 0);
	assert_int_equal(st->kinds[RT_EV_TRACE_END], 1);
	assert_int_equal(st->kinds[RT_EV_TARGET], 1);
	assert_true(st->kinds[RT_EV_SOCK_ACCEPT] >= 1);
	assert_true(st->kinds[RT_EV_SOCK_CLOSE] >= 1);
	assert_true(st->kinds[RT_EV_TASK_NEW] >= 3);
	assert_true(st->kinds[RT_EV_SCHED_SWITCH] > 0);
	assert_true(st->kinds[RT_EV_SCHED_WAKING] > 0);
	assert_true(st->kinds[RT_EV_SOCK_RECV] > 0);
	assert_true(st->kinds[RT_EV_SOCK_SEND] > 0);
	assert_true(st->kinds[RT_EV_WATERMARK] > 2);
	/* the merge has work to do: arrival order is not ts order */
	assert_true(st->out_of_order > 0);
	if (mode == RT_GEN_MARKERS) {
		assert_true(st->kinds[RT_EV_MARK_BEGIN] > 0);
		assert_int_equal(st->kinds[RT_EV_MARK_BEGIN], st->kinds[RT_EV_MARK_END]);
		assert_true(st->kinds[RT_EV_MARK_STEP_BEGIN] > 0);
		assert_int_equal(st->kinds[RT_EV_MARK_STEP_BEGIN], st->kinds[RT_EV_MARK_STEP_END]);
		assert_true(st->kinds[RT_EV_MARK_STEP_MEMBER] >= st->kinds[RT_EV_MARK_STEP_BEGIN]);
	} else {
		assert_int_equal(st->kinds[RT_EV_MARK_BEGIN] + st->kinds[RT_EV_MARK_STEP_BEGIN], 0);
	}
	/* pack mode: a batch before each decode entry, an entry and a return per step */
	if (mode == RT_GEN_PACK) {
		assert_true(st->kinds[RT_EV_PACK_BATCH] > 0);
		assert_true(st->kinds[RT_EV_PACK_CALL] >= 2 * st->kinds[RT_EV_PACK_BATCH]);
	} else {
		assert_int_equal(st->kinds[RT_EV_PACK_BATCH], 0);
	}
}

/* ---- the truth ------------------------------------------------------------------------------- */

static const char *const phase_keys[] = {
	"receive_ms", "queue_ms",     "tokenize_ms",	"prefill_ms", "pre_first_token_ms",
	"decode_ms",  "comm_wait_ms", "postprocess_ms", "other_ms",   "backlog_ms",
};

/* cmocka's assert_float_equal() works in float: far too coarse for ns instants */
#define assert_near(a, b, eps) near_(a, b, eps, #a, #b, __LINE__)

static void near_(double a, double b, double eps, const char *ea, const char *eb, int line)
{
	if (fabs(a - b) > eps)
		fail_msg("line %d: %s = %.3f, %s = %.3f, differ by more than %g", line, ea, a, eb,
			 b, eps);
}

static cJSON *field(const cJSON *o, const char *name)
{
	cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!f)
		fail_msg("truth: no field %s", name);
	return f;
}

static double ns_of(const cJSON *o, const char *name)
{
	cJSON *f = field(o, name);

	assert_true(cJSON_IsNumber(f));
	return f->valuedouble;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank over the gaps between token writes, as tests/fixtures/README.md defines it. */
static void check_itl(const cJSON *o, const cJSON *writes)
{
	const cJSON *itl = field(o, "itl_ms");
	double gaps[64];
	int n = cJSON_GetArraySize(writes) - 1, i, k50, k99;

	if (n < 1) {
		assert_true(cJSON_IsNull(itl));
		return;
	}
	assert_true(n <= 64);
	for (i = 0; i < n; i++)
		gaps[i] = cJSON_GetArrayItem(writes, i + 1)->valuedouble -
			  cJSON_GetArrayItem(writes, i)->valuedouble;
	qsort(gaps, (size_t)n, sizeof(gaps[0]), cmp_double);
	k50 = (50 * n + 99) / 100;
	k99 = (99 * n + 99) / 100;
	assert_near(ns_of(itl, "p50") * 1e6, gaps[k50 - 1], 1.0);
	assert_near(ns_of(itl, "p99") * 1e6, gaps[k99 - 1], 1.0);
	assert_near(ns_of(itl, "max") * 1e6, gaps[n - 1], 1.0);
}

/* Returns whether the request reported llama.cpp timings; *backlog: it has one. */
static bool check_request(const cJSON *o, enum rt_gen_mode mode, bool *backlog)
{
	const cJSON *phases = field(o, "phases"), *writes = field(o, "token_writes_ns"), *rep;
	const cJSON *cpu = field(o, "cpu"), *th, *first = field(o, "first_token_ns");
	const cJSON *arr = field(o, "arrival_ns"), *bl = field(phases, "backlog_ms");
	double start = ns_of(o, "start_ns"), end = ns_of(o, "end_ns"), sum = 0, on = 0;
	double origin = start;
	int i, nwrites = cJSON_GetArraySize(writes);
	bool marker_phase = false;

	assert_true(ns_of(o, "received_ns") >= start);
	assert_true(end > start);
	/* arrival and backlog come together; time counts from the arrival */
	assert_int_equal(cJSON_IsNull(arr), cJSON_IsNull(bl));
	*backlog = !cJSON_IsNull(bl);
	if (*backlog) {
		origin = arr->valuedouble;
		assert_true(origin <= start);
		assert_near(bl->valuedouble * 1e6, start - origin, 1.0);
	}
	assert_near(ns_of(o, "duration_ms") * 1e6, end - origin, 1.0);
	/* phases partition the span */
	for (i = 0; i < (int)(sizeof(phase_keys) / sizeof(phase_keys[0])); i++) {
		const cJSON *p = field(phases, phase_keys[i]);

		if (cJSON_IsNull(p))
			continue;
		assert_true(cJSON_IsNumber(p));
		sum += p->valuedouble;
	}
	assert_false(cJSON_IsNull(field(phases, "other_ms")));
	if (fabs(sum * 1e6 - (end - origin)) > 1000.0) /* 1 us */
		fail_msg("%s: phases sum to %.6f ms, duration %.6f ms",
			 field(o, "request_id")->valuestring, sum, (end - origin) / 1e6);
	for (i = 1; i <= 3; i++)
		marker_phase |= !cJSON_IsNull(field(phases, phase_keys[i]));
	if (mode == RT_GEN_MARKERS || mode == RT_GEN_PACK) {
		/* queue/tokenize/prefill come from markers (or the pack), so
		 * pre_first_token is null */
		assert_true(marker_phase);
		assert_true(cJSON_IsNull(field(phases, "pre_first_token_ms")));
	} else {
		assert_false(marker_phase);
		assert_false(cJSON_IsNull(field(phases, "pre_first_token_ms")));
	}
	/* one token_writes entry per content-bearing event */
	assert_int_equal(field(o, "events_out")->valueint, nwrites);
	if (nwrites) {
		assert_near(first->valuedouble, cJSON_GetArrayItem(writes, 0)->valuedouble, 0.5);
		assert_near(ns_of(o, "last_token_ns"),
			    cJSON_GetArrayItem(writes, nwrites - 1)->valuedouble, 0.5);
		assert_near(ns_of(o, "ttft_ms") * 1e6, first->valuedouble - origin, 1.0);
		for (i = 1; i < nwrites; i++)
			assert_true(cJSON_GetArrayItem(writes, i)->valuedouble >=
				    cJSON_GetArrayItem(writes, i - 1)->valuedouble);
	} else {
		assert_true(cJSON_IsNull(first));
		assert_true(cJSON_IsNull(field(o, "ttft_ms")));
	}
	check_itl(o, writes);
	/* cpu totals are the sums over threads */
	cJSON_ArrayForEach(th, field(cpu, "threads"))
	{
		assert_true(ns_of(th, "on_cpu_ms") >= 0);
		assert_true(ns_of(th, "runq_ms") >= 0);
		on += ns_of(th, "on_cpu_ms");
	}
	assert_near(ns_of(cpu, "on_cpu_ms"), on, 1e-5);
	assert_true(ns_of(cpu, "on_cpu_ms") > 0);
	assert_true(cJSON_IsString(field(o, "outcome")));
	assert_true(cJSON_IsArray(field(o, "flags")));
	/* llama.cpp's top-level counts are reported next to its timings, without prefix */
	rep = field(o, "server_reported");
	if (!cJSON_GetObjectItemCaseSensitive(rep, "timings.predicted_n"))
		return false;
	assert_near(ns_of(rep, "tokens_predicted"), ns_of(rep, "timings.predicted_n"), 0);
	assert_near(ns_of(rep, "tokens_evaluated"), ns_of(rep, "timings.prompt_n"), 0);
	return true;
}

/* Returns how many requests the truth holds; calls fn-less checks on each. */
static int check_truth(const char *path, enum rt_gen_mode mode, int *aborted, int *pipelined,
		       int *shared, int *llama, int *backlog)
{
	size_t len;
	char *text = slurp(path, &len), *line, *save = NULL;
	int n = 0;

	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line), *th, *f;

		if (!o)
			fail_msg("%s: line %d is not JSON", path, n + 1);
		bool b = false;

		*llama += check_request(o, mode, &b);
		*backlog += b;
		if (!strcmp(field(o, "outcome")->valuestring, "aborted"))
			(*aborted)++;
		cJSON_ArrayForEach(f, field(o, "flags"))
		{
			if (!strcmp(f->valuestring, "pipelined"))
				(*pipelined)++;
		}
		cJSON_ArrayForEach(th, field(field(o, "cpu"), "threads"))
		{
			if (cJSON_IsTrue(field(th, "shared")))
				(*shared)++;
		}
		cJSON_Delete(o);
		n++;
	}
	free(text);
	return n;
}

static void test_every_scenario(void **state)
{
	struct rec_stats st;
	struct tmp t;
	size_t i;
	int m, n, aborted, pipelined, shared, llama, backlog;

	(void)state;
	assert_true(rt_gen_scenario_count() >= 8);
	for (i = 0; i < rt_gen_scenario_count(); i++) {
		const char *name = rt_gen_scenario_name(i);

		for (m = RT_GEN_ZERO; m <= RT_GEN_PACK; m++) {
			tmp_make(&t);
			generate(name, (enum rt_gen_mode)m, 7 + i, &t);
			check_recording(t.rtrace, (enum rt_gen_mode)m, &st);
			aborted = pipelined = shared = llama = backlog = 0;
			n = check_truth(t.truth, (enum rt_gen_mode)m, &aborted, &pipelined, &shared,
					&llama, &backlog);
			assert_true(n >= 1);
			/* what each scenario is about shows in its truth */
			if (!strcmp(name, "aborted"))
				assert_int_equal(aborted, 1);
			else
				assert_int_equal(aborted, 0);
			assert_int_equal(pipelined, !strcmp(name, "pipelined") ? 1 : 0);
			if (!strcmp(name, "two-conn-shared") || !strcmp(name, "comm"))
				assert_true(shared >= 2);
			if (!strcmp(name, "large-final-event"))
				assert_true(llama >= 1);
			/* only accept-queue models arrival; its pooled requests waited */
			if (!strcmp(name, "accept-queue"))
				assert_int_equal(backlog, n);
			else
				assert_int_equal(backlog, 0);
			tmp_remove(&t);
		}
	}
}

/* Same seed, same bytes; another seed, other bytes. */
static void test_deterministic(void **state)
{
	struct tmp a, b;
	size_t la, lb, lt;
	char *pa, *pb, *ta, *tb;

	(void)state;
	tmp_make(&a);
	tmp_make(&b);
	generate("two-conn-shared", RT_GEN_MARKERS, 42, &a);
	generate("two-conn-shared", RT_GEN_MARKERS, 42, &b);
	pa = slurp(a.rtrace, &la);
	pb = slurp(b.rtrace, &lb);
	ta = slurp(a.truth, &lt);
	tb = slurp(b.truth, &lt);
	assert_non_null(pa);
	assert_non_null(pb);
	assert_int_equal(la, lb);
	assert_memory_equal(pa, pb, la);
	assert_string_equal(ta, tb);
	free(pb);
	free(tb);
	generate("two-conn-shared", RT_GEN_MARKERS, 43, &b);
	pb = slurp(b.rtrace, &lb);
	assert_true(la != lb || memcmp(pa, pb, la));
	free(pa);
	free(pb);
	free(ta);
	tmp_remove(&a);
	tmp_remove(&b);
}

/* The watermark check catches a watermark raised above a later record of its source. */
static void test_lie_detected(void **state)
{
	struct rec_stats st;
	struct tmp t;
	size_t len, off;
	char *p;
	FILE *f;
	bool done = false;

	(void)state;
	tmp_make(&t);
	generate("basic", RT_GEN_ZERO, 3, &t);
	scan(t.rtrace, &st);
	assert_int_equal(st.lies, 0);
	p = slurp(t.rtrace, &len);
	assert_non_null(p);
	for (off = sizeof(struct rt_trace_header);
	     off + sizeof(struct rt_event_hdr) <= len && !done;) {
		struct rt_event_hdr h;

		memcpy(&h, p + off, sizeof(h));
		if (h.kind == RT_EV_WATERMARK && h.source == 1) {
			h.ts_ns += 20000000; /* 20 ms ahead of what the source delivered */
			memcpy(p + off, &h, sizeof(h));
			done = true;
		}
		off += h.size;
	}
	assert_true(done);
	f = fopen(t.rtrace, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	fclose(f);
	free(p);
	scan(t.rtrace, &st);
	assert_int_equal(st.reader_ret, 0);
	assert_true(st.lies > 0);
	tmp_remove(&t);
}

static void test_bad_options(void **state)
{
	struct rt_gen_opts o = { .scenario = "basic", .rtrace_path = "/nonexistent/x.rtrace" };
	enum rt_gen_mode mode;

	(void)state;
	assert_int_equal(rt_gen_run(NULL), -EINVAL);
	assert_int_equal(rt_gen_run(&o), -EINVAL); /* no truth path */
	o.truth_path = "/nonexistent/x.jsonl";
	o.scenario = "no-such-scenario";
	assert_int_equal(rt_gen_run(&o), -ENOENT);
	o.scenario = "basic";
	o.mode = (enum rt_gen_mode)7;
	assert_int_equal(rt_gen_run(&o), -EINVAL);
	o.mode = RT_GEN_ZERO;
	assert_int_equal(rt_gen_run(&o), -ENOENT); /* the directory does not exist */
	assert_int_equal(rt_gen_mode_parse("markers", &mode), 0);
	assert_int_equal(mode, RT_GEN_MARKERS);
	assert_int_equal(rt_gen_mode_parse("zero", &mode), 0);
	assert_int_equal(mode, RT_GEN_ZERO);
	assert_int_equal(rt_gen_mode_parse("pack", &mode), 0);
	assert_int_equal(mode, RT_GEN_PACK);
	assert_string_equal(rt_gen_mode_name(RT_GEN_PACK), "pack");
	assert_int_equal(rt_gen_mode_parse("Zero", &mode), -EINVAL);
	assert_null(rt_gen_scenario_name(rt_gen_scenario_count()));
}

static void same_file(const char *fixture, const char *generated)
{
	size_t la, lb;
	char *a = slurp(fixture, &la), *b = slurp(generated, &lb);

	if (!a)
		fail_msg("missing fixture %s (run tests/fixtures/regen.sh)", fixture);
	assert_non_null(b);
	if (la != lb || memcmp(a, b, la))
		fail_msg("%s is not what the generator writes: run tests/fixtures/regen.sh "
			 "(and never edit fixtures by hand)",
			 fixture);
	free(a);
	free(b);
}

/* tests/fixtures/regen.sh PACK_SCENARIOS */
static const char *const pack_fixtures[] = { "basic", "two-conn-shared", "aborted", "pool" };

/* The committed fixtures are exactly what the generator writes (nobody edits them by hand). */
static void test_fixtures_up_to_date(void **state)
{
	const char *src = getenv("RT_SOURCE_DIR") ? getenv("RT_SOURCE_DIR") : RT_SOURCE_DIR;
	char path[512];
	struct tmp t;
	size_t i;
	int m;

	(void)state;
	for (i = 0; i < rt_gen_scenario_count(); i++) {
		for (m = RT_GEN_ZERO; m <= RT_GEN_MARKERS; m++) {
			const char *name = rt_gen_scenario_name(i);
			const char *mode = rt_gen_mode_name((enum rt_gen_mode)m);

			tmp_make(&t);
			generate(name, (enum rt_gen_mode)m, FIXTURE_SEED, &t);
			snprintf(path, sizeof(path), "%s/tests/fixtures/%s-%s.rtrace", src, name,
				 mode);
			same_file(path, t.rtrace);
			snprintf(path, sizeof(path), "%s/tests/fixtures/%s-%s.truth.jsonl", src,
				 name, mode);
			same_file(path, t.truth);
			tmp_remove(&t);
		}
	}
	/* engine-pack mode: the scenarios tests/fixtures/regen.sh lists */
	for (i = 0; i < sizeof(pack_fixtures) / sizeof(pack_fixtures[0]); i++) {
		tmp_make(&t);
		generate(pack_fixtures[i], RT_GEN_PACK, FIXTURE_SEED, &t);
		snprintf(path, sizeof(path), "%s/tests/fixtures/%s-pack.rtrace", src,
			 pack_fixtures[i]);
		same_file(path, t.rtrace);
		snprintf(path, sizeof(path), "%s/tests/fixtures/%s-pack.truth.jsonl", src,
			 pack_fixtures[i]);
		same_file(path, t.truth);
		tmp_remove(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_scenario),	    cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_lie_detected),	    cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_fixtures_up_to_date),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
