// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace show ID [--json] [--file REC.rtrace]
 *
 * One request as a terminal waterfall (export/waterfall.h), from the daemon
 * or from a recording replayed here (rec.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "term.h"
#include "common/jsonw.h"
#include "export/span_json.h"
#include "export/waterfall.h"

struct show {
	bool json;
	bool found;
	bool bad; /* the daemon's line did not parse */
};

static void render(const struct rt_span *s)
{
	struct rt_waterfall_opts o = {
		.width = rt_term_width(STDOUT_FILENO),
		.color = rt_term_color(STDOUT_FILENO),
	};

	rt_waterfall_print(stdout, s, &o);
}

static int show_line(const char *line, size_t len, void *ctx)
{
	struct show *x = ctx;
	struct rt_span s;

	(void)len;
	x->found = true;
	if (x->json) {
		/* the daemon's line itself: byte for byte what `spans --json` prints */
		printf("%s\n", line);
		return 0;
	}
	if (rt_span_from_json(line, &s)) {
		fprintf(stderr, "reqtrace: unreadable span from the daemon\n");
		x->bad = true;
		return 1;
	}
	render(&s);
	return 0;
}

static int show_daemon(struct rt_cli *cli, const char *id, struct show *x)
{
	struct rt_jsonw w;
	int rc;

	rt_client_request(&w, "show");
	rt_jsonw_key(&w, "id");
	rt_jsonw_str_val(&w, id);
	rt_jsonw_obj_close(&w);
	if (!rt_jsonw_ok(&w)) {
		rt_jsonw_fini(&w);
		fprintf(stderr, "reqtrace: request id too long\n");
		return RT_EXIT_USAGE;
	}
	rc = rt_client_call(cli->socket_path, rt_jsonw_str(&w), show_line, x, NULL, 0);
	rt_jsonw_fini(&w);
	if (!rc && x->bad)
		rc = RT_EXIT_FAIL;
	if (!rc && !x->found) {
		fprintf(stderr, "reqtrace: no finished request with id '%s'\n", id);
		rc = RT_EXIT_FAIL;
	}
	return rc;
}

static int show_file(const char *path, const char *id, struct show *x)
{
	const struct rt_span *s = NULL;
	struct rt_cli_rec rec;
	struct rt_jsonw w;
	size_t i;
	int rc;

	rc = rt_cli_rec_load(path, &rec);
	if (rc)
		return rc;
	/* oldest first, revisions replaced in place: the last match is the newest */
	for (i = 0; i < rec.n_spans; i++)
		if (!strcmp(rec.spans[i].request_id, id))
			s = &rec.spans[i];
	if (!s) {
		fprintf(stderr, "reqtrace: no finished request with id '%s' in %s\n", id, path);
		rc = RT_EXIT_FAIL;
	} else if (x->json) {
		rt_jsonw_init(&w, 0);
		rt_span_to_json(&w, s);
		printf("%s\n", rt_jsonw_str(&w));
		rt_jsonw_fini(&w);
	} else {
		render(s);
	}
	rt_cli_rec_free(&rec);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: reqtrace show ID [--json] [--file REC.rtrace]\n"
		   "  --json       the span record (docs/spans.md), as `spans --json` prints it\n"
		   "  --file REC   from a recording instead of the daemon\n");
}

int rt_cmd_show(struct rt_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "file", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct show x = { 0 };
	const char *file = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			x.json = true;
			break;
		case 'f':
			file = optarg;
			break;
		case 'h':
			usage(stdout);
			return RT_EXIT_OK;
		default:
			usage(stderr);
			return RT_EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || !argv[optind][0]) {
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	if (file)
		return show_file(file, argv[optind], &x);
	return show_daemon(cli, argv[optind], &x);
}
