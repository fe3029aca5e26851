// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace replay FILE [--json] [--request ID]
 *
 * Runs a recording through the same merge and correlator as the daemon.
 * A bad file ends with one line naming the byte offset of the first bad
 * byte and exit code 2; spans already printed stay printed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common/jsonw.h"
#include "export/event_text.h"
#include "export/span_json.h"
#include "export/span_table.h"
#include "merge/pipeline.h"
#include "sources/rtrace_read.h"

struct replay {
	bool json;
	const char *only;
	struct rt_jsonw w;
	bool header_done;
	unsigned long printed;
};

static void on_span(const struct rt_span *s, void *ctx)
{
	struct replay *r = ctx;

	if (r->only && strcmp(r->only, s->request_id))
		return;
	r->printed++;
	if (r->json) {
		rt_jsonw_reset(&r->w);
		rt_span_to_json(&r->w, s);
		printf("%s\n", rt_jsonw_str(&r->w));
		return;
	}
	if (!r->header_done) {
		rt_span_table_header(stdout);
		r->header_done = true;
	}
	rt_span_table_row(stdout, s);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: reqtrace replay FILE [--json] [--request ID] [--events]\n"
		   "  --json        one span per line (JSON Lines, docs/spans.md)\n"
		   "  --request ID  only the span(s) of this request id\n"
		   "  --events      print the raw records instead, one per line, in file order\n");
}

int rt_cmd_replay(struct rt_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "request", required_argument, NULL, 'r' },
		{ "events", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct replay rp = { 0 };
	struct rt_pipeline_opts po = { 0 };
	struct rt_trace_reader *rd = NULL;
	struct rt_pipeline *pl = NULL;
	const struct rt_event_hdr *ev;
	const char *path;
	bool events = false;
	int c, rc = RT_EXIT_OK, err;
	__u64 left;

	(void)cli;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			rp.json = true;
			break;
		case 'r':
			rp.only = optarg;
			break;
		case 'e':
			events = true;
			break;
		case 'h':
			usage(stdout);
			return RT_EXIT_OK;
		default:
			usage(stderr);
			return RT_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	path = argv[optind];
	rt_jsonw_init(&rp.w, 0);
	rd = rt_trace_reader__open(path, NULL);
	if (!rd) {
		fprintf(stderr, "reqtrace: %s: %s\n", path, strerror(errno));
		rc = errno == EINVAL || errno == EPROTO || errno == EBADMSG ? RT_EXIT_USAGE :
									      RT_EXIT_FAIL;
		goto cleanup;
	}
	po.corr.on_span = on_span;
	po.corr.ctx = &rp;
	pl = rt_pipeline__new(&po);
	if (!pl) {
		fprintf(stderr, "reqtrace: %s\n", strerror(errno));
		rc = RT_EXIT_FAIL;
		goto cleanup;
	}
	/* the pipeline drains at each WATERMARK record, as it did live */
	while ((err = rt_trace_reader__next(rd, &ev)) == 1) {
		if (events)
			rt_event_print(stdout, ev);
		else
			rt_pipeline__push(pl, ev);
	}
	left = rt_pipeline__flush(pl);
	fflush(stdout);
	if (err < 0) {
		fprintf(stderr, "reqtrace: %s: %s\n", path, rt_trace_reader__error(rd));
		rc = RT_EXIT_USAGE;
		goto cleanup;
	}
	if (left)
		fprintf(stderr, "reqtrace: %llu request(s) still in flight at the end of %s\n",
			(unsigned long long)left, path);
	if (rp.only && !rp.printed && !events) {
		fprintf(stderr, "reqtrace: no request with id '%s' in %s\n", rp.only, path);
		rc = RT_EXIT_FAIL;
	}
cleanup:
	rt_pipeline__free(pl);
	rt_trace_reader__free(rd);
	rt_jsonw_fini(&rp.w);
	return rc;
}
