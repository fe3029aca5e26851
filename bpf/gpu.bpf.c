// SPDX-License-Identifier: GPL-2.0
/*
 * Uprobes on libcuda and libnccl: the GPU work a CPU thread submits and the
 * time it blocks waiting for it (docs/gpu.md, docs/events.md "GPU, CPU
 * side").
 *
 * Two programs (an entry and a return one, each in two attachment flavours
 * at the end of this file) serve every probed function. The loader attaches
 * them once per function address with the function's api id (its index in
 * src/probes/gpu_probes.c) as the BPF cookie, and writes in `gpu_specs`
 * where that function keeps its stream, byte count and NCCL arguments. An
 * enqueue (launch, async copy, memset, NCCL call) is one record at entry;
 * a call whose duration matters (sync, blocking copy) is stashed at entry
 * and emitted at return with both times, so only those pay for a uretprobe.
 *
 * A uprobe belongs to the library file: every process that maps it traps,
 * traced or not, and the tgid filter below keeps the untraced ones out.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include <reqtrace/event.h>
#include <reqtrace/gpu_spec.h>
#include <reqtrace/uprobe_args.h>
#include "rt_bpf_shared.h"
#include "rt_common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RT_GPU_API_MAX);
	__type(key, __u32);
	__type(value, struct rt_gpu_spec);
} gpu_specs SEC(".maps");

struct gpu_call {
	__u64 enter_ns;
	__u64 stream;
	__u64 bytes;
	__u32 api;
	__u8 copy_kind;
	__u8 _pad[3];
};

/* Timed calls in progress, by thread. LRU: a thread that dies mid-call does not leak its slot. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RT_GPU_CALLS_MAX);
	__type(key, __u64);
	__type(value, struct gpu_call);
} gpu_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RT_GPU_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} gpu_counters SEC(".maps");

static __always_inline void gpu_count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&gpu_counters, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
}

#include "rt_uprobe_arg.bpf.h"

static __always_inline __u64 user_u64(__u64 base, __u32 off)
{
	__u64 v = 0;

	if (base)
		bpf_probe_read_user(&v, sizeof(v), (void *)(base + off));
	return v;
}

static __always_inline __u32 user_u32(__u64 base, __u32 off)
{
	__u32 v = 0;

	if (base)
		bpf_probe_read_user(&v, sizeof(v), (void *)(base + off));
	return v;
}

/* Direction of a 2D/3D copy from its descriptor's memory types. */
static __always_inline __u8 copy_dir(__u32 src, __u32 dst)
{
	if (!src || !dst || src > RT_CU_MEMORYTYPE_UNIFIED || dst > RT_CU_MEMORYTYPE_UNIFIED ||
	    src == RT_CU_MEMORYTYPE_UNIFIED || dst == RT_CU_MEMORYTYPE_UNIFIED)
		return RT_COPY_UNKNOWN;
	if (src == RT_CU_MEMORYTYPE_HOST)
		return dst == RT_CU_MEMORYTYPE_HOST ? RT_COPY_H2H : RT_COPY_H2D;
	return dst == RT_CU_MEMORYTYPE_HOST ? RT_COPY_D2H : RT_COPY_D2D;
}

static __always_inline __u64 stream_of(struct pt_regs *ctx, const struct rt_gpu_spec *sp)
{
	switch (sp->stream_how) {
	case RT_GPU_STREAM_ARG:
		return arg(ctx, sp->stream_arg);
	case RT_GPU_STREAM_LAUNCH_CONFIG:
		return user_u64(arg(ctx, sp->stream_arg), RT_CU_LAUNCH_CONFIG_STREAM);
	default:
		return 0;
	}
}

static __always_inline __u64 bytes_of(struct pt_regs *ctx, const struct rt_gpu_spec *sp, __u8 *kind)
{
	__u64 elem = sp->elem ? sp->elem : 1, p;

	*kind = sp->copy_kind;
	switch (sp->bytes_how) {
	case RT_GPU_BYTES_ARG:
		return arg(ctx, sp->bytes_arg) * elem;
	case RT_GPU_BYTES_ARG32:
		return (__u32)arg(ctx, sp->bytes_arg) * elem;
	case RT_GPU_BYTES_ARG_X_ARG:
		return arg(ctx, sp->bytes_arg) * arg(ctx, sp->bytes_arg2) * elem;
	case RT_GPU_BYTES_2D:
		p = arg(ctx, sp->bytes_arg);
		if (*kind == RT_COPY_UNKNOWN)
			*kind = copy_dir(user_u32(p, RT_CU_MEMCPY2D_SRC_TYPE),
					 user_u32(p, RT_CU_MEMCPY2D_DST_TYPE));
		return user_u64(p, RT_CU_MEMCPY2D_WIDTH) * user_u64(p, RT_CU_MEMCPY2D_HEIGHT);
	case RT_GPU_BYTES_3D:
		p = arg(ctx, sp->bytes_arg);
		if (*kind == RT_COPY_UNKNOWN)
			*kind = copy_dir(user_u32(p, RT_CU_MEMCPY3D_SRC_TYPE),
					 user_u32(p, RT_CU_MEMCPY3D_DST_TYPE));
		return user_u64(p, RT_CU_MEMCPY3D_WIDTH) * user_u64(p, RT_CU_MEMCPY3D_HEIGHT) *
		       user_u64(p, RT_CU_MEMCPY3D_DEPTH);
	default:
		return 0;
	}
}

static __always_inline int nccl_enter(struct pt_regs *ctx, const struct rt_gpu_spec *sp,
				      __u64 pid_tgid, __u64 ts)
{
	struct rt_ev_nccl *e = RT_RESERVE(struct rt_ev_nccl, RT_EV_NCCL_ENTER);

	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_NCCL_ENTER, sizeof(*e), ts, pid_tgid >> 32, (__u32)pid_tgid);
	e->enter_ns = ts;
	e->op = sp->api_class;
	e->stream = sp->stream_arg ? arg(ctx, sp->stream_arg) : 0;
	e->comm = sp->comm_arg ? arg(ctx, sp->comm_arg) : 0;
	e->count = sp->count_arg ? arg(ctx, sp->count_arg) : 0;
	e->datatype = sp->dtype_arg ? (__u32)arg(ctx, sp->dtype_arg) : 0;
	e->peer = sp->peer_arg ? (__s32)arg(ctx, sp->peer_arg) : -1;
	RT_SUBMIT(e);
	return 0;
}

static __always_inline int on_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 api = (__u32)bpf_get_attach_cookie(ctx);
	const struct rt_gpu_spec *sp;
	struct rt_ev_cuda_api *e;
	struct gpu_call c = {};
	__u64 ts;

	if (!rt_traced(pid_tgid >> 32))
		return 0;
	ts = bpf_ktime_get_ns();
	sp = bpf_map_lookup_elem(&gpu_specs, &api);
	if (!sp || !sp->rec) {
		gpu_count(RT_GPU_CNT_BAD_COOKIE);
		return 0;
	}
	if (sp->rec == RT_GPU_REC_NCCL)
		return nccl_enter(ctx, sp, pid_tgid, ts);
	if (sp->rec == RT_GPU_REC_EXIT) {
		c.enter_ns = ts;
		c.api = api;
		c.stream = stream_of(ctx, sp);
		c.bytes = bytes_of(ctx, sp, &c.copy_kind);
		if (bpf_map_update_elem(&gpu_calls, &pid_tgid, &c, BPF_ANY))
			gpu_count(RT_GPU_CNT_CALLS_FULL);
		return 0;
	}
	e = RT_RESERVE(struct rt_ev_cuda_api, RT_EV_CUDA_API_ENTER);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_CUDA_API_ENTER, sizeof(*e), ts, pid_tgid >> 32, (__u32)pid_tgid);
	e->enter_ns = ts;
	e->api = api;
	e->api_class = sp->api_class;
	e->stream = stream_of(ctx, sp);
	e->bytes = bytes_of(ctx, sp, &e->copy_kind);
	RT_SUBMIT(e);
	return 0;
}

static __always_inline int on_return(struct pt_regs *ctx, long rc)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 api = (__u32)bpf_get_attach_cookie(ctx);
	const struct rt_gpu_spec *sp;
	struct rt_ev_cuda_api *e;
	struct gpu_call *p, c;
	__u64 ts = bpf_ktime_get_ns();

	p = bpf_map_lookup_elem(&gpu_calls, &pid_tgid);
	if (!p)
		return 0; /* untraced process, or the entry was not seen */
	c = *p;
	bpf_map_delete_elem(&gpu_calls, &pid_tgid);
	/* another timed call returned in between and took this one's slot */
	if (c.api != api) {
		gpu_count(RT_GPU_CNT_UNMATCHED_RET);
		return 0;
	}
	sp = bpf_map_lookup_elem(&gpu_specs, &api);
	if (!sp)
		return 0;
	e = RT_RESERVE(struct rt_ev_cuda_api, RT_EV_CUDA_API_EXIT);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_CUDA_API_EXIT, sizeof(*e), ts, pid_tgid >> 32, (__u32)pid_tgid);
	e->enter_ns = c.enter_ns;
	e->stream = c.stream;
	e->bytes = c.bytes;
	e->api = api;
	e->ret = (__s32)rc;
	e->api_class = sp->api_class;
	e->copy_kind = c.copy_kind;
	RT_SUBMIT(e);
	return 0;
}

/*
 * Each program twice: as a uprobe.multi link (kernel 6.6+: one link, and one
 * RCU grace period to detach, for all of a library's functions) and as
 * per-function perf-event uprobes, the fallback. The loader sets the multi
 * ones' expected attach type and drops whichever pair the kernel refuses.
 */
SEC("uprobe")
int BPF_KPROBE(rt_gpu_enter)
{
	return on_enter(ctx);
}

SEC("uretprobe")
int BPF_KRETPROBE(rt_gpu_ret, long rc)
{
	return on_return(ctx, rc);
}

SEC("uprobe")
int BPF_KPROBE(rt_gpu_enter_multi)
{
	return on_enter(ctx);
}

SEC("uretprobe")
int BPF_KRETPROBE(rt_gpu_ret_multi, long rc)
{
	return on_return(ctx, rc);
}
