// SPDX-License-Identifier: BSD-2-Clause
#include "req.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tb_req *tb_req__new(const char *id, uint32_t max_tokens)
{
	struct tb_req *r;

	if (max_tokens == 0) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->token_write_ns = calloc(max_tokens, sizeof(*r->token_write_ns));
	if (!r->token_write_ns) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	strncpy(r->id, id, TB_REQUEST_ID_MAX);
	r->id[TB_REQUEST_ID_MAX] = '\0';
	r->max_tokens = max_tokens;
	atomic_init(&r->cancel, false);
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	return r;
}

void tb_req__free(struct tb_req *r)
{
	if (!r)
		return;
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r->token_write_ns);
	free(r);
}

uint32_t tb_req_wait_tokens(struct tb_req *r, uint32_t seen, bool *done)
{
	uint32_t produced;

	pthread_mutex_lock(&r->lock);
	while (r->produced <= seen && !r->released)
		pthread_cond_wait(&r->cond, &r->lock);
	produced = r->produced;
	*done = r->released;
	pthread_mutex_unlock(&r->lock);
	return produced;
}

void tb_req_cancel(struct tb_req *r)
{
	atomic_store(&r->cancel, true);
}

void tb_req_wait_released(struct tb_req *r)
{
	pthread_mutex_lock(&r->lock);
	while (!r->released)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

void tb_req_push_token(struct tb_req *r)
{
	pthread_mutex_lock(&r->lock);
	r->produced++;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

void tb_req_release(struct tb_req *r, bool failed)
{
	pthread_mutex_lock(&r->lock);
	r->released = true;
	r->failed = failed;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

void tb_req_add_step_tid(struct tb_req *r, int tid)
{
	uint32_t i;

	for (i = 0; i < r->n_step_tids; i++)
		if (r->step_tids[i] == tid)
			return;
	if (r->n_step_tids < TB_STEP_TIDS_MAX)
		r->step_tids[r->n_step_tids++] = tid;
}
