/* SPDX-License-Identifier: BSD-2-Clause */
/* The `reqtrace` command: one function per subcommand, each in cmd_<name>.c (docs/cli.md). */
#ifndef RT_CLI_H
#define RT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "correlate/gpu.h"
#include "verdict/findings.h"

struct rt_span;

/* Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input file. */
#define RT_EXIT_OK 0
#define RT_EXIT_FAIL 1
#define RT_EXIT_USAGE 2

struct rt_cli {
	const char *socket_path; /* control socket */
};

int rt_cmd_replay(struct rt_cli *cli, int argc, char **argv);
int rt_cmd_status(struct rt_cli *cli, int argc, char **argv);
int rt_cmd_spans(struct rt_cli *cli, int argc, char **argv);
int rt_cmd_record(struct rt_cli *cli, int argc, char **argv);
int rt_cmd_show(struct rt_cli *cli, int argc, char **argv);
int rt_cmd_top(struct rt_cli *cli, int argc, char **argv);
int rt_cmd_why(struct rt_cli *cli, int argc, char **argv);
int rt_cmd_demo(struct rt_cli *cli, int argc, char **argv);
int rt_cmd_export(struct rt_cli *cli, int argc, char **argv);

/* ---- shared by the views (show, top, why, demo) ---- */

/* An in-flight request as `top` lists it, from the daemon or a recording's end. */
struct rt_cli_open {
	char request_id[128];
	char path[256];
	char phase[24];
	uint64_t start_ns;
	int64_t age_ns;
	uint32_t events_out;
};

/* Bounds of what the views hold; more is counted and left out. */
#define RT_CLI_SPANS_MAX 20000
#define RT_CLI_OPEN_MAX 1024

/* A recording replayed through the pipeline, as `replay` does. */
struct rt_cli_rec {
	struct rt_span *spans; /* finished: the last revision of each request, oldest first */
	size_t n_spans;
	uint64_t spans_dropped; /* past RT_CLI_SPANS_MAX (the oldest go) */
	struct rt_cli_open *open; /* requests still open at the end */
	size_t n_open;
	uint64_t open_dropped;
	uint64_t end_ns; /* the latest record's instant */
	uint64_t lost_records, late_events; /* from the correlator: numbers may be low */
	/* the header's CLOCK_REALTIME - CLOCK_MONOTONIC, read together when it was
	 * recorded: the recording's boot, not this one, dates its instants */
	int64_t epoch_offset_ns;
	char host[64];
	/* PCIe/NVLink traffic from the recording's LINK_SAMPLE records */
	uint32_t n_links;
	struct rt_verdict_link links[RT_GPU_LINKS_MAX];
};

/* The correlator's link series as the verdict's links (why_links.c). */
void rt_cli_links_from_gpu(const struct rt_gpu_links *gl, struct rt_verdict_link *out, uint32_t max,
			   uint32_t *n);
/* The same from the daemon's status ("nvml"): 0, or a CLI exit code. */
int rt_cli_links_from_daemon(const char *socket_path, struct rt_verdict_link *out, uint32_t max,
			     uint32_t *n);

/*
 * Replay the recording at path into out (rec.c). Returns 0, or a CLI exit
 * code after printing a one-line message (unreadable or bad file).
 */
int rt_cli_rec_load(const char *path, struct rt_cli_rec *out);

struct rt_event_hdr;

/*
 * What an export sees besides the result: each span as the correlator emits
 * it (every revision, in the order `replay --json` prints them) and each
 * record as read, before the pipeline takes it. Either may be NULL.
 */
struct rt_cli_rec_hooks {
	void (*on_span)(const struct rt_span *s, void *ctx);
	void (*on_event)(const struct rt_event_hdr *ev, void *ctx);
	void *ctx;
};

/* rt_cli_rec_load with hooks (h may be NULL). */
int rt_cli_rec_load_ex(const char *path, struct rt_cli_rec *out, const struct rt_cli_rec_hooks *h);
void rt_cli_rec_free(struct rt_cli_rec *r);

/*
 * One `top` frame (cmd_top.c) from the daemon on stdout (the demo's view): plain as
 * `top --once` prints it, or, with screen, cleared and clipped to the
 * terminal. Returns 0 or a CLI exit code (message printed).
 */
int rt_cli_top_frame(const char *socket_path, bool screen);

#endif /* RT_CLI_H */
