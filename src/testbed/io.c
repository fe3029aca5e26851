// SPDX-License-Identifier: BSD-2-Clause
#include "io.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "clock.h"

static const char *const mode_names[] = {
	[TB_IO_READWRITE] = "readwrite", [TB_IO_VECTOR] = "vector",
	[TB_IO_SOCKET] = "socket",	 [TB_IO_MSG] = "msg",
	[TB_IO_SPLIT] = "split",
};

int tb_io_mode_parse(const char *name, enum tb_io_mode *mode)
{
	size_t i;

	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (strcmp(name, mode_names[i]) == 0) {
			*mode = (enum tb_io_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *tb_io_mode_name(enum tb_io_mode mode)
{
	if ((unsigned)mode >= sizeof(mode_names) / sizeof(mode_names[0]))
		return "?";
	return mode_names[mode];
}

ssize_t tb_io_read(enum tb_io_mode mode, int fd, void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	do {
		switch (mode) {
		case TB_IO_VECTOR:
			n = readv(fd, &iov, 1);
			break;
		case TB_IO_SOCKET:
			n = recvfrom(fd, buf, len, 0, NULL, NULL);
			break;
		case TB_IO_MSG:
			n = recvmsg(fd, &msg, 0);
			break;
		default:
			n = read(fd, buf, len);
		}
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

int tb_io_unit_add(struct tb_io_unit *u, const void *data, size_t len)
{
	if (u->iovcnt >= TB_IO_PIECES_MAX)
		return -E2BIG;
	u->iov[u->iovcnt].iov_base = (void *)data;
	u->iov[u->iovcnt].iov_len = len;
	u->iovcnt++;
	return 0;
}

/* Runs the hook and stamps, if this call is the marked one. */
static void mark(struct tb_io_unit *u, int piece, int *marked)
{
	if (*marked || piece != u->mark_piece)
		return;
	if (u->hook)
		u->hook(u->hook_arg);
	u->mark_ns = tb_now_ns();
	*marked = 1;
}

/* One buffer, one call per attempt: write or sendto. */
static int write_flat(enum tb_io_mode mode, int fd, const char *p, size_t len, struct tb_io_unit *u,
		      int piece, int *marked)
{
	ssize_t n;

	while (len > 0) {
		mark(u, piece, marked);
		if (mode == TB_IO_SOCKET)
			n = sendto(fd, p, len, MSG_NOSIGNAL, NULL, 0);
		else
			n = write(fd, p, len);
		u->end_ns = tb_now_ns();
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The iovec modes: writev or sendmsg, advancing over short writes. */
static int write_vec(enum tb_io_mode mode, int fd, struct tb_io_unit *u, int *marked)
{
	struct iovec iov[TB_IO_PIECES_MAX];
	struct msghdr msg = { 0 };
	int cnt = u->iovcnt, first = 0;
	ssize_t n;

	memcpy(iov, u->iov, sizeof(iov[0]) * (size_t)cnt);
	while (first < cnt && iov[first].iov_len == 0)
		first++;
	while (first < cnt) {
		/* the marked piece is reached when it is the first unwritten one, or earlier */
		if (u->mark_piece >= first)
			mark(u, u->mark_piece, marked);
		if (mode == TB_IO_MSG) {
			msg.msg_iov = iov + first;
			msg.msg_iovlen = (size_t)(cnt - first);
			n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		} else {
			n = writev(fd, iov + first, cnt - first);
		}
		u->end_ns = tb_now_ns();
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (first < cnt && (size_t)n >= iov[first].iov_len) {
			n -= (ssize_t)iov[first].iov_len;
			first++;
		}
		if (first < cnt) {
			iov[first].iov_base = (char *)iov[first].iov_base + n;
			iov[first].iov_len -= (size_t)n;
		}
	}
	return 0;
}

int tb_io_write(enum tb_io_mode mode, int fd, struct tb_io_unit *u, struct tb_buf *scratch)
{
	int marked = 0, i, err = 0;

	u->mark_ns = 0;
	u->end_ns = 0;
	switch (mode) {
	case TB_IO_VECTOR:
	case TB_IO_MSG:
		return write_vec(mode, fd, u, &marked);
	case TB_IO_SPLIT:
		for (i = 0; i < u->iovcnt && !err; i++)
			err = write_flat(mode, fd, u->iov[i].iov_base, u->iov[i].iov_len, u, i,
					 &marked);
		return err;
	default:
		/* coalesce so that a unit is one system call, as a real server's buffer is */
		tb_buf_reset(scratch);
		for (i = 0; i < u->iovcnt && !err; i++)
			err = tb_buf_add(scratch, u->iov[i].iov_base, u->iov[i].iov_len);
		if (err)
			return err;
		if (u->mark_piece >= 0)
			u->mark_piece = 0;
		return write_flat(mode, fd, scratch->p, scratch->len, u, 0, &marked);
	}
}
