/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Comm wait: in each step the step worker exchanges a small message with a
 * peer process (a second testbed in --peer-mode) over a persistent loopback
 * TCP connection and blocks until the reply, like a rank waiting on a
 * collective. The peer replies after its comm_delay_ms.
 *
 * Wire: the request and the reply are the same 16 bytes, little-endian
 * { u32 magic "RTPB", u32 batch, u64 step_id }.
 */
#ifndef TB_PEER_H
#define TB_PEER_H

#include <stdint.h>

#define TB_PEER_MAGIC 0x42505452u /* "RTPB" */
#define TB_PEER_CONNS_MAX 16 /* connections a peer serves at once */

struct tb_peer_client;
struct tb_peer_server;

/*
 * Parses "HOST:PORT" (HOST: an IPv4 address or localhost) and connects,
 * retrying for up to 5 s while the peer starts. Returns NULL with errno set.
 */
struct tb_peer_client *tb_peer_client__new(const char *host_port);

/*
 * Sends one step message and blocks until the reply. After a failure the
 * next call reconnects. Returns 0 or a negative errno.
 */
int tb_peer_client__exchange(struct tb_peer_client *c, uint64_t step_id, uint32_t batch);

/* Closes the connection; c may be NULL. */
void tb_peer_client__free(struct tb_peer_client *c);

/*
 * Starts a peer on listen_fd (bound and listening; the peer takes it over):
 * each connection gets a thread that answers every message after delay_ns.
 * Returns NULL with errno set.
 */
struct tb_peer_server *tb_peer_server__new(int listen_fd, uint64_t delay_ns);

/* Stops accepting and closes every connection; returns at once. */
void tb_peer_server__stop(struct tb_peer_server *s);

/* Stops (if needed), joins the threads and frees; s may be NULL. */
void tb_peer_server__free(struct tb_peer_server *s);

/* Messages answered so far. */
uint64_t tb_peer_server__answered(const struct tb_peer_server *s);

#endif /* TB_PEER_H */
