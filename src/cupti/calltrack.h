/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Lock-free bookkeeping of the host's blocking CUDA calls, fed by CUPTI's
 * driver API callbacks on the host's own threads (so it is cheap and never
 * blocks):
 *
 *   - correlation id -> system tid, because SYNCHRONIZATION records carry
 *     no thread id (a direct-mapped table: a collision loses the older entry
 *     and the record goes out with tid 0; the consumer can still join it to
 *     its DRIVER record by correlation id);
 *   - a floor under the watermark. A blocking call's DRIVER and
 *     SYNCHRONIZATION records start at its entry but exist only once it
 *     returns, and reach us at a flush after that. So the watermark stays
 *     below the entry of every call in progress (one slot per call) and of
 *     every call that returned during the last RT_CUPTI_EPOCHS - 1 flush
 *     epochs (one minimum per epoch): a flush that started after the epoch
 *     of its return has delivered its records, with one epoch to spare.
 */
#ifndef RT_CUPTI_CALLTRACK_H
#define RT_CUPTI_CALLTRACK_H

#include <linux/types.h>

#define RT_CUPTI_TIDMAP_SIZE 4096 /* power of two */
#define RT_CUPTI_OPEN_SLOTS 256 /* power of two: calls blocked at the same time */
#define RT_CUPTI_OPEN_PROBE 16
#define RT_CUPTI_EPOCHS 4

struct rt_cupti_calltrack {
	__u64 tidmap[RT_CUPTI_TIDMAP_SIZE]; /* corr << 32 | tid; 0: empty */
	__u64 open[RT_CUPTI_OPEN_SLOTS]; /* entry ns of a call in progress; 0: free */
	__u64 returned[RT_CUPTI_EPOCHS]; /* min entry ns of calls that returned in epoch e % N */
	__u64 epoch;
	__u64 untracked; /* calls in progress that found no free slot */
	__u64 overflows; /* calls that found no free slot, in total */
};

/* Remembers corr -> tid (calls that do not block). */
void rt_cupti_calltrack_note_tid(struct rt_cupti_calltrack *t, __u32 corr, __u32 tid);

/* At a blocking call's entry: tid and entry time; *cookie goes to exit. */
void rt_cupti_calltrack_enter(struct rt_cupti_calltrack *t, __u32 corr, __u32 tid, __u64 now_ns,
			      __u64 *cookie);

/* At its exit, with the cookie from enter. */
void rt_cupti_calltrack_exit(struct rt_cupti_calltrack *t, __u64 cookie);

/* The tid that made call corr, 0 when unknown. */
__u32 rt_cupti_calltrack_tid(const struct rt_cupti_calltrack *t, __u32 corr);

/*
 * Starts a flush epoch: call right before each flush, from one thread only.
 * Forgets the calls that returned RT_CUPTI_EPOCHS - 1 epochs ago.
 */
void rt_cupti_calltrack_next_epoch(struct rt_cupti_calltrack *t);

/*
 * After the flush: the entry time the watermark must stay at or below, 0
 * when nothing holds it. *blind is set while a call without a slot is in
 * progress (then no watermark may be written).
 */
__u64 rt_cupti_calltrack_floor(const struct rt_cupti_calltrack *t, int *blind);

#endif /* RT_CUPTI_CALLTRACK_H */
