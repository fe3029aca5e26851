// SPDX-License-Identifier: BSD-2-Clause
#include "sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GROW(arr, n, cap)                                                                          \
	({                                                                                         \
		int __e = 0;                                                                       \
		if ((n) == (cap)) {                                                                \
			size_t __c = (cap) ? (cap)*2 : 64;                                         \
			void *__p = realloc((arr), __c * sizeof(*(arr)));                          \
			if (__p) {                                                                 \
				(arr) = __p;                                                       \
				(cap) = __c;                                                       \
			} else {                                                                   \
				__e = -ENOMEM;                                                     \
			}                                                                          \
		}                                                                                  \
		__e;                                                                               \
	})

static void fail(struct sim *s, int err)
{
	if (!s->err)
		s->err = err;
}

uint64_t sim_rand(struct sim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t sim_range(struct sim *s, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + sim_rand(s) % (hi - lo + 1);
}

int sim_init(struct sim *s, uint64_t start, uint64_t seed, uint32_t pid)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->now = start;
	s->rng = seed ^ 0x5deece66dULL;
	s->pid = pid;
	s->listen_fd = -1;
	s->src_waking = SIM_SRC_BPF;
	s->src_mark = SIM_SRC_BPF;
	for (i = 0; i < SIM_NCPU; i++) {
		s->cpus[i].cur = -1;
		s->cpus[i].reserved = -1;
	}
	return 0;
}

void sim_fini(struct sim *s)
{
	int i;

	for (i = 0; i < s->n_threads; i++) {
		free(s->threads[i]->segs);
		free(s->threads[i]->bursts);
		free(s->threads[i]);
	}
	for (i = 0; i < SIM_MAX_SOCKS; i++) {
		free(s->socks[i].rx);
		free(s->socks[i].seg_off);
		free(s->socks[i].seg_ts);
	}
	free(s->heap);
	free(s->tx);
	free(s->recs);
	free(s->recs_bytes);
	free(s->wakes);
	free(s->ios);
	free(s->marks);
	memset(s, 0, sizeof(*s));
}

/* ---- timers: a binary heap ordered by (at, seq) ---------------------------------------------- */

static bool timer_before(const struct sim_timer *a, const struct sim_timer *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

int sim_timer(struct sim *s, uint64_t at, sim_timer_fn fn, uint64_t a, uint64_t b)
{
	struct sim_timer t = { .at = at, .seq = s->timer_seq++, .fn = fn, .a = a, .b = b };
	size_t i;
	int err;

	if (at < s->now)
		at = t.at = s->now;
	err = GROW(s->heap, s->heap_n, s->heap_cap);
	if (err) {
		fail(s, err);
		return err;
	}
	i = s->heap_n++;
	while (i > 0 && timer_before(&t, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = t;
	return 0;
}

static struct sim_timer timer_pop(struct sim *s)
{
	struct sim_timer top = s->heap[0], last = s->heap[--s->heap_n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < s->heap_n) {
		if (c + 1 < s->heap_n && timer_before(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!timer_before(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->heap_n)
		s->heap[i] = last;
	return top;
}

/* ---- per-thread truth logs ------------------------------------------------------------------- */

static bool burst_open(const struct sim_thread *t)
{
	return t->n_bursts && t->bursts[t->n_bursts - 1].end == UINT64_MAX;
}

static void seg_switch(struct sim *s, struct sim_thread *t, enum sim_seg_type type)
{
	struct sim_seg *g;

	if (t->seg_type != SIM_SEG_UNSEEN && s->now > t->seg_t0) {
		if (GROW(t->segs, t->n_segs, t->cap_segs)) {
			fail(s, -ENOMEM);
			return;
		}
		g = &t->segs[t->n_segs++];
		g->t0 = t->seg_t0;
		g->t1 = s->now;
		g->type = t->seg_type;
		g->burst = t->seg_type == SIM_SEG_SLEEP ? UINT32_MAX : (uint32_t)(t->n_bursts - 1);
	}
	t->seg_type = type;
	t->seg_t0 = s->now;
}

static void new_burst(struct sim *s, struct sim_thread *t, int waker)
{
	if (GROW(t->bursts, t->n_bursts, t->cap_bursts)) {
		fail(s, -ENOMEM);
		return;
	}
	t->bursts[t->n_bursts++] =
		(struct sim_burst){ .start = s->now, .end = UINT64_MAX, .waker = waker };
}

void sim_finish(struct sim *s)
{
	int i;

	for (i = 0; i < s->n_threads; i++)
		seg_switch(s, s->threads[i], s->threads[i]->seg_type);
}

int sim_log_io(struct sim *s, int thread, int req)
{
	if (GROW(s->ios, s->n_ios, s->cap_ios)) {
		fail(s, -ENOMEM);
		return -ENOMEM;
	}
	s->ios[s->n_ios++] = (struct sim_io_log){ .ts = s->now, .thread = thread, .req = req };
	return 0;
}

/* ---- threads and CPUs ------------------------------------------------------------------------ */

int sim_thread_add(struct sim *s, uint32_t pid, uint32_t tid, const char *comm, bool traced,
		   void (*behave)(struct sim *, struct sim_thread *), void *role)
{
	struct sim_thread *t;

	if (s->n_threads == SIM_MAX_THREADS)
		return -ENOSPC;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->idx = s->n_threads;
	t->pid = pid;
	t->tid = tid;
	strncpy(t->comm, comm, RT_COMM_LEN - 1);
	t->traced = traced;
	t->state = SIM_SLEEP;
	t->behave = behave;
	t->role = role;
	t->seg_type = SIM_SEG_UNSEEN;
	t->seg_t0 = s->now;
	t->wait_fd = -1;
	s->threads[s->n_threads++] = t;
	return t->idx;
}

static void burn_timer(struct sim *s, uint64_t idx, uint64_t gen);
static void tick_timer(struct sim *s, uint64_t c, uint64_t gen);

/* CPU c switches from prev (-1: idle) to next (-1: idle). */
static void cpu_switch(struct sim *s, int c, int prev, uint32_t prev_state, int next)
{
	struct sim_cpu *cpu = &s->cpus[c];
	struct sim_thread *t;

	sim_emit_switch(s, c, prev, prev_state, next);
	cpu->cur = next;
	cpu->gen++;
	if (next < 0)
		return;
	t = s->threads[next];
	t->state = SIM_RUNNING;
	t->cpu = c;
	if (!burst_open(t))
		new_burst(s, t, -2);
	seg_switch(s, t, SIM_SEG_ONCPU);
	/* resume: finish the interrupted burn, or continue with the next action */
	t->burn_start = s->now;
	t->burning = true;
	sim_timer(s, s->now + t->burn_left, burn_timer, t->idx, t->gen);
	sim_timer(s, s->now + SIM_TICK_NS, tick_timer, c, cpu->gen);
}

static int runq_pop(struct sim *s)
{
	int idx;

	if (!s->runq_n)
		return -1;
	idx = s->runq[0];
	memmove(s->runq, s->runq + 1, --s->runq_n * sizeof(s->runq[0]));
	return idx;
}

static void dispatch_timer(struct sim *s, uint64_t c, uint64_t unused)
{
	int idx = s->cpus[c].reserved;

	(void)unused;
	s->cpus[c].reserved = -1;
	if (idx >= 0)
		cpu_switch(s, (int)c, -1, RT_TASK_RUNNING, idx);
}

static int idle_cpu(struct sim *s, const struct sim_thread *t)
{
	int c;

	if (s->cpus[t->cpu].cur < 0 && s->cpus[t->cpu].reserved < 0)
		return t->cpu;
	for (c = 0; c < SIM_NCPU; c++)
		if (s->cpus[c].cur < 0 && s->cpus[c].reserved < 0)
			return c;
	return -1;
}

/* A runnable thread goes to an idle CPU (after a wakeup latency) or waits in the runqueue. */
static void place(struct sim *s, struct sim_thread *t, int c)
{
	if (c >= 0) {
		s->cpus[c].reserved = t->idx;
		t->cpu = c;
		sim_timer(s, s->now + sim_range(s, 2000, 8000), dispatch_timer, c, 0);
	} else {
		s->runq[s->runq_n++] = t->idx;
	}
}

void sim_thread_start(struct sim *s, int idx)
{
	struct sim_thread *t = s->threads[idx];

	t->state = SIM_RUNNABLE;
	place(s, t, idle_cpu(s, t));
}

void sim_thread_running(struct sim *s, int idx)
{
	s->threads[idx]->state = SIM_RUNNABLE;
	cpu_switch(s, 0, -1, RT_TASK_RUNNING, idx);
}

bool sim_wake(struct sim *s, int waker, int target, uint32_t reason)
{
	struct sim_thread *t = s->threads[target];
	int c;

	if (t->state != SIM_SLEEP || !(t->wait_mask & reason))
		return false;
	t->wait_mask = 0;
	c = idle_cpu(s, t);
	sim_emit_waking(s, waker, target, c >= 0 ? c : t->cpu);
	if (!GROW(s->wakes, s->n_wakes, s->cap_wakes))
		s->wakes[s->n_wakes++] =
			(struct sim_wake_log){ .ts = s->now, .waker = waker, .target = target };
	else
		fail(s, -ENOMEM);
	new_burst(s, t, waker);
	seg_switch(s, t, SIM_SEG_RUNQ);
	t->state = SIM_RUNNABLE;
	place(s, t, c);
	return true;
}

static void block(struct sim *s, struct sim_thread *t, uint32_t mask)
{
	t->wait_mask = mask;
	t->state = SIM_SLEEP;
	t->burning = false;
	t->burn_left = 0;
	t->gen++;
	t->bursts[t->n_bursts - 1].end = s->now;
	seg_switch(s, t, SIM_SEG_SLEEP);
	cpu_switch(s, t->cpu, t->idx, RT_TASK_BLOCKED, runq_pop(s));
}

static void tick_timer(struct sim *s, uint64_t c, uint64_t gen)
{
	struct sim_cpu *cpu = &s->cpus[c];
	struct sim_thread *t;

	if (cpu->gen != gen || cpu->cur < 0)
		return;
	if (!s->runq_n) {
		sim_timer(s, s->now + SIM_TICK_NS, tick_timer, c, gen);
		return;
	}
	t = s->threads[cpu->cur];
	if (t->burning) {
		t->burn_left -= s->now - t->burn_start;
		t->burning = false;
	}
	t->gen++;
	t->state = SIM_RUNNABLE;
	seg_switch(s, t, SIM_SEG_RUNQ);
	s->runq[s->runq_n++] = t->idx;
	cpu_switch(s, (int)c, t->idx, RT_TASK_RUNNING, runq_pop(s));
}

void sim_burn(struct sim *s, struct sim_thread *t, uint64_t ns)
{
	t->burn_left = ns;
	t->burn_start = s->now;
	t->burning = true;
	sim_timer(s, s->now + ns, burn_timer, t->idx, t->gen);
}

struct sim_act *sim_push(struct sim *s, struct sim_thread *t, enum sim_act_kind kind)
{
	struct sim_act *a;

	if (t->aq_n == SIM_AQ_LEN) {
		fail(s, -ENOSPC);
		/* keep callers simple: a slot that is never run */
		a = &s->scratch;
	} else {
		a = &t->aq[(t->aq_head + t->aq_n++) % SIM_AQ_LEN];
	}
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->req = -1;
	a->fd = -1;
	a->target = -1;
	return a;
}

/* ---- sockets --------------------------------------------------------------------------------- */

int sim_sock_add(struct sim *s, int fd, const struct rt_sock_addr *local,
		 const struct rt_sock_addr *peer)
{
	int i;

	for (i = 0; i < SIM_MAX_SOCKS; i++) {
		if (!s->socks[i].used) {
			s->socks[i].used = true;
			s->socks[i].fd = fd;
			s->socks[i].local = *local;
			s->socks[i].peer = *peer;
			return 0;
		}
	}
	return -ENOSPC;
}

struct sim_sock *sim_sock_get(struct sim *s, int fd)
{
	int i;

	for (i = 0; i < SIM_MAX_SOCKS; i++)
		if (s->socks[i].used && s->socks[i].fd == fd)
			return &s->socks[i];
	return NULL;
}

static void wake_readers(struct sim *s, int fd)
{
	int i;

	for (i = 0; i < s->n_threads; i++)
		if (s->threads[i]->wait_fd == fd)
			sim_wake(s, -1, i, SIM_W_SOCK);
}

int sim_sock_arrive(struct sim *s, int fd, const void *data, size_t len)
{
	struct sim_sock *so = sim_sock_get(s, fd);
	size_t cap;
	void *p;

	if (!so)
		return -ENOENT;
	if (so->rx_len + len > so->rx_cap) {
		cap = so->rx_cap ? so->rx_cap : 1024;
		while (cap < so->rx_len + len)
			cap *= 2;
		p = realloc(so->rx, cap);
		if (!p) {
			fail(s, -ENOMEM);
			return -ENOMEM;
		}
		so->rx = p;
		so->rx_cap = cap;
	}
	if (so->watched && len) {
		if (so->n_segs == so->cap_segs) {
			cap = so->cap_segs ? so->cap_segs * 2 : 16;
			p = realloc(so->seg_off, cap * sizeof(*so->seg_off));
			if (p)
				so->seg_off = p;
			p = p ? realloc(so->seg_ts, cap * sizeof(*so->seg_ts)) : NULL;
			if (!p) {
				fail(s, -ENOMEM);
				return -ENOMEM;
			}
			so->seg_ts = p;
			so->cap_segs = cap;
		}
		so->seg_off[so->n_segs] = so->rx_len;
		so->seg_ts[so->n_segs++] = s->now;
	}
	memcpy(so->rx + so->rx_len, data, len);
	so->rx_len += len;
	wake_readers(s, fd);
	return 0;
}

/*
 * What the kernel's receive path can say about a read of rx from `from`:
 * when the segment holding its first byte arrived; after a read that left
 * bytes behind only the newest segment's arrival, an upper bound.
 */
static void arrival_of(const struct sim_sock *so, size_t from, uint64_t *data_ns, uint32_t *flags)
{
	size_t i;

	*data_ns = 0;
	*flags = 0;
	if (!so->n_segs)
		return;
	if (so->left_unread) {
		*data_ns = so->seg_ts[so->n_segs - 1];
		*flags = RT_ARR_LEFT_UNREAD;
		return;
	}
	for (i = so->n_segs; i-- > 0;)
		if (so->seg_off[i] <= from) {
			*data_ns = so->seg_ts[i];
			return;
		}
}

void sim_sock_peer_close(struct sim *s, int fd, bool broken)
{
	struct sim_sock *so = sim_sock_get(s, fd);

	if (!so)
		return;
	so->eof = true;
	so->broken = broken;
	wake_readers(s, fd);
}

void sim_listen_arrive(struct sim *s, int fd)
{
	struct sim_sock *so = sim_sock_get(s, fd);
	int i;

	if (!so)
		return;
	so->pending_accept = true;
	so->accept_seq = ++s->accept_seq;
	so->established_ns = s->now;
	for (i = 0; i < s->n_threads; i++)
		sim_wake(s, -1, i, SIM_W_ACCEPT);
}

static struct sim_sock *accept_pending(struct sim *s)
{
	struct sim_sock *best = NULL;
	int i;

	for (i = 0; i < SIM_MAX_SOCKS; i++) {
		struct sim_sock *so = &s->socks[i];

		if (so->used && so->pending_accept && (!best || so->accept_seq < best->accept_seq))
			best = so;
	}
	return best;
}

int sim_tx_append(struct sim *s, const void *data, size_t len, uint64_t *off)
{
	size_t cap;
	void *p;

	if (s->tx_len + len > s->tx_cap) {
		cap = s->tx_cap ? s->tx_cap : 4096;
		while (cap < s->tx_len + len)
			cap *= 2;
		p = realloc(s->tx, cap);
		if (!p) {
			fail(s, -ENOMEM);
			return -ENOMEM;
		}
		s->tx = p;
		s->tx_cap = cap;
	}
	memcpy(s->tx + s->tx_len, data, len);
	*off = s->tx_len;
	s->tx_len += len;
	return 0;
}

/* ---- the action interpreter ------------------------------------------------------------------ */

static void wake_timer(struct sim *s, uint64_t idx, uint64_t reason)
{
	sim_wake(s, -1, (int)idx, (uint32_t)reason);
}

/* Runs one step of a; returns true when a is complete. */
static bool step(struct sim *s, struct sim_thread *t, struct sim_act *a)
{
	struct sim_sock *so;
	size_t avail;

	switch (a->kind) {
	case SIM_ACT_BURN:
	case SIM_ACT_CALL:
		if (a->stage++ || !a->ns)
			return true;
		sim_burn(s, t, a->ns);
		return false;
	case SIM_ACT_MARK:
		/* the call into the no-op function, the uprobe, the return */
		switch (a->stage++) {
		case 0:
			sim_burn(s, t, SIM_MARK_COST_NS / 2);
			return false;
		case 1:
			sim_emit_mark(s, t, a);
			sim_burn(s, t, SIM_MARK_COST_NS);
			return false;
		default:
			return true;
		}
	case SIM_ACT_EXIT:
		switch (a->stage++) {
		case 0:
			/* pthread_exit() and do_exit() up to the exit tracepoint */
			sim_burn(s, t, sim_range(s, 5000, 10000));
			return false;
		case 1:
			/* gone: no segment while dead; a TASK_NEW may start it again */
			t->wait_mask = 0;
			t->state = SIM_SLEEP;
			t->burning = false;
			t->burn_left = 0;
			t->gen++;
			t->bursts[t->n_bursts - 1].end = s->now;
			seg_switch(s, t, SIM_SEG_UNSEEN);
			sim_emit_exit(s, t);
			cpu_switch(s, t->cpu, t->idx, RT_TASK_DEAD, runq_pop(s));
			return false;
		default:
			return true;
		}
	case SIM_ACT_TASK_NEW:
		if (a->stage++)
			return true;
		sim_emit_task_new(s, t, s->threads[a->target]);
		sim_thread_start(s, a->target);
		sim_burn(s, t, sim_range(s, 20000, 40000));
		return false;
	case SIM_ACT_SEND:
		so = sim_sock_get(s, a->fd);
		if (!so) {
			fail(s, -EBADF);
			return true;
		}
		if (a->stage++ == 0) {
			a->enter_ns = s->now;
			sim_burn(s, t, sim_range(s, 3000, 6000) + a->data_len);
			return false;
		}
		a->ret = so->broken ? -EPIPE : (int64_t)a->data_len;
		sim_emit_io(s, t, RT_EV_SOCK_SEND, so, a->syscall, a->enter_ns, a->ret,
			    s->tx + a->data_off);
		return true;
	case SIM_ACT_RECV:
		so = sim_sock_get(s, a->fd);
		if (!so) {
			fail(s, -EBADF);
			return true;
		}
		switch (a->stage) {
		case 0:
			a->enter_ns = s->now;
			a->stage = 1;
			sim_burn(s, t, sim_range(s, 800, 1500));
			return false;
		case 1:
			if (so->rx_len == so->rx_pos && !so->eof) {
				t->wait_fd = a->fd;
				block(s, t, SIM_W_SOCK);
				return false;
			}
			t->wait_fd = -1;
			a->stage = 2;
			sim_burn(s, t, sim_range(s, 1000, 3000) + (so->rx_len - so->rx_pos) / 4);
			return false;
		default:
			avail = so->rx_len - so->rx_pos;
			a->ret = avail < a->data_len ? avail : a->data_len;
			a->data_off = so->rx_pos;
			if (so->watched && a->ret > 0) {
				/* written just before the read's own record, same instant */
				arrival_of(so, so->rx_pos, &a->arr_ns, &a->arr_flags);
				sim_emit_arrival(s, t, so, a->arr_ns, a->arr_flags);
			}
			so->rx_pos += a->ret;
			if (so->watched && a->ret > 0)
				so->left_unread = so->rx_pos < so->rx_len;
			sim_emit_io(s, t, RT_EV_SOCK_RECV, so, a->syscall, a->enter_ns, a->ret,
				    so->rx + a->data_off);
			return true;
		}
	case SIM_ACT_WAKE:
		/* futex_wake(): the waking happens inside the syscall */
		switch (a->stage++) {
		case 0:
			sim_burn(s, t, sim_range(s, 500, 1000));
			return false;
		case 1:
			sim_wake(s, t->idx, a->target, a->reason);
			sim_burn(s, t, sim_range(s, 500, 1000));
			return false;
		default:
			return true;
		}
	case SIM_ACT_WAIT:
		if (a->cond(s, t)) {
			t->wait_fd = -1;
			return true;
		}
		if (!a->stage++) {
			/* into futex_wait()/epoll_wait() before the thread sleeps */
			sim_burn(s, t, sim_range(s, 800, 1500));
			return false;
		}
		/* a->fd: also woken by data or EOF on that socket (SIM_W_SOCK) */
		t->wait_fd = a->fd;
		block(s, t, a->reason);
		return false;
	case SIM_ACT_SLEEP:
		switch (a->stage++) {
		case 0:
			sim_burn(s, t, sim_range(s, 800, 1500));
			return false;
		case 1:
			sim_timer(s, s->now + a->ns, wake_timer, t->idx, SIM_W_TIMER);
			block(s, t, SIM_W_TIMER);
			return false;
		default:
			return true;
		}
	case SIM_ACT_ACCEPT:
		switch (a->stage) {
		case 0:
			a->enter_ns = s->now;
			a->stage = 1;
			sim_burn(s, t, sim_range(s, 800, 1500));
			return false;
		case 1:
			so = accept_pending(s);
			if (!so) {
				block(s, t, SIM_W_ACCEPT);
				return false;
			}
			a->stage = 2;
			sim_burn(s, t, sim_range(s, 3000, 6000));
			return false;
		default:
			so = accept_pending(s);
			so->pending_accept = false;
			a->fd = so->fd;
			sim_emit_conn(s, t, RT_EV_SOCK_ACCEPT, so, a->enter_ns, s->listen_fd);
			return true;
		}
	case SIM_ACT_CONNECT:
		so = sim_sock_get(s, a->fd);
		if (!so) {
			fail(s, -EBADF);
			return true;
		}
		if (a->stage++ == 0) {
			a->enter_ns = s->now;
			sim_burn(s, t, sim_range(s, 20000, 40000));
			return false;
		}
		sim_emit_conn(s, t, RT_EV_SOCK_CONNECT, so, a->enter_ns, -1);
		return true;
	case SIM_ACT_CLOSE:
		if (a->stage++ == 0) {
			a->enter_ns = s->now;
			sim_burn(s, t, sim_range(s, 2000, 4000));
			return false;
		}
		so = sim_sock_get(s, a->fd);
		if (so)
			so->closed = true;
		sim_emit_close(s, t, a->enter_ns, a->fd);
		return true;
	}
	fail(s, -EINVAL);
	return true;
}

static void exec(struct sim *s, struct sim_thread *t)
{
	struct sim_act done;

	while (t->state == SIM_RUNNING && !t->burning && !s->err) {
		if (!t->aq_n) {
			t->behave(s, t);
			if (!t->aq_n) {
				fail(s, -EDEADLK);
				return;
			}
		}
		if (!step(s, t, &t->aq[t->aq_head]))
			continue;
		/* the callback may queue more: copy the action out of the ring first */
		done = t->aq[t->aq_head];
		t->aq_head = (t->aq_head + 1) % SIM_AQ_LEN;
		t->aq_n--;
		if (done.done)
			done.done(s, t, &done);
	}
}

static void burn_timer(struct sim *s, uint64_t idx, uint64_t gen)
{
	struct sim_thread *t = s->threads[idx];

	if (t->gen != gen || t->state != SIM_RUNNING || !t->burning)
		return;
	t->burning = false;
	t->burn_left = 0;
	exec(s, t);
}

int sim_run(struct sim *s, uint64_t until)
{
	struct sim_timer tm;

	while (s->heap_n && !s->err && !s->stopped) {
		if (s->heap[0].at > until)
			break;
		tm = timer_pop(s);
		s->now = tm.at;
		tm.fn(s, tm.a, tm.b);
	}
	return s->err;
}
