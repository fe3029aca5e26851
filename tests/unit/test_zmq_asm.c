// SPDX-License-Identifier: BSD-2-Clause
/*
 * ZeroMQ message assembly (src/correlate/zmq_asm.h): ZMQ_MSG chunks as the
 * probe writes them in, whole messages out; a gap or a LOSS desynchronises
 * a stream until a frame without MORE ends a message, and nothing across
 * the gap is delivered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "zmq_asm.h"

#define PID 100
#define TID 101
#define SOCK 0x5000ULL

struct got {
	int n;
	struct rt_zmq_asm_msg msg[8];
	uint8_t bytes[8][RT_ZMQ_ASM_FRAMES_MAX][64]; /* each frame's first bytes */
};

static struct got got;
static struct rt_zmq_asm *a;
static uint64_t now = 1000;
static _Alignas(8) uint8_t recbuf[sizeof(struct rt_ev_zmq_msg) + RT_ZMQ_CHUNK_MAX];

static void on_msg(void *ctx, const struct rt_zmq_asm_msg *m)
{
	uint32_t i;

	(void)ctx;
	assert_true(got.n < 8);
	got.msg[got.n] = *m;
	for (i = 0; i < m->n_frames; i++)
		memcpy(got.bytes[got.n][i], m->frames[i].data,
		       m->frames[i].len < 64 ? m->frames[i].len : 64);
	got.n++;
}

static int setup(void **state)
{
	(void)state;
	memset(&got, 0, sizeof(got));
	a = rt_zmq_asm__new(0, on_msg, NULL);
	assert_non_null(a);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rt_zmq_asm__free(a);
	return 0;
}

/* The byte at frame offset i of a frame filled with `fill`. */
static uint8_t byte_at(uint8_t fill, uint32_t i)
{
	return (uint8_t)(fill + i * 7);
}

/* One chunk of a frame of `size` bytes; the call is (tid, enter). */
static void chunk(uint32_t tid, uint64_t sock, uint8_t dir, uint64_t enter, uint32_t size,
		  uint32_t off, uint8_t flags, uint8_t fill)
{
	struct rt_ev_zmq_msg *e = (void *)recbuf;
	uint32_t cap = size < RT_ZMQ_CAP_MAX ? size : RT_ZMQ_CAP_MAX, n, i;

	n = cap - off < RT_ZMQ_CHUNK_MAX ? cap - off : RT_ZMQ_CHUNK_MAX;
	memset(recbuf, 0, sizeof(recbuf));
	e->hdr.kind = RT_EV_ZMQ_MSG;
	e->hdr.size = (uint16_t)RT_EVENT_SIZE_ALIGN(sizeof(*e) + n);
	e->hdr.ts_ns = enter + 10;
	e->hdr.pid = PID;
	e->hdr.tid = tid;
	e->enter_ns = enter;
	e->socket = sock;
	e->frame_len = size;
	e->offset = off;
	e->len = (uint16_t)n;
	e->dir = dir;
	e->flags = flags | (size > RT_ZMQ_CAP_MAX ? RT_ZMQ_CUT : 0);
	for (i = 0; i < n; i++)
		e->data[i] = byte_at(fill, off + i);
	rt_zmq_asm__record(a, e);
}

/* A whole frame, every chunk, as the probe writes it. */
static void frame(uint32_t size, bool more, uint8_t fill)
{
	uint32_t cap = size < RT_ZMQ_CAP_MAX ? size : RT_ZMQ_CAP_MAX, off = 0;
	uint64_t enter = now += 100;

	do {
		chunk(TID, SOCK, RT_ZMQ_SEND, enter, size, off, more ? RT_ZMQ_MORE : 0, fill);
		off += RT_ZMQ_CHUNK_MAX;
	} while (off < cap);
}

static void assert_frame(int m, uint32_t i, uint32_t size, uint8_t fill)
{
	const struct rt_zmq_asm_frame *f = &got.msg[m].frames[i];
	uint32_t k;

	assert_int_equal(f->size, size);
	assert_int_equal(f->len, size < RT_ZMQ_CAP_MAX ? size : RT_ZMQ_CAP_MAX);
	for (k = 0; k < f->len && k < 64; k++)
		assert_int_equal(got.bytes[m][i][k], byte_at(fill, k));
}

static void test_messages(void **state)
{
	struct rt_zmq_asm_stats st;

	(void)state;
	frame(1, true, 0x10);
	frame(0, true, 0);
	frame(20000, false, 0x20); /* 4 chunks, cut at the bound */
	frame(5000, false, 0x30); /* 2 chunks */
	assert_int_equal(got.n, 2);
	assert_int_equal(got.msg[0].n_frames, 3);
	assert_frame(0, 0, 1, 0x10);
	assert_frame(0, 1, 0, 0);
	assert_frame(0, 2, 20000, 0x20);
	assert_true(got.msg[0].cut);
	assert_int_equal(got.msg[0].pid, PID);
	assert_int_equal(got.msg[0].tid, TID);
	assert_int_equal(got.msg[0].socket, SOCK);
	assert_int_equal(got.msg[0].dir, RT_ZMQ_SEND);
	assert_true(got.msg[0].first_ts_ns < got.msg[0].last_ts_ns);
	assert_int_equal(got.msg[1].n_frames, 1);
	assert_frame(1, 0, 5000, 0x30);
	assert_false(got.msg[1].cut);
	rt_zmq_asm__stats(a, &st);
	assert_int_equal(st.chunks, 1 + 1 + 4 + 2);
	assert_int_equal(st.frames, 4);
	assert_int_equal(st.messages, 2);
	assert_int_equal(st.desyncs, 0);
}

/* A stream's first message is an empty frame (an engine's hello): no buffer yet. */
static void test_empty_first_frame(void **state)
{
	(void)state;
	frame(0, false, 0);
	frame(3, false, 0x40);
	assert_int_equal(got.n, 2);
	assert_int_equal(got.msg[0].n_frames, 1);
	assert_frame(0, 0, 0, 0);
	assert_frame(1, 0, 3, 0x40);
}

/* A chunk lost inside a frame: that message is gone, the next one is whole. */
static void test_gap_in_frame(void **state)
{
	struct rt_zmq_asm_stats st;
	uint64_t enter;

	(void)state;
	frame(1, true, 0x10);
	enter = now += 100;
	chunk(TID, SOCK, RT_ZMQ_SEND, enter, 9000, 0, RT_ZMQ_MORE, 0x20);
	/* offset 4096 lost */
	chunk(TID, SOCK, RT_ZMQ_SEND, enter, 9000, 2 * RT_ZMQ_CHUNK_MAX, RT_ZMQ_MORE, 0x20);
	frame(7, false, 0x30); /* the message's last frame: the boundary */
	assert_int_equal(got.n, 0);
	frame(3, false, 0x40);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.msg[0].n_frames, 1);
	assert_frame(0, 0, 3, 0x40);
	rt_zmq_asm__stats(a, &st);
	assert_int_equal(st.desyncs, 1);
	assert_int_equal(st.frames_discarded, 3);
}

/* A LOSS mid-message: the partial message and the next frames up to a boundary go. */
static void test_loss(void **state)
{
	struct rt_zmq_asm_stats st;

	(void)state;
	frame(1, true, 0x10);
	rt_zmq_asm__loss(a, PID);
	/* this frame ends a message, but which one is unknown: not delivered */
	frame(40, false, 0x20);
	frame(2, true, 0x30);
	frame(50, false, 0x40);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.msg[0].n_frames, 2);
	assert_frame(0, 0, 2, 0x30);
	assert_frame(0, 1, 50, 0x40);
	/* another process's loss leaves this stream alone */
	rt_zmq_asm__loss(a, PID + 1);
	frame(6, false, 0x50);
	assert_int_equal(got.n, 2);
	/* a loss of unknown process (pid 0) touches every stream */
	rt_zmq_asm__loss(a, 0);
	frame(6, false, 0x60);
	assert_int_equal(got.n, 2);
	rt_zmq_asm__stats(a, &st);
	assert_int_equal(st.desyncs, 2);
}

/* A frame that never completed but ended its message: the next frame starts one. */
static void test_incomplete_last_frame(void **state)
{
	struct rt_zmq_asm_stats st;

	(void)state;
	chunk(TID, SOCK, RT_ZMQ_SEND, now += 100, 9000, 0, 0, 0x10); /* later chunks lost */
	frame(4, false, 0x20);
	assert_int_equal(got.n, 1);
	assert_frame(0, 0, 4, 0x20);
	rt_zmq_asm__stats(a, &st);
	assert_int_equal(st.desyncs, 1);
	assert_int_equal(st.frames_discarded, 1);
}

/* Streams are (pid, socket, direction): interleaved, each assembles alone. */
static void test_streams(void **state)
{
	(void)state;
	chunk(TID, SOCK, RT_ZMQ_SEND, 5000, 1, 0, RT_ZMQ_MORE, 0x10);
	chunk(TID + 1, SOCK, RT_ZMQ_RECV, 5001, 2, 0, RT_ZMQ_MORE, 0x20);
	chunk(TID, SOCK + 8, RT_ZMQ_SEND, 5002, 3, 0, 0, 0x30);
	chunk(TID, SOCK, RT_ZMQ_SEND, 5003, 4, 0, 0, 0x40);
	chunk(TID + 1, SOCK, RT_ZMQ_RECV, 5004, 5, 0, 0, 0x50);
	assert_int_equal(got.n, 3);
	assert_int_equal(got.msg[0].socket, SOCK + 8);
	assert_int_equal(got.msg[1].n_frames, 2);
	assert_int_equal(got.msg[1].dir, RT_ZMQ_SEND);
	assert_frame(1, 0, 1, 0x10);
	assert_frame(1, 1, 4, 0x40);
	assert_int_equal(got.msg[2].dir, RT_ZMQ_RECV);
	assert_int_equal(got.msg[2].tid, TID + 1);
	assert_frame(2, 0, 2, 0x20);
	assert_frame(2, 1, 5, 0x50);
}

/* More frames than a message holds: delivered flagged, the rest counted. */
static void test_frames_bound(void **state)
{
	struct rt_zmq_asm_stats st;
	int i;

	(void)state;
	for (i = 0; i < RT_ZMQ_ASM_FRAMES_MAX + 3; i++)
		frame(10, true, (uint8_t)i);
	frame(10, false, 0x77);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.msg[0].n_frames, RT_ZMQ_ASM_FRAMES_MAX);
	assert_true(got.msg[0].truncated);
	assert_frame(0, RT_ZMQ_ASM_FRAMES_MAX - 1, 10, RT_ZMQ_ASM_FRAMES_MAX - 1);
	rt_zmq_asm__stats(a, &st);
	assert_int_equal(st.frames_truncated, 4);
	/* a process that exits takes its partial message with it */
	frame(10, true, 1);
	rt_zmq_asm__drop_pid(a, PID);
	frame(10, false, 2);
	assert_int_equal(got.n, 2);
	assert_int_equal(got.msg[1].n_frames, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_first_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gap_in_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loss, setup, teardown),
		cmocka_unit_test_setup_teardown(test_incomplete_last_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frames_bound, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
