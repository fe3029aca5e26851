/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A completion request as it travels handler -> tokenizer -> scheduler queue
 * -> step worker, and the hand-off of its tokens back to the handler.
 *
 * Ownership: the handler creates and frees it. The engine borrows it from
 * tb_engine__submit until tb_req_release; the handler never frees a request
 * the engine still holds (tb_req_wait_released).
 */
#ifndef TB_REQ_H
#define TB_REQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "http.h"

#define TB_STEP_TIDS_MAX 8

struct tb_req {
	char id[TB_REQUEST_ID_MAX + 1];
	uint64_t prompt_chars;
	uint64_t prompt_tokens;
	uint32_t max_tokens;
	bool stream;

	/* ground truth, CLOCK_MONOTONIC ns, 0 = not reached */
	uint64_t accept_ns; /* accept4 returned the connection (its first request only) */
	uint64_t arrival_ns, received_ns;
	uint64_t tokenize_start_ns, tokenize_end_ns, enqueue_ns, admitted_ns;
	uint64_t first_token_write_ns, last_token_write_ns, end_ns;
	uint64_t *token_write_ns; /* max_tokens entries */
	uint32_t n_token_writes;
	uint64_t comm_wait_ns;
	int tokenizer_tid;
	int step_tids[TB_STEP_TIDS_MAX];
	uint32_t n_step_tids;
	bool aborted;

	/* engine -> handler, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t produced; /* tokens the engine has produced */
	bool released; /* the engine dropped its reference */
	bool failed; /* released before all tokens (shutdown or cancel) */

	atomic_bool cancel; /* handler -> engine: the client is gone */
	uint32_t generated; /* engine-only token count */
	struct tb_req *next; /* engine queue link */
};

/*
 * Allocates a request for max_tokens tokens. Returns NULL with errno set.
 * id is truncated to TB_REQUEST_ID_MAX bytes.
 */
struct tb_req *tb_req__new(const char *id, uint32_t max_tokens);

/* Frees the request; r may be NULL. The engine must have released it. */
void tb_req__free(struct tb_req *r);

/*
 * Handler: waits until the engine has produced more than `seen` tokens or
 * released the request. Returns the number produced so far; *done is true
 * once no more will come (all produced, or failed).
 */
uint32_t tb_req_wait_tokens(struct tb_req *r, uint32_t seen, bool *done);

/* Handler: asks the engine to drop the request at its next stage boundary. */
void tb_req_cancel(struct tb_req *r);

/* Handler: waits until the engine released the request. */
void tb_req_wait_released(struct tb_req *r);

/* Engine: one more token is ready; wakes the handler. */
void tb_req_push_token(struct tb_req *r);

/* Engine: drops its reference; failed when not all tokens were produced. */
void tb_req_release(struct tb_req *r, bool failed);

/* Engine: notes that thread tid ran a step for this request. */
void tb_req_add_step_tid(struct tb_req *r, int tid);

#endif /* TB_REQ_H */
