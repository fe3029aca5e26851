# SPDX-License-Identifier: BSD-2-Clause
# The BPF source (src/sources/bpf_*.c): loader for bpf/*.bpf.c skeletons.
if(RT_WITH_BPF)
	target_sources(reqtrace_core PRIVATE
		${CMAKE_CURRENT_LIST_DIR}/bpf_source.c
		${CMAKE_CURRENT_LIST_DIR}/bpf_attach.c
		${CMAKE_CURRENT_LIST_DIR}/bpf_env.c)
	# skeletons (<build>/bpf/*.skel.h) and the header shared with the BPF side
	target_include_directories(reqtrace_core PRIVATE ${CMAKE_BINARY_DIR}/bpf ${CMAKE_SOURCE_DIR}/bpf)
	target_link_libraries(reqtrace_core PUBLIC PkgConfig::LIBBPF)
	add_dependencies(reqtrace_core rt_bpf_skeletons)
endif()
