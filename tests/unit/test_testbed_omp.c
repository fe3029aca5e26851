// SPDX-License-Identifier: BSD-2-Clause
/*
 * The omp backend in-process: a step's region runs on the calling thread and
 * a libgomp worker named tb-omp, each burning its share of the cost in its
 * own CPU clock; the step truth says so; a wait policy cannot be set once
 * libgomp is loaded; the tb-gc runtime thread exists while the backend does.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "backend.h"
#include "clock.h"

#define COST_NS 4000000ull

static char truth_path[] = "/tmp/rt-omp-truth-XXXXXX";

/* Returns 0, or -1 when the thread is gone (it may exit while we look). */
static int thread_comm(int tid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(comm, (int)len, f)) {
		fclose(f);
		return -1;
	}
	comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
	return 0;
}

/* Threads of this process called name. */
static int threads_named(const char *name)
{
	struct dirent *d;
	char comm[32];
	DIR *dir;
	int n = 0;

	dir = opendir("/proc/self/task");
	assert_non_null(dir);
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.' && thread_comm(atoi(d->d_name), comm, sizeof(comm)) == 0)
			n += strcmp(comm, name) == 0;
	closedir(dir);
	return n;
}

/* Polls (up to 10 s: a loaded machine may not run a new thread at once). */
static int wait_named(const char *name, int want)
{
	int i, n = -1;

	for (i = 0; i < 200 && (n = threads_named(name)) != want; i++)
		tb_sleep_ms(50);
	return n;
}

static cJSON *last_line(void)
{
	char line[8192], last[8192] = "";
	FILE *f = fopen(truth_path, "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		strcpy(last, line);
	fclose(f);
	return cJSON_Parse(last);
}

static void test_step_region(void **state)
{
	const char *ids[] = { "a", "b\"" };
	const uint64_t toks[] = { 3, 1 };
	struct tb_step st = { .step_id = 7,
			      .kind = TB_STEP_PREFILL,
			      .batch = 2,
			      .tokens = 4,
			      .cost_ns = COST_NS,
			      .ids = ids,
			      .member_tokens = toks };
	const cJSON *th, *m;
	struct tb_knobs k;
	char comm[32];
	void *ctx = NULL;
	cJSON *root;
	int n, tids[2];

	(void)state;
	tb_knobs_default(&k);
	k.omp_wait_policy = 1;
	assert_int_equal(tb_backend_find("omp"), &tb_backend_omp);
	assert_int_equal(tb_backend_omp.init(&ctx, &k), 0);
	assert_int_equal(tb_backend_omp.step(ctx, &st), 0);
	st.step_id = 8;
	st.kind = TB_STEP_DECODE;
	assert_int_equal(tb_backend_omp.step(ctx, &st), 0);

	root = last_line();
	assert_non_null(root);
	assert_int_equal(cJSON_GetObjectItem(root, "step_id")->valuedouble, 8);
	assert_string_equal(cJSON_GetObjectItem(root, "kind")->valuestring, "decode");
	assert_int_equal(cJSON_GetObjectItem(root, "tid")->valuedouble, tb_gettid());
	m = cJSON_GetObjectItem(root, "members");
	assert_int_equal(cJSON_GetArraySize(m), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 1), "id")->valuestring,
			    "b\"");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "tokens")->valuedouble, 3);
	th = cJSON_GetObjectItem(root, "threads");
	assert_int_equal(cJSON_GetArraySize(th), 2);
	for (n = 0; n < 2; n++) {
		const cJSON *t = cJSON_GetArrayItem(th, n);

		assert_int_equal(cJSON_GetObjectItem(t, "n")->valuedouble, n);
		tids[n] = (int)cJSON_GetObjectItem(t, "tid")->valuedouble;
		/* tokens x threads units, split evenly: 4 each, each at least its share */
		assert_int_equal(cJSON_GetObjectItem(t, "units")->valuedouble, 4);
		assert_true(cJSON_GetObjectItem(t, "cpu_ns")->valuedouble >= COST_NS / 2);
	}
	/* thread 0 is the caller (the engine's step worker); 1 is libgomp's */
	assert_int_equal(tids[0], tb_gettid());
	assert_int_not_equal(tids[1], tids[0]);
	assert_int_equal(thread_comm(tids[1], comm, sizeof(comm)), 0);
	assert_string_equal(comm, "tb-omp");
	cJSON_Delete(root);
	tb_backend_omp.fini(ctx);
}

static void test_policy_after_load(void **state)
{
	struct tb_knobs k;
	void *ctx = NULL;

	(void)state;
	/* libgomp is loaded now (the test above): a policy could not take effect */
	tb_knobs_default(&k);
	k.omp_wait_policy = 2;
	assert_int_equal(tb_backend_omp.init(&ctx, &k), -EALREADY);
	assert_null(ctx);
}

static void test_gc_thread(void **state)
{
	struct tb_knobs k;
	void *ctx = NULL;

	(void)state;
	tb_knobs_default(&k);
	k.omp_gc_ms = 1;
	assert_int_equal(threads_named("tb-gc"), 0);
	assert_int_equal(tb_backend_omp.init(&ctx, &k), 0);
	/* named by the thread itself once it runs; gone some moment after the join */
	assert_int_equal(wait_named("tb-gc", 1), 1);
	tb_backend_omp.fini(ctx);
	assert_int_equal(wait_named("tb-gc", 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_region),
		cmocka_unit_test(test_policy_after_load),
		cmocka_unit_test(test_gc_thread),
	};
	int fd, rc;

	fd = mkstemp(truth_path);
	if (fd < 0)
		return 1;
	close(fd);
	setenv("REQTRACE_TB_OMP_TRUTH", truth_path, 1);
	setenv("REQTRACE_TB_OMP_LIB", RT_BINARY_DIR "/src/testbed/reqtrace-testbed-omp.so", 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(truth_path);
	return rc;
}
