// SPDX-License-Identifier: BSD-2-Clause
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static int geometry_ok(__u64 hdr_size, __u64 data_size)
{
	return hdr_size == RT_INJECT_RING_HDR_SIZE && data_size >= RT_INJECT_RING_MIN &&
	       data_size <= RT_INJECT_RING_MAX && (data_size & (data_size - 1)) == 0;
}

int rt_cupti_ring_check_fd(int fd, __u64 hdr_size, __u64 data_size)
{
	struct stat st;
	int seals;

	if (!geometry_ok(hdr_size, data_size))
		return -EINVAL;
	seals = fcntl(fd, F_GET_SEALS);
	/* EINVAL: a file that cannot carry seals (not shmem): never safe to map */
	if (seals < 0)
		return errno == EINVAL ? -EPERM : -errno;
	if ((seals & REQUIRED_SEALS) != REQUIRED_SEALS)
		return -EPERM;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (__u64)st.st_size != hdr_size + data_size)
		return -EINVAL;
	return 0;
}

int rt_cupti_ring_map(struct rt_cupti_ring *r, int fd, __u64 hdr_size, __u64 data_size)
{
	struct rt_inject_ring *shm;
	size_t len = hdr_size + data_size;
	void *p;

	/* geometry again: the caller may not have used rt_cupti_ring_check_fd() */
	memset(r, 0, sizeof(*r));
	if (!geometry_ok(hdr_size, data_size))
		return -EINVAL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	shm = p;
	/* a fresh ring: both positions at 0, geometry as announced */
	if (shm->magic != RT_INJECT_RING_MAGIC || shm->version != RT_INJECT_VERSION ||
	    shm->hdr_size != hdr_size || shm->data_size != data_size ||
	    __atomic_load_n(&shm->prod_pos, __ATOMIC_ACQUIRE) != 0 ||
	    __atomic_load_n(&shm->cons_pos, __ATOMIC_ACQUIRE) != 0) {
		munmap(p, len);
		return -EPROTO;
	}
	r->shm = shm;
	r->data = (__u8 *)p + hdr_size;
	r->size = data_size;
	r->map_len = len;
	return 0;
}

void rt_cupti_ring_unmap(struct rt_cupti_ring *r)
{
	if (r->shm)
		munmap(r->shm, r->map_len);
	memset(r, 0, sizeof(*r));
}

int rt_cupti_ring_ok(const struct rt_cupti_ring *r)
{
	return r->shm && !r->broken;
}

/* Free bytes, or -EPIPE when the consumer's line is closed or insane. */
static __s64 ring_free(struct rt_cupti_ring *r)
{
	__u64 cons = __atomic_load_n(&r->shm->cons_pos, __ATOMIC_ACQUIRE);
	__u32 state = __atomic_load_n(&r->shm->cons_state, __ATOMIC_RELAXED);
	__u64 used = r->head - cons;

	if (state == RT_INJECT_CONS_CLOSED || used > r->size || (cons & (RT_EVENT_ALIGN - 1))) {
		r->broken = 1;
		return -EPIPE;
	}
	return (__s64)(r->size - used);
}

/* A record that does not fit before the end also uses up the rest of the area. */
static __u64 need_bytes(const struct rt_cupti_ring *r, __u32 size)
{
	__u64 contig = r->size - (r->head & (r->size - 1));

	return contig < size ? contig + size : size;
}

int rt_cupti_ring_fits(struct rt_cupti_ring *r, __u32 size)
{
	__s64 avail;

	if (!rt_cupti_ring_ok(r))
		return 0;
	avail = ring_free(r);
	return avail >= 0 && (__u64)avail >= need_bytes(r, size);
}

int rt_cupti_ring_write(struct rt_cupti_ring *r, const struct rt_event_hdr *rec)
{
	__u32 size = rec->size;
	__u64 off, contig;
	__s64 avail;

	if (!rt_cupti_ring_ok(r))
		return -EPIPE;
	if (size < sizeof(*rec) || size > RT_EVENT_MAX || (size & (RT_EVENT_ALIGN - 1)))
		return -EINVAL;
	avail = ring_free(r);
	if (avail < 0)
		return -EPIPE;
	if ((__u64)avail < need_bytes(r, size)) {
		r->dropped++;
		__atomic_store_n(&r->shm->dropped, r->dropped, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	off = r->head & (r->size - 1);
	contig = r->size - off;
	if (contig < size) {
		/* wrap marker: kind RT_EV_NONE; size says how far (it fits a __u16) */
		struct rt_event_hdr wrap = { .kind = RT_EV_NONE, .size = (__u16)contig };

		memcpy(r->data + off, &wrap, RT_EVENT_ALIGN);
		r->head += contig;
		off = 0;
	}
	memcpy(r->data + off, rec, size);
	r->head += size;
	/* the informative counters first; prod_pos last, with release: the
	 * consumer that sees the new position sees the bytes behind it */
	r->written++;
	__atomic_store_n(&r->shm->written, r->written, __ATOMIC_RELAXED);
	__atomic_store_n(&r->shm->prod_pos, r->head, __ATOMIC_RELEASE);
	return 0;
}
