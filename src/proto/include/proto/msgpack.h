/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A bounded msgpack reader over one contiguous buffer: no allocation, no
 * recursion, every length checked against the bytes left before it is
 * used (a header that claims more than the buffer holds is a truncation,
 * never a read past the end). Strings, bin and ext payloads are returned as
 * pointers into the buffer.
 *
 * Errors (negative errno): -ENODATA the buffer ends inside a value (a cut
 * capture or a truncated message: a length or count that claims more than
 * the bytes left), -EBADMSG a byte that is no msgpack (0xc1), -ELOOP
 * nesting deeper than the limit.
 */
#ifndef RT_PROTO_MSGPACK_H
#define RT_PROTO_MSGPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting limit of rt_mp_skip(): vLLM's messages nest 5 deep at most
 * (outputs → output → events → event map → value); SchedulerStats adds a
 * few levels of maps. */
#define RT_MP_DEPTH_MAX 32

enum rt_mp_type {
	RT_MP_NIL,
	RT_MP_BOOL,
	RT_MP_UINT, /* positive fixint, uint 8..64, and non-negative int 8..64 */
	RT_MP_INT, /* a negative integer */
	RT_MP_FLOAT, /* float 32 or 64, as a double */
	RT_MP_STR,
	RT_MP_BIN,
	RT_MP_ARRAY, /* n elements follow */
	RT_MP_MAP, /* n key/value pairs follow */
	RT_MP_EXT, /* ext_type, and len payload bytes at ptr */
};

struct rt_mp_reader {
	const uint8_t *buf;
	size_t len; /* bytes at buf */
	size_t size; /* the whole value's size: > len when the capture was cut */
	size_t pos; /* next byte to read */
};

/* One value's header. For STR/BIN/EXT the payload is consumed too. */
struct rt_mp_value {
	enum rt_mp_type type;
	int8_t ext_type; /* EXT only */
	union {
		bool b;
		uint64_t u;
		int64_t i;
		double f;
		uint32_t n; /* ARRAY, MAP: element / pair count */
		struct {
			const uint8_t *ptr;
			uint32_t len;
		} s; /* STR, BIN, EXT */
	};
};

static inline void rt_mp_init(struct rt_mp_reader *r, const void *buf, size_t len)
{
	r->buf = buf;
	r->len = len;
	r->size = len;
	r->pos = 0;
}

/* A capture of the first len bytes of size: counts are checked against
 * size, reads past len are -ENODATA. */
static inline void rt_mp_init_cut(struct rt_mp_reader *r, const void *buf, size_t len, size_t size)
{
	rt_mp_init(r, buf, len);
	r->size = size > len ? size : len;
}

static inline size_t rt_mp_left(const struct rt_mp_reader *r)
{
	return r->len - r->pos;
}

/* Reads one value header (arrays and maps: the count only; their elements
 * are the next values). On error the position is unchanged. An array or map
 * count larger than the bytes left of size is -ENODATA. */
int rt_mp_read(struct rt_mp_reader *r, struct rt_mp_value *v);

/* Skips one whole value, nested ones included, at most max_depth levels of
 * arrays/maps deep (≤ RT_MP_DEPTH_MAX; a scalar is depth 0, [1] depth 1).
 * On error the position is unspecified. */
int rt_mp_skip(struct rt_mp_reader *r, unsigned max_depth);

/* Typed helpers: read one value and require its type; -EPROTO (position
 * unchanged) when it is another type, the errors above otherwise. */
int rt_mp_read_uint(struct rt_mp_reader *r, uint64_t *out);
int rt_mp_read_int(struct rt_mp_reader *r, int64_t *out); /* UINT ≤ INT64_MAX or INT */
int rt_mp_read_float(struct rt_mp_reader *r, double *out); /* FLOAT, or an integer */
/* nil: true (and nothing consumed but the nil); otherwise false, nothing consumed */
bool rt_mp_next_nil(struct rt_mp_reader *r);

#endif
