// SPDX-License-Identifier: BSD-2-Clause
/*
 * Masking of message bodies for the recording redactor (redact_int.h): SSE
 * lines and fields, JSON bodies (redact_json.c), anything else whole.
 *
 * Replay runs the masked bytes through the same parsers, so the SSE decoder
 * must see the same lines and fields and rt_sse_classify() the same kinds:
 *
 *   - CR and LF are never masked (SSE lines, JSON whitespace), nor a '0'
 *     right after CR LF: where chunk framing was lost the engine looks for
 *     "\r\n0\r\n\r\n" in body bytes (http_chunk.c, rt_http_chunk_lost);
 *   - field names are kept while they spell a prefix of data, event, id or
 *     retry (a masked name must never become "data"); comments and other
 *     fields' values are masked; data values go through the JSON tokenizer
 *     (a data line that is not JSON turns into x's, still not JSON).
 */
#include <string.h>

#include "proto/http.h"
#include "export/redact.h"
#include "redact_int.h"

enum { S_LINE = 0, S_FIELD, S_VALUE_FIRST, S_DATA, S_SKIP };

static const char *const sse_fields[] = { "data", "event", "id", "retry" };

/* ---- Server-Sent Events ---------------------------------------------------- */

static void start_data(struct rt_body_mask *b)
{
	/* the decoder joins data lines with LF: the JSON text goes on */
	if (b->has_data && !b->unknown)
		rt_json_mask_byte(&b->js, (const uint8_t *)"\n", 1);
	b->has_data = true;
}

static bool field_is_data(const struct rt_body_mask *b)
{
	return b->flen == 4 && (b->fmatch & 1);
}

static void sse_line_end(struct rt_body_mask *b)
{
	if (b->sse == S_LINE) {
		/* a blank line ends the event: the next one starts afresh */
		rt_json_mask_init(&b->js);
		b->has_data = false;
		b->unknown = false;
	} else if (b->sse == S_FIELD && field_is_data(b)) {
		start_data(b);
	}
	b->sse = S_LINE;
}

static uint8_t sse_byte(struct rt_body_mask *b, const uint8_t *p, size_t n)
{
	uint8_t c = p[0];

	if (b->cr) {
		b->cr = false;
		if (c == '\n')
			return c;
	}
	if (c == '\r' || c == '\n') {
		sse_line_end(b);
		b->cr = c == '\r';
		return c;
	}
	switch (b->sse) {
	case S_LINE:
		if (c == ':') {
			b->sse = S_SKIP; /* a comment */
			return c;
		}
		b->sse = S_FIELD;
		b->fmatch = 0xf;
		b->flen = 0;
		/* fallthrough */
	case S_FIELD:
		if (c == ':') {
			if (field_is_data(b)) {
				start_data(b);
				b->sse = S_VALUE_FIRST;
			} else {
				b->sse = S_SKIP;
			}
			return c;
		}
		for (size_t k = 0; k < 4; k++)
			if ((b->fmatch >> k & 1) && (b->flen >= strlen(sse_fields[k]) ||
						     (uint8_t)sse_fields[k][b->flen] != c))
				b->fmatch &= (uint8_t) ~(1u << k);
		if (b->flen < UINT8_MAX)
			b->flen++;
		return b->fmatch ? c : RT_REDACT_MASK;
	case S_VALUE_FIRST:
		b->sse = S_DATA;
		if (c == ' ')
			return c;
		/* fallthrough */
	case S_DATA:
		return b->unknown ? RT_REDACT_MASK : rt_json_mask_byte(&b->js, p, n);
	default:
		return RT_REDACT_MASK;
	}
}

static size_t line_run(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && p[i] != '\r' && p[i] != '\n')
		i++;
	return i;
}

static void sse_run(struct rt_body_mask *b, const uint8_t *in, uint8_t *out, size_t n)
{
	struct rt_json_mask end;
	size_t i = 0, e;

	while (i < n) {
		if (b->sse == S_DATA && b->unknown && in[i] != '\r' && in[i] != '\n') {
			/* the rest of a data line whose start is unknown: recover it when it ends here */
			e = i + line_run(in + i, n - i);
			/* once a reading holds, the tokenizer goes on from where it ends */
			if (e < n ? rt_json_recover(in + i, out + i, e - i, 0, &end) :
				    rt_json_recover_cut(in + i, out + i, e - i, &end)) {
				b->js = end;
				b->unknown = false;
			} else {
				rt_mask_bytes(in + i, out + i, e - i);
			}
			i = e;
			continue;
		}
		out[i] = sse_byte(b, in + i, n - i);
		i++;
	}
}

/* ---- bodies ------------------------------------------------------------------ */

void rt_body_mask_start(struct rt_body_mask *b)
{
	memset(b, 0, sizeof(*b));
}

void rt_body_mask_gap(struct rt_body_mask *b)
{
	b->unknown = true;
	/* as the SSE decoder does: what follows a gap is the rest of a data line */
	b->sse = S_DATA;
	b->cr = false;
	b->has_data = true;
	/* the engine primes its last-chunk window with CR LF after a gap */
	b->nl = 2;
}

void rt_body_mask_run(struct rt_body_mask *b, unsigned int cls, const uint8_t *in, uint8_t *out,
		      size_t n)
{
	unsigned int kind = cls & ~(unsigned int)RT_HTTP_TAP_LAST;
	struct rt_json_mask end;

	b->kind = (uint8_t)kind;
	if (kind == RT_HTTP_TAP_BODY_SSE) {
		sse_run(b, in, out, n);
	} else if (kind == RT_HTTP_TAP_BODY_JSON && !b->unknown) {
		for (size_t i = 0; i < n; i++)
			out[i] = rt_json_mask_byte(&b->js, in + i, n - i);
	} else if (kind == RT_HTTP_TAP_BODY_JSON &&
		   (cls & RT_HTTP_TAP_LAST ? rt_json_recover(in, out, n, 0, &end) :
					     rt_json_recover_cut(in, out, n, &end))) {
		b->js = end;
		b->unknown = false;
	} else {
		rt_mask_bytes(in, out, n);
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t c = in[i];

		if (c == '\r' || c == '\n' || (c == '0' && b->nl == 2))
			out[i] = c;
		b->nl = c == '\r' ? 1 : c == '\n' && b->nl == 1 ? 2 : 0;
	}
}
