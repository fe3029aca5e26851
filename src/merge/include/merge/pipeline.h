/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * merge → correlator, the part of the data flow every front end shares
 * (`reqtrace replay`, the daemon). Sources push records; drain() moves what
 * the watermarks allow into the correlator; spans come out through the
 * correlator's on_span callback.
 */
#ifndef RT_PIPELINE_H
#define RT_PIPELINE_H

#include <reqtrace/event.h>

#include "correlate/correlator.h"
#include "merge/merge.h"

struct rt_pipeline_opts {
	struct rt_merge_opts merge;
	struct rt_correlator_opts corr;
};

struct rt_pipeline;

struct rt_pipeline *rt_pipeline__new(const struct rt_pipeline_opts *opts);
void rt_pipeline__free(struct rt_pipeline *p);

/*
 * Queue one record; releases early (counted) when the merge is full. A
 * WATERMARK record drains at once: drains follow the record stream, so a
 * replay reproduces the live run's merge exactly.
 */
int rt_pipeline__push(struct rt_pipeline *p, const struct rt_event_hdr *ev);
/* Release what the watermarks allow, then let the correlator time out idle requests. */
int rt_pipeline__drain(struct rt_pipeline *p);
/* End of input: release everything. Returns requests still in flight. */
__u64 rt_pipeline__flush(struct rt_pipeline *p);

struct rt_merge *rt_pipeline__merge(struct rt_pipeline *p);
struct rt_correlator *rt_pipeline__correlator(struct rt_pipeline *p);

#endif /* RT_PIPELINE_H */
