// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/1.x response parser: status line, framing headers, server-reported
 * timing headers, and the body: Server-Sent Events are decoded and each
 * event classified; a JSON body is kept (bounded, head and tail) until the
 * response ends for its usage and timings. Nothing else of a body is kept.
 *
 * Interim 1xx responses (100 Continue, 103 Early Hints) produce no
 * callback at all: the parser reports the final response only, so
 * on_begin is called once the status code is read and known to be >= 200.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

struct resp_msg {
	struct rt_http_resp_info info;
	uint64_t cl;
	bool head, cl_seen, te_seen, te_chunked, encoded, use_sse, use_json;
	struct rt_sse_dec sse;
	struct rt_keepbuf json;
};

struct rt_http_resp_parser {
	struct rt_http_msg m;
	bool expect_head;
	bool framing_only; /* tapped: bodies are framed, not decoded */
	struct resp_msg *r;
	const struct rt_http_resp_cb *cb;
	void *ctx;
};

/* Headers whose numeric value is a server-reported time, reported under their name. */
static const char *const timing_headers[] = {
	"openai-processing-ms",
	"x-process-time",
	"x-response-time",
	"x-envoy-upstream-service-time",
};

static const char *const framing_headers[] = {
	"content-length", "transfer-encoding", "content-type", "content-encoding", "server-timing",
};

static void drop_msg(struct rt_http_resp_parser *p)
{
	if (!p->r)
		return;
	rt_sse_dec_release(&p->r->sse);
	rt_keepbuf_release(&p->r->json);
	free(p->r);
	p->r = NULL;
}

static int on_begin(void *w)
{
	struct rt_http_resp_parser *p = w;

	p->r = calloc(1, sizeof(*p->r));
	if (!p->r)
		return -ENOMEM;
	rt_sse_dec_init(&p->r->sse);
	rt_keepbuf_init(&p->r->json, RT_HTTP_BODY_JSON_MAX);
	p->r->head = p->expect_head;
	p->expect_head = false;
	if (p->cb->on_begin)
		p->cb->on_begin(p->ctx);
	return 0;
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	/* every header name of every response comes here: the first byte rules most out */
	for (size_t i = 0; i < n; i++) {
		if (name[0] == list[i][0] && strcmp(name, list[i]) == 0)
			return true;
	}
	return false;
}

static bool on_want(void *w, const char *name)
{
	(void)w;
	return in_list(name, framing_headers,
		       sizeof(framing_headers) / sizeof(framing_headers[0])) ||
	       in_list(name, timing_headers, sizeof(timing_headers) / sizeof(timing_headers[0]));
}

/* A number at the start of s[0..n) ("12.5", "12.5ms"); false when none. */
static bool leading_number(const char *s, size_t n, double *out)
{
	char num[32];
	size_t l = 0;
	char *end;

	if (n && *s == '"') {
		s++;
		n--;
	}
	while (l < n && l < sizeof(num) - 1 && s[l] && strchr("0123456789.eE+-", s[l]))
		l++;
	if (!l)
		return false;
	memcpy(num, s, l);
	num[l] = '\0';
	*out = strtod(num, &end);
	return end != num && isfinite(*out);
}

/* Server-Timing: metric *( OWS ";" OWS param ), ... ; reports each metric's dur. */
static void parse_server_timing(struct rt_http_resp_info *info, const char *v, size_t n)
{
	const char *cur = v, *el;
	size_t elen;

	while ((el = rt_http_list_next(&cur, v + n, &elen))) {
		const char *semi = memchr(el, ';', elen), *pc, *param;
		size_t name_len = semi ? (size_t)(semi - el) : elen, plen;
		double dur;

		while (name_len && (el[name_len - 1] == ' ' || el[name_len - 1] == '\t'))
			name_len--;
		if (!semi || !name_len)
			continue;
		pc = semi;
		while (pc < el + elen) {
			const char *next = memchr(pc + 1, ';', (size_t)(el + elen - pc - 1));

			param = pc + 1;
			plen = (size_t)((next ? next : el + elen) - param);
			while (plen && (*param == ' ' || *param == '\t')) {
				param++;
				plen--;
			}
			if (plen > 4 && rt_http_ieq(param, 4, "dur=") &&
			    leading_number(param + 4, plen - 4, &dur)) {
				rt_http_report(info->reported, &info->n_reported, "server-timing",
					       el, name_len, dur);
				break;
			}
			if (!next)
				break;
			pc = next;
		}
	}
}

static void set_content_type(struct resp_msg *r, const char *v, size_t n)
{
	const char *semi = memchr(v, ';', n);
	size_t l = semi ? (size_t)(semi - v) : n;

	while (l && (v[l - 1] == ' ' || v[l - 1] == '\t'))
		l--;
	r->info.sse = rt_http_ieq(v, l, "text/event-stream");
	r->info.json = rt_http_ieq(v, l, "application/json") ||
		       (l > 5 && rt_http_ieq(v + l - 5, 5, "+json"));
}

static int on_header(void *w, const char *name, const char *v, size_t n, bool truncated)
{
	struct rt_http_resp_parser *p = w;
	struct resp_msg *r = p->r;
	const char *cur = v, *el, *last = NULL;
	size_t elen, last_len = 0;
	uint64_t cl;
	double d;

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
	} else if (strcmp(name, "content-type") == 0) {
		set_content_type(r, v, n);
	} else if (strcmp(name, "content-encoding") == 0) {
		/* compressed bodies are framed but not decoded */
		while ((el = rt_http_list_next(&cur, v + n, &elen))) {
			if (!rt_http_ieq(el, elen, "identity"))
				r->encoded = true;
		}
	} else if (strcmp(name, "server-timing") == 0) {
		parse_server_timing(&r->info, v, n);
	} else if (leading_number(v, n, &d)) {
		rt_http_report(r->info.reported, &r->info.n_reported, NULL, name, strlen(name), d);
	}
	return 0;
}

static int on_head_done(void *w, bool incomplete, enum rt_http_body *body, uint64_t *length)
{
	struct rt_http_resp_parser *p = w;
	struct resp_msg *r = p->r;
	struct rt_http_resp_info *info = &r->info;

	(void)incomplete;
	info->status = p->m.status;
	info->content_length = r->cl;
	/* RFC 9112 6.3, in order */
	if (r->head || info->status == 204 || info->status == 304) {
		info->no_body = true;
		*body = RT_HTTP_BODY_NONE;
	} else if (r->te_seen) {
		*body = r->te_chunked ? RT_HTTP_BODY_CHUNKED : RT_HTTP_BODY_CLOSE;
	} else if (r->cl_seen) {
		*body = RT_HTTP_BODY_LENGTH;
		*length = r->cl;
	} else {
		*body = RT_HTTP_BODY_CLOSE;
	}
	info->chunked = *body == RT_HTTP_BODY_CHUNKED;
	info->close_delimited = *body == RT_HTTP_BODY_CLOSE;
	if (!info->no_body && !r->encoded) {
		r->use_sse = info->sse;
		r->use_json = !info->sse && info->json;
	}
	p->m.body_tap = r->use_sse  ? RT_HTTP_TAP_BODY_SSE :
			r->use_json ? RT_HTTP_TAP_BODY_JSON :
				      RT_HTTP_TAP_BODY;
	if (p->framing_only)
		r->use_sse = r->use_json = false;
	if (p->cb->on_headers)
		p->cb->on_headers(p->ctx, info);
	return 0;
}

static void emit_event(void *w, const struct rt_sse_event *ev)
{
	struct rt_http_resp_parser *p = w;

	if (p->cb->on_sse_event)
		p->cb->on_sse_event(p->ctx, ev);
}

static void on_data(void *w, const uint8_t *buf, size_t n)
{
	struct rt_http_resp_parser *p = w;

	if (p->r->use_sse)
		rt_sse_dec_feed(&p->r->sse, buf, n, emit_event, p);
	else if (p->r->use_json)
		rt_keepbuf_append(&p->r->json, buf, n);
}

static void on_data_gap(void *w, uint64_t n, bool framing_lost)
{
	struct rt_http_resp_parser *p = w;

	(void)n;
	if (p->r->use_sse)
		rt_sse_dec_gap(&p->r->sse, framing_lost);
	else if (p->r->use_json)
		rt_keepbuf_gap(&p->r->json);
}

static void on_complete(void *w, bool incomplete, bool guessed)
{
	struct rt_http_resp_parser *p = w;
	struct resp_msg *r = p->r;
	struct rt_http_resp_done done;

	memset(&done, 0, sizeof(done));
	done.tokens_out = -1;
	done.id_slot = -1;
	done.incomplete = incomplete;
	done.guessed = guessed;
	if (r->use_json && r->json.total) {
		struct rt_http_json_facts f;
		size_t len;
		const char *text = rt_keepbuf_data(&r->json, &len);

		rt_http_json_facts(text, len, incomplete || rt_keepbuf_partial(&r->json), &f);
		done.tokens_out = f.tokens_out;
		done.id_slot = f.id_slot;
		memcpy(done.response_id, f.response_id, sizeof(done.response_id));
		done.n_reported = f.n_reported;
		memcpy(done.reported, f.reported, f.n_reported * sizeof(f.reported[0]));
	}
	if (p->cb->on_complete)
		p->cb->on_complete(p->ctx, &done);
	drop_msg(p);
}

static void on_error(void *w, enum rt_http_error err)
{
	struct rt_http_resp_parser *p = w;

	drop_msg(p);
	if (p->cb->on_error)
		p->cb->on_error(p->ctx, err);
}

static const struct rt_http_msg_ops resp_ops = {
	.begin = on_begin,
	.want = on_want,
	.header = on_header,
	.head_done = on_head_done,
	.data = on_data,
	.data_gap = on_data_gap,
	.complete = on_complete,
	.error = on_error,
};

struct rt_http_resp_parser *rt_http_resp__new(void)
{
	struct rt_http_resp_parser *p = calloc(1, sizeof(*p));

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	rt_http_msg_init(&p->m, RT_HTTP_DIR_RESP, &resp_ops, p);
	return p;
}

void rt_http_resp__free(struct rt_http_resp_parser *p)
{
	if (!p)
		return;
	rt_http_msg_fini(&p->m);
	drop_msg(p);
	free(p);
}

void rt_http_resp_expect_head(struct rt_http_resp_parser *p, bool head)
{
	p->expect_head = head;
}

int rt_http_resp_feed(struct rt_http_resp_parser *p, const uint8_t *buf, size_t len,
		      const struct rt_http_resp_cb *cb, void *ctx)
{
	p->cb = cb;
	p->ctx = ctx;
	return rt_http_msg_feed(&p->m, buf, len);
}

int rt_http_resp_gap(struct rt_http_resp_parser *p, uint64_t n, const struct rt_http_resp_cb *cb,
		     void *ctx)
{
	p->cb = cb;
	p->ctx = ctx;
	return rt_http_msg_gap(&p->m, n);
}

void rt_http_resp_eof(struct rt_http_resp_parser *p, const struct rt_http_resp_cb *cb, void *ctx)
{
	p->cb = cb;
	p->ctx = ctx;
	rt_http_msg_eof(&p->m);
}

void rt_http_resp_set_tap(struct rt_http_resp_parser *p, rt_http_tap_fn fn, void *ctx)
{
	p->m.tap = fn;
	p->m.tap_ctx = ctx;
	p->m.run_n = 0;
	p->framing_only = fn != NULL;
}

void rt_http_resp_resync(struct rt_http_resp_parser *p, const struct rt_http_resp_cb *cb, void *ctx)
{
	p->cb = cb;
	p->ctx = ctx;
	rt_http_msg_resync(&p->m);
}
