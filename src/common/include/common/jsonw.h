/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small JSON writer into a growable, bounded buffer. We do not print
 * through cJSON because its numbers are doubles: nanosecond instants must be
 * exact JSON integers (docs/spans.md).
 *
 * Commas are inserted automatically; the caller only opens, closes and
 * writes keys and values. A write past the bound sets `overflow` and the
 * text is truncated; callers check rt_jsonw_ok().
 */
#ifndef RT_JSONW_H
#define RT_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_JSONW_DEPTH 16

struct rt_jsonw {
	char *buf;
	size_t len, cap, max;
	bool overflow;
	int depth;
	bool need_comma[RT_JSONW_DEPTH];
	bool after_key;
};

/* max: largest text the writer may grow to (0: 1 MiB). */
void rt_jsonw_init(struct rt_jsonw *w, size_t max);
void rt_jsonw_fini(struct rt_jsonw *w);
/* Start again, keeping the buffer. */
void rt_jsonw_reset(struct rt_jsonw *w);
bool rt_jsonw_ok(const struct rt_jsonw *w);
/* NUL-terminated text written so far. */
const char *rt_jsonw_str(const struct rt_jsonw *w);

void rt_jsonw_obj_open(struct rt_jsonw *w);
void rt_jsonw_obj_close(struct rt_jsonw *w);
void rt_jsonw_arr_open(struct rt_jsonw *w);
void rt_jsonw_arr_close(struct rt_jsonw *w);
void rt_jsonw_key(struct rt_jsonw *w, const char *key);
void rt_jsonw_str_val(struct rt_jsonw *w, const char *s);
void rt_jsonw_int(struct rt_jsonw *w, int64_t v);
void rt_jsonw_uint(struct rt_jsonw *w, uint64_t v);
/* Fixed decimals, e.g. milliseconds with 3. Non-finite values become null. */
void rt_jsonw_num(struct rt_jsonw *w, double v, int decimals);
void rt_jsonw_bool(struct rt_jsonw *w, bool v);
void rt_jsonw_null(struct rt_jsonw *w);

/* Nanoseconds as milliseconds with 3 decimals, exact (no double rounding). */
void rt_jsonw_ms(struct rt_jsonw *w, int64_t ns);

#endif /* RT_JSONW_H */
