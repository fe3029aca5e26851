# SPDX-License-Identifier: BSD-2-Clause
# The testbed's tests. The integration drivers (python3 stdlib) start real
# reqtrace-testbed / reqtrace-load processes: label root. The timing-sensitive
# ones run alone (RUN_SERIAL): a parallel test stealing a core would break
# their CPU and throughput measurements.
find_program(RT_TESTBED_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT RT_TESTBED_PYTHON)
	find_program(RT_TESTBED_PYTHON python3 REQUIRED)
endif()

foreach(t io errors marker preprocess batch comm park)
	rt_script_test(testbed_${t} LABEL root TIMEOUT 180
		COMMAND ${RT_TESTBED_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/testbed_${t}.py)
endforeach()
# testbed_park compares waits with handlers' busy windows: a stolen core would blur them
set_tests_properties(testbed_preprocess testbed_batch testbed_comm testbed_park
	PROPERTIES RUN_SERIAL TRUE)

# Unit tests of the testbed's pure parts (found by the tests/unit glob and
# linked with every module like every unit test) also need the testbed's
# own libraries.
foreach(t test_testbed_knobs test_testbed_http test_testbed_io test_testbed_resp
		test_testbed_truth test_testbed_omp)
	if(TARGET ${t})
		target_link_libraries(${t} PRIVATE rt_load rt_testbed)
		rt_test_private(${t} testbed)
	endif()
endforeach()
# it opens the pool object from the build tree
if(TARGET test_testbed_omp)
	add_dependencies(test_testbed_omp reqtrace-testbed-omp)
	# LeakSanitizer's exit scan faults in the dynamic TLS of libgomp's
	# threads, which live in the dlopen'ed pool object ("Tracer caught signal
	# 11" while it reads a DTLS block): a sanitizer fault, not a leak.
	# AddressSanitizer still checks every access.
	if(RT_SANITIZE)
		set_tests_properties(test_testbed_omp PROPERTIES ENVIRONMENT
			"RT_SOURCE_DIR=${CMAKE_SOURCE_DIR};RT_BINARY_DIR=${CMAKE_BINARY_DIR};ASAN_OPTIONS=detect_leaks=0")
	endif()
endif()
