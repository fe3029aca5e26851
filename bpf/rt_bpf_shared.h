/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Constants shared by the BPF programs (bpf/<name>.bpf.c) and their loader
 * (src/sources/bpf_source.c). No includes, so that both `clang -target bpf`
 * (after vmlinux.h) and the daemon can use it; include it after
 * <reqtrace/event.h>.
 */
#ifndef RT_BPF_SHARED_H
#define RT_BPF_SHARED_H

/*
 * Slots of the per-CPU counter array `rt_counters`. Slots 0 .. RT_EV__MAX-1
 * count failed ring reservations per record kind; the loader turns their
 * increase into RT_EV_LOSS records.
 */
enum rt_bpf_counter {
	RT_CNT_LOST_ALL = RT_EV__MAX, /* every failed reservation, any kind */
	RT_CNT_TARGETS_FULL = RT_EV__MAX + 1, /* traced_tgids had no room for a child */
	RT_CNT_ARGS_FULL = RT_EV__MAX + 2, /* sock_args update failed */
	RT_CNT_RING_PEAK = RT_EV__MAX + 3, /* max bytes in the ring seen at a submit (not a sum) */
	RT_CNT_STEP_TRUNC = RT_EV__MAX + 4, /* step members beyond RT_BPF_MARK_STEP_MAX */
	RT_CNT_ARRIVALS_FULL = RT_EV__MAX + 5, /* arrivals insert failed: connection not followed */
	RT_CNT__MAX = RT_EV__MAX + 6,
};

#define RT_BPF_TARGETS_DEFAULT 4096 /* traced_tgids entries */
#define RT_BPF_ARGS_MAX 16384 /* threads inside a traced socket syscall at once */
#define RT_BPF_ARRIVALS_MAX 65536 /* followed connections on watched ports (sock.bpf.c) */
#define RT_BPF_MARK_STEP_MAX 256 /* == RT_MARK_STEP_MAX (reqtrace/marker.h) */

/* Payload bytes the sock scratch buffer holds (head and tail at their maximum). */
#define RT_BPF_IO_DATA_MAX (RT_SOCK_HEAD_MAX + RT_SOCK_TAIL_MAX)

#endif /* RT_BPF_SHARED_H */
