# SPDX-License-Identifier: BSD-2-Clause
# The CUPTI injection source, daemon side (needs no CUDA toolkit).
target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/inject_server.c)
