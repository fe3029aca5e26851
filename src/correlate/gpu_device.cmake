# SPDX-License-Identifier: BSD-2-Clause
# Device time per request from CUPTI records (docs/gpu.md, "Device time (CUPTI)").
target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_device.c)
