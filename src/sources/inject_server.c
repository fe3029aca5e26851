// SPDX-License-Identifier: BSD-2-Clause
#include "sources/inject_server.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/event_check.h"
#include "common/log.h"
#include "sources/mark_ring.h"

#define ACCEPTS_PER_CALL 64
#define EVENTS_PER_CALL 64
#define MSGS_PER_EVENT 8
#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

struct conn {
	struct rt_inject_conn_info i; /* what rt_inject_server__conns() reports */
	int fd; /* -1 once the peer is gone */
	__u64 t_accept;

	/* ring (ACTIVE, CLOSING) */
	struct rt_inject_ring *shm;
	__u8 *data;
	__u64 size;
	size_t map_len;
	__u64 cons; /* ours; never read back from shared memory */
	int info_sent;
	int broken;
	__u64 pending_invalid; /* not yet reported as LOSS */
	__u64 pending_since;

	/* marker ring (role MARKER) */
	struct rt_mark_cons *mc;
	__u64 wm_sent; /* the last watermark passed on */
};

struct rt_inject_server {
	int lfd;
	int epfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	__u64 ring_bytes;
	__u32 next_source;
	__u32 max_conns;
	__u32 flush_ms;
	__u32 horizon_ms;
	__u32 max_batch;
	int (*allow_pid)(__u32 pid, void *ctx);
	void (*on_close)(__u32 source_id, __u32 pid, void *ctx);
	void *ctx;
	struct conn **conns; /* max_conns slots, the first nconns used */
	__u32 nconns;
	struct rt_inject_server_stats st;
	union {
		__u64 align;
		__u8 buf[RT_EVENT_MAX];
	} rec; /* a record copied out of a ring before it is checked */
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static __u64 ring_size(__u64 want)
{
	__u64 n = RT_INJECT_RING_MIN;

	if (!want)
		return RT_INJECT_RING_DEFAULT;
	while (n < want && n < RT_INJECT_RING_MAX)
		n <<= 1;
	return n;
}

/* ---- rings ------------------------------------------------------------ */

/*
 * A memfd of header + data, allocated up front (a page the producer faults
 * in later could otherwise fail as SIGBUS), mapped here, then sealed so
 * that nobody can resize it under the producer's mapping.
 */
static int ring_create(struct rt_inject_server *s, struct conn *c, __u32 source_id)
{
	int marker = c->i.role == RT_INJECT_ROLE_MARKER;
	__u64 data_size = marker ? RT_MARK_RING_DEFAULT : s->ring_bytes;
	size_t len = RT_INJECT_RING_HDR_SIZE + data_size;
	struct rt_inject_ring *shm;
	int fd, err;
	void *p;

	if (marker) {
		c->mc = malloc(sizeof(*c->mc));
		if (!c->mc)
			return -ENOMEM;
	}
	fd = memfd_create(marker ? "reqtrace-marker" : "reqtrace-inject",
			  MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, len) < 0) {
		err = -errno;
		goto fail;
	}
	err = fallocate(fd, 0, 0, len);
	if (err < 0 && errno != EOPNOTSUPP) {
		err = -errno;
		goto fail;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	shm = p;
	shm->magic = marker ? RT_MARK_RING_MAGIC : RT_INJECT_RING_MAGIC;
	shm->version = RT_INJECT_VERSION;
	shm->hdr_size = RT_INJECT_RING_HDR_SIZE;
	shm->data_size = data_size;
	shm->source_id = source_id;
	shm->pid = c->i.pid;
	shm->cons_state = RT_INJECT_CONS_ACTIVE;
	if (fcntl(fd, F_ADD_SEALS, SEALS) < 0) {
		err = -errno;
		munmap(p, len);
		goto fail;
	}
	c->shm = shm;
	c->data = (__u8 *)p + RT_INJECT_RING_HDR_SIZE;
	c->size = data_size;
	c->map_len = len;
	c->cons = 0;
	if (marker)
		rt_mark_cons__init(c->mc, shm, data_size);
	return fd;
fail:
	close(fd);
	free(c->mc);
	c->mc = NULL;
	return err;
}

/* ---- sessions --------------------------------------------------------- */

static void finish(struct rt_inject_server *s, struct conn *c)
{
	__u32 i;

	if (c->fd >= 0) {
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		s->st.closed++;
	}
	if (c->shm) {
		/* a producer still writing sees this and stops */
		__atomic_store_n(&c->shm->cons_state, RT_INJECT_CONS_CLOSED, __ATOMIC_RELEASE);
		munmap(c->shm, c->map_len);
	}
	free(c->mc);
	if (c->i.source_id && s->on_close)
		s->on_close(c->i.source_id, c->i.pid, s->ctx);
	for (i = 0; i < s->nconns; i++) {
		if (s->conns[i] == c) {
			s->conns[i] = s->conns[--s->nconns];
			break;
		}
	}
	free(c);
}

static void peer_gone(struct rt_inject_server *s, struct conn *c)
{
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	s->st.closed++;
	if (c->i.state == RT_INJECT_CONN_ACTIVE) {
		c->i.state = RT_INJECT_CONN_CLOSING; /* consume() drains, then finishes */
		dlog("inject: pid %u gone, draining source %u", c->i.pid, c->i.source_id);
		return;
	}
	finish(s, c);
}

static int send_welcome(struct rt_inject_server *s, int fd, __s32 status, const struct conn *c,
			int ring_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct rt_inject_welcome w;
	struct iovec iov = { .iov_base = &w, .iov_len = sizeof(w) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	memset(&w, 0, sizeof(w));
	w.hdr.magic = RT_INJECT_MAGIC;
	w.hdr.version = RT_INJECT_VERSION;
	w.hdr.type = RT_INJECT_MSG_WELCOME;
	w.hdr.size = sizeof(w);
	w.status = status;
	if (c) {
		w.source_id = c->i.source_id;
		w.pid = c->i.pid;
		w.flush_ms = s->flush_ms;
		w.horizon_ms = s->horizon_ms;
	}
	if (ring_fd >= 0) {
		w.ring_hdr_size = RT_INJECT_RING_HDR_SIZE;
		w.ring_data_size = c->size;
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &ring_fd, sizeof(int));
	}
	n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	return n == sizeof(w) ? 0 : -EIO;
}

static const char *status_str(__u32 st)
{
	static const char *const names[RT_INJECT_ST__COUNT] = {
		[RT_INJECT_ST_OK] = "ok",
		[RT_INJECT_ST_NO_CUPTI] = "libcupti not found",
		[RT_INJECT_ST_CUPTI_BUSY] = "another profiler holds CUPTI",
		[RT_INJECT_ST_CUPTI_VERSION] = "libcupti version mismatch",
		[RT_INJECT_ST_CUPTI_ERROR] = "CUPTI setup failed",
	};

	return st < RT_INJECT_ST__COUNT ? names[st] : "unknown status";
}

static void reject(struct rt_inject_server *s, struct conn *c, __s32 status, const char *why)
{
	wlog("inject: pid %u (%s): %s", c->i.pid, c->i.comm[0] ? c->i.comm : "?", why);
	if (status)
		send_welcome(s, c->fd, status, NULL, -1);
	s->st.rejected++;
	finish(s, c);
}

static void on_hello(struct rt_inject_server *s, struct conn *c, const struct rt_inject_hello *h,
		     size_t n)
{
	int ring_fd, err;

	/* role was appended to HELLO: a shorter one comes from the CUPTI library */
	c->i.role = n >= offsetof(struct rt_inject_hello, role) + sizeof(h->role) ?
			    h->role :
			    RT_INJECT_ROLE_CUPTI;
	if (c->i.role > RT_INJECT_ROLE_MARKER) {
		reject(s, c, -EPROTO, "unknown role");
		return;
	}
	memcpy(c->i.comm, h->comm, sizeof(c->i.comm));
	c->i.comm[sizeof(c->i.comm) - 1] = '\0';
	c->i.status = h->status < RT_INJECT_ST__COUNT ? h->status : RT_INJECT_ST_CUPTI_ERROR;
	c->i.cupti_version = h->cupti_version;
	c->i.cupti_result = h->cupti_result;
	c->i.lost_unconnected = h->lost_unconnected;
	if (h->event_version != RT_EVENT_VERSION) {
		reject(s, c, -EPROTO, "event format version mismatch");
		return;
	}
	if (c->i.lost_unconnected)
		ilog("inject: pid %u (%s) dropped %llu records while no daemon listened", c->i.pid,
		     c->i.comm, (unsigned long long)c->i.lost_unconnected);
	if (c->i.status != RT_INJECT_ST_OK) {
		if (send_welcome(s, c->fd, RT_INJECT_ACCEPTED, c, -1)) {
			reject(s, c, 0, "cannot answer HELLO");
			return;
		}
		c->i.state = RT_INJECT_CONN_IDLE;
		s->st.accepted++;
		ilog("inject: pid %u (%s) cannot collect: %s", c->i.pid, c->i.comm,
		     status_str(c->i.status));
		return;
	}
	ring_fd = ring_create(s, c, s->next_source);
	if (ring_fd < 0) {
		reject(s, c, -ENOMEM, "cannot create a ring");
		return;
	}
	c->i.source_id = s->next_source;
	err = send_welcome(s, c->fd, RT_INJECT_ACCEPTED, c, ring_fd);
	close(ring_fd); /* the producer has its copy, we keep the mapping */
	if (err) {
		c->i.source_id = 0;
		reject(s, c, 0, "cannot send the ring");
		return;
	}
	s->next_source = s->next_source + 1 ? s->next_source + 1 : 1;
	c->i.state = RT_INJECT_CONN_ACTIVE;
	s->st.accepted++;
	ilog("inject: pid %u (%s) connected%s: source %u, ring %llu KiB", c->i.pid, c->i.comm,
	     c->mc ? " for markers" : "", c->i.source_id, (unsigned long long)(c->size >> 10));
}

static void on_message(struct rt_inject_server *s, struct conn *c, const void *msg, size_t n,
		       int truncated)
{
	const struct rt_inject_status_msg *st = msg;
	struct rt_inject_msg_hdr h;

	if (n < sizeof(h) || truncated) {
		reject(s, c, -EPROTO, "malformed message");
		return;
	}
	memcpy(&h, msg, sizeof(h));
	if (h.magic != RT_INJECT_MAGIC || h.version != RT_INJECT_VERSION || h.size != n) {
		reject(s, c, -EPROTO, "bad message header or protocol version");
		return;
	}
	if (h.type == RT_INJECT_MSG_HELLO && c->i.state == RT_INJECT_CONN_HELLO &&
	    n >= sizeof(struct rt_inject_hello)) {
		on_hello(s, c, msg, n);
		return;
	}
	if (h.type == RT_INJECT_MSG_STATUS && c->i.state != RT_INJECT_CONN_HELLO &&
	    n >= sizeof(*st)) {
		c->i.status =
			st->status < RT_INJECT_ST__COUNT ? st->status : RT_INJECT_ST_CUPTI_ERROR;
		c->i.cupti_result = st->cupti_result;
		ilog("inject: pid %u (%s) status: %s", c->i.pid, c->i.comm,
		     status_str(c->i.status));
		return;
	}
	reject(s, c, -EPROTO, "unexpected message");
}

/* Reads what a peer sent; c may be freed on return. */
static void on_conn(struct rt_inject_server *s, struct conn *c)
{
	__u64 msg[RT_INJECT_MSG_MAX / 8];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr mh;
	__u32 nconns;
	ssize_t n;
	int i;

	for (i = 0; i < MSGS_PER_EVENT; i++) {
		/* no control buffer: fds a peer tries to pass are discarded by the kernel */
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			peer_gone(s, c);
			return;
		}
		nconns = s->nconns;
		on_message(s, c, msg, n, mh.msg_flags & MSG_TRUNC);
		if (s->nconns != nconns)
			return; /* rejected and freed */
	}
}

static void on_accept(struct rt_inject_server *s)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct ucred cred;
	socklen_t len;
	struct conn *c;
	int i, fd;

	for (i = 0; i < ACCEPTS_PER_CALL; i++) {
		fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				wlog("inject: accept: %s", strerror(errno));
			return;
		}
		len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0) {
			close(fd);
			s->st.rejected++;
			continue;
		}
		if (!s->allow_pid || !s->allow_pid((__u32)cred.pid, s->ctx)) {
			ilog("inject: refused pid %d (uid %u): not in a target group",
			     (int)cred.pid, (unsigned)cred.uid);
			send_welcome(s, fd, -EPERM, NULL, -1);
			close(fd);
			s->st.refused++;
			continue;
		}
		c = s->nconns < s->max_conns ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			wlog("inject: pid %d refused: %u injected processes already", (int)cred.pid,
			     s->nconns);
			send_welcome(s, fd, -EMFILE, NULL, -1);
			close(fd);
			s->st.rejected++;
			continue;
		}
		c->fd = fd;
		c->i.pid = (__u32)cred.pid;
		c->i.state = RT_INJECT_CONN_HELLO;
		c->t_accept = now_ns();
		ev.data.ptr = c;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			free(c);
			s->st.rejected++;
			continue;
		}
		s->conns[s->nconns++] = c;
	}
}

int rt_inject_server__on_readable(struct rt_inject_server *s)
{
	struct epoll_event evs[EVENTS_PER_CALL];
	int n, i;

	n = epoll_wait(s->epfd, evs, EVENTS_PER_CALL, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++) {
		if (!evs[i].data.ptr)
			on_accept(s);
	}
	/* sessions freed while handling one event may appear later in evs:
	 * look each up in the live set before touching it */
	for (i = 0; i < n; i++) {
		struct conn *c = evs[i].data.ptr;
		__u32 j;

		if (!c)
			continue;
		for (j = 0; j < s->nconns && s->conns[j] != c; j++)
			;
		if (j < s->nconns && c->fd >= 0)
			on_conn(s, c);
	}
	return 0;
}

/* ---- records ---------------------------------------------------------- */

static int corr_ok(__u64 corr)
{
	return corr <= 0xffffffffULL; /* CUPTI correlation ids are 32-bit */
}

static int interval_ok(__u64 start, __u64 end, __u64 now)
{
	return end >= start && end - start <= RT_INJECT_MAX_DURATION_NS &&
	       end <= now + RT_INJECT_FUTURE_SLACK_NS;
}

/* Per-kind checks beyond event_check.h: only what a CUDA process may send. */
static int record_ok(const struct conn *c, const struct rt_event_hdr *ev, __u64 now)
{
	const struct rt_ev_gpu_kernel *k = (const void *)ev;
	const struct rt_ev_gpu_memcpy *m = (const void *)ev;
	const struct rt_ev_gpu_memset *ms = (const void *)ev;
	const struct rt_ev_gpu_sync *sy = (const void *)ev;
	const struct rt_ev_gpu_ext_corr *x = (const void *)ev;
	const struct rt_ev_cuda_api *a = (const void *)ev;
	const struct rt_ev_loss *l = (const void *)ev;

	if (rt_event_check(ev, ev->size, NULL))
		return 0;
	if (ev->source != c->i.source_id || ev->pid != c->i.pid)
		return 0;
	if (!ev->ts_ns || ev->ts_ns > now + RT_INJECT_FUTURE_SLACK_NS ||
	    ev->ts_ns + RT_INJECT_PAST_SLACK_NS < c->t_accept)
		return 0;
	switch (ev->kind) {
	case RT_EV_GPU_KERNEL:
		return interval_ok(ev->ts_ns, k->end_ns, now) && corr_ok(k->corr_id) &&
		       k->device < RT_INJECT_MAX_DEVICE;
	case RT_EV_GPU_MEMCPY:
		return interval_ok(ev->ts_ns, m->end_ns, now) && corr_ok(m->corr_id) &&
		       m->device < RT_INJECT_MAX_DEVICE && m->src_device < RT_INJECT_MAX_DEVICE &&
		       m->dst_device < RT_INJECT_MAX_DEVICE;
	case RT_EV_GPU_MEMSET:
		return interval_ok(ev->ts_ns, ms->end_ns, now) && corr_ok(ms->corr_id) &&
		       ms->device < RT_INJECT_MAX_DEVICE;
	case RT_EV_GPU_SYNC:
		return interval_ok(ev->ts_ns, sy->end_ns, now) && corr_ok(sy->corr_id);
	case RT_EV_GPU_EXT_CORR:
		return corr_ok(x->corr_id);
	case RT_EV_CUDA_API_EXIT:
		return interval_ok(a->enter_ns, ev->ts_ns, now) && corr_ok(a->corr_id);
	case RT_EV_LOSS:
		return l->reason >= RT_LOSS_RING_FULL && l->reason <= RT_LOSS_QUEUE_FULL &&
		       l->count && ev->ts_ns - l->since_ns <= RT_INJECT_MAX_DURATION_NS;
	case RT_EV_WATERMARK:
		return 1;
	default:
		return 0; /* a CUDA process has no business sending other kinds */
	}
}

static int emit_source_info(struct conn *c, rt_event_fn fn, void *ctx, __u64 now)
{
	struct rt_ev_source_info si;
	int err;

	memset(&si, 0, sizeof(si));
	si.hdr.kind = RT_EV_SOURCE_INFO;
	si.hdr.size = sizeof(si);
	si.hdr.source = c->i.source_id;
	si.hdr.ts_ns = now;
	si.hdr.pid = c->i.pid;
	si.id = c->i.source_id;
	si.type = c->mc ? RT_SRC_MARKER : RT_SRC_CUPTI;
	snprintf(si.name, sizeof(si.name), "%s:%u", c->mc ? "marker" : "cupti", c->i.pid);
	err = fn(&si.hdr, ctx);
	if (!err)
		c->info_sent = 1;
	return err;
}

static int emit_invalid(struct conn *c, rt_event_fn fn, void *ctx, __u64 now)
{
	struct rt_ev_loss l;
	int err;

	memset(&l, 0, sizeof(l));
	l.hdr.kind = RT_EV_LOSS;
	l.hdr.size = sizeof(l);
	l.hdr.source = c->i.source_id;
	l.hdr.ts_ns = now;
	l.hdr.pid = c->i.pid;
	l.since_ns = c->pending_since;
	l.count = c->pending_invalid;
	l.reason = RT_LOSS_INVALID;
	err = fn(&l.hdr, ctx);
	if (!err)
		c->pending_invalid = 0;
	return err;
}

static void count_invalid(struct rt_inject_server *s, struct conn *c, __u64 now)
{
	if (!c->pending_invalid)
		c->pending_since = now;
	c->pending_invalid++;
	c->i.invalid++;
	s->st.invalid++;
}

static void framing_lost(struct rt_inject_server *s, struct conn *c, const char *why)
{
	wlog("inject: pid %u (%s): %s at ring position %llu: dropping its ring", c->i.pid,
	     c->i.comm, why, (unsigned long long)c->cons);
	c->broken = 1;
	s->st.framing++;
}

/* ---- marker rings ---------------------------------------------------- */

/* What a marker library may write (the BPF marker programs' records). */
static int mark_record_ok(const struct conn *c, const struct rt_event_hdr *ev, __u64 now)
{
	const struct rt_ev_loss *l = (const void *)ev;

	if (rt_event_check(ev, ev->size, NULL))
		return 0;
	/* stamped after the slot was reserved, so never before the ring existed */
	if (ev->source != c->i.source_id || ev->pid != c->i.pid || !ev->tid ||
	    ev->ts_ns < c->t_accept || ev->ts_ns > now + RT_INJECT_FUTURE_SLACK_NS)
		return 0;
	switch (ev->kind) {
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END:
	case RT_EV_MARK_STEP_BEGIN:
	case RT_EV_MARK_STEP_MEMBER:
	case RT_EV_MARK_STEP_TOKENS:
	case RT_EV_MARK_STEP_END:
	case RT_EV_MARK_BIND:
		return 1;
	case RT_EV_LOSS:
		return l->reason == RT_LOSS_STEP_TRUNC && l->count;
	default:
		return 0;
	}
}

struct mark_ctx {
	struct rt_inject_server *s;
	struct conn *c;
	rt_event_fn fn;
	void *ctx;
	__u64 now;
};

static int mark_one(const struct rt_event_hdr *ev, void *arg)
{
	struct mark_ctx *m = arg;
	struct conn *c = m->c;
	int err;

	if (!mark_record_ok(c, ev, m->now)) {
		count_invalid(m->s, c, m->now);
		m->s->st.mark_invalid++;
		return 0;
	}
	err = m->fn(ev, m->ctx);
	if (err)
		return err;
	if (ev->ts_ns < c->wm_sent) {
		/* its slot outwaited the lateness horizon: the merge amends */
		c->i.late++;
		m->s->st.mark_late++;
	}
	if (ev->kind == RT_EV_LOSS) {
		c->i.lost += ((const struct rt_ev_loss *)ev)->count;
		m->s->st.lost += ((const struct rt_ev_loss *)ev)->count;
	}
	c->i.records++;
	m->s->st.records++;
	m->s->st.mark_records++;
	return 0;
}

static int emit_mark_loss(struct conn *c, rt_event_fn fn, void *ctx, __u64 n, __u64 now)
{
	struct rt_ev_loss l;

	memset(&l, 0, sizeof(l));
	l.hdr.kind = RT_EV_LOSS;
	l.hdr.size = sizeof(l);
	l.hdr.source = c->i.source_id;
	l.hdr.ts_ns = now;
	l.hdr.pid = c->i.pid;
	l.since_ns = c->wm_sent && c->wm_sent < now ? c->wm_sent : now;
	l.count = n;
	l.reason = RT_LOSS_INJECT_RING;
	l.lost_kind = RT_EV_NONE;
	return fn(&l.hdr, ctx);
}

static int emit_mark_wm(struct conn *c, rt_event_fn fn, void *ctx)
{
	struct rt_ev_watermark w;
	int err;

	memset(&w, 0, sizeof(w));
	w.hdr.kind = RT_EV_WATERMARK;
	w.hdr.size = sizeof(w);
	w.hdr.source = c->i.source_id;
	w.hdr.ts_ns = c->mc->wm;
	w.hdr.pid = c->i.pid;
	err = fn(&w.hdr, ctx);
	if (!err)
		c->wm_sent = c->i.watermark_ns = c->mc->wm;
	return err;
}

/*
 * Drains a marker ring: its committed slots' records, a LOSS for what the
 * producers dropped, then the watermark the consumer worked out.
 */
static int drain_marks(struct rt_inject_server *s, struct conn *c, rt_event_fn fn, void *ctx,
		       __u64 now)
{
	struct mark_ctx m = { .s = s, .c = c, .fn = fn, .ctx = ctx, .now = now };
	__u64 drops;
	int n, err = 0;

	n = rt_mark_cons__drain(c->mc, now, RT_MARK_HORIZON_NS, s->max_batch, mark_one, &m);
	if (n == -EPROTO) {
		framing_lost(s, c, "marker slot out of bounds");
		return 0;
	}
	if (n < 0)
		return n;
	c->cons = c->mc->cons;
	if (rt_mark_cons__stalled_ns(c->mc, now) > RT_MARK_ABANDON_NS) {
		s->st.mark_stalled++;
		framing_lost(s, c, "a marker slot stayed uncommitted");
		return n;
	}
	drops = rt_mark_cons__new_drops(c->mc);
	if (drops)
		err = emit_mark_loss(c, fn, ctx, drops, now);
	if (!err && c->pending_invalid)
		err = emit_invalid(c, fn, ctx, now);
	if (!err && c->mc->wm > c->wm_sent &&
	    (n > 0 || c->mc->wm - c->wm_sent >= RT_MARK_WM_STEP_NS))
		err = emit_mark_wm(c, fn, ctx);
	return err ? err : n;
}

/*
 * Drains one ring. Returns records passed on or fn's error. The producer
 * may rewrite anything at any time: each field is read once, into a
 * private copy, and checked there.
 */
static int drain(struct rt_inject_server *s, struct conn *c, rt_event_fn fn, void *ctx, __u64 now)
{
	struct rt_event_hdr *ev = (struct rt_event_hdr *)s->rec.buf;
	__u64 prod, off, contig, left;
	__u16 kind, size;
	__u32 n = 0;
	int err = 0;

	if (!c->info_sent) {
		err = emit_source_info(c, fn, ctx, now);
		if (err)
			return err;
	}
	if (c->mc)
		return drain_marks(s, c, fn, ctx, now);
	prod = __atomic_load_n(&c->shm->prod_pos, __ATOMIC_ACQUIRE);
	if (prod - c->cons > c->size || (prod & (RT_EVENT_ALIGN - 1))) {
		framing_lost(s, c, "producer position out of bounds");
		return 0;
	}
	while (c->cons != prod && n < s->max_batch) {
		off = c->cons & (c->size - 1);
		contig = c->size - off;
		left = prod - c->cons;
		memcpy(&kind, c->data + off, sizeof(kind));
		memcpy(&size, c->data + off + 2, sizeof(size));
		if (kind == RT_EV_NONE) { /* wrap marker: the rest of the area is unused */
			if (contig > left) {
				framing_lost(s, c, "wrap marker past the producer");
				break;
			}
			c->cons += contig;
			continue;
		}
		if (size < sizeof(*ev) || (size & (RT_EVENT_ALIGN - 1)) || size > RT_EVENT_MAX ||
		    size > contig || size > left) {
			framing_lost(s, c, "record size out of bounds");
			break;
		}
		memcpy(s->rec.buf, c->data + off, size);
		if (ev->kind != kind || ev->size != size || !record_ok(c, ev, now)) {
			count_invalid(s, c, now);
		} else if (ev->kind == RT_EV_WATERMARK && ev->ts_ns <= c->i.watermark_ns) {
			/* not a step forward: nothing to say */
		} else {
			err = fn(ev, ctx);
			if (err)
				break; /* offered again next time */
			if (ev->kind == RT_EV_WATERMARK)
				c->i.watermark_ns = ev->ts_ns;
			if (ev->kind == RT_EV_LOSS) {
				c->i.lost += ((struct rt_ev_loss *)ev)->count;
				s->st.lost += ((struct rt_ev_loss *)ev)->count;
			}
			c->i.records++;
			s->st.records++;
			n++;
		}
		c->cons += size;
	}
	__atomic_store_n(&c->shm->cons_pos, c->cons, __ATOMIC_RELEASE);
	if (!err && c->pending_invalid)
		err = emit_invalid(c, fn, ctx, now);
	return err ? err : (int)n;
}

int rt_inject_server__consume(struct rt_inject_server *s, rt_event_fn fn, void *ctx)
{
	__u64 now = now_ns(), prod;
	struct conn *c;
	int total = 0, r;
	__u32 i;

	for (i = 0; i < s->nconns;) {
		c = s->conns[i];
		if (c->i.state == RT_INJECT_CONN_HELLO &&
		    now - c->t_accept > RT_INJECT_HELLO_TIMEOUT_NS) {
			reject(s, c, 0, "no HELLO in time");
			continue; /* slot i now holds another session */
		}
		if (c->i.state != RT_INJECT_CONN_ACTIVE && c->i.state != RT_INJECT_CONN_CLOSING) {
			i++;
			continue;
		}
		r = drain(s, c, fn, ctx, now);
		if (r < 0)
			return r;
		total += r;
		prod = __atomic_load_n(&c->shm->prod_pos, __ATOMIC_ACQUIRE);
		/* a marker ring's writers are the process's threads: at EOF they
		 * are gone, and what they left uncommitted never will be */
		if (c->broken || (c->i.state == RT_INJECT_CONN_CLOSING &&
				  (prod == c->cons || (c->mc && r < (int)s->max_batch)))) {
			if (c->i.state == RT_INJECT_CONN_CLOSING)
				dlog("inject: source %u (pid %u) finished", c->i.source_id,
				     c->i.pid);
			finish(s, c);
			continue;
		}
		i++;
	}
	return total;
}

/* ---- lifetime --------------------------------------------------------- */

static int make_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];

	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir(dirname(dir), 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* 1 if a live server answers at path. */
static int path_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int live;

	if (fd < 0)
		return 0;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 || errno == EAGAIN;
	close(fd);
	return live;
}

static int listen_on(struct rt_inject_server *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int err;

	strcpy(sa.sun_path, s->path);
	err = make_dir(s->path);
	if (err)
		return err;
	s->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return -errno;
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		if (err != -EADDRINUSE || lstat(s->path, &st) < 0 || !S_ISSOCK(st.st_mode) ||
		    path_live(&sa))
			return err;
		unlink(s->path); /* stale socket of a daemon that died */
		if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			return -errno;
	}
	/* peers are filtered by pid, not by file mode (design: anyone may connect) */
	if (chmod(s->path, 0666) < 0 || listen(s->lfd, 64) < 0) {
		err = -errno;
		unlink(s->path);
		return err;
	}
	return 0;
}

struct rt_inject_server *rt_inject_server__new(const struct rt_inject_server_opts *o)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	const char *path = o->path ? o->path : RT_INJECT_SOCKET_DEFAULT;
	struct rt_inject_server *s;
	int err;

	if (strlen(path) >= sizeof(s->path) || !*path || o->ring_bytes > RT_INJECT_RING_MAX) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->lfd = s->epfd = -1;
	strcpy(s->path, path);
	s->ring_bytes = ring_size(o->ring_bytes);
	s->next_source = o->first_source_id ? o->first_source_id : 1;
	s->max_conns = o->max_conns ? o->max_conns : RT_INJECT_CONNS_DEFAULT;
	s->flush_ms = o->flush_ms ? o->flush_ms : RT_INJECT_FLUSH_MS_DEFAULT;
	s->horizon_ms = o->horizon_ms ? o->horizon_ms : RT_INJECT_HORIZON_MS_DEFAULT;
	s->max_batch = o->max_batch ? o->max_batch : RT_INJECT_BATCH_DEFAULT;
	s->allow_pid = o->allow_pid;
	s->on_close = o->on_close;
	s->ctx = o->ctx;
	s->conns = calloc(s->max_conns, sizeof(*s->conns));
	if (!s->conns) {
		err = -ENOMEM;
		goto fail;
	}
	err = listen_on(s);
	if (err) {
		elog("inject: cannot listen on %s: %s", s->path, strerror(-err));
		goto fail;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev) < 0) {
		err = -errno;
		unlink(s->path);
		goto fail;
	}
	return s;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->epfd >= 0)
		close(s->epfd);
	free(s->conns);
	free(s);
	errno = -err;
	return NULL;
}

void rt_inject_server__free(struct rt_inject_server *s)
{
	if (!s)
		return;
	while (s->nconns)
		finish(s, s->conns[s->nconns - 1]);
	close(s->lfd);
	close(s->epfd);
	unlink(s->path);
	free(s->conns);
	free(s);
}

int rt_inject_server__epoll_fd(const struct rt_inject_server *s)
{
	return s->epfd;
}

void rt_inject_server__stats(const struct rt_inject_server *s, struct rt_inject_server_stats *st)
{
	*st = s->st;
	st->conns = s->nconns;
}

int rt_inject_server__conns(const struct rt_inject_server *s, struct rt_inject_conn_info *out,
			    int max)
{
	int i;

	for (i = 0; i < (int)s->nconns && i < max; i++)
		out[i] = s->conns[i]->i;
	return (int)s->nconns;
}
