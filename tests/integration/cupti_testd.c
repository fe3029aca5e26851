// SPDX-License-Identifier: BSD-2-Clause
#include "cupti_testd.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int allow(__u32 pid, void *ctx)
{
	struct testd *d = ctx;

	return d->allow == TESTD_ALLOW_ANY ||
	       (d->allow == TESTD_ALLOW_SELF && pid == (__u32)getpid());
}

static int keep(const struct rt_event_hdr *ev, void *ctx)
{
	struct testd *d = ctx;

	/* called from consume(), under d->lock */
	if (ev->kind < RT_EV__MAX)
		d->by_kind[ev->kind]++;
	if (ev->kind == RT_EV_LOSS) {
		const struct rt_ev_loss *l = (const void *)ev;

		if (l->reason < 8)
			d->loss[l->reason] += l->count;
	}
	if (ev->kind == RT_EV_WATERMARK) {
		if (ev->ts_ns > d->last_wm)
			d->last_wm = ev->ts_ns;
	} else if (ev->kind != RT_EV_LOSS && ev->kind != RT_EV_SOURCE_INFO &&
		   ev->ts_ns < d->last_wm) {
		d->late++;
	}
	if (d->n < TESTD_MAX_RECS && ev->size <= TESTD_REC_SIZE)
		memcpy(d->recs[d->n++].raw, ev, ev->size);
	return 0;
}

static void *serve(void *arg)
{
	struct testd *d = arg;
	struct pollfd p = { .fd = rt_inject_server__epoll_fd(d->s), .events = POLLIN };

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		poll(&p, 1, 10);
		pthread_mutex_lock(&d->lock);
		rt_inject_server__on_readable(d->s);
		rt_inject_server__consume(d->s, keep, d);
		pthread_mutex_unlock(&d->lock);
	}
	return NULL;
}

int testd_start(struct testd *d, const char *path, int allow_mode, unsigned long long ring_bytes)
{
	struct rt_inject_server_opts o = {
		.path = path,
		.ring_bytes = ring_bytes,
		.first_source_id = 100,
		.allow_pid = allow,
		.ctx = d,
	};
	int err;

	memset(d, 0, sizeof(*d));
	d->allow = allow_mode;
	pthread_mutex_init(&d->lock, NULL);
	d->s = rt_inject_server__new(&o);
	if (!d->s)
		return -errno;
	err = -pthread_create(&d->thread, NULL, serve, d);
	if (err) {
		rt_inject_server__free(d->s);
		d->s = NULL;
	}
	return err;
}

void testd_stop(struct testd *d)
{
	if (!d->s)
		return;
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	pthread_join(d->thread, NULL);
	rt_inject_server__free(d->s);
	d->s = NULL;
	pthread_mutex_destroy(&d->lock);
}

void testd_stats(struct testd *d, struct rt_inject_server_stats *st)
{
	pthread_mutex_lock(&d->lock);
	rt_inject_server__stats(d->s, st);
	pthread_mutex_unlock(&d->lock);
}

int testd_conn(struct testd *d, struct rt_inject_conn_info *ci)
{
	int n;

	pthread_mutex_lock(&d->lock);
	n = rt_inject_server__conns(d->s, ci, 1);
	pthread_mutex_unlock(&d->lock);
	return n;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int testd_wait(struct testd *d, int (*pred)(struct testd *d, void *arg), void *arg, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;
	int ok;

	for (;;) {
		pthread_mutex_lock(&d->lock);
		ok = pred(d, arg);
		pthread_mutex_unlock(&d->lock);
		if (ok)
			return 0;
		if (now_ms() > end)
			return -ETIMEDOUT;
		usleep(5000);
	}
}

static void child_loop(const char *path, int out)
{
	struct rt_inject_server_opts o = { .path = path, .first_source_id = 300 };
	struct rt_inject_conn_info ci[8];
	struct testd *d = calloc(1, sizeof(*d));
	__u32 reported[64];
	struct pollfd p;
	char line[64];
	int i, j, n, len, nrep = 0;

	if (!d)
		_exit(2);
	d->allow = TESTD_ALLOW_ANY;
	o.allow_pid = allow;
	o.ctx = d;
	d->s = rt_inject_server__new(&o);
	if (!d->s)
		_exit(3);
	p.fd = rt_inject_server__epoll_fd(d->s);
	p.events = POLLIN;
	for (;;) {
		poll(&p, 1, 10);
		rt_inject_server__on_readable(d->s);
		d->n = 0;
		rt_inject_server__consume(d->s, keep, d);
		n = rt_inject_server__conns(d->s, ci, 8);
		for (i = 0; i < n && i < 8; i++) {
			for (j = 0; j < nrep && reported[j] != ci[i].source_id; j++)
				;
			if (ci[i].state != RT_INJECT_CONN_ACTIVE || j < nrep || nrep == 64)
				continue;
			reported[nrep++] = ci[i].source_id;
			len = snprintf(line, sizeof(line), "A %u %llu\n", ci[i].pid,
				       (unsigned long long)ci[i].lost_unconnected);
			if (write(out, line, len) < 0)
				_exit(4);
		}
	}
}

int testd_fork(const char *path, int *report_fd)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(fds[0]);
		signal(SIGPIPE, SIG_IGN);
		child_loop(path, fds[1]);
		_exit(0);
	}
	close(fds[1]);
	*report_fd = fds[0];
	return pid;
}
