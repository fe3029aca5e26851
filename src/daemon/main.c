// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtraced [--pid P]... [--port N]... [--comm NAME]... [--cgroup PATH]...
 *           [--socket PATH] [--record FILE] [-v]
 *
 * Runs in the foreground; systemd (or the operator) manages it.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dur.h"
#include "common/log.h"
#include "daemon.h"
#include "daemon/procfs.h"

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
	OPT_IDLE,
	OPT_METRICS,
	OPT_VERSION,
	OPT_HELP,
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: reqtraced [--pid P]... [--port N]... [--comm NAME]... [--cgroup PATH]...\n"
		"                 [--socket PATH] [--record FILE] [-v]\n\n"
		"Traces the requests of the target processes and serves spans on a control "
		"socket.\n\n"
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
		"  --ring-size BYTES  BPF ring buffer size (default 8388608)\n"
		"  --head-bytes N     payload bytes kept from the start of each transfer (default "
		"512)\n"
		"  --tail-bytes N     payload bytes kept from the end of each transfer (default "
		"1024)\n"
		"  --max-spans N      finished spans kept for queries (default 10000)\n"
		"  --max-requests N   requests tracked in flight (default 8192)\n"
		"  --idle-timeout DUR a request with no activity this long ends as timeout "
		"(default 5m)\n"
		"  --metrics-listen ADDR:PORT  serve Prometheus metrics at /metrics (a bare PORT:\n"
		"                     127.0.0.1; off unless given; docs/metrics.md)\n"
		"  -v                 debug logging (libbpf's included)\n"
		"  --version, --help\n",
		RT_DAEMON_SOCKET, RT_DAEMON_INJECT_SOCKET);
}

static int parse_uint(const char *name, const char *s, unsigned long min, unsigned long max,
		      unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max || s[0] == '-') {
		fprintf(stderr, "reqtraced: %s: '%s' is not a number in %lu..%lu\n", name, s, min,
			max);
		return -EINVAL;
	}
	*out = v;
	return 0;
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
		{ "idle-timeout", required_argument, NULL, OPT_IDLE },
		{ "metrics-listen", required_argument, NULL, OPT_METRICS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	struct rt_daemon_opts o = {
		.socket_path = RT_DAEMON_SOCKET,
		.inject_path = RT_DAEMON_INJECT_SOCKET,
		.socket_group = (gid_t)-1,
	};
	struct rt_daemon d;
	unsigned long v;
	char cgpath[RT_TARGET_CGROUP_LEN];
	struct group *gr;
	int c, err;

	rt_log_set_ident("reqtraced");
	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		switch (c) {
		case OPT_PID:
			if (o.n_pids >= RT_DAEMON_ARGS_MAX ||
			    parse_uint("--pid", optarg, 1, INT_MAX, &v))
				return 2;
			o.pids[o.n_pids++] = (pid_t)v;
			break;
		case OPT_PORT:
			if (o.n_ports >= RT_DAEMON_ARGS_MAX ||
			    parse_uint("--port", optarg, 1, 65535, &v))
				return 2;
			o.ports[o.n_ports++] = (uint16_t)v;
			break;
		case OPT_COMM:
			if (o.n_comms >= RT_DAEMON_ARGS_MAX || !*optarg || strlen(optarg) > 15) {
				fprintf(stderr, "reqtraced: --comm: 1 to 15 characters\n");
				return 2;
			}
			o.comms[o.n_comms++] = optarg;
			break;
		case OPT_CGROUP:
			if (o.n_cgroups >= RT_DAEMON_ARGS_MAX ||
			    rt_procfs_cgroup_path(optarg, cgpath, sizeof(cgpath))) {
				fprintf(stderr,
					"reqtraced: --cgroup: '%s' is not a cgroup path (no "
					"'..', under %d characters)\n",
					optarg, RT_TARGET_CGROUP_LEN);
				return 2;
			}
			o.cgroups[o.n_cgroups++] = optarg;
			break;
		case OPT_SOCKET:
			o.socket_path = optarg;
			break;
		case OPT_SOCKET_GROUP:
			gr = getgrnam(optarg);
			if (!gr) {
				fprintf(stderr, "reqtraced: --socket-group: no group '%s'\n",
					optarg);
				return 2;
			}
			o.socket_group = gr->gr_gid;
			break;
		case OPT_RECORD:
			o.record_path = optarg;
			break;
		case OPT_CAPTURE_BODIES:
			o.capture_bodies = true;
			break;
		case OPT_INJECT:
			o.inject_path = optarg;
			break;
		case OPT_NO_INJECT:
			o.inject_path = NULL;
			break;
		case OPT_RING:
			if (parse_uint("--ring-size", optarg, 4096, 1UL << 30, &v))
				return 2;
			o.ring_bytes = (uint32_t)v;
			break;
		case OPT_HEAD:
			if (parse_uint("--head-bytes", optarg, 0, RT_SOCK_HEAD_MAX, &v))
				return 2;
			o.head_bytes = (uint16_t)v;
			break;
		case OPT_TAIL:
			if (parse_uint("--tail-bytes", optarg, 0, RT_SOCK_TAIL_MAX, &v))
				return 2;
			o.tail_bytes = (uint16_t)v;
			break;
		case OPT_MAX_SPANS:
			if (parse_uint("--max-spans", optarg, 1, 10000000, &v))
				return 2;
			o.max_spans = (uint32_t)v;
			break;
		case OPT_MAX_REQUESTS:
			if (parse_uint("--max-requests", optarg, 1, 10000000, &v))
				return 2;
			o.max_requests = (uint32_t)v;
			break;
		case OPT_IDLE:
			if (rt_dur_parse(optarg, &o.idle_timeout_ns) || !o.idle_timeout_ns) {
				fprintf(stderr,
					"reqtraced: --idle-timeout: a duration such as 5m\n");
				return 2;
			}
			break;
		case OPT_METRICS:
			o.metrics_listen = optarg;
			break;
		case 'v':
			o.verbose = true;
			rt_log_set_level(RT_LOG_DEBUG);
			break;
		case OPT_VERSION:
			printf("reqtraced %s\n", RT_VERSION);
			return 0;
		case OPT_HELP:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "reqtraced: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o.n_pids && !o.n_ports && !o.n_comms && !o.n_cgroups)
		wlog("no target given (--pid, --port, --comm, --cgroup): nothing will be traced");

	err = rt_daemon__init(&d, uv_default_loop(), &o);
	if (err)
		return 1;
	rt_daemon__run(&d);
	rt_daemon__fini(&d);
	uv_loop_close(uv_default_loop());
	return 0;
}
