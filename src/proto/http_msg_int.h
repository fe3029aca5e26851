/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The message engine's own internals, shared by http_msg.c (start line,
 * headers, bodies, gaps) and http_chunk.c (chunked transfer coding). Not
 * for the parsers: they see the engine through http_int.h.
 */
#ifndef RT_HTTP_MSG_INT_H
#define RT_HTTP_MSG_INT_H

#include "http_int.h"

/* rt_http_msg.state */
enum {
	ST_IDLE = 0,
	ST_LOST, /* framing unknown: wait for a feed that starts like a message */
	ST_ERROR, /* not HTTP/1.x: ignore everything */
	ST_TLS1, /* 0x16 */
	ST_TLS2, /* 0x16 0x03 */
	ST_H2SNIFF,
	ST_METHOD,
	ST_TARGET,
	ST_REQ_VERSION,
	ST_RESP_VERSION,
	ST_STATUS,
	ST_REASON,
	ST_CR, /* a CR in the head: LF must follow */
	ST_HDR_START,
	ST_HDR_NAME,
	ST_HDR_OWS,
	ST_HDR_VALUE,
	ST_SKIP_LINE, /* guessed head: resume at the next line */
	ST_DRAIN, /* guessed message: ignore the rest of the feed */
	ST_BODY_LENGTH,
	ST_BODY_CLOSE,
	ST_BODY_FEED_END,
	ST_CSIZE,
	ST_CSIZE_WS,
	ST_CEXT,
	ST_CSIZE_LF,
	ST_CDATA,
	ST_CDATA_CR,
	ST_CDATA_LF,
	ST_CTRAIL_START,
	ST_CTRAIL_LINE,
	ST_CTRAIL_LF,
	ST_CLOST, /* chunk framing lost: look for the last chunk */
};

/* A byte that ends a header value or fails it (RFC 9110 field-value). */
static inline bool bad_value_byte(uint8_t c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static inline void tap_flush(struct rt_http_msg *m)
{
	if (m->run_n)
		m->tap(m->tap_ctx, m->run_p, m->run_n, m->run_cls);
	m->run_n = 0;
}

/* Runs of one class are merged: a head costs a few calls, not one per byte. */
static inline void tap(struct rt_http_msg *m, const uint8_t *p, size_t n, uint8_t cls)
{
	if (!m->tap || !n)
		return;
	if (m->run_n && m->run_cls == cls && m->run_p + m->run_n == p) {
		m->run_n += n;
		return;
	}
	tap_flush(m);
	m->run_p = p;
	m->run_n = n;
	m->run_cls = cls;
}

static inline void tap_body(struct rt_http_msg *m, const uint8_t *p, size_t n, bool last)
{
	tap(m, p, n, (uint8_t)(m->body_tap | (last ? RT_HTTP_TAP_LAST : 0)));
}

void rt_http_msg_fail(struct rt_http_msg *m, int err);
void rt_http_msg_complete(struct rt_http_msg *m);

/* A byte of chunk framing (ST_CSIZE .. ST_CTRAIL_LF). */
void rt_http_chunk_byte(struct rt_http_msg *m, uint8_t c);
/* Untapped: the usual chunk framing at p in one step; bytes taken, 0: none. */
size_t rt_http_chunk_run(struct rt_http_msg *m, const uint8_t *p, size_t n);
/* ST_CLOST: bytes until the last chunk; returns how many were consumed. */
size_t rt_http_chunk_lost(struct rt_http_msg *m, const uint8_t *p, size_t n);

#endif /* RT_HTTP_MSG_INT_H */
