/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reqtraced: one libuv loop owning the sources (BPF ring, later CUPTI
 * rings), the pipeline (merge → correlator), the store of finished spans,
 * the control socket and an optional recording. docs/architecture.md.
 */
#ifndef RT_DAEMON_H
#define RT_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include <reqtrace/span.h>

#include "daemon/control.h"
#include "daemon/listeners.h"
#include "daemon/otlp_conf.h"
#include "daemon/targets.h"
#include "otlp.h" /* private to the daemon, beside it */
#include "export/jsonl_file.h"
#include "export/prom.h"
#include "export/redact.h"
#include "export/rtrace_write.h"
#include "merge/pipeline.h"
#include "sources/inject_server.h"
#include "sources/nvml.h"
#include "store/store.h"

#define RT_DAEMON_SOCKET "/run/reqtrace/reqtrace.sock"
#define RT_DAEMON_ARGS_MAX 64
#define RT_DAEMON_JSONL_MAX_BYTES (64ULL << 20)
#define RT_DAEMON_JSONL_KEEP 5
#define RT_DAEMON_PIN_DIR "/sys/fs/bpf/reqtrace"
#ifndef RT_DAEMON_PACK_DIR
#define RT_DAEMON_PACK_DIR                                                                         \
	"/usr/share/reqtrace/configs/packs" /* the build sets the installed one */
#endif
#define RT_DAEMON_JSONL_KEEP_MAX 1000 /* RT_JSONL_KEEP_MAX */

/* Source ids of the records the daemon itself writes and of the BPF ring;
 * injected processes get ids from RT_SOURCE_INJECT_FIRST up. */
#define RT_SOURCE_DAEMON 1
#define RT_SOURCE_BPF 2
#define RT_SOURCE_INJECT_FIRST 16
#define RT_DAEMON_INJECT_SOCKET "/run/reqtrace/inject.sock"
/* a CUDA process whose watermark lags this far stops holding the merge */
#define RT_SOURCE_STALL_NS (5ULL * 1000000000ULL)

struct rt_daemon_opts {
	pid_t pids[RT_DAEMON_ARGS_MAX];
	int n_pids;
	uint16_t ports[RT_DAEMON_ARGS_MAX];
	int n_ports;
	const char *comms[RT_DAEMON_ARGS_MAX];
	int n_comms;
	const char *cgroups[RT_DAEMON_ARGS_MAX]; /* --cgroup, as given */
	int n_cgroups;
	const char *socket_path;
	gid_t socket_group; /* (gid_t)-1: root only */
	const char *record_path;
	bool capture_bodies; /* recordings keep payloads unredacted */
	const char *inject_path; /* NULL: no injection socket */
	bool verbose;
	uint32_t ring_bytes;
	uint16_t head_bytes, tail_bytes;
	uint32_t max_spans;
	uint32_t max_requests;
	uint32_t max_vllm_requests; /* vLLM engine requests held for the join; 0: max_requests */
	uint64_t idle_timeout_ns;
	const char *
		metrics_listen; /* ADDR:PORT of the Prometheus listener (docs/metrics.md); NULL: off */
	struct rt_otlp_opts otlp; /* OTLP/HTTP export (docs/otlp.md); off without an endpoint */
	const char *jsonl_path; /* the JSONL span file (export/jsonl_file.h); NULL: off */
	uint64_t jsonl_max_bytes; /* rotate past this; 0: never */
	uint32_t jsonl_keep; /* rotated files kept */
	const char *pack_dir; /* engine packs (docs/packs.md); NULL or "": none */
	/* bpffs directory the tracepoint links are pinned under while the daemon
	 * runs (docs/deploy.md, "Restart"); NULL or "": not pinned */
	const char *pin_dir;
};

struct rt_metrics; /* metrics.h */

struct rt_source_stats {
	const char *name;
	uint64_t events;
	uint64_t last_events;
	double rate; /* events/s over the last second */
};

struct rt_daemon {
	uv_loop_t *loop;
	struct rt_daemon_opts o;
	struct rt_bpf_source *bpf;
	struct rt_inject_server *inject;
	struct rt_pipeline *pipe;
	struct rt_store *store;
	struct rt_targets *targets;
	struct rt_control *ctl;
	struct rt_listeners *listeners; /* listen-queue health (daemon/listeners.h) */
	bool listen_dirty; /* targets changed: refresh at the next scan */
	bool watch_port_logged; /* the first rt_bpf_source__watch_port() failure was logged */

	/* recording */
	struct rt_trace_writer *rec;
	struct rt_redactor *redact; /* NULL: payloads recorded as captured */
	char rec_path[4096];
	uint64_t rec_until_ns; /* 0: until stopped */
	struct rt_ctl_client *rec_client; /* waiting for the end of a `record` */
	uint64_t rec_errors;

	uv_poll_t bpf_poll, inject_poll;
	uint64_t stalled_sources; /* CUPTI sources dropped from the merge for lagging */
	uv_timer_t drain_timer, scan_timer, stats_timer, listen_timer;
	uv_signal_t sig_int, sig_term;
	bool stopping;

	uint64_t start_ns;
	struct rt_source_stats src[2]; /* daemon, bpf */
	uint64_t intake_errors;

	struct rt_prom *prom; /* fed by every span; NULL without --metrics-listen */
	struct rt_metrics *metrics;
	struct rt_otlp *otlp; /* otlp.h; NULL: not exporting */
	/* what exporters stopped by SIGHUP counted: the totals never go back */
	struct rt_otlp_stats otlp_gone;
	bool otlp_was_on;
	struct rt_jsonl *jsonl; /* the JSONL span file; NULL without jsonl_path */
	struct rt_nvml *nvml; /* PCIe/NVLink counters (sources/nvml.h); its state says if usable */
	uv_timer_t nvml_timer;
	struct rt_packs *packs; /* engine packs loaded from o.pack_dir; NULL: none */
	unsigned pack_ticks; /* scan timer ticks since the last pack scan */
};

int rt_daemon__init(struct rt_daemon *d, uv_loop_t *loop, const struct rt_daemon_opts *o);
/* Runs until SIGINT/SIGTERM; returns the exit code. */
int rt_daemon__run(struct rt_daemon *d);
void rt_daemon__fini(struct rt_daemon *d);

/* One record into the pipeline (and the recording). */
int rt_daemon__intake(const struct rt_event_hdr *ev, void *ctx);

/* Recording (daemon.c): path is created mode 0600. */
int rt_daemon__record_start(struct rt_daemon *d, const char *path, uint64_t duration_ns);
void rt_daemon__record_stop(struct rt_daemon *d);

/* Control requests (commands.c). */
void rt_daemon__handle(struct rt_ctl_client *cl, const char *cmd, const cJSON *req, void *ctx);
void rt_daemon__client_gone(struct rt_ctl_client *cl, void *ctx);

/* Every drop counter of the status JSON's "drops" object, in order (commands.c). */
struct rt_bpf_stats;
void rt_daemon__drops(struct rt_daemon *d, const struct rt_bpf_stats *bs,
		      void (*fn)(void *ctx, const char *key, uint64_t v), void *ctx);

/*
 * SIGHUP (main.c): what changes while running. Each returns 0 or -errno
 * and, on failure, leaves the running setting as it was.
 */
/* The store's bound (rt_store__set_max). */
int rt_daemon__set_max_spans(struct rt_daemon *d, uint32_t max_spans);
/* Start, reconfigure or (path NULL) stop the JSONL exporter. */
/*
 * SIGHUP's OTLP options: start, reconfigure (queue and counters carry over)
 * or stop (o->endpoint NULL) the exporter. 0, or a negative errno with the
 * running exporter as it was.
 */
int rt_daemon__set_otlp(struct rt_daemon *d, const struct rt_otlp_opts *o);
/* The OTLP counters since start, across SIGHUP restarts of the exporter. */
void rt_daemon__otlp_stats(const struct rt_daemon *d, struct rt_otlp_stats *out);

int rt_daemon__set_jsonl(struct rt_daemon *d, const char *path, uint64_t max_bytes, uint32_t keep);
/* Reopen the JSONL file (an external logrotate moved it); 0 when off. */
int rt_daemon__reopen_jsonl(struct rt_daemon *d);

/* Spans each exporter wrote, by name: the Prometheus reqtrace_exported_total (commands.c). */
void rt_daemon__exported(struct rt_daemon *d, void (*fn)(void *ctx, const char *key, uint64_t v),
			 void *ctx);

uint64_t rt_now_ns(void);

#endif /* RT_DAEMON_H */
