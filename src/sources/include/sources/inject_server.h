/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUPTI injection source, daemon side (protocol: include/reqtrace/inject.h,
 * docs/protocol-inject.md). It listens on the inject socket, hands each
 * accepted CUDA process a sealed memfd ring and drains the rings.
 *
 * Anyone may connect (the socket is mode 0666); a peer is accepted only if
 * opts.allow_pid says its pid (SO_PEERCRED, not what it claims) belongs to a
 * target group, otherwise it gets a refusal and is logged. Every byte a
 * traced process writes into its ring is untrusted: positions, sizes, kinds,
 * pids, source ids, timestamps and ids are checked, each record is copied
 * out of shared memory before it is checked, and a ring whose framing is
 * lost is dropped (the process may reconnect and get a fresh one).
 *
 * A marker library (HELLO role RT_INJECT_ROLE_MARKER) gets a marker ring
 * instead (include/reqtrace/mark_ring.h, sources/mark_ring.h): only marker
 * records pass, and the server writes the source's watermarks itself.
 *
 * Each accepted process is a source of its own: a source id from
 * opts.first_source_id upward, an RT_EV_SOURCE_INFO before its first
 * record, and its own watermark (its RT_EV_WATERMARK records, passed on).
 * When its socket closes the ring is drained, then forgotten, and
 * opts.on_close tells the caller that source will deliver nothing more.
 *
 * The daemon owns it in its libuv loop: rt_inject_server__epoll_fd() in a
 * uv_poll_t calling rt_inject_server__on_readable(), and
 * rt_inject_server__consume() on a timer (about the flush period) and after
 * on_readable. Not thread-safe: one thread calls everything.
 */
#ifndef RT_SOURCES_INJECT_SERVER_H
#define RT_SOURCES_INJECT_SERVER_H

#include <reqtrace/event.h>
#include <reqtrace/inject.h>

#include "sources/source.h"

#define RT_INJECT_CONNS_DEFAULT 256
#define RT_INJECT_BATCH_DEFAULT 4096 /* records per ring per consume() call */
#define RT_INJECT_HELLO_TIMEOUT_NS 2000000000ULL /* a peer must say HELLO within this */
/* accepted timestamps: not after now + FUTURE, not before accept - PAST */
#define RT_INJECT_FUTURE_SLACK_NS 2000000000ULL
#define RT_INJECT_PAST_SLACK_NS 600000000000ULL
#define RT_INJECT_MAX_DURATION_NS 86400000000000ULL /* longest activity or call: 1 day */
#define RT_INJECT_MAX_DEVICE 4096 /* device ids at or above are invalid */
/* marker rings (docs/markers.md): how long an uncommitted slot may hold the
 * source's watermark back, and after how long such a ring is given up */
#define RT_MARK_HORIZON_NS 200000000ULL
#define RT_MARK_ABANDON_NS 10000000000ULL
#define RT_MARK_WM_STEP_NS 1000000ULL /* an idle marker source's watermark: at most 1 per ms */

struct rt_inject_server_opts {
	const char *path; /* socket path; NULL: RT_INJECT_SOCKET_DEFAULT */
	__u64 ring_bytes; /* per process; 0: default; rounded up to a power of two, clamped */
	__u32 first_source_id; /* ids handed out from here upward (0 is taken as 1) */
	__u32 max_conns; /* injected processes at once; 0: RT_INJECT_CONNS_DEFAULT */
	__u32 flush_ms; /* sent in WELCOME; 0: RT_INJECT_FLUSH_MS_DEFAULT */
	__u32 horizon_ms; /* sent in WELCOME; 0: RT_INJECT_HORIZON_MS_DEFAULT */
	__u32 max_batch; /* 0: RT_INJECT_BATCH_DEFAULT */
	/* 1 if pid belongs to a target group; NULL refuses everyone */
	int (*allow_pid)(__u32 pid, void *ctx);
	/* source_id (of pid) will deliver nothing more; may be NULL */
	void (*on_close)(__u32 source_id, __u32 pid, void *ctx);
	void *ctx; /* for both callbacks */
};

/* rt_inject_conn_info.state */
enum rt_inject_conn_state {
	RT_INJECT_CONN_HELLO = 1, /* accepted, waiting for HELLO */
	RT_INJECT_CONN_ACTIVE = 2, /* ring handed over, records flow */
	RT_INJECT_CONN_IDLE = 3, /* the library cannot collect (status says why) */
	RT_INJECT_CONN_CLOSING = 4, /* peer gone, ring still being drained */
};

struct rt_inject_conn_info {
	__u32 pid; /* SO_PEERCRED */
	__u32 source_id; /* 0 until ACTIVE */
	__u32 state; /* enum rt_inject_conn_state */
	__u32 status; /* enum rt_inject_status from HELLO/STATUS */
	__u32 cupti_version;
	__u32 cupti_result;
	__u64 watermark_ns; /* highest watermark passed on (0: none yet) */
	__u64 records; /* records passed on */
	__u64 invalid; /* records that failed a check */
	__u64 lost; /* sum of the counts of the LOSS records it sent */
	__u64 lost_unconnected; /* HELLO: dropped while no daemon was there */
	char comm[16]; /* from HELLO (untrusted, NUL-terminated) */
	__u32 role; /* enum rt_inject_role: CUPTI or a marker ring */
	__u32 _pad;
	__u64 late; /* marker records stamped before the watermark already sent */
};

struct rt_inject_server_stats {
	__u64 accepted; /* peers handed a ring or accepted as idle */
	__u64 refused; /* peers outside every target group */
	__u64 rejected; /* bad HELLO, timeout, too many peers, no ring */
	__u64 closed; /* sessions ended */
	__u64 records; /* records passed on */
	__u64 invalid; /* records that failed a check */
	__u64 framing; /* rings dropped because their framing was lost */
	__u64 lost; /* counts of LOSS records passed on */
	__u64 mark_records; /* of records: from marker rings */
	__u64 mark_late; /* marker records behind their source's watermark (passed on) */
	__u64 mark_invalid; /* of invalid: from marker rings */
	__u64 mark_stalled; /* marker rings given up: a slot stayed uncommitted */
	__u32 conns; /* sessions now */
	__u32 _pad;
};

struct rt_inject_server;

/*
 * Creates the socket (its directory too, mode 0755, if missing), replacing
 * a stale socket file but not a live one (EADDRINUSE), and makes it 0666.
 * Returns NULL with errno set (EINVAL: bad options).
 */
struct rt_inject_server *rt_inject_server__new(const struct rt_inject_server_opts *opts);

/* Tells every producer its ring is closed, closes everything, removes the socket file. */
void rt_inject_server__free(struct rt_inject_server *s);

/* An epoll fd, readable when the listener or a peer needs attention. */
int rt_inject_server__epoll_fd(const struct rt_inject_server *s);

/*
 * Accepts new peers, answers HELLOs (making and sending rings), notices
 * closed peers and expired handshakes. Never blocks. Returns 0 or -errno
 * (only for a failure of the epoll fd itself).
 */
int rt_inject_server__on_readable(struct rt_inject_server *s);

/*
 * Drains every ring, at most max_batch records each, calling fn for each
 * record that passes the checks (a private, aligned copy: valid during the
 * call). Also emits, through fn: RT_EV_SOURCE_INFO before a source's first
 * record and RT_EV_LOSS (reason RT_LOSS_INVALID) for records that failed.
 * Finishes sessions whose peer is gone once their ring is empty. Returns
 * the number of records passed on, or the negative errno fn returned (the
 * record it refused is offered again next time).
 */
int rt_inject_server__consume(struct rt_inject_server *s, rt_event_fn fn, void *ctx);

void rt_inject_server__stats(const struct rt_inject_server *s, struct rt_inject_server_stats *st);

/* Fills up to max sessions; returns how many there are. */
int rt_inject_server__conns(const struct rt_inject_server *s, struct rt_inject_conn_info *out,
			    int max);

#endif /* RT_SOURCES_INJECT_SERVER_H */
