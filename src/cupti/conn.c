// SPDX-License-Identifier: BSD-2-Clause
/*
 * The library's connection to reqtraced and its background thread. The
 * thread owns the socket: it retries the handshake with backoff while no
 * daemon answers, watches the socket for the daemon's death, and every
 * flush period flushes CUPTI and writes loss and watermark records. The
 * host's threads never wait for any of it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "dbg.h"
#include "proto.h"

#define RETRY_MIN_MS 500
#define RETRY_MAX_MS 4000 /* no daemon yet: a daemon started later finds us within this */
#define RETRY_REFUSED_MAX_MS 30000 /* refused: we may join a target group later */
#define HANDSHAKE_MS 500 /* background attempts; InitializeInjection allows 50 */
#define FLUSH_MS_MIN 10
#define FLUSH_MS_MAX 10000
#define HORIZON_MS_MAX 60000

static __u32 clamp(__u32 v, __u32 lo, __u32 hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int attach(struct rt_cupti_agent *a, const struct rt_inject_welcome *w, int ring_fd,
		  __u64 reported)
{
	struct rt_cupti_ring r;
	int err;

	err = rt_cupti_ring_check_fd(ring_fd, w->ring_hdr_size, w->ring_data_size);
	if (!err)
		err = rt_cupti_ring_map(&r, ring_fd, w->ring_hdr_size, w->ring_data_size);
	if (err) {
		__atomic_fetch_add(&a->ring_rejects, 1, __ATOMIC_RELAXED);
		rt_cupti_dbg("refusing the daemon's ring: %s", strerror(-err));
		return err;
	}
	pthread_mutex_lock(&a->ring_lock);
	a->ring = r;
	a->source_id = w->source_id;
	a->pid = w->pid;
	a->flush_ms = clamp(w->flush_ms, FLUSH_MS_MIN, FLUSH_MS_MAX);
	a->horizon_ms = clamp(w->horizon_ms, a->flush_ms, HORIZON_MS_MAX);
	a->last_wm = 0;
	a->lost_unconnected -= reported; /* the daemon has heard of those */
	pthread_mutex_unlock(&a->ring_lock);
	return 0;
}

int rt_cupti_conn_try(struct rt_cupti_agent *a, int timeout_ms)
{
	long long deadline = rt_cupti_now_ms() + timeout_ms;
	struct rt_inject_hello h;
	struct rt_inject_welcome w;
	int fd, err, ring_fd = -1;
	long long left;

	fd = rt_cupti_proto_connect(a->socket_path, timeout_ms);
	if (fd < 0)
		return fd;
	memset(&h, 0, sizeof(h));
	h.event_version = RT_EVENT_VERSION;
	h.status = a->status;
	h.pid = (__u32)getpid();
	h.cupti_version = a->cupti_version;
	h.cupti_result = a->cupti_result;
	memcpy(h.comm, a->comm, sizeof(h.comm));
	pthread_mutex_lock(&a->ring_lock);
	h.lost_unconnected = a->lost_unconnected;
	pthread_mutex_unlock(&a->ring_lock);
	err = rt_cupti_proto_send_hello(fd, &h);
	if (err)
		goto fail;
	left = deadline - rt_cupti_now_ms();
	err = rt_cupti_proto_recv_welcome(fd, left > 0 ? (int)left : 0, &w, &ring_fd);
	if (err)
		goto fail;
	if (w.status != RT_INJECT_ACCEPTED) {
		__atomic_fetch_add(&a->refusals, 1, __ATOMIC_RELAXED);
		rt_cupti_dbg("daemon refused us: %s", strerror(w.status < 0 ? -w.status : EPROTO));
		err = w.status < 0 ? w.status : -EPROTO;
		goto fail;
	}
	if (a->status == RT_INJECT_ST_OK) {
		err = ring_fd < 0 ? -EPROTO : attach(a, &w, ring_fd, h.lost_unconnected);
		if (err)
			goto fail;
		close(ring_fd);
		ring_fd = -1;
		if (rt_cupti_collect_start(a)) {
			/* status is CUPTI_ERROR now: the next HELLO says so, without a ring */
			rt_cupti_conn_detach(a);
			err = -EIO;
			goto fail;
		}
	} else {
		/* idle: the daemon knows why; keep the socket so it sees our exit */
		pthread_mutex_lock(&a->ring_lock);
		a->lost_unconnected -= h.lost_unconnected;
		pthread_mutex_unlock(&a->ring_lock);
	}
	if (ring_fd >= 0)
		close(ring_fd);
	a->sock = fd;
	__atomic_fetch_add(&a->connects, 1, __ATOMIC_RELAXED);
	rt_cupti_dbg("connected to %s: source %u", a->socket_path, w.source_id);
	return 0;
fail:
	if (ring_fd >= 0)
		close(ring_fd);
	close(fd);
	return err;
}

void rt_cupti_conn_detach(struct rt_cupti_agent *a)
{
	int r;

	pthread_mutex_lock(&a->ring_lock);
	rt_cupti_ring_unmap(&a->ring);
	/* losses the gone daemon never heard of go out in the next HELLO */
	for (r = 0; r < RT_CUPTI_LOSS__COUNT; r++) {
		a->lost_unconnected += a->loss[r].count;
		memset(&a->loss[r], 0, sizeof(a->loss[r]));
	}
	a->source_id = 0;
	pthread_mutex_unlock(&a->ring_lock);
	if (a->sock >= 0) {
		close(a->sock);
		a->sock = -1;
		__atomic_fetch_add(&a->disconnects, 1, __ATOMIC_RELAXED);
		rt_cupti_dbg("daemon gone: dropping records until it is back");
	}
}

/* 1 when the daemon closed the socket or the ring. */
static int daemon_gone(struct rt_cupti_agent *a, int revents)
{
	char buf[RT_INJECT_MSG_MAX];
	ssize_t n;
	int broken;

	pthread_mutex_lock(&a->ring_lock);
	broken = a->status == RT_INJECT_ST_OK && !rt_cupti_ring_ok(&a->ring);
	pthread_mutex_unlock(&a->ring_lock);
	if (broken)
		return 1;
	if (!revents)
		return 0;
	/* v1 daemons send nothing after WELCOME: drain whatever comes, notice EOF */
	for (;;) {
		n = recv(a->sock, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n == 0)
			return 1;
		return errno != EAGAIN && errno != EINTR;
	}
}

static void *thread_main(void *arg)
{
	struct rt_cupti_agent *a = arg;
	long long now, next_tick, next_try, backoff = RETRY_MIN_MS, wait;
	struct pollfd p;
	int err;

	prctl(PR_SET_NAME, "reqtrace-cupti", 0, 0, 0);
	now = rt_cupti_now_ms();
	next_try = now;
	next_tick = now + a->flush_ms;
	while (!__atomic_load_n(&a->exiting, __ATOMIC_ACQUIRE)) {
		now = rt_cupti_now_ms();
		if (a->sock < 0 && now >= next_try) {
			err = rt_cupti_conn_try(a, HANDSHAKE_MS);
			now = rt_cupti_now_ms();
			if (err) {
				next_try = now + backoff;
				backoff *= 2;
				if (backoff > (err == -EPERM ? RETRY_REFUSED_MAX_MS : RETRY_MAX_MS))
					backoff =
						err == -EPERM ? RETRY_REFUSED_MAX_MS : RETRY_MAX_MS;
			} else {
				backoff = RETRY_MIN_MS;
			}
		}
		wait = next_tick - now;
		if (a->sock < 0 && next_try - now < wait)
			wait = next_try - now;
		if (wait < 0)
			wait = 0;
		p.fd = a->sock;
		p.events = POLLIN;
		p.revents = 0;
		if (poll(&p, a->sock >= 0 ? 1 : 0, (int)wait) < 0)
			p.revents = 0;
		if (a->sock >= 0 && daemon_gone(a, p.revents)) {
			rt_cupti_conn_detach(a);
			next_try = rt_cupti_now_ms() + RETRY_MIN_MS;
			backoff = RETRY_MIN_MS;
		}
		now = rt_cupti_now_ms();
		if (now >= next_tick) {
			rt_cupti_collect_tick(a);
			next_tick += a->flush_ms;
			if (next_tick <= now)
				next_tick = now + a->flush_ms;
		}
	}
	return NULL;
}

int rt_cupti_conn_start_thread(struct rt_cupti_agent *a)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int err;

	/* detached: nobody joins it, it ends with the process (or at exit) */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* the host's signals are the host's: none of them lands on our thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&a->thread, &attr, thread_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (!err)
		a->thread_started = 1;
	return err;
}
