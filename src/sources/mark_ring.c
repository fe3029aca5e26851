// SPDX-License-Identifier: BSD-2-Clause
#include "sources/mark_ring.h"

#include <errno.h>
#include <string.h>

#define DROPS_MAX (1ULL << 32) /* one report never claims more (the count is untrusted) */

void rt_mark_cons__init(struct rt_mark_cons *c, struct rt_inject_ring *shm, __u64 data_size)
{
	memset(c, 0, sizeof(*c) - sizeof(c->rec));
	c->shm = shm;
	c->data = (__u8 *)shm + RT_INJECT_RING_HDR_SIZE;
	c->size = data_size;
}

/* Notes that every slot from prod on will be stamped after now. */
static void note(struct rt_mark_cons *c, __u64 prod, __u64 now)
{
	__u32 last = c->n_seen - 1;

	if (c->n_seen && c->seen[last].pos == prod) {
		c->seen[last].t = now;
		return;
	}
	/* full: move the last mark further out; the watermark lags a little, never leads */
	if (c->n_seen == RT_MARK_SEEN_MAX)
		last = RT_MARK_SEEN_MAX - 1;
	else
		last = c->n_seen++;
	c->seen[last].pos = prod;
	c->seen[last].t = now;
}

static void advance_wm(struct rt_mark_cons *c, int waiting, __u64 now, __u64 horizon_ns)
{
	__u32 i = 0;

	while (i < c->n_seen && c->seen[i].pos <= c->cons) {
		if (c->seen[i].t > c->wm)
			c->wm = c->seen[i].t;
		i++;
	}
	if (i) {
		memmove(c->seen, c->seen + i, (c->n_seen - i) * sizeof(c->seen[0]));
		c->n_seen -= i;
	}
	if (!waiting) {
		c->stall_since = 0;
		return;
	}
	if (!c->stall_since || c->stall_pos != c->cons) {
		c->stall_pos = c->cons;
		c->stall_since = now;
	}
	/* a slot that stays uncommitted may hold others back only so long */
	if (now - c->stall_since > horizon_ns && now > horizon_ns && now - horizon_ns > c->wm)
		c->wm = now - horizon_ns;
}

/*
 * Hands out the records of the committed slot at cons from slot_done on.
 * Returns 1 when the slot is finished, 0 when max was reached, fn's error,
 * or -EPROTO.
 */
static int slot_records(struct rt_mark_cons *c, __u64 off, __u32 len, __u32 *n, __u32 max,
			rt_mark_rec_fn fn, void *ctx)
{
	struct rt_event_hdr *ev = (struct rt_event_hdr *)c->rec.buf;
	const __u8 *p;
	__u16 size;
	int err;

	if (c->slot_done < sizeof(struct rt_mark_slot))
		c->slot_done = sizeof(struct rt_mark_slot);
	while (c->slot_done < len) {
		if (*n >= max)
			return 0;
		p = c->data + off + c->slot_done;
		/* read once: the producer may rewrite the slot under us */
		memcpy(&size, p + 2, sizeof(size));
		if (size < sizeof(*ev) || (size & (RT_EVENT_ALIGN - 1)) || size > RT_EVENT_MAX ||
		    size > len - c->slot_done)
			return -EPROTO;
		memcpy(c->rec.buf, p, size);
		ev->size = size;
		err = fn(ev, ctx);
		if (err)
			return err;
		c->slot_done += size;
		(*n)++;
	}
	return 1;
}

int rt_mark_cons__drain(struct rt_mark_cons *c, __u64 now, __u64 horizon_ns, __u32 max_records,
			rt_mark_rec_fn fn, void *ctx)
{
	__u64 prod, off, contig, left, commit;
	int err = 0, waiting = 0, r;
	__u32 n = 0, len;

	prod = __atomic_load_n(&c->shm->prod_pos, __ATOMIC_ACQUIRE);
	if (prod < c->cons || prod - c->cons > c->size || (prod & (RT_EVENT_ALIGN - 1)))
		return -EPROTO;
	note(c, prod, now);
	while (c->cons != prod) {
		off = c->cons & (c->size - 1);
		contig = c->size - off;
		left = prod - c->cons;
		commit = __atomic_load_n((__u64 *)(c->data + off), __ATOMIC_ACQUIRE);
		if ((commit & ~RT_MARK_SLOT_PAD) != c->cons + 1) {
			waiting = 1; /* reserved, not committed yet */
			break;
		}
		if (commit & RT_MARK_SLOT_PAD) {
			if (contig > left)
				return -EPROTO;
			c->cons += contig;
			continue;
		}
		len = __atomic_load_n((__u32 *)(c->data + off + 8), __ATOMIC_RELAXED);
		if (len < sizeof(struct rt_mark_slot) + sizeof(struct rt_event_hdr) ||
		    (len & (RT_EVENT_ALIGN - 1)) || len > RT_MARK_SLOT_MAX || len > contig ||
		    len > left)
			return -EPROTO;
		r = slot_records(c, off, len, &n, max_records, fn, ctx);
		if (r < 0 && r != -EPROTO)
			err = r;
		if (r <= 0) {
			if (r == -EPROTO)
				return r;
			break;
		}
		c->cons += len;
		c->slot_done = 0;
	}
	__atomic_store_n(&c->shm->cons_pos, c->cons, __ATOMIC_RELEASE);
	advance_wm(c, waiting, now, horizon_ns);
	return err ? err : (int)n;
}

__u64 rt_mark_cons__stalled_ns(const struct rt_mark_cons *c, __u64 now)
{
	return c->stall_since && now > c->stall_since ? now - c->stall_since : 0;
}

__u64 rt_mark_cons__new_drops(struct rt_mark_cons *c)
{
	__u64 d = __atomic_load_n(&c->shm->dropped, __ATOMIC_RELAXED), n;

	if (d < c->dropped_seen) {
		c->dropped_seen = d; /* rewound: the producer's business, not news */
		return 0;
	}
	n = d - c->dropped_seen;
	c->dropped_seen = d;
	return n > DROPS_MAX ? DROPS_MAX : n;
}
