/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Constants shared by bpf/zmq.bpf.c and its loader (src/sources/bpf_zmq.c).
 * No includes: include after <reqtrace/event.h>.
 */
#ifndef RT_ZMQ_SHARED_H
#define RT_ZMQ_SHARED_H

/* Slots of the per-CPU counter array `zmq_counters`. */
enum rt_zmq_counter {
	RT_ZMQ_CNT_FRAMES = 0, /* frames emitted (send and recv) */
	RT_ZMQ_CNT_CUT = 1, /* frames longer than the capture bound (flagged RT_ZMQ_CUT) */
	RT_ZMQ_CNT_CUT_BYTES = 2, /* bytes of those frames not read */
	RT_ZMQ_CNT_CALLS_FULL = 3, /* calls not followed: per-thread call map full */
	RT_ZMQ_CNT_UNMATCHED = 4, /* returns whose entry was not seen */
	RT_ZMQ_CNT_LAYOUT = 5, /* zmq_msg_t of a type the probe does not know */
	RT_ZMQ_CNT_FAULT = 6, /* chunks whose user-memory read failed */
	RT_ZMQ_CNT__MAX = 7,
};

#define RT_ZMQ_CALLS_MAX 16384 /* threads inside zmq_msg_send/recv at once */

/*
 * libzmq's zmq_msg_t (64 opaque bytes) as its msg_t union lays it out in
 * the 4.3 series on LP64 (src/msg.hpp; docs/engines/vllm-v1.md "Capture"):
 * the type byte at 42, the flags at 43; inline (VSM) data at 8 with its size
 * byte at 41; LMSG and ZCLMSG a content_t pointer at 8 whose first two
 * words are the data pointer and the size; CMSG the data pointer at 8 and
 * the size at 16.
 */
#define RT_ZMSG_SIZE 64
#define RT_ZMSG_VSM_DATA 8
#define RT_ZMSG_VSM_MAX 33
#define RT_ZMSG_VSM_SIZE 41
#define RT_ZMSG_TYPE 42
#define RT_ZMSG_FLAGS 43
#define RT_ZMSG_PTR 8
#define RT_ZMSG_CMSG_SIZE 16
#define RT_ZMSG_FLAG_MORE 0x1

#define RT_ZMSG_TYPE_VSM 101
#define RT_ZMSG_TYPE_LMSG 102
#define RT_ZMSG_TYPE_CMSG 104
#define RT_ZMSG_TYPE_ZCLMSG 105

#define RT_ZMQ_SNDMORE 2 /* zmq_msg_send's flag: more frames follow */

#endif /* RT_ZMQ_SHARED_H */
