// SPDX-License-Identifier: BSD-2-Clause
/*
 * One connection on a handler thread: read a request with the I/O mode's
 * read call, route it, and for a completion do the read/validate CPU stage,
 * hand it to the engine and write its tokens as they come.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "markers.h"
#include "server_int.h"

#define OUT_MAX (4u << 20) /* one response unit; max_tokens_limit words fit */

struct tb_conn {
	struct tb_server *s;
	int fd;
	char *buf; /* request bytes not yet consumed */
	size_t len, cap;
	uint64_t last_read_ns; /* right after the latest read that returned bytes */
	uint64_t accept_ns; /* right after accept4, until the first request takes it */
	uint64_t req_accept_ns; /* the request being served: accept_ns if it is the first */
	bool drain; /* closing with request bytes unread: linger first */
	struct tb_buf out, scratch, line, hdr;
};

#define DRAIN_MAX_BYTES (16u << 20)
#define DRAIN_MAX_NS 2000000000ull

struct token_hook {
	struct tb_req *r;
	uint32_t index;
	bool whole; /* non-streamed: the one write carries every token */
};

static const char *const words[] = { " the",   " quick", " brown", " fox",
				     " jumps", " over",	 " a",	   " lazy" };

static ssize_t read_more(struct tb_conn *c)
{
	size_t max = TB_HTTP_HEAD_MAX + c->s->k.max_body;
	ssize_t n;
	char *p;

	if (c->len == c->cap) {
		if (c->cap >= max)
			return -ENOBUFS;
		c->cap = c->cap ? c->cap * 2 : 16384;
		if (c->cap > max)
			c->cap = max;
		p = realloc(c->buf, c->cap);
		if (!p)
			return -ENOMEM;
		c->buf = p;
	}
	n = tb_io_read(c->s->io, c->fd, c->buf + c->len, c->cap - c->len);
	if (n > 0) {
		c->last_read_ns = tb_now_ns();
		c->len += (size_t)n;
	}
	return n;
}

static int send_unit(struct tb_conn *c, struct tb_io_unit *u)
{
	return tb_io_write(c->s->io, c->fd, u, &c->scratch);
}

/* A complete non-streamed response: headers and body are two pieces. */
static int send_response(struct tb_conn *c, int status, const char *reason, const char *extra,
			 const char *request_id, const char *body, bool keep_alive)
{
	struct tb_io_unit u = { .mark_piece = -1 };

	tb_buf_reset(&c->hdr);
	tb_buf_printf(&c->hdr,
		      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		      "Connection: %s\r\n%s",
		      status, reason, strlen(body), keep_alive ? "keep-alive" : "close",
		      extra ? extra : "");
	if (request_id)
		tb_buf_printf(&c->hdr, "x-request-id: %s\r\n", request_id);
	tb_buf_puts(&c->hdr, "\r\n");
	if (c->hdr.overflow)
		return -ENOBUFS;
	tb_io_unit_add(&u, c->hdr.p, c->hdr.len);
	tb_io_unit_add(&u, body, strlen(body));
	if (status >= 500)
		atomic_fetch_add(&c->s->server_errors, 1);
	else if (status >= 400)
		atomic_fetch_add(&c->s->client_errors, 1);
	return send_unit(c, &u);
}

static int send_error(struct tb_conn *c, int status, const char *reason, const char *msg,
		      const char *request_id, bool keep_alive, const char *extra)
{
	struct tb_buf b;
	int err;

	tb_buf_init(&b, 1024);
	tb_buf_puts(&b, "{\"error\":{\"message\":");
	tb_buf_json_str(&b, msg);
	tb_buf_printf(&b, ",\"type\":\"invalid_request_error\",\"code\":%d}}", status);
	err = b.overflow ? -ENOBUFS :
			   send_response(c, status, reason, extra, request_id, b.p, keep_alive);
	tb_buf_free(&b);
	return err;
}

/* Runs just before the write system call of a token (markers at the observed instant). */
static void token_hook(void *arg)
{
	struct token_hook *h = arg;
	struct tb_req *r = h->r;

	if (h->index == 0) {
		tb_mark_end(r->id, RT_PHASE_PREFILL);
		tb_mark_begin(r->id, RT_PHASE_DECODE);
	}
	if (h->whole || h->index + 1 == r->max_tokens) {
		tb_mark_end(r->id, RT_PHASE_DECODE);
		tb_mark_begin(r->id, RT_PHASE_POSTPROCESS);
	}
}

/* The fields every completion object starts with. */
static void completion_head(struct tb_buf *b, const struct tb_req *r)
{
	char id[TB_REQUEST_ID_MAX + 8];

	snprintf(id, sizeof(id), "cmpl-%s", r->id);
	tb_buf_puts(b, "{\"id\":");
	tb_buf_json_str(b, id);
	tb_buf_printf(b,
		      ",\"object\":\"text_completion\",\"created\":%lld,"
		      "\"model\":\"reqtrace-testbed\",",
		      (long long)time(NULL));
}

static void usage_json(struct tb_buf *b, const struct tb_req *r, uint32_t tokens)
{
	tb_buf_printf(b,
		      "\"usage\":{\"prompt_tokens\":%" PRIu64 ",\"completion_tokens\":%u,"
		      "\"total_tokens\":%" PRIu64 "}}",
		      r->prompt_tokens, tokens, r->prompt_tokens + tokens);
}

/* Fails the request: the client is gone or the server stops. */
static void abort_req(struct tb_req *r, uint64_t end_ns)
{
	r->aborted = true;
	r->end_ns = end_ns ? end_ns : tb_now_ns();
	tb_req_cancel(r);
	tb_req_wait_released(r);
}

/*
 * SSE stream: one chunk per token event, written by this handler as the
 * engine produces them, each with one write-family call (split mode: the
 * chunk-size line, the event and its CRLF are three writes, and the event's
 * write is the stamped one).
 */
static int stream_response(struct tb_conn *c, struct tb_req *r, bool keep_alive)
{
	struct tb_server *s = c->s;
	struct token_hook th = { .r = r };
	struct tb_io_unit u = { .mark_piece = -1 };
	char size1[24], size2[24];
	uint32_t seen = 0, produced = 0, i;
	bool done = false;
	int err;

	tb_buf_reset(&c->hdr);
	tb_buf_printf(&c->hdr,
		      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		      "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
		      "Connection: %s\r\nx-request-id: %s\r\n\r\n",
		      keep_alive ? "keep-alive" : "close", r->id);
	tb_io_unit_add(&u, c->hdr.p, c->hdr.len);
	err = send_unit(c, &u);
	if (err) {
		abort_req(r, u.end_ns);
		return err;
	}
	while (!done || seen < produced) {
		produced = tb_req_wait_tokens(r, seen, &done);
		for (; seen < produced; seen++) {
			i = seen;
			tb_burn_ms(s->k.detokenize_ms, &s->stop);
			tb_buf_reset(&c->out);
			tb_buf_puts(&c->out, "data: ");
			completion_head(&c->out, r);
			tb_buf_puts(&c->out, "\"choices\":[{\"index\":0,\"text\":");
			tb_buf_json_str(&c->out, words[i % 8]);
			tb_buf_printf(&c->out, ",\"logprobs\":null,\"finish_reason\":%s}]}\n\n",
				      i + 1 == r->max_tokens ? "\"length\"" : "null");
			snprintf(size1, sizeof(size1), "%zx\r\n", c->out.len);
			memset(&u, 0, sizeof(u));
			tb_io_unit_add(&u, size1, strlen(size1));
			tb_io_unit_add(&u, c->out.p, c->out.len);
			tb_io_unit_add(&u, "\r\n", 2);
			u.mark_piece = 1;
			u.hook = token_hook;
			th.index = i;
			u.hook_arg = &th;
			err = send_unit(c, &u);
			if (u.mark_ns) {
				r->token_write_ns[r->n_token_writes++] = u.mark_ns;
				if (i == 0)
					r->first_token_write_ns = u.mark_ns;
				r->last_token_write_ns = u.mark_ns;
			}
			if (err) {
				abort_req(r, u.end_ns);
				return err;
			}
		}
	}
	if (r->failed || seen < r->max_tokens) {
		abort_req(r, 0);
		return -ESHUTDOWN;
	}
	tb_burn_ms(s->k.postprocess_ms, &s->stop);

	/* usage event, [DONE] and the last chunk: one unit, ending the response */
	tb_buf_reset(&c->out);
	tb_buf_puts(&c->out, "data: ");
	completion_head(&c->out, r);
	tb_buf_puts(&c->out, "\"choices\":[],");
	usage_json(&c->out, r, seen);
	tb_buf_puts(&c->out, "\n\n");
	if (c->out.overflow) {
		abort_req(r, 0);
		return -ENOBUFS;
	}
	snprintf(size1, sizeof(size1), "%zx\r\n", c->out.len);
	snprintf(size2, sizeof(size2), "%zx\r\n", strlen("data: [DONE]\n\n"));
	memset(&u, 0, sizeof(u));
	u.mark_piece = -1;
	tb_io_unit_add(&u, size1, strlen(size1));
	tb_io_unit_add(&u, c->out.p, c->out.len);
	tb_io_unit_add(&u, "\r\n", 2);
	tb_io_unit_add(&u, size2, strlen(size2));
	tb_io_unit_add(&u, "data: [DONE]\n\n", strlen("data: [DONE]\n\n"));
	tb_io_unit_add(&u, "\r\n0\r\n\r\n", 7);
	err = send_unit(c, &u);
	r->end_ns = u.end_ns;
	tb_mark_end(r->id, RT_PHASE_POSTPROCESS);
	if (err) {
		abort_req(r, u.end_ns);
		return err;
	}
	tb_req_wait_released(r);
	return 0;
}

/*
 * One JSON response after the last token. Detokenize (per token) and
 * postprocess run before its single write, which is both the first and the
 * last token write.
 */
static int full_response(struct tb_conn *c, struct tb_req *r, bool keep_alive)
{
	struct tb_server *s = c->s;
	struct token_hook th = { .r = r, .index = 0, .whole = true };
	struct tb_io_unit u = { .mark_piece = 1, .hook = token_hook, .hook_arg = &th };
	uint32_t produced = 0, i;
	bool done = false;
	int err;

	while (!done)
		produced = tb_req_wait_tokens(r, produced, &done);
	if (r->failed || produced < r->max_tokens) {
		abort_req(r, 0);
		return -ESHUTDOWN;
	}
	tb_burn_ms(s->k.detokenize_ms * produced, &s->stop);
	tb_buf_reset(&c->out);
	completion_head(&c->out, r);
	tb_buf_puts(&c->out, "\"choices\":[{\"index\":0,\"text\":\"");
	for (i = 0; i < produced; i++)
		tb_buf_puts(&c->out, words[i % 8]); /* plain ASCII words: nothing to escape */
	tb_buf_puts(&c->out, "\",\"logprobs\":null,\"finish_reason\":\"length\"}],");
	usage_json(&c->out, r, produced);
	tb_burn_ms(s->k.postprocess_ms, &s->stop);

	tb_buf_reset(&c->hdr);
	tb_buf_printf(&c->hdr,
		      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		      "Connection: %s\r\nx-request-id: %s\r\n\r\n",
		      c->out.len, keep_alive ? "keep-alive" : "close", r->id);
	if (c->out.overflow || c->hdr.overflow) {
		abort_req(r, 0);
		return -ENOBUFS;
	}
	tb_io_unit_add(&u, c->hdr.p, c->hdr.len);
	tb_io_unit_add(&u, c->out.p, c->out.len);
	err = send_unit(c, &u);
	if (u.mark_ns) {
		r->token_write_ns[r->n_token_writes++] = u.mark_ns;
		r->first_token_write_ns = r->last_token_write_ns = u.mark_ns;
	}
	r->end_ns = u.end_ns;
	tb_mark_end(r->id, RT_PHASE_POSTPROCESS);
	if (err) {
		abort_req(r, u.end_ns);
		return err;
	}
	tb_req_wait_released(r);
	return 0;
}

/* Validates the body; on error returns -EINVAL with a message for the 400. */
static int parse_body(struct tb_conn *c, const char *body, size_t len, uint64_t *chars,
		      uint32_t *max_tokens, bool *stream, const char **msg)
{
	cJSON *root, *it;
	double d;
	int err = -EINVAL;

	root = cJSON_ParseWithLength(body, len);
	if (!root || !cJSON_IsObject(root)) {
		*msg = "body is not a JSON object";
		goto cleanup;
	}
	it = cJSON_GetObjectItemCaseSensitive(root, "prompt");
	if (!cJSON_IsString(it) || !it->valuestring) {
		*msg = "'prompt' must be a string";
		goto cleanup;
	}
	*chars = strlen(it->valuestring);
	*max_tokens = c->s->k.max_tokens_default;
	it = cJSON_GetObjectItemCaseSensitive(root, "max_tokens");
	if (it && !cJSON_IsNull(it)) {
		d = cJSON_IsNumber(it) ? it->valuedouble : -1;
		if (d < 1 || d > c->s->k.max_tokens_limit || d != (double)(uint32_t)d) {
			*msg = "'max_tokens' must be an integer within [1, max_tokens_limit]";
			goto cleanup;
		}
		*max_tokens = (uint32_t)d;
	}
	*stream = false;
	it = cJSON_GetObjectItemCaseSensitive(root, "stream");
	if (it && !cJSON_IsNull(it)) {
		if (!cJSON_IsBool(it)) {
			*msg = "'stream' must be a boolean";
			goto cleanup;
		}
		*stream = cJSON_IsTrue(it);
	}
	err = 0;
cleanup:
	cJSON_Delete(root);
	return err;
}

/* Returns 0 to keep the connection, or a negative errno to close it. */
static int handle_completion(struct tb_conn *c, const struct tb_http_req *h, const char *body,
			     uint64_t arrival_ns, uint64_t received_ns)
{
	struct tb_server *s = c->s;
	char genid[64];
	const char *id, *msg = NULL;
	uint64_t chars = 0;
	uint32_t max_tokens = 0;
	bool stream = false;
	struct tb_req *r;
	int err;

	/* the read/validate stage: CPU on this handler once the request is in */
	tb_burn_ms(s->k.read_ms, &s->stop);
	if (h->has_request_id) {
		id = h->request_id;
	} else {
		snprintf(genid, sizeof(genid), "tb-%d-%" PRIuFAST64, (int)getpid(),
			 atomic_fetch_add(&s->id_seq, 1) + 1);
		id = genid;
	}
	if (parse_body(c, body, h->content_length, &chars, &max_tokens, &stream, &msg))
		return send_error(c, 400, "Bad Request", msg, id, h->keep_alive, NULL);

	r = tb_req__new(id, max_tokens);
	if (!r)
		return send_error(c, 503, "Service Unavailable", "out of memory", id, false, NULL) ?:
			       -ENOMEM;
	r->prompt_chars = chars;
	r->prompt_tokens = tb_prompt_tokens(chars);
	r->stream = stream;
	r->accept_ns = c->req_accept_ns;
	r->arrival_ns = arrival_ns;
	r->received_ns = received_ns;
	if (tb_engine__submit(s->engine, r)) {
		tb_req__free(r);
		return send_error(c, 503, "Service Unavailable", "server is stopping", id, false, NULL) ?:
			       -ESHUTDOWN;
	}
	atomic_fetch_add(&s->completions, 1);
	err = stream ? stream_response(c, r, h->keep_alive) : full_response(c, r, h->keep_alive);
	atomic_fetch_add(r->aborted ? &s->aborted : &s->ok, 1);
	if (tb_truth__write(s->truth, r, &c->line))
		atomic_fetch_add(&s->truth_errors, 1);
	tb_req__free(r);
	return err;
}

static int route(struct tb_conn *c, const struct tb_http_req *h, const char *body,
		 uint64_t arrival_ns, uint64_t received_ns)
{
	const char *id = h->has_request_id ? h->request_id : NULL;

	if (strcmp(h->path, "/v1/completions") == 0) {
		if (strcmp(h->method, "POST") != 0)
			return send_error(c, 405, "Method Not Allowed", "use POST", id,
					  h->keep_alive, "Allow: POST\r\n");
		return handle_completion(c, h, body, arrival_ns, received_ns);
	}
	if (strcmp(h->path, "/health") == 0) {
		if (strcmp(h->method, "GET") != 0)
			return send_error(c, 405, "Method Not Allowed", "use GET", id,
					  h->keep_alive, "Allow: GET\r\n");
		return send_response(c, 200, "OK", NULL, id, "{\"status\":\"ok\"}", h->keep_alive);
	}
	return send_error(c, 404, "Not Found", "no such path", id, h->keep_alive, NULL);
}

/*
 * Reads and serves one request. Returns 0 when the connection stays open for
 * the next one, 1 when it closes cleanly, or a negative errno.
 */
static int serve_one(struct tb_conn *c)
{
	struct tb_http_req h;
	uint64_t arrival_ns, total;
	ssize_t n;
	int rc, err;

	c->req_accept_ns = c->accept_ns;
	c->accept_ns = 0;
	/* bytes already buffered (pipelining) arrived with the read that brought them */
	arrival_ns = c->len ? c->last_read_ns : 0;
	while ((rc = tb_http_parse_head(c->buf, c->len, &h)) == 0) {
		n = read_more(c);
		if (n <= 0)
			return n == 0 || c->len == 0 ? 1 : (int)n;
		if (!arrival_ns)
			arrival_ns = c->last_read_ns;
	}
	/* every early refusal below leaves request bytes unread */
	c->drain = true;
	if (rc == -E2BIG)
		return send_error(c, 431, "Request Header Fields Too Large", "request head too large", NULL, false, NULL) ?:
			       1;
	if (rc < 0)
		return send_error(c, 400, "Bad Request", "malformed request head", NULL, false, NULL) ?:
			       1;
	if (h.has_transfer_encoding)
		return send_error(c, 501, "Not Implemented", "chunked request bodies are not supported", NULL, false, NULL) ?:
			       1;
	if (!h.has_content_length && strcmp(h.method, "POST") == 0)
		return send_error(c, 411, "Length Required", "Content-Length required", NULL, false, NULL) ?:
			       1;
	/* refused before reading it: the connection cannot be reused */
	if (h.content_length > c->s->k.max_body)
		return send_error(c, 413, "Content Too Large", "body exceeds max_body", NULL, false, NULL) ?:
			       1;
	c->drain = false;
	total = h.head_len + h.content_length;
	while (c->len < total) {
		n = read_more(c);
		if (n <= 0)
			return n == 0 ? 1 : (int)n;
	}
	err = route(c, &h, c->buf + h.head_len, arrival_ns, c->last_read_ns);
	memmove(c->buf, c->buf + total, c->len - total);
	c->len -= total;
	if (err)
		return err;
	return h.keep_alive ? 0 : 1;
}

/*
 * Closing a socket with unread input makes the kernel send RST, which can
 * destroy the error response before the client reads it: stop sending, then
 * read and drop what the client still sends (bounded in bytes and time), as
 * HTTP servers' "lingering close" does.
 */
static void linger_close(struct tb_conn *c)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	uint64_t deadline = tb_now_ns() + DRAIN_MAX_NS;
	size_t total = 0;
	char buf[16384];
	ssize_t n;

	shutdown(c->fd, SHUT_WR);
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (total < DRAIN_MAX_BYTES && tb_now_ns() < deadline && !atomic_load(&c->s->stop)) {
		n = tb_io_read(c->s->io, c->fd, buf, sizeof(buf));
		if (n <= 0 && n != -EAGAIN)
			break;
		if (n > 0)
			total += (size_t)n;
	}
}

static void conn_init(struct tb_conn *c, struct tb_server *s, int fd, uint64_t accept_ns)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->fd = fd;
	c->accept_ns = accept_ns;
	tb_buf_init(&c->out, OUT_MAX);
	tb_buf_init(&c->scratch, OUT_MAX + 4096);
	tb_buf_init(&c->line, OUT_MAX);
	tb_buf_init(&c->hdr, 4096);
}

static void conn_fini(struct tb_conn *c)
{
	if (c->drain && !atomic_load(&c->s->stop))
		linger_close(c);
	tb_buf_free(&c->out);
	tb_buf_free(&c->scratch);
	tb_buf_free(&c->line);
	tb_buf_free(&c->hdr);
	free(c->buf);
}

void tb_conn_serve(struct tb_server *s, int fd, uint64_t accept_ns)
{
	struct tb_conn c;

	conn_init(&c, s, fd, accept_ns);
	while (!atomic_load(&s->stop) && serve_one(&c) == 0)
		;
	conn_fini(&c);
}

struct tb_conn *tb_conn__new(struct tb_server *s, int fd, uint64_t accept_ns)
{
	struct tb_conn *c = malloc(sizeof(*c));

	if (c)
		conn_init(c, s, fd, accept_ns);
	return c;
}

int tb_conn_serve_one(struct tb_conn *c)
{
	return serve_one(c);
}

bool tb_conn_buffered(const struct tb_conn *c)
{
	return c->len > 0;
}

int tb_conn_fd(const struct tb_conn *c)
{
	return c->fd;
}

void tb_conn__free(struct tb_conn *c)
{
	if (!c)
		return;
	conn_fini(c);
	free(c);
}
