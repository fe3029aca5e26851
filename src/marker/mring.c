// SPDX-License-Identifier: BSD-2-Clause
#include "mring.h"

#include <errno.h>

int rt_mring_init(struct rt_mring *r, void *map, __u64 hdr_size, __u64 data_size)
{
	struct rt_inject_ring *shm = map;

	if (shm->magic != RT_MARK_RING_MAGIC || shm->version != RT_INJECT_VERSION ||
	    shm->hdr_size != hdr_size || shm->data_size != data_size ||
	    __atomic_load_n(&shm->prod_pos, __ATOMIC_ACQUIRE) != 0 ||
	    __atomic_load_n(&shm->cons_pos, __ATOMIC_ACQUIRE) != 0)
		return -EPROTO;
	r->shm = shm;
	r->data = (__u8 *)map + hdr_size;
	r->size = data_size;
	r->map_len = hdr_size + data_size;
	r->source_id = shm->source_id;
	r->pid = shm->pid;
	r->cons_cache = 0;
	return 0;
}

/* Bytes a slot of len takes at head (a pad first when it would cross the end). */
static __u64 need_at(const struct rt_mring *r, __u64 head, __u32 len)
{
	__u64 contig = r->size - (head & (r->size - 1));

	return contig < len ? contig + len : len;
}

/* 1 when need bytes fit at head with the consumer at cons. */
static int fits(const struct rt_mring *r, __u64 head, __u64 cons, __u64 need)
{
	return need <= r->size && head >= cons && head - cons <= r->size - need;
}

int rt_mring_reserve(struct rt_mring *r, __u32 len, __u32 records, struct rt_mring_slot *s)
{
	struct rt_inject_ring *shm = r->shm;
	__u64 cons, head, off, contig, need;

	do {
		/* cons before head: then head >= cons unless the daemon is insane */
		cons = __atomic_load_n(&r->cons_cache, __ATOMIC_ACQUIRE);
		head = __atomic_load_n(&shm->prod_pos, __ATOMIC_RELAXED);
		need = need_at(r, head, len);
		if (!fits(r, head, cons, need)) {
			/* full by our copy: ask the header (and whether the ring was closed) */
			if (__atomic_load_n(&shm->cons_state, __ATOMIC_RELAXED) ==
			    RT_INJECT_CONS_CLOSED)
				return -EPIPE;
			cons = __atomic_load_n(&shm->cons_pos, __ATOMIC_ACQUIRE);
			__atomic_store_n(&r->cons_cache, cons, __ATOMIC_RELEASE);
			head = __atomic_load_n(&shm->prod_pos, __ATOMIC_RELAXED);
			need = need_at(r, head, len);
			if (!fits(r, head, cons, need)) {
				__atomic_fetch_add(&shm->dropped, records, __ATOMIC_RELAXED);
				return -ENOSPC;
			}
		}
	} while (!__atomic_compare_exchange_n(&shm->prod_pos, &head, head + need, 1,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	off = head & (r->size - 1);
	contig = r->size - off;
	if (contig < len) {
		/* the pad is ours alone: commit it at once */
		__atomic_store_n((__u64 *)(r->data + off), (head + 1) | RT_MARK_SLOT_PAD,
				 __ATOMIC_RELEASE);
		head += contig;
		off = 0;
	}
	s->hdr = (struct rt_mark_slot *)(r->data + off);
	s->body = r->data + off + sizeof(*s->hdr);
	s->pos = head;
	return 0;
}

void rt_mring_commit(const struct rt_mring *r, struct rt_mring_slot *s, __u32 len, __u32 records)
{
	(void)r;
	s->hdr->len = len;
	s->hdr->n_records = records;
	__atomic_store_n(&s->hdr->commit, s->pos + 1, __ATOMIC_RELEASE);
}
