// SPDX-License-Identifier: BSD-2-Clause
/*
 * Who the engine is working for (docs/spans.md, "Who the engine is working
 * for"): one definition for GPU attribution (gpu.c) and the CPU of compute
 * pools (pool.c). The open step's members when a step is known (marker
 * steps; pack steps through the same members), weighted by the tokens each
 * advanced when every member has its count; else the engine set: the
 * requests of the target group that have been fully received, have not
 * ended and are not waiting in a queue (an open QUEUE marker).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
uint32_t rt_engine_set(struct rt_correlator *c, uint32_t pid, uint64_t *out)
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
uint32_t rt_work_resolve(struct rt_correlator *c, const uint64_t *ids, uint32_t n,
			 struct rt_gpu_who *who, bool skip_queued)
{
	struct rt_req *reqs[RT_GPU_SHARE_MAX];
	uint32_t i;

	who->n = 0;
	if (n > RT_GPU_SHARE_MAX)
		n = RT_GPU_SHARE_MAX; /* who holds no more */
	rt_reqs_get(c, ids, n, reqs, false);
	for (i = 0; i < n; i++) {
		struct rt_req *r = reqs[i];

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
uint32_t rt_work_step_tokens(struct rt_correlator *c, const struct rt_thread *t,
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

uint32_t rt_work_step(struct rt_correlator *c, const struct rt_thread *t, struct rt_gpu_who *who)
{
	uint32_t n;

	who->n = 0;
	who->weight_sum = 0;
	who->split = RT_GPU_SPLIT_NONE;
	who->source = RT_WORK_NONE;
	if (!t || !t->in_step || !t->n_step)
		return 0;
	if (!rt_work_step_tokens(c, t, who)) {
		n = t->n_step < RT_GPU_SHARE_MAX ? t->n_step : RT_GPU_SHARE_MAX;
		/* the engine named them: a queued one listed in a step is not queued */
		if (!rt_work_resolve(c, t->step, n, who, false))
			return 0;
		who->split = RT_GPU_SPLIT_MEMBERS;
	}
	who->source = t->step_src == RT_STEP_PACK ? RT_WORK_PACK : RT_WORK_MARKER;
	return who->n;
}

uint32_t rt_working_for(struct rt_correlator *c, const struct rt_thread *t, uint32_t pid,
			struct rt_gpu_who *who)
{
	uint64_t ids[RT_GPU_SHARE_MAX];
	uint32_t n;

	if (rt_work_step(c, t, who))
		return who->n;
	n = rt_engine_set(c, pid, ids);
	who->split = RT_GPU_SPLIT_NONE;
	who->source = RT_WORK_NONE;
	if (rt_work_resolve(c, ids, n, who, true)) {
		who->split = RT_GPU_SPLIT_ENGINE_SET;
		who->source = RT_WORK_ENGINE_SET;
	}
	return who->n;
}
