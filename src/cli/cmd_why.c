// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace why [--since DUR] [--file REC.rtrace] [--json]
 *
 * The verdict over finished spans: ranked findings (verdict/findings.h,
 * docs/verdict.md), then the per-phase table and evidence lines
 * (verdict/verdict.h). From the daemon, or from a recording replayed here.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <reqtrace/span.h>

#include "cli.h"
#include "client.h"
#include "common/dur.h"
#include "verdict/findings.h"
#include "verdict/verdict.h"

int rt_cmd_why(struct rt_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "file", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *use = "usage: reqtrace why [--since DUR] [--file REC.rtrace] [--json]\n";
	struct rt_cli_rec rec = { 0 };
	struct rt_span *spans = NULL;
	struct rt_verdict *v = NULL;
	struct rt_findings *fs = NULL;
	struct rt_verdict_link live_links[RT_GPU_LINKS_MAX];
	struct rt_verdict_extra extra = { 0 };
	bool json = false;
	const char *file = NULL;
	uint64_t since = 0;
	size_t n = 0;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (rt_dur_parse(optarg, &since) || !since) {
				fprintf(stderr,
					"reqtrace: --since: a duration such as 30s or 5m\n");
				return RT_EXIT_USAGE;
			}
			break;
		case 'f':
			file = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(use, stdout);
			return RT_EXIT_OK;
		default:
			fputs(use, stderr);
			return RT_EXIT_USAGE;
		}
	}
	if (optind != argc || (file && since)) {
		fputs(use, stderr);
		return RT_EXIT_USAGE;
	}
	if (file) {
		rc = rt_cli_rec_load(file, &rec);
		spans = rec.spans;
		n = rec.n_spans;
		extra.links = rec.links;
		extra.n_links = rec.n_links;
	} else {
		rc = rt_client_spans(cli->socket_path, since, &spans, &n);
		if (!rc)
			rc = rt_cli_links_from_daemon(cli->socket_path, live_links,
						      RT_GPU_LINKS_MAX, &extra.n_links);
		extra.links = live_links;
	}
	if (rc)
		goto cleanup;
	v = malloc(sizeof(*v));
	fs = calloc(1, sizeof(*fs));
	if (!v || !fs || rt_verdict_compute(spans, n, v) ||
	    rt_findings_compute(spans, n, v, &extra, fs)) {
		fprintf(stderr, "reqtrace: out of memory\n");
		rc = RT_EXIT_FAIL;
		goto cleanup;
	}
	if (json) {
		if (rt_findings_json(stdout, fs)) {
			fprintf(stderr, "reqtrace: out of memory\n");
			rc = RT_EXIT_FAIL;
		}
	} else {
		rt_findings_print(stdout, fs);
		fputc('\n', stdout);
		rt_verdict_print(stdout, v);
	}
cleanup:
	rt_findings_free(fs);
	free(fs);
	free(v);
	if (file)
		rt_cli_rec_free(&rec);
	else
		free(spans);
	return rc;
}
