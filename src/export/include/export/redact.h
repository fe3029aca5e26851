/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Recording redactor: rewrites the payload bytes of socket records in
 * place, before they reach a recording, so that a recording keeps what the
 * HTTP parsers need to rebuild the same spans on replay and nothing else
 * (docs/privacy.md has the rules).
 *
 * Lengths never change: a masked byte becomes 'x' ('X' in a JSON key; CR
 * and LF stay), so framing, gaps and timestamps are untouched. What is kept is decided by
 * the parsers' own framing engine (src/proto/http_msg.c), run on the
 * original bytes in the order the records come, per connection and
 * direction; body text is masked by a streaming SSE/JSON tokenizer that
 * keeps structure, known keys and the numbers the parsers report. Where
 * the state is unknown (a gap, a connection joined mid-stream, input that
 * is not HTTP/1.x) every byte is masked.
 *
 * State is bounded: a table of at most max_conns connections (a
 * connection without a slot is masked whole, and counted), each holding a
 * few hundred bytes between messages and never a body byte.
 */
#ifndef RT_REDACT_H
#define RT_REDACT_H

#include <stdint.h>

#include <reqtrace/event.h>

#define RT_REDACT_CONNS_DEFAULT 4096
#define RT_REDACT_MASK 'x'

struct rt_redactor_opts {
	uint32_t max_conns; /* 0: RT_REDACT_CONNS_DEFAULT */
};

struct rt_redactor_stats {
	uint64_t records; /* SOCK_RECV/SOCK_SEND and ZMQ_MSG records rewritten */
	uint64_t bytes; /* payload bytes they carried */
	uint64_t conns; /* connections tracked now */
	uint64_t no_slot; /* records masked whole: the connection table was full */
	uint64_t unreadable; /* records masked whole: the stream is not HTTP/1.x */
	uint64_t invalid; /* malformed records: payload wiped */
	uint64_t zmq_walked; /* ZMQ_MSG records redacted by their vLLM message structure */
	uint64_t zmq_masked; /* ZMQ_MSG records masked whole */
};

struct rt_redactor;

/* opts may be NULL. Returns NULL with errno set on failure. */
struct rt_redactor *rt_redactor__new(const struct rt_redactor_opts *opts);

/* Frees every connection's state; NULL is fine. */
void rt_redactor__free(struct rt_redactor *r);

/*
 * Takes one record in stream order. SOCK_RECV and SOCK_SEND payloads, and
 * ZMQ_MSG frames (by their vLLM message structure, redact_zmq.c), are
 * rewritten in place (ev must be writable, 8-byte aligned, ev->size bytes);
 * SOCK_ACCEPT, SOCK_CONNECT, SOCK_CLOSE, PROC_EXIT, TARGET and LOSS update
 * the connection and stream tables; other records pass untouched. Returns 0, or -EINVAL
 * for a malformed socket record, whose payload is then wiped.
 */
int rt_redactor__apply(struct rt_redactor *r, struct rt_event_hdr *ev);

/*
 * As rt_redactor__apply() on a record that must stay untouched: returns ev
 * itself when nothing in it needs rewriting, a redacted copy in a buffer
 * of r (valid until the next call), or NULL for a malformed socket record,
 * which must not be written at all.
 */
const struct rt_event_hdr *rt_redactor__redact(struct rt_redactor *r,
					       const struct rt_event_hdr *ev);

void rt_redactor__stats(const struct rt_redactor *r, struct rt_redactor_stats *st);

#endif /* RT_REDACT_H */
