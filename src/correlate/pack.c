// SPDX-License-Identifier: BSD-2-Clause
/*
 * Engine pack records → a request's tokenize, queue, prefill and decode
 * (phase_source "pack") and the members of each engine step (docs/spans.md,
 * "Packs"; docs/packs.md ("Phases: the correlator's rules") has the rules and what makes them
 * ambiguous).
 *
 * The library says when it tokenizes and decodes, not for whom: tokenize
 * calls go to the request their thread is handling, sequences to requests
 * in hand-off order, and a step's members are the requests of the
 * sequences in its batch. A step is its own interval for each member, as a
 * marker interval is: engine work for a whole batch.
 */
#include <stdlib.h>
#include <string.h>

#include "pack.h"

#define PK_SEQS_MAX 256 /* sequences tracked per process */
#define PK_CTX_MAX 8 /* contexts with a step open per process */
#define PK_PROCS_MAX 4096
#define PK_THREADS_MAX 65536
#define PK_STEP_ID (1ULL << 63) /* pack steps' ids on a thread: apart from marker ids */

/* A sequence of the engine and the request it serves now. */
struct pk_seq {
	int32_t id;
	uint64_t serial; /* 0: none (free, or its start found no request) */
	int32_t pos_max; /* highest position it was fed, for a restart seen by positions */
	bool rm_seen; /* its cache was (partly) dropped since its last batch */
	bool used;
};

/* A context's step between DECODE entry and its end (return, or the first SYNC after it). */
struct pk_step {
	int64_t ctx; /* llama_context pointer (args[0]); 0: unknown, keyed by thread */
	uint32_t tid;
	uint64_t entry;
	uint32_t n;
	uint64_t serial[RT_STEP_MEMBERS_MAX];
	uint32_t tokens[RT_STEP_MEMBERS_MAX];
	bool prefill[RT_STEP_MEMBERS_MAX];
	bool prefilled[RT_STEP_MEMBERS_MAX]; /* the member's prompt output is in this step */
	bool open; /* between DECODE entry and return */
	bool await_sync; /* returned: the first SYNC return on its context ends it */
	uint64_t ret; /* DECODE return */
	bool used;
};

struct pk_proc {
	uint32_t pid;
	bool tok_seen; /* the pack's tokenize probe works in this process */
	bool sync_seen; /* SYNC records come: a step's thread holds its members until one */
	struct pk_seq seq[PK_SEQS_MAX];
	struct pk_step step[PK_CTX_MAX];
};

struct pk_thread {
	uint32_t tid;
	bool has_batch;
	struct rt_ev_pack_batch batch; /* the batch the next DECODE entry on this thread passes */
	uint64_t tok_serial; /* request of the open tokenize call, 0: none */
	uint64_t tok_entry;
};

struct rt_pack_state {
	struct rt_hmap procs; /* pid → pk_proc */
	struct rt_hmap threads; /* tid → pk_thread */
};

static struct rt_pack_state *state(struct rt_correlator *c)
{
	struct rt_pack_state *s = c->pack;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (rt_hmap_init(&s->procs, PK_PROCS_MAX) || rt_hmap_init(&s->threads, PK_THREADS_MAX)) {
		rt_hmap_fini(&s->procs);
		rt_hmap_fini(&s->threads);
		free(s);
		return NULL;
	}
	c->pack = s;
	return s;
}

static struct pk_proc *proc_of(struct rt_pack_state *s, uint32_t pid)
{
	struct pk_proc *p = rt_hmap_get(&s->procs, pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	if (rt_hmap_put(&s->procs, pid, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static struct pk_thread *thread_of(struct rt_pack_state *s, uint32_t tid)
{
	struct pk_thread *t = rt_hmap_get(&s->threads, tid);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	if (rt_hmap_put(&s->threads, tid, t)) {
		free(t);
		return NULL;
	}
	return t;
}

static struct rt_req_pack *pack_of(struct rt_req *r)
{
	if (!r->pack && (r->pack = calloc(1, sizeof(*r->pack))) != NULL)
		r->pack->seq = -1;
	if (!r->pack)
		r->span.flags |= RT_SPAN_INCOMPLETE;
	return r->pack;
}

/* A request the engine may still be working for: not ended, its client still there. */
static struct rt_req *live(struct rt_correlator *c, uint64_t serial)
{
	struct rt_req *r = serial ? rt_req_get(c, serial) : NULL;

	return r && !r->ended && !r->frozen_ns ? r : NULL;
}

/* ---- tokenize ------------------------------------------------------------- */

static bool in_list(const uint64_t *l, uint32_t n, uint64_t serial)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (l[i] == serial)
			return true;
	return false;
}

/*
 * The request a tokenize call on tid is for: among the requests this thread
 * read (or was handed, cpu.c's owners) that are fully read and have no
 * sequence yet, the one whose read completed last.
 */
static struct rt_req *tokenize_owner(struct rt_correlator *c, uint32_t pid, uint32_t tid)
{
	struct rt_proc *p = rt_proc_get(c, pid, false);
	struct rt_thread *t = rt_hmap_get(&c->threads, tid);
	uint64_t owners[RT_THREAD_OWNERS_MAX + 8];
	uint32_t n = 0;
	struct rt_req *r, *best = NULL;

	if (!p)
		return NULL;
	if (t && t->pid == pid)
		n = rt_cpu_owners(t, owners, sizeof(owners) / sizeof(owners[0]));
	for (r = p->reqs; r; r = r->pnext) {
		if (r->ended || r->frozen_ns || !r->span.received_ns)
			continue;
		if (r->recv_tid != tid && !in_list(owners, n, r->serial))
			continue;
		if (r->pack && (r->pack->seq >= 0 || r->pack->first_step))
			continue;
		if (!best || r->span.received_ns > best->span.received_ns)
			best = r;
	}
	return best;
}

static void on_tokenize(struct rt_correlator *c, struct pk_proc *pp, struct pk_thread *pt,
			const struct rt_ev_pack_call *ev)
{
	struct rt_req *r;
	struct rt_req_pack *k;

	pp->tok_seen = true;
	if (!ev->ret) {
		r = tokenize_owner(c, ev->hdr.pid, ev->hdr.tid);
		pt->tok_serial = r ? r->serial : 0;
		pt->tok_entry = ev->hdr.ts_ns;
		return;
	}
	r = live(c, pt->tok_serial);
	pt->tok_serial = 0;
	if (!r || !(k = pack_of(r)) || k->first_step || ev->hdr.ts_ns < pt->tok_entry)
		return;
	if (!k->tok_calls || pt->tok_entry < k->tok_from)
		k->tok_from = pt->tok_entry;
	if (ev->hdr.ts_ns > k->tok_to)
		k->tok_to = ev->hdr.ts_ns;
	k->tok_calls++;
	r->last_activity = ev->hdr.ts_ns;
}

/* ---- sequences ------------------------------------------------------------ */

static struct pk_seq *seq_find(struct pk_proc *pp, int32_t id, bool create)
{
	struct pk_seq *free_slot = NULL;
	uint32_t i;

	for (i = 0; i < PK_SEQS_MAX; i++) {
		if (pp->seq[i].used && pp->seq[i].id == id)
			return &pp->seq[i];
		if (!pp->seq[i].used && !free_slot)
			free_slot = &pp->seq[i];
	}
	if (!create || !free_slot)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->id = id;
	free_slot->pos_max = -1;
	return free_slot;
}

/*
 * Hand-off order: the oldest tokenized request without a sequence; without
 * a tokenize probe in this process, the oldest fully read request without
 * one that has no response yet.
 */
static struct rt_req *next_waiting(struct rt_correlator *c, const struct pk_proc *pp)
{
	struct rt_proc *p = rt_proc_get(c, pp->pid, false);
	struct rt_req *r, *best = NULL;

	if (!p)
		return NULL;
	for (r = p->reqs; r; r = r->pnext) {
		const struct rt_req_pack *k = r->pack;
		uint64_t key, best_key;

		if (r->ended || r->frozen_ns || !r->span.received_ns)
			continue;
		if (k && (k->seq >= 0 || k->first_step))
			continue;
		if (pp->tok_seen) {
			if (!k || !k->tok_calls)
				continue;
			key = k->tok_from;
			best_key = best ? best->pack->tok_from : 0;
		} else {
			if (r->state != RT_REQ_WAITING)
				continue;
			key = r->span.received_ns;
			best_key = best ? best->span.received_ns : 0;
		}
		if (!best || key < best_key)
			best = r;
	}
	return best;
}

/* Does this batch entry look like a prompt (a new request's start)? */
static bool prompt_like(const struct rt_pack_seq *e, uint32_t logits)
{
	return logits == 0 || (logits == 1 && e->n_tokens > 1);
}

/*
 * The sequence's request for this batch entry: its current one, or (the
 * sequence starts) the next request in hand-off order.
 */
static struct rt_req *seq_request(struct rt_correlator *c, struct pk_proc *pp,
				  const struct rt_pack_seq *e, uint32_t logits, bool no_pos)
{
	struct pk_seq *q = seq_find(pp, e->seq_id, true);
	struct rt_req *r;
	bool start;

	if (!q)
		return NULL;
	r = live(c, q->serial);
	start = !r;
	if (r && r->pack && r->pack->prefilled && prompt_like(e, logits)) {
		/* a prompt after its output began: the cache was dropped for a new
		 * request (seq_rm), or it restarts from position 0 (cleared) */
		if (q->rm_seen && (no_pos || e->pos_min <= q->pos_max))
			start = true;
		if (!no_pos && e->pos_min == 0)
			start = true;
	}
	/*
	 * A sequence met in the middle of its decode (it began before tracing
	 * did) is nobody's: a start is a prompt, positions from 0, or a batch
	 * after its cache was dropped (a cached prompt re-fed from one token).
	 */
	if (start && !r && !prompt_like(e, logits) && !no_pos && e->pos_min > 0 && !q->rm_seen)
		start = false;
	if (start) {
		r = next_waiting(c, pp);
		q->serial = r ? r->serial : 0;
		if (r && pack_of(r))
			r->pack->seq = e->seq_id;
	}
	q->rm_seen = false;
	if (!no_pos && e->pos_max > q->pos_max)
		q->pos_max = e->pos_max;
	if (start && !no_pos)
		q->pos_max = e->pos_max;
	return r && r->pack ? r : NULL;
}

static void on_seq_rm(struct pk_proc *pp, const struct rt_ev_pack_call *ev)
{
	struct pk_seq *q;

	if (ev->ret || ev->args[0] < INT32_MIN || ev->args[0] > INT32_MAX)
		return;
	q = seq_find(pp, (int32_t)ev->args[0], false);
	if (!q)
		return;
	/* the whole sequence (p0 <= 0, p1 < 0): free; part of it: a prompt cache
	 * kept or a context shift, told apart by the next batch */
	if (ev->args[1] <= 0 && ev->args[2] < 0) {
		q->serial = 0;
		q->pos_max = -1;
	}
	q->rm_seen = true;
}

/* ---- steps ---------------------------------------------------------------- */

static struct pk_step *step_slot(struct pk_proc *pp, int64_t ctx, uint32_t tid, bool create)
{
	struct pk_step *free_slot = NULL, *oldest = NULL;
	uint32_t i;

	for (i = 0; i < PK_CTX_MAX; i++) {
		struct pk_step *s = &pp->step[i];

		if (s->used && (ctx ? s->ctx == ctx : !s->ctx && s->tid == tid))
			return s;
		if (!s->used && !free_slot)
			free_slot = s;
		if (s->used && (!oldest || s->entry < oldest->entry))
			oldest = s;
	}
	if (!create)
		return NULL;
	if (!free_slot)
		free_slot = oldest; /* more contexts than slots: the oldest step is forgotten */
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->ctx = ctx;
	free_slot->tid = tid;
	return free_slot;
}

/* The step's members become its thread's step (cpu.c, gpu.c), as a marker step's do. */
static void thread_step_begin(struct rt_correlator *c, const struct pk_step *s, uint32_t pid,
			      uint64_t ts)
{
	struct rt_thread *t = rt_thread_get(c, s->tid, pid, true);
	uint32_t i;

	if (!t || (t->in_step && t->step_src != RT_STEP_PACK))
		return; /* a marker step is open: marker > pack */
	rt_pool_cut(c, ts); /* pools work for the new members from here (pool.c) */
	rt_cpu_account(c, t, ts);
	if (!t->step && !(t->step = calloc(RT_STEP_MEMBERS_MAX, sizeof(*t->step))))
		return;
	if (!t->step_tok && !(t->step_tok = calloc(RT_STEP_MEMBERS_MAX, sizeof(*t->step_tok))))
		return;
	t->in_step = true;
	t->step_src = RT_STEP_PACK;
	t->step_id = PK_STEP_ID | ts;
	t->step_last_slot = -1;
	for (i = 0; i < s->n; i++) {
		t->step[i] = s->serial[i];
		t->step_tok[i] = s->tokens[i];
	}
	t->n_step = s->n;
	t->n_step_tok = s->n;
}

static void thread_step_end(struct rt_correlator *c, uint32_t tid, uint64_t ts)
{
	struct rt_thread *t = rt_hmap_get(&c->threads, tid);

	if (!t || !t->in_step || t->step_src != RT_STEP_PACK)
		return;
	rt_pool_cut(c, ts);
	rt_cpu_account(c, t, ts);
	t->in_step = false;
	t->n_step = 0;
	t->n_step_tok = 0;
}

static void add_member(struct pk_step *s, struct rt_req *r, uint32_t tokens, bool prefill,
		       bool prefilled)
{
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		if (s->serial[i] != r->serial)
			continue;
		/* two sequences of one request: one member, its tokens summed */
		s->tokens[i] += tokens;
		s->prefill[i] |= prefill;
		s->prefilled[i] |= prefilled;
		return;
	}
	if (s->n >= RT_STEP_MEMBERS_MAX) {
		r->span.flags |= RT_SPAN_INCOMPLETE;
		return;
	}
	s->serial[s->n] = r->serial;
	s->tokens[s->n] = tokens;
	s->prefill[s->n] = prefill;
	s->prefilled[s->n] = prefilled;
	s->n++;
}

/*
 * Prefill or decode, by outputs and positions, not by count: until a step
 * gives the sequence's prompt output (a token with logits), its tokens are
 * prompt; after, every step advances its decode (one token, or a draft's
 * several). A batch without logits flags gives only its last token's
 * output, so there a step of several tokens is prompt.
 */
static void decode_entry(struct rt_correlator *c, struct pk_proc *pp, struct pk_thread *pt,
			 const struct rt_ev_pack_call *ev)
{
	const struct rt_ev_pack_batch *b = pt->has_batch ? &pt->batch : NULL;
	struct pk_step *s = step_slot(pp, ev->args[0], ev->hdr.tid, true);
	uint32_t i, n;

	pt->has_batch = false;
	if (!s)
		return;
	memset(s, 0, sizeof(*s));
	s->used = true;
	s->ctx = ev->args[0];
	s->tid = ev->hdr.tid;
	s->entry = ev->hdr.ts_ns;
	s->open = true;
	if (!b || (b->flags & RT_PACK_BATCH_EMBD)) {
		thread_step_end(c, s->tid, ev->hdr.ts_ns);
		return;
	}
	n = b->n_seqs < RT_PACK_BATCH_SEQS ? b->n_seqs : RT_PACK_BATCH_SEQS;
	for (i = 0; i < n; i++) {
		const struct rt_pack_seq *e = &b->seqs[i];
		bool no_logits = b->flags & RT_PACK_BATCH_NO_LOGITS;
		uint32_t logits = no_logits ? (i + 1 == n) : e->n_logits;
		struct rt_req *r;
		bool prefill, prefilled;

		if (!e->n_tokens)
			continue;
		r = seq_request(c, pp, e, logits, b->flags & RT_PACK_BATCH_NO_POS);
		if (!r)
			continue;
		if (no_logits)
			prefill =
				!r->pack->prefilled || (e->n_tokens > 1 && !r->pack->decode_steps);
		else
			prefill = !r->pack->prefilled;
		prefilled = prefill && logits > 0;
		add_member(s, r, e->n_tokens, prefill, prefilled);
		rt_req_touch(r, ev->hdr.tid);
		r->last_activity = ev->hdr.ts_ns;
	}
	if (s->n)
		thread_step_begin(c, s, ev->hdr.pid, ev->hdr.ts_ns);
	else /* nobody's step: a pack step left open on the thread is over */
		thread_step_end(c, s->tid, ev->hdr.ts_ns);
}

/* The step's end at ts: its members' prefill or decode reach ts. */
static void step_commit(struct rt_correlator *c, struct pk_step *s, uint64_t ts)
{
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		struct rt_req *r = live(c, s->serial[i]);
		struct rt_req_pack *k = r ? r->pack : NULL;

		if (!k)
			continue;
		r->span.steps_source =
			r->span.steps_source == RT_PSRC_MARKER ? RT_PSRC_MARKER : RT_PSRC_PACK;
		if (!k->first_step)
			k->first_step = s->entry;
		if (s->prefill[i]) {
			k->prefill_steps++;
			k->prompt_tokens += s->tokens[i];
			k->prefill_end = ts;
			if (s->prefilled[i])
				k->prefilled = true;
		} else {
			k->decode_steps++;
		}
		k->last_was_prefill = s->prefill[i];
		k->last_end = ts;
		r->last_activity = ts;
	}
}

static void decode_return(struct rt_correlator *c, struct pk_proc *pp,
			  const struct rt_ev_pack_call *ev)
{
	struct pk_step *s = step_slot(pp, ev->args[0], ev->hdr.tid, false);

	if (!s || !s->open)
		return;
	s->open = false;
	/* a failed decode (no cache slot, aborted, bad batch) advanced nobody */
	if (ev->retval == 0) {
		step_commit(c, s, ev->hdr.ts_ns);
		s->await_sync = true;
		s->ret = ev->hdr.ts_ns;
	}
	if (!pp->sync_seen || ev->retval != 0)
		thread_step_end(c, s->tid, ev->hdr.ts_ns);
}

/*
 * The first SYNC return after a decode on its context ends the step: on a
 * GPU build the decode returned with the work queued. Members whose last
 * step this was reach the SYNC's return.
 */
static void on_sync(struct rt_correlator *c, struct pk_proc *pp, const struct rt_ev_pack_call *ev)
{
	struct pk_step *s;
	uint32_t i;

	if (!ev->ret)
		return;
	pp->sync_seen = true;
	s = step_slot(pp, ev->args[0], ev->hdr.tid, false);
	if (!s && ev->args[0])
		s = step_slot(pp, 0, ev->hdr.tid, false);
	if (!s || !s->await_sync)
		return;
	s->await_sync = false;
	for (i = 0; i < s->n; i++) {
		struct rt_req *r = live(c, s->serial[i]);
		struct rt_req_pack *k = r ? r->pack : NULL;

		if (!k || k->last_end != s->ret || ev->hdr.ts_ns < s->ret)
			continue;
		k->last_end = ev->hdr.ts_ns;
		if (k->last_was_prefill)
			k->prefill_end = ev->hdr.ts_ns;
	}
	thread_step_end(c, s->tid, ev->hdr.ts_ns);
}

static void on_batch(struct pk_thread *pt, const struct rt_ev_pack_batch *b)
{
	size_t need = offsetof(struct rt_ev_pack_batch, seqs) +
		      (size_t)(b->n_seqs < RT_PACK_BATCH_SEQS ? b->n_seqs : RT_PACK_BATCH_SEQS) *
			      sizeof(struct rt_pack_seq);

	if (b->hdr.size < need) {
		pt->has_batch = false;
		return;
	}
	memset(&pt->batch, 0, sizeof(pt->batch));
	memcpy(&pt->batch, b, need);
	pt->has_batch = true;
}

void rt_pack_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	struct rt_pack_state *s;
	struct pk_proc *pp;
	struct pk_thread *pt;
	const struct rt_ev_pack_call *call = (const void *)ev;

	if (ev->size < (ev->kind == RT_EV_PACK_BATCH ? offsetof(struct rt_ev_pack_batch, seqs) :
						       sizeof(struct rt_ev_pack_call))) {
		c->st.invalid_events++;
		return;
	}
	s = state(c);
	if (!s || !(pp = proc_of(s, ev->pid)) || !(pt = thread_of(s, ev->tid)))
		return;
	if (ev->kind == RT_EV_PACK_BATCH) {
		on_batch(pt, (const struct rt_ev_pack_batch *)ev);
		return;
	}
	switch (call->role) {
	case RT_PACK_TOKENIZE:
		on_tokenize(c, pp, pt, call);
		break;
	case RT_PACK_DECODE:
		if (call->ret)
			decode_return(c, pp, call);
		else
			decode_entry(c, pp, pt, call);
		break;
	case RT_PACK_SYNC:
		on_sync(c, pp, call);
		break;
	case RT_PACK_SEQ_RM:
		on_seq_rm(pp, call);
		break;
	default:
		/* detokenize and pool regions name no request phase here */
		break;
	}
}

void rt_pack_on_exit(struct rt_correlator *c, uint32_t pid, uint32_t tid, bool group_dead)
{
	if (!c->pack)
		return;
	free(rt_hmap_del(&c->pack->threads, tid));
	if (!group_dead)
		return;
	/* a reused pid starts with no sequences */
	free(rt_hmap_del(&c->pack->procs, pid));
}

static void free_entry(struct rt_hmap *m)
{
	size_t pos = 0;
	void *val;

	while ((pos = rt_hmap_next(m, pos, NULL, &val)) != 0)
		free(val);
	rt_hmap_fini(m);
}

void rt_pack_free(struct rt_correlator *c)
{
	if (!c->pack)
		return;
	free_entry(&c->pack->procs);
	free_entry(&c->pack->threads);
	free(c->pack);
	c->pack = NULL;
}

/* ---- the span ------------------------------------------------------------- */

static uint32_t put(struct rt_pack_iv *out, uint32_t n, uint8_t phase, uint64_t from, uint64_t to)
{
	out[n].from = from;
	out[n].to = to > from ? to : from;
	out[n].phase = phase;
	return n + 1;
}

uint32_t rt_pack_finish(struct rt_req *r, struct rt_pack_iv *out)
{
	const struct rt_req_pack *k = r->pack;
	struct rt_span *s = &r->span;
	uint64_t tok_end, last_prefill;
	int32_t slot;
	uint32_t n = 0;

	if (!k)
		return 0;
	s->pack.present = true;
	s->pack.seq = k->seq;
	s->pack.prefill_steps = k->prefill_steps;
	s->pack.decode_steps = k->decode_steps;
	s->pack.prompt_tokens = k->prompt_tokens;
	s->pack.tokenize_calls = k->tok_calls;
	if (k->seq >= 0) {
		/* llama-server: seq_id == slot (current), slot + 1 (2024 builds) */
		slot = r->id_slot;
		s->pack.join = slot < 0				      ? RT_PACK_JOIN_HANDOFF :
			       (k->seq == slot || k->seq == slot + 1) ? RT_PACK_JOIN_ID_SLOT :
									RT_PACK_JOIN_MISMATCH;
	}
	if (r->mark_seen || !k->first_step)
		return 0; /* marker > pack; without a step the pack knows no engine phase */
	tok_end = 0;
	if (k->tok_calls && k->tok_to <= k->first_step) {
		n = put(out, n, RT_PHASE_TOKENIZE, k->tok_from, k->tok_to);
		tok_end = k->tok_to;
	}
	if (!tok_end)
		tok_end = s->received_ns;
	if (tok_end && tok_end <= k->first_step)
		n = put(out, n, RT_PHASE_QUEUE, tok_end, k->first_step);
	last_prefill = k->prefill_steps ? k->prefill_end : k->first_step;
	if (k->prefill_steps)
		n = put(out, n, RT_PHASE_PREFILL, k->first_step, last_prefill);
	if (k->prefilled || k->decode_steps)
		n = put(out, n, RT_PHASE_DECODE, last_prefill,
			k->decode_steps ? k->last_end : last_prefill);
	return n;
}
