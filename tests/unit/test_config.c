/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reqtraced's config file (src/daemon/config.c): the shipped example
 * parses to the built-in defaults, a file with every key set gives those
 * values, each kind of bad file is refused with a message that names the
 * file, the line and the key, and the flags laid over a file win.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "config.h"

static const char good[] = "; every key, none at its default\n"
			   "[targets]\n"
			   "pids = 101, 202 303\n"
			   "ports = 8000,9000\n"
			   "comms = vllm, python3 x\n"
			   "cgroups = system.slice/vllm.service\n"
			   "\n"
			   "[daemon]\n"
			   "socket = /run/rt/ctl.sock\n"
			   "socket_group = root\n"
			   "record = /var/lib/reqtrace/all.rtrace\n"
			   "capture_bodies = yes\n"
			   "inject = false\n"
			   "inject_socket = /run/rt/inject.sock\n"
			   "log_level = debug ; inline comment\n"
			   "\n"
			   "[limits]\n"
			   "ring_size = 16M\n"
			   "head_bytes = 1K\n"
			   "tail_bytes = 2048\n"
			   "max_spans = 500\n"
			   "max_requests = 600\n"
			   "idle_timeout = 90s\n"
			   "max_vllm_requests = 700\n"
			   "\n"
			   "[exporters]\n"
			   "metrics_listen = 127.0.0.1:9464\n";

static void test_good_file(void **state)
{
	struct rt_config c;
	struct rt_daemon_opts o;
	char err[512] = "";

	(void)state;
	rt_config_init(&c);
	assert_int_equal(rt_config_parse_string(&c, "good.conf", good, err, sizeof(err)), 0);
	rt_config_opts(&c, &o);
	assert_int_equal(o.n_pids, 3);
	assert_int_equal(o.pids[0], 101);
	assert_int_equal(o.pids[2], 303);
	assert_int_equal(o.n_ports, 2);
	assert_int_equal(o.ports[1], 9000);
	assert_int_equal(o.n_comms, 2);
	assert_string_equal(o.comms[0], "vllm");
	assert_string_equal(o.comms[1], "python3 x"); /* comms split on commas only */
	assert_int_equal(o.n_cgroups, 1);
	assert_string_equal(o.cgroups[0], "system.slice/vllm.service");
	assert_string_equal(o.socket_path, "/run/rt/ctl.sock");
	assert_int_equal(o.socket_group, 0);
	assert_string_equal(o.record_path, "/var/lib/reqtrace/all.rtrace");
	assert_true(o.capture_bodies);
	assert_null(o.inject_path); /* inject = false wins over the path */
	assert_true(o.verbose);
	assert_int_equal(c.log_level, RT_LOG_DEBUG);
	assert_int_equal(o.ring_bytes, 16u << 20);
	assert_int_equal(o.head_bytes, 1024);
	assert_int_equal(o.tail_bytes, 2048);
	assert_int_equal(o.max_spans, 500);
	assert_int_equal(o.max_requests, 600);
	assert_int_equal(o.max_vllm_requests, 700);
	assert_int_equal(o.idle_timeout_ns, 90ULL * 1000000000ULL);
	assert_string_equal(o.metrics_listen, "127.0.0.1:9464");
	assert_int_equal(c.line[RT_CFG_RING_SIZE], 18);
	rt_config_fini(&c);
}

/* The example shipped in configs/ names every key and sets each to its
 * default: the options it gives are those of no file at all. */
static void test_example_is_defaults(void **state)
{
	struct rt_config c, none;
	struct rt_daemon_opts o, d;
	char err[512] = "", path[4096];
	int k;

	(void)state;
	snprintf(path, sizeof(path), "%s/configs/reqtraced.conf", RT_SOURCE_DIR);
	rt_config_init(&c);
	rt_config_init(&none);
	if (rt_config_load(&c, path, err, sizeof(err)))
		fail_msg("%s", err);
	for (k = 0; k < RT_CFG__N; k++)
		if (!c.line[k] && k != RT_CFG_PIDS && k != RT_CFG_PORTS && k != RT_CFG_COMMS &&
		    k != RT_CFG_CGROUPS)
			fail_msg("example lacks key %s", rt_config_key_name((enum rt_cfg_key)k));
	rt_config_opts(&c, &o);
	rt_config_opts(&none, &d);
	assert_int_equal(o.n_pids + o.n_ports + o.n_comms + o.n_cgroups, 0);
	assert_string_equal(o.socket_path, d.socket_path);
	assert_int_equal(o.socket_group, d.socket_group);
	assert_null(o.record_path);
	assert_false(o.capture_bodies);
	assert_string_equal(o.inject_path, d.inject_path);
	assert_false(o.verbose);
	assert_int_equal(c.log_level, none.log_level);
	/* the daemon's own defaults where the options hold 0 */
	assert_int_equal(o.ring_bytes, 8u << 20);
	assert_int_equal(o.head_bytes, 512);
	assert_int_equal(o.tail_bytes, 1024);
	assert_int_equal(o.max_spans, 10000);
	assert_int_equal(o.max_requests, 8192);
	assert_int_equal(o.max_vllm_requests, 0); /* auto: the correlator takes max_requests */
	assert_int_equal(o.idle_timeout_ns, 300ULL * 1000000000ULL);
	assert_null(o.metrics_listen);
	assert_string_equal(o.pin_dir, "/sys/fs/bpf/reqtrace");
	assert_string_equal(o.pin_dir, d.pin_dir);
	rt_config_fini(&none);
	rt_config_fini(&c);
}

struct bad {
	const char *text;
	const char *want; /* the whole message */
};

static const struct bad bads[] = {
	{ "[limits]\nring_size = 8M\nring_sise = 8M\n",
	  "bad.conf:3: key 'ring_sise': unknown key" },
	{ "[limits]\n\n; a comment\nidle_timeout = 5x\n",
	  "bad.conf:4: key 'idle_timeout': bad duration '5x' (want a number with a unit: ns, us, "
	  "ms, s, m, h)" },
	{ "[limits]\nidle_timeout = 10\n",
	  "bad.conf:2: key 'idle_timeout': bad duration '10' (want a number with a unit: ns, us, "
	  "ms, s, m, h)" },
	{ "[limits]\nring_size = 8Q\n",
	  "bad.conf:2: key 'ring_size': bad size '8Q' (want a number with optional K/M/G, 4096 "
	  "to 1G)" },
	{ "[limits]\nring_size = 2G\n",
	  "bad.conf:2: key 'ring_size': bad size '2G' (want a number with optional K/M/G, 4096 "
	  "to 1G)" },
	{ "[limits]\nmax_spans = -1\n",
	  "bad.conf:2: key 'max_spans': bad number '-1' (want 1 to 10000000)" },
	{ "[limits]\nmax_vllm_requests = 0\n",
	  "bad.conf:2: key 'max_vllm_requests': bad number '0' (want 1 to 10000000, or auto)" },
	{ "[limits]\nmax_vllm_requests = -5\n",
	  "bad.conf:2: key 'max_vllm_requests': bad number '-5' (want 1 to 10000000, or auto)" },
	{ "[limits]\nmax_vllm_requests = 10000001\n",
	  "bad.conf:2: key 'max_vllm_requests': bad number '10000001' (want 1 to 10000000, or "
	  "auto)" },
	{ "[limits]\nmax_vllm_requests = 4294967297\n",
	  "bad.conf:2: key 'max_vllm_requests': bad number '4294967297' (want 1 to 10000000, or "
	  "auto)" },
	{ "[daemon]\nmax_vllm_requests = 10\n",
	  "bad.conf:2: key 'max_vllm_requests': belongs in [limits], not [daemon]" },
	{ "[exporters]\nmetrics_listen = 127.0.0.1:99999\n",
	  "bad.conf:2: key 'metrics_listen': bad address '127.0.0.1:99999' (port not in "
	  "1..65535)" },
	{ "[exporters]\nmetrics_listen = 127.0.0.1\n",
	  "bad.conf:2: key 'metrics_listen': bad address '127.0.0.1' (no port: want HOST:PORT)" },
	{ "[exporters]\nmetrics_listen = ::1:9464\n",
	  "bad.conf:2: key 'metrics_listen': bad address '::1:9464' (put an IPv6 address in "
	  "brackets)" },
	{ "[daemon]\ncapture_bodies = maybe\n",
	  "bad.conf:2: key 'capture_bodies': bad boolean 'maybe' (want true or false)" },
	{ "[daemon]\nlog_level = loud\n",
	  "bad.conf:2: key 'log_level': bad log level 'loud' (want error, warn, info or debug)" },
	{ "[targets]\nports = 80 0\n", "bad.conf:2: key 'ports': bad port '0' (want 1..65535)" },
	{ "[targets]\ncomms = a_name_of_16_chr\n",
	  "bad.conf:2: key 'comms': bad command name 'a_name_of_16_chr' (want 1 to 15 "
	  "characters)" },
	{ "[targets]\ncgroups = a/../b\n",
	  "bad.conf:2: key 'cgroups': bad cgroup 'a/../b' (want a cgroup path without '..', "
	  "under 512 characters)" },
	{ "[targets]\npids = ,\n", "bad.conf:2: key 'pids': empty list" },
	{ "[daemon]\nsocket_group = no-such-group-rt\n",
	  "bad.conf:2: key 'socket_group': no group 'no-such-group-rt'" },
	{ "[daemon]\nsocket = \n", "bad.conf:2: key 'socket': empty path" },
	{ "[daemon]\npin_dir = reqtrace\n",
	  "bad.conf:2: key 'pin_dir': an absolute path in a bpffs mount, or empty" },
	{ "[daemon]\nlog_level = info\nring_size = 8M\n",
	  "bad.conf:3: key 'ring_size': belongs in [limits], not [daemon]" },
	{ "ring_size = 8M\n", "bad.conf:1: key 'ring_size': belongs in section [limits]" },
	{ "[limits]\nmax_spans = 10\nmax_spans = 20\n",
	  "bad.conf:3: key 'max_spans': given twice (first on line 2)" },
	{ "[limits]\nmax_spans = 10\n  max_requests = 20\n",
	  "bad.conf:3: key 'max_spans': given twice (first on line 2); an indented line "
	  "continues the key above it" },
	{ "[limits]\nmax_spans 10\n", "bad.conf:2: 'max_spans 10': not 'key = value' or "
				      "'[section]'" },
	{ "[limits\nmax_spans = 10\n", "bad.conf:1: '[limits': section header without ']'" },
	/* the first error in file order, whichever kind */
	{ "[limits]\nbogus\nmax_spans = x\n",
	  "bad.conf:2: 'bogus': not 'key = value' or '[section]'" },
	{ "[limits]\nmax_spans = x\nbogus\n",
	  "bad.conf:2: key 'max_spans': bad number 'x' (want 1 to 10000000)" },
};

static void test_bad_files(void **state)
{
	struct rt_config c;
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		rt_config_init(&c);
		err[0] = '\0';
		if (rt_config_parse_string(&c, "bad.conf", bads[i].text, err, sizeof(err)) !=
		    -EINVAL)
			fail_msg("case %zu accepted: %s", i, bads[i].text);
		if (strcmp(err, bads[i].want))
			fail_msg("case %zu:\n got  %s\n want %s", i, err, bads[i].want);
		rt_config_fini(&c);
	}
}

static void test_long_line(void **state)
{
	struct rt_config c;
	char text[512], err[512];

	(void)state;
	snprintf(text, sizeof(text), "[daemon]\nrecord = /%0300d\n", 0);
	rt_config_init(&c);
	assert_int_equal(rt_config_parse_string(&c, "long.conf", text, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "long.conf:2: line longer than"));
	rt_config_fini(&c);
}

static void test_load_errors(void **state)
{
	struct rt_config c;
	char err[512], path[] = "/tmp/rt-test-config-XXXXXX";
	int fd;

	(void)state;
	rt_config_init(&c);
	assert_int_equal(rt_config_load(&c, "/nonexistent/rt.conf", err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/rt.conf: No such file or directory");

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "[limits]\nring_size = 8Q\n", 24), 24);
	close(fd);
	assert_int_equal(rt_config_load(&c, path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2: key 'ring_size': bad size '8Q'"));
	assert_int_equal(strncmp(err, path, strlen(path)), 0);
	unlink(path);
	rt_config_fini(&c);
}

/* The flags are parsed into a layer of their own and laid over the file. */
static void test_flags_override_file(void **state)
{
	struct rt_config file, flags;
	struct rt_daemon_opts o;
	char err[512], why[256];

	(void)state;
	rt_config_init(&file);
	rt_config_init(&flags);
	assert_int_equal(rt_config_parse_string(&file, "f.conf", good, err, sizeof(err)), 0);
	/* --pid 7 --pid 8 --ring-size 4M --no-inject is off: --inject-socket P */
	assert_int_equal(rt_config_set(&flags, RT_CFG_PIDS, "7", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&flags, RT_CFG_PIDS, "8", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&flags, RT_CFG_RING_SIZE, "4M", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&flags, RT_CFG_MAX_VLLM_REQUESTS, "32", why, sizeof(why)),
			 0);
	assert_int_equal(rt_config_set(&flags, RT_CFG_INJECT, "true", why, sizeof(why)), 0);
	assert_int_equal(
		rt_config_set(&flags, RT_CFG_INJECT_SOCKET, "/tmp/i.sock", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&flags, RT_CFG_COMMS, "sglang", why, sizeof(why)), 0);
	assert_int_equal(
		rt_config_set(&flags, RT_CFG_METRICS_LISTEN, "[::1]:9100", why, sizeof(why)), 0);
	assert_int_equal(rt_config_merge(&file, &flags), 0);
	rt_config_fini(&flags); /* the merge copied what it took */
	rt_config_opts(&file, &o);
	/* a list flag replaces the file's list of that key, the others stay */
	assert_int_equal(o.n_pids, 2);
	assert_int_equal(o.pids[0], 7);
	assert_int_equal(o.pids[1], 8);
	assert_int_equal(o.n_comms, 1);
	assert_string_equal(o.comms[0], "sglang");
	assert_int_equal(o.n_ports, 2);
	assert_int_equal(o.n_cgroups, 1);
	assert_int_equal(o.ring_bytes, 4u << 20);
	assert_int_equal(o.max_vllm_requests, 32);
	assert_string_equal(o.inject_path, "/tmp/i.sock");
	assert_string_equal(o.metrics_listen, "[::1]:9100");
	/* what no flag gave stays the file's */
	assert_int_equal(o.max_spans, 500);
	assert_string_equal(o.socket_path, "/run/rt/ctl.sock");
	assert_true(o.capture_bodies);
	assert_true(o.verbose);
	rt_config_fini(&file);
}

/* A flag is refused exactly as the file's key is. */
static void test_flag_values(void **state)
{
	struct rt_config c;
	char why[256];

	(void)state;
	rt_config_init(&c);
	assert_int_equal(rt_config_set(&c, RT_CFG_RING_SIZE, "8Q", why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "bad size '8Q' (want a number with optional K/M/G, 4096 to 1G)");
	assert_int_equal(rt_config_set(&c, RT_CFG_RING_SIZE, "8388608", why, sizeof(why)), 0);
	assert_int_equal(c.o.ring_bytes, 8388608);
	assert_int_equal(rt_config_set(&c, RT_CFG_RING_SIZE, "4095", why, sizeof(why)), -EINVAL);
	assert_int_equal(rt_config_set(&c, RT_CFG_HEAD_BYTES, "4K", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&c, RT_CFG_HEAD_BYTES, "5K", why, sizeof(why)), -EINVAL);
	assert_int_equal(rt_config_set(&c, RT_CFG_IDLE_TIMEOUT, "0s", why, sizeof(why)), -EINVAL);
	/* a bare port is loopback, as --metrics-listen takes it (docs/metrics.md) */
	assert_int_equal(rt_config_set(&c, RT_CFG_METRICS_LISTEN, ":9464", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&c, RT_CFG_METRICS_LISTEN, "9464", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&c, RT_CFG_METRICS_LISTEN, "99999", why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(rt_config_set(&c, RT_CFG_METRICS_LISTEN, ":0", why, sizeof(why)), -EINVAL);
	assert_int_equal(rt_config_set(&c, RT_CFG_METRICS_LISTEN, "[::1]9464", why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(
		rt_config_set(&c, RT_CFG_METRICS_LISTEN, "node-1.example:9464", why, sizeof(why)),
		-EINVAL);
	assert_string_equal(why, "bad address 'node-1.example:9464' (not an IPv4 address)");
	assert_int_equal(
		rt_config_set(&c, RT_CFG_METRICS_LISTEN, "10.0.0.1:9464", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&c, RT_CFG_METRICS_LISTEN, "off", why, sizeof(why)), 0);
	assert_null(c.o.metrics_listen);
	assert_int_equal(rt_config_set(&c, RT_CFG_PIDS, "0", why, sizeof(why)), -EINVAL);
	/* --max-vllm-requests: a bound or auto (follows max_requests) */
	assert_int_equal(rt_config_set(&c, RT_CFG_MAX_VLLM_REQUESTS, "16384", why, sizeof(why)), 0);
	assert_int_equal(c.o.max_vllm_requests, 16384);
	assert_int_equal(rt_config_set(&c, RT_CFG_MAX_VLLM_REQUESTS, "AUTO", why, sizeof(why)), 0);
	assert_int_equal(c.o.max_vllm_requests, 0);
	assert_int_equal(rt_config_set(&c, RT_CFG_MAX_VLLM_REQUESTS, "0", why, sizeof(why)),
			 -EINVAL);
	assert_string_equal(why, "bad number '0' (want 1 to 10000000, or auto)");
	assert_int_equal(rt_config_set(&c, RT_CFG_MAX_VLLM_REQUESTS, "1e3", why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(rt_config_set(&c, RT_CFG_MAX_VLLM_REQUESTS, "", why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(rt_config_key("max_vllm_requests"), RT_CFG_MAX_VLLM_REQUESTS);
	assert_string_equal(rt_config_key_section(RT_CFG_MAX_VLLM_REQUESTS), "limits");
	assert_false(rt_config_key_live(RT_CFG_MAX_VLLM_REQUESTS)); /* sizes a table at start */
	/* not cut to fit a buffer and then taken */
	assert_int_equal(rt_config_set(&c, RT_CFG_PIDS, "000000000000000000000000000000000001", why,
				       sizeof(why)),
			 -EINVAL);
	rt_config_fini(&c);
}

/* A reload compares the new file and flags with the running ones. */
static void test_diff(void **state)
{
	struct rt_config a, b;
	char err[512];

	(void)state;
	rt_config_init(&a);
	rt_config_init(&b);
	assert_int_equal(rt_config_parse_string(&a, "a.conf", good, err, sizeof(err)), 0);
	assert_int_equal(rt_config_parse_string(&b, "b.conf", good, err, sizeof(err)), 0);
	assert_int_equal(rt_config_diff(&a, &b), 0); /* same values, other copies */
	rt_config_fini(&b);
	rt_config_init(&b);
	assert_int_equal(rt_config_parse_string(
				 &b, "b.conf",
				 "[targets]\npids = 101 202 303\nports = 8000, 9000\n"
				 "comms = vllm, python3 y\ncgroups = system.slice/vllm.service\n"
				 "[daemon]\nsocket = /run/rt/ctl.sock\nsocket_group = root\n"
				 "record = /var/lib/reqtrace/all.rtrace\ncapture_bodies = 1\n"
				 "inject = off\ninject_socket = /run/rt/inject.sock\n"
				 "log_level = warn\n[limits]\nring_size = 16384K\n"
				 "head_bytes = 1024\ntail_bytes = 2K\nmax_spans = 501\n"
				 "max_requests = 600\nidle_timeout = 1.5m\n"
				 "max_vllm_requests = 700\n[exporters]\n"
				 "metrics_listen = 127.0.0.1:9464\n",
				 err, sizeof(err)),
			 0);
	/* equal values written otherwise are no change */
	assert_int_equal(rt_config_diff(&a, &b), (1u << RT_CFG_COMMS) | (1u << RT_CFG_LOG_LEVEL) |
							 (1u << RT_CFG_MAX_SPANS));
	rt_config_fini(&b);
	rt_config_fini(&a);
}

static void test_list_bound(void **state)
{
	struct rt_config c;
	char why[256], v[16];
	int i;

	(void)state;
	rt_config_init(&c);
	for (i = 0; i < RT_DAEMON_ARGS_MAX; i++) {
		snprintf(v, sizeof(v), "%d", 1000 + i);
		assert_int_equal(rt_config_set(&c, RT_CFG_PORTS, v, why, sizeof(why)), 0);
	}
	assert_int_equal(rt_config_set(&c, RT_CFG_PORTS, "80", why, sizeof(why)), -E2BIG);
	assert_string_equal(why, "more than 64 items");
	rt_config_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),   cmocka_unit_test(test_example_is_defaults),
		cmocka_unit_test(test_bad_files),   cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_load_errors), cmocka_unit_test(test_flags_override_file),
		cmocka_unit_test(test_flag_values), cmocka_unit_test(test_diff),
		cmocka_unit_test(test_list_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
