// SPDX-License-Identifier: BSD-2-Clause
#include "merge/pipeline.h"

#include <errno.h>
#include <stdlib.h>

struct rt_pipeline {
	struct rt_merge *merge;
	struct rt_correlator *corr;
};

/*
 * With thousands of requests in flight each record's state (its threads,
 * process, connection) is a cache miss. The merge knows the next records:
 * their hash slots start loading four ahead and the entries two ahead, so
 * that the handler finds them in cache.
 */
#define AHEAD_SLOTS 4
#define AHEAD_ENTRIES 2

static int to_correlator(const struct rt_event_hdr *ev, unsigned int flags, void *ctx)
{
	struct rt_pipeline *p = ctx;
	const struct rt_event_hdr *next;

	if (!(flags & RT_MERGE_LATE)) {
		next = rt_merge__ahead(p->merge, AHEAD_SLOTS);
		if (next)
			rt_correlator__prefetch(p->corr, next, false);
		next = rt_merge__ahead(p->merge, AHEAD_ENTRIES);
		if (next)
			rt_correlator__prefetch(p->corr, next, true);
	}
	rt_correlator__event(p->corr, ev, flags & RT_MERGE_LATE);
	return 0;
}

struct rt_pipeline *rt_pipeline__new(const struct rt_pipeline_opts *opts)
{
	struct rt_pipeline *p = calloc(1, sizeof(*p));
	int err;

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->merge = rt_merge__new(opts ? &opts->merge : NULL);
	if (!p->merge)
		goto cleanup;
	p->corr = rt_correlator__new(opts ? &opts->corr : NULL);
	if (!p->corr)
		goto cleanup;
	return p;
cleanup:
	err = errno;
	rt_pipeline__free(p);
	errno = err;
	return NULL;
}

void rt_pipeline__free(struct rt_pipeline *p)
{
	if (!p)
		return;
	rt_merge__free(p->merge);
	rt_correlator__free(p->corr);
	free(p);
}

int rt_pipeline__push(struct rt_pipeline *p, const struct rt_event_hdr *ev)
{
	int err = rt_merge__push_release(p->merge, ev, to_correlator, p);

	/*
	 * Release exactly when a watermark moves. Tying drains to the record
	 * stream, not to timers, makes a recording replay into the very same
	 * merge decisions (late or not) as the live run that wrote it.
	 */
	if (err >= 0 && ev->kind == RT_EV_WATERMARK)
		rt_pipeline__drain(p);
	return err;
}

int rt_pipeline__drain(struct rt_pipeline *p)
{
	int n = rt_merge__drain(p->merge, to_correlator, p);

	rt_correlator__advance(p->corr, rt_merge__horizon(p->merge));
	return n;
}

__u64 rt_pipeline__flush(struct rt_pipeline *p)
{
	rt_merge__flush(p->merge, to_correlator, p);
	return rt_correlator__finish(p->corr);
}

struct rt_merge *rt_pipeline__merge(struct rt_pipeline *p)
{
	return p->merge;
}

struct rt_correlator *rt_pipeline__correlator(struct rt_pipeline *p)
{
	return p->corr;
}
