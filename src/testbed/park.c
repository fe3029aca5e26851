// SPDX-License-Identifier: BSD-2-Clause
/*
 * park_idle = 1: the handlers share one epoll set holding the listener and
 * every idle keep-alive connection, each EPOLLONESHOT so that exactly one
 * handler owns what woke it. A handler accepts one connection (and parks
 * it), or serves one request of a ready connection and parks it again, then
 * goes back to epoll_wait. So a request that reaches an idle connection
 * while every handler is busy waits in the socket's receive buffer, as in
 * thread-pool servers (a poller handing ready sockets to a worker pool).
 */
#include "park.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "clock.h"
#include "server_int.h"

struct tb_park {
	struct tb_conn *c;
	struct tb_park *prev, *next; /* s->parked, under slots_lock */
};

/* epoll data of the two fixed descriptors; a connection's is its tb_park */
static int tag_listener, tag_stop;

int tb_park_init(struct tb_server *s)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.ptr = &tag_listener };
	int fl;

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		return -errno;
	s->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->stop_efd < 0)
		return -errno;
	/* the connection that woke us may be gone (reset) by the time we accept */
	fl = fcntl(s->listen_fd, F_GETFL);
	if (fl < 0 || fcntl(s->listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &ev) < 0)
		return -errno;
	/* level-triggered, not one-shot: epoll hands it on until every handler saw it */
	ev.events = EPOLLIN;
	ev.data.ptr = &tag_stop;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->stop_efd, &ev) < 0)
		return -errno;
	return 0;
}

void tb_park_stop(struct tb_server *s)
{
	uint64_t one = 1;

	if (s->stop_efd >= 0 && write(s->stop_efd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow from a handful of stops */
	}
}

static void unlink_locked(struct tb_server *s, struct tb_park *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		s->parked = p->next;
	if (p->next)
		p->next->prev = p->prev;
}

static void rearm_listener(struct tb_server *s)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.ptr = &tag_listener };

	epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->listen_fd, &ev);
}

/* Accepts one connection and parks it. Returns false once the listener is shut down. */
static bool accept_one(struct tb_server *s)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	struct tb_park *p;
	uint64_t accept_ns;
	int fd, one = 1;

	fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	accept_ns = tb_now_ns();
	if (fd < 0) {
		if (errno == EINVAL)
			return false;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			usleep(10000); /* transient: let other connections close */
		rearm_listener(s);
		return true;
	}
	/* another handler may accept the next connection while we park this one */
	rearm_listener(s);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* as handler_main */
	p = calloc(1, sizeof(*p));
	if (p)
		p->c = tb_conn__new(s, fd, accept_ns);
	if (!p || !p->c) {
		free(p);
		close(fd);
		return true;
	}
	pthread_mutex_lock(&s->slots_lock);
	p->next = s->parked;
	if (p->next)
		p->next->prev = p;
	s->parked = p;
	pthread_mutex_unlock(&s->slots_lock);
	ev.data.ptr = p;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		tb_conn__free(p->c);
		pthread_mutex_lock(&s->slots_lock);
		unlink_locked(s, p);
		close(fd);
		pthread_mutex_unlock(&s->slots_lock);
		free(p);
	}
	return true;
}

static void set_slot(struct tb_server *s, uint32_t slot, int fd)
{
	pthread_mutex_lock(&s->slots_lock);
	s->conn_fds[slot] = fd;
	pthread_mutex_unlock(&s->slots_lock);
}

/* One request of a ready connection, then park it again (or close it). */
static void serve_ready(struct tb_server *s, uint32_t slot, struct tb_park *p)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.ptr = p };
	int fd = tb_conn_fd(p->c), rc = 1;

	set_slot(s, slot, fd);
	/* tb_server__stop sets stop before walking the slots: one of us sees the other */
	if (!atomic_load(&s->stop)) {
		/* pipelined requests already read: epoll would never report them */
		do
			rc = tb_conn_serve_one(p->c);
		while (rc == 0 && tb_conn_buffered(p->c) && !atomic_load(&s->stop));
	}
	if (rc == 0 && !atomic_load(&s->stop)) {
		/* once re-armed another handler may own it: nothing of it is ours after */
		set_slot(s, slot, -1);
		if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
			return;
	}
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
	tb_conn__free(p->c);
	pthread_mutex_lock(&s->slots_lock);
	s->conn_fds[slot] = -1;
	unlink_locked(s, p);
	close(fd);
	pthread_mutex_unlock(&s->slots_lock);
	free(p);
}

void tb_park_handler(struct tb_server *s, uint32_t slot)
{
	struct epoll_event ev;
	int n;

	while (!atomic_load(&s->stop)) {
		n = epoll_wait(s->epfd, &ev, 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0 || ev.data.ptr == &tag_stop)
			continue; /* the loop condition sees stop */
		if (ev.data.ptr == &tag_listener) {
			if (!accept_one(s))
				break;
			continue;
		}
		serve_ready(s, slot, ev.data.ptr);
	}
}

void tb_park_fini(struct tb_server *s)
{
	struct tb_park *p, *next;
	int fd;

	/* the handlers are joined: what is left is parked idle */
	for (p = s->parked; p; p = next) {
		next = p->next;
		fd = tb_conn_fd(p->c);
		tb_conn__free(p->c);
		close(fd);
		free(p);
	}
	s->parked = NULL;
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->stop_efd >= 0)
		close(s->stop_efd);
	s->epfd = s->stop_efd = -1;
}
