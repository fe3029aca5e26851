// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace status [--json]
 *
 * The daemon's targets, event rates, drops and store, as docs/cli.md shows
 * them; the request is docs/protocol.md's "status".
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "client.h"

/*
 * A target's listeners and the listen-queue counters of its network
 * namespaces: connections refused while an accept queue was full never
 * reach the server, so they are in no span.
 */
static void print_listen(const cJSON *t)
{
	const cJSON *listen = cJSON_GetObjectItemCaseSensitive(t, "listen"), *l, *v;
	double skipped = rt_client_num(listen, "skipped");

	cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(listen, "listeners"))
	{
		v = cJSON_GetObjectItemCaseSensitive(l, "addr");
		printf("  %-20s listen %s:%.0f accept queue %.0f (max seen %.0f) of ", "",
		       cJSON_IsString(v) ? v->valuestring : "?", rt_client_num(l, "port"),
		       rt_client_num(l, "queue"), rt_client_num(l, "queue_max_seen"));
		v = cJSON_GetObjectItemCaseSensitive(l, "limit");
		if (cJSON_IsNumber(v))
			printf("%.0f\n", v->valuedouble);
		else
			printf("? (limit unknown)\n");
	}
	cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(listen, "netns"))
	{
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(l, "overflows");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(l, "drops");

		if (!cJSON_IsNumber(o) || !cJSON_IsNumber(d)) {
			printf("  %-20s listen overflows, drops: unreadable (network namespace "
			       "%.0f)\n",
			       "", rt_client_num(l, "netns"));
			continue;
		}
		printf("  %-20s listen overflows +%.0f, drops +%.0f since start (network namespace "
		       "%.0f, all its listeners)%s\n",
		       "", o->valuedouble, d->valuedouble, rt_client_num(l, "netns"),
		       d->valuedouble > 0 ? ": handshake packets dropped (a retry counts again); "
					    "their clients waited or timed out before the server "
					    "saw them, in no span" :
					    "");
	}
	if (skipped > 0)
		printf("  %-20s %.0f more listeners not shown (bounds)\n", "", skipped);
}

static void print_status(const cJSON *st)
{
	const cJSON *t, *v, *drops;
	int any = 0;
	double ring;

	v = cJSON_GetObjectItemCaseSensitive(st, "version");
	printf("reqtraced %s, up %.1fs\n", cJSON_IsString(v) ? v->valuestring : "?",
	       rt_client_num(st, "uptime_s"));
	printf("targets:\n");
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(st, "targets"))
	{
		const cJSON *pid, *unr = cJSON_GetObjectItemCaseSensitive(t, "unreadable");
		double tls = rt_client_num(unr, "tls"), h2 = rt_client_num(unr, "http2"),
		       bad = rt_client_num(unr, "malformed");
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
		print_listen(t);
	}
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(st, "injected"))
	{
		const cJSON *comm = cJSON_GetObjectItemCaseSensitive(t, "comm");
		const cJSON *cst = cJSON_GetObjectItemCaseSensitive(t, "status");

		printf("  injected pid %.0f (%s): CUPTI %s, %.0f records, %.0f lost\n",
		       rt_client_num(t, "pid"), cJSON_IsString(comm) ? comm->valuestring : "?",
		       cJSON_IsString(cst) ? cst->valuestring : "?", rt_client_num(t, "records"),
		       rt_client_num(t, "lost"));
	}
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(st, "marker_rings"))
	{
		const cJSON *comm = cJSON_GetObjectItemCaseSensitive(t, "comm");

		printf("  markers pid %.0f (%s): shared memory, %.0f records, %.0f late, "
		       "%.0f invalid, %.0f lost\n",
		       rt_client_num(t, "pid"), cJSON_IsString(comm) ? comm->valuestring : "?",
		       rt_client_num(t, "records"), rt_client_num(t, "late"),
		       rt_client_num(t, "invalid"), rt_client_num(t, "lost"));
	}
	v = cJSON_GetObjectItemCaseSensitive(st, "gpu");
	if (cJSON_IsObject(v) &&
	    (rt_client_num(v, "libraries") > 0 || rt_client_num(v, "device_records") > 0)) {
		printf("gpu: %.0f libraries probed (%.0f probes), %.0f calls (%.0f unattributed), "
		       "%.0f device records (%.0f joined)\n",
		       rt_client_num(v, "libraries"), rt_client_num(v, "probes"),
		       rt_client_num(v, "records"), rt_client_num(v, "unattributed"),
		       rt_client_num(v, "device_records"), rt_client_num(v, "device_joined"));
		cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(v, "devices"))
		{
			printf("  pid %.0f device %.0f: busy %.1f%% over the last minute (%.0f "
			       "kernels)\n",
			       rt_client_num(t, "pid"), rt_client_num(t, "device"),
			       rt_client_num(t, "busy_fraction") * 100,
			       rt_client_num(t, "kernels"));
		}
	}
	/* engine packs (docs/packs.md): only those that matched a file */
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(
				      cJSON_GetObjectItemCaseSensitive(st, "packs"), "list"))
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
		const cJSON *ver = cJSON_GetObjectItemCaseSensitive(t, "version");
		const cJSON *f;

		if (rt_client_num(t, "matched") <= 0)
			continue;
		printf("pack %s %s: %.0f files matched, %.0f attached (%.0f probes), %.0f failed\n",
		       cJSON_IsString(name) ? name->valuestring : "?",
		       cJSON_IsString(ver) ? ver->valuestring : "?", rt_client_num(t, "matched"),
		       rt_client_num(t, "attached"), rt_client_num(t, "probes"),
		       rt_client_num(t, "failed"));
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "failures"))
		{
			const cJSON *file = cJSON_GetObjectItemCaseSensitive(f, "file");
			const cJSON *why = cJSON_GetObjectItemCaseSensitive(f, "reason");

			printf("  %s: %s\n", cJSON_IsString(file) ? file->valuestring : "?",
			       cJSON_IsString(why) ? why->valuestring : "?");
		}
	}
	printf("sources:\n");
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(st, "sources"))
	{
		v = cJSON_GetObjectItemCaseSensitive(t, "name");
		printf("  %-8s %10.1f events/s %12.0f events",
		       cJSON_IsString(v) ? v->valuestring : "?", rt_client_num(t, "events_per_s"),
		       rt_client_num(t, "events"));
		ring = rt_client_num(t, "ring_bytes");
		if (ring > 0)
			printf("   lost %.0f   ring %.2f%% full (max %.2f%%) of %.1f MiB",
			       rt_client_num(t, "lost"), rt_client_num(t, "ring_fill") * 100,
			       rt_client_num(t, "ring_fill_max") * 100, ring / (1 << 20));
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
	       rt_client_num(v, "inflight"), rt_client_num(v, "conns"), rt_client_num(v, "threads"),
	       rt_client_num(v, "spans"), rt_client_num(v, "amended"));
	v = cJSON_GetObjectItemCaseSensitive(st, "arrival");
	if (cJSON_IsObject(v))
		printf("arrival in the kernel: %s; %.0f requests got it, %.0f refused, %.0f "
		       "unused\n",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "on")) ?
			       "observed" :
			       "not observed (no tcp_probe/inet_sock_set_state: backlog is null)",
		       rt_client_num(v, "applied"), rt_client_num(v, "refused"),
		       rt_client_num(v, "unused"));
	v = cJSON_GetObjectItemCaseSensitive(st, "store");
	printf("store: %.0f of %.0f spans\n", rt_client_num(v, "spans"),
	       rt_client_num(v, "capacity"));
	v = cJSON_GetObjectItemCaseSensitive(st, "recording");
	if (cJSON_IsObject(v))
		printf("recording: %s (%.0f records)\n",
		       cJSON_GetObjectItemCaseSensitive(v, "path")->valuestring,
		       rt_client_num(v, "records"));
	else
		printf("recording: off\n");
	/* only when the exporter runs: an older daemon, or none, says nothing */
	v = cJSON_GetObjectItemCaseSensitive(st, "jsonl");
	if (cJSON_IsObject(v) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "path")))
		printf("jsonl: %s (%.0f lines, %.0f rotations, %.0f dropped)\n",
		       cJSON_GetObjectItemCaseSensitive(v, "path")->valuestring,
		       rt_client_num(v, "lines"), rt_client_num(v, "rotations"),
		       rt_client_num(v, "dropped"));
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
