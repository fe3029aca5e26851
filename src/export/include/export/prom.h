/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus text exposition (format 0.0.4) of finished spans and daemon
 * counters: docs/metrics.md. Spans go in as they finish (histograms with
 * fixed buckets, fixed-size tables: memory does not grow with traffic);
 * text comes out on demand. No I/O of its own beyond the FILE it is given,
 * so unit tests drive it with spans alone.
 */
#ifndef RT_EXPORT_PROM_H
#define RT_EXPORT_PROM_H

#include <stdint.h>
#include <stdio.h>

#include <reqtrace/span.h>

#define RT_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* label bounds: what does not fit is counted under "other" */
#define RT_PROM_GROUPS_MAX 16
#define RT_PROM_PATHS_MAX 32
#define RT_PROM_PATH_LEN 64

struct rt_prom;

/* A named counter the daemon owns (events per source, drops per stage). */
struct rt_prom_kv {
	const char *name;
	uint64_t value;
};

/* Busy time of one device (all its processes), since its first kernel. */
struct rt_prom_gpu {
	uint32_t pid; /* the first process seen on it: not a label */
	uint32_t device;
	uint64_t busy_ns;
};

/* Bytes through one GPU link since the first NVML sample (docs/gpu.md, "Links"). */
struct rt_prom_link {
	uint32_t device;
	const char *link; /* "pcie", "nvlink" */
	uint64_t tx_bytes, rx_bytes;
};

/* Daemon state read at scrape time; any array may be NULL with n 0. */
struct rt_prom_extra {
	const struct rt_prom_kv *events;
	uint32_t n_events;
	const struct rt_prom_kv *drops;
	uint32_t n_drops;
	const struct rt_prom_kv *
		exported; /* request spans delivered, per exporter (reqtrace_exported_spans_total) */
	uint32_t n_exported;
	const struct rt_prom_gpu *gpu;
	uint32_t n_gpu;
	/* gpu busy time is reported at all (CUPTI or GPU probes present) */
	int gpu_known;
	const struct rt_prom_link *links; /* NVML link bytes; left out with none */
	uint32_t n_links;
};

/* NULL with errno set. */
struct rt_prom *rt_prom__new(void);
void rt_prom__free(struct rt_prom *p);

/*
 * One finished span. Amended re-emissions (revision > 0) are ignored: the
 * request was observed once already and a histogram cannot take it back.
 */
void rt_prom__observe(struct rt_prom *p, const struct rt_span *s);

/* The whole exposition; 0 or -EIO when f reports an error. */
int rt_prom__write(const struct rt_prom *p, const struct rt_prom_extra *x, FILE *f);

/* gen_ai.operation.name for a request path ("chat", "embeddings"...,
 * "unknown"): exposed for tests and the docs. */
const char *rt_prom_operation(const char *path);

#endif /* RT_EXPORT_PROM_H */
