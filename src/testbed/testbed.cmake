# SPDX-License-Identifier: BSD-2-Clause
# reqtrace-testbed and reqtrace-load. They must not share code with the tracer
# (a bug shared by both would hide in the ground truth): they never link
# reqtrace_core, only their own static library, cJSON and the marker library.
add_library(rt_testbed STATIC
	${CMAKE_CURRENT_LIST_DIR}/backend_cuda.c
	${CMAKE_CURRENT_LIST_DIR}/backend_sleep.c
	${CMAKE_CURRENT_LIST_DIR}/buf.c
	${CMAKE_CURRENT_LIST_DIR}/clock.c
	${CMAKE_CURRENT_LIST_DIR}/conn.c
	${CMAKE_CURRENT_LIST_DIR}/engine.c
	${CMAKE_CURRENT_LIST_DIR}/http.c
	${CMAKE_CURRENT_LIST_DIR}/io.c
	${CMAKE_CURRENT_LIST_DIR}/knobs.c
	${CMAKE_CURRENT_LIST_DIR}/markers.c
	${CMAKE_CURRENT_LIST_DIR}/peer.c
	${CMAKE_CURRENT_LIST_DIR}/req.c
	${CMAKE_CURRENT_LIST_DIR}/server.c
	${CMAKE_CURRENT_LIST_DIR}/truth.c)
target_include_directories(rt_testbed PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(rt_testbed PUBLIC reqtrace_marker PkgConfig::CJSON Threads::Threads m ${CMAKE_DL_LIBS})

add_executable(reqtrace-testbed ${CMAKE_CURRENT_LIST_DIR}/main.c)
set_target_properties(reqtrace-testbed PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/src/testbed)
target_link_libraries(reqtrace-testbed PRIVATE rt_testbed)

# The load generator's HTTP/SSE checker is its own too (it checks the testbed).
add_library(rt_load STATIC
	${CMAKE_CURRENT_LIST_DIR}/load/resp.c
	${CMAKE_CURRENT_LIST_DIR}/load/stats.c)
target_link_libraries(rt_load PUBLIC rt_testbed PkgConfig::CJSON m)

add_executable(reqtrace-load ${CMAKE_CURRENT_LIST_DIR}/load/main.c)
set_target_properties(reqtrace-load PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/src/testbed)
target_link_libraries(reqtrace-load PRIVATE rt_load)
