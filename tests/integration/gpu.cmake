# SPDX-License-Identifier: BSD-2-Clause
# GPU work seen from the CPU (docs/gpu.md), tested without a GPU:
#
#   rt_fake_cuda, rt_fake_nccl  a fake libcuda.so.1 and libnccl.so.2
#                     (tests/fixtures/fake_cuda) in <build>/tests/fake_cuda,
#                     exporting what the toolkit's libraries export
#   gpu_fake_exports  (unit) the fakes' exports and aliases equal the real ones
#   gpu_fake_test     (unit) the fakes' asynchrony and durations
#   gpu_uprobes       (root) the GPU uprobes on the fakes: one per address,
#                     every record with its stream, bytes, direction, times
#   gpu_live_markers, gpu_live_zero, gpu_live_load
#                     (root) the testbed's cuda backend on the fakes under
#                     reqtraced and load, against the fakes' configured work
#   (tests/gpu/run.sh, registered by cupti.cmake, has a section for this on a real GPU)
#
# The fakes need cuda.h; without the toolkit's libraries their exports come
# from the saved `nm -D` output in configs/probes/.
set(rt_fake_src ${CMAKE_SOURCE_DIR}/tests/fixtures/fake_cuda)
set(rt_fake_out ${CMAKE_BINARY_DIR}/tests/fake_cuda)
find_program(RT_NM nm)
find_program(RT_PYTHON3 python3)

set(rt_cuda_exports ${CMAKE_SOURCE_DIR}/configs/probes/libcuda.so.exports)
foreach(d lib64/stubs lib/stubs targets/x86_64-linux/lib/stubs)
	if(EXISTS ${RT_CUDA_ROOT}/${d}/libcuda.so)
		set(rt_cuda_exports ${RT_CUDA_ROOT}/${d}/libcuda.so)
		break()
	endif()
endforeach()
set(rt_nccl_exports ${CMAKE_SOURCE_DIR}/configs/probes/libnccl.so.2.exports)
if(EXISTS ${RT_CUDA_ROOT}/lib64/libnccl.so.2)
	set(rt_nccl_exports ${RT_CUDA_ROOT}/lib64/libnccl.so.2)
endif()

if(EXISTS ${RT_CUDA_ROOT}/include/cuda.h AND RT_NM AND RT_PYTHON3)
	file(MAKE_DIRECTORY ${rt_fake_out})
	add_custom_command(OUTPUT ${rt_fake_out}/fake_cuda_gen.c
		COMMAND ${RT_PYTHON3} ${rt_fake_src}/gen_stubs.py --lib cuda --nm ${RT_NM}
			--exports ${rt_cuda_exports}
			--impl ${rt_fake_src}/fake_cuda.c ${rt_fake_src}/fake_cuda_work.c
			--out ${rt_fake_out}/fake_cuda_gen.c
		DEPENDS ${rt_fake_src}/gen_stubs.py ${rt_fake_src}/fake_cuda.c
			${rt_fake_src}/fake_cuda_work.c ${rt_cuda_exports}
		COMMENT "fake libcuda exports from ${rt_cuda_exports}")
	add_custom_command(OUTPUT ${rt_fake_out}/fake_nccl_gen.inc
		COMMAND ${RT_PYTHON3} ${rt_fake_src}/gen_stubs.py --lib nccl --nm ${RT_NM}
			--exports ${rt_nccl_exports} --impl ${rt_fake_src}/fake_nccl.c
			--out ${rt_fake_out}/fake_nccl_gen.inc
		DEPENDS ${rt_fake_src}/gen_stubs.py ${rt_fake_src}/fake_nccl.c ${rt_nccl_exports}
		COMMENT "fake libnccl exports from ${rt_nccl_exports}")

	add_library(rt_fake_cuda SHARED ${rt_fake_src}/fake_cuda.c ${rt_fake_src}/fake_cuda_work.c
		${rt_fake_out}/fake_cuda_gen.c)
	target_include_directories(rt_fake_cuda PRIVATE ${RT_CUDA_ROOT}/include ${rt_fake_src})
	target_link_libraries(rt_fake_cuda PRIVATE Threads::Threads)
	add_library(rt_fake_nccl SHARED ${rt_fake_src}/fake_nccl.c ${rt_fake_out}/fake_nccl_gen.inc)
	target_include_directories(rt_fake_nccl PRIVATE ${rt_fake_src} ${rt_fake_out})
	target_link_libraries(rt_fake_nccl PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
	foreach(t rt_fake_cuda rt_fake_nccl)
		set_target_properties(${t} PROPERTIES C_VISIBILITY_PRESET hidden
			LIBRARY_OUTPUT_DIRECTORY ${rt_fake_out})
	endforeach()
	# the real sonames: libcuda.so.1 and libnccl.so.2
	set_target_properties(rt_fake_cuda PROPERTIES OUTPUT_NAME cuda SOVERSION 1)
	set_target_properties(rt_fake_nccl PROPERTIES OUTPUT_NAME nccl SOVERSION 2)

	rt_script_test(gpu_fake_exports LABEL unit TIMEOUT 60
		COMMAND ${RT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/gpu_fake_exports.py --nm ${RT_NM}
			$<TARGET_FILE:rt_fake_cuda> ${rt_cuda_exports}
			$<TARGET_FILE:rt_fake_nccl> ${rt_nccl_exports})

	add_executable(gpu_fake_test ${CMAKE_CURRENT_LIST_DIR}/gpu_fake_test.c)
	target_include_directories(gpu_fake_test PRIVATE ${RT_CUDA_ROOT}/include)
	target_link_libraries(gpu_fake_test PRIVATE rt_fake_cuda rt_fake_nccl PkgConfig::CMOCKA
		Threads::Threads)
	# no wall-clock upper bound in it: it runs beside other tests
	rt_script_test(gpu_fake_test LABEL unit TIMEOUT 60 COMMAND $<TARGET_FILE:gpu_fake_test>)

	if(RT_WITH_BPF)
		add_executable(gpu_uprobes ${CMAKE_CURRENT_LIST_DIR}/gpu_uprobes.c)
		target_include_directories(gpu_uprobes PRIVATE ${RT_CUDA_ROOT}/include)
		target_link_libraries(gpu_uprobes PRIVATE rt_bpf_test_util rt_fake_cuda PkgConfig::CMOCKA
			Threads::Threads ${CMAKE_DL_LIBS})
		target_compile_definitions(gpu_uprobes PRIVATE
			RT_FAKE_CUDA="$<TARGET_FILE:rt_fake_cuda>"
			RT_FAKE_NCCL="$<TARGET_FILE:rt_fake_nccl>")
		add_dependencies(gpu_uprobes rt_fake_cuda rt_fake_nccl)
		rt_script_test(gpu_uprobes LABEL root TIMEOUT 120 COMMAND $<TARGET_FILE:gpu_uprobes>)
		set_tests_properties(gpu_uprobes PROPERTIES SKIP_RETURN_CODE 77)

		foreach(mode markers zero load)
			rt_script_test(gpu_live_${mode} LABEL root TIMEOUT 300
				COMMAND ${RT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/gpu_live.py --mode ${mode}
					--fakes ${rt_fake_out})
			# timed waits next to uprobe hits: alone, like live_fidelity_*
			set_tests_properties(gpu_live_${mode} PROPERTIES SKIP_RETURN_CODE 77
				RUN_SERIAL TRUE)
		endforeach()

		# per-hit uprobe cost (a benchmark, not a test: it prints numbers)
		add_executable(bench_uprobe ${CMAKE_SOURCE_DIR}/tests/bench/bench_uprobe.c)
		target_include_directories(bench_uprobe PRIVATE ${RT_CUDA_ROOT}/include
			${CMAKE_SOURCE_DIR}/tests/integration)
		target_link_libraries(bench_uprobe PRIVATE reqtrace_core Threads::Threads ${CMAKE_DL_LIBS})
		target_compile_definitions(bench_uprobe PRIVATE
			RT_FAKE_CUDA="$<TARGET_FILE:rt_fake_cuda>")
		add_dependencies(bench_uprobe rt_fake_cuda)
	endif()
endif()
