/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The testbed calls the marker library (libreqtrace_marker.so, linked
 * dynamically like an engine would) only with --markers, so a run without
 * it shows a tracer nothing but what a zero-code engine shows.
 */
#ifndef TB_MARKERS_H
#define TB_MARKERS_H

#include <stdbool.h>
#include <stdint.h>

#include <reqtrace/marker.h>

extern bool tb_markers_on;

static inline void tb_mark_begin(const char *id, enum rt_phase phase)
{
	if (tb_markers_on)
		rt_mark_begin(id, phase);
}

static inline void tb_mark_end(const char *id, enum rt_phase phase)
{
	if (tb_markers_on)
		rt_mark_end(id, phase);
}

static inline void tb_mark_step_begin(uint64_t step_id, uint32_t n, const char *const *ids)
{
	if (tb_markers_on)
		rt_mark_step_begin(step_id, n, ids);
}

static inline void tb_mark_step_end(uint64_t step_id)
{
	if (tb_markers_on)
		rt_mark_step_end(step_id);
}

#endif /* TB_MARKERS_H */
