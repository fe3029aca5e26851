/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vLLM V1 engine requests from the messages between the API server and the
 * engine core (docs/spans.md, "vLLM"). Both processes are traced, so each
 * message is seen twice: an ADD at the API server's send (event-loop
 * thread: "handed to the engine") and at the engine's receive (input
 * thread); an EngineCoreOutputs at the engine's send (output thread) and
 * at the API server's receive (event-loop thread). Which side a message is
 * comes from its frames: the API server's ROUTER send starts with the
 * routing id, so a request is [id, type byte, payload] there and [type
 * byte, payload] at the engine; an output is [payload, aux…] either way.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/vllm.h"
#include "proto/vllm_id.h"
#include "vllm.h"

#define ID_MAX 128
#define PENDING_MAX 8 /* output receipts waiting for the response write that carries them */

/* One engine request, keyed by hash of its internal id. */
struct ereq {
	char id[ID_MAX];
	char ext[ID_MAX];
	uint32_t id_len, ext_len;
	bool has_ext;
	uint64_t key, seq;
	uint32_t api_pid, eng_pid;
	uint64_t add_ns; /* API send of the ADD: handed to the engine */
	uint64_t eng_recv_ns; /* engine input thread's receive */
	uint64_t queued_ns, sched_ns; /* the engine's events, when on the wire */
	uint64_t first_out_ns, last_out_ns; /* API receipt of outputs with new tokens */
	uint64_t first_send_ns, last_send_ns; /* engine send of them */
	uint32_t outputs;
	uint64_t tokens;
	int64_t prompt_tokens;
	int8_t finish;
	bool finished, events_present, desync;
	uint64_t req; /* the joined rt_req's serial, 0: none */
	uint8_t join; /* enum rt_engine_join */
	uint64_t pend[PENDING_MAX]; /* receipts not yet carried by a response write, oldest first */
	uint32_t n_pend;
};

struct rt_vllm_state {
	struct rt_hmap ereqs;
	uint32_t max;
	uint64_t next_seq; /* engine requests made so far */
};

struct dctx {
	struct rt_correlator *c;
	const struct rt_zmq_asm_msg *m;
	bool api; /* the API server's side of the message */
	uint64_t ts;
};

static struct rt_vllm_state *state(struct rt_correlator *c)
{
	struct rt_vllm_state *v = c->vllm;

	if (v)
		return v;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	/* by default the bound on HTTP requests in flight (max_requests, configured) */
	v->max = c->o.max_vllm_requests ? c->o.max_vllm_requests :
		 c->o.max_requests	? c->o.max_requests :
					  RT_VLLM_EREQS_DEFAULT;
	if (rt_hmap_init(&v->ereqs, v->max)) {
		free(v);
		return NULL;
	}
	c->vllm = v;
	return v;
}

static uint64_t key_of(const char *p, uint32_t len, char *buf)
{
	memcpy(buf, p, len);
	buf[len] = '\0';
	return rt_hash_str(buf);
}

static struct ereq *find(struct rt_vllm_state *v, struct rt_vllm_str id)
{
	char buf[ID_MAX];
	struct ereq *e;

	if (!v || !id.ptr || id.len >= ID_MAX)
		return NULL;
	e = rt_hmap_get(&v->ereqs, key_of(id.ptr, id.len, buf));
	return e && e->id_len == id.len && !memcmp(e->id, id.ptr, id.len) ? e : NULL;
}

static void drop(struct rt_vllm_state *v, struct ereq *e)
{
	rt_hmap_del(&v->ereqs, e->key);
	free(e);
}

/* The table is full: the oldest unjoined finished request goes, else the oldest unjoined, else the oldest. */
static void evict(struct rt_correlator *c, struct rt_vllm_state *v)
{
	struct ereq *best[3] = { NULL, NULL, NULL };
	size_t pos = 0;
	void *val;
	int k;

	while ((pos = rt_hmap_next(&v->ereqs, pos, NULL, &val)) != 0) {
		struct ereq *e = val;

		k = !e->req && e->finished ? 0 : !e->req ? 1 : 2;
		if (!best[k] || e->seq < best[k]->seq)
			best[k] = e;
	}
	for (k = 0; k < 3; k++)
		if (best[k]) {
			c->st.vllm_dropped++;
			drop(v, best[k]);
			return;
		}
}

static struct ereq *get_or_new(struct rt_correlator *c, struct rt_vllm_str id)
{
	struct rt_vllm_state *v = state(c);
	struct ereq *e;

	if (!v || !id.ptr || !id.len || id.len >= ID_MAX)
		return NULL;
	e = find(v, id);
	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	memcpy(e->id, id.ptr, id.len);
	e->id_len = id.len;
	e->key = rt_hash_str(e->id);
	e->seq = ++v->next_seq;
	e->prompt_tokens = -1;
	e->finish = RT_VLLM_FINISH_NONE;
	if (rt_hmap_get(&v->ereqs, e->key))
		drop(v, rt_hmap_get(&v->ereqs, e->key)); /* a hash collision: the newer wins */
	if (v->ereqs.len >= v->max)
		evict(c, v);
	if (rt_hmap_put(&v->ereqs, e->key, e)) {
		c->st.vllm_dropped++;
		free(e);
		return NULL;
	}
	c->st.vllm_requests++;
	return e;
}

static uint64_t mono_ns(double s)
{
	return isfinite(s) && s > 0 ? (uint64_t)(s * 1e9 + 0.5) : 0;
}

/* ---- messages ------------------------------------------------------------- */

static void on_add(void *ctx, const struct rt_vllm_add *add)
{
	struct dctx *d = ctx;
	struct ereq *e = get_or_new(d->c, add->request_id);

	if (!e)
		return;
	if (!e->has_ext && add->external_req_id.ptr && add->external_req_id.len < ID_MAX) {
		memcpy(e->ext, add->external_req_id.ptr, add->external_req_id.len);
		e->ext_len = add->external_req_id.len;
		e->has_ext = true;
	}
	if (add->prompt_tokens >= 0)
		e->prompt_tokens = add->prompt_tokens;
	if (d->api) {
		e->api_pid = d->m->pid;
		if (!e->add_ns)
			e->add_ns = d->ts;
	} else {
		e->eng_pid = d->m->pid;
		if (!e->eng_recv_ns)
			e->eng_recv_ns = d->ts;
	}
}

static void on_abort(void *ctx, struct rt_vllm_str id)
{
	struct dctx *d = ctx;
	struct ereq *e = find(d->c->vllm, id);

	if (e && !e->finished) {
		e->finished = true;
		e->finish = RT_VLLM_FINISH_ABORT;
	}
}

static void on_output(void *ctx, const struct rt_vllm_outputs *outs, const struct rt_vllm_output *o)
{
	struct dctx *d = ctx;
	struct ereq *e = find(d->c->vllm, o->request_id);
	uint32_t i;

	(void)outs;
	if (!e)
		return; /* its ADD was not seen (before the trace, or lost): nothing to join */
	if (o->events_present)
		e->events_present = true;
	for (i = 0; i < o->n_events && i < RT_VLLM_EVENTS_MAX; i++) {
		uint64_t t = mono_ns(o->events[i].timestamp);

		/* the first of each: a preempted request's later SCHEDULED is a resumption */
		if (o->events[i].type == RT_VLLM_EV_QUEUED && !e->queued_ns)
			e->queued_ns = t;
		else if (o->events[i].type == RT_VLLM_EV_SCHEDULED && !e->sched_ns)
			e->sched_ns = t;
	}
	if (o->finished && !e->finished) {
		e->finished = true;
		e->finish = o->finish_reason;
	}
	if (!o->new_tokens)
		return;
	if (!d->api) {
		e->eng_pid = d->m->pid;
		if (!e->first_send_ns)
			e->first_send_ns = d->ts;
		e->last_send_ns = d->ts;
		return;
	}
	if (!e->first_out_ns)
		e->first_out_ns = d->ts;
	e->last_out_ns = d->ts;
	e->outputs++;
	e->tokens += o->new_tokens;
	if (e->n_pend == PENDING_MAX) {
		memmove(e->pend, e->pend + 1, (PENDING_MAX - 1) * sizeof(e->pend[0]));
		e->n_pend--;
	}
	e->pend[e->n_pend++] = d->ts;
}

static const struct rt_vllm_cb cbs = {
	.on_add = on_add,
	.on_abort = on_abort,
	.on_output = on_output,
};

void rt_vllm_on_msg(struct rt_correlator *c, const struct rt_zmq_asm_msg *m)
{
	struct rt_vllm_frame f[RT_ZMQ_ASM_FRAMES_MAX];
	struct dctx d = { .c = c, .m = m };
	uint32_t i;
	bool input;
	int ret;

	if (!m->n_frames)
		return;
	for (i = 0; i < m->n_frames; i++) {
		f[i].data = m->frames[i].data;
		f[i].len = m->frames[i].len;
		f[i].size = m->frames[i].size;
		if (!f[i].size && m->n_frames <= 2)
			return; /* the engine's hello (an empty frame), as sent or as routed */
	}
	if (m->dir == RT_ZMQ_SEND) {
		input = m->n_frames >= 3 && f[1].size == 1;
		d.api = input;
		d.ts = m->first_enter_ns; /* the sender handed it over when its call began */
	} else {
		input = m->n_frames >= 2 && f[0].size == 1;
		d.api = !input;
		d.ts = m->last_ts_ns; /* the receiver had it when its last frame's call returned */
	}
	if (input)
		ret = rt_vllm_decode_input(f, m->n_frames, d.api ? RT_VLLM_ROUTING_ID : 0, &cbs,
					   &d);
	else
		ret = rt_vllm_decode_output(f, m->n_frames, &cbs, &d);
	if (ret < 0 && ret != -ENODATA)
		c->st.vllm_unknown++; /* counted and ignored, never guessed */
}

void rt_vllm_desync(struct rt_correlator *c, uint32_t pid)
{
	struct rt_vllm_state *v = c->vllm;
	struct rt_proc *p;
	struct rt_req *r;
	size_t pos = 0;
	void *val;

	if (!v)
		return;
	while ((pos = rt_hmap_next(&v->ereqs, pos, NULL, &val)) != 0) {
		struct ereq *e = val;

		if (!e->finished && (!pid || e->api_pid == pid || e->eng_pid == pid))
			e->desync = true;
	}
	/* an HTTP request of the API process not joined yet may have lost its ADD */
	p = pid ? rt_proc_get(c, pid, false) : NULL;
	for (r = p ? p->reqs : NULL; r; r = r->pnext)
		if (!r->vllm && r->state != RT_REQ_RECEIVING)
			r->span.flags |= RT_SPAN_INCOMPLETE;
}

void rt_vllm_drop_pid(struct rt_correlator *c, uint32_t pid)
{
	struct rt_vllm_state *v = c->vllm;
	struct ereq *gone[64];
	size_t pos, n;
	void *val;

	if (!v)
		return;
	do {
		n = 0;
		pos = 0;
		while ((pos = rt_hmap_next(&v->ereqs, pos, NULL, &val)) != 0 && n < 64) {
			struct ereq *e = val;

			if (e->api_pid == pid)
				gone[n++] = e;
		}
		for (pos = 0; pos < n; pos++)
			drop(v, gone[pos]);
	} while (n == 64);
}

void rt_vllm_free(struct rt_correlator *c)
{
	struct rt_vllm_state *v = c->vllm;
	size_t pos = 0;
	void *val;

	if (!v)
		return;
	while ((pos = rt_hmap_next(&v->ereqs, pos, NULL, &val)) != 0)
		free(val);
	rt_hmap_fini(&v->ereqs);
	free(v);
	c->vllm = NULL;
}

/* ---- the join -------------------------------------------------------------- */

/* The external id of e: field 15 when the ADD had it, else the internal id less its random suffix. */
static struct rt_vllm_str external(const struct ereq *e)
{
	struct rt_vllm_str s = { e->id, e->id_len };
	uint32_t i;

	if (e->has_ext)
		return (struct rt_vllm_str){ e->ext, e->ext_len };
	if (s.len > 9 && e->id[s.len - 9] == '-') {
		for (i = s.len - 8; i < s.len; i++)
			if (!strchr("0123456789abcdef", e->id[i]) || !e->id[i])
				return s;
		s.len -= 9;
	}
	return s;
}

static uint8_t matches(const struct ereq *e, const struct rt_req *r)
{
	struct rt_vllm_str ext = external(e);
	int64_t idx;

	if (r->span.response_id[0] &&
	    rt_vllm_id_match_response(ext, r->span.response_id, strlen(r->span.response_id),
				      &idx) != RT_VLLM_ID_NO_MATCH)
		return RT_ENGINE_JOIN_RESPONSE_ID;
	if (r->id_from_header &&
	    rt_vllm_id_match_header(ext, r->span.request_id, strlen(r->span.request_id), &idx) !=
		    RT_VLLM_ID_NO_MATCH)
		return RT_ENGINE_JOIN_HEADER;
	return RT_ENGINE_JOIN_NONE;
}

/* Every engine request of r's process that r's ids name joins r. */
static void try_join(struct rt_correlator *c, struct rt_req *r)
{
	struct rt_vllm_state *v = c->vllm;
	size_t pos = 0;
	void *val;

	if (!v || (r->vllm && r->vllm->n) || (!r->span.response_id[0] && !r->id_from_header))
		return;
	while ((pos = rt_hmap_next(&v->ereqs, pos, NULL, &val)) != 0) {
		struct ereq *e = val;
		uint8_t how;

		if (e->req || e->api_pid != r->pid)
			continue;
		how = matches(e, r);
		if (!how)
			continue;
		if (!r->vllm) {
			r->vllm = calloc(1, sizeof(*r->vllm));
			if (!r->vllm) {
				r->span.flags |= RT_SPAN_INCOMPLETE;
				return;
			}
		}
		if (r->vllm->n >= RT_VLLM_JOIN_MAX) {
			r->vllm->join_dropped++;
			continue;
		}
		r->vllm->keys[r->vllm->n++] = e->key;
		e->req = r->serial;
		e->join = how;
		c->st.vllm_joined++;
	}
}

static struct ereq *joined(struct rt_correlator *c, const struct rt_req *r, uint32_t i)
{
	struct ereq *e = c->vllm ? rt_hmap_get(&c->vllm->ereqs, r->vllm->keys[i]) : NULL;

	return e && e->req == r->serial ? e : NULL;
}

/*
 * The oldest output receipt of e is carried by the write entered at
 * enter_ns: its stream cost. One content event carries one output (the
 * API server writes a chunk per output, in order), so when the writes lag
 * behind the receipts each output still pairs with its own chunk.
 */
static void carry(struct rt_req *r, struct ereq *e, uint64_t enter_ns)
{
	struct rt_span_engine *g = &r->span.engine;

	if (!e->n_pend || e->pend[0] > enter_ns)
		return;
	if (g->stream_ns == RT_NULL_NS)
		g->stream_ns = 0;
	g->stream_ns += (int64_t)(enter_ns - e->pend[0]);
	g->stream_outputs++;
	memmove(e->pend, e->pend + 1, (e->n_pend - 1) * sizeof(e->pend[0]));
	e->n_pend--;
}

void rt_vllm_on_sse(struct rt_correlator *c, struct rt_req *r, uint64_t enter_ns, bool content)
{
	struct ereq *oldest = NULL;
	uint64_t mark;
	uint32_t i;

	if (!c->vllm)
		return;
	/* a response that joined nothing is tried again only once new engine
	 * requests came, or its id did */
	mark = c->vllm->next_seq << 1 | (r->span.response_id[0] != '\0');
	if (!r->vllm && r->vllm_tried != mark) {
		r->vllm_tried = mark;
		try_join(c, r);
	}
	if (!content || !r->vllm)
		return;
	/* several engine requests (prompts, n > 1): the output waiting longest */
	for (i = 0; i < r->vllm->n; i++) {
		struct ereq *e = joined(c, r, i);

		if (e && e->n_pend && (!oldest || e->pend[0] < oldest->pend[0]))
			oldest = e;
	}
	if (oldest)
		carry(r, oldest, enter_ns);
}

static uint64_t min_nz(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

void rt_vllm_end(struct rt_correlator *c, struct rt_req *r)
{
	struct rt_span_engine *g = &r->span.engine;
	struct rt_req_vllm *k;
	uint32_t i;

	if (!c->vllm)
		return;
	try_join(c, r);
	k = r->vllm;
	if (!k || !k->n)
		return;
	g->present = true;
	if (k->join_dropped)
		r->span.flags |= RT_SPAN_INCOMPLETE;
	for (i = 0; i < k->n; i++) {
		struct ereq *e = joined(c, r, i);

		if (!e) {
			r->span.flags |= RT_SPAN_INCOMPLETE; /* evicted from the full table */
			continue;
		}
		if (!g->requests++) {
			uint32_t len = e->id_len < sizeof(g->id) - 1 ? e->id_len :
								       (uint32_t)sizeof(g->id) - 1;

			memcpy(g->id, e->id, len); /* longer ids are cut */
			g->id[len] = '\0';
			g->join = e->join;
		}
		/* not streamed: the response's one write carries the last output */
		if (!r->span.streamed && r->resp_first_enter && e->n_pend &&
		    e->pend[e->n_pend - 1] <= r->resp_first_enter) {
			e->pend[0] = e->pend[e->n_pend - 1];
			e->n_pend = 1;
			carry(r, e, r->resp_first_enter);
		}
		g->outputs += e->outputs;
		g->tokens += e->tokens;
		if (e->prompt_tokens >= 0)
			g->prompt_tokens =
				(g->prompt_tokens < 0 ? 0 : g->prompt_tokens) + e->prompt_tokens;
		g->events_present |= e->events_present;
		if (g->finish_reason < 0)
			g->finish_reason = e->finish;
		if (e->desync)
			r->span.flags |= RT_SPAN_INCOMPLETE;
		k->add_ns = min_nz(k->add_ns, e->add_ns);
		k->eng_recv_ns = min_nz(k->eng_recv_ns, e->eng_recv_ns);
		k->sched_ns = min_nz(k->sched_ns, e->sched_ns);
		k->first_out_ns = min_nz(k->first_out_ns, e->first_out_ns);
		if (e->last_out_ns > k->last_out_ns)
			k->last_out_ns = e->last_out_ns;
		drop(c->vllm, e); /* its span is done: what comes later has nowhere to go */
	}
}

static uint32_t put(struct rt_pack_iv *out, uint32_t n, uint8_t phase, uint64_t from, uint64_t to)
{
	out[n].from = from;
	out[n].to = to > from ? to : from;
	out[n].phase = phase;
	return n + 1;
}

uint32_t rt_vllm_finish(struct rt_req *r, struct rt_pack_iv *out)
{
	const struct rt_req_vllm *k = r->vllm;
	uint64_t from, eng;
	uint32_t n = 0;

	if (!k || !k->add_ns || r->mark_seen)
		return 0; /* marker > pack; without the hand-off the engine phases have no start */
	from = r->span.received_ns ? r->span.received_ns : r->span.start_ns;
	if (from && from <= k->add_ns)
		n = put(out, n, RT_PHASE_TOKENIZE, from, k->add_ns);
	/* the engine's receipt, else the hand-off (the engine process not traced) */
	eng = k->eng_recv_ns >= k->add_ns ? k->eng_recv_ns : k->add_ns;
	if (k->sched_ns >= eng) {
		n = put(out, n, RT_PHASE_QUEUE, eng, k->sched_ns);
		eng = k->sched_ns;
	}
	if (k->first_out_ns >= eng) {
		n = put(out, n, RT_PHASE_PREFILL, eng, k->first_out_ns);
		n = put(out, n, RT_PHASE_DECODE, k->first_out_ns, k->last_out_ns);
	}
	return n;
}
