// SPDX-License-Identifier: BSD-2-Clause
#include "store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"

struct rt_store {
	struct rt_span *ring;
	uint32_t cap, head, len; /* head: index of the oldest */
	struct rt_hmap index; /* key(span) → slot + 1 */
	struct rt_store_stats st;
};

/* A span's identity: its request id and start instant (ids can repeat). */
static uint64_t key_of(const struct rt_span *s)
{
	uint64_t k = rt_hash_str(s->request_id) ^ rt_hash_u64(s->start_ns);

	return k ? k : 1;
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
	if (!st)
		return;
	rt_hmap_fini(&st->index);
	free(st->ring);
	free(st);
}

int rt_store__add(struct rt_store *st, const struct rt_span *s)
{
	uint64_t key = key_of(s);
	uintptr_t slot = (uintptr_t)rt_hmap_get(&st->index, key);
	uint32_t i;

	if (slot) {
		st->ring[slot - 1] = *s;
		st->st.amended++;
		return 0;
	}
	if (st->len == st->cap) {
		struct rt_span *old = &st->ring[st->head];

		if ((uintptr_t)rt_hmap_get(&st->index, key_of(old)) == st->head + 1u)
			rt_hmap_del(&st->index, key_of(old));
		st->head = (st->head + 1) % st->cap;
		st->len--;
		st->st.evicted++;
	}
	i = (st->head + st->len) % st->cap;
	st->ring[i] = *s;
	st->len++;
	st->st.added++;
	/* a failed index insert only costs the ability to amend in place */
	rt_hmap_put(&st->index, key, (void *)(uintptr_t)(i + 1));
	return 0;
}

void rt_store__foreach(const struct rt_store *st, rt_store_fn fn, void *ctx)
{
	uint32_t n;

	for (n = 0; n < st->len; n++)
		if (fn(&st->ring[(st->head + n) % st->cap], ctx))
			return;
}

const struct rt_span *rt_store__find(const struct rt_store *st, const char *request_id)
{
	uint32_t n;

	for (n = st->len; n > 0; n--) {
		const struct rt_span *s = &st->ring[(st->head + n - 1) % st->cap];

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
	struct rt_span *ring;
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
	skip = st->len > max_spans ? st->len - max_spans : 0;
	for (n = 0; n + skip < st->len; n++) {
		ring[n] = st->ring[(st->head + skip + n) % st->cap];
		rt_hmap_put(&index, key_of(&ring[n]), (void *)(uintptr_t)(n + 1));
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
