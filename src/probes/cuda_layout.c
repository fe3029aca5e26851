// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CUDA structure offsets bpf/gpu.bpf.c reads (RT_CU_* in
 * <reqtrace/gpu_spec.h>) against cuda.h, at compile time, for the arch
 * being built: one set of offsets serves x86-64 and arm64 because both are
 * LP64 with natural alignment (cuda.h's only data-model switch is
 * __LP64__, for CUdeviceptr), and the arm64 cross build compiling this file
 * is what shows it. Built only where the toolkit's cuda.h is found; nothing
 * links it. tests/unit/test_gpu_probes.c checks the same at run time.
 */
#include <stddef.h>
#include <linux/types.h>

#include <cuda.h>

#include <reqtrace/event.h>
#include <reqtrace/gpu_spec.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "cuda_layout.c: RT_CU_* offsets are checked for x86-64 and arm64 only"
#endif

_Static_assert(sizeof(void *) == 8 && sizeof(long) == 8, "LP64");
_Static_assert(offsetof(CUlaunchConfig, hStream) == RT_CU_LAUNCH_CONFIG_STREAM, "CUlaunchConfig");
_Static_assert(offsetof(CUDA_MEMCPY2D, srcMemoryType) == RT_CU_MEMCPY2D_SRC_TYPE, "2D src");
_Static_assert(offsetof(CUDA_MEMCPY2D, dstMemoryType) == RT_CU_MEMCPY2D_DST_TYPE, "2D dst");
_Static_assert(offsetof(CUDA_MEMCPY2D, WidthInBytes) == RT_CU_MEMCPY2D_WIDTH, "2D width");
_Static_assert(offsetof(CUDA_MEMCPY2D, Height) == RT_CU_MEMCPY2D_HEIGHT, "2D height");
_Static_assert(offsetof(CUDA_MEMCPY3D, srcMemoryType) == RT_CU_MEMCPY3D_SRC_TYPE, "3D src");
_Static_assert(offsetof(CUDA_MEMCPY3D, dstMemoryType) == RT_CU_MEMCPY3D_DST_TYPE, "3D dst");
_Static_assert(offsetof(CUDA_MEMCPY3D, WidthInBytes) == RT_CU_MEMCPY3D_WIDTH, "3D width");
_Static_assert(offsetof(CUDA_MEMCPY3D, Height) == RT_CU_MEMCPY3D_HEIGHT, "3D height");
_Static_assert(offsetof(CUDA_MEMCPY3D, Depth) == RT_CU_MEMCPY3D_DEPTH, "3D depth");
/* the peer variant shares the fields the BPF side reads */
_Static_assert(offsetof(CUDA_MEMCPY3D_PEER, srcMemoryType) == RT_CU_MEMCPY3D_SRC_TYPE, "3DP src");
_Static_assert(offsetof(CUDA_MEMCPY3D_PEER, dstMemoryType) == RT_CU_MEMCPY3D_DST_TYPE, "3DP dst");
_Static_assert(offsetof(CUDA_MEMCPY3D_PEER, WidthInBytes) == RT_CU_MEMCPY3D_WIDTH, "3DP width");
_Static_assert(offsetof(CUDA_MEMCPY3D_PEER, Height) == RT_CU_MEMCPY3D_HEIGHT, "3DP height");
_Static_assert(offsetof(CUDA_MEMCPY3D_PEER, Depth) == RT_CU_MEMCPY3D_DEPTH, "3DP depth");
_Static_assert(CU_MEMORYTYPE_HOST == RT_CU_MEMORYTYPE_HOST, "CUmemorytype");
_Static_assert(CU_MEMORYTYPE_DEVICE == RT_CU_MEMORYTYPE_DEVICE, "CUmemorytype");
_Static_assert(CU_MEMORYTYPE_ARRAY == RT_CU_MEMORYTYPE_ARRAY, "CUmemorytype");
_Static_assert(CU_MEMORYTYPE_UNIFIED == RT_CU_MEMORYTYPE_UNIFIED, "CUmemorytype");
