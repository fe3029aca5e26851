// SPDX-License-Identifier: BSD-2-Clause
/*
 * PCIe and NVLink traffic per device from LINK_SAMPLE records: the
 * daemon's running totals over NVML's cumulative counters, one record per
 * device and link type a second (src/sources/nvml.c; docs/gpu.md "Links").
 * Bytes, rates and utilisation against the link's maximum come from
 * differences between samples, so they read the same live and from a
 * recording. Fixed tables: RT_GPU_LINKS_MAX links, a ring of the last
 * RT_GPU_LINK_RING samples each.
 */
#include <string.h>

#include "internal.h"

#define NS_PER_S 1000000000ULL

static struct rt_gpu_link_state *link_of(struct rt_gpu_state *g, uint32_t device, uint32_t type)
{
	struct rt_gpu_link_state *free_slot = NULL;
	uint32_t i;

	for (i = 0; i < RT_GPU_LINKS_MAX; i++) {
		struct rt_gpu_link_state *l = &g->links[i];

		if (l->used && l->device == device && l->link_type == type)
			return l;
		if (!l->used && !free_slot)
			free_slot = l;
	}
	if (free_slot) {
		memset(free_slot, 0, sizeof(*free_slot));
		free_slot->used = 1;
		free_slot->device = device;
		free_slot->link_type = type;
	}
	return free_slot;
}

void rt_gpu_link_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	const struct rt_ev_link_sample *s = (const void *)ev;
	struct rt_gpu_state *g = &c->gpu;
	struct rt_gpu_link_state *l;
	struct rt_gpu_link_sample *last;

	if (ev->size < sizeof(*s) ||
	    (s->link_type != RT_LINK_PCIE && s->link_type != RT_LINK_NVLINK)) {
		g->link_refused++;
		return;
	}
	l = link_of(g, s->device, s->link_type);
	if (!l) {
		g->link_refused++;
		return;
	}
	last = l->len ? &l->ring[(l->head + l->len - 1) % RT_GPU_LINK_RING] : NULL;
	/* totals only grow and time only moves on: anything else is not this series */
	if (last && (ev->ts_ns <= last->ts || s->tx_bytes < last->tx || s->rx_bytes < last->rx)) {
		g->link_refused++;
		return;
	}
	g->link_records++;
	if (!l->samples) {
		l->first_ns = ev->ts_ns;
		l->tx0 = s->tx_bytes;
		l->rx0 = s->rx_bytes;
	}
	l->samples++;
	if (s->max_mbps)
		l->max_mbps = s->max_mbps;
	if (l->len == RT_GPU_LINK_RING) {
		l->head = (l->head + 1) % RT_GPU_LINK_RING;
		l->len--;
	}
	l->ring[(l->head + l->len) % RT_GPU_LINK_RING] =
		(struct rt_gpu_link_sample){ ev->ts_ns, s->tx_bytes, s->rx_bytes };
	l->len++;
}

static double util_of(double bps, uint64_t max_bps)
{
	return max_bps ? bps / (double)max_bps : -1;
}

static void link_stats(const struct rt_gpu_link_state *l, uint64_t now, struct rt_gpu_link *o)
{
	const struct rt_gpu_link_sample *newest =
		&l->ring[(l->head + l->len - 1) % RT_GPU_LINK_RING];
	uint64_t from =
		now > RT_GPU_BUSY_WINDOW_S * NS_PER_S ? now - RT_GPU_BUSY_WINDOW_S * NS_PER_S : 0;
	uint32_t i, oldest = l->len - 1;

	memset(o, 0, sizeof(*o));
	o->device = l->device;
	o->link_type = l->link_type;
	o->max_bps = (uint64_t)l->max_mbps * 1000000ULL;
	o->samples = l->samples;
	o->first_ns = l->first_ns;
	o->last_ns = newest->ts;
	o->tx_total = newest->tx - l->tx0;
	o->rx_total = newest->rx - l->rx0;
	o->util = o->util_peak = o->max_bps ? 0 : -1;
	/* the oldest sample inside the window, and the peak between neighbours */
	for (i = l->len - 1; i > 0; i--) {
		const struct rt_gpu_link_sample *a = &l->ring[(l->head + i - 1) % RT_GPU_LINK_RING];
		const struct rt_gpu_link_sample *b = &l->ring[(l->head + i) % RT_GPU_LINK_RING];
		double dt, peak;

		if (a->ts < from)
			break;
		oldest = i - 1;
		dt = (double)(b->ts - a->ts) / 1e9;
		peak = (double)((b->tx - a->tx) > (b->rx - a->rx) ? b->tx - a->tx : b->rx - a->rx) /
		       dt;
		if (o->max_bps && util_of(peak, o->max_bps) > o->util_peak)
			o->util_peak = util_of(peak, o->max_bps);
	}
	{
		const struct rt_gpu_link_sample *a =
			&l->ring[(l->head + oldest) % RT_GPU_LINK_RING];

		o->window_ns = newest->ts - a->ts;
		o->tx_bytes = newest->tx - a->tx;
		o->rx_bytes = newest->rx - a->rx;
	}
	if (o->window_ns) {
		o->tx_bps = (double)o->tx_bytes * 1e9 / (double)o->window_ns;
		o->rx_bps = (double)o->rx_bytes * 1e9 / (double)o->window_ns;
		if (o->max_bps)
			o->util =
				util_of(o->tx_bps > o->rx_bps ? o->tx_bps : o->rx_bps, o->max_bps);
	}
}

void rt_gpu_links(const struct rt_correlator *c, struct rt_gpu_links *out)
{
	const struct rt_gpu_state *g = &c->gpu;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	out->records = g->link_records;
	out->refused = g->link_refused;
	for (i = 0; i < RT_GPU_LINKS_MAX; i++) {
		const struct rt_gpu_link_state *l = &g->links[i];

		if (!l->used || !l->len)
			continue;
		link_stats(l,
			   c->now > l->ring[(l->head + l->len - 1) % RT_GPU_LINK_RING].ts ?
				   c->now :
				   l->ring[(l->head + l->len - 1) % RT_GPU_LINK_RING].ts,
			   &out->link[out->n++]);
	}
}
