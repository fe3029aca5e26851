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
 * that have been fully received and have not ended. The step members and
 * the engine set are working.c's: the one definition of who the engine is
 * working for, shared with the CPU of compute pools (pool.c). Burst owners (rules
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
	if (t && t->n_mark) {
		/* claims: the claimed request's own work, with the open step's members */
		n = rt_cpu_owners(t, ids, RT_GPU_SHARE_MAX);
		/* the engine named them: a queued one listed in a step is not queued */
		if (rt_work_resolve(c, ids, n, who, false)) {
			who->split = RT_GPU_SPLIT_MEMBERS;
			return who->n;
		}
	}
	if (rt_work_step(c, t, who))
		return who->n;
	if (t && t->n_io && rt_work_resolve(c, t->io, t->n_io, who, true)) {
		who->split = RT_GPU_SPLIT_MEMBERS;
		return who->n;
	}
	return rt_working_for(c, NULL, ev->pid, who);
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
		memset(&r->gpu_acc, 0, sizeof(r->gpu_acc));
		r->gpu = &r->gpu_acc;
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
	r->gpu = NULL; /* r->gpu_acc, nothing to free */
}
