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

	/* park_idle: the listener and idle connections (EPOLLONESHOT), a stop eventfd */
	int epfd, stop_efd;
	struct tb_park *parked; /* every open connection, under slots_lock */

	atomic_uint_fast64_t id_seq;
	atomic_uint_fast64_t completions, ok, aborted, client_errors, server_errors, truth_errors;
};

struct tb_conn;

/*
 * Serves one connection until it closes, fails or the server stops.
 * accept_ns: when accept4 returned it (the truth of its first request).
 */
void tb_conn_serve(struct tb_server *s, int fd, uint64_t accept_ns);

/* A connection served one request at a time (park_idle). NULL: no memory. */
struct tb_conn *tb_conn__new(struct tb_server *s, int fd, uint64_t accept_ns);

/*
 * Reads and serves the next request (blocking until it is complete).
 * Returns 0 when the connection stays open, else it must be closed.
 */
int tb_conn_serve_one(struct tb_conn *c);

/* Request bytes already read and not served (pipelining): epoll will not tell. */
bool tb_conn_buffered(const struct tb_conn *c);

int tb_conn_fd(const struct tb_conn *c);

/* Lingers when the close leaves request bytes unread, frees; never closes the fd. */
void tb_conn__free(struct tb_conn *c);

#endif /* TB_SERVER_INT_H */
