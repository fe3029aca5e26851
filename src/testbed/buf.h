/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A growable byte buffer with a hard size limit, and the JSON writing the
 * testbed needs (strings escaped per RFC 8259, integers as integers). The
 * testbed writes its own JSON rather than share the tracer's exporters.
 */
#ifndef TB_BUF_H
#define TB_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tb_buf {
	char *p; /* NUL-terminated while len < cap */
	size_t len;
	size_t cap;
	size_t max; /* len never exceeds max */
	bool overflow; /* an append was refused (too large or no memory) */
};

/* Empty buffer that may grow to max bytes. */
void tb_buf_init(struct tb_buf *b, size_t max);

/* Frees the memory; b may be reused after tb_buf_init. */
void tb_buf_free(struct tb_buf *b);

/* Empties the buffer, keeping its memory, and clears overflow. */
void tb_buf_reset(struct tb_buf *b);

/* Appends n bytes. Returns 0 or -ENOBUFS (and sets overflow). */
int tb_buf_add(struct tb_buf *b, const void *data, size_t n);

/* Appends a C string. */
int tb_buf_puts(struct tb_buf *b, const char *s);

/* Appends printf output. */
int tb_buf_printf(struct tb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s (n bytes) as a quoted, escaped JSON string. */
int tb_buf_json_strn(struct tb_buf *b, const char *s, size_t n);

/* Appends a NUL-terminated s as a JSON string. */
int tb_buf_json_str(struct tb_buf *b, const char *s);

/* Appends an unsigned integer, or `null` when v is TB_NULL_U64. */
int tb_buf_json_u64(struct tb_buf *b, uint64_t v);

#define TB_NULL_U64 UINT64_MAX

#endif /* TB_BUF_H */
