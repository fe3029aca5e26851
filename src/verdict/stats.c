// SPDX-License-Identifier: BSD-2-Clause
#include "verdict/stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int64_t rt_pct_sorted(const int64_t *sorted, size_t n, unsigned int p)
{
	size_t k;

	if (!n)
		return RT_NULL_NS;
	if (p < 1)
		p = 1;
	if (p > 100)
		p = 100;
	k = (n * p + 99) / 100; /* ceil(n * p / 100), at least 1 */
	return sorted[k ? k - 1 : 0];
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void pct_of(int64_t *v, size_t n, struct rt_pct *out)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	out->n = (uint32_t)n;
	out->p50_ns = rt_pct_sorted(v, n, 50);
	out->p99_ns = rt_pct_sorted(v, n, 99);
}

/* What one percentile takes from a span; RT_NULL_NS: the span has no value. */
typedef int64_t (*pick_fn)(const struct rt_span *s, int arg);

static int64_t pick_duration(const struct rt_span *s, int arg)
{
	(void)arg;
	/* from arrival when the kernel saw it (docs/spans.md) */
	return s->end_ns >= s->start_ns ? rt_span_duration_ns(s) : RT_NULL_NS;
}

static int64_t pick_ttft(const struct rt_span *s, int arg)
{
	(void)arg;
	if (!s->first_token_ns || s->first_token_ns < s->start_ns)
		return RT_NULL_NS;
	return rt_span_ttft_ns(s);
}

static int64_t pick_itl(const struct rt_span *s, int p99)
{
	if (!s->itl_present)
		return RT_NULL_NS;
	return p99 ? s->itl_p99_ns : s->itl_p50_ns;
}

static int64_t pick_phase(const struct rt_span *s, int p)
{
	return s->phase_ns[p];
}

static void pct_over(const struct rt_span *spans, size_t n, int64_t *scratch, pick_fn pick, int arg,
		     struct rt_pct *out)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		int64_t v = pick(&spans[i], arg);

		if (v != RT_NULL_NS)
			scratch[k++] = v;
	}
	pct_of(scratch, k, out);
}

int rt_span_stats_compute(const struct rt_span *spans, size_t n, struct rt_span_stats *out)
{
	int64_t *scratch;
	size_t i;
	int p;

	if (!out || (n && !spans) || n > UINT32_MAX)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	scratch = malloc((n ? n : 1) * sizeof(*scratch));
	if (!scratch)
		return -ENOMEM;
	out->n_spans = (uint32_t)n;
	for (i = 0; i < n; i++) {
		const struct rt_span *s = &spans[i];

		if (!out->first_start_ns || (s->start_ns && s->start_ns < out->first_start_ns))
			out->first_start_ns = s->start_ns;
		if (s->end_ns > out->last_end_ns)
			out->last_end_ns = s->end_ns;
		if (s->outcome < RT_OUTCOME__COUNT)
			out->outcomes[s->outcome]++;
		if (s->flags & RT_SPAN_INCOMPLETE)
			out->incomplete++;
		if (s->tokens_out >= 0) {
			out->tokens += (uint64_t)s->tokens_out;
			out->n_tokens++;
		}
	}
	pct_over(spans, n, scratch, pick_duration, 0, &out->duration);
	pct_over(spans, n, scratch, pick_ttft, 0, &out->ttft);
	pct_over(spans, n, scratch, pick_itl, 0, &out->itl_p50);
	pct_over(spans, n, scratch, pick_itl, 1, &out->itl_p99);
	for (p = 0; p < RT_PHASE__COUNT; p++)
		pct_over(spans, n, scratch, pick_phase, p, &out->phase[p]);
	free(scratch);
	return 0;
}
