/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reqtrace-load's response checker: an incremental HTTP/1.1 response parser
 * (Content-Length, chunked or close-delimited bodies) that checks a
 * completion response as it arrives: for a stream, every SSE event is
 * well-formed JSON, `data: [DONE]` ends it and usage.completion_tokens equals
 * the number of content-bearing events; otherwise one well-formed JSON
 * completion. Independent of the tracer's parsers and of the testbed's.
 */
#ifndef LD_RESP_H
#define LD_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define LD_HEAD_MAX 16384
#define LD_EVENT_MAX (1u << 20) /* one SSE event */
#define LD_BODY_MAX (16u << 20) /* a non-streamed body */

enum ld_state {
	LD_HEAD,
	LD_BODY_LENGTH, /* Content-Length */
	LD_BODY_EOF, /* until the server closes */
	LD_CHUNK_SIZE,
	LD_CHUNK_DATA,
	LD_CHUNK_CRLF,
	LD_TRAILER,
	LD_DONE,
	LD_ERROR,
};

struct ld_resp {
	/* what to expect */
	bool stream;
	char expect_id[128];
	int64_t max_tokens; /* -1: not checked */

	enum ld_state st;
	char head[LD_HEAD_MAX];
	size_t head_len;
	int status;
	bool chunked, has_length, keep_alive, event_stream;
	uint64_t length, body_read, chunk_left;
	char line[80]; /* a chunk-size or trailer line */
	size_t line_len;
	struct tb_buf body; /* stream: bytes of the unfinished event; else the whole body */

	/* results */
	uint32_t events; /* content-bearing events (non-stream: 1 if text) */
	int64_t completion_tokens; /* from usage, -1 until seen */
	bool done_seen; /* data: [DONE] */
	char err[200];
};

/*
 * Prepares r for one response; expect_id (may be NULL) must be echoed in
 * x-request-id when the server sends one; max_tokens >= 0 bounds
 * completion_tokens.
 */
void ld_resp_init(struct ld_resp *r, bool stream, const char *expect_id, int64_t max_tokens);

/* Frees r's buffers. */
void ld_resp_fini(struct ld_resp *r);

/*
 * Feeds n received bytes (n == 0: the server closed the connection).
 * Returns 1 when the response is complete and valid, 0 when more is needed,
 * -EPROTO with r->err set when it is malformed or fails a check. Bytes past
 * the end of the response are a protocol error (the client never pipelines).
 */
int ld_resp_feed(struct ld_resp *r, const char *data, size_t n);

#endif /* LD_RESP_H */
