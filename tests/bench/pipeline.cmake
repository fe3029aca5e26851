# SPDX-License-Identifier: BSD-2-Clause
# A benchmark executable, not a test: records per CPU-second through read,
# merge and the whole pipeline (docs/benchmarks.md, "Correlator throughput").
add_executable(bench_pipeline ${CMAKE_CURRENT_LIST_DIR}/bench_pipeline.c)
target_link_libraries(bench_pipeline PRIVATE reqtrace_core rt_gen)
