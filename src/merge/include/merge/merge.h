/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Merge of per-source record streams into one stream in (ts_ns, arrival)
 * order, driven by per-source watermarks (docs/events.md "Merge").
 *
 * Sources. A source's watermark W promises nothing older than W will come
 * from it. rt_merge__add_source() starts a source at W = 0, which holds
 * everything until it reports. A record from an unknown source adds it
 * with W = that record's ts_ns (counted in stats.auto_sources), so it holds
 * nothing older than its first record. A removed source no longer holds.
 * With no source at all, nothing is held.
 *
 * Records. RT_EV_WATERMARK records are not queued: they raise their
 * source's W (a lower one is ignored and counted). Other records are copied
 * into bounded record memory (128 KiB chunks; no allocation per record in
 * steady state) and held in order of (ts_ns, arrival): a calendar of time
 * buckets, a heap for the rest. drain() releases, in that order, every held
 * record older than the minimum W over sources.
 *
 * Horizon. Everything on time older than the horizon has been released:
 * it rises to the minimum W at each drain and to the ts_ns of every record
 * released. A record pushed with ts_ns below the horizon is late: it is
 * counted and released at the next drain or flush, before the others, in
 * arrival order, flagged RT_MERGE_LATE.
 *
 * Bounds. When max_pending records are held, or the record memory
 * (max_bytes, whole chunks) has no room for the record, push() refuses with -ENOBUFS (the caller still owns
 * the record: nothing is dropped), and the next drain() releases the oldest
 * records early, flagged RT_MERGE_FORCED and counted, until the refused
 * record would fit. rt_merge__push_release() does both in one call.
 *
 * Not thread-safe; callbacks must not call back into the same merge.
 */
#ifndef RT_MERGE_H
#define RT_MERGE_H

#include <stddef.h>

#include <reqtrace/event.h>

#define RT_MERGE_MAX_PENDING_DEFAULT 65536
#define RT_MERGE_MAX_BYTES_DEFAULT (64 * 1024 * 1024)
#define RT_MERGE_MAX_SOURCES_DEFAULT 256

/* flags passed to rt_merge_fn */
#define RT_MERGE_LATE 0x1 /* older than what was already released */
#define RT_MERGE_FORCED 0x2 /* released before its time: the merge was full */

/*
 * Receives a released record, valid during the call. A negative return
 * stops the release and is returned by drain/flush; the record counts as
 * released either way.
 */
typedef int (*rt_merge_fn)(const struct rt_event_hdr *ev, unsigned int flags, void *ctx);

struct rt_merge_opts {
	size_t max_pending; /* records held; 0: RT_MERGE_MAX_PENDING_DEFAULT */
	size_t max_bytes; /* record memory; 0: RT_MERGE_MAX_BYTES_DEFAULT; min 1 MiB */
	size_t max_sources; /* 0: RT_MERGE_MAX_SOURCES_DEFAULT */
};

struct rt_merge_stats {
	__u64 pushed; /* records queued (watermarks not included) */
	__u64 watermarks; /* WATERMARK records received, regressions included */
	__u64 released; /* records handed to the callback, late and forced included */
	__u64 late;
	__u64 forced;
	__u64 watermark_regressions; /* WATERMARK records below their source's W, ignored */
	__u64 auto_sources; /* sources added by their first record */
	__u64 refused; /* push() calls refused for space (-ENOBUFS, -ENOSPC) */
	__u64 pending; /* records held now */
	__u64 pending_max;
	__u64 pending_bytes; /* record memory in use, chunk granularity */
	__u64 sources; /* current */
};

struct rt_merge;

/* Returns NULL with errno set on failure. opts may be NULL. */
struct rt_merge *rt_merge__new(const struct rt_merge_opts *opts);

/* NULL is fine. Held records are discarded. */
void rt_merge__free(struct rt_merge *m);

/*
 * Adds a source with watermark 0. Returns 0, -EEXIST, or -ENOSPC when
 * max_sources are registered.
 */
int rt_merge__add_source(struct rt_merge *m, __u32 source_id);

/* The source ended: it no longer holds records back. Returns 0 or -ENOENT. */
int rt_merge__remove_source(struct rt_merge *m, __u32 source_id);

/* A source's watermark. Returns 0 or -ENOENT. */
int rt_merge__source_watermark(const struct rt_merge *m, __u32 source_id, __u64 *wm_ns);

/*
 * Copies ev (ev->size bytes, ev->size in [sizeof(*ev), RT_EVENT_MAX]) into
 * the merge. Returns 0, -EINVAL (bad size), -ENOBUFS (full: drain, then
 * push again), -ENOSPC (an unknown source and max_sources reached) or
 * -ENOMEM.
 */
int rt_merge__push(struct rt_merge *m, const struct rt_event_hdr *ev);

/*
 * push() that never refuses for space: when the merge is full, the oldest
 * records are released early through fn first. Returns 0 or a negative
 * errno (push()'s, or fn's).
 */
int rt_merge__push_release(struct rt_merge *m, const struct rt_event_hdr *ev, rt_merge_fn fn,
			   void *ctx);

/*
 * Releases late records, then, in (ts_ns, arrival) order, every held record
 * older than the minimum watermark, then, after a refused push, the oldest
 * records until the refused one would fit. Returns the number released, or
 * fn's negative return.
 */
int rt_merge__drain(struct rt_merge *m, rt_merge_fn fn, void *ctx);

/* End of input: releases everything held, late records first. Same return. */
int rt_merge__flush(struct rt_merge *m, rt_merge_fn fn, void *ctx);

/* Records older than this have all been released (or will come flagged LATE). */
__u64 rt_merge__horizon(const struct rt_merge *m);

void rt_merge__stats(const struct rt_merge *m, struct rt_merge_stats *st);

/*
 * From a drain's callback: the record k places after the one being
 * released, when the merge already knows it (the same time bucket), else
 * NULL. A look-ahead for prefetching; the order may still change (a record
 * of the heap or a later push can come first), so it is only a hint.
 */
const struct rt_event_hdr *rt_merge__ahead(const struct rt_merge *m, unsigned int k);

#endif /* RT_MERGE_H */
