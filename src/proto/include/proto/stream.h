/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stream driver: how one connection's syscall records are fed to the
 * HTTP parsers (http.h). The correlator (src/correlate/conn.c) and the
 * recording redactor (src/export/redact.c) both feed through it, so that a
 * recording keeps exactly the bytes that replay will parse, in the state
 * replay will parse them in: the redactor's privacy rests on this being
 * one piece of code, not two copies kept in step.
 *
 * What it owns, per connection:
 *   - the order of one record's parts: head, the uncaptured middle (a gap),
 *     then the tail, fed even when empty after a gap (the parser may end
 *     there a message whose framing the gap hid);
 *   - joining mid-stream (a connection older than the trace): a TLS record
 *     or the HTTP/2 preface at the start of the first request bytes makes
 *     the stream unreadable; otherwise each parser resynchronises;
 *   - the requests awaiting a response (at most RT_STREAM_FIFO_MAX), so the
 *     response to a HEAD request is framed without a body;
 *   - the unreadable verdict (the first on_error of either parser).
 *
 * What a caller decides: which direction a record's bytes travel (client to
 * server is RT_STREAM_REQ), what an end of file or an error return means to
 * it (rt_stream_abort_errno(), rt_stream_abort()).
 */
#ifndef RT_PROTO_STREAM_H
#define RT_PROTO_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include <reqtrace/event.h>

#include "proto/http.h"

/* Pipelined requests awaiting responses; the oldest is given up beyond. */
#define RT_STREAM_FIFO_MAX 16
/* Linux's default ip_local_port_range starts here: a side using a port at
 * or above it is most likely the client of the connection. */
#define RT_STREAM_EPHEMERAL_PORT_MIN 32768

enum rt_stream_dir {
	RT_STREAM_REQ = 0, /* client to server: requests */
	RT_STREAM_RESP = 1, /* server to client: responses */
};

/* The caller's callbacks, all optional (NULL); ctx is the one given to the call. */
struct rt_stream_ops {
	const struct rt_http_req_cb *req;
	const struct rt_http_resp_cb *resp;
	/* n bytes of the direction being fed went uncaptured (told before the parser) */
	void (*gap)(void *ctx, uint64_t n);
};

struct rt_stream_opts {
	bool predates; /* first seen mid-stream: join at the next message start */
	rt_http_tap_fn tap; /* NULL: none; set on both parsers when they are made */
	void *tap_ctx;
};

/* One connection, both directions. Embedded by its users; fields are the
 * driver's own, read them through the functions below. */
struct rt_stream {
	struct rt_http_req_parser *req; /* made on the first bytes of each direction */
	struct rt_http_resp_parser *resp;
	rt_http_tap_fn tap;
	void *tap_ctx;
	bool predates, req_resynced, resp_resynced;
	bool unreadable;
	bool responding; /* a response began that answers a request we saw */
	bool close_delimited; /* ... and it ends when the connection closes */
	bool req_head; /* the request being read is a HEAD */
	uint8_t n_fifo;
	uint16_t fifo_head; /* bit i: the i-th request awaiting a response is a HEAD */
};

void rt_stream_init(struct rt_stream *s, const struct rt_stream_opts *opts);
/* Frees the parsers (they may hold message bytes); s may be reused after init. */
void rt_stream_fini(struct rt_stream *s);

/*
 * Feeds the payload of one SOCK_RECV or SOCK_SEND record with io->ret > 0
 * in direction dir. Returns 0; -ENOMEM when the parser could not be made
 * (nothing was fed); -EPROTO when the stream is or became unreadable (the
 * rest of the record was not fed).
 */
int rt_stream_feed(struct rt_stream *s, enum rt_stream_dir dir, const struct rt_ev_sock_io *io,
		   const struct rt_stream_ops *ops, void *ctx);

/* The connection closed: a close-delimited response in progress completes. */
void rt_stream_eof(struct rt_stream *s, const struct rt_stream_ops *ops, void *ctx);

/* A syscall failed with an errno that ends the connection's requests
 * (rt_stream_abort_errno()): the requests awaiting responses are forgotten. */
void rt_stream_abort(struct rt_stream *s);

bool rt_stream_unreadable(const struct rt_stream *s);

/* ret (a negative errno) says the peer is gone: EPIPE, ECONNRESET, ECONNABORTED, ETIMEDOUT. */
bool rt_stream_abort_errno(int64_t ret);

/* A connection first seen by its I/O: did this side open it? A guess from
 * the ports (an ephemeral local port, a well-known peer port). */
bool rt_stream_guess_outbound(const struct rt_sock_addr *local, const struct rt_sock_addr *peer);

#endif /* RT_PROTO_STREAM_H */
