# SPDX-License-Identifier: BSD-2-Clause
# The GPU probe table (gpu_probes.h): its index is the wire `api` field.
target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_probes.c)
