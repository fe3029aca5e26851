// SPDX-License-Identifier: BSD-2-Clause
/*
 * Markers through shared memory end to end, without root: the real
 * libreqtrace_marker.so (linked) hands its calls to an inject server in
 * this process (the daemon's code), over the real socket and memfd. The
 * calls reach the server as records of their own source, with our pid and
 * the calling threads' tids, under watermarks that never pass them; a fork
 * child gets a session and ring of its own; when the server goes away the
 * library falls back and reconnects to the next one. And a hostile peer
 * writing its own records: the server passes only what a marker library
 * may send, counts the rest, and drops a ring whose framing is broken.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>

#include <reqtrace/marker.h>

#include "mring.h"
#include "proto.h"
#include "ring.h"
#include "sources/inject_server.h"

#define MAX_RECS 65536
#define WAIT_S 30 /* a failure's bound, not a speed requirement */

struct rec {
	__u16 kind;
	__u32 source, pid, tid;
	__u64 ts;
	char id[RT_ID_LEN];
};

static struct {
	char dir[64], path[128];
	struct rt_inject_server *s;
	int n;
	struct rec r[MAX_RECS];
	__u64 wm[64]; /* per source id (small ids) */
	__u64 behind_wm; /* marker records older than their source's watermark */
	__u32 closed;
} F;

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int allow(__u32 pid, void *ctx)
{
	(void)pid;
	(void)ctx;
	return 1;
}

static void on_close(__u32 source_id, __u32 pid, void *ctx)
{
	(void)source_id;
	(void)pid;
	(void)ctx;
	F.closed++;
}

static int intake(const struct rt_event_hdr *ev, void *ctx)
{
	const struct rt_ev_mark *m = (const void *)ev;
	struct rec *r;

	(void)ctx;
	assert_true(ev->source < 64);
	if (ev->kind == RT_EV_WATERMARK) {
		assert_true(ev->ts_ns >= F.wm[ev->source]);
		F.wm[ev->source] = ev->ts_ns;
		return 0;
	}
	if (ev->kind < RT_EV_MARK_BEGIN || ev->kind > RT_EV_MARK_BIND || F.n >= MAX_RECS)
		return 0;
	if (ev->ts_ns < F.wm[ev->source])
		F.behind_wm++;
	r = &F.r[F.n++];
	r->kind = ev->kind;
	r->source = ev->source;
	r->pid = ev->pid;
	r->tid = ev->tid;
	r->ts = ev->ts_ns;
	if (ev->kind == RT_EV_MARK_BEGIN || ev->kind == RT_EV_MARK_END)
		memcpy(r->id, m->request_id, RT_ID_LEN);
	return 0;
}

static void server_start(void)
{
	struct rt_inject_server_opts o = {
		.path = F.path, .allow_pid = allow, .on_close = on_close, .first_source_id = 1
	};

	F.s = rt_inject_server__new(&o);
	assert_non_null(F.s);
}

static void pump(void)
{
	rt_inject_server__on_readable(F.s);
	assert_true(rt_inject_server__consume(F.s, intake, NULL) >= 0);
}

static int count_id(const char *prefix, __u32 pid, __u32 source, int *other)
{
	int i, n = 0;

	*other = 0;
	for (i = 0; i < F.n; i++) {
		if (strncmp(F.r[i].id, prefix, strlen(prefix)))
			continue;
		if (F.r[i].pid == pid && (!source || F.r[i].source == source))
			n++;
		else
			(*other)++;
	}
	return n;
}

/* Calls markers until one comes through the ring; returns its source. */
static __u32 wait_attached(const char *id)
{
	__u64 deadline = now_ns() + WAIT_S * 1000000000ULL;
	int other;

	while (now_ns() < deadline) {
		rt_mark_begin(id, RT_PHASE_QUEUE);
		pump();
		if (count_id(id, (__u32)getpid(), 0, &other))
			break;
		usleep(2000);
	}
	for (int i = 0; i < F.n; i++)
		if (!strcmp(F.r[i].id, id))
			return F.r[i].source;
	fail_msg("the library never attached a ring");
	return 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(F.dir, sizeof(F.dir), "/tmp/rt-mark-shm-XXXXXX");
	assert_non_null(mkdtemp(F.dir));
	snprintf(F.path, sizeof(F.path), "%s/inject.sock", F.dir);
	/* before the first marker call: the library reads it then */
	setenv("REQTRACE_SOCKET", F.path, 1);
	unsetenv("REQTRACE_MARKER_SHM");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rt_inject_server__free(F.s);
	rmdir(F.dir);
	return 0;
}

#define THREADS 4
#define PER_THREAD 2000

static void *caller(void *arg)
{
	long t = (long)arg;
	char id[32];
	__u32 *tid = malloc(sizeof(*tid));
	int i;

	*tid = (__u32)syscall(SYS_gettid);
	for (i = 0; i < PER_THREAD; i++) {
		snprintf(id, sizeof(id), "t%ld-%d", t, i);
		rt_mark_begin(id, RT_PHASE_DECODE);
		rt_mark_end(id, RT_PHASE_DECODE);
	}
	return tid;
}

static void test_threads(void **state)
{
	pthread_t th[THREADS];
	__u32 *tids[THREADS], src;
	__u64 deadline;
	char prefix[8];
	int t, other, got = 0, i;
	void *ret;

	(void)state;
	server_start();
	src = wait_attached("hello");
	for (t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, caller, (void *)(long)t), 0);
	deadline = now_ns() + WAIT_S * 1000000000ULL;
	while (got < THREADS * PER_THREAD * 2 && now_ns() < deadline) {
		pump();
		for (got = 0, t = 0; t < THREADS; t++) {
			snprintf(prefix, sizeof(prefix), "t%d-", t);
			got += count_id(prefix, (__u32)getpid(), src, &other);
			assert_int_equal(other, 0);
		}
		usleep(1000);
	}
	for (t = 0; t < THREADS; t++) {
		pthread_join(th[t], &ret);
		tids[t] = ret;
	}
	/* every call arrived (the ring is far larger than this burst) */
	assert_int_equal(got, THREADS * PER_THREAD * 2);
	/* each on the thread that made it, with our pid */
	for (i = 0; i < F.n; i++) {
		if (F.r[i].id[0] != 't')
			continue;
		t = F.r[i].id[1] - '0';
		assert_int_equal(F.r[i].tid, *tids[t]);
		assert_int_equal(F.r[i].source, src);
	}
	for (t = 0; t < THREADS; t++)
		free(tids[t]);
	/* the watermarks the server wrote never passed a record */
	assert_int_equal(F.behind_wm, 0);
	assert_true(F.wm[src] > 0);
}

/* A fork child never writes its parent's ring: it gets its own session. */
static void test_fork(void **state)
{
	__u32 parent_src, child_src = 0;
	__u64 deadline;
	int status, i, other, n_child = 0;
	pid_t pid;

	(void)state;
	parent_src = wait_attached("parent-before");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char id[32];

		/* until the parent kills us: uprobe fallback first, then our own ring */
		for (i = 0;; i++) {
			snprintf(id, sizeof(id), "child-%d", i);
			rt_mark_begin(id, RT_PHASE_QUEUE);
			usleep(1000);
		}
	}
	rt_mark_begin("parent-after", RT_PHASE_QUEUE);
	deadline = now_ns() + WAIT_S * 1000000000ULL;
	while (now_ns() < deadline) {
		pump();
		n_child = count_id("child-", (__u32)pid, 0, &other);
		assert_int_equal(other, 0); /* never with the parent's pid */
		if (n_child >= 10)
			break;
		usleep(2000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	assert_true(n_child >= 10);
	for (i = 0; i < F.n; i++) {
		if (!strncmp(F.r[i].id, "child-", 6)) {
			/* a source of its own, never the parent's */
			assert_int_not_equal(F.r[i].source, parent_src);
			child_src = child_src ? child_src : F.r[i].source;
			assert_int_equal(F.r[i].source, child_src);
		}
	}
	/* the parent keeps its ring */
	assert_int_equal(count_id("parent-after", (__u32)getpid(), parent_src, &other), 1);
	/* the child's session ends with it */
	deadline = now_ns() + WAIT_S * 1000000000ULL;
	while (F.closed < 1 && now_ns() < deadline) {
		pump();
		usleep(1000);
	}
	assert_true(F.closed >= 1);
}

/* The daemon goes away: calls fall back (and do not crash); the next one is found. */
static void test_reconnect(void **state)
{
	__u32 src;
	int i;

	(void)state;
	rt_inject_server__free(F.s);
	F.s = NULL;
	for (i = 0; i < 1000; i++) {
		rt_mark_begin("orphan", RT_PHASE_QUEUE);
		rt_mark_step_end(7);
	}
	server_start();
	src = wait_attached("again");
	assert_true(src >= 1);
}

/* One record in its own slot, exactly as given. */
static void put(struct rt_mring *r, const void *rec, __u16 size)
{
	struct rt_mring_slot sl;

	assert_int_equal(rt_mring_reserve(r, sizeof(struct rt_mark_slot) + size, 1, &sl), 0);
	memcpy(sl.body, rec, size);
	rt_mring_commit(r, &sl, sizeof(struct rt_mark_slot) + size, 1);
}

static void test_hostile_peer(void **state)
{
	struct rt_inject_server_stats st0, st;
	struct rt_inject_hello h;
	struct rt_inject_welcome w;
	struct rt_ev_mark m, x;
	struct rt_ev_loss l;
	struct rt_mring r;
	struct rt_mring_slot sl;
	__u64 deadline;
	int fd, ring_fd, other, err = -ETIMEDOUT;
	void *map;

	(void)state;
	rt_inject_server__stats(F.s, &st0);
	fd = rt_cupti_proto_connect(F.path, 1000);
	assert_true(fd >= 0);
	memset(&h, 0, sizeof(h));
	h.event_version = RT_EVENT_VERSION;
	h.role = RT_INJECT_ROLE_MARKER;
	assert_int_equal(rt_cupti_proto_send_hello(fd, &h), 0);
	deadline = now_ns() + WAIT_S * 1000000000ULL;
	while (err == -ETIMEDOUT && now_ns() < deadline) {
		pump();
		err = rt_cupti_proto_recv_welcome(fd, 10, &w, &ring_fd);
	}
	assert_int_equal(err, 0);
	assert_int_equal(w.status, RT_INJECT_ACCEPTED);
	assert_int_equal(rt_cupti_ring_check_fd(ring_fd, w.ring_hdr_size, w.ring_data_size), 0);
	map = mmap(NULL, w.ring_hdr_size + w.ring_data_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ring_fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(rt_mring_init(&r, map, w.ring_hdr_size, w.ring_data_size), 0);

	memset(&m, 0, sizeof(m));
	m.hdr.kind = RT_EV_MARK_BEGIN;
	m.hdr.size = sizeof(m);
	m.hdr.source = w.source_id;
	m.hdr.pid = w.pid;
	m.hdr.tid = 7;
	m.hdr.ts_ns = now_ns();
	m.phase = RT_PHASE_QUEUE;
	m.id_len = 4;
	memcpy(m.request_id, "good", 5);
	put(&r, &m, sizeof(m));
	x = m, x.hdr.pid = w.pid + 1; /* another process's pid */
	put(&r, &x, sizeof(x));
	x = m, x.hdr.source = w.source_id + 1000; /* another source */
	put(&r, &x, sizeof(x));
	x = m, x.hdr.tid = 0;
	put(&r, &x, sizeof(x));
	x = m, x.hdr.ts_ns = 1; /* before the session began */
	put(&r, &x, sizeof(x));
	x = m, x.hdr.ts_ns = now_ns() + 60000000000ULL; /* a minute ahead */
	put(&r, &x, sizeof(x));
	x = m, x.hdr.kind = RT_EV_SOCK_CLOSE; /* not a marker's business */
	put(&r, &x, sizeof(x));
	x = m, memset(x.request_id, 'a', RT_ID_LEN); /* no NUL */
	put(&r, &x, sizeof(x));
	x = m, x.phase = 1000; /* no such phase */
	put(&r, &x, sizeof(x));
	memset(&l, 0, sizeof(l));
	l.hdr = m.hdr;
	l.hdr.kind = RT_EV_LOSS;
	l.hdr.size = sizeof(l);
	l.since_ns = m.hdr.ts_ns;
	l.count = 5;
	l.reason = RT_LOSS_RING_FULL; /* only step truncation is a marker's loss */
	put(&r, &l, sizeof(l));
	deadline = now_ns() + WAIT_S * 1000000000ULL;
	do {
		pump();
		rt_inject_server__stats(F.s, &st);
	} while (st.mark_invalid - st0.mark_invalid < 9 && now_ns() < deadline);
	assert_int_equal(st.mark_invalid - st0.mark_invalid, 9);
	assert_int_equal(count_id("good", w.pid, w.source_id, &other), 1);
	assert_int_equal(other, 0);
	assert_int_equal(st.framing, st0.framing);

	/* a slot whose length runs past what was reserved: the ring is given up */
	assert_int_equal(rt_mring_reserve(&r, sizeof(struct rt_mark_slot) + sizeof(m), 1, &sl), 0);
	memcpy(sl.body, &m, sizeof(m));
	rt_mring_commit(&r, &sl, 1U << 20, 1);
	deadline = now_ns() + WAIT_S * 1000000000ULL;
	do {
		pump();
		rt_inject_server__stats(F.s, &st);
	} while (st.framing == st0.framing && now_ns() < deadline);
	assert_int_equal(st.framing, st0.framing + 1);
	munmap(map, w.ring_hdr_size + w.ring_data_size);
	close(ring_fd);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_reconnect),
		cmocka_unit_test(test_hostile_peer),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
