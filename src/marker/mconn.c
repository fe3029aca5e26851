// SPDX-License-Identifier: BSD-2-Clause
/*
 * The marker library's session with reqtraced: the injection handshake
 * (src/cupti/proto.c, shared with libreqtrace_cupti.so) with role MARKER,
 * from a background thread started by the first marker call. It maps the
 * ring, publishes it in rt_mark_ring, then waits on the socket: EOF or a
 * closed ring unpublishes it and the calls fall back to the uprobe attach
 * points until the next handshake succeeds.
 *
 * A ring is never unmapped while the process may still write it: a thread
 * that loaded rt_mark_ring just before it was cleared may be filling a slot.
 * The old mapping is replaced in place by anonymous memory instead (late
 * writes land there, harmlessly) and its descriptor is never freed.
 *
 * fork(): the ring is mapped MADV_DONTFORK, so a child never has its
 * parent's ring at all; the child handler clears the pointer, the socket
 * and the state, and the child's first marker call starts its own session.
 *
 * REQTRACE_MARKER_SHM: "0" never connects (uprobes only); "1" connects as
 * the library loads and drops calls made while no ring is attached (tests
 * use it to prove the ring carried every record); unset: connect at the
 * first call, fall back to uprobes meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mlib.h"
#include "proto.h"
#include "ring.h"

#define HANDSHAKE_MS 500
#define RETRY_MIN_MS 250
/* a daemon started later finds us within this */
#define RETRY_MAX_MS 4000
/* refused (not a target yet): each attempt is a line in the daemon's log */
#define RETRY_REFUSED_MAX_MS 30000
#define LIVENESS_MS 1000 /* how often a ring closed without EOF is noticed */

struct rt_mring *rt_mark_ring;
int rt_mark_state;

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int sock = -1; /* the session's socket (atomic: the fork child closes it) */
static int shm_only;
/* Descriptors of retired rings: a thread may still be writing through one,
 * so they are never freed; the list keeps them reachable (~48 B each). */
static struct rt_mring *retired;

/* Unpublishes the ring and swaps its pages for anonymous memory (see top). */
static void retire(struct rt_mring *r)
{
	__atomic_store_n(&rt_mark_ring, NULL, __ATOMIC_RELEASE);
	if (!r)
		return;
	mmap(r->shm, r->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
	     -1, 0);
	r->retired_next = retired;
	retired = r;
}

static void read_comm(char comm[16])
{
	ssize_t n = 0;
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);

	memset(comm, 0, 16);
	if (fd >= 0) {
		n = read(fd, comm, 15);
		close(fd);
	}
	if (n > 0 && comm[n - 1] == '\n')
		comm[n - 1] = '\0';
}

/* One handshake; on success the ring is published and *fd_out is the socket. */
static int session(const char *path, int *fd_out)
{
	struct rt_inject_hello h;
	struct rt_inject_welcome w;
	struct rt_mring *r = NULL;
	int fd, ring_fd = -1, err;
	void *map = MAP_FAILED;

	memset(&w, 0, sizeof(w));
	fd = rt_cupti_proto_connect(path, HANDSHAKE_MS);
	if (fd < 0)
		return fd;
	memset(&h, 0, sizeof(h));
	h.event_version = RT_EVENT_VERSION;
	h.status = RT_INJECT_ST_OK;
	h.pid = (__u32)getpid();
	h.role = RT_INJECT_ROLE_MARKER;
	read_comm(h.comm);
	err = rt_cupti_proto_send_hello(fd, &h);
	if (!err)
		err = rt_cupti_proto_recv_welcome(fd, HANDSHAKE_MS, &w, &ring_fd);
	if (err)
		goto fail;
	err = w.status != RT_INJECT_ACCEPTED ? (w.status < 0 ? w.status : -EPROTO) : 0;
	/* another pid namespace: getpid()/gettid() are not the daemon's ids */
	if (!err && w.pid != h.pid)
		err = -EXDEV;
	if (!err)
		err = ring_fd < 0 ?
			      -EPROTO :
			      rt_cupti_ring_check_fd(ring_fd, w.ring_hdr_size, w.ring_data_size);
	if (err)
		goto fail;
	/* populated here, on the library's own thread: a first touch from a
	 * marker call would fault a shared page in on the caller's thread, and
	 * under memory pressure a fault can stall it in reclaim for
	 * milliseconds */
	map = mmap(NULL, w.ring_hdr_size + w.ring_data_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_POPULATE, ring_fd, 0);
	r = malloc(sizeof(*r));
	if (map == MAP_FAILED || !r) {
		err = -ENOMEM;
		goto fail;
	}
	madvise(map, w.ring_hdr_size + w.ring_data_size, MADV_DONTFORK);
	err = rt_mring_init(r, map, w.ring_hdr_size, w.ring_data_size);
	if (err || r->source_id != w.source_id || r->pid != w.pid) {
		err = err ? err : -EPROTO;
		goto fail;
	}
	close(ring_fd);
	*fd_out = fd;
	__atomic_store_n(&rt_mark_ring, r, __ATOMIC_RELEASE);
	return 0;
fail:
	if (map != MAP_FAILED)
		munmap(map, w.ring_hdr_size + w.ring_data_size);
	free(r);
	if (ring_fd >= 0)
		close(ring_fd);
	close(fd);
	return err;
}

/* Waits until the daemon goes away (EOF) or closes the ring. */
static void watch(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct rt_mring *r;
	char buf[RT_INJECT_MSG_MAX];
	ssize_t n;

	for (;;) {
		r = __atomic_load_n(&rt_mark_ring, __ATOMIC_ACQUIRE);
		if (!r ||
		    __atomic_load_n(&r->shm->cons_state, __ATOMIC_RELAXED) == RT_INJECT_CONS_CLOSED)
			return;
		if (poll(&p, 1, LIVENESS_MS) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

static void *thread_main(void *arg)
{
	const char *path = arg;
	long backoff = RETRY_MIN_MS, max;
	int fd, err;

	prctl(PR_SET_NAME, "reqtrace-mark", 0, 0, 0);
	/* stripped of the attach points, we are probed on the API: no ring then */
	if (!rt_mark_probes_findable())
		return NULL;
	for (;;) {
		err = session(path, &fd);
		if (!err) {
			__atomic_store_n(&sock, fd, __ATOMIC_RELEASE);
			watch(fd);
			retire(__atomic_load_n(&rt_mark_ring, __ATOMIC_ACQUIRE));
			__atomic_store_n(&sock, -1, __ATOMIC_RELEASE);
			close(fd);
			backoff = RETRY_MIN_MS;
		}
		usleep((useconds_t)backoff * 1000);
		max = err == -EPERM ? RETRY_REFUSED_MAX_MS : RETRY_MAX_MS;
		backoff = backoff * 2 > max ? max : backoff * 2;
	}
	return NULL;
}

static void fork_child(void)
{
	int fd = __atomic_load_n(&sock, __ATOMIC_ACQUIRE);

	struct rt_mring *r = __atomic_load_n(&rt_mark_ring, __ATOMIC_ACQUIRE);

	/* MADV_DONTFORK: the parent's ring is not mapped here at all */
	__atomic_store_n(&rt_mark_ring, NULL, __ATOMIC_RELEASE);
	if (r) { /* its descriptor was copied with the heap: listed, never used */
		r->retired_next = retired;
		retired = r;
	}
	if (fd >= 0)
		close(fd); /* the parent's session: its EOF must stay the parent's */
	__atomic_store_n(&sock, -1, __ATOMIC_RELEASE);
	rt_mark_w_forget_tid();
	pthread_mutex_init(&start_lock, NULL);
	__atomic_store_n(&rt_mark_state, RT_MARK_UNSTARTED, __ATOMIC_RELEASE);
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

static int start_thread(void)
{
	static char path[108];
	const char *p = getenv(RT_INJECT_SOCKET_ENV);
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int err;

	if (!p || !*p)
		p = RT_INJECT_SOCKET_DEFAULT;
	if (strlen(p) >= sizeof(path))
		return -ENAMETOOLONG;
	strcpy(path, p);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* the host's signals are the host's: none of them lands on our thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&t, &attr, thread_main, path);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return err;
}

/* REQTRACE_MARKER_SHM=1 connects at load: a ring before the first call */
__attribute__((constructor)) static void start_early(void)
{
	const char *mode = getenv("REQTRACE_MARKER_SHM");

	if (mode && !strcmp(mode, "1"))
		rt_mark_start();
}

void rt_mark_start(void)
{
	const char *mode;

	pthread_mutex_lock(&start_lock);
	if (__atomic_load_n(&rt_mark_state, __ATOMIC_ACQUIRE) != RT_MARK_UNSTARTED)
		goto out;
	pthread_once(&atfork_once, register_atfork);
	mode = getenv("REQTRACE_MARKER_SHM");
	shm_only = mode && !strcmp(mode, "1");
	if (!(mode && !strcmp(mode, "0")))
		start_thread();
	__atomic_store_n(&rt_mark_state, shm_only ? RT_MARK_SHM_ONLY : RT_MARK_FALLBACK,
			 __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&start_lock);
}
