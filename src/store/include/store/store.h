/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Finished spans: a bounded ring, newest last. An amended span (revision
 * + 1) replaces its earlier revision in place. When the ring is full the
 * oldest span is evicted and counted.
 *
 * Spans are kept packed (a few hundred bytes each instead of sizeof(struct
 * rt_span)); a span handed out (foreach, at, find) is unpacked into one
 * buffer of the store: it stays valid until the next call on the store.
 */
#ifndef RT_STORE_H
#define RT_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <reqtrace/span.h>

struct rt_store_opts {
	uint32_t max_spans; /* 0: 10000 */
};

struct rt_store_stats {
	uint64_t added;
	uint64_t amended;
	uint64_t evicted;
	uint64_t failed; /* not stored: no memory */
	uint64_t bytes; /* packed spans held */
	uint32_t size;
	uint32_t capacity;
};

struct rt_store;

struct rt_store *rt_store__new(const struct rt_store_opts *opts);
void rt_store__free(struct rt_store *st);

/* Copy s in, replacing an earlier revision of the same request; -ENOMEM: not kept. */
int rt_store__add(struct rt_store *st, const struct rt_span *s);

/* Visit spans oldest first; stop early when fn returns non-zero. */
typedef int (*rt_store_fn)(const struct rt_span *s, void *ctx);
void rt_store__foreach(struct rt_store *st, rt_store_fn fn, void *ctx);

/* The n-th span, oldest first (n as foreach counts), or NULL past the end. */
const struct rt_span *rt_store__at(struct rt_store *st, uint32_t n);

/* The newest span with this request id, or NULL. */
const struct rt_span *rt_store__find(struct rt_store *st, const char *request_id);

void rt_store__stats(const struct rt_store *st, struct rt_store_stats *out);

/*
 * A new bound (SIGHUP): the spans move to a ring of max_spans, oldest
 * first; shrinking evicts the oldest (counted). 0 or -ENOMEM (the store
 * is unchanged then), -EINVAL for 0.
 */
int rt_store__set_max(struct rt_store *st, uint32_t max_spans);

#endif /* RT_STORE_H */
