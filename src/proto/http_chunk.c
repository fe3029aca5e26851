// SPDX-License-Identifier: BSD-2-Clause
/*
 * Chunked transfer coding for the message engine (http_msg.c): chunk-size
 * lines, extensions and trailers byte by byte, chunk data in bulk (by the
 * engine), and, where a gap lost the framing, the search for the last
 * chunk in the bytes that follow.
 */
#include "http_msg_int.h"

/* "\r\n0\r\n\r\n": the last chunk, as seen from the end of the previous one. */
#define LAST_CHUNK 0x0d0a300d0a0d0aULL
#define LAST_CHUNK_MASK 0xffffffffffffffULL
#define LAST_CHUNK_LEN 7

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void chunk_size_done(struct rt_http_msg *m)
{
	m->head_bytes = 0;
	m->state = m->remaining ? ST_CDATA : ST_CTRAIL_START;
}

void rt_http_chunk_byte(struct rt_http_msg *m, uint8_t c)
{
	int d;

	if (m->state <= ST_CSIZE_LF && ++m->head_bytes > RT_HTTP_CHUNK_EXT_MAX) {
		rt_http_msg_fail(m, RT_HTTP_ERR_MALFORMED);
		return;
	}
	switch (m->state) {
	case ST_CSIZE:
		d = hexval(c);
		if (d >= 0) {
			/* leading zeros are fine; a 17th significant digit is not */
			if (m->remaining >> 60) {
				rt_http_msg_fail(m, RT_HTTP_ERR_MALFORMED);
				return;
			}
			m->remaining = (m->remaining << 4) | (uint64_t)d;
			m->digits = 1;
			return;
		}
		if (!m->digits) {
			rt_http_msg_fail(m, RT_HTTP_ERR_MALFORMED);
			return;
		}
		/* fallthrough */
	case ST_CSIZE_WS:
		if (c == ' ' || c == '\t')
			m->state = ST_CSIZE_WS;
		else if (c == ';')
			m->state = ST_CEXT;
		else if (c == '\r')
			m->state = ST_CSIZE_LF;
		else if (c == '\n')
			chunk_size_done(m);
		else
			rt_http_msg_fail(m, RT_HTTP_ERR_MALFORMED);
		return;
	case ST_CEXT:
		if (c == '\r')
			m->state = ST_CSIZE_LF;
		else if (c == '\n')
			chunk_size_done(m);
		else if (bad_value_byte(c))
			rt_http_msg_fail(m, RT_HTTP_ERR_MALFORMED);
		return;
	case ST_CSIZE_LF:
		if (c == '\n')
			chunk_size_done(m);
		else
			rt_http_msg_fail(m, RT_HTTP_ERR_MALFORMED);
		return;
	case ST_CDATA_CR:
		if (c == '\r') {
			m->state = ST_CDATA_LF;
			return;
		}
		/* fallthrough */
	case ST_CDATA_LF:
		if (c == '\n') {
			m->remaining = 0;
			m->digits = 0;
			m->state = ST_CSIZE;
		} else {
			rt_http_msg_fail(m, RT_HTTP_ERR_MALFORMED);
		}
		return;
	case ST_CTRAIL_START:
		if (c == '\r') {
			m->state = ST_CTRAIL_LF;
			return;
		}
		if (c == '\n') {
			rt_http_msg_complete(m);
			return;
		}
		m->state = ST_CTRAIL_LINE;
		/* fallthrough */
	case ST_CTRAIL_LINE:
		/* trailers are skipped, within the head bound */
		if (++m->head_bytes > RT_HTTP_HEAD_MAX)
			rt_http_msg_fail(m, RT_HTTP_ERR_TOO_LARGE);
		else if (c == '\n')
			m->state = ST_CTRAIL_START;
		return;
	case ST_CTRAIL_LF:
		if (c == '\n')
			rt_http_msg_complete(m);
		else
			rt_http_msg_fail(m, RT_HTTP_ERR_MALFORMED);
		return;
	}
}

size_t rt_http_chunk_run(struct rt_http_msg *m, const uint8_t *p, size_t n)
{
	size_t k = 0;
	int d;

	switch (m->state) {
	case ST_CDATA_CR:
		/* the CRLF after a chunk's data */
		if (n < 2 || p[0] != '\r' || p[1] != '\n')
			return 0;
		m->remaining = 0;
		m->digits = 0;
		m->state = ST_CSIZE;
		return 2;
	case ST_CSIZE:
		/* size digits, as rt_http_chunk_byte reads them one by one */
		while (k < n && (d = hexval(p[k])) >= 0 && !(m->remaining >> 60) &&
		       m->head_bytes < RT_HTTP_CHUNK_EXT_MAX) {
			m->head_bytes++;
			m->remaining = (m->remaining << 4) | (uint64_t)d;
			m->digits = 1;
			k++;
		}
		/* and the line's CRLF right after them */
		if (m->digits && n - k >= 2 && p[k] == '\r' && p[k + 1] == '\n' &&
		    m->head_bytes + 2 <= RT_HTTP_CHUNK_EXT_MAX) {
			chunk_size_done(m);
			k += 2;
		}
		return k;
	default:
		return 0;
	}
}

size_t rt_http_chunk_lost(struct rt_http_msg *m, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		m->window = (m->window << 8) | p[i];
		if ((m->window & LAST_CHUNK_MASK) == LAST_CHUNK) {
			size_t body = i + 1 > LAST_CHUNK_LEN ? i + 1 - LAST_CHUNK_LEN : 0;

			/* pass on what precedes the last chunk, not the chunk itself */
			if (body) {
				tap_body(m, p, body, false);
				m->ops->data(m->w, p, body);
			}
			tap(m, p + body, i + 1 - body, RT_HTTP_TAP_KEEP);
			rt_http_msg_complete(m);
			return i + 1;
		}
	}
	/* up to 6 bytes of a last chunk split across feeds reach the sink: harmless */
	tap_body(m, p, n, false);
	m->ops->data(m->w, p, n);
	return n;
}
