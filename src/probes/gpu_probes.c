// SPDX-License-Identifier: BSD-2-Clause
/*
 * The GPU probe table (gpu_probes.h). Argument positions are those of the
 * prototypes in the CUDA 13 cuda.h and NCCL 2.28 nccl.h. The unversioned
 * names of functions that also have a _v2 are the legacy 32-bit ABI
 * (CUdeviceptr_v1, unsigned int sizes): their byte counts are read as 32-bit
 * values, and their 2D/3D descriptors (an older layout) are not read.
 */
#include "probes/gpu_probes.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define CU(n, r, cls, dir, ...)                                                                    \
	{                                                                                          \
		.name = n, .lib = RT_GPU_LIB_CUDA, .rec = RT_GPU_REC_##r,                          \
		.api_class = RT_CUDA_##cls, .copy_kind = RT_COPY_##dir, __VA_ARGS__                \
	}
#define STREAM(a) .stream_how = RT_GPU_STREAM_ARG, .stream_arg = (a)
#define BYTES(a) .bytes_how = RT_GPU_BYTES_ARG, .bytes_arg = (a)
#define BYTES32(a) .bytes_how = RT_GPU_BYTES_ARG32, .bytes_arg = (a)

/* kernel launches: enqueues */
#define LAUNCH(n, s) CU(n, ENTER, LAUNCH, UNKNOWN, STREAM(s))
#define LAUNCH_EX(n)                                                                               \
	CU(n, ENTER, LAUNCH, UNKNOWN, .stream_how = RT_GPU_STREAM_LAUNCH_CONFIG, .stream_arg = 1)
/* copies that return when done: timed */
#define COPY(n, dir, b) CU(n, EXIT, MEMCPY, dir, BYTES(b))
#define COPY32(n, dir, b) CU(n, EXIT, MEMCPY, dir, BYTES32(b))
#define COPY_ASYNC(n, dir, b, s) CU(n, ENTER, MEMCPY_ASYNC, dir, BYTES(b), STREAM(s))
#define COPY32_ASYNC(n, dir, b, s) CU(n, ENTER, MEMCPY_ASYNC, dir, BYTES32(b), STREAM(s))
#define COPY_DESC(n, how, dir)                                                                     \
	CU(n, EXIT, MEMCPY, dir, .bytes_how = how, .bytes_arg = (how) != RT_GPU_BYTES_NONE)
#define COPY_DESC_ASYNC(n, how, dir)                                                               \
	CU(n, ENTER, MEMCPY_ASYNC, dir, .bytes_how = how, .bytes_arg = (how) != RT_GPU_BYTES_NONE, \
	   STREAM(2))
/* memsets: enqueues (asynchronous to the host for device memory) */
#define SET(n, el, cnt, ...) CU(n, ENTER, MEMSET, UNKNOWN, BYTES(cnt), .elem = el, __VA_ARGS__)
#define SET32(n, el, cnt) CU(n, ENTER, MEMSET, UNKNOWN, BYTES32(cnt), .elem = el)
#define SET2D(n, el, ...)                                                                          \
	CU(n, ENTER, MEMSET, UNKNOWN, .bytes_how = RT_GPU_BYTES_ARG_X_ARG, .bytes_arg = 4,         \
	   .bytes_arg2 = 5, .elem = el, __VA_ARGS__)
/* the host waits for the device: timed */
#define SYNC(n, ...) CU(n, EXIT, SYNC, UNKNOWN, __VA_ARGS__)

#define NCCL(n, o, cnt, dt, cm, pr, s)                                                             \
	{                                                                                          \
		.name = n, .lib = RT_GPU_LIB_NCCL, .rec = RT_GPU_REC_NCCL,                         \
		.api_class = RT_NCCL_##o, .count_arg = cnt, .dtype_arg = dt, .comm_arg = cm,       \
		.peer_arg = pr, .stream_how = (s) ? RT_GPU_STREAM_ARG : RT_GPU_STREAM_NONE,        \
		.stream_arg = s                                                                    \
	}

/* Append only: an entry's index is the api id stored in recordings. */
const struct rt_gpu_probe rt_gpu_probes[] = {
	/* kernel launches */
	LAUNCH("cuLaunchKernel", 9),
	LAUNCH("cuLaunchKernel_ptsz", 9),
	LAUNCH_EX("cuLaunchKernelEx"),
	LAUNCH_EX("cuLaunchKernelEx_ptsz"),
	LAUNCH("cuLaunchCooperativeKernel", 9),
	LAUNCH("cuLaunchCooperativeKernel_ptsz", 9),
	CU("cuLaunchCooperativeKernelMultiDevice", ENTER, LAUNCH, UNKNOWN), /* one per device */
	CU("cuLaunch", ENTER, LAUNCH, UNKNOWN),
	CU("cuLaunchGrid", ENTER, LAUNCH, UNKNOWN),
	LAUNCH("cuLaunchGridAsync", 4),
	/* graph launches */
	CU("cuGraphLaunch", ENTER, GRAPH_LAUNCH, UNKNOWN, STREAM(2)),
	CU("cuGraphLaunch_ptsz", ENTER, GRAPH_LAUNCH, UNKNOWN, STREAM(2)),

	/* blocking copies */
	COPY("cuMemcpy", UNKNOWN, 3),
	COPY("cuMemcpy_ptds", UNKNOWN, 3),
	COPY32("cuMemcpyHtoD", H2D, 3),
	COPY("cuMemcpyHtoD_v2", H2D, 3),
	COPY("cuMemcpyHtoD_v2_ptds", H2D, 3),
	COPY32("cuMemcpyDtoH", D2H, 3),
	COPY("cuMemcpyDtoH_v2", D2H, 3),
	COPY("cuMemcpyDtoH_v2_ptds", D2H, 3),
	COPY32("cuMemcpyDtoD", D2D, 3),
	COPY("cuMemcpyDtoD_v2", D2D, 3),
	COPY("cuMemcpyDtoD_v2_ptds", D2D, 3),
	COPY32("cuMemcpyHtoA", H2D, 4),
	COPY("cuMemcpyHtoA_v2", H2D, 4),
	COPY("cuMemcpyHtoA_v2_ptds", H2D, 4),
	COPY32("cuMemcpyAtoH", D2H, 4),
	COPY("cuMemcpyAtoH_v2", D2H, 4),
	COPY("cuMemcpyAtoH_v2_ptds", D2H, 4),
	COPY32("cuMemcpyAtoD", D2D, 4),
	COPY("cuMemcpyAtoD_v2", D2D, 4),
	COPY("cuMemcpyAtoD_v2_ptds", D2D, 4),
	COPY32("cuMemcpyDtoA", D2D, 4),
	COPY("cuMemcpyDtoA_v2", D2D, 4),
	COPY("cuMemcpyDtoA_v2_ptds", D2D, 4),
	COPY32("cuMemcpyAtoA", D2D, 5),
	COPY("cuMemcpyAtoA_v2", D2D, 5),
	COPY("cuMemcpyAtoA_v2_ptds", D2D, 5),
	COPY_DESC("cuMemcpy2D", RT_GPU_BYTES_NONE, UNKNOWN),
	COPY_DESC("cuMemcpy2D_v2", RT_GPU_BYTES_2D, UNKNOWN),
	COPY_DESC("cuMemcpy2D_v2_ptds", RT_GPU_BYTES_2D, UNKNOWN),
	COPY_DESC("cuMemcpy2DUnaligned", RT_GPU_BYTES_NONE, UNKNOWN),
	COPY_DESC("cuMemcpy2DUnaligned_v2", RT_GPU_BYTES_2D, UNKNOWN),
	COPY_DESC("cuMemcpy2DUnaligned_v2_ptds", RT_GPU_BYTES_2D, UNKNOWN),
	COPY_DESC("cuMemcpy3D", RT_GPU_BYTES_NONE, UNKNOWN),
	COPY_DESC("cuMemcpy3D_v2", RT_GPU_BYTES_3D, UNKNOWN),
	COPY_DESC("cuMemcpy3D_v2_ptds", RT_GPU_BYTES_3D, UNKNOWN),
	COPY("cuMemcpyPeer", P2P, 5),
	COPY("cuMemcpyPeer_ptds", P2P, 5),
	COPY_DESC("cuMemcpy3DPeer", RT_GPU_BYTES_3D, P2P),
	COPY_DESC("cuMemcpy3DPeer_ptds", RT_GPU_BYTES_3D, P2P),

	/* asynchronous copies */
	COPY_ASYNC("cuMemcpyAsync", UNKNOWN, 3, 4),
	COPY_ASYNC("cuMemcpyAsync_ptsz", UNKNOWN, 3, 4),
	COPY32_ASYNC("cuMemcpyHtoDAsync", H2D, 3, 4),
	COPY_ASYNC("cuMemcpyHtoDAsync_v2", H2D, 3, 4),
	COPY_ASYNC("cuMemcpyHtoDAsync_v2_ptsz", H2D, 3, 4),
	COPY32_ASYNC("cuMemcpyDtoHAsync", D2H, 3, 4),
	COPY_ASYNC("cuMemcpyDtoHAsync_v2", D2H, 3, 4),
	COPY_ASYNC("cuMemcpyDtoHAsync_v2_ptsz", D2H, 3, 4),
	COPY32_ASYNC("cuMemcpyDtoDAsync", D2D, 3, 4),
	COPY_ASYNC("cuMemcpyDtoDAsync_v2", D2D, 3, 4),
	COPY_ASYNC("cuMemcpyDtoDAsync_v2_ptsz", D2D, 3, 4),
	COPY32_ASYNC("cuMemcpyHtoAAsync", H2D, 4, 5),
	COPY_ASYNC("cuMemcpyHtoAAsync_v2", H2D, 4, 5),
	COPY_ASYNC("cuMemcpyHtoAAsync_v2_ptsz", H2D, 4, 5),
	COPY32_ASYNC("cuMemcpyAtoHAsync", D2H, 4, 5),
	COPY_ASYNC("cuMemcpyAtoHAsync_v2", D2H, 4, 5),
	COPY_ASYNC("cuMemcpyAtoHAsync_v2_ptsz", D2H, 4, 5),
	COPY_DESC_ASYNC("cuMemcpy2DAsync", RT_GPU_BYTES_NONE, UNKNOWN),
	COPY_DESC_ASYNC("cuMemcpy2DAsync_v2", RT_GPU_BYTES_2D, UNKNOWN),
	COPY_DESC_ASYNC("cuMemcpy2DAsync_v2_ptsz", RT_GPU_BYTES_2D, UNKNOWN),
	COPY_DESC_ASYNC("cuMemcpy3DAsync", RT_GPU_BYTES_NONE, UNKNOWN),
	COPY_DESC_ASYNC("cuMemcpy3DAsync_v2", RT_GPU_BYTES_3D, UNKNOWN),
	COPY_DESC_ASYNC("cuMemcpy3DAsync_v2_ptsz", RT_GPU_BYTES_3D, UNKNOWN),
	COPY_ASYNC("cuMemcpyPeerAsync", P2P, 5, 6),
	COPY_ASYNC("cuMemcpyPeerAsync_ptsz", P2P, 5, 6),
	COPY_DESC_ASYNC("cuMemcpy3DPeerAsync", RT_GPU_BYTES_3D, P2P),
	COPY_DESC_ASYNC("cuMemcpy3DPeerAsync_ptsz", RT_GPU_BYTES_3D, P2P),
	/* batches: many copies, each with its own direction: counted, bytes not read */
	CU("cuMemcpyBatchAsync", ENTER, MEMCPY_ASYNC, UNKNOWN, STREAM(9)),
	CU("cuMemcpyBatchAsync_ptsz", ENTER, MEMCPY_ASYNC, UNKNOWN, STREAM(9)),
	CU("cuMemcpyBatchAsync_v2", ENTER, MEMCPY_ASYNC, UNKNOWN, STREAM(8)),
	CU("cuMemcpyBatchAsync_v2_ptsz", ENTER, MEMCPY_ASYNC, UNKNOWN, STREAM(8)),
	CU("cuMemcpy3DBatchAsync", ENTER, MEMCPY_ASYNC, UNKNOWN, STREAM(5)),
	CU("cuMemcpy3DBatchAsync_ptsz", ENTER, MEMCPY_ASYNC, UNKNOWN, STREAM(5)),
	CU("cuMemcpy3DBatchAsync_v2", ENTER, MEMCPY_ASYNC, UNKNOWN, STREAM(4)),
	CU("cuMemcpy3DBatchAsync_v2_ptsz", ENTER, MEMCPY_ASYNC, UNKNOWN, STREAM(4)),

	/* memsets */
	SET32("cuMemsetD8", 1, 3),
	SET("cuMemsetD8_v2", 1, 3),
	SET("cuMemsetD8_v2_ptds", 1, 3),
	SET("cuMemsetD8Async", 1, 3, STREAM(4)),
	SET("cuMemsetD8Async_ptsz", 1, 3, STREAM(4)),
	SET32("cuMemsetD16", 2, 3),
	SET("cuMemsetD16_v2", 2, 3),
	SET("cuMemsetD16_v2_ptds", 2, 3),
	SET("cuMemsetD16Async", 2, 3, STREAM(4)),
	SET("cuMemsetD16Async_ptsz", 2, 3, STREAM(4)),
	SET32("cuMemsetD32", 4, 3),
	SET("cuMemsetD32_v2", 4, 3),
	SET("cuMemsetD32_v2_ptds", 4, 3),
	SET("cuMemsetD32Async", 4, 3, STREAM(4)),
	SET("cuMemsetD32Async_ptsz", 4, 3, STREAM(4)),
	CU("cuMemsetD2D8", ENTER, MEMSET, UNKNOWN),
	SET2D("cuMemsetD2D8_v2", 1),
	SET2D("cuMemsetD2D8_v2_ptds", 1),
	SET2D("cuMemsetD2D8Async", 1, STREAM(6)),
	SET2D("cuMemsetD2D8Async_ptsz", 1, STREAM(6)),
	CU("cuMemsetD2D16", ENTER, MEMSET, UNKNOWN),
	SET2D("cuMemsetD2D16_v2", 2),
	SET2D("cuMemsetD2D16_v2_ptds", 2),
	SET2D("cuMemsetD2D16Async", 2, STREAM(6)),
	SET2D("cuMemsetD2D16Async_ptsz", 2, STREAM(6)),
	CU("cuMemsetD2D32", ENTER, MEMSET, UNKNOWN),
	SET2D("cuMemsetD2D32_v2", 4),
	SET2D("cuMemsetD2D32_v2_ptds", 4),
	SET2D("cuMemsetD2D32Async", 4, STREAM(6)),
	SET2D("cuMemsetD2D32Async_ptsz", 4, STREAM(6)),

	/* the host waits for the device */
	SYNC("cuStreamSynchronize", STREAM(1)),
	SYNC("cuStreamSynchronize_ptsz", STREAM(1)),
	SYNC("cuCtxSynchronize"),
	SYNC("cuCtxSynchronize_v2"),
	SYNC("cuEventSynchronize"),
	/* the host makes a stream wait for an event: timed, it can block when the queue is full */
	CU("cuStreamWaitEvent", EXIT, WAIT_EVENT, UNKNOWN, STREAM(1)),
	CU("cuStreamWaitEvent_ptsz", EXIT, WAIT_EVENT, UNKNOWN, STREAM(1)),

	/* NCCL: every call is an enqueue (grouped ones launch at ncclGroupEnd) */
	NCCL("ncclAllReduce", ALL_REDUCE, 3, 4, 6, 0, 7),
	NCCL("ncclAllGather", ALL_GATHER, 3, 4, 5, 0, 6),
	NCCL("ncclReduceScatter", REDUCE_SCATTER, 3, 4, 6, 0, 7),
	NCCL("ncclBroadcast", BROADCAST, 3, 4, 6, 5, 7),
	NCCL("ncclBcast", BROADCAST, 2, 3, 5, 4, 6),
	NCCL("ncclReduce", REDUCE, 3, 4, 7, 6, 8),
	NCCL("ncclSend", SEND, 2, 3, 5, 4, 6),
	NCCL("ncclRecv", RECV, 2, 3, 5, 4, 6),
	NCCL("ncclGroupStart", GROUP_START, 0, 0, 0, 0, 0),
	NCCL("ncclGroupEnd", GROUP_END, 0, 0, 0, 0, 0),
	NCCL("ncclAlltoAll", OTHER, 3, 4, 5, 0, 6),
	NCCL("ncclGather", OTHER, 3, 4, 6, 5, 7),
	NCCL("ncclScatter", OTHER, 3, 4, 6, 5, 7),
};

const uint32_t rt_gpu_n_probes = sizeof(rt_gpu_probes) / sizeof(rt_gpu_probes[0]);

_Static_assert(sizeof(rt_gpu_probes) / sizeof(rt_gpu_probes[0]) <= RT_GPU_API_MAX,
	       "more probes than the BPF side has specs for");

const struct rt_gpu_probe *rt_gpu_probe_get(uint32_t api)
{
	return api < rt_gpu_n_probes ? &rt_gpu_probes[api] : NULL;
}

int rt_gpu_probe_find(const char *name)
{
	uint32_t i;

	if (!name)
		return -ENOENT;
	/* the profiling alias: pncclX is ncclX */
	if (!strncmp(name, "pnccl", 5))
		name++;
	for (i = 0; i < rt_gpu_n_probes; i++)
		if (!strcmp(rt_gpu_probes[i].name, name))
			return (int)i;
	return -ENOENT;
}

char *rt_gpu_probe_family(const char *name, char *out, size_t len)
{
	static const char *const suffixes[] = { "_v2_ptsz", "_v2_ptds", "_ptsz",
						"_ptds",    "_v2",	"_v3" };
	size_t n, i, k;

	if (!len)
		return out;
	if (!strncmp(name, "pnccl", 5))
		name++;
	n = strlen(name);
	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		k = strlen(suffixes[i]);
		if (n > k && !strcmp(name + n - k, suffixes[i])) {
			n -= k;
			break;
		}
	}
	if (n >= len)
		n = len - 1;
	memcpy(out, name, n);
	out[n] = '\0';
	return out;
}

const char *rt_gpu_class_name(uint32_t api_class)
{
	static const char *const names[] = {
		[RT_CUDA_OTHER] = "other",
		[RT_CUDA_LAUNCH] = "launch",
		[RT_CUDA_GRAPH_LAUNCH] = "graph_launch",
		[RT_CUDA_MEMCPY] = "memcpy",
		[RT_CUDA_MEMCPY_ASYNC] = "memcpy_async",
		[RT_CUDA_MEMSET] = "memset",
		[RT_CUDA_SYNC] = "sync",
		[RT_CUDA_WAIT_EVENT] = "wait_event",
	};

	return api_class < sizeof(names) / sizeof(names[0]) ? names[api_class] : "?";
}

const char *rt_gpu_copy_kind_name(uint32_t copy_kind)
{
	static const char *const names[] = {
		[RT_COPY_UNKNOWN] = "unknown", [RT_COPY_H2D] = "h2d", [RT_COPY_D2H] = "d2h",
		[RT_COPY_D2D] = "d2d",	       [RT_COPY_P2P] = "p2p", [RT_COPY_H2H] = "h2h",
	};

	return copy_kind < sizeof(names) / sizeof(names[0]) ? names[copy_kind] : "?";
}

const char *rt_gpu_nccl_op_name(uint32_t op)
{
	static const char *const names[] = {
		[RT_NCCL_OTHER] = "other",
		[RT_NCCL_ALL_REDUCE] = "all_reduce",
		[RT_NCCL_ALL_GATHER] = "all_gather",
		[RT_NCCL_REDUCE_SCATTER] = "reduce_scatter",
		[RT_NCCL_BROADCAST] = "broadcast",
		[RT_NCCL_REDUCE] = "reduce",
		[RT_NCCL_SEND] = "send",
		[RT_NCCL_RECV] = "recv",
		[RT_NCCL_GROUP_START] = "group_start",
		[RT_NCCL_GROUP_END] = "group_end",
	};

	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

static const char *rec_name(uint32_t rec)
{
	switch (rec) {
	case RT_GPU_REC_ENTER:
		return "enter";
	case RT_GPU_REC_EXIT:
		return "exit";
	case RT_GPU_REC_NCCL:
		return "nccl";
	default:
		return "?";
	}
}

int rt_gpu_probes_write_tsv(FILE *f)
{
	uint32_t i;

	fprintf(f, "# SPDX-License-Identifier: BSD-2-Clause\n"
		   "# generated from src/probes/gpu_probes.c by tests/unit/test_gpu_probes.c "
		   "(RT_REGEN=1); do not edit\n");
	fprintf(f, "api\tname\tlib\trecord\tclass\tcopy\tstream_arg\tbytes_how\tbytes_arg\n");
	for (i = 0; i < rt_gpu_n_probes; i++) {
		const struct rt_gpu_probe *p = &rt_gpu_probes[i];
		bool nccl = p->lib == RT_GPU_LIB_NCCL;

		fprintf(f, "%u\t%s\t%s\t%s\t%s\t%s\t%u\t%u\t%u\n", i, p->name,
			nccl ? "nccl" : "cuda", rec_name(p->rec),
			nccl ? rt_gpu_nccl_op_name(p->api_class) : rt_gpu_class_name(p->api_class),
			nccl ? "-" : rt_gpu_copy_kind_name(p->copy_kind), p->stream_arg,
			p->bytes_how, p->bytes_arg);
	}
	return ferror(f) ? -EIO : 0;
}
