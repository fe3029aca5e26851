// SPDX-License-Identifier: BSD-2-Clause
#include <reqtrace/span.h>

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
	case RT_PSRC_NONE:
		break;
	}
	return NULL;
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
	s->gpu.sync_wait_ns = RT_NULL_NS;
}
