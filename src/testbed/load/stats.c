// SPDX-License-Identifier: BSD-2-Clause
#include "stats.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double ld_percentile(double *v, size_t n, double p)
{
	size_t rank;

	if (n == 0)
		return -1;
	qsort(v, n, sizeof(*v), cmp_double);
	rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

int ld_summarize(const struct ld_result *res, size_t n, struct ld_summary *s)
{
	double *lat = NULL, *ttft = NULL;
	uint64_t first = UINT64_MAX, last = 0, tokens = 0;
	size_t i, nl = 0, nt = 0;

	*s = (struct ld_summary){ 0 };
	lat = malloc(sizeof(*lat) * (n ? n : 1));
	ttft = malloc(sizeof(*ttft) * (n ? n : 1));
	if (!lat || !ttft) {
		free(lat);
		free(ttft);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct ld_result *r = &res[i];

		if (!r->sent) {
			s->not_sent++;
			continue;
		}
		s->requests++;
		if (r->start_ns < first)
			first = r->start_ns;
		if (r->end_ns > last)
			last = r->end_ns;
		if (r->aborted) {
			s->aborted++;
			continue;
		}
		if (!r->ok) {
			s->errors++;
			continue;
		}
		s->ok++;
		if (r->tokens > 0)
			tokens += (uint64_t)r->tokens;
		lat[nl++] = (double)(r->end_ns - r->start_ns) / 1e6;
		if (r->ttft_ns)
			ttft[nt++] = (double)(r->ttft_ns - r->start_ns) / 1e6;
	}
	if (last > first && first != UINT64_MAX) {
		s->duration_s = (double)(last - first) / 1e9;
		s->throughput = (double)s->ok / s->duration_s;
		s->tokens_per_s = (double)tokens / s->duration_s;
	}
	s->latency_p50_ms = ld_percentile(lat, nl, 50);
	s->latency_p99_ms = ld_percentile(lat, nl, 99);
	s->ttft_p50_ms = ld_percentile(ttft, nt, 50);
	s->ttft_p99_ms = ld_percentile(ttft, nt, 99);
	free(lat);
	free(ttft);
	return 0;
}

int ld_result_json(const struct ld_result *r, struct tb_buf *b)
{
	tb_buf_puts(b, "{\"request_id\":");
	tb_buf_json_str(b, r->id);
	tb_buf_printf(b, ",\"ok\":%s,\"aborted\":%s,\"status\":%d,\"start_ns\":%" PRIu64,
		      r->ok ? "true" : "false", r->aborted ? "true" : "false", r->status,
		      r->start_ns);
	/* send_ns: the name the backlog tests use for start_ns (the same instant) */
	tb_buf_printf(b, ",\"send_ns\":%" PRIu64 ",\"connect_ns\":", r->start_ns);
	tb_buf_json_u64(b, r->connect_ns ? r->connect_ns : TB_NULL_U64);
	tb_buf_puts(b, ",\"ttft_ns\":");
	tb_buf_json_u64(b, r->ttft_ns ? r->ttft_ns : TB_NULL_U64);
	tb_buf_puts(b, ",\"ttft_rx_ns\":");
	tb_buf_json_u64(b, r->ttft_rx_ns ? r->ttft_rx_ns : TB_NULL_U64);
	tb_buf_puts(b, ",\"end_rx_ns\":");
	tb_buf_json_u64(b, r->end_rx_ns ? r->end_rx_ns : TB_NULL_U64);
	tb_buf_printf(b, ",\"end_ns\":%" PRIu64 ",\"total_ms\":%.3f,\"ttft_ms\":", r->end_ns,
		      (double)(r->end_ns - r->start_ns) / 1e6);
	if (r->ttft_ns)
		tb_buf_printf(b, "%.3f", (double)(r->ttft_ns - r->start_ns) / 1e6);
	else
		tb_buf_puts(b, "null");
	tb_buf_printf(b, ",\"events\":%u,\"tokens\":", r->events);
	if (r->tokens >= 0)
		tb_buf_printf(b, "%" PRId64, r->tokens);
	else
		tb_buf_puts(b, "null");
	tb_buf_puts(b, ",\"error\":");
	if (r->error[0])
		tb_buf_json_str(b, r->error);
	else
		tb_buf_puts(b, "null");
	tb_buf_puts(b, "}\n");
	return b->overflow ? -ENOBUFS : 0;
}

static void ms_or_null(struct tb_buf *b, const char *key, double v)
{
	if (v < 0)
		tb_buf_printf(b, ",\"%s\":null", key);
	else
		tb_buf_printf(b, ",\"%s\":%.3f", key, v);
}

int ld_summary_json(const struct ld_summary *s, struct tb_buf *b)
{
	tb_buf_printf(b,
		      "{\"requests\":%" PRIu64 ",\"ok\":%" PRIu64 ",\"errors\":%" PRIu64
		      ",\"aborted\":%" PRIu64 ",\"not_sent\":%" PRIu64
		      ",\"duration_s\":%.6f,\"throughput_rps\":%.4f,\"tokens_per_s\":%.3f",
		      s->requests, s->ok, s->errors, s->aborted, s->not_sent, s->duration_s,
		      s->throughput, s->tokens_per_s);
	ms_or_null(b, "ttft_p50_ms", s->ttft_p50_ms);
	ms_or_null(b, "ttft_p99_ms", s->ttft_p99_ms);
	ms_or_null(b, "latency_p50_ms", s->latency_p50_ms);
	ms_or_null(b, "latency_p99_ms", s->latency_p99_ms);
	tb_buf_puts(b, "}\n");
	return b->overflow ? -ENOBUFS : 0;
}
