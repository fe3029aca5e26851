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
	RT_CNT_ARGS_FULL = RT_EV__MAX + 2, /* sock_args task storage not created (no memory) */
	RT_CNT_RING_PEAK = RT_EV__MAX + 3, /* max bytes in the ring seen at a submit (not a sum) */
	RT_CNT_STEP_TRUNC = RT_EV__MAX + 4, /* step members beyond RT_BPF_MARK_STEP_MAX */
	RT_CNT_ARRIVALS_FULL = RT_EV__MAX + 5, /* arrivals insert failed: connection not followed */
	RT_CNT__MAX = RT_EV__MAX + 6,
};

#define RT_BPF_TARGETS_DEFAULT 4096 /* traced_tgids entries */
#define RT_BPF_ARRIVALS_MAX 65536 /* followed connections on watched ports (sock.bpf.c) */
#define RT_BPF_MARK_STEP_MAX 256 /* == RT_MARK_STEP_MAX (reqtrace/marker.h) */

/* Payload bytes the sock scratch buffer holds (head and tail at their maximum). */
#define RT_BPF_IO_DATA_MAX (RT_SOCK_HEAD_MAX + RT_SOCK_TAIL_MAX)

/*
 * Engine-pack uprobes (bpf/pack.bpf.c): the loader gives every attached
 * probe a slot of `pack_specs`, whose index is the probe's BPF cookie.
 */
#define RT_BPF_PACK_SLOTS 1024

struct rt_bpf_pack_spec {
	__u32 pack; /* the wire pack id: the index in the loaded packs */
	__u16 role; /* enum rt_pack_role; 0: a free slot */
	__u8 n_args;
	__u8 reader; /* enum rt_pack_reader (src/sources/include/sources/pack.h) */
	__u8 args[4]; /* 1-based argument numbers */
	__u8 arg_type[4]; /* enum rt_pack_type of each */
	__u8 ret_type; /* enum rt_pack_type of the return value */
	__u8 _pad[3];
};

/* Slots of pack.bpf.c's per-CPU `pack_counters`. */
enum rt_bpf_pack_counter {
	RT_PACK_CNT_BAD_COOKIE = 0, /* a hit whose cookie names no spec */
	RT_PACK_CNT_BATCH_UNREADABLE = 1, /* llama_decode's batch itself could not be read */
	RT_PACK_CNT__MAX = 2,
};

#endif /* RT_BPF_SHARED_H */
