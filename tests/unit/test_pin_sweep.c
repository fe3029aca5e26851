// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sweep of pinned-link directories (src/sources/pin_sweep.c), on a
 * plain directory: a dead daemon's goes with its pins, a live one's stays,
 * our own stays, names that are not a daemon's stay.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pin_sweep.h"

static char root[256];

static void make(const char *name, int files)
{
	char path[PATH_MAX];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	assert_int_equal(mkdir(path, 0700), 0);
	for (i = 0; i < files; i++) {
		snprintf(path, sizeof(path), "%s/%s/l%d", root, name, i);
		f = fopen(path, "w");
		assert_non_null(f);
		fclose(f);
	}
}

static bool exists(const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	return !stat(path, &st);
}

static void test_start_time(void **state)
{
	unsigned long long me = rt_pin_start_time((long)getpid());

	(void)state;
	assert_true(me > 0);
	/* the same process reads the same twice; pid 1 started no later */
	assert_int_equal(rt_pin_start_time((long)getpid()), me);
	assert_true(rt_pin_start_time(1) <= me);
	assert_int_equal(rt_pin_start_time(0), 0);
	assert_int_equal(rt_pin_start_time(-5), 0);
	/* beyond any pid_max (2^22) */
	assert_int_equal(rt_pin_start_time(1L << 23), 0);
}

static void test_sweep(void **state)
{
	char own[PATH_MAX], name[128];
	unsigned long long me = rt_pin_start_time((long)getpid());
	unsigned long long init = rt_pin_start_time(1);

	(void)state;
	snprintf(root, sizeof(root), "/tmp/rt-pin-sweep-XXXXXX");
	assert_non_null(mkdtemp(root));

	/* ours, by name: kept even though the sweep would call it alive anyway */
	snprintf(name, sizeof(name), "%ld-%llu-2", (long)getpid(), me);
	make(name, 3);
	snprintf(own, sizeof(own), "%s/%s", root, name);
	/* a live process with its own start time: kept */
	snprintf(name, sizeof(name), "1-%llu-2", init);
	make(name, 2);
	/* pid 1 with another start time: a dead daemon whose pid was reused */
	snprintf(name, sizeof(name), "1-%llu-2", init + 12345);
	make(name, 4);
	/* a pid nobody has */
	make("8388608-77-2", 5);
	/* not a daemon's directory */
	make("notes", 1);
	make("0-5-2", 1);

	assert_int_equal(rt_pin_sweep(root, own), 2);
	snprintf(name, sizeof(name), "%ld-%llu-2", (long)getpid(), me);
	assert_true(exists(name));
	snprintf(name, sizeof(name), "1-%llu-2", init);
	assert_true(exists(name));
	snprintf(name, sizeof(name), "1-%llu-2", init + 12345);
	assert_false(exists(name));
	assert_false(exists("8388608-77-2"));
	assert_true(exists("notes"));
	assert_true(exists("0-5-2"));
	/* nothing left to sweep */
	assert_int_equal(rt_pin_sweep(root, own), 0);
	/* without an own directory our live one is still kept */
	assert_int_equal(rt_pin_sweep(root, ""), 0);

	/* cleanup: every entry goes, and the count says how many */
	assert_int_equal(rt_pin_remove_dir(own), 3);
	snprintf(own, sizeof(own), "%s/1-%llu-2", root, init);
	assert_int_equal(rt_pin_remove_dir(own), 2);
	snprintf(own, sizeof(own), "%s/notes", root);
	assert_int_equal(rt_pin_remove_dir(own), 1);
	snprintf(own, sizeof(own), "%s/0-5-2", root);
	assert_int_equal(rt_pin_remove_dir(own), 1);
	assert_int_equal(rmdir(root), 0);
	/* a directory that is not there */
	assert_int_equal(rt_pin_sweep(root, ""), 0);
	assert_int_equal(rt_pin_remove_dir(root), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_time),
		cmocka_unit_test(test_sweep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
