// SPDX-License-Identifier: BSD-2-Clause
/*
 * Writes the simulated records in the order a daemon would receive them:
 *
 *   source 1 ("bpf"): drained in rounds of 150-400 us; within a round the
 *   CPUs' records come one CPU after the other (each CPU in ts order), so
 *   records are out of ts order by up to a round across CPUs. After a round
 *   the source's watermark is the round's end (emitted at most every ms).
 *
 *   source 2 ("synthetic-late"): batches cut every 15-40 ms, each delivered
 *   0-5 ms after its cut (so up to ~45 ms late), in ts order; the watermark
 *   after a batch is its cut.
 *
 * A watermark W of source S is written only once every record of S with
 * ts < W has been written: it never lies. Final watermarks above every
 * record close both sources.
 */
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/rtrace_write.h"

#define US 1000ULL
#define MS 1000000ULL

struct delivery {
	uint64_t at; /* arrival time */
	uint64_t wm; /* watermark after it; 0: none */
	uint8_t src;
	size_t first, n; /* in the source's ordered index list */
};

struct plan {
	struct delivery *d;
	size_t n, cap;
	size_t *order; /* record indices, in arrival order per source */
	size_t n_order;
};

static int plan_add(struct plan *p, const struct delivery *d)
{
	void *q;

	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 256;
		q = realloc(p->d, p->cap * sizeof(*p->d));
		if (!q)
			return -ENOMEM;
		p->d = q;
	}
	p->d[p->n++] = *d;
	return 0;
}

/* Source 1: rounds; each round's records by CPU (order drawn per round), then ts. */
static int plan_bpf(struct sim *s, struct plan *p, uint64_t t0)
{
	uint64_t lo = t0, hi, last_wm = 0;
	size_t i = 0, first;
	int c, cpu_first, err;

	while (i < s->n_recs) {
		struct delivery d = { 0 };

		hi = lo + sim_range(s, 150 * US, 400 * US);
		first = p->n_order;
		cpu_first = (int)(sim_rand(s) & 1);
		for (c = 0; c < SIM_NCPU; c++) {
			int cpu = (cpu_first + c) % SIM_NCPU;
			size_t k;

			for (k = i; k < s->n_recs && s->recs[k].ts < hi; k++)
				if (s->recs[k].src == SIM_SRC_BPF && s->recs[k].cpu == cpu)
					p->order[p->n_order++] = k;
		}
		while (i < s->n_recs && s->recs[i].ts < hi)
			i++;
		d.at = hi;
		d.src = SIM_SRC_BPF;
		d.first = first;
		d.n = p->n_order - first;
		if (hi - last_wm >= MS) {
			d.wm = hi;
			last_wm = hi;
		}
		if (d.n || d.wm) {
			err = plan_add(p, &d);
			if (err)
				return err;
		}
		lo = hi;
	}
	return 0;
}

/* Source 2: late batches in ts order. */
static int plan_late(struct sim *s, struct plan *p, uint64_t t0)
{
	uint64_t cut = t0;
	size_t i = 0, first;
	int err;

	while (i < s->n_recs) {
		struct delivery d = { 0 };

		cut += sim_range(s, 15 * MS, 40 * MS);
		first = p->n_order;
		for (; i < s->n_recs && s->recs[i].ts < cut; i++)
			if (s->recs[i].src == SIM_SRC_LATE)
				p->order[p->n_order++] = i;
		d.at = cut + sim_range(s, 0, 5 * MS);
		d.wm = cut;
		d.src = SIM_SRC_LATE;
		d.first = first;
		d.n = p->n_order - first;
		err = plan_add(p, &d);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_delivery(const void *a, const void *b)
{
	const struct delivery *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	if (x->src != y->src)
		return x->src - y->src;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int put(struct rt_trace_writer *wr, void *rec)
{
	return rt_trace_writer__write(wr, rec);
}

static int preamble(struct rt_trace_writer *wr, uint64_t t0)
{
	static const struct {
		uint32_t id, type;
		const char *name;
	} src[] = {
		{ SIM_SRC_BPF, RT_SRC_BPF, "bpf" },
		{ SIM_SRC_LATE, RT_SRC_SYNTHETIC, "synthetic-late" },
	};
	struct rt_ev_source_info si;
	struct rt_ev_target tg;
	size_t i;
	int err = 0;

	for (i = 0; i < 2 && !err; i++) {
		memset(&si, 0, sizeof(si));
		sim_hdr(&si.hdr, RT_EV_SOURCE_INFO, sizeof(si), t0, 0, 0);
		si.hdr.source = src[i].id;
		si.id = src[i].id;
		si.type = src[i].type;
		strncpy(si.name, src[i].name, sizeof(si.name) - 1);
		err = put(wr, &si);
	}
	if (err)
		return err;
	memset(&tg, 0, sizeof(tg));
	sim_hdr(&tg.hdr, RT_EV_TARGET, sizeof(tg), t0, GEN_PID, GEN_PID);
	tg.hdr.source = SIM_SRC_BPF;
	tg.group_id = 1;
	strncpy(tg.group, "testsrv", sizeof(tg.group) - 1);
	strncpy(tg.comm, "testsrv", sizeof(tg.comm) - 1);
	return put(wr, &tg);
}

static int watermark(struct rt_trace_writer *wr, uint8_t src, uint64_t ts)
{
	struct rt_ev_watermark wm;

	memset(&wm, 0, sizeof(wm));
	sim_hdr(&wm.hdr, RT_EV_WATERMARK, sizeof(wm), ts, 0, 0);
	wm.hdr.source = src;
	return put(wr, &wm);
}

int gen_deliver(struct gen_world *w, const char *path)
{
	struct rt_trace_writer_opts wo = {
		.host = RT_GEN_HOST,
		.boot_id = RT_GEN_BOOT_ID,
		.realtime_ns = RT_GEN_REALTIME_START,
		.monotonic_ns = RT_GEN_MONO_START,
	};
	struct sim *s = &w->sim;
	struct plan p = { 0 };
	struct rt_trace_writer *wr = NULL;
	_Alignas(8) uint8_t rec[RT_EVENT_MAX];
	uint64_t last = w->t_start, top[3] = { 0 };
	size_t i, k;
	int err;

	p.order = calloc(s->n_recs + 1, sizeof(*p.order));
	if (!p.order)
		return -ENOMEM;
	for (i = 0; i < s->n_recs; i++)
		if (s->recs[i].ts > last)
			last = s->recs[i].ts;
	err = plan_bpf(s, &p, w->t_start);
	if (!err)
		err = plan_late(s, &p, w->t_start);
	if (err)
		goto cleanup;
	qsort(p.d, p.n, sizeof(*p.d), cmp_delivery);

	wr = rt_trace_writer__open(path, &wo);
	if (!wr) {
		err = -errno;
		goto cleanup;
	}
	err = preamble(wr, w->t_start);
	for (i = 0; i < p.n && !err; i++) {
		for (k = 0; k < p.d[i].n && !err; k++) {
			const struct sim_rec *r = &s->recs[p.order[p.d[i].first + k]];

			/* the writer wants 8-byte aligned records */
			memcpy(rec, s->recs_bytes + r->off, r->len);
			err = put(wr, rec);
		}
		if (!err && p.d[i].wm) {
			err = watermark(wr, p.d[i].src, p.d[i].wm);
			if (p.d[i].wm > top[p.d[i].src])
				top[p.d[i].src] = p.d[i].wm;
		}
	}
	/* the end: nothing more from either source */
	if (!err)
		err = watermark(wr, SIM_SRC_BPF,
				top[SIM_SRC_BPF] > last ? top[SIM_SRC_BPF] : last + 1);
	if (!err)
		err = watermark(wr, SIM_SRC_LATE,
				top[SIM_SRC_LATE] > last ? top[SIM_SRC_LATE] : last + 1);
cleanup:
	if (wr) {
		int err2 = rt_trace_writer__close(wr);

		if (!err)
			err = err2;
	}
	free(p.d);
	free(p.order);
	return err;
}
