/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The emulated inference engine: a tokenizer pool fed by a FIFO, a scheduler
 * queue, and one step worker thread that is also the batcher (it admits
 * requests into a prefill step, then runs decode steps producing one token
 * per running request per step: continuous batching, as vLLM does).
 *
 * Queues need no bound of their own: each handler thread has at most one
 * request in the engine, so both hold at most handler_threads requests.
 */
#ifndef TB_ENGINE_H
#define TB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "knobs.h"
#include "req.h"

struct tb_engine;

struct tb_engine_opts {
	const struct tb_knobs *knobs; /* copied */
	const struct tb_backend_ops *backend; /* NULL: sleep */
	const char *peer; /* "HOST:PORT" for comm wait, or NULL */
};

struct tb_engine_stats {
	uint64_t steps_prefill, steps_decode;
	uint64_t backend_errors, peer_errors;
	uint64_t cancelled; /* requests dropped because their client left */
};

/* Starts the engine's threads. Returns NULL with errno set. */
struct tb_engine *tb_engine__new(const struct tb_engine_opts *opts);

/*
 * Hands a request to the tokenizer queue (the engine borrows it until
 * tb_req_release). Returns 0, or -ESHUTDOWN once the engine is stopping.
 */
int tb_engine__submit(struct tb_engine *e, struct tb_req *r);

/*
 * Stops the threads' work: every request still queued or running is
 * released as failed. Returns without waiting.
 */
void tb_engine__stop(struct tb_engine *e);

/* Stops (if needed), joins the threads and frees; e may be NULL. */
void tb_engine__free(struct tb_engine *e);

/* Counters so far. */
void tb_engine__stats(struct tb_engine *e, struct tb_engine_stats *st);

#endif /* TB_ENGINE_H */
