/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The marker ring: how libreqtrace_marker.so hands marker records to
 * reqtraced through shared memory instead of uprobes (docs/markers.md).
 *
 * The handshake is the injection protocol's (include/reqtrace/inject.h):
 * the marker library connects to the same socket and sends HELLO with
 * role RT_INJECT_ROLE_MARKER; WELCOME carries a sealed memfd whose first
 * RT_INJECT_RING_HDR_SIZE bytes are a struct rt_inject_ring with magic
 * RT_MARK_RING_MAGIC. The data area is framed differently from the
 * injection ring, because many threads write at once:
 *
 *   - prod_pos is the reservation head, shared by every producer thread: a
 *     producer takes a slot with a compare-and-swap on it, fills the slot,
 *     then commits it. Slots are committed in any order; the consumer stops
 *     at the first slot not committed yet.
 *   - Every slot starts with an 8-byte commit word, stored last with release
 *     order: the slot's own free-running position + 1 (never 0, so zeroed
 *     or stale memory never reads as a commit), with RT_MARK_SLOT_PAD set
 *     for a pad slot, which fills the rest of the data area when a slot
 *     does not fit before its end (at least 8 bytes always remain).
 *   - A record slot continues with struct rt_mark_slot (its length) and one
 *     or more whole event.h records (a step: STEP_BEGIN, its STEP_MEMBERs
 *     and maybe a LOSS, committed together).
 *   - A producer takes its records' timestamp after its reservation
 *     succeeds: so a record the consumer has not seen reserved when it
 *     looked at prod_pos is stamped later than that look. That, and the
 *     oldest uncommitted slot, give the daemon the source's watermark.
 *   - dropped counts records a producer could not place (ring full); the
 *     consumer reports increases as LOSS records. written is unused.
 *
 * Every byte of the data area is written by the traced process: the
 * daemon checks positions, lengths and every record.
 */
#ifndef REQTRACE_MARK_RING_H
#define REQTRACE_MARK_RING_H

#include <linux/types.h>

#define RT_MARK_RING_MAGIC 0x4b524d52U /* "RMRK" */
#define RT_MARK_RING_DEFAULT (2U * 1024 * 1024)

#define RT_MARK_SLOT_PAD (1ULL << 63)

struct rt_mark_slot {
	__u64 commit; /* position + 1, | RT_MARK_SLOT_PAD for a pad slot */
	__u32 len; /* whole slot, this header included, a multiple of 8 */
	__u32 n_records; /* informative */
};

/* The largest slot: a step with every member and a truncation LOSS. */
#define RT_MARK_SLOT_MAX (64U * 1024)

#endif /* REQTRACE_MARK_RING_H */
