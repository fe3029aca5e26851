# SPDX-License-Identifier: BSD-2-Clause
# vLLM V1 message decoder fuzzing (tests/fuzz/fuzz_vllm.c): the frames of
# src/proto/vllm.c and the msgpack reader src/proto/msgpack.c.
#
# Always: fuzz_vllm_replay runs the corpus in corpus/vllm as a unit test.
# With -DRT_FUZZ=ON and clang: the libFuzzer target fuzz_vllm, e.g.
#   CC=clang cmake -S . -B build-fuzz -DRT_FUZZ=ON
#   cmake --build build-fuzz --target fuzz_vllm
#   mkdir -p /tmp/vllm && build-fuzz/tests/fuzz_vllm -max_total_time=600 /tmp/vllm tests/fuzz/corpus/vllm
if(NOT DEFINED RT_FUZZ)
	option(RT_FUZZ "Build the libFuzzer harnesses (needs clang)" OFF)
endif()

add_executable(fuzz_vllm_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_vllm.c
	${CMAKE_CURRENT_LIST_DIR}/replay.c)
target_link_libraries(fuzz_vllm_replay PRIVATE reqtrace_core)
rt_script_test(fuzz_vllm_corpus LABEL unit TIMEOUT 120
	COMMAND fuzz_vllm_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/vllm)

if(RT_FUZZ)
	if(CMAKE_C_COMPILER_ID MATCHES "Clang")
		# the decoder's sources compiled in, so they carry the instrumentation
		get_property(rt_vllm_sources GLOBAL PROPERTY RT_VLLM_SOURCES)
		add_executable(fuzz_vllm ${CMAKE_CURRENT_LIST_DIR}/fuzz_vllm.c ${rt_vllm_sources})
		target_include_directories(fuzz_vllm PRIVATE
			${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src/proto/include)
		target_compile_options(fuzz_vllm PRIVATE
			-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
		target_link_options(fuzz_vllm PRIVATE -fsanitize=fuzzer,address,undefined)
		target_link_libraries(fuzz_vllm PRIVATE m)
	else()
		message(WARNING "RT_FUZZ: libFuzzer needs clang; fuzz_vllm not built")
	endif()
endif()
