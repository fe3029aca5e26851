// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace export --format chrome|jsonl|otlp -o FILE [--since DUR | --file REC]
 *
 * Spans to a file for offline tools (docs/export.md): from a recording,
 * replayed as `replay` does, or from the daemon. FILE appears whole or not
 * at all: written to a temporary file beside it, renamed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <reqtrace/event.h>
#include <reqtrace/span.h>

#include "cli.h"
#include "client.h"
#include "common/dur.h"
#include "common/jsonw.h"
#include "export/chrome.h"
#include "export/otlp_json.h"
#include "export/span_json.h"

enum fmt { FMT_NONE, FMT_CHROME, FMT_JSONL, FMT_OTLP };

/* Device records kept for the GPU tracks; more are counted and left out. */
#define GPU_RECORDS_MAX (1u << 20) /* about 110 MiB */

struct export
{
	enum fmt fmt;
	FILE *f; /* the temporary file */
	struct rt_jsonw w;
	struct rt_chrome_gpu *gpu;
	size_t n_gpu, cap_gpu;
	uint64_t gpu_bad, gpu_left_out;
	unsigned long lines;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: reqtrace export --format chrome|jsonl|otlp -o FILE [--since DUR | --file "
		"REC]\n"
		"  --format F   chrome: Trace Event JSON for Perfetto UI / chrome://tracing\n"
		"               jsonl: one span per line (docs/spans.md); otlp: OTLP/JSON\n"
		"  -o FILE      written whole or not at all (temporary file, then rename)\n"
		"  --since DUR  the daemon's spans that finished in the last DUR (default: all)\n"
		"  --file REC   the spans of a recording, replayed as `reqtrace replay` does\n");
}

/*
 * One ExportTraceServiceRequest per line, OTLP_BATCH spans each: every line
 * is a body a collector accepts at /v1/traces (curl --data-binary @line).
 */
#define OTLP_BATCH 256

static int write_otlp(FILE *f, const struct rt_span *spans, size_t n, const struct rt_cli_rec *rec)
{
	struct rt_otlp_resource res = { 0 };
	char host[64] = "";
	size_t i;
	int err;

	if (rec) { /* a recording: its own host and clock offset, maybe another boot's */
		res.have_offset = true;
		res.epoch_offset_ns = rec->epoch_offset_ns;
		res.host_name = rec->host[0] ? rec->host : NULL;
	} else if (!gethostname(host, sizeof(host) - 1)) {
		res.host_name = host;
	}
	for (i = 0; i < n; i += OTLP_BATCH) {
		err = rt_otlp_json_write(f, spans + i, n - i < OTLP_BATCH ? n - i : OTLP_BATCH,
					 &res);
		if (err)
			return err;
	}
	return 0;
}

static void on_span_line(const struct rt_span *s, void *ctx)
{
	struct export *x = ctx;

	rt_jsonw_reset(&x->w);
	rt_span_to_json(&x->w, s);
	fprintf(x->f, "%s\n", rt_jsonw_str(&x->w));
	x->lines++;
}

static void on_event(const struct rt_event_hdr *ev, void *ctx)
{
	struct export *x = ctx;
	struct rt_chrome_gpu g;
	int r = rt_chrome_gpu_from_event(ev, &g);

	if (r < 0)
		x->gpu_bad++;
	if (r <= 0)
		return;
	if (x->n_gpu == x->cap_gpu) {
		size_t cap = x->cap_gpu ? x->cap_gpu * 2 : 1024;
		void *p = cap <= GPU_RECORDS_MAX ? realloc(x->gpu, cap * sizeof(*x->gpu)) : NULL;

		if (!p) {
			x->gpu_left_out++;
			return;
		}
		x->gpu = p;
		x->cap_gpu = cap;
	}
	x->gpu[x->n_gpu++] = g;
}

/* the daemon's span lines, verbatim, as `spans --json` prints them */
static int daemon_line(const char *line, size_t len, void *ctx)
{
	struct export *x = ctx;

	fwrite(line, 1, len, x->f);
	fputc('\n', x->f);
	x->lines++;
	return 0;
}

/* A temporary file beside path, so that the rename stays on one filesystem. */
static int tmp_open(const char *path, char **tmp, FILE **f)
{
	size_t len = strlen(path) + sizeof(".XXXXXX");
	mode_t mask;
	int fd;

	*tmp = malloc(len);
	if (!*tmp)
		return -ENOMEM;
	snprintf(*tmp, len, "%s.XXXXXX", path);
	fd = mkstemp(*tmp);
	if (fd < 0)
		return -errno;
	/* mkstemp makes it 0600; the result gets what open() would have given */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) < 0 || !(*f = fdopen(fd, "w"))) {
		int err = -errno;

		close(fd);
		unlink(*tmp);
		return err;
	}
	return 0;
}

static int load_daemon(struct rt_cli *cli, struct export *x, uint64_t since, struct rt_span **spans,
		       size_t *n)
{
	struct rt_jsonw w;
	int rc;

	if (x->fmt != FMT_JSONL)
		return rt_client_spans(cli->socket_path, since, spans, n);
	rt_client_request(&w, "spans");
	if (since) {
		rt_jsonw_key(&w, "since");
		rt_jsonw_uint(&w, since);
	}
	rt_jsonw_obj_close(&w);
	rc = rt_client_call(cli->socket_path, rt_jsonw_str(&w), daemon_line, x, NULL, 0);
	rt_jsonw_fini(&w);
	return rc;
}

int rt_cmd_export(struct rt_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "since", required_argument, NULL, 's' },
		{ "file", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct export x = { 0 };
	struct rt_cli_rec rec = { 0 };
	struct rt_cli_rec_hooks hooks = { .ctx = &x };
	struct rt_chrome_stats cst;
	struct rt_span *spans = NULL, *fetched = NULL;
	const char *out = NULL, *file = NULL;
	char *tmp = NULL;
	bool have_since = false;
	uint64_t since = 0;
	size_t n = 0;
	int c, err, rc = RT_EXIT_FAIL;

	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (!strcmp(optarg, "chrome")) {
				x.fmt = FMT_CHROME;
			} else if (!strcmp(optarg, "jsonl")) {
				x.fmt = FMT_JSONL;
			} else if (!strcmp(optarg, "otlp")) {
				x.fmt = FMT_OTLP;
			} else {
				fprintf(stderr,
					"reqtrace: export: unknown format '%s' (chrome, jsonl, "
					"otlp)\n",
					optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 's':
			if (rt_dur_parse(optarg, &since)) {
				fprintf(stderr,
					"reqtrace: --since: a duration such as 30s or 5m\n");
				return RT_EXIT_USAGE;
			}
			have_since = true;
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
	if (optind != argc) {
		fprintf(stderr, "reqtrace: export: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	if (x.fmt == FMT_NONE || !out || !out[0]) {
		fprintf(stderr, "reqtrace: export: %s\n",
			x.fmt == FMT_NONE ? "--format is required (chrome, jsonl, otlp)" :
					    "-o FILE is required");
		return RT_EXIT_USAGE;
	}
	if (have_since && file) {
		fprintf(stderr, "reqtrace: export: --since and --file exclude each other "
				"(a recording has no 'now' to count back from)\n");
		return RT_EXIT_USAGE;
	}
	rt_jsonw_init(&x.w, 0);
	err = tmp_open(out, &tmp, &x.f);
	if (err) {
		fprintf(stderr, "reqtrace: %s: %s\n", out, strerror(-err));
		free(tmp);
		tmp = NULL;
		goto cleanup;
	}
	if (file) {
		if (x.fmt == FMT_JSONL)
			hooks.on_span = on_span_line;
		if (x.fmt == FMT_CHROME)
			hooks.on_event = on_event;
		rc = rt_cli_rec_load_ex(file, &rec, &hooks);
		if (rc)
			goto cleanup;
		rc = RT_EXIT_FAIL;
		spans = rec.spans;
		n = rec.n_spans;
		if (x.fmt != FMT_JSONL && rec.spans_dropped)
			fprintf(stderr,
				"reqtrace: only the last %d spans are exported (%llu older)\n",
				RT_CLI_SPANS_MAX, (unsigned long long)rec.spans_dropped);
	} else {
		rc = load_daemon(cli, &x, since, &fetched, &n);
		if (rc)
			goto cleanup;
		rc = RT_EXIT_FAIL;
		spans = fetched;
	}
	if (x.gpu_bad || x.gpu_left_out)
		fprintf(stderr, "reqtrace: GPU records: %llu malformed, %llu past %u left out\n",
			(unsigned long long)x.gpu_bad, (unsigned long long)x.gpu_left_out,
			GPU_RECORDS_MAX);
	switch (x.fmt) {
	case FMT_CHROME:
		err = rt_chrome_write(x.f, spans, n, x.gpu, x.n_gpu, &cst);
		if (!err && cst.intervals_bad)
			fprintf(stderr,
				"reqtrace: %llu interval(s) ending before they start left out\n",
				(unsigned long long)cst.intervals_bad);
		break;
	case FMT_JSONL:
		err = 0; /* written line by line as the spans came */
		break;
	case FMT_OTLP:
		err = write_otlp(x.f, spans, n, file ? &rec : NULL);
		break;
	default:
		err = -EINVAL;
		break;
	}
	if (err) {
		fprintf(stderr, "reqtrace: %s: %s\n", out, strerror(-err));
		goto cleanup;
	}
	errno = 0;
	if (fflush(x.f) || ferror(x.f) || fsync(fileno(x.f)) < 0) {
		fprintf(stderr, "reqtrace: %s: %s\n", out, strerror(errno ? errno : EIO));
		goto cleanup;
	}
	err = fclose(x.f);
	x.f = NULL;
	if (err || rename(tmp, out) < 0) {
		fprintf(stderr, "reqtrace: %s: %s\n", out, strerror(errno));
		goto cleanup;
	}
	free(tmp);
	tmp = NULL;
	rc = RT_EXIT_OK;
cleanup:
	if (x.f)
		fclose(x.f);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	rt_cli_rec_free(&rec);
	free(fetched);
	free(x.gpu);
	rt_jsonw_fini(&x.w);
	return rc;
}
