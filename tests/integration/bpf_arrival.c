// SPDX-License-Identifier: BSD-2-Clause
/*
 * SOCK_ARRIVAL records (docs/events.md, "Arrival") against a real traced
 * server: a forked child accepts and reads over loopback TCP while the
 * untraced parent is the client. The parent sends each request, waits until
 * the server's kernel has acknowledged every byte (SIOCOUTQ 0: the segment
 * went through tcp_probe and sits in the server's receive queue), and only
 * then lets the server go on; the server sleeps SLEEP_MS before it accepts
 * or reads. So every bound below is an ordering of two clock readings of the
 * same host, never a guess at how fast the machine is:
 *   client's send <= data_ns <= the ack seen by the client
 *   the read's exit - data_ns >= SLEEP_MS
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf_test_util.h"

#define SLEEP_MS 50
#define SLEEP_NS (SLEEP_MS * 1000000ULL)
#define REQ 100
#define RESP 50
#define PART 10 /* the first of two reads of one request */

static struct rt_bpf_source *src;
static int lfd; /* the listener the child serves */
static struct sockaddr_in laddr;

struct server_result {
	pid_t tid;
	int cfd[2];
	int err; /* 0, or the step that failed */
};

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * A loopback listener on a port no earlier test used: ports stay watched
 * for the source's lifetime, and bind(0) may hand out a closed one again.
 */
static int listener(void)
{
	static __u16 used[8];
	static int n_used;
	int held[8], n_held = 0, fd = -1, i;

	while (n_held < 8) {
		socklen_t sl = sizeof(laddr);

		fd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&laddr, 0, sizeof(laddr));
		laddr.sin_family = AF_INET;
		laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || bind(fd, (struct sockaddr *)&laddr, sizeof(laddr)) || listen(fd, 8) ||
		    getsockname(fd, (struct sockaddr *)&laddr, &sl))
			return -1;
		for (i = 0; i < n_used && used[i] != ntohs(laddr.sin_port); i++)
			;
		if (i == n_used)
			break;
		held[n_held++] = fd; /* keep it bound so that the next try gets another port */
		fd = -1;
	}
	for (i = 0; i < n_held; i++)
		close(held[i]);
	if (fd >= 0 && n_used < 8)
		used[n_used++] = ntohs(laddr.sin_port);
	return fd;
}

static int read_full(int fd, void *b, size_t n)
{
	char *p = b;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r <= 0)
			return -1;
		p += r;
		n -= r;
	}
	return 0;
}

static int client_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&laddr, sizeof(laddr)), 0);
	return fd;
}

/*
 * Sends n bytes at once and returns when the peer's kernel acknowledged them
 * all; *sent is the time before the write, the return value the time after
 * the ack.
 */
static __u64 send_acked(int fd, size_t n, __u64 *sent)
{
	char buf[REQ];
	int unacked = 1, i;

	assert_true(n <= sizeof(buf));
	memset(buf, 'q', n);
	*sent = rt_test_now_ns();
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	for (i = 0; i < 50000; i++) {
		assert_int_equal(ioctl(fd, SIOCOUTQ, &unacked), 0);
		if (!unacked)
			break;
		usleep(100);
	}
	assert_int_equal(unacked, 0);
	return rt_test_now_ns();
}

static bool exited(const struct rt_collect *c, const void *arg)
{
	pid_t pid = *(const pid_t *)arg;
	size_t i;

	for (i = 0; i < c->n; i++) {
		const struct rt_ev_proc_exit *e = (const void *)c->recs[i];

		if (e->hdr.kind == RT_EV_PROC_EXIT && e->group_dead && e->hdr.pid == (__u32)pid)
			return true;
	}
	return false;
}

/* Runs the child to its end and collects its records. */
static void finish(struct rt_test_child *ch, struct server_result *r, struct rt_collect *c)
{
	int status;

	assert_int_equal(read(ch->out_fd, r, sizeof(*r)), sizeof(*r));
	status = rt_test_child_wait(ch);
	assert_true(WIFEXITED(status));
	assert_int_equal(r->err, 0);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(rt_collect_until(src, c, exited, &ch->pid, 5000));
}

/* The reads that returned bytes on fd, in order (at most n). */
static size_t reads_of(const struct rt_collect *c, pid_t pid, int fd,
		       const struct rt_ev_sock_io **out, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < c->n; i++) {
		const struct rt_ev_sock_io *e = (const void *)c->recs[i];

		if (e->hdr.kind != RT_EV_SOCK_RECV || e->hdr.pid != (__u32)pid || e->fd != fd ||
		    e->ret <= 0)
			continue;
		assert_true(k < n);
		out[k++] = e;
	}
	return k;
}

/*
 * The ARRIVAL record of a read: delivered before it, same thread, fd and
 * ts_ns; exactly one, or NULL.
 */
static const struct rt_ev_sock_arrival *arrival_of(const struct rt_collect *c,
						   const struct rt_ev_sock_io *rd)
{
	const struct rt_ev_sock_arrival *found = NULL;
	size_t i;

	for (i = 0; i < c->n && c->recs[i] != &rd->hdr; i++) {
		const struct rt_ev_sock_arrival *e = (const void *)c->recs[i];

		if (e->hdr.kind != RT_EV_SOCK_ARRIVAL || e->hdr.tid != rd->hdr.tid ||
		    e->fd != rd->fd || e->hdr.ts_ns != rd->hdr.ts_ns)
			continue;
		assert_null(found);
		assert_int_equal(e->hdr.size, sizeof(*e));
		assert_int_equal(e->hdr.pid, rd->hdr.pid);
		found = e;
	}
	assert_true(i < c->n); /* rd is one of c's records */
	return found;
}

static size_t count_kind(const struct rt_collect *c, unsigned int kind, pid_t pid)
{
	const struct rt_event_hdr *hs[1];

	return rt_collect_find(c, kind, pid, hs, 0);
}

static void check_stats(void)
{
	struct rt_bpf_stats st;

	assert_int_equal(rt_bpf_source__stats(src, &st), 0);
	assert_int_equal(st.arrival_on, 1);
	assert_int_equal(st.arrivals_full, 0);
	assert_int_equal(st.lost_total, 0);
	assert_int_equal(st.invalid, 0);
}

/* ---- a watched port: accept queue, keep-alive, a request read in two parts ---- */

static int serve_watched(struct rt_test_child *ch, void *arg)
{
	struct server_result r = { .tid = gettid(), .cfd = { -1, -1 } };
	char buf[4096], resp[RESP];
	int fd;

	(void)arg;
	memset(resp, 'r', sizeof(resp));
	/* released once request 1 sits in the accept-queued socket */
	sleep_ms(SLEEP_MS);
	fd = accept(lfd, NULL, NULL);
	r.cfd[0] = fd;
	if (fd < 0 || read(fd, buf, sizeof(buf)) != REQ || write(fd, resp, RESP) != RESP) {
		r.err = 1;
		goto out;
	}
	/* keep-alive: request 2 is queued while we wait and sleep */
	if (rt_test_child_step(ch)) {
		r.err = 2;
		goto out;
	}
	sleep_ms(SLEEP_MS);
	if (read(fd, buf, sizeof(buf)) != REQ || write(fd, resp, RESP) != RESP) {
		r.err = 3;
		goto out;
	}
	/* request 3 in two reads: the second finds bytes the first left */
	if (rt_test_child_step(ch)) {
		r.err = 4;
		goto out;
	}
	if (read(fd, buf, PART) != PART || read(fd, buf, sizeof(buf)) != REQ - PART ||
	    write(fd, resp, RESP) != RESP) {
		r.err = 5;
		goto out;
	}
	if (read(fd, buf, sizeof(buf)) != 0 || close(fd))
		r.err = 6;
out:
	return write(ch->child_out_fd, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
}

static void test_watched(void **state)
{
	const struct rt_ev_sock_arrival *a[4];
	const struct rt_ev_sock_io *rd[8];
	const struct rt_event_hdr *hs[4];
	const struct rt_ev_sock_conn *acc;
	struct server_result r;
	struct rt_test_child ch;
	struct rt_collect c;
	__u64 t_connect, sent[3], acked[3];
	char buf[RESP];
	size_t i, n;
	int fd;

	(void)state;
	rt_collect_init(&c, 1 << 20);
	lfd = listener();
	assert_true(lfd >= 0);
	assert_int_equal(rt_bpf_source__watch_port(src, ntohs(laddr.sin_port)), 0);
	assert_int_equal(rt_bpf_source__watch_port(src, ntohs(laddr.sin_port)), 0);
	assert_int_equal(rt_test_child_start(&ch, serve_watched, NULL), 0);
	close(lfd);
	assert_int_equal(rt_bpf_source__add_pid(src, ch.pid, 1), 0);

	t_connect = rt_test_now_ns();
	fd = client_connect();
	acked[0] = send_acked(fd, REQ, &sent[0]);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(read_full(fd, buf, RESP), 0);
	acked[1] = send_acked(fd, REQ, &sent[1]);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(read_full(fd, buf, RESP), 0);
	acked[2] = send_acked(fd, REQ, &sent[2]);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(read_full(fd, buf, RESP), 0);
	close(fd);
	finish(&ch, &r, &c);

	assert_int_equal(rt_collect_find(&c, RT_EV_SOCK_ACCEPT, ch.pid, hs, 4), 1);
	acc = (const void *)hs[0];
	n = reads_of(&c, ch.pid, r.cfd[0], rd, 8);
	assert_int_equal(n, 4);
	for (i = 0; i < n; i++) {
		a[i] = arrival_of(&c, rd[i]);
		assert_non_null(a[i]);
		assert_int_equal(a[i]->hdr.tid, r.tid);
	}
	/* no ARRIVAL for a read that returned nothing (the FIN) */
	assert_int_equal(count_kind(&c, RT_EV_SOCK_ARRIVAL, ch.pid), 4);

	/* request 1 waited in the accept queue, then in the socket */
	assert_true(a[0]->established_ns >= t_connect);
	assert_true(a[0]->established_ns <= a[0]->data_ns);
	assert_true(a[0]->data_ns >= sent[0]);
	assert_true(a[0]->data_ns <= acked[0]);
	assert_true(a[0]->data_ns <= acc->enter_ns);
	assert_true(acc->hdr.ts_ns - a[0]->established_ns >= SLEEP_NS);
	assert_true(rd[0]->hdr.ts_ns - a[0]->data_ns >= SLEEP_NS);
	assert_int_equal(a[0]->flags, 0);

	/* request 2, keep-alive: after response 1, long before its read */
	assert_int_equal(a[1]->established_ns, a[0]->established_ns);
	assert_true(a[1]->data_ns >= sent[1]);
	assert_true(a[1]->data_ns > rd[0]->hdr.ts_ns);
	assert_true(a[1]->data_ns <= acked[1]);
	assert_true(rd[1]->hdr.ts_ns - a[1]->data_ns >= SLEEP_NS);
	assert_int_equal(a[1]->flags, 0);

	/* request 3: the first read left bytes, the second says so */
	assert_int_equal(rd[2]->ret, PART);
	assert_int_equal(rd[3]->ret, REQ - PART);
	assert_true(a[2]->data_ns >= sent[2] && a[2]->data_ns <= acked[2]);
	assert_int_equal(a[2]->flags, 0);
	assert_true(a[3]->data_ns >= a[2]->data_ns && a[3]->data_ns <= acked[2]);
	assert_int_equal(a[3]->flags, RT_ARR_LEFT_UNREAD);
	assert_int_equal(a[3]->established_ns, a[0]->established_ns);

	assert_int_equal(c.wm_violations, 0);
	check_stats();
	rt_collect_free(&c);
}

/* ---- an unwatched port: learnt from the first accept ---- */

static int serve_learn(struct rt_test_child *ch, void *arg)
{
	struct server_result r = { .tid = gettid(), .cfd = { -1, -1 } };
	char buf[4096], resp[RESP];

	(void)arg;
	memset(resp, 'r', sizeof(resp));
	r.cfd[0] = accept(lfd, NULL, NULL);
	if (r.cfd[0] < 0 || read(r.cfd[0], buf, sizeof(buf)) != REQ ||
	    write(r.cfd[0], resp, RESP) != RESP) {
		r.err = 1;
		goto out;
	}
	/* connection B and A's second request arrive while we wait */
	if (rt_test_child_step(ch)) {
		r.err = 2;
		goto out;
	}
	r.cfd[1] = accept(lfd, NULL, NULL);
	if (r.cfd[1] < 0 || read(r.cfd[1], buf, sizeof(buf)) != REQ ||
	    read(r.cfd[0], buf, sizeof(buf)) != REQ || write(r.cfd[1], resp, RESP) != RESP ||
	    write(r.cfd[0], resp, RESP) != RESP) {
		r.err = 3;
		goto out;
	}
	if (read(r.cfd[0], buf, sizeof(buf)) != 0 || read(r.cfd[1], buf, sizeof(buf)) != 0 ||
	    close(r.cfd[0]) || close(r.cfd[1]))
		r.err = 4;
out:
	return write(ch->child_out_fd, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
}

static void test_learnt(void **state)
{
	const struct rt_ev_sock_arrival *a;
	const struct rt_ev_sock_io *rd[4];
	struct server_result r;
	struct rt_test_child ch;
	struct rt_collect c;
	__u64 t_connect_b, sent_a2, acked_a2, sent_b, acked_b, t0;
	char buf[RESP];
	int fa, fb;

	(void)state;
	rt_collect_init(&c, 1 << 20);
	lfd = listener();
	assert_true(lfd >= 0);
	assert_int_equal(rt_test_child_start(&ch, serve_learn, NULL), 0);
	close(lfd);
	assert_int_equal(rt_bpf_source__add_pid(src, ch.pid, 1), 0);

	/* A: established and request sent before anyone watched the port */
	fa = client_connect();
	send_acked(fa, REQ, &t0);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(read_full(fa, buf, RESP), 0);
	/* the child's accept taught the kernel side the port: B is followed from its handshake */
	t_connect_b = rt_test_now_ns();
	fb = client_connect();
	acked_b = send_acked(fb, REQ, &sent_b);
	acked_a2 = send_acked(fa, REQ, &sent_a2);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(read_full(fb, buf, RESP), 0);
	assert_int_equal(read_full(fa, buf, RESP), 0);
	close(fa);
	close(fb);
	finish(&ch, &r, &c);

	/* A's first read: followed only from the accept on, its bytes came before */
	assert_int_equal(reads_of(&c, ch.pid, r.cfd[0], rd, 4), 2);
	a = arrival_of(&c, rd[0]);
	assert_non_null(a);
	assert_int_equal(a->established_ns, 0);
	assert_int_equal(a->data_ns, 0);
	assert_int_equal(a->flags, 0);
	/* A's second request was seen arriving */
	a = arrival_of(&c, rd[1]);
	assert_non_null(a);
	assert_int_equal(a->established_ns, 0);
	assert_true(a->data_ns >= sent_a2 && a->data_ns <= acked_a2);

	/* B: the whole story */
	assert_int_equal(reads_of(&c, ch.pid, r.cfd[1], rd, 4), 1);
	a = arrival_of(&c, rd[0]);
	assert_non_null(a);
	assert_true(a->established_ns >= t_connect_b && a->established_ns <= a->data_ns);
	assert_true(a->data_ns >= sent_b && a->data_ns <= acked_b);
	assert_int_equal(a->flags, 0);

	check_stats();
	rt_collect_free(&c);
}

/* ---- the traced process as a client: its connection is not an arrival ---- */

static int serve_client(struct rt_test_child *ch, void *arg)
{
	struct server_result r = { .tid = gettid(), .cfd = { -1, -1 } };
	char buf[4096];

	(void)arg;
	r.cfd[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (r.cfd[0] < 0 || connect(r.cfd[0], (struct sockaddr *)&laddr, sizeof(laddr)) ||
	    write(r.cfd[0], "hello", 5) != 5 || read_full(r.cfd[0], buf, RESP) ||
	    rt_test_child_step(ch) || read_full(r.cfd[0], buf, RESP) || close(r.cfd[0]))
		r.err = 1;
	return write(ch->child_out_fd, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
}

static void test_outbound(void **state)
{
	const struct rt_ev_sock_io *rd[4];
	struct server_result r;
	struct rt_test_child ch;
	struct rt_collect c;
	char buf[RESP];
	int fd;

	(void)state;
	rt_collect_init(&c, 1 << 20);
	lfd = listener();
	assert_true(lfd >= 0);
	assert_int_equal(rt_test_child_start(&ch, serve_client, NULL), 0);
	assert_int_equal(rt_bpf_source__add_pid(src, ch.pid, 1), 0);
	assert_int_equal(rt_test_child_go(&ch), 0);
	fd = accept(lfd, NULL, NULL); /* untraced: the port stays unwatched */
	assert_true(fd >= 0);
	close(lfd);
	assert_int_equal(read_full(fd, buf, 5), 0);
	memset(buf, 'r', sizeof(buf));
	assert_int_equal(write(fd, buf, RESP), RESP);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(write(fd, buf, RESP), RESP);
	finish(&ch, &r, &c);
	close(fd);

	assert_int_equal(reads_of(&c, ch.pid, r.cfd[0], rd, 4), 2);
	assert_int_equal(count_kind(&c, RT_EV_SOCK_CONNECT, ch.pid), 1);
	assert_int_equal(count_kind(&c, RT_EV_SOCK_ARRIVAL, ch.pid), 0);
	rt_collect_free(&c);
}

static void test_args(void **state)
{
	(void)state;
	assert_int_equal(rt_bpf_source__watch_port(NULL, 80), -EINVAL);
	assert_int_equal(rt_bpf_source__watch_port(src, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_watched),
		cmocka_unit_test(test_learnt),
		cmocka_unit_test(test_outbound),
	};
	struct rt_bpf_source_opts opts = { .source_id = 4 };
	const char *ci = getenv("CI");
	struct rt_bpf_stats st;
	int rc;

	src = rt_test_source(&opts);
	if (rt_bpf_source__stats(src, &st) || !st.arrival_on) {
		/* the daemon runs on without them; this test has nothing to test then */
		fprintf(stderr, "arrival tracepoints not attached (see the log above)\n");
		rt_bpf_source__free(src);
		return ci && strcmp(ci, "true") == 0 ? 1 : RT_TEST_SKIP;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rt_bpf_source__free(src);
	return rc;
}
