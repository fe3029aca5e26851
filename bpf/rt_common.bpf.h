/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every reqtrace BPF object shares: the traced-tgid map, the ring, the
 * per-CPU counters and the record header helpers. Each object declares its
 * own copy of these maps; the loader creates them once (with the sched
 * object) and hands the same fds to the others with bpf_map__reuse_fd(), so
 * there is one target set and one ring.
 *
 * Include after vmlinux.h, the libbpf headers, <reqtrace/event.h> and
 * "rt_bpf_shared.h".
 */
#ifndef RT_COMMON_BPF_H
#define RT_COMMON_BPF_H

/* tgid -> target group id. Resized by the loader (max_targets) before load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_BPF_TARGETS_DEFAULT);
	__type(key, __u32);
	__type(value, __u32);
} traced_tgids SEC(".maps");

/* Resized by the loader (ring_bytes, a power of two) before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} rt_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RT_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} rt_counters SEC(".maps");

/* Set by the loader before load. */
const volatile __u32 rt_source_id = 0;
/* A submit wakes the consumer only past this many unread bytes (ring / 8). */
const volatile __u64 rt_wake_bytes = 1 << 19;

static __always_inline bool rt_traced(__u32 tgid)
{
	return tgid && bpf_map_lookup_elem(&traced_tgids, &tgid);
}

static __always_inline void rt_count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&rt_counters, &slot);

	/* atomic: a raw_tp in an interrupt may nest on this CPU */
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline void rt_lost(__u32 kind)
{
	rt_count(kind & (RT_EV__MAX - 1));
	rt_count(RT_CNT_LOST_ALL);
}

/*
 * Wakeups are batched: the daemon drains on a timer, and is woken early only
 * by the record that takes the ring past rt_wake_bytes. Not by every record
 * past it: a forced wakeup is an irq_work (a self-IPI, a VM exit under a
 * hypervisor: microseconds), and the reader's epoll is level-triggered, so
 * once woken it keeps draining until the ring is empty. `size` is the
 * record's size; `queued` says whether it is already in the ring (reserved)
 * or about to be added (bpf_ringbuf_output). Also keeps the per-CPU peak
 * fill for `reqtrace status`.
 */
static __always_inline __u64 rt_wake_flags(__u64 size, bool queued)
{
	__u64 avail = bpf_ringbuf_query(&rt_ring, BPF_RB_AVAIL_DATA);
	__u32 slot = RT_CNT_RING_PEAK;
	__u64 *peak = bpf_map_lookup_elem(&rt_counters, &slot);
	__u64 before = queued ? avail - size : avail;

	if (!queued)
		avail += size;
	if (peak && avail > *peak)
		*peak = avail;
	return before <= rt_wake_bytes && avail > rt_wake_bytes ? BPF_RB_FORCE_WAKEUP :
								  BPF_RB_NO_WAKEUP;
}

static __always_inline void rt_hdr(struct rt_event_hdr *h, __u16 kind, __u16 size, __u64 ts,
				   __u32 pid, __u32 tid)
{
	h->kind = kind;
	h->size = size;
	h->source = rt_source_id;
	h->ts_ns = ts;
	h->pid = pid;
	h->tid = tid;
}

/* Reserve a fixed-size record and zero it, or count the loss and return NULL. */
#define RT_RESERVE(type, kind)                                                                     \
	({                                                                                         \
		type *__r = bpf_ringbuf_reserve(&rt_ring, sizeof(type), 0);                        \
		if (__r)                                                                           \
			__builtin_memset(__r, 0, sizeof(type));                                    \
		else                                                                               \
			rt_lost(kind);                                                             \
		__r;                                                                               \
	})

#define RT_SUBMIT(rec) bpf_ringbuf_submit((rec), rt_wake_flags(sizeof(*(rec)), true))

#endif /* RT_COMMON_BPF_H */
