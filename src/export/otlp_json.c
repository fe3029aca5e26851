// SPDX-License-Identifier: BSD-2-Clause
/*
 * OTLP/JSON encoder (otlp_json.h, docs/otlp.md). Written with rt_jsonw, not
 * cJSON: instants need all 64 bits, which a double does not hold.
 */
#include "export/otlp_json.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "export/prom.h"

#define KIND_INTERNAL 1
#define KIND_SERVER 2
#define STATUS_ERROR 2
#define BODY_MAX (64u << 20)

/* child id tags: which child of a request an id belongs to */
#define TAG_TRACE_HI 1
#define TAG_TRACE_LO 2
#define TAG_SPAN 3
#define TAG_INTERVAL (1ULL << 32)
#define TAG_THREAD (2ULL << 32)
#define TAG_SLICE (3ULL << 32)

static uint64_t fmix(uint64_t z)
{
	/* splitmix64's finaliser: every input bit reaches every output bit */
	z ^= z >> 30;
	z *= 0xbf58476d1ce4e5b9ULL;
	z ^= z >> 27;
	z *= 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t process_seed(void)
{
	static _Atomic uint64_t seed;
	uint64_t s = atomic_load(&seed);
	struct timespec ts;

	if (s)
		return s;
	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		/* no entropy yet (early boot): unique enough per process and start */
		clock_gettime(CLOCK_REALTIME, &ts);
		s = fmix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
			 ((uint64_t)getpid() << 40));
	}
	s |= 1; /* 0 means "not drawn yet" */
	atomic_store(&seed, s);
	return s;
}

/* What makes a request itself: its process, id and start. */
static uint64_t span_base(const struct rt_span *s, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (seed ? seed : process_seed());

	h = fnv(h, &s->pid, sizeof(s->pid));
	h = fnv(h, &s->start_ns, sizeof(s->start_ns));
	if (!s->start_ns) /* started before the trace: its end tells it from others */
		h = fnv(h, &s->end_ns, sizeof(s->end_ns));
	h = fnv(h, s->request_id, strnlen(s->request_id, sizeof(s->request_id)));
	return h;
}

static uint64_t nonzero(uint64_t v)
{
	return v ? v : 1; /* all-zero ids are invalid (W3C trace context) */
}

static void hex64(char *out, uint64_t v)
{
	snprintf(out, 17, "%016" PRIx64, v);
}

void rt_otlp_span_ids(const struct rt_span *s, uint64_t seed, char trace_id[33], char span_id[17])
{
	uint64_t b = span_base(s, seed);
	uint64_t hi = fmix(b ^ TAG_TRACE_HI), lo = fmix(b ^ TAG_TRACE_LO);

	if (!hi && !lo)
		lo = 1;
	hex64(trace_id, hi);
	hex64(trace_id + 16, lo);
	hex64(span_id, nonzero(fmix(b ^ TAG_SPAN)));
}

static int64_t ts_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t rt_otlp_epoch_offset_ns(void)
{
	int64_t best_gap = INT64_MAX, best = 0;
	int i;

	/* mono read on both sides of the realtime read: the realtime sample sits
	 * within the bracket, and the narrowest bracket bounds the error best */
	for (i = 0; i < 3; i++) {
		int64_t m0 = ts_ns(CLOCK_MONOTONIC);
		int64_t r = ts_ns(CLOCK_REALTIME);
		int64_t m1 = ts_ns(CLOCK_MONOTONIC);

		if (m1 - m0 < best_gap) {
			best_gap = m1 - m0;
			best = r - (m0 + (m1 - m0) / 2);
		}
	}
	return best;
}

/* ---- attributes ---- */

static void kv_open(struct rt_jsonw *w, const char *key, const char *type)
{
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "key");
	rt_jsonw_str_val(w, key);
	rt_jsonw_key(w, "value");
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, type);
}

static void kv_close(struct rt_jsonw *w)
{
	rt_jsonw_obj_close(w);
	rt_jsonw_obj_close(w);
}

static void attr_str(struct rt_jsonw *w, const char *key, const char *v)
{
	kv_open(w, key, "stringValue");
	rt_jsonw_str_val(w, v);
	kv_close(w);
}

/* intValue is an int64: a decimal string in OTLP/JSON */
static void attr_int(struct rt_jsonw *w, const char *key, int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRId64, v);
	kv_open(w, key, "intValue");
	rt_jsonw_str_val(w, b);
	kv_close(w);
}

static void attr_dbl(struct rt_jsonw *w, const char *key, double v)
{
	kv_open(w, key, "doubleValue");
	rt_jsonw_num(w, v, 9);
	kv_close(w);
}

static void attr_bool(struct rt_jsonw *w, const char *key, bool v)
{
	kv_open(w, key, "boolValue");
	rt_jsonw_bool(w, v);
	kv_close(w);
}

static void attr_secs(struct rt_jsonw *w, const char *key, int64_t ns)
{
	if (ns != RT_NULL_NS)
		attr_dbl(w, key, (double)ns / 1e9);
}

static void key_nanos(struct rt_jsonw *w, const char *key, uint64_t mono, int64_t off)
{
	char b[24];
	int64_t v = (int64_t)mono + off;

	snprintf(b, sizeof(b), "%" PRId64, v > 0 ? v : 0);
	rt_jsonw_key(w, key);
	rt_jsonw_str_val(w, b);
}

/* ---- the request span ---- */

static double reported(const struct rt_span *s, const char *const *names, bool *found)
{
	uint32_t i, k;

	for (k = 0; names[k]; k++)
		for (i = 0; i < s->n_reported && i < RT_SPAN_REPORTED_MAX; i++)
			if (!strcmp(s->reported[i].name, names[k])) {
				*found = true;
				return s->reported[i].value;
			}
	*found = false;
	return 0;
}

/* "client_ip:port->server_ip:port" into the semconv address attributes */
static void conn_attrs(struct rt_jsonw *w, const char *conn)
{
	const char *arrow = strstr(conn, "->");
	const char *ends[2] = { conn, arrow ? arrow + 2 : NULL };
	const char *names[2][2] = { { "client.address", "client.port" },
				    { "server.address", "server.port" } };
	char host[RT_SPAN_CONN_MAX];
	int i;

	if (!arrow)
		return;
	for (i = 0; i < 2; i++) {
		size_t n = i ? strlen(ends[1]) : (size_t)(arrow - conn);
		const char *colon;

		memcpy(host, ends[i], n);
		host[n] = '\0';
		colon = strrchr(host, ':');
		if (!colon || colon == host)
			continue;
		host[colon - host] = '\0';
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {
			memmove(host, host + 1, strlen(host));
			host[strlen(host) - 1] = '\0';
		}
		attr_str(w, names[i][0], host);
		attr_int(w, names[i][1], strtoll(colon + 1, NULL, 10));
	}
}

static void request_attrs(struct rt_jsonw *w, const struct rt_span *s)
{
	static const char *const in_names[] = { "usage.prompt_tokens", "usage.input_tokens",
						"tokens_evaluated", NULL };
	static const char *const out_names[] = { "usage.completion_tokens", "usage.output_tokens",
						 "tokens_predicted", NULL };
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
	char key[96], path[RT_SPAN_PATH_MAX];
	const char *op, *q;
	bool found;
	double v;
	uint32_t i;
	int p;

	rt_jsonw_key(w, "attributes");
	rt_jsonw_arr_open(w);
	if (s->method[0])
		attr_str(w, "http.request.method", s->method);
	if (s->path[0]) {
		q = strchr(s->path, '?');
		snprintf(path, sizeof(path), "%.*s", q ? (int)(q - s->path) : (int)strlen(s->path),
			 s->path);
		attr_str(w, "url.path", path);
		if (q && q[1])
			attr_str(w, "url.query", q + 1);
	}
	if (s->status)
		attr_int(w, "http.response.status_code", s->status);
	conn_attrs(w, s->conn);

	/* the same mapping as the metrics' operation label */
	op = rt_prom_operation(s->path);
	if (strcmp(op, "unknown"))
		attr_str(w, "gen_ai.operation.name", op);
	if (s->response_id[0])
		attr_str(w, "gen_ai.response.id", s->response_id);
	v = reported(s, in_names, &found);
	if (found)
		attr_int(w, "gen_ai.usage.input_tokens", (int64_t)v);
	v = reported(s, out_names, &found);
	if (found)
		attr_int(w, "gen_ai.usage.output_tokens", (int64_t)v);
	else if (s->tokens_out >= 0)
		attr_int(w, "gen_ai.usage.output_tokens", s->tokens_out);
	/* the de-facto latency attributes (vLLM's), in seconds */
	attr_secs(w, "gen_ai.latency.time_in_queue", s->phase_ns[RT_PHASE_QUEUE]);
	attr_secs(w, "gen_ai.latency.time_to_first_token", rt_span_ttft_ns(s));
	if (s->end_ns)
		attr_secs(w, "gen_ai.latency.e2e", rt_span_duration_ns(s));
	attr_secs(w, "gen_ai.latency.time_in_model_prefill", s->phase_ns[RT_PHASE_PREFILL]);
	attr_secs(w, "gen_ai.latency.time_in_model_decode", s->phase_ns[RT_PHASE_DECODE]);

	attr_str(w, "reqtrace.request_id", s->request_id);
	if (s->group[0])
		attr_str(w, "reqtrace.group", s->group);
	attr_str(w, "reqtrace.outcome", rt_outcome_name((enum rt_outcome)s->outcome));
	kv_open(w, "reqtrace.flags", "arrayValue");
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "values");
	rt_jsonw_arr_open(w);
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (s->flags & flags[i].bit) {
			rt_jsonw_obj_open(w);
			rt_jsonw_key(w, "stringValue");
			rt_jsonw_str_val(w, flags[i].name);
			rt_jsonw_obj_close(w);
		}
	rt_jsonw_arr_close(w);
	rt_jsonw_obj_close(w);
	kv_close(w);
	attr_bool(w, "reqtrace.streamed", s->streamed);
	attr_int(w, "reqtrace.revision", s->revision);
	for (p = 0; p < RT_PHASE__COUNT; p++) {
		const char *src = rt_phase_source_name((enum rt_phase_source)s->phase_source[p]);

		if (s->phase_ns[p] == RT_NULL_NS)
			continue;
		snprintf(key, sizeof(key), "reqtrace.phase.%s", rt_phase_name((enum rt_phase)p));
		attr_secs(w, key, s->phase_ns[p]);
		if (src) {
			snprintf(key, sizeof(key), "reqtrace.phase.%s.source",
				 rt_phase_name((enum rt_phase)p));
			attr_str(w, key, src);
		}
	}
	if (s->itl_present) {
		attr_secs(w, "reqtrace.itl.p50", s->itl_p50_ns);
		attr_secs(w, "reqtrace.itl.p99", s->itl_p99_ns);
		attr_secs(w, "reqtrace.itl.max", s->itl_max_ns);
	}
	attr_secs(w, "reqtrace.cpu.on_cpu", s->cpu.on_cpu_ns);
	attr_secs(w, "reqtrace.cpu.runq", s->cpu.runq_ns);
	attr_secs(w, "reqtrace.cpu.off_cpu", s->cpu.off_cpu_ns);
	if (s->gpu.present) {
		attr_secs(w, "reqtrace.gpu.kernel", s->gpu.kernel_ns);
		attr_secs(w, "reqtrace.gpu.memcpy", s->gpu.memcpy_ns);
		attr_secs(w, "reqtrace.gpu.sync_wait", s->gpu.sync_wait_ns);
		attr_int(w, "reqtrace.gpu.launches", (int64_t)s->gpu.launches);
		attr_int(w, "reqtrace.gpu.h2d_bytes", (int64_t)s->gpu.h2d_bytes);
		attr_int(w, "reqtrace.gpu.d2h_bytes", (int64_t)s->gpu.d2h_bytes);
		attr_int(w, "reqtrace.gpu.p2p_bytes", (int64_t)s->gpu.p2p_bytes);
	}
	for (i = 0; i < s->n_reported && i < RT_SPAN_REPORTED_MAX; i++) {
		snprintf(key, sizeof(key), "reqtrace.server_reported.%s", s->reported[i].name);
		attr_dbl(w, key, s->reported[i].value);
	}
	if (s->intervals_dropped)
		attr_int(w, "reqtrace.intervals_dropped", s->intervals_dropped);
	if (s->cpu.slices_dropped)
		attr_int(w, "reqtrace.cpu.slices_dropped", s->cpu.slices_dropped);
	rt_jsonw_arr_close(w);
}

struct ids {
	char trace[33];
	char parent[17]; /* "" root */
	char self[17];
};

static void span_head(struct rt_jsonw *w, const struct ids *id, const char *name, int kind,
		      uint64_t start, uint64_t end, int64_t off)
{
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "traceId");
	rt_jsonw_str_val(w, id->trace);
	rt_jsonw_key(w, "spanId");
	rt_jsonw_str_val(w, id->self);
	if (id->parent[0]) {
		rt_jsonw_key(w, "parentSpanId");
		rt_jsonw_str_val(w, id->parent);
	}
	rt_jsonw_key(w, "name");
	rt_jsonw_str_val(w, name);
	rt_jsonw_key(w, "kind");
	rt_jsonw_int(w, kind);
	key_nanos(w, "startTimeUnixNano", start, off);
	key_nanos(w, "endTimeUnixNano", end < start ? start : end, off);
}

static void child_id(struct ids *c, const struct ids *parent, uint64_t base, uint64_t tag)
{
	memcpy(c->trace, parent->trace, sizeof(c->trace));
	memcpy(c->parent, parent->self, sizeof(c->parent));
	hex64(c->self, nonzero(fmix(base ^ tag)));
}

static bool hex_ok(const char *s, size_t n)
{
	size_t i;
	bool nonzero_digit = false;

	for (i = 0; i < n; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return false;
		nonzero_digit |= s[i] != '0';
	}
	return s[n] == '\0' && nonzero_digit;
}

static void thread_spans(struct rt_jsonw *w, const struct rt_span *s, const struct ids *req,
			 uint64_t base, int64_t off)
{
	uint32_t n = s->cpu.n_slices < RT_SPAN_SLICES_MAX ? s->cpu.n_slices : RT_SPAN_SLICES_MAX;
	uint32_t i, j, k;
	char name[64];

	for (i = 0; i < n; i++) {
		const struct rt_span_slice *a = &s->cpu.slices[i];
		const struct rt_span_thread *th = NULL;
		uint64_t start = a->start_ns, end = a->end_ns;
		struct ids tid_ids, sl_ids;

		for (j = 0; j < i; j++)
			if (s->cpu.slices[j].tid == a->tid)
				break;
		if (j < i)
			continue; /* this thread was drawn at its first slice */
		for (j = i; j < n; j++) {
			if (s->cpu.slices[j].tid != a->tid)
				continue;
			if (s->cpu.slices[j].start_ns < start)
				start = s->cpu.slices[j].start_ns;
			if (s->cpu.slices[j].end_ns > end)
				end = s->cpu.slices[j].end_ns;
		}
		for (k = 0; k < s->cpu.n_threads && k < RT_SPAN_THREADS_MAX; k++)
			if (s->cpu.threads[k].tid == a->tid)
				th = &s->cpu.threads[k];
		child_id(&tid_ids, req, base, TAG_THREAD | a->tid);
		snprintf(name, sizeof(name), "thread %s", th && th->comm[0] ? th->comm : "?");
		span_head(w, &tid_ids, name, KIND_INTERNAL, start, end, off);
		rt_jsonw_key(w, "attributes");
		rt_jsonw_arr_open(w);
		attr_int(w, "thread.id", a->tid);
		if (th) {
			if (th->comm[0])
				attr_str(w, "thread.name", th->comm);
			attr_secs(w, "reqtrace.cpu.on_cpu", th->on_cpu_ns);
			attr_secs(w, "reqtrace.cpu.runq", th->runq_ns);
			attr_bool(w, "reqtrace.cpu.shared", th->shared);
		}
		rt_jsonw_arr_close(w);
		rt_jsonw_obj_close(w);
		for (j = i; j < n; j++) {
			const struct rt_span_slice *b = &s->cpu.slices[j];

			if (b->tid != a->tid)
				continue;
			child_id(&sl_ids, &tid_ids, base, TAG_SLICE | j);
			span_head(w, &sl_ids, "on_cpu", KIND_INTERNAL, b->start_ns, b->end_ns, off);
			rt_jsonw_key(w, "attributes");
			rt_jsonw_arr_open(w);
			attr_int(w, "thread.id", b->tid);
			attr_bool(w, "reqtrace.cpu.shared", b->shared);
			rt_jsonw_arr_close(w);
			rt_jsonw_obj_close(w);
		}
	}
}

static void request_spans(struct rt_jsonw *w, const struct rt_span *s, uint64_t seed, int64_t off)
{
	uint64_t base = span_base(s, seed);
	uint64_t start = rt_span_origin_ns(s), end = s->end_ns;
	struct ids req, c;
	char name[RT_SPAN_METHOD_MAX + RT_SPAN_PATH_MAX + 2];
	uint32_t i, n;

	rt_otlp_span_ids(s, seed, req.trace, req.self);
	req.parent[0] = '\0';
	/* an incoming traceparent: the request continues the caller's trace */
	if (hex_ok(s->trace_id, 32)) {
		memcpy(req.trace, s->trace_id, sizeof(req.trace));
		if (hex_ok(s->parent_span_id, 16))
			memcpy(req.parent, s->parent_span_id, sizeof(req.parent));
	}
	if (!end) /* not finished (exported as incomplete): up to what was seen */
		end = s->last_token_ns > s->received_ns ? s->last_token_ns : s->received_ns;
	/* started before the trace: OTLP wants a start, the unknown one is not
	 * guessed; the span is a point at its end, flagged started_before_trace */
	if (!start)
		start = end;
	snprintf(name, sizeof(name), "%s%s%.*s", s->method[0] ? s->method : "HTTP",
		 s->path[0] ? " " : "", (int)strcspn(s->path, "?"), s->path);
	span_head(w, &req, name, KIND_SERVER, start, end, off);
	request_attrs(w, s);
	if (s->status >= 500 || s->outcome == RT_OUTCOME_ERROR ||
	    s->outcome == RT_OUTCOME_SERVER_EXIT || s->outcome == RT_OUTCOME_TIMEOUT) {
		rt_jsonw_key(w, "status");
		rt_jsonw_obj_open(w);
		rt_jsonw_key(w, "code");
		rt_jsonw_int(w, STATUS_ERROR);
		rt_jsonw_key(w, "message");
		rt_jsonw_str_val(w, s->status >= 500 ?
					    "HTTP 5xx" :
					    rt_outcome_name((enum rt_outcome)s->outcome));
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_obj_close(w);

	n = s->n_intervals < RT_SPAN_INTERVALS_MAX ? s->n_intervals : RT_SPAN_INTERVALS_MAX;
	for (i = 0; i < n; i++) {
		const struct rt_span_interval *iv = &s->intervals[i];
		const char *src = rt_phase_source_name((enum rt_phase_source)iv->source);

		child_id(&c, &req, base, TAG_INTERVAL | i);
		span_head(w, &c, rt_phase_name((enum rt_phase)iv->phase), KIND_INTERNAL,
			  iv->start_ns, iv->end_ns, off);
		rt_jsonw_key(w, "attributes");
		rt_jsonw_arr_open(w);
		attr_str(w, "reqtrace.phase", rt_phase_name((enum rt_phase)iv->phase));
		if (src)
			attr_str(w, "reqtrace.phase.source", src);
		rt_jsonw_arr_close(w);
		rt_jsonw_obj_close(w);
	}
	thread_spans(w, s, &req, base, off);
}

/* ---- resource ---- */

static void resource(struct rt_jsonw *w, const struct rt_span *s,
		     const struct rt_otlp_resource *res)
{
	struct rt_otlp_proc proc = { 0 };
	size_t i;

	rt_jsonw_key(w, "resource");
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "attributes");
	rt_jsonw_arr_open(w);
	if (res && res->service_name && res->service_name[0])
		attr_str(w, "service.name", res->service_name);
	else if (s->comm[0])
		attr_str(w, "service.name", s->comm);
	else
		attr_str(w, "service.name", "unknown_service");
	if (res && res->host_name && res->host_name[0])
		attr_str(w, "host.name", res->host_name);
	if (s->pid)
		attr_int(w, "process.pid", s->pid);
	if (s->comm[0])
		attr_str(w, "process.executable.name", s->comm);
	if (res && res->proc_info && s->pid && !res->proc_info(s->pid, &proc, res->ctx)) {
		if (proc.container_id[0])
			attr_str(w, "container.id", proc.container_id);
		if (proc.pod_uid[0])
			attr_str(w, "k8s.pod.uid", proc.pod_uid);
	}
	for (i = 0; res && i < res->n_extra; i++)
		attr_str(w, res->extra[i].key, res->extra[i].value);
	rt_jsonw_arr_close(w);
	rt_jsonw_obj_close(w);
}

int rt_otlp_json_encode(struct rt_jsonw *w, const struct rt_span *spans, size_t n,
			const struct rt_otlp_resource *res)
{
	int64_t off = res && res->have_offset ? res->epoch_offset_ns : rt_otlp_epoch_offset_ns();
	uint64_t seed = res ? res->id_seed : 0;
	size_t i, j;

	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "resourceSpans");
	rt_jsonw_arr_open(w);
	/* one ResourceSpans per traced process, in order of first appearance */
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			if (spans[j].pid == spans[i].pid)
				break;
		if (j < i)
			continue;
		rt_jsonw_obj_open(w);
		resource(w, &spans[i], res);
		rt_jsonw_key(w, "scopeSpans");
		rt_jsonw_arr_open(w);
		rt_jsonw_obj_open(w);
		rt_jsonw_key(w, "scope");
		rt_jsonw_obj_open(w);
		rt_jsonw_key(w, "name");
		rt_jsonw_str_val(w, "reqtrace");
		rt_jsonw_key(w, "version");
		rt_jsonw_str_val(w, RT_VERSION);
		rt_jsonw_obj_close(w);
		rt_jsonw_key(w, "spans");
		rt_jsonw_arr_open(w);
		for (j = i; j < n; j++)
			if (spans[j].pid == spans[i].pid)
				request_spans(w, &spans[j], seed, off);
		rt_jsonw_arr_close(w);
		rt_jsonw_obj_close(w);
		rt_jsonw_arr_close(w);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	rt_jsonw_obj_close(w);
	return rt_jsonw_ok(w) ? 0 : -E2BIG;
}

int rt_otlp_json_write(FILE *f, const struct rt_span *spans, size_t n,
		       const struct rt_otlp_resource *res)
{
	struct rt_jsonw w;
	int err;

	rt_jsonw_init(&w, BODY_MAX);
	err = rt_otlp_json_encode(&w, spans, n, res);
	if (err)
		goto cleanup;
	if (fputs(rt_jsonw_str(&w), f) == EOF || fputc('\n', f) == EOF)
		err = -EIO;
cleanup:
	rt_jsonw_fini(&w);
	return err;
}

/* ---- container identity ---- */

int rt_otlp_proc_from_cgroup(const char *text, struct rt_otlp_proc *out)
{
	const char *p, *pod;
	size_t run, i;

	memset(out, 0, sizeof(*out));
	/* the last run of exactly 64 hex digits: docker-<id>.scope, cri-containerd-<id>,
	 * crio-<id>, /docker/<id> all end the path with the container's id */
	for (p = text; *p; p++) {
		if (!isxdigit((unsigned char)*p) || (p > text && isxdigit((unsigned char)p[-1])))
			continue;
		for (run = 0; isxdigit((unsigned char)p[run]); run++)
			;
		if (run == 64) {
			for (i = 0; i < 64; i++)
				out->container_id[i] = (char)tolower((unsigned char)p[i]);
			out->container_id[64] = '\0';
		}
	}
	/* kubepods-burstable-pod<uid with _>.slice or /kubepods/burstable/pod<uid>/ */
	pod = strstr(text, "pod");
	while (pod) {
		const char *u = pod + 3;

		for (run = 0; run < 36 &&
			      (isxdigit((unsigned char)u[run]) || u[run] == '-' || u[run] == '_');
		     run++)
			;
		if (run == 36 && (u[8] == '-' || u[8] == '_')) {
			for (i = 0; i < 36; i++)
				out->pod_uid[i] =
					u[i] == '_' ? '-' : (char)tolower((unsigned char)u[i]);
			out->pod_uid[36] = '\0';
			break;
		}
		pod = strstr(pod + 3, "pod");
	}
	return out->container_id[0] || out->pod_uid[0] ? 0 : -ENOENT;
}
