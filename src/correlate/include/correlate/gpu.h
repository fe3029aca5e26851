/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU work attributed to requests (the rules are docs/gpu.md's
 * "Attribution"): the correlator's GPU counters and per-device busy time,
 * for `reqtrace status` and the tests. The state behind them is the
 * correlator's own (gpu_state.h).
 */
#ifndef RT_CORRELATE_GPU_H
#define RT_CORRELATE_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include <reqtrace/span.h> /* enum rt_gpu_split */

#define RT_GPU_SHARE_MAX 256 /* requests one GPU call is shared among */
#define RT_GPU_WAIT_MAX_NS (3600ULL * 1000000000ULL) /* longer timed calls are clamped */

#define RT_GPU_BUSY_DEVICES_MAX 32 /* devices with a busy series */
#define RT_GPU_BUSY_PIDS_MAX 16 /* processes remembered per device (for `processes`) */
#define RT_GPU_BUSY_WINDOW_S 60 /* seconds of per-second busy time kept */

/*
 * GPU busy time of one device over the last RT_GPU_BUSY_WINDOW_S seconds:
 * the union of the kernel intervals of every stream of every process that
 * ran kernels on it (the device is CUPTI's device id, the CUDA ordinal).
 */
struct rt_gpu_busy {
	uint32_t pid; /* the first process seen running kernels on the device */
	uint32_t device;
	uint32_t processes; /* distinct processes seen on it (counted up to RT_GPU_BUSY_PIDS_MAX) */
	uint64_t
		window_ns; /* the window: up to RT_GPU_BUSY_WINDOW_S s, less since the first kernel */
	uint64_t busy_ns; /* union of kernel intervals inside it */
	uint64_t busy_total_ns; /* since the first kernel */
	uint64_t kernels;
	double fraction; /* busy_ns / window_ns */
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
	uint64_t dev_nomem; /* CUPTI records dropped: no memory for the join tables */
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

#define RT_GPU_LINKS_MAX 32 /* (device, link type) pairs with link samples */
#define RT_GPU_LINK_RING 64 /* samples kept per link (the daemon reads NVML every second) */

/*
 * PCIe or NVLink traffic of one device from NVML's counters (LINK_SAMPLE
 * records, src/sources/nvml.c; docs/gpu.md "Links"): for the verdict's
 * transfer_bound and `reqtrace status`.
 */
struct rt_gpu_link {
	uint32_t device; /* NVML device index */
	uint32_t link_type; /* enum rt_link_type: RT_LINK_PCIE, RT_LINK_NVLINK */
	uint64_t max_bps; /* bytes/s per direction the link can carry; 0 unknown */
	uint64_t samples;
	uint64_t first_ns, last_ns; /* first and newest sample */
	uint64_t tx_total, rx_total; /* bytes between them */
	/* over the last RT_GPU_BUSY_WINDOW_S seconds of merged time */
	uint64_t window_ns; /* from the oldest sample in it to the newest; 0: one sample */
	uint64_t tx_bytes, rx_bytes;
	double tx_bps, rx_bps; /* bytes/s */
	double util; /* max(tx_bps, rx_bps) / max_bps; -1 when max_bps is unknown */
	double util_peak; /* the highest between two consecutive samples; -1 unknown */
};

struct rt_gpu_links {
	uint32_t n;
	uint64_t records; /* LINK_SAMPLE records applied */
	uint64_t refused; /* invalid (counters going back, bad type) or beyond the table */
	struct rt_gpu_link link[RT_GPU_LINKS_MAX];
};

struct rt_correlator;

/* PCIe and NVLink traffic per device as of the newest record applied. */
void rt_gpu_links(const struct rt_correlator *c, struct rt_gpu_links *out);

/*
 * Counters of gpu.c and gpu_device.c for `reqtrace status` and tests, with
 * the busy fraction of each device seen (st->busy[0..n_busy)) over the last
 * RT_GPU_BUSY_WINDOW_S seconds of merged time.
 */
void rt_gpu_stats(const struct rt_correlator *c, struct rt_gpu_stats *st);

/*
 * Per-second busy time of device `device` (all its processes; pid is not
 * used, kept for callers written when busy time was per process): fills busy_ns[]
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
