# SPDX-License-Identifier: BSD-2-Clause
# fuzz_rtrace_replay runs tests/fuzz/fuzz_rtrace.c over the committed corpus
# in every build (a unit test). With clang and -DRT_FUZZ=ON, fuzz_rtrace is
# the libFuzzer harness; the reader's sources are compiled into it so that
# libFuzzer sees their coverage:
#   CC=clang cmake -S . -B build-fuzz -DRT_FUZZ=ON
#   cmake --build build-fuzz --target fuzz_rtrace
#   mkdir -p /tmp/corpus   # new inputs go to the first directory: keep them out of git
#   build-fuzz/tests/fuzz_rtrace -max_len=65536 /tmp/corpus tests/fuzz/corpus/rtrace
option(RT_FUZZ "Build the libFuzzer harnesses (clang only)" OFF)

add_executable(fuzz_rtrace_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_rtrace.c)
target_compile_definitions(fuzz_rtrace_replay PRIVATE RT_FUZZ_REPLAY)
target_link_libraries(fuzz_rtrace_replay PRIVATE reqtrace_core)
rt_script_test(fuzz_rtrace_corpus LABEL unit TIMEOUT 300
	COMMAND fuzz_rtrace_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/rtrace)

if(RT_FUZZ)
	if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
		message(FATAL_ERROR "RT_FUZZ=ON needs clang (CC=clang)")
	endif()
	add_executable(fuzz_rtrace ${CMAKE_CURRENT_LIST_DIR}/fuzz_rtrace.c
		${CMAKE_SOURCE_DIR}/src/sources/rtrace_read.c
		${CMAKE_SOURCE_DIR}/src/common/event_check.c)
	target_include_directories(fuzz_rtrace PRIVATE ${CMAKE_SOURCE_DIR}/include
		${CMAKE_SOURCE_DIR}/src/sources/include ${CMAKE_SOURCE_DIR}/src/common/include)
	target_compile_options(fuzz_rtrace PRIVATE -fsanitize=fuzzer,address,undefined)
	target_link_options(fuzz_rtrace PRIVATE -fsanitize=fuzzer,address,undefined)
endif()
