/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Record validation: every kind's minimum accepted, every checked field
 * rejected with the offset of that field.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "common/event_check.h"

static _Alignas(8) unsigned char buf[RT_EVENT_MAX + 64];

/* A zeroed record of `kind` at its minimum size, made valid where zero is not. */
static struct rt_event_hdr *make(unsigned int kind)
{
	struct rt_event_hdr *ev = (void *)buf;
	struct rt_ev_sock_io *io = (void *)buf;

	memset(buf, 0, sizeof(buf));
	ev->kind = kind;
	ev->size = rt_event_min_size(kind);
	ev->ts_ns = 1000;
	if (kind == RT_EV_SOCK_RECV || kind == RT_EV_SOCK_SEND)
		io->syscall = RT_SYS_READ;
	if (kind >= RT_EV_GPU_KERNEL && kind <= RT_EV_GPU_SYNC)
		((struct rt_ev_gpu_kernel *)ev)->end_ns = 2000; /* end_ns at the same offset */
	if (kind == RT_EV_ZMQ_MSG)
		((struct rt_ev_zmq_msg *)ev)->dir = RT_ZMQ_SEND;
	return ev;
}

static void expect_fault(const struct rt_event_hdr *ev, size_t off, const char *needle)
{
	struct rt_event_fault f;

	memset(&f, 0, sizeof(f));
	assert_int_equal(rt_event_check(ev, sizeof(buf), &f), -EBADMSG);
	assert_int_equal(f.offset, off);
	if (!strstr(f.msg, needle))
		fail_msg("message \"%s\" lacks \"%s\"", f.msg, needle);
	/* the same verdict without a fault to fill */
	assert_int_equal(rt_event_check(ev, sizeof(buf), NULL), -EBADMSG);
}

static void test_kind_table(void **state)
{
	unsigned int k, known = 0;

	(void)state;
	for (k = 0; k < 300; k++) {
		if (!rt_event_min_size(k)) {
			assert_null(rt_event_kind_name(k));
			continue;
		}
		known++;
		assert_non_null(rt_event_kind_name(k));
		assert_true(rt_event_min_size(k) >= sizeof(struct rt_event_hdr));
		assert_int_equal(rt_event_min_size(k) % RT_EVENT_ALIGN, 0);
	}
	assert_int_equal(known, 38); /* PACK_CALL (compute pools' regions), ZMQ_MSG, PACK_BATCH */
	assert_int_equal(rt_event_min_size(RT_EV_SCHED_SWITCH), sizeof(struct rt_ev_sched_switch));
	assert_int_equal(rt_event_min_size(RT_EV_SOCK_SEND), sizeof(struct rt_ev_sock_io));
	assert_int_equal(rt_event_min_size(RT_EV_TRACE_END), sizeof(struct rt_ev_trace_end));
	assert_int_equal(rt_event_min_size(RT_EV_NONE), 0);
	assert_int_equal(rt_event_min_size(RT_EV__MAX), 0);
	assert_string_equal(rt_event_kind_name(RT_EV_GPU_KERNEL), "GPU_KERNEL");
}

static void test_every_kind_valid(void **state)
{
	struct rt_event_fault f;
	struct rt_event_hdr *ev;
	unsigned int k;

	(void)state;
	for (k = 0; k < RT_EV__MAX; k++) {
		if (!rt_event_min_size(k))
			continue;
		ev = make(k);
		if (rt_event_check(ev, ev->size, &f))
			fail_msg("kind %u: %s", k, f.msg);
		/* a longer record (appended fields) is accepted */
		ev->size += 8;
		if (rt_event_check(ev, ev->size, &f))
			fail_msg("kind %u + 8: %s", k, f.msg);
	}
}

static void test_header_faults(void **state)
{
	struct rt_event_hdr *ev = make(RT_EV_SCHED_SWITCH);

	(void)state;
	ev->size = 3;
	expect_fault(ev, 2, "record size 3 below header size 24");
	ev->size = 84;
	expect_fault(ev, 2, "not a multiple of 8");
	ev->size = RT_EVENT_MAX + 8;
	expect_fault(ev, 2, "above maximum");
	ev->size = 72;
	expect_fault(ev, 2, "below SCHED_SWITCH body size 96");
	ev->size = 80;
	ev->kind = 77;
	expect_fault(ev, 0, "unknown kind 77");
	ev->kind = 6;
	expect_fault(ev, 0, "unknown kind 6");
	ev->kind = RT_EV_NONE;
	expect_fault(ev, 0, "unknown kind 0");
}

static void test_truncated(void **state)
{
	struct rt_event_hdr *ev = make(RT_EV_CLOCK);
	struct rt_event_fault f;

	(void)state;
	assert_int_equal(rt_event_check(ev, 23, &f), -ENODATA);
	assert_int_equal(rt_event_check(ev, 31, &f), -ENODATA);
	assert_int_equal(rt_event_check(ev, 32, &f), 0);
	assert_int_equal(rt_event_check(ev, 4096, &f), 0);
	/* header alone, unaligned */
	memmove(buf + 1, buf, 32);
	assert_int_equal(rt_event_check_hdr((const void *)(buf + 1), &f), 0);
}

static void test_strings(void **state)
{
	struct rt_ev_sched_switch *sw = (void *)make(RT_EV_SCHED_SWITCH);
	struct rt_ev_mark *mk;
	struct rt_ev_mark_step *st;
	struct rt_ev_gpu_kernel *k;
	struct rt_ev_target *tg;

	(void)state;
	memset(sw->next_comm, 'x', sizeof(sw->next_comm));
	expect_fault(&sw->hdr, offsetof(struct rt_ev_sched_switch, next_comm),
		     "SCHED_SWITCH next_comm not NUL-terminated");
	sw->next_comm[15] = '\0';
	assert_int_equal(rt_event_check(&sw->hdr, sw->hdr.size, NULL), 0);

	mk = (void *)make(RT_EV_MARK_BEGIN);
	memset(mk->request_id, 'a', sizeof(mk->request_id));
	expect_fault(&mk->hdr, offsetof(struct rt_ev_mark, request_id), "request_id");

	/* STEP_BEGIN leaves request_id unset: not checked; STEP_MEMBER is */
	st = (void *)make(RT_EV_MARK_STEP_BEGIN);
	memset(st->request_id, 'a', sizeof(st->request_id));
	assert_int_equal(rt_event_check(&st->hdr, st->hdr.size, NULL), 0);
	st->hdr.kind = RT_EV_MARK_STEP_MEMBER;
	expect_fault(&st->hdr, offsetof(struct rt_ev_mark_step, request_id), "request_id");

	k = (void *)make(RT_EV_GPU_KERNEL);
	memset(k->name, 'k', sizeof(k->name));
	expect_fault(&k->hdr, offsetof(struct rt_ev_gpu_kernel, name), "GPU_KERNEL name");

	tg = (void *)make(RT_EV_TARGET);
	memset(tg->group, 'g', sizeof(tg->group));
	expect_fault(&tg->hdr, offsetof(struct rt_ev_target, group), "TARGET group");
}

static void test_sock_io(void **state)
{
	struct rt_ev_sock_io *io = (void *)make(RT_EV_SOCK_RECV);

	(void)state;
	io->ret = 100;
	io->head_len = 40;
	io->tail_len = 16;
	io->hdr.size = RT_EVENT_SIZE_ALIGN(sizeof(*io) + 56);
	assert_int_equal(rt_event_check(&io->hdr, io->hdr.size, NULL), 0);

	io->hdr.size = sizeof(*io) + 48; /* data does not fit */
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, head_len), "exceed record size");
	io->hdr.size = RT_EVENT_SIZE_ALIGN(sizeof(*io) + 56);

	io->ret = 50; /* more captured than transferred */
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, head_len), "exceed ret 50");
	io->ret = -ECONNRESET;
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, head_len), "exceed ret -104");
	io->head_len = io->tail_len = 0;
	assert_int_equal(rt_event_check(&io->hdr, io->hdr.size, NULL), 0);

	io->ret = 10000;
	io->head_len = RT_SOCK_HEAD_MAX + 8;
	io->hdr.size = RT_EVENT_MAX;
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, head_len),
		     "head_len 4104 out of range");
	io->head_len = 0;
	io->tail_len = RT_SOCK_TAIL_MAX + 1;
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, tail_len), "tail_len");
	io->tail_len = RT_SOCK_TAIL_MAX;
	io->head_len = RT_SOCK_HEAD_MAX;
	assert_int_equal(rt_event_check(&io->hdr, io->hdr.size, NULL), 0);

	io->syscall = 0;
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, syscall), "syscall 0 unknown");
	io->syscall = RT_SYS_CONNECT + 1;
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, syscall), "syscall");
	io->syscall = RT_SYS_SENDMSG;
	io->peer.family = 3;
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, peer.family),
		     "peer.family 3 unknown");
	io->peer.family = RT_AF_INET6;
	io->enter_ns = io->hdr.ts_ns + 1;
	expect_fault(&io->hdr, offsetof(struct rt_ev_sock_io, enter_ns), "after ts");
}

static void test_zmq_msg(void **state)
{
	struct rt_ev_zmq_msg *z = (void *)make(RT_EV_ZMQ_MSG);

	(void)state;
	assert_string_equal(rt_event_kind_name(RT_EV_ZMQ_MSG), "ZMQ_MSG");
	/* the second chunk of a 20 000-byte frame cut at the bound */
	z->frame_len = 20000;
	z->offset = RT_ZMQ_CHUNK_MAX;
	z->len = RT_ZMQ_CHUNK_MAX;
	z->flags = RT_ZMQ_CUT | RT_ZMQ_MORE;
	z->dir = RT_ZMQ_RECV;
	z->enter_ns = 900;
	z->hdr.size = sizeof(*z) + RT_ZMQ_CHUNK_MAX;
	assert_int_equal(rt_event_check(&z->hdr, z->hdr.size, NULL), 0);

	z->hdr.size = sizeof(*z) + RT_ZMQ_CHUNK_MAX - 8; /* data does not fit */
	expect_fault(&z->hdr, offsetof(struct rt_ev_zmq_msg, len), "exceeds record size");
	z->hdr.size = sizeof(*z) + RT_ZMQ_CHUNK_MAX;
	z->len = RT_ZMQ_CHUNK_MAX + 1;
	expect_fault(&z->hdr, offsetof(struct rt_ev_zmq_msg, len), "len 4097 out of range");
	z->len = RT_ZMQ_CHUNK_MAX;
	z->frame_len = 2 * RT_ZMQ_CHUNK_MAX - 1; /* the chunk passes the frame's end */
	expect_fault(&z->hdr, offsetof(struct rt_ev_zmq_msg, offset), "exceed frame_len");
	z->frame_len = 100000;
	z->offset = RT_ZMQ_CAP_MAX - 8; /* ... or the capture bound */
	expect_fault(&z->hdr, offsetof(struct rt_ev_zmq_msg, offset), "capture bound");
	z->offset = RT_ZMQ_CAP_MAX - RT_ZMQ_CHUNK_MAX;
	assert_int_equal(rt_event_check(&z->hdr, z->hdr.size, NULL), 0);
	z->dir = 0;
	expect_fault(&z->hdr, offsetof(struct rt_ev_zmq_msg, dir), "dir 0 unknown");
	z->dir = RT_ZMQ_RECV + 1;
	expect_fault(&z->hdr, offsetof(struct rt_ev_zmq_msg, dir), "unknown");
	z->dir = RT_ZMQ_SEND;
	z->flags = 0x10;
	expect_fault(&z->hdr, offsetof(struct rt_ev_zmq_msg, flags), "flags 16 out of range");
	z->flags = 0;
	z->enter_ns = z->hdr.ts_ns + 1;
	expect_fault(&z->hdr, offsetof(struct rt_ev_zmq_msg, enter_ns), "after ts");
	/* an empty frame: one record, no bytes */
	z->enter_ns = z->hdr.ts_ns;
	z->frame_len = z->offset = z->len = 0;
	z->hdr.size = sizeof(*z);
	assert_int_equal(rt_event_check(&z->hdr, z->hdr.size, NULL), 0);
}

static void test_enums_and_intervals(void **state)
{
	struct rt_ev_sched_switch *sw = (void *)make(RT_EV_SCHED_SWITCH);
	struct rt_ev_mark *mk;
	struct rt_ev_cuda_api *ca;
	struct rt_ev_gpu_memcpy *mc;
	struct rt_ev_gpu_sync *sy;
	struct rt_ev_nccl *nc;
	struct rt_ev_loss *lo;
	struct rt_ev_target *tg;
	struct rt_ev_sock_conn *sc;

	(void)state;
	sw->prev_state = RT_TASK_DEAD + 1;
	expect_fault(&sw->hdr, offsetof(struct rt_ev_sched_switch, prev_state), "prev_state 3");

	mk = (void *)make(RT_EV_MARK_END);
	mk->phase = RT_PHASE__COUNT;
	expect_fault(&mk->hdr, offsetof(struct rt_ev_mark, phase),
		     "MARK_END phase 10 out of range");
	mk->phase = RT_PHASE_DECODE;
	mk->id_len = RT_ID_LEN + 1;
	expect_fault(&mk->hdr, offsetof(struct rt_ev_mark, id_len), "id_len");

	ca = (void *)make(RT_EV_CUDA_API_EXIT);
	ca->copy_kind = RT_COPY_H2H + 1;
	expect_fault(&ca->hdr, offsetof(struct rt_ev_cuda_api, copy_kind), "copy_kind");
	ca->copy_kind = RT_COPY_P2P;
	ca->api_class = 99;
	expect_fault(&ca->hdr, offsetof(struct rt_ev_cuda_api, api_class), "api_class 99");

	mc = (void *)make(RT_EV_GPU_MEMCPY);
	mc->end_ns = mc->hdr.ts_ns - 1;
	expect_fault(&mc->hdr, offsetof(struct rt_ev_gpu_memcpy, end_ns),
		     "end_ns 999 before ts 1000");
	mc->end_ns = mc->hdr.ts_ns;
	mc->copy_kind = 200;
	expect_fault(&mc->hdr, offsetof(struct rt_ev_gpu_memcpy, copy_kind), "copy_kind 200");

	sy = (void *)make(RT_EV_GPU_SYNC);
	sy->sync_type = RT_SYNC_CONTEXT + 1;
	expect_fault(&sy->hdr, offsetof(struct rt_ev_gpu_sync, sync_type), "sync_type");

	nc = (void *)make(RT_EV_NCCL_ENTER);
	nc->op = RT_NCCL_GROUP_END + 1;
	expect_fault(&nc->hdr, offsetof(struct rt_ev_nccl, op), "op");

	lo = (void *)make(RT_EV_LOSS);
	lo->since_ns = 5000;
	expect_fault(&lo->hdr, offsetof(struct rt_ev_loss, since_ns),
		     "since_ns 5000 after ts 1000");

	tg = (void *)make(RT_EV_TARGET);
	tg->leave = 2;
	expect_fault(&tg->hdr, offsetof(struct rt_ev_target, leave), "leave 2");

	sc = (void *)make(RT_EV_SOCK_ACCEPT);
	sc->local.family = 99;
	expect_fault(&sc->hdr, offsetof(struct rt_ev_sock_conn, local.family), "local.family 99");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_table),    cmocka_unit_test(test_every_kind_valid),
		cmocka_unit_test(test_header_faults), cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_strings),	      cmocka_unit_test(test_sock_io),
		cmocka_unit_test(test_zmq_msg),	      cmocka_unit_test(test_enums_and_intervals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
