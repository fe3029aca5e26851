/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PCIe and NVLink byte counters per GPU from NVML (docs/gpu.md, "Links"):
 * libnvidia-ml.so.1 opened with dlopen (none linked, none needed to build),
 * its cumulative field values read by rt_nvml__sample() on the daemon's own
 * timer and handed out as LINK_SAMPLE records (the correlator turns them
 * into bytes, rates and utilisation: correlate/gpu.h, rt_gpu_links()).
 * Never nvmlDeviceGetPcieThroughput: it samples for ~20 ms per call.
 */
#ifndef RT_SOURCES_NVML_H
#define RT_SOURCES_NVML_H

#include <stdbool.h>
#include <stdint.h>

#include "sources/source.h"

#define RT_NVML_DEVICES_MAX 16 /* devices read; more are counted, not read */
#define RT_NVML_LIB_DEFAULT "libnvidia-ml.so.1"
#define RT_NVML_LIB_ENV "REQTRACE_NVML_LIB" /* another library (tests: the fake NVML) */

enum rt_nvml_state {
	RT_NVML_ABSENT = 0, /* the library is not there (no NVIDIA driver) */
	RT_NVML_OK = 1,
	RT_NVML_ERROR = 2, /* there, but unusable: a missing symbol, nvmlInit failed */
};

struct rt_nvml_dev {
	uint32_t index;
	bool pcie; /* the PCIe byte counters are readable */
	bool nvlink; /* the NVLink throughput counters are readable (links > 0) */
	uint32_t pcie_gen, pcie_width; /* maximum link generation and width; 0 unknown */
	uint32_t pcie_max_mbps; /* from them, per direction (10^6 B/s); 0 unknown */
	uint32_t nvlink_links; /* NVLINK_LINK_COUNT */
	uint32_t nvlink_max_mbps; /* links x NVLINK_SPEED_MBPS_COMMON; 0 unknown */
	/* running totals since the first sample, wraps undone */
	uint64_t pcie_tx, pcie_rx, nvlink_tx, nvlink_rx;
};

struct rt_nvml_stats {
	enum rt_nvml_state state;
	char error[128]; /* why ABSENT or ERROR; "" when OK */
	char library[256]; /* the name opened */
	uint32_t n_devices; /* read; devices_total may be more */
	uint32_t devices_total;
	uint64_t samples; /* rounds of reads */
	uint64_t read_errors; /* field reads that failed */
	struct rt_nvml_dev dev[RT_NVML_DEVICES_MAX];
};

struct rt_nvml;

/*
 * Opens lib (NULL: $REQTRACE_NVML_LIB, else libnvidia-ml.so.1), initialises
 * NVML and finds the devices. Never fails for a missing or broken library:
 * the state says so (rt_nvml__stats). NULL only without memory.
 */
struct rt_nvml *rt_nvml__open(const char *lib);

/*
 * One round: reads every device's counters and calls emit with one
 * LINK_SAMPLE per device and link type it can read (source `source`,
 * ts_ns = now_ns). The first round only takes the counters' starting values
 * (its totals are 0). Returns emit's first error, else 0; nothing when not OK.
 */
int rt_nvml__sample(struct rt_nvml *n, uint64_t now_ns, uint32_t source, rt_event_fn emit,
		    void *ctx);

void rt_nvml__stats(const struct rt_nvml *n, struct rt_nvml_stats *st);

/* "absent", "ok", "error" */
const char *rt_nvml_state_name(enum rt_nvml_state s);

/* PCIe bandwidth per direction of a link, 10^6 B/s (after encoding); 0 unknown. */
uint32_t rt_nvml_pcie_mbps(uint32_t gen, uint32_t width);

/* nvmlShutdown and dlclose; NULL is fine. */
void rt_nvml__close(struct rt_nvml *n);

#endif /* RT_SOURCES_NVML_H */
