# SPDX-License-Identifier: BSD-2-Clause
# Benchmarks are executables only, not tests: run them by hand.
add_executable(bench_merge ${CMAKE_CURRENT_LIST_DIR}/bench_merge.c)
target_link_libraries(bench_merge PRIVATE reqtrace_core)
