// SPDX-License-Identifier: BSD-2-Clause
#include "peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "clock.h"

struct tb_peer_client {
	struct sockaddr_in addr;
	int fd;
};

struct peer_conn {
	struct tb_peer_server *srv;
	pthread_t thread;
	int fd; /* -1: slot free */
	bool joinable;
};

struct tb_peer_server {
	int listen_fd;
	uint64_t delay_ns;
	atomic_bool stop;
	atomic_uint_fast64_t answered;
	pthread_t accept_thread;
	bool accept_started;
	pthread_mutex_t lock; /* conns[].fd */
	struct peer_conn conns[TB_PEER_CONNS_MAX];
};

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Full-length transfers on a blocking socket. */
static int xfer_all(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* request/reply of tiny messages: never let Nagle hold one back */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int parse_host_port(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port == 0 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

static int client_connect(struct tb_peer_client *c)
{
	int fd, err;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	set_nodelay(fd);
	c->fd = fd;
	return 0;
}

struct tb_peer_client *tb_peer_client__new(const char *host_port)
{
	struct tb_peer_client *c;
	uint64_t deadline = tb_now_ns() + 5000000000ull;
	int err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = -1;
	err = parse_host_port(host_port, &c->addr);
	if (err)
		goto cleanup;
	while ((err = client_connect(c)) == -ECONNREFUSED && tb_now_ns() < deadline)
		tb_sleep_ms(50);
	if (err)
		goto cleanup;
	return c;
cleanup:
	free(c);
	errno = -err;
	return NULL;
}

int tb_peer_client__exchange(struct tb_peer_client *c, uint64_t step_id, uint32_t batch)
{
	unsigned char msg[16], reply[16];
	int err;

	if (c->fd < 0) {
		err = client_connect(c);
		if (err)
			return err;
	}
	put_le32(msg, TB_PEER_MAGIC);
	put_le32(msg + 4, batch);
	put_le64(msg + 8, step_id);
	err = xfer_all(c->fd, msg, sizeof(msg), true);
	if (!err)
		err = xfer_all(c->fd, reply, sizeof(reply), false);
	if (!err && memcmp(msg, reply, sizeof(msg)) != 0)
		err = -EPROTO;
	if (err) {
		close(c->fd);
		c->fd = -1;
	}
	return err;
}

void tb_peer_client__free(struct tb_peer_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void *peer_conn_main(void *arg)
{
	struct peer_conn *pc = arg;
	struct tb_peer_server *s = pc->srv;
	unsigned char msg[16];
	int fd = pc->fd;

	while (!atomic_load(&s->stop)) {
		if (xfer_all(fd, msg, sizeof(msg), false))
			break;
		if (get_le32(msg) != TB_PEER_MAGIC)
			break; /* not our protocol: drop the connection */
		if (s->delay_ns)
			tb_sleep_until(tb_now_ns() + s->delay_ns);
		if (xfer_all(fd, msg, sizeof(msg), true))
			break;
		atomic_fetch_add(&s->answered, 1);
	}
	pthread_mutex_lock(&s->lock);
	pc->fd = -1;
	close(fd);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void *peer_accept_main(void *arg)
{
	struct tb_peer_server *s = arg;
	struct peer_conn *slot;
	int fd, i;

	while (!atomic_load(&s->stop)) {
		fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* EINVAL after shutdown() on stop */
		}
		set_nodelay(fd);
		slot = NULL;
		pthread_mutex_lock(&s->lock);
		for (i = 0; i < TB_PEER_CONNS_MAX && !slot; i++) {
			if (s->conns[i].fd < 0)
				slot = &s->conns[i];
		}
		if (slot && !atomic_load(&s->stop)) {
			if (slot->joinable)
				pthread_join(slot->thread, NULL); /* finished: its fd is -1 */
			slot->joinable = false;
			slot->fd = fd;
			if (pthread_create(&slot->thread, NULL, peer_conn_main, slot) == 0) {
				slot->joinable = true;
			} else {
				slot->fd = -1;
				close(fd);
			}
		} else {
			close(fd); /* bounded: no free slot */
		}
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

struct tb_peer_server *tb_peer_server__new(int listen_fd, uint64_t delay_ns)
{
	struct tb_peer_server *s;
	int i, err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->listen_fd = listen_fd;
	s->delay_ns = delay_ns;
	atomic_init(&s->stop, false);
	atomic_init(&s->answered, 0);
	pthread_mutex_init(&s->lock, NULL);
	for (i = 0; i < TB_PEER_CONNS_MAX; i++) {
		s->conns[i].srv = s;
		s->conns[i].fd = -1;
	}
	err = -pthread_create(&s->accept_thread, NULL, peer_accept_main, s);
	if (err) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		errno = -err;
		return NULL;
	}
	s->accept_started = true;
	return s;
}

void tb_peer_server__stop(struct tb_peer_server *s)
{
	int i;

	atomic_store(&s->stop, true);
	shutdown(s->listen_fd, SHUT_RDWR);
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < TB_PEER_CONNS_MAX; i++)
		if (s->conns[i].fd >= 0)
			shutdown(s->conns[i].fd, SHUT_RDWR);
	pthread_mutex_unlock(&s->lock);
}

void tb_peer_server__free(struct tb_peer_server *s)
{
	int i;

	if (!s)
		return;
	tb_peer_server__stop(s);
	if (s->accept_started)
		pthread_join(s->accept_thread, NULL);
	for (i = 0; i < TB_PEER_CONNS_MAX; i++)
		if (s->conns[i].joinable)
			pthread_join(s->conns[i].thread, NULL);
	close(s->listen_fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

uint64_t tb_peer_server__answered(const struct tb_peer_server *s)
{
	return atomic_load(&((struct tb_peer_server *)s)->answered);
}
