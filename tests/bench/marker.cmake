# SPDX-License-Identifier: BSD-2-Clause
# A benchmark executable, not a test: it prints ns per marker call, not
# traced, traced through uprobes (root, BPF) and traced through the shared
# memory ring (an in-process inject server), side by side.
add_executable(bench_marker ${CMAKE_CURRENT_LIST_DIR}/bench_marker.c)
target_link_libraries(bench_marker PRIVATE reqtrace_marker reqtrace_core Threads::Threads
	${CMAKE_DL_LIBS})
if(RT_WITH_BPF)
	target_compile_definitions(bench_marker PRIVATE RT_BENCH_BPF=1)
endif()
