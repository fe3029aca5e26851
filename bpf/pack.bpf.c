// SPDX-License-Identifier: GPL-2.0
/*
 * Engine-pack uprobes (docs/packs.md, docs/events.md "Engine packs"): one
 * entry and one return program serve every function of every pack. The
 * loader (src/sources/bpf_pack.c) attaches them per function with a slot of
 * `pack_specs` as the BPF cookie; the slot says the pack, the role, which
 * arguments to record and whether to read llama_decode's batch.
 *
 * The batch summary (include/reqtrace/pack_batch.h, shared with the unit
 * tests) runs in per-CPU scratch under bpf_loop: a prompt chunk has
 * thousands of tokens, too many for unrolled code or the BPF stack. Its
 * record goes into the ring before the call's entry record, from the same
 * program, so the two are adjacent in time and order on that thread.
 *
 * A uprobe belongs to the file: every process mapping it traps, and the
 * tgid filter keeps the untraced ones out.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include <reqtrace/event.h>
#include <reqtrace/uprobe_args.h>
#include "rt_bpf_shared.h"
#include "rt_common.bpf.h"

#define RT_PACK_READ(dst, size, addr) bpf_probe_read_user((dst), (size), (const void *)(addr))
#include <reqtrace/pack_batch.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RT_BPF_PACK_SLOTS);
	__type(key, __u32);
	__type(value, struct rt_bpf_pack_spec);
} pack_specs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rt_pack_batch_scan);
} pack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RT_PACK_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} pack_counters SEC(".maps");

static __always_inline void pack_count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&pack_counters, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* the uprobe argument ABI of the target arch, as gpu.bpf.c reads it */
#include "rt_uprobe_arg.bpf.h"

/*
 * Where llama_decode's batch (argument 2, 56 bytes by value) is: on the
 * stack above the return address (x86-64), or at the address x1 holds
 * (arm64). rt_abi_big_arg_loc() in uprobe_args.h says the same for the tests.
 */
static __always_inline __u64 batch_addr(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_x86)
	return REG(ctx, SP) + RT_X86_64_STACK_SKIP;
#else
	return REG(ctx, ARG2);
#endif
}

static long batch_token(__u64 i, void *data)
{
	__u32 zero = 0, n = *(__u32 *)data;
	struct rt_pack_batch_scan *sc = bpf_map_lookup_elem(&pack_scratch, &zero);

	if (!sc)
		return 1;
	return rt_pack_batch_token(sc, (__u32)i, n);
}

static __always_inline void read_batch(struct pt_regs *ctx, __u32 pack, __u64 pid_tgid, __u64 ts)
{
	__u32 zero = 0, n;
	struct rt_pack_batch_scan *sc = bpf_map_lookup_elem(&pack_scratch, &zero);
	int rc;

	if (!sc)
		return;
	rc = rt_pack_batch_begin(sc, batch_addr(ctx));
	if (rc < 0) {
		pack_count(RT_PACK_CNT_BATCH_UNREADABLE);
		return;
	}
	n = (__u32)rc;
	if (n)
		bpf_loop(n, batch_token, &n, 0);
	rt_pack_batch_end(sc);
	rt_hdr(&sc->rec.hdr, RT_EV_PACK_BATCH, sizeof(sc->rec), ts, pid_tgid >> 32,
	       (__u32)pid_tgid);
	sc->rec.pack = pack;
	if (bpf_ringbuf_output(&rt_ring, &sc->rec, sizeof(sc->rec),
			       rt_wake_flags(sizeof(sc->rec), false)))
		rt_lost(RT_EV_PACK_BATCH);
}

/* Only an argument's or return value's own bits are defined in its register. */
static __always_inline __s64 narrow(__u64 v, __u8 type)
{
	switch (type) {
	case 1: /* RT_PACK_I64 */
		return (__s64)v;
	case 2: /* RT_PACK_BOOL */
		return (__u8)v != 0;
	case 3: /* RT_PACK_VOID */
		return 0;
	default: /* RT_PACK_I32 */
		return (__s32)v;
	}
}

static __always_inline int on_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 slot = (__u32)bpf_get_attach_cookie(ctx);
	const struct rt_bpf_pack_spec *sp;
	struct rt_ev_pack_call *e;
	__u64 ts;
	__u32 k;

	if (!rt_traced(pid_tgid >> 32))
		return 0;
	ts = bpf_ktime_get_ns();
	sp = bpf_map_lookup_elem(&pack_specs, &slot);
	if (!sp || !sp->role) {
		pack_count(RT_PACK_CNT_BAD_COOKIE);
		return 0;
	}
	if (sp->reader == 1 /* RT_PACK_READER_LLAMA_BATCH */)
		read_batch(ctx, sp->pack, pid_tgid, ts);
	e = RT_RESERVE(struct rt_ev_pack_call, RT_EV_PACK_CALL);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_PACK_CALL, sizeof(*e), ts, pid_tgid >> 32, (__u32)pid_tgid);
	e->pack = sp->pack;
	e->role = sp->role;
	e->ret = 0;
	for (k = 0; k < 4; k++)
		if (k < sp->n_args)
			e->args[k] = narrow(arg(ctx, sp->args[k]), sp->arg_type[k]);
	RT_SUBMIT(e);
	return 0;
}

static __always_inline int on_return(struct pt_regs *ctx, long rc)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 slot = (__u32)bpf_get_attach_cookie(ctx);
	const struct rt_bpf_pack_spec *sp;
	struct rt_ev_pack_call *e;
	__u64 ts;

	if (!rt_traced(pid_tgid >> 32))
		return 0;
	ts = bpf_ktime_get_ns();
	sp = bpf_map_lookup_elem(&pack_specs, &slot);
	if (!sp || !sp->role) {
		pack_count(RT_PACK_CNT_BAD_COOKIE);
		return 0;
	}
	e = RT_RESERVE(struct rt_ev_pack_call, RT_EV_PACK_CALL);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_PACK_CALL, sizeof(*e), ts, pid_tgid >> 32, (__u32)pid_tgid);
	e->pack = sp->pack;
	e->role = sp->role;
	e->ret = 1;
	e->retval = narrow((__u64)rc, sp->ret_type);
	RT_SUBMIT(e);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rt_pack_enter)
{
	return on_enter(ctx);
}

SEC("uretprobe")
int BPF_KRETPROBE(rt_pack_ret, long rc)
{
	return on_return(ctx, rc);
}
