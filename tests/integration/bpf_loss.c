// SPDX-License-Identifier: BSD-2-Clause
/*
 * Ring behaviour. A deliberately tiny ring and a flood of socket writes
 * that nobody drains: reservations fail, the per-CPU counters count them,
 * and consume() turns the counts into RT_EV_LOSS records that add up to what
 * stats report. And batched wakeups: a few records do not wake the reader,
 * crossing 1/8 of the ring does.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf_test_util.h"

#define WRITES 1000

static void *drain(void *arg)
{
	char b[4096];
	int fd = *(int *)arg;

	while (read(fd, b, sizeof(b)) > 0)
		;
	return NULL;
}

static int flood(struct rt_test_child *ch, void *arg)
{
	pthread_t th;
	char b[64];
	int sv[2], i;

	(void)ch;
	(void)arg;
	memset(b, 'x', sizeof(b));
	/* AF_UNIX charges each write's skb truesize to the sender: someone has to read */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pthread_create(&th, NULL, drain, &sv[1]))
		return 10;
	for (i = 0; i < WRITES; i++)
		if (write(sv[0], b, sizeof(b)) != sizeof(b))
			return 11;
	close(sv[0]);
	return pthread_join(th, NULL) ? 12 : 0;
}

static void test_loss(void **state)
{
	struct rt_bpf_source_opts opts = { .source_id = 3, .ring_bytes = 4096 };
	struct rt_bpf_source *s = rt_test_source(&opts);
	__u64 loss_sum[RT_EV__MAX] = { 0 }, t0, total = 0;
	struct rt_test_child ch;
	struct rt_bpf_stats st;
	struct rt_collect c;
	size_t i, sends = 0;
	int k;

	(void)state;
	rt_collect_init(&c, 1 << 20);
	assert_int_equal(rt_test_child_start(&ch, flood, NULL), 0);
	assert_int_equal(rt_bpf_source__add_pid(s, ch.pid, 1), 0);
	t0 = rt_test_now_ns();
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(rt_test_child_wait(&ch), 0);

	assert_true(rt_collect_drain(s, &c) >= 0);
	assert_true(rt_collect_drain(s, &c) >= 0);
	assert_int_equal(rt_bpf_source__stats(s, &st), 0);
	assert_int_equal(st.ring_bytes, 4096);
	assert_true(st.lost_total > 0);
	assert_true(st.lost[RT_EV_SOCK_SEND] > 0);
	for (k = 0; k < (int)st.n_cpus && k < RT_BPF_STATS_CPUS; k++)
		total += st.lost_per_cpu[k];
	assert_int_equal(total, st.lost_total);

	for (i = 0; i < c.n; i++) {
		const struct rt_ev_loss *l = (const void *)c.recs[i];

		if (l->hdr.kind == RT_EV_SOCK_SEND)
			sends++;
		if (l->hdr.kind != RT_EV_LOSS)
			continue;
		assert_int_equal(l->reason, RT_LOSS_RING_FULL);
		assert_int_equal(l->hdr.pid, 0);
		assert_int_equal(l->hdr.source, 3);
		assert_true(l->lost_kind < RT_EV__MAX);
		assert_true(l->since_ns <= t0);
		assert_true(l->hdr.ts_ns > t0);
		loss_sum[l->lost_kind] += l->count;
	}
	/* every lost record is accounted for, kind by kind */
	for (k = 0; k < RT_EV__MAX; k++)
		assert_int_equal(loss_sum[k], st.lost[k]);
	assert_int_equal(sends + st.lost[RT_EV_SOCK_SEND], WRITES);
	assert_true(st.ring_avail_max > 4096 / 2);
	assert_int_equal(c.wm_violations, 0);
	rt_collect_free(&c);
	rt_bpf_source__free(s);
}

static int two_steps(struct rt_test_child *ch, void *arg)
{
	char b[1024];
	int sv[2], i;

	(void)arg;
	memset(b, 'y', sizeof(b));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || write(sv[0], b, 64) != 64)
		return 10;
	if (rt_test_child_step(ch))
		return 11;
	/* 16 KiB of payload records: well past 1/8 of a 64 KiB ring */
	for (i = 0; i < 16; i++)
		if (write(sv[0], b, sizeof(b)) != sizeof(b))
			return 12;
	return 0;
}

static void test_wakeup(void **state)
{
	struct rt_bpf_source_opts opts = { .source_id = 4, .ring_bytes = 64 * 1024 };
	struct rt_bpf_source *s = rt_test_source(&opts);
	struct pollfd p = { .fd = rt_bpf_source__epoll_fd(s), .events = POLLIN };
	const struct rt_event_hdr *hs[4];
	struct rt_test_child ch;
	struct rt_collect c;

	(void)state;
	rt_collect_init(&c, 1 << 16);
	assert_true(rt_collect_drain(s, &c) >= 0);
	assert_int_equal(rt_test_child_start(&ch, two_steps, NULL), 0);
	assert_int_equal(rt_bpf_source__add_pid(s, ch.pid, 1), 0);
	assert_int_equal(rt_test_child_go(&ch), 0);
	usleep(50000);
	/* a few records sit in the ring without waking anyone */
	assert_int_equal(poll(&p, 1, 200), 0);
	assert_true(rt_collect_drain(s, &c) > 0);
	assert_int_equal(rt_collect_find(&c, RT_EV_SOCK_SEND, ch.pid, hs, 4), 1);

	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(poll(&p, 1, 2000), 1);
	assert_int_equal(rt_test_child_wait(&ch), 0);
	assert_true(rt_collect_drain(s, &c) > 0);
	assert_true(rt_collect_find(&c, RT_EV_SOCK_SEND, ch.pid, hs, 4) > 1);
	rt_collect_free(&c);
	rt_bpf_source__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loss),
		cmocka_unit_test(test_wakeup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
