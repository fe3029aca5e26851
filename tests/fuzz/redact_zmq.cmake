# SPDX-License-Identifier: BSD-2-Clause
# The recorder's ZeroMQ frame redaction fuzzed (tests/fuzz/fuzz_redact_zmq.c)
# over the vLLM decoder's corpus (corpus/vllm).
#
# Always: fuzz_redact_zmq_replay runs that corpus as a unit test. With
# -DRT_FUZZ=ON and clang: the libFuzzer target fuzz_redact_zmq, e.g.
#   CC=clang cmake -S . -B build-fuzz -DRT_FUZZ=ON
#   cmake --build build-fuzz --target fuzz_redact_zmq
#   mkdir -p /tmp/rz && build-fuzz/tests/fuzz_redact_zmq -max_total_time=600 \
#     -dict=tests/fuzz/vllm.dict /tmp/rz tests/fuzz/corpus/vllm tests/fuzz/corpus/redact_zmq
if(NOT DEFINED RT_FUZZ)
	option(RT_FUZZ "Build the libFuzzer harnesses (needs clang)" OFF)
endif()

add_executable(fuzz_redact_zmq_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_redact_zmq.c
	${CMAKE_CURRENT_LIST_DIR}/replay.c)
target_link_libraries(fuzz_redact_zmq_replay PRIVATE reqtrace_core)
# redact_int.h: the frame walker is internal to the export module
target_include_directories(fuzz_redact_zmq_replay PRIVATE ${CMAKE_SOURCE_DIR}/src/export)
# corpus/redact_zmq: what a 660 s libFuzzer run added to it (no finding)
rt_script_test(fuzz_redact_zmq_corpus LABEL unit TIMEOUT 120
	COMMAND fuzz_redact_zmq_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/vllm
		${CMAKE_CURRENT_LIST_DIR}/corpus/redact_zmq)

if(RT_FUZZ)
	if(CMAKE_C_COMPILER_ID MATCHES "Clang")
		get_property(rt_vllm_sources GLOBAL PROPERTY RT_VLLM_SOURCES)
		add_executable(fuzz_redact_zmq ${CMAKE_CURRENT_LIST_DIR}/fuzz_redact_zmq.c
			${CMAKE_SOURCE_DIR}/src/export/redact_zmq.c
			${CMAKE_SOURCE_DIR}/src/common/hmap.c ${rt_vllm_sources})
		target_include_directories(fuzz_redact_zmq PRIVATE ${CMAKE_SOURCE_DIR}/include
			${CMAKE_SOURCE_DIR}/src/export ${CMAKE_SOURCE_DIR}/src/export/include
			${CMAKE_SOURCE_DIR}/src/proto/include ${CMAKE_SOURCE_DIR}/src/common/include)
		target_compile_options(fuzz_redact_zmq PRIVATE
			-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
		target_link_options(fuzz_redact_zmq PRIVATE -fsanitize=fuzzer,address,undefined)
		target_link_libraries(fuzz_redact_zmq PRIVATE m)
	else()
		message(WARNING "RT_FUZZ: libFuzzer needs clang; fuzz_redact_zmq not built")
	endif()
endif()
