# SPDX-License-Identifier: BSD-2-Clause
# test_gpu_probes compares the probe table with the CUDA toolkit's exports:
# the saved ones (configs/probes/) always, the installed ones when present.
if(TARGET test_gpu_probes)
	set(rt_stub "")
	foreach(d lib64/stubs lib/stubs targets/x86_64-linux/lib/stubs)
		if(NOT rt_stub AND EXISTS ${RT_CUDA_ROOT}/${d}/libcuda.so)
			set(rt_stub ${RT_CUDA_ROOT}/${d}/libcuda.so)
		endif()
	endforeach()
	set(rt_nccl "")
	if(EXISTS ${RT_CUDA_ROOT}/lib64/libnccl.so.2)
		set(rt_nccl ${RT_CUDA_ROOT}/lib64/libnccl.so.2)
	endif()
	target_compile_definitions(test_gpu_probes PRIVATE RT_CUDA_STUB="${rt_stub}"
		RT_NCCL_LIB="${rt_nccl}")
	if(EXISTS ${RT_CUDA_ROOT}/include/cuda.h)
		target_include_directories(test_gpu_probes PRIVATE ${RT_CUDA_ROOT}/include)
		target_compile_definitions(test_gpu_probes PRIVATE RT_HAVE_CUDA_H=1)
	endif()
endif()
