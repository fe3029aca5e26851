// SPDX-License-Identifier: BSD-2-Clause
/* Scenario knobs: parsing, errors that name the knob and line, the shipped scenarios. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "knobs.h"

static void test_defaults_batch_ratio(void **state)
{
	struct tb_knobs k;
	double r;

	(void)state;
	tb_knobs_default(&k);
	/* the seed: a batch of 8 costs ~1.8x a batch of 1 */
	r = tb_knobs_decode_ms(&k, 8) / tb_knobs_decode_ms(&k, 1);
	assert_true(r > 1.78 && r < 1.82);
	r = tb_knobs_prefill_ms(&k, 8 * 64) / tb_knobs_prefill_ms(&k, 64);
	assert_true(r > 1.75 && r < 1.85);
	assert_int_equal(k.tokenizer_threads, 1);
	assert_int_equal(k.max_body, 1 << 20);
	/* thread-per-connection unless a scenario asks for the epoll model */
	assert_int_equal(k.park_idle, 0);
	/* the omp backend: two threads, libgomp's wait policy from the environment */
	assert_int_equal(k.omp_threads, 2);
	assert_int_equal(k.omp_wait_policy, 0);
	assert_true(k.omp_gc_ms == 0);
	assert_int_equal(tb_knobs_check(&k, NULL, 0), 0);
}

static void test_parse_lines(void **state)
{
	struct tb_knobs k;
	char err[256];

	(void)state;
	tb_knobs_default(&k);
	assert_int_equal(tb_knobs_parse_line(&k, "", err, sizeof(err)), 0);
	assert_int_equal(tb_knobs_parse_line(&k, "   # only a comment\n", err, sizeof(err)), 0);
	assert_int_equal(tb_knobs_parse_line(&k, "read_ms = 80 # trailing\n", err, sizeof(err)), 0);
	assert_true(k.read_ms == 80);
	assert_int_equal(tb_knobs_parse_line(&k, "\tdecode_ms_per_seq=0.125", err, sizeof(err)), 0);
	assert_true(k.decode_ms_per_seq == 0.125);
	assert_int_equal(tb_knobs_parse_line(&k, "max_batch = 16", err, sizeof(err)), 0);
	assert_int_equal(k.max_batch, 16);
	assert_int_equal(tb_knobs_parse_line(&k, "max_body = 4096", err, sizeof(err)), 0);
	assert_int_equal(k.max_body, 4096);
	assert_int_equal(tb_knobs_set_arg(&k, "tokenizer_threads=4", err, sizeof(err)), 0);
	assert_int_equal(k.tokenizer_threads, 4);
	assert_int_equal(tb_knobs_set_arg(&k, "park_idle=1", err, sizeof(err)), 0);
	assert_int_equal(k.park_idle, 1);
	/* a switch: anything but 0 and 1 is a typo */
	assert_int_equal(tb_knobs_set_arg(&k, "park_idle=2", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "park_idle"));
	assert_int_equal(k.park_idle, 1);
}

static void test_errors_name_the_knob(void **state)
{
	struct tb_knobs k;
	char err[256];

	(void)state;
	tb_knobs_default(&k);
	assert_int_equal(tb_knobs_parse_line(&k, "bogus_knob = 1", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "bogus_knob"));
	assert_int_equal(tb_knobs_parse_line(&k, "read_ms = fast", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "read_ms"));
	assert_int_equal(tb_knobs_parse_line(&k, "read_ms = 1ms", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knobs_parse_line(&k, "read_ms = -1", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knobs_parse_line(&k, "read_ms = nan", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knobs_parse_line(&k, "max_batch = -1", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "max_batch"));
	assert_int_equal(tb_knobs_parse_line(&k, "max_batch = 2.5", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knobs_parse_line(&k, "max_batch = 0", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knobs_parse_line(&k, "max_batch = 257", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knobs_parse_line(&k, "max_batch", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knobs_parse_line(&k, "= 3", err, sizeof(err)), -EINVAL);
	assert_int_equal(tb_knobs_parse_line(&k, "max_batch =", err, sizeof(err)), -EINVAL);
	/* a failed set leaves the knob alone */
	assert_int_equal(k.max_batch, 8);

	assert_int_equal(tb_knobs_set_arg(&k, "max_tokens_default=5000", err, sizeof(err)), 0);
	assert_int_equal(tb_knobs_check(&k, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "max_tokens_default"));
}

static void test_load_reports_line(void **state)
{
	char path[] = "/tmp/test_testbed_knobs_XXXXXX", err[512];
	const char text[] = "# scenario\nread_ms = 3\n\nmax_wait_ms = soon\n";
	struct tb_knobs k;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	tb_knobs_default(&k);
	assert_int_equal(tb_knobs_load(&k, path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":4: "));
	assert_non_null(strstr(err, "max_wait_ms"));
	assert_true(k.read_ms == 3);
	unlink(path);
	assert_true(tb_knobs_load(&k, "/nonexistent/x.conf", err, sizeof(err)) == -ENOENT);
}

static void load_scenario(const char *name, struct tb_knobs *k)
{
	char path[512], err[512];

	snprintf(path, sizeof(path), "%s/configs/scenarios/%s.conf", RT_SOURCE_DIR, name);
	tb_knobs_default(k);
	if (tb_knobs_load(k, path, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(tb_knobs_check(k, err, sizeof(err)), 0);
}

static void test_shipped_scenarios(void **state)
{
	const char *names[] = { "healthy",     "preprocess-bound", "batch1", "batch8",
				"queue-burst", "comm-bound",	   "omp" };
	struct tb_knobs k;
	double inference;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		load_scenario(names[i], &k);

	/* the seed, with the load generator's default 256-character prompt */
	load_scenario("preprocess-bound", &k);
	assert_true(k.read_ms == 80 && k.postprocess_ms == 110);
	assert_true(tb_knobs_tokenize_ms(&k, 256) == 680);
	assert_int_equal(k.tokenizer_threads, 1);
	inference = tb_knobs_prefill_ms(&k, tb_prompt_tokens(256)) +
		    (k.max_tokens_default - 1) * tb_knobs_decode_ms(&k, 1);
	assert_true(inference > 41.9 && inference < 42.1);

	load_scenario("batch1", &k);
	assert_int_equal(k.max_batch, 1);
	load_scenario("batch8", &k);
	assert_int_equal(k.max_batch, 8);
	load_scenario("comm-bound", &k);
	assert_true(k.comm_delay_ms > 2 * tb_knobs_decode_ms(&k, 8));
	load_scenario("omp", &k);
	assert_int_equal(k.omp_threads, 2);
	assert_int_equal(k.omp_wait_policy, 1);
	assert_true(k.omp_gc_ms == 1);
	/* a policy past active is refused, not taken as one */
	assert_int_equal(tb_knobs_set(&k, "omp_wait_policy", "3", err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_batch_ratio),
		cmocka_unit_test(test_parse_lines),
		cmocka_unit_test(test_errors_name_the_knob),
		cmocka_unit_test(test_load_reports_line),
		cmocka_unit_test(test_shipped_scenarios),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
