// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "find_int.h"

static const char *const kind_names[RT_FIND__COUNT] = {
	[RT_FIND_PHASE_DOMINANT] = "phase_dominant",
	[RT_FIND_HOT_THREAD] = "hot_thread",
	[RT_FIND_CPU_STARVED] = "cpu_starved",
	[RT_FIND_GPU_IDLE_WAITING] = "gpu_idle_waiting",
	[RT_FIND_BATCHING] = "batching",
	[RT_FIND_QUEUE_GROWTH] = "queue_growth",
	[RT_FIND_COMM_WAIT] = "comm_wait",
	[RT_FIND_TRANSFER_BOUND] = "transfer_bound",
	[RT_FIND_SERVER_SLOWER] = "server_slower_than_engine",
	[RT_FIND_NONE] = "none",
};

const char *rt_finding_kind_name(enum rt_finding_kind k)
{
	return (unsigned)k < RT_FIND__COUNT ? kind_names[k] : "?";
}

double rt_find_share(const struct rt_fctx *c, int p)
{
	return c->sum_dur_ns > 0 ? c->phase_sum_ns[p] / c->sum_dur_ns : 0;
}

int rt_find_add(struct rt_fctx *c, enum rt_finding_kind k, int tier, double score,
		struct rt_jsonw *ev, const char *fmt, ...)
{
	struct rt_findings *o = c->out;
	struct rt_finding *f;
	va_list ap;

	if (!rt_jsonw_ok(ev))
		return -ENOMEM;
	if (o->n >= RT_FINDINGS_MAX)
		return 0;
	f = &o->f[o->n];
	memset(f, 0, sizeof(*f));
	f->evidence = strdup(rt_jsonw_str(ev));
	if (!f->evidence)
		return -ENOMEM;
	f->kind = k;
	f->tier = tier;
	f->score = score;
	va_start(ap, fmt);
	vsnprintf(f->claim, sizeof(f->claim), fmt, ap);
	va_end(ap);
	o->n++;
	return 0;
}

void rt_find_ev_thread(struct rt_jsonw *w, uint32_t tid, const char *comm)
{
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "tid");
	rt_jsonw_uint(w, tid);
	rt_jsonw_key(w, "comm");
	rt_jsonw_str_val(w, comm);
	rt_jsonw_obj_close(w);
}

/* The request paths of the window (a few): what the finding is about. */
void rt_find_ev_paths(struct rt_jsonw *w, const struct rt_fctx *c)
{
	const char *seen[4];
	size_t i, k = 0, j;

	rt_jsonw_key(w, "paths");
	rt_jsonw_arr_open(w);
	for (i = 0; i < c->n && k < 4; i++) {
		const char *p = c->spans[i].path;

		for (j = 0; j < k && strcmp(seen[j], p); j++)
			;
		if (j == k && p[0]) {
			seen[k++] = p;
			rt_jsonw_str_val(w, p);
		}
	}
	rt_jsonw_arr_close(w);
}

static void context(struct rt_fctx *c)
{
	size_t i;
	int p;

	for (i = 0; i < c->n; i++) {
		const struct rt_span *s = &c->spans[i];
		uint64_t o = rt_span_origin_ns(s);

		if (!c->w0 || (o && o < c->w0))
			c->w0 = o;
		if (s->end_ns > c->w1)
			c->w1 = s->end_ns;
		if (o) /* else started before the trace: no duration */
			c->sum_dur_ns += (double)rt_span_duration_ns(s);
		for (p = 0; p < RT_PHASE__COUNT; p++) {
			if (s->phase_ns[p] != RT_NULL_NS && s->phase_ns[p] > 0)
				c->phase_sum_ns[p] += (double)s->phase_ns[p];
			if (s->phase_source[p] == RT_PSRC_MARKER)
				c->markers = true;
		}
	}
	c->window_ns = c->w1 > c->w0 ? (double)(c->w1 - c->w0) : 0;
	c->mean_inflight = c->window_ns > 0 ? c->sum_dur_ns / c->window_ns : 0;
}

/* Tier, then score; equal scores keep the detectors' order. */
static void rank(struct rt_findings *o)
{
	uint32_t i, j;

	for (i = 1; i < o->n; i++) {
		struct rt_finding t = o->f[i];

		for (j = i; j > 0 && (o->f[j - 1].tier > t.tier ||
				      (o->f[j - 1].tier == t.tier && o->f[j - 1].score < t.score));
		     j--)
			o->f[j] = o->f[j - 1];
		o->f[j] = t;
	}
}

/* Nothing crossed a threshold: say so, with the largest shares looked at. */
static int none(struct rt_fctx *c)
{
	struct rt_jsonw w;
	int p, best = -1, err;

	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "requests");
	rt_jsonw_uint(&w, c->n);
	rt_jsonw_key(&w, "phase_shares");
	rt_jsonw_obj_open(&w);
	for (p = 0; p < RT_PHASE__COUNT; p++) {
		if (!c->phase_sum_ns[p])
			continue;
		rt_jsonw_key(&w, rt_phase_name((enum rt_phase)p));
		rt_jsonw_num(&w, rt_find_share(c, p), 3);
		if (best < 0 || c->phase_sum_ns[p] > c->phase_sum_ns[best])
			best = p;
	}
	rt_jsonw_obj_close(&w);
	rt_jsonw_key(&w, "mean_in_flight");
	rt_jsonw_num(&w, c->mean_inflight, 2);
	rt_jsonw_obj_close(&w);
	if (!c->n)
		err = rt_find_add(c, RT_FIND_NONE, 2, 0, &w, "no finished requests to judge");
	else
		err = rt_find_add(c, RT_FIND_NONE, 2, 0, &w,
				  "nothing stands out over %zu request(s): %s takes the most time "
				  "(%.0f%%), engine work or a wait no threshold calls a bottleneck",
				  c->n, best >= 0 ? rt_phase_name((enum rt_phase)best) : "no phase",
				  best >= 0 ? 100 * rt_find_share(c, best) : 0.0);
	rt_jsonw_fini(&w);
	return err;
}

int rt_findings_compute(const struct rt_span *spans, size_t n, const struct rt_verdict *v,
			const struct rt_verdict_extra *extra, struct rt_findings *out)
{
	struct rt_fctx c = { 0 };
	int err = 0;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if ((n && !spans) || !v)
		return -EINVAL;
	c.spans = spans;
	c.n = n;
	c.v = v;
	c.extra = extra;
	c.out = out;
	c.hot_phase = -1;
	context(&c);
	out->window_start_ns = c.w0;
	out->window_end_ns = c.w1;
	out->n_spans = (uint32_t)n;
	if (n) {
		/* hot_thread first: batching reads whether it fired */
		err = rt_find_hot_thread(&c);
		if (!err)
			err = rt_find_phases(&c);
		if (!err)
			err = rt_find_load(&c);
		if (!err)
			err = rt_find_gpu(&c);
		if (!err)
			err = rt_find_server(&c);
	}
	if (!err && !out->n)
		err = none(&c);
	rank(out);
	return err;
}

void rt_findings_free(struct rt_findings *fs)
{
	uint32_t i;

	if (!fs)
		return;
	for (i = 0; i < fs->n; i++) {
		free(fs->f[i].evidence);
		fs->f[i].evidence = NULL;
	}
	fs->n = 0;
}

/* The envelope by hand: each finding's evidence is already a JSON object. */
int rt_findings_json(FILE *f, const struct rt_findings *fs)
{
	struct rt_jsonw w;
	uint32_t i;
	int err = 0;

	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "start_ns");
	rt_jsonw_uint(&w, fs->window_start_ns);
	rt_jsonw_key(&w, "end_ns");
	rt_jsonw_uint(&w, fs->window_end_ns);
	rt_jsonw_key(&w, "duration_ms");
	rt_jsonw_ms(&w, (int64_t)(fs->window_end_ns - fs->window_start_ns));
	rt_jsonw_key(&w, "requests");
	rt_jsonw_uint(&w, fs->n_spans);
	rt_jsonw_obj_close(&w);
	fprintf(f, "{\"window\":%s,\"findings\":[", rt_jsonw_str(&w));
	for (i = 0; i < fs->n && !err; i++) {
		rt_jsonw_reset(&w);
		rt_jsonw_str_val(&w, fs->f[i].claim);
		if (!rt_jsonw_ok(&w))
			err = -ENOMEM;
		fprintf(f, "%s{\"kind\":\"%s\",\"claim\":%s,\"evidence\":%s}", i ? "," : "",
			rt_finding_kind_name(fs->f[i].kind), rt_jsonw_str(&w), fs->f[i].evidence);
	}
	fputs("]}\n", f);
	if (!rt_jsonw_ok(&w))
		err = -ENOMEM;
	rt_jsonw_fini(&w);
	return err;
}

void rt_findings_print(FILE *f, const struct rt_findings *fs)
{
	uint32_t i;

	fputs("findings, most important first:\n", f);
	for (i = 0; i < fs->n; i++)
		fprintf(f, "%u. [%s] %s\n", i + 1, rt_finding_kind_name(fs->f[i].kind),
			fs->f[i].claim);
}
