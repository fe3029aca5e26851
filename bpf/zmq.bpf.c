// SPDX-License-Identifier: GPL-2.0
/*
 * Uprobes on libzmq's zmq_msg_send and zmq_msg_recv: each ZeroMQ frame an
 * application thread hands to libzmq or gets from it, with its bytes
 * (docs/events.md "ZeroMQ", docs/engines/vllm-v1.md "Capture"). libzmq's I/O
 * thread does the socket syscalls, batching and splitting messages, so the
 * sockets show neither the thread nor the frame: this boundary does.
 *
 * A frame is emitted at the return of a successful call (a non-blocking
 * attempt that returns EAGAIN is no frame). zmq_msg_send re-initialises
 * the message on success, so its zmq_msg_t is read at entry and kept per
 * thread: an inline (VSM) frame's bytes travel in that copy, a larger
 * frame's bytes are copied at entry into the thread's task storage.
 * zmq_msg_recv fills the message, so it is read at return. Like the
 * marker uprobes, one attachment per library file covers every process
 * mapping it; the tgid filter keeps untraced ones out.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include <reqtrace/event.h>
#include "rt_bpf_shared.h"
#include "rt_common.bpf.h"
#include "zmq_shared.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Bytes of the frame read at most; set by the loader (at most RT_ZMQ_CAP_MAX). */
const volatile __u32 zmq_cap_bytes = RT_ZMQ_CAP_MAX;

struct zmq_call {
	__u64 enter_ns;
	__u64 msg;
	__u64 sock;
	__u32 sflags; /* zmq_msg_send's flags argument */
	__u32 dir;
	__u8 raw[RT_ZMSG_SIZE]; /* send: the zmq_msg_t at entry */
	__u64 data; /* send, LMSG/ZCLMSG/CMSG: the data pointer at entry */
	__u64 size;
};

/*
 * A send's bytes, copied at entry. At zmq_msg_send's return the message
 * belongs to libzmq: its I/O thread may already have written and freed a
 * large frame's content, and the allocator reused it (seen as a vLLM ADD
 * whose request id read "cmpl-v@" under load). Task storage: one buffer
 * per sending thread, made on its first send of a large frame and freed
 * with the thread.
 */
struct zmq_send_copy {
	__u64 enter_ns; /* the call the bytes belong to */
	__u32 fault; /* bit i: chunk i could not be read */
	__u32 pad;
	__u8 data[RT_ZMQ_CAP_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct zmq_send_copy);
} zmq_send_copies SEC(".maps");

/* Calls in progress, by thread. LRU: a thread that dies mid-call does not leak its slot. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RT_ZMQ_CALLS_MAX);
	__type(key, __u64);
	__type(value, struct zmq_call);
} zmq_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RT_ZMQ_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} zmq_counters SEC(".maps");

/* A record is built here and copied out with bpf_ringbuf_output(): a reservation needs a constant size. */
struct zmq_scratch {
	__u64 ev[sizeof(struct rt_ev_zmq_msg) / 8]; /* struct rt_ev_zmq_msg, data[] follows */
	__u8 data[RT_ZMQ_CHUNK_MAX + 8];
};

#define ZEV(s) ((struct rt_ev_zmq_msg *)(s)->ev)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zmq_scratch);
} zmq_scratch SEC(".maps");

static __always_inline void zcount(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&zmq_counters, &slot);

	if (v)
		__sync_fetch_and_add(v, n);
}

/* Where a message's bytes are: inline in `raw` (VSM) or behind a user pointer. */
struct frame_src {
	__u64 data; /* user pointer; 0 with inline */
	struct zmq_send_copy *copy; /* a send's bytes as copied at entry, else NULL */
	__u64 size;
	__u8 type;
	__u8 mflags; /* the msg_t flags byte */
	bool known;
	bool inline_;
};

static __always_inline void locate(const __u8 *raw, struct frame_src *f)
{
	__u64 ptr = *(const __u64 *)&raw[RT_ZMSG_PTR];
	__u64 pair[2] = { 0, 0 };

	f->copy = NULL;
	f->type = raw[RT_ZMSG_TYPE];
	f->mflags = raw[RT_ZMSG_FLAGS];
	f->known = true;
	f->inline_ = false;
	switch (f->type) {
	case RT_ZMSG_TYPE_VSM:
		f->inline_ = true;
		f->size = raw[RT_ZMSG_VSM_SIZE];
		f->data = 0;
		break;
	case RT_ZMSG_TYPE_LMSG:
	case RT_ZMSG_TYPE_ZCLMSG:
		/* content_t: data pointer, then size */
		if (bpf_probe_read_user(pair, sizeof(pair), (void *)ptr))
			f->known = false;
		f->data = pair[0];
		f->size = pair[1];
		break;
	case RT_ZMSG_TYPE_CMSG:
		f->data = ptr;
		f->size = *(const __u64 *)&raw[RT_ZMSG_CMSG_SIZE];
		break;
	default:
		f->known = false;
	}
}

/*
 * One frame of `len` bytes (what the call returned) as records of at most
 * RT_ZMQ_CHUNK_MAX bytes up to the capture bound. `raw` is a copy of the
 * message (kernel memory) for an inline frame.
 */
static __always_inline void emit(struct zmq_call *c, const __u8 *raw, const struct frame_src *f,
				 __u64 len, __u8 flags, __u64 ts, __u64 id)
{
	struct zmq_scratch *s;
	__u32 zero = 0, i;
	__u64 cap = zmq_cap_bytes, have, off, n, size;

	if (cap > RT_ZMQ_CAP_MAX)
		cap = RT_ZMQ_CAP_MAX;
	if (!f->known) {
		flags |= RT_ZMQ_LAYOUT;
		zcount(RT_ZMQ_CNT_LAYOUT, 1);
		have = 0;
	} else {
		/* the return value and the message agree; trust the smaller for reading */
		have = f->size < len ? f->size : len;
		if (have > cap) {
			flags |= RT_ZMQ_CUT;
			zcount(RT_ZMQ_CNT_CUT, 1);
			zcount(RT_ZMQ_CNT_CUT_BYTES, len - cap);
			have = cap;
		}
	}
	zcount(RT_ZMQ_CNT_FRAMES, 1);
	for (i = 0; i < RT_ZMQ_CAP_MAX / RT_ZMQ_CHUNK_MAX; i++) {
		off = (__u64)i * RT_ZMQ_CHUNK_MAX;
		if (i && off >= have)
			break;
		s = bpf_map_lookup_elem(&zmq_scratch, &zero);
		if (!s)
			return;
		__builtin_memset(s->ev, 0, sizeof(s->ev));
		n = have - off;
		if (n > RT_ZMQ_CHUNK_MAX)
			n = RT_ZMQ_CHUNK_MAX;
		barrier_var(n);
		ZEV(s)->flags = flags;
		if (n && f->inline_) {
			if (n > RT_ZMSG_VSM_MAX)
				n = RT_ZMSG_VSM_MAX;
			barrier_var(n);
			bpf_probe_read_kernel(s->data, n, &raw[RT_ZMSG_VSM_DATA]);
		} else if (n && f->copy) {
			if (f->copy->fault & (1u << i)) {
				ZEV(s)->flags |= RT_ZMQ_FAULT;
				zcount(RT_ZMQ_CNT_FAULT, 1);
			} else {
				bpf_probe_read_kernel(s->data, n, &f->copy->data[off]);
			}
		} else if (n && f->data && !f->inline_ && c->dir == RT_ZMQ_SEND) {
			/* the send's copy was not kept: its bytes are gone, never read late */
			ZEV(s)->flags |= RT_ZMQ_FAULT;
			zcount(RT_ZMQ_CNT_FAULT, 1);
		} else if (n && bpf_probe_read_user(s->data, n, (void *)(f->data + off))) {
			ZEV(s)->flags |= RT_ZMQ_FAULT;
			zcount(RT_ZMQ_CNT_FAULT, 1);
		}
		if (n > RT_ZMQ_CHUNK_MAX)
			n = RT_ZMQ_CHUNK_MAX;
		barrier_var(n);
		/* zero the alignment padding instead of shipping stale bytes */
		*(__u64 *)&s->data[n] = 0;
		size = RT_EVENT_SIZE_ALIGN(sizeof(s->ev) + n);
		rt_hdr(&ZEV(s)->hdr, RT_EV_ZMQ_MSG, size, ts, id >> 32, (__u32)id);
		ZEV(s)->enter_ns = c->enter_ns;
		ZEV(s)->msg = c->msg;
		ZEV(s)->socket = c->sock;
		ZEV(s)->frame_len = len;
		ZEV(s)->offset = off;
		ZEV(s)->len = n;
		ZEV(s)->dir = c->dir;
		if (size > sizeof(*s))
			return;
		barrier_var(size);
		if (bpf_ringbuf_output(&rt_ring, s, size, rt_wake_flags(size, false)))
			rt_lost(RT_EV_ZMQ_MSG);
	}
}

/* Copy a send's bytes (up to the capture bound) while the caller still owns them. */
static __always_inline void keep_send_bytes(const struct zmq_call *c, const struct frame_src *f)
{
	struct zmq_send_copy *k;
	__u64 cap = zmq_cap_bytes, have, off, n;
	__u32 i;

	k = bpf_task_storage_get(&zmq_send_copies, bpf_get_current_task_btf(), NULL,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!k)
		return; /* no copy: the return reports the bytes as not read */
	if (cap > RT_ZMQ_CAP_MAX)
		cap = RT_ZMQ_CAP_MAX;
	have = f->size < cap ? f->size : cap;
	k->enter_ns = c->enter_ns;
	k->fault = 0;
	for (i = 0; i < RT_ZMQ_CAP_MAX / RT_ZMQ_CHUNK_MAX; i++) {
		off = (__u64)i * RT_ZMQ_CHUNK_MAX;
		if (off >= have)
			break;
		n = have - off;
		if (n > RT_ZMQ_CHUNK_MAX)
			n = RT_ZMQ_CHUNK_MAX;
		barrier_var(n);
		if (off > RT_ZMQ_CAP_MAX - RT_ZMQ_CHUNK_MAX)
			break;
		barrier_var(off);
		if (bpf_probe_read_user(&k->data[off], n, (void *)(f->data + off)))
			k->fault |= 1u << i;
	}
}

static __always_inline int enter(__u64 msg, __u64 sock, __u32 sflags, __u32 dir)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct zmq_call *c;
	struct frame_src f;
	static const struct zmq_call empty;

	if (!rt_traced(id >> 32))
		return 0;
	if (bpf_map_update_elem(&zmq_calls, &id, &empty, BPF_ANY)) {
		zcount(RT_ZMQ_CNT_CALLS_FULL, 1);
		return 0;
	}
	c = bpf_map_lookup_elem(&zmq_calls, &id);
	if (!c)
		return 0;
	c->enter_ns = bpf_ktime_get_ns();
	c->msg = msg;
	c->sock = sock;
	c->sflags = sflags;
	c->dir = dir;
	if (dir != RT_ZMQ_SEND)
		return 0;
	if (bpf_probe_read_user(c->raw, sizeof(c->raw), (void *)msg))
		return 0; /* raw stays zero: type 0, reported as an unknown layout */
	locate(c->raw, &f);
	c->data = f.data;
	c->size = f.size;
	if (f.known && !f.inline_ && f.data && f.size)
		keep_send_bytes(c, &f);
	return 0;
}

static __always_inline int leave(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 ts = bpf_ktime_get_ns();
	struct zmq_call *c;
	struct frame_src f;
	__u8 flags = 0;

	if (!rt_traced(id >> 32))
		return 0;
	c = bpf_map_lookup_elem(&zmq_calls, &id);
	if (!c) {
		zcount(RT_ZMQ_CNT_UNMATCHED, 1);
		return 0;
	}
	/* zmq_msg_send/recv return an int: the frame's size, or -1 */
	if ((int)ret < 0)
		goto out;
	if (c->dir == RT_ZMQ_SEND) {
		f.type = c->raw[RT_ZMSG_TYPE];
		f.known = f.type == RT_ZMSG_TYPE_VSM || f.type == RT_ZMSG_TYPE_LMSG ||
			  f.type == RT_ZMSG_TYPE_ZCLMSG || f.type == RT_ZMSG_TYPE_CMSG;
		f.inline_ = f.type == RT_ZMSG_TYPE_VSM;
		f.data = c->data;
		f.size = c->size;
		f.copy = NULL;
		if (!f.inline_ && f.data) {
			struct zmq_send_copy *k = bpf_task_storage_get(
				&zmq_send_copies, bpf_get_current_task_btf(), NULL, 0);

			if (k && k->enter_ns == c->enter_ns)
				f.copy = k;
		}
		if (c->sflags & RT_ZMQ_SNDMORE)
			flags |= RT_ZMQ_MORE;
		emit(c, c->raw, &f, (__u32)ret, flags, ts, id);
	} else {
		/* the message as libzmq filled it; reuse the call's raw[] as the copy */
		if (bpf_probe_read_user(c->raw, sizeof(c->raw), (void *)c->msg))
			__builtin_memset(c->raw, 0, sizeof(c->raw));
		locate(c->raw, &f);
		if (f.mflags & RT_ZMSG_FLAG_MORE)
			flags |= RT_ZMQ_MORE;
		emit(c, c->raw, &f, (__u32)ret, flags, ts, id);
	}
out:
	bpf_map_delete_elem(&zmq_calls, &id);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rt_zmq_send_enter, void *msg, void *sock, int flags)
{
	return enter((__u64)msg, (__u64)sock, (__u32)flags, RT_ZMQ_SEND);
}

SEC("uretprobe")
int BPF_KRETPROBE(rt_zmq_send_ret, long ret)
{
	return leave(ret);
}

SEC("uprobe")
int BPF_KPROBE(rt_zmq_recv_enter, void *msg, void *sock, int flags)
{
	return enter((__u64)msg, (__u64)sock, (__u32)flags, RT_ZMQ_RECV);
}

SEC("uretprobe")
int BPF_KRETPROBE(rt_zmq_recv_ret, long ret)
{
	return leave(ret);
}
