/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What bpf/gpu.bpf.c, its loader (src/sources/bpf_gpu.c) and the probe
 * table (src/probes/gpu_probes.h) share: the per-function argument spec the
 * loader writes into the `gpu_specs` array, indexed by the probe table's api
 * id, which every uprobe receives as its BPF cookie. Here rather than in
 * bpf/ because the table, which the correlator reads, is described in these
 * terms. No includes: include after <reqtrace/event.h>.
 */
#ifndef RT_GPU_SPEC_H
#define RT_GPU_SPEC_H

#define RT_GPU_API_MAX 256 /* probe table entries (api ids) the BPF side knows */
#define RT_GPU_CALLS_MAX 16384 /* threads inside a timed (entry + return) call at once */

/* What one hit emits */
enum rt_gpu_rec {
	RT_GPU_REC_ENTER = 1, /* CUDA_API_ENTER at entry: an enqueue */
	RT_GPU_REC_EXIT = 2, /* CUDA_API_EXIT at return, enter_ns from the entry */
	RT_GPU_REC_NCCL = 3, /* NCCL_ENTER at entry */
};

/* Where the stream is */
enum rt_gpu_stream_how {
	RT_GPU_STREAM_NONE = 0,
	RT_GPU_STREAM_ARG = 1, /* argument stream_arg */
	RT_GPU_STREAM_LAUNCH_CONFIG = 2, /* argument stream_arg is a CUlaunchConfig * */
};

/* How many bytes a call moves */
enum rt_gpu_bytes_how {
	RT_GPU_BYTES_NONE = 0,
	RT_GPU_BYTES_ARG = 1, /* argument bytes_arg × elem */
	RT_GPU_BYTES_ARG32 = 2, /* the same, a 32-bit argument (legacy _v1 entry points) */
	RT_GPU_BYTES_ARG_X_ARG = 3, /* bytes_arg × bytes_arg2 × elem (2D memsets) */
	RT_GPU_BYTES_2D = 4, /* argument bytes_arg is a CUDA_MEMCPY2D * */
	RT_GPU_BYTES_3D = 5, /* a CUDA_MEMCPY3D * or CUDA_MEMCPY3D_PEER * */
};

/*
 * Offsets in the driver's structures (CUDA 12 and 13 headers). One set for
 * x86-64 and arm64: both are LP64 with natural alignment, and cuda.h's only
 * data-model switch is __LP64__. src/probes/cuda_layout.c asserts them
 * against cuda.h at compile time for the arch being built (the arm64 cross
 * build included), tests/unit/test_gpu_probes.c at run time.
 */
#define RT_CU_LAUNCH_CONFIG_STREAM 32
#define RT_CU_MEMCPY2D_SRC_TYPE 16
#define RT_CU_MEMCPY2D_DST_TYPE 72
#define RT_CU_MEMCPY2D_WIDTH 112
#define RT_CU_MEMCPY2D_HEIGHT 120
#define RT_CU_MEMCPY3D_SRC_TYPE 32
#define RT_CU_MEMCPY3D_DST_TYPE 120
#define RT_CU_MEMCPY3D_WIDTH 176
#define RT_CU_MEMCPY3D_HEIGHT 184
#define RT_CU_MEMCPY3D_DEPTH 192

/* CUmemorytype */
#define RT_CU_MEMORYTYPE_HOST 1
#define RT_CU_MEMORYTYPE_DEVICE 2
#define RT_CU_MEMORYTYPE_ARRAY 3
#define RT_CU_MEMORYTYPE_UNIFIED 4

/* Arguments are numbered from 1; 0 means "none". */
struct rt_gpu_spec {
	__u8 rec; /* enum rt_gpu_rec; 0: slot unused */
	__u8 api_class; /* enum rt_cuda_api_class, or enum rt_nccl_op for NCCL */
	__u8 copy_kind; /* enum rt_copy_kind the function implies */
	__u8 stream_how; /* enum rt_gpu_stream_how */
	__u8 stream_arg;
	__u8 bytes_how; /* enum rt_gpu_bytes_how */
	__u8 bytes_arg;
	__u8 bytes_arg2;
	__u8 elem; /* bytes per element (memsets: 1, 2, 4) */
	__u8 count_arg; /* NCCL: count, datatype, comm, peer or root */
	__u8 dtype_arg;
	__u8 comm_arg;
	__u8 peer_arg;
	__u8 _pad[3];
};

/* Slots of the per-CPU `gpu_counters` array */
enum rt_gpu_counter {
	RT_GPU_CNT_CALLS_FULL = 0, /* a timed call not followed: gpu_calls map full */
	/* a return whose entry slot holds another timed call (nested on the thread) */
	RT_GPU_CNT_UNMATCHED_RET = 1,
	RT_GPU_CNT_BAD_COOKIE = 2, /* a hit whose cookie names no spec */
	RT_GPU_CNT__MAX = 3,
};

#endif /* RT_GPU_SPEC_H */
