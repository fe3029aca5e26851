// SPDX-License-Identifier: BSD-2-Clause
/* The span record's JSON form: exact integers, nulls, escaping, round trip. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "common/jsonw.h"
#include "export/span_json.h"
#include "store/store.h"

static void sample(struct rt_span *s)
{
	rt_span_init(s);
	strcpy(s->request_id, "req-\"1\"\n");
	strcpy(s->group, "port:8000");
	strcpy(s->path, "/v1/completions");
	strcpy(s->method, "POST");
	strcpy(s->conn, "127.0.0.1:40000->127.0.0.1:8000");
	s->pid = 4242;
	s->status = 200;
	/* beyond 2^53: a double would lose the last digits */
	s->start_ns = 9007199254740993ULL;
	s->received_ns = s->start_ns + 1000001;
	s->first_token_ns = s->start_ns + 25000000;
	s->end_ns = s->start_ns + 125000499;
	s->streamed = true;
	s->events_out = 7;
	s->phase_ns[RT_PHASE_RECEIVE] = 1000001;
	s->phase_source[RT_PHASE_RECEIVE] = RT_PSRC_PROBE;
	s->phase_ns[RT_PHASE_OTHER] = 0;
	s->phase_source[RT_PHASE_OTHER] = RT_PSRC_PROBE;
	s->cpu.n_threads = 1;
	s->cpu.threads[0].tid = 4243;
	strcpy(s->cpu.threads[0].comm, "tokenizer");
	s->cpu.threads[0].on_cpu_ns = 680000000;
	s->cpu.threads[0].shared = true;
	s->cpu.on_cpu_ns = 680000000;
	s->outcome = RT_OUTCOME_ABORTED;
	s->flags = RT_SPAN_INCOMPLETE | RT_SPAN_PIPELINED;
	s->revision = 2;
}

static void test_exact_and_nulls(void **state)
{
	struct rt_jsonw w;
	struct rt_span s;
	cJSON *o;

	(void)state;
	sample(&s);
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_true(rt_jsonw_ok(&w));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"start_ns\":9007199254740993,"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"end_ns\":9007199379741492"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"duration_ms\":125.000,"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"ttft_ms\":25.000,"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"queue_ms\":null"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"receive_ms\":1.000"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"gpu\":null"));
	/* no compute-pool time: null, not an estimate */
	assert_non_null(strstr(rt_jsonw_str(&w), "\"pool_ms\":null,\"pool_spin_ms\":null,"
						 "\"pool_by\":null,\"estimated\":false"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"shared\":true,\"pool\":false}"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"tokens_out\":null"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"response_id\":null"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"flags\":[\"incomplete\",\"pipelined\"]"));
	assert_null(strstr(rt_jsonw_str(&w), "trace_id")); /* absent, not null */
	o = cJSON_Parse(rt_jsonw_str(&w));
	assert_non_null(o); /* valid JSON despite the quote and newline in the id */
	assert_string_equal(cJSON_GetObjectItem(o, "request_id")->valuestring, "req-\"1\"\n");
	assert_string_equal(cJSON_GetObjectItem(o, "outcome")->valuestring, "aborted");
	assert_true(cJSON_IsObject(cJSON_GetObjectItem(o, "phase_source")));
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "phase_source"), "queue"));
	cJSON_Delete(o);
	rt_jsonw_fini(&w);
}

/* Started before the trace: no start, so no duration and no TTFT, never a number. */
static void test_unseen_start(void **state)
{
	struct rt_jsonw w;
	struct rt_span s;
	int p;

	(void)state;
	sample(&s);
	s.start_ns = s.received_ns = 0;
	for (p = 0; p < RT_PHASE__COUNT; p++)
		s.phase_ns[p] = RT_NULL_NS;
	s.flags = RT_SPAN_STARTED_BEFORE_TRACE;
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_true(rt_jsonw_ok(&w));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"start_ns\":null,\"received_ns\":null,"
						 "\"first_token_ns\":9007199279740993,"
						 "\"end_ns\":9007199379741492,\"duration_ms\":null,"
						 "\"ttft_ms\":null,"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"other_ms\":null}"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"flags\":[\"started_before_trace\"]"));
	rt_jsonw_fini(&w);
}

static void test_round_trip(void **state)
{
	struct rt_jsonw w;
	struct rt_span s, back;

	(void)state;
	sample(&s);
	snprintf(s.response_id, sizeof(s.response_id), "chatcmpl-42");
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_non_null(strstr(rt_jsonw_str(&w), "\"response_id\":\"chatcmpl-42\""));
	assert_int_equal(rt_span_from_json(rt_jsonw_str(&w), &back), 0);
	assert_string_equal(back.response_id, "chatcmpl-42");
	assert_string_equal(back.request_id, s.request_id);
	assert_int_equal(back.start_ns, s.start_ns);
	assert_int_equal(back.end_ns, s.end_ns);
	assert_int_equal(back.first_token_ns, s.first_token_ns);
	/* ms with 3 decimals: microsecond precision */
	assert_int_equal(back.phase_ns[RT_PHASE_RECEIVE], 1000000);
	assert_int_equal(back.phase_ns[RT_PHASE_QUEUE], RT_NULL_NS);
	assert_int_equal(back.cpu.threads[0].on_cpu_ns, 680000000);
	assert_true(back.cpu.threads[0].shared);
	assert_int_equal(back.outcome, RT_OUTCOME_ABORTED);
	assert_int_equal(back.flags, RT_SPAN_INCOMPLETE | RT_SPAN_PIPELINED);
	assert_int_equal(back.revision, 2);
	assert_int_equal(back.cpu.pool_ns, RT_NULL_NS);
	assert_int_equal(back.cpu.pool_by, RT_WORK_NONE);
	assert_false(back.cpu.threads[0].pool);
	/* a compute pool's share: an estimate, by the engine set, spin told apart */
	s.cpu.pool_ns = 2500000;
	s.cpu.pool_spin_ns = 1000000;
	s.cpu.pool_by = RT_WORK_ENGINE_SET;
	s.cpu.threads[0].pool = true;
	rt_jsonw_reset(&w);
	rt_span_to_json(&w, &s);
	assert_non_null(strstr(rt_jsonw_str(&w), "\"pool_ms\":2.500,\"pool_spin_ms\":1.000,"
						 "\"pool_by\":\"engine_set\",\"estimated\":true"));
	assert_int_equal(rt_span_from_json(rt_jsonw_str(&w), &back), 0);
	assert_int_equal(back.cpu.pool_ns, 2500000);
	assert_int_equal(back.cpu.pool_spin_ns, 1000000);
	assert_int_equal(back.cpu.pool_by, RT_WORK_ENGINE_SET);
	assert_true(back.cpu.threads[0].pool);
	assert_int_equal(rt_span_from_json("[1,2]", &back), -EINVAL);
	assert_int_equal(rt_span_from_json("{\"request_id\":", &back), -EINVAL);
	rt_jsonw_fini(&w);
}

/* The gpu object: how the share was decided and the whole step time beside it. */
static void test_gpu_split(void **state)
{
	struct rt_jsonw w;
	struct rt_span s, back;

	(void)state;
	sample(&s);
	s.gpu.present = true;
	s.gpu.kernel_ns = 3000000;
	s.gpu.memcpy_ns = 0;
	s.gpu.launches = 4;
	s.gpu.h2d_bytes = 1200;
	s.gpu.sync_wait_ns = 3500000;
	s.gpu.split = RT_GPU_SPLIT_TOKENS;
	s.gpu.step_ns = 3010000;
	s.gpu.nccl_bytes = 262144;
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_non_null(strstr(rt_jsonw_str(&w), "\"launches\":4,\"nccl_bytes\":262144,"
						 "\"split\":\"tokens\","
						 "\"step_ms\":3.010}"));
	assert_int_equal(rt_span_from_json(rt_jsonw_str(&w), &back), 0);
	assert_int_equal(back.gpu.split, RT_GPU_SPLIT_TOKENS);
	assert_int_equal(back.gpu.step_ns, 3010000);
	assert_int_equal(back.gpu.nccl_bytes, 262144);
	assert_int_equal(back.gpu.kernel_ns, 3000000);
	rt_jsonw_fini(&w);
	/* no device records, no rule known: both null */
	s.gpu.split = RT_GPU_SPLIT_NONE;
	s.gpu.step_ns = RT_NULL_NS;
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_non_null(strstr(rt_jsonw_str(&w), "\"split\":null,\"step_ms\":null}"));
	assert_int_equal(rt_span_from_json(rt_jsonw_str(&w), &back), 0);
	assert_int_equal(back.gpu.split, RT_GPU_SPLIT_NONE);
	assert_int_equal(back.gpu.step_ns, RT_NULL_NS);
	rt_jsonw_fini(&w);
	assert_string_equal(rt_gpu_split_name(RT_GPU_SPLIT_ENGINE_SET), "engine_set");
	assert_int_equal(rt_gpu_split_parse("members"), RT_GPU_SPLIT_MEMBERS);
	assert_int_equal(rt_gpu_split_parse("bogus"), RT_GPU_SPLIT_NONE);
	assert_null(rt_gpu_split_name(RT_GPU_SPLIT__COUNT));
}

/* The engine object (docs/spans.md, "vLLM"): null, then written and read back. */
static void test_engine(void **state)
{
	struct rt_jsonw w;
	struct rt_span s, back;
	const char *j;

	(void)state;
	sample(&s);
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_non_null(strstr(rt_jsonw_str(&w), "\"engine\":null,"));
	assert_int_equal(rt_span_from_json(rt_jsonw_str(&w), &back), 0);
	assert_false(back.engine.present);
	assert_int_equal(back.engine.stream_ns, RT_NULL_NS);
	rt_jsonw_fini(&w);

	s.engine = (struct rt_span_engine){ .present = true,
					    .join = RT_ENGINE_JOIN_RESPONSE_ID,
					    .requests = 2,
					    .outputs = 9,
					    .tokens = 11,
					    .prompt_tokens = 40,
					    .events_present = true,
					    .finish_reason = 1,
					    .stream_ns = 1250000,
					    .stream_outputs = 9 };
	strcpy(s.engine.id, "cmpl-x-0-0a1b2c3d");
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	j = rt_jsonw_str(&w);
	assert_non_null(strstr(j, "\"engine\":{\"id\":\"cmpl-x-0-0a1b2c3d\","
				  "\"join\":\"response_id\",\"requests\":2,\"outputs\":9,"
				  "\"tokens\":11,\"prompt_tokens\":40,\"events_present\":true,"
				  "\"finish_reason\":\"length\",\"stream_ms\":1.250,"
				  "\"stream_outputs\":9}"));
	assert_int_equal(rt_span_from_json(j, &back), 0);
	assert_true(back.engine.present);
	assert_string_equal(back.engine.id, "cmpl-x-0-0a1b2c3d");
	assert_int_equal(back.engine.join, RT_ENGINE_JOIN_RESPONSE_ID);
	assert_int_equal(back.engine.requests, 2);
	assert_int_equal(back.engine.outputs, 9);
	assert_int_equal(back.engine.tokens, 11);
	assert_int_equal(back.engine.prompt_tokens, 40);
	assert_true(back.engine.events_present);
	assert_int_equal(back.engine.finish_reason, 1);
	assert_int_equal(back.engine.stream_ns, 1250000);
	assert_int_equal(back.engine.stream_outputs, 9);
	rt_jsonw_fini(&w);
}

/* Pack phases, the pack object, steps_source, and the server's timings beside the phases. */
static void test_pack_and_server(void **state)
{
	struct rt_jsonw w;
	struct rt_span s, back;
	const char *j;

	(void)state;
	sample(&s);
	j = NULL;
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	/* nothing from a pack, no timings reported: null */
	assert_non_null(strstr(rt_jsonw_str(&w), "\"server_vs_observed\":null,"
						 "\"steps_source\":null,\"pack\":null,"));
	assert_int_equal(rt_span_from_json(rt_jsonw_str(&w), &back), 0);
	assert_false(back.pack.present);
	assert_int_equal(back.pack.seq, -1);
	rt_jsonw_fini(&w);

	s.phase_ns[RT_PHASE_PREFILL] = 5000000;
	s.phase_source[RT_PHASE_PREFILL] = RT_PSRC_PACK;
	s.phase_ns[RT_PHASE_DECODE] = 6000000;
	s.phase_source[RT_PHASE_DECODE] = RT_PSRC_PACK;
	s.pack = (struct rt_span_pack){ .present = true,
					.seq = 3,
					.join = RT_PACK_JOIN_HANDOFF,
					.prefill_steps = 2,
					.decode_steps = 17,
					.prompt_tokens = 130,
					.tokenize_calls = 2 };
	s.steps_source = RT_PSRC_PACK;
	s.n_reported = 2;
	strcpy(s.reported[0].name, "timings.prompt_ms");
	s.reported[0].value = 4.5;
	strcpy(s.reported[1].name, "timings.predicted_ms");
	s.reported[1].value = 6.25;
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	j = rt_jsonw_str(&w);
	assert_non_null(strstr(j, "\"prefill\":\"pack\""));
	assert_non_null(strstr(j, "\"server_vs_observed\":{\"prompt_ms\":4.500,"
				  "\"predicted_ms\":6.250,\"prefill_phase\":\"prefill\","
				  "\"prefill_ms\":5.000,\"decode_ms\":6.000,"
				  "\"prefill_diff_ms\":0.500,\"decode_diff_ms\":-0.250}"));
	assert_non_null(strstr(j, "\"steps_source\":\"pack\",\"pack\":{\"seq\":3,"
				  "\"join\":\"hand-off\",\"tokenize_calls\":2,"
				  "\"prefill_steps\":2,\"decode_steps\":17,"
				  "\"prompt_tokens\":130}"));
	assert_int_equal(rt_span_from_json(j, &back), 0);
	assert_int_equal(back.phase_source[RT_PHASE_PREFILL], RT_PSRC_PACK);
	assert_int_equal(back.steps_source, RT_PSRC_PACK);
	assert_true(back.pack.present);
	assert_int_equal(back.pack.seq, 3);
	assert_int_equal(back.pack.join, RT_PACK_JOIN_HANDOFF);
	assert_int_equal(back.pack.prefill_steps, 2);
	assert_int_equal(back.pack.decode_steps, 17);
	assert_int_equal(back.pack.prompt_tokens, 130);
	assert_int_equal(back.pack.tokenize_calls, 2);
	rt_jsonw_fini(&w);

	/* zero-code: prompt_ms is set beside pre_first_token, and says so */
	s.phase_ns[RT_PHASE_PREFILL] = RT_NULL_NS;
	s.phase_source[RT_PHASE_PREFILL] = RT_PSRC_NONE;
	s.phase_ns[RT_PHASE_PRE_FIRST_TOKEN] = 7000000;
	s.phase_source[RT_PHASE_PRE_FIRST_TOKEN] = RT_PSRC_PROBE;
	s.n_reported = 1;
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_non_null(strstr(rt_jsonw_str(&w), "\"server_vs_observed\":{\"prompt_ms\":4.500,"
						 "\"predicted_ms\":null,"
						 "\"prefill_phase\":\"pre_first_token\","
						 "\"prefill_ms\":7.000,\"decode_ms\":6.000,"
						 "\"prefill_diff_ms\":2.500,"
						 "\"decode_diff_ms\":null}"));
	rt_jsonw_fini(&w);
	assert_string_equal(rt_phase_source_name(RT_PSRC_PACK), "pack");
	assert_string_equal(rt_pack_join_name(RT_PACK_JOIN_MISMATCH), "mismatch");
	assert_null(rt_pack_join_name(RT_PACK_JOIN_NONE));
}

/* A span with a timeline: two phase intervals, two slices (one shared). */
static void timeline_sample(struct rt_span *s)
{
	sample(s);
	s->phase_ns[RT_PHASE_PREFILL] = 20000000;
	s->phase_source[RT_PHASE_PREFILL] = RT_PSRC_MARKER;
	s->n_intervals = 2;
	s->intervals[0] = (struct rt_span_interval){ .start_ns = s->start_ns,
						     .end_ns = s->received_ns,
						     .phase = RT_PHASE_RECEIVE,
						     .source = RT_PSRC_PROBE };
	s->intervals[1] = (struct rt_span_interval){ .start_ns = s->received_ns,
						     .end_ns = s->first_token_ns,
						     .phase = RT_PHASE_PREFILL,
						     .source = RT_PSRC_MARKER };
	s->intervals_dropped = 3;
	s->cpu.n_slices = 2;
	s->cpu.slices[0] = (struct rt_span_slice){
		.start_ns = s->start_ns + 1, .end_ns = s->start_ns + 7, .tid = 4243, .shared = true
	};
	s->cpu.slices[1] = (struct rt_span_slice){ .start_ns = s->first_token_ns,
						   .end_ns = s->end_ns,
						   .tid = 4244 };
	s->cpu.slices_dropped = 5;
}

static void test_timeline(void **state)
{
	struct rt_jsonw w;
	struct rt_span s, back;
	const char *j;
	cJSON *o, *iv, *cpu;

	(void)state;
	timeline_sample(&s);
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_true(rt_jsonw_ok(&w));
	j = rt_jsonw_str(&w);
	/* exact instants, the documented key order */
	assert_non_null(strstr(j, "\"intervals\":[{\"phase\":\"receive\",\"source\":\"probe\","
				  "\"start_ns\":9007199254740993,\"end_ns\":9007199255740994},"
				  "{\"phase\":\"prefill\",\"source\":\"marker\","
				  "\"start_ns\":9007199255740994,\"end_ns\":9007199279740993}],"
				  "\"intervals_dropped\":3,\"cpu\":{"));
	assert_non_null(strstr(j, "\"slices\":[{\"tid\":4243,\"start_ns\":9007199254740994,"
				  "\"end_ns\":9007199254741000,\"shared\":true},{\"tid\":4244,"));
	assert_non_null(strstr(j, "\"shared\":false}],\"slices_dropped\":5}"));
	o = cJSON_Parse(j);
	assert_non_null(o);
	iv = cJSON_GetObjectItem(o, "intervals");
	assert_int_equal(cJSON_GetArraySize(iv), 2);
	cpu = cJSON_GetObjectItem(o, "cpu");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cpu, "slices")), 2);
	cJSON_Delete(o);

	/* back, exactly: the top-level instants are not confused with the arrays' */
	assert_int_equal(rt_span_from_json(j, &back), 0);
	assert_int_equal(back.start_ns, s.start_ns);
	assert_int_equal(back.end_ns, s.end_ns);
	assert_int_equal(back.n_intervals, 2);
	assert_int_equal(back.intervals_dropped, 3);
	assert_memory_equal(back.intervals, s.intervals, 2 * sizeof(s.intervals[0]));
	assert_int_equal(back.cpu.n_slices, 2);
	assert_int_equal(back.cpu.slices_dropped, 5);
	assert_int_equal(back.cpu.slices[0].start_ns, s.cpu.slices[0].start_ns);
	assert_int_equal(back.cpu.slices[0].end_ns, s.cpu.slices[0].end_ns);
	assert_int_equal(back.cpu.slices[0].tid, 4243);
	assert_true(back.cpu.slices[0].shared);
	assert_int_equal(back.cpu.slices[1].end_ns, s.end_ns);
	assert_false(back.cpu.slices[1].shared);
	rt_jsonw_fini(&w);

	/* none: empty arrays and zero counts, never null */
	sample(&s);
	rt_jsonw_init(&w, 0);
	rt_span_to_json(&w, &s);
	assert_non_null(strstr(rt_jsonw_str(&w), "\"intervals\":[],\"intervals_dropped\":0,"));
	assert_non_null(strstr(rt_jsonw_str(&w), "\"slices\":[],\"slices_dropped\":0}"));
	assert_int_equal(rt_span_from_json(rt_jsonw_str(&w), &back), 0);
	assert_int_equal(back.n_intervals, 0);
	assert_int_equal(back.cpu.n_slices, 0);
	rt_jsonw_fini(&w);
}

static void test_writer_escapes_and_bounds(void **state)
{
	struct rt_jsonw w;
	cJSON *o;

	(void)state;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "bad");
	rt_jsonw_str_val(&w, "a\x01\xff\xc3\xa9z"); /* control, invalid byte, valid é */
	rt_jsonw_key(&w, "neg");
	rt_jsonw_ms(&w, -1500000);
	rt_jsonw_key(&w, "round");
	rt_jsonw_ms(&w, 1999);
	rt_jsonw_obj_close(&w);
	assert_string_equal(
		rt_jsonw_str(&w),
		"{\"bad\":\"a\\u0001\\ufffd\xc3\xa9z\",\"neg\":-1.500,\"round\":0.002}");
	o = cJSON_Parse(rt_jsonw_str(&w));
	assert_non_null(o);
	cJSON_Delete(o);
	rt_jsonw_fini(&w);

	/* a bound that is too small fails loudly, never overflows */
	rt_jsonw_init(&w, 16);
	rt_jsonw_arr_open(&w);
	for (int i = 0; i < 100; i++)
		rt_jsonw_uint(&w, 123456789);
	rt_jsonw_arr_close(&w);
	assert_false(rt_jsonw_ok(&w));
	assert_true(strlen(rt_jsonw_str(&w)) <= 16);
	rt_jsonw_fini(&w);
}

static int count_fn(const struct rt_span *s, void *ctx)
{
	(void)s;
	(*(int *)ctx)++;
	return 0;
}

static void test_store(void **state)
{
	struct rt_store_opts o = { .max_spans = 3 };
	struct rt_store *st = rt_store__new(&o);
	struct rt_store_stats ss;
	struct rt_span s;
	int i, n = 0;

	(void)state;
	assert_non_null(st);
	for (i = 0; i < 5; i++) {
		rt_span_init(&s);
		snprintf(s.request_id, sizeof(s.request_id), "r%d", i);
		s.start_ns = 100 + i;
		rt_store__add(st, &s);
	}
	rt_store__stats(st, &ss);
	assert_int_equal(ss.size, 3);
	assert_int_equal(ss.evicted, 2);
	assert_null(rt_store__find(st, "r1"));
	assert_non_null(rt_store__find(st, "r4"));
	/* an amendment replaces the earlier revision in place */
	rt_span_init(&s);
	strcpy(s.request_id, "r3");
	s.start_ns = 103;
	s.revision = 1;
	rt_store__add(st, &s);
	rt_store__stats(st, &ss);
	assert_int_equal(ss.size, 3);
	assert_int_equal(ss.amended, 1);
	assert_int_equal(rt_store__find(st, "r3")->revision, 1);
	rt_store__foreach(st, count_fn, &n);
	assert_int_equal(n, 3);
	rt_store__free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_and_nulls),
		cmocka_unit_test(test_unseen_start),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_gpu_split),
		cmocka_unit_test(test_pack_and_server),
		cmocka_unit_test(test_engine),
		cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_writer_escapes_and_bounds),
		cmocka_unit_test(test_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
