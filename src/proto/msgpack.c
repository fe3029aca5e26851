// SPDX-License-Identifier: BSD-2-Clause
/*
 * The bounded msgpack reader (proto/msgpack.h). Every header's length is
 * compared with the bytes left as a size_t before any pointer moves, so a
 * hostile 0xffffffff length cannot wrap the position.
 */
#include <errno.h>
#include <string.h>

#include "proto/msgpack.h"

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* The payload length of str/bin/ext and the element count of array/map
 * are n-byte big-endian numbers after the type byte. */
static int read_len(const struct rt_mp_reader *r, size_t at, unsigned n, uint32_t *len)
{
	if (r->len - at < n)
		return -ENODATA;
	*len = (uint32_t)be(r->buf + at, n);
	return 0;
}

/* str/bin/ext payloads: the bytes must all be there */
static int take(struct rt_mp_reader *r, size_t at, uint32_t len, struct rt_mp_value *v)
{
	if (r->len - at < len)
		return -ENODATA;
	v->s.ptr = r->buf + at;
	v->s.len = len;
	r->pos = at + len;
	return 0;
}

/* arrays/maps: each element takes at least one byte, so a count beyond the
 * bytes left of the whole value (captured or not) cannot be satisfied;
 * refusing it here keeps skip loops short. It reads as a
 * truncation: the value would end past the buffer's end. */
static int count(struct rt_mp_reader *r, size_t at, uint32_t n, uint32_t per, struct rt_mp_value *v)
{
	if ((uint64_t)n * per > r->size - at)
		return -ENODATA;
	v->n = n;
	r->pos = at;
	return 0;
}

static int fixed(struct rt_mp_reader *r, size_t at, unsigned n)
{
	if (r->len - at < n)
		return -ENODATA;
	r->pos = at + n;
	return 0;
}

static int read_scalar(struct rt_mp_reader *r, uint8_t b, size_t at, struct rt_mp_value *v)
{
	const uint8_t *p = r->buf + at;
	unsigned n;
	int err;

	switch (b) {
	case 0xc0:
		v->type = RT_MP_NIL;
		r->pos = at;
		return 0;
	case 0xc2:
	case 0xc3:
		v->type = RT_MP_BOOL;
		v->b = b == 0xc3;
		r->pos = at;
		return 0;
	case 0xcc:
	case 0xcd:
	case 0xce:
	case 0xcf:
		n = 1u << (b - 0xcc);
		if ((err = fixed(r, at, n)))
			return err;
		v->type = RT_MP_UINT;
		v->u = be(p, n);
		return 0;
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3: {
		uint64_t raw;
		int64_t s;

		n = 1u << (b - 0xd0);
		if ((err = fixed(r, at, n)))
			return err;
		raw = be(p, n);
		/* sign-extend from n bytes without shifting into the sign bit */
		if (n < 8 && (raw >> (8 * n - 1)) & 1)
			raw |= ~0ull << (8 * n);
		memcpy(&s, &raw, sizeof(s));
		if (s >= 0) {
			v->type = RT_MP_UINT;
			v->u = (uint64_t)s;
		} else {
			v->type = RT_MP_INT;
			v->i = s;
		}
		return 0;
	}
	case 0xca: {
		uint32_t raw;
		float f;

		if ((err = fixed(r, at, 4)))
			return err;
		raw = (uint32_t)be(p, 4);
		memcpy(&f, &raw, sizeof(f));
		v->type = RT_MP_FLOAT;
		v->f = f;
		return 0;
	}
	case 0xcb: {
		uint64_t raw;

		if ((err = fixed(r, at, 8)))
			return err;
		raw = be(p, 8);
		memcpy(&v->f, &raw, sizeof(v->f));
		v->type = RT_MP_FLOAT;
		return 0;
	}
	}
	return -EBADMSG;
}

static int read_at(struct rt_mp_reader *r, struct rt_mp_value *v)
{
	uint8_t b;
	size_t at = r->pos + 1;
	uint32_t len;
	unsigned n;
	int err;

	if (r->pos >= r->len)
		return -ENODATA;
	b = r->buf[r->pos];
	if (b <= 0x7f) {
		v->type = RT_MP_UINT;
		v->u = b;
		r->pos = at;
		return 0;
	}
	if (b >= 0xe0) {
		v->type = RT_MP_INT;
		v->i = (int64_t)b - 256;
		r->pos = at;
		return 0;
	}
	if (b <= 0x8f) {
		v->type = RT_MP_MAP;
		return count(r, at, b & 0x0f, 2, v);
	}
	if (b <= 0x9f) {
		v->type = RT_MP_ARRAY;
		return count(r, at, b & 0x0f, 1, v);
	}
	if (b <= 0xbf) {
		v->type = RT_MP_STR;
		return take(r, at, b & 0x1f, v);
	}
	switch (b) {
	case 0xc4:
	case 0xc5:
	case 0xc6:
	case 0xd9:
	case 0xda:
	case 0xdb:
		v->type = b >= 0xd9 ? RT_MP_STR : RT_MP_BIN;
		n = 1u << (b >= 0xd9 ? b - 0xd9 : b - 0xc4);
		if ((err = read_len(r, at, n, &len)))
			return err;
		return take(r, at + n, len, v);
	case 0xc7:
	case 0xc8:
	case 0xc9:
		n = 1u << (b - 0xc7);
		if ((err = read_len(r, at, n, &len)))
			return err;
		if (r->len - (at + n) < 1)
			return -ENODATA;
		v->type = RT_MP_EXT;
		v->ext_type = (int8_t)r->buf[at + n];
		return take(r, at + n + 1, len, v);
	case 0xd4:
	case 0xd5:
	case 0xd6:
	case 0xd7:
	case 0xd8:
		if (r->len - at < 1)
			return -ENODATA;
		v->type = RT_MP_EXT;
		v->ext_type = (int8_t)r->buf[at];
		return take(r, at + 1, 1u << (b - 0xd4), v);
	case 0xdc:
	case 0xdd:
	case 0xde:
	case 0xdf:
		n = (b & 1) ? 4 : 2;
		if ((err = read_len(r, at, n, &len)))
			return err;
		v->type = b <= 0xdd ? RT_MP_ARRAY : RT_MP_MAP;
		return count(r, at + n, len, b <= 0xdd ? 1 : 2, v);
	}
	return read_scalar(r, b, at, v);
}

int rt_mp_read(struct rt_mp_reader *r, struct rt_mp_value *v)
{
	size_t pos;
	int err;

	if (!r || !v || r->pos > r->len || r->len > r->size)
		return -EINVAL;
	pos = r->pos;
	err = read_at(r, v);
	if (err)
		r->pos = pos;
	return err;
}

int rt_mp_skip(struct rt_mp_reader *r, unsigned max_depth)
{
	/* elements still to skip at each open level; level 0 is the value itself */
	uint64_t left[RT_MP_DEPTH_MAX + 1];
	unsigned depth = 0;

	if (max_depth > RT_MP_DEPTH_MAX)
		max_depth = RT_MP_DEPTH_MAX;
	left[0] = 1;
	for (;;) {
		struct rt_mp_value v;
		int err;

		while (left[depth] == 0) {
			if (depth == 0)
				return 0;
			depth--;
		}
		if ((err = rt_mp_read(r, &v)))
			return err;
		left[depth]--;
		if (v.type != RT_MP_ARRAY && v.type != RT_MP_MAP)
			continue;
		/* an empty container still counts as a level */
		if (depth == max_depth)
			return -ELOOP;
		left[++depth] = v.type == RT_MP_MAP ? 2ull * v.n : v.n;
	}
}

int rt_mp_read_uint(struct rt_mp_reader *r, uint64_t *out)
{
	size_t pos = r->pos;
	struct rt_mp_value v;
	int err = rt_mp_read(r, &v);

	if (err)
		return err;
	if (v.type != RT_MP_UINT) {
		r->pos = pos;
		return -EPROTO;
	}
	*out = v.u;
	return 0;
}

int rt_mp_read_int(struct rt_mp_reader *r, int64_t *out)
{
	size_t pos = r->pos;
	struct rt_mp_value v;
	int err = rt_mp_read(r, &v);

	if (err)
		return err;
	if (v.type == RT_MP_INT) {
		*out = v.i;
		return 0;
	}
	if (v.type == RT_MP_UINT && v.u <= INT64_MAX) {
		*out = (int64_t)v.u;
		return 0;
	}
	r->pos = pos;
	return -EPROTO;
}

int rt_mp_read_float(struct rt_mp_reader *r, double *out)
{
	size_t pos = r->pos;
	struct rt_mp_value v;
	int err = rt_mp_read(r, &v);

	if (err)
		return err;
	switch (v.type) {
	case RT_MP_FLOAT:
		*out = v.f;
		return 0;
	case RT_MP_UINT:
		*out = (double)v.u;
		return 0;
	case RT_MP_INT:
		*out = (double)v.i;
		return 0;
	default:
		r->pos = pos;
		return -EPROTO;
	}
}

bool rt_mp_next_nil(struct rt_mp_reader *r)
{
	if (r->pos < r->len && r->buf[r->pos] == 0xc0) {
		r->pos++;
		return true;
	}
	return false;
}
