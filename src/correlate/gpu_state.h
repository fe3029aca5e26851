/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The correlator's GPU state (gpu.c, gpu_device.c): one struct rt_gpu_state
 * per correlator; each request that got GPU work has a struct rt_gpu_acc.
 */
#ifndef RT_CORRELATE_GPU_STATE_H
#define RT_CORRELATE_GPU_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "correlate/gpu.h"

#define RT_GPU_STREAMS_MAX 256 /* streams with collectives awaiting a sync, at once */

/* ---- device time (CUPTI): gpu_device.c ---- */

#define RT_GPU_DEV_CALLS_MAX 16384 /* DRIVER records kept for their device records */
#define RT_GPU_DEV_HELD_MAX 4096 /* device records held for their DRIVER record */
#define RT_GPU_DEV_SNAPS_MAX 256 /* distinct owner sets named by kept calls */
#define RT_GPU_DEV_RECENT 4 /* owner sets compared before a new one is made */
/* a call's device work must begin within this after the call returned */
#define RT_GPU_DEV_CALL_TTL_NS (10ULL * 1000000000ULL)
/* a held device record's DRIVER record must come within this after it began */
#define RT_GPU_DEV_HELD_TTL_NS (10ULL * 1000000000ULL)
/* A CUPTI DRIVER record of a call that queues device work, awaiting that work. */
struct rt_gpu_dev_call {
	uint64_t key; /* first: the index reads it here */
	uint64_t corr;
	uint64_t ts; /* the call's return */
	uint32_t source, pid;
	uint32_t snap; /* owner set: index + 1, 0: nobody to charge */
	uint32_t snap_gen; /* the set's generation when this call took it */
	uint32_t matched; /* device records joined through it */
	uint32_t used;
};

/* A device record that came before its DRIVER record. */
struct rt_gpu_dev_held {
	uint64_t key; /* first: the index reads it here */
	uint64_t corr;
	uint64_t start, end;
	uint32_t source, pid;
	uint32_t older; /* the next older held record of this key: index + 1, 0: none */
	uint16_t kind; /* RT_EV_GPU_KERNEL, _MEMCPY, _MEMSET */
	uint16_t used;
};

/* The requests a call was for, shared by the calls that had the same ones. */
struct rt_gpu_dev_snap {
	uint64_t hash;
	uint32_t gen; /* bumped when the slot is reused */
	uint32_t refs; /* kept calls naming it */
	uint32_t n;
	uint32_t split; /* enum rt_gpu_split: how the time is divided */
	uint64_t weight_sum; /* of w[]; equal shares when every weight is 1 */
	uint64_t serial[RT_GPU_SHARE_MAX];
	uint32_t w[RT_GPU_SHARE_MAX]; /* weights: tokens each member advanced, else 1 */
};

/*
 * Union of the kernel intervals of one device, across its streams and the
 * processes that use it: kernels of all sources come in one merge order.
 */
struct rt_gpu_busy_dev {
	uint32_t device;
	uint32_t used;
	uint32_t n_pids;
	uint32_t pids[RT_GPU_BUSY_PIDS_MAX]; /* processes seen, the first first */
	uint32_t open; /* open_start/open_end hold an interval */
	uint64_t open_start, open_end; /* the union interval being grown */
	uint64_t done_until; /* end of the last interval moved into the buckets */
	uint64_t first_ns; /* first kernel start */
	uint64_t busy_total_ns; /* since the first kernel, closed intervals */
	uint64_t kernels;
	uint64_t sec[RT_GPU_BUSY_WINDOW_S]; /* which second bucket i holds (ts / 1e9) */
	uint64_t busy[RT_GPU_BUSY_WINDOW_S]; /* busy ns in that second */
};

/*
 * Fixed tables, 1.7 MB together, allocated once when the first CUPTI record
 * comes (a target without CUPTI never pays for them): indices are open
 * addressing over entry index + 1.
 */
struct rt_gpu_dev {
	struct rt_gpu_dev_call calls[RT_GPU_DEV_CALLS_MAX]; /* a FIFO ring, oldest at tail */
	uint32_t calls_ix[2 * RT_GPU_DEV_CALLS_MAX];
	uint32_t calls_tail, calls_len;
	struct rt_gpu_dev_held held[RT_GPU_DEV_HELD_MAX]; /* a FIFO ring, oldest at tail */
	uint32_t held_ix[2 * RT_GPU_DEV_HELD_MAX]; /* key -> newest held record */
	uint32_t held_tail, held_len;
	struct rt_gpu_dev_snap snaps[RT_GPU_DEV_SNAPS_MAX];
	uint32_t recent[RT_GPU_DEV_RECENT]; /* newest owner sets: index + 1 */
	uint32_t snap_next;
	/* bit i: snaps[i].refs != 0 (a free slot is found without reading every set) */
	uint64_t snap_busy[RT_GPU_DEV_SNAPS_MAX / 64];
	uint32_t turn; /* whose turn it is to get a remainder */
	struct rt_gpu_busy_dev busy[RT_GPU_BUSY_DEVICES_MAX];
};

/* What was attributed to one request. */
struct rt_gpu_acc {
	uint64_t launches; /* kernel and graph launches (shares of) */
	uint64_t h2d_bytes, d2h_bytes, p2p_bytes; /* shares of the bytes copied */
	uint64_t nccl_bytes; /* shares of collectives' bytes (count x datatype size) */
	int64_t sync_wait_ns; /* wall time the CPU waited on the GPU for it */
	int64_t comm_wait_ns; /* the part of sync_wait_ns that followed collectives */
	uint64_t calls; /* records that named it */
	/* device time from CUPTI records (gpu_device.c), meaningful when `device` */
	int64_t kernel_ns; /* shares of kernel time */
	int64_t memcpy_ns; /* shares of copy and memset time */
	int64_t step_ns; /* whole durations of the device records it had shares of */
	int64_t split_ns[RT_GPU_SPLIT__COUNT]; /* its device time by rule (enum rt_gpu_split) */
	uint64_t split_calls[RT_GPU_SPLIT__COUNT]; /* its CPU-side records by rule */
	bool device; /* a device record was charged to it: kernel_ms/memcpy_ms are not null */
};

/* ---- links (NVML): gpu_link.c ---- */

struct rt_gpu_link_sample {
	uint64_t ts, tx, rx;
};

struct rt_gpu_link_state {
	uint32_t device, link_type;
	uint32_t used;
	uint32_t max_mbps;
	uint64_t samples;
	uint64_t first_ns;
	uint64_t tx0, rx0; /* counters at the first sample */
	uint32_t head, len; /* ring: newest at (head + len - 1) % RT_GPU_LINK_RING */
	struct rt_gpu_link_sample ring[RT_GPU_LINK_RING];
};

/* A stream on which collectives were enqueued since it was last waited for. */
struct rt_gpu_stream {
	uint32_t pid;
	uint64_t stream;
	uint64_t since; /* first collective enqueued */
};

struct rt_gpu_state {
	struct rt_gpu_stream nccl[RT_GPU_STREAMS_MAX];
	uint32_t n_nccl;
	/* the engine set (docs/gpu.md) of the last call, reused while only GPU records arrive */
	uint64_t set[RT_GPU_SHARE_MAX];
	uint32_t n_set;
	uint32_t set_pid;
	uint64_t set_gen; /* non-GPU records seen when it was computed, +1 (0: none) */
	uint32_t turn; /* whose turn it is to get a remainder (round robin) */
	struct rt_gpu_stats st;
	struct rt_gpu_dev *dev; /* gpu_device.c; NULL until the first CUPTI record */
	struct rt_gpu_link_state links[RT_GPU_LINKS_MAX]; /* gpu_link.c */
	uint64_t link_records, link_refused;
};

#endif /* RT_CORRELATE_GPU_STATE_H */
