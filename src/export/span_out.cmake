# SPDX-License-Identifier: BSD-2-Clause
target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/span_json.c
	${CMAKE_CURRENT_LIST_DIR}/span_table.c)
