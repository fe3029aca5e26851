// SPDX-License-Identifier: BSD-2-Clause
#include "proto.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 4 /* room to notice (and close) fds we did not ask for */

long long rt_cupti_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* poll() one fd until deadline_ms; returns revents, 0 on timeout, -errno. */
static int wait_fd(int fd, short events, long long deadline_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	for (;;) {
		left = deadline_ms - rt_cupti_now_ms();
		if (left < 0)
			left = 0;
		n = poll(&p, 1, (int)left);
		if (n > 0)
			return p.revents;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int rt_cupti_proto_connect(const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long deadline = rt_cupti_now_ms() + timeout_ms;
	socklen_t len = sizeof(int);
	int fd, err, soerr = 0;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	err = -errno;
	if (err != -EINPROGRESS)
		goto fail; /* EAGAIN: backlog full, ENOENT/ECONNREFUSED: no daemon */
	err = wait_fd(fd, POLLOUT, deadline);
	if (err <= 0) {
		err = err ? err : -ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0) {
		err = -errno;
		goto fail;
	}
	if (soerr) {
		err = -soerr;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

static void fill_hdr(struct rt_inject_msg_hdr *h, __u16 type, __u32 size)
{
	memset(h, 0, sizeof(*h));
	h->magic = RT_INJECT_MAGIC;
	h->version = RT_INJECT_VERSION;
	h->type = type;
	h->size = size;
}

/* MSG_NOSIGNAL: a dead daemon must never SIGPIPE the host */
static int send_msg(int fd, const void *msg, size_t size)
{
	ssize_t n = send(fd, msg, size, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0)
		return -errno;
	return (size_t)n == size ? 0 : -EIO;
}

int rt_cupti_proto_send_hello(int fd, struct rt_inject_hello *h)
{
	fill_hdr(&h->hdr, RT_INJECT_MSG_HELLO, sizeof(*h));
	return send_msg(fd, h, sizeof(*h));
}

int rt_cupti_proto_send_status(int fd, __u32 status, __u32 cupti_result)
{
	struct rt_inject_status_msg m;

	fill_hdr(&m.hdr, RT_INJECT_MSG_STATUS, sizeof(m));
	m.status = status;
	m.cupti_result = cupti_result;
	return send_msg(fd, &m, sizeof(m));
}

/* Collects the fds of a received message; more than one is a protocol error. */
static int take_fds(struct msghdr *mh, int *ring_fd)
{
	struct cmsghdr *c;
	int err = 0, i, n, fds[MAX_FDS];

	*ring_fd = -1;
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (n > MAX_FDS)
			n = MAX_FDS;
		memcpy(fds, CMSG_DATA(c), n * sizeof(int));
		for (i = 0; i < n; i++) {
			if (*ring_fd < 0 && !err) {
				*ring_fd = fds[i];
				continue;
			}
			close(fds[i]);
			err = -EPROTO;
		}
	}
	if (mh->msg_flags & MSG_CTRUNC)
		err = -EPROTO;
	if (err && *ring_fd >= 0) {
		close(*ring_fd);
		*ring_fd = -1;
	}
	return err;
}

int rt_cupti_proto_recv_welcome(int fd, int timeout_ms, struct rt_inject_welcome *w, int *ring_fd)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	char msg[RT_INJECT_MSG_MAX];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	long long deadline = rt_cupti_now_ms() + timeout_ms;
	struct rt_inject_msg_hdr h;
	ssize_t n;
	int err;

	*ring_fd = -1;
	for (;;) {
		n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n >= 0)
			break;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		err = wait_fd(fd, POLLIN, deadline);
		if (err < 0)
			return err;
		if (err == 0)
			return -ETIMEDOUT;
	}
	if (n == 0)
		return -ECONNRESET;
	err = take_fds(&mh, ring_fd);
	if (err)
		return err;
	memcpy(&h, msg, (size_t)n < sizeof(h) ? (size_t)n : sizeof(h));
	if ((size_t)n < sizeof(*w) || (mh.msg_flags & MSG_TRUNC) || h.magic != RT_INJECT_MAGIC ||
	    h.version != RT_INJECT_VERSION || h.type != RT_INJECT_MSG_WELCOME || h.size != n) {
		if (*ring_fd >= 0)
			close(*ring_fd);
		*ring_fd = -1;
		return -EPROTO;
	}
	memcpy(w, msg, sizeof(*w));
	return 0;
}
