# SPDX-License-Identifier: BSD-2-Clause
target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/stats.c
	${CMAKE_CURRENT_LIST_DIR}/verdict.c)
