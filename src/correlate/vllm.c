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
#define APIS_MAX 4 /* API-server processes whose helper threads are held */
#define HOLDS_MAX 8 /* helper threads holding unowned time */
#define HOLD_MEMBERS_MAX 64 /* ADDs one hold is split among (vLLM's micro-batch: 32) */
/* a hold no ADD followed within this is not a tokenize run: dropped */
#define HOLD_MAX_NS (100ull * 1000 * 1000)

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
	/* its share of a helper thread's held time (the tokenizer executor) */
	int64_t exec_on, exec_runq;
	uint32_t exec_tid;
	char exec_comm[RT_COMM_LEN];
};

/*
 * Unowned burst time of one API-server helper thread, kept until the event
 * loop's next ADDs (the micro-batch the executor just tokenized) and split
 * among them by prompt tokens when the thread next holds time or a member
 * ends.
 */
struct hold {
	uint32_t tid, pid;
	char comm[RT_COMM_LEN];
	int64_t on, runq;
	uint64_t last_ns; /* the end of the last burst held */
	uint64_t members[HOLD_MEMBERS_MAX]; /* keys of the ADDs sent since */
	uint64_t last_add_ns; /* the latest member's send */
	uint32_t n;
};

struct api {
	uint32_t pid, loop_tid; /* an API server and its ADD-sending event loop */
};

struct rt_vllm_state {
	struct rt_hmap ereqs;
	uint32_t max;
	uint64_t next_seq; /* engine requests made so far */
	struct api apis[APIS_MAX];
	struct hold holds[HOLDS_MAX];
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

/* ---- helper-thread holds (the tokenizer executor) ------------------------------ */

static struct api *api_of(struct rt_vllm_state *v, uint32_t pid)
{
	uint32_t i;

	for (i = 0; v && i < APIS_MAX; i++)
		if (v->apis[i].pid == pid)
			return &v->apis[i];
	return NULL;
}

static void hold_reset(struct hold *h)
{
	h->on = h->runq = 0;
	h->last_add_ns = 0;
	h->n = 0;
}

static void hold_drop(struct rt_correlator *c, struct hold *h)
{
	if (h->on || h->runq) {
		c->st.unattributed_cpu_ns += (uint64_t)(h->on + h->runq);
		c->st.vllm_exec_dropped++;
	}
	hold_reset(h);
}

/* Split h among its members by prompt tokens (equally when one is unknown). */
static void settle(struct rt_correlator *c, struct hold *h)
{
	struct ereq *m[HOLD_MEMBERS_MAX];
	int64_t w[HOLD_MEMBERS_MAX], total = 0, on = 0, runq = 0;
	uint32_t i, n = 0;
	bool equal = false;

	for (i = 0; i < h->n; i++) {
		struct ereq *e = rt_hmap_get(&c->vllm->ereqs, h->members[i]);

		if (!e)
			continue; /* ended before: its share stays unattributed */
		m[n] = e;
		w[n] = e->prompt_tokens;
		if (w[n] <= 0)
			equal = true;
		n++;
	}
	for (i = 0; i < n; i++) {
		if (equal)
			w[i] = 1;
		total += w[i];
	}
	for (i = 0; i < n; i++) {
		int64_t so = h->on * w[i] / total, sr = h->runq * w[i] / total;

		m[i]->exec_on += so;
		m[i]->exec_runq += sr;
		m[i]->exec_tid = h->tid;
		memcpy(m[i]->exec_comm, h->comm, RT_COMM_LEN);
		on += so;
		runq += sr;
	}
	c->st.unattributed_cpu_ns += (uint64_t)(h->on - on + h->runq - runq);
	hold_reset(h);
}

bool rt_vllm_hold(struct rt_correlator *c, const struct rt_thread *t, int64_t on, int64_t runq,
		  uint64_t from, uint64_t ts)
{
	struct rt_vllm_state *v = c->vllm;
	struct api *a = api_of(v, t->pid);
	struct hold *h = NULL, *free_h = NULL;
	uint32_t i;

	/* the event loop's own time, and libzmq's I/O threads (they run for the messages) */
	if (!a || a->loop_tid == t->tid || !strncmp(t->comm, "ZMQbg", 5))
		return false;
	for (i = 0; i < HOLDS_MAX && !h; i++) {
		if (v->holds[i].tid == t->tid && v->holds[i].pid == t->pid)
			h = &v->holds[i];
		else if (!v->holds[i].tid && !free_h)
			free_h = &v->holds[i];
	}
	if (!h) {
		if (!free_h)
			return false;
		h = free_h;
		memset(h, 0, sizeof(*h));
		h->tid = t->tid;
		h->pid = t->pid;
	}
	memcpy(h->comm, t->comm, RT_COMM_LEN);
	/*
	 * A burst that began after every member's ADD starts the next run: the
	 * last one's ADDs have come. One that was running when an ADD went
	 * out is that run's tail (the executor hands the results back, then
	 * returns and logs while the loop already sends: seen as a batch's
	 * whole run given to the next batch).
	 */
	if (h->n && from > h->last_add_ns)
		settle(c, h);
	else if (!h->n && ts > h->last_ns + HOLD_MAX_NS)
		hold_drop(c, h);
	h->on += on;
	h->runq += runq;
	h->last_ns = ts;
	return true;
}

/* When x's burst in progress first ran; 0: it has not run yet (or x is not in one). */
static uint64_t burst_began(const struct rt_thread *x)
{
	if (!x->in_burst || x->run == RT_RUN_BLOCKED)
		return 0;
	if (x->n_rslice)
		return x->rslice[0].from;
	return x->run == RT_RUN_ONCPU ? x->oncpu_ns : 0;
}

/* The event loop sends e's ADD: e is a member of every recent hold of its process. */
static void held_for(struct rt_correlator *c, const struct rt_zmq_asm_msg *m, struct ereq *e)
{
	struct rt_vllm_state *v = c->vllm;
	struct api *a = api_of(v, m->pid);
	uint32_t i;

	if (!a) {
		for (i = 0; i < APIS_MAX && !a; i++)
			if (!v->apis[i].pid)
				a = &v->apis[i];
		if (!a)
			return;
		a->pid = m->pid;
	}
	a->loop_tid = m->tid;
	for (i = 0; i < HOLDS_MAX; i++) {
		struct hold *h = &v->holds[i];
		const struct rt_thread *x = h->tid ? rt_hmap_get(&c->threads, h->tid) : NULL;
		/*
		 * In a burst that has run, on a CPU or preempted: the run that
		 * made this ADD's tokens may still be in its tail, its time not
		 * yet held. Seen under CPU load: the executor preempted right
		 * after its hand-back while the loop sent the batch's ADDs;
		 * counting only "on a CPU", they joined nothing and the run went
		 * to the next batch.
		 */
		uint64_t began = x && x->pid == h->pid ? burst_began(x) : 0;
		bool running = began != 0;

		if (h->pid != m->pid || (!h->on && !h->runq && !running))
			continue;
		if (!running && m->first_enter_ns > h->last_ns + HOLD_MAX_NS) {
			/* the executor went quiet: its last run had its ADDs, or nobody's */
			if (h->n)
				settle(c, h);
			else
				hold_drop(c, h);
			continue;
		}
		/*
		 * The burst running now began after the hold's last ADD: it is
		 * the next run, and the held time is those ADDs' (the same rule
		 * as rt_vllm_hold's at the burst's end, applied before this ADD
		 * joins).
		 */
		if (running && h->n && began > h->last_add_ns)
			settle(c, h);
		if (m->first_enter_ns > h->last_add_ns)
			h->last_add_ns = m->first_enter_ns;
		if (h->n < HOLD_MEMBERS_MAX)
			h->members[h->n++] = e->key;
		else
			c->st.vllm_exec_dropped++; /* its share goes to the others */
	}
}

/* e is ending: settle every hold it is a member of first. */
static void settle_member(struct rt_correlator *c, const struct ereq *e)
{
	uint32_t i, k;

	for (i = 0; i < HOLDS_MAX; i++)
		for (k = 0; k < c->vllm->holds[i].n; k++)
			if (c->vllm->holds[i].members[k] == e->key) {
				settle(c, &c->vllm->holds[i]);
				break;
			}
}

/* r gets e's share of the held time: on its own, so in no slice of its timeline */
static void exec_charge(struct rt_correlator *c, struct rt_req *r, const struct ereq *e)
{
	struct rt_thread *t, tmp;
	struct rt_span_thread *st;

	if (!e->exec_on && !e->exec_runq)
		return;
	r->span.cpu.on_cpu_ns += e->exec_on;
	r->span.cpu.runq_ns += e->exec_runq;
	t = rt_hmap_get(&c->threads, e->exec_tid);
	if (!t) {
		memset(&tmp, 0, sizeof(tmp));
		tmp.tid = e->exec_tid;
		memcpy(tmp.comm, e->exec_comm, RT_COMM_LEN);
		t = &tmp;
	}
	st = rt_cpu_span_thread(r, t);
	if (st) {
		st->on_cpu_ns += e->exec_on;
		st->runq_ns += e->exec_runq;
		st->shared = true;
	}
}

static void early_join(struct rt_correlator *c, struct ereq *e);
static struct rt_req *joined_req(struct rt_correlator *c, const struct ereq *e);

/* The API server's event loop handled e's message: its burst works for e's request. */
static void loop_serves(struct rt_correlator *c, const struct rt_zmq_asm_msg *m, struct ereq *e)
{
	struct rt_req *r = joined_req(c, e);
	struct rt_thread *t;

	if (!r)
		return;
	t = rt_thread_get(c, m->tid, m->pid, false);
	if (t)
		rt_cpu_loop_serves(c, t, r,
				   m->dir == RT_ZMQ_RECV ? m->last_ts_ns : m->first_enter_ns,
				   m->dir == RT_ZMQ_RECV);
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
		if (!e->add_ns) {
			e->add_ns = d->ts;
			held_for(d->c, d->m, e);
		}
		early_join(d->c, e);
		loop_serves(d->c, d->m, e);
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
	loop_serves(d->c, d->m, e);
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

static bool of_api_pid(const void *val, void *ctx)
{
	return ((const struct ereq *)val)->api_pid == *(const uint32_t *)ctx;
}

static void ereq_gone(void *val, void *ctx)
{
	(void)ctx;
	free(val);
}

void rt_vllm_drop_pid(struct rt_correlator *c, uint32_t pid)
{
	struct rt_vllm_state *v = c->vllm;
	size_t pos;

	if (!v)
		return;
	for (pos = 0; pos < HOLDS_MAX; pos++)
		if (v->holds[pos].pid == pid) {
			hold_drop(c, &v->holds[pos]);
			v->holds[pos].tid = v->holds[pos].pid = 0;
		}
	for (pos = 0; pos < APIS_MAX; pos++)
		if (v->apis[pos].pid == pid)
			v->apis[pos].pid = v->apis[pos].loop_tid = 0;
	rt_hmap_del_if(&v->ereqs, of_api_pid, ereq_gone, &pid);
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

static int join_one(struct rt_correlator *c, struct rt_req *r, struct ereq *e, uint8_t how)
{
	if (!r->vllm) {
		r->vllm = calloc(1, sizeof(*r->vllm));
		if (!r->vllm) {
			r->span.flags |= RT_SPAN_INCOMPLETE;
			return -ENOMEM;
		}
	}
	if (r->vllm->n >= RT_VLLM_JOIN_MAX) {
		r->vllm->join_dropped++;
		return 0;
	}
	r->vllm->keys[r->vllm->n++] = e->key;
	e->req = r->serial;
	e->join = how;
	c->st.vllm_joined++;
	return 0;
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
		if (how && join_one(c, r, e, how))
			return;
	}
}

/*
 * At the ADD, before any response byte: the request whose X-Request-Id the
 * external id carries ("chatcmpl-" H ["_" i] | "cmpl-" H "-" i), looked up
 * by id, so that the event loop's work for it is known from the start.
 */
static void early_join(struct rt_correlator *c, struct ereq *e)
{
	struct rt_vllm_str ext = external(e);
	char h[ID_MAX];
	uint32_t off, len, k;
	int pass;

	if (e->req)
		return;
	off = ext.len > 9 && !memcmp(ext.ptr, "chatcmpl-", 9) ? 9 :
	      ext.len > 5 && !memcmp(ext.ptr, "cmpl-", 5)     ? 5 :
								0;
	if (!off)
		return;
	for (pass = 0; pass < 2; pass++) {
		struct rt_req *r;

		len = ext.len - off;
		if (pass) { /* less a prompt index */
			for (k = len;
			     k > 0 && ext.ptr[off + k - 1] >= '0' && ext.ptr[off + k - 1] <= '9';
			     k--)
				;
			if (k == len || k < 2 ||
			    (ext.ptr[off + k - 1] != '-' && ext.ptr[off + k - 1] != '_'))
				return;
			len = k - 1;
		}
		memcpy(h, ext.ptr + off, len);
		h[len] = '\0';
		r = rt_req_by_id(c, h);
		if (r && r->id_from_header && r->pid == e->api_pid && !r->ended &&
		    rt_vllm_id_match_header(ext, h, len, NULL) != RT_VLLM_ID_NO_MATCH) {
			join_one(c, r, e, RT_ENGINE_JOIN_HEADER);
			return;
		}
	}
}

static struct rt_req *joined_req(struct rt_correlator *c, const struct ereq *e)
{
	struct rt_req *r = e->req ? rt_req_get(c, e->req) : NULL;

	return r && !r->ended ? r : NULL;
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
		settle_member(c, e);
		exec_charge(c, r, e);
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
