/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The capability list: the daemon's RT_CAPS_KEEP equals the unit's
 * CapabilityBoundingSet= and AmbientCapabilities= (one list, kept in
 * configs/reqtraced.service), names match the kernel's numbers, and the
 * drop leaves nothing outside the list (in a child, as whoever runs us).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "daemon/caps.h"

/* The value of key= in the unit file, or an empty string. */
static void unit_value(const char *key, char *out, size_t len)
{
	char line[1024];
	size_t klen = strlen(key);
	FILE *f = fopen(RT_SOURCE_DIR "/configs/reqtraced.service", "r");

	assert_non_null(f);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == '=')
			snprintf(out, len, "%s", line + klen + 1);
	fclose(f);
}

static void test_unit_matches(void **state)
{
	char v[1024];
	uint64_t m = 0;

	(void)state;
	unit_value("CapabilityBoundingSet", v, sizeof(v));
	assert_int_equal(rt_caps_parse(v, &m, NULL), 0);
	assert_true(m == RT_CAPS_KEEP);
	unit_value("AmbientCapabilities", v, sizeof(v));
	m = 0;
	assert_int_equal(rt_caps_parse(v, &m, NULL), 0);
	assert_true(m == RT_CAPS_KEEP);
}

static void test_names(void **state)
{
	const char *bad = NULL;
	uint64_t m = 7;

	(void)state;
	assert_int_equal(rt_cap_from_name("CAP_CHOWN"), CAP_CHOWN);
	assert_int_equal(rt_cap_from_name("CAP_SYS_ADMIN"), CAP_SYS_ADMIN);
	assert_int_equal(rt_cap_from_name("CAP_BPF"), CAP_BPF);
	assert_int_equal(rt_cap_from_name("CAP_PERFMON"), CAP_PERFMON);
	assert_string_equal(rt_cap_name(CAP_SYS_PTRACE), "CAP_SYS_PTRACE");
	assert_string_equal(rt_cap_name(CAP_DAC_READ_SEARCH), "CAP_DAC_READ_SEARCH");
	assert_int_equal(rt_cap_from_name("cap_bpf"), -EINVAL);
	assert_null(rt_cap_name(64));
	assert_int_equal(rt_caps_parse("CAP_BPF CAP_NOPE", &m, &bad), -EINVAL);
	assert_string_equal(bad, "CAP_NOPE");
	assert_int_equal(m, 7);
	assert_int_equal(rt_caps_parse("  CAP_BPF\tCAP_CHOWN\n", &m, NULL), 0);
	assert_true(m == (RT_CAP_BIT(CAP_BPF) | RT_CAP_BIT(CAP_CHOWN)));
	assert_int_equal(rt_caps_parse("", &m, NULL), 0);
	assert_true(m == 0);
}

/* In a child: after the drop, nothing outside keep is permitted, and
 * no_new_privs is set. Root or not, the drop must succeed. */
static void test_drop(void **state)
{
	uint64_t keep = RT_CAP_BIT(CAP_BPF) | RT_CAP_BIT(CAP_SYS_PTRACE);
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t before = rt_caps_permitted();
		char line[256];
		int nnp = -1;
		FILE *f;

		if (rt_caps_drop_to(keep))
			_exit(10);
		if (rt_caps_permitted() & ~keep)
			_exit(11);
		if ((rt_caps_permitted() & keep) != (before & keep))
			_exit(12);
		f = fopen("/proc/self/status", "r");
		while (f && fgets(line, sizeof(line), f))
			sscanf(line, "NoNewPrivs: %d", &nnp);
		if (f)
			fclose(f);
		_exit(nnp == 1 ? 0 : 13);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unit_matches),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_drop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
