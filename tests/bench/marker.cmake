# SPDX-License-Identifier: BSD-2-Clause
# A benchmark executable, not a test: it prints ns per marker call.
add_executable(bench_marker ${CMAKE_CURRENT_LIST_DIR}/bench_marker.c)
target_link_libraries(bench_marker PRIVATE reqtrace_marker)
