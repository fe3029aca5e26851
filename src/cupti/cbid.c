// SPDX-License-Identifier: BSD-2-Clause
/*
 * Which CUDA driver calls the library records (as DRIVER activity records
 * and, for the blocking ones, with callbacks), and what each one does for
 * the correlator (enum rt_cuda_api_class) and which way it copies (enum
 * rt_copy_kind). Every per-thread-stream (_ptsz/_ptds) and versioned (_v2)
 * variant in cupti_driver_cbid.h is listed: cudart picks them through
 * cuGetProcAddress. The table is documented in docs/protocol-inject.md.
 */
#include "cbid.h"

#include <cupti_driver_cbid.h>

/* class + 1 in the low nibble (0: not recorded), copy kind in the high one */
#define D(name, cls, dir)                                                                          \
	[CUPTI_DRIVER_TRACE_CBID_##name] = (RT_CUDA_##cls + 1) | (RT_COPY_##dir << 4)

static const __u8 table[CUPTI_DRIVER_TRACE_CBID_SIZE] = {
	/* kernel launches */
	D(cuLaunch, LAUNCH, UNKNOWN),
	D(cuLaunchGrid, LAUNCH, UNKNOWN),
	D(cuLaunchGridAsync, LAUNCH, UNKNOWN),
	D(cuLaunchKernel, LAUNCH, UNKNOWN),
	D(cuLaunchKernel_ptsz, LAUNCH, UNKNOWN),
	D(cuLaunchCooperativeKernel, LAUNCH, UNKNOWN),
	D(cuLaunchCooperativeKernel_ptsz, LAUNCH, UNKNOWN),
	D(cuLaunchCooperativeKernelMultiDevice, LAUNCH, UNKNOWN),
	D(cuLaunchKernelEx, LAUNCH, UNKNOWN),
	D(cuLaunchKernelEx_ptsz, LAUNCH, UNKNOWN),
	/* graph launches (their kernels carry the launch's correlation id) */
	D(cuGraphLaunch, GRAPH_LAUNCH, UNKNOWN),
	D(cuGraphLaunch_ptsz, GRAPH_LAUNCH, UNKNOWN),
	/* host waits for the device */
	D(cuCtxSynchronize, SYNC, UNKNOWN),
	D(cuEventSynchronize, SYNC, UNKNOWN),
	D(cuStreamSynchronize, SYNC, UNKNOWN),
	D(cuStreamSynchronize_ptsz, SYNC, UNKNOWN),
	D(cuCtxSynchronize_v2, SYNC, UNKNOWN),
	/* device-side waits enqueued by the host */
	D(cuStreamWaitEvent, WAIT_EVENT, UNKNOWN),
	D(cuStreamWaitEvent_ptsz, WAIT_EVENT, UNKNOWN),
	/* copies that return when done (unified cuMemcpy*: direction unknown) */
	D(cuMemcpyHtoD, MEMCPY, H2D),
	D(cuMemcpyDtoH, MEMCPY, D2H),
	D(cuMemcpyDtoD, MEMCPY, D2D),
	D(cuMemcpyDtoA, MEMCPY, D2D),
	D(cuMemcpyAtoD, MEMCPY, D2D),
	D(cuMemcpyHtoA, MEMCPY, H2D),
	D(cuMemcpyAtoH, MEMCPY, D2H),
	D(cuMemcpyAtoA, MEMCPY, D2D),
	D(cuMemcpy2D, MEMCPY, UNKNOWN),
	D(cuMemcpy2DUnaligned, MEMCPY, UNKNOWN),
	D(cuMemcpy3D, MEMCPY, UNKNOWN),
	D(cuMemcpy_v2, MEMCPY, UNKNOWN),
	D(cuMemcpyHtoD_v2, MEMCPY, H2D),
	D(cuMemcpyDtoH_v2, MEMCPY, D2H),
	D(cuMemcpyDtoD_v2, MEMCPY, D2D),
	D(cuMemcpyAtoH_v2, MEMCPY, D2H),
	D(cuMemcpyAtoD_v2, MEMCPY, D2D),
	D(cuMemcpyDtoA_v2, MEMCPY, D2D),
	D(cuMemcpyAtoA_v2, MEMCPY, D2D),
	D(cuMemcpy2D_v2, MEMCPY, UNKNOWN),
	D(cuMemcpy2DUnaligned_v2, MEMCPY, UNKNOWN),
	D(cuMemcpy3D_v2, MEMCPY, UNKNOWN),
	D(cuMemcpyHtoA_v2, MEMCPY, H2D),
	D(cuMemcpy, MEMCPY, UNKNOWN),
	D(cuMemcpyPeer, MEMCPY, P2P),
	D(cuMemcpy3DPeer, MEMCPY, P2P),
	D(cuMemcpyHtoD_v2_ptds, MEMCPY, H2D),
	D(cuMemcpyDtoH_v2_ptds, MEMCPY, D2H),
	D(cuMemcpyDtoD_v2_ptds, MEMCPY, D2D),
	D(cuMemcpyDtoA_v2_ptds, MEMCPY, D2D),
	D(cuMemcpyAtoD_v2_ptds, MEMCPY, D2D),
	D(cuMemcpyHtoA_v2_ptds, MEMCPY, H2D),
	D(cuMemcpyAtoH_v2_ptds, MEMCPY, D2H),
	D(cuMemcpyAtoA_v2_ptds, MEMCPY, D2D),
	D(cuMemcpy2D_v2_ptds, MEMCPY, UNKNOWN),
	D(cuMemcpy2DUnaligned_v2_ptds, MEMCPY, UNKNOWN),
	D(cuMemcpy3D_v2_ptds, MEMCPY, UNKNOWN),
	D(cuMemcpy_ptds, MEMCPY, UNKNOWN),
	D(cuMemcpyPeer_ptds, MEMCPY, P2P),
	D(cuMemcpy3DPeer_ptds, MEMCPY, P2P),
	/* copies that only enqueue */
	D(cuMemcpyHtoDAsync, MEMCPY_ASYNC, H2D),
	D(cuMemcpyDtoHAsync, MEMCPY_ASYNC, D2H),
	D(cuMemcpyDtoDAsync, MEMCPY_ASYNC, D2D),
	D(cuMemcpyHtoAAsync, MEMCPY_ASYNC, H2D),
	D(cuMemcpyAtoHAsync, MEMCPY_ASYNC, D2H),
	D(cuMemcpy2DAsync, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpy3DAsync, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpyHtoDAsync_v2, MEMCPY_ASYNC, H2D),
	D(cuMemcpyDtoHAsync_v2, MEMCPY_ASYNC, D2H),
	D(cuMemcpyDtoDAsync_v2, MEMCPY_ASYNC, D2D),
	D(cuMemcpyAtoHAsync_v2, MEMCPY_ASYNC, D2H),
	D(cuMemcpy2DAsync_v2, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpy3DAsync_v2, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpyHtoAAsync_v2, MEMCPY_ASYNC, H2D),
	D(cuMemcpyAsync, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpyPeerAsync, MEMCPY_ASYNC, P2P),
	D(cuMemcpy3DPeerAsync, MEMCPY_ASYNC, P2P),
	D(cuMemcpyAsync_ptsz, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpyHtoAAsync_v2_ptsz, MEMCPY_ASYNC, H2D),
	D(cuMemcpyAtoHAsync_v2_ptsz, MEMCPY_ASYNC, D2H),
	D(cuMemcpyHtoDAsync_v2_ptsz, MEMCPY_ASYNC, H2D),
	D(cuMemcpyDtoHAsync_v2_ptsz, MEMCPY_ASYNC, D2H),
	D(cuMemcpyDtoDAsync_v2_ptsz, MEMCPY_ASYNC, D2D),
	D(cuMemcpy2DAsync_v2_ptsz, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpy3DAsync_v2_ptsz, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpyPeerAsync_ptsz, MEMCPY_ASYNC, P2P),
	D(cuMemcpy3DPeerAsync_ptsz, MEMCPY_ASYNC, P2P),
	D(cuMemcpyBatchAsync, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpyBatchAsync_ptsz, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpy3DBatchAsync, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpy3DBatchAsync_ptsz, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpyBatchAsync_v2, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpyBatchAsync_v2_ptsz, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpy3DBatchAsync_v2, MEMCPY_ASYNC, UNKNOWN),
	D(cuMemcpy3DBatchAsync_v2_ptsz, MEMCPY_ASYNC, UNKNOWN),
	/* memsets */
	D(cuMemsetD8, MEMSET, UNKNOWN),
	D(cuMemsetD16, MEMSET, UNKNOWN),
	D(cuMemsetD32, MEMSET, UNKNOWN),
	D(cuMemsetD2D8, MEMSET, UNKNOWN),
	D(cuMemsetD2D16, MEMSET, UNKNOWN),
	D(cuMemsetD2D32, MEMSET, UNKNOWN),
	D(cuMemsetD8Async, MEMSET, UNKNOWN),
	D(cuMemsetD16Async, MEMSET, UNKNOWN),
	D(cuMemsetD32Async, MEMSET, UNKNOWN),
	D(cuMemsetD2D8Async, MEMSET, UNKNOWN),
	D(cuMemsetD2D16Async, MEMSET, UNKNOWN),
	D(cuMemsetD2D32Async, MEMSET, UNKNOWN),
	D(cuMemsetD8_v2, MEMSET, UNKNOWN),
	D(cuMemsetD16_v2, MEMSET, UNKNOWN),
	D(cuMemsetD32_v2, MEMSET, UNKNOWN),
	D(cuMemsetD2D8_v2, MEMSET, UNKNOWN),
	D(cuMemsetD2D16_v2, MEMSET, UNKNOWN),
	D(cuMemsetD2D32_v2, MEMSET, UNKNOWN),
	D(cuMemsetD8_v2_ptds, MEMSET, UNKNOWN),
	D(cuMemsetD16_v2_ptds, MEMSET, UNKNOWN),
	D(cuMemsetD32_v2_ptds, MEMSET, UNKNOWN),
	D(cuMemsetD2D8_v2_ptds, MEMSET, UNKNOWN),
	D(cuMemsetD2D16_v2_ptds, MEMSET, UNKNOWN),
	D(cuMemsetD2D32_v2_ptds, MEMSET, UNKNOWN),
	D(cuMemsetD8Async_ptsz, MEMSET, UNKNOWN),
	D(cuMemsetD16Async_ptsz, MEMSET, UNKNOWN),
	D(cuMemsetD32Async_ptsz, MEMSET, UNKNOWN),
	D(cuMemsetD2D8Async_ptsz, MEMSET, UNKNOWN),
	D(cuMemsetD2D16Async_ptsz, MEMSET, UNKNOWN),
	D(cuMemsetD2D32Async_ptsz, MEMSET, UNKNOWN),
};

int rt_cupti_cbid_info(__u32 cbid, __u8 *api_class, __u8 *copy_kind)
{
	__u8 v;

	if (cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE || !(v = table[cbid]))
		return 0;
	*api_class = (v & 0xf) - 1;
	*copy_kind = v >> 4;
	return 1;
}

__u32 rt_cupti_cbid_limit(void)
{
	return CUPTI_DRIVER_TRACE_CBID_SIZE;
}

int rt_cupti_cbid_blocking(__u32 cbid)
{
	__u8 cls, dir;

	if (!rt_cupti_cbid_info(cbid, &cls, &dir))
		return 0;
	return cls == RT_CUDA_SYNC || cls == RT_CUDA_MEMCPY;
}

int rt_cupti_cbid_callback(__u32 cbid)
{
	__u8 cls, dir;

	if (!rt_cupti_cbid_info(cbid, &cls, &dir))
		return 0;
	return cls == RT_CUDA_SYNC || cls == RT_CUDA_MEMCPY || cls == RT_CUDA_WAIT_EVENT;
}
