// SPDX-License-Identifier: BSD-2-Clause
/*
 * The HTTP/1.x message engine shared by the request and response parsers:
 * a byte-at-a-time state machine for the head (so a message may be split
 * anywhere and nothing but whitelisted values is ever buffered), bulk
 * handling of body bytes, and the rules for uncaptured bytes (gaps).
 * Untapped, runs of bytes inside one token of the head or of chunk framing
 * are taken at once (head_run, rt_http_chunk_run) with the effect the
 * byte-wise path would have had; tests/unit/test_http_paths.c holds the
 * two to each other.
 *
 * Gaps (see rt_http_msg_gap):
 *  - inside a body of known length, or inside a chunk of known size, they
 *    are counted down: framing is kept;
 *  - inside the head, the message is "guessed": header lines after the gap
 *    are still parsed, syntax errors no longer end the stream, and the
 *    message ends at the end of the feed that follows the gap (the tail of
 *    the same syscall) unless a complete head and a known length say
 *    otherwise;
 *  - where chunk framing is lost, the bytes are passed on (the SSE decoder
 *    copes) and the body ends at the next "\r\n0\r\n\r\n" seen;
 *  - after a guessed end, the stream is "lost" until a feed starts with
 *    something that looks like a message start.
 *
 * A tap (the recording redactor) learns the class of every byte consumed
 * from the state that consumed it; masking a MASK byte (or a body byte the
 * parser does not read) must not change any later decision, so bytes that
 * end a line or fail the parse are always KEEP. In a guessed head, a header
 * name may be body text: it is tapped MASK, and KEEP again once it turns
 * out to be wanted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "http_msg_int.h"

enum {
	CR_LINE, /* end of the start line */
	CR_HEADER, /* end of a header line */
	CR_HEAD, /* the empty line ending the head */
};

static const char http1[] = "HTTP/1.";

static void fail(struct rt_http_msg *m, int err);

void rt_http_msg_init(struct rt_http_msg *m, enum rt_http_dir dir,
		      const struct rt_http_msg_ops *ops, void *w)
{
	memset(m, 0, sizeof(*m));
	m->dir = (uint8_t)dir;
	m->ops = ops;
	m->w = w;
	m->state = ST_IDLE;
	m->body_tap = RT_HTTP_TAP_BODY;
}

static void reset_msg(struct rt_http_msg *m)
{
	free(m->s);
	m->s = NULL;
	m->begun = m->head_done = m->interim = m->guess = m->incomplete = false;
	m->keep = m->truncated = false;
	m->pos = m->minor = m->name_len = m->method_len = 0;
	m->status = m->n_headers = m->target_len = m->value_len = m->value_trim = 0;
	m->digits = 0;
	m->head_bytes = 0;
	m->remaining = 0;
	m->window = 0;
	m->body_tap = RT_HTTP_TAP_BODY;
}

void rt_http_msg_fini(struct rt_http_msg *m)
{
	reset_msg(m);
}

static void to_lost(struct rt_http_msg *m)
{
	reset_msg(m);
	m->state = ST_LOST;
	m->at_boundary = false;
}

static int begin_msg(struct rt_http_msg *m)
{
	m->s = calloc(1, sizeof(*m->s));
	if (!m->s || m->ops->begin(m->w)) {
		m->nomem = true;
		to_lost(m);
		return -ENOMEM;
	}
	m->begun = true;
	return 0;
}

static void complete(struct rt_http_msg *m)
{
	bool guessed = m->guess;

	m->ops->complete(m->w, m->incomplete, guessed);
	reset_msg(m);
	/* after a guessed end, check that what follows looks like a message */
	m->state = guessed ? ST_LOST : ST_IDLE;
	m->at_boundary = guessed;
}

static void fail(struct rt_http_msg *m, int err)
{
	if (m->guess) {
		m->state = ST_DRAIN;
		return;
	}
	m->state = ST_ERROR;
	m->ops->error(m->w, (enum rt_http_error)err);
	reset_msg(m);
}

static void start_body(struct rt_http_msg *m, enum rt_http_body body, uint64_t length)
{
	if (m->tap && body != RT_HTTP_BODY_NONE) {
		tap_flush(m);
		m->tap(m->tap_ctx, NULL, 0, RT_HTTP_TAP_BODY_START);
	}
	switch (body) {
	case RT_HTTP_BODY_LENGTH:
		if (length) {
			m->remaining = length;
			m->state = ST_BODY_LENGTH;
			return;
		}
		break;
	case RT_HTTP_BODY_CHUNKED:
		m->remaining = 0;
		m->digits = 0;
		m->head_bytes = 0; /* from here: bytes of the chunk-size line or trailers */
		m->state = ST_CSIZE;
		return;
	case RT_HTTP_BODY_CLOSE:
		m->state = ST_BODY_CLOSE;
		return;
	case RT_HTTP_BODY_FEED_END:
		m->state = ST_BODY_FEED_END;
		return;
	case RT_HTTP_BODY_NONE:
		break;
	}
	complete(m);
}

static void head_end(struct rt_http_msg *m)
{
	enum rt_http_body body = RT_HTTP_BODY_NONE;
	uint64_t length = 0;
	int err;

	if (m->interim) {
		/* 1xx: the real response follows; nothing is reported */
		reset_msg(m);
		m->state = ST_IDLE;
		return;
	}
	m->head_done = true;
	err = m->ops->head_done(m->w, m->incomplete, &body, &length);
	if (err) {
		fail(m, err);
		return;
	}
	/* a length header may have been in the gap: end with the syscall */
	if (m->guess && (body == RT_HTTP_BODY_CLOSE ||
			 (body == RT_HTTP_BODY_NONE && m->dir == RT_HTTP_DIR_REQ)))
		body = RT_HTTP_BODY_FEED_END;
	start_body(m, body, length);
}

static void name_done(struct rt_http_msg *m)
{
	m->keep = false;
	if (!m->interim && m->name_len < RT_HTTP_NAME_KEEP) {
		m->name[m->name_len] = '\0';
		m->keep = m->ops->want(m->w, m->name);
	}
	m->value_len = m->value_trim = 0;
	m->truncated = false;
	m->state = ST_HDR_OWS;
}

static void header_done(struct rt_http_msg *m)
{
	int err;

	m->state = ST_HDR_START;
	if (!m->keep)
		return;
	m->s->value[m->value_trim] = '\0';
	err = m->ops->header(m->w, m->name, m->s->value, m->value_trim, m->truncated);
	if (err)
		fail(m, err);
}

static void value_byte(struct rt_http_msg *m, uint8_t c)
{
	if (!m->keep)
		return;
	if (m->value_len >= RT_HTTP_VALUE_KEEP) {
		m->truncated = true;
		return;
	}
	m->s->value[m->value_len++] = (char)c;
	if (c != ' ' && c != '\t')
		m->value_trim = m->value_len;
}

static bool is_method_char(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
}

static char lower(uint8_t c)
{
	return (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
}

static void line_end(struct rt_http_msg *m, uint8_t c, int after)
{
	if (c == '\r') {
		m->state = ST_CR;
		m->after_cr = (uint8_t)after;
		return;
	}
	/* a bare LF ends a line too (RFC 9112 2.2 allows it) */
	if (after == CR_LINE)
		m->state = ST_HDR_START;
	else if (after == CR_HEADER)
		header_done(m);
	else
		head_end(m);
}

static void idle_byte(struct rt_http_msg *m, uint8_t c)
{
	/* empty lines before a message are tolerated (RFC 9112 2.2) */
	if (c == '\r' || c == '\n')
		return;
	m->head_bytes = 1;
	if (c == 0x16) {
		m->state = ST_TLS1;
	} else if (m->dir == RT_HTTP_DIR_REQ) {
		if (!is_method_char(c)) {
			fail(m, RT_HTTP_ERR_MALFORMED);
		} else if (!begin_msg(m)) {
			m->s->method[0] = (char)c;
			m->method_len = 1;
			m->state = ST_METHOD;
		}
	} else if (c == 'H') {
		m->state = ST_RESP_VERSION;
		m->pos = 1;
	} else if (c == 0x00) {
		/* an HTTP/2 frame header: 24-bit length, then type 4 (SETTINGS) */
		m->state = ST_H2SNIFF;
		m->pos = 0;
	} else {
		fail(m, RT_HTTP_ERR_MALFORMED);
	}
}

static void version_byte(struct rt_http_msg *m, uint8_t c)
{
	if (m->pos < 7) {
		if (c == (uint8_t)http1[m->pos])
			m->pos++;
		else
			fail(m,
			     m->pos == 5 && c == '2' ? RT_HTTP_ERR_HTTP2 : RT_HTTP_ERR_MALFORMED);
		return;
	}
	if (m->pos == 7) {
		if (c >= '0' && c <= '9') {
			m->minor = (uint8_t)(c - '0');
			m->pos++;
		} else {
			fail(m, RT_HTTP_ERR_MALFORMED);
		}
		return;
	}
	if (m->dir == RT_HTTP_DIR_REQ) {
		if (c == '\r' || c == '\n')
			line_end(m, c, CR_LINE);
		else
			fail(m, RT_HTTP_ERR_MALFORMED);
	} else if (c == ' ') {
		m->state = ST_STATUS;
		m->pos = 0;
		m->status = 0;
	} else {
		fail(m, RT_HTTP_ERR_MALFORMED);
	}
}

static void status_byte(struct rt_http_msg *m, uint8_t c)
{
	if (m->pos < 3) {
		if (c < '0' || c > '9' || (m->pos == 0 && c == '0')) {
			fail(m, RT_HTTP_ERR_MALFORMED);
			return;
		}
		m->status = (uint16_t)(m->status * 10 + (c - '0'));
		if (++m->pos < 3)
			return;
		if (m->status < 200)
			m->interim = true;
		else
			begin_msg(m);
		return;
	}
	if (c == ' ')
		m->state = ST_REASON;
	else if (c == '\r' || c == '\n')
		line_end(m, c, CR_LINE);
	else
		fail(m, RT_HTTP_ERR_MALFORMED);
}

static void head_byte(struct rt_http_msg *m, uint8_t c)
{
	if (m->state != ST_IDLE && ++m->head_bytes > RT_HTTP_HEAD_MAX) {
		fail(m, RT_HTTP_ERR_TOO_LARGE);
		return;
	}
	switch (m->state) {
	case ST_IDLE:
		idle_byte(m, c);
		break;
	case ST_TLS1:
		if (c == 0x03)
			m->state = ST_TLS2;
		else
			fail(m, RT_HTTP_ERR_MALFORMED);
		break;
	case ST_TLS2:
		fail(m, c <= 0x04 ? RT_HTTP_ERR_TLS : RT_HTTP_ERR_MALFORMED);
		break;
	case ST_H2SNIFF:
		if (++m->pos == 3)
			fail(m, c == 0x04 ? RT_HTTP_ERR_HTTP2 : RT_HTTP_ERR_MALFORMED);
		break;
	case ST_METHOD:
		if (c == ' ')
			m->state = ST_TARGET;
		else if (!is_method_char(c) || m->method_len >= RT_HTTP_METHOD_MAX - 1)
			fail(m, RT_HTTP_ERR_MALFORMED);
		else
			m->s->method[m->method_len++] = (char)c;
		break;
	case ST_TARGET:
		if (c == ' ' && m->target_len) {
			m->state = ST_REQ_VERSION;
			m->pos = 0;
		} else if (c <= 0x20 || c == 0x7f) {
			fail(m, RT_HTTP_ERR_MALFORMED); /* includes HTTP/0.9 "GET /\r\n" */
		} else {
			if (m->target_len < RT_HTTP_PATH_MAX - 1)
				m->s->target[m->target_len] = (char)c;
			m->target_len++; /* bounded by RT_HTTP_HEAD_MAX */
		}
		break;
	case ST_REQ_VERSION:
	case ST_RESP_VERSION:
		version_byte(m, c);
		break;
	case ST_STATUS:
		status_byte(m, c);
		break;
	case ST_REASON:
		if (c == '\r' || c == '\n')
			line_end(m, c, CR_LINE);
		else if (bad_value_byte(c))
			fail(m, RT_HTTP_ERR_MALFORMED);
		break;
	case ST_CR:
		if (c == '\n')
			line_end(m, c, m->after_cr);
		else
			fail(m, RT_HTTP_ERR_MALFORMED);
		break;
	case ST_HDR_START:
		if (c == '\r' || c == '\n') {
			line_end(m, c, CR_HEAD);
		} else if (!rt_http_is_tchar(c)) {
			/* obs-fold, a colon without a name, binary: servers reject them too */
			fail(m, RT_HTTP_ERR_MALFORMED);
		} else if (++m->n_headers > RT_HTTP_HEADERS_MAX) {
			fail(m, RT_HTTP_ERR_TOO_LARGE);
		} else {
			m->name[0] = lower(c);
			m->name_len = 1;
			m->state = ST_HDR_NAME;
		}
		break;
	case ST_HDR_NAME:
		if (c == ':') {
			name_done(m);
		} else if (!rt_http_is_tchar(c)) {
			fail(m, RT_HTTP_ERR_MALFORMED); /* no colon, or space before it */
		} else {
			if (m->name_len < RT_HTTP_NAME_KEEP)
				m->name[m->name_len] = lower(c);
			if (m->name_len < UINT8_MAX)
				m->name_len++;
		}
		break;
	case ST_HDR_OWS:
	case ST_HDR_VALUE:
		if (c == '\r' || c == '\n') {
			line_end(m, c, CR_HEADER);
		} else if (bad_value_byte(c)) {
			fail(m, RT_HTTP_ERR_MALFORMED);
		} else if (m->state == ST_HDR_VALUE || (c != ' ' && c != '\t')) {
			m->state = ST_HDR_VALUE;
			value_byte(m, c);
		}
		break;
	}
}

static bool looks_like_start(const struct rt_http_msg *m, const uint8_t *p, size_t n)
{
	static const char *const methods[] = { "GET ",	 "POST ",    "PUT ",	 "DELETE ", "HEAD ",
					       "PATCH ", "OPTIONS ", "CONNECT ", "TRACE " };

	if (m->dir == RT_HTTP_DIR_RESP)
		return memcmp(p, http1, n < 7 ? n : 7) == 0;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		size_t l = strlen(methods[i]);

		if (memcmp(p, methods[i], n < l ? n : l) == 0)
			return true;
	}
	return false;
}

static size_t lost(struct rt_http_msg *m, const uint8_t *p, size_t n)
{
	if (!m->at_boundary) {
		tap(m, p, n, RT_HTTP_TAP_MASK);
		return n;
	}
	m->at_boundary = false;
	if (looks_like_start(m, p, n)) {
		m->state = ST_IDLE;
		return 0;
	}
	/* a TLS record (handshake or application data) where HTTP/1.x was expected */
	if (n >= 3 && (p[0] == 0x16 || p[0] == 0x17) && p[1] == 0x03 && p[2] <= 0x04) {
		tap(m, p, 3, RT_HTTP_TAP_KEEP);
		m->state = ST_ERROR;
		m->ops->error(m->w, RT_HTTP_ERR_TLS);
		return n;
	}
	tap(m, p, n, RT_HTTP_TAP_MASK);
	return n;
}

/*
 * Untapped, a run of bytes that only extends the current token (a target,
 * a reason phrase, a header name or value) is taken in one step, with the
 * effect the byte-wise path would have had on each; the byte that ends or
 * fails the token, and any byte past the head bound, is left to that path,
 * so what fails and where is unchanged. Returns the bytes taken (0: none).
 */
static size_t head_run(struct rt_http_msg *m, const uint8_t *p, size_t n)
{
	size_t lim = RT_HTTP_HEAD_MAX - m->head_bytes, k = 0;

	if (m->head_bytes >= RT_HTTP_HEAD_MAX)
		return 0;
	if (lim > n)
		lim = n;
	switch (m->state) {
	case ST_TARGET:
		while (k < lim && p[k] > 0x20 && p[k] != 0x7f) {
			if (m->target_len < RT_HTTP_PATH_MAX - 1)
				m->s->target[m->target_len] = (char)p[k];
			m->target_len++;
			k++;
		}
		break;
	case ST_REASON:
		while (k < lim && !bad_value_byte(p[k]))
			k++;
		break;
	case ST_HDR_NAME:
		while (k < lim && rt_http_is_tchar(p[k])) {
			if (m->name_len < RT_HTTP_NAME_KEEP)
				m->name[m->name_len] = lower(p[k]);
			if (m->name_len < UINT8_MAX)
				m->name_len++;
			k++;
		}
		break;
	case ST_HDR_OWS:
		while (k < lim && (p[k] == ' ' || p[k] == '\t'))
			k++;
		if (k == lim || bad_value_byte(p[k]))
			break;
		m->state = ST_HDR_VALUE;
		/* fallthrough */
	case ST_HDR_VALUE:
		if (!m->keep) {
			while (k < lim && !bad_value_byte(p[k]))
				k++;
			break;
		}
		for (; k < lim && !bad_value_byte(p[k]); k++) {
			if (m->value_len >= RT_HTTP_VALUE_KEEP) {
				m->truncated = true;
				continue;
			}
			m->s->value[m->value_len++] = (char)p[k];
			if (p[k] != ' ' && p[k] != '\t')
				m->value_trim = m->value_len;
		}
		break;
	default:
		return 0;
	}
	m->head_bytes += (uint32_t)k;
	return k;
}

/* What a head or chunk-framing byte is to a tap, from the state about to consume it. */
static uint8_t byte_class(const struct rt_http_msg *m, uint8_t c)
{
	if (bad_value_byte(c)) /* CR, LF, and what fails the parse */
		return RT_HTTP_TAP_KEEP;
	switch (m->state) {
	case ST_IDLE:
		/* a first byte that fails the parse fails it as an 'x' would */
		return is_method_char(c) || c == 'H' ? RT_HTTP_TAP_KEEP : RT_HTTP_TAP_MASK;
	case ST_HDR_START:
	case ST_HDR_NAME:
		/* after a gap in the head, a "name" may be body text: kept only if wanted */
		return m->guess && rt_http_is_tchar(c) ? RT_HTTP_TAP_MASK : RT_HTTP_TAP_KEEP;
	case ST_HDR_OWS:
		if (c == ' ' || c == '\t')
			return RT_HTTP_TAP_KEEP;
		/* fallthrough */
	case ST_HDR_VALUE:
		return m->keep ? RT_HTTP_TAP_KEEP : RT_HTTP_TAP_MASK;
	case ST_CEXT:
	case ST_CTRAIL_START:
	case ST_CTRAIL_LINE:
		return RT_HTTP_TAP_MASK;
	default:
		return RT_HTTP_TAP_KEEP;
	}
}

static size_t step(struct rt_http_msg *m, const uint8_t *p, size_t n)
{
	const uint8_t *lf;
	size_t take;

	switch (m->state) {
	case ST_LOST:
		return lost(m, p, n);
	case ST_DRAIN:
		tap(m, p, n, RT_HTTP_TAP_MASK);
		return n;
	case ST_SKIP_LINE:
		lf = memchr(p, '\n', n);
		take = lf ? (size_t)(lf - p) + 1 : n;
		tap(m, p, take, RT_HTTP_TAP_MASK);
		if (lf)
			m->state = ST_HDR_START;
		return take;
	case ST_BODY_LENGTH:
	case ST_CDATA:
		take = n < m->remaining ? n : (size_t)m->remaining;
		tap_body(m, p, take, m->state == ST_BODY_LENGTH && take == m->remaining);
		m->remaining -= take;
		m->ops->data(m->w, p, take);
		if (!m->remaining) {
			if (m->state == ST_CDATA)
				m->state = ST_CDATA_CR;
			else
				complete(m);
		}
		return take;
	case ST_BODY_CLOSE:
	case ST_BODY_FEED_END:
		tap_body(m, p, n, false);
		m->ops->data(m->w, p, n);
		return n;
	case ST_CLOST:
		return rt_http_chunk_lost(m, p, n);
	default:
		break;
	}
	if (!m->tap) {
		take = m->state >= ST_CSIZE ? rt_http_chunk_run(m, p, n) : head_run(m, p, n);
		if (take)
			return take;
	} else {
		tap(m, p, 1, byte_class(m, p[0]));
	}
	if (m->state >= ST_CSIZE) {
		rt_http_chunk_byte(m, p[0]);
		return 1;
	}
	if (m->state == ST_HDR_START)
		m->name_at = p;
	head_byte(m, p[0]);
	/* a guessed head's names were masked: a wanted one is needed after all */
	if (m->keep && m->guess && m->state == ST_HDR_OWS && m->name_at && p[0] == ':') {
		tap(m, m->name_at, (size_t)(p - m->name_at), RT_HTTP_TAP_KEEP);
		m->name_at = NULL;
	}
	return 1;
}

/* A guessed message ends with the syscall whose tail followed the gap. */
static void feed_end(struct rt_http_msg *m)
{
	enum rt_http_body body;
	uint64_t length;

	if (!m->guess || !m->begun)
		return;
	if (m->head_done && m->state != ST_DRAIN && m->state != ST_BODY_FEED_END)
		return;
	if (!m->head_done) {
		m->head_done = true;
		(void)m->ops->head_done(m->w, true, &body, &length);
	}
	complete(m);
}

int rt_http_msg_feed(struct rt_http_msg *m, const uint8_t *buf, size_t len)
{
	size_t i = 0;

	if (m->state == ST_ERROR)
		return -EPROTO;
	m->nomem = false;
	m->name_at = NULL; /* a name begun in an earlier feed is not re-tapped */
	if (m->state == ST_LOST)
		m->at_boundary = true;
	while (i < len && m->state != ST_ERROR)
		i += step(m, buf + i, len - i);
	if (m->tap)
		tap_flush(m);
	if (m->state == ST_ERROR)
		return -EPROTO;
	feed_end(m);
	return m->nomem ? -ENOMEM : 0;
}

int rt_http_msg_gap(struct rt_http_msg *m, uint64_t n)
{
	if (m->state == ST_ERROR)
		return -EPROTO;
	if (n == 0)
		return 0;
	switch (m->state) {
	case ST_IDLE:
	case ST_LOST:
	case ST_TLS1:
	case ST_TLS2:
	case ST_H2SNIFF:
		/* a message start (or more) was not seen */
		to_lost(m);
		return 0;
	case ST_DRAIN:
		return 0;
	case ST_BODY_LENGTH:
		m->incomplete = true;
		if (n < m->remaining) {
			m->remaining -= n;
			m->ops->data_gap(m->w, n, false);
			return 0;
		}
		m->ops->data_gap(m->w, m->remaining, n > m->remaining);
		/* the gap ran past the end: the next message's start is unknown */
		if (n > m->remaining)
			m->guess = true;
		complete(m);
		return 0;
	case ST_BODY_CLOSE:
	case ST_BODY_FEED_END:
		m->incomplete = true;
		m->ops->data_gap(m->w, n, false);
		return 0;
	case ST_CDATA:
		if (n <= m->remaining) {
			m->incomplete = true;
			m->remaining -= n;
			m->ops->data_gap(m->w, n, false);
			if (!m->remaining)
				m->state = ST_CDATA_CR;
			return 0;
		}
		break;
	default:
		if (m->state < ST_BODY_LENGTH) {
			if (!m->begun) {
				to_lost(m); /* status line not seen yet */
				return 0;
			}
			m->incomplete = m->guess = true;
			m->state = ST_SKIP_LINE;
			return 0;
		}
		break;
	}
	/* chunk framing lost: the window is primed as if a chunk's CRLF preceded */
	m->incomplete = m->guess = true;
	m->ops->data_gap(m->w, n, true);
	m->window = 0x0d0a;
	m->state = ST_CLOST;
	return 0;
}

void rt_http_msg_eof(struct rt_http_msg *m)
{
	enum rt_http_body body;
	uint64_t length;

	if (m->state == ST_ERROR)
		return;
	if (!m->begun) {
		reset_msg(m);
		m->state = ST_IDLE;
		return;
	}
	if (m->state != ST_BODY_CLOSE)
		m->incomplete = true;
	if (!m->head_done) {
		m->head_done = true;
		(void)m->ops->head_done(m->w, true, &body, &length);
	}
	m->guess = false;
	complete(m);
}

void rt_http_msg_resync(struct rt_http_msg *m)
{
	if (m->state == ST_ERROR)
		return;
	if (m->begun) {
		m->incomplete = m->guess = true;
		m->state = ST_DRAIN;
		feed_end(m);
	}
	to_lost(m);
}

void rt_http_msg_fail(struct rt_http_msg *m, int err)
{
	fail(m, err);
}

void rt_http_msg_complete(struct rt_http_msg *m)
{
	complete(m);
}
