/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The injection protocol: how libreqtrace_cupti.so (inside a CUDA process,
 * loaded through CUDA_INJECTION64_PATH) and reqtraced talk. Compiled by both
 * sides; docs/protocol-inject.md is the prose version.
 *
 *   1. The library connects (SOCK_SEQPACKET, AF_UNIX) to REQTRACE_SOCKET
 *      (default RT_INJECT_SOCKET_DEFAULT) and sends HELLO.
 *   2. The daemon checks the peer's pid (SO_PEERCRED, never HELLO.pid)
 *      against its target groups and answers WELCOME. When accepted and
 *      HELLO.status is RT_INJECT_ST_OK, WELCOME carries one fd (SCM_RIGHTS):
 *      a memfd sealed with F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, of
 *      exactly ring_hdr_size + ring_data_size bytes, starting with
 *      struct rt_inject_ring. A refused peer gets WELCOME with a negative
 *      status and no fd, then the daemon closes the socket.
 *   3. The library checks the seals and the size before mapping the fd (an
 *      unsealed file could be truncated under it: SIGBUS in the host), then
 *      writes event.h records into the ring. It may send STATUS later.
 *   4. The socket stays open for the life of the session: its EOF tells the
 *      daemon the process is gone, and the library that the daemon is.
 *
 * One message per datagram, at most RT_INJECT_MSG_MAX bytes, each starting
 * with struct rt_inject_msg_hdr. Fixed-width little-endian fields only; a
 * message larger than the struct a reader knows is accepted (fields are
 * appended), a smaller one is not.
 *
 * The ring: one producer (the library), one consumer (the daemon). Positions
 * are free-running byte counts; the offset of a position is pos & (data_size
 * - 1). Records are event.h records (8-byte multiples) written whole and
 * never wrapped: when a record does not fit before the end of the data area
 * the producer writes a wrap marker (a record header whose kind is
 * RT_EV_NONE; only its first 8 bytes are meaningful, at least 8 bytes always
 * remain) and continues at offset 0. prod_pos is stored with release order
 * after the record bytes; the consumer loads it with acquire order, reads,
 * then stores cons_pos with release order. Each side bounds-checks what the
 * other wrote: the daemon treats every byte the library writes as hostile.
 */
#ifndef REQTRACE_INJECT_H
#define REQTRACE_INJECT_H

#include <linux/types.h>

#define RT_INJECT_VERSION 1
#define RT_INJECT_MAGIC 0x4a495452U /* "RTIJ" */
#define RT_INJECT_RING_MAGIC 0x474e5252U /* "RRNG" */

#define RT_INJECT_SOCKET_ENV "REQTRACE_SOCKET"
#define RT_INJECT_SOCKET_DEFAULT "/run/reqtrace/inject.sock"

#define RT_INJECT_MSG_MAX 256

/* Ring geometry. data_size is a power of two in [MIN, MAX]. */
#define RT_INJECT_RING_HDR_SIZE 4096
#define RT_INJECT_RING_MIN (64U * 1024)
#define RT_INJECT_RING_MAX (256U * 1024 * 1024)
#define RT_INJECT_RING_DEFAULT (8U * 1024 * 1024)

/* Defaults the daemon hands out in WELCOME (the library clamps them). */
#define RT_INJECT_FLUSH_MS_DEFAULT 100
#define RT_INJECT_HORIZON_MS_DEFAULT 500

enum rt_inject_msg_type {
	RT_INJECT_MSG_HELLO = 1, /* library -> daemon, first message */
	RT_INJECT_MSG_WELCOME = 2, /* daemon -> library, answer to HELLO */
	RT_INJECT_MSG_STATUS = 3, /* library -> daemon, when its status changes */
};

/* What the library can do; HELLO.status and STATUS.status. */
enum rt_inject_status {
	RT_INJECT_ST_OK = 0, /* CUPTI set up: records will flow */
	RT_INJECT_ST_NO_CUPTI = 1, /* libcupti missing or lacks a symbol */
	RT_INJECT_ST_CUPTI_BUSY = 2, /* another subscriber holds CUPTI: stepped aside */
	RT_INJECT_ST_CUPTI_VERSION = 3, /* libcupti's major version differs from the build's */
	RT_INJECT_ST_CUPTI_ERROR = 4, /* a CUPTI setup call failed (cupti_result says which) */
	RT_INJECT_ST__COUNT = 5,
};

struct rt_inject_msg_hdr {
	__u32 magic; /* RT_INJECT_MAGIC */
	__u16 version; /* RT_INJECT_VERSION */
	__u16 type; /* enum rt_inject_msg_type */
	__u32 size; /* whole message, header included */
	__u32 _pad;
};

struct rt_inject_hello {
	struct rt_inject_msg_hdr hdr;
	__u32 event_version; /* RT_EVENT_VERSION of the records the library writes */
	__u32 status; /* enum rt_inject_status */
	__u32 pid; /* getpid() in the library's pid namespace; informative */
	__u32 cupti_version; /* cuptiGetVersion(), 0 when unknown */
	__u32 cupti_result; /* CUptiResult of the failing call for ST_CUPTI_* */
	__u32 _pad;
	__u64 lost_unconnected; /* records dropped while no daemon was connected */
	char comm[16];
	/* appended: a HELLO without it is RT_INJECT_ROLE_CUPTI */
	__u32 role; /* enum rt_inject_role */
	__u32 _pad2;
};

/*
 * Who says HELLO: the CUPTI injection library, or the marker library
 * (libreqtrace_marker.so), whose ring is framed for many writer threads
 * (include/reqtrace/mark_ring.h).
 */
enum rt_inject_role {
	RT_INJECT_ROLE_CUPTI = 0,
	RT_INJECT_ROLE_MARKER = 1,
};

/* WELCOME.status */
#define RT_INJECT_ACCEPTED 0 /* otherwise a negative errno: */
/* -EPERM: the peer is in no target group; -EPROTO: bad HELLO or version;
 * -EMFILE: too many injected processes; -ENOMEM: no ring could be made */

struct rt_inject_welcome {
	struct rt_inject_msg_hdr hdr;
	__s32 status; /* RT_INJECT_ACCEPTED or -errno */
	__u32 source_id; /* hdr.source of every record the library writes */
	__u32 pid; /* the peer's pid as the daemon sees it: hdr.pid of every record */
	__u32 flush_ms; /* flush CUPTI and write a watermark this often */
	__u32 horizon_ms; /* watermark horizon (docs/protocol-inject.md) */
	__u32 ring_hdr_size; /* bytes before the data area; 0 when no ring is sent */
	__u64 ring_data_size; /* bytes of the data area; 0 when no ring is sent */
};

/* Sent when the status changes after HELLO (e.g. enabling CUPTI failed). */
struct rt_inject_status_msg {
	struct rt_inject_msg_hdr hdr;
	__u32 status; /* enum rt_inject_status */
	__u32 cupti_result;
};

/* rt_inject_ring.cons_state */
#define RT_INJECT_CONS_ACTIVE 1
#define RT_INJECT_CONS_CLOSED 2 /* the daemon abandoned the ring: stop writing */

/*
 * The first RT_INJECT_RING_HDR_SIZE bytes of the memfd. The daemon fills the
 * first line before sending the fd; afterwards each side writes only its own
 * line. Producer and consumer fields sit on separate cache lines.
 */
struct rt_inject_ring {
	/* written once by the daemon */
	__u32 magic; /* RT_INJECT_RING_MAGIC */
	__u16 version; /* RT_INJECT_VERSION */
	__u16 hdr_size; /* RT_INJECT_RING_HDR_SIZE: offset of the data area */
	__u64 data_size; /* power of two */
	__u32 source_id;
	__u32 pid;
	__u8 _pad0[40];

	/* producer line: the library writes, the daemon reads (untrusted) */
	__u64 prod_pos; /* bytes ever produced, wrap markers included */
	__u64 dropped; /* records dropped for want of space (informative) */
	__u64 written; /* records written (informative) */
	__u8 _pad1[40];

	/* consumer line: the daemon writes, the library reads */
	__u64 cons_pos; /* bytes ever consumed */
	__u32 cons_state; /* RT_INJECT_CONS_* */
	__u32 _pad2;
	__u8 _pad3[48];
};

#endif /* REQTRACE_INJECT_H */
