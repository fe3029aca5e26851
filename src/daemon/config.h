/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reqtraced's configuration: the INI file of `--config FILE` (parsed by
 * inih) and the command-line flags go through the same per-key setter, so
 * a value the file accepts the flag accepts too, and the other way round.
 * Keys, sections and defaults: configs/reqtraced.conf and docs/operations.md.
 */
#ifndef RT_DAEMON_CONFIG_H
#define RT_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "daemon.h"

/* One bit per key: which ones a file or the command line gave. */
enum rt_cfg_key {
	RT_CFG_PIDS,
	RT_CFG_PORTS,
	RT_CFG_COMMS,
	RT_CFG_CGROUPS,
	RT_CFG_SOCKET,
	RT_CFG_SOCKET_GROUP,
	RT_CFG_RECORD,
	RT_CFG_CAPTURE_BODIES,
	RT_CFG_INJECT,
	RT_CFG_INJECT_SOCKET,
	RT_CFG_LOG_LEVEL,
	RT_CFG_RING_SIZE,
	RT_CFG_HEAD_BYTES,
	RT_CFG_TAIL_BYTES,
	RT_CFG_MAX_SPANS,
	RT_CFG_MAX_REQUESTS,
	RT_CFG_IDLE_TIMEOUT,
	RT_CFG_METRICS_LISTEN,
	RT_CFG_OTLP_ENDPOINT,
	RT_CFG_OTLP_HEADERS,
	RT_CFG_OTLP_COMPRESSION,
	RT_CFG_OTLP_TIMEOUT,
	RT_CFG_OTLP_CA_FILE,
	RT_CFG_OTLP_SERVICE_NAME,
	RT_CFG_OTLP_SAMPLE_RATIO,
	RT_CFG_OTLP_MAX_SPANS_PER_S,
	RT_CFG_OTLP_QUEUE,
	RT_CFG_OTLP_BATCH,
	RT_CFG_OTLP_BATCH_DELAY,
	RT_CFG_JSONL_PATH,
	RT_CFG_JSONL_MAX_BYTES,
	RT_CFG_JSONL_KEEP,
	RT_CFG_PACK_DIR,
	RT_CFG_MAX_VLLM_REQUESTS, /* new keys after the others: those keep their bits */
	RT_CFG_PIN_DIR,
	RT_CFG__N,
};

struct rt_cfg_str; /* owned copies of the string values */

struct rt_config {
	/* o.inject_path keeps the path even while inject is false:
	 * rt_config_opts() applies it, so the order of the two keys is moot */
	struct rt_daemon_opts o;
	bool inject;
	enum rt_log_level log_level;
	uint64_t set; /* 1ULL << enum rt_cfg_key: more than 32 keys */
	int line[RT_CFG__N]; /* where the file gave each key */
	struct rt_cfg_str *strs;
};

/* Defaults (the same as the flags' without a file). */
void rt_config_init(struct rt_config *c);
void rt_config_fini(struct rt_config *c);

/* The key's enum for its file name ("ring_size"); -ENOENT if unknown. */
int rt_config_key(const char *name);
const char *rt_config_key_name(enum rt_cfg_key k);
/* The file section the key belongs in ("limits"). */
const char *rt_config_key_section(enum rt_cfg_key k);

/*
 * Set one key from its text. A list key (pids, ports, comms, cgroups)
 * appends; its value may hold several items separated by commas or
 * blanks. On a bad value returns -EINVAL (or -E2BIG: list full) and writes
 * why to why[] ("bad size '8Q' (want a number with optional K/M/G)").
 */
int rt_config_set(struct rt_config *c, enum rt_cfg_key k, const char *value, char *why,
		  size_t why_len);

/*
 * Parse INI text into c (which holds the defaults or an earlier layer).
 * name is the file name used in messages. On error returns -EINVAL and
 * err[] holds "NAME:LINE: key 'KEY': WHY" (or "NAME:LINE: WHY" for a line
 * that is no key at all); nothing is guaranteed about c then.
 */
int rt_config_parse_string(struct rt_config *c, const char *name, const char *text, char *err,
			   size_t err_len);
/* The same for a file; -errno when it cannot be read (err says so). */
int rt_config_load(struct rt_config *c, const char *path, char *err, size_t err_len);

/*
 * Flags over the file: every key that over gave replaces base's, lists
 * included (`--pid 7` replaces the file's pids; the file's ports stay).
 * Strings are copied, so over may be freed afterwards.
 */
int rt_config_merge(struct rt_config *base, const struct rt_config *over);

/*
 * The keys whose values differ between a and b (1ULL << enum rt_cfg_key),
 * for a reload: lists compare item by item, in order.
 */
uint64_t rt_config_diff(const struct rt_config *a, const struct rt_config *b);

/*
 * The OTEL_* environment variables (docs/otlp.md) for the otlp_* keys that
 * neither the file nor a flag gave: explicit configuration wins, as the
 * OTel SDK specification has code-given options win over the environment.
 * get is getenv in the daemon. -EINVAL with why[] naming the variable.
 */
int rt_config_env(struct rt_config *c, const char *(*get)(const char *name), char *why,
		  size_t why_len);

/*
 * SIGHUP: whether a changed key takes effect while running (log_level,
 * max_spans, the jsonl_* keys) or only at the next start (the rest: BPF
 * maps and probes, sockets, tables sized at start). docs/operations.md.
 */
bool rt_config_key_live(enum rt_cfg_key k);

/*
 * Split the keys that differ between the running config and the file read
 * again into those a reload applies and those that need a restart.
 */
void rt_config_reload_plan(const struct rt_config *running, const struct rt_config *next,
			   uint64_t *apply, uint64_t *restart);

/* The daemon's options from c (valid as long as c is). */
void rt_config_opts(const struct rt_config *c, struct rt_daemon_opts *out);

#endif /* RT_DAEMON_CONFIG_H */
