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
		rt_sse_classify(text, len, partial || rt_keepbuf_partial(&d->data), &ev);
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
	rt_sse_dec_init(d);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

void rt_sse_classify(const char *data, size_t len, bool incomplete, struct rt_sse_event *out)
{
	struct rt_http_json_facts f;

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
