// SPDX-License-Identifier: BSD-2-Clause
#include "common/jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_jsonw_init(struct rt_jsonw *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	w->max = max ? max : (1u << 20);
}

void rt_jsonw_fini(struct rt_jsonw *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

void rt_jsonw_reset(struct rt_jsonw *w)
{
	w->len = 0;
	w->overflow = false;
	w->depth = 0;
	w->after_key = false;
	memset(w->need_comma, 0, sizeof(w->need_comma));
	if (w->buf)
		w->buf[0] = '\0';
}

bool rt_jsonw_ok(const struct rt_jsonw *w)
{
	return !w->overflow && w->depth == 0;
}

const char *rt_jsonw_str(const struct rt_jsonw *w)
{
	return w->buf ? w->buf : "";
}

static void put_slow(struct rt_jsonw *w, const char *s, size_t n)
{
	if (w->overflow)
		return;
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		char *b;

		while (cap < w->len + n + 1)
			cap *= 2;
		if (cap > w->max + 1)
			cap = w->max + 1;
		if (w->len + n + 1 > cap) {
			w->overflow = true;
			return;
		}
		b = realloc(w->buf, cap);
		if (!b) {
			w->overflow = true;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

/* Most writes fit what the buffer holds (reset keeps it): inline, no call for a byte. */
static inline void put(struct rt_jsonw *w, const char *s, size_t n)
{
	if (w->len + n + 1 <= w->cap && !w->overflow) {
		char *d = w->buf + w->len;

		if (n == 1)
			d[0] = s[0];
		else
			memcpy(d, s, n);
		w->len += n;
		w->buf[w->len] = '\0';
		return;
	}
	put_slow(w, s, n);
}

static void puts_(struct rt_jsonw *w, const char *s)
{
	put(w, s, strlen(s));
}

/* Before any value or key: the comma, unless a key was just written. */
static void sep(struct rt_jsonw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->depth > 0 && w->depth <= RT_JSONW_DEPTH) {
		if (w->need_comma[w->depth - 1])
			put(w, ",", 1);
		w->need_comma[w->depth - 1] = true;
	}
}

static void open_(struct rt_jsonw *w, char c)
{
	sep(w);
	put(w, &c, 1);
	if (w->depth < RT_JSONW_DEPTH)
		w->need_comma[w->depth] = false;
	else
		w->overflow = true;
	w->depth++;
}

static void close_(struct rt_jsonw *w, char c)
{
	put(w, &c, 1);
	if (w->depth > 0)
		w->depth--;
}

void rt_jsonw_obj_open(struct rt_jsonw *w)
{
	open_(w, '{');
}

void rt_jsonw_obj_close(struct rt_jsonw *w)
{
	close_(w, '}');
}

void rt_jsonw_arr_open(struct rt_jsonw *w)
{
	open_(w, '[');
}

void rt_jsonw_arr_close(struct rt_jsonw *w)
{
	close_(w, ']');
}

/* Length of the valid UTF-8 sequence at p, 0 if invalid (overlongs and
 * surrogates are not checked: JSON consumers accept them). */
static int utf8_len(const unsigned char *p)
{
	int n, i;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0; /* also stops at the NUL terminator */
	return n;
}

static void quoted(struct rt_jsonw *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];

	put(w, "\"", 1);
	while (*p) {
		const char *rep = NULL;
		const unsigned char *q = p;
		int n;

		/* keys and most values are plain ASCII: a run at a time */
		while (*q >= 0x20 && *q < 0x7f && *q != '"' && *q != '\\')
			q++;
		if (q != p) {
			put(w, (const char *)p, (size_t)(q - p));
			p = q;
			continue;
		}

		switch (*p) {
		case '"':
			rep = "\\\"";
			break;
		case '\\':
			rep = "\\\\";
			break;
		case '\n':
			rep = "\\n";
			break;
		case '\r':
			rep = "\\r";
			break;
		case '\t':
			rep = "\\t";
			break;
		}
		if (rep) {
			puts_(w, rep);
			p++;
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			puts_(w, esc);
			p++;
		} else if (*p < 0x80) {
			put(w, (const char *)p, 1);
			p++;
		} else if ((n = utf8_len(p)) > 0) {
			put(w, (const char *)p, (size_t)n);
			p += n;
		} else {
			/* header bytes are untrusted: keep the output valid JSON text */
			puts_(w, "\\ufffd");
			p++;
		}
	}
	put(w, "\"", 1);
}

void rt_jsonw_key(struct rt_jsonw *w, const char *key)
{
	sep(w);
	quoted(w, key);
	put(w, ":", 1);
	w->after_key = true;
}

void rt_jsonw_str_val(struct rt_jsonw *w, const char *s)
{
	sep(w);
	quoted(w, s ? s : "");
}

/* v in decimal, ending at end (exclusive): its first digit. A span has ~100 numbers. */
static char *digits(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

void rt_jsonw_int(struct rt_jsonw *w, int64_t v)
{
	char b[32], *e = b + sizeof(b), *d;

	sep(w);
	d = digits(e, v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v);
	if (v < 0)
		*--d = '-';
	put(w, d, (size_t)(e - d));
}

void rt_jsonw_uint(struct rt_jsonw *w, uint64_t v)
{
	char b[32], *e = b + sizeof(b), *d;

	sep(w);
	d = digits(e, v);
	put(w, d, (size_t)(e - d));
}

void rt_jsonw_num(struct rt_jsonw *w, double v, int decimals)
{
	char b[64];

	sep(w);
	if (!isfinite(v)) {
		puts_(w, "null");
		return;
	}
	snprintf(b, sizeof(b), "%.*f", decimals, v);
	puts_(w, b);
}

void rt_jsonw_bool(struct rt_jsonw *w, bool v)
{
	sep(w);
	puts_(w, v ? "true" : "false");
}

void rt_jsonw_null(struct rt_jsonw *w)
{
	sep(w);
	puts_(w, "null");
}

void rt_jsonw_ms(struct rt_jsonw *w, int64_t ns)
{
	char b[40], *e = b + sizeof(b), *d;
	uint64_t a = ns < 0 ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;
	/* round half away from zero to the microsecond */
	uint64_t us = (a + 500) / 1000;

	sep(w);
	/* as "%s%llu.%03llu" would print it */
	d = e - 3;
	d[0] = (char)('0' + us % 1000 / 100);
	d[1] = (char)('0' + us % 100 / 10);
	d[2] = (char)('0' + us % 10);
	*--d = '.';
	d = digits(d, us / 1000);
	if (ns < 0)
		*--d = '-';
	put(w, d, (size_t)(e - d));
}
