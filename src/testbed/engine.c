// SPDX-License-Identifier: BSD-2-Clause
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "markers.h"
#include "peer.h"

struct fifo {
	struct tb_req *head, *tail;
	uint32_t len;
};

struct tb_engine {
	struct tb_knobs k;
	const struct tb_backend_ops *backend;
	void *bctx;
	bool backend_ready;
	struct tb_peer_client *peer;
	atomic_bool stop;

	pthread_mutex_t lock; /* both queues */
	pthread_cond_t tok_cond, sched_cond;
	struct fifo tokq, schedq;

	pthread_t *tok_threads;
	uint32_t n_tok;
	pthread_t step_thread;
	bool step_started;

	/* step worker only */
	struct tb_req **running, **admitted;
	const char **ids;
	uint64_t *member_tokens;
	uint32_t n_running;
	uint64_t step_id;

	atomic_uint_fast64_t steps_prefill, steps_decode, backend_errors, peer_errors, cancelled;
};

static void fifo_push(struct fifo *q, struct tb_req *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->len++;
}

static struct tb_req *fifo_pop(struct fifo *q)
{
	struct tb_req *r = q->head;

	if (!r)
		return NULL;
	q->head = r->next;
	if (!q->head)
		q->tail = NULL;
	q->len--;
	r->next = NULL;
	return r;
}

static bool stopping(struct tb_engine *e)
{
	return atomic_load_explicit(&e->stop, memory_order_acquire);
}

static void drop_cancelled(struct tb_engine *e, struct tb_req *r)
{
	atomic_fetch_add(&e->cancelled, 1);
	tb_req_release(r, true);
}

static void *tokenizer_main(void *arg)
{
	struct tb_engine *e = arg;
	int tid = tb_gettid();
	struct tb_req *r;

	/* named so that spans and top say what each thread is (prctl, no fd) */
	pthread_setname_np(pthread_self(), "tb-tokenizer");
	for (;;) {
		pthread_mutex_lock(&e->lock);
		while (!stopping(e) && !e->tokq.head)
			pthread_cond_wait(&e->tok_cond, &e->lock);
		if (stopping(e)) {
			pthread_mutex_unlock(&e->lock);
			break;
		}
		r = fifo_pop(&e->tokq);
		pthread_mutex_unlock(&e->lock);

		if (atomic_load(&r->cancel)) {
			drop_cancelled(e, r);
			continue;
		}
		tb_mark_end(r->id, RT_PHASE_QUEUE);
		tb_mark_begin(r->id, RT_PHASE_TOKENIZE);
		r->tokenizer_tid = tid;
		r->tokenize_start_ns = tb_now_ns();
		tb_burn_ms(tb_knobs_tokenize_ms(&e->k, r->prompt_chars), &e->stop);
		r->tokenize_end_ns = tb_now_ns();
		tb_mark_end(r->id, RT_PHASE_TOKENIZE);
		r->prompt_tokens = tb_prompt_tokens(r->prompt_chars);

		pthread_mutex_lock(&e->lock);
		if (stopping(e)) {
			pthread_mutex_unlock(&e->lock);
			tb_req_release(r, true);
			break;
		}
		r->enqueue_ns = tb_now_ns();
		tb_mark_begin(r->id, RT_PHASE_QUEUE);
		fifo_push(&e->schedq, r);
		pthread_cond_signal(&e->sched_cond);
		pthread_mutex_unlock(&e->lock);
	}
	return NULL;
}

static void run_step(struct tb_engine *e, enum tb_step_kind kind, struct tb_req **reqs, uint32_t n,
		     int tid)
{
	struct tb_step st = { .kind = kind, .batch = n };
	uint64_t t0, t1;
	uint32_t i;
	int err;

	st.step_id = ++e->step_id;
	for (i = 0; i < n; i++) {
		e->ids[i] = reqs[i]->id;
		e->member_tokens[i] = kind == TB_STEP_PREFILL ? reqs[i]->prompt_tokens : 1;
		st.tokens += e->member_tokens[i];
	}
	st.ids = e->ids;
	st.member_tokens = e->member_tokens;
	st.cost_ns = tb_ms_to_ns(kind == TB_STEP_PREFILL ? tb_knobs_prefill_ms(&e->k, st.tokens) :
							   tb_knobs_decode_ms(&e->k, n));
	tb_mark_step_begin(st.step_id, n, e->ids);
	err = e->backend->step(e->bctx, &st);
	if (err)
		atomic_fetch_add(&e->backend_errors, 1);
	atomic_fetch_add(kind == TB_STEP_PREFILL ? &e->steps_prefill : &e->steps_decode, 1);

	if (e->peer) {
		for (i = 0; i < n; i++)
			tb_mark_begin(reqs[i]->id, RT_PHASE_COMM_WAIT);
		t0 = tb_now_ns();
		err = tb_peer_client__exchange(e->peer, st.step_id, n);
		t1 = tb_now_ns();
		for (i = 0; i < n; i++) {
			reqs[i]->comm_wait_ns += t1 - t0;
			tb_mark_end(reqs[i]->id, RT_PHASE_COMM_WAIT);
		}
		if (err)
			atomic_fetch_add(&e->peer_errors, 1);
	}
	for (i = 0; i < n; i++)
		tb_req_add_step_tid(reqs[i], tid);
	tb_mark_step_end(st.step_id);
}

/* One more token for r; returns true (and releases r) when it is complete. */
static bool produce(struct tb_req *r)
{
	r->generated++;
	tb_req_push_token(r);
	if (r->generated < r->max_tokens)
		return false;
	tb_req_release(r, false);
	return true;
}

/* Waits for requests; forms a batch when nothing runs. Returns admitted count. */
static uint32_t admit(struct tb_engine *e)
{
	struct tb_req *r, *drop = NULL;
	struct timespec ts;
	uint64_t deadline;
	uint32_t n = 0;

	pthread_mutex_lock(&e->lock);
	if (e->n_running == 0) {
		while (!stopping(e) && !e->schedq.head)
			pthread_cond_wait(&e->sched_cond, &e->lock);
		/* idle batcher: give the batch until max_wait after its oldest arrival to fill */
		deadline = stopping(e) ? 0 :
					 e->schedq.head->enqueue_ns + tb_ms_to_ns(e->k.max_wait_ms);
		while (!stopping(e) && e->schedq.len < e->k.max_batch && tb_now_ns() < deadline) {
			ts.tv_sec = (time_t)(deadline / 1000000000ull);
			ts.tv_nsec = (long)(deadline % 1000000000ull);
			pthread_cond_timedwait(&e->sched_cond, &e->lock, &ts);
		}
	}
	while (!stopping(e) && e->n_running + n < e->k.max_batch && e->schedq.head) {
		r = fifo_pop(&e->schedq);
		if (atomic_load(&r->cancel)) {
			r->next = drop;
			drop = r;
			continue;
		}
		e->admitted[n++] = r;
	}
	pthread_mutex_unlock(&e->lock);
	while (drop) {
		r = drop;
		drop = r->next;
		drop_cancelled(e, r);
	}
	return n;
}

static void *step_main(void *arg)
{
	struct tb_engine *e = arg;
	int tid = tb_gettid();
	uint32_t i, j, n;
	uint64_t now;

	pthread_setname_np(pthread_self(), "tb-engine");
	while (!stopping(e)) {
		n = admit(e);
		if (stopping(e)) {
			for (i = 0; i < n; i++)
				tb_req_release(e->admitted[i], true);
			break;
		}
		if (n) {
			now = tb_now_ns();
			for (i = 0; i < n; i++) {
				e->admitted[i]->admitted_ns = now;
				tb_mark_end(e->admitted[i]->id, RT_PHASE_QUEUE);
				tb_mark_begin(e->admitted[i]->id, RT_PHASE_PREFILL);
			}
			run_step(e, TB_STEP_PREFILL, e->admitted, n, tid);
			for (i = 0; i < n; i++)
				if (!produce(e->admitted[i]))
					e->running[e->n_running++] = e->admitted[i];
		}
		/* a client that left frees its slot at the step boundary, as an abort does */
		for (i = j = 0; i < e->n_running; i++) {
			if (atomic_load(&e->running[i]->cancel))
				drop_cancelled(e, e->running[i]);
			else
				e->running[j++] = e->running[i];
		}
		e->n_running = j;
		if (!e->n_running || stopping(e))
			continue;
		run_step(e, TB_STEP_DECODE, e->running, e->n_running, tid);
		for (i = j = 0; i < e->n_running; i++)
			if (!produce(e->running[i]))
				e->running[j++] = e->running[i];
		e->n_running = j;
	}
	for (i = 0; i < e->n_running; i++)
		tb_req_release(e->running[i], true);
	e->n_running = 0;
	return NULL;
}

struct tb_engine *tb_engine__new(const struct tb_engine_opts *opts)
{
	pthread_condattr_t ca;
	struct tb_engine *e;
	uint32_t i;
	int err;

	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->k = *opts->knobs;
	e->backend = opts->backend ? opts->backend : &tb_backend_sleep;
	atomic_init(&e->stop, false);
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* deadlines are tb_now_ns() */
	pthread_cond_init(&e->sched_cond, &ca);
	pthread_cond_init(&e->tok_cond, NULL);
	pthread_condattr_destroy(&ca);

	e->running = calloc(e->k.max_batch, sizeof(*e->running));
	e->admitted = calloc(e->k.max_batch, sizeof(*e->admitted));
	e->ids = calloc(e->k.max_batch, sizeof(*e->ids));
	e->member_tokens = calloc(e->k.max_batch, sizeof(*e->member_tokens));
	e->tok_threads = calloc(e->k.tokenizer_threads, sizeof(*e->tok_threads));
	if (!e->running || !e->admitted || !e->ids || !e->member_tokens || !e->tok_threads) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = e->backend->init(&e->bctx, &e->k);
	if (err)
		goto cleanup;
	e->backend_ready = true;
	if (opts->peer) {
		e->peer = tb_peer_client__new(opts->peer);
		if (!e->peer) {
			err = -errno;
			goto cleanup;
		}
	}
	for (i = 0; i < e->k.tokenizer_threads; i++) {
		err = -pthread_create(&e->tok_threads[i], NULL, tokenizer_main, e);
		if (err)
			goto cleanup;
		e->n_tok++;
	}
	err = -pthread_create(&e->step_thread, NULL, step_main, e);
	if (err)
		goto cleanup;
	e->step_started = true;
	return e;
cleanup:
	tb_engine__free(e);
	errno = -err;
	return NULL;
}

int tb_engine__submit(struct tb_engine *e, struct tb_req *r)
{
	pthread_mutex_lock(&e->lock);
	if (stopping(e)) {
		pthread_mutex_unlock(&e->lock);
		return -ESHUTDOWN;
	}
	tb_mark_begin(r->id, RT_PHASE_QUEUE);
	fifo_push(&e->tokq, r);
	pthread_cond_signal(&e->tok_cond);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

void tb_engine__stop(struct tb_engine *e)
{
	struct tb_req *r;

	pthread_mutex_lock(&e->lock);
	atomic_store_explicit(&e->stop, true, memory_order_release);
	while ((r = fifo_pop(&e->tokq)))
		tb_req_release(r, true);
	while ((r = fifo_pop(&e->schedq)))
		tb_req_release(r, true);
	pthread_cond_broadcast(&e->tok_cond);
	pthread_cond_broadcast(&e->sched_cond);
	pthread_mutex_unlock(&e->lock);
}

void tb_engine__free(struct tb_engine *e)
{
	uint32_t i;

	if (!e)
		return;
	tb_engine__stop(e);
	for (i = 0; i < e->n_tok; i++)
		pthread_join(e->tok_threads[i], NULL);
	if (e->step_started)
		pthread_join(e->step_thread, NULL);
	if (e->backend_ready)
		e->backend->fini(e->bctx);
	tb_peer_client__free(e->peer);
	pthread_cond_destroy(&e->tok_cond);
	pthread_cond_destroy(&e->sched_cond);
	pthread_mutex_destroy(&e->lock);
	free(e->tok_threads);
	free(e->ids);
	free(e->member_tokens);
	free(e->admitted);
	free(e->running);
	free(e);
}

void tb_engine__stats(struct tb_engine *e, struct tb_engine_stats *st)
{
	st->steps_prefill = atomic_load(&e->steps_prefill);
	st->steps_decode = atomic_load(&e->steps_decode);
	st->backend_errors = atomic_load(&e->backend_errors);
	st->peer_errors = atomic_load(&e->peer_errors);
	st->cancelled = atomic_load(&e->cancelled);
}
