/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Producer side of the injection ring (include/reqtrace/inject.h), inside
 * the traced process. Not thread-safe: the library serialises its writers.
 * Everything read back from shared memory (cons_pos, cons_state) comes from
 * the daemon and is bounds-checked before use.
 */
#ifndef RT_CUPTI_RING_H
#define RT_CUPTI_RING_H

#include <stddef.h>

#include <reqtrace/event.h>
#include <reqtrace/inject.h>

struct rt_cupti_ring {
	struct rt_inject_ring *shm; /* NULL: not mapped */
	__u8 *data;
	__u64 size; /* data area bytes, power of two */
	size_t map_len;
	__u64 head; /* our copy of prod_pos: never read back */
	__u64 written;
	__u64 dropped;
	int broken; /* the consumer side failed a check: stop writing */
};

/*
 * Checks a ring fd received from the daemon before it is mapped: it must be
 * sealed against shrinking and growing (so the mapping can never SIGBUS the
 * host) and its size must be exactly hdr_size + data_size, with a header of
 * RT_INJECT_RING_HDR_SIZE and a power-of-two data size within the protocol
 * bounds. Returns 0, -EPERM (seals missing), -EINVAL (geometry) or -errno.
 */
int rt_cupti_ring_check_fd(int fd, __u64 hdr_size, __u64 data_size);

/*
 * Maps a checked fd (the caller keeps and closes it) and checks the header
 * the daemon wrote against the WELCOME geometry. Returns 0 or -errno; on
 * error r is left unmapped.
 */
int rt_cupti_ring_map(struct rt_cupti_ring *r, int fd, __u64 hdr_size, __u64 data_size);

/* Unmaps; r may be unmapped already. */
void rt_cupti_ring_unmap(struct rt_cupti_ring *r);

/* 1 when mapped and usable. */
int rt_cupti_ring_ok(const struct rt_cupti_ring *r);

/* 1 when a record of `size` bytes fits now (wrap marker included), else 0. */
int rt_cupti_ring_fits(struct rt_cupti_ring *r, __u32 size);

/*
 * Appends rec (rec->size bytes, a multiple of 8, at most RT_EVENT_MAX) and
 * publishes it. Returns 0, -ENOSPC (full: nothing written, the caller
 * counts the loss), -EPIPE (the daemon closed the ring or corrupted its
 * positions: r is marked broken) or -EINVAL (bad record size).
 */
int rt_cupti_ring_write(struct rt_cupti_ring *r, const struct rt_event_hdr *rec);

#endif /* RT_CUPTI_RING_H */
