// SPDX-License-Identifier: BSD-2-Clause
/* reqtrace: the command line front of reqtraced (docs/cli.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/log.h"

#define DEFAULT_SOCKET "/run/reqtrace/reqtrace.sock"

static const struct {
	const char *name;
	int (*fn)(struct rt_cli *cli, int argc, char **argv);
	const char *help;
} commands[] = {
	{ "status", rt_cmd_status,
	  "status [--json]                     targets, event rates, drops, store" },
	{ "spans", rt_cmd_spans,
	  "spans [--since DUR] [--slowest N] [--path P] [--json]  finished requests" },
	{ "record", rt_cmd_record,
	  "record -o FILE --duration DUR       record events, payloads redacted (root)" },
	{ "replay", rt_cmd_replay, "replay FILE [--json] [--request ID] spans of a recording" },
	{ "show", rt_cmd_show, "show ID [--json] [--file REC]       one request as a waterfall" },
	{ "top", rt_cmd_top,
	  "top [--once] [--interval DUR] [--file REC]  live: in flight, recent, percentiles" },
	{ "export", rt_cmd_export,
	  "export --format chrome|jsonl|otlp -o FILE [--since DUR | --file REC]  spans to a file" },
	{ "why", rt_cmd_why, "why [--since DUR] [--file REC]      which phase dominates, and why" },
	{ "demo", rt_cmd_demo,
	  "demo SCENARIO [--requests N] [--concurrency C] [--duration DUR]  testbed + daemon + "
	  "load (root)" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: reqtrace [--socket PATH] COMMAND [ARGS]\n\n"
		   "Request-lifecycle tracing for inference servers: where each request waits.\n\n"
		   "commands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %s\n", commands[i].help);
	fprintf(f,
		"\noptions:\n"
		"  --socket PATH  control socket of reqtraced (default %s)\n"
		"  --version      print the version\n"
		"  --help         this text\n"
		"\nDurations: 250ms, 10s, 5m. See docs/cli.md.\n",
		DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	struct rt_cli cli = { .socket_path = getenv("REQTRACE_CONTROL_SOCKET") };
	int i;

	rt_log_set_ident("reqtrace");
	if (!cli.socket_path)
		cli.socket_path = DEFAULT_SOCKET;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return RT_EXIT_OK;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("reqtrace %s\n", RT_VERSION);
			return RT_EXIT_OK;
		}
		if (!strcmp(argv[i], "--socket")) {
			if (++i >= argc) {
				fprintf(stderr, "reqtrace: --socket needs a path\n");
				return RT_EXIT_USAGE;
			}
			cli.socket_path = argv[i];
			continue;
		}
		if (!strncmp(argv[i], "--socket=", 9)) {
			cli.socket_path = argv[i] + 9;
			continue;
		}
		if (argv[i][0] == '-') {
			fprintf(stderr, "reqtrace: unknown option %s (see reqtrace --help)\n",
				argv[i]);
			return RT_EXIT_USAGE;
		}
		break;
	}
	if (i >= argc) {
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
		if (!strcmp(argv[i], commands[c].name)) {
			optind = 1; /* subcommands parse their own options from argv[i] */
			return commands[c].fn(&cli, argc - i, argv + i);
		}
	}
	fprintf(stderr, "reqtrace: unknown command '%s' (see reqtrace --help)\n", argv[i]);
	return RT_EXIT_USAGE;
}
