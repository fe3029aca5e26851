// SPDX-License-Identifier: BSD-2-Clause
/* reqtrace-testbed: the ground-truth inference-server emulator (docs/testbed.md). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "markers.h"
#include "peer.h"
#include "server.h"

enum {
	OPT_SCENARIO = 1000,
	OPT_PORT,
	OPT_TRUTH,
	OPT_MARKERS,
	OPT_IO,
	OPT_PEER,
	OPT_PEER_MODE,
	OPT_SET,
	OPT_BACKEND,
	OPT_HELP,
};

static const struct option long_opts[] = {
	{ "scenario", required_argument, NULL, OPT_SCENARIO },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "truth", required_argument, NULL, OPT_TRUTH },
	{ "markers", no_argument, NULL, OPT_MARKERS },
	{ "io", required_argument, NULL, OPT_IO },
	{ "peer", required_argument, NULL, OPT_PEER },
	{ "peer-mode", no_argument, NULL, OPT_PEER_MODE },
	{ "set", required_argument, NULL, OPT_SET },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "help", no_argument, NULL, OPT_HELP },
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: reqtrace-testbed [--scenario FILE] [--port N] [--truth FILE] [--markers]\n"
		"                        [--io readwrite|vector|socket|msg|split]\n"
		"                        [--peer HOST:PORT | --peer-mode] [--set knob=value]...\n"
		"                        [--backend sleep|cuda|omp]\n"
		"Serves POST /v1/completions and GET /health on 127.0.0.1:PORT (0: ephemeral)\n"
		"and prints \"listening on 127.0.0.1:PORT\" when ready. SIGINT/SIGTERM stop it.\n");
}

#define SETS_MAX 64

int main(int argc, char **argv)
{
	const char *scenario = NULL, *truth = NULL, *peer = NULL, *sets[SETS_MAX];
	const struct tb_backend_ops *backend = &tb_backend_sleep;
	enum tb_io_mode io = TB_IO_READWRITE;
	struct tb_server_opts so = { 0 };
	struct tb_peer_server *ps = NULL;
	struct tb_server *srv = NULL;
	struct tb_server_stats st;
	bool peer_mode = false;
	struct tb_knobs k;
	unsigned long port = 0;
	uint16_t bound = 0;
	int opt, i, n_sets = 0, sig, fd, err = 0;
	char msg[512], *end;
	sigset_t sigs;

	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_SCENARIO:
			scenario = optarg;
			break;
		case OPT_PORT:
			errno = 0;
			port = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || port > 65535) {
				fprintf(stderr, "reqtrace-testbed: bad --port '%s'\n", optarg);
				return 2;
			}
			break;
		case OPT_TRUTH:
			truth = optarg;
			break;
		case OPT_MARKERS:
			tb_markers_on = true;
			break;
		case OPT_IO:
			if (tb_io_mode_parse(optarg, &io)) {
				fprintf(stderr, "reqtrace-testbed: unknown --io mode '%s'\n",
					optarg);
				return 2;
			}
			break;
		case OPT_PEER:
			peer = optarg;
			break;
		case OPT_PEER_MODE:
			peer_mode = true;
			break;
		case OPT_SET:
			if (n_sets == SETS_MAX) {
				fprintf(stderr, "reqtrace-testbed: too many --set\n");
				return 2;
			}
			sets[n_sets++] = optarg;
			break;
		case OPT_BACKEND:
			backend = tb_backend_find(optarg);
			if (!backend) {
				fprintf(stderr, "reqtrace-testbed: unknown backend '%s'\n", optarg);
				return 2;
			}
			break;
		case OPT_HELP:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || (peer && peer_mode)) {
		usage(stderr);
		return 2;
	}

	/* the scenario first, then --set on top: flags override the file */
	tb_knobs_default(&k);
	if (scenario && tb_knobs_load(&k, scenario, msg, sizeof(msg))) {
		fprintf(stderr, "reqtrace-testbed: %s\n", msg);
		return 2;
	}
	for (i = 0; i < n_sets; i++) {
		if (tb_knobs_set_arg(&k, sets[i], msg, sizeof(msg))) {
			fprintf(stderr, "reqtrace-testbed: --set %s: %s\n", sets[i], msg);
			return 2;
		}
	}
	if (tb_knobs_check(&k, msg, sizeof(msg))) {
		fprintf(stderr, "reqtrace-testbed: %s\n", msg);
		return 2;
	}

	/* signals go to sigwait below, never to a worker in the middle of a stage */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	fd = tb_listen_loopback((uint16_t)port, &bound);
	if (fd < 0) {
		fprintf(stderr, "reqtrace-testbed: listen on 127.0.0.1:%lu: %s\n", port,
			strerror(-fd));
		return 1;
	}
	if (peer_mode) {
		ps = tb_peer_server__new(fd, tb_ms_to_ns(k.comm_delay_ms));
		if (!ps) {
			fprintf(stderr, "reqtrace-testbed: peer: %s\n", strerror(errno));
			return 1;
		}
	} else {
		so.knobs = &k;
		so.io = io;
		so.listen_fd = fd;
		so.truth_path = truth;
		so.peer = peer;
		so.backend = backend;
		srv = tb_server__new(&so);
		if (!srv) {
			fprintf(stderr, "reqtrace-testbed: start: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("listening on 127.0.0.1:%u\n", bound);
	fflush(stdout);

	while (sigwait(&sigs, &sig) != 0)
		;
	if (ps) {
		fprintf(stderr, "reqtrace-testbed: peer answered %llu messages\n",
			(unsigned long long)tb_peer_server__answered(ps));
		tb_peer_server__free(ps);
		return 0;
	}
	tb_server__join(srv);
	tb_server__stats(srv, &st);
	tb_server__free(srv);
	fprintf(stderr,
		"reqtrace-testbed: completions %llu ok %llu aborted %llu 4xx %llu 5xx %llu "
		"truth_errors %llu\n",
		(unsigned long long)st.completions, (unsigned long long)st.ok,
		(unsigned long long)st.aborted, (unsigned long long)st.client_errors,
		(unsigned long long)st.server_errors, (unsigned long long)st.truth_errors);
	if (st.truth_errors)
		err = 1;
	return err;
}
