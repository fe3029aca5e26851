# SPDX-License-Identifier: BSD-2-Clause
# Control socket, targets and /proc helpers are in the core library so unit
# tests can reach them; the daemon proper needs the BPF loader.
target_sources(reqtrace_core PRIVATE
	${CMAKE_CURRENT_LIST_DIR}/control.c
	${CMAKE_CURRENT_LIST_DIR}/targets.c
	${CMAKE_CURRENT_LIST_DIR}/procfs.c)
if(RT_WITH_BPF)
	add_executable(reqtraced
		${CMAKE_CURRENT_LIST_DIR}/main.c
		${CMAKE_CURRENT_LIST_DIR}/daemon.c
		${CMAKE_CURRENT_LIST_DIR}/commands.c)
	target_link_libraries(reqtraced PRIVATE reqtrace_core)
	set_target_properties(reqtraced PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
endif()
