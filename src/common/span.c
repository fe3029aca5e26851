// SPDX-License-Identifier: BSD-2-Clause
#include <reqtrace/span.h>

#include <math.h>
#include <string.h>

static const char *const phase_names[RT_PHASE__COUNT] = {
	[RT_PHASE_RECEIVE] = "receive",
	[RT_PHASE_QUEUE] = "queue",
	[RT_PHASE_TOKENIZE] = "tokenize",
	[RT_PHASE_PREFILL] = "prefill",
	[RT_PHASE_PRE_FIRST_TOKEN] = "pre_first_token",
	[RT_PHASE_DECODE] = "decode",
	[RT_PHASE_COMM_WAIT] = "comm_wait",
	[RT_PHASE_POSTPROCESS] = "postprocess",
	[RT_PHASE_OTHER] = "other",
	[RT_PHASE_BACKLOG] = "backlog",
};

const char *rt_phase_name(enum rt_phase p)
{
	if ((unsigned)p >= RT_PHASE__COUNT)
		return "unknown";
	return phase_names[p];
}

const char *rt_outcome_name(enum rt_outcome o)
{
	switch (o) {
	case RT_OUTCOME_OK:
		return "ok";
	case RT_OUTCOME_ABORTED:
		return "aborted";
	case RT_OUTCOME_ERROR:
		return "error";
	case RT_OUTCOME_SERVER_EXIT:
		return "server_exit";
	case RT_OUTCOME_TIMEOUT:
		return "timeout";
	}
	return "unknown";
}

const char *rt_phase_source_name(enum rt_phase_source s)
{
	switch (s) {
	case RT_PSRC_MARKER:
		return "marker";
	case RT_PSRC_PROBE:
		return "probe";
	case RT_PSRC_INFERRED:
		return "inferred";
	case RT_PSRC_PACK:
		return "pack";
	case RT_PSRC_NONE:
		break;
	}
	return NULL;
}

static const char *const split_names[RT_GPU_SPLIT__COUNT] = {
	[RT_GPU_SPLIT_TOKENS] = "tokens",
	[RT_GPU_SPLIT_MEMBERS] = "members",
	[RT_GPU_SPLIT_ENGINE_SET] = "engine_set",
};

const char *rt_gpu_split_name(unsigned int split)
{
	return split < RT_GPU_SPLIT__COUNT ? split_names[split] : NULL;
}

unsigned int rt_gpu_split_parse(const char *name)
{
	unsigned int i;

	for (i = 1; name && i < RT_GPU_SPLIT__COUNT; i++)
		if (!strcmp(name, split_names[i]))
			return i;
	return RT_GPU_SPLIT_NONE;
}

static const char *const work_names[RT_WORK__COUNT] = {
	[RT_WORK_NONE] = NULL,
	[RT_WORK_MARKER] = "marker",
	[RT_WORK_PACK] = "pack",
	[RT_WORK_ENGINE_SET] = "engine_set",
};

const char *rt_work_source_name(unsigned int src)
{
	return src < RT_WORK__COUNT ? work_names[src] : NULL;
}

unsigned int rt_work_source_parse(const char *name)
{
	unsigned int i;

	for (i = 1; name && i < RT_WORK__COUNT; i++)
		if (!strcmp(name, work_names[i]))
			return i;
	return RT_WORK_NONE;
}

void rt_span_init(struct rt_span *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->tokens_out = -1;
	for (i = 0; i < RT_PHASE__COUNT; i++)
		s->phase_ns[i] = RT_NULL_NS;
	s->gpu.kernel_ns = RT_NULL_NS;
	s->gpu.memcpy_ns = RT_NULL_NS;
	s->gpu.step_ns = RT_NULL_NS;
	s->gpu.sync_wait_ns = RT_NULL_NS;
	s->cpu.pool_ns = RT_NULL_NS;
	s->cpu.pool_spin_ns = RT_NULL_NS;
	s->pack.seq = -1;
	s->engine.prompt_tokens = -1;
	s->engine.finish_reason = -1;
	s->engine.stream_ns = RT_NULL_NS;
}

const char *rt_pack_join_name(unsigned int join)
{
	switch (join) {
	case RT_PACK_JOIN_HANDOFF:
		return "hand-off";
	case RT_PACK_JOIN_ID_SLOT:
		return "id_slot";
	case RT_PACK_JOIN_MISMATCH:
		return "mismatch";
	}
	return NULL;
}

static int64_t reported_ms(const struct rt_span *s, const char *name)
{
	uint32_t i;

	for (i = 0; i < s->n_reported && i < RT_SPAN_REPORTED_MAX; i++)
		if (!strcmp(s->reported[i].name, name) && s->reported[i].value >= 0 &&
		    s->reported[i].value < 1e12)
			return (int64_t)llround(s->reported[i].value * 1e6);
	return RT_NULL_NS;
}

/*
 * The server's prompt time is its prefill: compared with the observed
 * prefill, else (zero-code) with pre_first_token, which also holds queue
 * and tokenize; the phase compared is named so that a reader can tell.
 */
bool rt_span_server_cmp(const struct rt_span *s, struct rt_span_server_cmp *out)
{
	out->prompt_ns = reported_ms(s, "timings.prompt_ms");
	out->predicted_ns = reported_ms(s, "timings.predicted_ms");
	out->prefill_phase = s->phase_ns[RT_PHASE_PREFILL] != RT_NULL_NS ? RT_PHASE_PREFILL :
									   RT_PHASE_PRE_FIRST_TOKEN;
	out->prefill_ns = s->phase_ns[out->prefill_phase];
	out->decode_ns = s->phase_ns[RT_PHASE_DECODE];
	out->prefill_diff_ns = out->prompt_ns != RT_NULL_NS && out->prefill_ns != RT_NULL_NS ?
				       out->prefill_ns - out->prompt_ns :
				       RT_NULL_NS;
	out->decode_diff_ns = out->predicted_ns != RT_NULL_NS && out->decode_ns != RT_NULL_NS ?
				      out->decode_ns - out->predicted_ns :
				      RT_NULL_NS;
	return out->prompt_ns != RT_NULL_NS || out->predicted_ns != RT_NULL_NS;
}

uint64_t rt_span_origin_ns(const struct rt_span *s)
{
	return s->arrival_ns && s->arrival_ns <= s->start_ns ? s->arrival_ns : s->start_ns;
}

int64_t rt_span_duration_ns(const struct rt_span *s)
{
	uint64_t o = rt_span_origin_ns(s);

	if (!o) /* started before the trace: no start, no duration */
		return RT_NULL_NS;
	return s->end_ns > o ? (int64_t)(s->end_ns - o) : 0;
}

int64_t rt_span_ttft_ns(const struct rt_span *s)
{
	uint64_t o = rt_span_origin_ns(s);

	if (!o || !s->first_token_ns || s->first_token_ns < o)
		return RT_NULL_NS;
	return (int64_t)(s->first_token_ns - o);
}
