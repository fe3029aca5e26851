# SPDX-License-Identifier: BSD-2-Clause
# Fuzzing of the other parsers of untrusted input (docs/fuzzing.md):
#
#   fuzz_ctl      control socket request lines (src/daemon/ctl_parse.c)
#   fuzz_ring     injection rings written by traced processes (inject_server.c)
#   fuzz_config   reqtraced's config file (src/daemon/config.c)
#   fuzz_timings  server-reported timings: usage/timings JSON, Server-Timing
#
# Always: fuzz_<name>_replay (the harness with replay.c's main) runs the
# committed corpus in corpus/<name> as a unit test. With -DRT_FUZZ=ON and
# clang: libFuzzer targets fuzz_<name>, the parser's sources compiled into
# them for coverage, e.g.
#   CC=clang cmake -S . -B build-fuzz -DRT_FUZZ=ON
#   cmake --build build-fuzz --target fuzz_ctl
#   mkdir -p /tmp/ctl && build-fuzz/tests/fuzz_ctl -max_total_time=600 /tmp/ctl tests/fuzz/corpus/ctl
if(NOT DEFINED RT_FUZZ)
	option(RT_FUZZ "Build the libFuzzer harnesses (needs clang)" OFF)
endif()

set(rt_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
# per harness: the parser sources compiled in, private include folders, libraries
set(rt_fuzz_ctl_src ${CMAKE_SOURCE_DIR}/src/daemon/ctl_parse.c ${CMAKE_SOURCE_DIR}/src/common/dur.c)
set(rt_fuzz_ctl_inc)
set(rt_fuzz_ctl_lib)
set(rt_fuzz_ring_src ${CMAKE_SOURCE_DIR}/src/sources/inject_server.c
	${CMAKE_SOURCE_DIR}/src/common/event_check.c)
set(rt_fuzz_ring_inc ${CMAKE_SOURCE_DIR}/src/cupti)
set(rt_fuzz_ring_lib)
set(rt_fuzz_config_src ${CMAKE_SOURCE_DIR}/src/daemon/config.c)
set(rt_fuzz_config_inc ${CMAKE_SOURCE_DIR}/src/daemon)
set(rt_fuzz_config_lib PkgConfig::INIH)
get_property(rt_fuzz_timings_src GLOBAL PROPERTY RT_HTTP_SOURCES)
set(rt_fuzz_timings_inc ${CMAKE_SOURCE_DIR}/src/proto)
set(rt_fuzz_timings_lib)

foreach(name ctl ring config timings)
	# the replay build takes the parsers from the modules, except the
	# program's own config.c and the library side of the ring (src/cupti)
	set(extra)
	if(name STREQUAL "config")
		set(extra ${rt_fuzz_config_src})
	elseif(name STREQUAL "ring")
		set(extra ${CMAKE_SOURCE_DIR}/src/cupti/ring.c ${CMAKE_SOURCE_DIR}/src/cupti/proto.c)
	endif()
	add_executable(fuzz_${name}_replay ${rt_fuzz_dir}/fuzz_${name}.c ${rt_fuzz_dir}/replay.c
		${extra})
	target_include_directories(fuzz_${name}_replay PRIVATE ${rt_fuzz_${name}_inc})
	target_link_libraries(fuzz_${name}_replay PRIVATE reqtrace_core ${rt_fuzz_${name}_lib})
	rt_script_test(fuzz_${name}_corpus LABEL unit TIMEOUT 300
		COMMAND fuzz_${name}_replay ${rt_fuzz_dir}/corpus/${name})
endforeach()

if(RT_FUZZ)
	if(CMAKE_C_COMPILER_ID MATCHES "Clang")
		foreach(name ctl ring config timings)
			set(extra)
			if(name STREQUAL "ring")
				set(extra ${CMAKE_SOURCE_DIR}/src/cupti/ring.c
					${CMAKE_SOURCE_DIR}/src/cupti/proto.c)
			endif()
			# objects given here win over the same files in reqtrace_core's
			# archives, so the parsers carry libFuzzer's instrumentation
			add_executable(fuzz_${name} ${rt_fuzz_dir}/fuzz_${name}.c
				${rt_fuzz_${name}_src} ${extra})
			target_include_directories(fuzz_${name} PRIVATE ${rt_fuzz_${name}_inc})
			target_compile_options(fuzz_${name} PRIVATE
				-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
			target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
			target_link_libraries(fuzz_${name} PRIVATE reqtrace_core ${rt_fuzz_${name}_lib})
		endforeach()
	else()
		message(WARNING "RT_FUZZ: libFuzzer needs clang; fuzz_ctl/ring/config/timings not built")
	endif()
endif()
