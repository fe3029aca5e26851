// SPDX-License-Identifier: BSD-2-Clause
#include "server_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "clock.h"
#include "park.h"

int tb_listen_loopback(uint16_t port, uint16_t *bound)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	socklen_t len = sizeof(sa);
	int fd, one = 1, err;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	*bound = ntohs(sa.sin_port);
	return fd;
}

struct handler_arg {
	struct tb_server *s;
	uint32_t slot;
};

/*
 * Every handler blocks in accept4 on the shared listener (the kernel wakes
 * one per connection), then serves that connection to its end: at most
 * handler_threads connections are served at once, the rest wait in the
 * listen backlog. With park_idle the handlers run park.c's loop instead.
 */
static void *handler_main(void *arg)
{
	struct handler_arg *ha = arg;
	struct tb_server *s = ha->s;
	uint32_t slot = ha->slot;
	uint64_t accept_ns;
	int fd, one = 1;
	char name[16];

	free(ha);
	/* named from inside (prctl): naming another thread writes /proc, an fd
	 * that could be mistaken for a connection's */
	snprintf(name, sizeof(name), "tb-http-%u", (unsigned)slot % 10000u);
	pthread_setname_np(pthread_self(), name);
	if (s->k.park_idle) {
		tb_park_handler(s, slot);
		return NULL;
	}
	while (!atomic_load(&s->stop)) {
		fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		accept_ns = tb_now_ns();
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				usleep(10000); /* transient: let other connections close */
				continue;
			}
			break; /* EINVAL: the listener was shut down */
		}
		/*
		 * Without it Nagle holds each small token write until the client's
		 * delayed ACK of the previous one (up to 40 ms); streaming servers
		 * (uvicorn, llama.cpp) set it too.
		 */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pthread_mutex_lock(&s->slots_lock);
		s->conn_fds[slot] = fd;
		pthread_mutex_unlock(&s->slots_lock);
		/* tb_server__stop sets stop before walking the slots: one of us sees the other */
		if (!atomic_load(&s->stop))
			tb_conn_serve(s, fd, accept_ns);
		pthread_mutex_lock(&s->slots_lock);
		s->conn_fds[slot] = -1;
		close(fd);
		pthread_mutex_unlock(&s->slots_lock);
	}
	return NULL;
}

struct tb_server *tb_server__new(const struct tb_server_opts *opts)
{
	struct tb_engine_opts eo = { .knobs = opts->knobs,
				     .backend = opts->backend,
				     .peer = opts->peer };
	struct handler_arg *ha;
	struct tb_server *s;
	uint32_t i;
	int err;

	s = calloc(1, sizeof(*s));
	if (!s) {
		close(opts->listen_fd);
		return NULL;
	}
	s->k = *opts->knobs;
	s->io = opts->io;
	s->listen_fd = opts->listen_fd;
	s->epfd = s->stop_efd = -1;
	atomic_init(&s->stop, false);
	pthread_mutex_init(&s->slots_lock, NULL);
	s->conn_fds = malloc(sizeof(*s->conn_fds) * s->k.handler_threads);
	s->handlers = calloc(s->k.handler_threads, sizeof(*s->handlers));
	if (!s->conn_fds || !s->handlers) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < s->k.handler_threads; i++)
		s->conn_fds[i] = -1;
	if (opts->truth_path) {
		s->truth = tb_truth__open(opts->truth_path);
		if (!s->truth) {
			err = -errno;
			goto cleanup;
		}
	}
	s->engine = tb_engine__new(&eo);
	if (!s->engine) {
		err = -errno;
		goto cleanup;
	}
	if (s->k.park_idle && (err = tb_park_init(s)))
		goto cleanup;
	for (i = 0; i < s->k.handler_threads; i++) {
		ha = malloc(sizeof(*ha));
		if (!ha) {
			err = -ENOMEM;
			goto cleanup;
		}
		ha->s = s;
		ha->slot = i;
		err = -pthread_create(&s->handlers[i], NULL, handler_main, ha);
		if (err) {
			free(ha);
			goto cleanup;
		}
		s->n_handlers++;
	}
	return s;
cleanup:
	tb_server__free(s);
	errno = -err;
	return NULL;
}

void tb_server__stop(struct tb_server *s)
{
	uint32_t i;

	atomic_store(&s->stop, true);
	shutdown(s->listen_fd, SHUT_RDWR);
	pthread_mutex_lock(&s->slots_lock);
	for (i = 0; i < s->k.handler_threads; i++)
		if (s->conn_fds[i] >= 0)
			shutdown(s->conn_fds[i], SHUT_RDWR);
	pthread_mutex_unlock(&s->slots_lock);
	tb_park_stop(s);
	if (s->engine)
		tb_engine__stop(s->engine);
}

void tb_server__join(struct tb_server *s)
{
	uint32_t i;

	if (s->conn_fds)
		tb_server__stop(s);
	for (i = 0; i < s->n_handlers; i++)
		pthread_join(s->handlers[i], NULL);
	s->n_handlers = 0;
}

void tb_server__free(struct tb_server *s)
{
	if (!s)
		return;
	tb_server__join(s);
	/* handlers are gone: no request is left for the engine to release */
	tb_park_fini(s);
	tb_engine__free(s->engine);
	tb_truth__free(s->truth);
	close(s->listen_fd);
	pthread_mutex_destroy(&s->slots_lock);
	free(s->handlers);
	free(s->conn_fds);
	free(s);
}

void tb_server__stats(struct tb_server *s, struct tb_server_stats *st)
{
	st->completions = atomic_load(&s->completions);
	st->ok = atomic_load(&s->ok);
	st->aborted = atomic_load(&s->aborted);
	st->client_errors = atomic_load(&s->client_errors);
	st->server_errors = atomic_load(&s->server_errors);
	st->truth_errors = atomic_load(&s->truth_errors);
}
