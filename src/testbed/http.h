/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The testbed's own HTTP/1.1 request-head parser (server side). Deliberately
 * separate from the tracer's parsers in src/correlate: the testbed is the
 * ground truth, and a bug shared by both would hide.
 */
#ifndef TB_HTTP_H
#define TB_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_HTTP_HEAD_MAX 16384 /* bytes of request line + headers */
#define TB_REQUEST_ID_MAX 127 /* longest x-request-id accepted */

struct tb_http_req {
	char method[16];
	char path[256]; /* target without the query string */
	int minor; /* HTTP/1.<minor> */
	bool keep_alive;
	bool has_content_length;
	uint64_t content_length;
	bool has_transfer_encoding;
	bool has_request_id;
	char request_id[TB_REQUEST_ID_MAX + 1];
	size_t head_len; /* bytes up to and including the blank line */
};

/*
 * Parses the request head at the start of buf[0, len).
 * Returns 1 when the head is complete (req filled), 0 when more bytes are
 * needed, -E2BIG when no head end is found within TB_HTTP_HEAD_MAX bytes,
 * -EBADMSG for a malformed head or bad header value.
 */
int tb_http_parse_head(const char *buf, size_t len, struct tb_http_req *req);

#endif /* TB_HTTP_H */
