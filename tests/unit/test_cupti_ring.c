// SPDX-License-Identifier: BSD-2-Clause
/*
 * The injection protocol end to end without CUDA: the daemon side
 * (inject_server) against the library's handshake client and ring producer
 * (src/cupti/proto.c, ring.c, built into this test), plus a hostile
 * producer that writes garbage straight into the shared ring.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <reqtrace/inject.h>

#include "proto.h"
#include "ring.h"
#include "sources/inject_server.h"

#define MAX_RECS 8192
#define SRC0 500

struct fx {
	char dir[64];
	char path[128];
	struct rt_inject_server *s;
	int allow;
	__u32 closed[16];
	int nclosed;
	/* what the consumer received */
	int n;
	__u16 kinds[MAX_RECS];
	__u64 ts[MAX_RECS];
	__u64 corr[MAX_RECS];
	__u64 loss_invalid;
	int fail_at; /* fn refuses the record with this index once (-1: never) */
};

static struct fx F;

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int allow(__u32 pid, void *ctx)
{
	struct fx *f = ctx;

	return f->allow && pid == (__u32)getpid();
}

static void on_close(__u32 source, __u32 pid, void *ctx)
{
	struct fx *f = ctx;

	assert_int_equal(pid, getpid());
	if (f->nclosed < 16)
		f->closed[f->nclosed++] = source;
}

static int collect(const struct rt_event_hdr *ev, void *ctx)
{
	struct fx *f = ctx;

	if (f->fail_at == f->n) {
		f->fail_at = -1;
		return -EAGAIN;
	}
	if (ev->kind == RT_EV_LOSS && ((const struct rt_ev_loss *)ev)->reason == RT_LOSS_INVALID)
		f->loss_invalid += ((const struct rt_ev_loss *)ev)->count;
	if (f->n < MAX_RECS) {
		f->kinds[f->n] = ev->kind;
		f->ts[f->n] = ev->ts_ns;
		if (ev->kind == RT_EV_GPU_KERNEL)
			f->corr[f->n] = ((const struct rt_ev_gpu_kernel *)ev)->corr_id;
		f->n++;
	}
	return 0;
}

static struct rt_inject_server *server(__u32 max_conns, __u64 ring_bytes)
{
	struct rt_inject_server_opts o = {
		.path = F.path,
		.ring_bytes = ring_bytes,
		.first_source_id = SRC0,
		.max_conns = max_conns,
		.allow_pid = allow,
		.on_close = on_close,
		.ctx = &F,
	};

	return rt_inject_server__new(&o);
}

static int setup(void **state)
{
	(void)state;
	memset(&F, 0, sizeof(F));
	F.fail_at = -1;
	F.allow = 1;
	strcpy(F.dir, "/tmp/rt-inj-XXXXXX");
	assert_non_null(mkdtemp(F.dir));
	snprintf(F.path, sizeof(F.path), "%s/sub/inject.sock", F.dir);
	F.s = server(0, RT_INJECT_RING_MIN);
	assert_non_null(F.s);
	return 0;
}

static int teardown(void **state)
{
	char sub[160];

	(void)state;
	rt_inject_server__free(F.s);
	snprintf(sub, sizeof(sub), "%s/sub", F.dir);
	rmdir(sub);
	rmdir(F.dir);
	return 0;
}

/* Connects and says HELLO; the server is pumped in between. Returns the socket. */
static int hello(__u32 status, struct rt_inject_welcome *w, int *ring_fd, int *err)
{
	struct rt_inject_hello h;
	int fd;

	fd = rt_cupti_proto_connect(F.path, 100);
	assert_true(fd >= 0);
	assert_int_equal(rt_inject_server__on_readable(F.s), 0);
	memset(&h, 0, sizeof(h));
	h.event_version = RT_EVENT_VERSION;
	h.status = status;
	h.pid = getpid();
	h.lost_unconnected = 3;
	strcpy(h.comm, "tester");
	/* a refused peer may already be gone: sending can fail, the answer is there */
	rt_cupti_proto_send_hello(fd, &h);
	assert_int_equal(rt_inject_server__on_readable(F.s), 0);
	*err = rt_cupti_proto_recv_welcome(fd, 1000, w, ring_fd);
	return fd;
}

/* A connected producer: returns the socket and maps the ring into r. */
static int producer(struct rt_cupti_ring *r, struct rt_inject_welcome *w)
{
	int fd, ring_fd, err;

	fd = hello(RT_INJECT_ST_OK, w, &ring_fd, &err);
	assert_int_equal(err, 0);
	assert_int_equal(w->status, RT_INJECT_ACCEPTED);
	assert_true(ring_fd >= 0);
	assert_int_equal(rt_cupti_ring_check_fd(ring_fd, w->ring_hdr_size, w->ring_data_size), 0);
	assert_int_equal(rt_cupti_ring_map(r, ring_fd, w->ring_hdr_size, w->ring_data_size), 0);
	close(ring_fd);
	return fd;
}

static void kernel(struct rt_ev_gpu_kernel *k, const struct rt_inject_welcome *w, __u64 corr)
{
	memset(k, 0, sizeof(*k));
	k->hdr.kind = RT_EV_GPU_KERNEL;
	k->hdr.size = sizeof(*k);
	k->hdr.source = w->source_id;
	k->hdr.pid = w->pid;
	k->hdr.ts_ns = now_ns() - 1000;
	k->end_ns = k->hdr.ts_ns + 500;
	k->corr_id = corr;
	strcpy(k->name, "gemm");
}

static void watermark(struct rt_ev_watermark *e, const struct rt_inject_welcome *w, __u64 ts)
{
	memset(e, 0, sizeof(*e));
	e->hdr.kind = RT_EV_WATERMARK;
	e->hdr.size = sizeof(*e);
	e->hdr.source = w->source_id;
	e->hdr.pid = w->pid;
	e->hdr.ts_ns = ts;
}

static void test_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct rt_inject_msg_hdr), 16);
	assert_int_equal(sizeof(struct rt_inject_hello), 72);
	assert_int_equal(offsetof(struct rt_inject_hello, lost_unconnected), 40);
	/* role was appended: a 64-byte HELLO is a CUPTI one */
	assert_int_equal(offsetof(struct rt_inject_hello, role), 64);
	assert_int_equal(sizeof(struct rt_inject_welcome), 48);
	assert_int_equal(offsetof(struct rt_inject_welcome, ring_data_size), 40);
	assert_int_equal(sizeof(struct rt_inject_status_msg), 24);
	assert_int_equal(sizeof(struct rt_inject_ring), 192);
	assert_int_equal(offsetof(struct rt_inject_ring, prod_pos), 64);
	assert_int_equal(offsetof(struct rt_inject_ring, cons_pos), 128);
	assert_true(sizeof(struct rt_inject_ring) <= RT_INJECT_RING_HDR_SIZE);
	assert_true(sizeof(struct rt_inject_hello) <= RT_INJECT_MSG_MAX);
	/* a wrap marker's size field must hold any gap before the end */
	assert_true(RT_EVENT_MAX <= 65535);
}

static void test_handshake_seals(void **state)
{
	struct rt_inject_welcome w;
	struct rt_inject_conn_info ci;
	struct rt_cupti_ring r;
	struct stat st;
	int fd, ring_fd, err, seals;

	(void)state;
	assert_int_equal(stat(F.path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0666);
	fd = hello(RT_INJECT_ST_OK, &w, &ring_fd, &err);
	assert_int_equal(err, 0);
	assert_int_equal(w.status, RT_INJECT_ACCEPTED);
	assert_int_equal(w.source_id, SRC0);
	assert_int_equal(w.pid, getpid());
	assert_int_equal(w.flush_ms, RT_INJECT_FLUSH_MS_DEFAULT);
	assert_int_equal(w.horizon_ms, RT_INJECT_HORIZON_MS_DEFAULT);
	assert_int_equal(w.ring_hdr_size, RT_INJECT_RING_HDR_SIZE);
	assert_int_equal(w.ring_data_size, RT_INJECT_RING_MIN);
	assert_true(ring_fd >= 0);

	/* daemon side: sealed so that nobody can resize it under a mapping */
	seals = fcntl(ring_fd, F_GET_SEALS);
	assert_int_equal(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	assert_int_equal(ftruncate(ring_fd, 4096), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(ring_fd, 1 << 24), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(fcntl(ring_fd, F_ADD_SEALS, F_SEAL_WRITE), -1);

	/* library side accepts it and finds the header the daemon wrote */
	assert_int_equal(rt_cupti_ring_check_fd(ring_fd, w.ring_hdr_size, w.ring_data_size), 0);
	assert_int_equal(rt_cupti_ring_check_fd(ring_fd, w.ring_hdr_size, w.ring_data_size * 2),
			 -EINVAL);
	assert_int_equal(rt_cupti_ring_map(&r, ring_fd, w.ring_hdr_size, w.ring_data_size), 0);
	assert_int_equal(r.shm->magic, RT_INJECT_RING_MAGIC);
	assert_int_equal(r.shm->source_id, SRC0);
	assert_int_equal(r.shm->cons_state, RT_INJECT_CONS_ACTIVE);
	assert_int_equal(rt_inject_server__conns(F.s, &ci, 1), 1);
	assert_int_equal(ci.state, RT_INJECT_CONN_ACTIVE);
	assert_int_equal(ci.lost_unconnected, 3);
	assert_string_equal(ci.comm, "tester");
	rt_cupti_ring_unmap(&r);
	close(ring_fd);
	close(fd);
}

static void test_check_fd_refuses(void **state)
{
	__u64 data = RT_INJECT_RING_MIN, len = RT_INJECT_RING_HDR_SIZE + RT_INJECT_RING_MIN;
	char tmp[128];
	int fd;

	(void)state;
	/* not sealed: the daemon (or anyone) could truncate it and SIGBUS us */
	fd = memfd_create("t", MFD_ALLOW_SEALING);
	assert_int_equal(ftruncate(fd, len), 0);
	assert_int_equal(rt_cupti_ring_check_fd(fd, RT_INJECT_RING_HDR_SIZE, data), -EPERM);
	/* shrink and grow sealed but further seals still allowed: refused too */
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	assert_int_equal(rt_cupti_ring_check_fd(fd, RT_INJECT_RING_HDR_SIZE, data), -EPERM);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL), 0);
	assert_int_equal(rt_cupti_ring_check_fd(fd, RT_INJECT_RING_HDR_SIZE, data), 0);
	/* geometry the protocol does not allow */
	assert_int_equal(rt_cupti_ring_check_fd(fd, 64, data), -EINVAL);
	assert_int_equal(rt_cupti_ring_check_fd(fd, RT_INJECT_RING_HDR_SIZE, data + 8), -EINVAL);
	close(fd);
	/* a file that cannot be sealed at all */
	snprintf(tmp, sizeof(tmp), "%s/plain", F.dir);
	fd = open(tmp, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, len), 0);
	assert_int_equal(rt_cupti_ring_check_fd(fd, RT_INJECT_RING_HDR_SIZE, data), -EPERM);
	close(fd);
	unlink(tmp);
}

static void test_roundtrip_wraps(void **state)
{
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	struct rt_ev_gpu_kernel k;
	struct rt_ev_watermark e;
	struct rt_inject_server_stats st;
	int fd, i, got, wrote = 0, n, wms = 0, kernels = 0;
	__u64 last_wm = 0, next_corr = 1, base = now_ns() - 1000000000ULL;

	(void)state;
	fd = producer(&r, &w);
	/* 64 KiB ring, ~1.3 MB of records: it wraps about twenty times */
	for (i = 0; i < 8000; i++) {
		if (i % 10 == 9) {
			watermark(&e, &w, base + i); /* strictly increasing */
			assert_int_equal(rt_cupti_ring_write(&r, &e.hdr), 0);
		} else {
			kernel(&k, &w, wrote + 1);
			assert_int_equal(rt_cupti_ring_write(&r, &k.hdr), 0);
			wrote++;
		}
		if (i % 50 == 49)
			assert_true(rt_inject_server__consume(F.s, collect, &F) > 0);
		if (F.n > MAX_RECS - 100) {
			for (n = 0; n < F.n; n++) {
				if (F.kinds[n] == RT_EV_GPU_KERNEL) {
					assert_int_equal(F.corr[n], next_corr);
					next_corr++;
					kernels++;
				}
				if (F.kinds[n] == RT_EV_WATERMARK) {
					assert_true(F.ts[n] > last_wm);
					last_wm = F.ts[n];
					wms++;
				}
			}
			F.n = 0;
		}
	}
	got = rt_inject_server__consume(F.s, collect, &F);
	assert_true(got >= 0);
	for (n = 0; n < F.n; n++) {
		if (F.kinds[n] == RT_EV_GPU_KERNEL) {
			assert_int_equal(F.corr[n], next_corr);
			next_corr++;
			kernels++;
		}
		if (F.kinds[n] == RT_EV_WATERMARK)
			wms++;
	}
	assert_int_equal(kernels, wrote);
	assert_int_equal(wms, 800);
	assert_int_equal(r.dropped, 0);
	rt_inject_server__stats(F.s, &st);
	assert_int_equal(st.records, 8000);
	assert_int_equal(st.invalid, 0);
	assert_int_equal(st.framing, 0);
	rt_cupti_ring_unmap(&r);
	close(fd);
}

static void test_source_info_first_and_retry(void **state)
{
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	struct rt_ev_gpu_kernel k;
	int fd, i;

	(void)state;
	fd = producer(&r, &w);
	for (i = 0; i < 3; i++) {
		kernel(&k, &w, i + 1);
		assert_int_equal(rt_cupti_ring_write(&r, &k.hdr), 0);
	}
	/* fn refuses the second kernel once: it is offered again, nothing lost */
	F.fail_at = 2;
	assert_int_equal(rt_inject_server__consume(F.s, collect, &F), -EAGAIN);
	assert_int_equal(rt_inject_server__consume(F.s, collect, &F), 2);
	assert_int_equal(F.n, 4);
	assert_int_equal(F.kinds[0], RT_EV_SOURCE_INFO);
	assert_int_equal(F.corr[1], 1);
	assert_int_equal(F.corr[2], 2);
	assert_int_equal(F.corr[3], 3);
	rt_cupti_ring_unmap(&r);
	close(fd);
}

static void test_ring_full(void **state)
{
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	struct rt_ev_gpu_kernel k;
	int fd, i, ok = 0, full = 0;

	(void)state;
	fd = producer(&r, &w);
	for (i = 0; i < 1000; i++) {
		kernel(&k, &w, i + 1);
		if (rt_cupti_ring_write(&r, &k.hdr) == 0)
			ok++;
		else
			full++;
	}
	/* 64 KiB / 152 B: 431 records fit, the rest is counted, not written */
	assert_int_equal(ok, RT_INJECT_RING_MIN / sizeof(k));
	assert_int_equal(full, 1000 - ok);
	assert_int_equal(r.dropped, full);
	assert_int_equal(r.shm->dropped, full);
	assert_int_equal(rt_inject_server__consume(F.s, collect, &F), ok);
	kernel(&k, &w, 5000);
	assert_int_equal(rt_cupti_ring_write(&r, &k.hdr), 0);
	rt_cupti_ring_unmap(&r);
	close(fd);
}

static void test_refused_peer(void **state)
{
	struct rt_inject_server_stats st;
	struct rt_inject_welcome w;
	char buf[64];
	int fd, ring_fd, err;

	(void)state;
	F.allow = 0; /* outside every target group */
	fd = hello(RT_INJECT_ST_OK, &w, &ring_fd, &err);
	assert_int_equal(err, 0);
	assert_int_equal(w.status, -EPERM);
	assert_int_equal(ring_fd, -1);
	assert_int_equal(w.ring_data_size, 0);
	assert_int_equal(recv(fd, buf, sizeof(buf), 0), 0); /* and the daemon hung up */
	rt_inject_server__stats(F.s, &st);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.accepted, 0);
	assert_int_equal(st.conns, 0);
	close(fd);
}

static void test_idle_and_status(void **state)
{
	struct rt_inject_conn_info ci;
	struct rt_inject_welcome w;
	int fd, ring_fd, err;

	(void)state;
	fd = hello(RT_INJECT_ST_CUPTI_BUSY, &w, &ring_fd, &err);
	assert_int_equal(err, 0);
	assert_int_equal(w.status, RT_INJECT_ACCEPTED);
	assert_int_equal(ring_fd, -1);
	assert_int_equal(w.source_id, 0);
	assert_int_equal(rt_inject_server__conns(F.s, &ci, 1), 1);
	assert_int_equal(ci.state, RT_INJECT_CONN_IDLE);
	assert_int_equal(ci.status, RT_INJECT_ST_CUPTI_BUSY);
	assert_int_equal(rt_cupti_proto_send_status(fd, RT_INJECT_ST_CUPTI_ERROR, 7), 0);
	assert_int_equal(rt_inject_server__on_readable(F.s), 0);
	assert_int_equal(rt_inject_server__conns(F.s, &ci, 1), 1);
	assert_int_equal(ci.status, RT_INJECT_ST_CUPTI_ERROR);
	assert_int_equal(ci.cupti_result, 7);
	close(fd);
	assert_int_equal(rt_inject_server__on_readable(F.s), 0);
	assert_int_equal(rt_inject_server__conns(F.s, &ci, 1), 0);
	assert_int_equal(F.nclosed, 0); /* an idle peer was never a source */
}

static void test_bad_hello(void **state)
{
	struct rt_inject_server_stats st;
	struct rt_inject_welcome w;
	char junk[40];
	int fd, ring_fd, err;

	(void)state;
	fd = rt_cupti_proto_connect(F.path, 100);
	assert_true(fd >= 0);
	assert_int_equal(rt_inject_server__on_readable(F.s), 0);
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(send(fd, junk, sizeof(junk), 0), sizeof(junk));
	assert_int_equal(rt_inject_server__on_readable(F.s), 0);
	err = rt_cupti_proto_recv_welcome(fd, 1000, &w, &ring_fd);
	assert_int_equal(err, 0);
	assert_int_equal(w.status, -EPROTO);
	close(fd);
	/* a peer that never says HELLO is dropped after the timeout */
	fd = rt_cupti_proto_connect(F.path, 100);
	assert_int_equal(rt_inject_server__on_readable(F.s), 0);
	rt_inject_server__stats(F.s, &st);
	assert_int_equal(st.conns, 1);
	usleep(RT_INJECT_HELLO_TIMEOUT_NS / 1000 + 100000);
	assert_int_equal(rt_inject_server__consume(F.s, collect, &F), 0);
	rt_inject_server__stats(F.s, &st);
	assert_int_equal(st.conns, 0);
	assert_int_equal(st.rejected, 2);
	close(fd);
}

static void test_max_conns(void **state)
{
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	int fd1, fd2, ring_fd, err;

	(void)state;
	rt_inject_server__free(F.s);
	F.s = server(1, 0);
	assert_non_null(F.s);
	fd1 = producer(&r, &w);
	assert_int_equal(w.ring_data_size, RT_INJECT_RING_DEFAULT);
	fd2 = hello(RT_INJECT_ST_OK, &w, &ring_fd, &err);
	assert_int_equal(err, 0);
	assert_int_equal(w.status, -EMFILE);
	assert_int_equal(ring_fd, -1);
	rt_cupti_ring_unmap(&r);
	close(fd1);
	close(fd2);
}

static void test_peer_close_drains(void **state)
{
	struct rt_inject_server_stats st;
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	struct rt_ev_gpu_kernel k;
	int fd, i;

	(void)state;
	fd = producer(&r, &w);
	for (i = 0; i < 10; i++) {
		kernel(&k, &w, i + 1);
		assert_int_equal(rt_cupti_ring_write(&r, &k.hdr), 0);
	}
	close(fd); /* the process exits right after its last records */
	assert_int_equal(rt_inject_server__on_readable(F.s), 0);
	assert_int_equal(F.nclosed, 0);
	assert_int_equal(rt_inject_server__consume(F.s, collect, &F), 10);
	assert_int_equal(F.nclosed, 1);
	assert_int_equal(F.closed[0], w.source_id);
	rt_inject_server__stats(F.s, &st);
	assert_int_equal(st.conns, 0);
	rt_cupti_ring_unmap(&r);
}

static void test_daemon_closes_ring(void **state)
{
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	struct rt_ev_gpu_kernel k;
	int fd;

	(void)state;
	fd = producer(&r, &w);
	rt_inject_server__free(F.s); /* the daemon shuts down */
	F.s = server(0, 0);
	assert_non_null(F.s);
	kernel(&k, &w, 1);
	assert_int_equal(rt_cupti_ring_write(&r, &k.hdr), -EPIPE);
	assert_false(rt_cupti_ring_ok(&r));
	rt_cupti_ring_unmap(&r);
	close(fd);
}

static void test_producer_checks_consumer(void **state)
{
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	struct rt_ev_gpu_kernel k;
	int fd;

	(void)state;
	fd = producer(&r, &w);
	/* a daemon that claims to have consumed what was never produced */
	r.shm->cons_pos = 1 << 20;
	kernel(&k, &w, 1);
	assert_int_equal(rt_cupti_ring_write(&r, &k.hdr), -EPIPE);
	assert_int_equal(r.shm->prod_pos, 0);
	rt_cupti_ring_unmap(&r);
	close(fd);
}

/* Writes raw bytes at the producer position and publishes them. */
static void raw(struct rt_cupti_ring *r, const void *p, size_t n)
{
	memcpy(r->data + (r->head & (r->size - 1)), p, n);
	r->head += n;
	__atomic_store_n(&r->shm->prod_pos, r->head, __ATOMIC_RELEASE);
}

static void test_hostile_records(void **state)
{
	struct rt_inject_server_stats st;
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	struct rt_ev_gpu_kernel k;
	struct rt_ev_sock_close sc;
	int fd, i, kernels = 0;

	(void)state;
	fd = producer(&r, &w);
	kernel(&k, &w, 1);
	raw(&r, &k, sizeof(k)); /* fine */
	k.hdr.kind = 77; /* unknown kind */
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 2);
	k.hdr.pid = 1; /* records about another process */
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 3);
	k.hdr.source = 1; /* another source */
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 4);
	k.hdr.ts_ns = 0;
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 5);
	k.hdr.ts_ns = now_ns() + 3600ULL * 1000000000ULL; /* an hour ahead */
	k.end_ns = k.hdr.ts_ns + 1;
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 6);
	k.end_ns = k.hdr.ts_ns - 1; /* ends before it starts */
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 1ULL << 40); /* not a CUPTI correlation id */
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 8);
	memset(k.name, 'x', sizeof(k.name)); /* unterminated name */
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 9);
	k.device = 1 << 30;
	raw(&r, &k, sizeof(k));
	kernel(&k, &w, 10);
	k.hdr.size = 48; /* framing fine, but too small for a kernel */
	raw(&r, &k, 48);
	memset(&sc, 0, sizeof(sc)); /* a kind only BPF may produce */
	sc.hdr.kind = RT_EV_SOCK_CLOSE;
	sc.hdr.size = sizeof(sc);
	sc.hdr.source = w.source_id;
	sc.hdr.pid = w.pid;
	sc.hdr.ts_ns = sc.enter_ns = now_ns();
	raw(&r, &sc, sizeof(sc));
	kernel(&k, &w, 11);
	raw(&r, &k, sizeof(k)); /* fine */
	assert_int_equal(rt_inject_server__consume(F.s, collect, &F), 2);
	for (i = 0; i < F.n; i++)
		kernels += F.kinds[i] == RT_EV_GPU_KERNEL;
	assert_int_equal(kernels, 2);
	assert_int_equal(F.loss_invalid, 11);
	rt_inject_server__stats(F.s, &st);
	assert_int_equal(st.invalid, 11);
	assert_int_equal(st.framing, 0);
	assert_int_equal(F.nclosed, 0);
	rt_cupti_ring_unmap(&r);
	close(fd);
}

/* Each framing fault drops the ring (and the session), never reads outside it. */
static void test_hostile_framing(void **state)
{
	struct rt_inject_server_stats st;
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	struct rt_event_hdr h;
	int fd, fault;
	char buf[8];

	(void)state;
	for (fault = 0; fault < 7; fault++) {
		fd = producer(&r, &w);
		memset(&h, 0, sizeof(h));
		h.kind = RT_EV_GPU_KERNEL;
		switch (fault) {
		case 0: /* producer runs more than a ring ahead */
			__atomic_store_n(&r.shm->prod_pos, r.size + 8, __ATOMIC_RELEASE);
			break;
		case 1: /* unaligned producer position */
			__atomic_store_n(&r.shm->prod_pos, 12, __ATOMIC_RELEASE);
			break;
		case 2: /* size below a header */
			h.size = 8;
			raw(&r, &h, sizeof(h));
			break;
		case 3: /* size not a multiple of 8 */
			h.size = 29;
			raw(&r, &h, sizeof(h));
			break;
		case 4: /* size beyond what was published */
			h.size = 4096;
			raw(&r, &h, sizeof(h));
			break;
		case 5: /* wrap marker although the producer is not past the end */
			h.kind = RT_EV_NONE;
			raw(&r, &h, sizeof(h));
			break;
		case 6: /* producer position behind the consumer */
			__atomic_store_n(&r.shm->prod_pos, (__u64)-8, __ATOMIC_RELEASE);
			break;
		}
		F.nclosed = 0;
		assert_int_equal(rt_inject_server__consume(F.s, collect, &F), 0);
		assert_int_equal(F.nclosed, 1);
		/* the producer is told: closed ring, closed socket */
		assert_int_equal(r.shm->cons_state, RT_INJECT_CONS_CLOSED);
		assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
		rt_cupti_ring_unmap(&r);
		close(fd);
	}
	rt_inject_server__stats(F.s, &st);
	assert_int_equal(st.framing, 7);
	assert_int_equal(st.conns, 0);
}

/* Random bytes and positions: the consumer may reject, never crash (ASan). */
static void test_hostile_fuzz(void **state)
{
	struct rt_inject_welcome w;
	struct rt_cupti_ring r;
	unsigned int seed = 42;
	__u64 pos;
	size_t i;
	int fd, it;

	(void)state;
	for (it = 0; it < 200; it++) {
		fd = producer(&r, &w);
		for (i = 0; i < r.size; i++)
			r.data[i] = (__u8)rand_r(&seed);
		/* sprinkle plausible headers so some records pass the framing */
		for (i = 0; i + 24 <= r.size; i += 8 * (1 + rand_r(&seed) % 64)) {
			struct rt_event_hdr *h = (void *)(r.data + i);

			h->kind = rand_r(&seed) % 70;
			h->size = 8 * (rand_r(&seed) % 40);
			h->source = rand_r(&seed) % 4 ? w.source_id : 0;
			h->pid = rand_r(&seed) % 4 ? w.pid : 0;
			h->ts_ns = now_ns() - rand_r(&seed) % 1000000;
		}
		pos = rand_r(&seed) % 3 ? (rand_r(&seed) % (r.size / 8)) * 8 :
					  ((__u64)rand_r(&seed) << 20 | rand_r(&seed));
		__atomic_store_n(&r.shm->prod_pos, pos, __ATOMIC_RELEASE);
		assert_true(rt_inject_server__consume(F.s, collect, &F) >= 0);
		F.n = 0;
		rt_cupti_ring_unmap(&r);
		close(fd);
		rt_inject_server__on_readable(F.s);
		while (rt_inject_server__consume(F.s, collect, &F) > 0)
			F.n = 0;
	}
}

static void test_stale_and_live_socket(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rt_inject_server *other;
	int fd;

	(void)state;
	/* a second daemon must not steal a live socket */
	other = server(0, 0);
	assert_null(other);
	assert_int_equal(errno, EADDRINUSE);
	/* a stale socket file left by a daemon that died is replaced */
	rt_inject_server__free(F.s);
	strcpy(sa.sun_path, F.path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	F.s = server(0, 0);
	assert_non_null(F.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test_setup_teardown(test_handshake_seals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_fd_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip_wraps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_source_info_first_and_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_and_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_hello, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_conns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_close_drains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_daemon_closes_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_producer_checks_consumer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_framing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_fuzz, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_and_live_socket, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
