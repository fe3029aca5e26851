// SPDX-License-Identifier: BSD-2-Clause
/*
 * server_slower_than_engine: what the server says a request took
 * (server_reported: timing headers, Server-Timing, llama.cpp timings)
 * against what the wire shows. A gap is time spent outside the figure's
 * scope: the HTTP layer, a detokenizer, a proxy in front. Thresholds:
 * docs/verdict.md.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "find_int.h"

/* the figures disagree with the wire by more than a tenth (median request) */
#define SERVER_GAP 0.10
/* and half of the requests reported one */
#define SERVER_MIN_REPORTING 0.5

static bool get(const struct rt_span *s, const char *name, double *v)
{
	uint32_t i;

	for (i = 0; i < s->n_reported && i < RT_SPAN_REPORTED_MAX; i++)
		if (!strcmp(s->reported[i].name, name)) {
			*v = s->reported[i].value;
			return isfinite(*v) && *v >= 0;
		}
	return false;
}

/*
 * The server's total for the request in ns, and which figure it was; false
 * when it reported none. The engine's own timings (llama.cpp) do not count
 * the scheduler queue: it is taken off the wire side when markers give it.
 */
static bool reported_ns(const struct rt_span *s, double *ns, const char **what, bool *engine)
{
	double a, b;

	*engine = false;
	if (get(s, "openai-processing-ms", &a) || get(s, "x-response-time", &a) ||
	    get(s, "x-envoy-upstream-service-time", &a) || get(s, "server-timing.total", &a)) {
		*ns = a * 1e6;
		*what = "server timing header (ms)";
		return true;
	}
	if (get(s, "x-process-time", &a)) {
		*ns = a * 1e9; /* seconds, as the usual middleware writes it */
		*what = "x-process-time (s)";
		return true;
	}
	if (get(s, "timings.prompt_ms", &a) && get(s, "timings.predicted_ms", &b)) {
		*ns = (a + b) * 1e6;
		*what = "timings.prompt_ms + timings.predicted_ms";
		*engine = true;
		return true;
	}
	return false;
}

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

int rt_find_server(struct rt_fctx *c)
{
	double *gap, *rep, *wire, med, mrep, mwire;
	const char *what = NULL;
	struct rt_jsonw w;
	size_t i, k = 0;
	int err = 0;

	gap = malloc(3 * (c->n + 1) * sizeof(*gap));
	if (!gap)
		return -ENOMEM;
	rep = gap + c->n + 1;
	wire = rep + c->n + 1;
	for (i = 0; i < c->n; i++) {
		const struct rt_span *s = &c->spans[i];
		double r, d = (double)rt_span_duration_ns(s);
		bool engine;

		if (!reported_ns(s, &r, &what, &engine))
			continue;
		if (engine && s->phase_ns[RT_PHASE_QUEUE] != RT_NULL_NS)
			d -= (double)s->phase_ns[RT_PHASE_QUEUE];
		if (d <= 0)
			continue;
		gap[k] = (d - r) / d;
		rep[k] = r;
		wire[k] = d;
		k++;
	}
	if (!k || (double)k < SERVER_MIN_REPORTING * (double)c->n)
		goto cleanup;
	qsort(gap, k, sizeof(*gap), cmp_d);
	qsort(rep, k, sizeof(*rep), cmp_d);
	qsort(wire, k, sizeof(*wire), cmp_d);
	med = gap[(k - 1) / 2];
	mrep = rep[(k - 1) / 2];
	mwire = wire[(k - 1) / 2];
	if (fabs(med) <= SERVER_GAP)
		goto cleanup;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "figure");
	rt_jsonw_str_val(&w, what);
	rt_jsonw_key(&w, "reported_p50_ms");
	rt_jsonw_num(&w, rt_find_ms(mrep), 3);
	rt_jsonw_key(&w, "wire_p50_ms");
	rt_jsonw_num(&w, rt_find_ms(mwire), 3);
	rt_jsonw_key(&w, "gap_p50");
	rt_jsonw_num(&w, med, 3);
	rt_jsonw_key(&w, "requests");
	rt_jsonw_uint(&w, k);
	rt_jsonw_key(&w, "threshold_gap");
	rt_jsonw_num(&w, SERVER_GAP, 2);
	rt_find_ev_paths(&w, c);
	rt_jsonw_obj_close(&w);
	if (med > 0)
		err = rt_find_add(
			c, RT_FIND_SERVER_SLOWER, 0, med, &w,
			"the server reports %.1f ms per request (%s) but the wire shows "
			"%.1f ms: %.0f%% of the time is spent outside what it measures (the "
			"HTTP layer, a detokenizer or a proxy)",
			rt_find_ms(mrep), what, rt_find_ms(mwire), 100 * med);
	else
		err = rt_find_add(
			c, RT_FIND_SERVER_SLOWER, 0, -med, &w,
			"the server reports %.1f ms per request (%s), %.0f%% more than the "
			"%.1f ms the wire shows: its own figures overstate the work (or "
			"count time before the request reached it)",
			rt_find_ms(mrep), what, -100 * med, rt_find_ms(mwire));
	rt_jsonw_fini(&w);
cleanup:
	free(gap);
	return err;
}
