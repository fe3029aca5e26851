# SPDX-License-Identifier: BSD-2-Clause
# HTTP/1.x request and response parsers with Server-Sent Events (http.h) and
# the stream driver that feeds them syscall records (stream.h).
set(rt_http_sources
	${CMAKE_CURRENT_LIST_DIR}/http_msg.c
	${CMAKE_CURRENT_LIST_DIR}/http_chunk.c
	${CMAKE_CURRENT_LIST_DIR}/http_util.c
	${CMAKE_CURRENT_LIST_DIR}/http_json.c
	${CMAKE_CURRENT_LIST_DIR}/http_req.c
	${CMAKE_CURRENT_LIST_DIR}/http_resp.c
	${CMAKE_CURRENT_LIST_DIR}/sse.c
	${CMAKE_CURRENT_LIST_DIR}/stream.c)
target_sources(reqtrace_core PRIVATE ${rt_http_sources})
# tests/fuzz/http.cmake builds these into the libFuzzer harnesses
set_property(GLOBAL PROPERTY RT_HTTP_SOURCES ${rt_http_sources})
