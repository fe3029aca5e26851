// SPDX-License-Identifier: BSD-2-Clause
/*
 * Chrome Trace Event Format writer (export/chrome.h). Perfetto's JSON
 * importer drops slices of one track that overlap without nesting, so every
 * track is laid out here to nest: overlapping phase intervals and device
 * work move to extra lanes, and a thread's slices that several requests
 * share are cut where the set of requests changes.
 */
#include "export/chrome.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "probes/gpu_probes.h"

/* the correlator's clamp (correlate/gpu.h RT_GPU_WAIT_MAX_NS): an hour */
#define GPU_DUR_MAX_NS (3600ULL * 1000000000ULL)

struct out {
	FILE *f;
	struct rt_jsonw w; /* args objects and quoted strings */
	bool first;
	uint32_t next_req_tid, next_gpu_pid, next_gpu_tid;
	uint32_t *pids; /* server processes already named */
	size_t n_pids, cap_pids;
	struct rt_chrome_stats st;
};

static void put_str(struct out *o, const char *s)
{
	rt_jsonw_reset(&o->w);
	rt_jsonw_str_val(&o->w, s);
	fputs(rt_jsonw_str(&o->w), o->f);
}

/* ns as microseconds with three decimals, from the integer: no rounding */
static void put_us(struct out *o, uint64_t ns)
{
	fprintf(o->f, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

/* Opens an event: {"ph":..,"cat":..,"name":..,"pid":..,"tid":..,"ts":.. */
static void ev_open(struct out *o, const char *ph, const char *cat, const char *name, uint32_t pid,
		    uint32_t tid, uint64_t ts_ns)
{
	fprintf(o->f, "%s\n{\"ph\":\"%s\",", o->first ? "" : ",", ph);
	o->first = false;
	if (cat) {
		fputs("\"cat\":", o->f);
		put_str(o, cat);
		fputc(',', o->f);
	}
	fputs("\"name\":", o->f);
	put_str(o, name);
	fprintf(o->f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":", pid, tid);
	put_us(o, ts_ns);
}

/* A complete event; its args object is open in o->w for the caller to fill. */
static void x_open(struct out *o, const char *cat, const char *name, uint32_t pid, uint32_t tid,
		   uint64_t start_ns, uint64_t end_ns)
{
	ev_open(o, "X", cat, name, pid, tid, start_ns);
	fputs(",\"dur\":", o->f);
	put_us(o, end_ns - start_ns);
	rt_jsonw_reset(&o->w);
	rt_jsonw_obj_open(&o->w);
}

static void ev_close(struct out *o)
{
	rt_jsonw_obj_close(&o->w);
	fprintf(o->f, ",\"args\":%s}", rt_jsonw_str(&o->w));
}

/* "M" events: process_name, thread_name and their sort indexes */
static void meta(struct out *o, const char *what, uint32_t pid, uint32_t tid, const char *name,
		 int64_t sort)
{
	char sort_what[32];

	ev_open(o, "M", NULL, what, pid, tid, 0);
	rt_jsonw_reset(&o->w);
	rt_jsonw_obj_open(&o->w);
	rt_jsonw_key(&o->w, "name");
	rt_jsonw_str_val(&o->w, name);
	ev_close(o);
	if (sort < 0)
		return;
	snprintf(sort_what, sizeof(sort_what), "%s_sort_index",
		 strcmp(what, "process_name") ? "thread" : "process");
	ev_open(o, "M", NULL, sort_what, pid, tid, 0);
	rt_jsonw_reset(&o->w);
	rt_jsonw_obj_open(&o->w);
	rt_jsonw_key(&o->w, "sort_index");
	rt_jsonw_int(&o->w, sort);
	ev_close(o);
}

/* ---- request tracks ---------------------------------------------------- */

static int cmp_iv(const void *a, const void *b)
{
	const struct rt_span_interval *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns) /* longer first, so a nested one follows its parent */
		return x->end_ns > y->end_ns ? -1 : 1;
	return 0;
}

static uint32_t req_lane(struct out *o, const struct rt_span *s, unsigned lane)
{
	uint32_t tid = RT_CHROME_TID_REQUEST_BASE + ++o->next_req_tid;
	char name[RT_SPAN_ID_MAX + 16];

	if (lane)
		snprintf(name, sizeof(name), "%s (%u)", s->request_id, lane + 1);
	else
		snprintf(name, sizeof(name), "%s", s->request_id);
	meta(o, "thread_name", RT_CHROME_PID_REQUESTS, tid, name, o->next_req_tid);
	o->st.request_tracks++;
	return tid;
}

static void write_request(struct out *o, const struct rt_span *s)
{
	struct rt_span_interval iv[RT_SPAN_INTERVALS_MAX];
	uint64_t last_end[RT_SPAN_INTERVALS_MAX + 1];
	uint32_t tid[RT_SPAN_INTERVALS_MAX + 1];
	uint64_t origin = rt_span_origin_ns(s);
	bool whole = origin && s->end_ns >= origin;
	unsigned n =
		s->n_intervals < RT_SPAN_INTERVALS_MAX ? s->n_intervals : RT_SPAN_INTERVALS_MAX;
	unsigned lanes = 1, i, k;
	char name[RT_SPAN_METHOD_MAX + RT_SPAN_PATH_MAX + 2];

	tid[0] = req_lane(o, s, 0);
	last_end[0] = whole ? origin : 0;
	if (whole) {
		snprintf(name, sizeof(name), "%s%s%s", s->method, s->method[0] ? " " : "",
			 s->path[0] ? s->path : s->request_id);
		x_open(o, "request", name, RT_CHROME_PID_REQUESTS, tid[0], origin, s->end_ns);
		rt_jsonw_key(&o->w, "request_id");
		rt_jsonw_str_val(&o->w, s->request_id);
		if (s->trace_id[0]) {
			rt_jsonw_key(&o->w, "trace_id");
			rt_jsonw_str_val(&o->w, s->trace_id);
		}
		rt_jsonw_key(&o->w, "status");
		rt_jsonw_int(&o->w, s->status);
		rt_jsonw_key(&o->w, "outcome");
		rt_jsonw_str_val(&o->w, rt_outcome_name(s->outcome));
		rt_jsonw_key(&o->w, "flags");
		rt_jsonw_uint(&o->w, s->flags);
		rt_jsonw_key(&o->w, "intervals_dropped");
		rt_jsonw_uint(&o->w, s->intervals_dropped);
		ev_close(o);
	}
	memcpy(iv, s->intervals, n * sizeof(iv[0]));
	qsort(iv, n, sizeof(iv[0]), cmp_iv);
	for (i = 0; i < n; i++) {
		if (iv[i].end_ns < iv[i].start_ns) {
			o->st.intervals_bad++;
			continue;
		}
		/* lane 0 under the request slice when it nests there, else a lane it fits */
		if (whole && iv[i].start_ns >= last_end[0] && iv[i].end_ns <= s->end_ns)
			k = 0;
		else if (!whole && iv[i].start_ns >= last_end[0])
			k = 0;
		else
			for (k = 1; k < lanes && last_end[k] > iv[i].start_ns; k++)
				;
		if (k == lanes) {
			tid[k] = req_lane(o, s, k);
			lanes++;
		}
		last_end[k] = iv[i].end_ns;
		x_open(o, "phase", rt_phase_name(iv[i].phase), RT_CHROME_PID_REQUESTS, tid[k],
		       iv[i].start_ns, iv[i].end_ns);
		rt_jsonw_key(&o->w, "request_id");
		rt_jsonw_str_val(&o->w, s->request_id);
		rt_jsonw_key(&o->w, "source");
		rt_jsonw_str_val(&o->w, rt_phase_source_name(iv[i].source));
		ev_close(o);
		o->st.intervals++;
	}
}

/* ---- thread tracks ----------------------------------------------------- */

struct cslice {
	uint64_t start_ns, end_ns;
	uint32_t tid;
	uint32_t span; /* index into spans */
	bool shared;
};

static int cmp_cslice(const void *a, const void *b)
{
	const struct cslice *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->span != y->span)
		return x->span < y->span ? -1 : 1;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int name_process(struct out *o, const struct rt_span *s)
{
	char name[RT_SPAN_COMM_MAX + 1];
	size_t i;

	for (i = 0; i < o->n_pids; i++)
		if (o->pids[i] == s->pid)
			return 0;
	if (o->n_pids == o->cap_pids) {
		size_t cap = o->cap_pids ? o->cap_pids * 2 : 16;
		uint32_t *p = realloc(o->pids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		o->pids = p;
		o->cap_pids = cap;
	}
	o->pids[o->n_pids++] = s->pid;
	snprintf(name, sizeof(name), "%s", s->comm[0] ? s->comm : "server");
	meta(o, "process_name", s->pid, 0, name, -1);
	return 0;
}

/* The thread's comm from any span that lists it. */
static void thread_name(const struct rt_span *spans, const struct cslice *c, size_t n, char *out,
			size_t len)
{
	size_t i;
	uint32_t t;

	for (i = 0; i < n; i++) {
		const struct rt_span_cpu *cpu = &spans[c[i].span].cpu;

		for (t = 0; t < cpu->n_threads && t < RT_SPAN_THREADS_MAX; t++)
			if (cpu->threads[t].tid == c[0].tid && cpu->threads[t].comm[0]) {
				snprintf(out, len, "%s", cpu->threads[t].comm);
				return;
			}
	}
	snprintf(out, len, "tid %" PRIu32, c[0].tid);
}

/* One piece of a thread's time where the set of slices covering it is constant. */
static void write_piece(struct out *o, const struct rt_span *spans, const struct cslice *c,
			const size_t *act, size_t n_act, uint32_t pid, uint64_t from, uint64_t to)
{
	char name[RT_SPAN_ID_MAX + 24];
	size_t i, j, n_req = 0;
	bool shared = false;

	/* a request with two slices covering the piece (it should not happen) counts once */
	for (i = 0; i < n_act; i++) {
		for (j = 0; j < i && c[act[j]].span != c[act[i]].span; j++)
			;
		if (j == i)
			n_req++;
		shared |= c[act[i]].shared;
	}
	if (n_req > 1)
		snprintf(name, sizeof(name), "%s +%zu", spans[c[act[0]].span].request_id,
			 n_req - 1);
	else
		snprintf(name, sizeof(name), "%s", spans[c[act[0]].span].request_id);
	x_open(o, "cpu", name, pid, c[act[0]].tid, from, to);
	rt_jsonw_key(&o->w, "requests");
	rt_jsonw_arr_open(&o->w);
	for (i = 0; i < n_act; i++) {
		for (j = 0; j < i && c[act[j]].span != c[act[i]].span; j++)
			;
		if (j == i)
			rt_jsonw_str_val(&o->w, spans[c[act[i]].span].request_id);
	}
	rt_jsonw_arr_close(&o->w);
	rt_jsonw_key(&o->w, "shared");
	rt_jsonw_bool(&o->w, shared);
	ev_close(o);
	o->st.cpu_slices++;
}

/* c[0..n) are one thread's slices, by start: cut at every start and end. */
static int write_thread(struct out *o, const struct rt_span *spans, const struct cslice *c,
			size_t n)
{
	uint64_t *b = malloc(2 * n * sizeof(*b));
	size_t *act = malloc(n * sizeof(*act));
	size_t nb = 0, n_act = 0, next = 0, i, j, k;
	uint32_t pid = spans[c[0].span].pid;
	char name[RT_SPAN_COMM_MAX + 1];
	int err = 0;

	if (!b || !act) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = name_process(o, &spans[c[0].span]);
	if (err)
		goto cleanup;
	thread_name(spans, c, n, name, sizeof(name));
	meta(o, "thread_name", pid, c[0].tid, name, -1);
	o->st.thread_tracks++;
	for (i = 0; i < n; i++) {
		b[nb++] = c[i].start_ns;
		b[nb++] = c[i].end_ns;
	}
	qsort(b, nb, sizeof(*b), cmp_u64);
	for (i = 0, j = 0; i < nb; i++)
		if (!j || b[i] != b[j - 1])
			b[j++] = b[i];
	nb = j;
	for (i = 0; i + 1 < nb; i++) {
		for (j = 0, k = 0; j < n_act; j++)
			if (c[act[j]].end_ns > b[i])
				act[k++] = act[j];
		n_act = k;
		for (; next < n && c[next].start_ns <= b[i]; next++)
			if (c[next].end_ns > b[i])
				act[n_act++] = next;
		if (n_act)
			write_piece(o, spans, c, act, n_act, pid, b[i], b[i + 1]);
	}
cleanup:
	free(b);
	free(act);
	return err;
}

static int write_threads(struct out *o, const struct rt_span *spans, size_t n)
{
	struct cslice *c;
	size_t total = 0, m = 0, i, j;
	uint32_t k;
	int err = 0;

	for (i = 0; i < n; i++)
		total += spans[i].cpu.n_slices < RT_SPAN_SLICES_MAX ? spans[i].cpu.n_slices :
								      RT_SPAN_SLICES_MAX;
	if (!total)
		return 0;
	c = malloc(total * sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		for (k = 0; k < spans[i].cpu.n_slices && k < RT_SPAN_SLICES_MAX; k++) {
			const struct rt_span_slice *sl = &spans[i].cpu.slices[k];

			if (sl->end_ns <= sl->start_ns)
				continue; /* nothing to draw */
			c[m++] = (struct cslice){ .start_ns = sl->start_ns,
						  .end_ns = sl->end_ns,
						  .tid = sl->tid,
						  .span = (uint32_t)i,
						  .shared = sl->shared };
		}
	qsort(c, m, sizeof(*c), cmp_cslice);
	for (i = 0; i < m && !err; i = j) {
		for (j = i + 1; j < m && c[j].tid == c[i].tid; j++)
			;
		err = write_thread(o, spans, c + i, j - i);
	}
	free(c);
	return err;
}

/* ---- GPU tracks -------------------------------------------------------- */

int rt_chrome_gpu_from_event(const struct rt_event_hdr *ev, struct rt_chrome_gpu *out)
{
	memset(out, 0, sizeof(*out));
	switch (ev->kind) {
	case RT_EV_GPU_KERNEL: {
		const struct rt_ev_gpu_kernel *g = (const void *)ev;

		if (ev->size < sizeof(*g))
			return -EINVAL;
		out->end_ns = g->end_ns;
		out->corr_id = g->corr_id;
		out->device = g->device;
		out->stream = g->stream;
		memcpy(out->name, g->name, RT_KERNEL_NAME_LEN);
		break;
	}
	case RT_EV_GPU_MEMCPY: {
		const struct rt_ev_gpu_memcpy *g = (const void *)ev;

		if (ev->size < sizeof(*g) || g->copy_kind > RT_COPY_H2H)
			return -EINVAL;
		out->end_ns = g->end_ns;
		out->corr_id = g->corr_id;
		out->bytes = g->bytes;
		out->device = g->device;
		out->stream = g->stream;
		out->copy_kind = g->copy_kind;
		break;
	}
	case RT_EV_GPU_MEMSET: {
		const struct rt_ev_gpu_memset *g = (const void *)ev;

		if (ev->size < sizeof(*g))
			return -EINVAL;
		out->end_ns = g->end_ns;
		out->corr_id = g->corr_id;
		out->bytes = g->bytes;
		out->device = g->device;
		out->stream = g->stream;
		break;
	}
	default:
		return 0;
	}
	if (out->end_ns < ev->ts_ns)
		return -EINVAL;
	out->start_ns = ev->ts_ns;
	if (out->end_ns - out->start_ns > GPU_DUR_MAX_NS)
		out->end_ns = out->start_ns + GPU_DUR_MAX_NS;
	out->kind = ev->kind;
	out->pid = ev->pid;
	return 1;
}

static int cmp_gpu(const void *a, const void *b)
{
	const struct rt_chrome_gpu *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns > y->end_ns ? -1 : 1;
	return 0;
}

static void gpu_slice(struct out *o, const struct rt_chrome_gpu *g, uint32_t pid, uint32_t tid)
{
	char name[RT_KERNEL_NAME_LEN + 16];
	const char *cat;

	switch (g->kind) {
	case RT_EV_GPU_KERNEL:
		cat = "kernel";
		snprintf(name, sizeof(name), "%s", g->name[0] ? g->name : "kernel");
		break;
	case RT_EV_GPU_MEMCPY:
		cat = "memcpy";
		snprintf(name, sizeof(name), "memcpy %s", rt_gpu_copy_kind_name(g->copy_kind));
		break;
	default:
		cat = "memset";
		snprintf(name, sizeof(name), "memset");
		break;
	}
	x_open(o, cat, name, pid, tid, g->start_ns, g->end_ns);
	rt_jsonw_key(&o->w, "corr_id");
	rt_jsonw_uint(&o->w, g->corr_id);
	if (g->kind != RT_EV_GPU_KERNEL) {
		rt_jsonw_key(&o->w, "bytes");
		rt_jsonw_uint(&o->w, g->bytes);
	}
	rt_jsonw_key(&o->w, "device");
	rt_jsonw_uint(&o->w, g->device);
	rt_jsonw_key(&o->w, "stream");
	rt_jsonw_uint(&o->w, g->stream);
	ev_close(o);
	o->st.gpu_slices++;
}

/* g[0..n): one stream's work, by start; lanes only where records overlap */
static int write_stream(struct out *o, const struct rt_chrome_gpu *g, size_t n, uint32_t pid)
{
	uint64_t *last = NULL;
	uint32_t *tid = NULL;
	size_t lanes = 0, cap = 0, i, k;
	char name[48];
	int err = 0;

	for (i = 0; i < n; i++) {
		for (k = 0; k < lanes && last[k] > g[i].start_ns; k++)
			;
		if (k == lanes) {
			if (lanes == cap) {
				size_t nc = cap ? cap * 2 : 4;
				uint64_t *nl = realloc(last, nc * sizeof(*nl));
				uint32_t *nt;

				if (!nl) {
					err = -ENOMEM;
					goto cleanup;
				}
				last = nl;
				nt = realloc(tid, nc * sizeof(*nt));
				if (!nt) {
					err = -ENOMEM;
					goto cleanup;
				}
				tid = nt;
				cap = nc;
			}
			tid[k] = RT_CHROME_TID_GPU_BASE + ++o->next_gpu_tid;
			if (k)
				snprintf(name, sizeof(name), "stream %" PRIu32 " (%zu)",
					 g[0].stream, k + 1);
			else
				snprintf(name, sizeof(name), "stream %" PRIu32, g[0].stream);
			meta(o, "thread_name", pid, tid[k], name, o->next_gpu_tid);
			o->st.gpu_tracks++;
			lanes++;
		}
		last[k] = g[i].end_ns;
		gpu_slice(o, &g[i], pid, tid[k]);
	}
cleanup:
	free(last);
	free(tid);
	return err;
}

static int write_gpu(struct out *o, struct rt_chrome_gpu *g, size_t n)
{
	size_t i, j;
	uint32_t pid = 0;
	char name[64];
	int err = 0;

	if (!n)
		return 0;
	qsort(g, n, sizeof(*g), cmp_gpu);
	for (i = 0; i < n && !err; i = j) {
		if (!i || g[i].pid != g[i - 1].pid || g[i].device != g[i - 1].device) {
			pid = RT_CHROME_PID_GPU_BASE + ++o->next_gpu_pid;
			snprintf(name, sizeof(name), "GPU %" PRIu32 " (pid %" PRIu32 ")",
				 g[i].device, g[i].pid);
			meta(o, "process_name", pid, 0, name, o->next_gpu_pid + 1);
		}
		for (j = i + 1; j < n && g[j].pid == g[i].pid && g[j].device == g[i].device &&
				g[j].stream == g[i].stream;
		     j++)
			;
		err = write_stream(o, g + i, j - i, pid);
	}
	return err;
}

/* ---- the file ---------------------------------------------------------- */

struct order {
	uint64_t origin;
	size_t i;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->origin != y->origin)
		return x->origin < y->origin ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int rt_chrome_write(FILE *f, const struct rt_span *spans, size_t n, struct rt_chrome_gpu *gpu,
		    size_t n_gpu, struct rt_chrome_stats *st)
{
	struct out o = { .f = f, .first = true };
	struct order *ord = NULL;
	size_t i;
	int err = 0;

	rt_jsonw_init(&o.w, 0);
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"reqtrace\","
	      "\"clock\":\"CLOCK_MONOTONIC\"},\"traceEvents\":[",
	      f);
	if (n) {
		/* request tracks in arrival order, whatever order the spans came in */
		ord = malloc(n * sizeof(*ord));
		if (!ord) {
			err = -ENOMEM;
			goto cleanup;
		}
		for (i = 0; i < n; i++)
			ord[i] = (struct order){ rt_span_origin_ns(&spans[i]), i };
		qsort(ord, n, sizeof(*ord), cmp_order);
		meta(&o, "process_name", RT_CHROME_PID_REQUESTS, 0, "requests", 0);
		for (i = 0; i < n; i++)
			write_request(&o, &spans[ord[i].i]);
	}
	err = write_threads(&o, spans, n);
	if (!err)
		err = write_gpu(&o, gpu, n_gpu);
	if (err)
		goto cleanup;
	fputs("\n]}\n", f);
	if (fflush(f) || ferror(f))
		err = -EIO;
cleanup:
	if (st)
		*st = o.st;
	free(ord);
	free(o.pids);
	rt_jsonw_fini(&o.w);
	return err;
}
