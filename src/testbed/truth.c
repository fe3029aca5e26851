// SPDX-License-Identifier: BSD-2-Clause
#include "truth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct tb_truth {
	FILE *f;
	pthread_mutex_t lock;
};

struct tb_truth *tb_truth__open(const char *path)
{
	struct tb_truth *t;
	int fd, err;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	t->f = fdopen(fd, "w");
	if (!t->f) {
		err = errno;
		close(fd);
		free(t);
		errno = err;
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

/* A stamp that was never reached is null, not 0. */
static void stamp(struct tb_buf *b, const char *key, uint64_t ns)
{
	tb_buf_printf(b, ",\"%s\":", key);
	tb_buf_json_u64(b, ns ? ns : TB_NULL_U64);
}

int tb_truth_format(const struct tb_req *r, struct tb_buf *b)
{
	uint32_t i;

	/* overflow is sticky: one check at the end covers every append */
	tb_buf_reset(b);
	tb_buf_puts(b, "{\"request_id\":");
	tb_buf_json_str(b, r->id);
	stamp(b, "accept_ns", r->accept_ns);
	stamp(b, "arrival_ns", r->arrival_ns);
	/*
	 * The same instant as arrival_ns under the name that says what it is:
	 * a tracer's arrival is when the bytes reached the socket, earlier
	 */
	stamp(b, "first_read_ns", r->arrival_ns);
	stamp(b, "received_ns", r->received_ns);
	stamp(b, "tokenize_start_ns", r->tokenize_start_ns);
	stamp(b, "tokenize_end_ns", r->tokenize_end_ns);
	stamp(b, "enqueue_ns", r->enqueue_ns);
	stamp(b, "admitted_ns", r->admitted_ns);
	stamp(b, "first_token_write_ns", r->first_token_write_ns);
	tb_buf_puts(b, ",\"token_write_ns\":[");
	for (i = 0; i < r->n_token_writes; i++)
		tb_buf_printf(b, "%s%" PRIu64, i ? "," : "", r->token_write_ns[i]);
	tb_buf_puts(b, "]");
	stamp(b, "last_token_write_ns", r->last_token_write_ns);
	stamp(b, "end_ns", r->end_ns);
	tb_buf_printf(b, ",\"comm_wait_ns\":%" PRIu64, r->comm_wait_ns);
	tb_buf_puts(b, ",\"tokenizer_tid\":");
	if (r->tokenizer_tid)
		tb_buf_printf(b, "%d", r->tokenizer_tid);
	else
		tb_buf_puts(b, "null");
	tb_buf_puts(b, ",\"step_tids\":[");
	for (i = 0; i < r->n_step_tids; i++)
		tb_buf_printf(b, "%s%d", i ? "," : "", r->step_tids[i]);
	tb_buf_printf(b, "],\"outcome\":\"%s\"}\n", r->aborted ? "aborted" : "ok");
	return b->overflow ? -ENOBUFS : 0;
}

int tb_truth__write(struct tb_truth *t, const struct tb_req *r, struct tb_buf *line)
{
	int err;

	if (!t)
		return 0;
	err = tb_truth_format(r, line);
	if (err)
		return err;
	pthread_mutex_lock(&t->lock);
	/* flushed per line: a killed testbed still leaves every finished request */
	if (fwrite(line->p, 1, line->len, t->f) != line->len || fflush(t->f) != 0)
		err = -EIO;
	pthread_mutex_unlock(&t->lock);
	return err;
}

void tb_truth__free(struct tb_truth *t)
{
	if (!t)
		return;
	fclose(t->f);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
