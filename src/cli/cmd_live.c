// SPDX-License-Identifier: BSD-2-Clause
/*
 * Commands that ask the daemon: status, spans, show, record.
 * docs/cli.md shows their output; docs/protocol.md the requests.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "common/dur.h"
#include "common/jsonw.h"
#include "export/span_json.h"
#include "export/span_table.h"

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void print_status(const cJSON *st)
{
	const cJSON *t, *v, *drops;
	int any = 0;
	double ring;

	v = cJSON_GetObjectItemCaseSensitive(st, "version");
	printf("reqtraced %s, up %.1fs\n", cJSON_IsString(v) ? v->valuestring : "?",
	       num(st, "uptime_s"));
	printf("targets:\n");
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(st, "targets"))
	{
		const cJSON *pid, *unr = cJSON_GetObjectItemCaseSensitive(t, "unreadable");
		double tls = num(unr, "tls"), h2 = num(unr, "http2"), bad = num(unr, "malformed");
		int n = 0;

		v = cJSON_GetObjectItemCaseSensitive(t, "group");
		printf("  %-20s %-8s pids", cJSON_IsString(v) ? v->valuestring : "?",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "active")) ? "active" :
										     "waiting");
		cJSON_ArrayForEach(pid, cJSON_GetObjectItemCaseSensitive(t, "pids"))
		{
			if (n++ < 8)
				printf("%s%.0f", n > 1 ? "," : " ", pid->valuedouble);
		}
		if (n > 8)
			printf(",... (%d)", n);
		if (!n)
			printf(" -");
		if (tls + h2 + bad == 0)
			printf("   unreadable connections: none\n");
		else
			printf("   %.0f connections unreadable: %.0f TLS, %.0f HTTP/2, %.0f "
			       "other\n",
			       tls + h2 + bad, tls, h2, bad);
		v = cJSON_GetObjectItemCaseSensitive(t, "cgroup");
		if (cJSON_IsString(v) && v->valuestring[0])
			printf("  %-20s cgroup %s\n", "", v->valuestring);
	}
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(st, "injected"))
	{
		const cJSON *comm = cJSON_GetObjectItemCaseSensitive(t, "comm");
		const cJSON *cst = cJSON_GetObjectItemCaseSensitive(t, "status");

		printf("  injected pid %.0f (%s): CUPTI %s, %.0f records, %.0f lost\n",
		       num(t, "pid"), cJSON_IsString(comm) ? comm->valuestring : "?",
		       cJSON_IsString(cst) ? cst->valuestring : "?", num(t, "records"),
		       num(t, "lost"));
	}
	v = cJSON_GetObjectItemCaseSensitive(st, "gpu");
	if (cJSON_IsObject(v) && (num(v, "libraries") > 0 || num(v, "device_records") > 0)) {
		printf("gpu: %.0f libraries probed (%.0f probes), %.0f calls (%.0f unattributed), "
		       "%.0f device records (%.0f joined)\n",
		       num(v, "libraries"), num(v, "probes"), num(v, "records"),
		       num(v, "unattributed"), num(v, "device_records"), num(v, "device_joined"));
		cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(v, "devices"))
		{
			printf("  pid %.0f device %.0f: busy %.1f%% over the last minute (%.0f "
			       "kernels)\n",
			       num(t, "pid"), num(t, "device"), num(t, "busy_fraction") * 100,
			       num(t, "kernels"));
		}
	}
	printf("sources:\n");
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(st, "sources"))
	{
		v = cJSON_GetObjectItemCaseSensitive(t, "name");
		printf("  %-8s %10.1f events/s %12.0f events",
		       cJSON_IsString(v) ? v->valuestring : "?", num(t, "events_per_s"),
		       num(t, "events"));
		ring = num(t, "ring_bytes");
		if (ring > 0)
			printf("   lost %.0f   ring %.2f%% full (max %.2f%%) of %.1f MiB",
			       num(t, "lost"), num(t, "ring_fill") * 100,
			       num(t, "ring_fill_max") * 100, ring / (1 << 20));
		printf("\n");
	}
	printf("drops:");
	drops = cJSON_GetObjectItemCaseSensitive(st, "drops");
	cJSON_ArrayForEach(t, drops)
	{
		if (cJSON_IsNumber(t) && t->valuedouble > 0) {
			printf(" %s=%.0f", t->string, t->valuedouble);
			any = 1;
		}
	}
	printf("%s\n", any ? "" : " none");
	v = cJSON_GetObjectItemCaseSensitive(st, "correlator");
	printf("in flight: %.0f requests, %.0f connections, %.0f threads; spans %.0f (amended "
	       "%.0f)\n",
	       num(v, "inflight"), num(v, "conns"), num(v, "threads"), num(v, "spans"),
	       num(v, "amended"));
	v = cJSON_GetObjectItemCaseSensitive(st, "store");
	printf("store: %.0f of %.0f spans\n", num(v, "spans"), num(v, "capacity"));
	v = cJSON_GetObjectItemCaseSensitive(st, "recording");
	if (cJSON_IsObject(v))
		printf("recording: %s (%.0f records)\n",
		       cJSON_GetObjectItemCaseSensitive(v, "path")->valuestring, num(v, "records"));
	else
		printf("recording: off\n");
}

struct status_ctx {
	bool json;
};

static int status_line(const char *line, size_t len, void *ctx)
{
	struct status_ctx *x = ctx;
	cJSON *o;

	(void)len;
	if (x->json) {
		printf("%s\n", line);
		return 0;
	}
	o = cJSON_Parse(line);
	if (!o) {
		fprintf(stderr, "reqtrace: unreadable status from the daemon\n");
		return 1;
	}
	print_status(o);
	cJSON_Delete(o);
	return 0;
}

int rt_cmd_status(struct rt_cli *cli, int argc, char **argv)
{
	struct status_ctx x = { 0 };

	if (argc == 2 && !strcmp(argv[1], "--json"))
		x.json = true;
	else if (argc != 1) {
		fprintf(stderr, "usage: reqtrace status [--json]\n");
		return RT_EXIT_USAGE;
	}
	return rt_client_call(cli->socket_path, "{\"v\":1,\"cmd\":\"status\"}", status_line, &x,
			      NULL, 0);
}

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

int rt_cmd_record(struct rt_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char abs[PATH_MAX], dir[PATH_MAX], end_line[512];
	const char *out = NULL, *base;
	uint64_t dur = 0;
	struct rt_jsonw w;
	cJSON *e;
	int c, rc;

	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'd':
			if (rt_dur_parse(optarg, &dur) || !dur) {
				fprintf(stderr, "reqtrace: --duration: a duration such as 10s\n");
				return RT_EXIT_USAGE;
			}
			break;
		case 'h':
			printf("usage: reqtrace record -o FILE --duration DUR\n");
			return RT_EXIT_OK;
		default:
			return RT_EXIT_USAGE;
		}
	}
	if (!out || !dur || optind != argc) {
		fprintf(stderr, "usage: reqtrace record -o FILE --duration DUR\n");
		return RT_EXIT_USAGE;
	}
	/* the daemon resolves nothing relative to our working directory */
	snprintf(dir, sizeof(dir), "%s", out);
	base = strrchr(out, '/');
	if (base) {
		dir[base - out] = '\0';
		base++;
		if (!dir[0])
			snprintf(dir, sizeof(dir), "/");
	} else {
		snprintf(dir, sizeof(dir), ".");
		base = out;
	}
	if (!realpath(dir, abs) || strlen(abs) + strlen(base) + 2 > sizeof(abs)) {
		fprintf(stderr, "reqtrace: %s: %s\n", dir, strerror(errno));
		return RT_EXIT_USAGE;
	}
	strcat(abs, "/");
	strcat(abs, base);
	rt_client_request(&w, "record");
	rt_jsonw_key(&w, "path");
	rt_jsonw_str_val(&w, abs);
	rt_jsonw_key(&w, "duration");
	rt_jsonw_uint(&w, dur);
	rt_jsonw_obj_close(&w);
	rc = rt_client_call(cli->socket_path, rt_jsonw_str(&w), NULL, NULL, end_line,
			    sizeof(end_line));
	rt_jsonw_fini(&w);
	if (rc)
		return rc;
	e = cJSON_Parse(end_line);
	fprintf(stderr, "reqtrace: recorded %.0f records (%.0f bytes) to %s\n", num(e, "records"),
		num(e, "bytes"), abs);
	cJSON_Delete(e);
	return RT_EXIT_OK;
}
