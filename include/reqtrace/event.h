/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one wire format of reqtrace.
 *
 * Every producer (BPF programs, the CUPTI injection library, the daemon's own
 * bookkeeping, the synthetic generator in tests/) writes these records and
 * every consumer (merge, correlator, .rtrace files) reads them. The header is
 * compiled by `clang -target bpf` (after vmlinux.h), by the daemon, and by
 * the injection library inside someone else's CUDA process, so:
 *
 *   - fixed-width types only: no pointers, long, bool or enums in records;
 *   - every record starts with struct rt_event_hdr (kind, size, source id);
 *   - sizes are multiples of 8 so records can be laid end to end;
 *   - fields are appended at the end of a body, never reordered; a reader
 *     accepts a record at least as large as the body it knows, and a new
 *     layout bumps RT_EVENT_VERSION.
 *
 * Timestamps are CLOCK_MONOTONIC nanoseconds, what bpf_ktime_get_ns()
 * returns. docs/events.md says what each kind means and where it comes from.
 */
#ifndef REQTRACE_EVENT_H
#define REQTRACE_EVENT_H

#if !defined(__bpf__)
#include <linux/types.h>
#endif

#include "phase.h"

#define RT_EVENT_VERSION 2 /* 2: sched_switch carries the tasks' runtimes */

/* A record's size is a __u16; RT_EVENT_MAX bounds it further. */
#define RT_EVENT_MAX 16384
#define RT_EVENT_ALIGN 8

/* Payload capture bounds for socket I/O (configurable up to these). */
#define RT_SOCK_HEAD_DEFAULT 512
#define RT_SOCK_TAIL_DEFAULT 1024
#define RT_SOCK_HEAD_MAX 4096
#define RT_SOCK_TAIL_MAX 4096
#define RT_IOV_MAX 16 /* iovecs walked per vectored call */

#define RT_COMM_LEN 16
#define RT_ID_LEN 64 /* request and engine ids carried by marker records */
#define RT_NAME_LEN 32 /* source and group names */
#define RT_KERNEL_NAME_LEN 64

enum rt_event_kind {
	RT_EV_NONE = 0,

	/* scheduler and task lifetime: bpf/sched.bpf.c */
	RT_EV_SCHED_SWITCH = 1,
	RT_EV_SCHED_WAKING = 2,
	RT_EV_TASK_NEW = 3,
	RT_EV_PROC_EXEC = 4,
	RT_EV_PROC_EXIT = 5,

	/* sockets: bpf/sock.bpf.c */
	RT_EV_SOCK_ACCEPT = 10,
	RT_EV_SOCK_CONNECT = 11,
	RT_EV_SOCK_RECV = 12,
	RT_EV_SOCK_SEND = 13,
	RT_EV_SOCK_CLOSE = 14,
	RT_EV_SOCK_SHUTDOWN = 15,
	RT_EV_SOCK_ARRIVAL = 16, /* kernel receive path: tcp_probe, inet_sock_set_state */

	/* marker API uprobes: bpf/marker.bpf.c */
	RT_EV_MARK_BEGIN = 20,
	RT_EV_MARK_END = 21,
	RT_EV_MARK_STEP_BEGIN = 22,
	RT_EV_MARK_STEP_MEMBER = 23,
	RT_EV_MARK_STEP_END = 24,
	RT_EV_MARK_BIND = 25,
	RT_EV_MARK_STEP_TOKENS = 26, /* rt_mark_step_begin_tokens(): a member's token count */

	/* GPU seen from the CPU: uprobes on libcuda/libnccl, CUPTI DRIVER records */
	RT_EV_CUDA_API_ENTER = 30,
	RT_EV_CUDA_API_EXIT = 31,
	RT_EV_NCCL_ENTER = 32,
	RT_EV_NCCL_EXIT = 33,

	/* engine packs (docs/packs.md): uprobes on an engine's own library */
	RT_EV_PACK_CALL = 34, /* a pack function's entry or return */
	RT_EV_PACK_BATCH = 35, /* llama_decode's batch, summarised per sequence */
	RT_EV_ZMQ_MSG = 36, /* one ZeroMQ frame at zmq_msg_send/zmq_msg_recv */

	/* device side: CUPTI activity records */
	RT_EV_GPU_KERNEL = 40,
	RT_EV_GPU_MEMCPY = 41,
	RT_EV_GPU_MEMSET = 42,
	RT_EV_GPU_SYNC = 43,
	RT_EV_GPU_EXT_CORR = 44,
	RT_EV_LINK_SAMPLE = 45,

	/* bookkeeping, from any source */
	RT_EV_LOSS = 50,
	RT_EV_WATERMARK = 51,

	/* recording and target bookkeeping written by the daemon */
	RT_EV_CLOCK = 60,
	RT_EV_SOURCE_INFO = 61,
	RT_EV_TARGET = 62,
	RT_EV_TRACE_END = 63,

	RT_EV__MAX = 64,
};

struct rt_event_hdr {
	__u16 kind; /* enum rt_event_kind */
	__u16 size; /* whole record, header included, multiple of 8 */
	__u32 source; /* producer id; RT_EV_SOURCE_INFO names it */
	__u64 ts_ns; /* CLOCK_MONOTONIC; per kind, see docs/events.md */
	__u32 pid; /* tgid of the task the record is about (0: none) */
	__u32 tid; /* its thread id (0: device or none) */
};

/* ---- scheduler ---------------------------------------------------------- */

/* prev_state values: why prev left the CPU */
#define RT_TASK_RUNNING 0 /* preempted: still runnable, waits in the runqueue */
#define RT_TASK_BLOCKED 1 /* went to sleep (any non-running state) */
#define RT_TASK_DEAD 2

/* hdr.pid/tid = prev; hdr.ts_ns = switch time */
struct rt_ev_sched_switch {
	struct rt_event_hdr hdr;
	__u32 prev_pid, prev_tid;
	__u32 next_pid, next_tid;
	__u32 prev_state; /* RT_TASK_* */
	__u32 cpu;
	char prev_comm[RT_COMM_LEN];
	char next_comm[RT_COMM_LEN];
	/*
	 * The kernel's own count of each task's CPU time (se.sum_exec_runtime,
	 * what CLOCK_THREAD_CPUTIME_ID reads), 0 when unknown. It leaves out
	 * what the task's wall time on a CPU holds but the task did not get: a
	 * hypervisor's steal and, with IRQ time accounting, interrupts.
	 */
	__u64 prev_runtime_ns;
	__u64 next_runtime_ns;
};

/* hdr.pid/tid = the waker (current task); runs in the waker's context */
struct rt_ev_sched_waking {
	struct rt_event_hdr hdr;
	__u32 target_pid, target_tid;
	__u32 target_cpu;
	__u32 _pad;
};

/* hdr.pid/tid = the parent (creating task) */
struct rt_ev_task_new {
	struct rt_event_hdr hdr;
	__u32 child_pid, child_tid;
	__u64 clone_flags;
	char comm[RT_COMM_LEN];
};

/* hdr.pid/tid = the process after exec */
struct rt_ev_proc_exec {
	struct rt_event_hdr hdr;
	__u32 old_tid;
	__u32 _pad;
	char comm[RT_COMM_LEN];
};

/* hdr.pid/tid = the exiting thread */
struct rt_ev_proc_exit {
	struct rt_event_hdr hdr;
	__s32 exit_code;
	__u32 group_dead; /* 1 when the last thread of the process exits */
	char comm[RT_COMM_LEN];
};

/* ---- sockets ------------------------------------------------------------ */

/* Address family as captured; addresses in network byte order. */
#define RT_AF_UNSPEC 0
#define RT_AF_INET 2
#define RT_AF_INET6 10
#define RT_AF_UNIX 1

struct rt_sock_addr {
	__u8 addr[16]; /* IPv4 in the first 4 bytes; AF_UNIX: the socket inode (__u64) */
	__u16 port; /* host byte order */
	__u16 family; /* RT_AF_* */
	__u32 _pad;
};

/* hdr.ts_ns = syscall exit. For accept, fd is the new connection. */
struct rt_ev_sock_conn {
	struct rt_event_hdr hdr;
	__u64 enter_ns;
	__s64 ret;
	__s32 fd;
	__s32 listen_fd; /* accept only; -1 otherwise */
	struct rt_sock_addr local;
	struct rt_sock_addr peer;
};

enum rt_sock_syscall {
	RT_SYS_READ = 1,
	RT_SYS_READV = 2,
	RT_SYS_RECVFROM = 3,
	RT_SYS_RECVMSG = 4,
	RT_SYS_WRITE = 5,
	RT_SYS_WRITEV = 6,
	RT_SYS_SENDTO = 7,
	RT_SYS_SENDMSG = 8,
	RT_SYS_CLOSE = 9,
	RT_SYS_SHUTDOWN = 10,
	RT_SYS_ACCEPT = 11,
	RT_SYS_ACCEPT4 = 12,
	RT_SYS_CONNECT = 13,
};

/* rt_ev_sock_io.flags */
#define RT_IO_PARTIAL_COPY 0x1 /* a user-memory read failed: bytes missing */
#define RT_IO_IOV_TRUNC 0x2 /* more iovecs than the probe walks */

/*
 * RECV and SEND. hdr.ts_ns = syscall exit, enter_ns = entry: the span
 * contract needs both (start_ns is a read's exit, first_token_ns a write's
 * entry). ret is bytes transferred or -errno.
 *
 * data[] holds head_len bytes from the start of the transfer followed by
 * tail_len bytes that end it. When ret > head_len + tail_len the bytes in
 * between were not captured (a gap of ret - head_len - tail_len); when the
 * whole transfer fits, tail_len is 0 and head_len == ret.
 */
struct rt_ev_sock_io {
	struct rt_event_hdr hdr;
	__u64 enter_ns;
	__s64 ret;
	__s32 fd;
	__u16 syscall; /* enum rt_sock_syscall */
	__u16 flags; /* RT_IO_* */
	__u16 head_len;
	__u16 tail_len;
	__u32 _pad;
	struct rt_sock_addr local;
	struct rt_sock_addr peer;
	__u8 data[];
};

/* rt_ev_sock_arrival.flags */
#define RT_ARR_LEFT_UNREAD 0x1 /* an earlier read left bytes unread: data_ns is an upper bound */

/*
 * ARRIVAL: when the bytes a read returned reached the socket, seen on the
 * kernel's receive path, not by the server. Written just before the RECV
 * record it belongs to, by the same thread for the same fd, with the same
 * hdr.ts_ns (that read's exit). Only for TCP connections accepted on a
 * port the daemon watches (docs/events.md, "Arrival").
 *
 * data_ns: when the earliest byte among those this read returned was
 * queued on the socket (0: not observed). With RT_ARR_LEFT_UNREAD an
 * earlier read left bytes behind, and data_ns is the arrival of the newest
 * segment at that read: the true arrival is no later. established_ns: when
 * the connection's handshake completed (0: not observed, e.g. before
 * tracing); the accept queue wait is the accept's exit minus this.
 */
struct rt_ev_sock_arrival {
	struct rt_event_hdr hdr;
	__u64 data_ns;
	__u64 established_ns;
	__s32 fd;
	__u32 flags; /* RT_ARR_* */
};

/* CLOSE and SHUTDOWN; hdr.ts_ns = syscall exit */
struct rt_ev_sock_close {
	struct rt_event_hdr hdr;
	__u64 enter_ns;
	__s64 ret;
	__s32 fd;
	__s32 how; /* shutdown only */
};

/* ---- markers ------------------------------------------------------------ */

/* BEGIN and END: hdr.ts_ns = the marker call; hdr.tid = the calling thread */
struct rt_ev_mark {
	struct rt_event_hdr hdr;
	__u32 phase; /* enum rt_phase */
	__u32 id_len;
	char request_id[RT_ID_LEN];
};

/* STEP_BEGIN carries the count; one STEP_MEMBER per listed request follows */
struct rt_ev_mark_step {
	struct rt_event_hdr hdr;
	__u64 step_id;
	__u32 n_requests;
	__u32 index; /* STEP_MEMBER: position in the list */
	char request_id[RT_ID_LEN]; /* STEP_MEMBER only */
};

/*
 * Follows the STEP_MEMBER of the same step and index when the step was
 * begun with rt_mark_step_begin_tokens(): the tokens that member advances
 * in the step (prompt tokens of a prefill chunk, 1 for a decode).
 */
struct rt_ev_mark_step_tokens {
	struct rt_event_hdr hdr;
	__u64 step_id;
	__u32 index; /* position in the list, as its STEP_MEMBER */
	__u32 tokens;
};

struct rt_ev_mark_bind {
	struct rt_event_hdr hdr;
	char engine_id[RT_ID_LEN];
	char request_id[RT_ID_LEN];
};

/* ---- engine packs ------------------------------------------------------ */

/* what a pack function means (docs/packs.md); the wire value never changes */
enum rt_pack_role {
	RT_PACK_TOKENIZE = 1, /* text to tokens (llama_tokenize) */
	RT_PACK_DETOKENIZE = 2, /* tokens to text (llama_token_to_piece, llama_detokenize) */
	RT_PACK_DECODE = 3, /* one engine step (llama_decode); its PACK_BATCH precedes the entry */
	RT_PACK_SYNC =
		4, /* waits for a step's device work (llama_synchronize, llama_get_logits*) */
	RT_PACK_SEQ_RM =
		5, /* a sequence's cache dropped (llama_memory_seq_rm & co): args[0] = seq */
	RT_PACK_REGION = 6, /* a compute pool's parallel region (GOMP_parallel & co) */
};

/*
 * A pack function's entry (ret == 0) or return (ret == 1) on hdr.tid.
 * `pack` is the daemon's index of the pack that attached the probe (status
 * names it); args are the role's arguments as docs/packs.md lists them.
 */
struct rt_ev_pack_call {
	struct rt_event_hdr hdr;
	__u32 pack;
	__u16 role; /* enum rt_pack_role */
	__u16 ret;
	__s64 args[4];
	__s64 retval; /* return only */
};

#define RT_PACK_BATCH_SEQS 32 /* sequences one PACK_BATCH record lists */

/* one sequence's tokens in a batch */
struct rt_pack_seq {
	__s32 seq_id;
	__u32 n_tokens;
	__s32 pos_min;
	__s32 pos_max;
	__u32 n_logits; /* tokens of this sequence with an output requested */
	__u32 pad;
};

#define RT_PACK_BATCH_NO_POS 0x1 /* batch.pos was NULL: positions tracked by the library */
#define RT_PACK_BATCH_NO_SEQ 0x2 /* batch.seq_id was NULL: all tokens are sequence 0 */
#define RT_PACK_BATCH_NO_LOGITS 0x4 /* batch.logits was NULL: only the last token's output */
#define RT_PACK_BATCH_EMBD 0x8 /* embeddings input, no tokens */
#define RT_PACK_BATCH_CUT 0x10 /* n_tokens exceeded what the probe reads; n_read says how many */
#define RT_PACK_BATCH_FAULT 0x20 /* a user-memory read failed; the summary is partial */

/* llama_decode's batch at its entry, on hdr.tid, just before its PACK_CALL */
struct rt_ev_pack_batch {
	struct rt_event_hdr hdr;
	__u32 pack;
	__u32 n_tokens; /* batch.n_tokens as passed */
	__u32 n_read; /* tokens summarised */
	__u32 n_seqs; /* entries in seqs[] */
	__u32 seqs_dropped; /* sequences beyond RT_PACK_BATCH_SEQS */
	__u32 flags; /* RT_PACK_BATCH_* */
	struct rt_pack_seq seqs[RT_PACK_BATCH_SEQS];
};

/* ---- ZeroMQ frames ------------------------------------------------------ */

#define RT_ZMQ_SEND 1
#define RT_ZMQ_RECV 2

/* rt_ev_zmq_msg.flags */
#define RT_ZMQ_MORE 0x1 /* another frame of the same message follows */
#define RT_ZMQ_CUT 0x2 /* the frame is longer than the bound: bytes past it not read */
#define RT_ZMQ_FAULT 0x4 /* a user-memory read failed: this chunk's bytes are missing */
#define RT_ZMQ_LAYOUT 0x8 /* the zmq_msg_t type byte was none the probe knows: no bytes */

#define RT_ZMQ_CAP_MAX 16384 /* bytes of one frame the probe reads at most */
#define RT_ZMQ_CHUNK_MAX 4096 /* bytes one record carries */

/*
 * One chunk of one ZeroMQ frame, seen at the return of a successful
 * zmq_msg_send or zmq_msg_recv (bpf/zmq.bpf.c, docs/events.md "ZeroMQ").
 * hdr.ts_ns = the return, enter_ns = the entry, hdr.pid/tid = the
 * application thread that called. A frame of frame_len bytes is read up to
 * RT_ZMQ_CAP_MAX and cut into records of at most RT_ZMQ_CHUNK_MAX bytes,
 * written back to back by that thread in offset order (an empty frame is
 * one record with len 0). Every chunk of a frame carries the same flags.
 */
struct rt_ev_zmq_msg {
	struct rt_event_hdr hdr;
	__u64 enter_ns;
	__u64 msg; /* the zmq_msg_t's address in the caller */
	__u64 socket; /* the libzmq socket pointer: identifies the socket within hdr.pid */
	__u32 frame_len; /* the whole frame, as the call returned it */
	__u32 offset; /* of this chunk in the frame */
	__u16 len; /* bytes in data[] */
	__u8 dir; /* RT_ZMQ_SEND or RT_ZMQ_RECV */
	__u8 flags; /* RT_ZMQ_* */
	__u32 _pad;
	__u8 data[]; /* len bytes, zero-padded to 8 */
};

/* ---- GPU, CPU side ------------------------------------------------------ */

/* Direction of a copy; unified copies carry none. */
enum rt_copy_kind {
	RT_COPY_UNKNOWN = 0,
	RT_COPY_H2D = 1,
	RT_COPY_D2H = 2,
	RT_COPY_D2D = 3,
	RT_COPY_P2P = 4,
	RT_COPY_H2H = 5,
};

/* What a driver call does, for the correlator; the exact function is `api`. */
enum rt_cuda_api_class {
	RT_CUDA_OTHER = 0,
	RT_CUDA_LAUNCH = 1,
	RT_CUDA_GRAPH_LAUNCH = 2,
	RT_CUDA_MEMCPY = 3,
	RT_CUDA_MEMCPY_ASYNC = 4,
	RT_CUDA_MEMSET = 5,
	RT_CUDA_SYNC = 6,
	RT_CUDA_WAIT_EVENT = 7,
};

/*
 * ENTER (hdr.ts_ns = entry) for calls that only enqueue, EXIT (hdr.ts_ns =
 * return, enter_ns = entry) for calls whose duration matters. api indexes
 * the probe table (src/probes/gpu_probes.c); CUPTI DRIVER records use the
 * same kind with corr_id set.
 */
struct rt_ev_cuda_api {
	struct rt_event_hdr hdr;
	__u64 enter_ns;
	__u64 stream;
	__u64 bytes;
	__u64 corr_id; /* CUPTI correlation id, 0 from uprobes */
	__u32 api;
	__s32 ret;
	__u16 api_class; /* enum rt_cuda_api_class */
	__u8 copy_kind; /* enum rt_copy_kind */
	__u8 _pad[5];
};

enum rt_nccl_op {
	RT_NCCL_OTHER = 0,
	RT_NCCL_ALL_REDUCE = 1,
	RT_NCCL_ALL_GATHER = 2,
	RT_NCCL_REDUCE_SCATTER = 3,
	RT_NCCL_BROADCAST = 4,
	RT_NCCL_REDUCE = 5,
	RT_NCCL_SEND = 6,
	RT_NCCL_RECV = 7,
	RT_NCCL_GROUP_START = 8,
	RT_NCCL_GROUP_END = 9,
};

struct rt_ev_nccl {
	struct rt_event_hdr hdr;
	__u64 enter_ns;
	__u64 comm;
	__u64 stream;
	__u64 count; /* elements */
	__u32 op; /* enum rt_nccl_op */
	__s32 peer; /* send/recv */
	__u32 datatype;
	__s32 ret;
};

/* ---- GPU, device side (CUPTI) ------------------------------------------- */

/* hdr.ts_ns = start on the device clock, mapped to CLOCK_MONOTONIC */
struct rt_ev_gpu_kernel {
	struct rt_event_hdr hdr;
	__u64 end_ns;
	__u64 corr_id;
	__u64 name_hash; /* FNV-1a of the full (mangled) name */
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 grid[3];
	__u32 block[3];
	__u32 _pad;
	char name[RT_KERNEL_NAME_LEN];
};

struct rt_ev_gpu_memcpy {
	struct rt_event_hdr hdr;
	__u64 end_ns;
	__u64 corr_id;
	__u64 bytes;
	__u32 device;
	__u32 src_device;
	__u32 dst_device;
	__u32 stream;
	__u8 copy_kind; /* enum rt_copy_kind */
	__u8 _pad[7];
};

struct rt_ev_gpu_memset {
	struct rt_event_hdr hdr;
	__u64 end_ns;
	__u64 corr_id;
	__u64 bytes;
	__u32 device;
	__u32 stream;
};

enum rt_gpu_sync_type {
	RT_SYNC_UNKNOWN = 0,
	RT_SYNC_EVENT = 1,
	RT_SYNC_STREAM_WAIT_EVENT = 2,
	RT_SYNC_STREAM = 3,
	RT_SYNC_CONTEXT = 4,
};

/* hdr.tid = the CPU thread that waited */
struct rt_ev_gpu_sync {
	struct rt_event_hdr hdr;
	__u64 end_ns;
	__u64 corr_id;
	__u32 sync_type; /* enum rt_gpu_sync_type */
	__u32 stream;
	__u32 context;
	__u32 _pad;
};

/* links a CUPTI correlation id to an external (marker/step) id */
struct rt_ev_gpu_ext_corr {
	struct rt_event_hdr hdr;
	__u64 corr_id;
	__u64 external_id;
	__u32 external_kind;
	__u32 _pad;
};

enum rt_link_type {
	RT_LINK_PCIE = 1,
	RT_LINK_NVLINK = 2,
};

/*
 * Cumulative counters read from NVML (src/sources/nvml.c, docs/gpu.md
 * "Links"); hdr.ts_ns = sample time. tx/rx_bytes only grow (the daemon's
 * running totals over NVML's counters, wraps undone).
 */
struct rt_ev_link_sample {
	struct rt_event_hdr hdr;
	__u64 tx_bytes;
	__u64 rx_bytes;
	__u32 device; /* NVML device index */
	__u32 link; /* NVLink link, RT_LINK_ALL: all the device's links of that type */
	__u32 link_type; /* enum rt_link_type */
	__u32 max_mbps; /* the link's maximum bandwidth per direction, 10^6 B/s; 0 unknown */
};

#define RT_LINK_ALL 0xffffffffu

/* ---- bookkeeping -------------------------------------------------------- */

enum rt_loss_reason {
	RT_LOSS_RING_FULL = 1, /* BPF ring buffer reservation failed */
	RT_LOSS_CUPTI_DROPPED = 2, /* CUPTI reported dropped records */
	RT_LOSS_CUPTI_DISCARD = 3, /* a buffer went to the discard buffer */
	RT_LOSS_INVALID = 4, /* a record failed validation */
	RT_LOSS_INJECT_RING = 5, /* the injection ring was full */
	RT_LOSS_QUEUE_FULL = 6, /* a bounded user-space queue was full */
	RT_LOSS_STEP_TRUNC = 7, /* a marker step listed more than RT_MARK_STEP_MAX ids */
};

/*
 * `count` records of `lost_kind` (0: any) were lost between since_ns and
 * hdr.ts_ns. hdr.pid is the process they concerned, 0 when unknown (a full
 * ring loses the record that would have said).
 */
struct rt_ev_loss {
	struct rt_event_hdr hdr;
	__u64 since_ns;
	__u64 count;
	__u32 reason; /* enum rt_loss_reason */
	__u32 lost_kind;
};

/* hdr.ts_ns: source hdr.source will deliver nothing earlier than this */
struct rt_ev_watermark {
	struct rt_event_hdr hdr;
};

/* a CLOCK_REALTIME/CLOCK_MONOTONIC pair; hdr.ts_ns = monotonic */
struct rt_ev_clock {
	struct rt_event_hdr hdr;
	__u64 realtime_ns;
};

enum rt_source_type {
	RT_SRC_BPF = 1,
	RT_SRC_CUPTI = 2,
	RT_SRC_DAEMON = 3,
	RT_SRC_SYNTHETIC = 4,
	RT_SRC_MARKER = 5, /* a process's marker ring (include/reqtrace/mark_ring.h) */
};

/* names a source id; written before the source's first record */
struct rt_ev_source_info {
	struct rt_event_hdr hdr;
	__u32 id;
	__u32 type; /* enum rt_source_type */
	char name[RT_NAME_LEN];
};

/* hdr.pid joins (or, with `leave`, leaves) target group `group_id` */
struct rt_ev_target {
	struct rt_event_hdr hdr;
	__u32 group_id;
	__u32 leave;
	char group[RT_NAME_LEN];
	char comm[RT_COMM_LEN];
};

/* last record of a complete recording */
struct rt_ev_trace_end {
	struct rt_event_hdr hdr;
	__u64 records; /* records before this one */
};

#define RT_EVENT_SIZE_ALIGN(n) (((n) + RT_EVENT_ALIGN - 1) & ~(RT_EVENT_ALIGN - 1))

#endif /* REQTRACE_EVENT_H */
