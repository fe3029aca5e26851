// SPDX-License-Identifier: BSD-2-Clause
#include "store/store.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"

/*
 * A span is kept packed: a bitmap of its non-zero 8-byte words, then those
 * words. A span is mostly zero padding (strings, arrays past their counts),
 * so 10000 of them take a fifth of their struct size; the packing is
 * lossless whatever the struct holds, so fields added to it need nothing
 * here.
 */
#define WORDS (sizeof(struct rt_span) / sizeof(uint64_t))
#define MAP_BYTES ((WORDS + 7) / 8)
_Static_assert(sizeof(struct rt_span) % sizeof(uint64_t) == 0, "rt_span is not word-sized");

struct rt_slot {
	uint8_t *packed; /* NULL: empty */
	uint64_t id_hash; /* rt_hash_str(request_id): find compares it first */
	uint64_t start_ns;
	uint32_t bytes;
};

struct rt_store {
	struct rt_slot *ring;
	uint32_t cap, head, len; /* head: index of the oldest */
	struct rt_hmap index; /* key(span) → slot + 1 */
	struct rt_store_stats st;
	struct rt_span out; /* the span handed to readers, unpacked */
};

/* A span's identity: its request id and start instant (ids can repeat). */
static uint64_t key_of(uint64_t id_hash, uint64_t start_ns)
{
	uint64_t k = id_hash ^ rt_hash_u64(start_ns);

	return k ? k : 1;
}

static uint8_t *pack(const struct rt_span *s, uint32_t *bytes)
{
	uint64_t tmp[MAP_BYTES / 8 + 1 + WORDS]; /* the bitmap, then the words */
	uint8_t *map = (uint8_t *)tmp, *p;
	uint64_t *out = tmp + MAP_BYTES / 8 + 1, w;
	const unsigned char *src = (const unsigned char *)s;
	uint32_t i, n = 0;

	memset(map, 0, MAP_BYTES);
	for (i = 0; i < WORDS; i++) {
		memcpy(&w, src + i * 8, 8);
		if (w) {
			map[i / 8] |= (uint8_t)(1u << (i % 8));
			out[n++] = w;
		}
	}
	*bytes = (uint32_t)(MAP_BYTES + (size_t)n * 8);
	p = malloc(*bytes);
	if (!p)
		return NULL;
	memcpy(p, map, MAP_BYTES);
	memcpy(p + MAP_BYTES, out, (size_t)n * 8);
	return p;
}

static const struct rt_span *unpack(struct rt_store *st, const struct rt_slot *sl)
{
	unsigned char *dst = (unsigned char *)&st->out;
	const uint8_t *map = sl->packed, *q = sl->packed + MAP_BYTES;
	uint64_t zero = 0;
	uint32_t i;

	for (i = 0; i < WORDS; i++) {
		bool set = map[i / 8] & (1u << (i % 8));

		memcpy(dst + i * 8, set ? q : (const uint8_t *)&zero, 8);
		q += set ? 8 : 0;
	}
	return &st->out;
}

struct rt_store *rt_store__new(const struct rt_store_opts *opts)
{
	struct rt_store *st = calloc(1, sizeof(*st));

	if (!st)
		goto nomem;
	st->cap = opts && opts->max_spans ? opts->max_spans : 10000;
	st->ring = calloc(st->cap, sizeof(*st->ring));
	if (!st->ring || rt_hmap_init(&st->index, st->cap))
		goto nomem;
	return st;
nomem:
	rt_store__free(st);
	errno = ENOMEM;
	return NULL;
}

void rt_store__free(struct rt_store *st)
{
	uint32_t i;

	if (!st)
		return;
	rt_hmap_fini(&st->index);
	if (st->ring)
		for (i = 0; i < st->cap; i++)
			free(st->ring[i].packed);
	free(st->ring);
	free(st);
}

static void slot_set(struct rt_store *st, struct rt_slot *sl, const struct rt_span *s,
		     uint8_t *packed, uint32_t bytes, uint64_t id_hash)
{
	if (sl->packed)
		st->st.bytes -= sl->bytes;
	st->st.bytes += bytes;
	free(sl->packed);
	sl->packed = packed;
	sl->bytes = bytes;
	sl->id_hash = id_hash;
	sl->start_ns = s->start_ns;
}

int rt_store__add(struct rt_store *st, const struct rt_span *s)
{
	uint64_t id_hash = rt_hash_str(s->request_id);
	uint64_t key = key_of(id_hash, s->start_ns);
	uintptr_t slot = (uintptr_t)rt_hmap_get(&st->index, key);
	uint32_t i, bytes;
	uint8_t *packed = pack(s, &bytes);

	if (!packed) {
		st->st.failed++;
		return -ENOMEM;
	}
	if (slot) {
		slot_set(st, &st->ring[slot - 1], s, packed, bytes, id_hash);
		st->st.amended++;
		return 0;
	}
	if (st->len == st->cap) {
		struct rt_slot *old = &st->ring[st->head];
		uint64_t okey = key_of(old->id_hash, old->start_ns);

		if ((uintptr_t)rt_hmap_get(&st->index, okey) == st->head + 1u)
			rt_hmap_del(&st->index, okey);
		st->head = (st->head + 1) % st->cap;
		st->len--;
		st->st.evicted++;
	}
	i = (st->head + st->len) % st->cap;
	slot_set(st, &st->ring[i], s, packed, bytes, id_hash);
	st->len++;
	st->st.added++;
	/* a failed index insert only costs the ability to amend in place */
	rt_hmap_put(&st->index, key, (void *)(uintptr_t)(i + 1));
	return 0;
}

void rt_store__foreach(struct rt_store *st, rt_store_fn fn, void *ctx)
{
	uint32_t n;

	for (n = 0; n < st->len; n++)
		if (fn(unpack(st, &st->ring[(st->head + n) % st->cap]), ctx))
			return;
}

const struct rt_span *rt_store__at(struct rt_store *st, uint32_t n)
{
	if (n >= st->len)
		return NULL;
	return unpack(st, &st->ring[(st->head + n) % st->cap]);
}

const struct rt_span *rt_store__find(struct rt_store *st, const char *request_id)
{
	uint64_t h = rt_hash_str(request_id);
	const struct rt_span *s;
	uint32_t n;

	for (n = st->len; n > 0; n--) {
		const struct rt_slot *sl = &st->ring[(st->head + n - 1) % st->cap];

		if (sl->id_hash != h)
			continue;
		s = unpack(st, sl);
		if (!strcmp(s->request_id, request_id))
			return s;
	}
	return NULL;
}

void rt_store__stats(const struct rt_store *st, struct rt_store_stats *out)
{
	*out = st->st;
	out->size = st->len;
	out->capacity = st->cap;
}

int rt_store__set_max(struct rt_store *st, uint32_t max_spans)
{
	struct rt_slot *ring;
	struct rt_hmap index;
	uint32_t skip, n;

	if (!max_spans)
		return -EINVAL;
	if (max_spans == st->cap)
		return 0;
	ring = calloc(max_spans, sizeof(*ring));
	if (!ring || rt_hmap_init(&index, max_spans)) {
		free(ring);
		return -ENOMEM;
	}
	/* the oldest that no longer fit go; the slots move, packed as they are */
	skip = st->len > max_spans ? st->len - max_spans : 0;
	for (n = 0; n < skip; n++) {
		struct rt_slot *sl = &st->ring[(st->head + n) % st->cap];

		st->st.bytes -= sl->bytes;
		free(sl->packed);
	}
	for (n = 0; n + skip < st->len; n++) {
		ring[n] = st->ring[(st->head + skip + n) % st->cap];
		rt_hmap_put(&index, key_of(ring[n].id_hash, ring[n].start_ns),
			    (void *)(uintptr_t)(n + 1));
	}
	rt_hmap_fini(&st->index);
	free(st->ring);
	st->index = index;
	st->ring = ring;
	st->cap = max_spans;
	st->head = 0;
	st->len = n;
	st->st.evicted += skip;
	return 0;
}
