// SPDX-License-Identifier: BSD-2-Clause
/*
 * A response joined mid-body (docs/spans.md, "started_before_trace"): on a
 * connection older than the trace, the first response bytes seen may be
 * the middle of a streamed response whose request was read before tracing
 * began (a daemon restarted under load). The connection's own parser skips
 * them until the next status line (proto/stream.h); this one frames them.
 *
 * A response parser cannot begin inside a body, so it is first given a
 * head naming a chunked event stream, which leaves it where a chunk-size
 * line is due. That head is an assumption, never reported (it is fed with
 * no callbacks): the bytes seen must then hold up as chunks of SSE events,
 * to the terminating chunk, or the parser fails and the caller drops what
 * it made of them. So the status stays unknown, and a response of another
 * shape (a JSON body) gives nothing.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

static const char assumed_head[] = "HTTP/1.1 200 OK\r\n"
				   "Content-Type: text/event-stream\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";

static bool is_hex(uint8_t b)
{
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

bool rt_cut_chunk_start(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && i < 9 && is_hex(p[i]))
		i++;
	if (!i || i > 8) /* a chunk of 4 GiB or more is not an event stream's */
		return false;
	if (i < n && p[i] == ';') /* a chunk extension, short and on one line */
		while (i < n && i < 80 && p[i] != '\r' && p[i] != '\n')
			i++;
	return i + 1 < n && p[i] == '\r' && p[i + 1] == '\n';
}

int rt_cut_open(struct rt_conn *conn)
{
	static const struct rt_http_resp_cb none = { 0 };

	rt_cut_close(conn);
	conn->cut_parser = rt_http_resp__new();
	if (!conn->cut_parser)
		return -ENOMEM;
	if (rt_http_resp_feed(conn->cut_parser, (const uint8_t *)assumed_head,
			      sizeof(assumed_head) - 1, &none, NULL)) {
		rt_cut_close(conn);
		return -EPROTO;
	}
	return 0;
}

/* As the stream driver feeds a record: head, the uncaptured middle, then the tail. */
int rt_cut_feed(struct rt_conn *conn, const struct rt_ev_sock_io *io,
		const struct rt_http_resp_cb *cb, void *ctx)
{
	uint64_t ret = (uint64_t)io->ret, kept = (uint64_t)io->head_len + io->tail_len;
	uint64_t gap = ret > kept ? ret - kept : 0;
	int err;

	if (!conn->cut_parser)
		return -EPROTO;
	err = rt_http_resp_feed(conn->cut_parser, io->data, io->head_len, cb, ctx);
	if (err)
		return err;
	if (gap) {
		err = rt_http_resp_gap(conn->cut_parser, gap, cb, ctx);
		if (err)
			return err;
	}
	if (gap || io->tail_len)
		err = rt_http_resp_feed(conn->cut_parser, io->data + io->head_len, io->tail_len, cb,
					ctx);
	return err;
}

void rt_cut_close(struct rt_conn *conn)
{
	rt_http_resp__free(conn->cut_parser);
	conn->cut_parser = NULL;
}
