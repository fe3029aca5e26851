# SPDX-License-Identifier: BSD-2-Clause
# Helpers to register tests with the CTest labels the design defines:
#   unit  no privileges, no BPF, no GPU
#   root  loads BPF programs or starts real processes as root
#   gpu   needs a real NVIDIA device

# rt_unit_test(<name> SOURCES <files...> [LIBS <libs...>])
# Builds a cmocka executable linked with every module (reqtrace_core): it sees
# their public headers only; rt_test_private() opens one module's own.
function(rt_unit_test name)
	cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
	add_executable(${name} ${T_SOURCES})
	target_link_libraries(${name} PRIVATE reqtrace_core PkgConfig::CMOCKA ${T_LIBS})
	target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
	target_compile_definitions(${name} PRIVATE
		RT_SOURCE_DIR="${CMAKE_SOURCE_DIR}" RT_BINARY_DIR="${CMAKE_BINARY_DIR}")
	add_test(NAME ${name} COMMAND ${name})
	set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 300
		ENVIRONMENT "RT_SOURCE_DIR=${CMAKE_SOURCE_DIR};RT_BINARY_DIR=${CMAKE_BINARY_DIR}")
endfunction()

# rt_script_test(<name> LABEL <unit|root|gpu> COMMAND <cmd...> [TIMEOUT s])
function(rt_script_test name)
	cmake_parse_arguments(T "" "LABEL;TIMEOUT" "COMMAND" ${ARGN})
	if(NOT T_TIMEOUT)
		set(T_TIMEOUT 600)
	endif()
	add_test(NAME ${name} COMMAND ${T_COMMAND})
	set_tests_properties(${name} PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
		ENVIRONMENT "RT_SOURCE_DIR=${CMAKE_SOURCE_DIR};RT_BINARY_DIR=${CMAKE_BINARY_DIR}")
	if(T_LABEL STREQUAL "root")
		# BPF tests share the kernel's tracing state and the testbed ports.
		set_tests_properties(${name} PROPERTIES RESOURCE_LOCK bpf)
	endif()
endfunction()

# rt_test_private(<test target> <module folder>)
# A white-box test of one module includes that module's private headers by
# their bare names ("http_int.h"): only that folder is added to its path.
function(rt_test_private target module)
	if(TARGET ${target})
		target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src/${module})
	endif()
endfunction()
