// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtraced [--config FILE] [--pid P]... [--port N]... [--comm NAME]...
 *           [--cgroup PATH]... [--socket PATH] [--record FILE] [-v]
 *
 * Runs in the foreground; systemd (or the operator) manages it. The file is
 * read first and the flags laid over it (config.h).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "config.h"
#include "daemon.h"

enum {
	OPT_PID = 1000,
	OPT_PORT,
	OPT_COMM,
	OPT_CGROUP,
	OPT_SOCKET,
	OPT_SOCKET_GROUP,
	OPT_RECORD,
	OPT_CAPTURE_BODIES,
	OPT_INJECT,
	OPT_NO_INJECT,
	OPT_RING,
	OPT_HEAD,
	OPT_TAIL,
	OPT_MAX_SPANS,
	OPT_MAX_REQUESTS,
	OPT_MAX_VLLM_REQUESTS,
	OPT_IDLE,
	OPT_LOG_LEVEL,
	OPT_CONFIG,
	OPT_METRICS,
	OPT_JSONL_PATH,
	OPT_JSONL_MAX_BYTES,
	OPT_JSONL_KEEP,
	OPT_VERSION,
	OPT_HELP,
	/* --otlp-*: OPT_OTLP + the key (one case for all of them) */
	OPT_OTLP = 2000,
};

/* The long name of the option whose getopt value is val. */
static int option_index(const struct option *opts, int val)
{
	int i;

	for (i = 0; opts[i].name; i++)
		if (opts[i].val == val)
			return i;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: reqtraced [--config FILE] [--pid P]... [--port N]... [--comm NAME]...\n"
		"                 [--cgroup PATH]... [--socket PATH] [--record FILE] [-v]\n\n"
		"Traces the requests of the target processes and serves spans on a control "
		"socket.\n\n"
		"  --config FILE      read the options from FILE (configs/reqtraced.conf); the\n"
		"                     flags given here override it, a list flag replaces the\n"
		"                     file's list\n"
		"  --pid P            trace process P and its descendants\n"
		"  --port N           trace the process listening on TCP port N in any network\n"
		"                     namespace (found again when it restarts)\n"
		"  --comm NAME        trace every process whose command name is NAME\n"
		"  --cgroup PATH      trace every process in cgroup PATH and below: a directory,\n"
		"                     or relative to the cgroup v2 mount (system.slice/x.service)\n"
		"  --socket PATH      control socket (default %s)\n"
		"  --socket-group G   let members of group G use the control socket (mode 0660)\n"
		"  --record FILE      record every raw event to FILE (.rtrace, mode 0600); socket\n"
		"                     payloads are redacted (docs/privacy.md): framing and\n"
		"                     whitelisted headers stay, prompts, completions, cookies\n"
		"                     and credentials are masked\n"
		"  --capture-bodies   record socket payloads as captured: recordings then\n"
		"                     contain prompts, completions and credentials\n"
		"  --inject-socket P  socket for libreqtrace_cupti.so in target processes (default "
		"%s)\n"
		"  --no-inject        no injection socket: CPU-side probes only\n"
		"  --ring-size BYTES  BPF ring buffer size, K/M/G allowed (default 8M)\n"
		"  --head-bytes N     payload bytes kept from the start of each transfer (default "
		"512)\n"
		"  --tail-bytes N     payload bytes kept from the end of each transfer (default "
		"1024)\n"
		"  --max-spans N      finished spans kept for queries (default 10000)\n"
		"  --max-requests N   requests tracked in flight (default 8192)\n"
		"  --max-vllm-requests N  vLLM engine requests held for the join (default auto:\n"
		"                     as many as --max-requests)\n"
		"  --idle-timeout DUR a request with no activity this long ends as timeout "
		"(default 5m)\n"
		"  --log-level L      error, warn, info (default) or debug\n"
		"  --metrics-listen ADDR:PORT  serve Prometheus metrics at /metrics (a bare PORT:\n"
		"                     127.0.0.1; off unless given; docs/metrics.md)\n"
		"  --otlp-endpoint URL  export spans by OTLP/HTTP (JSON) to URL (…/v1/traces);\n"
		"                     also --otlp-headers, --otlp-compression, --otlp-timeout,\n"
		"                     --otlp-ca-file, --otlp-service-name, --otlp-sample-ratio,\n"
		"                     --otlp-max-spans-per-s, --otlp-queue, --otlp-batch,\n"
		"                     --otlp-batch-delay; OTEL_EXPORTER_OTLP_* too (docs/otlp.md)\n"
		"  --jsonl-path FILE  append every span to FILE as a JSON line (mode 0640), for\n"
		"                     log shippers; off unless given (docs/operations.md)\n"
		"  --jsonl-max-bytes SIZE  rotate FILE to FILE.1 ... before it passes SIZE, K/M/G\n"
		"                     allowed (default 64M; 0: never, for an external logrotate)\n"
		"  --jsonl-keep N     rotated files kept, FILE.1 to FILE.N (default 5)\n"
		"  -v                 debug logging (libbpf's included): --log-level debug\n"
		"  --version, --help\n",
		RT_DAEMON_SOCKET, RT_DAEMON_INJECT_SOCKET);
}

/* A flag's value, through the same setter as the file's key. */
static int flag(struct rt_config *c, enum rt_cfg_key k, const char *flag_name, const char *value)
{
	char why[384];
	int err;

	err = rt_config_set(c, k, value, why, sizeof(why));
	if (err == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory");
	if (err)
		fprintf(stderr, "reqtraced: --%s: %s\n", flag_name, why);
	return err;
}

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* SIGHUP: what a reload may change without re-attaching. */
struct reload {
	uv_signal_t sig;
	struct rt_daemon *d;
	const char *path; /* --config; NULL: nothing to reload */
	const struct rt_config *flags;
	struct rt_config *running; /* the file and flags the daemon runs with */
};

#define JSONL_KEYS                                                                                 \
	((1ULL << RT_CFG_JSONL_PATH) | (1ULL << RT_CFG_JSONL_MAX_BYTES) |                          \
	 (1ULL << RT_CFG_JSONL_KEEP))

/* the otlp_* keys are consecutive in enum rt_cfg_key */
#define OTLP_KEYS                                                                                  \
	(((1ULL << (RT_CFG_OTLP_BATCH_DELAY + 1)) - 1) & ~((1ULL << RT_CFG_OTLP_ENDPOINT) - 1))

/* The live keys of apply, each into the daemon; returns those that took. */
static uint64_t apply_live(struct reload *r, const struct rt_config *next, uint64_t apply)
{
	const struct rt_daemon_opts *o = &next->o, *was = &r->running->o;
	int err;

	if (apply & (1ULL << RT_CFG_LOG_LEVEL)) {
		/* said at the old level: a quieter new one would swallow it */
		ilog("SIGHUP: log_level changed (libbpf's debug output keeps the level at start)");
		rt_log_set_level(next->log_level);
	}
	if (apply & (1ULL << RT_CFG_MAX_SPANS)) {
		err = rt_daemon__set_max_spans(r->d, o->max_spans);
		if (err) {
			elog("SIGHUP: max_spans %u: %s; stays %u", o->max_spans, strerror(-err),
			     was->max_spans);
			apply &= ~(1ULL << RT_CFG_MAX_SPANS);
		} else {
			ilog("SIGHUP: max_spans %u -> %u%s", was->max_spans, o->max_spans,
			     o->max_spans < was->max_spans ? " (the oldest spans evicted)" : "");
		}
	}
	if (apply & JSONL_KEYS) {
		err = rt_daemon__set_jsonl(r->d, o->jsonl_path, o->jsonl_max_bytes, o->jsonl_keep);
		if (err) {
			elog("SIGHUP: jsonl_path %s: %s; the JSONL exporter keeps %s",
			     o->jsonl_path, strerror(-err),
			     was->jsonl_path ? was->jsonl_path : "off");
			apply &= ~JSONL_KEYS;
		} else {
			ilog("SIGHUP: JSONL export %s, rotated past %llu bytes, %u kept",
			     o->jsonl_path ? o->jsonl_path : "off",
			     (unsigned long long)o->jsonl_max_bytes, o->jsonl_keep);
		}
	}
	if (apply & OTLP_KEYS) {
		err = rt_daemon__set_otlp(r->d, &o->otlp);
		if (err) {
			elog("SIGHUP: OTLP exporter to %s: %s; it keeps %s",
			     o->otlp.endpoint ? o->otlp.endpoint : "off", strerror(-err),
			     was->otlp.endpoint ? was->otlp.endpoint : "off");
			apply &= ~OTLP_KEYS;
		} else {
			ilog("SIGHUP: OTLP export %s", o->otlp.endpoint ? o->otlp.endpoint : "off");
		}
	}
	return apply;
}

/* An external logrotate moved the file away: write to a fresh one. */
static void reopen_jsonl(struct reload *r)
{
	int err = rt_daemon__reopen_jsonl(r->d);

	if (err)
		elog("SIGHUP: reopening the JSONL file: %s (retried before later spans)",
		     strerror(-err));
}

static void on_hup(uv_signal_t *h, int sig)
{
	struct reload *r = h->data;
	struct rt_config next, took;
	char err[1024];
	uint64_t apply, restart;
	int k;

	(void)sig;
	if (!r->path) {
		reopen_jsonl(r);
		wlog("SIGHUP: started without --config: nothing to reload");
		return;
	}
	rt_config_init(&next);
	if (rt_config_load(&next, r->path, err, sizeof(err))) {
		elog("SIGHUP: %s; the running configuration stays", err);
		reopen_jsonl(r);
		goto cleanup;
	}
	if (rt_config_merge(&next, r->flags)) {
		elog("SIGHUP: out of memory; the running configuration stays");
		reopen_jsonl(r);
		goto cleanup;
	}
	if (rt_config_env(&next, env_get, err, sizeof(err))) {
		elog("SIGHUP: %s; the running configuration stays", err);
		reopen_jsonl(r);
		goto cleanup;
	}
	rt_config_reload_plan(r->running, &next, &apply, &restart);
	if (!apply && !restart)
		ilog("SIGHUP: %s reloaded: nothing changed", r->path);
	apply = apply_live(r, &next, apply);
	/* a new path was just opened fresh; the old one is left as it is */
	if (!(apply & (1ULL << RT_CFG_JSONL_PATH)))
		reopen_jsonl(r);
	for (k = 0; k < RT_CFG__N; k++)
		if (restart & (1ULL << k))
			wlog("SIGHUP: %s changed: needs a restart (the running value stays)",
			     rt_config_key_name((enum rt_cfg_key)k));
	/* what took effect is what runs now: the next reload compares with it */
	took = next;
	took.set = apply;
	if (rt_config_merge(r->running, &took))
		elog("SIGHUP: out of memory recording the new values");
cleanup:
	rt_config_fini(&next);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, OPT_PID },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "comm", required_argument, NULL, OPT_COMM },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "socket-group", required_argument, NULL, OPT_SOCKET_GROUP },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "capture-bodies", no_argument, NULL, OPT_CAPTURE_BODIES },
		{ "inject-socket", required_argument, NULL, OPT_INJECT },
		{ "no-inject", no_argument, NULL, OPT_NO_INJECT },
		{ "ring-size", required_argument, NULL, OPT_RING },
		{ "head-bytes", required_argument, NULL, OPT_HEAD },
		{ "tail-bytes", required_argument, NULL, OPT_TAIL },
		{ "max-spans", required_argument, NULL, OPT_MAX_SPANS },
		{ "max-requests", required_argument, NULL, OPT_MAX_REQUESTS },
		{ "max-vllm-requests", required_argument, NULL, OPT_MAX_VLLM_REQUESTS },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "metrics-listen", required_argument, NULL, OPT_METRICS },
		{ "otlp-endpoint", required_argument, NULL, OPT_OTLP + RT_CFG_OTLP_ENDPOINT },
		{ "otlp-headers", required_argument, NULL, OPT_OTLP + RT_CFG_OTLP_HEADERS },
		{ "otlp-compression", required_argument, NULL, OPT_OTLP + RT_CFG_OTLP_COMPRESSION },
		{ "otlp-timeout", required_argument, NULL, OPT_OTLP + RT_CFG_OTLP_TIMEOUT },
		{ "otlp-ca-file", required_argument, NULL, OPT_OTLP + RT_CFG_OTLP_CA_FILE },
		{ "otlp-service-name", required_argument, NULL,
		  OPT_OTLP + RT_CFG_OTLP_SERVICE_NAME },
		{ "otlp-sample-ratio", required_argument, NULL,
		  OPT_OTLP + RT_CFG_OTLP_SAMPLE_RATIO },
		{ "otlp-max-spans-per-s", required_argument, NULL,
		  OPT_OTLP + RT_CFG_OTLP_MAX_SPANS_PER_S },
		{ "otlp-queue", required_argument, NULL, OPT_OTLP + RT_CFG_OTLP_QUEUE },
		{ "otlp-batch", required_argument, NULL, OPT_OTLP + RT_CFG_OTLP_BATCH },
		{ "otlp-batch-delay", required_argument, NULL, OPT_OTLP + RT_CFG_OTLP_BATCH_DELAY },
		{ "jsonl-path", required_argument, NULL, OPT_JSONL_PATH },
		{ "jsonl-max-bytes", required_argument, NULL, OPT_JSONL_MAX_BYTES },
		{ "jsonl-keep", required_argument, NULL, OPT_JSONL_KEEP },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	/* flags first into a layer of their own, laid over the file afterwards */
	struct rt_config file, flags;
	struct rt_daemon_opts o;
	struct rt_daemon d;
	struct reload reload = { .flags = &flags, .running = &file };
	const char *config_path = NULL;
	char err_text[1024];
	int c, err, ret = 2;
	enum rt_cfg_key k;

	rt_log_set_ident("reqtraced");
	rt_config_init(&file);
	rt_config_init(&flags);
	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		k = RT_CFG__N;
		if (c >= OPT_OTLP + RT_CFG_OTLP_ENDPOINT && c < OPT_OTLP + RT_CFG__N) {
			k = (enum rt_cfg_key)(c - OPT_OTLP);
			if (flag(&flags, k, opts[option_index(opts, c)].name, optarg))
				goto cleanup;
			continue;
		}
		switch (c) {
		case OPT_CONFIG:
			if (config_path) {
				fprintf(stderr, "reqtraced: --config given twice\n");
				goto cleanup;
			}
			config_path = optarg;
			continue;
		case OPT_PID:
			k = RT_CFG_PIDS;
			break;
		case OPT_PORT:
			k = RT_CFG_PORTS;
			break;
		case OPT_COMM:
			k = RT_CFG_COMMS;
			break;
		case OPT_CGROUP:
			k = RT_CFG_CGROUPS;
			break;
		case OPT_SOCKET:
			k = RT_CFG_SOCKET;
			break;
		case OPT_SOCKET_GROUP:
			k = RT_CFG_SOCKET_GROUP;
			break;
		case OPT_RECORD:
			k = RT_CFG_RECORD;
			break;
		case OPT_CAPTURE_BODIES:
			if (flag(&flags, RT_CFG_CAPTURE_BODIES, "capture-bodies", "true"))
				goto cleanup;
			continue;
		case OPT_INJECT:
			/* the last of --inject-socket and --no-inject wins */
			if (flag(&flags, RT_CFG_INJECT, "inject-socket", "true"))
				goto cleanup;
			k = RT_CFG_INJECT_SOCKET;
			break;
		case OPT_NO_INJECT:
			if (flag(&flags, RT_CFG_INJECT, "no-inject", "false"))
				goto cleanup;
			continue;
		case OPT_RING:
			k = RT_CFG_RING_SIZE;
			break;
		case OPT_HEAD:
			k = RT_CFG_HEAD_BYTES;
			break;
		case OPT_TAIL:
			k = RT_CFG_TAIL_BYTES;
			break;
		case OPT_MAX_SPANS:
			k = RT_CFG_MAX_SPANS;
			break;
		case OPT_MAX_REQUESTS:
			k = RT_CFG_MAX_REQUESTS;
			break;
		case OPT_MAX_VLLM_REQUESTS:
			k = RT_CFG_MAX_VLLM_REQUESTS;
			break;
		case OPT_IDLE:
			k = RT_CFG_IDLE_TIMEOUT;
			break;
		case OPT_LOG_LEVEL:
			k = RT_CFG_LOG_LEVEL;
			break;
		case OPT_METRICS:
			k = RT_CFG_METRICS_LISTEN;
			break;
		case OPT_JSONL_PATH:
			k = RT_CFG_JSONL_PATH;
			break;
		case OPT_JSONL_MAX_BYTES:
			k = RT_CFG_JSONL_MAX_BYTES;
			break;
		case OPT_JSONL_KEEP:
			k = RT_CFG_JSONL_KEEP;
			break;
		case 'v':
			if (flag(&flags, RT_CFG_LOG_LEVEL, "verbose", "debug"))
				goto cleanup;
			continue;
		case OPT_VERSION:
			printf("reqtraced %s\n", RT_VERSION);
			ret = 0;
			goto cleanup;
		case OPT_HELP:
			usage(stdout);
			ret = 0;
			goto cleanup;
		default:
			usage(stderr);
			goto cleanup;
		}
		if (flag(&flags, k, opts[option_index(opts, c)].name, optarg))
			goto cleanup;
	}
	if (optind < argc) {
		fprintf(stderr, "reqtraced: unexpected argument '%s'\n", argv[optind]);
		goto cleanup;
	}
	/* all of this before anything that needs privileges: a bad file never
	 * half-starts the daemon */
	if (config_path && rt_config_load(&file, config_path, err_text, sizeof(err_text))) {
		fprintf(stderr, "reqtraced: %s\n", err_text);
		goto cleanup;
	}
	if (rt_config_merge(&file, &flags)) {
		fprintf(stderr, "reqtraced: out of memory\n");
		goto cleanup;
	}
	if (rt_config_env(&file, env_get, err_text, sizeof(err_text))) {
		fprintf(stderr, "reqtraced: %s\n", err_text);
		goto cleanup;
	}
	rt_config_opts(&file, &o);
	rt_log_set_level(file.log_level);
	if (!o.n_pids && !o.n_ports && !o.n_comms && !o.n_cgroups)
		wlog("no target given (--pid, --port, --comm, --cgroup): nothing will be traced");

	ret = 1;
	err = rt_daemon__init(&d, uv_default_loop(), &o);
	if (err)
		goto cleanup;
	/* rt_daemon__fini closes every handle of the loop, this one included */
	reload.path = config_path;
	reload.d = &d;
	uv_signal_init(uv_default_loop(), &reload.sig);
	reload.sig.data = &reload;
	uv_signal_start(&reload.sig, on_hup, SIGHUP);
	rt_daemon__run(&d);
	rt_daemon__fini(&d);
	uv_loop_close(uv_default_loop());
	ret = 0;
cleanup:
	rt_config_fini(&flags);
	rt_config_fini(&file);
	return ret;
}
