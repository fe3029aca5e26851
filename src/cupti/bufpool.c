// SPDX-License-Identifier: BSD-2-Clause
#include "bufpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rt_cupti_bufpool_init(struct rt_cupti_bufpool *p, size_t buf_size, unsigned int max_bufs)
{
	memset(p, 0, offsetof(struct rt_cupti_bufpool, discard));
	if (buf_size < RT_CUPTI_BUF_MIN)
		buf_size = RT_CUPTI_BUF_MIN;
	if (buf_size > RT_CUPTI_BUF_MAX)
		buf_size = RT_CUPTI_BUF_MAX;
	if (max_bufs < RT_CUPTI_BUFS_MIN)
		max_bufs = RT_CUPTI_BUFS_MIN;
	if (max_bufs > RT_CUPTI_BUFS_MAX)
		max_bufs = RT_CUPTI_BUFS_MAX;
	p->buf_size = buf_size & ~63UL; /* aligned_alloc wants a multiple of the alignment */
	p->max_bufs = max_bufs;
	p->free = calloc(max_bufs, sizeof(*p->free));
	if (!p->free)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	return 0;
}

void rt_cupti_bufpool_fini(struct rt_cupti_bufpool *p)
{
	unsigned int i;

	if (!p->free)
		return;
	for (i = 0; i < p->nfree; i++)
		free(p->free[i]);
	free(p->free);
	p->free = NULL;
	pthread_mutex_destroy(&p->lock);
}

static void *get_discard(struct rt_cupti_bufpool *p, size_t *size)
{
	int i;

	for (i = 0; i < RT_CUPTI_DISCARD_BUFS; i++) {
		if (__atomic_exchange_n(&p->discard_busy[i], 1, __ATOMIC_ACQUIRE) == 0) {
			__atomic_fetch_add(&p->discard_handed, 1, __ATOMIC_RELAXED);
			*size = RT_CUPTI_DISCARD_SIZE;
			return p->discard[i];
		}
	}
	__atomic_fetch_add(&p->refused, 1, __ATOMIC_RELAXED);
	*size = 0;
	return NULL;
}

void *rt_cupti_bufpool_get(struct rt_cupti_bufpool *p, size_t *size)
{
	void *buf = NULL;
	int grow = 0;

	pthread_mutex_lock(&p->lock);
	if (p->nfree) {
		buf = p->free[--p->nfree];
	} else if (p->allocated < p->max_bufs) {
		p->allocated++; /* reserve the slot, allocate outside the lock */
		grow = 1;
	}
	pthread_mutex_unlock(&p->lock);
	if (grow) {
		/* aligned_alloc: CUPTI wants ACTIVITY_RECORD_ALIGNMENT (8) at least */
		buf = aligned_alloc(64, p->buf_size);
		if (!buf) {
			pthread_mutex_lock(&p->lock);
			p->allocated--;
			pthread_mutex_unlock(&p->lock);
		}
	}
	if (!buf)
		return get_discard(p, size);
	*size = p->buf_size;
	return buf;
}

int rt_cupti_bufpool_is_discard(const struct rt_cupti_bufpool *p, const void *buf)
{
	const unsigned char *b = buf;

	return b >= &p->discard[0][0] && b < &p->discard[0][0] + sizeof(p->discard);
}

void rt_cupti_bufpool_put(struct rt_cupti_bufpool *p, void *buf)
{
	const unsigned char *b = buf;
	unsigned int i;

	if (!buf)
		return;
	if (rt_cupti_bufpool_is_discard(p, buf)) {
		size_t i = (size_t)(b - &p->discard[0][0]) / RT_CUPTI_DISCARD_SIZE;

		__atomic_store_n(&p->discard_busy[i], 0, __ATOMIC_RELEASE);
		return;
	}
	pthread_mutex_lock(&p->lock);
	/* a buffer handed back twice must not be handed out twice */
	for (i = 0; i < p->nfree && p->free[i] != buf; i++)
		;
	if (i == p->nfree && p->nfree < p->allocated)
		p->free[p->nfree++] = buf;
	pthread_mutex_unlock(&p->lock);
}
