/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A bounded open-addressing hash map from u64 keys to pointers, for the
 * correlator's tables (connections, threads, requests). Linear probing with
 * backward-shift deletion: no tombstones, so a long-running daemon never
 * degrades. The bound is a hard limit on entries; rt_hmap_put() past it
 * returns -ENOSPC and the caller counts the drop.
 */
#ifndef RT_HMAP_H
#define RT_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_hmap_slot {
	uint64_t key;
	void *val; /* NULL: empty slot */
};

struct rt_hmap {
	struct rt_hmap_slot *slots;
	size_t cap; /* power of two */
	size_t len;
	size_t max_len;
};

/* max_len: most entries ever held. Returns 0 or -ENOMEM. */
int rt_hmap_init(struct rt_hmap *m, size_t max_len);
void rt_hmap_fini(struct rt_hmap *m);

/* 64-bit mix of two ids, and FNV-1a of a string, for building keys. */
static inline uint64_t rt_hash_u64(uint64_t x)
{
	/* splitmix64 finaliser: keys are small sequential ids, spread them */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}
uint64_t rt_hash_str(const char *s);

/* Inline: the correlator makes several lookups per record, a call each was measurable. */
static inline void *rt_hmap_get(const struct rt_hmap *m, uint64_t key)
{
	size_t mask = m->cap - 1, i = rt_hash_u64(key) & mask;

	while (m->slots[i].val) {
		if (m->slots[i].key == key)
			return m->slots[i].val;
		i = (i + 1) & mask;
	}
	return NULL;
}
/* Insert or replace; val must not be NULL. 0, -ENOSPC (bound) or -ENOMEM. */
int rt_hmap_put(struct rt_hmap *m, uint64_t key, void *val);
/* Remove; returns the old value or NULL. */
void *rt_hmap_del(struct rt_hmap *m, uint64_t key);

/*
 * Iterate: for (i = 0; (i = rt_hmap_next(m, i, &k, &v)) != 0;) ...
 * Returns the position after the entry found, 0 at the end. The map must
 * not change during the walk.
 */
/*
 * Start loading key's first slot: a caller with two lookups to make (a
 * scheduler record's two threads) overlaps their cache misses.
 */
static inline void rt_hmap_prefetch(const struct rt_hmap *m, uint64_t key)
{
	__builtin_prefetch(&m->slots[rt_hash_u64(key) & (m->cap - 1)]);
}

size_t rt_hmap_next(const struct rt_hmap *m, size_t pos, uint64_t *key, void **val);
/*
 * The slot of key, m->cap when absent: entries in rising slot order are
 * the order rt_hmap_next() walks them in.
 */
size_t rt_hmap_pos(const struct rt_hmap *m, uint64_t key);

/*
 * Remove every entry whose value match() accepts, handing each removed
 * value to gone() (which may free it). Returns how many went. The walk
 * collects a batch of keys, then deletes them, and repeats: the map never
 * changes under rt_hmap_next().
 */
size_t rt_hmap_del_if(struct rt_hmap *m, bool (*match)(const void *val, void *ctx),
		      void (*gone)(void *val, void *ctx), void *ctx);

#endif /* RT_HMAP_H */
