/* SPDX-License-Identifier: BSD-2-Clause */
#include "common/event_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <reqtrace/phase.h>

struct kind_info {
	const char *name;
	unsigned short min_size;
};

#define KIND(k, type) [RT_EV_##k] = { #k, sizeof(type) }

static const struct kind_info kinds[RT_EV__MAX] = {
	KIND(SCHED_SWITCH, struct rt_ev_sched_switch),
	KIND(SCHED_WAKING, struct rt_ev_sched_waking),
	KIND(TASK_NEW, struct rt_ev_task_new),
	KIND(PROC_EXEC, struct rt_ev_proc_exec),
	KIND(PROC_EXIT, struct rt_ev_proc_exit),
	KIND(SOCK_ACCEPT, struct rt_ev_sock_conn),
	KIND(SOCK_CONNECT, struct rt_ev_sock_conn),
	KIND(SOCK_RECV, struct rt_ev_sock_io),
	KIND(SOCK_SEND, struct rt_ev_sock_io),
	KIND(SOCK_CLOSE, struct rt_ev_sock_close),
	KIND(SOCK_SHUTDOWN, struct rt_ev_sock_close),
	KIND(SOCK_ARRIVAL, struct rt_ev_sock_arrival),
	KIND(MARK_BEGIN, struct rt_ev_mark),
	KIND(MARK_END, struct rt_ev_mark),
	KIND(MARK_STEP_BEGIN, struct rt_ev_mark_step),
	KIND(MARK_STEP_MEMBER, struct rt_ev_mark_step),
	KIND(MARK_STEP_END, struct rt_ev_mark_step),
	KIND(MARK_BIND, struct rt_ev_mark_bind),
	KIND(MARK_STEP_TOKENS, struct rt_ev_mark_step_tokens),
	KIND(PACK_CALL, struct rt_ev_pack_call),
	KIND(PACK_BATCH, struct rt_ev_pack_batch),
	KIND(CUDA_API_ENTER, struct rt_ev_cuda_api),
	KIND(CUDA_API_EXIT, struct rt_ev_cuda_api),
	KIND(NCCL_ENTER, struct rt_ev_nccl),
	KIND(NCCL_EXIT, struct rt_ev_nccl),
	KIND(ZMQ_MSG, struct rt_ev_zmq_msg),
	KIND(GPU_KERNEL, struct rt_ev_gpu_kernel),
	KIND(GPU_MEMCPY, struct rt_ev_gpu_memcpy),
	KIND(GPU_MEMSET, struct rt_ev_gpu_memset),
	KIND(GPU_SYNC, struct rt_ev_gpu_sync),
	KIND(GPU_EXT_CORR, struct rt_ev_gpu_ext_corr),
	KIND(LINK_SAMPLE, struct rt_ev_link_sample),
	KIND(LOSS, struct rt_ev_loss),
	KIND(WATERMARK, struct rt_ev_watermark),
	KIND(CLOCK, struct rt_ev_clock),
	KIND(SOURCE_INFO, struct rt_ev_source_info),
	KIND(TARGET, struct rt_ev_target),
	KIND(TRACE_END, struct rt_ev_trace_end),
};

size_t rt_event_min_size(unsigned int kind)
{
	return kind < RT_EV__MAX ? kinds[kind].min_size : 0;
}

const char *rt_event_kind_name(unsigned int kind)
{
	return kind < RT_EV__MAX ? kinds[kind].name : NULL;
}

__attribute__((format(printf, 3, 4))) static int fail(struct rt_event_fault *f, size_t off,
						      const char *fmt, ...)
{
	va_list ap;

	if (f) {
		f->offset = off;
		va_start(ap, fmt);
		vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

int rt_event_check_hdr(const struct rt_event_hdr *hdr, struct rt_event_fault *f)
{
	struct rt_event_hdr h;
	size_t min;

	memcpy(&h, hdr, sizeof(h)); /* hdr may be unaligned */
	if (h.size < sizeof(h))
		return fail(f, offsetof(struct rt_event_hdr, size),
			    "record size %u below header size %zu", h.size, sizeof(h));
	if (h.size % RT_EVENT_ALIGN)
		return fail(f, offsetof(struct rt_event_hdr, size),
			    "record size %u not a multiple of %d", h.size, RT_EVENT_ALIGN);
	if (h.size > RT_EVENT_MAX)
		return fail(f, offsetof(struct rt_event_hdr, size),
			    "record size %u above maximum %d", h.size, RT_EVENT_MAX);
	min = rt_event_min_size(h.kind);
	if (!min)
		return fail(f, offsetof(struct rt_event_hdr, kind), "unknown kind %u", h.kind);
	if (h.size < min)
		return fail(f, offsetof(struct rt_event_hdr, size),
			    "record size %u below %s body size %zu", h.size, kinds[h.kind].name,
			    min);
	return 0;
}

/* Field checks: each names the kind and the field, and points at the field. */
#define BAD(type, field, fmt, ...)                                                                 \
	fail(f, offsetof(type, field), "%s " #field " " fmt, kinds[ev->kind].name, ##__VA_ARGS__)

#define CHECK_STR(type, rec, field)                                                                \
	do {                                                                                       \
		if (!memchr((rec)->field, 0, sizeof((rec)->field)))                                \
			return BAD(type, field, "not NUL-terminated");                             \
	} while (0)

#define CHECK_MAX(type, rec, field, max)                                                           \
	do {                                                                                       \
		if ((rec)->field > (max))                                                          \
			return BAD(type, field, "%llu out of range",                               \
				   (unsigned long long)(rec)->field);                              \
	} while (0)

/* enter_ns/since_ns <= ts_ns <= end_ns: consumers subtract them. */
#define CHECK_BEFORE(type, rec, field)                                                             \
	do {                                                                                       \
		if ((rec)->field > ev->ts_ns)                                                      \
			return BAD(type, field, "%llu after ts %llu",                              \
				   (unsigned long long)(rec)->field,                               \
				   (unsigned long long)ev->ts_ns);                                 \
	} while (0)

#define CHECK_AFTER(type, rec, field)                                                              \
	do {                                                                                       \
		if ((rec)->field < ev->ts_ns)                                                      \
			return BAD(type, field, "%llu before ts %llu",                             \
				   (unsigned long long)(rec)->field,                               \
				   (unsigned long long)ev->ts_ns);                                 \
	} while (0)

static bool family_ok(__u16 family)
{
	return family == RT_AF_UNSPEC || family == RT_AF_UNIX || family == RT_AF_INET ||
	       family == RT_AF_INET6;
}

#define CHECK_ADDRS(type, rec)                                                                     \
	do {                                                                                       \
		if (!family_ok((rec)->local.family))                                               \
			return BAD(type, local.family, "%u unknown", (rec)->local.family);         \
		if (!family_ok((rec)->peer.family))                                                \
			return BAD(type, peer.family, "%u unknown", (rec)->peer.family);           \
	} while (0)

static int check_sock_io(const struct rt_event_hdr *ev, struct rt_event_fault *f)
{
	const struct rt_ev_sock_io *io = (const void *)ev;
	__u64 have = io->ret > 0 ? (__u64)io->ret : 0;

	CHECK_BEFORE(struct rt_ev_sock_io, io, enter_ns);
	if (io->syscall < RT_SYS_READ || io->syscall > RT_SYS_CONNECT)
		return BAD(struct rt_ev_sock_io, syscall, "%u unknown", io->syscall);
	CHECK_ADDRS(struct rt_ev_sock_io, io);
	CHECK_MAX(struct rt_ev_sock_io, io, head_len, RT_SOCK_HEAD_MAX);
	CHECK_MAX(struct rt_ev_sock_io, io, tail_len, RT_SOCK_TAIL_MAX);
	if (sizeof(*io) + io->head_len + io->tail_len > ev->size)
		return BAD(struct rt_ev_sock_io, head_len, "%u + tail_len %u exceed record size %u",
			   io->head_len, io->tail_len, ev->size);
	/* the gap is ret - head_len - tail_len: it must not be negative */
	if ((__u64)io->head_len + io->tail_len > have)
		return BAD(struct rt_ev_sock_io, head_len, "%u + tail_len %u exceed ret %lld",
			   io->head_len, io->tail_len, (long long)io->ret);
	return 0;
}

static int check_mark(const struct rt_event_hdr *ev, struct rt_event_fault *f)
{
	const struct rt_ev_mark *m = (const void *)ev;

	CHECK_MAX(struct rt_ev_mark, m, phase, RT_PHASE__COUNT - 1);
	CHECK_MAX(struct rt_ev_mark, m, id_len, RT_ID_LEN);
	CHECK_STR(struct rt_ev_mark, m, request_id);
	return 0;
}

static int check_gpu(const struct rt_event_hdr *ev, struct rt_event_fault *f)
{
	const struct rt_ev_gpu_kernel *k = (const void *)ev;
	const struct rt_ev_gpu_memcpy *c = (const void *)ev;
	const struct rt_ev_gpu_memset *s = (const void *)ev;
	const struct rt_ev_gpu_sync *y = (const void *)ev;

	switch (ev->kind) {
	case RT_EV_GPU_KERNEL:
		CHECK_AFTER(struct rt_ev_gpu_kernel, k, end_ns);
		CHECK_STR(struct rt_ev_gpu_kernel, k, name);
		break;
	case RT_EV_GPU_MEMCPY:
		CHECK_AFTER(struct rt_ev_gpu_memcpy, c, end_ns);
		CHECK_MAX(struct rt_ev_gpu_memcpy, c, copy_kind, RT_COPY_H2H);
		break;
	case RT_EV_GPU_MEMSET:
		CHECK_AFTER(struct rt_ev_gpu_memset, s, end_ns);
		break;
	case RT_EV_GPU_SYNC:
		CHECK_AFTER(struct rt_ev_gpu_sync, y, end_ns);
		CHECK_MAX(struct rt_ev_gpu_sync, y, sync_type, RT_SYNC_CONTEXT);
		break;
	}
	return 0;
}

static int check_zmq(const struct rt_event_hdr *ev, struct rt_event_fault *f)
{
	const struct rt_ev_zmq_msg *z = (const void *)ev;

	CHECK_BEFORE(struct rt_ev_zmq_msg, z, enter_ns);
	if (z->dir != RT_ZMQ_SEND && z->dir != RT_ZMQ_RECV)
		return BAD(struct rt_ev_zmq_msg, dir, "%u unknown", z->dir);
	CHECK_MAX(struct rt_ev_zmq_msg, z, flags,
		  RT_ZMQ_MORE | RT_ZMQ_CUT | RT_ZMQ_FAULT | RT_ZMQ_LAYOUT);
	CHECK_MAX(struct rt_ev_zmq_msg, z, len, RT_ZMQ_CHUNK_MAX);
	if (sizeof(*z) + z->len > ev->size)
		return BAD(struct rt_ev_zmq_msg, len, "%u exceeds record size %u", z->len,
			   ev->size);
	/* a chunk lies inside the frame and inside the capture bound */
	if ((__u64)z->offset + z->len > z->frame_len)
		return BAD(struct rt_ev_zmq_msg, offset, "%u + len %u exceed frame_len %u",
			   z->offset, z->len, z->frame_len);
	if ((__u64)z->offset + z->len > RT_ZMQ_CAP_MAX)
		return BAD(struct rt_ev_zmq_msg, offset, "%u + len %u exceed the capture bound %d",
			   z->offset, z->len, RT_ZMQ_CAP_MAX);
	return 0;
}

static int check_task(const struct rt_event_hdr *ev, struct rt_event_fault *f)
{
	const struct rt_ev_sched_switch *sw = (const void *)ev;
	const struct rt_ev_task_new *tn = (const void *)ev;
	const struct rt_ev_proc_exec *pe = (const void *)ev;
	const struct rt_ev_proc_exit *px = (const void *)ev;

	switch (ev->kind) {
	case RT_EV_SCHED_SWITCH:
		CHECK_MAX(struct rt_ev_sched_switch, sw, prev_state, RT_TASK_DEAD);
		CHECK_STR(struct rt_ev_sched_switch, sw, prev_comm);
		CHECK_STR(struct rt_ev_sched_switch, sw, next_comm);
		break;
	case RT_EV_TASK_NEW:
		CHECK_STR(struct rt_ev_task_new, tn, comm);
		break;
	case RT_EV_PROC_EXEC:
		CHECK_STR(struct rt_ev_proc_exec, pe, comm);
		break;
	case RT_EV_PROC_EXIT:
		CHECK_STR(struct rt_ev_proc_exit, px, comm);
		break;
	}
	return 0;
}

int rt_event_check_body(const struct rt_event_hdr *ev, struct rt_event_fault *f)
{
	const struct rt_ev_sock_conn *sc = (const void *)ev;
	const struct rt_ev_sock_close *cl = (const void *)ev;
	const struct rt_ev_mark_step *st = (const void *)ev;
	const struct rt_ev_mark_bind *bi = (const void *)ev;
	const struct rt_ev_cuda_api *ca = (const void *)ev;
	const struct rt_ev_nccl *nc = (const void *)ev;
	const struct rt_ev_loss *lo = (const void *)ev;
	const struct rt_ev_source_info *si = (const void *)ev;
	const struct rt_ev_target *tg = (const void *)ev;
	const struct rt_ev_sock_arrival *ar = (const void *)ev;

	switch (ev->kind) {
	case RT_EV_SCHED_SWITCH:
	case RT_EV_TASK_NEW:
	case RT_EV_PROC_EXEC:
	case RT_EV_PROC_EXIT:
		return check_task(ev, f);
	case RT_EV_SOCK_ACCEPT:
	case RT_EV_SOCK_CONNECT:
		CHECK_BEFORE(struct rt_ev_sock_conn, sc, enter_ns);
		CHECK_ADDRS(struct rt_ev_sock_conn, sc);
		break;
	case RT_EV_SOCK_RECV:
	case RT_EV_SOCK_SEND:
		return check_sock_io(ev, f);
	case RT_EV_SOCK_CLOSE:
	case RT_EV_SOCK_SHUTDOWN:
		CHECK_BEFORE(struct rt_ev_sock_close, cl, enter_ns);
		break;
	case RT_EV_SOCK_ARRIVAL:
		CHECK_BEFORE(struct rt_ev_sock_arrival, ar, data_ns);
		CHECK_BEFORE(struct rt_ev_sock_arrival, ar, established_ns);
		break;
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END:
		return check_mark(ev, f);
	case RT_EV_MARK_STEP_MEMBER:
		/* BEGIN and END leave request_id unset (possibly uninitialised ring memory) */
		CHECK_STR(struct rt_ev_mark_step, st, request_id);
		break;
	case RT_EV_MARK_BIND:
		CHECK_STR(struct rt_ev_mark_bind, bi, engine_id);
		CHECK_STR(struct rt_ev_mark_bind, bi, request_id);
		break;
	case RT_EV_CUDA_API_ENTER:
	case RT_EV_CUDA_API_EXIT:
		CHECK_BEFORE(struct rt_ev_cuda_api, ca, enter_ns);
		CHECK_MAX(struct rt_ev_cuda_api, ca, api_class, RT_CUDA_WAIT_EVENT);
		CHECK_MAX(struct rt_ev_cuda_api, ca, copy_kind, RT_COPY_H2H);
		break;
	case RT_EV_NCCL_ENTER:
	case RT_EV_NCCL_EXIT:
		CHECK_BEFORE(struct rt_ev_nccl, nc, enter_ns);
		CHECK_MAX(struct rt_ev_nccl, nc, op, RT_NCCL_GROUP_END);
		break;
	case RT_EV_GPU_KERNEL:
	case RT_EV_GPU_MEMCPY:
	case RT_EV_GPU_MEMSET:
	case RT_EV_GPU_SYNC:
		return check_gpu(ev, f);
	case RT_EV_ZMQ_MSG:
		return check_zmq(ev, f);
	case RT_EV_LOSS:
		CHECK_BEFORE(struct rt_ev_loss, lo, since_ns);
		break;
	case RT_EV_SOURCE_INFO:
		CHECK_STR(struct rt_ev_source_info, si, name);
		break;
	case RT_EV_TARGET:
		CHECK_MAX(struct rt_ev_target, tg, leave, 1);
		CHECK_STR(struct rt_ev_target, tg, group);
		CHECK_STR(struct rt_ev_target, tg, comm);
		break;
	default:
		break;
	}
	return 0;
}

int rt_event_check(const struct rt_event_hdr *ev, size_t len, struct rt_event_fault *f)
{
	int err;

	if (len < sizeof(*ev)) {
		fail(f, 0, "record header truncated: %zu of %zu bytes", len, sizeof(*ev));
		return -ENODATA;
	}
	err = rt_event_check_hdr(ev, f);
	if (err)
		return err;
	if (ev->size > len) {
		fail(f, 0, "record truncated: %zu of %u bytes", len, ev->size);
		return -ENODATA;
	}
	return rt_event_check_body(ev, f);
}
