// SPDX-License-Identifier: BSD-2-Clause
/*
 * A recording replayed through the pipeline, as `replay` does, for the views
 * that read recordings (show, top, why --file): the finished spans (the last
 * revision of each request) and the requests still open at its end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reqtrace/span.h>

#include "cli.h"
#include "merge/pipeline.h"
#include "sources/rtrace_read.h"
#include "store/store.h"

struct load_ctx {
	const struct rt_cli_rec_hooks *hooks;
	struct rt_store *store;
	struct rt_cli_rec *rec;
	size_t cap_open;
};

static void on_span(const struct rt_span *s, void *ctx)
{
	struct load_ctx *x = ctx;

	if (x->hooks && x->hooks->on_span)
		x->hooks->on_span(s, x->hooks->ctx);
	rt_store__add(x->store, s);
}

static int copy_span(const struct rt_span *s, void *ctx)
{
	struct rt_cli_rec *r = ctx;

	r->spans[r->n_spans++] = *s;
	return 0;
}

static void on_open(const struct rt_inflight *in, void *ctx)
{
	struct load_ctx *x = ctx;
	struct rt_cli_rec *r = x->rec;
	struct rt_cli_open *o;

	if (r->n_open >= RT_CLI_OPEN_MAX) {
		r->open_dropped++;
		return;
	}
	if (r->n_open == x->cap_open) {
		size_t cap = x->cap_open ? x->cap_open * 2 : 64;
		void *p = realloc(r->open, cap * sizeof(*r->open));

		if (!p) {
			r->open_dropped++;
			return;
		}
		r->open = p;
		x->cap_open = cap;
	}
	o = &r->open[r->n_open++];
	memset(o, 0, sizeof(*o));
	snprintf(o->request_id, sizeof(o->request_id), "%s", in->request_id ? in->request_id : "");
	snprintf(o->path, sizeof(o->path), "%s", in->path ? in->path : "");
	snprintf(o->phase, sizeof(o->phase), "%s", rt_phase_name(in->phase));
	o->start_ns = in->start_ns;
	o->events_out = in->events_out;
}

int rt_cli_rec_load(const char *path, struct rt_cli_rec *out)
{
	return rt_cli_rec_load_ex(path, out, NULL);
}

int rt_cli_rec_load_ex(const char *path, struct rt_cli_rec *out, const struct rt_cli_rec_hooks *h)
{
	struct rt_store_opts so = { .max_spans = RT_CLI_SPANS_MAX };
	struct load_ctx x = { .rec = out, .hooks = h };
	struct rt_pipeline_opts po = { 0 };
	struct rt_correlator_stats cs;
	struct rt_trace_reader *rd = NULL;
	struct rt_pipeline *pl = NULL;
	const struct rt_event_hdr *ev;
	struct rt_store_stats ss;
	int err, rc = RT_EXIT_FAIL;
	size_t i;

	memset(out, 0, sizeof(*out));
	rd = rt_trace_reader__open(path, NULL);
	if (!rd) {
		fprintf(stderr, "reqtrace: %s: %s\n", path, strerror(errno));
		return errno == EINVAL || errno == EPROTO || errno == EBADMSG ? RT_EXIT_USAGE :
										RT_EXIT_FAIL;
	}
	{
		const struct rt_trace_header *th = rt_trace_reader__header(rd);

		out->epoch_offset_ns = (int64_t)(th->realtime_ns - th->monotonic_ns);
		memcpy(out->host, th->host, sizeof(out->host));
		out->host[sizeof(out->host) - 1] = '\0';
	}
	x.store = rt_store__new(&so);
	po.corr.on_span = on_span;
	po.corr.ctx = &x;
	pl = x.store ? rt_pipeline__new(&po) : NULL;
	if (!pl) {
		fprintf(stderr, "reqtrace: %s\n", strerror(errno));
		goto cleanup;
	}
	while ((err = rt_trace_reader__next(rd, &ev)) == 1) {
		if (ev->ts_ns > out->end_ns && ev->kind != RT_EV_WATERMARK)
			out->end_ns = ev->ts_ns;
		if (h && h->on_event)
			h->on_event(ev, h->ctx);
		rt_pipeline__push(pl, ev);
	}
	if (err < 0) {
		fprintf(stderr, "reqtrace: %s: %s\n", path, rt_trace_reader__error(rd));
		rc = RT_EXIT_USAGE;
		goto cleanup;
	}
	rt_pipeline__flush(pl);
	/* what did not end stays in the correlator after the flush */
	rt_correlator__inflight(rt_pipeline__correlator(pl), on_open, &x);
	for (i = 0; i < out->n_open; i++)
		out->open[i].age_ns = out->open[i].start_ns && out->end_ns > out->open[i].start_ns ?
					      (int64_t)(out->end_ns - out->open[i].start_ns) :
					      0;
	{
		struct rt_gpu_links *gl = calloc(1, sizeof(*gl));

		if (gl) {
			rt_gpu_links(rt_pipeline__correlator(pl), gl);
			rt_cli_links_from_gpu(gl, out->links, RT_GPU_LINKS_MAX, &out->n_links);
			free(gl);
		}
	}
	rt_correlator__stats(rt_pipeline__correlator(pl), &cs);
	out->lost_records = cs.lost_records;
	out->late_events = cs.late_events;
	rt_store__stats(x.store, &ss);
	out->spans_dropped = ss.evicted;
	out->spans = calloc(ss.size ? ss.size : 1, sizeof(*out->spans));
	if (!out->spans) {
		fprintf(stderr, "reqtrace: out of memory\n");
		goto cleanup;
	}
	rt_store__foreach(x.store, copy_span, out);
	rc = RT_EXIT_OK;
cleanup:
	if (rc)
		rt_cli_rec_free(out);
	rt_pipeline__free(pl);
	rt_store__free(x.store);
	rt_trace_reader__free(rd);
	return rc;
}

void rt_cli_rec_free(struct rt_cli_rec *r)
{
	if (!r)
		return;
	free(r->spans);
	free(r->open);
	memset(r, 0, sizeof(*r));
}
