/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Producer side of the marker ring (include/reqtrace/mark_ring.h), inside
 * the traced process: any number of threads reserve, fill and commit slots
 * at once. The geometry is kept here, in private memory, and never read
 * back from the shared header, so a daemon that scribbles on the header can
 * at worst make us drop records, never write outside the mapping.
 */
#ifndef RT_MARKER_MRING_H
#define RT_MARKER_MRING_H

#include <reqtrace/event.h>
#include <reqtrace/inject.h>
#include <reqtrace/mark_ring.h>

struct rt_mring {
	/* rings given up: never freed (a writer may hold one), kept listed */
	struct rt_mring *retired_next;
	struct rt_inject_ring *shm;
	__u8 *data;
	__u64 size; /* data area bytes, power of two */
	__u64 map_len;
	__u32 source_id;
	__u32 pid; /* hdr.pid of every record: the daemon's view of us */
	/*
	 * The consumer's position as last read from the header (acquire/release:
	 * it carries the consumer's "done reading" to the producers). The
	 * consumer rewrites its cache line on every drain; reading it on every
	 * call would cost a cache miss each time, so producers read it only when
	 * this copy says the ring is full.
	 */
	__u64 cons_cache;
};

/* A reserved slot: where to write its records, and what commits it. */
struct rt_mring_slot {
	struct rt_mark_slot *hdr;
	__u8 *body; /* len - sizeof(struct rt_mark_slot) bytes */
	__u64 pos;
};

/*
 * Reserves a slot of len bytes (a multiple of 8, header included, at most
 * RT_MARK_SLOT_MAX). Returns 0, -ENOSPC (ring full: counted in shm->dropped
 * as `records` records) or -EPIPE (the daemon closed the ring).
 */
int rt_mring_reserve(struct rt_mring *r, __u32 len, __u32 records, struct rt_mring_slot *s);

/* Publishes a filled slot (release order: the records before the commit). */
void rt_mring_commit(const struct rt_mring *r, struct rt_mring_slot *s, __u32 len, __u32 records);

/*
 * Checks a mapped ring header against the WELCOME geometry and fills r.
 * Returns 0 or -EPROTO.
 */
int rt_mring_init(struct rt_mring *r, void *map, __u64 hdr_size, __u64 data_size);

#endif /* RT_MARKER_MRING_H */
