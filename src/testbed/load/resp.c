// SPDX-License-Identifier: BSD-2-Clause
#include "resp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

__attribute__((format(printf, 2, 3))) static int fail(struct ld_resp *r, const char *fmt, ...)
{
	va_list ap;

	if (r->st != LD_ERROR) {
		va_start(ap, fmt);
		vsnprintf(r->err, sizeof(r->err), fmt, ap);
		va_end(ap);
		r->st = LD_ERROR;
	}
	return -EPROTO;
}

void ld_resp_init(struct ld_resp *r, bool stream, const char *expect_id, int64_t max_tokens)
{
	memset(r, 0, sizeof(*r));
	r->stream = stream;
	if (expect_id)
		snprintf(r->expect_id, sizeof(r->expect_id), "%s", expect_id);
	r->max_tokens = max_tokens;
	r->completion_tokens = -1;
	tb_buf_init(&r->body, stream ? LD_EVENT_MAX : LD_BODY_MAX);
}

void ld_resp_fini(struct ld_resp *r)
{
	tb_buf_free(&r->body);
}

static bool header_is(const char *name, size_t nlen, const char *want)
{
	return nlen == strlen(want) && strncasecmp(name, want, nlen) == 0;
}

static int parse_head(struct ld_resp *r)
{
	char *p = r->head, *eol, *colon, *v, *ve, *end;
	unsigned long long len;

	if (r->head_len < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
		return fail(r, "bad status line");
	r->status = (int)strtol(p + 9, &end, 10);
	if (end != p + 12 || r->status < 100 || r->status > 599)
		return fail(r, "bad status code");
	r->keep_alive = p[7] == '1';
	eol = strstr(p, "\r\n");
	while (eol && eol[2] != '\r') {
		p = eol + 2;
		eol = strstr(p, "\r\n");
		if (!eol)
			break;
		*eol = '\0';
		colon = strchr(p, ':');
		if (!colon || colon == p)
			return fail(r, "bad header line");
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		ve = v + strlen(v);
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			*--ve = '\0';
		if (header_is(p, (size_t)(colon - p), "content-length")) {
			len = strtoull(v, &end, 10);
			if (!*v || *end || len > LD_BODY_MAX)
				return fail(r, "bad Content-Length '%s'", v);
			r->has_length = true;
			r->length = len;
		} else if (header_is(p, (size_t)(colon - p), "transfer-encoding")) {
			if (strcasecmp(v, "chunked") != 0)
				return fail(r, "unsupported Transfer-Encoding '%s'", v);
			r->chunked = true;
		} else if (header_is(p, (size_t)(colon - p), "connection")) {
			if (strcasestr(v, "close"))
				r->keep_alive = false;
		} else if (header_is(p, (size_t)(colon - p), "content-type")) {
			r->event_stream = strncasecmp(v, "text/event-stream", 17) == 0;
		} else if (header_is(p, (size_t)(colon - p), "x-request-id")) {
			if (r->expect_id[0] && strcmp(v, r->expect_id) != 0)
				return fail(r, "x-request-id '%s' is not ours", v);
		}
		*eol = '\r';
	}
	if (r->status != 200)
		return fail(r, "HTTP status %d", r->status);
	if (r->stream && !r->event_stream)
		return fail(r, "stream response is not text/event-stream");
	if (r->chunked)
		r->st = LD_CHUNK_SIZE;
	else if (r->has_length)
		r->st = r->length ? LD_BODY_LENGTH : LD_DONE;
	else
		r->st = LD_BODY_EOF;
	return 0;
}

static bool is_content_choice(const cJSON *choices)
{
	const cJSON *c0 = cJSON_GetArrayItem(choices, 0), *t;

	t = cJSON_GetObjectItemCaseSensitive(c0, "text");
	return cJSON_IsString(t) && t->valuestring && t->valuestring[0];
}

static int check_usage(struct ld_resp *r, const cJSON *root)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(root, "usage"), *ct;

	ct = cJSON_GetObjectItemCaseSensitive(u, "completion_tokens");
	if (!cJSON_IsObject(u) || !cJSON_IsNumber(ct) || ct->valuedouble < 0 ||
	    ct->valuedouble != (double)(int64_t)ct->valuedouble)
		return fail(r, "bad usage object");
	if (r->completion_tokens >= 0)
		return fail(r, "two usage objects");
	r->completion_tokens = (int64_t)ct->valuedouble;
	if (r->max_tokens >= 0 && r->completion_tokens > r->max_tokens)
		return fail(r, "completion_tokens %lld > max_tokens %lld",
			    (long long)r->completion_tokens, (long long)r->max_tokens);
	return 0;
}

/* One SSE event's data (lines joined with \n). */
static int sse_data(struct ld_resp *r, const char *data, size_t n)
{
	const cJSON *choices;
	cJSON *root;
	int err = 0;

	if (r->done_seen)
		return fail(r, "event after [DONE]");
	if (n == 6 && memcmp(data, "[DONE]", 6) == 0) {
		r->done_seen = true;
		return 0;
	}
	root = cJSON_ParseWithLength(data, n);
	if (!cJSON_IsObject(root)) {
		err = fail(r, "SSE event %u is not a JSON object", r->events + 1);
		goto cleanup;
	}
	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	if (!cJSON_IsArray(choices)) {
		err = fail(r, "SSE event without a choices array");
		goto cleanup;
	}
	if (cJSON_GetArraySize(choices) > 0) {
		if (!cJSON_IsObject(cJSON_GetArrayItem(choices, 0))) {
			err = fail(r, "choice is not an object");
			goto cleanup;
		}
		if (r->completion_tokens >= 0) {
			err = fail(r, "content event after usage");
			goto cleanup;
		}
		if (is_content_choice(choices))
			r->events++;
	}
	if (cJSON_GetObjectItemCaseSensitive(root, "usage"))
		err = check_usage(r, root);
	else if (cJSON_GetArraySize(choices) == 0)
		err = fail(r, "SSE event with neither choices nor usage");
cleanup:
	cJSON_Delete(root);
	return err;
}

static bool starts(const char *p, const char *end, const char *prefix)
{
	size_t n = strlen(prefix);

	return (size_t)(end - p) >= n && memcmp(p, prefix, n) == 0;
}

/* Parses one complete event block (without its blank line). */
static int sse_event(struct ld_resp *r, char *ev, size_t n)
{
	char *line = ev, *end = ev + n, *nl, *data_end;
	struct tb_buf data;
	bool any = false;
	int err = 0;

	tb_buf_init(&data, LD_EVENT_MAX);
	while (line < end && !err) {
		nl = memchr(line, '\n', (size_t)(end - line));
		data_end = nl ? nl : end;
		if (data_end > line && data_end[-1] == '\r')
			data_end--;
		if (starts(line, data_end, "data:")) {
			line += 5;
			if (line < data_end && *line == ' ')
				line++;
			if (any)
				tb_buf_add(&data, "\n", 1);
			tb_buf_add(&data, line, (size_t)(data_end - line));
			any = true;
		} else if (data_end > line && *line != ':' && !starts(line, data_end, "event:") &&
			   !starts(line, data_end, "id:") && !starts(line, data_end, "retry:")) {
			err = fail(r, "bad SSE line");
		}
		line = nl ? nl + 1 : end;
	}
	if (!err && any)
		err = sse_data(r, data.p, data.len);
	tb_buf_free(&data);
	return err;
}

/* Body bytes of a stream: cut complete events at blank lines. */
static int sse_feed(struct ld_resp *r, const char *p, size_t n)
{
	size_t i, start = 0;
	int err;

	if (tb_buf_add(&r->body, p, n))
		return fail(r, "SSE event larger than %u bytes", LD_EVENT_MAX);
	for (i = 0; i + 1 < r->body.len; i++) {
		if (r->body.p[i] == '\n' && r->body.p[i + 1] == '\n') {
			err = sse_event(r, r->body.p + start, i - start);
			if (err)
				return err;
			start = i + 2;
			i++;
		} else if (i + 3 < r->body.len && memcmp(r->body.p + i, "\r\n\r\n", 4) == 0) {
			err = sse_event(r, r->body.p + start, i - start);
			if (err)
				return err;
			start = i + 4;
			i += 3;
		}
	}
	memmove(r->body.p, r->body.p + start, r->body.len - start);
	r->body.len -= start;
	return 0;
}

static int body_feed(struct ld_resp *r, const char *p, size_t n)
{
	if (r->stream)
		return sse_feed(r, p, n);
	if (tb_buf_add(&r->body, p, n))
		return fail(r, "body larger than %u bytes", LD_BODY_MAX);
	return 0;
}

/* The response has ended: the final checks. */
static int finish(struct ld_resp *r)
{
	cJSON *root;
	const cJSON *choices;
	int err = 0;

	if (r->stream) {
		if (r->body.len)
			return fail(r, "stream ends inside an SSE event");
		if (!r->done_seen)
			return fail(r, "stream ends without data: [DONE]");
		if (r->completion_tokens < 0)
			return fail(r, "stream without usage");
		if (r->completion_tokens != r->events)
			return fail(r, "usage.completion_tokens %lld != %u content events",
				    (long long)r->completion_tokens, r->events);
		r->st = LD_DONE;
		return 1;
	}
	root = cJSON_ParseWithLength(r->body.p ? r->body.p : "", r->body.len);
	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	if (!cJSON_IsObject(root) || !cJSON_IsArray(choices) || cJSON_GetArraySize(choices) < 1 ||
	    !cJSON_IsObject(cJSON_GetArrayItem(choices, 0))) {
		err = fail(r, "body is not a completion object");
		goto cleanup;
	}
	r->events = is_content_choice(choices) ? 1 : 0;
	err = check_usage(r, root);
cleanup:
	cJSON_Delete(root);
	if (err)
		return err;
	r->st = LD_DONE;
	return 1;
}

/* Collects a CRLF-terminated line into r->line; returns bytes used, -1 when too long. */
static long take_line(struct ld_resp *r, const char *p, size_t n, bool *complete)
{
	size_t i;

	*complete = false;
	for (i = 0; i < n; i++) {
		if (r->line_len >= sizeof(r->line) - 1)
			return -1;
		r->line[r->line_len++] = p[i];
		if (r->line_len >= 2 && r->line[r->line_len - 2] == '\r' &&
		    r->line[r->line_len - 1] == '\n') {
			r->line[r->line_len - 2] = '\0';
			*complete = true;
			return (long)i + 1;
		}
	}
	return (long)n;
}

int ld_resp_feed(struct ld_resp *r, const char *p, size_t n)
{
	size_t take;
	char *end;
	long used;
	bool line;
	int err;

	if (r->st == LD_ERROR)
		return -EPROTO;
	if (n == 0) {
		if (r->st == LD_BODY_EOF)
			return finish(r);
		if (r->st == LD_DONE)
			return 1;
		return fail(r, "connection closed mid-response");
	}
	while (n > 0) {
		switch (r->st) {
		case LD_HEAD:
			take = 0;
			while (take < n && !(r->head_len >= 4 && memcmp(r->head + r->head_len - 4,
									"\r\n\r\n", 4) == 0)) {
				if (r->head_len >= LD_HEAD_MAX - 1)
					return fail(r, "response head too large");
				r->head[r->head_len++] = p[take++];
			}
			p += take;
			n -= take;
			if (r->head_len >= 4 &&
			    memcmp(r->head + r->head_len - 4, "\r\n\r\n", 4) == 0) {
				r->head[r->head_len] = '\0';
				err = parse_head(r);
				if (err)
					return err;
				if (r->st == LD_DONE && (err = finish(r)) < 0)
					return err;
			}
			break;
		case LD_BODY_LENGTH:
			take = n < r->length - r->body_read ? n :
							      (size_t)(r->length - r->body_read);
			err = body_feed(r, p, take);
			if (err)
				return err;
			r->body_read += take;
			p += take;
			n -= take;
			if (r->body_read == r->length && (err = finish(r)) < 0)
				return err;
			break;
		case LD_BODY_EOF:
			err = body_feed(r, p, n);
			if (err)
				return err;
			n = 0;
			break;
		case LD_CHUNK_SIZE:
		case LD_CHUNK_CRLF:
		case LD_TRAILER:
			used = take_line(r, p, n, &line);
			if (used < 0)
				return fail(r, "chunk framing line too long");
			p += used;
			n -= (size_t)used;
			if (!line)
				break;
			r->line_len = 0;
			if (r->st == LD_CHUNK_CRLF) {
				if (r->line[0])
					return fail(r, "chunk data not followed by CRLF");
				r->st = LD_CHUNK_SIZE;
			} else if (r->st == LD_TRAILER) {
				if (!r->line[0] && (err = finish(r)) < 0)
					return err;
			} else {
				r->chunk_left = strtoull(r->line, &end, 16);
				if (end == r->line || (*end && *end != ';') ||
				    r->chunk_left > LD_BODY_MAX)
					return fail(r, "bad chunk size '%s'", r->line);
				r->st = r->chunk_left ? LD_CHUNK_DATA : LD_TRAILER;
			}
			break;
		case LD_CHUNK_DATA:
			take = n < r->chunk_left ? n : (size_t)r->chunk_left;
			err = body_feed(r, p, take);
			if (err)
				return err;
			r->chunk_left -= take;
			p += take;
			n -= take;
			if (!r->chunk_left)
				r->st = LD_CHUNK_CRLF;
			break;
		case LD_DONE:
			return fail(r, "%zu bytes after the end of the response", n);
		case LD_ERROR:
			return -EPROTO;
		}
	}
	return r->st == LD_DONE ? 1 : 0;
}
