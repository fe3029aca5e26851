/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The testbed's HTTP front end: a pool of handler threads that accept on one
 * loopback listener and serve a connection each, request by request
 * (docs/testbed.md, "Server shape").
 */
#ifndef TB_SERVER_H
#define TB_SERVER_H

#include <stdint.h>

#include "backend.h"
#include "io.h"
#include "knobs.h"

struct tb_server;

struct tb_server_opts {
	const struct tb_knobs *knobs; /* copied */
	enum tb_io_mode io;
	int listen_fd; /* from tb_listen_loopback; the server owns it */
	const char *truth_path; /* ground-truth log, or NULL */
	const char *peer; /* "HOST:PORT" of a peer for comm wait, or NULL */
	const struct tb_backend_ops *backend; /* NULL: sleep */
};

struct tb_server_stats {
	uint64_t completions; /* completion requests handed to the engine */
	uint64_t ok, aborted;
	uint64_t client_errors; /* 4xx sent */
	uint64_t server_errors; /* 5xx sent */
	uint64_t truth_errors; /* truth lines that could not be written */
};

/*
 * Binds 127.0.0.1:port (0: ephemeral) and listens. Returns the socket and
 * the bound port in *bound, or a negative errno.
 */
int tb_listen_loopback(uint16_t port, uint16_t *bound);

/* Starts the engine and the handler threads. Returns NULL with errno set. */
struct tb_server *tb_server__new(const struct tb_server_opts *opts);

/*
 * Stops accepting, shuts every connection down and stops the engine;
 * returns at once (in-flight requests end as aborted).
 */
void tb_server__stop(struct tb_server *s);

/* Stops (if needed) and waits for every handler to finish its connection. */
void tb_server__join(struct tb_server *s);

/* Stops (if needed), joins every thread, closes the truth log; s may be NULL. */
void tb_server__free(struct tb_server *s);

/* Counters so far. */
void tb_server__stats(struct tb_server *s, struct tb_server_stats *st);

#endif /* TB_SERVER_H */
