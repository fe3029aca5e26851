// SPDX-License-Identifier: BSD-2-Clause
/*
 * Prometheus text exposition 0.0.4 (the format Prometheus 2.x scrapes):
 * https://prometheus.io/docs/instrumenting/exposition_formats/
 *
 * Tables are fixed at creation: RT_PROM_GROUPS_MAX groups (+ "other"),
 * RT_PROM_PATHS_MAX paths (+ "other"), a fixed set of operations and
 * phases. A scrape never sees a label made of a request id, a thread id or
 * an unbounded string.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export/prom.h"

/*
 * OpenTelemetry GenAI semantic conventions, "Generative AI model server
 * metrics" (docs/gen-ai/gen-ai-metrics.md in open-telemetry/semantic-conventions):
 * each metric "SHOULD be specified with ExplicitBucketBoundaries of" these.
 */
static const double ttft_bounds[] = { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
				      0.25,  0.5,   0.75, 1.0,	2.5,  5.0,  7.5,  10.0 };
static const double dur_bounds[] = { 0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
				     1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92 };
static const double tpot_bounds[] = { 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
				      0.3,  0.4,   0.5,	 0.75,	1.0, 2.5 };
/* ours: phases run from tens of microseconds (tokenize) to minutes (queue) */
static const double phase_bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
				       0.01,   0.025,	0.05,	0.1,   0.25,   0.5,
				       1.0,    2.5,	5.0,	10.0,  30.0,   60.0 };

#define NB(a) (sizeof(a) / sizeof((a)[0]))
#define BUCKETS_MAX 18

enum op { OP_CHAT, OP_TEXT, OP_EMBED, OP_UNKNOWN, OP__COUNT };
static const char *const op_names[OP__COUNT] = { "chat", "text_completion", "embeddings",
						 "unknown" };
#define OUTCOMES 5 /* enum rt_outcome */
#define G (RT_PROM_GROUPS_MAX + 1) /* + "other" */
#define P (RT_PROM_PATHS_MAX + 1)

struct hist {
	uint64_t count;
	double sum;
	uint64_t n
		[BUCKETS_MAX]; /* per bucket, not cumulative; above the last bound: count - sum(n) */
};

struct rt_prom {
	uint32_t n_groups, n_paths;
	char groups[RT_PROM_GROUPS_MAX][RT_SPAN_GROUP_MAX];
	char paths[RT_PROM_PATHS_MAX][RT_PROM_PATH_LEN];
	struct hist ttft[G][OP__COUNT], dur[G][OP__COUNT], tpot[G][OP__COUNT];
	struct hist phase[G][RT_PHASE__COUNT];
	uint64_t requests[G][P][OUTCOMES];
};

struct rt_prom *rt_prom__new(void)
{
	return calloc(1, sizeof(struct rt_prom));
}

void rt_prom__free(struct rt_prom *p)
{
	free(p);
}

static void observe(struct hist *h, const double *bounds, size_t nb, double v)
{
	size_t i;

	h->count++;
	h->sum += v;
	for (i = 0; i < nb; i++) {
		if (v <= bounds[i]) { /* Prometheus buckets are upper-inclusive ("le") */
			h->n[i]++;
			return;
		}
	}
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static enum op op_of(const char *path)
{
	size_t len = strcspn(path, "?#");

	/* OpenAI-compatible servers (vLLM, SGLang, llama.cpp, TGI's /v1), TGI's
	 * own /generate, Ollama's /api/... */
	if (ends_with(path, len, "/chat/completions") || ends_with(path, len, "/api/chat"))
		return OP_CHAT;
	if (ends_with(path, len, "/completions") || ends_with(path, len, "/generate") ||
	    ends_with(path, len, "/generate_stream"))
		return OP_TEXT;
	if (ends_with(path, len, "/embeddings") || ends_with(path, len, "/api/embed") ||
	    ends_with(path, len, "/embed"))
		return OP_EMBED;
	return OP_UNKNOWN;
}

const char *rt_prom_operation(const char *path)
{
	return op_names[op_of(path)];
}

static uint32_t group_slot(struct rt_prom *p, const char *group)
{
	uint32_t i;

	for (i = 0; i < p->n_groups; i++)
		if (!strncmp(p->groups[i], group, RT_SPAN_GROUP_MAX))
			return i;
	if (p->n_groups == RT_PROM_GROUPS_MAX)
		return RT_PROM_GROUPS_MAX;
	snprintf(p->groups[p->n_groups], RT_SPAN_GROUP_MAX, "%s", group);
	return p->n_groups++;
}

/*
 * Paths come from clients: only a path that got a 2xx answer may take one
 * of the slots, so a scanner's 404s cannot fill the table.
 */
static uint32_t path_slot(struct rt_prom *p, const struct rt_span *s)
{
	size_t len = strcspn(s->path, "?#");
	uint32_t i;

	if (!len || len >= RT_PROM_PATH_LEN)
		return RT_PROM_PATHS_MAX;
	for (i = 0; i < p->n_paths; i++)
		if (strlen(p->paths[i]) == len && !memcmp(p->paths[i], s->path, len))
			return i;
	if (p->n_paths == RT_PROM_PATHS_MAX || s->status < 200 || s->status > 299)
		return RT_PROM_PATHS_MAX;
	memcpy(p->paths[p->n_paths], s->path, len);
	p->paths[p->n_paths][len] = '\0';
	return p->n_paths++;
}

void rt_prom__observe(struct rt_prom *p, const struct rt_span *s)
{
	uint32_t g, path;
	enum op op;
	int64_t ttft, dur;
	int i;

	if (s->revision)
		return;
	g = group_slot(p, s->group);
	path = path_slot(p, s);
	op = op_of(s->path);
	if (s->outcome < OUTCOMES)
		p->requests[g][path][s->outcome]++;

	dur = rt_span_duration_ns(s);
	if (s->end_ns && dur != RT_NULL_NS) /* else started before the trace */
		observe(&p->dur[g][op], dur_bounds, NB(dur_bounds), (double)dur / 1e9);
	/* TTFT and TPOT are defined "for successful responses" */
	ttft = rt_span_ttft_ns(s);
	if (s->outcome == RT_OUTCOME_OK && ttft != RT_NULL_NS && ttft >= 0) {
		observe(&p->ttft[g][op], ttft_bounds, NB(ttft_bounds), (double)ttft / 1e9);
		/* (duration - ttft) / tokens after the first, tokens as the server reported */
		if (s->tokens_out > 1 && s->end_ns >= s->first_token_ns)
			observe(&p->tpot[g][op], tpot_bounds, NB(tpot_bounds),
				(double)(s->end_ns - s->first_token_ns) / 1e9 /
					(double)(s->tokens_out - 1));
	}
	for (i = 0; i < RT_PHASE__COUNT; i++)
		if (s->phase_ns[i] != RT_NULL_NS && s->phase_ns[i] >= 0)
			observe(&p->phase[g][i], phase_bounds, NB(phase_bounds),
				(double)s->phase_ns[i] / 1e9);
}

/* Label values: backslash, double quote and line feed escaped (0.0.4). */
static void label(FILE *f, const char *name, const char *v, bool comma)
{
	fprintf(f, "%s%s=\"", comma ? "," : "", name);
	for (; *v; v++) {
		if (*v == '\\')
			fputs("\\\\", f);
		else if (*v == '"')
			fputs("\\\"", f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static const char *group_name(const struct rt_prom *p, uint32_t g)
{
	return g < p->n_groups ? p->groups[g] : "other";
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* labels: already-written text between the braces, without "le" */
static void hist_lines(FILE *f, const char *name, const char *labels, const struct hist *h,
		       const double *bounds, size_t nb)
{
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i < nb; i++) {
		cum += h->n[i];
		fprintf(f, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, bounds[i],
			(unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
	fprintf(f, "%s_sum{%s} %.9g\n", name, labels, h->sum);
	fprintf(f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

/* The label text of one series into buf (bounded: the values are). */
static const char *labels_of(char *buf, size_t len, const char *const *kv, int n)
{
	FILE *f = fmemopen(buf, len, "w");
	int i;

	if (!f) {
		buf[0] = '\0';
		return buf;
	}
	for (i = 0; i < n; i++)
		label(f, kv[2 * i], kv[2 * i + 1], i > 0);
	fclose(f);
	buf[len - 1] = '\0';
	return buf;
}

static void genai_family(const struct rt_prom *p, FILE *f, const char *name, const char *help,
			 const struct hist (*h)[OP__COUNT], const double *bounds, size_t nb)
{
	char lb[512];
	uint32_t g;
	int op;

	head(f, name, "histogram", help);
	for (g = 0; g < G; g++) {
		for (op = 0; op < OP__COUNT; op++) {
			const char *kv[] = { "gen_ai_operation_name", op_names[op],
					     "gen_ai_provider_name",  "unknown",
					     "reqtrace_group",	      group_name(p, g) };

			if (!h[g][op].count)
				continue;
			hist_lines(f, name, labels_of(lb, sizeof(lb), kv, 3), &h[g][op], bounds,
				   nb);
		}
	}
}

static void counters(FILE *f, const char *name, const char *help, const char *key,
		     const struct rt_prom_kv *kv, uint32_t n)
{
	char lb[256];
	uint32_t i;

	head(f, name, "counter", help);
	for (i = 0; i < n; i++) {
		const char *l[] = { key, kv[i].name };

		fprintf(f, "%s{%s} %llu\n", name, labels_of(lb, sizeof(lb), l, 1),
			(unsigned long long)kv[i].value);
	}
}

int rt_prom__write(const struct rt_prom *p, const struct rt_prom_extra *x, FILE *f)
{
	char lb[512], dev[16];
	uint32_t g, i, o;
	int ph;

	genai_family(p, f, "gen_ai_server_time_to_first_token_seconds",
		     "Time to generate the first token, successful streamed responses "
		     "(OpenTelemetry gen_ai.server.time_to_first_token).",
		     p->ttft, ttft_bounds, NB(ttft_bounds));
	genai_family(p, f, "gen_ai_server_request_duration_seconds",
		     "Request duration, arrival to last byte "
		     "(OpenTelemetry gen_ai.server.request.duration).",
		     p->dur, dur_bounds, NB(dur_bounds));
	genai_family(p, f, "gen_ai_server_time_per_output_token_seconds",
		     "Time per output token after the first, where the server reported "
		     "token counts (OpenTelemetry gen_ai.server.time_per_output_token).",
		     p->tpot, tpot_bounds, NB(tpot_bounds));

	head(f, "reqtrace_phase_seconds", "histogram",
	     "Time of each request phase that was observed (docs/spans.md).");
	for (g = 0; g < G; g++) {
		for (ph = 0; ph < RT_PHASE__COUNT; ph++) {
			const char *kv[] = { "phase", rt_phase_name(ph), "reqtrace_group",
					     group_name(p, g) };

			if (!p->phase[g][ph].count)
				continue;
			hist_lines(f, "reqtrace_phase_seconds", labels_of(lb, sizeof(lb), kv, 2),
				   &p->phase[g][ph], phase_bounds, NB(phase_bounds));
		}
	}

	head(f, "reqtrace_requests_total", "counter", "Finished requests by outcome.");
	for (g = 0; g < G; g++) {
		for (i = 0; i < P; i++) {
			for (o = 0; o < OUTCOMES; o++) {
				const char *kv[] = {
					"outcome",	  rt_outcome_name(o),
					"path",		  i < p->n_paths ? p->paths[i] : "other",
					"reqtrace_group", group_name(p, g)
				};

				if (!p->requests[g][i][o])
					continue;
				fprintf(f, "reqtrace_requests_total{%s} %llu\n",
					labels_of(lb, sizeof(lb), kv, 3),
					(unsigned long long)p->requests[g][i][o]);
			}
		}
	}

	if (x) {
		counters(f, "reqtrace_events_total", "Records taken in, by source.", "source",
			 x->events, x->n_events);
		counters(f, "reqtrace_dropped_total",
			 "What each bounded stage had to drop (the status command's \"drops\").",
			 "stage", x->drops, x->n_drops);
		if (x->n_exported)
			counters(f, "reqtrace_exported_spans_total",
				 "Request spans each exporter delivered (OTLP: the collector "
				 "answered 2xx; JSONL: lines written whole).",
				 "exporter", x->exported, x->n_exported);
		if (x->gpu_known) {
			head(f, "reqtrace_gpu_busy_seconds_total", "counter",
			     "Union of kernel intervals per device, across its streams and "
			     "processes, since its first kernel.");
			for (i = 0; i < x->n_gpu; i++) {
				const char *kv[] = { "device", dev };

				snprintf(dev, sizeof(dev), "%u", x->gpu[i].device);
				fprintf(f, "reqtrace_gpu_busy_seconds_total{%s} %.9g\n",
					labels_of(lb, sizeof(lb), kv, 1),
					(double)x->gpu[i].busy_ns / 1e9);
			}
		}
		if (x->n_links) {
			head(f, "reqtrace_gpu_link_bytes_total", "counter",
			     "Bytes through a GPU's PCIe or NVLink links (NVML's counters), by "
			     "direction, since the daemon's first sample.");
			for (i = 0; i < x->n_links; i++) {
				const char *dirs[2] = { "tx", "rx" };
				uint64_t v[2] = { x->links[i].tx_bytes, x->links[i].rx_bytes };

				snprintf(dev, sizeof(dev), "%u", x->links[i].device);
				for (int k = 0; k < 2; k++) {
					const char *kv[] = {
						"device",	  dev,	       "link",
						x->links[i].link, "direction", dirs[k]
					};

					fprintf(f,
						"reqtrace_gpu_link_bytes_total{%s} %" PRIu64 "\n",
						labels_of(lb, sizeof(lb), kv, 3), v[k]);
				}
			}
		}
	}
	return ferror(f) ? -EIO : 0;
}
