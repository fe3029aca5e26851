// SPDX-License-Identifier: GPL-2.0
/*
 * Scheduler and task lifetime of traced processes (docs/events.md,
 * "Scheduler"). The switch and waking programs are tp_btf (BTF-typed raw
 * tracepoints, Linux 5.5+; they need no trampoline, unlike fentry): their
 * task_struct pointers are typed, so the tgid of the next or woken task is
 * a plain load and filtering happens here, not in the daemon.
 * task_newtask and sched_process_exit keep traced_tgids current.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include <reqtrace/event.h>
#include "rt_bpf_shared.h"
#include "rt_common.bpf.h"

#define RT_CLONE_THREAD 0x00010000
#define RT_TASK_DEAD_STATE 0x80 /* TASK_DEAD in task->__state */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* task->state became task->__state in 5.14 (commit 2f064a59a11f) */
struct task_struct___o {
	volatile long state;
} __attribute__((preserve_access_index));

struct task_struct___x {
	unsigned int __state;
} __attribute__((preserve_access_index));

/* task_cpu(): thread_info.cpu since 5.16 (commit bcf9033e5449), task->cpu before */
struct task_struct___cpu {
	unsigned int cpu;
} __attribute__((preserve_access_index));

/* sched_process_exit gained group_dead in 6.16; older kernels use the template */
struct trace_event_raw_sched_process_exit___x {
	bool group_dead;
} __attribute__((preserve_access_index));

/* t is a BTF pointer (tp_btf): plain loads; the branch not taken is relocated away. */
static __always_inline __u64 task_state(struct task_struct *t)
{
	struct task_struct___x *tx = (void *)t;

	if (bpf_core_field_exists(tx->__state))
		return tx->__state;
	return ((struct task_struct___o *)t)->state;
}

static __always_inline __u32 task_cpu(struct task_struct *t)
{
	if (bpf_core_field_exists(t->thread_info.cpu))
		return t->thread_info.cpu;
	return ((struct task_struct___cpu *)t)->cpu;
}

static __always_inline void rt_irq_depth_clear(void);

/*
 * tp_btf, not raw_tp: the task pointers are typed, so each field is a plain
 * load the verifier guards instead of a bpf_probe_read_kernel() call. This
 * program runs at every context switch of every process (the two tgids are
 * the filter), so that is most of an untraced neighbour's cost.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(rt_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_pid = prev->tgid;
	__u32 next_pid = next->tgid;
	struct rt_ev_sched_switch *e;
	__u64 ts, state;

	rt_irq_depth_clear();
	if (!rt_traced(prev_pid) && !rt_traced(next_pid))
		return 0;
	ts = bpf_ktime_get_ns();
	e = RT_RESERVE(struct rt_ev_sched_switch, RT_EV_SCHED_SWITCH);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_SCHED_SWITCH, sizeof(*e), ts, prev_pid, prev->pid);
	e->prev_pid = prev_pid;
	e->prev_tid = e->hdr.tid;
	e->next_pid = next_pid;
	e->next_tid = next->pid;
	/*
	 * A preempted task may already have set a sleeping state it had not
	 * acted on yet: it is still runnable (the kernel's own sched_switch
	 * output reports "R+" for it).
	 */
	state = task_state(prev);
	if (preempt || state == 0)
		e->prev_state = RT_TASK_RUNNING;
	else if (state & RT_TASK_DEAD_STATE)
		e->prev_state = RT_TASK_DEAD;
	else
		e->prev_state = RT_TASK_BLOCKED;
	e->cpu = bpf_get_smp_processor_id();
	__builtin_memcpy(e->prev_comm, prev->comm, sizeof(e->prev_comm));
	__builtin_memcpy(e->next_comm, next->comm, sizeof(e->next_comm));
	/* prev's was brought up to date by the switch (update_curr) */
	e->prev_runtime_ns = prev->se.sum_exec_runtime;
	e->next_runtime_ns = next->se.sum_exec_runtime;
	RT_SUBMIT(e);
	return 0;
}

/* Runs in the waker's context: hdr.pid/tid is whoever is current. */
/*
 * In an interrupt (a timer expiring, a NIC's softirq on the IRQ stack)
 * "current" is whatever task happened to run, not the waker: we report
 * waker 0 then, or the correlator would read a timer or GPU-completion
 * wakeup as a hand-off from the interrupted thread (seen: a tokenizer
 * "waking" the engine's clock_nanosleep in the middle of a CPU burn).
 * How to tell is per arch (RT_BPF_ARCH).
 */
#if defined(__TARGET_ARCH_arm64)
/*
 * arm64 keeps the preempt count in thread_info, which is the first member
 * of task_struct (THREAD_INFO_IN_TASK, always on arm64 since 4.10), so it
 * is a CO-RE read of the current task: no ksym, no stack test. That is
 * also the kernel's own in_nmi() || in_hardirq() || in_serving_softirq().
 * Not SOFTIRQ_MASK: a task that only disabled bottom halves (spin_lock_bh,
 * say, a socket send) is a real waker. The x86 stack test below would not
 * do here: arm64 has per-CPU IRQ stacks too, but ran softirqs on the task's
 * stack until 6.0 ("arm64: run softirqs on the per-CPU IRQ stack", Qi
 * Zheng, 2022), and 5.15 kernels are still common on arm64 GPU nodes. The
 * answer matches x86's but in ksoftirqd (x86: the thread, here: 0),
 * which is never a traced waker anyway.
 */
#define RT_SOFTIRQ_OFFSET 0x00000100
#define RT_HARDIRQ_MASK 0x000f0000
#define RT_NMI_MASK 0x00f00000 /* older kernels have one NMI bit, 0x00100000: covered */

static __always_inline bool rt_in_interrupt(void)
{
	struct task_struct *cur = (void *)bpf_get_current_task();
	__u64 count = 0;

	/* an int before 4.20 (commit 396244692232): read the size the kernel has */
	bpf_core_read(&count, bpf_core_field_size(cur->thread_info.preempt_count),
		      &cur->thread_info.preempt_count);
	return count & (RT_NMI_MASK | RT_HARDIRQ_MASK | RT_SOFTIRQ_OFFSET);
}

static __always_inline void rt_irq_depth_clear(void)
{
}
#else
/*
 * The per-CPU preempt count would say so, but this kernel's kallsyms has
 * no data symbols, so the __preempt_count ksym does not resolve. Instead:
 * x86-64 runs hard interrupts (and the softirqs they end with) on per-CPU
 * IRQ stacks, so we are in one when our own stack frame lies outside the
 * current task's kernel stack. A stack address becomes a number through a
 * map value (privileged programs may do that).
 */
#define RT_TASK_STACK_MAX 32768 /* THREAD_SIZE is 16 KiB, 32 KiB with KASAN */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rt_sp_scratch SEC(".maps");

/*
 * The stack test misses one case: since 5.8 an interrupt that arrives while
 * the CPU runs user code is handled on the interrupted task's own stack
 * (the entry code switches only when it came from the kernel), so a timer
 * that fires during a thread's user-mode burn wakes its sleeper "from"
 * that thread (seen: a runtime thread's 20 ms timer wakeups named the
 * testbed's threads and the load generator as wakers, and rule 3 then gave
 * its bursts to their requests). The tracepoints around every handler that
 * wakes tasks keep a per-CPU depth; either test says "interrupt".
 */
struct rt_irq_state {
	__u32 depth; /* handlers entered and not yet left on this CPU */
	__u32 pad;
	__u64 since_ns; /* when the outermost one was entered */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rt_irq_state);
} rt_irq_depth SEC(".maps");

/*
 * No handler runs this long (softirqs yield after 2 ms): a depth older than
 * this lost an exit (the entry program attached before the exit program, or
 * an exit the kernel skipped) and is dropped rather than kept forever; a
 * task switch on the CPU clears it sooner (rt_irq_depth_clear).
 */
#define RT_IRQ_STALE_NS 20000000ull

static __always_inline void rt_irq_depth_add(int d)
{
	__u32 key = 0;
	struct rt_irq_state *st = bpf_map_lookup_elem(&rt_irq_depth, &key);
	__u64 now;

	if (!st)
		return;
	now = bpf_ktime_get_ns();
	if (st->depth && now - st->since_ns > RT_IRQ_STALE_NS)
		st->depth = 0;
	if (d > 0) {
		if (!st->depth)
			st->since_ns = now;
		st->depth += 1;
	} else if (st->depth) {
		/* an exit whose entry came before we attached leaves it at 0 */
		st->depth -= 1;
	}
}

/*
 * No task switch happens inside an interrupt handler, a softirq or a timer
 * callback: at every switch this CPU's depth is 0. Set so, it heals a
 * depth left counting an entry whose exit we missed (seen: the probes are
 * attached one by one, an entry's before its exit's; an interrupt that
 * entered between the two left its CPU's depth at 1 for good, and every
 * wakeup on that CPU, a handler's futex wake of the tokenizer included,
 * was an interrupt's for the rest of the run: rule 3 lost).
 */
static __always_inline void rt_irq_depth_clear(void)
{
	__u32 key = 0;
	struct rt_irq_state *st = bpf_map_lookup_elem(&rt_irq_depth, &key);

	if (st && st->depth)
		st->depth = 0;
}

#define RT_IRQ_PAIR(tp)                                                                            \
	SEC("raw_tp/" #tp "_entry")                                                                \
	int rt_##tp##_entry(void *ctx)                                                             \
	{                                                                                          \
		rt_irq_depth_add(1);                                                               \
		return 0;                                                                          \
	}                                                                                          \
	SEC("raw_tp/" #tp "_exit")                                                                 \
	int rt_##tp##_exit(void *ctx)                                                              \
	{                                                                                          \
		rt_irq_depth_add(-1);                                                              \
		return 0;                                                                          \
	}

/* device interrupts, softirqs (net rx, timers, tasklets), hrtimer and timer-wheel
 * callbacks (nanosleep, futex and epoll timeouts, schedule_timeout), the APIC
 * timer and irq_work */
RT_IRQ_PAIR(irq_handler)
RT_IRQ_PAIR(softirq)
RT_IRQ_PAIR(hrtimer_expire)
RT_IRQ_PAIR(timer_expire)
RT_IRQ_PAIR(local_timer)
RT_IRQ_PAIR(irq_work)

static __always_inline bool rt_in_interrupt(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 key = 0;
	__u64 *slot = bpf_map_lookup_elem(&rt_sp_scratch, &key);
	struct rt_irq_state *st = bpf_map_lookup_elem(&rt_irq_depth, &key);
	__u64 sp, base;

	if (st && st->depth && bpf_ktime_get_ns() - st->since_ns <= RT_IRQ_STALE_NS)
		return true;
	if (!slot)
		return false;
	*(void **)slot = &key;
	sp = *(volatile __u64 *)slot;
	base = (__u64)cur->stack;
	return sp - base >= RT_TASK_STACK_MAX;
}
#endif

SEC("tp_btf/sched_waking")
int BPF_PROG(rt_sched_waking, struct task_struct *p)
{
	__u32 target_pid = p->tgid;
	struct rt_ev_sched_waking *e;
	__u64 id, ts;

	if (!rt_traced(target_pid))
		return 0;
	ts = bpf_ktime_get_ns();
	e = RT_RESERVE(struct rt_ev_sched_waking, RT_EV_SCHED_WAKING);
	if (!e)
		return 0;
	id = rt_in_interrupt() ? 0 : bpf_get_current_pid_tgid();
	rt_hdr(&e->hdr, RT_EV_SCHED_WAKING, sizeof(*e), ts, id >> 32, (__u32)id);
	e->target_pid = target_pid;
	e->target_tid = p->pid;
	e->target_cpu = task_cpu(p);
	RT_SUBMIT(e);
	return 0;
}

/*
 * Runs in the parent before the child can run, so a new process is in
 * traced_tgids before its first switch-in. ctx->pid is the child's tid; its
 * tgid is the parent's for a thread and its own tid for a process.
 */
SEC("tp/task/task_newtask")
int rt_task_newtask(struct trace_event_raw_task_newtask *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 *group = bpf_map_lookup_elem(&traced_tgids, &tgid);
	struct rt_ev_task_new *e;
	__u64 flags, ts;
	__u32 child_tid, child_pid, g;

	if (!tgid || !group)
		return 0;
	ts = bpf_ktime_get_ns();
	g = *group;
	flags = ctx->clone_flags;
	child_tid = ctx->pid;
	child_pid = (flags & RT_CLONE_THREAD) ? tgid : child_tid;
	if (child_pid != tgid && bpf_map_update_elem(&traced_tgids, &child_pid, &g, BPF_ANY))
		rt_count(RT_CNT_TARGETS_FULL);

	e = RT_RESERVE(struct rt_ev_task_new, RT_EV_TASK_NEW);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_TASK_NEW, sizeof(*e), ts, tgid, (__u32)id);
	e->child_pid = child_pid;
	e->child_tid = child_tid;
	e->clone_flags = flags;
	bpf_probe_read_kernel(&e->comm, sizeof(e->comm), ctx->comm);
	RT_SUBMIT(e);
	return 0;
}

/* After exec the caller is the group leader: its tid is the tgid. */
SEC("tp/sched/sched_process_exec")
int rt_proc_exec(struct trace_event_raw_sched_process_exec *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct rt_ev_proc_exec *e;
	__u64 ts;

	if (!rt_traced(id >> 32))
		return 0;
	ts = bpf_ktime_get_ns();
	e = RT_RESERVE(struct rt_ev_proc_exec, RT_EV_PROC_EXEC);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_PROC_EXEC, sizeof(*e), ts, id >> 32, (__u32)id);
	e->old_tid = ctx->old_pid;
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	RT_SUBMIT(e);
	return 0;
}

/*
 * group_dead: the tracepoint field where it exists (6.16+). Before that,
 * signal->live has already been decremented by every exiting thread at this
 * point (do_exit: atomic_dec_and_test(&signal->live) precedes the
 * tracepoint), so live == 0 means the group is dead; two threads exiting at
 * the same instant may then both report it, which is harmless for the
 * correlator (the process is gone either way).
 */
SEC("tp/sched/sched_process_exit")
int rt_proc_exit(void *ctx)
{
	struct trace_event_raw_sched_process_exit___x *tp = ctx;
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct rt_ev_proc_exit *e;
	__u32 group_dead;
	__u64 ts;

	if (!rt_traced(tgid))
		return 0;
	ts = bpf_ktime_get_ns();
	if (bpf_core_field_exists(tp->group_dead))
		group_dead = tp->group_dead;
	else
		group_dead = BPF_CORE_READ(task, signal, live.counter) == 0;
	if (group_dead)
		bpf_map_delete_elem(&traced_tgids, &tgid);

	e = RT_RESERVE(struct rt_ev_proc_exit, RT_EV_PROC_EXIT);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_PROC_EXIT, sizeof(*e), ts, tgid, (__u32)id);
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->group_dead = group_dead;
	bpf_get_current_comm(&e->comm, sizeof(e->comm));
	RT_SUBMIT(e);
	return 0;
}
