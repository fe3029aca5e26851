/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * reqtrace marker API: optional exact phase boundaries for engines.
 *
 * Link with -lreqtrace_marker (or load libreqtrace_marker.so with dlopen or
 * the Python module). When the reqtrace daemon traces the process it hands
 * the library a ring in shared memory and each call writes its record there
 * (tens of nanoseconds); otherwise a call costs a few nanoseconds and the
 * daemon may still see it through a uprobe (docs/markers.md). Thread-safe;
 * not async-signal-safe. The symbols and their argument lists are ABI
 * (docs/events.md, "Markers"); they never change meaning, new ones are only
 * added.
 *
 * Strings are copied at call time, up to 63 bytes; the caller may free them
 * when the call returns. A NULL id is ignored; other pointers must be valid.
 */
#ifndef REQTRACE_MARKER_H
#define REQTRACE_MARKER_H

#include <stdint.h>

#include "phase.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_MARKER_ABI_VERSION 2 /* 2: rt_mark_step_begin_tokens */

/* At most this many request ids of one step reach the tracer. */
#define RT_MARK_STEP_MAX 256

/* request_id enters `phase` (on the calling thread). */
void rt_mark_begin(const char *request_id, enum rt_phase phase);

/* request_id leaves `phase`. */
void rt_mark_end(const char *request_id, enum rt_phase phase);

/*
 * An engine step (a prefill or decode iteration of a batch) starts on the
 * calling thread and works for the n listed requests.
 */
void rt_mark_step_begin(uint64_t step_id, uint32_t n, const char *const *request_ids);

/*
 * The same, with the tokens each listed request advances in the step
 * (tokens[i] for request_ids[i]: a prefill chunk's prompt tokens, 1 for a
 * decode): the step's GPU time is then split among its requests by tokens
 * instead of equally (docs/gpu.md, "Attribution"). Since ABI version 2.
 */
void rt_mark_step_begin_tokens(uint64_t step_id, uint32_t n, const char *const *request_ids,
			       const uint32_t *tokens);

/* The step ends. */
void rt_mark_step_end(uint64_t step_id);

/* The engine calls request_id `engine_id` from now on (its own id space). */
void rt_mark_bind(const char *engine_id, const char *request_id);

/* RT_MARKER_ABI_VERSION of the loaded library. */
uint32_t rt_mark_abi_version(void);

#ifdef __cplusplus
}
#endif

#endif /* REQTRACE_MARKER_H */
