/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The span record as JSON (docs/spans.md): one object per line, the format
 * of `replay --json`, `spans --json`, the JSONL export and the control
 * socket.
 */
#ifndef RT_SPAN_JSON_H
#define RT_SPAN_JSON_H

#include <reqtrace/span.h>

#include "common/jsonw.h"

/* Append one span object (no newline) to w. */
void rt_span_to_json(struct rt_jsonw *w, const struct rt_span *s);

/*
 * Parse one span object back (the CLI formats what the daemon sends).
 * Instants are parsed exactly from their digits. Returns 0 or -EINVAL.
 */
int rt_span_from_json(const char *text, struct rt_span *s);

#endif /* RT_SPAN_JSON_H */
