// SPDX-License-Identifier: BSD-2-Clause
#include "common/hmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CAP 16

uint64_t rt_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

int rt_hmap_init(struct rt_hmap *m, size_t max_len)
{
	memset(m, 0, sizeof(*m));
	m->max_len = max_len ? max_len : 1;
	m->cap = MIN_CAP;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	return m->slots ? 0 : -ENOMEM;
}

void rt_hmap_fini(struct rt_hmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static size_t slot_of(const struct rt_hmap *m, uint64_t key)
{
	return rt_hash_u64(key) & (m->cap - 1);
}

size_t rt_hmap_pos(const struct rt_hmap *m, uint64_t key)
{
	size_t i = slot_of(m, key);

	while (m->slots[i].val) {
		if (m->slots[i].key == key)
			return i;
		i = (i + 1) & (m->cap - 1);
	}
	return m->cap;
}

static int grow(struct rt_hmap *m)
{
	struct rt_hmap_slot *old = m->slots;
	size_t old_cap = m->cap, i;

	m->slots = calloc(old_cap * 2, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = old_cap * 2;
	for (i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].val)
			continue;
		j = slot_of(m, old[i].key);
		while (m->slots[j].val)
			j = (j + 1) & (m->cap - 1);
		m->slots[j] = old[i];
	}
	free(old);
	return 0;
}

int rt_hmap_put(struct rt_hmap *m, uint64_t key, void *val)
{
	size_t i;

	if (!val)
		return -EINVAL;
	i = slot_of(m, key);
	while (m->slots[i].val) {
		if (m->slots[i].key == key) {
			m->slots[i].val = val;
			return 0;
		}
		i = (i + 1) & (m->cap - 1);
	}
	if (m->len >= m->max_len)
		return -ENOSPC;
	/* keep the load factor under 1/2 so probes stay short */
	if ((m->len + 1) * 2 > m->cap) {
		int err = grow(m);

		if (err)
			return err;
		i = slot_of(m, key);
		while (m->slots[i].val)
			i = (i + 1) & (m->cap - 1);
	}
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->len++;
	return 0;
}

void *rt_hmap_del(struct rt_hmap *m, uint64_t key)
{
	size_t i = slot_of(m, key), j;
	void *old;

	while (m->slots[i].val && m->slots[i].key != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->slots[i].val)
		return NULL;
	old = m->slots[i].val;
	m->slots[i].val = NULL;
	m->len--;
	/* backward-shift: move later members of the probe run into the hole */
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & (m->cap - 1);
		if (!m->slots[j].val)
			break;
		home = slot_of(m, m->slots[j].key);
		/* the entry at j may fill hole i unless its home lies in (i, j] */
		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->slots[i] = m->slots[j];
			m->slots[j].val = NULL;
			i = j;
		}
	}
	return old;
}

size_t rt_hmap_next(const struct rt_hmap *m, size_t pos, uint64_t *key, void **val)
{
	for (; pos < m->cap; pos++) {
		if (m->slots[pos].val) {
			if (key)
				*key = m->slots[pos].key;
			if (val)
				*val = m->slots[pos].val;
			return pos + 1;
		}
	}
	return 0;
}

size_t rt_hmap_del_if(struct rt_hmap *m, bool (*match)(const void *val, void *ctx),
		      void (*gone)(void *val, void *ctx), void *ctx)
{
	uint64_t keys[64], key;
	size_t pos, n, i, total = 0;
	void *val;

	do {
		n = 0;
		pos = 0;
		while (n < 64 && (pos = rt_hmap_next(m, pos, &key, &val)) != 0)
			if (match(val, ctx))
				keys[n++] = key;
		for (i = 0; i < n; i++) {
			val = rt_hmap_del(m, keys[i]);
			if (val && gone)
				gone(val, ctx);
		}
		total += n;
	} while (n == 64);
	return total;
}
