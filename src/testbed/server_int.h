/* SPDX-License-Identifier: BSD-2-Clause */
/* Server internals shared by server.c (threads, listener) and conn.c (HTTP). */
#ifndef TB_SERVER_INT_H
#define TB_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"
#include "server.h"
#include "truth.h"

struct tb_server {
	struct tb_knobs k;
	enum tb_io_mode io;
	int listen_fd;
	struct tb_engine *engine;
	struct tb_truth *truth;
	atomic_bool stop;

	pthread_mutex_t slots_lock;
	int *conn_fds; /* per handler: the connection it serves, or -1 */
	pthread_t *handlers;
	uint32_t n_handlers;

	atomic_uint_fast64_t id_seq;
	atomic_uint_fast64_t completions, ok, aborted, client_errors, server_errors, truth_errors;
};

/* Serves one connection until it closes, fails or the server stops. */
void tb_conn_serve(struct tb_server *s, int fd);

#endif /* TB_SERVER_INT_H */
