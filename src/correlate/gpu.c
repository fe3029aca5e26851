// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU work seen from the CPU (uprobes on libcuda and libnccl), attributed
 * to requests: docs/gpu.md, "Semantics" and "Attribution".
 *
 * A launch or async copy is an enqueue: it counts (launches, bytes) but
 * has no duration. A sync or blocking copy is CPU time blocked on the GPU:
 * sync_wait. A collective is an enqueue whose cost shows in the next
 * blocking wait on its stream: that wait is also comm wait.
 *
 * Who a call is for, in order: the calling thread's marker owners (claims,
 * the open step), else its I/O owners (requests whose bytes it reads or
 * writes), else the engine set: the requests of the caller's target group
 * that have been fully received and have not ended. Burst owners (rules
 * 3-4 of the CPU attribution) are not used: a blocking sync ends the burst
 * it is in, so they describe the previous step, not this one. Counts and
 * bytes are split equally and what does not divide goes to the sharers in
 * turn (a launch among four requests is one request's: each gets every
 * fourth), so the sums are exact and each request gets its share over many
 * calls; waits are wall time, and every request that waited gets all of it.
 *
 * CUPTI DRIVER records (corr_id != 0) describe the same calls as the
 * uprobes; counting both would double everything, so they are left to the
 * CUPTI stage (gpu_device.c), as are device records (kernel_ms and
 * memcpy_ms): it joins them by correlation id and charges device time to
 * the requests this file's owners() names for the DRIVER record.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "probes/gpu_probes.h"

/* CUstream handles that mean the legacy default stream */
#define CU_STREAM_LEGACY 0x1

uint64_t rt_gpu_share(uint64_t q, uint32_t n, uint32_t i, uint32_t rest)
{
	if (!n)
		return 0;
	return q / n + (i == rest ? q % n : 0);
}

void rt_gpu_stats(const struct rt_correlator *c, struct rt_gpu_stats *st)
{
	*st = c->gpu.st;
	rt_gpu_device_stats(c, st);
}

/* ---- who a call is for ------------------------------------------------------ */

static int cmp_serial(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static bool same_group(struct rt_correlator *c, const struct rt_req *r, uint32_t pid,
		       uint32_t group_id)
{
	const struct rt_proc *p;

	if (r->pid == pid)
		return true;
	if (!group_id)
		return false;
	p = rt_proc_get(c, r->pid, false);
	return p && p->group_id == group_id;
}

/* A process's engine set as last computed, and the versions it was computed at. */
struct rt_engine_set {
	uint64_t procs_ver, ver;
	uint32_t group_id;
	uint32_t n;
	uint64_t serial[RT_GPU_SHARE_MAX];
};

void rt_engine_set_free(struct rt_engine_set *s)
{
	free(s);
}

static uint64_t set_ver(const struct rt_correlator *c, const struct rt_proc *p)
{
	return p->group_id ? c->group_ver[p->group_id % RT_GROUP_VER_SLOTS] : p->set_ver;
}

/*
 * The engine set from the lists of p's group (p alone without a group):
 * what the table scan below finds, unordered. RT_GPU_SHARE_MAX + 1 when
 * there are more.
 */
static uint32_t listed_set(struct rt_correlator *c, struct rt_proc *p, uint64_t *out)
{
	struct rt_proc *q = p->group_id ? rt_hmap_get(&c->groups, p->group_id) : p;
	uint32_t n = 0;

	for (; q; q = p->group_id ? q->gnext : NULL) {
		const struct rt_req *r;

		for (r = q->reqs; r; r = r->pnext) {
			if (r->ended || r->state == RT_REQ_RECEIVING)
				continue;
			if (n == RT_GPU_SHARE_MAX)
				return RT_GPU_SHARE_MAX + 1;
			out[n++] = r->serial;
		}
	}
	return n;
}

/*
 * The engine set of pid's group, oldest request first. The request table
 * only changes on non-GPU records, so the set is reused while nothing else
 * arrived (an engine step is a run of GPU records). Each process also keeps
 * its own, valid until a request of its group enters or leaves the set
 * (rt_req_set_changed()) or processes change groups: with thousands of
 * requests in flight, the scan of the whole request table is what costs.
 * A truncated set is not kept: which requests it holds depends on the
 * table's layout.
 */
static uint32_t engine_set(struct rt_correlator *c, uint32_t pid, uint64_t *out)
{
	struct rt_gpu_state *g = &c->gpu;
	uint64_t gen = c->st.events - g->st.records + 1;
	struct rt_proc *p;
	uint32_t n = 0, group_id;
	size_t pos = 0;
	void *val;

	if (g->set_gen == gen && g->set_pid == pid) {
		memcpy(out, g->set, g->n_set * sizeof(*out));
		return g->n_set;
	}
	p = rt_proc_get(c, pid, false);
	group_id = p ? p->group_id : 0;
	if (p && p->eset && p->eset->procs_ver == c->procs_ver && p->eset->ver == set_ver(c, p) &&
	    p->eset->group_id == group_id) {
		n = p->eset->n;
		memcpy(out, p->eset->serial, n * sizeof(*out));
		goto done;
	}
	if (p && !c->orphan_reqs && !c->groups_lost) {
		n = listed_set(c, p, out);
		if (n <= RT_GPU_SHARE_MAX)
			goto sort;
		n = 0; /* truncated: which ones the scan keeps is the table's order */
	}
	while ((pos = rt_hmap_next(&c->reqs, pos, NULL, &val)) != 0) {
		const struct rt_req *r = val;

		if (r->ended || r->state == RT_REQ_RECEIVING || !same_group(c, r, pid, group_id))
			continue;
		if (n == RT_GPU_SHARE_MAX) {
			g->st.share_truncated++;
			break;
		}
		out[n++] = r->serial;
	}
sort:
	qsort(out, n, sizeof(*out), cmp_serial);
	if (p && n < RT_GPU_SHARE_MAX && (p->eset || (p->eset = malloc(sizeof(*p->eset))))) {
		p->eset->procs_ver = c->procs_ver;
		p->eset->ver = set_ver(c, p);
		p->eset->group_id = group_id;
		p->eset->n = n;
		memcpy(p->eset->serial, out, n * sizeof(*out));
	}
done:
	memcpy(g->set, out, n * sizeof(*out));
	g->n_set = n;
	g->set_pid = pid;
	g->set_gen = gen;
	return n;
}

/* Waiting in a queue (an open QUEUE marker): the engine is not working for it yet. */
static bool queued(const struct rt_req *r)
{
	return r->mark_open[RT_PHASE_QUEUE] != 0;
}

/* Live requests of ids[0..n) into who, weight 1; queued ones left out when skip_queued. */
static uint32_t resolve(struct rt_correlator *c, const uint64_t *ids, uint32_t n,
			struct rt_gpu_who *who, bool skip_queued)
{
	uint32_t i;

	who->n = 0;
	for (i = 0; i < n; i++) {
		struct rt_req *r = rt_req_get(c, ids[i]);

		if (r && !r->ended && !(skip_queued && queued(r))) {
			who->req[who->n] = r;
			who->w[who->n++] = 1;
		}
	}
	who->weight_sum = who->n;
	return who->n;
}

/*
 * The open step's members weighted by the tokens each advanced, when the
 * thread works for the step alone (no claims) and every member has its
 * count; 0 otherwise (the caller splits equally).
 */
static uint32_t step_by_tokens(struct rt_correlator *c, const struct rt_thread *t,
			       struct rt_gpu_who *who)
{
	uint32_t i;

	if (t->n_mark || !t->in_step || !t->n_step || !t->step_tok || t->n_step_tok != t->n_step)
		return 0;
	who->n = 0;
	who->weight_sum = 0;
	for (i = 0; i < t->n_step && who->n < RT_GPU_SHARE_MAX; i++) {
		struct rt_req *r = rt_req_get(c, t->step[i]);

		if (!r || r->ended)
			continue;
		who->req[who->n] = r;
		who->w[who->n++] = t->step_tok[i];
		who->weight_sum += t->step_tok[i];
	}
	if (!who->weight_sum)
		return 0; /* nobody advanced a token: split equally */
	who->split = RT_GPU_SPLIT_TOKENS;
	return who->n;
}

static uint32_t owners(struct rt_correlator *c, const struct rt_event_hdr *ev,
		       struct rt_gpu_who *who)
{
	uint64_t ids[RT_GPU_SHARE_MAX];
	struct rt_thread *t = ev->tid ? rt_hmap_get(&c->threads, ev->tid) : NULL;
	uint32_t n;

	who->n = 0;
	who->weight_sum = 0;
	who->split = RT_GPU_SPLIT_NONE;
	if (t && t->pid != ev->pid)
		t = NULL; /* a reused tid: not this thread's state */
	if (t && (t->n_mark || (t->in_step && t->n_step))) {
		if (step_by_tokens(c, t, who))
			return who->n;
		n = rt_cpu_owners(t, ids, RT_GPU_SHARE_MAX);
		/* the engine named them: a queued one listed in a step is not queued */
		if (resolve(c, ids, n, who, false)) {
			who->split = RT_GPU_SPLIT_MEMBERS;
			return who->n;
		}
	}
	if (t && t->n_io && resolve(c, t->io, t->n_io, who, true)) {
		who->split = RT_GPU_SPLIT_MEMBERS;
		return who->n;
	}
	n = engine_set(c, ev->pid, ids);
	if (resolve(c, ids, n, who, true))
		who->split = RT_GPU_SPLIT_ENGINE_SET;
	return who->n;
}

void rt_gpu_split_q(uint64_t q, const struct rt_gpu_who *who, uint32_t *turn, uint64_t *out)
{
	uint64_t given = 0;
	uint32_t i;

	if (!who->n)
		return;
	for (i = 0; i < who->n; i++) {
		/* 128-bit: a byte count times a token count can pass 2^64 */
		out[i] = who->weight_sum ?
				 (uint64_t)((unsigned __int128)q * who->w[i] / who->weight_sum) :
				 0;
		given += out[i];
	}
	if (given < q)
		out[(*turn)++ % who->n] += q - given;
}

static struct rt_gpu_acc *acc_of(struct rt_req *r)
{
	if (!r->gpu) {
		r->gpu = calloc(1, sizeof(*r->gpu));
		if (!r->gpu)
			r->span.flags |=
				RT_SPAN_INCOMPLETE; /* this request's GPU view is partial */
	}
	return r->gpu;
}

/* for gpu_device.c: the same owners and accumulators as the uprobe records */
uint32_t rt_gpu_owners(struct rt_correlator *c, const struct rt_event_hdr *ev,
		       struct rt_gpu_who *who)
{
	return owners(c, ev, who);
}

struct rt_gpu_acc *rt_gpu_acc_of(struct rt_req *r)
{
	return acc_of(r);
}

/* ---- collectives awaiting a sync --------------------------------------------- */

static bool legacy(uint64_t stream)
{
	return stream == 0 || stream == CU_STREAM_LEGACY;
}

static void nccl_enqueued(struct rt_gpu_state *g, uint32_t pid, uint64_t stream, uint64_t ts)
{
	uint32_t i, oldest = 0;

	if (legacy(stream))
		stream = 0;
	for (i = 0; i < g->n_nccl; i++)
		if (g->nccl[i].pid == pid && g->nccl[i].stream == stream)
			return;
	if (g->n_nccl == RT_GPU_STREAMS_MAX) {
		for (i = 1; i < g->n_nccl; i++)
			if (g->nccl[i].since < g->nccl[oldest].since)
				oldest = i;
		g->nccl[oldest] = g->nccl[--g->n_nccl];
		g->st.streams_evicted++;
	}
	g->nccl[g->n_nccl].pid = pid;
	g->nccl[g->n_nccl].stream = stream;
	g->nccl[g->n_nccl].since = ts;
	g->n_nccl++;
}

/*
 * A wait on `stream` (all of pid's streams when `all`) ends: were
 * collectives enqueued there since the last wait? They are waited for now.
 */
static bool nccl_waited(struct rt_gpu_state *g, uint32_t pid, uint64_t stream, bool all)
{
	bool found = false;
	uint32_t i = 0;

	while (i < g->n_nccl) {
		if (g->nccl[i].pid == pid && (all || g->nccl[i].stream == stream)) {
			g->nccl[i] = g->nccl[--g->n_nccl];
			found = true;
			continue;
		}
		i++;
	}
	return found;
}

/* ---- records ------------------------------------------------------------------ */

static void add_bytes(struct rt_gpu_acc *a, uint8_t kind, uint64_t bytes)
{
	switch (kind) {
	case RT_COPY_H2D:
		a->h2d_bytes += bytes;
		break;
	case RT_COPY_D2H:
		a->d2h_bytes += bytes;
		break;
	case RT_COPY_P2P:
		a->p2p_bytes += bytes;
		break;
	default:
		break; /* unified, device-to-device, host-to-host: no such field */
	}
}

static int64_t sat_add(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Does the wait that ended with this record follow collectives? Consumes them. */
static bool after_collectives(struct rt_gpu_state *g, const struct rt_ev_cuda_api *e)
{
	const struct rt_gpu_probe *p = rt_gpu_probe_get(e->api);
	bool all;

	switch (e->api_class) {
	case RT_CUDA_SYNC:
		/* ctx and event syncs (no stream) wait for every stream of the process */
		all = !p || p->stream_how == RT_GPU_STREAM_NONE || legacy(e->stream);
		return nccl_waited(g, e->hdr.pid, e->stream, all);
	case RT_CUDA_MEMCPY:
		/* a blocking copy runs on the legacy stream, which waits for the others */
		return nccl_waited(g, e->hdr.pid, 0, true);
	default:
		return false; /* cuStreamWaitEvent makes a stream wait, not the CPU */
	}
}

static void on_cuda(struct rt_correlator *c, const struct rt_ev_cuda_api *e)
{
	struct rt_gpu_state *g = &c->gpu;
	struct rt_gpu_who who;
	uint64_t share[RT_GPU_SHARE_MAX];
	bool timed = e->hdr.kind == RT_EV_CUDA_API_EXIT, comm = false;
	uint64_t q = 0;
	int64_t wait = 0;
	uint32_t n, i;

	if (e->corr_id) {
		g->st.cupti_driver++;
		rt_gpu_device_on_driver(c, e);
		return;
	}
	if (e->api_class > RT_CUDA_WAIT_EVENT || e->copy_kind > RT_COPY_H2H ||
	    e->enter_ns > e->hdr.ts_ns) {
		g->st.invalid++;
		return;
	}
	if (timed) {
		uint64_t d = e->hdr.ts_ns - e->enter_ns;

		if (d > RT_GPU_WAIT_MAX_NS) {
			d = RT_GPU_WAIT_MAX_NS;
			g->st.clamped++;
		}
		wait = (int64_t)d;
		comm = after_collectives(g, e);
	}
	n = owners(c, &e->hdr, &who);
	if (!n) {
		g->st.unattributed++;
		if (timed)
			g->st.unattributed_wait_ns = sat_add(g->st.unattributed_wait_ns, wait);
		return;
	}
	g->st.attributed++;
	if (e->api_class == RT_CUDA_LAUNCH || e->api_class == RT_CUDA_GRAPH_LAUNCH)
		q = 1;
	else if (e->api_class == RT_CUDA_MEMCPY || e->api_class == RT_CUDA_MEMCPY_ASYNC)
		q = e->bytes;
	/* launches and bytes by the same weights as device time (tokens, else equal) */
	rt_gpu_split_q(q, &who, &g->turn, share);
	for (i = 0; i < n; i++) {
		struct rt_req *r = who.req[i];
		struct rt_gpu_acc *a = acc_of(r);

		if (!a)
			continue;
		a->calls++;
		a->split_calls[who.split]++;
		switch (e->api_class) {
		case RT_CUDA_LAUNCH:
		case RT_CUDA_GRAPH_LAUNCH:
			a->launches += share[i];
			break;
		case RT_CUDA_MEMCPY:
		case RT_CUDA_MEMCPY_ASYNC:
			add_bytes(a, e->copy_kind, share[i]);
			break;
		default:
			break;
		}
		if (!timed)
			continue;
		a->sync_wait_ns = sat_add(a->sync_wait_ns, wait);
		if (!comm)
			continue;
		/* the probe comm wait cpu.c keeps for peer sockets: finalize.c turns it into a phase */
		a->comm_wait_ns = sat_add(a->comm_wait_ns, wait);
		if (r->span.first_token_ns)
			r->comm_after_ft = sat_add(r->comm_after_ft, wait);
		else
			r->comm_before_ft = sat_add(r->comm_before_ft, wait);
		r->comm_seen = true;
		rt_req_comm_piece(r, e->hdr.ts_ns - (uint64_t)wait, e->hdr.ts_ns);
	}
}

/* ncclDataType_t sizes (nccl.h: ncclInt8 0 ... ncclFloat8e5m2 11); 0 unknown */
static uint64_t nccl_type_size(uint32_t dt)
{
	static const uint8_t sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return dt < sizeof(sizes) ? sizes[dt] : 0;
}

/*
 * Bytes a collective moves per rank as its arguments say: count x the
 * datatype's size (collectives over NVLink are kernels, not copies: no copy
 * record carries them). Overflow or an unknown type: 0.
 */
static uint64_t nccl_bytes(const struct rt_ev_nccl *e)
{
	uint64_t sz = nccl_type_size(e->datatype);

	if (e->op == RT_NCCL_GROUP_START || e->op == RT_NCCL_GROUP_END || !sz ||
	    e->count > UINT64_MAX / sz)
		return 0;
	return e->count * sz;
}

static void on_nccl(struct rt_correlator *c, const struct rt_ev_nccl *e)
{
	struct rt_gpu_who who;
	uint64_t share[RT_GPU_SHARE_MAX];
	uint32_t n, i;

	if (e->op > RT_NCCL_GROUP_END || e->enter_ns > e->hdr.ts_ns) {
		c->gpu.st.invalid++;
		return;
	}
	/* the exit of an enqueue adds nothing (uprobes do not emit it) */
	if (e->hdr.kind != RT_EV_NCCL_ENTER)
		return;
	/* group markers carry no stream: the grouped calls named theirs */
	if (e->op != RT_NCCL_GROUP_START && e->op != RT_NCCL_GROUP_END)
		nccl_enqueued(&c->gpu, e->hdr.pid, e->stream, e->hdr.ts_ns);
	n = owners(c, &e->hdr, &who);
	if (!n) {
		c->gpu.st.unattributed++;
		return;
	}
	c->gpu.st.attributed++;
	rt_gpu_split_q(nccl_bytes(e), &who, &c->gpu.turn, share);
	for (i = 0; i < n; i++) {
		struct rt_gpu_acc *a = acc_of(who.req[i]);

		if (a) {
			a->calls++;
			a->split_calls[who.split]++;
			a->nccl_bytes += share[i];
		}
	}
}

void rt_gpu_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	struct rt_gpu_state *g = &c->gpu;

	g->st.records++;
	switch (ev->kind) {
	case RT_EV_CUDA_API_ENTER:
	case RT_EV_CUDA_API_EXIT:
		if (ev->size < sizeof(struct rt_ev_cuda_api)) {
			g->st.invalid++;
			return;
		}
		on_cuda(c, (const struct rt_ev_cuda_api *)ev);
		break;
	case RT_EV_NCCL_ENTER:
	case RT_EV_NCCL_EXIT:
		if (ev->size < sizeof(struct rt_ev_nccl)) {
			g->st.invalid++;
			return;
		}
		on_nccl(c, (const struct rt_ev_nccl *)ev);
		break;
	case RT_EV_LINK_SAMPLE:
		rt_gpu_link_on_event(c, ev); /* NVML, not CUPTI: gpu_link.c */
		break;
	default:
		g->st.device++;
		rt_gpu_device_on_event(c, ev);
		break;
	}
}

/* The rule that gave r most of its device time, else most of its records. */
static uint32_t main_split(const struct rt_gpu_acc *a)
{
	uint32_t i, by_ns = RT_GPU_SPLIT_NONE, by_calls = RT_GPU_SPLIT_NONE;

	for (i = 1; i < RT_GPU_SPLIT__COUNT; i++) {
		if (a->split_ns[i] > a->split_ns[by_ns])
			by_ns = i;
		if (a->split_calls[i] > a->split_calls[by_calls])
			by_calls = i;
	}
	return by_ns != RT_GPU_SPLIT_NONE ? by_ns : by_calls;
}

void rt_gpu_finish(struct rt_correlator *c, struct rt_req *r)
{
	const struct rt_gpu_acc *a = r->gpu;

	(void)c;
	if (!a)
		return;
	r->span.gpu.present = true;
	r->span.gpu.launches = a->launches;
	r->span.gpu.h2d_bytes = a->h2d_bytes;
	r->span.gpu.d2h_bytes = a->d2h_bytes;
	r->span.gpu.p2p_bytes = a->p2p_bytes;
	r->span.gpu.nccl_bytes = a->nccl_bytes;
	r->span.gpu.sync_wait_ns = a->sync_wait_ns;
	if (a->device) { /* else null: no device evidence (0 is a measurement) */
		r->span.gpu.kernel_ns = a->kernel_ns;
		r->span.gpu.memcpy_ns = a->memcpy_ns;
		r->span.gpu.step_ns = a->step_ns;
	}
	r->span.gpu.split = (uint8_t)main_split(a);
}

void rt_gpu_release(struct rt_req *r)
{
	free(r->gpu);
	r->gpu = NULL;
}
