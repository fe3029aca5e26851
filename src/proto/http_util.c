// SPDX-License-Identifier: BSD-2-Clause
/* Bounded byte keeper and string helpers shared by the HTTP parsers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

#define KEEPBUF_MIN 256

const char *rt_http_error_name(enum rt_http_error e)
{
	switch (e) {
	case RT_HTTP_ERR_NONE:
		return "none";
	case RT_HTTP_ERR_TLS:
		return "tls";
	case RT_HTTP_ERR_HTTP2:
		return "http2";
	case RT_HTTP_ERR_MALFORMED:
		return "malformed";
	case RT_HTTP_ERR_TOO_LARGE:
		return "too_large";
	case RT_HTTP_ERR_GAP:
		return "gap";
	}
	return "unknown";
}

void rt_keepbuf_init(struct rt_keepbuf *kb, uint32_t max)
{
	memset(kb, 0, sizeof(*kb));
	kb->max = max < 2 ? 2 : max;
}

static bool grow(struct rt_keepbuf *kb, uint32_t need)
{
	uint32_t cap = kb->cap ? kb->cap : KEEPBUF_MIN;
	char *nb;

	while (cap < need)
		cap = cap > kb->max / 2 ? kb->max : cap * 2;
	if (cap > kb->max)
		cap = kb->max;
	nb = realloc(kb->buf, cap);
	if (!nb)
		return false;
	kb->buf = nb;
	kb->cap = cap;
	return true;
}

/* The tail ring is buf[half, max): after wrapping, its oldest byte is at half + ring. */
static void ring_put(struct rt_keepbuf *kb, const char *p, size_t n)
{
	uint32_t half = kb->max / 2, tsz = kb->max - half;
	size_t first;

	if (n >= tsz) {
		p += n - tsz;
		n = tsz;
	}
	first = tsz - kb->ring;
	if (first > n)
		first = n;
	memcpy(kb->buf + half + kb->ring, p, first);
	memcpy(kb->buf + half, p + first, n - first);
	kb->ring = (uint32_t)((kb->ring + n) % tsz);
}

void rt_keepbuf_append(struct rt_keepbuf *kb, const void *p, size_t n)
{
	const char *src = p;
	size_t take;

	kb->total += n;
	if (kb->len < kb->max) {
		take = kb->max - kb->len;
		if (take > n)
			take = n;
		if (kb->len + take > kb->cap && !grow(kb, kb->len + (uint32_t)take)) {
			kb->dropped = true;
			return;
		}
		memcpy(kb->buf + kb->len, src, take);
		kb->len += (uint32_t)take;
		src += take;
		n -= take;
	}
	if (n == 0)
		return;
	kb->wrapped = true;
	ring_put(kb, src, n);
}

void rt_keepbuf_gap(struct rt_keepbuf *kb)
{
	kb->dropped = true;
}

static void reverse(char *a, size_t n)
{
	for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
		char t = a[i];

		a[i] = a[j - 1];
		a[j - 1] = t;
	}
}

const char *rt_keepbuf_data(struct rt_keepbuf *kb, size_t *len)
{
	uint32_t half = kb->max / 2, tsz = kb->max - half;

	if (kb->wrapped && kb->ring) {
		/* rotate the tail ring into stream order, in place */
		char *t = kb->buf + half;

		reverse(t, kb->ring);
		reverse(t + kb->ring, tsz - kb->ring);
		reverse(t, tsz);
		kb->ring = 0;
	}
	*len = kb->len;
	return kb->buf;
}

bool rt_keepbuf_partial(const struct rt_keepbuf *kb)
{
	return kb->wrapped || kb->dropped;
}

void rt_keepbuf_reset(struct rt_keepbuf *kb)
{
	if (kb->buf)
		explicit_bzero(kb->buf, kb->len);
	kb->len = 0;
	kb->ring = 0;
	kb->wrapped = false;
	kb->dropped = false;
	kb->total = 0;
}

void rt_keepbuf_release(struct rt_keepbuf *kb)
{
	uint32_t max = kb->max;

	if (kb->buf) {
		explicit_bzero(kb->buf, kb->cap);
		free(kb->buf);
	}
	rt_keepbuf_init(kb, max);
}

/* RFC 9110 tchar: ALPHA, DIGIT and "!#$%&'*+-.^_`|~"; a table, it is read per name byte */
const uint8_t rt_http_tchar[256] = {
	['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
	['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1,  ['~'] = 1, ['0'] = 1,
	['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,  ['7'] = 1, ['8'] = 1,
	['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1,  ['F'] = 1, ['G'] = 1,
	['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1,  ['N'] = 1, ['O'] = 1,
	['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,  ['V'] = 1, ['W'] = 1,
	['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1,  ['d'] = 1, ['e'] = 1,
	['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1,  ['l'] = 1, ['m'] = 1,
	['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1,  ['t'] = 1, ['u'] = 1,
	['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

bool rt_http_ieq(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (lit[i] == '\0' || c != lit[i])
			return false;
	}
	return lit[i] == '\0';
}

int rt_http_parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

void rt_http_copy(char *dst, size_t dst_size, const char *s, size_t n)
{
	if (dst_size == 0)
		return;
	if (n >= dst_size)
		n = dst_size - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

const char *rt_http_list_next(const char **cur, const char *end, size_t *elen)
{
	const char *p = *cur, *e;

	while (p < end && (is_ows(*p) || *p == ','))
		p++;
	if (p >= end) {
		*cur = end;
		return NULL;
	}
	e = p;
	while (e < end && *e != ',')
		e++;
	*cur = e;
	while (e > p && is_ows(e[-1]))
		e--;
	*elen = (size_t)(e - p);
	return p;
}

bool rt_http_report(struct rt_http_reported *rep, uint32_t *n, const char *prefix, const char *name,
		    size_t name_len, double value)
{
	struct rt_http_reported *r;
	size_t pl;

	if (*n >= RT_HTTP_REPORTED_MAX || name_len >= RT_HTTP_REPORTED_NAME_MAX)
		return false;
	/* names reach JSON exports and metric labels: plain characters only */
	for (size_t i = 0; i < name_len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	r = &rep[*n];
	/* "prefix.name" (name holds no NUL, checked above); snprintf cost ~600 instructions */
	pl = prefix ? strlen(prefix) + 1 : 0;
	/* a truncated name could collide with another one: leave it out */
	if (pl + name_len >= sizeof(r->name)) {
		memset(r->name, 0, sizeof(r->name));
		return false;
	}
	if (prefix) {
		memcpy(r->name, prefix, pl - 1);
		r->name[pl - 1] = '.';
	}
	memcpy(r->name + pl, name, name_len);
	r->name[pl + name_len] = '\0';
	for (uint32_t i = 0; i < *n; i++) {
		if (strcmp(rep[i].name, r->name) == 0) {
			memset(r->name, 0, sizeof(r->name));
			return false;
		}
	}
	r->value = value;
	(*n)++;
	return true;
}
