// SPDX-License-Identifier: BSD-2-Clause
/* The rotating JSONL writer: boundaries, keep count, oversized lines, errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "export/jsonl_file.h"
#include "export/span_json.h"

static char dir[256];
static char path[512];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rt-jsonl-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/spans.jsonl", dir);
	umask(022);
	return 0;
}

static int teardown(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static bool exists(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0;
}

static void numbered(char *out, size_t len, int i)
{
	snprintf(out, len, "%s.%d", path, i);
}

/* A line of exactly len bytes (newline excluded) that starts with its number. */
static void line_n(char *buf, size_t len, int n)
{
	int k = snprintf(buf, len + 1, "%06d", n);

	memset(buf + k, 'x', len - (size_t)k);
	buf[len] = '\0';
}

/* The numbers of a file's lines, each checked whole (len bytes, no fragment). */
static int line_numbers(const char *p, size_t len, int *out, int max)
{
	size_t n;
	char *text = slurp(p, &n), *s, *nl;
	int count = 0;

	if (!text)
		return -1;
	for (s = text; *s; s = nl + 1) {
		nl = strchr(s, '\n');
		assert_non_null(nl); /* every line ends whole */
		assert_int_equal((size_t)(nl - s), len);
		assert_true(count < max);
		out[count++] = atoi(s);
	}
	free(text);
	return count;
}

static void sample(struct rt_span *s, int i)
{
	rt_span_init(s);
	snprintf(s->request_id, sizeof(s->request_id), "req-%d", i);
	strcpy(s->path, "/v1/completions");
	strcpy(s->method, "POST");
	s->pid = 42;
	s->status = 200;
	s->start_ns = 1000000000ULL + (uint64_t)i;
	s->end_ns = s->start_ns + 5000000;
	s->outcome = RT_OUTCOME_OK;
}

static void test_spans_as_lines(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 1 << 20, .keep = 3 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	struct rt_span s, back;
	struct stat sb;
	char *text, *line, *save = NULL;
	size_t n;
	int i;

	(void)state;
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	for (i = 0; i < 3; i++) {
		sample(&s, i);
		assert_int_equal(rt_jsonl__write_span(j, &s), 0);
	}
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.lines, 3);
	assert_int_equal(st.rotations, 0);
	assert_int_equal(st.dropped, 0);
	text = slurp(path, &n);
	assert_non_null(text);
	assert_int_equal(st.bytes, n);
	assert_int_equal(st.size, n);
	i = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		char want[32];

		assert_int_equal(rt_span_from_json(line, &back), 0);
		snprintf(want, sizeof(want), "req-%d", i);
		assert_string_equal(back.request_id, want);
	}
	assert_int_equal(i, 3);
	free(text);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
	rt_jsonl__close(j);

	/* reopened, the writer appends after what is there */
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.size, n);
	rt_jsonl__close(j);

	/* a strict umask (the unit's 0077) still gives 0640 to a file it creates */
	umask(077);
	assert_int_equal(unlink(path), 0);
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
	rt_jsonl__close(j);
	/* an existing file keeps its owner's mode */
	assert_int_equal(chmod(path, 0600), 0);
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	rt_jsonl__close(j);
	umask(022);
}

/* 3 lines of 100 bytes fill 300 exactly; the 4th rotates. */
static void test_rotation_boundary(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 300, .keep = 3 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	char line[128], p1[600];
	int nums[16], i;

	(void)state;
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	for (i = 1; i <= 3; i++) {
		line_n(line, 99, i);
		assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	}
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.rotations, 0);
	assert_int_equal(st.size, 300);
	numbered(p1, sizeof(p1), 1);
	assert_false(exists(p1));
	line_n(line, 99, 4);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.rotations, 1);
	assert_int_equal(st.size, 100);
	assert_int_equal(st.lines, 4);
	assert_int_equal(line_numbers(p1, 99, nums, 16), 3);
	assert_int_equal(nums[0], 1);
	assert_int_equal(nums[2], 3);
	assert_int_equal(line_numbers(path, 99, nums, 16), 1);
	assert_int_equal(nums[0], 4);
	rt_jsonl__close(j);
}

/* keep 2: PATH.1 and PATH.2 only, and together with PATH the newest lines in order. */
static void test_keep_count(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 200, .keep = 2 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	char line[128], p[600];
	int nums[16], all[64], n_all = 0, i, k, n;

	(void)state;
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	for (i = 1; i <= 11; i++) { /* 2 per file: 5 rotations */
		line_n(line, 99, i);
		assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	}
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.rotations, 5);
	assert_int_equal(st.dropped, 0);
	numbered(p, sizeof(p), 3);
	assert_false(exists(p));
	for (k = 2; k >= 0; k--) {
		if (k)
			numbered(p, sizeof(p), k);
		n = line_numbers(k ? p : path, 99, nums, 16);
		assert_int_equal(n, k ? 2 : 1);
		memcpy(all + n_all, nums, sizeof(int) * (size_t)n);
		n_all += n;
	}
	/* lines 7..11, each once, in order */
	assert_int_equal(n_all, 5);
	for (i = 0; i < n_all; i++)
		assert_int_equal(all[i], 7 + i);
	rt_jsonl__close(j);
}

static void test_keep_zero(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 100, .keep = 0 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	char line[128], p[600];
	int nums[4], i;

	(void)state;
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	for (i = 1; i <= 3; i++) {
		line_n(line, 99, i);
		assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	}
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.rotations, 2);
	numbered(p, sizeof(p), 1);
	assert_false(exists(p));
	assert_int_equal(line_numbers(path, 99, nums, 4), 1);
	assert_int_equal(nums[0], 3);
	rt_jsonl__close(j);
}

/* A line over max_bytes goes alone into a fresh file, and the next one moves on. */
static void test_line_larger_than_max(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 100, .keep = 5 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	char big[400], small[64], p[600];
	int nums[4];

	(void)state;
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	/* first into an empty file: no rotation needed */
	line_n(big, 299, 1);
	assert_int_equal(rt_jsonl__write_line(j, big, 299), 0);
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.rotations, 0);
	line_n(small, 49, 2);
	assert_int_equal(rt_jsonl__write_line(j, small, 49), 0);
	line_n(big, 299, 3);
	assert_int_equal(rt_jsonl__write_line(j, big, 299), 0);
	line_n(small, 49, 4);
	assert_int_equal(rt_jsonl__write_line(j, small, 49), 0);
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.rotations, 3);
	assert_int_equal(st.lines, 4);
	numbered(p, sizeof(p), 3);
	assert_int_equal(line_numbers(p, 299, nums, 4), 1);
	assert_int_equal(nums[0], 1);
	numbered(p, sizeof(p), 2);
	assert_int_equal(line_numbers(p, 49, nums, 4), 1);
	assert_int_equal(nums[0], 2);
	numbered(p, sizeof(p), 1);
	assert_int_equal(line_numbers(p, 299, nums, 4), 1);
	assert_int_equal(nums[0], 3);
	assert_int_equal(line_numbers(path, 49, nums, 4), 1);
	assert_int_equal(nums[0], 4);
	rt_jsonl__close(j);
}

/* /dev/full: every write is ENOSPC; counted, never rotated (not a regular file). */
static void test_enospc_dev_full(void **state)
{
	struct rt_jsonl_opts o = { .path = "/dev/full", .max_bytes = 10, .keep = 2 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	struct rt_span s;
	int i;

	(void)state;
	assert_true(exists("/dev/full"));
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	for (i = 0; i < 3; i++) {
		sample(&s, i);
		assert_int_equal(rt_jsonl__write_span(j, &s), -ENOSPC);
	}
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.lines, 0);
	assert_int_equal(st.dropped, 3);
	assert_int_equal(st.dropped_nospace, 3);
	assert_int_equal(st.dropped_io + st.dropped_other + st.dropped_toolarge, 0);
	assert_int_equal(st.rotations, 0);
	assert_int_equal(st.last_errno, ENOSPC);
	assert_true(exists("/dev/full"));
	rt_jsonl__close(j);
}

/*
 * A write that stops part way (RLIMIT_FSIZE: a short write, then EFBIG, as
 * a filling disk does) leaves no fragment: the file keeps whole lines.
 */
static void test_partial_write_cut_back(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 0, .keep = 1 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	struct rlimit old, lim;
	char line[128];
	int nums[8];

	(void)state;
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	line_n(line, 99, 1);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = 150; /* half of the next line fits */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	line_n(line, 99, 2);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.dropped_nospace, 1);
	assert_int_equal(st.size, 100);
	line_n(line, 99, 3);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	assert_int_equal(line_numbers(path, 99, nums, 8), 2);
	assert_int_equal(nums[0], 1);
	assert_int_equal(nums[1], 3);
	rt_jsonl__close(j);
}

static void test_bad_input(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 0, .keep = 1 };
	struct rt_jsonl_opts nodir = { .path = "/nonexistent-rt/x.jsonl", .keep = 1 };
	struct rt_jsonl_opts toomany = { .path = path, .keep = RT_JSONL_KEEP_MAX + 1 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;

	(void)state;
	errno = 0;
	assert_null(rt_jsonl__open(&nodir));
	assert_int_equal(errno, ENOENT);
	assert_null(rt_jsonl__open(&toomany));
	assert_int_equal(errno, EINVAL);
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	/* a newline inside would split one record into two lines */
	assert_int_equal(rt_jsonl__write_line(j, "a\nb", 3), -EINVAL);
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.dropped_other, 1);
	assert_int_equal(st.lines, 0);
	rt_jsonl__close(j);
}

/* External logrotate: the file is moved away, reopen starts a new one. */
static void test_reopen(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 0, .keep = 1 };
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	char line[128], moved[600];
	int nums[4];

	(void)state;
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	line_n(line, 99, 1);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	snprintf(moved, sizeof(moved), "%s/moved", dir);
	assert_int_equal(rename(path, moved), 0);
	line_n(line, 99, 2); /* still the old inode until reopened */
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	assert_int_equal(rt_jsonl__reopen(j), 0);
	line_n(line, 99, 3);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	assert_int_equal(line_numbers(moved, 99, nums, 4), 2);
	assert_int_equal(line_numbers(path, 99, nums, 4), 1);
	assert_int_equal(nums[0], 3);
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.reopens, 1);
	assert_int_equal(st.size, 100);
	rt_jsonl__close(j);
}

/* A new path that cannot be opened keeps the old one; a good one moves output. */
static void test_configure(void **state)
{
	struct rt_jsonl_opts o = { .path = path, .max_bytes = 0, .keep = 1 };
	struct rt_jsonl_opts bad = { .path = "/nonexistent-rt/x.jsonl", .max_bytes = 0, .keep = 1 };
	struct rt_jsonl_opts cur;
	struct rt_jsonl *j;
	char line[128], other[600];
	int nums[4];

	(void)state;
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	assert_int_equal(rt_jsonl__configure(j, &bad), -ENOENT);
	assert_string_equal(rt_jsonl__path(j), path);
	line_n(line, 99, 1);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	snprintf(other, sizeof(other), "%s/other.jsonl", dir);
	o.path = other;
	o.max_bytes = 4096;
	o.keep = 7;
	assert_int_equal(rt_jsonl__configure(j, &o), 0);
	rt_jsonl__get_opts(j, &cur);
	assert_string_equal(cur.path, other);
	assert_int_equal(cur.max_bytes, 4096);
	assert_int_equal(cur.keep, 7);
	line_n(line, 99, 2);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	assert_int_equal(line_numbers(path, 99, nums, 4), 1);
	assert_int_equal(nums[0], 1);
	assert_int_equal(line_numbers(other, 99, nums, 4), 1);
	assert_int_equal(nums[0], 2);
	rt_jsonl__close(j);
}

/* The directory vanishes: lines are dropped until an open succeeds again. */
static void test_retry_after_open_failure(void **state)
{
	struct rt_jsonl_opts o;
	struct rt_jsonl_stats st;
	struct rt_jsonl *j;
	struct timespec ts = { .tv_sec = 1, .tv_nsec = 100000000 };
	char sub[400], p[600], line[128];
	int nums[4];

	(void)state;
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(p, sizeof(p), "%s/spans.jsonl", sub);
	o = (struct rt_jsonl_opts){ .path = p, .max_bytes = 0, .keep = 1 };
	j = rt_jsonl__open(&o);
	assert_non_null(j);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(rt_jsonl__reopen(j), -ENOENT);
	line_n(line, 99, 1);
	assert_true(rt_jsonl__write_line(j, line, 99) < 0);
	rt_jsonl__stats(j, &st);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.dropped_other, 1);
	assert_int_equal(mkdir(sub, 0755), 0);
	nanosleep(&ts, NULL); /* past the retry interval: a lower bound only */
	line_n(line, 99, 2);
	assert_int_equal(rt_jsonl__write_line(j, line, 99), 0);
	assert_int_equal(line_numbers(p, 99, nums, 4), 1);
	assert_int_equal(nums[0], 2);
	rt_jsonl__close(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_spans_as_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rotation_boundary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_line_larger_than_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enospc_dev_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_write_cut_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_configure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_after_open_failure, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
