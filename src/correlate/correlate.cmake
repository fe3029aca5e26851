# SPDX-License-Identifier: BSD-2-Clause
target_sources(reqtrace_core PRIVATE
	${CMAKE_CURRENT_LIST_DIR}/correlator.c
	${CMAKE_CURRENT_LIST_DIR}/conn.c
	${CMAKE_CURRENT_LIST_DIR}/cpu.c
	${CMAKE_CURRENT_LIST_DIR}/markers.c
	${CMAKE_CURRENT_LIST_DIR}/finalize.c
	${CMAKE_CURRENT_LIST_DIR}/gpu.c)
