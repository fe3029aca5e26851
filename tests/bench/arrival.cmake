# SPDX-License-Identifier: BSD-2-Clause
# A benchmark executable, not a test: what the arrival tracepoints cost
# untraced loopback TCP traffic (docs/benchmarks.md, "Arrival programs").
if(RT_WITH_BPF)
	add_executable(bench_arrival ${CMAKE_CURRENT_LIST_DIR}/bench_arrival.c)
	target_link_libraries(bench_arrival PRIVATE reqtrace_core)
	# sock.skel.h: the arrival programs alone, without the rest of the source
	target_include_directories(bench_arrival PRIVATE ${CMAKE_BINARY_DIR}/bpf)
	add_dependencies(bench_arrival rt_bpf_skeletons)
endif()
