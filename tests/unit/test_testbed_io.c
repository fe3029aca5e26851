// SPDX-License-Identifier: BSD-2-Clause
/* The testbed's I/O modes over a socketpair: bytes, stamps, hook, short writes. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "clock.h"
#include "io.h"

static const enum tb_io_mode modes[] = { TB_IO_READWRITE, TB_IO_VECTOR, TB_IO_SOCKET, TB_IO_MSG,
					 TB_IO_SPLIT };

struct hook_state {
	int calls;
	uint64_t at;
};

static void hook(void *arg)
{
	struct hook_state *h = arg;

	h->calls++;
	h->at = tb_now_ns();
}

static void test_mode_names(void **state)
{
	enum tb_io_mode m;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(tb_io_mode_parse(tb_io_mode_name(modes[i]), &m), 0);
		assert_int_equal(m, modes[i]);
	}
	assert_int_equal(tb_io_mode_parse("sendfile", &m), -EINVAL);
}

static void test_unit_roundtrip(void **state)
{
	struct tb_buf scratch;
	char got[64];
	size_t i;

	(void)state;
	tb_buf_init(&scratch, 1 << 20);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct tb_io_unit u = { .mark_piece = 1, .hook = hook };
		struct hook_state hs = { 0 };
		uint64_t before = tb_now_ns();
		int sv[2];

		u.hook_arg = &hs;
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		assert_int_equal(tb_io_unit_add(&u, "5\r\n", 3), 0);
		assert_int_equal(tb_io_unit_add(&u, "hello", 5), 0);
		assert_int_equal(tb_io_unit_add(&u, "\r\n", 2), 0);
		assert_int_equal(tb_io_write(modes[i], sv[0], &u, &scratch), 0);
		assert_int_equal(hs.calls, 1);
		assert_true(before <= hs.at && hs.at <= u.mark_ns && u.mark_ns <= u.end_ns);
		memset(got, 0, sizeof(got));
		assert_int_equal(tb_io_read(modes[i], sv[1], got, sizeof(got)), 10);
		assert_memory_equal(got, "5\r\nhello\r\n", 10);
		close(sv[0]);
		assert_int_equal(tb_io_read(modes[i], sv[1], got, sizeof(got)), 0);
		close(sv[1]);
	}
	tb_buf_free(&scratch);
}

static void test_unit_bound(void **state)
{
	struct tb_io_unit u = { 0 };
	int i;

	(void)state;
	for (i = 0; i < TB_IO_PIECES_MAX; i++)
		assert_int_equal(tb_io_unit_add(&u, "x", 1), 0);
	assert_int_equal(tb_io_unit_add(&u, "x", 1), -E2BIG);
}

struct drain {
	int fd;
	size_t got;
	unsigned char *buf;
	size_t cap;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	ssize_t n;

	while ((n = read(d->fd, d->buf + d->got, d->cap - d->got)) > 0)
		d->got += (size_t)n;
	return NULL;
}

/* A unit far larger than the socket buffer: short writes continue where they stopped. */
static void test_short_writes(void **state)
{
	const size_t piece = 300000;
	unsigned char *a = malloc(piece), *b = malloc(piece);
	struct tb_buf scratch;
	size_t i, k;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	for (k = 0; k < piece; k++) {
		a[k] = (unsigned char)(k * 7);
		b[k] = (unsigned char)(k * 13 + 1);
	}
	tb_buf_init(&scratch, 1 << 21);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct tb_io_unit u = { .mark_piece = -1 };
		struct drain d = { .cap = 2 * piece + 1 };
		int sv[2], small = 4096;
		pthread_t t;

		d.buf = malloc(d.cap);
		assert_non_null(d.buf);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
		d.fd = sv[1];
		assert_int_equal(pthread_create(&t, NULL, drain_main, &d), 0);
		tb_io_unit_add(&u, a, piece);
		tb_io_unit_add(&u, b, piece);
		assert_int_equal(tb_io_write(modes[i], sv[0], &u, &scratch), 0);
		assert_int_equal(u.mark_ns, 0);
		close(sv[0]);
		pthread_join(t, NULL);
		close(sv[1]);
		assert_int_equal(d.got, 2 * piece);
		assert_memory_equal(d.buf, a, piece);
		assert_memory_equal(d.buf + piece, b, piece);
		free(d.buf);
	}
	tb_buf_free(&scratch);
	free(a);
	free(b);
}

static void test_peer_gone(void **state)
{
	struct tb_buf scratch;
	size_t i;

	(void)state;
	tb_buf_init(&scratch, 1 << 20);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct tb_io_unit u = { .mark_piece = -1 };
		int sv[2], err;

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		close(sv[1]);
		tb_io_unit_add(&u, "data", 4);
		/* MSG_NOSIGNAL or SIGPIPE ignored: an error, never a signal */
		err = tb_io_write(modes[i], sv[0], &u, &scratch);
		assert_true(err == -EPIPE || err == -ECONNRESET);
		close(sv[0]);
	}
	tb_buf_free(&scratch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode_names), cmocka_unit_test(test_unit_roundtrip),
		cmocka_unit_test(test_unit_bound), cmocka_unit_test(test_short_writes),
		cmocka_unit_test(test_peer_gone),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
