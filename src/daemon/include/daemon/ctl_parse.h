/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The pure parse steps of the control protocol (docs/protocol.md), apart
 * from the socket (control.c) and the daemon's commands (commands.c) so
 * that they can be fuzzed on their own (tests/fuzz/fuzz_ctl.c). A request
 * line comes from any peer allowed to connect: it is untrusted.
 */
#ifndef RT_CTL_PARSE_H
#define RT_CTL_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct rt_ctl_req {
	cJSON *json; /* the request object; the caller cJSON_Delete()s it */
	const char *cmd; /* its "cmd" (owned by json) */
};

/*
 * Parse one request line (NUL-terminated, newline removed). Returns 0 with
 * req filled, or -EINVAL / -EPROTONOSUPPORT with req->json NULL and why[]
 * holding the error the client is answered ("bad request: no \"cmd\"").
 */
int rt_ctl_parse(const char *line, struct rt_ctl_req *req, char *why, size_t why_len);

/*
 * A duration member of a request: absent (0), a number of nanoseconds or
 * a string such as "30s". Returns 0 with *ns set, or -EINVAL.
 */
int rt_ctl_dur_field(const cJSON *req, const char *key, uint64_t *ns);

#endif /* RT_CTL_PARSE_H */
