// SPDX-License-Identifier: BSD-2-Clause
#include "export/span_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phase_keys[RT_PHASE__COUNT] = {
	[RT_PHASE_RECEIVE] = "receive_ms",
	[RT_PHASE_QUEUE] = "queue_ms",
	[RT_PHASE_TOKENIZE] = "tokenize_ms",
	[RT_PHASE_PREFILL] = "prefill_ms",
	[RT_PHASE_PRE_FIRST_TOKEN] = "pre_first_token_ms",
	[RT_PHASE_DECODE] = "decode_ms",
	[RT_PHASE_COMM_WAIT] = "comm_wait_ms",
	[RT_PHASE_POSTPROCESS] = "postprocess_ms",
	[RT_PHASE_OTHER] = "other_ms",
	[RT_PHASE_BACKLOG] = "backlog_ms",
};

/* JSON order: the partition's order in time, backlog first (docs/spans.md) */
static const enum rt_phase phase_order[RT_PHASE__COUNT] = {
	RT_PHASE_BACKLOG,     RT_PHASE_RECEIVE,		RT_PHASE_QUEUE,	 RT_PHASE_TOKENIZE,
	RT_PHASE_PREFILL,     RT_PHASE_PRE_FIRST_TOKEN, RT_PHASE_DECODE, RT_PHASE_COMM_WAIT,
	RT_PHASE_POSTPROCESS, RT_PHASE_OTHER,
};

static void key_str_or_null(struct rt_jsonw *w, const char *k, const char *v)
{
	rt_jsonw_key(w, k);
	if (v && v[0])
		rt_jsonw_str_val(w, v);
	else
		rt_jsonw_null(w);
}

static void key_ns_or_null(struct rt_jsonw *w, const char *k, uint64_t v)
{
	rt_jsonw_key(w, k);
	if (v)
		rt_jsonw_uint(w, v);
	else
		rt_jsonw_null(w);
}

static void key_ms_or_null(struct rt_jsonw *w, const char *k, int64_t ns)
{
	rt_jsonw_key(w, k);
	if (ns == RT_NULL_NS)
		rt_jsonw_null(w);
	else
		rt_jsonw_ms(w, ns);
}

static void cpu_json(struct rt_jsonw *w, const struct rt_span_cpu *cpu)
{
	uint32_t i;

	rt_jsonw_key(w, "cpu");
	rt_jsonw_obj_open(w);
	key_ms_or_null(w, "on_cpu_ms", cpu->on_cpu_ns);
	key_ms_or_null(w, "runq_ms", cpu->runq_ns);
	key_ms_or_null(w, "off_cpu_ms", cpu->off_cpu_ns);
	key_ms_or_null(w, "pool_ms", cpu->pool_ns);
	key_ms_or_null(w, "pool_spin_ms", cpu->pool_spin_ns);
	rt_jsonw_key(w, "pool_by");
	if (rt_work_source_name(cpu->pool_by))
		rt_jsonw_str_val(w, rt_work_source_name(cpu->pool_by));
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "estimated");
	rt_jsonw_bool(w, cpu->pool_ns != RT_NULL_NS && cpu->pool_ns > 0);
	rt_jsonw_key(w, "threads");
	rt_jsonw_arr_open(w);
	for (i = 0; i < cpu->n_threads && i < RT_SPAN_THREADS_MAX; i++) {
		const struct rt_span_thread *t = &cpu->threads[i];

		rt_jsonw_obj_open(w);
		rt_jsonw_key(w, "tid");
		rt_jsonw_uint(w, t->tid);
		rt_jsonw_key(w, "comm");
		rt_jsonw_str_val(w, t->comm);
		key_ms_or_null(w, "on_cpu_ms", t->on_cpu_ns);
		key_ms_or_null(w, "runq_ms", t->runq_ns);
		rt_jsonw_key(w, "shared");
		rt_jsonw_bool(w, t->shared);
		rt_jsonw_key(w, "pool");
		rt_jsonw_bool(w, t->pool);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	rt_jsonw_key(w, "slices");
	rt_jsonw_arr_open(w);
	for (i = 0; i < cpu->n_slices && i < RT_SPAN_SLICES_MAX; i++) {
		const struct rt_span_slice *sl = &cpu->slices[i];

		rt_jsonw_obj_open(w);
		rt_jsonw_key(w, "tid");
		rt_jsonw_uint(w, sl->tid);
		rt_jsonw_key(w, "start_ns");
		rt_jsonw_uint(w, sl->start_ns);
		rt_jsonw_key(w, "end_ns");
		rt_jsonw_uint(w, sl->end_ns);
		rt_jsonw_key(w, "shared");
		rt_jsonw_bool(w, sl->shared);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	rt_jsonw_key(w, "slices_dropped");
	rt_jsonw_uint(w, cpu->slices_dropped);
	rt_jsonw_obj_close(w);
}

static void intervals_json(struct rt_jsonw *w, const struct rt_span *s)
{
	uint32_t i;

	rt_jsonw_key(w, "intervals");
	rt_jsonw_arr_open(w);
	for (i = 0; i < s->n_intervals && i < RT_SPAN_INTERVALS_MAX; i++) {
		const struct rt_span_interval *iv = &s->intervals[i];
		const char *src = rt_phase_source_name(iv->source);

		if (iv->phase >= RT_PHASE__COUNT || !src)
			continue; /* the correlator makes none: a reader could not place it */
		rt_jsonw_obj_open(w);
		rt_jsonw_key(w, "phase");
		rt_jsonw_str_val(w, rt_phase_name(iv->phase));
		rt_jsonw_key(w, "source");
		rt_jsonw_str_val(w, src);
		rt_jsonw_key(w, "start_ns");
		rt_jsonw_uint(w, iv->start_ns);
		rt_jsonw_key(w, "end_ns");
		rt_jsonw_uint(w, iv->end_ns);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	rt_jsonw_key(w, "intervals_dropped");
	rt_jsonw_uint(w, s->intervals_dropped);
}

static void gpu_json(struct rt_jsonw *w, const struct rt_span_gpu *g)
{
	rt_jsonw_key(w, "gpu");
	if (!g->present) {
		rt_jsonw_null(w);
		return;
	}
	rt_jsonw_obj_open(w);
	key_ms_or_null(w, "kernel_ms", g->kernel_ns);
	key_ms_or_null(w, "memcpy_ms", g->memcpy_ns);
	rt_jsonw_key(w, "h2d_bytes");
	rt_jsonw_uint(w, g->h2d_bytes);
	rt_jsonw_key(w, "d2h_bytes");
	rt_jsonw_uint(w, g->d2h_bytes);
	rt_jsonw_key(w, "p2p_bytes");
	rt_jsonw_uint(w, g->p2p_bytes);
	key_ms_or_null(w, "sync_wait_ms", g->sync_wait_ns);
	rt_jsonw_key(w, "launches");
	rt_jsonw_uint(w, g->launches);
	rt_jsonw_key(w, "nccl_bytes");
	rt_jsonw_uint(w, g->nccl_bytes);
	rt_jsonw_key(w, "split");
	if (rt_gpu_split_name(g->split))
		rt_jsonw_str_val(w, rt_gpu_split_name(g->split));
	else
		rt_jsonw_null(w);
	key_ms_or_null(w, "step_ms", g->step_ns);
	rt_jsonw_obj_close(w);
}

static void pack_json(struct rt_jsonw *w, const struct rt_span *s)
{
	const struct rt_span_pack *k = &s->pack;
	const char *src = rt_phase_source_name(s->steps_source);

	rt_jsonw_key(w, "steps_source");
	if (src)
		rt_jsonw_str_val(w, src);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "pack");
	if (!k->present) {
		rt_jsonw_null(w);
		return;
	}
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "seq");
	if (k->seq >= 0)
		rt_jsonw_int(w, k->seq);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "join");
	if (rt_pack_join_name(k->join))
		rt_jsonw_str_val(w, rt_pack_join_name(k->join));
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "tokenize_calls");
	rt_jsonw_uint(w, k->tokenize_calls);
	rt_jsonw_key(w, "prefill_steps");
	rt_jsonw_uint(w, k->prefill_steps);
	rt_jsonw_key(w, "decode_steps");
	rt_jsonw_uint(w, k->decode_steps);
	rt_jsonw_key(w, "prompt_tokens");
	rt_jsonw_uint(w, k->prompt_tokens);
	rt_jsonw_obj_close(w);
}

static int64_t ms_ns(const cJSON *o, const char *key);
static void x_uint32(const cJSON *o, const char *key, uint32_t *out);

static const char *const engine_joins[] = { [RT_ENGINE_JOIN_RESPONSE_ID] = "response_id",
					    [RT_ENGINE_JOIN_HEADER] = "x_request_id" };
static const char *const finish_reasons[] = { "stop", "length", "abort", "error" };

/* docs/spans.md, "vLLM": the engine requests joined to the span. */
static void engine_json(struct rt_jsonw *w, const struct rt_span_engine *g)
{
	rt_jsonw_key(w, "engine");
	if (!g->present) {
		rt_jsonw_null(w);
		return;
	}
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "id");
	rt_jsonw_str_val(w, g->id);
	rt_jsonw_key(w, "join");
	if (g->join == RT_ENGINE_JOIN_RESPONSE_ID || g->join == RT_ENGINE_JOIN_HEADER)
		rt_jsonw_str_val(w, engine_joins[g->join]);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "requests");
	rt_jsonw_uint(w, g->requests);
	rt_jsonw_key(w, "outputs");
	rt_jsonw_uint(w, g->outputs);
	rt_jsonw_key(w, "tokens");
	rt_jsonw_uint(w, g->tokens);
	rt_jsonw_key(w, "prompt_tokens");
	if (g->prompt_tokens >= 0)
		rt_jsonw_int(w, g->prompt_tokens);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "events_present");
	rt_jsonw_bool(w, g->events_present);
	rt_jsonw_key(w, "finish_reason");
	if (g->finish_reason >= 0 && g->finish_reason <= 3)
		rt_jsonw_str_val(w, finish_reasons[g->finish_reason]);
	else
		rt_jsonw_null(w);
	key_ms_or_null(w, "stream_ms", g->stream_ns);
	rt_jsonw_key(w, "stream_outputs");
	rt_jsonw_uint(w, g->stream_outputs);
	rt_jsonw_obj_close(w);
}

static void engine_parse(const cJSON *v, struct rt_span_engine *g)
{
	const cJSON *x;
	uint32_t u;

	if (!cJSON_IsObject(v))
		return;
	g->present = true;
	x = cJSON_GetObjectItemCaseSensitive(v, "id");
	if (cJSON_IsString(x))
		snprintf(g->id, sizeof(g->id), "%s", x->valuestring);
	x = cJSON_GetObjectItemCaseSensitive(v, "join");
	for (u = RT_ENGINE_JOIN_RESPONSE_ID; cJSON_IsString(x) && u <= RT_ENGINE_JOIN_HEADER; u++)
		if (!strcmp(x->valuestring, engine_joins[u]))
			g->join = (uint8_t)u;
	x_uint32(v, "requests", &g->requests);
	x_uint32(v, "outputs", &g->outputs);
	x = cJSON_GetObjectItemCaseSensitive(v, "tokens");
	g->tokens = cJSON_IsNumber(x) && x->valuedouble >= 0 ? (uint64_t)x->valuedouble : 0;
	x = cJSON_GetObjectItemCaseSensitive(v, "prompt_tokens");
	g->prompt_tokens = cJSON_IsNumber(x) ? (int64_t)x->valuedouble : -1;
	g->events_present = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "events_present"));
	x = cJSON_GetObjectItemCaseSensitive(v, "finish_reason");
	for (u = 0; cJSON_IsString(x) && u < 4; u++)
		if (!strcmp(x->valuestring, finish_reasons[u]))
			g->finish_reason = (int8_t)u;
	g->stream_ns = ms_ns(v, "stream_ms");
	x_uint32(v, "stream_outputs", &g->stream_outputs);
}

/* Derived from server_reported and phases: written, never parsed back. */
static void server_cmp_json(struct rt_jsonw *w, const struct rt_span *s)
{
	struct rt_span_server_cmp x;

	rt_jsonw_key(w, "server_vs_observed");
	if (!rt_span_server_cmp(s, &x)) {
		rt_jsonw_null(w);
		return;
	}
	rt_jsonw_obj_open(w);
	key_ms_or_null(w, "prompt_ms", x.prompt_ns);
	key_ms_or_null(w, "predicted_ms", x.predicted_ns);
	rt_jsonw_key(w, "prefill_phase");
	rt_jsonw_str_val(w, rt_phase_name(x.prefill_phase));
	key_ms_or_null(w, "prefill_ms", x.prefill_ns);
	key_ms_or_null(w, "decode_ms", x.decode_ns);
	key_ms_or_null(w, "prefill_diff_ms", x.prefill_diff_ns);
	key_ms_or_null(w, "decode_diff_ms", x.decode_diff_ns);
	rt_jsonw_obj_close(w);
}

void rt_span_to_json(struct rt_jsonw *w, const struct rt_span *s)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} flags[] = {
		{ RT_SPAN_INCOMPLETE, "incomplete" },
		{ RT_SPAN_STARTED_BEFORE_TRACE, "started_before_trace" },
		{ RT_SPAN_LATE_AMENDED, "late_amended" },
		{ RT_SPAN_PIPELINED, "pipelined" },
		{ RT_SPAN_BACKLOG_LOWER_BOUND, "backlog_lower_bound" },
	};
	uint32_t i;

	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "request_id");
	rt_jsonw_str_val(w, s->request_id);
	if (s->trace_id[0]) {
		rt_jsonw_key(w, "trace_id");
		rt_jsonw_str_val(w, s->trace_id);
		rt_jsonw_key(w, "parent_span_id");
		rt_jsonw_str_val(w, s->parent_span_id);
	}
	rt_jsonw_key(w, "group");
	rt_jsonw_str_val(w, s->group);
	rt_jsonw_key(w, "pid");
	rt_jsonw_uint(w, s->pid);
	rt_jsonw_key(w, "comm");
	rt_jsonw_str_val(w, s->comm);
	key_str_or_null(w, "conn", s->conn);
	key_str_or_null(w, "method", s->method);
	key_str_or_null(w, "path", s->path);
	rt_jsonw_key(w, "status");
	if (s->status)
		rt_jsonw_int(w, s->status);
	else
		rt_jsonw_null(w);
	key_ns_or_null(w, "arrival_ns", s->arrival_ns);
	key_ns_or_null(w, "start_ns", s->start_ns);
	key_ns_or_null(w, "received_ns", s->received_ns);
	key_ns_or_null(w, "first_token_ns", s->first_token_ns);
	key_ns_or_null(w, "end_ns", s->end_ns);
	key_ms_or_null(w, "duration_ms", rt_span_duration_ns(s));
	key_ms_or_null(w, "ttft_ms", rt_span_ttft_ns(s));
	rt_jsonw_key(w, "events_out");
	rt_jsonw_uint(w, s->events_out);
	rt_jsonw_key(w, "tokens_out");
	if (s->tokens_out >= 0)
		rt_jsonw_int(w, s->tokens_out);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "response_id");
	if (s->response_id[0])
		rt_jsonw_str_val(w, s->response_id);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "itl_ms");
	if (s->itl_present) {
		rt_jsonw_obj_open(w);
		key_ms_or_null(w, "p50", s->itl_p50_ns);
		key_ms_or_null(w, "p99", s->itl_p99_ns);
		key_ms_or_null(w, "max", s->itl_max_ns);
		rt_jsonw_obj_close(w);
	} else {
		rt_jsonw_null(w);
	}
	rt_jsonw_key(w, "phases");
	rt_jsonw_obj_open(w);
	for (i = 0; i < RT_PHASE__COUNT; i++)
		key_ms_or_null(w, phase_keys[phase_order[i]], s->phase_ns[phase_order[i]]);
	rt_jsonw_obj_close(w);
	rt_jsonw_key(w, "phase_source");
	rt_jsonw_obj_open(w);
	for (i = 0; i < RT_PHASE__COUNT; i++) {
		enum rt_phase p = phase_order[i];
		const char *src = rt_phase_source_name(s->phase_source[p]);

		if (!src || s->phase_ns[p] == RT_NULL_NS)
			continue;
		rt_jsonw_key(w, rt_phase_name(p));
		rt_jsonw_str_val(w, src);
	}
	rt_jsonw_obj_close(w);
	intervals_json(w, s);
	cpu_json(w, &s->cpu);
	gpu_json(w, &s->gpu);
	rt_jsonw_key(w, "server_reported");
	rt_jsonw_obj_open(w);
	for (i = 0; i < s->n_reported && i < RT_SPAN_REPORTED_MAX; i++) {
		rt_jsonw_key(w, s->reported[i].name);
		rt_jsonw_num(w, s->reported[i].value,
			     s->reported[i].value == floor(s->reported[i].value) ? 0 : 3);
	}
	rt_jsonw_obj_close(w);
	server_cmp_json(w, s);
	pack_json(w, s);
	engine_json(w, &s->engine);
	rt_jsonw_key(w, "outcome");
	rt_jsonw_str_val(w, rt_outcome_name(s->outcome));
	rt_jsonw_key(w, "flags");
	rt_jsonw_arr_open(w);
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (s->flags & flags[i].bit)
			rt_jsonw_str_val(w, flags[i].name);
	rt_jsonw_arr_close(w);
	rt_jsonw_key(w, "revision");
	rt_jsonw_uint(w, s->revision);
	rt_jsonw_obj_close(w);
}

/* ---- parsing --------------------------------------------------------------- */

static void copy_str(char *dst, size_t n, const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsString(v) && v->valuestring)
		snprintf(dst, n, "%s", v->valuestring);
}

/*
 * cJSON keeps numbers as doubles; instants need all their digits, so find
 * the number's text in the source instead.
 */
static uint64_t exact_u64(const char *text, const char *key)
{
	char pat[48];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(text, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	return strtoull(p, NULL, 10);
}

static int64_t ms_ns(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		return RT_NULL_NS;
	return (int64_t)llround(v->valuedouble * 1e6);
}

static void x_uint32(const cJSON *o, const char *key, uint32_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsNumber(v) && v->valuedouble >= 0)
		*out = (uint32_t)v->valuedouble;
}

static enum rt_phase_source psrc(const char *s)
{
	if (!strcmp(s, "marker"))
		return RT_PSRC_MARKER;
	if (!strcmp(s, "probe"))
		return RT_PSRC_PROBE;
	if (!strcmp(s, "inferred"))
		return RT_PSRC_INFERRED;
	if (!strcmp(s, "pack"))
		return RT_PSRC_PACK;
	return RT_PSRC_NONE;
}

/*
 * The objects of the array under key (instants need exact digits, see
 * exact_u64): each object's text, which holds no nested braces, to fn.
 */
static void each_object(const char *text, const char *key, struct rt_span *s,
			void (*fn)(const char *obj, struct rt_span *s))
{
	char pat[48], obj[256];
	const char *p, *q;

	snprintf(pat, sizeof(pat), "\"%s\":[", key);
	p = strstr(text, pat);
	if (!p)
		return;
	for (p += strlen(pat); *p && *p != ']'; p = q + 1) {
		p += strspn(p, " ,\t\r\n");
		if (*p != '{')
			return;
		q = strchr(p, '}');
		if (!q)
			return;
		if ((size_t)(q - p) + 1 < sizeof(obj)) {
			memcpy(obj, p, (size_t)(q - p) + 1);
			obj[q - p + 1] = '\0';
			fn(obj, s);
		}
		q += strspn(q + 1, " \t\r\n");
	}
}

static bool obj_str(const char *obj, const char *key, const char *want)
{
	char pat[64];

	snprintf(pat, sizeof(pat), "\"%s\":\"%s\"", key, want);
	return strstr(obj, pat) != NULL;
}

static void interval_of(const char *obj, struct rt_span *s)
{
	static const char *const srcs[] = { "marker", "probe", "inferred" };
	struct rt_span_interval iv = { 0 };
	uint32_t p;

	if (s->n_intervals >= RT_SPAN_INTERVALS_MAX)
		return;
	for (p = 0; p < RT_PHASE__COUNT && !obj_str(obj, "phase", rt_phase_name(p)); p++)
		;
	if (p == RT_PHASE__COUNT)
		return;
	iv.phase = (uint8_t)p;
	for (p = 0; p < sizeof(srcs) / sizeof(srcs[0]); p++)
		if (obj_str(obj, "source", srcs[p]))
			iv.source = (uint8_t)psrc(srcs[p]);
	iv.start_ns = exact_u64(obj, "start_ns");
	iv.end_ns = exact_u64(obj, "end_ns");
	s->intervals[s->n_intervals++] = iv;
}

static void slice_of(const char *obj, struct rt_span *s)
{
	struct rt_span_slice *sl;

	if (s->cpu.n_slices >= RT_SPAN_SLICES_MAX)
		return;
	sl = &s->cpu.slices[s->cpu.n_slices++];
	sl->tid = (uint32_t)exact_u64(obj, "tid");
	sl->start_ns = exact_u64(obj, "start_ns");
	sl->end_ns = exact_u64(obj, "end_ns");
	sl->shared = strstr(obj, "\"shared\":true") != NULL;
}

int rt_span_from_json(const char *text, struct rt_span *s)
{
	static const char *const outcomes[] = { "ok", "aborted", "error", "server_exit",
						"timeout" };
	cJSON *o = cJSON_Parse(text), *v, *it;
	uint32_t i;

	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return -EINVAL;
	}
	rt_span_init(s);
	copy_str(s->request_id, sizeof(s->request_id), o, "request_id");
	copy_str(s->trace_id, sizeof(s->trace_id), o, "trace_id");
	copy_str(s->parent_span_id, sizeof(s->parent_span_id), o, "parent_span_id");
	copy_str(s->group, sizeof(s->group), o, "group");
	copy_str(s->comm, sizeof(s->comm), o, "comm");
	copy_str(s->conn, sizeof(s->conn), o, "conn");
	copy_str(s->method, sizeof(s->method), o, "method");
	copy_str(s->path, sizeof(s->path), o, "path");
	v = cJSON_GetObjectItemCaseSensitive(o, "pid");
	s->pid = cJSON_IsNumber(v) ? (uint32_t)v->valuedouble : 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "status");
	s->status = cJSON_IsNumber(v) ? v->valueint : 0;
	s->arrival_ns = exact_u64(text, "arrival_ns");
	s->start_ns = exact_u64(text, "start_ns");
	s->received_ns = exact_u64(text, "received_ns");
	s->first_token_ns = exact_u64(text, "first_token_ns");
	s->end_ns = exact_u64(text, "end_ns");
	s->streamed = s->first_token_ns != 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "events_out");
	s->events_out = cJSON_IsNumber(v) ? (uint32_t)v->valuedouble : 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "tokens_out");
	s->tokens_out = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
	v = cJSON_GetObjectItemCaseSensitive(o, "response_id");
	if (cJSON_IsString(v))
		snprintf(s->response_id, sizeof(s->response_id), "%s", v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(o, "itl_ms");
	if (cJSON_IsObject(v)) {
		s->itl_present = true;
		s->itl_p50_ns = ms_ns(v, "p50");
		s->itl_p99_ns = ms_ns(v, "p99");
		s->itl_max_ns = ms_ns(v, "max");
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "phases");
	for (i = 0; i < RT_PHASE__COUNT && cJSON_IsObject(v); i++)
		s->phase_ns[i] = ms_ns(v, phase_keys[i]);
	v = cJSON_GetObjectItemCaseSensitive(o, "phase_source");
	for (i = 0; i < RT_PHASE__COUNT && cJSON_IsObject(v); i++) {
		it = cJSON_GetObjectItemCaseSensitive(v, rt_phase_name(i));
		if (cJSON_IsString(it))
			s->phase_source[i] = psrc(it->valuestring);
	}
	each_object(text, "intervals", s, interval_of);
	x_uint32(o, "intervals_dropped", &s->intervals_dropped);
	each_object(text, "slices", s, slice_of);
	v = cJSON_GetObjectItemCaseSensitive(o, "cpu");
	if (cJSON_IsObject(v)) {
		s->cpu.on_cpu_ns = ms_ns(v, "on_cpu_ms");
		s->cpu.runq_ns = ms_ns(v, "runq_ms");
		s->cpu.off_cpu_ns = ms_ns(v, "off_cpu_ms");
		s->cpu.pool_ns = ms_ns(v, "pool_ms");
		s->cpu.pool_spin_ns = ms_ns(v, "pool_spin_ms");
		{
			cJSON *by = cJSON_GetObjectItemCaseSensitive(v, "pool_by");

			s->cpu.pool_by = (uint8_t)rt_work_source_parse(
				cJSON_IsString(by) ? by->valuestring : NULL);
		}
		x_uint32(v, "slices_dropped", &s->cpu.slices_dropped);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(v, "threads"))
		{
			struct rt_span_thread *t;
			cJSON *x;

			if (s->cpu.n_threads >= RT_SPAN_THREADS_MAX)
				break;
			t = &s->cpu.threads[s->cpu.n_threads++];
			x = cJSON_GetObjectItemCaseSensitive(it, "tid");
			t->tid = cJSON_IsNumber(x) ? (uint32_t)x->valuedouble : 0;
			copy_str(t->comm, sizeof(t->comm), it, "comm");
			t->on_cpu_ns = ms_ns(it, "on_cpu_ms");
			t->runq_ns = ms_ns(it, "runq_ms");
			t->shared = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "shared"));
			t->pool = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "pool"));
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "gpu");
	if (cJSON_IsObject(v)) {
		cJSON *x;

		s->gpu.present = true;
		s->gpu.kernel_ns = ms_ns(v, "kernel_ms");
		s->gpu.memcpy_ns = ms_ns(v, "memcpy_ms");
		s->gpu.sync_wait_ns = ms_ns(v, "sync_wait_ms");
		x = cJSON_GetObjectItemCaseSensitive(v, "h2d_bytes");
		s->gpu.h2d_bytes = cJSON_IsNumber(x) ? (uint64_t)x->valuedouble : 0;
		x = cJSON_GetObjectItemCaseSensitive(v, "d2h_bytes");
		s->gpu.d2h_bytes = cJSON_IsNumber(x) ? (uint64_t)x->valuedouble : 0;
		x = cJSON_GetObjectItemCaseSensitive(v, "p2p_bytes");
		s->gpu.p2p_bytes = cJSON_IsNumber(x) ? (uint64_t)x->valuedouble : 0;
		x = cJSON_GetObjectItemCaseSensitive(v, "launches");
		s->gpu.launches = cJSON_IsNumber(x) ? (uint64_t)x->valuedouble : 0;
		x = cJSON_GetObjectItemCaseSensitive(v, "nccl_bytes");
		s->gpu.nccl_bytes = cJSON_IsNumber(x) ? (uint64_t)x->valuedouble : 0;
		x = cJSON_GetObjectItemCaseSensitive(v, "split");
		s->gpu.split =
			(uint8_t)rt_gpu_split_parse(cJSON_IsString(x) ? x->valuestring : NULL);
		s->gpu.step_ns = ms_ns(v, "step_ms");
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "server_reported"))
	{
		if (s->n_reported >= RT_SPAN_REPORTED_MAX || !cJSON_IsNumber(it) || !it->string)
			continue;
		snprintf(s->reported[s->n_reported].name, sizeof(s->reported[0].name), "%s",
			 it->string);
		s->reported[s->n_reported++].value = it->valuedouble;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "steps_source");
	if (cJSON_IsString(v))
		s->steps_source = (uint8_t)psrc(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(o, "pack");
	if (cJSON_IsObject(v)) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, "seq");
		uint32_t u = 0;

		s->pack.present = true;
		if (cJSON_IsNumber(x))
			s->pack.seq = (int32_t)x->valuedouble;
		x = cJSON_GetObjectItemCaseSensitive(v, "join");
		for (u = RT_PACK_JOIN_HANDOFF; cJSON_IsString(x) && u <= RT_PACK_JOIN_MISMATCH; u++)
			if (!strcmp(x->valuestring, rt_pack_join_name(u)))
				s->pack.join = (uint8_t)u;
		x_uint32(v, "tokenize_calls", &s->pack.tokenize_calls);
		x_uint32(v, "prefill_steps", &s->pack.prefill_steps);
		x_uint32(v, "decode_steps", &s->pack.decode_steps);
		x = cJSON_GetObjectItemCaseSensitive(v, "prompt_tokens");
		s->pack.prompt_tokens =
			cJSON_IsNumber(x) && x->valuedouble >= 0 ? (uint64_t)x->valuedouble : 0;
	}
	engine_parse(cJSON_GetObjectItemCaseSensitive(o, "engine"), &s->engine);
	v = cJSON_GetObjectItemCaseSensitive(o, "outcome");
	for (i = 0; cJSON_IsString(v) && i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
		if (!strcmp(v->valuestring, outcomes[i]))
			s->outcome = (uint8_t)i;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "flags"))
	{
		if (!cJSON_IsString(it))
			continue;
		if (!strcmp(it->valuestring, "incomplete"))
			s->flags |= RT_SPAN_INCOMPLETE;
		else if (!strcmp(it->valuestring, "started_before_trace"))
			s->flags |= RT_SPAN_STARTED_BEFORE_TRACE;
		else if (!strcmp(it->valuestring, "late_amended"))
			s->flags |= RT_SPAN_LATE_AMENDED;
		else if (!strcmp(it->valuestring, "pipelined"))
			s->flags |= RT_SPAN_PIPELINED;
		else if (!strcmp(it->valuestring, "backlog_lower_bound"))
			s->flags |= RT_SPAN_BACKLOG_LOWER_BOUND;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "revision");
	s->revision = cJSON_IsNumber(v) ? (uint32_t)v->valuedouble : 0;
	cJSON_Delete(o);
	return 0;
}
