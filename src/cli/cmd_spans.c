// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace spans [--since DUR] [--slowest N] [--path P] [--json]
 *
 * Finished requests from the daemon: a table, or the span JSON of
 * docs/spans.md one per line.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <reqtrace/span.h>

#include "cli.h"
#include "client.h"
#include "common/dur.h"
#include "common/jsonw.h"
#include "export/span_json.h"
#include "export/span_table.h"

struct spans_ctx {
	bool json;
	bool header;
	unsigned long n;
};

static int span_line(const char *line, size_t len, void *ctx)
{
	struct spans_ctx *x = ctx;
	struct rt_span s;

	(void)len;
	x->n++;
	if (x->json) {
		printf("%s\n", line);
		return 0;
	}
	if (rt_span_from_json(line, &s))
		return 0;
	if (!x->header) {
		rt_span_table_header(stdout);
		x->header = true;
	}
	rt_span_table_row(stdout, &s);
	return 0;
}

int rt_cmd_spans(struct rt_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "slowest", required_argument, NULL, 'n' },
		{ "path", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct spans_ctx x = { 0 };
	struct rt_jsonw w;
	uint64_t since = 0;
	long slowest = 0;
	const char *path = NULL;
	char *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (rt_dur_parse(optarg, &since)) {
				fprintf(stderr,
					"reqtrace: --since: a duration such as 30s or 5m\n");
				return RT_EXIT_USAGE;
			}
			break;
		case 'n':
			slowest = strtol(optarg, &end, 10);
			if (*end || slowest < 1 || slowest > 100000) {
				fprintf(stderr, "reqtrace: --slowest: 1..100000\n");
				return RT_EXIT_USAGE;
			}
			break;
		case 'p':
			path = optarg;
			break;
		case 'j':
			x.json = true;
			break;
		case 'h':
			printf("usage: reqtrace spans [--since DUR] [--slowest N] [--path P] "
			       "[--json]\n");
			return RT_EXIT_OK;
		default:
			return RT_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr,
			"usage: reqtrace spans [--since DUR] [--slowest N] [--path P] [--json]\n");
		return RT_EXIT_USAGE;
	}
	rt_client_request(&w, "spans");
	if (since) {
		rt_jsonw_key(&w, "since");
		rt_jsonw_uint(&w, since);
	}
	if (slowest) {
		rt_jsonw_key(&w, "slowest");
		rt_jsonw_int(&w, slowest);
	}
	if (path) {
		rt_jsonw_key(&w, "path");
		rt_jsonw_str_val(&w, path);
	}
	rt_jsonw_obj_close(&w);
	rc = rt_client_call(cli->socket_path, rt_jsonw_str(&w), span_line, &x, NULL, 0);
	rt_jsonw_fini(&w);
	if (!rc && !x.json && !x.n)
		fprintf(stderr, "reqtrace: no spans yet\n");
	return rc;
}
