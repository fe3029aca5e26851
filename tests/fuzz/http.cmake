# SPDX-License-Identifier: BSD-2-Clause
# HTTP parser fuzzing (tests/fuzz/fuzz_http.c), one harness per direction.
#
# Always: fuzz_http_{req,resp}_replay run the corpus in corpus/http_{req,resp}
# as unit tests. With -DRT_FUZZ=ON and clang: libFuzzer targets
# fuzz_http_{req,resp}, e.g.
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DRT_FUZZ=ON
#   cmake --build build-fuzz --target fuzz_http_req
#   build-fuzz/tests/fuzz_http_req -max_total_time=300 tests/fuzz/corpus/http_req
if(NOT DEFINED RT_FUZZ)
	option(RT_FUZZ "Build the libFuzzer harnesses (needs clang)" OFF)
endif()

foreach(kind req resp)
	string(TOUPPER ${kind} KIND)
	add_executable(fuzz_http_${kind}_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_http.c
		${CMAKE_CURRENT_LIST_DIR}/replay.c)
	target_compile_definitions(fuzz_http_${kind}_replay PRIVATE RT_FUZZ_HTTP_${KIND})
	target_link_libraries(fuzz_http_${kind}_replay PRIVATE reqtrace_core)
	rt_script_test(fuzz_http_${kind}_corpus LABEL unit TIMEOUT 120
		COMMAND fuzz_http_${kind}_replay ${CMAKE_CURRENT_LIST_DIR}/corpus/http_${kind})
endforeach()

if(RT_FUZZ)
	if(CMAKE_C_COMPILER_ID MATCHES "Clang")
		# The parser sources are compiled into each harness so that they get
		# libFuzzer's coverage instrumentation without changing rt_proto.
		get_property(rt_http_sources GLOBAL PROPERTY RT_HTTP_SOURCES)
		foreach(kind req resp)
			string(TOUPPER ${kind} KIND)
			add_executable(fuzz_http_${kind} ${CMAKE_CURRENT_LIST_DIR}/fuzz_http.c
				${rt_http_sources})
			target_compile_definitions(fuzz_http_${kind} PRIVATE
				RT_LIBFUZZER RT_FUZZ_HTTP_${KIND})
			target_include_directories(fuzz_http_${kind} PRIVATE
				${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src/proto/include)
			target_compile_options(fuzz_http_${kind} PRIVATE
				-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
			target_link_options(fuzz_http_${kind} PRIVATE -fsanitize=fuzzer,address,undefined)
			target_link_libraries(fuzz_http_${kind} PRIVATE PkgConfig::CJSON m)
		endforeach()
	else()
		message(WARNING "RT_FUZZ: libFuzzer needs clang; fuzz_http_* not built")
	endif()
endif()
