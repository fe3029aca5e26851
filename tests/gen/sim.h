/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Discrete-event core of the synthetic generator: two simulated CPUs with a
 * global FIFO runqueue and tick preemption, threads that execute queued
 * actions (burn CPU, make a socket syscall, wake a thread, call a marker,
 * sleep), sockets with receive buffers, and timers for everything outside
 * the traced process (clients, the network, the GPU, a peer rank).
 *
 * It emits the records BPF would emit (docs/events.md) into an in-memory
 * list and logs every scheduling fact (segments, bursts, wakeups, request
 * I/O, markers) for the truth pass. Deterministic: time only advances
 * through the timer heap and randomness comes from the seeded generator.
 */
#ifndef RT_GEN_SIM_H
#define RT_GEN_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reqtrace/event.h>

#define SIM_NCPU 2
#define SIM_MAX_THREADS 16
#define SIM_MAX_SOCKS 8
#define SIM_AQ_LEN 256 /* queued actions per thread */
#define SIM_TICK_NS 1000000ULL /* preemption granularity */
#define SIM_MARK_COST_NS 150 /* a marker call: a no-op function under a uprobe */

/* What a sleeping thread waits for (bit mask); a wakeup names one reason. */
#define SIM_W_SOCK 0x1 /* data or EOF on wait_fd */
#define SIM_W_TOKENS 0x2
#define SIM_W_INBOX 0x4
#define SIM_W_TIMER 0x8
#define SIM_W_CONN 0x10 /* a connection handed to this handler */
#define SIM_W_ACCEPT 0x20 /* a connection in the listen backlog */
#define SIM_W_JOIN 0x40 /* a thread it created has exited (pthread_join) */

/* Record sources of the generated stream (the file names them). */
#define SIM_SRC_BPF 1
#define SIM_SRC_LATE 2

enum sim_tstate { SIM_SLEEP, SIM_RUNNABLE, SIM_RUNNING };
enum sim_seg_type { SIM_SEG_ONCPU, SIM_SEG_RUNQ, SIM_SEG_SLEEP, SIM_SEG_UNSEEN };

enum sim_act_kind {
	SIM_ACT_BURN,
	SIM_ACT_MARK, /* MARK_BEGIN/END, STEP_BEGIN(+members)/END; PACK_CALL: a region */
	SIM_ACT_SEND,
	SIM_ACT_RECV,
	SIM_ACT_WAKE,
	SIM_ACT_WAIT, /* block until cond() holds */
	SIM_ACT_SLEEP, /* block for ns, then an interrupt wakes the thread */
	SIM_ACT_CALL,
	SIM_ACT_ACCEPT,
	SIM_ACT_CONNECT,
	SIM_ACT_CLOSE,
	SIM_ACT_TASK_NEW,
	SIM_ACT_EXIT, /* the thread exits (PROC_EXIT, a switch-out DEAD); TASK_NEW restarts it */
};

struct sim;
struct sim_thread;
struct sim_act;

typedef void (*sim_cb)(struct sim *s, struct sim_thread *t, struct sim_act *a);
typedef bool (*sim_cond)(struct sim *s, struct sim_thread *t);
typedef void (*sim_timer_fn)(struct sim *s, uint64_t a, uint64_t b);

struct sim_act {
	uint8_t kind;
	uint8_t stage;
	uint16_t syscall; /* enum rt_sock_syscall */
	uint16_t mark_kind; /* RT_EV_MARK_* */
	uint16_t role; /* PACK_CALL: enum rt_pack_role (0: a region) */
	int32_t fd;
	int32_t target; /* WAKE, TASK_NEW: thread index */
	int32_t req; /* request index the action is for, -1: none */
	uint32_t reason; /* WAKE, WAIT: SIM_W_* */
	uint32_t phase; /* MARK */
	uint32_t mask; /* MARK step members (request bit mask) */
	uint64_t ns; /* BURN, SLEEP */
	uint64_t step_id;
	uint64_t data_off; /* SEND: payload in s->tx; RECV: stream offset of what was read */
	uint32_t data_len; /* SEND: payload length; RECV: buffer size */
	uint64_t arr_ns; /* RECV on a watched socket: the ARRIVAL's data_ns (0: none) */
	uint32_t arr_flags; /* ... and its RT_ARR_* flags */
	uint32_t n_iov; /* SEND: iovecs (recorded as the syscall kind only) */
	int64_t ret; /* RECV/SEND result */
	uint64_t enter_ns;
	sim_cb done; /* called when the action completes */
	sim_cond cond; /* WAIT */
	long arg;
};

struct sim_seg {
	uint64_t t0, t1;
	uint32_t burst;
	uint8_t type; /* enum sim_seg_type */
};

/* From a wakeup (or the first switch-in) to the switch-out that blocks. */
struct sim_burst {
	uint64_t start, end; /* end = UINT64_MAX while open */
	int32_t waker; /* thread index, -1: interrupt or untraced, -2: first seen */
};

struct sim_wake_log {
	uint64_t ts;
	int32_t waker, target;
};

/* The thread read bytes of request `req` or wrote bytes of its response. */
struct sim_io_log {
	uint64_t ts;
	int32_t thread, req;
};

struct sim_mark_log {
	uint64_t ts;
	int32_t thread;
	uint16_t kind; /* RT_EV_MARK_BEGIN, _END, _STEP_BEGIN, _STEP_END; PACK_CALL (region) */
	uint16_t phase; /* PACK_CALL: 0 entry, 1 return */
	uint16_t role; /* PACK_CALL: enum rt_pack_role (0: a region) */
	int32_t req; /* BEGIN/END; PACK_CALL TOKENIZE, SEQ_RM */
	uint32_t mask; /* STEP_BEGIN members */
	uint64_t step_id;
};

struct sim_thread {
	int idx;
	uint32_t pid, tid;
	char comm[RT_COMM_LEN];
	bool traced;
	enum sim_tstate state;
	int cpu; /* current, or last */
	uint32_t wait_mask;
	int wait_fd;
	uint64_t burn_left, burn_start;
	bool burning;
	uint32_t gen; /* invalidates stale burn timers */
	struct sim_act aq[SIM_AQ_LEN];
	uint32_t aq_head, aq_n;
	void (*behave)(struct sim *s, struct sim_thread *t); /* refills an empty queue */
	void *role;
	/* truth logs */
	struct sim_seg *segs;
	size_t n_segs, cap_segs;
	struct sim_burst *bursts;
	size_t n_bursts, cap_bursts;
	uint64_t seg_t0;
	uint8_t seg_type;
};

struct sim_sock {
	bool used;
	bool pending_accept; /* in the listen backlog */
	bool eof; /* peer closed: reads return 0 once the data is read */
	bool broken; /* peer gone: sends fail with -EPIPE */
	bool closed; /* closed by the server */
	int fd;
	uint32_t accept_seq;
	struct rt_sock_addr local, peer;
	uint8_t *rx;
	size_t rx_len, rx_cap, rx_pos;
	/* arrival modelling (watched: the kernel's receive path is traced):
	 * when each segment of rx arrived, the handshake, and whether the
	 * last read left bytes behind (docs/events.md, ARRIVAL) */
	bool watched;
	uint64_t established_ns;
	size_t *seg_off; /* first rx offset of each segment */
	uint64_t *seg_ts;
	size_t n_segs, cap_segs;
	bool left_unread;
};

struct sim_cpu {
	int cur; /* thread index, -1: idle */
	int reserved; /* thread being dispatched onto this idle CPU, -1: none */
	uint32_t gen;
};

struct sim_rec {
	uint64_t ts;
	uint64_t off; /* in s->recs_bytes */
	uint32_t seq;
	uint16_t len;
	uint8_t src;
	uint8_t cpu;
};

struct sim_timer {
	uint64_t at;
	uint64_t seq;
	sim_timer_fn fn;
	uint64_t a, b;
};

struct sim {
	uint64_t now;
	uint64_t rng;
	uint64_t timer_seq;
	uint32_t pid; /* the traced process */
	int err; /* first error (-errno); the run stops */
	bool stopped;

	struct sim_cpu cpus[SIM_NCPU];
	struct sim_thread *threads[SIM_MAX_THREADS];
	int n_threads;
	int runq[SIM_MAX_THREADS];
	int runq_n;

	struct sim_sock socks[SIM_MAX_SOCKS];
	int listen_fd;
	struct rt_sock_addr listen_addr;
	uint32_t accept_seq;

	struct sim_timer *heap;
	size_t heap_n, heap_cap;

	/* response payloads and other send buffers */
	uint8_t *tx;
	size_t tx_len, tx_cap;

	/* emitted records, in emission (= ts) order */
	struct sim_rec *recs;
	size_t n_recs, cap_recs;
	uint8_t *recs_bytes;
	size_t recs_len, recs_cap;
	uint8_t src_waking, src_mark; /* sources for WAKING and marker records */

	struct sim_wake_log *wakes;
	size_t n_wakes, cap_wakes;
	struct sim_io_log *ios;
	size_t n_ios, cap_ios;
	struct sim_mark_log *marks;
	size_t n_marks, cap_marks;

	struct sim_act scratch; /* handed out when a queue is full (the run then fails) */

	/* request ids for marker records, indexed by request */
	const char *(*req_id)(void *ctx, int req);
	void *req_ctx;
	/*
	 * Engine-pack mode (gen.h RT_GEN_PACK): a step's STEP_BEGIN/END actions
	 * are logged as steps but emitted as PACK_BATCH + PACK_CALL DECODE
	 * entry and its return; pack_batch fills the batch of step step_id.
	 */
	bool pack;
	void (*pack_batch)(void *ctx, uint64_t step_id, struct rt_ev_pack_batch *b);
	/* PACK_CALL SEQ_RM: the request's sequence id */
	int32_t (*pack_seq)(void *ctx, int req);
};

/* Deterministic randomness (splitmix64). */
uint64_t sim_rand(struct sim *s);
/* Uniform in [lo, hi]. */
uint64_t sim_range(struct sim *s, uint64_t lo, uint64_t hi);

/* Starts at time `start` with the given seed; 0 or -errno. */
int sim_init(struct sim *s, uint64_t start, uint64_t seed, uint32_t pid);
void sim_fini(struct sim *s);

/*
 * Adds a thread. traced: belongs to the traced process (its records are
 * emitted). Returns the thread index or -errno. The thread starts asleep
 * (waiting for nothing) unless made runnable by sim_thread_start().
 */
int sim_thread_add(struct sim *s, uint32_t pid, uint32_t tid, const char *comm, bool traced,
		   void (*behave)(struct sim *, struct sim_thread *), void *role);
/* A new task becomes runnable (no WAKING: the kernel traces sched_wakeup_new). */
void sim_thread_start(struct sim *s, int idx);
/* The first thread: already on CPU 0 when the recording starts. */
void sim_thread_running(struct sim *s, int idx);

/* Appends an action to a thread's queue and returns it (zeroed but for kind, req = -1). */
struct sim_act *sim_push(struct sim *s, struct sim_thread *t, enum sim_act_kind kind);
void sim_burn(struct sim *s, struct sim_thread *t, uint64_t ns);

/*
 * Wakes target for `reason` if it sleeps waiting for it; waker -1 is an
 * interrupt. Returns true when a wakeup happened.
 */
bool sim_wake(struct sim *s, int waker, int target, uint32_t reason);

int sim_timer(struct sim *s, uint64_t at, sim_timer_fn fn, uint64_t a, uint64_t b);

/* Sockets. */
int sim_sock_add(struct sim *s, int fd, const struct rt_sock_addr *local,
		 const struct rt_sock_addr *peer);
struct sim_sock *sim_sock_get(struct sim *s, int fd);
/* Bytes arrive from the peer (wakes a reader). */
int sim_sock_arrive(struct sim *s, int fd, const void *data, size_t len);
/* The peer closes; broken: it is gone, sends fail with EPIPE. */
void sim_sock_peer_close(struct sim *s, int fd, bool broken);
/* A connection enters the listen backlog (wakes the acceptor). */
void sim_listen_arrive(struct sim *s, int fd);

/* Appends bytes to the send buffer; returns their offset. */
int sim_tx_append(struct sim *s, const void *data, size_t len, uint64_t *off);

/* Records a request-I/O fact for the truth pass (rule 2 ownership). */
int sim_log_io(struct sim *s, int thread, int req);

/* Runs until `until` or until nothing is left to do; 0 or -errno. */
int sim_run(struct sim *s, uint64_t until);
/* Closes every thread's open segment at s->now (bursts stay open). */
void sim_finish(struct sim *s);

/* Record emission (sim_rec.c). */
int sim_emit(struct sim *s, const void *rec, size_t len, uint8_t src, int cpu);
void sim_hdr(struct rt_event_hdr *h, uint16_t kind, size_t size, uint64_t ts, uint32_t pid,
	     uint32_t tid);
int sim_emit_switch(struct sim *s, int cpu, int prev, uint32_t prev_state, int next);
int sim_emit_waking(struct sim *s, int waker, int target, int cpu);
int sim_emit_io(struct sim *s, struct sim_thread *t, uint16_t kind, const struct sim_sock *so,
		uint16_t syscall, uint64_t enter, int64_t ret, const uint8_t *data);
int sim_emit_mark(struct sim *s, struct sim_thread *t, const struct sim_act *a);
int sim_emit_task_new(struct sim *s, struct sim_thread *parent, struct sim_thread *child);
int sim_emit_exit(struct sim *s, struct sim_thread *t);
int sim_emit_conn(struct sim *s, struct sim_thread *t, uint16_t kind, const struct sim_sock *so,
		  uint64_t enter, int listen_fd);
int sim_emit_close(struct sim *s, struct sim_thread *t, uint64_t enter, int fd);
int sim_emit_arrival(struct sim *s, struct sim_thread *t, const struct sim_sock *so,
		     uint64_t data_ns, uint32_t flags);

#endif /* RT_GEN_SIM_H */
