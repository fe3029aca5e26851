/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ZeroMQ message assembly: ZMQ_MSG records (docs/events.md "ZeroMQ") in
 * merge order in, whole multipart messages out, per stream (pid, socket,
 * direction). The consumer of an engine's messages (the vLLM decoder,
 * proto/vllm.h) gets every frame of a message with the bytes captured
 * and its real size.
 *
 * Loss (issue 14, "Loss"): a chunk missing inside a frame, a frame's
 * chunks interleaved with another call's, or a LOSS record naming the
 * process (or none: pid 0) while a message is being assembled marks the
 * stream desynchronised. Its partial message is discarded (counted), and
 * so is every frame until one without MORE ends a message: only there is
 * the next message's start known. Nothing is guessed across a gap.
 *
 * Bounded: at most max_streams streams (a stream past it is counted and
 * not assembled), RT_ZMQ_ASM_FRAMES_MAX frames a message (the rest are
 * counted, and the message is delivered flagged `truncated`).
 */
#ifndef RT_CORRELATE_ZMQ_ASM_H
#define RT_CORRELATE_ZMQ_ASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reqtrace/event.h>

#define RT_ZMQ_ASM_FRAMES_MAX 16
#define RT_ZMQ_ASM_STREAMS_DEFAULT 1024

struct rt_zmq_asm_frame {
	const uint8_t *data;
	size_t len; /* bytes captured */
	size_t size; /* the frame's size; len < size: cut */
	uint8_t flags; /* RT_ZMQ_* of its records */
};

struct rt_zmq_asm_msg {
	uint32_t pid, tid; /* tid: the thread of the message's last frame */
	uint64_t socket;
	uint8_t dir; /* RT_ZMQ_SEND or RT_ZMQ_RECV */
	uint64_t first_enter_ns, first_ts_ns; /* the first frame's call */
	uint64_t last_ts_ns; /* the last frame's return */
	uint32_t n_frames;
	bool cut; /* a frame was captured in part (or without bytes) */
	bool truncated; /* frames beyond RT_ZMQ_ASM_FRAMES_MAX were left out */
	struct rt_zmq_asm_frame frames[RT_ZMQ_ASM_FRAMES_MAX];
};

struct rt_zmq_asm_stats {
	uint64_t chunks, frames, messages;
	uint64_t desyncs; /* times a stream lost its place */
	uint64_t frames_discarded; /* whole frames dropped while desynchronised or partial */
	uint64_t streams_full; /* chunks of streams that found no slot */
	uint64_t frames_truncated; /* frames past RT_ZMQ_ASM_FRAMES_MAX */
};

/* m and its frames' bytes are valid during the call only. */
typedef void (*rt_zmq_asm_fn)(void *ctx, const struct rt_zmq_asm_msg *m);

struct rt_zmq_asm;

/* max_streams 0: RT_ZMQ_ASM_STREAMS_DEFAULT. NULL with errno on failure. */
struct rt_zmq_asm *rt_zmq_asm__new(uint32_t max_streams, rt_zmq_asm_fn fn, void *ctx);
void rt_zmq_asm__free(struct rt_zmq_asm *a);

/* One ZMQ_MSG record (validated by the caller: rt_event_check()). */
void rt_zmq_asm__record(struct rt_zmq_asm *a, const struct rt_ev_zmq_msg *ev);

/* Records were lost for process pid (0: any): its streams desynchronise. */
void rt_zmq_asm__loss(struct rt_zmq_asm *a, uint32_t pid);

/* The process is gone: its streams are dropped (a partial message is discarded). */
void rt_zmq_asm__drop_pid(struct rt_zmq_asm *a, uint32_t pid);

void rt_zmq_asm__stats(const struct rt_zmq_asm *a, struct rt_zmq_asm_stats *st);

#endif /* RT_CORRELATE_ZMQ_ASM_H */
