// SPDX-License-Identifier: BSD-2-Clause
/*
 * The BPF source against a real traced process: a forked child serves a
 * scripted exchange over loopback TCP with every socket syscall we trace
 * (read, write, recvfrom, sendto, recvmsg and sendmsg across iovecs, readv,
 * writev past RT_IOV_MAX, a 100 KiB write for head/tail capture, shutdown,
 * close), starts a thread and an exec'd grandchild, and exits with status 3.
 * The parent is the untraced client. Every record is checked against what
 * was actually transferred.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf_test_util.h"

#define MSG1 200
#define REP1 300
#define MSG2 150
#define REP2 100
#define MSG3 1800 /* > head + tail: a gap in the middle */
#define REP3 2105
#define MSG4 80
#define REP4_IOVS 20 /* > RT_IOV_MAX */
#define REP4 (REP4_IOVS * 10)
#define REP5 (100 * 1024)

struct child_result {
	int cfd, lfd, devnull;
	pid_t main_tid, thread_tid, grandchild;
};

static struct rt_bpf_source *src;
static unsigned char msg1[MSG1], rep1[REP1], msg2[MSG2], rep2[REP2], msg3[MSG3], rep3[REP3],
	msg4[MSG4], rep4[REP4], rep5[REP5];
static int lfd;
static __u16 server_port;

/* bytes that differ at every offset and between buffers, so misplaced copies show */
static void fill(unsigned char *b, size_t n, unsigned int seed)
{
	__u32 x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = x >> 16;
	}
}

static void wait_avail(int fd, int n)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int avail = 0;

	while (poll(&p, 1, 5000) == 1 && ioctl(fd, FIONREAD, &avail) == 0 && avail < n)
		usleep(200);
}

static int write_full(int fd, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
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

static void *thread_fn(void *arg)
{
	struct timespec ts = { 0, 2000000 };

	*(pid_t *)arg = gettid();
	nanosleep(&ts, NULL);
	return NULL;
}

/* The traced server. Each step waits for the whole message so each is one syscall. */
static int server(struct rt_test_child *ch, void *arg)
{
	struct child_result res = { .lfd = lfd, .main_tid = gettid() };
	unsigned char buf[4096], big[2048];
	struct iovec iov[REP4_IOVS];
	struct msghdr mh = { 0 };
	pthread_t th;
	int i, cfd;

	(void)arg;
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return 10;
	res.cfd = cfd;
	res.devnull = open("/dev/null", O_WRONLY);

	wait_avail(cfd, MSG1);
	if (read(cfd, buf, sizeof(buf)) != MSG1 || write(cfd, rep1, REP1) != REP1)
		return 11;
	if (recvfrom(cfd, buf, MSG2, MSG_WAITALL, NULL, NULL) != MSG2 ||
	    sendto(cfd, rep2, REP2, 0, NULL, 0) != REP2)
		return 12;

	iov[0] = (struct iovec){ big, 10 };
	iov[1] = (struct iovec){ big + 10, 20 };
	iov[2] = (struct iovec){ big + 30, MSG3 - 30 }; /* MSG_WAITALL fills it all */
	mh.msg_iov = iov;
	mh.msg_iovlen = 3;
	if (recvmsg(cfd, &mh, MSG_WAITALL) != MSG3)
		return 13;
	iov[0] = (struct iovec){ rep3, 5 };
	iov[1] = (struct iovec){ rep3 + 5, 600 };
	iov[2] = (struct iovec){ rep3 + 605, 700 }; /* the tail starts here and ends in iov[3] */
	iov[3] = (struct iovec){ rep3 + 1305, 800 };
	mh.msg_iovlen = 4;
	if (sendmsg(cfd, &mh, 0) != REP3)
		return 14;

	wait_avail(cfd, MSG4);
	iov[0] = (struct iovec){ buf, 50 };
	iov[1] = (struct iovec){ buf + 50, 50 };
	if (readv(cfd, iov, 2) != MSG4)
		return 15;
	for (i = 0; i < REP4_IOVS; i++)
		iov[i] = (struct iovec){ rep4 + i * 10, 10 };
	if (writev(cfd, iov, REP4_IOVS) != REP4)
		return 16;
	if (write(cfd, rep5, REP5) != REP5)
		return 17;
	if (write(res.devnull, "not a socket\n", 13) != 13)
		return 18;
	if (shutdown(cfd, SHUT_WR) || read(cfd, buf, sizeof(buf)) != 0 || close(cfd))
		return 19;

	if (pthread_create(&th, NULL, thread_fn, &res.thread_tid) || pthread_join(th, NULL))
		return 20;
	res.grandchild = fork();
	if (res.grandchild == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (res.grandchild < 0 || waitpid(res.grandchild, NULL, 0) != res.grandchild)
		return 21;
	usleep(2000);
	if (write(ch->child_out_fd, &res, sizeof(res)) != sizeof(res))
		return 22;
	return 3;
}

struct exit_wait {
	pid_t a, b;
};

static bool both_exited(const struct rt_collect *c, const void *arg)
{
	const struct exit_wait *w = arg;
	bool a = false, b = false;
	size_t i;

	for (i = 0; i < c->n; i++) {
		const struct rt_ev_proc_exit *e = (const void *)c->recs[i];

		if (e->hdr.kind != RT_EV_PROC_EXIT || !e->group_dead)
			continue;
		a |= e->hdr.pid == (__u32)w->a;
		b |= e->hdr.pid == (__u32)w->b;
	}
	return a && b;
}

static void check_addrs(const struct rt_sock_addr *local, const struct rt_sock_addr *peer,
			__u16 client_port)
{
	const __u8 lo[4] = { 127, 0, 0, 1 };

	assert_int_equal(local->family, RT_AF_INET);
	assert_int_equal(peer->family, RT_AF_INET);
	assert_memory_equal(local->addr, lo, 4);
	assert_memory_equal(peer->addr, lo, 4);
	assert_int_equal(local->port, server_port);
	assert_int_equal(peer->port, client_port);
}

struct expect_io {
	__u16 kind, syscall;
	const unsigned char *data;
	size_t len;
	__u16 flags;
};

static void check_io(const struct rt_ev_sock_io *e, const struct expect_io *x,
		     const struct child_result *r, __u16 client_port)
{
	const size_t head = RT_SOCK_HEAD_DEFAULT, tail = RT_SOCK_TAIL_DEFAULT;

	assert_int_equal(e->hdr.kind, x->kind);
	assert_int_equal(e->syscall, x->syscall);
	assert_int_equal(e->ret, (__s64)x->len);
	assert_int_equal(e->fd, r->cfd);
	assert_int_equal(e->hdr.tid, r->main_tid);
	assert_true(e->enter_ns <= e->hdr.ts_ns);
	assert_int_equal(e->flags, x->flags);
	assert_int_equal(e->hdr.size, RT_EVENT_SIZE_ALIGN(sizeof(*e) + e->head_len + e->tail_len));
	check_addrs(&e->local, &e->peer, client_port);
	if (x->flags & RT_IO_IOV_TRUNC) {
		/* 16 iovecs of 10 bytes walked, the rest unknown */
		assert_int_equal(e->head_len, RT_IOV_MAX * 10);
		assert_int_equal(e->tail_len, 0);
		assert_memory_equal(e->data, x->data, e->head_len);
	} else if (x->len <= head + tail) {
		assert_int_equal(e->head_len, x->len);
		assert_int_equal(e->tail_len, 0);
		if (x->len)
			assert_memory_equal(e->data, x->data, x->len);
	} else {
		assert_int_equal(e->head_len, head);
		assert_int_equal(e->tail_len, tail);
		assert_memory_equal(e->data, x->data, head);
		assert_memory_equal(e->data + head, x->data + x->len - tail, tail);
	}
}

static bool is_traced(__u32 pid, const struct child_result *r, pid_t child)
{
	return pid == (__u32)child || pid == (__u32)r->grandchild;
}

static void check_sched(const struct rt_collect *c, const struct child_result *r, pid_t child,
			__u64 t0, __u64 t1)
{
	size_t i, thread_in = 0, thread_out = 0, thread_dead = 0, blocked = 0, woken = 0,
		  switches = 0, main_out = 0;
	char comm[16] = "";
	__u64 runtime = 0;

	/* the child is a fork of this process: its main thread has our name */
	assert_int_equal(prctl(PR_GET_NAME, comm), 0);
	for (i = 0; i < c->n; i++) {
		const struct rt_event_hdr *h = c->recs[i];

		if (h->kind == RT_EV_SCHED_SWITCH) {
			const struct rt_ev_sched_switch *e = (const void *)h;

			assert_true(is_traced(e->prev_pid, r, child) ||
				    is_traced(e->next_pid, r, child));
			assert_int_equal(h->pid, e->prev_pid);
			assert_int_equal(h->tid, e->prev_tid);
			assert_true(h->ts_ns >= t0 && h->ts_ns <= t1);
			assert_true(e->prev_state <= RT_TASK_DEAD);
			switches++;
			thread_in += e->next_tid == (__u32)r->thread_tid;
			thread_out += e->prev_tid == (__u32)r->thread_tid;
			thread_dead += e->prev_tid == (__u32)r->thread_tid &&
				       e->prev_state == RT_TASK_DEAD;
			blocked += e->prev_tid == (__u32)r->main_tid &&
				   e->prev_state == RT_TASK_BLOCKED;
			if (e->prev_tid == (__u32)r->main_tid) {
				/* the fields read from the task: its name, its CPU time so far */
				assert_string_equal(e->prev_comm, comm);
				assert_true(e->prev_runtime_ns > 0 &&
					    e->prev_runtime_ns >= runtime);
				runtime = e->prev_runtime_ns;
				main_out++;
			}
			if (e->next_tid == (__u32)r->main_tid) {
				assert_string_equal(e->next_comm, comm);
				assert_true(e->next_runtime_ns >= runtime);
			}
		} else if (h->kind == RT_EV_SCHED_WAKING) {
			const struct rt_ev_sched_waking *e = (const void *)h;

			assert_true(is_traced(e->target_pid, r, child));
			assert_true(h->ts_ns >= t0 && h->ts_ns <= t1);
			woken += e->target_tid == (__u32)r->main_tid;
		}
	}
	assert_true(switches > 0);
	assert_true(thread_in > 0);
	assert_true(thread_out > 0);
	assert_int_equal(thread_dead, 1); /* its last switch-out */
	assert_true(blocked > 0);
	assert_true(main_out > 0);
	assert_true(woken > 0);
}

static void check_tasks(const struct rt_collect *c, const struct child_result *r, pid_t child)
{
	const struct rt_event_hdr *hs[8];
	bool thread_new = false, proc_new = false, thread_exit = false, main_exit = false;
	size_t i, n;

	n = rt_collect_find(c, RT_EV_TASK_NEW, child, hs, 8);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		const struct rt_ev_task_new *e = (const void *)hs[i];

		assert_int_equal(e->hdr.tid, r->main_tid);
		if (e->child_tid == (__u32)r->thread_tid) {
			assert_int_equal(e->child_pid, child);
			assert_true(e->clone_flags & CLONE_THREAD);
			thread_new = true;
		} else {
			assert_int_equal(e->child_tid, r->grandchild);
			assert_int_equal(e->child_pid, r->grandchild);
			assert_false(e->clone_flags & CLONE_THREAD);
			proc_new = true;
		}
	}
	assert_true(thread_new && proc_new);

	n = rt_collect_find(c, RT_EV_PROC_EXEC, r->grandchild, hs, 8);
	assert_int_equal(n, 1);
	assert_string_equal(((const struct rt_ev_proc_exec *)hs[0])->comm, "true");
	assert_int_equal(((const struct rt_ev_proc_exec *)hs[0])->old_tid, r->grandchild);
	n = rt_collect_find(c, RT_EV_PROC_EXIT, r->grandchild, hs, 8);
	assert_int_equal(n, 1);
	assert_int_equal(((const struct rt_ev_proc_exit *)hs[0])->group_dead, 1);
	assert_int_equal(((const struct rt_ev_proc_exit *)hs[0])->exit_code, 0);

	n = rt_collect_find(c, RT_EV_PROC_EXIT, child, hs, 8);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		const struct rt_ev_proc_exit *e = (const void *)hs[i];

		if (e->hdr.tid == (__u32)r->thread_tid) {
			assert_int_equal(e->group_dead, 0);
			thread_exit = true;
		} else {
			assert_int_equal(e->hdr.tid, r->main_tid);
			assert_int_equal(e->group_dead, 1);
			assert_int_equal(e->exit_code, 3 << 8); /* wait(2) status */
			main_exit = true;
		}
	}
	assert_true(thread_exit && main_exit);
}

static void test_socket_and_sched(void **state)
{
	const struct expect_io ios[] = {
		{ RT_EV_SOCK_RECV, RT_SYS_READ, msg1, MSG1, 0 },
		{ RT_EV_SOCK_SEND, RT_SYS_WRITE, rep1, REP1, 0 },
		{ RT_EV_SOCK_RECV, RT_SYS_RECVFROM, msg2, MSG2, 0 },
		{ RT_EV_SOCK_SEND, RT_SYS_SENDTO, rep2, REP2, 0 },
		{ RT_EV_SOCK_RECV, RT_SYS_RECVMSG, msg3, MSG3, 0 },
		{ RT_EV_SOCK_SEND, RT_SYS_SENDMSG, rep3, REP3, 0 },
		{ RT_EV_SOCK_RECV, RT_SYS_READV, msg4, MSG4, 0 },
		{ RT_EV_SOCK_SEND, RT_SYS_WRITEV, rep4, REP4, RT_IO_IOV_TRUNC },
		{ RT_EV_SOCK_SEND, RT_SYS_WRITE, rep5, REP5, 0 },
		{ RT_EV_SOCK_RECV, RT_SYS_READ, NULL, 0, 0 }, /* the client's FIN */
	};
	const size_t n_ios = sizeof(ios) / sizeof(ios[0]);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct child_result r = { 0 };
	struct rt_test_child ch;
	struct rt_collect c;
	struct exit_wait w;
	struct rt_bpf_stats st;
	unsigned char buf[4096];
	const struct rt_event_hdr *hs[64];
	__u16 client_port;
	size_t i, k, n;
	__u64 t0, t1;
	int cfd, status;

	(void)state;
	rt_collect_init(&c, 1 << 20);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	server_port = ntohs(sa.sin_port);

	assert_int_equal(rt_test_child_start(&ch, server, NULL), 0);
	close(lfd);
	t0 = rt_test_now_ns();
	assert_int_equal(rt_bpf_source__add_pid(src, ch.pid, 7), 0);
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	sl = sizeof(sa);
	assert_int_equal(getsockname(cfd, (struct sockaddr *)&sa, &sl), 0);
	client_port = ntohs(sa.sin_port);
	assert_int_equal(rt_test_child_go(&ch), 0);

	/* the untraced client side: same syscalls, must not show up */
	assert_int_equal(write_full(cfd, msg1, MSG1), 0);
	assert_int_equal(read_full(cfd, buf, REP1), 0);
	assert_memory_equal(buf, rep1, REP1);
	assert_int_equal(write_full(cfd, msg2, MSG2), 0);
	assert_int_equal(read_full(cfd, buf, REP2), 0);
	assert_int_equal(write_full(cfd, msg3, MSG3), 0);
	assert_int_equal(read_full(cfd, buf, REP3), 0);
	assert_memory_equal(buf, rep3, REP3);
	assert_int_equal(write_full(cfd, msg4, MSG4), 0);
	assert_int_equal(read_full(cfd, buf, REP4), 0);
	for (k = 0; k < REP5; k += n) {
		ssize_t got = read(cfd, buf, sizeof(buf) < REP5 - k ? sizeof(buf) : REP5 - k);

		assert_true(got > 0);
		assert_memory_equal(buf, rep5 + k, got);
		n = got;
	}
	assert_int_equal(read(cfd, buf, sizeof(buf)), 0);
	close(cfd);

	assert_int_equal(read(ch.out_fd, &r, sizeof(r)), sizeof(r));
	status = rt_test_child_wait(&ch);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	w.a = ch.pid;
	w.b = r.grandchild;
	assert_true(rt_collect_until(src, &c, both_exited, &w, 5000));
	t1 = rt_test_now_ns();

	/* ACCEPT */
	n = rt_collect_find(&c, RT_EV_SOCK_ACCEPT, ch.pid, hs, 64);
	assert_int_equal(n, 1);
	{
		const struct rt_ev_sock_conn *e = (const void *)hs[0];

		assert_int_equal(e->fd, r.cfd);
		assert_int_equal(e->ret, r.cfd);
		assert_int_equal(e->listen_fd, r.lfd);
		assert_true(e->enter_ns <= e->hdr.ts_ns);
		check_addrs(&e->local, &e->peer, client_port);
	}

	/* RECV and SEND, in order: one thread, so delivery order is time order */
	k = 0;
	for (i = 0; i < c.n; i++) {
		const struct rt_ev_sock_io *e = (const void *)c.recs[i];

		if (e->hdr.kind != RT_EV_SOCK_RECV && e->hdr.kind != RT_EV_SOCK_SEND)
			continue;
		assert_int_equal(e->hdr.pid, ch.pid); /* never the untraced client */
		assert_int_not_equal(e->fd, r.devnull);
		assert_true(k < n_ios);
		check_io(e, &ios[k], &r, client_port);
		k++;
	}
	assert_int_equal(k, n_ios);

	n = rt_collect_find(&c, RT_EV_SOCK_SHUTDOWN, ch.pid, hs, 64);
	assert_int_equal(n, 1);
	assert_int_equal(((const struct rt_ev_sock_close *)hs[0])->how, SHUT_WR);
	assert_int_equal(((const struct rt_ev_sock_close *)hs[0])->fd, r.cfd);
	assert_int_equal(((const struct rt_ev_sock_close *)hs[0])->ret, 0);
	n = rt_collect_find(&c, RT_EV_SOCK_CLOSE, ch.pid, hs, 64);
	assert_int_equal(n, 1);
	assert_int_equal(((const struct rt_ev_sock_close *)hs[0])->fd, r.cfd);
	assert_int_equal(((const struct rt_ev_sock_close *)hs[0])->ret, 0);
	assert_int_equal(rt_collect_find(&c, RT_EV_SOCK_CONNECT, 0, hs, 64), 0);

	/* nothing from the untraced parent except scheduler records naming the child */
	for (i = 0; i < c.n; i++) {
		const struct rt_event_hdr *h = c.recs[i];

		if (h->kind != RT_EV_SCHED_SWITCH && h->kind != RT_EV_SCHED_WAKING)
			assert_true(is_traced(h->pid, &r, ch.pid));
		assert_int_equal(h->source, 5);
	}
	check_sched(&c, &r, ch.pid, t0, t1);
	check_tasks(&c, &r, ch.pid);

	/* the kernel side dropped both processes from the traced set at exit */
	assert_int_equal(rt_bpf_source__remove_pid(src, ch.pid), -ENOENT);
	assert_int_equal(rt_bpf_source__remove_pid(src, r.grandchild), -ENOENT);

	assert_int_equal(c.wm_violations, 0);
	assert_int_equal(c.dropped, 0);
	assert_int_equal(rt_bpf_source__stats(src, &st), 0);
	assert_int_equal(st.lost_total, 0);
	assert_int_equal(st.invalid, 0);
	assert_true(st.events[RT_EV_SCHED_SWITCH] > 0);
	assert_true(st.ring_avail_max > 0 && st.ring_avail_max <= st.ring_bytes);
	/* a complete drain moves the watermark to its start minus the margin */
	t1 = rt_test_now_ns();
	assert_true(rt_collect_drain(src, &c) >= 0);
	assert_true(rt_bpf_source__watermark(src) >= t1 - RT_BPF_WATERMARK_MARGIN_NS);
	assert_true(rt_bpf_source__watermark(src) <= t1);
	rt_collect_free(&c);
}

/* remove_pid stops tracing at once; add_pid validates. */
static void test_targets(void **state)
{
	const struct rt_event_hdr *hs[4];
	struct rt_collect c;
	int sv[2];
	char b = 0;

	(void)state;
	assert_int_equal(rt_bpf_source__add_pid(src, 0, 1), -EINVAL);
	assert_int_equal(rt_bpf_source__remove_pid(src, getpid()), -ENOENT);
	rt_collect_init(&c, 1 << 16);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);

	assert_int_equal(rt_bpf_source__add_pid(src, getpid(), 9), 0);
	assert_int_equal(write(sv[0], &b, 1), 1);
	assert_int_equal(rt_bpf_source__remove_pid(src, getpid()), 0);
	assert_int_equal(write(sv[0], &b, 1), 1);
	assert_true(rt_collect_drain(src, &c) >= 0);
	usleep(20000);
	assert_true(rt_collect_drain(src, &c) >= 0);

	/* exactly the first write, an AF_UNIX stream socket: family only */
	assert_int_equal(rt_collect_find(&c, RT_EV_SOCK_SEND, getpid(), hs, 4), 1);
	assert_int_equal(((const struct rt_ev_sock_io *)hs[0])->local.family, RT_AF_UNIX);
	assert_int_equal(((const struct rt_ev_sock_io *)hs[0])->local.port, 0);
	close(sv[0]);
	close(sv[1]);
	rt_collect_free(&c);
}

/* An IPv6 loopback connection: both ends' addresses and ports, as the kernel has them. */
static void test_ipv6_addrs(void **state)
{
	static const __u8 loop6[16] = { [15] = 1 };
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	socklen_t len = sizeof(sa);
	const struct rt_event_hdr *hs[4];
	const struct rt_ev_sock_io *e;
	struct rt_collect c;
	__u16 lport, cport;
	int l, cl, sv;
	char b = 7;

	(void)state;
	rt_collect_init(&c, 1 << 16);
	l = socket(AF_INET6, SOCK_STREAM, 0);
	cl = socket(AF_INET6, SOCK_STREAM, 0);
	assert_true(l >= 0 && cl >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	lport = ntohs(sa.sin6_port);
	assert_int_equal(connect(cl, (struct sockaddr *)&sa, sizeof(sa)), 0);
	len = sizeof(sa);
	assert_int_equal(getsockname(cl, (struct sockaddr *)&sa, &len), 0);
	cport = ntohs(sa.sin6_port);
	sv = accept(l, NULL, NULL);
	assert_true(sv >= 0);

	assert_int_equal(rt_bpf_source__add_pid(src, getpid(), 9), 0);
	assert_int_equal(write(cl, &b, 1), 1);
	assert_int_equal(read(sv, &b, 1), 1);
	assert_int_equal(rt_bpf_source__remove_pid(src, getpid()), 0);
	usleep(20000);
	assert_true(rt_collect_drain(src, &c) >= 0);

	assert_int_equal(rt_collect_find(&c, RT_EV_SOCK_SEND, getpid(), hs, 4), 1);
	e = (const struct rt_ev_sock_io *)hs[0];
	assert_int_equal(e->local.family, RT_AF_INET6);
	assert_int_equal(e->peer.family, RT_AF_INET6);
	assert_memory_equal(e->local.addr, loop6, 16);
	assert_memory_equal(e->peer.addr, loop6, 16);
	assert_int_equal(e->local.port, cport);
	assert_int_equal(e->peer.port, lport);
	assert_int_equal(rt_collect_find(&c, RT_EV_SOCK_RECV, getpid(), hs, 4), 1);
	e = (const struct rt_ev_sock_io *)hs[0];
	assert_int_equal(e->local.port, lport);
	assert_int_equal(e->peer.port, cport);
	assert_memory_equal(e->peer.addr, loop6, 16);
	close(sv);
	close(cl);
	close(l);
	rt_collect_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socket_and_sched),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_ipv6_addrs),
	};
	struct rt_bpf_source_opts opts = { .source_id = 5 };
	int rc;

	fill(msg1, MSG1, 1);
	fill(rep1, REP1, 2);
	fill(msg2, MSG2, 3);
	fill(rep2, REP2, 4);
	fill(msg3, MSG3, 5);
	fill(rep3, REP3, 6);
	fill(msg4, MSG4, 7);
	fill(rep4, REP4, 8);
	fill(rep5, REP5, 9);
	src = rt_test_source(&opts);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rt_bpf_source__free(src);
	return rc;
}
