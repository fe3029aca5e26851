/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The span record: one per request, the contract of docs/spans.md. The
 * correlator fills it; store, verdict and export use it through this header
 * alone, without the correlator. Plain data: copyable with memcpy, no
 * pointers. User space only (the BPF side never sees a span); the names
 * below are implemented in src/common/span.c.
 *
 * Nanosecond instants are CLOCK_MONOTONIC; 0 means "not observed" (null).
 * Durations are nanoseconds; RT_NULL_NS means null.
 *
 * Versioning: how a field is added without breaking a reader.
 *   - Recordings hold events (event.h), never spans: spans are recomputed
 *     on replay, so an old recording yields spans with every new field. The
 *     struct is a contract between the modules of one build, not an ABI: a
 *     field may go anywhere in it, and nothing may write it to a file.
 *   - A new field has a "not observed" value (0, RT_NULL_NS, -1) that
 *     rt_span_init() sets, and the JSON writer prints as null: a code path
 *     (or a recording) that knows nothing of it yields null, never a wrong 0.
 *   - JSON (docs/spans.md) only grows: a key keeps its name, unit and
 *     meaning, and a key that may be null stays so; readers ignore keys they
 *     do not know. A change that cannot be made that way is a new key (with
 *     its own unit suffix), and the old key stays until a documented removal.
 *   - Bounds (RT_SPAN_*_MAX) may grow; JSON arrays carry their own length.
 *   - The same commit updates docs/spans.md, export/span_json.c and
 *     tests/unit/test_span_json.c.
 */
#ifndef RT_SPAN_H
#define RT_SPAN_H

#include <stdbool.h>
#include <stdint.h>

#include <reqtrace/phase.h>

#define RT_NULL_NS INT64_MIN

#define RT_SPAN_ID_MAX 128
#define RT_SPAN_PATH_MAX 256
#define RT_SPAN_METHOD_MAX 16
#define RT_SPAN_CONN_MAX 120
#define RT_SPAN_GROUP_MAX 32
#define RT_SPAN_COMM_MAX 16
#define RT_SPAN_THREADS_MAX 16
#define RT_SPAN_REPORTED_MAX 12
#define RT_SPAN_REPORTED_NAME_MAX 40
#define RT_SPAN_RESPONSE_ID_MAX 64
#define RT_SPAN_INTERVALS_MAX 24
#define RT_SPAN_SLICES_MAX 32

enum rt_phase_source {
	RT_PSRC_NONE = 0, /* phase is null */
	RT_PSRC_MARKER = 1,
	RT_PSRC_PROBE = 2,
	RT_PSRC_INFERRED = 3,
	RT_PSRC_PACK = 4, /* an engine pack's uprobes on the engine's library (docs/packs.md) */
};

enum rt_outcome {
	RT_OUTCOME_OK = 0,
	RT_OUTCOME_ABORTED = 1,
	RT_OUTCOME_ERROR = 2,
	RT_OUTCOME_SERVER_EXIT = 3,
	RT_OUTCOME_TIMEOUT = 4,
};

/* span.flags */
#define RT_SPAN_INCOMPLETE 0x1
#define RT_SPAN_STARTED_BEFORE_TRACE 0x2
#define RT_SPAN_LATE_AMENDED 0x4
#define RT_SPAN_PIPELINED 0x8 /* shared a connection with an earlier unanswered request */
/* arrival_ns is an upper bound (an earlier read left bytes unread): the
 * backlog phase is a lower bound */
#define RT_SPAN_BACKLOG_LOWER_BOUND 0x10

/*
 * One measured piece of a phase, [start_ns, end_ns). A phase may have
 * several (marker intervals repeat; comm waits cut prefill/decode). Exports
 * draw these and nothing else: a phase with no interval is not drawn, so no
 * exporter lays totals end to end and invents when they happened.
 */
struct rt_span_interval {
	uint64_t start_ns;
	uint64_t end_ns;
	uint8_t phase; /* enum rt_phase */
	uint8_t source; /* enum rt_phase_source */
};

/*
 * A stretch a thread ran on a CPU while it served the request. A shared
 * thread's slice appears in each request it served at the time (shared set);
 * its on_cpu_ns share is in threads[], the slice says when, not how much.
 */
struct rt_span_slice {
	uint64_t start_ns;
	uint64_t end_ns;
	uint32_t tid;
	bool shared;
};

struct rt_span_thread {
	uint32_t tid;
	char comm[RT_SPAN_COMM_MAX];
	int64_t on_cpu_ns;
	int64_t runq_ns;
	bool shared; /* served many requests: its time was split among them */
	bool pool; /* a compute-pool thread: its time here is an estimate (docs/spans.md) */
};

/*
 * Who the engine was working for when a compute pool's time was charged
 * (docs/spans.md, "Who the engine is working for"): the span's cpu.pool_by.
 */
enum rt_work_source {
	RT_WORK_NONE = 0, /* no pool time: null */
	RT_WORK_MARKER = 1, /* a marker step's members */
	RT_WORK_PACK = 2, /* an engine pack's step members */
	RT_WORK_ENGINE_SET = 3, /* the engine set (probes) */
	RT_WORK__COUNT = 4,
};

struct rt_span_cpu {
	int64_t on_cpu_ns; /* sums over threads */
	int64_t runq_ns;
	int64_t off_cpu_ns; /* exclusive threads' time bound to the request, neither on CPU nor runnable */
	/* compute-pool threads' on-CPU share, inside on_cpu_ns (an estimate); RT_NULL_NS: none */
	int64_t pool_ns;
	/* of pool_ns, spin between parallel regions; RT_NULL_NS: not told apart */
	int64_t pool_spin_ns;
	uint8_t pool_by; /* enum rt_work_source that gave most of pool_ns */
	int64_t pool_by_ns[RT_WORK__COUNT]; /* pool_ns by source, to name pool_by */
	uint32_t n_threads;
	uint32_t threads_dropped; /* threads beyond RT_SPAN_THREADS_MAX, counted into the sums */
	struct rt_span_thread threads[RT_SPAN_THREADS_MAX];
	uint32_t n_slices;
	uint32_t slices_dropped; /* slices beyond RT_SPAN_SLICES_MAX, not kept */
	struct rt_span_slice slices[RT_SPAN_SLICES_MAX];
};

/*
 * How a request's share of GPU work was decided (docs/gpu.md,
 * "Attribution"): the span's gpu.split. NONE: not known (null).
 */
enum rt_gpu_split {
	RT_GPU_SPLIT_NONE = 0,
	RT_GPU_SPLIT_TOKENS = 1, /* a marker or pack step with token counts: weighted by tokens */
	RT_GPU_SPLIT_MEMBERS = 2, /* marker owners (claims, step) or I/O owners, equally */
	RT_GPU_SPLIT_ENGINE_SET = 3, /* zero-code: the engine set, equally */
	RT_GPU_SPLIT__COUNT = 4,
};

struct rt_span_gpu {
	bool present; /* any GPU evidence at all; else the JSON object is null */
	uint8_t split; /* enum rt_gpu_split: the rule that gave most of it */
	int64_t kernel_ns; /* device time (CUPTI); RT_NULL_NS without CUPTI */
	int64_t memcpy_ns; /* device time (CUPTI); RT_NULL_NS without CUPTI */
	uint64_t h2d_bytes, d2h_bytes, p2p_bytes;
	int64_t sync_wait_ns; /* CPU blocked on the GPU */
	uint64_t launches;
	/* whole device time of the work it had a share of (CUPTI); RT_NULL_NS without */
	int64_t step_ns;
	uint64_t nccl_bytes; /* collectives' bytes from the NCCL call arguments (shares of) */
};

/*
 * What an engine pack saw of the request's engine steps (docs/spans.md,
 * "Packs"); present false: the JSON object is null.
 */
enum rt_pack_join {
	RT_PACK_JOIN_NONE = 0,
	RT_PACK_JOIN_HANDOFF = 1, /* its sequence went to the oldest tokenized request */
	RT_PACK_JOIN_ID_SLOT = 2, /* the response's id_slot agreed with the hand-off */
	RT_PACK_JOIN_MISMATCH = 3, /* the response's id_slot named another sequence */
};

struct rt_span_pack {
	bool present;
	int32_t seq; /* the engine's sequence id, -1: none joined */
	uint8_t join; /* enum rt_pack_join */
	uint32_t prefill_steps; /* steps that fed its prompt */
	uint32_t decode_steps; /* steps that advanced it after its prompt */
	uint64_t prompt_tokens; /* tokens of its prefill steps */
	uint32_t tokenize_calls;
};

/*
 * What a two-process engine's messages said of the request (docs/spans.md,
 * "vLLM"): the engine requests joined to it. present false: JSON null.
 */
#define RT_SPAN_ENGINE_ID_MAX 96
enum rt_engine_join {
	RT_ENGINE_JOIN_NONE = 0,
	RT_ENGINE_JOIN_RESPONSE_ID = 1, /* the response's id (SSE chunk or body) */
	RT_ENGINE_JOIN_HEADER = 2, /* the client's X-Request-Id */
};
struct rt_span_engine {
	bool present;
	char id[RT_SPAN_ENGINE_ID_MAX]; /* the first joined engine request's internal id */
	uint8_t join; /* enum rt_engine_join */
	uint32_t requests; /* engine requests joined (prompts, n>1 children) */
	uint32_t outputs; /* EngineCoreOutput messages with new tokens, all joined requests */
	uint64_t tokens; /* new tokens in them */
	int64_t prompt_tokens; /* from the ADD(s); -1: not known */
	bool events_present; /* QUEUED/SCHEDULED events were on the wire */
	int8_t finish_reason; /* -1: none seen; 0 stop, 1 length, 2 abort, 3 error */
	/* API-side stream cost: each output's receipt → the entry of the
	 * response write that carried it, summed; RT_NULL_NS: none */
	int64_t stream_ns;
	uint32_t stream_outputs; /* outputs in stream_ns */
};

struct rt_span_reported {
	char name[RT_SPAN_REPORTED_NAME_MAX];
	double value;
};

struct rt_span {
	char request_id[RT_SPAN_ID_MAX];
	char trace_id[33]; /* "" when absent */
	char parent_span_id[17]; /* "" when absent */
	char group[RT_SPAN_GROUP_MAX];
	uint32_t pid;
	char comm[RT_SPAN_COMM_MAX];
	char conn[RT_SPAN_CONN_MAX]; /* "client_ip:port->server_ip:port", "" unknown */
	char method[RT_SPAN_METHOD_MAX];
	char path[RT_SPAN_PATH_MAX];
	int status; /* 0: no response status seen */
	/* the response body's or first SSE event's top-level "id"
	 * ("chatcmpl-..."); "" when none was seen */
	char response_id[RT_SPAN_RESPONSE_ID_MAX];

	/* when the request's first bytes reached the server's socket (kernel
	 * receive path), 0: not observed; never after start_ns */
	uint64_t arrival_ns;
	uint64_t start_ns;
	uint64_t received_ns;
	uint64_t first_token_ns; /* 0: not streamed */
	uint64_t last_token_ns;
	uint64_t end_ns;

	uint32_t events_out;
	int64_t tokens_out; /* -1: not reported */
	bool streamed;

	bool itl_present;
	int64_t itl_p50_ns, itl_p99_ns, itl_max_ns;

	int64_t phase_ns[RT_PHASE__COUNT]; /* RT_NULL_NS: null */
	uint8_t phase_source[RT_PHASE__COUNT]; /* enum rt_phase_source */
	/* the phases' timeline, in start order; other (the remainder) has none */
	uint32_t n_intervals;
	uint32_t intervals_dropped; /* beyond RT_SPAN_INTERVALS_MAX, not kept */
	struct rt_span_interval intervals[RT_SPAN_INTERVALS_MAX];

	struct rt_span_cpu cpu;
	struct rt_span_gpu gpu;
	struct rt_span_pack pack;
	struct rt_span_engine engine;
	/* which source listed the request as a member of engine steps:
	 * RT_PSRC_MARKER, RT_PSRC_PACK (marker wins), RT_PSRC_NONE */
	uint8_t steps_source;

	uint32_t n_reported;
	struct rt_span_reported reported[RT_SPAN_REPORTED_MAX];

	uint8_t outcome; /* enum rt_outcome */
	uint32_t flags; /* RT_SPAN_* */
	uint32_t revision;
};

/* Name of a phase as used in JSON keys without the _ms suffix ("tokenize"). */
const char *rt_phase_name(enum rt_phase p);
const char *rt_outcome_name(enum rt_outcome o);
const char *rt_phase_source_name(enum rt_phase_source s);
/* "tokens", "members", "engine_set"; NULL for RT_GPU_SPLIT_NONE or out of range. */
const char *rt_gpu_split_name(unsigned int split);
/* The inverse of rt_gpu_split_name(); RT_GPU_SPLIT_NONE for NULL or an unknown name. */
unsigned int rt_gpu_split_parse(const char *name);
/* "marker", "pack", "engine_set"; NULL for RT_WORK_NONE or out of range. */
const char *rt_work_source_name(unsigned int src);
/* The inverse of rt_work_source_name(); RT_WORK_NONE for NULL or an unknown name. */
unsigned int rt_work_source_parse(const char *name);

/*
 * The server's own timings beside the observed phases (docs/spans.md,
 * "Server-reported vs observed"): llama.cpp's timings.prompt_ms and
 * timings.predicted_ms from server_reported, and the observed phase each is
 * compared with (prefill, else pre_first_token; decode). RT_NULL_NS: absent.
 */
struct rt_span_server_cmp {
	int64_t prompt_ns, predicted_ns;
	int64_t prefill_ns, decode_ns; /* observed */
	enum rt_phase prefill_phase; /* RT_PHASE_PREFILL or RT_PHASE_PRE_FIRST_TOKEN */
	int64_t prefill_diff_ns, decode_diff_ns; /* observed - reported */
};
/* False when the server reported neither figure. */
bool rt_span_server_cmp(const struct rt_span *s, struct rt_span_server_cmp *out);
/* "hand-off", "id_slot", "mismatch"; NULL for none. */
const char *rt_pack_join_name(unsigned int join);

/* Reset to "nothing observed": all phases null, tokens_out -1. */
void rt_span_init(struct rt_span *s);

/*
 * Where the span's time counts from: arrival_ns when observed, else
 * start_ns. duration_ms and ttft_ms count from here (docs/spans.md).
 */
uint64_t rt_span_origin_ns(const struct rt_span *s);
/* end_ns - origin (0 if end precedes it); RT_NULL_NS when the start was
 * not seen (origin 0: started_before_trace). */
int64_t rt_span_duration_ns(const struct rt_span *s);
/* first_token_ns - origin; RT_NULL_NS when not streamed or origin 0. */
int64_t rt_span_ttft_ns(const struct rt_span *s);

#endif /* RT_SPAN_H */
