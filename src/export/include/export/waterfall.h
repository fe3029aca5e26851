/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One span as a text waterfall, the body of `reqtrace show`: a header, a
 * time axis from start_ns to end_ns, one bar per non-null phase, the
 * threads that worked for the request, GPU work and server-reported
 * timings. Pure: writes to a FILE* and reads no environment, so tests can
 * render hand-made spans.
 */
#ifndef RT_WATERFALL_H
#define RT_WATERFALL_H

#include <stdbool.h>
#include <stdio.h>

#include <reqtrace/span.h>

#define RT_WATERFALL_WIDTH_DEFAULT 100
#define RT_WATERFALL_WIDTH_MIN 60
#define RT_WATERFALL_WIDTH_MAX 400

struct rt_waterfall_opts {
	int width; /* columns; 0: default; clamped to [MIN, MAX] */
	bool color; /* ANSI colours; off: plain ASCII, no escape byte at all */
};

/*
 * Render s to f. In plain mode no line is longer than the width (long ids,
 * paths and names are clipped, keeping their end with a leading '~').
 * opts may be NULL (plain, default width). Returns 0, -EINVAL for a NULL
 * argument, or -EIO when writing to f failed.
 */
int rt_waterfall_print(FILE *f, const struct rt_span *s, const struct rt_waterfall_opts *opts);

#endif /* RT_WATERFALL_H */
