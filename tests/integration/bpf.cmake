# SPDX-License-Identifier: BSD-2-Clause
# BPF source integration tests (label root): they load the programs, so they
# need root; they skip (77) when BPF is not permitted, unless CI=true.
if(RT_WITH_BPF)
	add_library(rt_bpf_test_util STATIC ${CMAKE_CURRENT_LIST_DIR}/bpf_test_util.c)
	target_link_libraries(rt_bpf_test_util PUBLIC reqtrace_core)

	set(rt_bpf_tests bpf_capture bpf_loss bpf_arrival)
	if(TARGET reqtrace_marker)
		list(APPEND rt_bpf_tests bpf_markers)
	endif()
	foreach(t ${rt_bpf_tests})
		add_executable(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.c)
		target_link_libraries(${t} PRIVATE rt_bpf_test_util PkgConfig::CMOCKA Threads::Threads ${CMAKE_DL_LIBS})
		rt_script_test(${t} LABEL root COMMAND $<TARGET_FILE:${t}> TIMEOUT 120)
		set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
	endforeach()
	if(TARGET reqtrace_marker)
		target_compile_definitions(bpf_markers PRIVATE RT_MARKER_LIB="$<TARGET_FILE:reqtrace_marker>")
		add_dependencies(bpf_markers reqtrace_marker)
	endif()
endif()

# A benchmark executable, not a test: per-syscall cost of the BPF source.
if(RT_WITH_BPF)
	add_executable(bench_bpf_cost ${CMAKE_SOURCE_DIR}/tests/bench/bench_bpf_cost.c)
	target_link_libraries(bench_bpf_cost PRIVATE reqtrace_core Threads::Threads)
endif()
