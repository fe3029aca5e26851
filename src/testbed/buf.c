// SPDX-License-Identifier: BSD-2-Clause
#include "buf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_buf_init(struct tb_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void tb_buf_free(struct tb_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void tb_buf_reset(struct tb_buf *b)
{
	b->len = 0;
	b->overflow = false;
	if (b->p)
		b->p[0] = '\0';
}

/* Makes room for n more bytes plus the NUL. */
static int reserve(struct tb_buf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (n > b->max - b->len) {
		b->overflow = true;
		return -ENOBUFS;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->overflow = true;
		return -ENOBUFS;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int tb_buf_add(struct tb_buf *b, const void *data, size_t n)
{
	int err = reserve(b, n);

	if (err)
		return err;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int tb_buf_puts(struct tb_buf *b, const char *s)
{
	return tb_buf_add(b, s, strlen(s));
}

int tb_buf_printf(struct tb_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	err = reserve(b, (size_t)n);
	if (err)
		return err;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int tb_buf_json_strn(struct tb_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;
	int err = tb_buf_add(b, "\"", 1);

	for (i = 0; i < n && !err; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

		switch (c) {
		case '"':
			err = tb_buf_add(b, "\\\"", 2);
			break;
		case '\\':
			err = tb_buf_add(b, "\\\\", 2);
			break;
		case '\n':
			err = tb_buf_add(b, "\\n", 2);
			break;
		case '\r':
			err = tb_buf_add(b, "\\r", 2);
			break;
		case '\t':
			err = tb_buf_add(b, "\\t", 2);
			break;
		default:
			/* bytes >= 0x80 pass through: the input was checked to be UTF-8 or ASCII */
			if (c < 0x20 || c == 0x7f)
				err = tb_buf_add(b, esc, sizeof(esc));
			else
				err = tb_buf_add(b, &s[i], 1);
		}
	}
	if (!err)
		err = tb_buf_add(b, "\"", 1);
	return err;
}

int tb_buf_json_str(struct tb_buf *b, const char *s)
{
	return tb_buf_json_strn(b, s, strlen(s));
}

int tb_buf_json_u64(struct tb_buf *b, uint64_t v)
{
	if (v == TB_NULL_U64)
		return tb_buf_puts(b, "null");
	return tb_buf_printf(b, "%" PRIu64, v);
}
