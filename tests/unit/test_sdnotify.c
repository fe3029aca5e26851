/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rt_sd_notify(): the datagram arrives whole on a socket bound at a path
 * and at an abstract name ('@'), nothing is sent without $NOTIFY_SOCKET,
 * and names systemd would never give are refused.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "daemon/sdnotify.h"

/* A datagram socket bound at name (a path, or '@' for abstract). */
static int bound(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memcpy(sa.sun_path, name, len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		salen++;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, salen), 0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_path(void **state)
{
	char dir[] = "/tmp/rt-sdnotify-XXXXXX", path[128];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = bound(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(rt_sd_notify("READY=1\nSTATUS=tracing"), 1);
	expect_datagram(fd, "READY=1\nSTATUS=tracing");
	assert_int_equal(rt_sd_notify("STOPPING=1"), 1);
	expect_datagram(fd, "STOPPING=1");
	close(fd);
	unlink(path);
	/* the manager went away: the error comes back, nothing is raised */
	assert_int_equal(rt_sd_notify("READY=1"), -ENOENT);
	rmdir(dir);
	unsetenv("NOTIFY_SOCKET");
}

static void test_abstract(void **state)
{
	char name[64];
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "@rt-sdnotify-test-%d", (int)getpid());
	fd = bound(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(rt_sd_notify("READY=1"), 1);
	expect_datagram(fd, "READY=1");
	close(fd);
	/* an abstract name vanishes with its socket */
	assert_int_equal(rt_sd_notify("READY=1"), -ECONNREFUSED);
	unsetenv("NOTIFY_SOCKET");
}

static void test_unset_and_bad(void **state)
{
	char longname[200];

	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(rt_sd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(rt_sd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "relative/notify", 1);
	assert_int_equal(rt_sd_notify("READY=1"), -EINVAL);
	setenv("NOTIFY_SOCKET", "@", 1);
	assert_int_equal(rt_sd_notify("READY=1"), -EINVAL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	setenv("NOTIFY_SOCKET", longname, 1);
	assert_int_equal(rt_sd_notify("READY=1"), -EINVAL);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_abstract),
		cmocka_unit_test(test_unset_and_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
