// SPDX-License-Identifier: BSD-2-Clause
#include "bpf_test_util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__u64 rt_test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct rt_bpf_source *rt_test_source(const struct rt_bpf_source_opts *opts)
{
	const char *ci = getenv("CI");
	bool in_ci = ci && strcmp(ci, "true") == 0;
	struct rt_bpf_source *s;
	int err;

	if (geteuid() != 0 && !in_ci) {
		fprintf(stderr, "SKIP: BPF tests need root\n");
		exit(RT_TEST_SKIP);
	}
	s = rt_bpf_source__new(opts);
	if (s)
		return s;
	err = errno;
	fprintf(stderr, "BPF source failed: %s\n", strerror(err));
	/* only missing privilege or kernel support may skip, and never in CI */
	if (!in_ci && (err == EPERM || err == EACCES || err == EOPNOTSUPP))
		exit(RT_TEST_SKIP);
	exit(1);
}

void rt_collect_init(struct rt_collect *c, size_t max)
{
	memset(c, 0, sizeof(*c));
	c->max = max;
}

void rt_collect_free(struct rt_collect *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->recs[i]);
	free(c->recs);
	memset(c, 0, sizeof(*c));
}

static int collect_one(const struct rt_event_hdr *ev, void *ctx)
{
	struct rt_collect *c = ctx;
	struct rt_event_hdr *copy;

	if (ev->ts_ns < c->wm_before) {
		if (!c->wm_violations)
			c->first_wm_violation_ts = ev->ts_ns;
		c->wm_violations++;
	}
	if (c->n >= c->max) {
		c->dropped++;
		return 0;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		void *p = realloc(c->recs, cap * sizeof(*c->recs));

		if (!p)
			return -ENOMEM;
		c->recs = p;
		c->cap = cap;
	}
	copy = malloc(ev->size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, ev, ev->size);
	c->recs[c->n++] = copy;
	return 0;
}

int rt_collect_drain(struct rt_bpf_source *s, struct rt_collect *c)
{
	int n;

	c->wm_before = rt_bpf_source__watermark(s);
	n = rt_bpf_source__consume(s, collect_one, c);
	return n;
}

bool rt_collect_until(struct rt_bpf_source *s, struct rt_collect *c,
		      bool (*pred)(const struct rt_collect *c, const void *arg), const void *arg,
		      int timeout_ms)
{
	__u64 end = rt_test_now_ns() + (__u64)timeout_ms * 1000000ULL;
	struct pollfd pfd = { .fd = rt_bpf_source__epoll_fd(s), .events = POLLIN };

	for (;;) {
		if (rt_collect_drain(s, c) < 0)
			return false;
		if (pred(c, arg))
			return true;
		if (rt_test_now_ns() > end)
			return false;
		/* wakeups are batched: poll doubles as the drain timer */
		poll(&pfd, 1, 20);
	}
}

size_t rt_collect_find(const struct rt_collect *c, unsigned int kind, __u32 pid,
		       const struct rt_event_hdr **out, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < c->n; i++) {
		if (c->recs[i]->kind != kind || (pid && c->recs[i]->pid != pid))
			continue;
		if (k < n)
			out[k] = c->recs[i];
		k++;
	}
	return k;
}

int rt_test_child_start(struct rt_test_child *ch, int (*fn)(struct rt_test_child *, void *),
			void *arg)
{
	int go[2], out[2];
	char b;

	if (pipe(go) || pipe(out))
		return -errno;
	ch->pid = fork();
	if (ch->pid < 0)
		return -errno;
	if (ch->pid == 0) {
		close(go[1]);
		close(out[0]);
		ch->child_out_fd = out[1];
		ch->child_go_fd = go[0];
		if (read(go[0], &b, 1) != 1)
			_exit(120);
		/* _exit: no atexit handlers or leak checks of the parent's state in the child */
		_exit(fn(ch, arg));
	}
	close(go[0]);
	close(out[1]);
	ch->go_fd = go[1];
	ch->out_fd = out[0];
	ch->child_out_fd = -1;
	ch->child_go_fd = -1;
	return 0;
}

int rt_test_child_step(struct rt_test_child *ch)
{
	char b;

	return read(ch->child_go_fd, &b, 1) == 1 ? 0 : -1;
}

int rt_test_child_go(struct rt_test_child *ch)
{
	char b = 'g';

	return write(ch->go_fd, &b, 1) == 1 ? 0 : -errno;
}

int rt_test_child_wait(struct rt_test_child *ch)
{
	int status;

	close(ch->go_fd);
	if (waitpid(ch->pid, &status, 0) != ch->pid)
		return -1;
	close(ch->out_fd);
	return status;
}
