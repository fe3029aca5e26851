# SPDX-License-Identifier: BSD-2-Clause
# Device time per request through the real injection path, without a GPU
# (docs/gpu.md, "Device time (CUPTI)"): the testbed's cuda backend on the fake
# libcuda (tests/fixtures/fake_cuda), which loads libreqtrace_cupti.so from
# CUDA_INJECTION64_PATH and plays CUPTI through the mock libcupti
# (tests/fixtures/mock_cupti), under reqtraced and load.
#
#   cupti_live_markers  (root) markers, concurrency 4: kernel_ms and memcpy_ms
#                       per request = its steps' device time, split equally
#   cupti_live_zero     (root) zero-code, concurrency 1: the same, whole steps
#   cupti_live_refused  (root) a process outside every target group is refused
#                       on the inject socket and runs on unaffected
#
# The fakes are built by gpu.cmake (included after this file: paths, not targets).

# the mock's half that plays CUPTI for the fake driver (rt_mock_cupti: cupti.cmake)
if(TARGET rt_mock_cupti)
	target_sources(rt_mock_cupti PRIVATE
		${CMAKE_SOURCE_DIR}/tests/fixtures/mock_cupti/mock_cupti_driver.c)
endif()
find_program(RT_PYTHON3 python3)
if(RT_HAVE_CUDA AND RT_WITH_BPF AND RT_PYTHON3 AND EXISTS ${RT_CUDA_ROOT}/include/cuda.h)
	foreach(mode markers zero refused)
		rt_script_test(cupti_live_${mode} LABEL root TIMEOUT 300
			COMMAND ${RT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/cupti_live.py --mode ${mode}
				--fakes ${CMAKE_BINARY_DIR}/tests/fake_cuda
				--lib $<TARGET_FILE:reqtrace_cupti> --mock $<TARGET_FILE:rt_mock_cupti>)
		# a library's retries and a daemon's stall timers on a 2-core machine:
		# alone (cupti_live_refused failed once under ctest -j2, not since)
		set_tests_properties(cupti_live_${mode} PROPERTIES SKIP_RETURN_CODE 77
			RUN_SERIAL TRUE)
	endforeach()
endif()

# fake_cupti_bridge (unit): the fake driver's CUPTI records through the mock,
# without root (tests/fixtures/fake_cuda/bridge_test.c). Deferred: the fakes'
# targets are made by gpu.cmake, which is included after this file.
function(rt_fake_cupti_bridge_test)
	if(NOT TARGET rt_fake_cuda OR NOT TARGET rt_mock_cupti)
		return()
	endif()
	add_executable(fake_cupti_bridge_test
		${CMAKE_SOURCE_DIR}/tests/fixtures/fake_cuda/bridge_test.c)
	target_include_directories(fake_cupti_bridge_test PRIVATE ${RT_CUDA_ROOT}/include)
	target_link_libraries(fake_cupti_bridge_test PRIVATE rt_fake_cuda rt_mock_cupti
		PkgConfig::CMOCKA Threads::Threads)
	rt_script_test(fake_cupti_bridge LABEL unit TIMEOUT 60
		COMMAND $<TARGET_FILE:fake_cupti_bridge_test>)
endfunction()
cmake_language(DEFER CALL rt_fake_cupti_bridge_test)
