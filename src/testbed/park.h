/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The park_idle connection model (docs/testbed.md, "Server shape"): handlers
 * share one epoll set of the listener and idle connections and serve one
 * request per wakeup.
 */
#ifndef TB_PARK_H
#define TB_PARK_H

#include <stdint.h>

struct tb_server;

/*
 * Creates the epoll set and the stop eventfd, makes the listener
 * non-blocking and adds both. Returns 0 or a negative errno (tb_park_fini
 * cleans up either way).
 */
int tb_park_init(struct tb_server *s);

/* A handler thread's loop until the server stops. */
void tb_park_handler(struct tb_server *s, uint32_t slot);

/* Wakes every handler waiting in epoll_wait (after s->stop is set). */
void tb_park_stop(struct tb_server *s);

/* After the handlers are joined: closes parked connections, the epoll set, the eventfd. */
void tb_park_fini(struct tb_server *s);

#endif /* TB_PARK_H */
