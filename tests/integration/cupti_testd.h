/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test daemon for the CUPTI library tests, built from inject_server: a
 * thread (or a forked child) that accepts injected processes and keeps what
 * their rings deliver, so a test can wait for it.
 */
#ifndef RT_CUPTI_TESTD_H
#define RT_CUPTI_TESTD_H

#include <pthread.h>

#include <reqtrace/event.h>

#include "sources/inject_server.h"

#define TESTD_MAX_RECS 32768
#define TESTD_REC_SIZE 160 /* the largest record the library writes (a kernel: 152) */

enum testd_allow {
	TESTD_ALLOW_NONE = 0, /* every peer is outside the target groups */
	TESTD_ALLOW_SELF = 1, /* only this process */
	TESTD_ALLOW_ANY = 2,
};

struct testd {
	struct rt_inject_server *s;
	pthread_t thread;
	pthread_mutex_t lock;
	int stop;
	int allow;
	/* under lock */
	unsigned int n;
	union {
		struct rt_event_hdr hdr;
		unsigned char raw[TESTD_REC_SIZE];
	} recs[TESTD_MAX_RECS];
	unsigned int by_kind[RT_EV__MAX];
	unsigned long long loss[8]; /* by enum rt_loss_reason */
	unsigned long long last_wm;
	unsigned long long late; /* records older than a watermark already passed on */
};

/* Serves path in a thread of this process, rings of ring_bytes (0: default). 0 or -errno. */
int testd_start(struct testd *d, const char *path, int allow, unsigned long long ring_bytes);
void testd_stop(struct testd *d);

/* Copies of the stats and the first session (0 if none) under the lock. */
void testd_stats(struct testd *d, struct rt_inject_server_stats *st);
int testd_conn(struct testd *d, struct rt_inject_conn_info *ci);

/* Waits until pred(d, arg) holds (checked under the lock); 0 or -ETIMEDOUT. */
int testd_wait(struct testd *d, int (*pred)(struct testd *d, void *arg), void *arg, int timeout_ms);

/*
 * Forks a child that serves path until killed (ALLOW_ANY) and writes one
 * line "A <pid> <lost_unconnected>\n" to the returned pipe for each peer it
 * accepts. Returns the child's pid, *report_fd the pipe's read end.
 */
int testd_fork(const char *path, int *report_fd);

#endif /* RT_CUPTI_TESTD_H */
