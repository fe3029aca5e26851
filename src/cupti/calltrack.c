// SPDX-License-Identifier: BSD-2-Clause
#include "calltrack.h"

#define COOKIE_UNTRACKED (1ULL << 63)

void rt_cupti_calltrack_note_tid(struct rt_cupti_calltrack *t, __u32 corr, __u32 tid)
{
	__atomic_store_n(&t->tidmap[corr & (RT_CUPTI_TIDMAP_SIZE - 1)], (__u64)corr << 32 | tid,
			 __ATOMIC_RELAXED);
}

void rt_cupti_calltrack_enter(struct rt_cupti_calltrack *t, __u32 corr, __u32 tid, __u64 now_ns,
			      __u64 *cookie)
{
	__u64 expect;
	unsigned int i, slot;

	rt_cupti_calltrack_note_tid(t, corr, tid);
	now_ns &= ~COOKIE_UNTRACKED;
	if (!now_ns)
		now_ns = 1; /* 0 marks a free slot */
	for (i = 0; i < RT_CUPTI_OPEN_PROBE; i++) {
		slot = (tid + i) & (RT_CUPTI_OPEN_SLOTS - 1);
		expect = 0;
		if (__atomic_compare_exchange_n(&t->open[slot], &expect, now_ns, 0,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
			*cookie = slot + 1;
			return;
		}
	}
	__atomic_fetch_add(&t->untracked, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&t->overflows, 1, __ATOMIC_RELAXED);
	*cookie = COOKIE_UNTRACKED | now_ns;
}

static void fold_min(__u64 *p, __u64 v)
{
	__u64 cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while ((!cur || v < cur) &&
	       !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

void rt_cupti_calltrack_exit(struct rt_cupti_calltrack *t, __u64 cookie)
{
	__u64 e = __atomic_load_n(&t->epoch, __ATOMIC_ACQUIRE);
	__u64 *bucket = &t->returned[e % RT_CUPTI_EPOCHS];
	__u64 entry;

	if (cookie & COOKIE_UNTRACKED) {
		fold_min(bucket, cookie & ~COOKIE_UNTRACKED);
		__atomic_fetch_sub(&t->untracked, 1, __ATOMIC_RELEASE);
		return;
	}
	if (cookie < 1 || cookie > RT_CUPTI_OPEN_SLOTS)
		return;
	entry = __atomic_load_n(&t->open[cookie - 1], __ATOMIC_RELAXED);
	/* into the epoch's minimum before the slot is freed: floor() reads slots first */
	fold_min(bucket, entry);
	__atomic_store_n(&t->open[cookie - 1], 0, __ATOMIC_RELEASE);
}

__u32 rt_cupti_calltrack_tid(const struct rt_cupti_calltrack *t, __u32 corr)
{
	__u64 v = __atomic_load_n(&t->tidmap[corr & (RT_CUPTI_TIDMAP_SIZE - 1)], __ATOMIC_RELAXED);

	return v && (__u32)(v >> 32) == corr ? (__u32)v : 0;
}

void rt_cupti_calltrack_next_epoch(struct rt_cupti_calltrack *t)
{
	__u64 e = __atomic_load_n(&t->epoch, __ATOMIC_RELAXED) + 1;

	/* the bucket epoch e reuses last held epoch e - N, delivered long ago */
	__atomic_store_n(&t->returned[e % RT_CUPTI_EPOCHS], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->epoch, e, __ATOMIC_RELEASE);
}

__u64 rt_cupti_calltrack_floor(const struct rt_cupti_calltrack *t, int *blind)
{
	__u64 v, min = 0, e;
	unsigned int i;

	for (i = 0; i < RT_CUPTI_OPEN_SLOTS; i++) {
		v = __atomic_load_n(&t->open[i], __ATOMIC_ACQUIRE);
		if (v && (!min || v < min))
			min = v;
	}
	e = __atomic_load_n(&t->epoch, __ATOMIC_ACQUIRE);
	for (i = 0; i < RT_CUPTI_EPOCHS - 1; i++) {
		v = __atomic_load_n(&t->returned[(e - i) % RT_CUPTI_EPOCHS], __ATOMIC_ACQUIRE);
		if (v && (!min || v < min))
			min = v;
	}
	*blind = __atomic_load_n(&t->untracked, __ATOMIC_ACQUIRE) != 0;
	return min;
}
