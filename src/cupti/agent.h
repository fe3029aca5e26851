/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The injection library's one global state and how its files share it:
 * inject.c (InitializeInjection, exit and fork handling), conn.c (handshake,
 * background thread: retries, liveness, periodic flush and watermarks),
 * collect.c (CUPTI setup and callbacks, buffer translation into the ring).
 *
 * Locking: ring_lock serialises every ring writer (buffer completions, the
 * background thread's loss and watermark records) and attach/detach. Host
 * threads never take it: they only run CUPTI's buffer request callback
 * (bufpool) and driver API callbacks (calltrack), both lock-free or nearly.
 */
#ifndef RT_CUPTI_AGENT_H
#define RT_CUPTI_AGENT_H

#include <pthread.h>

#include <reqtrace/inject.h>

#include "bufpool.h"
#include "calltrack.h"
#include "cupti_fns.h"
#include "ring.h"

/* losses held until the ring has room to report them (RT_EV_LOSS) */
enum rt_cupti_loss {
	RT_CUPTI_LOSS_DROPPED, /* CUPTI reported dropped records */
	RT_CUPTI_LOSS_DISCARD, /* records landed in a discard buffer */
	RT_CUPTI_LOSS_INVALID, /* malformed or unknown activity records */
	RT_CUPTI_LOSS_RING, /* the ring was full */
	RT_CUPTI_LOSS__COUNT,
};

struct rt_cupti_pending_loss {
	__u64 count;
	__u64 since_ns; /* first loss */
	__u64 last_ns; /* latest loss */
};

struct rt_cupti_agent {
	/* set once by InitializeInjection */
	char socket_path[108];
	char comm[16]; /* /proc/self/comm */
	__u32 status; /* enum rt_inject_status */
	__u32 cupti_result;
	__u32 cupti_version;
	struct rt_cupti_fns fns;
	CUpti_SubscriberHandle sub;
	struct rt_cupti_bufpool pool;
	struct rt_cupti_calltrack calls;
	int collecting; /* activity kinds enabled (atomic) */
	int exiting; /* atexit ran (atomic) */
	int in_tick; /* the background thread is flushing (atomic) */
	int forked_child; /* we are a fork() child: idle for good (atomic) */

	/* ring_lock protects everything down to the stats */
	pthread_mutex_t ring_lock;
	struct rt_cupti_ring ring;
	__u32 source_id;
	__u32 pid; /* hdr.pid as the daemon sees us */
	__u32 flush_ms;
	__u32 horizon_ms;
	__u64 last_wm;
	/* how late CUPTI hands buffers over (the watermark's horizon follows it) */
	__u64 lag_cur, lag_prev; /* worst in this lag window and in the previous one */
	__u64 lag_window_start;
	struct rt_cupti_pending_loss loss[RT_CUPTI_LOSS__COUNT];
	__u64 lost_unconnected; /* while no ring: goes out in the next HELLO */
	__u64 invalid_seen; /* xlate invalid+unknown already counted as loss */

	int delivering; /* buffer completions in progress (atomic) */

	/* owned by the background thread (and InitializeInjection before it starts) */
	int sock;
	pthread_t thread;
	int thread_started;

	/* stats (atomic) */
	__u64 records;
	__u64 buffers;
	__u64 connects;
	__u64 disconnects;
	__u64 refusals;
	__u64 ring_rejects; /* ring fds that failed the seal/size checks */
};

extern struct rt_cupti_agent rt_cupti_agent;

/* ---- collect.c ---- */

/* Loads CUPTI, checks the version, subscribes and registers the callbacks;
 * sets agent.status. Nothing is enabled yet. */
void rt_cupti_collect_init(struct rt_cupti_agent *a);

/* Enables the activity kinds, driver APIs and callbacks (once). 0 or -errno. */
int rt_cupti_collect_start(struct rt_cupti_agent *a);

/* One default flush, then loss and watermark records (background thread). */
void rt_cupti_collect_tick(struct rt_cupti_agent *a);

/* At exit: stops the ticks, then a forced flush and a final watermark. */
void rt_cupti_collect_exit(struct rt_cupti_agent *a);

/* Adds n to a pending loss (ring_lock held). */
void rt_cupti_loss_add(struct rt_cupti_agent *a, enum rt_cupti_loss r, __u64 n, __u64 now_ns);

/* Writes pending loss records that fit (ring_lock held, ring attached). */
void rt_cupti_loss_flush(struct rt_cupti_agent *a, __u64 now_ns);

/* CLOCK_MONOTONIC ns. */
__u64 rt_cupti_now_ns(void);

/* ---- conn.c ---- */

/* Tries one handshake within timeout_ms; 0 or -errno. Background thread,
 * or InitializeInjection before the thread exists. */
int rt_cupti_conn_try(struct rt_cupti_agent *a, int timeout_ms);

/* Starts the background thread. 0 or -errno. */
int rt_cupti_conn_start_thread(struct rt_cupti_agent *a);

/* Drops the ring and the socket (daemon gone). */
void rt_cupti_conn_detach(struct rt_cupti_agent *a);

#endif /* RT_CUPTI_AGENT_H */
