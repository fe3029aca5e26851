// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU attribution: a placeholder until the GPU stage lands. Records of the
 * GPU kinds are accepted and ignored; spans say gpu: null (nothing is
 * guessed).
 */
#include "correlate/internal.h"

void rt_gpu_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	(void)c;
	(void)ev;
}

void rt_gpu_finish(struct rt_correlator *c, struct rt_req *r)
{
	(void)c;
	(void)r;
}

void rt_gpu_release(struct rt_req *r)
{
	(void)r;
}
