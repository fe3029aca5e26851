/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Correlator throughput (docs/benchmarks.md, "Correlator throughput"):
 * records per CPU-second for (a) reading a recording, (b) reading and
 * merging it, (c) the whole pipeline (read, merge, correlator, span store)
 * and (d) that plus each span as JSON, side by side, repeated, medians.
 * Not a test: run by hand.
 *
 * The recording is made here, reproducibly, from the synthetic generator
 * (tests/gen): every scenario in both modes is one template; a copy of a
 * template is that server as a separate process (pids, request ids,
 * correlation ids and CPUs remapped) started `stagger` later, ending with
 * its threads' exits. Each engine thread going off-CPU first makes CUDA
 * calls (uprobe launch and sync, a CUPTI DRIVER launch) and its kernel
 * runs: sched, socket, marker and GPU records. Copies are interleaved in
 * time order per copy, with honest watermarks computed from what each copy
 * has still to send, so that thousands of requests are in flight at once
 * and no record is late.
 *
 *   bench_pipeline [--copies N] [--stagger-us U] [--reps R] [--file PATH] [--keep]
 *                [--only STAGE (0 read, 1 merge, 2 pipeline, 3 JSON: for a profiler)]
 *                [--dump SPANS.jsonl (every span, to compare two builds)]
 *                [--one-group (all copies in one target group)]
 *                [--replay REC.rtrace (time an existing recording, e.g. of the testbed,
 *                 instead of the generated one)]
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/event_check.h"
#include "common/jsonw.h"
#include "export/rtrace_write.h"
#include "export/span_json.h"
#include "gen.h"
#include "merge/pipeline.h"
#include "probes/gpu_probes.h"
#include "sources/rtrace_read.h"
#include "store/store.h"

#define GEN_PID 4242 /* tests/gen/model.h */
#define GEN_NOISE_PID 777
#define ENGINE_TID (GEN_PID + 2)
#define PID_SPAN 16
#define N_SRC 3 /* the generator's sources are 1 and 2 */
#define US 1000ULL
#define MERGE_PENDING (1u << 20)
#define MERGE_BYTES (512u << 20)

struct tmpl {
	char name[32];
	unsigned char *buf;
	size_t len, cap, n;
	size_t *off;
	uint64_t *key; /* running max of ts: a copy's records go out in this order */
	uint64_t *sufmin[N_SRC]; /* [i]: oldest ts from source s at position >= i */
};

static struct tmpl *tmpls;
static size_t n_tmpls;
static _Alignas(8) unsigned char scratch[RT_EVENT_MAX];
static bool one_group; /* every copy in the generator's group: engine sets of thousands */

static int tmpl_add(struct tmpl *t, const void *ev, size_t size)
{
	if (t->len + size > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 65536;
		unsigned char *p = realloc(t->buf, cap);

		if (!p)
			return -ENOMEM;
		t->buf = p;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, ev, size);
	t->len += size;
	t->n++;
	return 0;
}

static void hdr(struct rt_event_hdr *h, uint16_t kind, size_t size, const struct rt_event_hdr *like)
{
	memset(h, 0, size);
	h->kind = kind;
	h->size = (uint16_t)size;
	h->source = like->source;
	h->ts_ns = like->ts_ns;
	h->pid = like->pid;
	h->tid = like->tid;
}

/* What the engine does on the GPU before it leaves the CPU. */
static int add_gpu(struct tmpl *t, const struct rt_event_hdr *sw, uint64_t *corr)
{
	static const char *const calls[] = { "cuLaunchKernel", "cuStreamSynchronize" };
	struct rt_ev_cuda_api a;
	struct rt_ev_gpu_kernel k;
	int i, err = 0;

	for (i = 0; i < 2 && !err; i++) {
		int api = rt_gpu_probe_find(calls[i]);
		const struct rt_gpu_probe *p = &rt_gpu_probes[api];

		if (api < 0)
			return -ENOENT;
		hdr(&a.hdr, p->rec == RT_GPU_REC_EXIT ? RT_EV_CUDA_API_EXIT : RT_EV_CUDA_API_ENTER,
		    sizeof(a), sw);
		a.enter_ns = sw->ts_ns - (i ? 5 * US : 0);
		a.stream = 0x5000;
		a.api = (uint32_t)api;
		a.api_class = p->api_class;
		err = tmpl_add(t, &a, sizeof(a));
		if (!i && !err) {
			/* CUPTI's DRIVER record of the same launch, and its kernel */
			a.corr_id = ++*corr;
			err = tmpl_add(t, &a, sizeof(a));
			hdr(&k.hdr, RT_EV_GPU_KERNEL, sizeof(k), sw);
			k.hdr.pid = sw->pid;
			k.hdr.tid = 0;
			k.end_ns = sw->ts_ns + 20 * US;
			k.corr_id = *corr;
			k.name_hash = 0x1234;
			k.grid[0] = k.block[0] = 1;
			snprintf(k.name, sizeof(k.name), "bench_kernel");
			if (!err)
				err = tmpl_add(t, &k, sizeof(k));
		}
	}
	return err;
}

static int tmpl_load(struct tmpl *t, const char *path)
{
	struct rt_trace_reader *rd = rt_trace_reader__open(path, NULL);
	const struct rt_event_hdr *ev;
	uint32_t tids = 0; /* server threads seen, bit i: GEN_PID + i */
	uint64_t corr = 0, end = 0, run = 0, lo[N_SRC];
	struct rt_ev_proc_exit x;
	size_t i, pos;
	int err, s;

	if (!rd)
		return -errno;
	while ((err = rt_trace_reader__next(rd, &ev)) == 1) {
		/* the writer adds its own; the bench writes its own watermarks */
		if (ev->kind == RT_EV_CLOCK || ev->kind == RT_EV_TRACE_END ||
		    ev->kind == RT_EV_WATERMARK || ev->kind == RT_EV_SOURCE_INFO)
			continue;
		if (ev->source >= N_SRC) {
			err = -ERANGE;
			break;
		}
		if (ev->pid == GEN_PID && ev->tid >= GEN_PID && ev->tid < GEN_PID + PID_SPAN - 1)
			tids |= 1u << (ev->tid - GEN_PID);
		if (ev->kind == RT_EV_SCHED_SWITCH && ev->tid == ENGINE_TID) {
			err = add_gpu(t, ev, &corr);
			if (err)
				break;
		}
		err = tmpl_add(t, ev, ev->size);
		if (err)
			break;
		if (ev->ts_ns > end)
			end = ev->ts_ns;
	}
	rt_trace_reader__free(rd);
	if (err < 0)
		return err;
	/* the process ends: its threads exit, the main thread last */
	for (i = PID_SPAN; i-- > 0;) {
		if (!(tids & (1u << i)))
			continue;
		memset(&x, 0, sizeof(x));
		x.hdr.kind = RT_EV_PROC_EXIT;
		x.hdr.size = sizeof(x);
		x.hdr.source = 1;
		x.hdr.ts_ns = end;
		x.hdr.pid = GEN_PID;
		x.hdr.tid = GEN_PID + (uint32_t)i;
		x.group_dead = i == 0;
		err = tmpl_add(t, &x, sizeof(x));
		if (err)
			return err;
	}
	t->off = calloc(t->n, sizeof(*t->off));
	t->key = calloc(t->n, sizeof(*t->key));
	for (s = 0; s < N_SRC; s++)
		t->sufmin[s] = calloc(t->n + 1, sizeof(uint64_t));
	if (!t->off || !t->key || !t->sufmin[0] || !t->sufmin[1] || !t->sufmin[2])
		return -ENOMEM;
	for (i = 0, pos = 0; i < t->n; i++) {
		const struct rt_event_hdr *h = (const void *)(t->buf + pos);

		t->off[i] = pos;
		if (h->ts_ns > run)
			run = h->ts_ns;
		t->key[i] = run;
		pos += h->size;
	}
	for (s = 0; s < N_SRC; s++)
		lo[s] = UINT64_MAX;
	for (i = t->n + 1; i-- > 0;) {
		if (i < t->n) {
			const struct rt_event_hdr *h = (const void *)(t->buf + t->off[i]);

			if (h->ts_ns < lo[h->source])
				lo[h->source] = h->ts_ns;
		}
		for (s = 0; s < N_SRC; s++)
			t->sufmin[s][i] = lo[s];
	}
	return 0;
}

static int make_templates(const char *dir)
{
	size_t n = rt_gen_scenario_count(), i;
	char rtrace[512], truth[512];
	int m, err;

	tmpls = calloc(n * 2, sizeof(*tmpls));
	if (!tmpls)
		return -ENOMEM;
	snprintf(rtrace, sizeof(rtrace), "%s/bench-pipeline-%d.tmpl.rtrace", dir, (int)getpid());
	snprintf(truth, sizeof(truth), "%s/bench-pipeline-%d.tmpl.jsonl", dir, (int)getpid());
	for (i = 0; i < n; i++) {
		for (m = 0; m < 2; m++) {
			struct rt_gen_opts o = {
				.scenario = rt_gen_scenario_name(i),
				.mode = m ? RT_GEN_MARKERS : RT_GEN_ZERO,
				.seed = 1,
				.rtrace_path = rtrace,
				.truth_path = truth,
			};
			struct tmpl *t = &tmpls[n_tmpls++];

			snprintf(t->name, sizeof(t->name), "%s", o.scenario);
			err = rt_gen_run(&o);
			if (!err)
				err = tmpl_load(t, rtrace);
			if (err) {
				fprintf(stderr, "bench_pipeline: template %s: %s\n", o.scenario,
					strerror(-err));
				return err;
			}
		}
	}
	unlink(rtrace);
	unlink(truth);
	return 0;
}

/* ---- copies ------------------------------------------------------------------- */

static uint32_t map_pid(uint32_t p, uint32_t base)
{
	if (p >= GEN_PID && p < GEN_PID + PID_SPAN - 1)
		return base + (p - GEN_PID);
	if (p == GEN_NOISE_PID)
		return base + PID_SPAN - 1;
	return p;
}

/* "<scenario>-<n>" ids: the scenario's first 4 characters become the copy's number */
static void map_ids(char *p, size_t len, const char *name, const char code[4])
{
	size_t nl = strlen(name);
	char *q = p, *end = p + len;

	while (q + nl < end && (q = memmem(q, (size_t)(end - q), name, nl)) != NULL) {
		if (q + nl < end && q[nl] == '-')
			memcpy(q, code, 4);
		q += nl;
	}
}

static const struct rt_event_hdr *copy_rec(const struct tmpl *t, size_t i, uint32_t k, uint64_t d)
{
	const struct rt_event_hdr *src = (const void *)(t->buf + t->off[i]);
	struct rt_event_hdr *h = (void *)scratch;
	uint32_t base = 100000 + k * PID_SPAN, cpu_off = (k % 32) * 2, v = k;
	uint64_t corr_off = (uint64_t)k << 24;
	char code[4];
	int j;

	for (j = 3; j >= 0; j--, v /= 36)
		code[j] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
	memcpy(scratch, src, src->size);
	h->ts_ns += d;
	h->pid = map_pid(h->pid, base);
	h->tid = map_pid(h->tid, base);
	switch (h->kind) {
	case RT_EV_SCHED_SWITCH: {
		struct rt_ev_sched_switch *e = (void *)h;

		e->prev_pid = map_pid(e->prev_pid, base);
		e->prev_tid = map_pid(e->prev_tid, base);
		e->next_pid = map_pid(e->next_pid, base);
		e->next_tid = map_pid(e->next_tid, base);
		e->cpu += cpu_off;
		break;
	}
	case RT_EV_SCHED_WAKING: {
		struct rt_ev_sched_waking *e = (void *)h;

		e->target_pid = map_pid(e->target_pid, base);
		e->target_tid = map_pid(e->target_tid, base);
		e->target_cpu += cpu_off;
		break;
	}
	case RT_EV_TASK_NEW: {
		struct rt_ev_task_new *e = (void *)h;

		e->child_pid = map_pid(e->child_pid, base);
		e->child_tid = map_pid(e->child_tid, base);
		break;
	}
	case RT_EV_TARGET: {
		struct rt_ev_target *e = (void *)h;

		/* each copy is a server of its own, as separate deployments would be */
		if (one_group)
			break;
		e->group_id = k + 1;
		snprintf(e->group, sizeof(e->group), "%.20s-%u", t->name, k);
		break;
	}
	case RT_EV_PROC_EXEC: {
		struct rt_ev_proc_exec *e = (void *)h;

		e->old_tid = map_pid(e->old_tid, base);
		break;
	}
	case RT_EV_SOCK_ACCEPT:
	case RT_EV_SOCK_CONNECT:
		((struct rt_ev_sock_conn *)h)->enter_ns += d;
		break;
	case RT_EV_SOCK_RECV:
	case RT_EV_SOCK_SEND: {
		struct rt_ev_sock_io *e = (void *)h;

		e->enter_ns += d;
		map_ids((char *)e->data, (size_t)e->head_len + e->tail_len, t->name, code);
		break;
	}
	case RT_EV_SOCK_ARRIVAL: {
		struct rt_ev_sock_arrival *e = (void *)h;

		if (e->data_ns)
			e->data_ns += d;
		if (e->established_ns)
			e->established_ns += d;
		break;
	}
	case RT_EV_SOCK_CLOSE:
	case RT_EV_SOCK_SHUTDOWN:
		((struct rt_ev_sock_close *)h)->enter_ns += d;
		break;
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END: {
		struct rt_ev_mark *e = (void *)h;

		map_ids(e->request_id, strnlen(e->request_id, RT_ID_LEN), t->name, code);
		break;
	}
	case RT_EV_MARK_STEP_MEMBER: {
		struct rt_ev_mark_step *e = (void *)h;

		map_ids(e->request_id, strnlen(e->request_id, RT_ID_LEN), t->name, code);
		break;
	}
	case RT_EV_MARK_BIND: {
		struct rt_ev_mark_bind *e = (void *)h;

		map_ids(e->engine_id, strnlen(e->engine_id, RT_ID_LEN), t->name, code);
		map_ids(e->request_id, strnlen(e->request_id, RT_ID_LEN), t->name, code);
		break;
	}
	case RT_EV_CUDA_API_ENTER:
	case RT_EV_CUDA_API_EXIT: {
		struct rt_ev_cuda_api *e = (void *)h;

		e->enter_ns += d;
		if (e->corr_id)
			e->corr_id += corr_off;
		break;
	}
	case RT_EV_GPU_KERNEL: {
		struct rt_ev_gpu_kernel *e = (void *)h;

		e->end_ns += d;
		e->corr_id += corr_off;
		break;
	}
	default:
		break;
	}
	return h;
}

struct ent {
	uint64_t key;
	uint32_t k;
	uint32_t i;
};

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->k != y->k)
		return x->k < y->k ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int write_recording(const char *path, uint32_t copies, uint64_t stagger, uint64_t *n_out)
{
	struct rt_trace_writer_opts wo = {
		.host = RT_GEN_HOST,
		.boot_id = RT_GEN_BOOT_ID,
		.realtime_ns = RT_GEN_REALTIME_START,
		.monotonic_ns = RT_GEN_MONO_START,
	};
	struct rt_trace_writer *w = NULL;
	size_t total = 0, e = 0, i;
	uint64_t start_min[N_SRC], all;
	struct ent *ents = NULL;
	uint32_t *pos = NULL, lo = 0, k;
	int err = -ENOMEM, s;

	for (k = 0; k < copies; k++)
		total += tmpls[k % n_tmpls].n;
	ents = malloc(total * sizeof(*ents));
	pos = calloc(copies, sizeof(*pos));
	if (!ents || !pos)
		goto cleanup;
	for (k = 0; k < copies; k++) {
		const struct tmpl *t = &tmpls[k % n_tmpls];

		for (i = 0; i < t->n; i++)
			ents[e++] = (struct ent){ t->key[i] + k * stagger, k, (uint32_t)i };
	}
	qsort(ents, total, sizeof(*ents), ent_cmp);
	for (s = 0; s < N_SRC; s++) {
		start_min[s] = UINT64_MAX;
		for (i = 0; i < n_tmpls; i++)
			if (tmpls[i].sufmin[s][0] < start_min[s])
				start_min[s] = tmpls[i].sufmin[s][0];
	}
	w = rt_trace_writer__open(path, &wo);
	if (!w) {
		err = -errno;
		goto cleanup;
	}
	for (s = 1; s < N_SRC; s++) {
		struct rt_ev_source_info si;

		memset(&si, 0, sizeof(si));
		si.hdr.kind = RT_EV_SOURCE_INFO;
		si.hdr.size = sizeof(si);
		si.hdr.source = (uint32_t)s;
		si.hdr.ts_ns = RT_GEN_MONO_START;
		snprintf(si.name, sizeof(si.name), s == 1 ? "bpf" : "markers");
		err = rt_trace_writer__write(w, &si.hdr);
		if (err)
			goto cleanup;
	}
	for (e = 0; e < total; e++) {
		const struct tmpl *t = &tmpls[ents[e].k % n_tmpls];

		err = rt_trace_writer__write(
			w, copy_rec(t, ents[e].i, ents[e].k, (uint64_t)ents[e].k * stagger));
		if (err)
			goto cleanup;
		pos[ents[e].k]++;
		if ((e & 255) != 255)
			continue;
		/* each source's watermark: the oldest record any copy has still to send */
		while (lo < copies && pos[lo] == tmpls[lo % n_tmpls].n)
			lo++;
		/*
		 * and the daemon's (source 0: the writer's CLOCK records), as
		 * reqtraced writes one: the oldest record of any source to come
		 */
		all = UINT64_MAX;
		for (s = N_SRC; s-- > 0;) {
			struct rt_ev_watermark wm;
			uint64_t min = UINT64_MAX;

			if (!s)
				min = all;

			for (k = lo; k < copies && s; k++) {
				const struct tmpl *tk = &tmpls[k % n_tmpls];
				uint64_t v = tk->sufmin[s][pos[k]];

				if (start_min[s] != UINT64_MAX &&
				    start_min[s] + (uint64_t)k * stagger >= min)
					break; /* no later copy can hold anything older */
				if (v != UINT64_MAX && v + (uint64_t)k * stagger < min)
					min = v + (uint64_t)k * stagger;
			}
			if (min == UINT64_MAX)
				continue;
			if (min < all)
				all = min;
			memset(&wm, 0, sizeof(wm));
			wm.hdr.kind = RT_EV_WATERMARK;
			wm.hdr.size = sizeof(wm);
			wm.hdr.source = (uint32_t)s;
			wm.hdr.ts_ns = min;
			err = rt_trace_writer__write(w, &wm.hdr);
			if (err)
				goto cleanup;
		}
	}
	err = rt_trace_writer__close(w);
	w = NULL;
	if (!err) {
		struct rt_trace_reader *rd = rt_trace_reader__open(path, NULL);
		const struct rt_event_hdr *ev;

		*n_out = 0;
		if (!rd)
			return -errno;
		while ((err = rt_trace_reader__next(rd, &ev)) == 1)
			++*n_out;
		if (err < 0)
			fprintf(stderr, "bench_pipeline: %s\n", rt_trace_reader__error(rd));
		rt_trace_reader__free(rd);
	}
cleanup:
	if (w)
		rt_trace_writer__close(w);
	free(ents);
	free(pos);
	return err;
}

/* ---- the measurements --------------------------------------------------------- */

enum stage { ST_READ, ST_MERGE, ST_PIPELINE, ST_JSON, ST__N };

static const char *const stage_name[ST__N] = {
	"read",
	"read+merge",
	"pipeline (store)",
	"pipeline+JSON",
};

struct run {
	struct rt_store *store;
	struct rt_jsonw w;
	bool json;
	FILE *dump;
	uint64_t spans, json_bytes;
};

static void on_span(const struct rt_span *s, void *ctx)
{
	struct run *r = ctx;

	r->spans++;
	rt_store__add(r->store, s);
	if (r->json) {
		rt_jsonw_reset(&r->w);
		rt_span_to_json(&r->w, s);
		r->json_bytes += strlen(rt_jsonw_str(&r->w));
		if (r->dump)
			fprintf(r->dump, "%s\n", rt_jsonw_str(&r->w));
	}
}

static int count_merged(const struct rt_event_hdr *ev, unsigned int flags, void *ctx)
{
	(void)flags;
	*(uint64_t *)ctx += ev->size;
	return 0;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct result {
	uint64_t records, spans, inflight_max, inflight_end, late, forced, pending_max;
	struct rt_correlator_stats cs;
};

static int run_stage(const char *path, enum stage st, FILE *dump, double *secs, struct result *res)
{
	struct rt_trace_reader *rd;
	struct rt_pipeline *pl = NULL;
	struct rt_merge *m = NULL;
	struct rt_pipeline_opts po = { 0 };
	struct rt_store_opts so = { 0 };
	const struct rt_event_hdr *ev;
	struct run r = { 0 };
	uint64_t n = 0, sink = 0;
	double t0;
	int err;

	memset(res, 0, sizeof(*res));
	/* the late source holds up to ~45 ms of records back (tests/gen/deliver.c) */
	po.merge.max_pending = MERGE_PENDING;
	po.merge.max_bytes = MERGE_BYTES;
	if (st >= ST_PIPELINE) {
		r.store = rt_store__new(&so);
		r.json = st == ST_JSON;
		r.dump = dump;
		rt_jsonw_init(&r.w, 0);
		po.corr.on_span = on_span;
		po.corr.ctx = &r;
		if (!r.store)
			return -ENOMEM;
	}
	t0 = cpu_s();
	rd = rt_trace_reader__open(path, NULL);
	if (!rd)
		return -errno;
	if (st == ST_MERGE)
		m = rt_merge__new(&po.merge);
	else if (st >= ST_PIPELINE)
		pl = rt_pipeline__new(&po);
	while ((err = rt_trace_reader__next(rd, &ev)) == 1) {
		n++;
		if (m) {
			rt_merge__push_release(m, ev, count_merged, &sink);
			if (ev->kind == RT_EV_WATERMARK)
				rt_merge__drain(m, count_merged, &sink);
		} else if (pl) {
			rt_pipeline__push(pl, ev);
			if ((n & 65535) == 0) {
				struct rt_correlator_stats cs;

				rt_correlator__stats(rt_pipeline__correlator(pl), &cs);
				if (cs.requests_inflight > res->inflight_max)
					res->inflight_max = cs.requests_inflight;
			}
		} else {
			sink += ev->size;
		}
	}
	if (m)
		rt_merge__flush(m, count_merged, &sink);
	if (pl)
		res->inflight_end = rt_pipeline__flush(pl);
	*secs = cpu_s() - t0;
	res->records = n;
	res->spans = r.spans;
	if (m || pl) {
		struct rt_merge_stats ms;

		rt_merge__stats(m ? m : rt_pipeline__merge(pl), &ms);
		res->late = ms.late;
		res->forced = ms.forced;
		res->pending_max = ms.pending_max;
	}
	if (pl)
		rt_correlator__stats(rt_pipeline__correlator(pl), &res->cs);
	if (err < 0)
		fprintf(stderr, "bench_pipeline: %s\n", rt_trace_reader__error(rd));
	rt_pipeline__free(pl);
	rt_merge__free(m);
	rt_trace_reader__free(rd);
	rt_store__free(r.store);
	rt_jsonw_fini(&r.w);
	return err < 0 ? err : (sink == 1 ? 1 : 0);
}

/*
 * --kinds: where the correlator's time goes, per record kind. The same
 * merge and correlator as the pipeline stage, wired here so that each
 * record's hand-over can be timed (CLOCK_MONOTONIC, the pair's own cost
 * measured and subtracted). Not part of the table: the timer costs more
 * than some records do.
 */
struct kinds {
	struct rt_correlator *corr;
	uint64_t ns[RT_EV__MAX], n[RT_EV__MAX];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int timed_correlate(const struct rt_event_hdr *ev, unsigned int flags, void *ctx)
{
	struct kinds *k = ctx;
	uint64_t t = mono_ns();

	rt_correlator__event(k->corr, ev, flags & RT_MERGE_LATE);
	k->ns[ev->kind] += mono_ns() - t;
	k->n[ev->kind]++;
	return 0;
}

static const char *kind_name(unsigned int kind)
{
	static char buf[16];
	const char *n = rt_event_kind_name(kind);

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "kind %u", kind);
	return buf;
}

static int run_kinds(const char *path)
{
	struct rt_merge_opts mo = { .max_pending = MERGE_PENDING, .max_bytes = MERGE_BYTES };
	struct rt_correlator_opts co = { 0 };
	struct rt_store_opts so = { 0 };
	struct run r = { 0 };
	struct kinds *k = calloc(1, sizeof(*k));
	struct rt_trace_reader *rd = NULL;
	struct rt_merge *m = NULL;
	const struct rt_event_hdr *ev;
	uint64_t t0, pair = UINT64_MAX, tot = 0, n = 0;
	unsigned int i;
	int err = -ENOMEM;

	r.store = rt_store__new(&so);
	co.on_span = on_span;
	co.ctx = &r;
	if (!k || !r.store)
		goto cleanup;
	k->corr = rt_correlator__new(&co);
	m = rt_merge__new(&mo);
	rd = rt_trace_reader__open(path, NULL);
	if (!k->corr || !m || !rd)
		goto cleanup;
	for (i = 0; i < 1000; i++) {
		t0 = mono_ns();
		t0 = mono_ns() - t0;
		pair = t0 < pair ? t0 : pair;
	}
	while ((err = rt_trace_reader__next(rd, &ev)) == 1) {
		rt_merge__push_release(m, ev, timed_correlate, k);
		if (ev->kind == RT_EV_WATERMARK) {
			rt_merge__drain(m, timed_correlate, k);
			rt_correlator__advance(k->corr, rt_merge__horizon(m));
		}
	}
	rt_merge__flush(m, timed_correlate, k);
	rt_correlator__finish(k->corr);
	for (i = 0; i < RT_EV__MAX; i++) {
		k->ns[i] -= k->n[i] * pair < k->ns[i] ? k->n[i] * pair : k->ns[i];
		tot += k->ns[i];
		n += k->n[i];
	}
	printf("correlator time per record kind (timer pair %llu ns subtracted):\n",
	       (unsigned long long)pair);
	printf("%-18s %10s %10s %8s\n", "kind", "records", "ns/record", "share");
	for (i = 0; i < RT_EV__MAX; i++)
		if (k->n[i])
			printf("%-18s %10llu %10.0f %7.1f%%\n", kind_name(i),
			       (unsigned long long)k->n[i], (double)k->ns[i] / k->n[i],
			       tot ? 100.0 * k->ns[i] / tot : 0.0);
	printf("%-18s %10llu %10.0f\n", "all", (unsigned long long)n, n ? (double)tot / n : 0.0);
	err = 0;
cleanup:
	rt_trace_reader__free(rd);
	rt_merge__free(m);
	if (k)
		rt_correlator__free(k->corr);
	free(k);
	rt_store__free(r.store);
	return err < 0 ? err : 0;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "copies", required_argument, NULL, 'c' },
		{ "stagger-us", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'r' },
		{ "file", required_argument, NULL, 'f' },
		{ "keep", no_argument, NULL, 'k' },
		{ "only", required_argument, NULL, 'o' },
		{ "dump", required_argument, NULL, 'd' },
		{ "one-group", no_argument, NULL, 'g' },
		{ "kinds", no_argument, NULL, 'K' },
		{ "replay", required_argument, NULL, 'R' },
		{ 0 },
	};
	uint32_t copies = 10000;
	uint64_t stagger = 80 * US, n_rec = 0;
	int reps = 5, only = -1, c, err, st, i;
	const char *path = NULL, *dump = NULL, *replay = NULL;
	char defpath[256];
	bool keep = false, kinds = false;
	double *secs;
	struct result res[ST__N] = { 0 };

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			copies = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			stagger = strtoull(optarg, NULL, 0) * US;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'f':
			path = optarg;
			break;
		case 'k':
			keep = true;
			break;
		case 'o':
			only = atoi(optarg);
			break;
		case 'd':
			dump = optarg;
			break;
		case 'g':
			one_group = true;
			break;
		case 'K':
			kinds = true;
			break;
		case 'R':
			replay = optarg;
			break;
		default:
			fprintf(stderr, "usage: bench_pipeline [--copies N] [--stagger-us U] "
					"[--reps R] [--file PATH] [--keep] [--only 0-3] [--dump F] "
					"[--one-group] [--kinds] [--replay REC]\n");
			return 2;
		}
	}
	if (!copies || copies > 200000 || reps < 1) {
		fprintf(stderr, "bench_pipeline: --copies in [1, 200000], --reps >= 1\n");
		return 2;
	}
	if (replay) {
		/* an existing recording, left in place: its records counted as the reader reads them */
		path = replay;
		keep = true;
	} else if (!path) {
		snprintf(defpath, sizeof(defpath), "/tmp/bench-pipeline-%d.rtrace", (int)getpid());
		path = defpath;
	}
	if (replay) {
		printf("recording: %s (given)\n", path);
	} else {
		err = make_templates("/tmp");
		if (!err)
			err = write_recording(path, copies, stagger, &n_rec);
		if (err) {
			fprintf(stderr, "bench_pipeline: making the recording: %s\n",
				strerror(-err));
			return 1;
		}
		printf("recording: %s, %llu records, %u copies of %zu templates, stagger %llu us\n",
		       path, (unsigned long long)n_rec, copies, n_tmpls,
		       (unsigned long long)(stagger / US));
	}
	if (dump) {
		/* every span as JSON, to compare two builds; not timed */
		FILE *f = fopen(dump, "w");
		double s;

		if (!f || run_stage(path, ST_JSON, f, &s, &res[ST_JSON]) < 0 || fclose(f)) {
			fprintf(stderr, "bench_pipeline: --dump %s failed\n", dump);
			return 1;
		}
	}
	if (kinds && run_kinds(path) < 0) {
		fprintf(stderr, "bench_pipeline: --kinds failed\n");
		return 1;
	}
	secs = calloc((size_t)reps * ST__N, sizeof(*secs));
	if (!secs)
		return 1;
	/* interleaved, so that a busy neighbour slows every stage alike */
	for (i = 0; i < reps; i++) {
		for (st = 0; st < ST__N; st++) {
			if (only >= 0 && st != only)
				continue;
			err = run_stage(path, (enum stage)st, NULL, &secs[st * reps + i], &res[st]);
			if (err < 0) {
				fprintf(stderr, "bench_pipeline: %s: %s\n", stage_name[st],
					strerror(-err));
				return 1;
			}
		}
	}
	printf("%-18s %12s %12s %12s %12s  (M records per CPU-second, %d reps)\n", "stage",
	       "median", "min", "max", "ns/record", reps);
	for (st = 0; st < ST__N; st++) {
		double *v = &secs[st * reps], med;

		if (only >= 0 && st != only)
			continue;
		qsort(v, (size_t)reps, sizeof(*v), dbl_cmp);
		med = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
		printf("%-18s %12.2f %12.2f %12.2f %12.1f\n", stage_name[st],
		       res[st].records / med / 1e6, res[st].records / v[reps - 1] / 1e6,
		       res[st].records / v[0] / 1e6, med * 1e9 / res[st].records);
	}
	printf("spans %llu, in flight max %llu (sampled), left at end %llu; merge late %llu, "
	       "forced %llu, pending max %llu; correlator invalid %llu, late %llu, "
	       "dropped requests %llu\n",
	       (unsigned long long)res[ST_PIPELINE].spans,
	       (unsigned long long)res[ST_PIPELINE].inflight_max,
	       (unsigned long long)res[ST_PIPELINE].inflight_end,
	       (unsigned long long)res[ST_PIPELINE].late,
	       (unsigned long long)res[ST_PIPELINE].forced,
	       (unsigned long long)res[ST_PIPELINE].pending_max,
	       (unsigned long long)res[ST_PIPELINE].cs.invalid_events,
	       (unsigned long long)res[ST_PIPELINE].cs.late_events,
	       (unsigned long long)res[ST_PIPELINE].cs.dropped_requests);
	if (!keep)
		unlink(path);
	free(secs);
	return 0;
}
