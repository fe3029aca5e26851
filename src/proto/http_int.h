/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals shared by the HTTP/1.x request and response parsers (http.h):
 *
 *   http_msg.c    one message framing engine for both directions: start
 *                 line, header lines, body framing (length, chunked, close),
 *                 gaps and resynchronisation; calls back through ops.
 *   http_chunk.c  its chunked transfer coding (http_msg_int.h: the engine's
 *                 states, shared by the two).
 *   http_util.c   bounded head+tail byte keeper, small string helpers.
 *   http_json.c   usage/timings/content facts from a JSON text (json_walk.c's
 *                 one walk, or a bounded scan when only a head and a tail
 *                 were kept).
 *   json_walk.c   a whole JSON text's facts without a tree.
 *   sse.c         Server-Sent Events line decoder and rt_sse_classify().
 *   http_req.c, http_resp.c   the public parsers.
 *
 *   stream.c      the driver both the correlator and the recording
 *                 redactor feed syscalls through (stream.h).
 *
 * Not for other modules: they use http.h and stream.h. The redactor reaches
 * the engine's tap (http.h, "Taps") through the stream driver.
 */
#ifndef RT_HTTP_INT_H
#define RT_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/http.h"

#define RT_HTTP_NAME_KEEP 32 /* header name bytes kept (lowercased) */
#define RT_HTTP_VALUE_KEEP 512 /* bytes kept of a whitelisted header value */
#define RT_HTTP_HEADERS_MAX 128 /* header lines per head */
#define RT_HTTP_CHUNK_EXT_MAX 1024
#define RT_HTTP_JSON_DEPTH_MAX 32 /* deeper JSON is not handed to cJSON */

/* ---- bounded keeper: the first max/2 and the last max/2 bytes ----------- */

struct rt_keepbuf {
	char *buf;
	uint32_t cap; /* allocated, grown on demand up to max */
	uint32_t max; /* bound */
	uint32_t len; /* bytes held, <= max */
	uint32_t ring; /* next write in the tail ring once wrapped */
	bool wrapped; /* more than max bytes offered: head and tail only */
	bool dropped; /* bytes lost to a gap or a failed allocation */
	uint64_t total; /* bytes offered */
};

void rt_keepbuf_init(struct rt_keepbuf *kb, uint32_t max);
void rt_keepbuf_append(struct rt_keepbuf *kb, const void *p, size_t n);
/* Bytes went by uncaptured: the kept text is no longer contiguous. */
void rt_keepbuf_gap(struct rt_keepbuf *kb);
/* The kept bytes in stream order (head then tail); *len set. May be NULL when empty. */
const char *rt_keepbuf_data(struct rt_keepbuf *kb, size_t *len);
/* True when what is kept is not the whole, contiguous text. */
bool rt_keepbuf_partial(const struct rt_keepbuf *kb);
/* Forget the content, keep the allocation. */
void rt_keepbuf_reset(struct rt_keepbuf *kb);
/* Wipe and free (it may have held prompt or completion text). */
void rt_keepbuf_release(struct rt_keepbuf *kb);

/* ---- small helpers ----------------------------------------------------- */

/* RFC 9110 tchar. */
extern const uint8_t rt_http_tchar[256];

static inline bool rt_http_is_tchar(uint8_t c)
{
	return rt_http_tchar[c];
}
/* Case-insensitive equality of s[0..n) and the NUL-terminated lowercase lit. */
bool rt_http_ieq(const char *s, size_t n, const char *lit);
/* Decimal digits only, no sign, no overflow; 0 or -EINVAL / -ERANGE. */
int rt_http_parse_u64(const char *s, size_t n, uint64_t *out);
/* Copy at most dst_size - 1 bytes and NUL-terminate. */
void rt_http_copy(char *dst, size_t dst_size, const char *s, size_t n);
/* Walk a comma-separated list: returns the next trimmed element or NULL. */
const char *rt_http_list_next(const char **cur, const char *end, size_t *elen);
/* Append name=value to reported[] if room and the name fits; false otherwise. */
bool rt_http_report(struct rt_http_reported *rep, uint32_t *n, const char *prefix, const char *name,
		    size_t name_len, double value);

/* ---- JSON facts (http_json.c) ------------------------------------------ */

struct rt_http_json_facts {
	bool parsed; /* the whole text parsed as JSON */
	bool content; /* non-empty generated text (span contract's TTFT rule) */
	bool text_shape; /* has choices[] or a "content" member: a text-bearing shape */
	bool usage; /* a usage or timings object */
	int64_t tokens_out;
	char response_id[RT_HTTP_RESPONSE_ID_MAX]; /* top-level "id"; "" none */
	int32_t id_slot; /* llama-server's top-level "id_slot" (its engine sequence), -1 none */
	/*
	 * json_walk: the quotes of a string value without a backslash whose
	 * bytes no fact depends on but for whether it is empty (the first
	 * text or content one read), 0 0 none. The SSE memo (sse.c) relies on
	 * it: an event differing from the last only there has the same facts.
	 */
	uint32_t var_q0, var_q1;
	uint32_t n_reported;
	struct rt_http_reported reported[RT_HTTP_REPORTED_MAX]; /* last: set up to n_reported */
};

/*
 * Facts from a JSON text. With partial, text is a kept head and tail of a
 * larger text: nothing is parsed as a whole; "usage" and "timings" objects
 * that parse on their own and content keys are searched for instead.
 */
void rt_http_json_facts(const char *text, size_t len, bool partial, struct rt_http_json_facts *f);

/*
 * json_walk.c: the facts of a whole text, read as cJSON 1.7 would parse it
 * but without a tree; false when it does not parse, or when brackets
 * outside strings anywhere in the text (trailing bytes included) nest
 * deeper than RT_HTTP_JSON_DEPTH_MAX. f must be zeroed with tokens_out -1
 * (rt_http_json_facts does it).
 */
bool rt_json_walk_facts(const char *text, size_t len, struct rt_http_json_facts *f);

/* ---- Server-Sent Events decoder (sse.c) --------------------------------- */

struct rt_sse_memo;

struct rt_sse_dec {
	uint8_t state;
	bool cr; /* the last byte was CR: a LF right after it ends nothing */
	bool pending; /* the current event has a non-empty line */
	bool has_data; /* ... a data field */
	bool incomplete; /* ... and bytes of it went uncaptured */
	bool lost; /* framing was lost: every later event is a best guess */
	bool has_ref; /* the event's data is ref[0..ref_n), still in the bytes being fed */
	uint8_t field_len;
	char field[8];
	const uint8_t *ref;
	size_t ref_n;
	struct rt_keepbuf data;
	struct rt_sse_memo *memo; /* the last event classified, NULL: none (sse.c) */
};

/*
 * rt_sse_classify() with memo: the events of one stream mostly differ
 * only in their token's text. An event whose bytes differ from the memo's
 * only inside the memo's var string (struct rt_http_json_facts), staying a
 * plain string as empty or not as before, has the memo's facts; any
 * other is classified, and becomes the memo when it reported no numbers.
 * *memo is allocated on first use (none when that fails) and freed by
 * rt_sse_memo_free().
 */
void rt_sse_classify_memo(struct rt_sse_memo **memo, const char *data, size_t len, bool incomplete,
			  struct rt_sse_event *out);
void rt_sse_memo_free(struct rt_sse_memo **memo);
uint64_t rt_sse_memo_hits(const struct rt_sse_memo *memo);

typedef void (*rt_sse_emit_fn)(void *ctx, const struct rt_sse_event *ev);

void rt_sse_dec_init(struct rt_sse_dec *d);
void rt_sse_dec_feed(struct rt_sse_dec *d, const uint8_t *p, size_t n, rt_sse_emit_fn emit,
		     void *ctx);
/* Bytes of the stream went uncaptured; framing_lost: later bytes may hold framing. */
void rt_sse_dec_gap(struct rt_sse_dec *d, bool framing_lost);
/* End of the body: an unterminated event is discarded (WHATWG). */
void rt_sse_dec_release(struct rt_sse_dec *d);

/* ---- message framing engine (http_msg.c) -------------------------------- */

enum rt_http_dir {
	RT_HTTP_DIR_REQ = 0,
	RT_HTTP_DIR_RESP = 1,
};

enum rt_http_body {
	RT_HTTP_BODY_NONE = 0,
	RT_HTTP_BODY_LENGTH,
	RT_HTTP_BODY_CHUNKED,
	RT_HTTP_BODY_CLOSE, /* until the connection closes */
	RT_HTTP_BODY_FEED_END, /* guessed: until the end of the current feed */
};

/* Callbacks from the engine to a parser; w is the parser. */
struct rt_http_msg_ops {
	/* A message starts (request: first method byte; response: status >= 200
	 * known, interim 1xx responses are skipped). 0 or -ENOMEM. */
	int (*begin)(void *w);
	/* A header name ended (lowercase, NUL-terminated): true to get its value. */
	bool (*want)(void *w, const char *name);
	/* A wanted header's value, trimmed. 0 or an enum rt_http_error. */
	int (*header)(void *w, const char *name, const char *value, size_t len, bool truncated);
	/* End of head; sets the body framing. 0 or an enum rt_http_error. */
	int (*head_done)(void *w, bool incomplete, enum rt_http_body *body, uint64_t *length);
	void (*data)(void *w, const uint8_t *p, size_t n);
	void (*data_gap)(void *w, uint64_t n, bool framing_lost);
	/* guessed: the message's end was guessed (a gap hid its framing) */
	void (*complete)(void *w, bool incomplete, bool guessed);
	void (*error)(void *w, enum rt_http_error err);
};

/* The parts of the start line, valid from begin to complete. */
struct rt_http_start {
	char method[RT_HTTP_METHOD_MAX];
	char target[RT_HTTP_PATH_MAX];
	char value[RT_HTTP_VALUE_KEEP + 1];
};

struct rt_http_msg {
	const struct rt_http_msg_ops *ops;
	void *w;
	uint8_t dir;
	uint8_t state;
	uint8_t after_cr; /* state a CR-LF leads to */
	uint8_t pos; /* position in a fixed token ("HTTP/1.", status digits, sniffing) */
	uint8_t minor; /* HTTP/1.<minor> */
	uint8_t name_len;
	uint8_t method_len;
	bool begun, head_done, interim, guess, incomplete, keep, truncated, at_boundary;
	bool nomem;
	uint16_t status;
	uint16_t n_headers;
	uint16_t target_len;
	uint16_t value_len, value_trim;
	uint16_t digits; /* chunk-size digits, extension bytes */
	uint32_t head_bytes;
	uint64_t remaining;
	uint64_t window; /* last bytes seen while looking for a lost chunked body's end */
	char name[RT_HTTP_NAME_KEEP];
	struct rt_http_start *s;
	/* tap (NULL: none) and the run it is building */
	rt_http_tap_fn tap;
	void *tap_ctx;
	const uint8_t *run_p;
	size_t run_n;
	uint8_t run_cls;
	uint8_t body_tap; /* RT_HTTP_TAP_BODY*: set by the parser's head_done */
	const uint8_t *name_at; /* where the header name being read began, in this feed */
};

void rt_http_msg_init(struct rt_http_msg *m, enum rt_http_dir dir,
		      const struct rt_http_msg_ops *ops, void *w);
void rt_http_msg_fini(struct rt_http_msg *m);
/* 0, -EPROTO once unparseable, -ENOMEM when a message was dropped for memory. */
int rt_http_msg_feed(struct rt_http_msg *m, const uint8_t *buf, size_t len);
int rt_http_msg_gap(struct rt_http_msg *m, uint64_t n);
/* The connection closed. */
void rt_http_msg_eof(struct rt_http_msg *m);
/* Joined mid-stream: skip to a feed that starts like a message. */
void rt_http_msg_resync(struct rt_http_msg *m);

/*
 * Tap a parser (fn NULL: untap); the stream driver (stream.c) does it for
 * its users. A tapped response parser reports framing only: bodies are no
 * longer decoded (no on_sse_event, no usage from a JSON body), so it holds
 * no body bytes at all.
 */
void rt_http_req_set_tap(struct rt_http_req_parser *p, rt_http_tap_fn fn, void *ctx);
void rt_http_resp_set_tap(struct rt_http_resp_parser *p, rt_http_tap_fn fn, void *ctx);

#endif /* RT_HTTP_INT_H */
