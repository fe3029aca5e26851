// SPDX-License-Identifier: BSD-2-Clause
/*
 * The GPU side: the device idles while requests wait in CPU stages or queues
 * (gpu_idle_waiting), or copies take much of request time or saturate a
 * link (transfer_bound). Thresholds: docs/verdict.md.
 */
#include "find_int.h"

/* gpu_idle_waiting: the device busy less than half the window ... */
#define GPU_IDLE_BUSY 0.5
/* ... while half of request time is queued or in CPU stages */
#define GPU_WAIT_SHARE 0.5
/* transfer_bound: copies a quarter of request time, or a link 70% busy */
#define XFER_SHARE 0.25
#define XFER_LINK_UTIL 0.7

struct gsum {
	size_t with_gpu; /* spans with GPU evidence */
	size_t with_cupti; /* spans with device times */
	double kernel_ns, memcpy_ns, sync_ns;
	uint64_t h2d, d2h, p2p, launches;
};

static void sum_gpu(const struct rt_fctx *c, struct gsum *g)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		const struct rt_span_gpu *x = &c->spans[i].gpu;

		if (!x->present)
			continue;
		g->with_gpu++;
		if (x->kernel_ns != RT_NULL_NS || x->memcpy_ns != RT_NULL_NS)
			g->with_cupti++;
		if (x->kernel_ns != RT_NULL_NS && x->kernel_ns > 0)
			g->kernel_ns += (double)x->kernel_ns;
		if (x->memcpy_ns != RT_NULL_NS && x->memcpy_ns > 0)
			g->memcpy_ns += (double)x->memcpy_ns;
		if (x->sync_wait_ns != RT_NULL_NS && x->sync_wait_ns > 0)
			g->sync_ns += (double)x->sync_wait_ns;
		g->h2d += x->h2d_bytes;
		g->d2h += x->d2h_bytes;
		g->p2p += x->p2p_bytes;
		g->launches += x->launches;
	}
}

/*
 * Request time spent queued or in CPU stages. With markers: the phases that
 * say so. Zero-code: pre_first_token and the HTTP ends, less the GPU time
 * the requests were given (pre_first_token holds the prefill too).
 */
static double waiting_share(const struct rt_fctx *c, const struct gsum *g)
{
	static const int cpu[] = { RT_PHASE_BACKLOG, RT_PHASE_RECEIVE, RT_PHASE_QUEUE,
				   RT_PHASE_TOKENIZE, RT_PHASE_POSTPROCESS };
	double t = 0;
	size_t i;

	for (i = 0; i < sizeof(cpu) / sizeof(cpu[0]); i++)
		t += c->phase_sum_ns[cpu[i]];
	if (c->phase_sum_ns[RT_PHASE_PRE_FIRST_TOKEN] > 0) {
		double pft =
			c->phase_sum_ns[RT_PHASE_PRE_FIRST_TOKEN] - g->kernel_ns - g->memcpy_ns;

		t += pft > 0 ? pft : 0;
	}
	return c->sum_dur_ns > 0 ? t / c->sum_dur_ns : 0;
}

static int gpu_idle_waiting(struct rt_fctx *c, const struct gsum *g)
{
	const struct rt_verdict_extra *x = c->extra;
	const struct rt_span_stats *st = &c->v->stats;
	const char *source;
	double busy, wsh;
	struct rt_jsonw w;
	int err;

	if (!g->with_gpu || c->window_ns <= 0)
		return 0;
	if (x && x->have_gpu_busy) {
		busy = x->gpu_busy;
		source = "device";
	} else if (g->with_cupti) {
		/* the requests' shares of device time sum to the device time */
		busy = (g->kernel_ns + g->memcpy_ns) / c->window_ns;
		source = "cupti";
	} else {
		/* CPU side: blocked in syncs at least as long as the GPU worked
		 * for them after the launch returned */
		busy = g->sync_ns / c->window_ns;
		source = "estimate";
	}
	if (busy > 1)
		busy = 1;
	wsh = waiting_share(c, g);
	if (busy >= GPU_IDLE_BUSY || wsh < GPU_WAIT_SHARE)
		return 0;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "gpu_busy");
	rt_jsonw_num(&w, busy, 3);
	rt_jsonw_key(&w, "busy_source");
	rt_jsonw_str_val(&w, source);
	rt_jsonw_key(&w, "estimate");
	rt_jsonw_bool(&w, source[0] == 'e');
	if (x && x->have_gpu_busy) {
		rt_jsonw_key(&w, "device");
		rt_jsonw_uint(&w, x->gpu_device);
	}
	rt_jsonw_key(&w, "kernel_ms");
	rt_jsonw_num(&w, rt_find_ms(g->kernel_ns), 3);
	rt_jsonw_key(&w, "memcpy_ms");
	rt_jsonw_num(&w, rt_find_ms(g->memcpy_ns), 3);
	rt_jsonw_key(&w, "sync_wait_ms");
	rt_jsonw_num(&w, rt_find_ms(g->sync_ns), 3);
	rt_jsonw_key(&w, "launches");
	rt_jsonw_uint(&w, g->launches);
	rt_jsonw_key(&w, "window_ms");
	rt_jsonw_num(&w, rt_find_ms(c->window_ns), 3);
	rt_jsonw_key(&w, "waiting_share");
	rt_jsonw_num(&w, wsh, 3);
	rt_jsonw_key(&w, "latency_p50_ms");
	rt_jsonw_ms(&w, st->duration.p50_ns);
	rt_jsonw_key(&w, "latency_p99_ms");
	rt_jsonw_ms(&w, st->duration.p99_ns);
	rt_jsonw_key(&w, "threshold_busy");
	rt_jsonw_num(&w, GPU_IDLE_BUSY, 2);
	rt_jsonw_key(&w, "threshold_waiting_share");
	rt_jsonw_num(&w, GPU_WAIT_SHARE, 2);
	rt_find_ev_paths(&w, c);
	rt_jsonw_obj_close(&w);
	/* the question reqtrace exists for: ahead of the cause that explains it */
	err = rt_find_add(c, RT_FIND_GPU_IDLE_WAITING, 0, wsh + 0.1, &w,
			  "the GPU is busy %.0f%% of the window%s while requests spend %.0f%% of "
			  "their time queued or in CPU stages (latency p99 %.0f ms): the GPU waits "
			  "for the CPU side, not the other way round",
			  100 * busy, source[0] == 'e' ? " (estimate from the CPU side)" : "",
			  100 * wsh, rt_find_ms((double)st->duration.p99_ns));
	rt_jsonw_fini(&w);
	return err;
}

static int transfer_bound(struct rt_fctx *c, const struct gsum *g)
{
	const struct rt_verdict_extra *x = c->extra;
	double sh = c->sum_dur_ns > 0 ? g->memcpy_ns / c->sum_dur_ns : 0, util = -1;
	const struct rt_verdict_link *hot = NULL;
	struct rt_jsonw w;
	uint32_t i;
	int err;

	if (x)
		for (i = 0; i < x->n_links; i++)
			if (x->links[i].utilisation > util) {
				util = x->links[i].utilisation;
				hot = &x->links[i];
			}
	if (!g->with_gpu || (sh < XFER_SHARE && util < XFER_LINK_UTIL))
		return 0;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "memcpy_share");
	rt_jsonw_num(&w, sh, 3);
	rt_jsonw_key(&w, "per_request");
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "h2d_bytes");
	rt_jsonw_num(&w, (double)g->h2d / (double)g->with_gpu, 0);
	rt_jsonw_key(&w, "d2h_bytes");
	rt_jsonw_num(&w, (double)g->d2h / (double)g->with_gpu, 0);
	rt_jsonw_key(&w, "p2p_bytes");
	rt_jsonw_num(&w, (double)g->p2p / (double)g->with_gpu, 0);
	rt_jsonw_key(&w, "memcpy_ms");
	rt_jsonw_num(&w, rt_find_ms(g->memcpy_ns / (double)g->with_gpu), 3);
	rt_jsonw_obj_close(&w);
	rt_jsonw_key(&w, "links");
	if (x && x->n_links) {
		rt_jsonw_arr_open(&w);
		for (i = 0; i < x->n_links; i++) {
			rt_jsonw_obj_open(&w);
			rt_jsonw_key(&w, "device");
			rt_jsonw_uint(&w, x->links[i].device);
			rt_jsonw_key(&w, "link");
			rt_jsonw_str_val(&w, x->links[i].link);
			rt_jsonw_key(&w, "tx_bytes");
			rt_jsonw_uint(&w, x->links[i].tx_bytes);
			rt_jsonw_key(&w, "rx_bytes");
			rt_jsonw_uint(&w, x->links[i].rx_bytes);
			rt_jsonw_key(&w, "utilisation");
			rt_jsonw_num(&w, x->links[i].utilisation, 3);
			rt_jsonw_obj_close(&w);
		}
		rt_jsonw_arr_close(&w);
	} else {
		rt_jsonw_null(&w); /* no link counters (a recording, or no NVML) */
	}
	rt_jsonw_key(&w, "threshold_memcpy_share");
	rt_jsonw_num(&w, XFER_SHARE, 2);
	rt_jsonw_key(&w, "threshold_link_utilisation");
	rt_jsonw_num(&w, XFER_LINK_UTIL, 2);
	rt_find_ev_paths(&w, c);
	rt_jsonw_obj_close(&w);
	if (hot && util >= XFER_LINK_UTIL)
		err = rt_find_add(
			c, RT_FIND_TRANSFER_BOUND, 0, sh > util ? sh : util, &w,
			"device %u link %s is %.0f%% busy and copies take %.0f%% of "
			"request time (%.0f KiB host to device, %.0f KiB back per request)",
			hot->device, hot->link, 100 * util, 100 * sh,
			(double)g->h2d / (double)g->with_gpu / 1024,
			(double)g->d2h / (double)g->with_gpu / 1024);
	else
		err = rt_find_add(c, RT_FIND_TRANSFER_BOUND, 0, sh, &w,
				  "copies take %.0f%% of request time (%.1f ms, %.0f KiB host to "
				  "device, %.0f KiB back, %.0f KiB peer per request)",
				  100 * sh, rt_find_ms(g->memcpy_ns / (double)g->with_gpu),
				  (double)g->h2d / (double)g->with_gpu / 1024,
				  (double)g->d2h / (double)g->with_gpu / 1024,
				  (double)g->p2p / (double)g->with_gpu / 1024);
	rt_jsonw_fini(&w);
	return err;
}

int rt_find_gpu(struct rt_fctx *c)
{
	struct gsum g = { 0 };
	int err;

	sum_gpu(c, &g);
	err = gpu_idle_waiting(c, &g);
	if (!err)
		err = transfer_bound(c, &g);
	return err;
}
