/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU work seen from the CPU, attributed to requests (gpu.c; the rules are
 * docs/gpu.md's "Attribution"). The correlator keeps one struct
 * rt_gpu_state; each request that got GPU work has a struct rt_gpu_acc.
 * Correlator internals: not a public header.
 */
#ifndef RT_CORRELATE_GPU_H
#define RT_CORRELATE_GPU_H

#include <stdbool.h>
#include <stdint.h>

#define RT_GPU_STREAMS_MAX 256 /* streams with collectives awaiting a sync, at once */
#define RT_GPU_SHARE_MAX 256 /* requests one GPU call is shared among */
#define RT_GPU_WAIT_MAX_NS (3600ULL * 1000000000ULL) /* longer timed calls are clamped */

/* ---- device time (CUPTI): gpu_device.c ---- */

#define RT_GPU_DEV_CALLS_MAX 16384 /* DRIVER records kept for their device records */
#define RT_GPU_DEV_HELD_MAX 4096 /* device records held for their DRIVER record */
#define RT_GPU_DEV_SNAPS_MAX 256 /* distinct owner sets named by kept calls */
#define RT_GPU_DEV_RECENT 4 /* owner sets compared before a new one is made */
/* a call's device work must begin within this after the call returned */
#define RT_GPU_DEV_CALL_TTL_NS (10ULL * 1000000000ULL)
/* a held device record's DRIVER record must come within this after it began */
#define RT_GPU_DEV_HELD_TTL_NS (10ULL * 1000000000ULL)
#define RT_GPU_BUSY_DEVICES_MAX 32 /* (process, device) pairs with a busy series */
#define RT_GPU_BUSY_WINDOW_S 60 /* seconds of per-second busy time kept */

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
	uint32_t _pad;
	uint64_t serial[RT_GPU_SHARE_MAX];
};

/* Union of the kernel intervals of one device of one process. */
struct rt_gpu_busy_dev {
	uint32_t pid, device;
	uint32_t used;
	uint32_t open; /* open_start/open_end hold an interval */
	uint64_t open_start, open_end; /* the union interval being grown */
	uint64_t done_until; /* end of the last interval moved into the buckets */
	uint64_t first_ns; /* first kernel start */
	uint64_t busy_total_ns; /* since the first kernel, closed intervals */
	uint64_t kernels;
	uint64_t sec[RT_GPU_BUSY_WINDOW_S]; /* which second bucket i holds (ts / 1e9) */
	uint64_t busy[RT_GPU_BUSY_WINDOW_S]; /* busy ns in that second */
};

/* Fixed tables (no allocation): indices are open addressing over entry index + 1. */
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
	uint32_t turn; /* whose turn it is to get a remainder */
	struct rt_gpu_busy_dev busy[RT_GPU_BUSY_DEVICES_MAX];
};

/* GPU busy time of one device over the last RT_GPU_BUSY_WINDOW_S seconds. */
struct rt_gpu_busy {
	uint32_t pid, device;
	uint64_t
		window_ns; /* the window: up to RT_GPU_BUSY_WINDOW_S s, less since the first kernel */
	uint64_t busy_ns; /* union of kernel intervals inside it */
	uint64_t busy_total_ns; /* since the first kernel */
	uint64_t kernels;
	double fraction; /* busy_ns / window_ns */
};

/* What was attributed to one request. */
struct rt_gpu_acc {
	uint64_t launches; /* kernel and graph launches (shares of) */
	uint64_t h2d_bytes, d2h_bytes, p2p_bytes; /* shares of the bytes copied */
	int64_t sync_wait_ns; /* wall time the CPU waited on the GPU for it */
	int64_t comm_wait_ns; /* the part of sync_wait_ns that followed collectives */
	uint64_t calls; /* records that named it */
	/* device time from CUPTI records (gpu_device.c), meaningful when `device` */
	int64_t kernel_ns; /* shares of kernel time */
	int64_t memcpy_ns; /* shares of copy and memset time */
	bool device; /* a device record was charged to it: kernel_ms/memcpy_ms are not null */
};

/* A stream on which collectives were enqueued since it was last waited for. */
struct rt_gpu_stream {
	uint32_t pid;
	uint64_t stream;
	uint64_t since; /* first collective enqueued */
};

struct rt_gpu_stats {
	uint64_t records; /* GPU records received */
	uint64_t attributed; /* records charged to at least one request */
	uint64_t unattributed; /* records with no request to charge */
	uint64_t cupti_driver; /* CUPTI DRIVER records (corr_id != 0): left to the CUPTI stage */
	uint64_t device; /* device-side records: left to the CUPTI stage */
	uint64_t invalid; /* too short, bad enum, exit before entry */
	uint64_t clamped; /* timed calls longer than RT_GPU_WAIT_MAX_NS */
	uint64_t streams_evicted; /* pending-collective streams dropped (table full) */
	uint64_t share_truncated; /* calls with more than RT_GPU_SHARE_MAX requests to share */
	int64_t unattributed_wait_ns; /* sync wait no request was charged with */

	/* device time (CUPTI, gpu_device.c; docs/gpu.md "Device time (CUPTI)") */
	uint64_t dev_calls; /* DRIVER records of device work kept for the join */
	uint64_t dev_records; /* KERNEL, MEMCPY and MEMSET records */
	uint64_t dev_joined; /* device records charged through their DRIVER record */
	uint64_t dev_held; /* device records that came before their DRIVER record */
	uint64_t dev_held_dropped; /* held ones pushed out of a full table: not charged */
	uint64_t dev_unmatched; /* held ones whose DRIVER record never came: not charged */
	uint64_t dev_calls_evicted; /* calls pushed out of a full table before any device record */
	uint64_t dev_calls_unmatched; /* calls that expired without a device record */
	uint64_t dev_no_corr; /* device records with correlation id 0: not charged */
	uint64_t dev_invalid; /* end before start, bad class or copy kind */
	uint64_t dev_clamped; /* device durations longer than RT_GPU_WAIT_MAX_NS */
	uint64_t dev_unattributed; /* device records whose call had nobody to charge */
	uint64_t dev_snaps_overwritten; /* owner sets reused while a kept call named them */
	int64_t dev_unattributed_ns; /* device time nobody was charged with */
	int64_t dev_orphan_ns; /* shares of requests that had ended when the record came */
	uint64_t busy_late; /* kernels that began before the time already counted busy */
	uint64_t busy_devices_full; /* kernels of devices beyond RT_GPU_BUSY_DEVICES_MAX */
	/* GPU busy fraction per device, filled by rt_gpu_stats() (not kept here) */
	uint32_t n_busy;
	struct rt_gpu_busy busy[RT_GPU_BUSY_DEVICES_MAX];
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
	struct rt_gpu_dev dev; /* gpu_device.c */
};

struct rt_correlator;

/*
 * Counters of gpu.c and gpu_device.c for `reqtrace status` and tests, with
 * the busy fraction of each device seen (st->busy[0..n_busy)) over the last
 * RT_GPU_BUSY_WINDOW_S seconds of merged time.
 */
void rt_gpu_stats(const struct rt_correlator *c, struct rt_gpu_stats *st);

/*
 * Per-second busy time of device `device` of process pid: fills busy_ns[]
 * with up to max seconds, oldest first, ending with the second of the
 * newest record applied; *first_sec (may be NULL) gets the first one's
 * second (CLOCK_MONOTONIC ns / 1e9). Returns how many were filled, 0 for a
 * device without kernels.
 */
uint32_t rt_gpu_busy_series(const struct rt_correlator *c, uint32_t pid, uint32_t device,
			    uint64_t *busy_ns, uint32_t max, uint64_t *first_sec);

/*
 * Share i (0-based) of n of an integer quantity q: equal parts, and the
 * remainder (q % n) to share `rest`. 0 when n is 0.
 */
uint64_t rt_gpu_share(uint64_t q, uint32_t n, uint32_t i, uint32_t rest);

#endif /* RT_CORRELATE_GPU_H */
