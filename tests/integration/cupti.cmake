# SPDX-License-Identifier: BSD-2-Clause
# Tests of the CUPTI injection library and its daemon side, all without a GPU.
#
#   test_cupti_ring   (tests/unit, found by the glob) daemon side vs. the
#                     library's handshake client and ring producer, hostile rings
#   test_cupti_pool   (tests/unit) buffer pool and call tracker
#   cupti_translate_test   CUPTI records -> event.h (needs the CUDA headers)
#   cupti_lib_<scenario>   libreqtrace_cupti.so loaded as CUDA would, over a
#                     mock libcupti (tests/fixtures/mock_cupti), talking to a
#                     test daemon built from inject_server
#   cupti_exports     the library exports InitializeInjection and nothing else
#
# Every test that runs the library's threads is labelled tsan as well, so the
# test script can run them in an RT_TSAN=ON tree.
set(rt_cupti_src ${CMAKE_SOURCE_DIR}/src/cupti)

if(TARGET test_cupti_ring)
	target_sources(test_cupti_ring PRIVATE ${rt_cupti_src}/ring.c ${rt_cupti_src}/proto.c)
	set_tests_properties(test_cupti_ring PROPERTIES LABELS "unit;tsan")
	rt_test_private(test_cupti_ring cupti)
endif()
if(TARGET test_cupti_pool)
	target_sources(test_cupti_pool PRIVATE ${rt_cupti_src}/bufpool.c ${rt_cupti_src}/calltrack.c)
	set_tests_properties(test_cupti_pool PROPERTIES LABELS "unit;tsan")
	rt_test_private(test_cupti_pool cupti)
endif()

if(RT_HAVE_CUDA)
	add_library(rt_mock_cupti SHARED ${CMAKE_SOURCE_DIR}/tests/fixtures/mock_cupti/mock_cupti.c)
	target_include_directories(rt_mock_cupti PRIVATE ${RT_CUDA_ROOT}/include)
	target_link_libraries(rt_mock_cupti PRIVATE Threads::Threads)

	rt_unit_test(cupti_translate_test
		SOURCES ${CMAKE_CURRENT_LIST_DIR}/cupti_translate_test.c
			${rt_cupti_src}/translate.c ${rt_cupti_src}/cbid.c ${rt_cupti_src}/calltrack.c)
	target_include_directories(cupti_translate_test PRIVATE ${RT_CUDA_ROOT}/include)
	rt_test_private(cupti_translate_test cupti)

	add_executable(cupti_lib_test ${CMAKE_CURRENT_LIST_DIR}/cupti_lib_test.c
		${CMAKE_CURRENT_LIST_DIR}/cupti_testd.c)
	target_include_directories(cupti_lib_test PRIVATE ${CMAKE_SOURCE_DIR}/tests
		${RT_CUDA_ROOT}/include)
	target_link_libraries(cupti_lib_test PRIVATE reqtrace_core PkgConfig::CMOCKA rt_mock_cupti
		Threads::Threads ${CMAKE_DL_LIBS})
	target_compile_definitions(cupti_lib_test PRIVATE
		RT_CUPTI_SO="$<TARGET_FILE:reqtrace_cupti>"
		RT_MOCK_CUPTI_SO="$<TARGET_FILE:rt_mock_cupti>")
	add_dependencies(cupti_lib_test reqtrace_cupti)
	foreach(scenario setup records buffers_full dropped malformed late_daemon daemon_killed
			refused busy no_cupti version bad_ring fork exit_flush adaptive_horizon blocking_sync
			ring_full)
		add_test(NAME cupti_lib_${scenario} COMMAND cupti_lib_test ${scenario})
		set_tests_properties(cupti_lib_${scenario} PROPERTIES LABELS "unit;tsan" TIMEOUT 120)
	endforeach()
	# daemon_killed compares the host loop's cost before and after the kill in
	# CPU time, not wall time: it need not run alone

	rt_script_test(cupti_exports LABEL unit
		COMMAND ${CMAKE_CURRENT_LIST_DIR}/cupti_exports.py $<TARGET_FILE:reqtrace_cupti>)
	# needs root and a real NVIDIA GPU (tests/gpu/run.sh says what it checks)
	rt_script_test(cupti_gpu LABEL gpu TIMEOUT 600
		COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/run.sh ${CMAKE_BINARY_DIR})
endif()
