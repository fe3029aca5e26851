/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUPTI activity buffers: a bounded pool of equal-sized buffers (1-8 MiB,
 * allocated on first use, reused, freed only at fini) and a few static
 * discard buffers handed out when the pool is exhausted, so CUPTI is never
 * refused a buffer while the library falls behind. Records that land in a
 * discard buffer are counted and thrown away by the caller.
 *
 * Thread-safe: CUPTI asks for buffers from the host's threads and returns
 * them from its own.
 */
#ifndef RT_CUPTI_BUFPOOL_H
#define RT_CUPTI_BUFPOOL_H

#include <pthread.h>
#include <stddef.h>

#define RT_CUPTI_BUF_MIN (1UL << 20)
#define RT_CUPTI_BUF_MAX (8UL << 20)
#define RT_CUPTI_BUF_DEFAULT (2UL << 20)
#define RT_CUPTI_BUFS_MIN 2
#define RT_CUPTI_BUFS_MAX 64
#define RT_CUPTI_BUFS_DEFAULT 16
/* Several, because CUPTI may hold more than one buffer at a time. */
#define RT_CUPTI_DISCARD_BUFS 4
#define RT_CUPTI_DISCARD_SIZE (256UL << 10)

struct rt_cupti_bufpool {
	pthread_mutex_t lock;
	size_t buf_size;
	unsigned int max_bufs;
	unsigned int allocated; /* pool buffers in existence */
	unsigned int nfree;
	void **free; /* max_bufs slots */
	unsigned long long discard_handed; /* times a discard buffer was handed out */
	unsigned long long refused; /* times even the discard buffers were all out */
	int discard_busy[RT_CUPTI_DISCARD_BUFS];
	unsigned char discard[RT_CUPTI_DISCARD_BUFS][RT_CUPTI_DISCARD_SIZE]
		__attribute__((aligned(64)));
};

/*
 * buf_size is clamped to [RT_CUPTI_BUF_MIN, RT_CUPTI_BUF_MAX] and rounded down
 * to 64; max_bufs to [RT_CUPTI_BUFS_MIN, RT_CUPTI_BUFS_MAX]. Returns 0 or -ENOMEM.
 */
int rt_cupti_bufpool_init(struct rt_cupti_bufpool *p, size_t buf_size, unsigned int max_bufs);

/* Frees the pooled buffers; buffers still out are the caller's to free. */
void rt_cupti_bufpool_fini(struct rt_cupti_bufpool *p);

/*
 * A buffer for CUPTI: a pool buffer, else a free discard buffer, else NULL
 * (every discard buffer is out; CUPTI then drops and counts the records
 * itself). *size is the buffer's size (0 with NULL).
 */
void *rt_cupti_bufpool_get(struct rt_cupti_bufpool *p, size_t *size);

/* 1 if buf is one of p's discard buffers. */
int rt_cupti_bufpool_is_discard(const struct rt_cupti_bufpool *p, const void *buf);

/* Takes back a buffer from rt_cupti_bufpool_get(). */
void rt_cupti_bufpool_put(struct rt_cupti_bufpool *p, void *buf);

#endif /* RT_CUPTI_BUFPOOL_H */
