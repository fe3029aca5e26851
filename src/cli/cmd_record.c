// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace record -o FILE --duration DUR
 *
 * Asks the daemon to record (payloads redacted, docs/privacy.md). The
 * daemon writes the file, so the path is made absolute here.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "common/dur.h"
#include "common/jsonw.h"

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
	fprintf(stderr, "reqtrace: recorded %.0f records (%.0f bytes) to %s\n",
		rt_client_num(e, "records"), rt_client_num(e, "bytes"), abs);
	cJSON_Delete(e);
	return RT_EXIT_OK;
}
