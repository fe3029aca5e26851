// SPDX-License-Identifier: BSD-2-Clause
/*
 * Server-Sent Events, as the WHATWG HTML standard parses them ("event
 * stream interpretation"): lines end in CRLF, LF or CR; a line starting
 * with ':' is a comment; "data" fields are joined with LF (one leading
 * space of a value is dropped); a blank line ends an event. Bytes arrive
 * in arbitrary pieces, so all state lives in struct rt_sse_dec and a CR at
 * the end of one piece is paired with a LF at the start of the next.
 *
 * Departures from the standard, for tracing: a block of comment or
 * non-data lines ended by a blank line is reported as an RT_SSE_EMPTY event
 * (keep-alives show the server alive); the event/id/retry fields are not
 * kept; a leading byte-order mark is not stripped.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

enum {
	SSE_LINE_START = 0,
	SSE_FIELD,
	SSE_VALUE_FIRST, /* right after "data:": one space may be dropped */
	SSE_DATA,
	SSE_SKIP, /* comment, or a field that is not kept */
};

void rt_sse_dec_init(struct rt_sse_dec *d)
{
	memset(d, 0, sizeof(*d));
	rt_keepbuf_init(&d->data, RT_HTTP_SSE_EVENT_MAX);
}

/*
 * Most events are one data line within one feed: their data is classified
 * where it lies, not copied. Anything else (a second line, the end of the
 * feed) copies what is referenced into the keeper first.
 */
static void flush_ref(struct rt_sse_dec *d)
{
	if (!d->has_ref)
		return;
	d->has_ref = false;
	rt_keepbuf_append(&d->data, d->ref, d->ref_n);
}

static void append(struct rt_sse_dec *d, const uint8_t *p, size_t n)
{
	if (!d->has_ref && !d->data.total) {
		d->has_ref = true;
		d->ref = p;
		d->ref_n = n;
		return;
	}
	flush_ref(d);
	rt_keepbuf_append(&d->data, p, n);
}

static void start_data(struct rt_sse_dec *d)
{
	if (d->has_data) {
		flush_ref(d);
		rt_keepbuf_append(&d->data, "\n", 1);
	}
	d->has_data = true;
}

static bool field_is_data(const struct rt_sse_dec *d)
{
	return d->field_len == 4 && memcmp(d->field, "data", 4) == 0;
}

static void dispatch(struct rt_sse_dec *d, rt_sse_emit_fn emit, void *ctx)
{
	struct rt_sse_event ev;
	bool partial = d->incomplete || d->lost;

	if (d->has_data) {
		const char *text;
		size_t len;

		/* the keeper would hold these same bytes: nothing cut, nothing wrapped */
		if (d->has_ref && d->ref_n <= d->data.max) {
			text = (const char *)d->ref;
			len = d->ref_n;
		} else {
			flush_ref(d);
			text = rt_keepbuf_data(&d->data, &len);
		}
		rt_sse_classify_memo(&d->memo, text, len, partial || rt_keepbuf_partial(&d->data),
				     &ev);
		emit(ctx, &ev);
	} else if (d->pending) {
		memset(&ev, 0, offsetof(struct rt_sse_event, reported));
		ev.kind = RT_SSE_EMPTY;
		ev.incomplete = partial;
		ev.tokens_out = -1;
		emit(ctx, &ev);
	}
	d->pending = d->has_data = d->incomplete = d->has_ref = false;
	rt_keepbuf_reset(&d->data);
}

static void line_end(struct rt_sse_dec *d, rt_sse_emit_fn emit, void *ctx)
{
	switch (d->state) {
	case SSE_LINE_START:
		dispatch(d, emit, ctx);
		break;
	case SSE_FIELD:
		/* a line without a colon is a field with an empty value */
		if (field_is_data(d))
			start_data(d);
		break;
	default:
		break;
	}
	d->state = SSE_LINE_START;
}

/* Bytes before the first CR or LF. */
static size_t line_run(const uint8_t *p, size_t n)
{
	const uint8_t *lf = memchr(p, '\n', n);
	size_t m = lf ? (size_t)(lf - p) : n;
	const uint8_t *cr = memchr(p, '\r', m);

	return cr ? (size_t)(cr - p) : m;
}

void rt_sse_dec_feed(struct rt_sse_dec *d, const uint8_t *p, size_t n, rt_sse_emit_fn emit,
		     void *ctx)
{
	size_t i = 0, run;

	while (i < n) {
		uint8_t c = p[i];

		if (d->cr) {
			d->cr = false;
			if (c == '\n') {
				i++;
				continue;
			}
		}
		if (c == '\r' || c == '\n') {
			line_end(d, emit, ctx);
			d->cr = c == '\r';
			i++;
			continue;
		}
		switch (d->state) {
		case SSE_LINE_START:
			d->pending = true;
			if (c == ':') {
				d->state = SSE_SKIP;
				i++;
				break;
			}
			/* the usual line, as the byte-wise path below would read it */
			if (n - i >= 5 && !memcmp(p + i, "data:", 5)) {
				start_data(d);
				d->state = SSE_VALUE_FIRST;
				i += 5;
				break;
			}
			d->field_len = 0;
			d->state = SSE_FIELD;
			/* fallthrough */
		case SSE_FIELD:
			if (c == ':') {
				if (field_is_data(d)) {
					start_data(d);
					d->state = SSE_VALUE_FIRST;
				} else {
					d->state = SSE_SKIP;
				}
			} else {
				if (d->field_len < sizeof(d->field))
					d->field[d->field_len] = (char)c;
				if (d->field_len < UINT8_MAX)
					d->field_len++;
			}
			i++;
			break;
		case SSE_VALUE_FIRST:
			d->state = SSE_DATA;
			if (c == ' ') {
				i++;
				break;
			}
			/* fallthrough */
		case SSE_DATA:
			run = line_run(p + i, n - i);
			append(d, p + i, run);
			i += run;
			break;
		default:
			i += line_run(p + i, n - i);
			break;
		}
	}
	/* the caller's bytes are gone after this call */
	flush_ref(d);
}

void rt_sse_dec_gap(struct rt_sse_dec *d, bool framing_lost)
{
	flush_ref(d);
	/* Most of an event stream is data lines: what follows the gap is taken
	 * as the rest of one, so a tail holding a final event's end is kept. */
	d->incomplete = d->pending = true;
	d->cr = false;
	if (framing_lost)
		d->lost = true;
	if (d->state != SSE_DATA && d->state != SSE_VALUE_FIRST)
		start_data(d);
	d->state = SSE_DATA;
	rt_keepbuf_gap(&d->data);
}

void rt_sse_dec_release(struct rt_sse_dec *d)
{
	rt_keepbuf_release(&d->data);
	rt_sse_memo_free(&d->memo);
	rt_sse_dec_init(d);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void classify(const char *data, size_t len, bool incomplete, struct rt_sse_event *out,
		     uint32_t *var_q0, uint32_t *var_q1)
{
	struct rt_http_json_facts f;
	size_t lead = 0;

	/* reported[] past n_reported is never read: a few hundred bytes not cleared per event */
	memset(out, 0, offsetof(struct rt_sse_event, reported));
	out->incomplete = incomplete;
	out->tokens_out = -1;
	out->id_slot = -1;
	if (!data)
		len = 0;
	while (len && is_space(data[0])) {
		data++;
		len--;
		lead++;
	}
	while (len && is_space(data[len - 1]))
		len--;
	if (len == 0) {
		out->kind = RT_SSE_EMPTY;
		return;
	}
	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		out->kind = RT_SSE_DONE;
		return;
	}
	rt_http_json_facts(data, len, incomplete, &f);
	out->tokens_out = f.tokens_out;
	out->id_slot = f.id_slot;
	if (f.var_q1) {
		*var_q0 = (uint32_t)(f.var_q0 + lead);
		*var_q1 = (uint32_t)(f.var_q1 + lead);
	}
	memcpy(out->response_id, f.response_id, sizeof(out->response_id));
	out->n_reported = f.n_reported;
	memcpy(out->reported, f.reported, f.n_reported * sizeof(f.reported[0]));
	if (f.content)
		out->kind = RT_SSE_CONTENT;
	else if (f.usage)
		out->kind = RT_SSE_USAGE;
	else if (f.text_shape)
		out->kind = RT_SSE_EMPTY;
	else
		out->kind = RT_SSE_OTHER;
}

void rt_sse_classify(const char *data, size_t len, bool incomplete, struct rt_sse_event *out)
{
	uint32_t q0 = 0, q1 = 0;

	classify(data, len, incomplete, out, &q0, &q1);
}

/* ---- the memo ------------------------------------------------------------ */

/* events longer than this are classified every time: token events are short */
#define MEMO_TEXT_MAX 512

/* sized to its text: one per streamed response in flight */
struct rt_sse_memo {
	enum rt_sse_kind kind; /* its facts (it reported no numbers) */
	int64_t tokens_out;
	int32_t id_slot;
	char response_id[RT_HTTP_RESPONSE_ID_MAX];
	uint32_t len, cap; /* len 0: empty memo */
	uint32_t q0, q1; /* its var string's quotes in text, 0 0: none */
	uint64_t hits; /* events given its facts (tests/unit/test_sse_memo.c) */
	char text[];
};

/* Bytes at the start of a and b (n each) that are equal. */
static size_t common_prefix(const char *a, const char *b, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;

		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			break;
	}
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/* Bytes at the ends of a (na) and b (nb) that are equal, at most max. */
static size_t common_suffix(const char *a, size_t na, const char *b, size_t nb, size_t max)
{
	size_t i = 0;

	for (; i + 8 <= max; i += 8) {
		uint64_t x, y;

		memcpy(&x, a + na - i - 8, 8);
		memcpy(&y, b + nb - i - 8, 8);
		if (x != y)
			break;
	}
	while (i < max && a[na - 1 - i] == b[nb - 1 - i])
		i++;
	return i;
}

/* Whether the string whose quotes are q0, q1 in s is non-empty as a C string. */
static bool plain_nonempty(const char *s, uint32_t q0, uint32_t q1)
{
	return q1 > q0 + 1 && s[q0 + 1] != '\0';
}

static bool memo_hit(const struct rt_sse_memo *m, const char *t, size_t n)
{
	size_t m_n = m->len, min = n < m_n ? n : m_n, a, b;
	uint32_t q1;

	if (!m_n)
		return false;
	a = common_prefix(t, m->text, min);
	if (a == min && n == m_n)
		return true; /* the same bytes */
	/* the difference starts inside the var string, after its opening quote */
	if (!m->q1 || a <= m->q0)
		return false;
	b = common_suffix(t, n, m->text, m_n, min - a);
	/* ... and ends before its closing quote, which the suffix holds */
	if (m_n - b > m->q1)
		return false;
	/* the string stays plain: no quote or backslash came in (a token's few bytes) */
	for (size_t i = a; i < n - b; i++)
		if (t[i] == '"' || t[i] == '\\')
			return false;
	q1 = (uint32_t)(m->q1 + n - m_n);
	return plain_nonempty(t, m->q0, q1) == plain_nonempty(m->text, m->q0, m->q1);
}

void rt_sse_classify_memo(struct rt_sse_memo **memo, const char *data, size_t len, bool incomplete,
			  struct rt_sse_event *out)
{
	struct rt_sse_memo *m = *memo;
	uint32_t q0 = 0, q1 = 0;

	if (!data)
		len = 0;
	if (incomplete || len > MEMO_TEXT_MAX || !len) {
		classify(data, len, incomplete, out, &q0, &q1);
		return;
	}
	if (m && memo_hit(m, data, len)) {
		m->hits++;
		memset(out, 0, offsetof(struct rt_sse_event, reported));
		out->kind = m->kind;
		out->tokens_out = m->tokens_out;
		out->id_slot = m->id_slot;
		memcpy(out->response_id, m->response_id, sizeof(out->response_id));
		return;
	}
	classify(data, len, incomplete, out, &q0, &q1);
	if (out->n_reported)
		return;
	if (!m || m->cap < len) {
		/* a little room over, so that a stream's events of varying length share one */
		uint32_t cap =
			(uint32_t)len + 64 < MEMO_TEXT_MAX ? (uint32_t)len + 64 : MEMO_TEXT_MAX;
		struct rt_sse_memo *g = realloc(m, sizeof(*m) + cap);

		if (!g)
			return; /* the old one, if any, still holds what it held */
		if (!m)
			g->hits = 0;
		m = *memo = g;
		m->cap = cap;
	}
	m->kind = out->kind;
	m->tokens_out = out->tokens_out;
	m->id_slot = out->id_slot;
	memcpy(m->response_id, out->response_id, sizeof(m->response_id));
	memcpy(m->text, data, len);
	m->len = (uint32_t)len;
	m->q0 = q0;
	m->q1 = q1;
}

uint64_t rt_sse_memo_hits(const struct rt_sse_memo *memo)
{
	return memo ? memo->hits : 0;
}

void rt_sse_memo_free(struct rt_sse_memo **memo)
{
	free(*memo);
	*memo = NULL;
}
