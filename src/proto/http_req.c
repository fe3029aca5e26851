// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/1.x request parser: request line, whitelisted headers, body framing.
 * Bodies are consumed and never kept; of the headers only the span
 * contract's whitelist reaches struct rt_http_req_info, and the engine
 * (http_msg.c) buffers no other header value at all, so Authorization,
 * cookies and API keys never leave the socket buffer they came in.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

struct req_msg {
	struct rt_http_req_info info;
	uint64_t cl;
	bool cl_seen, te_seen, te_chunked, conn_close, conn_keep;
	bool rid_seen, tp_seen;
};

struct rt_http_req_parser {
	struct rt_http_msg m;
	struct req_msg *r;
	const struct rt_http_req_cb *cb;
	void *ctx;
};

static const char *const wanted[] = {
	"content-length", "transfer-encoding", "connection",   "expect",
	"x-request-id",	  "traceparent",       "content-type", "user-agent",
};

static void drop_msg(struct rt_http_req_parser *p)
{
	free(p->r);
	p->r = NULL;
}

static int on_begin(void *w)
{
	struct rt_http_req_parser *p = w;

	p->r = calloc(1, sizeof(*p->r));
	if (!p->r)
		return -ENOMEM;
	if (p->cb->on_begin)
		p->cb->on_begin(p->ctx);
	return 0;
}

static bool on_want(void *w, const char *name)
{
	(void)w;
	/* every header name of every request comes here: the first byte rules most out */
	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		if (name[0] == wanted[i][0] && strcmp(name, wanted[i]) == 0)
			return true;
	}
	return false;
}

static bool lower_hex(const char *s, size_t n, bool *all_zero)
{
	*all_zero = true;
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
		if (s[i] != '0')
			*all_zero = false;
	}
	return true;
}

/* W3C Trace Context: version "-" trace-id "-" parent-id "-" flags, lowercase hex. */
static void parse_traceparent(struct rt_http_req_info *info, const char *v, size_t n)
{
	bool zero, tid_zero, pid_zero;

	if (n < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-')
		return;
	if (!lower_hex(v, 2, &zero) || !lower_hex(v + 3, 32, &tid_zero) ||
	    !lower_hex(v + 36, 16, &pid_zero) || !lower_hex(v + 53, 2, &zero))
		return;
	if (tid_zero || pid_zero || (v[0] == 'f' && v[1] == 'f'))
		return;
	/* version 00 is exactly 55 bytes; later versions may append "-..." */
	if ((v[0] == '0' && v[1] == '0') ? n != 55 : (n > 55 && v[55] != '-'))
		return;
	rt_http_copy(info->trace_id, sizeof(info->trace_id), v + 3, 32);
	rt_http_copy(info->parent_span_id, sizeof(info->parent_span_id), v + 36, 16);
}

static int on_header(void *w, const char *name, const char *v, size_t n, bool truncated)
{
	struct rt_http_req_parser *p = w;
	struct req_msg *r = p->r;
	const char *cur = v, *el = NULL, *last = NULL;
	size_t elen, last_len = 0;
	uint64_t cl;

	if (strcmp(name, "content-length") == 0) {
		if (truncated || rt_http_parse_u64(v, n, &cl) || (r->cl_seen && cl != r->cl))
			return RT_HTTP_ERR_MALFORMED;
		r->cl = cl;
		r->cl_seen = true;
	} else if (strcmp(name, "transfer-encoding") == 0) {
		while ((el = rt_http_list_next(&cur, v + n, &elen))) {
			last = el;
			last_len = elen;
		}
		r->te_seen = true;
		r->te_chunked = last && rt_http_ieq(last, last_len, "chunked");
	} else if (strcmp(name, "connection") == 0) {
		while ((el = rt_http_list_next(&cur, v + n, &elen))) {
			if (rt_http_ieq(el, elen, "close"))
				r->conn_close = true;
			else if (rt_http_ieq(el, elen, "keep-alive"))
				r->conn_keep = true;
		}
	} else if (strcmp(name, "expect") == 0) {
		if (rt_http_ieq(v, n, "100-continue"))
			r->info.expect_continue = true;
	} else if (strcmp(name, "x-request-id") == 0) {
		if (!r->rid_seen && n) {
			rt_http_copy(r->info.request_id, sizeof(r->info.request_id), v, n);
			r->rid_seen = true;
		}
	} else if (strcmp(name, "traceparent") == 0) {
		if (!r->tp_seen)
			parse_traceparent(&r->info, v, n);
		r->tp_seen = true;
	} else if (strcmp(name, "content-type") == 0) {
		rt_http_copy(r->info.content_type, sizeof(r->info.content_type), v, n);
	} else if (strcmp(name, "user-agent") == 0) {
		rt_http_copy(r->info.user_agent, sizeof(r->info.user_agent), v, n);
	}
	return 0;
}

static int on_head_done(void *w, bool incomplete, enum rt_http_body *body, uint64_t *length)
{
	struct rt_http_req_parser *p = w;
	struct req_msg *r = p->r;
	struct rt_http_req_info *info = &r->info;
	int err = 0;

	rt_http_copy(info->method, sizeof(info->method), p->m.s->method, p->m.method_len);
	rt_http_copy(info->path, sizeof(info->path), p->m.s->target, p->m.target_len);
	info->keep_alive = p->m.minor == 0 ? r->conn_keep && !r->conn_close : !r->conn_close;
	info->incomplete |= incomplete;
	*body = RT_HTTP_BODY_NONE;
	if (r->te_seen) {
		/* RFC 9112 6.3: Transfer-Encoding overrides Content-Length; a
		 * request whose last coding is not chunked has no framing */
		if (r->te_chunked) {
			info->chunked = true;
			*body = RT_HTTP_BODY_CHUNKED;
		} else {
			err = RT_HTTP_ERR_MALFORMED;
		}
	} else if (r->cl_seen) {
		info->content_length = r->cl;
		*body = RT_HTTP_BODY_LENGTH;
		*length = r->cl;
	}
	/* a guessed head (after a gap) is reported whatever it holds */
	if (err && !incomplete)
		return err;
	if (p->cb->on_headers)
		p->cb->on_headers(p->ctx, info);
	return err;
}

static void on_data(void *w, const uint8_t *buf, size_t n)
{
	/* request bodies (prompts) are framing only: never looked at */
	(void)w;
	(void)buf;
	(void)n;
}

static void on_data_gap(void *w, uint64_t n, bool framing_lost)
{
	struct rt_http_req_parser *p = w;

	(void)n;
	(void)framing_lost;
	p->r->info.incomplete = true;
}

static void on_complete(void *w, bool incomplete, bool guessed)
{
	struct rt_http_req_parser *p = w;

	p->r->info.incomplete |= incomplete;
	p->r->info.guessed |= guessed;
	if (p->cb->on_complete)
		p->cb->on_complete(p->ctx, &p->r->info);
	drop_msg(p);
}

static void on_error(void *w, enum rt_http_error err)
{
	struct rt_http_req_parser *p = w;

	drop_msg(p);
	if (p->cb->on_error)
		p->cb->on_error(p->ctx, err);
}

static const struct rt_http_msg_ops req_ops = {
	.begin = on_begin,
	.want = on_want,
	.header = on_header,
	.head_done = on_head_done,
	.data = on_data,
	.data_gap = on_data_gap,
	.complete = on_complete,
	.error = on_error,
};

struct rt_http_req_parser *rt_http_req__new(void)
{
	struct rt_http_req_parser *p = calloc(1, sizeof(*p));

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	rt_http_msg_init(&p->m, RT_HTTP_DIR_REQ, &req_ops, p);
	return p;
}

void rt_http_req__free(struct rt_http_req_parser *p)
{
	if (!p)
		return;
	rt_http_msg_fini(&p->m);
	drop_msg(p);
	free(p);
}

int rt_http_req_feed(struct rt_http_req_parser *p, const uint8_t *buf, size_t len,
		     const struct rt_http_req_cb *cb, void *ctx)
{
	p->cb = cb;
	p->ctx = ctx;
	return rt_http_msg_feed(&p->m, buf, len);
}

int rt_http_req_gap(struct rt_http_req_parser *p, uint64_t n, const struct rt_http_req_cb *cb,
		    void *ctx)
{
	p->cb = cb;
	p->ctx = ctx;
	return rt_http_msg_gap(&p->m, n);
}

void rt_http_req_set_tap(struct rt_http_req_parser *p, rt_http_tap_fn fn, void *ctx)
{
	p->m.tap = fn;
	p->m.tap_ctx = ctx;
	p->m.run_n = 0;
}

void rt_http_req_resync(struct rt_http_req_parser *p, const struct rt_http_req_cb *cb, void *ctx)
{
	p->cb = cb;
	p->ctx = ctx;
	rt_http_msg_resync(&p->m);
}
