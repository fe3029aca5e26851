# SPDX-License-Identifier: BSD-2-Clause
add_executable(reqtrace
	${CMAKE_CURRENT_LIST_DIR}/main.c
	${CMAKE_CURRENT_LIST_DIR}/client.c
	${CMAKE_CURRENT_LIST_DIR}/cmd_live.c
	${CMAKE_CURRENT_LIST_DIR}/cmd_replay.c
	${CMAKE_CURRENT_LIST_DIR}/cmd_show.c
	${CMAKE_CURRENT_LIST_DIR}/cmd_top.c
	${CMAKE_CURRENT_LIST_DIR}/cmd_demo.c
	${CMAKE_CURRENT_LIST_DIR}/term.c)
target_link_libraries(reqtrace PRIVATE reqtrace_core)
set_target_properties(reqtrace PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
