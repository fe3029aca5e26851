/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Consumer side of the marker ring (include/reqtrace/mark_ring.h): walks
 * the committed slots of a ring that many threads of a traced process
 * write, hands out their records one by one (private, aligned copies;
 * the caller validates their contents) and works out the watermark.
 *
 * Watermark. Producers stamp records after reserving their slot, so a
 * record whose slot was not yet reserved when prod_pos was read at time t
 * carries a timestamp after t. Each drain notes (prod_pos, t); once every
 * slot below a noted position is consumed, nothing older than its t can
 * still come. A slot reserved but not committed (its thread preempted, or
 * stopped in a debugger) holds the watermark back, but for at most the
 * lateness horizon: past it the watermark moves on to now - horizon and
 * what that slot brings later arrives late (counted, amended downstream).
 *
 * Pure logic on a mapping: no syscalls, so the unit tests and the fuzzer
 * drive it on plain memory.
 */
#ifndef RT_SOURCES_MARK_RING_H
#define RT_SOURCES_MARK_RING_H

#include <reqtrace/event.h>
#include <reqtrace/inject.h>
#include <reqtrace/mark_ring.h>

#define RT_MARK_SEEN_MAX 16

struct rt_mark_cons {
	struct rt_inject_ring *shm;
	__u8 *data;
	__u64 size; /* power of two; ours, never read back */
	__u64 cons; /* ours, never read back */
	__u32 slot_done; /* bytes of the slot at cons already handed out */
	__u32 n_seen;
	struct {
		__u64 pos, t;
	} seen[RT_MARK_SEEN_MAX]; /* (prod_pos, time before reading it), pos ascending */
	__u64 wm; /* nothing older than this will come (0: not yet known) */
	__u64 stall_pos, stall_since; /* the oldest uncommitted slot, since when */
	__u64 dropped_seen; /* shm->dropped already reported */
	union {
		__u64 align;
		__u8 buf[RT_EVENT_MAX];
	} rec;
};

/* fn's return value: 0 passes on, negative stops the drain (offered again) */
typedef int (*rt_mark_rec_fn)(const struct rt_event_hdr *ev, void *ctx);

/* Starts consuming a fresh ring (both positions 0). */
void rt_mark_cons__init(struct rt_mark_cons *c, struct rt_inject_ring *shm, __u64 data_size);

/*
 * Hands out the records of committed slots, at most max_records, each a
 * copy whose header size was read once (the record's own contents are the
 * caller's to check). now: CLOCK_MONOTONIC taken before the call. Then
 * moves cons_pos and the watermark (c->wm; horizon_ns bounds how long an
 * uncommitted slot holds it). Returns the records handed out, fn's error,
 * or -EPROTO when the framing is lost (positions, lengths or a record
 * header out of bounds): the ring is useless from then on.
 */
int rt_mark_cons__drain(struct rt_mark_cons *c, __u64 now, __u64 horizon_ns, __u32 max_records,
			rt_mark_rec_fn fn, void *ctx);

/* ns the oldest uncommitted slot has been waited for (0: none waiting). */
__u64 rt_mark_cons__stalled_ns(const struct rt_mark_cons *c, __u64 now);

/* Records the producers dropped since the last call (untrusted, capped). */
__u64 rt_mark_cons__new_drops(struct rt_mark_cons *c);

#endif /* RT_SOURCES_MARK_RING_H */
