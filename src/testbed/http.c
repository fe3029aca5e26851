// SPDX-License-Identifier: BSD-2-Clause
#include "http.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 tchar */
static bool is_tchar(char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c);
}

static const char *find_head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 3 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
		    buf[i + 3] == '\n')
			return buf + i;
	return NULL;
}

static int parse_request_line(const char *p, const char *end, struct tb_http_req *req)
{
	const char *sp1, *sp2, *q;
	size_t n;

	sp1 = memchr(p, ' ', (size_t)(end - p));
	if (!sp1 || sp1 == p || (size_t)(sp1 - p) >= sizeof(req->method))
		return -EBADMSG;
	for (q = p; q < sp1; q++)
		if (!is_tchar(*q))
			return -EBADMSG;
	memcpy(req->method, p, (size_t)(sp1 - p));
	req->method[sp1 - p] = '\0';

	sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1)
		return -EBADMSG;
	for (q = sp1 + 1; q < sp2; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
			return -EBADMSG;
	q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
	n = (size_t)((q ? q : sp2) - (sp1 + 1));
	if (n >= sizeof(req->path))
		return -EBADMSG;
	memcpy(req->path, sp1 + 1, n);
	req->path[n] = '\0';

	if (end - sp2 - 1 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || sp2[8] < '0' ||
	    sp2[8] > '9')
		return -EBADMSG;
	req->minor = sp2[8] - '0';
	req->keep_alive = req->minor >= 1;
	return 0;
}

/* Does the comma-separated value list v (n bytes) contain token tok? */
static bool has_token(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok), i = 0, s, e;

	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && strncasecmp(v + s, tok, tl) == 0)
			return true;
	}
	return false;
}

static int parse_header(const char *name, size_t nlen, const char *v, size_t vlen,
			struct tb_http_req *req)
{
	uint64_t cl = 0;
	size_t i;

	if (nlen == 14 && strncasecmp(name, "content-length", 14) == 0) {
		if (vlen == 0 || vlen > 15)
			return -EBADMSG;
		for (i = 0; i < vlen; i++) {
			if (v[i] < '0' || v[i] > '9')
				return -EBADMSG;
			cl = cl * 10 + (uint64_t)(v[i] - '0');
		}
		/* RFC 9112 6.3: differing duplicates are an error */
		if (req->has_content_length && req->content_length != cl)
			return -EBADMSG;
		req->has_content_length = true;
		req->content_length = cl;
	} else if (nlen == 17 && strncasecmp(name, "transfer-encoding", 17) == 0) {
		req->has_transfer_encoding = true;
	} else if (nlen == 10 && strncasecmp(name, "connection", 10) == 0) {
		if (has_token(v, vlen, "close"))
			req->keep_alive = false;
		else if (has_token(v, vlen, "keep-alive"))
			req->keep_alive = true;
	} else if (nlen == 12 && strncasecmp(name, "x-request-id", 12) == 0) {
		/* visible ASCII only: the id goes into logs, JSON and marker probes */
		if (vlen == 0 || vlen > TB_REQUEST_ID_MAX)
			return -EBADMSG;
		for (i = 0; i < vlen; i++)
			if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f)
				return -EBADMSG;
		memcpy(req->request_id, v, vlen);
		req->request_id[vlen] = '\0';
		req->has_request_id = true;
	}
	return 0;
}

int tb_http_parse_head(const char *buf, size_t len, struct tb_http_req *req)
{
	const char *end, *p, *eol, *colon, *v, *ve, *q;
	int err;

	end = find_head_end(buf, len < TB_HTTP_HEAD_MAX ? len : TB_HTTP_HEAD_MAX);
	if (!end)
		return len >= TB_HTTP_HEAD_MAX ? -E2BIG : 0;
	memset(req, 0, sizeof(*req));
	req->head_len = (size_t)(end - buf) + 4;

	eol = memchr(buf, '\r', (size_t)(end + 2 - buf));
	err = parse_request_line(buf, eol, req);
	if (err)
		return err;
	if (eol[1] != '\n')
		return -EBADMSG;
	p = eol + 2;
	while (p < end + 2) {
		eol = memchr(p, '\r', (size_t)(end + 2 - p));
		if (!eol || eol[1] != '\n')
			return -EBADMSG;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p)
			return -EBADMSG;
		for (q = p; q < colon; q++)
			if (!is_tchar(*q))
				return -EBADMSG; /* also refuses obsolete line folding */
		v = colon + 1;
		ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (q = v; q < ve; q++)
			if (*q == '\0' || *q == '\n')
				return -EBADMSG;
		err = parse_header(p, (size_t)(colon - p), v, (size_t)(ve - v), req);
		if (err)
			return err;
		p = eol + 2;
	}
	return 1;
}
