/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Incremental HTTP/1.1 parsers for one connection: requests in one
 * direction, responses (with Server-Sent Events) in the other.
 *
 * The bytes come from syscall probes: a read or write may hold part of a
 * message, several messages, or only its head and tail (the middle was not
 * captured: rt_http_*_gap()). The parsers call back in byte order while
 * they consume a feed, so the caller knows which syscall (and so which
 * timestamp) carried each boundary.
 *
 * Everything here is untrusted input: every length is bounded, nothing is
 * kept beyond the whitelisted fields below (no Authorization, cookies,
 * prompt or completion text), and malformed input ends in on_error, never
 * in a crash.
 */
#ifndef RT_HTTP_H
#define RT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_HTTP_METHOD_MAX 16
#define RT_HTTP_PATH_MAX 256
#define RT_HTTP_ID_MAX 128
#define RT_HTTP_HDR_VALUE_MAX 128
#define RT_HTTP_HEAD_MAX 16384 /* request/status line + headers */
#define RT_HTTP_SSE_EVENT_MAX 16384 /* one SSE event's data kept for JSON parsing */
#define RT_HTTP_BODY_JSON_MAX 65536 /* a non-streamed JSON body kept for usage/timings */
#define RT_HTTP_REPORTED_MAX 12
/* the response's own id ("chatcmpl-..."), printable ASCII; longer ones are not kept */
#define RT_HTTP_RESPONSE_ID_MAX 64
#define RT_HTTP_REPORTED_NAME_MAX 40

/* Why a connection is unreadable or a message malformed. */
enum rt_http_error {
	RT_HTTP_ERR_NONE = 0,
	RT_HTTP_ERR_TLS = 1, /* TLS record header (0x16 0x03 ...) */
	RT_HTTP_ERR_HTTP2 = 2, /* "PRI * HTTP/2.0" preface (HTTP/2, gRPC) */
	RT_HTTP_ERR_MALFORMED = 3, /* not HTTP/1.x */
	RT_HTTP_ERR_TOO_LARGE = 4, /* head beyond RT_HTTP_HEAD_MAX */
	RT_HTTP_ERR_GAP = 5, /* uncaptured bytes where framing was needed */
};

const char *rt_http_error_name(enum rt_http_error e);

/* A numeric timing or count the server reported (usage, timings, headers). */
struct rt_http_reported {
	char name[RT_HTTP_REPORTED_NAME_MAX]; /* "usage.completion_tokens", "timings.prompt_ms" */
	double value;
};

struct rt_http_req_info {
	char method[RT_HTTP_METHOD_MAX];
	char path[RT_HTTP_PATH_MAX]; /* as sent, query string included, truncated */
	char request_id[RT_HTTP_ID_MAX]; /* x-request-id, "" when absent */
	char trace_id[33]; /* from a valid W3C traceparent, else "" */
	char parent_span_id[17];
	char content_type[RT_HTTP_HDR_VALUE_MAX];
	char user_agent[RT_HTTP_HDR_VALUE_MAX];
	uint64_t content_length; /* 0 when absent */
	bool chunked;
	bool keep_alive; /* HTTP/1.1 default unless "Connection: close" */
	bool expect_continue;
	bool incomplete; /* part of the head or body was not captured */
	bool guessed; /* ... and where the message ends had to be guessed */
};

struct rt_http_req_cb {
	/* The first byte of a new request was consumed in this feed. */
	void (*on_begin)(void *ctx);
	/* Request line and headers parsed. */
	void (*on_headers)(void *ctx, const struct rt_http_req_info *info);
	/* Headers and body fully consumed. */
	void (*on_complete)(void *ctx, const struct rt_http_req_info *info);
	/* Unparseable; the parser ignores the rest of the stream. */
	void (*on_error)(void *ctx, enum rt_http_error err);
};

/* Opaque; a few hundred bytes while idle, buffers grown on demand up to the
 * bounds above and released when a message ends. */
struct rt_http_req_parser;

/* NULL with errno set on failure. */
struct rt_http_req_parser *rt_http_req__new(void);
void rt_http_req__free(struct rt_http_req_parser *p);
/* Consume len bytes; returns 0, or -EPROTO once the stream is unparseable. */
int rt_http_req_feed(struct rt_http_req_parser *p, const uint8_t *buf, size_t len,
		     const struct rt_http_req_cb *cb, void *ctx);
/* n bytes passed without being captured. */
int rt_http_req_gap(struct rt_http_req_parser *p, uint64_t n, const struct rt_http_req_cb *cb,
		    void *ctx);
/*
 * Gaps, both directions: a gap inside a body of known length or a chunk of
 * known size is counted down (the message ends where it should, with
 * incomplete set). A gap inside the head, or one that loses chunk framing,
 * makes the parser guess: the message ends at the end of the feed that
 * follows the gap (the tail of the same syscall: feed it even when it is
 * empty), or for a chunked body at the next "\r\n0\r\n\r\n". After a
 * guessed end the parser skips feeds until one starts like a message
 * (a method and a space, or "HTTP/1."); a message wholly inside a gap is
 * not reported. RT_HTTP_ERR_GAP is never raised.
 */
/* The stream was joined mid-way (connection older than the trace): skip
 * feeds until one starts like a request. A message in progress completes
 * with incomplete set. */
void rt_http_req_resync(struct rt_http_req_parser *p, const struct rt_http_req_cb *cb, void *ctx);

/* ---- responses ------------------------------------------------------------ */

struct rt_http_resp_info {
	int status;
	bool chunked;
	bool sse; /* Content-Type: text/event-stream */
	bool json; /* Content-Type: application/json */
	bool close_delimited; /* no length, no chunking: ends when the connection closes */
	bool no_body; /* 1xx, 204, 304, or answer to HEAD */
	uint64_t content_length;
	uint32_t n_reported; /* from headers such as Server-Timing */
	struct rt_http_reported reported[RT_HTTP_REPORTED_MAX];
};

enum rt_sse_kind {
	RT_SSE_CONTENT = 1, /* non-empty generated text: a content-bearing event */
	RT_SSE_EMPTY = 2, /* role-only, empty text, keep-alive comments */
	RT_SSE_USAGE = 3, /* usage/timings only, no text */
	RT_SSE_DONE = 4, /* data: [DONE] */
	RT_SSE_OTHER = 5, /* not JSON, or JSON without choices/content */
};

struct rt_sse_event {
	enum rt_sse_kind kind;
	bool incomplete; /* part of the event was not captured: kind is a best guess */
	int64_t tokens_out; /* usage.completion_tokens or timings.predicted_n, else -1 */
	char response_id[RT_HTTP_RESPONSE_ID_MAX]; /* the event's top-level "id"; "" none */
	int32_t id_slot; /* llama-server's top-level "id_slot", -1 none */
	uint32_t n_reported;
	struct rt_http_reported reported[RT_HTTP_REPORTED_MAX]; /* past n_reported: unspecified */
};

struct rt_http_resp_done {
	int64_t tokens_out; /* from a JSON body's usage, else -1 */
	char response_id[RT_HTTP_RESPONSE_ID_MAX]; /* a JSON body's top-level "id"; "" none */
	int32_t id_slot; /* a JSON body's top-level "id_slot" (llama-server), -1 none */
	uint32_t n_reported;
	struct rt_http_reported reported[RT_HTTP_REPORTED_MAX];
	bool incomplete; /* bytes of the response were not captured */
	bool guessed; /* ... and where it ends had to be guessed */
};

/*
 * Interim 1xx responses (100 Continue, 103 Early Hints) are skipped without
 * any callback: on_begin .. on_complete bracket the final response only,
 * and on_begin comes once its status code has been read. Any callback may
 * be NULL (also in struct rt_http_req_cb).
 */
struct rt_http_resp_cb {
	void (*on_begin)(void *ctx);
	void (*on_headers)(void *ctx, const struct rt_http_resp_info *info);
	/* One complete SSE event (ended by a blank line) was consumed. */
	void (*on_sse_event)(void *ctx, const struct rt_sse_event *ev);
	void (*on_complete)(void *ctx, const struct rt_http_resp_done *done);
	void (*on_error)(void *ctx, enum rt_http_error err);
};

struct rt_http_resp_parser;

struct rt_http_resp_parser *rt_http_resp__new(void);
void rt_http_resp__free(struct rt_http_resp_parser *p);
/* The next response answers a HEAD request (no body whatever the headers say).
 * Latched (and cleared) when a response's status line is read: call it
 * before feeding that response. */
void rt_http_resp_expect_head(struct rt_http_resp_parser *p, bool head);
int rt_http_resp_feed(struct rt_http_resp_parser *p, const uint8_t *buf, size_t len,
		      const struct rt_http_resp_cb *cb, void *ctx);
int rt_http_resp_gap(struct rt_http_resp_parser *p, uint64_t n, const struct rt_http_resp_cb *cb,
		     void *ctx);
/* The connection closed: completes a close-delimited response; a response
 * cut short completes with done->incomplete set. */
void rt_http_resp_eof(struct rt_http_resp_parser *p, const struct rt_http_resp_cb *cb, void *ctx);
/* As rt_http_req_resync: skip feeds until one starts with "HTTP/1.". */
void rt_http_resp_resync(struct rt_http_resp_parser *p, const struct rt_http_resp_cb *cb,
			 void *ctx);

/*
 * Classify one SSE event's data (the concatenated data: lines) per the span
 * contract's TTFT rule. Exposed for tests and for the response parser.
 */
void rt_sse_classify(const char *data, size_t len, bool incomplete, struct rt_sse_event *out);

/* ---- taps ------------------------------------------------------------------ */

/*
 * Taps: what the engine made of each byte it consumed, in byte order, as
 * runs of one class (p points into the buffer being fed). A byte never
 * reported was ignored (an unparseable stream). Bodies are reported with
 * the kind the response headers imply. Set through struct rt_stream_opts
 * (stream.h): the recording redactor keeps exactly what the engine read.
 */
enum rt_http_tap {
	RT_HTTP_TAP_KEEP =
		1, /* framing the parsers read: start line, names, wanted values, chunk sizes */
	RT_HTTP_TAP_MASK =
		2, /* read, unused: other header values, chunk extensions, trailers, skipped */
	RT_HTTP_TAP_BODY = 3, /* a body the parser does not look at (request bodies, other types) */
	RT_HTTP_TAP_BODY_SSE = 4, /* a text/event-stream body */
	RT_HTTP_TAP_BODY_JSON = 5, /* a JSON body */
	RT_HTTP_TAP_BODY_START = 6, /* n = 0: a body of the current kind starts here */
	RT_HTTP_TAP_LAST = 0x10, /* flag on a body run: it ends a body of known length */
};

typedef void (*rt_http_tap_fn)(void *ctx, const uint8_t *p, size_t n, unsigned int cls);

#endif /* RT_HTTP_H */
