# SPDX-License-Identifier: BSD-2-Clause
# Recording redactor (redact.h): what --record writes unless --capture-bodies.
target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/redact.c
	${CMAKE_CURRENT_LIST_DIR}/redact_body.c ${CMAKE_CURRENT_LIST_DIR}/redact_json.c)
