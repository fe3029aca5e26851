/* SPDX-License-Identifier: BSD-2-Clause */
/* The CLI side of the control socket (docs/protocol.md). */
#ifndef RT_CLI_CLIENT_H
#define RT_CLI_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "common/jsonw.h"

struct cJSON;
struct rt_span;

/*
 * Start a request line in w (initialised here): {"v":1,"cmd":CMD then the
 * caller adds its fields and closes the object.
 */
void rt_client_request(struct rt_jsonw *w, const char *cmd);

/* Called for each payload line (NUL-terminated, without newline). */
typedef int (*rt_line_fn)(const char *line, size_t len, void *ctx);

/*
 * Send one request line and read the answer: payload lines go to fn, the
 * terminator ends the call. Returns 0, or a CLI exit code after printing a
 * one-line message (no daemon, refused, error from the daemon).
 * end_line, when given, receives the terminator line (size end_len).
 */
int rt_client_call(const char *socket_path, const char *request, rt_line_fn fn, void *ctx,
		   char *end_line, size_t end_len);

/* The number o[k], 0 when absent or not a number (o may be NULL). */
double rt_client_num(const struct cJSON *o, const char *k);

/*
 * Finished spans from the daemon ({"cmd":"spans"}, since_ns 0: all), oldest
 * first, at most RT_CLI_SPANS_MAX. Returns 0 or a CLI exit code (message
 * printed); *spans is malloc'ed (free() it), also when *n is 0.
 */
int rt_client_spans(const char *socket_path, uint64_t since_ns, struct rt_span **spans, size_t *n);

#endif /* RT_CLI_CLIENT_H */
