// SPDX-License-Identifier: BSD-2-Clause
/*
 * The simulated server: the acceptor, the handlers, untraced noise, setup.
 * Threads behave so that docs/spans.md's CPU rules are exact: one handler
 * thread per connection reads a request, wakes the tokenizer (engine.c) and
 * sleeps until the engine wakes it with tokens, which it writes one SSE
 * event per write (or several, when it fell behind and coalesces).
 */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define US 1000ULL
#define MS 1000000ULL

static struct gen_conn *conn_of(struct sim_thread *t)
{
	return t->role;
}

/* ---- the acceptor (main thread) -------------------------------------------------------------- */

static void main_on_accept(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);
	int i;

	for (i = 0; i < w->n_conns; i++) {
		if (w->conns[i].fd != a->fd)
			continue;
		w->conns[i].accepted = true;
		w->accepted++;
		/* hand the connection to its handler thread */
		gen_wake(w, t, w->conns[i].handler, SIM_W_CONN);
	}
}

static void main_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);
	struct sim_act *a;
	int i;

	if (w->main_st == 0) {
		w->main_st = 1;
		gen_burn(w, t, 50 * US, 100 * US);
		for (i = 0; i < s->n_threads; i++) {
			/* the pool workers are the engine's: its regions create them */
			if (i == t->idx || !s->threads[i]->traced || i == w->th_spinner ||
			    i == w->th_disp)
				continue;
			sim_push(s, t, SIM_ACT_TASK_NEW)->target = i;
		}
		return;
	}
	if (w->accepted < w->n_conns) {
		a = sim_push(s, t, SIM_ACT_ACCEPT);
		a->done = main_on_accept;
		return;
	}
	gen_wait(w, t, 0, -1, gen_never);
}

/* ---- handlers: one thread per connection ----------------------------------------------------- */

static bool cond_conn(struct sim *s, struct sim_thread *t)
{
	(void)s;
	return conn_of(t)->accepted;
}

static bool abort_watch(const struct gen_req *r, const struct gen_conn *c)
{
	return r->cfg->abort_after && !c->eof_seen;
}

static bool cond_tokens(struct sim *s, struct sim_thread *t)
{
	struct gen_conn *c = conn_of(t);
	struct gen_req *r = &gen_world_of(s)->reqs[c->cur];

	return r->produced > r->consumed || (abort_watch(r, c) && sim_sock_get(s, c->fd)->eof);
}

static void h_on_close(struct sim *s, struct sim_thread *t, struct sim_act *a);

/* Where the correlator's "previous response ended" rule for arrivals stands. */
static uint64_t prev_end_enter(const struct gen_req *r)
{
	return r->end_enter ? r->end_enter : r->end;
}

static void h_on_read(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);
	struct gen_conn *c = conn_of(t);
	size_t lo = a->data_off, hi = lo + (size_t)a->ret;
	int i, j;

	if (a->ret == 0) {
		c->eof_seen = true;
		return;
	}
	for (i = c->first_req; i < c->first_req + c->n_reqs; i++) {
		struct gen_req *r = &w->reqs[i];

		if (r->off_begin < hi && r->off_end > lo)
			sim_log_io(s, t->idx, i);
		if (r->off_begin >= lo && r->off_begin < hi) {
			r->start = s->now;
			/* arrived while an earlier request on the connection was unanswered */
			for (j = c->first_req; j < i; j++)
				if (!w->reqs[j].end)
					r->pipelined = true;
			/*
			 * The read's arrival is this request's only when the request
			 * begins at the read's first byte, and never before the
			 * write that ended the previous response on the connection
			 * began (docs/spans.md).
			 */
			if (r->off_begin == lo && a->arr_ns && a->arr_ns <= s->now &&
			    (i == c->first_req || a->arr_ns >= prev_end_enter(&w->reqs[i - 1]))) {
				r->arrival = a->arr_ns;
				r->arrival_bound = a->arr_flags & RT_ARR_LEFT_UNREAD;
			}
		}
		if (r->off_end > lo && r->off_end <= hi)
			r->received = s->now;
	}
}

static void response_write(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_req *r = &gen_world_of(s)->reqs[a->req];

	if (a->ret <= 0)
		return;
	sim_log_io(s, t->idx, a->req);
	if (!r->first_write)
		r->first_write = a->enter_ns;
	r->status = 200;
}

static void h_enqueue(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);

	(void)t;
	w->tok_inbox[w->tok_n++] = a->req;
}

static void h_on_tokens(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);
	struct gen_conn *c = conn_of(t);
	struct gen_req *r = &w->reqs[a->req];
	struct sim_act *cl;
	long i;

	if (a->ret < 0) {
		/* EPIPE: the client is gone; tell the engine, close, stop serving */
		r->aborted = true;
		if (!r->end)
			r->end = s->now;
		r->eng_abort = true;
		c->hst = GEN_H_DONE;
		cl = sim_push(s, t, SIM_ACT_CLOSE);
		cl->fd = c->fd;
		cl->done = h_on_close;
		return;
	}
	response_write(s, t, a);
	for (i = 0; i < a->arg && r->n_tok_writes < GEN_MAX_TOKENS; i++)
		r->tok_writes[r->n_tok_writes++] = a->enter_ns;
	if (!r->first_tok)
		r->first_tok = a->enter_ns;
	r->last_tok = a->enter_ns;
	if (r->cfg->abort_after && r->n_tok_writes >= r->cfg->abort_after && !r->abort_scheduled) {
		r->abort_scheduled = true;
		sim_timer(s, s->now + sim_range(s, 300 * US, 600 * US), gen_client_close,
			  (uint64_t)r->conn, 1);
	}
}

static void h_on_abort_read(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_conn *c = conn_of(t);
	struct gen_req *r = &gen_world_of(s)->reqs[c->cur];

	if (a->ret != 0)
		return;
	/* the peer closed before the response ended: that is when the abort is seen */
	c->eof_seen = true;
	r->aborted = true;
	r->end = s->now;
}

static void h_on_final(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);
	struct gen_req *r = &w->reqs[a->req];

	response_write(s, t, a);
	r->end = s->now;
	r->end_enter = a->enter_ns;
	r->done = true;
	gen_client_after(w, r);
}

static void stop_check(struct sim *s, uint64_t a, uint64_t b)
{
	struct gen_world *w = gen_world_of(s);

	(void)a;
	(void)b;
	if (w->conns_closed == w->n_conns && !w->eng_running && !w->eng_waiting && !w->eng_in_n &&
	    s->threads[w->th_eng]->state == SIM_SLEEP &&
	    s->threads[w->th_eng]->wait_mask == SIM_W_INBOX)
		s->stopped = true;
	else
		sim_timer(s, s->now + 2 * MS, stop_check, 0, 0);
}

static void h_on_close(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct gen_world *w = gen_world_of(s);

	(void)a;
	conn_of(t)->closed = true;
	/* a pooled handler moves on to its next connection (it waited unread) */
	if (conn_of(t)->next_conn >= 0)
		t->role = &w->conns[conn_of(t)->next_conn];
	if (++w->conns_closed == w->n_conns && !w->stop_armed) {
		w->stop_armed = true;
		sim_timer(s, s->now + 2 * MS, stop_check, 0, 0);
	}
}

static void handler_start(struct gen_world *w, struct sim_thread *t, struct gen_conn *c)
{
	struct gen_req *r = &w->reqs[c->next_proc];
	struct gen_str b = { 0 };

	c->cur = r->idx;
	c->next_proc = r->idx + 1 < c->first_req + c->n_reqs ? r->idx + 1 : -1;
	gen_burn(w, t, 30 * US, 80 * US); /* parse, validate, build the engine request */
	if (r->cfg->stream && !r->cfg->hdr_with_first) {
		gen_http_stream_head(&b);
		if (r->cfg->empty_first)
			gen_sse_chunk(&b, r->cfg->fmt, NULL);
		gen_send(w, t, c->fd, w->sc->send_sys, &b, r->idx, response_write);
	}
	gen_call(w, t, h_enqueue, r->idx, 0);
	gen_mark(w, t, RT_EV_MARK_BEGIN, RT_PHASE_QUEUE, r->idx);
	gen_wake(w, t, w->th_tok, SIM_W_INBOX);
	c->hst = GEN_H_TOKENS;
}

static void handler_finish(struct gen_world *w, struct sim_thread *t, struct gen_conn *c,
			   struct gen_req *r)
{
	struct gen_str b = { 0 }, body = { 0 };

	gen_mark(w, t, RT_EV_MARK_BEGIN, RT_PHASE_POSTPROCESS, r->idx);
	gen_burn(w, t, 600 * US, 2500 * US); /* detokenize, usage, logging */
	gen_mark(w, t, RT_EV_MARK_END, RT_PHASE_POSTPROCESS, r->idx);
	if (!r->cfg->stream) {
		gen_nonstream_body(&body, r);
		gen_nonstream_head(&b, body.len);
		if (r->cfg->two_writes) {
			gen_send(w, t, c->fd, w->sc->send_sys, &b, r->idx, response_write);
			gen_send(w, t, c->fd, w->sc->send_sys, &body, r->idx, h_on_final);
		} else {
			gs_put(&b, body.p, body.len);
			gs_free(&body);
			gen_send(w, t, c->fd, w->sc->send_sys, &b, r->idx, h_on_final);
		}
	} else if (r->cfg->fmt == GEN_FMT_LLAMA) {
		gen_llama_final_event(&b, r);
		gen_send(w, t, c->fd, w->sc->send_sys, &b, r->idx, response_write);
		gen_chunk_end(&b);
		gen_send(w, t, c->fd, w->sc->send_sys, &b, r->idx, h_on_final);
	} else {
		gen_stream_final(&b, r);
		gen_send(w, t, c->fd, w->sc->final_sys, &b, r->idx, h_on_final);
	}
	c->hst = GEN_H_READ;
}

static void handler_tokens(struct gen_world *w, struct sim_thread *t, struct gen_conn *c)
{
	struct gen_req *r = &w->reqs[c->cur];
	int pending = r->produced - r->consumed, n, i;
	struct gen_str b = { 0 };

	if (pending > 0 && !r->cfg->stream) {
		/* a non-streamed response collects the tokens */
		gen_burn(w, t, 4 * US * pending, 8 * US * pending);
		r->consumed += pending;
		return;
	}
	if (pending > 0) {
		n = r->cfg->coalesce ? pending : 1;
		if (r->cfg->hdr_with_first && !r->first_write)
			gen_http_stream_head(&b);
		for (i = r->consumed; i < r->consumed + n; i++)
			gen_sse_chunk(&b, r->cfg->fmt, gen_token_text(r, i));
		gen_burn(w, t, 15 * US * n, 30 * US * n); /* detokenize, JSON, SSE framing */
		gen_send(w, t, c->fd, w->sc->send_sys, &b, r->idx, h_on_tokens)->arg = n;
		r->consumed += n;
		return;
	}
	if (r->consumed == r->cfg->n_tokens) {
		handler_finish(w, t, c, r);
		return;
	}
	if (abort_watch(r, c) && sim_sock_get(&w->sim, c->fd)->eof) {
		gen_recv(w, t, c->fd, w->sc->recv_sys, h_on_abort_read);
		return;
	}
	/* a server that watches for disconnects also waits on the socket */
	gen_wait(w, t, SIM_W_TOKENS | (abort_watch(r, c) ? SIM_W_SOCK : 0),
		 abort_watch(r, c) ? c->fd : -1, cond_tokens);
}

static void handler_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);
	struct gen_conn *c = conn_of(t);
	struct sim_act *a;

	switch (c->hst) {
	case GEN_H_WAIT_CONN:
		if (!c->accepted) {
			gen_wait(w, t, SIM_W_CONN, -1, cond_conn);
			return;
		}
		c->hst = GEN_H_READ;
		c->next_proc = c->first_req;
		/* fallthrough */
	case GEN_H_READ:
		if (c->next_proc >= 0 && w->reqs[c->next_proc].received) {
			handler_start(w, t, c);
			return;
		}
		if (c->eof_seen) {
			a = sim_push(s, t, SIM_ACT_CLOSE);
			a->fd = c->fd;
			a->done = h_on_close;
			c->hst = GEN_H_DONE;
			return;
		}
		gen_recv(w, t, c->fd, w->sc->recv_sys, h_on_read);
		return;
	case GEN_H_TOKENS:
		handler_tokens(w, t, c);
		return;
	case GEN_H_DONE:
		gen_wait(w, t, 0, -1, gen_never);
		return;
	}
}

/* ---- noise: an untraced CPU hog, so that runqueue waits and preemptions happen --------------- */

static void noise_behave(struct sim *s, struct sim_thread *t)
{
	struct gen_world *w = gen_world_of(s);

	gen_burn(w, t, 1 * MS, 5 * MS);
	sim_push(s, t, SIM_ACT_SLEEP)->ns = sim_range(s, 3 * MS, 12 * MS);
}

/* ---- setup ------------------------------------------------------------------------------------ */

static const char *req_id(void *ctx, int req)
{
	struct gen_world *w = ctx;

	return req >= 0 && req < w->n_reqs ? w->reqs[req].id : "";
}

static void pack_batch(void *ctx, uint64_t step_id, struct rt_ev_pack_batch *b)
{
	struct gen_world *w = ctx;
	const struct gen_pk_step *st = step_id < w->n_pk_steps ? &w->pk_steps[step_id] : NULL;
	int i;

	for (i = 0; st && i < st->n && i < RT_PACK_BATCH_SEQS; i++) {
		b->seqs[i] = st->seqs[i];
		b->n_tokens += st->seqs[i].n_tokens;
		b->n_seqs++;
	}
	b->n_read = b->n_tokens;
}

static int32_t pack_seq(void *ctx, int req)
{
	struct gen_world *w = ctx;

	return req >= 0 && req < w->n_reqs ? w->reqs[req].pk_seq : -1;
}

static struct rt_sock_addr loopback(uint16_t port)
{
	struct rt_sock_addr a;

	memset(&a, 0, sizeof(a));
	a.addr[0] = 127;
	a.addr[3] = 1;
	a.port = port;
	a.family = RT_AF_INET;
	return a;
}

static const char *path_of(enum gen_fmt fmt)
{
	switch (fmt) {
	case GEN_FMT_CHAT:
		return "/v1/chat/completions";
	case GEN_FMT_LLAMA:
		return "/completion";
	default:
		return "/v1/completions";
	}
}

static int add_thread(struct gen_world *w, uint32_t tid, const char *comm,
		      void (*behave)(struct sim *, struct sim_thread *), void *role)
{
	int idx = sim_thread_add(&w->sim, GEN_PID, tid, comm, true, behave, role);

	/* a new thread sets itself up before it waits for work */
	if (idx >= 0)
		sim_push(&w->sim, w->sim.threads[idx], SIM_ACT_BURN)->ns =
			sim_range(&w->sim, 30 * US, 60 * US);
	return idx;
}

static int setup_requests(struct gen_world *w)
{
	const struct gen_scenario *sc = w->sc;
	struct gen_str st = { 0 };
	size_t head;
	int i, ci, err = 0;

	if (sc->n_reqs < 1 || sc->n_reqs > GEN_MAX_REQS)
		return -EINVAL;
	w->n_reqs = sc->n_reqs;
	for (i = 0; i < sc->n_reqs; i++) {
		struct gen_req *r = &w->reqs[i];
		struct gen_conn *c;

		if (sc->reqs[i].conn < 0 || sc->reqs[i].conn >= w->n_conns)
			return -EINVAL;
		c = &w->conns[sc->reqs[i].conn];
		r->cfg = &sc->reqs[i];
		r->idx = i;
		r->conn = r->cfg->conn;
		if (!c->n_reqs)
			c->first_req = i;
		else if (c->first_req + c->n_reqs != i)
			return -EINVAL; /* a connection's requests must be listed together */
		r->seq = ++c->n_reqs;
		r->method = "POST";
		r->path = path_of(r->cfg->fmt);
		r->prompt_tokens = r->cfg->prompt_len / 4 + 3;
		r->tokens_out = -1;
		r->open_phase = -1;
		r->pk_seq = -1;
		if (r->cfg->with_id || w->mode == RT_GEN_MARKERS)
			snprintf(r->id, sizeof(r->id), "%s-%d", sc->name, i + 1);
		else
			snprintf(r->id, sizeof(r->id), "%u:%d:%d", GEN_PID, c->fd, r->seq);
		if (r->cfg->n_tokens < 2 || r->cfg->n_tokens > GEN_MAX_TOKENS)
			return -EINVAL;
	}
	for (ci = 0; ci < w->n_conns && !err; ci++) {
		struct gen_conn *c = &w->conns[ci];

		st.len = 0;
		for (i = c->first_req; i < c->first_req + c->n_reqs && !err; i++) {
			struct gen_req *r = &w->reqs[i];

			r->off_begin = st.len;
			err = gen_http_request(w, r, &st, &head);
			r->head_end = head;
			r->off_end = st.len;
		}
		if (!err) {
			c->stream = malloc(st.len ? st.len : 1);
			if (!c->stream)
				err = -ENOMEM;
			else
				memcpy(c->stream, st.p, st.len);
			c->stream_len = st.len;
		}
	}
	gs_free(&st);
	return err;
}

int gen_server_setup(struct gen_world *w)
{
	const struct gen_scenario *sc = w->sc;
	struct sim *s = &w->sim;
	struct rt_sock_addr srv = loopback(GEN_SERVER_PORT);
	struct rt_sock_addr a, b;
	char name[RT_COMM_LEN];
	int i, idx, err;

	s->req_id = req_id;
	s->req_ctx = w;
	s->pack = w->mode == RT_GEN_PACK;
	s->pack_batch = pack_batch;
	s->pack_seq = pack_seq;
	s->src_waking = SIM_SRC_LATE;
	s->src_mark = SIM_SRC_LATE;
	s->listen_fd = GEN_LISTEN_FD;
	if (sc->n_conns < 1 || sc->n_conns > GEN_MAX_CONNS || sc->noise > 2 || sc->n_handlers < 0)
		return -EINVAL;
	w->n_conns = sc->n_conns;

	w->th_sleeper = w->th_spinner = w->th_runtime = w->th_disp = -1;
	w->th_main = add_thread(w, GEN_PID, "testsrv", main_behave, NULL);
	w->th_tok = add_thread(w, GEN_PID + 1, "tokenizer", gen_tok_behave, NULL);
	w->th_eng = add_thread(w, GEN_PID + 2, "engine", gen_eng_behave, NULL);
	if (w->th_main < 0 || w->th_tok < 0 || w->th_eng < 0)
		return -ENOSPC;
	for (i = 0; i < sc->n_conns; i++) {
		struct gen_conn *c = &w->conns[i];

		c->w = w;
		c->fd = 7 + i;
		c->cur = -1;
		c->next_proc = -1;
		c->client_port = (uint16_t)(51000 + 17 * i + (w->seed % 997));
		c->next_conn = -1;
		if (sc->n_handlers && i >= sc->n_handlers) {
			/* the pool is full: this one waits for a handler to be done */
			c->handler = w->conns[i - sc->n_handlers].handler;
			w->conns[i - sc->n_handlers].next_conn = i;
		} else {
			snprintf(name, sizeof(name), "http-%d", i);
			c->handler = add_thread(w, GEN_PID + 3 + i, name, handler_behave, c);
		}
		if (c->handler < 0)
			return c->handler;
		a = loopback(c->client_port);
		err = sim_sock_add(s, c->fd, &srv, &a);
		if (err)
			return err;
		sim_sock_get(s, c->fd)->watched = sc->arrival;
	}
	/* after the handlers: threads are listed in tid order */
	if (sc->pool) {
		w->th_sleeper = add_thread(w, GEN_PID + 20, "pool-sleep", gen_sleeper_behave, NULL);
		w->th_spinner = add_thread(w, GEN_PID + 21, "pool-spin", gen_spinner_behave, NULL);
		w->th_runtime = add_thread(w, GEN_PID + 22, "runtime-gc", gen_runtime_behave, NULL);
		w->th_disp = add_thread(w, GEN_PID + 23, "pool-disp", gen_disp_behave, NULL);
		if (w->th_sleeper < 0 || w->th_spinner < 0 || w->th_runtime < 0 || w->th_disp < 0)
			return -ENOSPC;
	}
	for (i = 0; i < sc->noise; i++) {
		idx = sim_thread_add(s, GEN_NOISE_PID, GEN_NOISE_PID + i, "stress", false,
				     noise_behave, NULL);
		if (idx < 0)
			return idx;
		sim_thread_start(s, idx);
	}
	if (sc->comm) {
		a = loopback((uint16_t)(42000 + w->seed % 1000));
		b = loopback(GEN_PEER_PORT);
		err = sim_sock_add(s, GEN_PEER_FD, &a, &b);
		if (err)
			return err;
	}
	err = setup_requests(w);
	if (err)
		return err;
	for (i = 0; i < sc->n_conns; i++) {
		struct gen_conn *c = &w->conns[i];

		if (!c->n_reqs)
			return -EINVAL;
		sim_timer(s, w->t_start + sc->conn_at[i], gen_conn_open, (uint64_t)i, 0);
		sim_timer(s, w->t_start + sc->conn_at[i] + w->reqs[c->first_req].cfg->at_ns,
			  gen_client_send, (uint64_t)c->first_req, 0);
	}
	sim_thread_running(s, w->th_main);
	return s->err;
}
