// SPDX-License-Identifier: BSD-2-Clause
/*
 * rt-gen: writes a synthetic recording and its truth.
 *
 *   rt-gen --scenario NAME --mode zero|markers|pack --seed N --out FILE.rtrace --truth FILE.jsonl
 *   rt-gen --list
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

enum {
	OPT_SCENARIO = 1000,
	OPT_MODE,
	OPT_SEED,
	OPT_OUT,
	OPT_TRUTH,
	OPT_LIST,
	OPT_HELP,
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rt-gen --scenario NAME --mode zero|markers|pack --seed N --out FILE.rtrace "
		"--truth FILE.jsonl\n"
		"       rt-gen --list\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "scenario", required_argument, NULL, OPT_SCENARIO },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "out", required_argument, NULL, OPT_OUT },
		{ "truth", required_argument, NULL, OPT_TRUTH },
		{ "list", no_argument, NULL, OPT_LIST },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	struct rt_gen_opts o = { .mode = RT_GEN_ZERO, .seed = 1 };
	char *end;
	size_t i;
	int c, err;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SCENARIO:
			o.scenario = optarg;
			break;
		case OPT_MODE:
			if (rt_gen_mode_parse(optarg, &o.mode)) {
				fprintf(stderr, "rt-gen: --mode must be zero, markers or pack\n");
				return 2;
			}
			break;
		case OPT_SEED:
			errno = 0;
			o.seed = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg) {
				fprintf(stderr, "rt-gen: bad --seed '%s'\n", optarg);
				return 2;
			}
			break;
		case OPT_OUT:
			o.rtrace_path = optarg;
			break;
		case OPT_TRUTH:
			o.truth_path = optarg;
			break;
		case OPT_LIST:
			for (i = 0; i < rt_gen_scenario_count(); i++)
				printf("%-20s %s\n", rt_gen_scenario_name(i),
				       rt_gen_scenario_desc(i));
			return 0;
		case OPT_HELP:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !o.scenario || !o.rtrace_path || !o.truth_path) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < rt_gen_scenario_count(); i++)
		if (!strcmp(rt_gen_scenario_name(i), o.scenario))
			break;
	if (i == rt_gen_scenario_count()) {
		fprintf(stderr, "rt-gen: unknown scenario '%s' (see --list)\n", o.scenario);
		return 2;
	}
	err = rt_gen_run(&o);
	if (err) {
		fprintf(stderr, "rt-gen: %s: %s\n", o.scenario, strerror(-err));
		return 1;
	}
	return 0;
}
