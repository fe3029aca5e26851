// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz harness for the daemon's reader of the shared-memory injection
 * rings (src/sources/inject_server.c): every byte there is written by the
 * traced process. Each input is one producer session against a real
 * server: connect and HELLO through the library's client (src/cupti/
 * proto.c), map the ring, fill it up to a chosen start with filler
 * records and let the server drain them, then write the input's bytes from
 * there (wrapping round the data area), publish a chosen producer position,
 * drain, hang up and drain again. Every record handed on must pass
 * validation, and the closed session must be forgotten. Broken promises
 * abort().
 *
 * Input: byte 0 flags, bytes 1-2 the start (in 8-byte units), bytes 3-6 a
 * raw producer position offset, the rest the ring bytes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <reqtrace/event.h>
#include <reqtrace/inject.h>

#include "common/event_check.h"
#include "common/log.h"
#include "proto.h"
#include "ring.h"
#include "sources/inject_server.h"

enum {
	F_PATCH = 1 << 0, /* make framed records' source, pid and times plausible */
	F_RAW_PROD = 1 << 1, /* publish start + the raw offset, not start + the bytes */
	F_SPLIT = 1 << 2, /* publish in two steps, half the bytes first */
	F_HEADER = 1 << 3, /* scribble over the producer's header line as well */
};

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_ring: broken promise: %s (line %d)\n", #cond,        \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static struct rt_inject_server *srv;
static char sock_path[128];
static __u32 cur_source;

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int allow(__u32 pid, void *ctx)
{
	(void)ctx;
	return pid == (__u32)getpid();
}

static int collect(const struct rt_event_hdr *ev, void *ctx)
{
	const unsigned char *p = (const void *)ev;
	volatile unsigned char last;

	(void)ctx;
	CHECK(ev->size >= sizeof(*ev) && ev->size <= RT_EVENT_MAX);
	CHECK(rt_event_check(ev, ev->size, NULL) == 0);
	CHECK(ev->source == cur_source);
	last = p[ev->size - 1]; /* ASan sees a record handed on past its copy */
	(void)last;
	return 0;
}

static char sock_dir[64];

/* The server unlinks its socket; the folder goes too (replays run in CI). */
static void cleanup(void)
{
	rt_inject_server__free(srv);
	rmdir(sock_dir);
}

static void setup(void)
{
	struct rt_inject_server_opts o = {
		.path = sock_path,
		.ring_bytes = RT_INJECT_RING_MIN,
		.allow_pid = allow,
	};

	rt_log_set_level(RT_LOG_ERROR); /* a dropped ring is a warning each time */
	strcpy(sock_dir, "/tmp/rt-fuzz-ring-XXXXXX");
	CHECK(mkdtemp(sock_dir) != NULL);
	snprintf(sock_path, sizeof(sock_path), "%s/inject.sock", sock_dir);
	srv = rt_inject_server__new(&o);
	CHECK(srv != NULL);
	atexit(cleanup);
}

static __u64 get64(const __u8 *p)
{
	__u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put64(__u8 *p, __u64 v)
{
	memcpy(p, &v, sizeof(v));
}

/* Source, pid and times of each framed record at [pos, end) made to pass. */
static void patch(struct rt_cupti_ring *r, __u64 pos, __u64 end, __u32 source, __u64 now)
{
	while (pos + sizeof(struct rt_event_hdr) <= end) {
		__u64 off = pos & (r->size - 1), contig = r->size - off;
		struct rt_event_hdr h;
		__u8 *p = r->data + off;
		__u64 ts;

		memcpy(&h, p, sizeof(h));
		if (h.kind == RT_EV_NONE) {
			pos += contig;
			continue;
		}
		if (h.size < sizeof(h) || h.size % RT_EVENT_ALIGN || h.size > contig ||
		    pos + h.size > end)
			return;
		ts = now - 1000000 - (h.ts_ns & 0xffffff);
		h.source = source;
		h.pid = (__u32)getpid();
		h.ts_ns = ts;
		memcpy(p, &h, sizeof(h));
		if (h.size >= sizeof(h) + 8) {
			__u64 v = get64(p + sizeof(h)) & 0xffff;

			switch (h.kind) {
			case RT_EV_GPU_KERNEL:
			case RT_EV_GPU_MEMCPY:
			case RT_EV_GPU_MEMSET:
			case RT_EV_GPU_SYNC:
				put64(p + sizeof(h), ts + v); /* end_ns */
				break;
			case RT_EV_CUDA_API_EXIT:
			case RT_EV_LOSS:
				put64(p + sizeof(h), ts - v); /* enter_ns, since_ns */
				break;
			default:
				break;
			}
		}
		pos += h.size;
	}
}

/* Unknown-kind records from 0 up to start: the server counts them invalid. */
static void fill(struct rt_cupti_ring *r, __u64 start)
{
	__u64 pos = 0;

	while (pos < start) {
		__u64 n = start - pos;
		struct rt_event_hdr h = { .kind = 0xfffe };

		if (n > RT_EVENT_MAX)
			n = start - pos - RT_EVENT_MAX >= sizeof(h) ? RT_EVENT_MAX :
								      RT_EVENT_MAX / 2;
		h.size = (__u16)n;
		memset(r->data + pos, 0, n);
		memcpy(r->data + pos, &h, sizeof(h));
		pos += n;
	}
	__atomic_store_n(&r->shm->prod_pos, start, __ATOMIC_RELEASE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rt_inject_server_stats st;
	struct rt_inject_welcome w;
	struct rt_inject_hello h;
	struct rt_cupti_ring r;
	__u64 start, prod, n;
	__u32 raw;
	__u8 flags;
	int fd, ring_fd = -1;

	if (size < 7)
		return 0;
	if (!srv)
		setup();
	flags = data[0];
	memcpy(&raw, data + 3, sizeof(raw));
	fd = rt_cupti_proto_connect(sock_path, 100);
	CHECK(fd >= 0);
	CHECK(rt_inject_server__on_readable(srv) == 0);
	memset(&h, 0, sizeof(h));
	h.event_version = RT_EVENT_VERSION;
	h.status = RT_INJECT_ST_OK;
	h.pid = (__u32)getpid();
	strcpy(h.comm, "fuzz");
	CHECK(rt_cupti_proto_send_hello(fd, &h) == 0);
	CHECK(rt_inject_server__on_readable(srv) == 0);
	CHECK(rt_cupti_proto_recv_welcome(fd, 1000, &w, &ring_fd) == 0 && ring_fd >= 0);
	CHECK(rt_cupti_ring_map(&r, ring_fd, w.ring_hdr_size, w.ring_data_size) == 0);
	close(ring_fd);
	cur_source = w.source_id;

	data += 7;
	size -= 7;
	start = ((__u64)data[-6] | (__u64)data[-5] << 8) * RT_EVENT_ALIGN % r.size;
	if (start && start < sizeof(struct rt_event_hdr))
		start = sizeof(struct rt_event_hdr); /* room for one filler */
	if (start) {
		fill(&r, start);
		CHECK(rt_inject_server__consume(srv, collect, NULL) >= 0);
	}
	n = size < r.size ? size : r.size;
	for (__u64 i = 0; i < n; i++)
		r.data[(start + i) & (r.size - 1)] = data[i];
	prod = flags & F_RAW_PROD ? start + raw : start + (n & ~(__u64)(RT_EVENT_ALIGN - 1));
	if (flags & F_PATCH)
		patch(&r, start, start + n, w.source_id, now_ns());
	if (flags & F_HEADER) {
		r.shm->dropped = raw;
		r.shm->written = ~(__u64)raw;
	}
	if (flags & F_SPLIT) {
		__atomic_store_n(&r.shm->prod_pos, start + ((prod - start) / 2 & ~7ull),
				 __ATOMIC_RELEASE);
		CHECK(rt_inject_server__consume(srv, collect, NULL) >= 0);
	}
	__atomic_store_n(&r.shm->prod_pos, prod, __ATOMIC_RELEASE);
	CHECK(rt_inject_server__consume(srv, collect, NULL) >= 0);

	/* the process exits: its ring is drained, then forgotten */
	close(fd);
	CHECK(rt_inject_server__on_readable(srv) == 0);
	CHECK(rt_inject_server__consume(srv, collect, NULL) >= 0);
	rt_inject_server__stats(srv, &st);
	CHECK(st.conns == 0);
	rt_cupti_ring_unmap(&r);
	return 0;
}
